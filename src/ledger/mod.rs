//! The ledger: jobs, their states, the moves between them, and who may
//! make each move at the Human-Gate.
//!
//! The state machine is the one table [`MOVES`] (API.md section 4); nothing
//! else in the service decides whether a move is allowed.

pub mod chain;
pub mod gate;
pub mod job;

use serde::{Deserialize, Serialize};

pub use job::{Counts, Decision, FileInfo, Gate, Job, JobOptions, Mode, OnError};

/// Where a job is in the pipeline.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "snake_case")]
#[schema(as = JobState)]
pub enum State {
    Validating,
    Invalid,
    Failed,
    AwaitingApproval,
    Committing,
    Committed,
    Rejected,
    Cancelled,
    Expired,
    RollbackPending,
    RollingBack,
    RolledBack,
}

pub const ALL_STATES: [State; 12] = [
    State::Validating,
    State::Invalid,
    State::Failed,
    State::AwaitingApproval,
    State::Committing,
    State::Committed,
    State::Rejected,
    State::Cancelled,
    State::Expired,
    State::RollbackPending,
    State::RollingBack,
    State::RolledBack,
];

impl State {
    pub fn as_str(self) -> &'static str {
        match self {
            State::Validating => "validating",
            State::Invalid => "invalid",
            State::Failed => "failed",
            State::AwaitingApproval => "awaiting_approval",
            State::Committing => "committing",
            State::Committed => "committed",
            State::Rejected => "rejected",
            State::Cancelled => "cancelled",
            State::Expired => "expired",
            State::RollbackPending => "rollback_pending",
            State::RollingBack => "rolling_back",
            State::RolledBack => "rolled_back",
        }
    }

    pub fn parse(s: &str) -> Option<State> {
        ALL_STATES.into_iter().find(|st| st.as_str() == s)
    }

    /// States in which the service (not a person) has work to do.
    pub fn is_work(self) -> bool {
        matches!(
            self,
            State::Validating | State::Committing | State::RollingBack
        )
    }

    pub fn is_terminal(self) -> bool {
        matches!(
            self,
            State::Invalid
                | State::Failed
                | State::Rejected
                | State::Cancelled
                | State::Expired
                | State::RolledBack
        )
    }
}

/// An event that moves a job.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Move {
    /// The file could not be read as rows of the module.
    FileFailure,
    /// Row errors with `on_error=fail`.
    RowErrors,
    /// Validation finished; the preview is ready.
    Checked,
    Approve,
    Reject,
    Cancel,
    Expire,
    /// The commit transaction went through.
    Written,
    /// The commit was refused (stale preview, database error).
    CommitFailed,
    Rollback,
    /// The rollback transaction went through.
    Undone,
    /// The rollback found rows changed since the commit.
    RollbackConflict,
}

impl Move {
    pub fn as_str(self) -> &'static str {
        match self {
            Move::FileFailure => "file_failure",
            Move::RowErrors => "row_errors",
            Move::Checked => "checked",
            Move::Approve => "approve",
            Move::Reject => "reject",
            Move::Cancel => "cancel",
            Move::Expire => "expire",
            Move::Written => "written",
            Move::CommitFailed => "commit_failed",
            Move::Rollback => "rollback",
            Move::Undone => "undone",
            Move::RollbackConflict => "rollback_conflict",
        }
    }
}

/// Every allowed move: from, event, to. Anything else is `invalid_state`.
pub const MOVES: &[(State, Move, State)] = &[
    (State::Validating, Move::FileFailure, State::Invalid),
    (State::Validating, Move::RowErrors, State::Failed),
    (State::Validating, Move::Checked, State::AwaitingApproval),
    (State::AwaitingApproval, Move::Approve, State::Committing),
    (State::AwaitingApproval, Move::Reject, State::Rejected),
    (State::AwaitingApproval, Move::Cancel, State::Cancelled),
    (State::AwaitingApproval, Move::Expire, State::Expired),
    (State::Committing, Move::Written, State::Committed),
    (State::Committing, Move::CommitFailed, State::Failed),
    (State::Committed, Move::Rollback, State::RollbackPending),
    (State::RollbackPending, Move::Approve, State::RollingBack),
    (State::RollbackPending, Move::Reject, State::Committed),
    (State::RollingBack, Move::Undone, State::RolledBack),
    (State::RollingBack, Move::RollbackConflict, State::Committed),
];

/// The state a move leads to from `from`, if the move is allowed there.
pub fn next(from: State, event: Move) -> Option<State> {
    MOVES
        .iter()
        .find(|(f, e, _)| *f == from && *e == event)
        .map(|(_, _, to)| *to)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_state_round_trips_and_terminal_states_have_no_moves() {
        for s in ALL_STATES {
            assert_eq!(State::parse(s.as_str()), Some(s));
            if s.is_terminal() {
                assert!(MOVES.iter().all(|(f, _, _)| *f != s), "{s:?} is terminal");
            }
        }
    }

    #[test]
    fn the_gate_is_the_only_way_to_committing() {
        let into_work: Vec<_> = MOVES
            .iter()
            .filter(|(_, _, to)| matches!(to, State::Committing | State::RollingBack))
            .collect();
        assert!(into_work.iter().all(|(_, e, _)| *e == Move::Approve));
    }
}
