//! The validation's writer: batches of staged rows into the stage, each
//! batch in its own transaction that also renews the worker's lease (and
//! is refused if another worker holds it), now and then with the job's
//! progress counts. Each backend writes them as it loads fastest: SQLite
//! on a thread of its own with statements kept prepared (`sqlite::load`),
//! PostgreSQL and MySQL two batches at a time (`flight`), with `COPY`
//! (`postgres::load`) or multi-row `INSERT`s (`mysql::load`).

use std::time::Duration;

use tokio::sync::mpsc;

use super::db::Db;
use super::flight::Writes;
use super::jobs::Lease;
use super::stage::{Stage, StagedRow};
use super::{mysql, postgres, sqlite};
use crate::ids::JobId;
use crate::ledger::Counts;

/// A validation's writer, between its first and last batch.
pub enum Loader<'a> {
    Sqlite(sqlite::load::Writer),
    Server(Writes<'a>),
}

impl<'a> Loader<'a> {
    /// Starts the writer of `stage` for job `job_id`; while it writes,
    /// `lease` must still be held.
    pub async fn start(
        db: &'a Db,
        stage: &'a Stage<'a>,
        job_id: &JobId,
        lease: Lease,
    ) -> anyhow::Result<Loader<'a>> {
        Ok(match db {
            Db::Sqlite(pool) => {
                Loader::Sqlite(sqlite::load::Writer::start(pool, stage, job_id, lease).await?)
            }
            Db::Postgres(_) => Loader::Server(Writes::new(
                db,
                stage,
                job_id,
                lease,
                postgres::load::write_batch,
            )),
            Db::Mysql(_) => Loader::Server(Writes::new(
                db,
                stage,
                job_id,
                lease,
                mysql::load::write_batch,
            )),
        })
    }

    /// The next batch from `rx`, writing the batches in flight meanwhile;
    /// `None` once `rx` is closed and empty.
    pub async fn next(
        &mut self,
        rx: &mut mpsc::Receiver<Vec<StagedRow>>,
    ) -> anyhow::Result<Option<Vec<StagedRow>>> {
        match self {
            Loader::Sqlite(writer) => writer.next(rx).await,
            Loader::Server(writes) => writes.next(rx).await,
        }
    }

    /// Writes one batch (in its own transaction), with the job's counts
    /// so far when `progress` is given.
    pub async fn load(
        &mut self,
        rows: Vec<StagedRow>,
        progress: Option<Counts>,
    ) -> anyhow::Result<()> {
        match self {
            Loader::Sqlite(writer) => writer.push(rows, progress).await,
            Loader::Server(writes) => writes.push(rows, progress).await,
        }
    }

    /// Waits for every batch to be written; the writer's error, if any.
    pub async fn finish(self) -> anyhow::Result<()> {
        match self {
            Loader::Sqlite(writer) => writer.finish().await,
            Loader::Server(writes) => writes.finish().await,
        }
    }
}

/// How long a validation waits between progress updates.
pub const PROGRESS_EVERY: Duration = Duration::from_millis(500);
