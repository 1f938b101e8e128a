//! The ledger: jobs, their states, the moves between them, and who may
//! make each move at the Human-Gate. Pure rules: no SQL, no HTTP.
//!
//! The state machine is the one table [`MOVES`] (API.md section 4); nothing
//! else in the service decides whether a move is allowed. The moves the
//! service makes on its own (a validation's end, a commit's, a rollback's,
//! expiry) are worked out in [`outcome`], the moves people make in [`gate`].

pub mod chain;
pub mod events;
pub mod export;
pub mod gate;
pub mod job;
pub mod key_replay;
pub mod outcome;
pub mod replay;
pub mod revision;
pub mod rule_replay;

use serde::{Deserialize, Serialize};

pub use job::{AppliedMapping, Fix};
pub use job::{
    ConflictRow, Counts, Decision, DecisionKind, FileInfo, Gate, GateAction, Job, JobOptions,
    JobProblem, Mode, NewJob, OnError, Part, ProblemCode, ReferringRow, Revision, Warning,
    WarningCode,
};

/// Where a job is in the pipeline.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum JobState {
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

pub const ALL_STATES: [JobState; 12] = [
    JobState::Validating,
    JobState::Invalid,
    JobState::Failed,
    JobState::AwaitingApproval,
    JobState::Committing,
    JobState::Committed,
    JobState::Rejected,
    JobState::Cancelled,
    JobState::Expired,
    JobState::RollbackPending,
    JobState::RollingBack,
    JobState::RolledBack,
];

impl JobState {
    pub fn as_str(self) -> &'static str {
        match self {
            JobState::Validating => "validating",
            JobState::Invalid => "invalid",
            JobState::Failed => "failed",
            JobState::AwaitingApproval => "awaiting_approval",
            JobState::Committing => "committing",
            JobState::Committed => "committed",
            JobState::Rejected => "rejected",
            JobState::Cancelled => "cancelled",
            JobState::Expired => "expired",
            JobState::RollbackPending => "rollback_pending",
            JobState::RollingBack => "rolling_back",
            JobState::RolledBack => "rolled_back",
        }
    }

    pub fn parse(s: &str) -> Option<JobState> {
        ALL_STATES.into_iter().find(|st| st.as_str() == s)
    }

    /// States in which the service (not a person) has work to do: those
    /// the table leaves only by a move the service makes. Notes that leave
    /// the job where it is (`interrupted`, `purged`) do not count: a
    /// terminal state with a purge note is no work state.
    pub fn is_work(self) -> bool {
        let mut out = leaving(self).peekable();
        out.peek().is_some() && out.all(|(_, event, _)| event.by_service())
    }

    /// No move leads out of the state (a note that stays in it, such as
    /// `purged`, does not).
    pub fn is_terminal(self) -> bool {
        leaving(self).next().is_none()
    }

    /// The states a worker picks jobs up in, from the table.
    pub fn work_states() -> Vec<JobState> {
        ALL_STATES.into_iter().filter(|s| s.is_work()).collect()
    }

    /// The states from which `event` is allowed.
    pub fn sources_of(event: Move) -> Vec<JobState> {
        MOVES
            .iter()
            .filter(|(_, e, _)| *e == event)
            .map(|(from, _, _)| *from)
            .collect()
    }
}

/// The moves from `state` to another state (notes to itself left out).
fn leaving(state: JobState) -> impl Iterator<Item = &'static (JobState, Move, JobState)> {
    MOVES
        .iter()
        .filter(move |(from, _, to)| *from == state && *to != state)
}

/// An event that moves a job.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Move {
    /// The file arrived; the job starts (the first event of every job).
    Upload,
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
    /// The service's work failed the same way too many times: it stops
    /// trying (validation and commit end `failed`, a rollback leaves the
    /// job `committed`), with the error as the job's problem.
    GaveUp,
    /// The process doing the work stopped (killed, crashed) and its
    /// restart took the job back: a note in the ledger, the job stays in
    /// its work state and the work starts again.
    Interrupted,
    /// The job's staged rows and stored file were removed (API.md section
    /// 10: retention after a job ended without a commit, or the rollback
    /// window closed after one). A note: the job stays where it is; its
    /// record, events and error list remain.
    Purged,
    /// A person revised the job (API.md section 11): a new job over the
    /// same file takes its place. A job waiting at the gate is cancelled
    /// by it; a failed or invalid one stays where it is, noted.
    Revised,
}

pub const ALL_MOVES: [Move; 17] = [
    Move::Upload,
    Move::FileFailure,
    Move::RowErrors,
    Move::Checked,
    Move::Approve,
    Move::Reject,
    Move::Cancel,
    Move::Expire,
    Move::Written,
    Move::CommitFailed,
    Move::Rollback,
    Move::Undone,
    Move::RollbackConflict,
    Move::GaveUp,
    Move::Interrupted,
    Move::Purged,
    Move::Revised,
];

impl Move {
    pub fn as_str(self) -> &'static str {
        match self {
            Move::Upload => "upload",
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
            Move::GaveUp => "gave_up",
            Move::Interrupted => "interrupted",
            Move::Purged => "purged",
            Move::Revised => "revised",
        }
    }

    pub fn parse(s: &str) -> Option<Move> {
        ALL_MOVES.into_iter().find(|m| m.as_str() == s)
    }

    /// Moves the service makes by itself; the others are a person's.
    pub fn by_service(self) -> bool {
        !matches!(
            self,
            Move::Upload
                | Move::Approve
                | Move::Reject
                | Move::Cancel
                | Move::Rollback
                | Move::Revised
        )
    }
}

/// Every allowed move: from, event, to. Anything else is `invalid_state`.
/// (The upload is the move from nothing to `validating`: see [`START`].)
pub const MOVES: &[(JobState, Move, JobState)] = &[
    (JobState::Validating, Move::FileFailure, JobState::Invalid),
    (JobState::Validating, Move::RowErrors, JobState::Failed),
    (
        JobState::Validating,
        Move::Checked,
        JobState::AwaitingApproval,
    ),
    (
        JobState::AwaitingApproval,
        Move::Approve,
        JobState::Committing,
    ),
    (JobState::AwaitingApproval, Move::Reject, JobState::Rejected),
    (
        JobState::AwaitingApproval,
        Move::Cancel,
        JobState::Cancelled,
    ),
    (JobState::AwaitingApproval, Move::Expire, JobState::Expired),
    (JobState::Committing, Move::Written, JobState::Committed),
    (JobState::Committing, Move::CommitFailed, JobState::Failed),
    (
        JobState::Committed,
        Move::Rollback,
        JobState::RollbackPending,
    ),
    (
        JobState::RollbackPending,
        Move::Approve,
        JobState::RollingBack,
    ),
    (JobState::RollbackPending, Move::Reject, JobState::Committed),
    (JobState::RollingBack, Move::Undone, JobState::RolledBack),
    (
        JobState::RollingBack,
        Move::RollbackConflict,
        JobState::Committed,
    ),
    (JobState::Validating, Move::GaveUp, JobState::Failed),
    (JobState::Committing, Move::GaveUp, JobState::Failed),
    (JobState::RollingBack, Move::GaveUp, JobState::Committed),
    (
        JobState::Validating,
        Move::Interrupted,
        JobState::Validating,
    ),
    (
        JobState::Committing,
        Move::Interrupted,
        JobState::Committing,
    ),
    (
        JobState::RollingBack,
        Move::Interrupted,
        JobState::RollingBack,
    ),
    (JobState::Invalid, Move::Purged, JobState::Invalid),
    (JobState::Failed, Move::Purged, JobState::Failed),
    (JobState::Rejected, Move::Purged, JobState::Rejected),
    (JobState::Cancelled, Move::Purged, JobState::Cancelled),
    (JobState::Expired, Move::Purged, JobState::Expired),
    (JobState::RolledBack, Move::Purged, JobState::RolledBack),
    (JobState::Committed, Move::Purged, JobState::Committed),
    (
        JobState::AwaitingApproval,
        Move::Revised,
        JobState::Cancelled,
    ),
    (JobState::Invalid, Move::Revised, JobState::Invalid),
    (JobState::Failed, Move::Revised, JobState::Failed),
];

/// The states a job ends in without a commit: their staged rows and stored
/// file are purged after the retention time (API.md section 10).
pub const ENDED_WITHOUT_COMMIT: [JobState; 6] = [
    JobState::Invalid,
    JobState::Failed,
    JobState::Rejected,
    JobState::Cancelled,
    JobState::Expired,
    JobState::RolledBack,
];

/// The state every job starts in, by [`Move::Upload`].
pub const START: JobState = JobState::Validating;

/// The state a move leads to from `from`, if the move is allowed there.
pub fn next(from: JobState, event: Move) -> Option<JobState> {
    MOVES
        .iter()
        .find(|(f, e, _)| *f == from && *e == event)
        .map(|(_, _, to)| *to)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_state_and_move_round_trips() {
        for s in ALL_STATES {
            assert_eq!(JobState::parse(s.as_str()), Some(s));
        }
        for m in ALL_MOVES {
            assert_eq!(Move::parse(m.as_str()), Some(m));
        }
    }

    #[test]
    fn terminal_states_are_those_of_the_contract() {
        let terminal: Vec<_> = ALL_STATES.into_iter().filter(|s| s.is_terminal()).collect();
        assert_eq!(
            terminal,
            [
                JobState::Invalid,
                JobState::Failed,
                JobState::Rejected,
                JobState::Cancelled,
                JobState::Expired,
                JobState::RolledBack
            ]
        );
    }

    #[test]
    fn work_states_are_left_only_by_the_service() {
        assert_eq!(
            JobState::work_states(),
            [
                JobState::Validating,
                JobState::Committing,
                JobState::RollingBack
            ]
        );
        assert!(!JobState::AwaitingApproval.is_work(), "people decide there");
    }

    #[test]
    fn the_gate_is_the_only_way_to_committing() {
        let into_work: Vec<_> = MOVES
            .iter()
            .filter(|(from, _, to)| {
                from != to && matches!(to, JobState::Committing | JobState::RollingBack)
            })
            .collect();
        assert!(into_work.iter().all(|(_, e, _)| *e == Move::Approve));
    }

    #[test]
    fn an_interruption_is_noted_in_every_work_state_and_moves_nothing() {
        assert_eq!(
            JobState::sources_of(Move::Interrupted),
            JobState::work_states()
        );
        for s in JobState::work_states() {
            assert_eq!(next(s, Move::Interrupted), Some(s));
        }
    }

    #[test]
    fn the_service_can_give_up_on_every_work_state_and_nowhere_else() {
        assert_eq!(JobState::sources_of(Move::GaveUp), JobState::work_states());
        assert_eq!(
            next(JobState::RollingBack, Move::GaveUp),
            Some(JobState::Committed),
            "a rollback given up leaves the import as it was"
        );
    }

    #[test]
    fn a_purge_is_a_note_on_ended_and_committed_jobs_and_moves_nothing() {
        let mut sources = ENDED_WITHOUT_COMMIT.to_vec();
        sources.push(JobState::Committed);
        assert_eq!(JobState::sources_of(Move::Purged), sources);
        for s in sources {
            assert_eq!(next(s, Move::Purged), Some(s));
            assert!(!s.is_work(), "{s:?}: a purge is no work to claim");
        }
        for s in ENDED_WITHOUT_COMMIT {
            assert!(s.is_terminal(), "{s:?} stays terminal");
        }
        assert!(!JobState::Committed.is_terminal(), "a rollback leaves it");
        assert!(Move::Purged.by_service());
    }

    #[test]
    fn a_revision_cancels_a_waiting_job_and_notes_a_failed_one() {
        assert_eq!(
            JobState::sources_of(Move::Revised),
            [
                JobState::AwaitingApproval,
                JobState::Invalid,
                JobState::Failed
            ]
        );
        assert_eq!(
            next(JobState::AwaitingApproval, Move::Revised),
            Some(JobState::Cancelled)
        );
        assert!(!Move::Revised.by_service());
        assert!(JobState::Failed.is_terminal() && JobState::Invalid.is_terminal());
    }

    #[test]
    fn expiry_is_allowed_only_at_the_gate() {
        assert_eq!(
            JobState::sources_of(Move::Expire),
            [JobState::AwaitingApproval]
        );
    }
}
