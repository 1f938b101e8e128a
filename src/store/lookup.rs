//! The validation's key lookups: which of a batch's natural keys the
//! module's table holds, and its rows for them (an update's before-image).
//!
//! Each backend looks up its own way: SQLite on a read connection of the
//! validation's own, statements kept prepared (`sqlite::lookup::Reader`),
//! PostgreSQL in one `unnest` statement a batch on a pool connection
//! (`postgres::lookup::found_rows`). What both are asked and answer is
//! `found`'s. Neither looks in a table that was empty at the first lookup.

use std::sync::{Arc, OnceLock};

use super::db::Db;
use super::found::{KeyPlan, Target, not_found};
use super::tables;
use super::{mysql, postgres, sqlite};
use crate::catalog::Module;

pub use super::found::{Found, Wanted};

/// A validation's key lookups in one module: what the lookups need, made
/// once. The statement of a full part ([`BATCH`](super::sql::BATCH) keys,
/// with a `VALUES` list of 500 tuples for a two-column key) was written
/// again for every part: 2 % of a 1M-row SQLite upsert validation's CPU
/// (`perf record --call-graph dwarf` of the server during `bash
/// bench/once.sh`).
pub struct Lookup {
    target: Arc<Target>,
    /// SQLite's read connection, opened at the first lookup and kept until
    /// the validation drops its `Lookup` (PostgreSQL borrows one from the
    /// pool for each batch).
    sqlite: sqlite::lookup::Reader,
    /// The lookups' plan, chosen at the first from the table's size
    /// ([`tables::key_plan`]): the validation does not write the table. A
    /// table empty then is not looked in: a first import of 1M orders on
    /// PostgreSQL spent 1.1 s of its validation on 500 lookups that found
    /// nothing (timers of the decide side during `bash bench/once.sh BIN
    /// postgres`).
    key_plan: OnceLock<KeyPlan>,
    /// The file's columns of the first lookup: the statements kept on the
    /// SQLite connection select their cells (`found::Read`), so every
    /// later lookup must ask for the same (a validation's file has one
    /// header).
    provided: OnceLock<Vec<usize>>,
}

impl Lookup {
    pub fn new(module: &Module) -> Lookup {
        Lookup {
            target: Arc::new(Target::new(module)),
            sqlite: sqlite::lookup::Reader::default(),
            key_plan: OnceLock::new(),
            provided: OnceLock::new(),
        }
    }

    /// The table's rows holding the natural keys of `wanted` (each in the
    /// order of the module's key columns), in its order: `None` for a key
    /// the table does not hold; of each row, the cells of the `provided`
    /// columns. `wanted` comes back as it went, after the
    /// lookups: its file values travel to the lookup thread and back
    /// rather than being copied. `provided` are the catalog columns of the
    /// file values, in their order.
    pub async fn by_keys(
        &self,
        db: &Db,
        wanted: Vec<Wanted>,
        provided: &[usize],
    ) -> anyhow::Result<(Vec<Wanted>, Vec<Option<Found>>)> {
        if wanted.is_empty() {
            return Ok((wanted, vec![]));
        }
        if self.provided.get_or_init(|| provided.to_vec()) != provided {
            anyhow::bail!("a validation's key lookups were asked for other columns");
        }
        let plan = self.key_plan(db).await?;
        if plan == KeyPlan::Empty {
            let none = not_found(wanted.len());
            return Ok((wanted, none));
        }
        match db {
            Db::Sqlite(pool) => {
                (self.sqlite)
                    .found(pool, &self.target, wanted, provided)
                    .await
            }
            Db::Postgres(pool) => {
                let mut c = pool
                    .acquire()
                    .await
                    .map_err(super::error::StoreError::from)?;
                let found =
                    postgres::lookup::found_rows(&mut c, &self.target, &wanted, provided, plan)
                        .await?;
                Ok((wanted, found))
            }
            Db::Mysql(pool) => {
                let mut c = pool
                    .acquire()
                    .await
                    .map_err(super::error::StoreError::from)?;
                let found =
                    mysql::lookup::found_rows(&mut c, &self.target, &wanted, provided).await?;
                Ok((wanted, found))
            }
        }
    }

    /// The lookups' plan ([`tables::key_plan`]), chosen at the first.
    async fn key_plan(&self, db: &Db) -> anyhow::Result<KeyPlan> {
        if let Some(plan) = self.key_plan.get() {
            return Ok(*plan);
        }
        let module = &self.target.module;
        let plan = tables::key_plan(&mut db.acquire().await?.conn(), module).await?;
        let _ = self.key_plan.set(plan);
        Ok(plan)
    }
}
