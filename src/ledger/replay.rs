//! What a job row must say, derived from its events alone. `ledger verify`
//! compares every job with it (API.md section 9), so that editing a job's
//! state, submitter, gate or decisions behind the service's back is found
//! as surely as editing an event: the chain is keyed, the job row is not.

use super::chain::Event;
use super::gate::action_of;
use super::job::time;
use super::{Decision, DecisionKind, Gate, GateAction, Job, JobState, Move};
use crate::ids::KeyId;

/// The parts of a job its events decide.
#[derive(Debug, Default)]
pub struct Derived {
    pub state: Option<String>,
    pub submitter: Option<KeyId>,
    /// The file's hash, when the upload's event has it.
    pub file_sha256: Option<String>,
    /// The counts the last validation ended with, when its event has them.
    pub counts: Option<serde_json::Value>,
    pub gate: Option<Gate>,
    pub decisions: Vec<Decision>,
}

/// Replays a job's events, oldest first.
pub fn replay(events: &[Event]) -> Derived {
    let mut d = Derived::default();
    for e in events {
        d.state = Some(e.to_state.clone());
        if let Some(counts) = e.detail_json().and_then(|d| d.get("counts").cloned()) {
            d.counts = Some(counts);
        }
        let Some(event) = Move::parse(&e.event) else {
            continue;
        };
        match event {
            // A revision's first event is the reviser's; the job keeps
            // the file's submitter, named in its detail.
            Move::Upload => {
                let named = e
                    .detail_json()
                    .and_then(|d| d.get("submitter")?.as_str().map(str::to_string));
                d.submitter = named.or_else(|| e.actor.clone()).map(KeyId::from_stored);
                d.file_sha256 = e
                    .detail_json()
                    .and_then(|d| d.get("file_sha256")?.as_str().map(str::to_string));
            }
            Move::Checked => {
                d.gate = d.submitter.clone().map(|by| Gate {
                    action: GateAction::Commit,
                    requested_at: e.at,
                    requested_by: by,
                })
            }
            Move::Rollback => {
                d.gate = e.actor.clone().map(|by| Gate {
                    action: GateAction::Rollback,
                    requested_at: e.at,
                    requested_by: KeyId::from_stored(by),
                })
            }
            Move::Approve | Move::Reject | Move::Cancel | Move::Expire => {
                d.decisions.push(decision(e, event))
            }
            // A revision ends the gate request of a job waiting there.
            Move::Revised
                if e.from_state.as_deref() == Some(JobState::AwaitingApproval.as_str()) =>
            {
                d.decisions.push(decision(e, Move::Cancel))
            }
            _ => {}
        }
    }
    d
}

fn decision(e: &Event, event: Move) -> Decision {
    let from = e.from_state.as_deref().and_then(JobState::parse);
    let (action, decision) = match event {
        Move::Approve => (from.map(action_of), DecisionKind::Approved),
        Move::Reject => (from.map(action_of), DecisionKind::Rejected),
        Move::Cancel => (from.map(action_of), DecisionKind::Cancelled),
        _ => (Some(GateAction::Commit), DecisionKind::Expired),
    };
    let issued_by = e
        .detail_json()
        .and_then(|d| d.get("issued_by")?.as_str().map(KeyId::from_stored));
    Decision {
        action: action.unwrap_or(GateAction::Commit),
        decision,
        by: e.actor.clone().map(KeyId::from_stored),
        at: e.at,
        comment: e.comment.clone(),
        issued_by,
    }
}

/// How a job row differs from what its events say, if it does.
pub fn mismatch(job: &Job, events: &[Event]) -> Option<String> {
    let d = replay(events);
    if d.state.as_deref() != Some(job.state.as_str()) {
        return Some(format!(
            "the job is {} but its ledger ends in {}",
            job.state.as_str(),
            d.state.as_deref().unwrap_or("nothing")
        ));
    }
    if d.submitter.as_ref() != Some(&job.submitter) {
        return Some(format!(
            "the job's submitter is {} but its upload was made by {}",
            job.submitter,
            d.submitter.as_ref().map_or("nobody", KeyId::as_str)
        ));
    }
    if gate_text(job.gate.as_ref()) != gate_text(d.gate.as_ref()) {
        return Some(format!(
            "the job's gate request is {} but its events say {}",
            gate_text(job.gate.as_ref()),
            gate_text(d.gate.as_ref())
        ));
    }
    if let Some(sha) = &d.file_sha256
        && *sha != job.file.sha256
    {
        return Some(format!(
            "the job's file_sha256 is {} but its upload recorded {sha}",
            job.file.sha256
        ));
    }
    let counts = serde_json::to_value(&job.counts).ok();
    if d.counts.is_some() && job.state != JobState::Validating && d.counts != counts {
        return Some(format!(
            "the job's counts are {} but its validation ended with {}",
            counts.unwrap_or_default(),
            d.counts.unwrap_or_default()
        ));
    }
    let stored: Vec<String> = job.decisions.iter().map(decision_text).collect();
    let derived: Vec<String> = d.decisions.iter().map(decision_text).collect();
    if stored != derived {
        return Some(format!(
            "the job's decisions are [{}] but its events say [{}]",
            stored.join("; "),
            derived.join("; ")
        ));
    }
    None
}

fn gate_text(g: Option<&Gate>) -> String {
    g.map_or_else(
        || "none".to_string(),
        |g| {
            format!(
                "{} asked by {} at {}",
                g.action.as_str(),
                g.requested_by,
                time(&g.requested_at)
            )
        },
    )
}

fn decision_text(d: &Decision) -> String {
    format!(
        "{} {} by {} (issued by {}) at {} {:?}",
        d.action.as_str(),
        d.decision.as_str(),
        d.by.as_ref().map_or("the service", KeyId::as_str),
        d.issued_by.as_ref().map_or("nobody", KeyId::as_str),
        time(&d.at),
        d.comment
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ledger::OnError;
    use crate::ledger::outcome::tests::job;
    use chrono::{DateTime, Utc};

    fn ev(n: i64, event: &str, from: Option<&str>, to: &str, actor: Option<&str>) -> Event {
        Event {
            seq: n,
            job_id: "job_1".into(),
            n,
            at: DateTime::<Utc>::from_timestamp_millis(1_700_000_000_000 + n).unwrap(),
            event: event.into(),
            from_state: from.map(str::to_string),
            to_state: to.into(),
            actor: actor.map(str::to_string),
            comment: None,
            detail: None,
        }
    }

    #[test]
    fn a_job_is_what_its_events_made_it_and_an_edit_is_named() {
        let events = vec![
            ev(1, "upload", None, "validating", Some("key_sub")),
            ev(2, "checked", Some("validating"), "awaiting_approval", None),
            ev(
                3,
                "approve",
                Some("awaiting_approval"),
                "committing",
                Some("key_apr"),
            ),
        ];
        let d = replay(&events);
        let mut j = job(JobState::Committing, OnError::Fail);
        j.submitter = KeyId::from_stored("key_sub");
        j.gate = d.gate.clone();
        j.decisions = d.decisions.clone();
        assert_eq!(mismatch(&j, &events), None);
        assert_eq!(j.decisions[0].action, GateAction::Commit);

        let mut forged = j.clone();
        forged.submitter = KeyId::from_stored("key_other");
        assert!(mismatch(&forged, &events).unwrap().contains("submitter"));
        let mut forged = j.clone();
        forged.decisions[0].by = Some(KeyId::from_stored("key_sub"));
        assert!(mismatch(&forged, &events).unwrap().contains("decisions"));
        let mut forged = j.clone();
        forged.decisions.clear();
        assert!(mismatch(&forged, &events).is_some());
        let mut forged = j;
        forged.state = JobState::Committed;
        assert!(
            mismatch(&forged, &events)
                .unwrap()
                .contains("ledger ends in committing")
        );
    }
}
