//! The rows of a job as validation left them (the preview), and their
//! errors. The rows live in their module's stage table (see
//! [`super::stage`]), each with its warnings (`warns`); errors in
//! `ig_job_errors`, by job id (a revised job keeps its own list). A row as
//! the validation stages it is `stage`'s [`StagedRow`] (the backends write
//! it, and `rows` calls them), re-exported here with its [`Before`].

use sqlx::Row;

use super::db::Conn;
use super::error::{Result, StoreError, json_col};
use super::stage::{Stage, action_is};
use super::values::DecodeValue;
use super::{mysql, postgres, sqlite, txn};
use crate::ids::JobId;
use crate::on_conn;
use crate::validate::{RowAction, RowError, RowErrorCode, Value};

pub use super::sql::BATCH;
pub use super::stage::{Before, StagedRow};

/// A staged row read back.
#[derive(Debug, Clone)]
pub struct StoredRow {
    pub seq: i64,
    pub row_no: i64,
    pub action: RowAction,
    pub nkey: Option<String>,
    /// The provided columns' values by name, as the API shows them.
    pub vals: serde_json::Map<String, serde_json::Value>,
    pub before: Option<serde_json::Map<String, serde_json::Value>>,
    /// Remarks that leave the row valid, staged with it.
    pub warnings: Vec<RowError>,
    /// Cells the module's normalizers rewrote: column, what the file said.
    pub normalized: Vec<(String, String)>,
}

/// A row's warnings as the stage's `warns` column holds them: the
/// referencing columns whose value the referenced table lacked, joined by
/// commas (catalog column names are `[a-z0-9_]`), null when there are none.
/// The rest of each warning is the row's own: the value is the row's value
/// of the column and the message is [`RowError::missing_reference`]'s, made
/// again when the row is read ([`warnings_of`]). A row that a module's rule
/// warns about has its warnings whole instead ([`warns_json`]).
///
/// Why in the row and not a table of their own: a file whose every row
/// names a product nobody has (a marketplace export before its products
/// are loaded) wrote a million warning rows, each keyed by a 30-character
/// job id, beside the million staged rows: 1.2 s of SQLite's and 2.6 s of
/// PostgreSQL's time in a 1M-row validation. As the warnings' JSON in the
/// row they still cost SQLite 0.7 s of a 2.7 s stage (a row twice as
/// wide); as a column's name, nothing measurable (`bash bench/once.sh`
/// with the harness's 1M orders, every row warning, and SQLite's own
/// `INSERT … SELECT` of the stage timed in `sqlite3`).
/// In the row they go wherever the row goes (to a revision, out with a
/// purge) without being copied.
pub fn warns_text(columns: &[&str]) -> Option<String> {
    match columns {
        [] => None,
        // Nearly always one: `join` measured its parts first (1 % of a 1M-row
        // validation's CPU, `perf`).
        [one] => Some(one.to_string()),
        _ => Some(columns.join(",")),
    }
}

/// A row's warnings whole, as a JSON array of row errors: how `warns`
/// holds the warnings of a row a module's rule warns about (a text
/// starting with `[`, which no column name does). Rare enough that
/// [`warns_text`]'s cost stays the one of every other row.
pub fn warns_json(warnings: &[RowError]) -> Option<String> {
    match warnings {
        [] => None,
        _ => Some(serde_json::to_string(warnings).unwrap_or_else(|_| "[]".into())),
    }
}

/// The text of a referencing column's value, as [`warnings_of`] reads it
/// from the preview's values: text as it is, other values as JSON writes
/// them, nothing for null.
pub fn reference_value(value: Option<&serde_json::Value>) -> String {
    match value {
        Some(serde_json::Value::String(s)) => s.clone(),
        Some(serde_json::Value::Null) | None => String::new(),
        Some(other) => other.to_string(),
    }
}

/// The warnings of the row numbered `row_no`, whose values (by column, as
/// the preview shows them) are `vals`, from its `warns` text.
pub fn warnings_of(
    module: &crate::catalog::Module,
    vals: &serde_json::Map<String, serde_json::Value>,
    warns: Option<&str>,
    row_no: i64,
) -> Result<Vec<RowError>> {
    let Some(warns) = warns else {
        return Ok(vec![]);
    };
    if warns.starts_with('[') {
        return json_col(warns, "warns");
    }
    let row = row_no as u64;
    Ok(warns
        .split(',')
        .map(|column| {
            let value = reference_value(vals.get(column));
            match module.references.iter().find(|r| r.column == column) {
                Some(r) => RowError::missing_reference(row, r, &value),
                // A catalog that no longer has the reference.
                None => RowError {
                    row,
                    column: Some(column.to_string()),
                    message: format!(
                        "row {row}: {column} {value} was not in the referenced module \
                         when the file was checked"
                    ),
                    value: Some(value),
                    code: crate::validate::RowErrorCode::Reference,
                    rule: None,
                },
            }
        })
        .collect())
}

/// A row's normalized cells as the stage's `norm` column holds them: a
/// JSON object of column → what the file said, null when there are none.
pub fn norm_text<'a>(cells: impl IntoIterator<Item = (&'a str, &'a str)>) -> Option<String> {
    let map: serde_json::Map<String, serde_json::Value> = (cells.into_iter())
        .map(|(column, was)| (column.to_string(), was.into()))
        .collect();
    (!map.is_empty()).then(|| serde_json::Value::Object(map).to_string())
}

/// A row's normalized cells from its `norm` text: column, what the file
/// said, in the stage's order.
fn normalized_of(norm: Option<&str>) -> Result<Vec<(String, String)>> {
    let Some(norm) = norm else {
        return Ok(vec![]);
    };
    let map: serde_json::Map<String, serde_json::Value> = json_col(norm, "norm")?;
    Ok(map
        .into_iter()
        .map(|(column, was)| (column, reference_value(Some(&was))))
        .collect())
}

/// Stores a batch of rows and their errors, as each backend loads them
/// fastest (`sqlite::stage::insert_batch`: multi-row `INSERT`s;
/// `postgres::stage::insert_batch`: `COPY`).
pub async fn insert_batch(
    conn: &mut Conn<'_>,
    stage: &Stage<'_>,
    job_id: &JobId,
    rows: &[StagedRow],
) -> Result<()> {
    match conn {
        Conn::Sqlite(c) => sqlite::stage::insert_batch(c, stage, job_id, rows).await,
        Conn::Postgres(c) => postgres::stage::insert_batch(c, stage, job_id, rows).await,
        Conn::Mysql(c) => mysql::stage::insert_batch(c, stage, job_id, rows).await,
    }
}

/// A later row whose natural key an earlier row of the file already has.
pub struct Duplicate {
    pub seq: i64,
    /// What the row was staged as, before it became an error.
    pub action: RowAction,
    pub row_no: i64,
    pub nkey: String,
    pub first_row: i64,
}

/// Rows that repeat an earlier row's natural key (the first one stays).
/// Done in the database so memory does not grow with the file: a hash or
/// sort of the job's keys (no index holds them, see `stage::retired_indexes`),
/// with the memory to do it in that the database lets the caller's
/// transaction ask for ([`txn::join_memory`]).
///
/// Two statements whose plans do not depend on the table's statistics,
/// which never know the newest job (its number is past the histogram, so
/// the planner takes it for a job of one row): an aggregate says whether
/// any key repeats (one pass; the usual answer is no), and only then one
/// sort by key names the repeats. A single join of the rows with their
/// aggregate was planned as a nested loop over that "one row", and ran for
/// twenty minutes on a 1M-row job.
///
/// A validation whose keys a Bloom filter found all distinct as they were
/// staged does not ask (`pipeline::distinct`).
pub async fn duplicates(conn: &mut Conn<'_>, stage: &Stage<'_>) -> Result<Vec<Duplicate>> {
    txn::join_memory(conn).await?;
    let t = stage.table();
    // Keys minus distinct keys: a sort of the keys, no per-key groups
    // (PostgreSQL's hash of 1M groups spilled to disk: 0.9–1.0 s against
    // 0.3–0.4 s; SQLite 0.69 s against 0.40 s), of what the dialect sorts
    // for them (`Dialect::sortable_key`).
    let distinct = conn.dialect().sortable_key("nkey");
    let repeated = format!(
        "SELECT COUNT(*) - COUNT(DISTINCT {distinct}) FROM {t} WHERE job = $1 AND nkey IS NOT NULL"
    );
    let repeated: i64 =
        on_conn!(conn, c => sqlx::query_scalar(&repeated).bind(stage.job).fetch_one(c).await)?;
    if repeated == 0 {
        return Ok(vec![]);
    }
    let sql = format!(
        "SELECT seq, action, row_no, nkey, first_row FROM (\
           SELECT seq, action, row_no, nkey, MIN(row_no) OVER (PARTITION BY nkey) AS first_row, \
                  ROW_NUMBER() OVER (PARTITION BY nkey ORDER BY seq) AS n \
           FROM {t} WHERE job = $1 AND nkey IS NOT NULL) d \
         WHERE n > 1 ORDER BY seq"
    );
    on_conn!(conn, c => {
        let rows = sqlx::query(&sql).bind(stage.job).fetch_all(c).await?;
        rows.iter().map(|r| Ok(Duplicate {
            seq: r.try_get("seq")?,
            action: action_of(&r.try_get::<String, _>("action")?)?,
            row_no: r.try_get("row_no")?,
            nkey: r.try_get("nkey")?,
            first_row: r.try_get("first_row")?,
        })).collect()
    })
}

/// Turns a staged row into an error row and records why.
pub async fn mark_error(
    conn: &mut Conn<'_>,
    stage: &Stage<'_>,
    job_id: &JobId,
    seq: i64,
    error: &RowError,
) -> Result<()> {
    let n: i64 = on_conn!(conn, c => sqlx::query_scalar(
        "SELECT COUNT(*) FROM ig_job_errors WHERE job_id = $1 AND seq = $2")
        .bind(job_id).bind(seq).fetch_one(c).await)?;
    let sql = format!(
        "UPDATE {} SET action = 'error' WHERE job = $1 AND seq = $2",
        stage.table()
    );
    on_conn!(conn, c => sqlx::query(&sql)
        .bind(stage.job).bind(seq).execute(c).await.map(|r| r.rows_affected()))?;
    let e = error;
    on_conn!(conn, c => sqlx::query(
        "INSERT INTO ig_job_errors (job_id, seq, n, row_no, col, value, code, message, rule) \
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)")
        .bind(job_id).bind(seq).bind(n).bind(e.row as i64).bind(&e.column).bind(&e.value)
        .bind(e.code.as_str()).bind(&e.message).bind(&e.rule)
        .execute(c).await.map(|r| r.rows_affected()))?;
    Ok(())
}

/// `SELECT` of staged rows as [`stored`] reads them: the row's own
/// columns, then the provided columns' typed values and before-images.
fn select(stage: &Stage<'_>) -> String {
    format!(
        "SELECT seq, row_no, action, nkey, vals, warns, norm{} FROM {}",
        stage.read_list(),
        stage.table()
    )
}

/// Reads a row of [`select`]. A row with errors shows what it staged as
/// `vals`; any other row its typed values, as the API writes values; an
/// update also its before-image.
fn stored<R>(stage: &Stage<'_>, r: &R) -> Result<StoredRow>
where
    R: Row + DecodeValue,
    for<'a> String: sqlx::Decode<'a, R::Database> + sqlx::Type<R::Database>,
    for<'a> i64: sqlx::Decode<'a, R::Database> + sqlx::Type<R::Database>,
    for<'a> &'a str: sqlx::ColumnIndex<R>,
{
    let vals: Option<String> = r.try_get("vals")?;
    let action = action_of(&r.try_get::<String, _>("action")?)?;
    // The typed columns follow the row's own seven (see `select`).
    let image = |from: usize| -> Result<serde_json::Map<String, serde_json::Value>> {
        (stage.provided.iter().enumerate())
            .map(|(k, &i)| {
                let column = &stage.module.columns[i];
                let value = r.value(from + k, column.ty)?;
                let json = value
                    .as_ref()
                    .map_or(serde_json::Value::Null, Value::to_json);
                Ok((column.name.clone(), json))
            })
            .collect()
    };
    let vals = match vals {
        Some(v) => json_col(&v, "vals")?,
        None => image(OWN)?,
    };
    // An update's before-image; a row in conflict with the table (API.md
    // section 15) has the table's values now, any other error none.
    let before = match action {
        RowAction::Update => Some(image(OWN + stage.provided.len())?),
        RowAction::Error => {
            Some(image(OWN + stage.provided.len())?).filter(|b| b.values().any(|v| !v.is_null()))
        }
        _ => None,
    };
    let row_no: i64 = r.try_get("row_no")?;
    let warns: Option<String> = r.try_get("warns")?;
    let norm: Option<String> = r.try_get("norm")?;
    Ok(StoredRow {
        seq: r.try_get("seq")?,
        row_no,
        action,
        nkey: r.try_get("nkey")?,
        warnings: warnings_of(stage.module, &vals, warns.as_deref(), row_no)?,
        normalized: normalized_of(norm.as_deref())?,
        vals,
        before,
    })
}

/// The row's own columns [`select`] reads before the typed ones.
const OWN: usize = 7;

/// A staged row's action, from its spelling in the stage.
fn action_of(action: &str) -> Result<RowAction> {
    RowAction::parse(action).ok_or_else(|| StoreError::Corrupt(format!("row action {action:?}")))
}

/// Which remarks a page of the preview asks its rows to have.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Marked {
    /// At least one warning.
    pub warned: bool,
    /// At least one cell a normalizer rewrote.
    pub normalized: bool,
}

/// A page of the preview of the rows with the remarks `marked` asks for
/// (optionally only one action), in file order.
pub async fn page_marked(
    conn: &mut Conn<'_>,
    stage: &Stage<'_>,
    marked: Marked,
    action: Option<RowAction>,
    offset: i64,
    limit: i64,
) -> Result<(i64, Vec<StoredRow>)> {
    let t = stage.table();
    // The action, when asked for, is a literal of the enum's own spelling.
    let mut filter = action
        .map(|a| format!(" AND {}", action_is("", a)))
        .unwrap_or_default();
    if marked.warned {
        filter.push_str(" AND warns IS NOT NULL");
    }
    if marked.normalized {
        filter.push_str(" AND norm IS NOT NULL");
    }
    let rows = format!("WHERE job = $1{filter}");
    let count = format!("SELECT COUNT(*) FROM {t} {rows}");
    let page = format!("{} {rows} ORDER BY seq LIMIT $2 OFFSET $3", select(stage));
    on_conn!(conn, c => {
        let total: i64 = sqlx::query_scalar(&count)
            .bind(stage.job).fetch_one(&mut *c).await?;
        let rows = sqlx::query(&page)
            .bind(stage.job).bind(limit).bind(offset)
            .fetch_all(&mut *c).await?;
        let rows = rows.iter().map(|r| stored(stage, r)).collect::<Result<Vec<_>>>()?;
        Ok((total, rows))
    })
}

/// A page of the preview, optionally only one action, in file order.
///
/// Every row of the file is staged with the next sequence number from 0,
/// so without a filter the page starts at `seq = offset` and the total is
/// the last seq + 1: two index probes, whatever the offset. With a filter
/// the page's first row is found by counting entries of the stage's index
/// by action alone, and only the page's rows are read whole; inserts,
/// which that index leaves out, are counted off the job's rows in order
/// (`stage::action_is`).
pub async fn page(
    conn: &mut Conn<'_>,
    stage: &Stage<'_>,
    action: Option<RowAction>,
    offset: i64,
    limit: i64,
) -> Result<(i64, Vec<StoredRow>)> {
    let (t, columns) = (stage.table(), select(stage));
    on_conn!(conn, c => {
        let (total, rows) = match action {
            None => {
                let last: Option<i64> = sqlx::query_scalar(
                    &format!("SELECT MAX(seq) FROM {t} WHERE job = $1"))
                    .bind(stage.job).fetch_one(&mut *c).await?;
                let rows = sqlx::query(&format!(
                    "{columns} WHERE job = $1 AND seq >= $2 ORDER BY seq LIMIT $3"))
                    .bind(stage.job).bind(offset).bind(limit).fetch_all(&mut *c).await?;
                (last.map_or(0, |l| l + 1), rows)
            }
            Some(a) => {
                let is = action_is("", a);
                let total: i64 = sqlx::query_scalar(&format!(
                    "SELECT COUNT(*) FROM {t} WHERE job = $1 AND {is}"))
                    .bind(stage.job).fetch_one(&mut *c).await?;
                let rows = sqlx::query(&format!(
                    "{columns} WHERE job = $1 AND {is} AND seq >= (\
                       SELECT seq FROM {t} WHERE job = $2 AND {is} \
                       ORDER BY seq LIMIT 1 OFFSET $3) \
                     ORDER BY seq LIMIT $4"))
                    .bind(stage.job).bind(stage.job).bind(offset).bind(limit)
                    .fetch_all(&mut *c).await?;
                (total, rows)
            }
        };
        let rows = rows.iter().map(|r| stored(stage, r)).collect::<Result<Vec<_>>>()?;
        Ok((total, rows))
    })
}

/// A page of the preview without the rows a revision excluded (they are
/// listed only when asked for), in file order. Pages are counted off in
/// the database: such jobs are revisions, and their exclusions few.
pub async fn page_included(
    conn: &mut Conn<'_>,
    stage: &Stage<'_>,
    offset: i64,
    limit: i64,
) -> Result<(i64, Vec<StoredRow>)> {
    let (t, columns) = (stage.table(), select(stage));
    let rows = "WHERE job = $1 AND action <> 'excluded'";
    on_conn!(conn, c => {
        let total: i64 = sqlx::query_scalar(&format!("SELECT COUNT(*) FROM {t} {rows}"))
            .bind(stage.job).fetch_one(&mut *c).await?;
        let page = sqlx::query(&format!("{columns} {rows} ORDER BY seq LIMIT $2 OFFSET $3"))
            .bind(stage.job).bind(limit).bind(offset).fetch_all(&mut *c).await?;
        let page = page.iter().map(|r| stored(stage, r)).collect::<Result<Vec<_>>>()?;
        Ok((total, page))
    })
}

/// Up to `limit` rows with errors after sequence number `after`, in file
/// order: a report of every failing row reads them page by page from
/// where the last page ended (the stage's index by action), never by
/// counting off an offset.
pub async fn errored_after(
    conn: &mut Conn<'_>,
    stage: &Stage<'_>,
    after: i64,
    limit: i64,
) -> Result<Vec<StoredRow>> {
    let sql = format!(
        "{} WHERE job = $1 AND {} AND seq > $2 ORDER BY seq LIMIT $3",
        select(stage),
        action_is("", RowAction::Error)
    );
    on_conn!(conn, c => {
        let rows = sqlx::query(&sql)
            .bind(stage.job).bind(after).bind(limit).fetch_all(c).await?;
        rows.iter().map(|r| stored(stage, r)).collect()
    })
}

/// Errors of the rows with sequence numbers in a range.
pub async fn errors_of(
    conn: &mut Conn<'_>,
    job_id: &JobId,
    from_seq: i64,
    to_seq: i64,
) -> Result<Vec<(i64, RowError)>> {
    let sql = "SELECT seq, row_no, col, value, code, message, rule FROM ig_job_errors \
               WHERE job_id = $1 AND seq >= $2 AND seq <= $3 ORDER BY seq, n";
    on_conn!(conn, c => {
        let rows = sqlx::query(sql)
            .bind(job_id).bind(from_seq).bind(to_seq).fetch_all(c).await?;
        rows.iter().map(|r| Ok((r.try_get("seq")?, row_error(r)?))).collect()
    })
}

fn row_error<R: Row>(r: &R) -> Result<RowError>
where
    for<'a> String: sqlx::Decode<'a, R::Database> + sqlx::Type<R::Database>,
    for<'a> i64: sqlx::Decode<'a, R::Database> + sqlx::Type<R::Database>,
    for<'a> &'a str: sqlx::ColumnIndex<R>,
{
    let code: String = r.try_get("code")?;
    Ok(RowError {
        row: r.try_get::<i64, _>("row_no")? as u64,
        column: r.try_get("col")?,
        value: r.try_get("value")?,
        code: RowErrorCode::parse(&code)
            .ok_or_else(|| StoreError::Corrupt(format!("row error code {code:?}")))?,
        message: r.try_get("message")?,
        rule: r.try_get("rule")?,
    })
}

/// A page of a job's errors, in file order.
pub async fn errors(
    conn: &mut Conn<'_>,
    job_id: &JobId,
    offset: i64,
    limit: i64,
) -> Result<(i64, Vec<RowError>)> {
    on_conn!(conn, c => {
        let total: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM ig_job_errors WHERE job_id = $1")
            .bind(job_id).fetch_one(&mut *c).await?;
        let rows = sqlx::query(
            "SELECT row_no, col, value, code, message, rule FROM ig_job_errors WHERE job_id = $1 \
             ORDER BY seq, n LIMIT $2 OFFSET $3")
            .bind(job_id).bind(limit).bind(offset).fetch_all(&mut *c).await?;
        let list = rows.iter().map(row_error).collect::<Result<Vec<_>>>()?;
        Ok((total, list))
    })
}

/// `seq IN (…)` for sequence numbers read from the database (integers,
/// written as literals). A statement holding literals is run once: it is
/// not kept in the connection's statement cache (`persistent(false)`).
fn seq_list(seqs: &[i64]) -> String {
    let list: Vec<String> = seqs.iter().map(i64::to_string).collect();
    format!("seq IN ({})", list.join(", "))
}

/// The staged rows with these row numbers, in file order.
pub async fn rows_numbered(
    conn: &mut Conn<'_>,
    stage: &Stage<'_>,
    rows: &[i64],
) -> Result<Vec<StoredRow>> {
    let wanted: std::collections::HashSet<i64> = rows.iter().copied().collect();
    let mut found = Vec::new();
    for seqs in seqs_of(conn, stage, rows).await?.chunks(BATCH) {
        let sql = format!("{} WHERE job = $1 AND {}", select(stage), seq_list(seqs));
        let got = on_conn!(conn, c => {
            let rows = sqlx::query(&sql).persistent(false).bind(stage.job).fetch_all(c).await?;
            rows.iter().map(|r| stored(stage, r)).collect::<Result<Vec<_>>>()
        })?;
        found.extend(got.into_iter().filter(|r| wanted.contains(&r.row_no)));
    }
    found.sort_by_key(|r| r.seq);
    Ok(found)
}

/// The sequence numbers the stage's rows with these numbers would have,
/// ascending: each is its nearest break's at or before it plus the
/// distance from it. A number the file skipped (a blank line) maps to a
/// later row's, whose own number then tells it apart.
async fn seqs_of(conn: &mut Conn<'_>, stage: &Stage<'_>, rows: &[i64]) -> Result<Vec<i64>> {
    let mut rows = rows.to_vec();
    rows.sort_unstable();
    rows.dedup();
    let (Some(&low), Some(&high)) = (rows.first(), rows.last()) else {
        return Ok(vec![]);
    };
    let breaks: Vec<(i64, i64)> = on_conn!(conn, c => sqlx::query_as(
        "SELECT row_no, seq FROM ig_stage_breaks WHERE job = $1 AND row_no <= $2 \
           AND row_no >= COALESCE((SELECT MAX(row_no) FROM ig_stage_breaks \
                                   WHERE job = $3 AND row_no <= $4), $5) \
         ORDER BY row_no")
        .bind(stage.job).bind(high).bind(stage.job).bind(low).bind(low)
        .fetch_all(c).await)?;
    let mut seqs = Vec::with_capacity(rows.len());
    let mut at = 0;
    for r in rows {
        while at + 1 < breaks.len() && breaks[at + 1].0 <= r {
            at += 1;
        }
        match breaks.get(at) {
            Some(&(row_no, seq)) if row_no <= r => seqs.push(seq + (r - row_no)),
            _ => {}
        }
    }
    seqs.sort_unstable();
    seqs.dedup();
    Ok(seqs)
}

/// The staged rows whose natural key is one of these, in file order.
pub async fn rows_keyed(
    conn: &mut Conn<'_>,
    stage: &Stage<'_>,
    keys: &[String],
) -> Result<Vec<StoredRow>> {
    if keys.is_empty() {
        return Ok(vec![]);
    }
    // One statement, whatever the number of keys: no index holds the
    // stage's keys (`stage::retired_indexes`), so each statement is a scan of the
    // job's rows in the database, and the keys go as one JSON list (a hash
    // semi-join on PostgreSQL; SQLite makes a temporary index of the list).
    let list = conn.dialect().json_text_list("$2");
    let sql = format!(
        "{} WHERE job = $1 AND nkey IN ({list}) ORDER BY seq",
        select(stage)
    );
    let keys = serde_json::json!(keys).to_string();
    let mut found = on_conn!(conn, c => {
        let rows = sqlx::query(&sql).bind(stage.job).bind(&keys).fetch_all(c).await?;
        rows.iter().map(|r| stored(stage, r)).collect::<Result<Vec<_>>>()
    })?;
    found.sort_by_key(|r| r.seq);
    Ok(found)
}

/// Removes staged rows, with their errors and warnings, to be staged
/// again as a revision decided them.
pub async fn remove(
    conn: &mut Conn<'_>,
    stage: &Stage<'_>,
    job_id: &JobId,
    seqs: &[i64],
) -> Result<()> {
    for part in seqs.chunks(BATCH) {
        let list = seq_list(part);
        let sql = format!("DELETE FROM {} WHERE job = $1 AND {list}", stage.table());
        on_conn!(conn, c => sqlx::query(&sql).persistent(false).bind(stage.job).execute(c).await.map(|r| r.rows_affected()))?;
        let sql = format!("DELETE FROM ig_job_errors WHERE job_id = $1 AND {list}");
        on_conn!(conn, c => sqlx::query(&sql).persistent(false).bind(job_id).execute(c).await.map(|r| r.rows_affected()))?;
    }
    Ok(())
}

/// Which of these row numbers the job's stage holds.
pub async fn existing_rows(
    conn: &mut Conn<'_>,
    stage: &Stage<'_>,
    rows: &[i64],
) -> Result<std::collections::HashSet<i64>> {
    let wanted: std::collections::HashSet<i64> = rows.iter().copied().collect();
    let mut found = std::collections::HashSet::new();
    for seqs in seqs_of(conn, stage, rows).await?.chunks(BATCH) {
        let sql = format!(
            "SELECT row_no FROM {} WHERE job = $1 AND {}",
            stage.table(),
            seq_list(seqs)
        );
        let got: Vec<i64> = on_conn!(conn, c => sqlx::query_scalar(&sql).persistent(false).bind(stage.job).fetch_all(c).await)?;
        found.extend(got.into_iter().filter(|r| wanted.contains(r)));
    }
    Ok(found)
}

/// The staged rows with these sequence numbers (a commit's suspects).
pub async fn rows_at(
    conn: &mut Conn<'_>,
    stage: &Stage<'_>,
    seqs: &[i64],
) -> Result<Vec<StoredRow>> {
    if seqs.is_empty() {
        return Ok(vec![]);
    }
    let sql = format!(
        "{} WHERE job = $1 AND {} ORDER BY seq",
        select(stage),
        seq_list(seqs)
    );
    on_conn!(conn, c => {
        let rows = sqlx::query(&sql).persistent(false).bind(stage.job).fetch_all(c).await?;
        rows.iter().map(|r| stored(stage, r)).collect()
    })
}

#[cfg(test)]
mod tests {
    use crate::validate::RowError;

    /// The orders module and its reference of products by sku.
    fn orders() -> std::sync::Arc<crate::catalog::Module> {
        let catalog = crate::catalog::Catalog::builtin();
        catalog.get("orders").expect("orders").clone()
    }

    fn sku(orders: &crate::catalog::Module) -> &crate::catalog::Reference {
        let mut references = orders.references.iter();
        references.find(|r| r.column == "sku").expect("a reference")
    }

    #[test]
    fn warnings_come_back_from_the_row_as_they_were_staged() {
        let orders = &orders();
        let sku = sku(orders);
        assert_eq!(super::warns_text(&[]), None, "no warnings: null");
        let staged = vec![RowError::missing_reference(7, sku, "P-\"7\" Ü")];
        let text = super::warns_text(&["sku"]).expect("a text");
        assert_eq!(text, "sku", "the column names it");
        assert_eq!(
            super::warns_text(&["sku", "customer_id"]).as_deref(),
            Some("sku,customer_id")
        );
        let mut vals = serde_json::Map::new();
        vals.insert("sku".into(), "P-\"7\" Ü".into());
        vals.insert("qty".into(), 3.into());
        assert_eq!(
            super::warnings_of(orders, &vals, Some(&text), 7).unwrap(),
            staged
        );
        assert!(
            super::warnings_of(orders, &vals, None, 7)
                .unwrap()
                .is_empty()
        );
        // A column whose reference the catalog no longer has still says
        // what was found, with the row's value.
        let gone = super::warnings_of(orders, &vals, Some("qty"), 7).unwrap();
        assert_eq!(gone[0].value.as_deref(), Some("3"));
        assert_eq!(gone[0].code, crate::validate::RowErrorCode::Reference);
    }

    #[test]
    fn a_rule_warning_keeps_the_row_warnings_whole() {
        let orders = &orders();
        let sku = sku(orders);
        let mut rule = RowError::missing_reference(7, sku, "P-7");
        rule.code = crate::validate::RowErrorCode::Rule;
        rule.rule = Some("qty_small".into());
        let both = vec![RowError::missing_reference(7, sku, "P-7"), rule];
        let text = super::warns_json(&both).expect("a text");
        assert!(text.starts_with('['), "{text}");
        let vals = serde_json::Map::new();
        assert_eq!(
            super::warnings_of(orders, &vals, Some(&text), 7).unwrap(),
            both
        );
        assert_eq!(super::warns_json(&[]), None);
    }

    #[test]
    fn normalized_cells_read_back_in_order() {
        let text = super::norm_text([("wa_number", "0812-3456-7890"), ("city", " Bandung")]);
        let text = text.expect("a text");
        let back = super::normalized_of(Some(&text)).unwrap();
        assert_eq!(back.len(), 2);
        assert!(back.contains(&("city".to_string(), " Bandung".to_string())));
        assert_eq!(super::norm_text([]), None);
        assert!(super::normalized_of(None).unwrap().is_empty());
    }
}
