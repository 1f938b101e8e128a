//! The validation's writer: batches of staged rows into the stage, each
//! batch in its own transaction that also renews the worker's lease (and
//! is refused if another worker holds it), now and then with the job's
//! progress counts.
//!
//! On PostgreSQL a batch (with the batches queued behind it, joined up to
//! 8,000 rows) is one `COPY` of rows (with their warnings) and one of
//! errors ([`rows::insert_batch`]), and two batches are written at once, each on
//! its own connection: a `COPY` keeps its backend busy on one core (1M
//! `orders` rows: 7 of the 10 s), and the service's side needs about half
//! the other. Their transactions commit in batch order: each renews the
//! lease and records progress only after the one before committed, so the
//! renewal is the last statement before the commit (the row lock it takes
//! would otherwise hold the second batch's whole `COPY` back). On SQLite
//! the batches go to a thread of their own that holds one of the pool's
//! connections for the whole validation and writes through `rusqlite`:
//! prepared multi-row `INSERT`s of staged rows, their texts bound where
//! they lie in the rows ([`bound`](super::bound)), and one per row error.
//! Why not sqlx there: its multi-row statements build an
//! argument list (a copied `String` per text cell) on the runtime's
//! threads, hand it to the connection's own thread, which binds it value
//! by value — measured on 1M `orders` rows, writing the stage took 6.5 s
//! of the 9 s validation (timers around the staging, `perf record` of the
//! release server), where SQLite's own `INSERT … SELECT` of the same rows
//! and notes takes 3.3 s (`sqlite3` with `.timer on`). Through `rusqlite`
//! the validation took 6.5–7.2 s instead of 9.2–10.4 (`bash bench/run.sh
//! --rows 1000000 --modules orders --formats csv`, two builds alternated).
//! sqlx has no prepared-statement reuse for a row at a time without that
//! per-value argument building.

use std::time::Duration;

use tokio::sync::mpsc;

use super::db::{Db, Pooled};
use super::rows::{self, StagedRow};
use super::stage::Stage;
use super::{jobs, txn};
use crate::ledger::Counts;

/// Who must still hold the job for a batch to be written: the lease's
/// owner and how long each batch renews it for, in milliseconds.
pub type Lease = Option<(String, i64)>;

/// A validation's writer, between its first and last batch.
pub enum Loader<'a> {
    Sqlite {
        batches: mpsc::Sender<Load>,
        thread: tokio::task::JoinHandle<anyhow::Result<()>>,
    },
    Postgres(pg::Writes<'a>),
}

/// One batch for the writer, with the progress to record with it.
pub struct Load {
    rows: Vec<StagedRow>,
    progress: Option<Counts>,
}

/// Rows a SQLite insert statement of the stage takes at once, at most (the
/// rest of a batch goes one at a time).
const ROWS_AT_ONCE: usize = 32;

/// Batches queued for the SQLite writer beyond the one it writes: the
/// decide side runs ahead by one, memory holds a few batches.
const QUEUED: usize = 1;

impl<'a> Loader<'a> {
    /// Starts the writer of `stage` for job `job_id`.
    pub async fn start(
        db: &'a Db,
        stage: &'a Stage<'a>,
        job_id: &str,
        lease: Lease,
    ) -> anyhow::Result<Loader<'a>> {
        if let Db::Postgres(_) = db {
            return Ok(Loader::Postgres(pg::Writes::new(db, stage, job_id, lease)));
        }
        let Pooled::Sqlite(conn) = db.acquire().await? else {
            unreachable!("a SQLite pool hands out SQLite connections")
        };
        let plan = Plan::new(stage, job_id, lease);
        let (batches, queue) = mpsc::channel(QUEUED);
        let runtime = tokio::runtime::Handle::current();
        let thread = tokio::task::spawn_blocking(move || sqlite::run(conn, runtime, plan, queue));
        Ok(Loader::Sqlite { batches, thread })
    }

    /// The next batch from `rx`, writing the batches in flight meanwhile;
    /// `None` once `rx` is closed and empty.
    pub async fn next(
        &mut self,
        rx: &mut mpsc::Receiver<Vec<StagedRow>>,
    ) -> anyhow::Result<Option<Vec<StagedRow>>> {
        match self {
            Loader::Sqlite { .. } => Ok(rx.recv().await),
            Loader::Postgres(writes) => writes.next(rx).await,
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
            Loader::Sqlite { batches, .. } => {
                if batches.send(Load { rows, progress }).await.is_err() {
                    // The thread stopped on an error: `finish` reports it.
                    anyhow::bail!("the stage writer stopped");
                }
                Ok(())
            }
            Loader::Postgres(writes) => writes.push(Load { rows, progress }).await,
        }
    }

    /// Waits for every batch to be written; the writer's error, if any.
    pub async fn finish(self) -> anyhow::Result<()> {
        match self {
            Loader::Sqlite { batches, thread } => {
                drop(batches);
                thread
                    .await
                    .map_err(|e| anyhow::anyhow!("the stage writer failed: {e}"))?
            }
            Loader::Postgres(writes) => writes.finish().await,
        }
    }
}

mod pg {
    use futures::StreamExt;
    use futures::future::BoxFuture;
    use futures::stream::FuturesOrdered;
    use tokio::sync::oneshot;

    use super::*;

    /// Batches written at once, each on its own connection.
    const IN_FLIGHT: usize = 2;

    /// Rows of queued batches one transaction writes at most. Each
    /// transaction costs its `COPY`'s start and a handful of round trips
    /// (begin, durability, breaks, lease, commit), each a wait for a
    /// backend to be scheduled on a machine whose two cores are busy: 1M
    /// `orders` rows in 2,000-row transactions validated in a median of
    /// 4.13 s, joined 3.70–3.76 s (`bash bench/once.sh BIN postgres`,
    /// three alternated rounds). Memory holds no more rows than the queue
    /// already did.
    const JOINED_ROWS: usize = 8_000;

    /// The batches being written, oldest first.
    pub struct Writes<'a> {
        db: &'a Db,
        stage: &'a Stage<'a>,
        job_id: String,
        lease: Lease,
        flying: FuturesOrdered<BoxFuture<'a, anyhow::Result<()>>>,
        /// Fires when the newest batch committed (or dropped when it failed).
        last: Option<oneshot::Receiver<()>>,
        /// The number of the last row pushed ([`rows::breaks`]).
        last_row: Option<i64>,
    }

    impl<'a> Writes<'a> {
        pub fn new(db: &'a Db, stage: &'a Stage<'a>, job_id: &str, lease: Lease) -> Writes<'a> {
            Writes {
                db,
                stage,
                job_id: job_id.to_string(),
                lease,
                flying: FuturesOrdered::new(),
                last: None,
                last_row: None,
            }
        }

        /// The next batch, with the batches queued behind it joined to it
        /// up to [`JOINED_ROWS`]: they wait only because the writer is
        /// behind, and one transaction and one `COPY` of them costs less
        /// than one each (see [`JOINED_ROWS`]).
        pub async fn next(
            &mut self,
            rx: &mut mpsc::Receiver<Vec<StagedRow>>,
        ) -> anyhow::Result<Option<Vec<StagedRow>>> {
            let mut rows = loop {
                tokio::select! {
                    Some(written) = self.flying.next(), if !self.flying.is_empty() => written?,
                    rows = rx.recv() => break rows,
                }
            };
            if let Some(rows) = &mut rows {
                join_queued(rows, rx, JOINED_ROWS);
            }
            Ok(rows)
        }

        pub async fn push(&mut self, load: Load) -> anyhow::Result<()> {
            while self.flying.len() >= IN_FLIGHT {
                if let Some(written) = self.flying.next().await {
                    written?;
                }
            }
            let (done, committed) = oneshot::channel();
            let after = self.last.replace(committed);
            let (db, stage) = (self.db, self.stage);
            let (job_id, lease) = (self.job_id.clone(), self.lease.clone());
            let breaks = rows::breaks(&load.rows, &mut self.last_row);
            self.flying.push_back(Box::pin(async move {
                let mut tx = db.begin().await?;
                txn::relax_durability(&mut tx.conn()).await?;
                rows::insert_batch(&mut tx.conn(), stage, &job_id, &load.rows).await?;
                rows::insert_breaks(&mut tx.conn(), stage.job, &breaks).await?;
                drop(load.rows);
                if let Some(after) = after {
                    // An error before it ends this run anyway.
                    let _ = after.await;
                }
                if let Some((owner, ms)) = &lease {
                    let until = chrono::Utc::now().timestamp_millis() + ms;
                    if !jobs::heartbeat(&mut tx.conn(), &job_id, owner, until).await? {
                        return Err(lease_lost(&job_id));
                    }
                }
                if let Some(counts) = &load.progress {
                    jobs::set_counts(&mut tx.conn(), &job_id, counts).await?;
                }
                tx.commit().await?;
                let _ = done.send(());
                Ok(())
            }));
            Ok(())
        }

        pub async fn finish(mut self) -> anyhow::Result<()> {
            while let Some(written) = self.flying.next().await {
                written?;
            }
            Ok(())
        }
    }
}

/// Appends to `rows` the batches already waiting in `rx`, while `rows`
/// holds fewer than `up_to`; never waits for one.
fn join_queued<T>(rows: &mut Vec<T>, rx: &mut mpsc::Receiver<Vec<T>>, up_to: usize) {
    while rows.len() < up_to {
        let Ok(more) = rx.try_recv() else { break };
        rows.extend(more);
    }
}

/// What the SQLite writer needs, owned: its statements and the job's
/// identity.
struct Plan {
    /// The stage's insert of one row, and of `at_once` rows.
    rows_sql: String,
    many_sql: String,
    at_once: usize,
    /// Parameters a row takes.
    width: usize,
    /// The row errors' statement.
    errors_sql: String,
    job_id: String,
    stage_job: i64,
    provided: usize,
    lease: Lease,
}

impl Plan {
    fn new(stage: &Stage<'_>, job_id: &str, lease: Lease) -> Plan {
        let width = 8 + 2 * stage.provided.len();
        let marks = vec!["?"; width].join(", ");
        let insert = format!(
            "INSERT INTO {} (job, seq, row_no, action, nkey, vals, warns{}) VALUES ",
            stage.table(),
            stage.written_list()
        );
        let tuple = format!("({marks})");
        // Well under SQLite's 32,766 parameters, whatever the module.
        let at_once = (30_000 / width).clamp(1, ROWS_AT_ONCE);
        Plan {
            rows_sql: format!("{insert}{tuple}"),
            many_sql: format!("{insert}{}", vec![tuple; at_once].join(", ")),
            at_once,
            width,
            errors_sql:
                "INSERT INTO ig_job_errors (job_id, seq, n, row_no, col, value, code, message) \
                         VALUES (?, ?, ?, ?, ?, ?, ?, ?)"
                    .into(),
            job_id: job_id.to_string(),
            stage_job: stage.job,
            provided: stage.provided.len(),
            lease,
        }
    }
}

mod sqlite {
    use super::*;
    use crate::store::bound::{self, Param};
    use crate::store::values::to_param;

    /// The writer thread: takes the pool connection's handle for the whole
    /// run, writes every batch, and hands the connection back clean. After
    /// an error or a panic the connection is closed instead: it may still
    /// be inside the transaction that failed.
    pub(super) fn run(
        mut conn: sqlx::pool::PoolConnection<sqlx::Sqlite>,
        runtime: tokio::runtime::Handle,
        plan: Plan,
        mut queue: mpsc::Receiver<Load>,
    ) -> anyhow::Result<()> {
        let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            let mut locked = runtime.block_on(conn.lock_handle())?;
            // SAFETY: the handle stays locked (no sqlx statement can run on
            // it) until `locked` drops, and `rusqlite` neither closes it nor
            // outlives it: `c` drops first, finalizing its statements.
            let c = unsafe { rusqlite::Connection::from_handle(locked.as_raw_handle().as_ptr())? };
            let mut c = bound::Connection::new(c);
            let written = (|| {
                let mut last = None;
                while let Some(load) = queue.blocking_recv() {
                    let breaks = rows::breaks(&load.rows, &mut last);
                    write(&mut c, &plan, &load, &breaks)?;
                    // Freeing a batch's cells took a twentieth of this
                    // thread's time: the runtime's threads do it.
                    runtime.spawn(async move { drop(load) });
                }
                Ok::<_, anyhow::Error>(())
            })();
            if written.is_err() && !c.rusqlite().is_autocommit() {
                let _ = c.rusqlite().execute_batch("ROLLBACK");
            }
            drop(c);
            written
        }));
        match result {
            Ok(Ok(())) => Ok(()),
            Ok(Err(e)) => {
                conn.close_on_drop();
                Err(e)
            }
            Err(_) => {
                conn.close_on_drop();
                anyhow::bail!("the stage writer panicked")
            }
        }
    }

    /// A staged row's parameters, appended to `params` in the stage's
    /// column order.
    fn push<'r>(params: &mut Vec<Param<'r>>, plan: &Plan, r: &'r StagedRow) {
        params.extend([
            Param::Int(plan.stage_job),
            Param::Int(r.seq),
            Param::Int(r.row_no),
            Param::from(Some(r.action.as_str())),
            Param::from(r.nkey.as_deref()),
            Param::from(r.vals.as_deref()),
            Param::from(r.warns.as_deref()),
            Param::from(r.same()),
        ]);
        let typed = (0..plan.provided).map(|k| r.typed(k));
        params.extend(
            typed
                .clone()
                .map(|(value, _)| value.map_or(Param::Null, to_param)),
        );
        params.extend(typed.map(|(_, before)| before.map_or(Param::Null, to_param)));
    }

    /// One batch: its transaction, the lease, the rows, where the file's
    /// numbering jumps among them, their errors.
    fn write(
        conn: &mut bound::Connection,
        plan: &Plan,
        load: &Load,
        breaks: &[(i64, i64)],
    ) -> anyhow::Result<()> {
        conn.rusqlite().execute_batch("BEGIN IMMEDIATE")?;
        if let Some((owner, ms)) = &plan.lease {
            let until = chrono::Utc::now().timestamp_millis() + ms;
            let renewed = conn
                .rusqlite()
                .prepare_cached(
                    "UPDATE ig_jobs SET lease_until = ? WHERE id = ? AND lease_owner = ?",
                )?
                .execute(rusqlite::params![until, plan.job_id, owner])?;
            if renewed == 0 {
                return Err(lease_lost(&plan.job_id));
            }
        }
        // The stage's inserts, kept by how many rows each takes.
        let mut params = Vec::with_capacity(plan.width * plan.at_once);
        let mut chunks = load.rows.chunks_exact(plan.at_once);
        for chunk in &mut chunks {
            params.clear();
            chunk.iter().for_each(|r| push(&mut params, plan, r));
            let many = conn.statement(plan.at_once, || plan.many_sql.clone())?;
            many.execute(&params)?;
        }
        for r in chunks.remainder() {
            params.clear();
            push(&mut params, plan, r);
            conn.statement(1, || plan.rows_sql.clone())?
                .execute(&params)?;
        }
        let c = conn.rusqlite();
        let mut insert =
            c.prepare_cached("INSERT INTO ig_stage_breaks (job, row_no, seq) VALUES (?, ?, ?)")?;
        for (row_no, seq) in breaks {
            insert.execute(rusqlite::params![plan.stage_job, row_no, seq])?;
        }
        let mut insert = c.prepare_cached(&plan.errors_sql)?;
        for r in &load.rows {
            for (n, e) in r.errors.iter().enumerate() {
                insert.execute(rusqlite::params![
                    plan.job_id,
                    r.seq,
                    n as i64,
                    e.row as i64,
                    e.column,
                    e.value,
                    e.code,
                    e.message
                ])?;
            }
        }
        if let Some(counts) = &load.progress {
            c.prepare_cached("UPDATE ig_jobs SET counts = ? WHERE id = ?")?
                .execute(rusqlite::params![jobs::counts_text(counts), plan.job_id])?;
        }
        c.execute_batch("COMMIT")?;
        Ok(())
    }
}

/// Why a batch was refused: another worker holds the job now.
fn lease_lost(job_id: &str) -> anyhow::Error {
    anyhow::anyhow!("the lease on {job_id} went to another worker mid-run")
}

/// How long a validation waits between progress updates.
pub const PROGRESS_EVERY: Duration = Duration::from_millis(500);

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn queued_batches_join_in_order_up_to_the_bound_and_nothing_is_awaited() {
        let (tx, mut rx) = mpsc::channel(8);
        for b in 0..5u32 {
            tx.send((b * 3..b * 3 + 3).collect::<Vec<u32>>())
                .await
                .unwrap();
        }
        let mut first = rx.recv().await.unwrap();
        join_queued(&mut first, &mut rx, 8);
        // Whole batches: the third goes past the bound, none is split.
        assert_eq!(first, (0..9).collect::<Vec<_>>());
        let mut rest = rx.recv().await.unwrap();
        join_queued(&mut rest, &mut rx, 8);
        assert_eq!(rest, (9..15).collect::<Vec<_>>());
        // An empty queue with its sender still open returns at once.
        let mut last = vec![99];
        join_queued(&mut last, &mut rx, 8);
        assert_eq!(last, vec![99]);
        drop(tx);
        assert!(rx.recv().await.is_none());
    }
}
