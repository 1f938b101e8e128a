//! The validation's key lookups: which of a batch's natural keys the
//! module's table holds, and its rows for them (an update's before-image).
//!
//! On SQLite a batch's lookups run through `rusqlite` on a blocking thread,
//! on a read connection of the validation's own: the same statements as
//! through sqlx ([`tables::by_keys`]), each found row read straight into
//! module values. Through sqlx the lookups of 1M keys, all found, took
//! 6.4 s of a 9 s upsert validation: a multi-row statement's arguments
//! built on the runtime's threads and bound value by value on the
//! connection's thread, then every row sent back over a channel and
//! decoded (BENCHMARKS.md, "Upsert commits, key lookups and the SQLite
//! rollback"). PostgreSQL keeps its one `unnest` statement a batch
//! ([`tables::by_keys_planned`]), a join or one index probe a key as the
//! table's size says ([`tables::key_plan`], counted at the first lookup).

use std::path::Path;
use std::sync::{Arc, Mutex};

use rusqlite::OpenFlags;

use super::tables::{self, TableRow};
use super::values::{from_sqlite, to_sqlite};
use super::{Db, rows};
use crate::catalog::Module;
use crate::validate::Value;

/// A validation's key lookups in one module: what the lookup thread needs,
/// made once. The statement of a full part ([`rows::BATCH`] keys, with a
/// `VALUES` list of 500 tuples for a two-column key) was written again
/// for every part: 2 % of a 1M-row SQLite upsert validation's CPU in
/// `perf` (BENCHMARKS.md, issue 18, ninth session).
///
/// On SQLite the lookups have a connection of their own, opened at the
/// first and kept until the validation drops its `Lookup`, so the
/// statement is also prepared once: prepared again for every batch (on a
/// pool connection, through a `rusqlite` handle made for the batch) it
/// took about 1,000 instructions a key under callgrind (BENCHMARKS.md,
/// issue 18, tenth session). It only reads: in WAL mode it sees the table
/// as last committed, as a pool connection did, and holds no lock a
/// writer waits for.
pub struct Lookup {
    plan: Arc<Plan>,
    reader: Arc<Mutex<Option<rusqlite::Connection>>>,
    /// PostgreSQL's plan, chosen at the first lookup from the table's size
    /// ([`tables::key_plan`]): the validation does not write the table.
    key_plan: std::sync::OnceLock<tables::KeyPlan>,
}

impl Lookup {
    pub fn new(module: &Module) -> Lookup {
        let in_key = (0..module.columns.len())
            .map(|c| module.key_columns.iter().position(|&k| k == c))
            .collect();
        Lookup {
            plan: Arc::new(Plan {
                module: module.clone(),
                full: tables::sqlite_lookup(module, rows::BATCH),
                in_key,
            }),
            reader: Arc::default(),
            key_plan: std::sync::OnceLock::new(),
        }
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
        let file = match db {
            Db::Sqlite(pool) => pool.connect_options().get_filename().to_path_buf(),
            Db::Postgres(_) => {
                let mut pooled = db.acquire().await?;
                let mut conn = pooled.conn();
                let module = &self.plan.module;
                let plan = match self.key_plan.get() {
                    Some(plan) => *plan,
                    None => {
                        let plan = tables::key_plan(&mut conn, module).await?;
                        let _ = self.key_plan.set(plan);
                        plan
                    }
                };
                return Ok(tables::by_keys_planned(&mut conn, module, &keys, plan).await?);
            }
        };
        let (plan, reader) = (self.plan.clone(), self.reader.clone());
        tokio::task::spawn_blocking(move || {
            let mut reader = reader
                .lock()
                .map_err(|_| anyhow::anyhow!("an earlier key lookup failed"))?;
            let c = match &mut *reader {
                Some(c) => c,
                none => none.insert(open(&file)?),
            };
            sqlite(c, &plan, &keys)
        })
        .await
        .map_err(|e| anyhow::anyhow!("the key lookup failed: {e}"))?
    }
}

/// The lookups' read connection to the database file.
fn open(file: &Path) -> anyhow::Result<rusqlite::Connection> {
    let flags = OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX;
    let c = rusqlite::Connection::open_with_flags(file, flags)?;
    // It reads only; should a statement ever try to write, SQLite refuses.
    c.pragma_update(None, "query_only", true)?;
    Ok(c)
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

/// The lookups of one batch, on the lookups' connection `c`.
fn sqlite(
    c: &rusqlite::Connection,
    plan: &Plan,
    keys: &[Vec<Value>],
) -> anyhow::Result<Vec<Option<TableRow>>> {
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
