//! The Human-Gate: who may make which move on a job.
//!
//! Four-eyes: the key that asked for a gate action (the submitter for a
//! commit, the requester for a rollback) may neither approve nor reject that
//! same action. A server option relaxes this for single-person demos.

use super::{Job, Move, State, next};
use crate::keys::{KeyRecord, Role};

/// Why a person may not make a move.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refusal {
    /// The move is not in the state table from the job's state.
    InvalidState(State),
    /// The role may not make this move.
    Forbidden(String),
    /// Four-eyes: the requester may not decide their own request.
    SelfApproval,
}

/// Checks a person's move and gives the state it leads to.
pub fn authorize(
    job: &Job,
    event: Move,
    caller: &KeyRecord,
    allow_self_approval: bool,
) -> Result<State, Refusal> {
    let deciding = matches!(event, Move::Approve | Move::Reject);
    if deciding && !caller.role.can_decide() {
        return Err(Refusal::Forbidden(format!(
            "a {} key may not {} at the gate; an approver or admin may",
            caller.role.as_str(),
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
        Move::Rollback => {
            if caller.id != job.submitter && !caller.role.can_decide() {
                return Err(Refusal::Forbidden(
                    "only the submitter, an approver or an admin may request a rollback".into(),
                ));
            }
        }
        _ => {
            return Err(Refusal::Forbidden(format!(
                "{} is made by the service, not by a person",
                event.as_str()
            )));
        }
    }
    Ok(to)
}

/// The gate action a decision is about: `commit` or `rollback`.
pub fn gate_action(state: State) -> &'static str {
    match state {
        State::RollbackPending | State::RollingBack => "rollback",
        _ => "commit",
    }
}
