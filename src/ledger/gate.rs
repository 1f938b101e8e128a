//! The Human-Gate: who may make which move on a job, and what the move
//! records.
//!
//! Four-eyes, by person (API.md section 1): no key of a person who
//! uploaded, revised or saved the mapping of any job of a revision chain,
//! or who asked for the job's rollback, may approve or reject its gate
//! request; nor a key such a person issued after the chain's first upload,
//! directly or through keys issued after it (a fresh key, or a chain of
//! them, minted to approve one's own upload). A server option relaxes this
//! for single-person demos.

use chrono::{DateTime, Utc};

use super::{Decision, DecisionKind, Gate, GateAction, Job, JobState, Move, next};
use crate::ids::KeyId;
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

/// Whom the four-eyes rule bars from deciding a job's gate request.
#[derive(Debug, Clone, Default)]
pub struct FourEyes {
    /// The keys [`parties`] names for the job's revision chain.
    pub parties: Vec<KeyId>,
    /// The persons behind those keys.
    pub barred: Vec<String>,
    /// When the first job of the chain was uploaded: a barred person's
    /// keys issued after it are barred too, and so are the keys those
    /// issued after it.
    pub uploaded_at: DateTime<Utc>,
    /// The keys that issued the deciding key, nearest first: its issuer,
    /// that key's issuer, and so on up to a key nobody issued.
    pub issuers: Vec<KeyRecord>,
    /// The server option for single-person demos.
    pub relaxed: bool,
}

/// The keys whose persons may not decide the gate request of `chain[0]`:
/// everyone who uploaded, revised (API.md section 11) or saved the mapping
/// of a job of its revision chain (`chain`: the job, then the job it
/// revises, and so on to the upload), and the requester of its gate action.
pub fn parties(chain: &[Job]) -> Vec<KeyId> {
    let mut keys: Vec<KeyId> = Vec::new();
    let requester = chain
        .first()
        .and_then(|j| j.gate.as_ref())
        .map(|g| &g.requested_by);
    let each = chain.iter().flat_map(|job| {
        let revisers = job.revision.iter().flat_map(|r| &r.revisers);
        let saver = job
            .mapping_applied
            .iter()
            .filter_map(|m| m.saved_by.as_ref());
        std::iter::once(&job.submitter).chain(revisers).chain(saver)
    });
    for k in each.chain(requester) {
        if !keys.contains(k) {
            keys.push(k.clone());
        }
    }
    keys
}

/// Whether the four-eyes rule keeps `caller` from deciding.
pub fn barred(caller: &KeyRecord, rule: &FourEyes) -> bool {
    if rule.relaxed {
        return false;
    }
    rule.parties.contains(&caller.id)
        || rule.barred.contains(&caller.person_id)
        || minted_after_upload(caller, rule)
}

/// Whether a barred person issued `caller` after the upload, directly or
/// through keys that were themselves issued after it. A key issued before
/// the upload belongs to someone who held it already: what it issued later
/// is that person's doing, and the walk ends there.
fn minted_after_upload(caller: &KeyRecord, rule: &FourEyes) -> bool {
    let mut key = caller;
    let mut issuers = rule.issuers.iter();
    while key.created_at > rule.uploaded_at {
        if key
            .issuer_person
            .as_ref()
            .is_some_and(|p| rule.barred.contains(p))
        {
            return true;
        }
        match issuers.next() {
            Some(issuer) => key = issuer,
            None => return false,
        }
    }
    false
}

/// The moves a person makes on a job.
pub const PERSONS_MOVES: [Move; 4] = [Move::Approve, Move::Reject, Move::Cancel, Move::Rollback];

/// Checks a person's move and gives the state it leads to.
pub fn authorize(
    job: &Job,
    event: Move,
    caller: &KeyRecord,
    rule: &FourEyes,
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
            if barred(caller, rule) {
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

/// When the rollback window of a committed job closed, if it has by `now`:
/// `window` after the commit (API.md section 10, `rollback_days`). A
/// rollback is refused from then on, and the job's staged rows — what a
/// rollback restores from — are purged. A purged job's window is closed
/// whatever the setting says now.
pub fn rollback_closed(
    job: &Job,
    window: chrono::Duration,
    now: DateTime<Utc>,
) -> Option<DateTime<Utc>> {
    let closes = job.committed_at.map(|c| c + window);
    match (closes, job.purged_at) {
        (Some(c), _) if now >= c => Some(c),
        (_, purged) => purged,
    }
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
    rule: &FourEyes,
    now: DateTime<Utc>,
) -> Result<Job, Refusal> {
    let to = authorize(job, event, caller, rule)?;
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
        issued_by: caller.issued_by.clone(),
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
            id: KeyId::from_stored(id),
            name: "Budi Santoso".into(),
            role,
            modules: vec!["*".into()],
            created_at: chrono::Utc::now(),
            expires_at: None,
            revoked_at: None,
            person_id: format!("per_{id}"),
            email: None,
            issued_by: None,
            issuer_person: None,
        }
    }

    /// The rule as the service makes it: each test key its own person.
    fn rule(job: &Job, relaxed: bool) -> FourEyes {
        let parties = parties(std::slice::from_ref(job));
        FourEyes {
            barred: parties.iter().map(|k| format!("per_{k}")).collect(),
            parties,
            uploaded_at: job.created_at,
            issuers: vec![],
            relaxed,
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
                authorize(&waiting(), m, &submitter, &rule(&waiting(), false)),
                Err(Refusal::SelfApproval)
            );
        }
        assert_eq!(
            authorize(
                &waiting(),
                Move::Approve,
                &submitter,
                &rule(&waiting(), true)
            ),
            Ok(JobState::Committing),
            "the demo option relaxes it"
        );
    }

    #[test]
    fn another_key_of_the_same_person_or_one_they_minted_after_the_upload_may_not_decide() {
        let job = waiting();
        let four_eyes = rule(&job, false);
        let mut second = key("key_second", Role::Approver);
        second.person_id = "per_key_sub".into();
        assert_eq!(
            authorize(&job, Move::Approve, &second, &four_eyes),
            Err(Refusal::SelfApproval)
        );
        let mut minted = key("key_minted", Role::Approver);
        minted.issuer_person = Some("per_key_sub".into());
        minted.created_at = job.created_at + chrono::Duration::seconds(1);
        assert_eq!(
            authorize(&job, Move::Reject, &minted, &four_eyes),
            Err(Refusal::SelfApproval)
        );
        minted.created_at = job.created_at - chrono::Duration::seconds(1);
        assert_eq!(
            authorize(&job, Move::Approve, &minted, &four_eyes),
            Ok(JobState::Committing),
            "a key issued before the upload is another person's"
        );
    }

    #[test]
    fn a_chain_of_keys_minted_after_the_upload_may_not_decide() {
        let job = waiting();
        let after = |s| job.created_at + chrono::Duration::seconds(s);
        // The submitter mints k1 after the upload; k1 mints k2.
        let mut k1 = key("key_k1", Role::Admin);
        k1.issued_by = Some(KeyId::from_stored("key_sub"));
        k1.issuer_person = Some("per_key_sub".into());
        k1.created_at = after(1);
        let mut k2 = key("key_k2", Role::Approver);
        k2.issued_by = Some(KeyId::from_stored("key_k1"));
        k2.issuer_person = Some("per_key_k1".into());
        k2.created_at = after(2);
        let mut four_eyes = rule(&job, false);
        four_eyes.issuers = vec![k1.clone()];
        assert_eq!(
            authorize(&job, Move::Approve, &k2, &four_eyes),
            Err(Refusal::SelfApproval)
        );
        // k1 was someone else's before the upload: what it mints is theirs.
        k1.created_at = job.created_at - chrono::Duration::seconds(1);
        four_eyes.issuers = vec![k1];
        assert_eq!(
            authorize(&job, Move::Approve, &k2, &four_eyes),
            Ok(JobState::Committing)
        );
    }

    #[test]
    fn every_uploader_reviser_and_mapping_saver_of_a_chain_is_a_party() {
        let mut upload = waiting();
        upload.submitter = KeyId::from_stored("key_up");
        upload.mapping_applied = Some(crate::ledger::AppliedMapping {
            id: "map_1".into(),
            mapping: Default::default(),
            saved_by: Some(KeyId::from_stored("key_saver")),
        });
        let mut revision = waiting();
        revision.submitter = KeyId::from_stored("key_up");
        revision.revision = Some(crate::ledger::Revision {
            number: 1,
            mapping: Default::default(),
            fixes: vec![],
            exclude: vec![],
            by: KeyId::from_stored("key_fixer"),
            revisers: vec![KeyId::from_stored("key_fixer")],
            comment: None,
        });
        revision.gate.as_mut().unwrap().requested_by = KeyId::from_stored("key_up");
        assert_eq!(
            parties(&[revision, upload]),
            ["key_up", "key_fixer", "key_saver"]
        );
    }

    #[test]
    fn a_submitter_key_may_not_decide() {
        let other = key("key_other", Role::Submitter);
        assert!(matches!(
            authorize(&waiting(), Move::Approve, &other, &rule(&waiting(), false)),
            Err(Refusal::Forbidden(_))
        ));
    }

    #[test]
    fn only_the_submitter_or_an_admin_cancels() {
        let approver = key("key_apr", Role::Approver);
        assert!(matches!(
            authorize(
                &waiting(),
                Move::Cancel,
                &approver,
                &rule(&waiting(), false)
            ),
            Err(Refusal::Forbidden(_))
        ));
        let admin = key("key_adm", Role::Admin);
        assert_eq!(
            authorize(&waiting(), Move::Cancel, &admin, &rule(&waiting(), false)),
            Ok(JobState::Cancelled)
        );
        let submitter = key("key_sub", Role::Submitter);
        assert_eq!(
            authorize(
                &waiting(),
                Move::Cancel,
                &submitter,
                &rule(&waiting(), false)
            ),
            Ok(JobState::Cancelled)
        );
    }

    #[test]
    fn moves_outside_the_table_are_an_invalid_state() {
        let approver = key("key_apr", Role::Approver);
        let committed = job(JobState::Committed, OnError::Fail);
        assert_eq!(
            authorize(
                &committed,
                Move::Approve,
                &approver,
                &rule(&committed, false)
            ),
            Err(Refusal::InvalidState(JobState::Committed))
        );
        assert!(matches!(
            authorize(
                &waiting(),
                Move::Written,
                &approver,
                &rule(&waiting(), false)
            ),
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
            &rule(&committed, false),
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
            apply(
                &pending,
                Move::Approve,
                &approver,
                None,
                &rule(&pending, false),
                now
            ),
            Err(Refusal::SelfApproval)
        ));
        let other = key("key_other", Role::Approver);
        let rolling = apply(
            &pending,
            Move::Approve,
            &other,
            Some("ok"),
            &rule(&pending, false),
            now,
        )
        .unwrap();
        let d = rolling.decisions.last().unwrap();
        assert_eq!(rolling.state, JobState::RollingBack);
        assert_eq!(
            (d.action, d.decision, d.comment.as_deref()),
            (GateAction::Rollback, DecisionKind::Approved, Some("ok"))
        );
    }

    #[test]
    fn the_rollback_window_closes_after_the_commit_and_the_purge_follows() {
        use crate::ledger::outcome::{PurgeReason, purge_due};
        let day = chrono::Duration::days(1);
        let mut j = job(JobState::Committed, OnError::Fail);
        let at = j.updated_at;
        assert_eq!(
            rollback_closed(&j, day, at + day * 5),
            None,
            "never committed"
        );
        j.committed_at = Some(at);
        // A later move (a rollback asked and refused) does not move the window.
        j.updated_at = at + day * 2;
        assert_eq!(rollback_closed(&j, day * 3, at + day * 2), None);
        assert_eq!(
            rollback_closed(&j, day * 3, at + day * 3),
            Some(at + day * 3)
        );
        assert_eq!(purge_due(&j, day, day * 3, at + day * 2), None);
        assert_eq!(
            purge_due(&j, day, day * 3, at + day * 4),
            Some(PurgeReason::RollbackWindow)
        );
        j.purged_at = Some(at + day * 4);
        assert_eq!(purge_due(&j, day, day * 3, at + day * 9), None, "once");
        assert_eq!(
            rollback_closed(&j, day * 30, at + day * 5),
            Some(at + day * 4),
            "purged: closed whatever the setting says now"
        );
    }

    #[test]
    fn jobs_ended_without_a_commit_are_purged_after_the_retention_time() {
        use crate::ledger::outcome::{PurgeReason, purge_due};
        let day = chrono::Duration::days(1);
        let j = job(JobState::Rejected, OnError::Fail);
        let at = j.updated_at;
        assert_eq!(purge_due(&j, day * 2, day, at + day), None);
        assert_eq!(
            purge_due(&j, day * 2, day, at + day * 3),
            Some(PurgeReason::Retention)
        );
        let waiting = job(JobState::AwaitingApproval, OnError::Fail);
        assert_eq!(purge_due(&waiting, day, day, at + day * 99), None);
    }
}
