//! A person's move at the Human-Gate, for every front door: approve,
//! reject, cancel, or ask for a rollback. The ledger's gate decides
//! whether the move is allowed and what it records; this applies it if
//! nobody moved the job meanwhile, and hands the work it starts to the
//! workers.

use super::{App, Error, Result, comment, jobs};
use crate::ids::JobId;
use crate::keys::KeyRecord;
use crate::ledger::{Job, Move, Warning, WarningCode, gate};
use crate::pipeline::references;
use crate::store::stage::Stage;
use crate::store::{self, jobs::MoveBy};

/// A person's move on a job, as a front door received it.
#[derive(Debug, Clone)]
pub struct MoveRequest<'a> {
    pub job_id: &'a JobId,
    pub event: Move,
    /// The `ETag` of the version the person decided on, when they said.
    pub if_match: Option<&'a str>,
    pub comment: Option<&'a str>,
    /// Refuse a reject or a rollback request without a reason. The
    /// contract says they *should* carry one; the console asks for it,
    /// scripts calling the API may leave it out.
    pub reason_required: bool,
}

/// Whether a move asks for a reason another person reads.
pub fn wants_reason(event: Move) -> bool {
    matches!(event, Move::Reject | Move::Rollback)
}

/// Makes a person's move: checks the comment, the version they looked at
/// and the gate's rules, records the move if the job is still where they
/// saw it, and wakes the workers for the work it starts. The job after the
/// move.
pub async fn make_move(app: &App, actor: &KeyRecord, req: MoveRequest<'_>) -> Result<Job> {
    let comment = comment(req.comment)?;
    if req.reason_required && wants_reason(req.event) && comment.is_none() {
        return Err(Error::invalid(
            "comment",
            "say why: the other person reads your reason in the timeline",
        ));
    }
    let job = jobs::get(app, actor, req.job_id).await?;
    if past_approval_limit(app, &job) {
        // The sweep has not come by yet; the limit holds all the same.
        super::work::expire(app, &job.id).await?;
        let now = jobs::get(app, actor, req.job_id).await?;
        return Err(Error::job_state(&now, req.event));
    }
    check_etag(&job, req.if_match)?;
    let rule = four_eyes(app, &job, actor).await?;
    let after = gate::apply(
        &job,
        req.event,
        actor,
        comment.as_deref(),
        &rule,
        store::now(),
    )
    .map_err(|r| Error::refused(&job, req.event, r))?;
    if req.event == Move::Rollback
        && let Some(closed) = rollback_closed(app, &job)
    {
        return Err(Error::rollback_expired(
            &job,
            closed,
            app.settings.limits.rollback_secs,
        ));
    }
    let mut after = after;
    if req.event == Move::Rollback {
        // The approver of the rollback sees what it would leave naming
        // nothing in other modules.
        after.warnings.retain(|w| w.code != WarningCode::Orphans);
        after.warnings.extend(orphan_warnings(app, &job).await?);
    }
    let mut tx = app.db.begin().await?;
    // A decision's issuer is in its event too, so `ledger verify` can
    // check the job's decisions against the chain.
    let detail = (req.event != Move::Rollback)
        .then_some(actor.issued_by.as_ref())
        .flatten()
        .map(|by| serde_json::json!({ "issued_by": by }));
    let by = MoveBy {
        event: req.event,
        actor: Some(&actor.id),
        comment: comment.as_deref(),
        detail,
        lease_owner: None,
    };
    if !store::jobs::transition(&mut tx.conn(), &app.seal.key, &job, &after, by).await? {
        tx.rollback().await?;
        // Somebody moved the job first: answer from its state now.
        let now = jobs::get(app, actor, req.job_id).await?;
        return Err(Error::job_state(&now, req.event));
    }
    tx.commit().await?;
    app.moves.job(&job.id);
    tracing::info!(job = %job.id, event = req.event.as_str(), to = after.state.as_str(), "gate move");
    super::seal::checkpoint_now(app).await;
    if after.state.is_work() {
        app.work.notify_one();
    }
    after.version += 1;
    Ok(after)
}

/// The four-eyes rule for `caller` deciding `job` (API.md section 1):
/// the persons behind everyone who uploaded, revised or saved the mapping
/// of a job of its revision chain and behind its gate request's
/// requester, the time the chain's first job was uploaded, and the keys
/// that issued the caller.
pub async fn four_eyes(app: &App, job: &Job, caller: &KeyRecord) -> Result<gate::FourEyes> {
    let mut c = app.db.acquire().await?;
    let chain = chain_of(&mut c.conn(), job).await?;
    let parties = gate::parties(&chain);
    let barred = store::keys::persons_of(&mut c.conn(), &parties).await?;
    let uploaded_at = chain
        .last()
        .map_or(job.created_at, |first| first.created_at);
    Ok(gate::FourEyes {
        parties,
        barred,
        uploaded_at,
        issuers: store::keys::issuers(&mut c.conn(), caller).await?,
        relaxed: app.settings.allow_self_approval,
    })
}

/// `job`, then the job it revises, and so on to the upload that began the
/// chain; each with the key that saved the mapping it applied.
async fn chain_of(conn: &mut store::Conn<'_>, job: &Job) -> Result<Vec<Job>> {
    let mut chain = vec![job.clone()];
    while let Some(parent) = chain.last().and_then(|j| j.revision_of.clone()) {
        match store::jobs::get(conn, &parent).await? {
            Some(j) => chain.push(j),
            None => break,
        }
    }
    for j in &mut chain {
        mapping_saver(conn, j).await?;
    }
    Ok(chain)
}

/// Fills in who saved the mapping a job applied, for jobs recorded
/// without it (the mapping is looked up by its id while it still exists).
async fn mapping_saver(conn: &mut store::Conn<'_>, job: &mut Job) -> Result<()> {
    let Some(applied) = job
        .mapping_applied
        .as_mut()
        .filter(|m| m.saved_by.is_none())
    else {
        return Ok(());
    };
    let Some(module) = &job.module else {
        return Ok(());
    };
    let saved = store::mappings::get(conn, module, &applied.id).await?;
    applied.saved_by = saved.map(|s| s.created_by);
    Ok(())
}

/// What rolling back `job` would orphan in the modules that refer to its
/// module, as warnings for the rollback gate.
async fn orphan_warnings(app: &App, job: &Job) -> Result<Vec<Warning>> {
    let Some(module) = (job.module.as_ref()).and_then(|m| app.catalog.get(m.as_str())) else {
        return Ok(vec![]);
    };
    let referrers = references::referrers(&app.catalog, &module.key);
    if job.simulated || referrers.is_empty() {
        // A simulated commit wrote nothing, so its rollback deletes nothing.
        return Ok(vec![]);
    }
    let mut c = app.db.acquire().await?;
    let Some(stage) = Stage::of(&mut c.conn(), module, &job.id).await? else {
        return Ok(vec![]);
    };
    let found = references::orphans(&mut c.conn(), &stage, &referrers, false, 0).await?;
    Ok(found.iter().map(references::Orphans::warning).collect())
}

/// When the rollback window of a committed job closed, if it has (the
/// console leaves the rollback out then).
pub fn rollback_closed(app: &App, job: &Job) -> Option<chrono::DateTime<chrono::Utc>> {
    let window = chrono::Duration::seconds(app.settings.limits.rollback_secs);
    gate::rollback_closed(job, window, store::now())
}

/// Whether a job waiting at the gate has waited past the approval time
/// limit (it expires whether or not the sweep has run).
fn past_approval_limit(app: &App, job: &Job) -> bool {
    let limit = chrono::Duration::seconds(app.settings.limits.approval_secs);
    crate::ledger::next(job.state, Move::Expire).is_some() && store::now() - job.updated_at >= limit
}

/// `If-Match` must name the job's current version when it is given.
fn check_etag(job: &Job, if_match: Option<&str>) -> Result<()> {
    let Some(wanted) = if_match else {
        return Ok(());
    };
    let etag = job.etag();
    if wanted
        .split(',')
        .any(|t| t.trim() == "*" || t.trim() == etag)
    {
        Ok(())
    } else {
        Err(Error::StaleEtag {
            given: wanted.to_string(),
            current: etag,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ledger::JobState;
    use crate::ledger::OnError;
    use crate::ledger::outcome::tests::job;

    #[test]
    fn if_match_must_name_the_version_looked_at() {
        let j = job(JobState::AwaitingApproval, OnError::Fail);
        assert!(check_etag(&j, None).is_ok());
        assert!(check_etag(&j, Some("*")).is_ok());
        assert!(check_etag(&j, Some(&j.etag())).is_ok());
        assert!(check_etag(&j, Some(&format!("\"x\", {}", j.etag()))).is_ok());
        let mut moved = j.clone();
        moved.version += 1;
        assert!(matches!(
            check_etag(&moved, Some(&j.etag())),
            Err(Error::StaleEtag { .. })
        ));
    }

    #[test]
    fn reject_and_rollback_want_a_reason() {
        assert!(wants_reason(Move::Reject) && wants_reason(Move::Rollback));
        assert!(!wants_reason(Move::Approve) && !wants_reason(Move::Cancel));
    }
}
