//! Set-based writes from the staged rows of a job to its module table.
//!
//! A job's validated rows sit typed in its module's stage table (see
//! [`super`]). Inserting them, and undoing those inserts, is one SQL
//! statement each (`INSERT … SELECT`, `DELETE … USING`), so a million rows
//! never travel through the service. Updates work the same way: the
//! commit writes only over rows that still hold the before-image the
//! preview showed, and a rollback writes the before-image back over rows
//! that still hold what the commit wrote. Checks are statements over the
//! staged rows too; only rows the database finds different come back to
//! the service, to be confirmed.

use super::{self as stage, Stage, action_is};
use crate::catalog::{Catalog, Module};
use crate::on_conn;
use crate::store::db::Conn;
use crate::store::dialect::Dialect;
use crate::store::error::Result;
use crate::store::sql::ident;
use crate::validate::RowAction;

/// Where a statement reads a row's values of the module's columns.
#[derive(Clone, Copy)]
enum Place<'a> {
    /// Typed columns of a stage table row under this alias: its values
    /// ([`stage::value_of`]) or its before-image ([`stage::before_of`]).
    Staged(&'a str, fn(&Module, usize, &str) -> String),
    /// A JSON object text, as rows were staged before stage tables (see
    /// [`adopt_job_rows`]), read as the dialect reads one
    /// ([`Dialect::json_record`]). The JSON was written by
    /// `Value::to_json`. The JSON text, and the alias of its record.
    Json(&'a str, &'a str),
}

/// A module's values read from one place, as SQL expressions.
struct Source<'a> {
    dialect: Dialect,
    module: &'a Module,
    from: Place<'a>,
}

impl<'a> Source<'a> {
    /// The values of the stage row `alias`.
    fn staged(dialect: Dialect, module: &'a Module, alias: &'a str) -> Self {
        Source {
            dialect,
            module,
            from: Place::Staged(alias, stage::value_of),
        }
    }

    /// The before-image of the stage row `alias`.
    fn before(dialect: Dialect, module: &'a Module, alias: &'a str) -> Self {
        Source {
            dialect,
            module,
            from: Place::Staged(alias, stage::before_of),
        }
    }

    fn json(dialect: Dialect, module: &'a Module, json: &'a str, alias: &'a str) -> Self {
        Source {
            dialect,
            module,
            from: Place::Json(json, alias),
        }
    }

    /// What to join after the table holding the JSON, if anything.
    fn lateral(&self) -> String {
        match self.from {
            Place::Json(json, alias) => {
                let columns = self.module.columns.iter();
                let columns: Vec<(&str, _)> = columns.map(|c| (c.name.as_str(), c.ty)).collect();
                self.dialect.json_record(json, alias, &columns)
            }
            Place::Staged(..) => String::new(),
        }
    }

    /// The value of catalog column `i`, typed.
    fn field(&self, i: usize) -> String {
        match self.from {
            Place::Staged(alias, image) => image(self.module, i, alias),
            Place::Json(json, alias) => {
                let name = &self.module.columns[i].name;
                self.dialect.json_member(json, alias, name)
            }
        }
    }

    /// `t.k1 = <k1> AND …`: a row meets its target row.
    fn key_match(&self, target: &str) -> String {
        self.module
            .key_columns
            .iter()
            .map(|&i| {
                format!(
                    "{target}.{} = {}",
                    ident(&self.module.columns[i].name),
                    self.field(i)
                )
            })
            .collect::<Vec<_>>()
            .join(" AND ")
    }
}

/// Runs a statement over one range of a job's staged rows (`$1` the job's
/// stage number, `$2`..`$3` the sequence numbers); says how many rows it
/// wrote.
async fn in_range(conn: &mut Conn<'_>, sql: &str, job: i64, seqs: Seqs) -> Result<u64> {
    Ok(
        on_conn!(conn, c => sqlx::query(sql).bind(job).bind(seqs.from).bind(seqs.to)
        .execute(c).await.map(|r| r.rows_affected()))?,
    )
}

/// A range of staged rows, `from..to` by sequence number: a commit's or a
/// rollback's writes of a job go a range at a time, as large as the
/// dialect writes at once ([`Dialect::rows_per_write`]: SQLite keeps
/// memory flat in ranges of 50,000, PostgreSQL writes a job in one).
#[derive(Debug, Clone, Copy)]
pub struct Seqs {
    pub from: i64,
    pub to: i64,
}

impl Seqs {
    /// The ranges covering `rows` staged rows.
    pub fn all(dialect: Dialect, rows: i64) -> impl Iterator<Item = Seqs> {
        let step = dialect.rows_per_write(rows);
        (0..rows.max(1))
            .step_by(step as usize)
            .map(move |from| Seqs {
                from,
                to: from + step,
            })
    }
}

/// Rows found by a check: how many in all, and the first ones (row number,
/// natural key text).
pub struct Found {
    pub total: i64,
    pub first: Vec<(i64, String)>,
}

/// Runs a `SELECT r.row_no, r.nkey FROM … WHERE {condition}` check over a
/// job's staged rows (`$1` its stage number).
async fn find(conn: &mut Conn<'_>, from_where: &str, job: i64, listed: i64) -> Result<Found> {
    let list = format!("SELECT r.row_no, r.nkey {from_where} ORDER BY r.seq LIMIT {listed}");
    let first: Vec<(i64, Option<String>)> =
        on_conn!(conn, c => sqlx::query_as(&list).bind(job).fetch_all(c).await)?;
    let total = if (first.len() as i64) < listed {
        first.len() as i64
    } else {
        let count = format!("SELECT COUNT(*) {from_where}");
        on_conn!(conn, c => sqlx::query_scalar(&count).bind(job).fetch_one(c).await)?
    };
    Ok(Found {
        total,
        first: first
            .into_iter()
            .map(|(r, k)| (r, k.unwrap_or_default()))
            .collect(),
    })
}

/// Staged inserts whose key is in the table now (it was free at preview).
pub async fn taken_keys(conn: &mut Conn<'_>, stage: &Stage<'_>, listed: i64) -> Result<Found> {
    let src = Source::staged(conn.dialect(), stage.module, "r");
    let t = ident(&stage.module.table);
    let sql = format!(
        "FROM {} r JOIN {t} ON {} WHERE r.job = $1 AND r.action = 'insert'",
        stage.table(),
        src.key_match(&t)
    );
    find(conn, &sql, stage.job, listed).await
}

/// Inserts every staged insert of the job, in file order; the columns the
/// file did not give are null.
pub async fn insert(conn: &mut Conn<'_>, stage: &Stage<'_>) -> Result<u64> {
    let src = Source::staged(conn.dialect(), stage.module, "r");
    let names: Vec<String> = stage
        .provided
        .iter()
        .map(|&i| ident(&stage.module.columns[i].name))
        .collect();
    let fields: Vec<String> = stage.provided.iter().map(|&i| src.field(i)).collect();
    let sql = format!(
        "INSERT INTO {} ({}) SELECT {} FROM {} r \
         WHERE r.job = $1 AND r.action = 'insert' ORDER BY r.seq",
        ident(&stage.module.table),
        names.join(", "),
        fields.join(", "),
        stage.table(),
    );
    Ok(
        on_conn!(conn, c => sqlx::query(&sql).bind(stage.job).execute(c).await.map(|r| r.rows_affected()))?,
    )
}

/// Writes the file's columns over the job's staged updates in one range,
/// and says how many rows it wrote. With `checked`, only over rows that
/// still hold their before-image (what the preview showed): when fewer
/// rows are written than the range has updates, a previewed row changed,
/// and the caller undoes the writes (a savepoint) and lists the rows with
/// [`suspects`]. The check and the write are one pass over the rows.
pub async fn update(
    conn: &mut Conn<'_>,
    stage: &Stage<'_>,
    seqs: Seqs,
    checked: bool,
) -> Result<u64> {
    let (dialect, module) = (conn.dialect(), stage.module);
    let to = Source::staged(dialect, module, "r");
    let from = Source::before(dialect, module, "r");
    let check =
        checked.then(|| holds(&from, &ident(&module.table), stage.provided.iter().copied()));
    write_updates(conn, stage, seqs, &to, check).await
}

/// Puts back the before-image of the rows the job updated, in one range.
pub async fn restore_updated(conn: &mut Conn<'_>, stage: &Stage<'_>, seqs: Seqs) -> Result<u64> {
    let before = Source::before(conn.dialect(), stage.module, "r");
    write_updates(conn, stage, seqs, &before, None).await
}

/// `UPDATE` of the target rows of the job's staged updates in one range:
/// the provided columns (but the key) set from `values`, where `check`.
async fn write_updates(
    conn: &mut Conn<'_>,
    stage: &Stage<'_>,
    seqs: Seqs,
    values: &Source<'_>,
    check: Option<String>,
) -> Result<u64> {
    let module = stage.module;
    let t = ident(&module.table);
    let sets: Vec<(String, String)> = stage
        .provided
        .iter()
        .filter(|i| !module.key_columns.contains(i))
        .map(|&i| (ident(&module.columns[i].name), values.field(i)))
        .collect();
    if sets.is_empty() {
        // Only key columns: an update changes nothing the key does not name.
        return Ok(0);
    }
    let key = Source::staged(values.dialect, module, "r").key_match(&t);
    let filter = format!(
        "r.job = $1 AND r.seq >= $2 AND r.seq < $3 AND {} AND {key}{}",
        action_is("r", RowAction::Update),
        check.map(|c| format!(" AND {c}")).unwrap_or_default(),
    );
    let sql = values
        .dialect
        .update_joined(&t, &sets, &stage.table(), &filter);
    in_range(conn, &sql, stage.job, seqs).await
}

/// `t.c1 IS <source c1> AND …` over these catalog columns (`1 = 1` for
/// none): the target row holds the source's values in them.
fn holds(src: &Source, t: &str, columns: impl IntoIterator<Item = usize>) -> String {
    let held: Vec<String> = columns
        .into_iter()
        .map(|i| {
            let col = format!("{t}.{}", ident(&src.module.columns[i].name));
            src.dialect.null_safe_eq(&col, &src.field(i))
        })
        .collect();
    if held.is_empty() {
        "1 = 1".into()
    } else {
        held.join(" AND ")
    }
}

/// The target row holds exactly what the job inserted: the file's columns
/// as staged, the others null.
fn holds_inserted(src: &Source, t: &str, provided: &[usize]) -> String {
    let nulls = (0..src.module.columns.len())
        .filter(|i| !provided.contains(i))
        .map(|i| format!("{t}.{} IS NULL", ident(&src.module.columns[i].name)));
    std::iter::once(holds(src, t, provided.iter().copied()))
        .chain(nulls)
        .collect::<Vec<_>>()
        .join(" AND ")
}

/// Rows the job inserted that are gone or differ from what was inserted
/// (a rollback conflict).
pub async fn changed_inserts(conn: &mut Conn<'_>, stage: &Stage<'_>, listed: i64) -> Result<Found> {
    let src = Source::staged(conn.dialect(), stage.module, "r");
    let t = ident(&stage.module.table);
    let sql = format!(
        "FROM {} r LEFT JOIN {t} ON {} \
         WHERE r.job = $1 AND r.action = 'insert' AND ({t}.{} IS NULL OR NOT ({}))",
        stage.table(),
        src.key_match(&t),
        ident("id"),
        holds_inserted(&src, &t, &stage.provided)
    );
    find(conn, &sql, stage.job, listed).await
}

/// Deletes the rows the job inserted in one range that still hold exactly
/// what it inserted, and says how many. The check and the delete are one
/// pass: when fewer rows go than the job inserted, the caller undoes the
/// deletes (a savepoint) and lists the conflicts with [`changed_inserts`].
pub async fn delete_inserted(conn: &mut Conn<'_>, stage: &Stage<'_>, seqs: Seqs) -> Result<u64> {
    let src = Source::staged(conn.dialect(), stage.module, "r");
    let t = ident(&stage.module.table);
    let staged = "r.job = $1 AND r.seq >= $2 AND r.seq < $3 AND r.action = 'insert'";
    let filter = format!("{staged} AND {}", holds_inserted(&src, &t, &stage.provided));
    let (from, on) = (stage.table(), src.key_match(&t));
    let sql = src
        .dialect
        .delete_joined(&t, &ident("id"), &from, &on, &filter);
    in_range(conn, &sql, stage.job, seqs).await
}

/// The ids of the rows the job inserted, `(first, last)`, when all
/// `inserted` of them still hold exactly what the job inserted and their
/// ids are one unbroken range; `None` otherwise. A commit inserts its rows
/// in one statement, in file order, with the table locked, so their ids
/// are one range unless a row went or changed since. Such a range holds
/// the job's rows and nothing else (as many distinct ids as its length),
/// so a rollback can delete it by id ([`delete_ids`]) after one read.
/// Checking and deleting row by row through the natural key
/// ([`delete_inserted`]) cost SQLite half as long again: a 1M-row
/// rollback took 1.8–1.9 s that way, 1.2–1.3 s by id (`bash bench/run.sh
/// --rows 1000000 --modules orders --backends sqlite`).
///
/// With `only_inserts` (the job staged nothing else, so its inserts are
/// numbered without gaps), each staged row is first looked for at the id
/// its number gives, the first insert's id onwards: SQLite reads 1M rows
/// so in 0.40 s, through the natural key index in 0.72 s. Where that
/// fails the check goes through the key.
pub async fn inserted_ids(
    conn: &mut Conn<'_>,
    stage: &Stage<'_>,
    inserted: i64,
    only_inserts: bool,
) -> Result<Option<(i64, i64)>> {
    let src = Source::staged(conn.dialect(), stage.module, "r");
    let t = ident(&stage.module.table);
    let (id, job) = (ident("id"), stage.job);
    let from = stage.table();
    // The job's inserts, its stage number the parameter `$n`.
    let staged = |n: usize| format!("r.job = ${n} AND r.action = 'insert'");
    let holds = holds_inserted(&src, &t, &stage.provided);
    // The staged inserts joined `on` their table rows, counted with the
    // least and greatest id of those that hold what was inserted (the job
    // the parameter after those of `on`, `$n`).
    let range = |on: &str, n: usize| {
        format!(
            "SELECT COUNT(*), MIN({t}.{id}), MAX({t}.{id}) FROM {from} r JOIN {t} ON {on} \
             WHERE {} AND {holds}",
            staged(n)
        )
    };
    if only_inserts {
        let first = format!(
            "SELECT {t}.{id} - r.seq FROM {from} r JOIN {t} ON {} WHERE {} \
             ORDER BY r.seq LIMIT 1",
            src.key_match(&t),
            staged(1)
        );
        let offset: Option<i64> =
            on_conn!(conn, c => sqlx::query_scalar(&first).bind(job).fetch_optional(c).await)?;
        if let Some(offset) = offset {
            let sql = range(&format!("{t}.{id} = r.seq + $1"), 2);
            let found: (i64, Option<i64>, Option<i64>) = on_conn!(conn, c => sqlx::query_as(&sql)
                .bind(offset).bind(job).fetch_one(c).await)?;
            if let Some(ids) = one_range(found, inserted) {
                return Ok(Some(ids));
            }
        }
    }
    let sql = range(&src.key_match(&t), 1);
    let found = on_conn!(conn, c => sqlx::query_as(&sql).bind(job).fetch_one(c).await)?;
    Ok(one_range(found, inserted))
}

/// `(first, last)` of `rows` ids found between them, if they are the
/// `wanted` rows and fill the range.
fn one_range(
    (rows, first, last): (i64, Option<i64>, Option<i64>),
    wanted: i64,
) -> Option<(i64, i64)> {
    let (first, last) = (first?, last?);
    let span = last.checked_sub(first)?.checked_add(1)?;
    (rows == wanted && span == rows).then_some((first, last))
}

/// Deletes the rows of a module's table with ids `first..=last` (`last`
/// may be the greatest id there is), and says how many, as many ids at a
/// time as the dialect writes rows at once ([`Seqs`]).
pub async fn delete_ids(
    conn: &mut Conn<'_>,
    module: &Module,
    first: i64,
    last: i64,
) -> Result<u64> {
    let sql = format!(
        "DELETE FROM {} WHERE {id} >= $1 AND {id} <= $2",
        ident(&module.table),
        id = ident("id")
    );
    let mut deleted = 0;
    let span = last.saturating_sub(first).saturating_add(1);
    for ids in Seqs::all(conn.dialect(), span) {
        let from = first.saturating_add(ids.from);
        let to = first.saturating_add(ids.to - 1).min(last);
        deleted += on_conn!(conn, c => sqlx::query(&sql).bind(from).bind(to)
            .execute(c).await.map(|r| r.rows_affected()))?;
    }
    Ok(deleted)
}

/// Which of a staged row's images a check compares the table with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Image {
    /// The file's values: what an unchanged row shows, and what an update
    /// wrote once committed.
    Values,
    /// An update's before-image: what the table held at the preview.
    Before,
}

/// The next page of the job's staged rows with `action` after `after_seq`
/// whose target row is gone or no longer holds `image` in the provided
/// columns. The comparison is the database's, on stored values, so it may
/// also name rows whose values differ only in spelling (`12.5` and `12.50`
/// in SQLite's text); the caller confirms each suspect with `Value::same`.
/// One index range a page, as in `rows::page`.
pub async fn suspects(
    conn: &mut Conn<'_>,
    stage: &Stage<'_>,
    action: RowAction,
    image: Image,
    after_seq: i64,
    limit: i64,
) -> Result<Vec<i64>> {
    let (dialect, module) = (conn.dialect(), stage.module);
    let seen = match image {
        Image::Values => Source::staged(dialect, module, "r"),
        Image::Before => Source::before(dialect, module, "r"),
    };
    let t = ident(&module.table);
    let sql = format!(
        "SELECT r.seq FROM {} r LEFT JOIN {t} ON {} \
         WHERE r.job = $1 AND {} AND r.seq > $2 \
         AND ({t}.{id} IS NULL OR NOT ({})) ORDER BY r.seq LIMIT $3",
        stage.table(),
        Source::staged(dialect, module, "r").key_match(&t),
        action_is("r", action),
        holds(&seen, &t, stage.provided.iter().copied()),
        id = ident("id"),
    );
    Ok(on_conn!(conn, c => sqlx::query_scalar(&sql).bind(stage.job)
        .bind(after_seq).bind(limit).fetch_all(c).await)?)
}

/// Moves the rows staged before stage tables existed (`ig_job_rows`, JSON,
/// which the caller found) into their modules' stage tables, typed, and
/// drops the old table: a service upgraded with jobs at the gate keeps
/// their previews and rollbacks. Rows of modules the catalog no longer has
/// are dropped with it.
pub async fn adopt_job_rows(conn: &mut Conn<'_>, catalog: &Catalog) -> Result<()> {
    let dialect = conn.dialect();
    // Each job's columns are the members of its first staged row.
    let firsts: Vec<(String, String)> = on_conn!(conn, c => sqlx::query_as(
        "SELECT r.job_id, r.vals FROM ig_job_rows r \
         WHERE r.seq = (SELECT MIN(seq) FROM ig_job_rows f WHERE f.job_id = r.job_id)")
        .fetch_all(c).await)?;
    for (job_id, vals) in firsts {
        let obj: serde_json::Map<String, serde_json::Value> =
            serde_json::from_str(&vals).unwrap_or_default();
        let names: Vec<&String> = obj.keys().collect();
        let text = serde_json::to_string(&names).unwrap_or_else(|_| "[]".into());
        on_conn!(conn, c => sqlx::query("UPDATE ig_jobs SET columns = $1 WHERE id = $2")
            .bind(text).bind(&job_id).execute(c).await.map(|r| r.rows_affected()))?;
    }
    for module in catalog.modules() {
        // Rows with errors keep their JSON (it may hold raw text that is
        // no value of its column) and no typed values.
        let typed = "CASE WHEN r.action <> 'error' THEN r.vals END";
        let values = Source::json(dialect, module, typed, "v");
        let before = Source::json(dialect, module, "r.before", "b");
        let all = 0..module.columns.len();
        let columns = all.clone().map(|i| stage::column(module, i));
        let columns = columns.chain(all.clone().map(|i| stage::before_column(module, i)));
        let fields = all.clone().map(|i| values.field(i));
        let fields = fields.chain(all.map(|i| before.field(i)));
        let sql = format!(
            "INSERT INTO {} (job, seq, row_no, action, nkey, vals, {}) \
             SELECT j.stage, r.seq, r.row_no, r.action, r.nkey, \
                    CASE WHEN r.action = 'error' THEN r.vals END, {} \
             FROM ig_job_rows r JOIN ig_jobs j ON j.id = r.job_id{}{} WHERE j.module = $1",
            stage::table(module),
            columns.collect::<Vec<_>>().join(", "),
            fields.collect::<Vec<_>>().join(", "),
            values.lateral(),
            before.lateral(),
        );
        on_conn!(conn, c => sqlx::query(&sql).bind(&module.key).execute(c).await
            .map(|r| r.rows_affected()))?;
    }
    on_conn!(conn, c => sqlx::query("DROP TABLE ig_job_rows").execute(c).await
        .map(|r| r.rows_affected()))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::{Dialect, Seqs, one_range};

    /// The ids found are the job's only when there are as many as it
    /// inserted and they fill the range between the least and greatest.
    #[test]
    fn found_ids_are_one_range_only_when_they_fill_it() {
        assert_eq!(one_range((3, Some(5), Some(7)), 3), Some((5, 7)));
        assert_eq!(one_range((1, Some(9), Some(9)), 1), Some((9, 9)));
        // One row went, or another row's id lies between them.
        assert_eq!(one_range((2, Some(5), Some(7)), 3), None);
        assert_eq!(one_range((3, Some(5), Some(8)), 3), None);
        assert_eq!(one_range((0, None, None), 3), None);
        // Ids at the ends of the range of numbers do not overflow.
        assert_eq!(one_range((2, Some(i64::MIN), Some(i64::MAX)), 2), None);
        let top = (2, Some(i64::MAX - 1), Some(i64::MAX));
        assert_eq!(one_range(top, 2), Some((i64::MAX - 1, i64::MAX)));
    }

    /// Every staged row, numbered from 0, falls in exactly one range.
    #[test]
    fn ranges_cover_every_row_once() {
        let step = Dialect::Sqlite.rows_per_write(i64::MAX);
        for rows in [0, 1, step - 1, step, step + 1, 3 * step + 7] {
            assert_eq!(Seqs::all(Dialect::Postgres, rows).count(), 1);
            let ranges: Vec<Seqs> = Seqs::all(Dialect::Sqlite, rows).collect();
            for seq in [0, rows / 2, rows - 1]
                .into_iter()
                .filter(|s| *s >= 0 && *s < rows)
            {
                let hits = ranges
                    .iter()
                    .filter(|r| r.from <= seq && seq < r.to)
                    .count();
                assert_eq!(hits, 1, "seq {seq} of {rows} rows");
            }
            assert!(ranges.windows(2).all(|w| w[0].to == w[1].from));
            assert_eq!(ranges[0].from, 0);
            assert!(ranges.last().unwrap().to >= rows);
        }
    }
}
