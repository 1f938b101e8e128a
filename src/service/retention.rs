//! Retention (API.md section 10): the sweep that purges the staged rows
//! and stored file of jobs that ended without a commit `retention_days`
//! ago, and of committed jobs whose rollback window (`rollback_days`)
//! closed. The job, its events and its error list remain; the ledger
//! notes each purge (`purged`, saying what was removed).
//!
//! One replica purges at a time: every transaction of the sweep first
//! tries the [`Lock::Purge`] advisory lock and stops the round if another
//! replica holds it (SQLite has one writer anyway). A job's note, its
//! mark and its stored file go in one transaction, with its first batch of
//! staged rows; a big stage's other rows follow a batch a transaction, so
//! no transaction holds locks for a whole million-row delete. Once marked,
//! a job's stage is read by nothing (its preview answers `410`, a rollback
//! `409`), and a sweep that stopped half-way is finished by the next one.

use serde_json::json;
use tracing::info;

use super::{App, Result};
use crate::ids::JobId;
use crate::ledger::outcome::{self, PurgeReason};
use crate::store::blobs::{self, Dropped};
use crate::store::stage::{self, Stage};
use crate::store::{self, Lock, Tx, now};

/// Staged rows removed in one transaction.
pub const BATCH: i64 = 10_000;

/// Jobs looked at a time.
const PAGE: i64 = 50;

/// What one round of the sweep did.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Swept {
    pub jobs: u64,
    pub rows: i64,
    pub bytes: i64,
}

/// One round: finishes the purges an earlier round left half-way, then
/// purges every job due. Stops early when another replica is purging.
pub async fn sweep(app: &App) -> Result<Swept> {
    let mut swept = Swept::default();
    if !finish_stages(app).await? {
        return Ok(swept);
    }
    let limits = &app.settings.limits;
    let retention = chrono::Duration::seconds(limits.retention_secs);
    let window = chrono::Duration::seconds(limits.rollback_secs);
    loop {
        let at = now();
        let due = {
            let mut c = app.db.acquire().await?;
            store::retention::due(&mut c.conn(), at - retention, at - window, PAGE).await?
        };
        let mut skipped = 0;
        for id in &due {
            match purge(app, id, retention, window).await? {
                Step::Busy => return Ok(swept),
                Step::Skipped => skipped += 1,
                Step::Done { rows, bytes, left } => {
                    swept.jobs += 1;
                    swept.rows += rows;
                    swept.bytes += bytes;
                    if left && !finish_stages(app).await? {
                        return Ok(swept);
                    }
                }
            }
        }
        // A page of jobs none of which could be purged would come back
        // the same: the next round looks again.
        if (due.len() as i64) < PAGE || skipped == due.len() {
            break;
        }
    }
    if swept.jobs > 0 {
        app.moves.other();
        info!(
            jobs = swept.jobs,
            rows = swept.rows,
            bytes = swept.bytes,
            "purged the staged rows and stored files of jobs past retention"
        );
    }
    Ok(swept)
}

enum Step {
    /// Another replica is purging.
    Busy,
    /// The job moved, was purged meanwhile, or is not due after all.
    Skipped,
    /// Purged: staged rows and file bytes removed, and whether staged rows
    /// are left for later batches.
    Done { rows: i64, bytes: i64, left: bool },
}

/// Starts a transaction of the sweep, if no other replica is purging.
async fn begin(app: &App) -> Result<Option<Tx>> {
    let mut tx = app.db.begin().await?;
    if store::try_lock(&mut tx.conn(), Lock::Purge).await? {
        Ok(Some(tx))
    } else {
        tx.rollback().await?;
        Ok(None)
    }
}

/// Purges one job, if it is still due: its first batch of staged rows, its
/// stored file unless another job still needs it, its mark and the
/// ledger's note, all in one transaction.
async fn purge(
    app: &App,
    id: &JobId,
    retention: chrono::Duration,
    window: chrono::Duration,
) -> Result<Step> {
    let Some(mut tx) = begin(app).await? else {
        return Ok(Step::Busy);
    };
    let at = now();
    let job = store::jobs::get(&mut tx.conn(), id).await?;
    let due = job
        .as_ref()
        .and_then(|j| Some((outcome::purge_due(j, retention, window, at)?, j)));
    let Some((reason, job)) = due else {
        tx.rollback().await?;
        return Ok(Step::Skipped);
    };
    let Some(after) = outcome::purged(job, at) else {
        tx.rollback().await?;
        return Ok(Step::Skipped);
    };
    // Rows first: no lock but the sweep's is held while they go.
    let stage = match (job.module.as_ref()).and_then(|m| app.catalog.get(m.as_str())) {
        Some(module) => Stage::of(&mut tx.conn(), module, &job.id).await?,
        None => None,
    };
    let (rows, left) = match &stage {
        Some(s) => {
            let table = s.table();
            let rows = store::retention::staged(&mut tx.conn(), &table, s.job).await?;
            let removed =
                store::retention::remove_staged(&mut tx.conn(), &table, s.job, BATCH).await?;
            (rows, removed == BATCH)
        }
        None => (0, false),
    };
    if job.is_workbook() {
        // A workbook's parts go with it: their staged rows are removed a
        // batch at a time as any purged job's are ([`finish_stages`]).
        store::jobs::mark_parts_purged(&mut tx.conn(), &job.id, at).await?;
    }
    let dropped = blobs::drop_unused(&mut tx.conn(), &job.file.sha256, &job.id).await?;
    let detail = detail(reason, rows, job, dropped);
    if !store::jobs::purged(&mut tx.conn(), &app.seal.key, job, &after, detail).await? {
        tx.rollback().await?;
        return Ok(Step::Skipped);
    }
    if !left {
        store::retention::forget_stage(&mut tx.conn(), &job.id).await?;
    }
    tx.commit().await?;
    info!(job = %job.id, reason = reason.as_str(), rows, file = ?dropped, "job purged");
    let bytes = match dropped {
        Dropped::Yes { bytes } => bytes,
        _ => 0,
    };
    Ok(Step::Done { rows, bytes, left })
}

/// The purge's note in the ledger: why, and what was removed or kept.
fn detail(
    reason: PurgeReason,
    rows: i64,
    job: &crate::ledger::Job,
    dropped: Dropped,
) -> serde_json::Value {
    let file = match dropped {
        Dropped::Yes { bytes } => {
            json!({"sha256": job.file.sha256, "dropped": true, "bytes": bytes})
        }
        Dropped::Shared { jobs } => json!({
            "sha256": job.file.sha256, "dropped": false, "bytes": 0,
            "kept_for_jobs": jobs,
        }),
        Dropped::Absent => json!({"sha256": job.file.sha256, "dropped": false, "bytes": 0}),
    };
    json!({"reason": reason.as_str(), "staged_rows": rows, "file": file})
}

/// Removes the staged rows purged jobs still have, a batch a transaction.
/// False when another replica is purging.
async fn finish_stages(app: &App) -> Result<bool> {
    loop {
        let unfinished = {
            let mut c = app.db.acquire().await?;
            store::retention::unfinished(&mut c.conn(), PAGE).await?
        };
        if unfinished.is_empty() {
            return Ok(true);
        }
        for (id, module, number) in unfinished {
            let table = app.catalog.get(&module).map(|m| stage::table(m));
            loop {
                let Some(mut tx) = begin(app).await? else {
                    return Ok(false);
                };
                let removed = match &table {
                    Some(t) => {
                        store::retention::remove_staged(&mut tx.conn(), t, number, BATCH).await?
                    }
                    None => 0,
                };
                if removed < BATCH {
                    store::retention::forget_stage(&mut tx.conn(), &id).await?;
                }
                tx.commit().await?;
                if removed < BATCH {
                    break;
                }
            }
        }
    }
}
