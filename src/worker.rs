//! Workers: the service's side of the pipeline. A worker claims a job that
//! is `validating`, `committing` or `rolling_back` with a lease in the
//! database, keeps the lease alive with a heartbeat while it works, and
//! makes the job's next move only while it still holds the lease. A job
//! whose worker died (or whose process restarted) is claimed again once the
//! lease lapses, so no job stays in a work state after its worker is gone.

use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::json;
use tracing::{error, info, warn};

use crate::app::App;
use crate::ledger::{Decision, Job, Move, State};
use crate::store::jobs::{self, MoveBy};
use crate::store::{self, Tx, ident, now};
use crate::validate::run::{self, Outcome, Setup};

/// Starts the process's workers and its expiry sweep.
pub fn spawn(app: Arc<App>) -> Vec<tokio::task::JoinHandle<()>> {
    // The process id in the owner tells an operator (and the replica test)
    // which process holds a job.
    let owner = format!("w-{}-{}", std::process::id(), ulid::Ulid::generate());
    let mut handles: Vec<_> = (0..app.settings.workers)
        .map(|i| {
            let app = app.clone();
            let owner = format!("{owner}-{i}");
            tokio::spawn(async move { work_loop(app, owner).await })
        })
        .collect();
    handles.push(tokio::spawn(expiry_loop(app)));
    handles
}

async fn work_loop(app: Arc<App>, owner: String) {
    let mut stop = app.shutdown.subscribe();
    loop {
        if *stop.borrow() {
            return;
        }
        match claim(&app, &owner).await {
            Ok(Some((id, state))) => {
                if let Err(e) = run(&app, &owner, &id, state).await {
                    error!(job = %id, error = %e, "job work failed; it will be retried");
                    // Back off before the job is claimed again.
                    let _ = retry_later(&app, &id, &owner).await;
                }
                continue;
            }
            Ok(None) => {}
            Err(e) => warn!(error = %e, "cannot claim work"),
        }
        tokio::select! {
            _ = app.work.notified() => {},
            _ = tokio::time::sleep(Duration::from_secs(1)) => {},
            _ = stop.changed() => {},
        }
    }
}

fn now_ms() -> i64 {
    chrono::Utc::now().timestamp_millis()
}

async fn claim(app: &App, owner: &str) -> anyhow::Result<Option<(String, State)>> {
    let mut c = app.db.acquire().await?;
    Ok(jobs::claim(&mut c.conn(), owner, now_ms(), app.settings.lease_ms).await?)
}

async fn retry_later(app: &App, id: &str, owner: &str) -> anyhow::Result<()> {
    let mut c = app.db.acquire().await?;
    jobs::heartbeat(&mut c.conn(), id, owner, now_ms() + 5_000).await?;
    Ok(())
}

/// Does a claimed job's work with a heartbeat alongside. When the
/// heartbeat finds the lease taken by another worker (this one stalled past
/// its lease), the work is dropped at once: the other worker owns the job.
async fn run(app: &Arc<App>, owner: &str, id: &str, state: State) -> anyhow::Result<()> {
    let heartbeat = heartbeat(app.clone(), id.to_string(), owner.to_string());
    let work = async {
        let mut c = app.db.acquire().await?;
        let job = jobs::get(&mut c.conn(), id).await?;
        drop(c);
        let Some(job) = job else { return Ok(()) };
        if job.state != state {
            return Ok(());
        }
        match state {
            State::Validating => validate(app, owner, &job).await,
            State::Committing => commit(app, owner, &job).await,
            State::RollingBack => rollback(app, owner, &job).await,
            _ => Ok(()),
        }
    };
    let result = tokio::select! {
        r = work => r,
        () = heartbeat => {
            warn!(job = %id, "lease lost to another worker; dropping this run");
            return Ok(());
        }
        () = shutdown_deadline(app) => {
            // Dropping the run rolls back its transaction; the job is handed
            // back so another replica (or this one, restarted) resumes it now.
            let mut c = app.db.acquire().await?;
            jobs::release(&mut c.conn(), id, owner).await?;
            warn!(job = %id, "shutting down: job handed back");
            return Ok(());
        }
    };
    let mut c = app.db.acquire().await?;
    if result.is_ok() {
        jobs::release(&mut c.conn(), id, owner).await?;
    }
    result
}

/// Resolves once shutdown was asked for and the grace period for running
/// work has passed.
async fn shutdown_deadline(app: &App) {
    let mut stop = app.shutdown.subscribe();
    let _ = stop.wait_for(|s| *s).await;
    tokio::time::sleep(Duration::from_millis(app.settings.shutdown_grace_ms)).await;
}

/// Extends the lease every third of its length; returns only when the
/// lease is gone.
async fn heartbeat(app: Arc<App>, id: String, owner: String) {
    let every = Duration::from_millis((app.settings.lease_ms / 3).max(100) as u64);
    loop {
        tokio::time::sleep(every).await;
        let until = now_ms() + app.settings.lease_ms;
        match app.db.acquire().await {
            Ok(mut c) => match jobs::heartbeat(&mut c.conn(), &id, &owner, until).await {
                Ok(true) => {}
                Ok(false) => return,
                Err(e) => warn!(job = %id, error = %e, "heartbeat failed"),
            },
            Err(e) => warn!(job = %id, error = %e, "heartbeat failed"),
        }
    }
}

fn module_of<'a>(app: &'a App, job: &Job) -> anyhow::Result<&'a crate::catalog::Module> {
    app.catalog
        .get(&job.module)
        .map(|m| m.as_ref())
        .ok_or_else(|| anyhow::anyhow!("module {} is not in the catalog", job.module))
}

fn problem(code: &str, title: &str, detail: String) -> serde_json::Value {
    json!({"code": code, "title": title, "detail": detail})
}

async fn validate(app: &App, owner: &str, job: &Job) -> anyhow::Result<()> {
    let module = module_of(app, job)?;
    let setup = Setup {
        zone: app.settings.zone,
        max_rows: app.settings.limits.rows,
        max_columns: app.settings.limits.columns,
        max_cell_bytes: app.settings.limits.cell_bytes,
    };
    let started = Instant::now();
    let outcome = run::validate(&app.db, module, job, &setup).await?;
    let mut after = job.clone();
    let event = match outcome {
        Outcome::FileFailure(e) => {
            after.problem = Some(problem(e.code, "The file cannot be imported", e.message));
            Move::FileFailure
        }
        Outcome::Checked { counts, warnings } => {
            after.warnings = warnings;
            let errors = counts.errors;
            after.counts = counts;
            if errors > 0 && job.on_error == crate::ledger::OnError::Fail {
                after.problem = Some(problem(
                    "row_errors",
                    "Rows have errors",
                    format!("{errors} rows have errors; fix them or upload with on_error=skip"),
                ));
                Move::RowErrors
            } else {
                after.gate = Some(crate::ledger::Gate {
                    action: "commit".into(),
                    requested_at: now(),
                    requested_by: job.submitter.clone(),
                });
                Move::Checked
            }
        }
    };
    let tx = app.db.begin().await?;
    if finish(app, tx, job, &mut after, event, owner).await? {
        stage_done("validate", started, after.counts.rows);
    }
    Ok(())
}

/// Refreshes the statistics of a table a job just wrote many rows to (see
/// [`store::analyze`]). The job has moved already; a failure here only
/// leaves the planner with older statistics, so it is logged, not raised.
async fn after_bulk_write(app: &App, table: &str, rows: i64) {
    if rows < store::ANALYZE_AFTER_ROWS {
        return;
    }
    let analyzed = match app.db.acquire().await {
        Ok(mut c) => store::analyze(&mut c.conn(), table, &[]).await,
        Err(e) => Err(e),
    };
    if let Err(e) = analyzed {
        warn!(table, error = %e, "cannot refresh the table's statistics");
    }
}

async fn commit(app: &App, owner: &str, job: &Job) -> anyhow::Result<()> {
    let module = module_of(app, job)?;
    let started = Instant::now();
    let mut tx = app.db.begin().await?;
    let written = crate::commit::commit(&mut tx, module, job, job.simulated).await;
    let mut after = job.clone();
    let event = match written {
        Ok(Ok(())) => {
            after.problem = None;
            Move::Written
        }
        Ok(Err(refused)) => {
            tx.rollback().await?;
            tx = app.db.begin().await?;
            after.problem = Some(json!({
                "code": "stale_preview",
                "title": "The table changed since the preview",
                "detail": format!("{} previewed rows changed in {} since the preview; nothing was written. Upload the file again to see a fresh preview.", refused.total, module.table),
                "rows": refused.rows,
            }));
            Move::CommitFailed
        }
        Err(e) => {
            tx.rollback().await?;
            tx = app.db.begin().await?;
            after.problem = Some(problem(
                "database_error",
                "The commit failed",
                format!("nothing was written: {e}"),
            ));
            Move::CommitFailed
        }
    };
    if finish(app, tx, job, &mut after, event, owner).await? && event == Move::Written {
        let rows = job.counts.insert + job.counts.update;
        stage_done("commit", started, rows);
        after_bulk_write(app, &ident(&module.table), rows).await;
    }
    Ok(())
}

async fn rollback(app: &App, owner: &str, job: &Job) -> anyhow::Result<()> {
    let module = module_of(app, job)?;
    let started = Instant::now();
    let mut tx = app.db.begin().await?;
    let undone = crate::commit::rollback(&mut tx, module, job, job.simulated).await?;
    let mut after = job.clone();
    let event = match undone {
        Ok(()) => {
            after.problem = None;
            Move::Undone
        }
        Err(refused) => {
            tx.rollback().await?;
            tx = app.db.begin().await?;
            after.problem = Some(json!({
                "code": "rollback_conflict",
                "title": "Rows changed since the commit",
                "detail": format!("{} rows of {} changed since the commit; nothing was undone.", refused.total, module.table),
                "rows": refused.rows,
            }));
            Move::RollbackConflict
        }
    };
    if finish(app, tx, job, &mut after, event, owner).await? && event == Move::Undone {
        let rows = job.counts.insert + job.counts.update;
        stage_done("rollback", started, rows);
        after_bulk_write(app, &ident(&module.table), rows).await;
    }
    Ok(())
}

/// Makes the service's move inside `tx` and commits it, if this worker
/// still holds the lease; otherwise drops `tx` (another worker owns the
/// job now). Returns whether the move was made.
async fn finish(
    app: &App,
    mut tx: Tx,
    job: &Job,
    after: &mut Job,
    event: Move,
    owner: &str,
) -> anyhow::Result<bool> {
    after.updated_at = now();
    after.state = crate::ledger::next(job.state, event).unwrap_or(job.state);
    let by = MoveBy {
        event,
        actor: None,
        comment: None,
        detail: None,
        lease_owner: Some(owner),
    };
    if jobs::transition(&mut tx.conn(), job, after, by).await? {
        tx.commit().await?;
        app.job_moved.notify_waiters();
        info!(job = %job.id, event = event.as_str(), state = after.state.as_str(), "job moved");
        Ok(true)
    } else {
        tx.rollback().await?;
        Ok(false)
    }
}

/// Records a finished stage's duration and rows.
fn stage_done(stage: &'static str, started: Instant, rows: i64) {
    let seconds = started.elapsed().as_secs_f64();
    metrics::histogram!("importgate_stage_duration_seconds", "stage" => stage).record(seconds);
    metrics::counter!("importgate_rows_total", "stage" => stage).increment(rows.max(0) as u64);
    info!(
        stage,
        rows,
        ms = (seconds * 1000.0) as u64,
        "stage finished"
    );
}

/// Housekeeping: moves jobs that waited at the gate longer than the
/// approval limit to `expired`, and drops the chunks of uploads that died
/// half-way.
async fn expiry_loop(app: Arc<App>) {
    let mut stop = app.shutdown.subscribe();
    loop {
        if let Err(e) = expire(&app).await {
            warn!(error = %e, "expiry sweep failed");
        }
        if let Err(e) = purge_uploads(&app).await {
            warn!(error = %e, "purge of unfinished uploads failed");
        }
        tokio::select! {
            _ = tokio::time::sleep(Duration::from_millis(app.settings.expiry_sweep_ms)) => {},
            _ = stop.changed() => return,
        }
    }
}

async fn purge_uploads(app: &App) -> anyhow::Result<()> {
    let mut c = app.db.acquire().await?;
    let before = now() - chrono::Duration::hours(1);
    let n = crate::store::blobs::purge_orphans(&mut c.conn(), before).await?;
    // Idempotency keys answer for 24 hours; keep a day more for late retries' 422.
    crate::store::idempotency::purge(&mut c.conn(), now() - chrono::Duration::hours(48)).await?;
    if n > 0 {
        info!(chunks = n, "dropped chunks of unfinished uploads");
    }
    Ok(())
}

async fn expire(app: &App) -> anyhow::Result<()> {
    let cutoff = now() - chrono::Duration::seconds(app.settings.limits.approval_secs);
    let ids = {
        let mut c = app.db.acquire().await?;
        jobs::awaiting_since(&mut c.conn(), cutoff).await?
    };
    for id in ids {
        expire_job(app, &id).await?;
    }
    Ok(())
}

/// Moves one job waiting at the gate to `expired` (the sweep's move; the
/// demo uses it too). False when the job was not awaiting approval.
pub async fn expire_job(app: &App, id: &str) -> anyhow::Result<bool> {
    let mut tx = app.db.begin().await?;
    let Some(job) = jobs::get(&mut tx.conn(), id).await? else {
        tx.rollback().await?;
        return Ok(false);
    };
    if job.state != State::AwaitingApproval {
        tx.rollback().await?;
        return Ok(false);
    }
    let mut after = job.clone();
    after.state = State::Expired;
    after.updated_at = now();
    after.decisions.push(Decision {
        action: "commit".into(),
        decision: "expired".into(),
        by: None,
        at: after.updated_at,
        comment: None,
    });
    let by = MoveBy {
        event: Move::Expire,
        actor: None,
        comment: None,
        detail: None,
        lease_owner: None,
    };
    if jobs::transition(&mut tx.conn(), &job, &after, by).await? {
        tx.commit().await?;
        app.job_moved.notify_waiters();
        Ok(true)
    } else {
        tx.rollback().await?;
        Ok(false)
    }
}
