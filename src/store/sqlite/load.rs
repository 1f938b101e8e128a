//! The validation's writer on SQLite: the batches go to a thread of
//! their own that holds one of the pool's connections for the whole
//! validation and writes through `rusqlite`: prepared multi-row `INSERT`s
//! of staged rows, their texts bound where they lie in the rows
//! ([`super::bound`]), and one per row error, each batch in its own
//! transaction with the lease's renewal and the progress counts.
//!
//! Why not sqlx: its multi-row statements build an argument list (a
//! copied `String` per text cell) on the runtime's threads, hand it to the
//! connection's own thread, which binds it value by value — measured on
//! 1M `orders` rows, writing the stage took 6.5 s of the 9 s validation
//! (timers around the staging, `perf record` of the release server), where
//! SQLite's own `INSERT … SELECT` of the same rows and notes takes 3.3 s
//! (`sqlite3` with `.timer on`). Through `rusqlite` the validation took
//! 6.5–7.2 s instead of 9.2–10.4 (`bash bench/run.sh --rows 1000000
//! --modules orders --formats csv`, two builds alternated). sqlx has no
//! prepared-statement reuse for a row at a time without that per-value
//! argument building.

use sqlx::SqlitePool;
use tokio::sync::mpsc;

use super::bound::{self, Param};
use super::values::to_param;
use crate::ids::JobId;
use crate::ledger::Counts;
use crate::store::error::StoreError;
use crate::store::jobs::{self, Lease};
use crate::store::stage::{Stage, StagedRow, breaks};

/// Rows a SQLite insert statement of the stage takes at once, at most (the
/// rest of a batch goes one at a time).
const ROWS_AT_ONCE: usize = 32;

/// Batches queued for the SQLite writer beyond the one it writes: the
/// decide side runs ahead by one, memory holds a few batches.
const QUEUED: usize = 1;

/// The writer: its thread, and the queue of batches to it.
pub struct Writer {
    batches: mpsc::Sender<Load>,
    thread: tokio::task::JoinHandle<anyhow::Result<()>>,
}

/// One batch for the writer, with the progress to record with it.
struct Load {
    rows: Vec<StagedRow>,
    progress: Option<Counts>,
}

impl Writer {
    /// Starts the writer of `stage` for job `job_id`, on one of the pool's
    /// connections.
    pub async fn start(
        pool: &SqlitePool,
        stage: &Stage<'_>,
        job_id: &JobId,
        lease: Lease,
    ) -> anyhow::Result<Writer> {
        let conn = pool.acquire().await.map_err(StoreError::from)?;
        let plan = Plan::new(stage, job_id, lease);
        let (batches, queue) = mpsc::channel(QUEUED);
        let runtime = tokio::runtime::Handle::current();
        let thread = tokio::task::spawn_blocking(move || run(conn, runtime, plan, queue));
        Ok(Writer { batches, thread })
    }

    /// The next batch from `rx` (the writer's queue is its own).
    pub async fn next(
        &mut self,
        rx: &mut mpsc::Receiver<Vec<StagedRow>>,
    ) -> anyhow::Result<Option<Vec<StagedRow>>> {
        Ok(rx.recv().await)
    }

    /// Queues one batch, with the job's counts so far when `progress` is
    /// given.
    pub async fn push(
        &mut self,
        rows: Vec<StagedRow>,
        progress: Option<Counts>,
    ) -> anyhow::Result<()> {
        if self.batches.send(Load { rows, progress }).await.is_err() {
            // The thread stopped on an error: `finish` reports it.
            anyhow::bail!("the stage writer stopped");
        }
        Ok(())
    }

    /// Waits for every batch to be written; the writer's error, if any.
    pub async fn finish(self) -> anyhow::Result<()> {
        drop(self.batches);
        self.thread
            .await
            .map_err(|e| anyhow::anyhow!("the stage writer failed: {e}"))?
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
    job_id: JobId,
    stage_job: i64,
    provided: usize,
    lease: Lease,
}

impl Plan {
    fn new(stage: &Stage<'_>, job_id: &JobId, lease: Lease) -> Plan {
        let width = 9 + 2 * stage.provided.len();
        let marks = vec!["?"; width].join(", ");
        let insert = format!(
            "INSERT INTO {} (job, seq, row_no, action, nkey, vals, warns, norm{}) VALUES ",
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
                "INSERT INTO ig_job_errors (job_id, seq, n, row_no, col, value, code, message, rule) \
                         VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)"
                    .into(),
            job_id: job_id.clone(),
            stage_job: stage.job,
            provided: stage.provided.len(),
            lease,
        }
    }
}

/// The writer thread: takes the pool connection's handle for the whole
/// run, writes every batch, and hands the connection back clean. After
/// an error or a panic the connection is closed instead: it may still
/// be inside the transaction that failed.
fn run(
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
                let jumps = breaks(&load.rows, &mut last);
                write(&mut c, &plan, &load, &jumps)?;
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
        Param::from(r.norm.as_deref()),
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
            .prepare_cached("UPDATE ig_jobs SET lease_until = ? WHERE id = ? AND lease_owner = ?")?
            .execute(rusqlite::params![until, plan.job_id.as_str(), owner])?;
        if renewed == 0 {
            return Err(jobs::lease_lost(&plan.job_id));
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
                plan.job_id.as_str(),
                r.seq,
                n as i64,
                e.row as i64,
                e.column,
                e.value,
                e.code.as_str(),
                e.message,
                e.rule
            ])?;
        }
    }
    if let Some(counts) = &load.progress {
        c.prepare_cached("UPDATE ig_jobs SET counts = ? WHERE id = ?")?
            .execute(rusqlite::params![
                jobs::counts_text(counts),
                plan.job_id.as_str()
            ])?;
    }
    c.execute_batch("COMMIT")?;
    Ok(())
}
