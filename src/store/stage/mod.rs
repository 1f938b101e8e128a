//! Where a job's validated rows wait for the gate: one stage table per
//! module (`ig_stage_<module>`), with a typed column for each of the
//! module's columns, holding every job's rows under the job's stage number.
//!
//! Why typed: a commit is then `INSERT … SELECT` of typed columns, as cheap
//! as the database's bulk loader, where reading rows staged as JSON cost a
//! second parse of every row (PostgreSQL: 6.2 s of JSON against 3.9 s typed
//! for 1M orders). Why one table a module, keyed by a number: the shared
//! `ig_job_rows` keyed every row and index entry by the job's 30-character
//! id, and a table per job would add to the schema with every upload.
//! An update's before-image (the table's values of the file's columns when
//! the preview was made) is typed too, beside them, for the columns the
//! update changes ([`SAME`] marks the others): the commit checks it is
//! still what the table holds, and a rollback writes it back. Only the
//! row as the preview shows it when a cell failed (its raw text) is JSON.
//!
//! A row as the validation stages it is a [`StagedRow`]; where the file's
//! numbering jumps among a job's rows is kept beside them ([`breaks`]).

pub mod keys;
pub mod text;
pub mod writes;

use super::db::Conn;
use super::dialect::Dialect;
use super::error::{Result, StoreError, json_col};
use super::sql::{BATCH, ident, pieces};
use crate::catalog::{ColumnType, Module};
use crate::ids::JobId;
use crate::on_conn;
use crate::validate::{RowAction, RowError, Value};

/// Where one job's rows are staged.
#[derive(Debug, Clone)]
pub struct Stage<'a> {
    pub module: &'a Module,
    /// The job's stage number: its rows' key in the stage table.
    pub job: i64,
    /// The catalog columns the job's file gave, in catalog order. Only
    /// these are written by a commit; the others keep the table's values.
    pub provided: Vec<usize>,
}

impl<'a> Stage<'a> {
    /// The stage of a job, or `None` if it was never validated.
    pub async fn of(
        conn: &mut Conn<'_>,
        module: &'a Module,
        job_id: &JobId,
    ) -> Result<Option<Self>> {
        let found: Option<(Option<i64>, Option<String>)> = on_conn!(conn, c => sqlx::query_as(
            "SELECT stage, columns FROM ig_jobs WHERE id = $1")
            .bind(job_id).fetch_optional(c).await)?;
        let Some((Some(job), columns)) = found else {
            return Ok(None);
        };
        let names: Vec<String> = match columns {
            Some(text) => json_col(&text, "columns")?,
            None => vec![],
        };
        Ok(Some(Stage {
            module,
            job,
            provided: provided(module, &names),
        }))
    }

    /// Makes the job's stage empty for a (new) validation run: gives the
    /// job a stage number if it has none, and forgets what an earlier,
    /// interrupted run staged, with its errors.
    pub async fn begin(conn: &mut Conn<'_>, module: &'a Module, job_id: &JobId) -> Result<Self> {
        let job = match Stage::of(conn, module, job_id).await? {
            Some(stage) => stage.job,
            None => {
                let n = next_stage_number(conn).await?;
                on_conn!(conn, c => sqlx::query("UPDATE ig_jobs SET stage = $1 WHERE id = $2")
                    .bind(n).bind(job_id).execute(c).await.map(|r| r.rows_affected()))?;
                n
            }
        };
        let stage = Stage {
            module,
            job,
            provided: vec![],
        };
        stage.clear(conn, job_id).await?;
        Ok(stage)
    }

    /// Lets go of what a validation run staged for a job, when it has a
    /// stage: its rows, their errors, the file's numbering breaks and the
    /// keys a workbook's later parts looked up.
    pub async fn discard(conn: &mut Conn<'_>, module: &'a Module, job_id: &JobId) -> Result<()> {
        match Stage::of(conn, module, job_id).await? {
            Some(stage) => stage.clear(conn, job_id).await,
            None => Ok(()),
        }
    }

    async fn clear(&self, conn: &mut Conn<'_>, job_id: &JobId) -> Result<()> {
        let rows = format!("DELETE FROM {} WHERE job = $1", self.table());
        on_conn!(conn, c => sqlx::query(&rows).bind(self.job).execute(c).await.map(|r| r.rows_affected()))?;
        on_conn!(conn, c => sqlx::query("DELETE FROM ig_job_errors WHERE job_id = $1")
            .bind(job_id).execute(c).await.map(|r| r.rows_affected()))?;
        on_conn!(conn, c => sqlx::query("DELETE FROM ig_stage_breaks WHERE job = $1")
            .bind(self.job).execute(c).await.map(|r| r.rows_affected()))?;
        keys::forget(conn, self.job).await
    }

    /// Records which columns the file gave (once its header is matched).
    pub async fn set_provided(
        &mut self,
        conn: &mut Conn<'_>,
        job_id: &JobId,
        provided: Vec<usize>,
    ) -> Result<()> {
        let names: Vec<&str> = provided
            .iter()
            .map(|&i| self.module.columns[i].name.as_str())
            .collect();
        let text = serde_json::to_string(&names).map_err(|e| StoreError::Corrupt(e.to_string()))?;
        on_conn!(conn, c => sqlx::query("UPDATE ig_jobs SET columns = $1 WHERE id = $2")
            .bind(text).bind(job_id).execute(c).await.map(|r| r.rows_affected()))?;
        self.provided = provided;
        Ok(())
    }

    /// The stage table, quoted.
    pub fn table(&self) -> String {
        table(self.module)
    }

    /// The columns the statistics of the stage table are kept for: those
    /// the checks, the commit and the rollback filter and join on (the job,
    /// the range of rows, the action, the key). Sampling every column took
    /// three times as long (100k rows of orders: 217 ms against 68 ms), a
    /// tenth of the validation. Without `seq` a rollback's range looked
    /// selective: a million index lookups instead of a hash join.
    pub fn planned_columns(&self) -> Vec<String> {
        let own = ["job", "seq", "action", "nkey"].map(String::from);
        let keys = self
            .module
            .key_columns
            .iter()
            .map(|&i| column(self.module, i));
        own.into_iter().chain(keys).collect()
    }

    /// `, same, "v_a", "v_b", "b_a", "b_b"`: the columns a staged row's
    /// update mask, values and before-images are written to, for an
    /// `INSERT`'s or a `COPY`'s column list.
    pub fn written_list(&self) -> String {
        let values = self.provided.iter().map(|&i| column(self.module, i));
        let before = self.provided.iter().map(|&i| before_column(self.module, i));
        let typed = values.chain(before).map(|c| format!(", {c}"));
        std::iter::once(format!(", {SAME}")).chain(typed).collect()
    }

    /// `, "v_a", "v_b", <before of a>, <before of b>`: the provided
    /// columns' values and whole before-images, for a `SELECT` of the
    /// stage's rows (unqualified names).
    pub fn read_list(&self) -> String {
        let values = self.provided.iter().map(|&i| column(self.module, i));
        let before = self.provided.iter().map(|&i| before_of(self.module, i, ""));
        values.chain(before).map(|c| format!(", {c}")).collect()
    }
}

/// The next stage number. Where an `UPDATE` returns nothing (MySQL), the
/// counter's row is read after it: the update holds the row's lock until
/// the transaction ends, so no other reads the same number.
async fn next_stage_number(conn: &mut Conn<'_>) -> Result<i64> {
    let bump = "UPDATE ig_counters SET value = value + 1 WHERE name = 'stage'";
    if conn.dialect().update_returns() {
        let sql = format!("{bump} RETURNING value");
        return Ok(on_conn!(conn, c => sqlx::query_scalar(&sql).fetch_one(c).await)?);
    }
    on_conn!(conn, c => sqlx::query(bump).execute(c).await.map(|r| r.rows_affected()))?;
    Ok(on_conn!(conn, c => sqlx::query_scalar(
        "SELECT value FROM ig_counters WHERE name = 'stage'").fetch_one(c).await)?)
}

/// One validated row, staged for the preview and the commit.
#[derive(Debug, Clone)]
pub struct StagedRow {
    /// Position in the file's data rows, from 0.
    pub seq: i64,
    pub row_no: i64,
    pub action: RowAction,
    /// The natural key as canonical JSON, when every key cell is valid.
    pub nkey: Option<String>,
    /// The values of the provided columns, in the stage's order; none for
    /// a row with errors, which is staged as `vals` instead.
    pub values: Vec<Option<Value>>,
    /// Rows with errors: the row as the preview shows it, JSON object text
    /// (failed cells carry their raw text).
    pub vals: Option<String>,
    /// For updates: the target's current values of the provided columns
    /// the update changes.
    pub before: Option<Before>,
    pub errors: Vec<RowError>,
    /// Remarks that leave the row valid (a reference with
    /// `on_missing = "warn"`), as the stage holds them ([`warns_text`](super::rows::warns_text)):
    /// made where the row is decided, not by the stage's writer.
    pub warns: Option<String>,
    /// Cells the module's normalizers rewrote, with what the file said
    /// ([`norm_text`](super::rows::norm_text)); null when none were.
    pub norm: Option<String>,
}

/// An update's before-image as it is staged: only where the update
/// changes a column (see [`SAME`]).
#[derive(Debug, Clone)]
pub struct Before {
    /// The target's current values of the provided columns, in the
    /// stage's order; none where `same` has the column's bit.
    pub values: Vec<Option<Value>>,
    /// The catalog columns (bits, [`same_bit`])
    /// whose before-image is the row's own value.
    pub same: i64,
}

impl StagedRow {
    /// The value, then the before-image as staged, of the provided column
    /// `k`.
    pub(crate) fn typed(&self, k: usize) -> (Option<&Value>, Option<&Value>) {
        let value = self.values.get(k).and_then(Option::as_ref);
        let before = self.before.as_ref().and_then(|b| b.values.get(k)?.as_ref());
        (value, before)
    }

    /// The row's [`SAME`] mask: an update's, or null.
    pub(crate) fn same(&self) -> Option<i64> {
        self.before.as_ref().map(|b| b.same)
    }
}

/// Where the file's numbering jumps in a run of staged rows (in file
/// order): `(row_no, seq)` of the first row and of every row whose number
/// is not its predecessor's + 1 (blank lines were skipped before it).
/// `last` is the number of the row before the run, and is moved on.
///
/// Why: a row is found by its number through these few breaks and the
/// stage's key `(job, seq)`, not through an index of `(job, row_no)` that
/// every staged row would add to (SQLite: 0.25 s of a 2.1 s stage of 1M
/// rows; PostgreSQL: 0.8 s of its backend's time).
pub fn breaks(rows: &[StagedRow], last: &mut Option<i64>) -> Vec<(i64, i64)> {
    let mut found = Vec::new();
    for r in rows {
        if *last != Some(r.row_no - 1) {
            found.push((r.row_no, r.seq));
        }
        *last = Some(r.row_no);
    }
    found
}

/// Records a stage's breaks ([`breaks`]).
pub async fn insert_breaks(conn: &mut Conn<'_>, job: i64, breaks: &[(i64, i64)]) -> Result<()> {
    for range in pieces(breaks.len(), BATCH) {
        let part = &breaks[range];
        let sql = format!(
            "INSERT INTO ig_stage_breaks (job, row_no, seq) VALUES {}",
            conn.dialect().tuples(part.len(), 3)
        );
        on_conn!(conn, c => {
            let mut q = sqlx::query(&sql);
            for (row_no, seq) in part {
                q = q.bind(job).bind(*row_no).bind(*seq);
            }
            q.execute(c).await?.rows_affected()
        });
    }
    Ok(())
}

/// The stage's column of an update's mask of the columns it leaves as
/// they are (bit `i` for catalog column `i`): their before-image is the
/// row's own value, so it is not written twice, and `b_` holds null.
/// An update re-uploading a table with a price changed wrote every
/// column's value twice: the stage row of an update was twice an
/// insert's, and writing it was most of an upsert's validation (the
/// stage table of a 1M-row upsert: 195 MB, with the mask 143 MB, by
/// SQLite's `dbstat`). Null for rows that are no update, and for
/// rows staged before the mask, whose before-image is whole.
pub const SAME: &str = "same";

/// Columns from this catalog position on have no bit in [`SAME`] (an
/// `i64` less its sign): their before-image is always written.
pub const SAME_BITS: usize = 63;

/// The bit of catalog column `i` in [`SAME`], if it has one.
pub fn same_bit(i: usize) -> Option<i64> {
    (i < SAME_BITS).then(|| 1i64 << i)
}

/// The before-image of catalog column `i` in the stage row `alias` (empty:
/// unqualified), as an SQL expression: the row's value where [`SAME`]
/// says the update leaves the column as it is, its `b_` column otherwise.
pub fn before_of(module: &Module, i: usize, alias: &str) -> String {
    let a = qualifier(alias);
    let (value, before) = (column(module, i), before_column(module, i));
    match same_bit(i) {
        Some(bit) => {
            format!("CASE WHEN ({a}{SAME} & {bit}) <> 0 THEN {a}{value} ELSE {a}{before} END")
        }
        None => format!("{a}{before}"),
    }
}

/// The value of catalog column `i` in the stage row `alias`.
pub fn value_of(module: &Module, i: usize, alias: &str) -> String {
    format!("{}{}", qualifier(alias), column(module, i))
}

/// `alias.` before a column name, or nothing for an unqualified one.
fn qualifier(alias: &str) -> String {
    if alias.is_empty() {
        String::new()
    } else {
        format!("{alias}.")
    }
}

/// Catalog positions of these column names, in catalog order (names a
/// newer catalog no longer has are left out).
fn provided(module: &Module, names: &[String]) -> Vec<usize> {
    let mut found: Vec<usize> = names
        .iter()
        .filter_map(|n| module.column_index(n))
        .collect();
    found.sort_unstable();
    found
}

/// The module's stage table, quoted.
pub fn table(module: &Module) -> String {
    ident(&table_name(module))
}

/// The module's stage table, unquoted. Module keys are short identifiers
/// (the catalog checks them), so the name stays within 63 bytes.
/// The statistics target of the stage's `ANALYZE` (PostgreSQL samples
/// 300 rows per unit): 3,000 rows tell the plans the proportions they
/// need, which job holds how many rows of which action, as well as the
/// default 30,000 did, and sorting the larger sample was most of the
/// `ANALYZE` (100k staged orders: 89-110 ms at the default, 9-10 ms).
pub const STATISTICS_TARGET: u16 = 10;

pub fn table_name(module: &Module) -> String {
    format!("ig_stage_{}", module.key)
}

/// The stage table's column for catalog column `i`, quoted: `v_` keeps
/// module columns apart from the stage's own (`seq`, `action`, …).
pub fn column(module: &Module, i: usize) -> String {
    ident(&format!("{VALUE}{}", module.columns[i].name))
}

/// The stage table's column for the before-image of catalog column `i`.
pub fn before_column(module: &Module, i: usize) -> String {
    ident(&format!("{BEFORE}{}", module.columns[i].name))
}

/// Prefixes of the stage's typed columns: the file's value, the table's
/// value before an update.
pub const VALUE: &str = "v_";
pub const BEFORE: &str = "b_";

/// `CREATE TABLE` and `CREATE INDEX` of a module's stage table, each with
/// the name of what it creates. Its typed columns are nullable (a row with
/// errors stages none of them).
pub fn create_sql(module: &Module, dialect: Dialect) -> Vec<(String, String)> {
    let mut cols = vec![
        "job BIGINT NOT NULL".to_string(),
        "seq BIGINT NOT NULL".into(),
        "row_no BIGINT NOT NULL".into(),
        // insert, update, unchanged or error.
        format!("action {} NOT NULL", dialect.key_text()),
        // The natural key as canonical JSON (a person reads it in conflicts).
        format!("nkey {}", dialect.column_type(ColumnType::Text)),
        // Rows with errors: the row as the preview shows it, JSON.
        format!("vals {}", dialect.column_type(ColumnType::Text)),
        // The row's warnings: the columns naming what their referenced
        // module lacks, or the warnings whole when a rule made one
        // (`rows::warns_text`); null for none.
        format!("warns {}", dialect.column_type(ColumnType::Text)),
        // Cells the module's normalizers rewrote: column → what the file
        // said (`rows::norm_text`); null for none.
        format!("norm {}", dialect.column_type(ColumnType::Text)),
        // Updates: the columns they leave as they are (see [`SAME`]).
        format!("{SAME} BIGINT"),
    ];
    for name in [column, before_column] {
        for (i, c) in module.columns.iter().enumerate() {
            let ty = dialect.module_column_type(c, false);
            cols.push(format!("{} {ty}", name(module, i)));
        }
    }
    cols.push("PRIMARY KEY (job, seq)".into());
    let index = format!("ig_stage_{}_changes", module.key);
    // No index of the natural key: see `retired_indexes`. A revision finds the
    // rows it touches by number (through `ig_stage_breaks` and the key,
    // `rows::breaks`), and the rows sharing their keys by one scan of the
    // job's rows (`rows::rows_keyed`).
    vec![
        (
            table_name(module),
            format!(
                "CREATE TABLE IF NOT EXISTS {} (\n    {}\n){}",
                table(module),
                cols.join(",\n    "),
                dialect.stage_table_options()
            ),
        ),
        // Preview pages of one action, and the commit's checks by action,
        // for every action but `insert` ([`NOT_INSERT`]): see
        // `retired_indexes`.
        (
            index.clone(),
            dialect.create_index(
                &ident(&index),
                &table(module),
                "job, action, seq",
                false,
                Some(NOT_INSERT),
            ),
        ),
    ]
}

/// The predicate of the stage's index by action, which a statement over
/// other actions repeats word for word so that both databases use the
/// index (SQLite uses a partial index only for a query naming its
/// condition; PostgreSQL cannot prove it from a bound parameter).
pub const NOT_INSERT: &str = "action <> 'insert'";

/// `{alias}.action = '<action>'`, with [`NOT_INSERT`] for any other action
/// than `insert` (whose rows the index leaves out: they are read in the
/// table's own `(job, seq)` order). The action is the enum's own spelling,
/// never a client's text.
pub fn action_is(alias: &str, action: RowAction) -> String {
    let a = qualifier(alias);
    match action {
        RowAction::Insert => format!("{a}action = 'insert'"),
        other => format!("{a}action = '{}' AND {a}{NOT_INSERT}", other.as_str()),
    }
}

/// Indexes stage tables had, which a start drops ([`crate::store::schema`]).
///
/// `(job, action, seq)` over every row: its upkeep was a third of
/// PostgreSQL's `COPY` into the stage (1M orders: 4.0–4.6 s with it,
/// 2.4–3.0 s without, 2.5–3.2 s with the partial index that replaces it),
/// and the rows it served best, inserts, are most of a file and in the
/// table's own order anyway (a page of inserts at offset 500,000 of 1M:
/// 70–120 ms either way).
///
/// `(job, nkey)`: every staged row added its key to it,
/// in the file's order: keys arriving in no order (customers by phone
/// number, products by sku) were inserted all over the index, and with the
/// index far larger than the database's cache each insert read and wrote
/// pages: 1M orders shuffled took 16–20 s to validate on SQLite against
/// 4–4.5 s in key order (`bash bench/once.sh` with the harness's file
/// through `shuf`). The
/// index served only the duplicate check (a sort of the job's keys does
/// it) and revisions' rows sharing a key (one scan of the job's rows).
pub fn retired_indexes(module: &Module) -> [String; 2] {
    [
        format!("ig_stage_{}_action", module.key),
        format!("ig_stage_{}_nkey", module.key),
    ]
}

/// Hands a job's staged rows to its revision (API.md section 11): the
/// revision takes the stage number and the columns (the rows' warnings
/// and normalized cells are in the rows), and a copy of the row errors; the revised job keeps
/// its own error list but no longer a preview. Done once: false (and
/// nothing changed) when the revision has a stage already or the job none.
pub async fn hand_over(conn: &mut Conn<'_>, from_job: &JobId, to_job: &JobId) -> Result<bool> {
    // Read first, then written: MySQL's `UPDATE` may not read its own
    // table in a subquery.
    let from: Option<(Option<i64>, Option<String>)> = on_conn!(conn, c => sqlx::query_as(
        "SELECT stage, columns FROM ig_jobs WHERE id = $1")
        .bind(from_job).fetch_optional(c).await)?;
    let Some((Some(stage), columns)) = from else {
        return Ok(false);
    };
    let moved = on_conn!(conn, c => sqlx::query(
        "UPDATE ig_jobs SET stage = $1, columns = $2 WHERE id = $3 AND stage IS NULL")
        .bind(stage).bind(columns).bind(to_job)
        .execute(c).await.map(|r| r.rows_affected()))?;
    if moved == 0 {
        return Ok(false);
    }
    on_conn!(conn, c => sqlx::query("UPDATE ig_jobs SET stage = NULL WHERE id = $1")
        .bind(from_job).execute(c).await.map(|r| r.rows_affected()))?;
    on_conn!(conn, c => sqlx::query(
        "INSERT INTO ig_job_errors (job_id, seq, n, row_no, col, value, code, message, rule) \
         SELECT $1, seq, n, row_no, col, value, code, message, rule FROM ig_job_errors \
         WHERE job_id = $2")
        .bind(to_job).bind(from_job).execute(c).await.map(|r| r.rows_affected()))?;
    Ok(true)
}
