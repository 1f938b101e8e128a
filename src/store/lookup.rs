//! The validation's key lookups: which of a batch's natural keys the
//! module's table holds, and its rows for them (an update's before-image).
//!
//! On SQLite a batch's lookups run through `rusqlite` on a blocking thread,
//! on one of the pool's connections: the same statements as through sqlx
//! ([`tables::by_keys`]), each found row read straight into module
//! values. Through sqlx the lookups of 1M keys, all found, took 6.4 s of a
//! 9 s upsert validation: a multi-row statement's arguments built on the
//! runtime's threads and bound value by value on the connection's thread,
//! then every row sent back over a channel and decoded (BENCHMARKS.md,
//! "Upsert commits, key lookups and the SQLite rollback"). PostgreSQL
//! keeps its one `unnest` join a batch ([`tables::by_keys`]).

use std::sync::Arc;

use super::tables::{self, TableRow};
use super::values::{from_sqlite, to_sqlite};
use super::{Db, Pooled, rows};
use crate::catalog::Module;
use crate::validate::Value;

/// A validation's key lookups in one module: what the lookup thread needs,
/// made once. The statement of a full part ([`rows::BATCH`] keys, with a
/// `VALUES` list of 500 tuples for a two-column key) was written again
/// for every part: 2 % of a 1M-row SQLite upsert validation's CPU in
/// `perf` (BENCHMARKS.md, issue 18, ninth session).
pub struct Lookup(Arc<Plan>);

impl Lookup {
    pub fn new(module: &Module) -> Lookup {
        let in_key = (0..module.columns.len())
            .map(|c| module.key_columns.iter().position(|&k| k == c))
            .collect();
        Lookup(Arc::new(Plan {
            module: module.clone(),
            full: tables::sqlite_lookup(module, rows::BATCH),
            in_key,
        }))
    }

    /// The table's rows holding these natural keys (each in the order of
    /// the module's key columns), in the keys' order: `None` for a key the
    /// table does not hold.
    pub async fn by_keys(
        &self,
        db: &Db,
        keys: Vec<Vec<Value>>,
    ) -> anyhow::Result<Vec<Option<TableRow>>> {
        if keys.is_empty() {
            return Ok(vec![]);
        }
        let conn = match db.acquire().await? {
            Pooled::Sqlite(conn) => conn,
            mut pooled => {
                let module = &self.0.module;
                return Ok(tables::by_keys(&mut pooled.conn(), module, &keys).await?);
            }
        };
        let plan = self.0.clone();
        let runtime = tokio::runtime::Handle::current();
        tokio::task::spawn_blocking(move || sqlite(conn, &runtime, &plan, &keys))
            .await
            .map_err(|e| anyhow::anyhow!("the key lookup failed: {e}"))?
    }
}

/// What the lookup thread needs of the module.
struct Plan {
    module: Module,
    /// The lookup statement of [`rows::BATCH`] keys
    /// ([`tables::sqlite_lookup`]); a smaller part's is written when needed.
    full: String,
    /// For each catalog column, its place in the natural key, if it is in.
    in_key: Vec<Option<usize>>,
}

/// The lookups of one batch, on the pool connection `conn`.
fn sqlite(
    mut conn: sqlx::pool::PoolConnection<sqlx::Sqlite>,
    runtime: &tokio::runtime::Handle,
    plan: &Plan,
    keys: &[Vec<Value>],
) -> anyhow::Result<Vec<Option<TableRow>>> {
    let mut locked = runtime.block_on(conn.lock_handle())?;
    // SAFETY: the handle stays locked (no sqlx statement can run on it)
    // until `locked` drops, and `rusqlite` neither closes it nor outlives
    // it: `c` drops first, finalizing its statements.
    let c = unsafe { rusqlite::Connection::from_handle(locked.as_raw_handle().as_ptr())? };
    let mut found: Vec<Option<TableRow>> = vec![None; keys.len()];
    for part in super::pieces(keys.len(), rows::BATCH) {
        let mut select = if part.len() == rows::BATCH {
            c.prepare_cached(&plan.full)?
        } else {
            c.prepare_cached(&tables::sqlite_lookup(&plan.module, part.len()))?
        };
        let params = keys[part.clone()].iter().flatten();
        for (n, v) in params.enumerate() {
            select.raw_bind_parameter(n + 1, to_sqlite(v))?;
        }
        let mut rows = select.raw_query();
        while let Some(row) = rows.next()? {
            // Column 0 is the key's place in the part; the statement gives
            // back only places it was given.
            let at = part.start + row.get::<_, usize>(0)?;
            if let Some(key) = keys.get(at) {
                found[at] = Some(table_row(plan, key, row)?);
            }
        }
    }
    Ok(found)
}

/// A found row (its id in column 1, the module's columns after it), found
/// by `key`. SQLite compares each key column with the value bound for it
/// in the column's affinity and binary collation, so the row's key cells
/// hold exactly the key's values: they are taken from the key, not
/// decoded again.
fn table_row(plan: &Plan, key: &[Value], row: &rusqlite::Row<'_>) -> anyhow::Result<TableRow> {
    let values = (plan.module.columns.iter().enumerate())
        .map(|(i, c)| match plan.in_key[i] {
            Some(k) => Ok(Some(key[k].clone())),
            None => from_sqlite(row.get_ref(i + 2)?, c.ty).map_err(Into::into),
        })
        .collect::<anyhow::Result<_>>()?;
    Ok(TableRow {
        id: row.get(1)?,
        values,
    })
}
