//! The Human-Gate: who may make which move on a job, and what the move
//! records.
//!
//! Four-eyes: the key that asked for a gate action (the submitter for a
//! commit, the requester for a rollback) may neither approve nor reject that
//! same action. A server option relaxes this for single-person demos.

use chrono::{DateTime, Utc};

use super::{Decision, DecisionKind, Gate, GateAction, Job, JobState, Move, next};
use crate::keys::{KeyRecord, Role};

/// Why a person may not make a move.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refusal {
    /// The move is not in the state table from the job's state.
    InvalidState(JobState),
    /// The role may not make this move.
    Forbidden(String),
    /// Four-eyes: the requester may not decide their own request.
    SelfApproval,
}

/// The moves a person makes on a job.
pub const PERSONS_MOVES: [Move; 4] = [Move::Approve, Move::Reject, Move::Cancel, Move::Rollback];

/// Checks a person's move and gives the state it leads to.
pub fn authorize(
    job: &Job,
    event: Move,
    caller: &KeyRecord,
    allow_self_approval: bool,
) -> Result<JobState, Refusal> {
    let deciding = matches!(event, Move::Approve | Move::Reject);
    if deciding && !caller.role.can_decide() {
        return Err(Refusal::Forbidden(format!(
            "a {} key may not {} at the gate; an approver or admin may",
            caller.role.as_str(),
            event.as_str()
        )));
    }
    if !PERSONS_MOVES.contains(&event) {
        return Err(Refusal::Forbidden(format!(
            "{} is made by the service, not by a person",
            event.as_str()
        )));
    }
    let to = next(job.state, event).ok_or(Refusal::InvalidState(job.state))?;
    match event {
        Move::Approve | Move::Reject => {
            let requester = job.gate.as_ref().map(|g| g.requested_by.as_str());
            if requester == Some(caller.id.as_str()) && !allow_self_approval {
                return Err(Refusal::SelfApproval);
            }
        }
        Move::Cancel => {
            if caller.id != job.submitter && caller.role != Role::Admin {
                return Err(Refusal::Forbidden(
                    "only the submitter or an admin may cancel a job".into(),
                ));
            }
        }
        _ => {
            if caller.id != job.submitter && !caller.role.can_decide() {
                return Err(Refusal::Forbidden(
                    "only the submitter, an approver or an admin may request a rollback".into(),
                ));
            }
        }
    }
    Ok(to)
}

/// The gate action a job's request is about, by the state it waits in.
pub fn action_of(state: JobState) -> GateAction {
    match state {
        JobState::RollbackPending | JobState::RollingBack => GateAction::Rollback,
        _ => GateAction::Commit,
    }
}

/// A person's move, authorised, as the job's next version: a rollback
/// request becomes the gate's request; a decision is added to the job's
/// decisions with its comment.
pub fn apply(
    job: &Job,
    event: Move,
    caller: &KeyRecord,
    comment: Option<&str>,
    allow_self_approval: bool,
    now: DateTime<Utc>,
) -> Result<Job, Refusal> {
    let to = authorize(job, event, caller, allow_self_approval)?;
    let mut after = job.clone();
    after.state = to;
    after.updated_at = now;
    let decision = match event {
        Move::Rollback => {
            after.problem = None;
            after.gate = Some(Gate {
                action: GateAction::Rollback,
                requested_at: now,
                requested_by: caller.id.clone(),
            });
            return Ok(after);
        }
        Move::Approve => DecisionKind::Approved,
        Move::Reject => DecisionKind::Rejected,
        _ => DecisionKind::Cancelled,
    };
    after.decisions.push(Decision {
        action: action_of(job.state),
        decision,
        by: Some(caller.id.clone()),
        at: now,
        comment: comment.map(str::to_string),
    });
    Ok(after)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ledger::OnError;
    use crate::ledger::outcome::tests::job;

    fn key(id: &str, role: Role) -> KeyRecord {
        KeyRecord {
            id: id.into(),
            name: "Budi Santoso".into(),
            role,
            modules: vec!["*".into()],
            created_at: chrono::Utc::now(),
            expires_at: None,
            revoked_at: None,
        }
    }

    fn waiting() -> Job {
        let mut j = job(JobState::AwaitingApproval, OnError::Fail);
        j.gate = Some(Gate {
            action: GateAction::Commit,
            requested_at: j.created_at,
            requested_by: j.submitter.clone(),
        });
        j
    }

    #[test]
    fn the_submitter_may_not_approve_or_reject_their_own_upload() {
        let submitter = key("key_sub", Role::Admin);
        for m in [Move::Approve, Move::Reject] {
            assert_eq!(
                authorize(&waiting(), m, &submitter, false),
                Err(Refusal::SelfApproval)
            );
        }
        assert_eq!(
            authorize(&waiting(), Move::Approve, &submitter, true),
            Ok(JobState::Committing),
            "the demo option relaxes it"
        );
    }

    #[test]
    fn a_submitter_key_may_not_decide() {
        let other = key("key_other", Role::Submitter);
        assert!(matches!(
            authorize(&waiting(), Move::Approve, &other, false),
            Err(Refusal::Forbidden(_))
        ));
    }

    #[test]
    fn only_the_submitter_or_an_admin_cancels() {
        let approver = key("key_apr", Role::Approver);
        assert!(matches!(
            authorize(&waiting(), Move::Cancel, &approver, false),
            Err(Refusal::Forbidden(_))
        ));
        let admin = key("key_adm", Role::Admin);
        assert_eq!(
            authorize(&waiting(), Move::Cancel, &admin, false),
            Ok(JobState::Cancelled)
        );
        let submitter = key("key_sub", Role::Submitter);
        assert_eq!(
            authorize(&waiting(), Move::Cancel, &submitter, false),
            Ok(JobState::Cancelled)
        );
    }

    #[test]
    fn moves_outside_the_table_are_an_invalid_state() {
        let approver = key("key_apr", Role::Approver);
        let committed = job(JobState::Committed, OnError::Fail);
        assert_eq!(
            authorize(&committed, Move::Approve, &approver, false),
            Err(Refusal::InvalidState(JobState::Committed))
        );
        assert!(matches!(
            authorize(&waiting(), Move::Written, &approver, false),
            Err(Refusal::Forbidden(_))
        ));
    }

    #[test]
    fn a_rollback_request_becomes_the_gate_request_and_its_requester_may_not_approve_it() {
        let approver = key("key_apr", Role::Approver);
        let mut committed = job(JobState::Committed, OnError::Fail);
        committed.problem = Some(crate::ledger::JobProblem::new(
            crate::ledger::ProblemCode::RollbackConflict,
            "t",
            "d",
        ));
        let now = chrono::Utc::now();
        let pending = apply(
            &committed,
            Move::Rollback,
            &approver,
            Some("wrong file"),
            false,
            now,
        )
        .unwrap();
        assert_eq!(pending.state, JobState::RollbackPending);
        assert!(pending.problem.is_none(), "an earlier refusal is cleared");
        let gate = pending.gate.as_ref().unwrap();
        assert_eq!(
            (gate.action, gate.requested_by.as_str()),
            (GateAction::Rollback, "key_apr")
        );
        assert!(matches!(
            apply(&pending, Move::Approve, &approver, None, false, now),
            Err(Refusal::SelfApproval)
        ));
        let other = key("key_other", Role::Approver);
        let rolling = apply(&pending, Move::Approve, &other, Some("ok"), false, now).unwrap();
        let d = rolling.decisions.last().unwrap();
        assert_eq!(rolling.state, JobState::RollingBack);
        assert_eq!(
            (d.action, d.decision, d.comment.as_deref()),
            (GateAction::Rollback, DecisionKind::Approved, Some("ok"))
        );
    }
}
