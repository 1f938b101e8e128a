//! Workers: when the service does its side of the pipeline. A worker
//! claims a job that is in a work state of the ledger (`validating`,
//! `committing`, `rolling_back`) with a lease in the database, keeps the
//! lease alive with a heartbeat while it works, and lets the service make
//! the job's next move only while it still holds the lease. A job whose
//! worker died (or whose process restarted) is claimed again once the
//! lease lapses, so no job stays in a work state after its worker is gone.
//!
//! What the work is lives in [`crate::service::work`].

use std::sync::Arc;
use std::time::Duration;

use tracing::{error, info, warn};

use crate::ids::JobId;
use crate::ledger::JobState;
use crate::service::{App, retention, work};

/// The owner prefix of this process's workers: `{instance}/w-{pid}-{ulid}`
/// (or without the instance when there is none). The process id tells an
/// operator (and the replica test) which process holds a job; the
/// instance lets a restart of this replica take its work back at once.
pub fn owner_prefix(instance: Option<&str>) -> String {
    let process = format!("w-{}-{}", std::process::id(), ulid::Ulid::generate());
    match instance {
        Some(i) => format!("{i}/{process}"),
        None => process,
    }
}

/// Starts the process's workers (their owners start with `owner`) and its
/// expiry sweep.
pub fn spawn(app: Arc<App>, owner: &str) -> Vec<tokio::task::JoinHandle<()>> {
    let mut handles: Vec<_> = (0..app.settings.workers)
        .map(|i| {
            let app = app.clone();
            let owner = format!("{owner}-{i}");
            tokio::spawn(async move { work_loop(app, owner).await })
        })
        .collect();
    handles.push(tokio::spawn(webhook_loop(
        app.clone(),
        format!("{owner}-webhooks"),
    )));
    handles.push(tokio::spawn(sweep_loop(app)));
    handles
}

/// Delivers webhooks: leases the due deliveries and sends them, looking
/// again when this process moves a job (its outbox grew) and at least
/// every quarter second (other replicas' moves, retries coming due). A
/// move's wake-up waits [`GATHER`] for the moves right behind it: under
/// load one lease query then takes a burst of deliveries, instead of one
/// query (a committed write) for every move.
async fn webhook_loop(app: Arc<App>, owner: String) {
    let mut stop = app.shutdown.subscribe();
    let deliverer = match crate::service::webhooks::Deliverer::start(app.clone(), owner.clone()) {
        Ok(d) => d,
        Err(e) => {
            error!(error = %e, "webhooks cannot be delivered");
            return;
        }
    };
    loop {
        if *stop.borrow() {
            return;
        }
        let busy = app.traffic.busy();
        let sent = match deliverer.round(&app, &owner, busy).await {
            Ok(n) => n,
            Err(e) => {
                warn!(error = %e, "cannot deliver webhooks");
                0
            }
        };
        if busy {
            // Yielding to the requests: a few deliveries a round, a round
            // a quarter second, whatever moves (each move would wake it).
            tokio::select! {
                _ = tokio::time::sleep(Duration::from_millis(250)) => {},
                _ = stop.changed() => {},
            }
            continue;
        }
        if sent > 0 {
            continue;
        }
        tokio::select! {
            _ = app.moves.any().notified() => tokio::time::sleep(GATHER).await,
            _ = tokio::time::sleep(Duration::from_millis(250)) => {},
            _ = stop.changed() => {},
        }
    }
}

/// How long a delivery round waits after a move for the moves behind it.
const GATHER: Duration = Duration::from_millis(50);

/// The longest a worker waits between claims while the database refuses
/// them (out of reach, a full disk).
const CLAIM_BACKOFF_CAP: Duration = Duration::from_secs(60);

async fn work_loop(app: Arc<App>, owner: String) {
    let mut stop = app.shutdown.subscribe();
    let mut refused = 0u32;
    loop {
        if *stop.borrow() {
            return;
        }
        let mut wait = Duration::from_secs(1);
        match work::claim(&app, &owner).await {
            Ok(Some((id, state))) => {
                refused = 0;
                match run(&app, &owner, &id, state).await {
                    Ok(()) => {}
                    // Another worker holds the job and does its work: this
                    // run stops, and nothing failed.
                    Err(e) if crate::store::jobs::lease_was_lost(&e) => {
                        info!(job = %id, "lease taken by another worker; this run stops");
                    }
                    Err(e) => {
                        error!(job = %id, error = %e, "job work failed");
                        // Backs off before the job is claimed again, or
                        // gives up on work that keeps failing the same way.
                        if let Err(e) = work::attempt_failed(&app, &owner, &id, &e).await {
                            warn!(job = %id, error = %e, "cannot record the failed attempt");
                        }
                    }
                }
                continue;
            }
            Ok(None) => refused = 0,
            Err(e) => {
                // Each refusal in a row doubles the wait, so that a database
                // that takes no write is not asked in a loop.
                refused = refused.saturating_add(1);
                wait = crate::service::retry::backoff(wait, i64::from(refused), CLAIM_BACKOFF_CAP);
                warn!(error = %e, retry_in_ms = wait.as_millis() as u64, "cannot claim work");
            }
        }
        if refused > 0 {
            // New work is no reason to ask a refusing database sooner.
            tokio::select! {
                _ = tokio::time::sleep(wait) => {},
                _ = stop.changed() => {},
            }
            continue;
        }
        tokio::select! {
            _ = app.work.notified() => {},
            _ = tokio::time::sleep(wait) => {},
            _ = stop.changed() => {},
        }
    }
}

/// Does a claimed job's work with a heartbeat alongside. When the
/// heartbeat finds the lease taken by another worker (this one stalled past
/// its lease), the work is dropped at once: the other worker owns the job.
async fn run(app: &Arc<App>, owner: &str, id: &JobId, state: JobState) -> anyhow::Result<()> {
    let heartbeat = heartbeat(app.clone(), id.clone(), owner.to_string());
    let result = tokio::select! {
        r = work::run(app, owner, id, state) => r,
        () = heartbeat => {
            warn!(job = %id, "lease lost to another worker; dropping this run");
            return Ok(());
        }
        () = shutdown_deadline(app) => {
            // Dropping the run rolls back its transaction; the job is handed
            // back so another replica (or this one, restarted) resumes it now.
            work::release(app, id, owner).await?;
            warn!(job = %id, "shutting down: job handed back");
            return Ok(());
        }
    };
    if result.is_ok() {
        work::release(app, id, owner).await?;
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
async fn heartbeat(app: Arc<App>, id: JobId, owner: String) {
    let every = Duration::from_millis((app.settings.lease_ms / 3).max(100) as u64);
    loop {
        tokio::time::sleep(every).await;
        match work::extend_lease(&app, &id, &owner, app.settings.lease_ms).await {
            Ok(true) => {}
            Ok(false) => return,
            Err(e) => warn!(job = %id, error = %e, "heartbeat failed"),
        }
    }
}

/// Housekeeping: expires jobs that waited at the gate longer than the
/// approval limit, purges what uploads left behind, purges the staged
/// rows and stored files of jobs past retention or their rollback window,
/// and appends the ledger's head to the checkpoint file (at least once a
/// minute: the sweep runs every 30 s by default).
async fn sweep_loop(app: Arc<App>) {
    let mut stop = app.shutdown.subscribe();
    loop {
        if let Err(e) = app.seal.checkpoint(&app.db).await {
            warn!(error = %e, "could not append the ledger's head to the checkpoint");
        }
        if let Err(e) = work::expire_due(&app).await {
            warn!(error = %e, "expiry sweep failed");
        }
        if let Err(e) = work::purge(&app).await {
            warn!(error = %e, "purge of unfinished uploads failed");
        }
        if let Err(e) = retention::sweep(&app).await {
            warn!(error = %e, "retention sweep failed");
        }
        tokio::select! {
            _ = tokio::time::sleep(Duration::from_millis(app.settings.expiry_sweep_ms)) => {},
            _ = stop.changed() => return,
        }
    }
}
