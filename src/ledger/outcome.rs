//! The moves the service makes by itself: what a validation, a commit, a
//! rollback or the clock found, turned into the job's next version. Each
//! asks the state table ([`super::next`]); a move the table does not allow
//! from the job's state gives `None`, and nothing is recorded.

use chrono::{DateTime, Utc};

use super::{
    ConflictRow, Counts, Decision, DecisionKind, Gate, GateAction, Job, JobProblem, Move, OnError,
    ProblemCode, ReferringRow, Warning, next,
};

/// What a validation run found.
#[derive(Debug, Clone)]
pub enum Validation {
    /// The file could not be read as rows of the module.
    FileFailure { code: ProblemCode, message: String },
    /// Every row was checked: the preview's counts and the job's warnings.
    Checked {
        counts: Counts,
        warnings: Vec<Warning>,
    },
}

/// Rows a commit or a rollback found changed: the first ones listed, all counted.
#[derive(Debug, Clone, Default)]
pub struct Conflicts {
    pub rows: Vec<ConflictRow>,
    pub total: usize,
    /// A rollback's: the first rows of other modules that name a key it
    /// would delete, over references with `on_missing = "error"`.
    pub referring: Vec<ReferringRow>,
}

/// How a commit transaction ended.
#[derive(Debug, Clone)]
pub enum Commit {
    Written,
    /// Previewed rows changed since the preview; nothing was written.
    Stale(Conflicts),
    /// The module's rules changed since the job was validated (API.md
    /// section 14): the version it was validated with, the one in force.
    StaleRules {
        validated: u32,
        in_force: u32,
    },
    /// The database refused; nothing was written.
    Failed(String),
}

/// How a rollback transaction ended.
#[derive(Debug, Clone)]
pub enum Rollback {
    Undone,
    /// Rows changed since the commit; nothing was undone.
    Conflict(Conflicts),
}

/// The job after `event`, if the table allows it from the job's state.
fn moved(job: &Job, event: Move, now: DateTime<Utc>) -> Option<Job> {
    let mut after = job.clone();
    after.state = next(job.state, event)?;
    after.updated_at = now;
    Some(after)
}

/// The move that ends a validation, and the job after it. Row errors fail
/// the job when it was uploaded with `on_error=fail`; otherwise the preview
/// goes to the gate, asked for by the submitter.
pub fn validated(job: &Job, found: Validation, now: DateTime<Utc>) -> Option<(Move, Job)> {
    match found {
        Validation::FileFailure { code, message } => {
            let mut after = moved(job, Move::FileFailure, now)?;
            after.problem = Some(JobProblem::new(
                code,
                "The file cannot be imported",
                message,
            ));
            Some((Move::FileFailure, after))
        }
        Validation::Checked { counts, warnings } => {
            let errors = counts.errors;
            let event = if errors > 0 && job.on_error == OnError::Fail {
                Move::RowErrors
            } else {
                Move::Checked
            };
            let mut after = moved(job, event, now)?;
            after.counts = counts;
            after.warnings = warnings;
            if event == Move::RowErrors {
                after.problem = Some(JobProblem::new(
                    ProblemCode::RowErrors,
                    "Rows have errors",
                    match errors {
                        1 => "1 row has errors; fix it or upload with on_error=skip".to_string(),
                        n => format!("{n} rows have errors; fix them or upload with on_error=skip"),
                    },
                ));
            } else {
                after.gate = Some(Gate {
                    action: GateAction::Commit,
                    requested_at: now,
                    requested_by: job.submitter.clone(),
                });
            }
            Some((event, after))
        }
    }
}

/// The move that ends a commit, and the job after it.
pub fn committed(job: &Job, result: Commit, now: DateTime<Utc>) -> Option<(Move, Job)> {
    let (event, problem) = match result {
        Commit::Written => (Move::Written, None),
        Commit::Stale(c) => (
            Move::CommitFailed,
            Some(JobProblem {
                rows: Some(c.rows),
                ..JobProblem::new(
                    ProblemCode::StalePreview,
                    "The table changed since the preview",
                    format!(
                        "{} previewed rows changed in {} since the preview; nothing was written. \
                         Upload the file again to see a fresh preview.",
                        c.total, job.table
                    ),
                )
            }),
        ),
        Commit::StaleRules {
            validated,
            in_force,
        } => (
            Move::CommitFailed,
            Some(JobProblem::new(
                ProblemCode::StaleRules,
                "The module's rules changed since the preview",
                format!(
                    "the job was validated with version {validated} of the rules of {}; \
                     version {in_force} is in force now, so nothing was written. \
                     Revise the job to validate it again under the rules in force.",
                    job.module.as_ref().map_or("its modules", |m| m.as_str())
                ),
            )),
        ),
        Commit::Failed(why) => (
            Move::CommitFailed,
            Some(JobProblem::new(
                ProblemCode::DatabaseError,
                "The commit failed",
                format!("nothing was written: {why}"),
            )),
        ),
    };
    let mut after = moved(job, event, now)?;
    after.problem = problem;
    if event == Move::Written {
        after.committed_at = Some(now);
    }
    Some((event, after))
}

/// The move that ends a rollback, and the job after it. A refused rollback
/// leaves the job committed with the conflict as its problem.
pub fn rolled_back(job: &Job, result: Rollback, now: DateTime<Utc>) -> Option<(Move, Job)> {
    let (event, problem) = match result {
        Rollback::Undone => (Move::Undone, None),
        Rollback::Conflict(c) => (Move::RollbackConflict, Some(rollback_conflict(job, c))),
    };
    let mut after = moved(job, event, now)?;
    after.problem = problem;
    Some((event, after))
}

/// Why a rollback was refused: rows changed since the commit, or keys it
/// would delete that rows of other modules name (those rows listed).
fn rollback_conflict(job: &Job, c: Conflicts) -> JobProblem {
    let detail = if c.referring.is_empty() {
        format!(
            "{} rows of {} changed since the commit; nothing was undone.",
            c.total, job.table
        )
    } else {
        let mut modules: Vec<&str> = c.referring.iter().map(|r| r.module.as_str()).collect();
        modules.dedup();
        format!(
            "{} rows of {} changed since the commit or hold keys that rows of {} name \
             (on_missing = error; the first {} such rows are in referring); nothing was undone.",
            c.total,
            job.table,
            modules.join(", "),
            c.referring.len()
        )
    };
    JobProblem {
        rows: Some(c.rows),
        referring: (!c.referring.is_empty()).then_some(c.referring),
        ..JobProblem::new(
            ProblemCode::RollbackConflict,
            "Rows changed since the commit",
            detail,
        )
    }
}

/// The move that ends work which failed the same way `attempts` times:
/// the job leaves its work state with the error as its problem (nothing
/// was written: each attempt's transaction was rolled back).
pub fn gave_up(job: &Job, error: &str, attempts: i64, now: DateTime<Utc>) -> Option<Job> {
    let mut after = moved(job, Move::GaveUp, now)?;
    let (what, outcome) = work_of(job);
    after.problem = Some(JobProblem::new(
        ProblemCode::WorkFailed,
        "The service could not finish this job",
        format!(
            "the {what} failed {attempts} times with the same error, so it was stopped ({outcome}): {error}"
        ),
    ));
    Some(after)
}

/// The move that ends work the database's full disk stopped `attempts`
/// times: like [`gave_up`], with the problem `no_space` (API.md section 6).
pub fn out_of_space(job: &Job, attempts: i64, now: DateTime<Utc>) -> Option<Job> {
    let mut after = moved(job, Move::GaveUp, now)?;
    let (what, outcome) = work_of(job);
    after.problem = Some(JobProblem::new(
        ProblemCode::NoSpace,
        "The database ran out of disk space",
        format!(
            "the {what} found the database's disk full {attempts} times, waiting longer each \
             time, so it was stopped ({outcome}); free space and try again"
        ),
    ));
    Some(after)
}

/// The work a job in a work state was doing, and what its stop left.
fn work_of(job: &Job) -> (&'static str, &'static str) {
    match job.state {
        super::JobState::Validating => ("validation", "nothing was staged"),
        super::JobState::Committing => ("commit", "nothing was written"),
        _ => ("rollback", "nothing was undone; the import stays committed"),
    }
}

/// The note that the process working on a job stopped and its restart took
/// the job back; the job stays where it was, its work starts again.
pub fn interrupted(job: &Job, now: DateTime<Utc>) -> Option<Job> {
    moved(job, Move::Interrupted, now)
}

/// Why a job's staged rows and stored file are purged (API.md section 10).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PurgeReason {
    /// It ended without a commit longer than the retention time ago.
    Retention,
    /// It was committed and its rollback window closed.
    RollbackWindow,
}

impl PurgeReason {
    pub fn as_str(self) -> &'static str {
        match self {
            PurgeReason::Retention => "retention",
            PurgeReason::RollbackWindow => "rollback_window",
        }
    }
}

/// Whether `job` is due for a purge at `now`, and why: it ended without a
/// commit and has not moved for longer than `retention`, or it is
/// committed and its rollback window (`window` after the commit) closed.
/// Never twice.
pub fn purge_due(
    job: &Job,
    retention: chrono::Duration,
    window: chrono::Duration,
    now: DateTime<Utc>,
) -> Option<PurgeReason> {
    if job.purged_at.is_some() || next(job.state, Move::Purged).is_none() {
        return None;
    }
    if super::ENDED_WITHOUT_COMMIT.contains(&job.state) {
        (now - job.updated_at > retention).then_some(PurgeReason::Retention)
    } else {
        super::gate::rollback_closed(job, window, now).map(|_| PurgeReason::RollbackWindow)
    }
}

/// The note that a job's staged rows and stored file were purged; the job
/// stays where it was.
pub fn purged(job: &Job, now: DateTime<Utc>) -> Option<Job> {
    let mut after = moved(job, Move::Purged, now)?;
    after.purged_at = Some(now);
    Some(after)
}

/// The job after its approval time limit passed without a decision, if it
/// is still waiting at the gate.
pub fn expired(job: &Job, now: DateTime<Utc>) -> Option<Job> {
    let mut after = moved(job, Move::Expire, now)?;
    after.decisions.push(Decision {
        action: GateAction::Commit,
        decision: DecisionKind::Expired,
        by: None,
        at: now,
        comment: None,
        issued_by: None,
    });
    Some(after)
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::ingest::Format;
    use crate::ledger::{FileInfo, JobOptions, JobState, Mode, NewJob};

    pub(crate) fn job(state: JobState, on_error: OnError) -> Job {
        let at = DateTime::from_timestamp_millis(1_700_000_000_000).unwrap();
        let new = NewJob {
            module: Some(crate::ids::ModuleKey::from_stored("customers")),
            table: "uc_scrm_customers".into(),
            mode: Mode::Insert,
            on_error,
            options: JobOptions::default(),
            simulated: false,
            file: FileInfo {
                name: None,
                format: Format::Csv,
                bytes: 1,
                sha256: String::new(),
            },
            submitter: crate::ids::KeyId::from_stored("key_sub"),
            mapping_applied: None,
        };
        Job {
            id: crate::ids::JobId::from_stored("job_1"),
            state,
            ..Job::start(new, at)
        }
    }

    fn counts(errors: i64) -> Counts {
        Counts {
            rows: 10,
            valid: 10 - errors,
            errors,
            insert: 10 - errors,
            ..Counts::default()
        }
    }

    fn now() -> DateTime<Utc> {
        DateTime::from_timestamp_millis(1_700_000_100_000).unwrap()
    }

    #[test]
    fn row_errors_fail_a_job_uploaded_with_on_error_fail() {
        let j = job(JobState::Validating, OnError::Fail);
        let found = Validation::Checked {
            counts: counts(2),
            warnings: vec![],
        };
        let (event, after) = validated(&j, found, now()).unwrap();
        assert_eq!(event, Move::RowErrors);
        assert_eq!(after.state, JobState::Failed);
        assert_eq!(after.problem.unwrap().code, ProblemCode::RowErrors);
        assert!(after.gate.is_none());
    }

    #[test]
    fn with_on_error_skip_the_valid_rows_go_to_the_gate() {
        let j = job(JobState::Validating, OnError::Skip);
        let found = Validation::Checked {
            counts: counts(2),
            warnings: vec![],
        };
        let (event, after) = validated(&j, found, now()).unwrap();
        assert_eq!(event, Move::Checked);
        assert_eq!(after.state, JobState::AwaitingApproval);
        let gate = after.gate.unwrap();
        assert_eq!(gate.action, GateAction::Commit);
        assert_eq!(gate.requested_by, "key_sub", "the submitter asks");
        assert_eq!(after.counts.errors, 2);
    }

    #[test]
    fn a_file_failure_makes_the_job_invalid_with_its_code() {
        let j = job(JobState::Validating, OnError::Fail);
        let found = Validation::FileFailure {
            code: ProblemCode::from(crate::ingest::FileCode::MissingColumns),
            message: "wa_number is missing".into(),
        };
        let (_, after) = validated(&j, found, now()).unwrap();
        assert_eq!(after.state, JobState::Invalid);
        assert_eq!(after.problem.unwrap().code, ProblemCode::MissingColumns);
    }

    #[test]
    fn only_the_table_moves_a_job() {
        // A validation that ends after someone moved the job records nothing.
        let j = job(JobState::Cancelled, OnError::Fail);
        let found = Validation::Checked {
            counts: counts(0),
            warnings: vec![],
        };
        assert!(validated(&j, found, now()).is_none());
        assert!(committed(&j, Commit::Written, now()).is_none());
        assert!(rolled_back(&j, Rollback::Undone, now()).is_none());
        assert!(expired(&job(JobState::Committed, OnError::Fail), now()).is_none());
    }

    #[test]
    fn a_stale_commit_fails_listing_the_rows_and_a_refused_rollback_stays_committed() {
        let conflicts = Conflicts {
            rows: vec![ConflictRow {
                part: None,
                row: 2,
                key: serde_json::json!("0812"),
                reason: "changed".into(),
            }],
            total: 7,
            referring: vec![],
        };
        let (event, after) = committed(
            &job(JobState::Committing, OnError::Fail),
            Commit::Stale(conflicts.clone()),
            now(),
        )
        .unwrap();
        assert_eq!((event, after.state), (Move::CommitFailed, JobState::Failed));
        let p = after.problem.unwrap();
        assert_eq!(p.code, ProblemCode::StalePreview);
        assert!(p.detail.starts_with("7 previewed rows"));
        assert_eq!(p.rows.unwrap().len(), 1);
        let (event, after) = rolled_back(
            &job(JobState::RollingBack, OnError::Fail),
            Rollback::Conflict(conflicts),
            now(),
        )
        .unwrap();
        assert_eq!(event, Move::RollbackConflict);
        assert_eq!(after.state, JobState::Committed);
        assert_eq!(after.problem.unwrap().code, ProblemCode::RollbackConflict);
    }

    #[test]
    fn a_full_disk_ends_the_work_with_no_space() {
        let after = out_of_space(&job(JobState::Committing, OnError::Fail), 3, now()).unwrap();
        assert_eq!(after.state, JobState::Failed);
        let p = after.problem.unwrap();
        assert_eq!(p.code, ProblemCode::NoSpace);
        assert!(p.detail.contains("full 3 times"), "{}", p.detail);
        assert!(p.detail.contains("nothing was written"), "{}", p.detail);
    }

    #[test]
    fn work_given_up_names_the_error_and_a_rollback_stays_committed() {
        let after = gave_up(&job(JobState::Validating, OnError::Fail), "boom", 5, now()).unwrap();
        assert_eq!(after.state, JobState::Failed);
        let p = after.problem.unwrap();
        assert_eq!(p.code, ProblemCode::WorkFailed);
        assert!(
            p.detail.contains("failed 5 times") && p.detail.ends_with("boom"),
            "{}",
            p.detail
        );
        let after = gave_up(&job(JobState::RollingBack, OnError::Fail), "x", 5, now()).unwrap();
        assert_eq!(after.state, JobState::Committed);
        assert!(gave_up(&job(JobState::Committed, OnError::Fail), "x", 5, now()).is_none());
    }

    #[test]
    fn expiry_records_a_decision_nobody_took() {
        let after = expired(&job(JobState::AwaitingApproval, OnError::Fail), now()).unwrap();
        assert_eq!(after.state, JobState::Expired);
        let d = &after.decisions[0];
        assert_eq!((d.decision, d.by.as_ref()), (DecisionKind::Expired, None));
    }
}
