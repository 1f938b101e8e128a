//! Revisions (API.md section 11): which jobs a person may revise, what the
//! revised job records, and how a revision's changes add up over the jobs
//! before it. Pure rules, like the gate's.

use std::collections::{BTreeMap, BTreeSet};

use chrono::{DateTime, Utc};

use super::gate::action_of;
use super::{Decision, DecisionKind, Fix, Job, JobState, Move, ProblemCode, Revision, next};
use crate::ids::JobId;
use crate::keys::KeyRecord;

/// What a person asks a revision to change, as received (checked by the
/// service against the module and the file).
#[derive(Debug, Clone, Default)]
pub struct Changes {
    pub mapping: BTreeMap<String, Option<String>>,
    pub fixes: Vec<Fix>,
    pub exclude: Vec<u64>,
    pub comment: Option<String>,
    /// Save the mapping in force for the module under the file's headers.
    pub remember_mapping: bool,
}

/// Why a job cannot be revised: a sentence that says what to do instead.
pub fn refusal(job: &Job) -> Option<String> {
    if let Some(newer) = &job.revised_as {
        return Some(format!(
            "{} was already revised as {newer}; revise that job instead",
            job.id
        ));
    }
    let code = job.problem.as_ref().map(|p| p.code);
    let fits = match job.state {
        JobState::AwaitingApproval => true,
        JobState::Invalid => matches!(
            code,
            Some(
                ProblemCode::MissingColumns
                    | ProblemCode::UnknownColumns
                    | ProblemCode::DuplicateColumns
            )
        ),
        JobState::Failed => {
            matches!(
                code,
                Some(ProblemCode::RowErrors | ProblemCode::StalePreview | ProblemCode::StaleRules)
            )
        }
        _ => false,
    };
    if fits && job.purged_at.is_none() {
        return None;
    }
    let why = match (job.state, code) {
        _ if job.purged_at.is_some() => {
            "its file and rows were purged; upload the file again".into()
        }
        (JobState::Invalid | JobState::Failed, Some(code)) => format!(
            "it is {} with {}, which a mapping or fixes cannot mend; upload a corrected file",
            job.state.as_str(),
            code.as_str()
        ),
        (state, _) => format!(
            "it is {}; only a job awaiting approval, failed with row errors or a stale preview, \
             or invalid for its header can be revised",
            state.as_str()
        ),
    };
    Some(format!("{} cannot be revised: {why}", job.id))
}

/// The revision of `job` that `changes` make: the job's own revision (if
/// it is one) with the changes on top. Fixes replace earlier fixes of the
/// same cell; exclusions add up.
pub fn combine(job: &Job, changes: Changes, by: &KeyRecord) -> Revision {
    let (number, base_fixes, base_exclude, mut revisers) = job
        .revision
        .clone()
        .map(|r| (r.number, r.fixes, r.exclude, r.revisers))
        .unwrap_or_default();
    // An upload read with a saved mapping hands it on like a revision.
    let mut mapping = job.mapping_in_force();
    mapping.extend(changes.mapping);
    let mut fixes: BTreeMap<(u64, String), Fix> = base_fixes
        .into_iter()
        .map(|f| ((f.row, f.column.clone()), f))
        .collect();
    for mut f in changes.fixes {
        // What the file said is the same whoever fixed the cell before.
        f.was = fixes
            .get(&(f.row, f.column.clone()))
            .and_then(|old| old.was.clone());
        fixes.insert((f.row, f.column.clone()), f);
    }
    let exclude: BTreeSet<u64> = base_exclude.into_iter().chain(changes.exclude).collect();
    if !revisers.contains(&by.id) {
        revisers.push(by.id.clone());
    }
    Revision {
        number: number + 1,
        mapping,
        fixes: fixes.into_values().collect(),
        exclude: exclude.into_iter().collect(),
        by: by.id.clone(),
        revisers,
        comment: changes.comment,
    }
}

/// The revised job after the revision: a job waiting at the gate is
/// cancelled (its request ends, "revised as …"); a failed or invalid one
/// stays as it is. Either way it names the revision.
pub fn revised(job: &Job, revision_id: &JobId, by: &KeyRecord, now: DateTime<Utc>) -> Job {
    let mut after = job.clone();
    after.state = next(job.state, Move::Revised).unwrap_or(job.state);
    after.updated_at = now;
    after.revised_as = Some(revision_id.clone());
    if job.state == JobState::AwaitingApproval {
        after.decisions.push(Decision {
            action: action_of(job.state),
            decision: DecisionKind::Cancelled,
            by: Some(by.id.clone()),
            at: now,
            comment: Some(format!("revised as {revision_id}")),
            issued_by: by.issued_by.clone(),
        });
    }
    after
}

/// Whether `job`, a revision of `parent`, can be validated from the rows
/// `parent` staged instead of from the file: it changes only fixes and
/// exclusions (the same mapping), and `parent` was read whole against a
/// table the revision may trust as far as `parent` did (row errors, or a
/// request cancelled by this revision). A stale preview is read again:
/// the table moved under every row, not only the touched ones. So is a
/// parent checked under another version of the module's rules than the
/// revision's: its staged rows stand for that version only.
pub fn incremental(job: &Job, parent: &Job) -> bool {
    let (Some(own), Some(of)) = (&job.revision, &job.revision_of) else {
        return false;
    };
    let same_mapping = parent.mapping_in_force() == own.mapping;
    let read_whole = match parent.state {
        JobState::Failed => parent.problem.as_ref().map(|p| p.code) == Some(ProblemCode::RowErrors),
        JobState::Cancelled => true,
        _ => false,
    };
    *of == parent.id
        && parent.revised_as.as_ref() == Some(&job.id)
        && same_mapping
        && read_whole
        && parent.counts.rows > 0
        && parent.purged_at.is_none()
        && parent.rules_version.unwrap_or(1) == job.rules_version.unwrap_or(1)
}

/// The rows a revision changes beyond its parent's: cells fixed anew or
/// to another value, rows newly left out. Ascending.
pub fn touched(own: &Revision, parent: Option<&Revision>) -> Vec<u64> {
    let before_fixes = parent.map(|p| p.fixes.as_slice()).unwrap_or(&[]);
    let before_out = parent.map(|p| p.exclude.as_slice()).unwrap_or(&[]);
    let fixed = own.fixes.iter().filter(|f| {
        !before_fixes
            .iter()
            .any(|b| b.row == f.row && b.column == f.column && b.value == f.value)
    });
    let rows: BTreeSet<u64> = fixed
        .map(|f| f.row)
        .chain(
            own.exclude
                .iter()
                .copied()
                .filter(|r| !before_out.contains(r)),
        )
        .collect();
    rows.into_iter().collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::keys::Role;
    use crate::ledger::OnError;
    use crate::ledger::outcome::tests::job;

    fn key(id: &str) -> KeyRecord {
        KeyRecord {
            id: crate::ids::KeyId::from_stored(id),
            name: "Dewi".into(),
            role: Role::Submitter,
            modules: vec!["*".into()],
            created_at: Utc::now(),
            expires_at: None,
            revoked_at: None,
            person_id: format!("per_{id}"),
            email: None,
            issued_by: None,
            issuer_person: None,
        }
    }

    fn fix(row: u64, column: &str, value: &str) -> Fix {
        Fix {
            row,
            column: column.into(),
            value: Some(value.into()),
            was: None,
        }
    }

    #[test]
    fn only_the_states_the_contract_names_can_be_revised() {
        let waiting = job(JobState::AwaitingApproval, OnError::Fail);
        assert_eq!(refusal(&waiting), None);
        for state in [
            JobState::Committed,
            JobState::Validating,
            JobState::Rejected,
        ] {
            let j = job(state, OnError::Fail);
            assert!(refusal(&j).unwrap().contains(state.as_str()));
        }
        let mut failed = job(JobState::Failed, OnError::Fail);
        failed.problem = Some(crate::ledger::JobProblem::new(
            ProblemCode::DatabaseError,
            "t",
            "d",
        ));
        assert!(refusal(&failed).unwrap().contains("database_error"));
        failed.problem.as_mut().unwrap().code = ProblemCode::RowErrors;
        assert_eq!(refusal(&failed), None);
        failed.revised_as = Some(JobId::from_stored("job_2"));
        assert!(
            refusal(&failed)
                .unwrap()
                .contains("revise that job instead")
        );
    }

    #[test]
    fn a_revision_inherits_and_applies_its_own_changes_on_top() {
        let mut j = job(JobState::Failed, OnError::Fail);
        let first = combine(
            &j,
            Changes {
                mapping: [("Nama".to_string(), Some("customer_name".to_string()))].into(),
                fixes: vec![fix(4, "qty", "3"), fix(9, "qty", "1")],
                exclude: vec![7],
                ..Changes::default()
            },
            &key("key_a"),
        );
        assert_eq!(first.number, 1);
        let mut with_was = first.clone();
        with_was.fixes[0].was = Some("tiga".into());
        j.revision = Some(with_was);
        let second = combine(
            &j,
            Changes {
                mapping: [("Catatan".to_string(), None)].into(),
                fixes: vec![fix(4, "qty", "30")],
                exclude: vec![12, 7],
                comment: Some("again".into()),
                ..Changes::default()
            },
            &key("key_b"),
        );
        assert_eq!(second.number, 2);
        assert_eq!(second.mapping.len(), 2);
        assert_eq!(second.fixes.len(), 2);
        assert_eq!(second.fixes[0].value.as_deref(), Some("30"));
        assert_eq!(
            second.fixes[0].was.as_deref(),
            Some("tiga"),
            "the file's text stays"
        );
        assert_eq!(second.exclude, [7, 12]);
        assert_eq!(second.revisers, ["key_a", "key_b"]);
        assert_eq!(second.by, "key_b");
    }

    #[test]
    fn only_fixes_and_exclusions_over_rows_read_whole_revalidate_in_place() {
        let mut parent = job(JobState::Failed, OnError::Fail);
        parent.problem = Some(crate::ledger::JobProblem::new(
            ProblemCode::RowErrors,
            "t",
            "d",
        ));
        parent.counts.rows = 10;
        let own = combine(
            &parent,
            Changes {
                fixes: vec![fix(4, "qty", "3")],
                ..Changes::default()
            },
            &key("key_a"),
        );
        let mut revision = job(JobState::Validating, OnError::Fail);
        revision.revision_of = Some(parent.id.clone());
        revision.revision = Some(own.clone());
        parent.revised_as = Some(revision.id.clone());
        assert!(incremental(&revision, &parent));
        assert_eq!(touched(&own, None), [4]);

        let mut mapped = revision.clone();
        mapped.revision.as_mut().unwrap().mapping = [("Qty".to_string(), None)].into();
        assert!(
            !incremental(&mapped, &parent),
            "a new mapping reads the file"
        );
        parent.problem.as_mut().unwrap().code = ProblemCode::StalePreview;
        assert!(
            !incremental(&revision, &parent),
            "a stale preview reads it too"
        );
        parent.problem.as_mut().unwrap().code = ProblemCode::RowErrors;
        let mut newer_rules = revision.clone();
        newer_rules.rules_version = Some(2);
        assert!(
            !incremental(&newer_rules, &parent),
            "rows checked under other rules read it too"
        );
        parent.purged_at = Some(Utc::now());
        assert!(!incremental(&revision, &parent));

        let next = combine(
            &revision,
            Changes {
                fixes: vec![fix(4, "qty", "3"), fix(6, "qty", "2")],
                exclude: vec![9],
                ..Changes::default()
            },
            &key("key_a"),
        );
        assert_eq!(touched(&next, Some(&own)), [6, 9], "row 4 is as it was");
    }

    #[test]
    fn a_waiting_job_is_cancelled_by_its_revision_and_a_failed_one_stays() {
        let now = Utc::now();
        let waiting = job(JobState::AwaitingApproval, OnError::Fail);
        let after = revised(&waiting, &JobId::from_stored("job_new"), &key("key_a"), now);
        assert_eq!(after.state, JobState::Cancelled);
        assert_eq!(
            after.revised_as.as_ref().map(JobId::as_str),
            Some("job_new")
        );
        let last = after.decisions.last().unwrap();
        assert_eq!(last.decision, DecisionKind::Cancelled);
        assert_eq!(last.comment.as_deref(), Some("revised as job_new"));
        let failed = job(JobState::Failed, OnError::Fail);
        let after = revised(&failed, &JobId::from_stored("job_new"), &key("key_a"), now);
        assert_eq!(after.state, JobState::Failed);
        assert_eq!(after.decisions.len(), failed.decisions.len());
    }
}
