//! The module tables: finding rows by natural key (the row-by-row checks
//! of validation, commit and rollback). The writes themselves are
//! set-based, in `staged`. Every identifier comes from the checked catalog
//! and is quoted; every value is a bound parameter.

use serde_json::{Map, Value as Json};
use sqlx::Row;

use super::db::Conn;
use super::dialect::Dialect;
use super::error::{Result, StoreError};
use super::sql::{BATCH, ident, pieces};
use super::values::{BindValue, DecodeValue, pg_input};
use super::{postgres, sqlite};
use crate::catalog::Module;
use crate::on_conn;
use crate::validate::Value;

/// A row of a module table: its id and every catalog column.
#[derive(Debug, Clone)]
pub struct TableRow {
    pub id: i64,
    pub values: Vec<Option<Value>>,
}

/// Reads a natural key back from its canonical text.
pub fn key_values(module: &Module, nkey: &str) -> Option<Vec<Value>> {
    let parts: Vec<Json> = serde_json::from_str(nkey).ok()?;
    if parts.len() != module.key_columns.len() {
        return None;
    }
    module
        .key_columns
        .iter()
        .zip(&parts)
        .map(|(&i, j)| Value::from_json(module.columns[i].ty, j).flatten())
        .collect()
}

pub(super) fn select_columns(module: &Module, table: Option<&str>) -> String {
    let prefix = table.map(|t| format!("{t}.")).unwrap_or_default();
    let mut cols = vec![format!("{prefix}{}", ident("id"))];
    cols.extend(
        module
            .columns
            .iter()
            .map(|c| format!("{prefix}{}", ident(&c.name))),
    );
    cols.join(", ")
}

/// A row selected with [`select_columns`], its id in column `first`.
fn table_row<R: sqlx::Row + DecodeValue>(module: &Module, row: &R, first: usize) -> Result<TableRow>
where
    usize: sqlx::ColumnIndex<R>,
    i64: for<'r> sqlx::Decode<'r, R::Database> + sqlx::Type<R::Database>,
{
    let id: i64 = row.try_get(first)?;
    let values = module
        .columns
        .iter()
        .enumerate()
        .map(|(i, col)| row.value(first + 1 + i, col.ty))
        .collect::<Result<_>>()?;
    Ok(TableRow { id, values })
}

/// SQLite's key lookup of `keys` keys: the keys are a `VALUES` list, each
/// with its place in the list, that the table is joined to (`CROSS JOIN`
/// keeps the list the outer loop, an index lookup a key). A found row
/// comes back with the place of its key (column 0), so the caller needs no
/// key text to match it: the canonical text of every found row's key,
/// and a hash map of them, were 2–3 % of an upsert validation's
/// instructions (callgrind of the server over `bash bench/once.sh`, 20,000
/// orders). With `(a, b) IN (VALUES …)`
/// SQLite scanned the whole table for each batch (17 ms a batch of 500 at
/// 100k rows, against 1.3 ms joined).
///
/// `select` lists what is selected of each found row `t`
/// ([`select_columns`] for the whole row).
pub(super) fn sqlite_lookup(module: &Module, keys: usize, select: &str) -> String {
    let width = module.key_columns.len();
    let on: Vec<String> = module
        .natural_key
        .iter()
        .enumerate()
        .map(|(n, name)| format!("t.{} = k.column{}", ident(name), n + 2))
        .collect();
    let list: Vec<String> = (0..keys)
        .map(|k| {
            let marks: Vec<String> = (1..=width)
                .map(|c| Dialect::Sqlite.param(k * width + c))
                .collect();
            format!("({k}, {})", marks.join(", "))
        })
        .collect();
    format!(
        "SELECT k.column1, {select} FROM (VALUES {}) AS k CROSS JOIN {} t ON {}",
        list.join(", "),
        ident(&module.table),
        on.join(" AND ")
    )
}

/// How a validation's key lookups meet the table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KeyPlan {
    /// The table held no row when the validation began: no key is looked
    /// up, every one is new. A row written meanwhile (another job's
    /// commit, or anything else writing the table) is caught by the
    /// commit, which refuses a staged insert whose key was taken since its
    /// preview, as it was when each batch looked.
    Empty,
    /// A join, planned as PostgreSQL sees fit (SQLite: its own plan,
    /// index probes).
    Join,
    /// One probe of the natural-key index a key, whatever the plan.
    Probe,
}

/// From how many rows a table gets [`KeyPlan::Probe`]. PostgreSQL's
/// planner hashed the whole table for every batch up to about 700k rows
/// (a scan of the table costs it less than 2,000 random index reads), at
/// 0.55 µs a table row where a probe takes 4.5 µs a key: 55 ms a batch
/// at 100k rows against 9 ms probed (`EXPLAIN ANALYZE` of one batch's
/// lookup), and a 100k-row upsert over a 100k-row table took three times
/// its insert (`bash bench/once.sh BIN postgres` over a prefilled table).
/// Below this a hash of the table costs about what probing the batch does,
/// and of an empty table nothing, where probes still cost 1.4 µs a key.
pub const PROBE_FROM: i64 = 20_000;

/// The plan for this validation's lookups in `module`'s table: whether it
/// holds a row, and on PostgreSQL whether it holds [`PROBE_FROM`], counted
/// up to there (a few milliseconds, once a validation). Not from the
/// statistics: the `ANALYZE` after a commit runs once the job has moved,
/// and an upsert uploaded right after found none yet. SQLite plans its own
/// lookups as index probes.
pub async fn key_plan(conn: &mut Conn<'_>, module: &Module) -> Result<KeyPlan> {
    let limit = match conn.dialect() {
        Dialect::Postgres => PROBE_FROM,
        Dialect::Sqlite => 1,
    };
    let sql = format!(
        "SELECT COUNT(*) FROM (SELECT 1 FROM {} LIMIT {limit}) s",
        ident(&module.table)
    );
    let rows: i64 = on_conn!(conn, c => sqlx::query_scalar(&sql).fetch_one(c).await)?;
    Ok(match (rows, conn.dialect()) {
        (0, _) => KeyPlan::Empty,
        (PROBE_FROM.., Dialect::Postgres) => KeyPlan::Probe,
        _ => KeyPlan::Join,
    })
}

/// PostgreSQL's key lookup: the keys arrive as one text array per key
/// column, unnested with their place (from 1) and joined to the table,
/// each cast to its column's type. With `IN (VALUES …)`
/// the planner hashed the 500 keys and scanned the whole table once it
/// held 100k rows (27 ms a batch: 3.8 s of looking up a 100k-row file
/// already imported); an `unnest` of parameters binds two arrays instead
/// of 1,000 values. [`KeyPlan::Probe`] puts the table in a `LATERAL`
/// subquery that `OFFSET 0` keeps from being merged into the join, so it
/// is run once a key, through the natural-key index. `select` as for
/// [`sqlite_lookup`].
fn unnest_lookup(module: &Module, plan: KeyPlan, select: &str) -> String {
    let columns: Vec<String> = (1..=module.key_columns.len())
        .map(|n| format!("${n}::text[]"))
        .collect();
    let names: Vec<String> = (1..=module.key_columns.len())
        .map(|n| format!("k{n}"))
        .collect();
    let on: Vec<String> = module
        .key_columns
        .iter()
        .enumerate()
        .map(|(n, &i)| {
            let col = &module.columns[i];
            let ty = Dialect::Postgres.column_type(col.ty);
            format!("t.{} = k.k{}::{ty}", ident(&col.name), n + 1)
        })
        .collect();
    let (table, on) = (ident(&module.table), on.join(" AND "));
    let joined = match plan {
        // `Lookup` asks nothing of an empty table; joined, it finds nothing.
        KeyPlan::Join | KeyPlan::Empty => format!("JOIN {table} t ON {on}"),
        KeyPlan::Probe => {
            format!("CROSS JOIN LATERAL (SELECT * FROM {table} t WHERE {on} OFFSET 0) t")
        }
    };
    format!(
        "SELECT k.place, {select} FROM unnest({}) WITH ORDINALITY AS k({}, place) {joined}",
        columns.join(", "),
        names.join(", "),
    )
}

/// Takes the module's table for a commit or rollback: other writers wait
/// until the transaction ends, readers do not. The re-check then sees the
/// table exactly as the writes will find it, and no key can be added
/// between the check and the insert. One table lock instead of a row lock
/// per checked row: `FOR UPDATE` on every row cost 8 of the 9 s of a
/// 100k-row upsert commit. SQLite's write transaction already excludes
/// other writers.
///
/// The transaction also gets the memory to hash in that the database lets
/// it ask for (`txn::join_memory`): its writes join a job's staged rows
/// with the table.
pub async fn lock_for_writing(conn: &mut Conn<'_>, module: &Module) -> Result<()> {
    let table = ident(&module.table);
    match conn {
        Conn::Sqlite(c) => sqlite::txn::lock_for_writing(c, &table).await,
        Conn::Postgres(c) => postgres::txn::lock_for_writing(c, &table).await,
    }
}

/// The rows holding these natural keys (each in the order of the
/// module's key columns), in the keys' order: `None` for a key the table
/// does not hold. (A validation's lookups are `lookup::Lookup`'s.)
pub async fn by_keys(
    conn: &mut Conn<'_>,
    module: &Module,
    keys: &[Vec<Value>],
) -> Result<Vec<Option<TableRow>>> {
    let mut found = vec![None; keys.len()];
    for range in lookup_parts(conn.dialect(), keys.len(), BATCH) {
        let part = &keys[range.clone()];
        let mut place = |p: i64, row| {
            // The statement gives back the places it was given.
            if let Some(slot) = usize::try_from(p)
                .ok()
                .and_then(|p| found.get_mut(range.start + p))
            {
                *slot = Some(row);
            }
        };
        if let Conn::Postgres(c) = conn {
            let (select, plan) = (select_columns(module, Some("t")), KeyPlan::Join);
            for row in pg_lookup(c, module, part, |k, n| k.get(n), plan, &select).await? {
                place(row.try_get::<i64, _>(0)? - 1, table_row(module, &row, 1)?);
            }
            continue;
        }
        let sql = sqlite_lookup(module, part.len(), &select_columns(module, Some("t")));
        on_conn!(conn, c => {
            let mut q = sqlx::query(&sql);
            for key in part {
                for (v, &i) in key.iter().zip(&module.key_columns) {
                    q = q.bind_value(Some(v), module.columns[i].ty);
                }
            }
            for row in q.fetch_all(c).await? {
                place(row.try_get::<i64, _>(0)?, table_row(module, &row, 1)?);
            }
        });
    }
    Ok(found)
}

/// PostgreSQL's rows holding the natural keys `part` (at most
/// [`PG_LOOKUP`]), in one statement as `plan` says: each row is
/// its key's place in `part` counted from 1 (column 0, `WITH
/// ORDINALITY`), then what `select` lists of it ([`select_columns`]: its
/// id and cells). `key` gives a key's value of the `n`th key column.
pub async fn pg_lookup<K>(
    c: &mut sqlx::PgConnection,
    module: &Module,
    part: &[K],
    key: impl Fn(&K, usize) -> Option<&Value>,
    plan: KeyPlan,
    select: &str,
) -> Result<Vec<sqlx::postgres::PgRow>> {
    let sql = unnest_lookup(module, plan, select);
    let mut q = sqlx::query(&sql);
    for n in 0..module.key_columns.len() {
        let column = part.iter().map(|k| {
            let value = key(k, n).ok_or_else(|| {
                StoreError::Corrupt(format!("a key looked up in {} lacks a value", module.key))
            })?;
            Ok(pg_input(value))
        });
        q = q.bind(column.collect::<Result<Vec<_>>>()?);
    }
    Ok(q.fetch_all(c).await?)
}

/// Inserts whole rows (every catalog column, in catalog order) outside any
/// job: for seeding tables (the demo). Imports write set-based, in `staged`.
pub async fn insert(
    conn: &mut Conn<'_>,
    module: &Module,
    rows: &[Vec<Option<Value>>],
) -> Result<()> {
    let width = module.columns.len();
    let names: Vec<String> = module.columns.iter().map(|c| ident(&c.name)).collect();
    let per_statement = (30_000 / width).clamp(1, BATCH);
    for range in pieces(rows.len(), per_statement) {
        let part = &rows[range];
        let sql = format!(
            "INSERT INTO {} ({}) VALUES {}",
            ident(&module.table),
            names.join(", "),
            conn.dialect().tuples(part.len(), width)
        );
        on_conn!(conn, c => {
            let mut q = sqlx::query(&sql);
            for row in part {
                for (v, col) in row.iter().zip(&module.columns) {
                    q = q.bind_value(v.as_ref(), col.ty);
                }
            }
            q.execute(c).await?.rows_affected()
        });
    }
    Ok(())
}

/// A whole row from a JSON object of its columns (the demo's seed rows).
pub fn row_from_json(module: &Module, obj: &Map<String, Json>) -> Vec<Option<Value>> {
    module
        .columns
        .iter()
        .map(|c| {
            obj.get(&c.name)
                .and_then(|j| Value::from_json(c.ty, j))
                .flatten()
        })
        .collect()
}

/// The parts of a lookup run as one statement a part: [`pieces`] of `most`
/// on SQLite. On PostgreSQL the values go as one array parameter and the
/// statement's text is the same at any size, so the parts are plain and
/// as large as [`PG_LOOKUP`]: a validation's batch of 2,000 rows is one
/// round trip (in parts of 500, a 1M-row validation waited for 2,000 more).
pub fn lookup_parts(dialect: Dialect, n: usize, most: usize) -> Vec<std::ops::Range<usize>> {
    match dialect {
        Dialect::Postgres => (0..n)
            .step_by(PG_LOOKUP)
            .map(|start| start..n.min(start + PG_LOOKUP))
            .collect(),
        Dialect::Sqlite => pieces(n, most),
    }
}

/// Values a PostgreSQL lookup statement takes at most (its answer is at
/// most as many rows).
pub const PG_LOOKUP: usize = 5_000;

#[cfg(test)]
mod tests {
    #[test]
    fn postgres_lookups_are_plain_parts() {
        use super::{Dialect, lookup_parts, pieces};
        assert_eq!(lookup_parts(Dialect::Postgres, 1100, 500), vec![0..1100]);
        assert_eq!(
            lookup_parts(Dialect::Postgres, 12_000, 500),
            vec![0..5000, 5000..10_000, 10_000..12_000]
        );
        assert!(lookup_parts(Dialect::Postgres, 0, 500).is_empty());
        assert_eq!(lookup_parts(Dialect::Sqlite, 1100, 500), pieces(1100, 500));
    }
}
