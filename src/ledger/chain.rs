//! The tamper-evident ledger: every job event is a link whose hash covers
//! its content and the previous link's hash, in one chain across all jobs.
//! Editing, inserting or deleting an event behind the service's back breaks
//! the chain at that link; a [`Verifier`] fed the links in order finds the
//! first broken one.

use chrono::{DateTime, Utc};
use serde_json::json;
use sha2::{Digest, Sha256};

/// The previous hash of the first link.
pub const GENESIS: &str = "0000000000000000000000000000000000000000000000000000000000000000";

/// One event of a job's ledger, as recorded and as the chain covers it.
#[derive(Debug, Clone)]
pub struct Event {
    /// Position in the chain, from 1.
    pub seq: i64,
    pub job_id: String,
    /// Position in the job's own events, from 1.
    pub n: i64,
    pub at: DateTime<Utc>,
    /// The move (`upload`, `approve`, …; see [`super::Move`]).
    pub event: String,
    pub from_state: Option<String>,
    pub to_state: String,
    /// The key that made the move; `None` for the service.
    pub actor: Option<String>,
    pub comment: Option<String>,
    /// The stored JSON text of the detail, hashed as stored.
    pub detail: Option<String>,
}

impl Event {
    /// SHA-256 of the previous hash and this link's content (canonical JSON).
    pub fn hash(&self, prev_hash: &str) -> String {
        let content = json!([
            self.seq,
            self.job_id,
            self.n,
            crate::ledger::job::time(&self.at),
            self.event,
            self.from_state,
            self.to_state,
            self.actor,
            self.comment,
            self.detail,
        ]);
        let mut h = Sha256::new();
        h.update(prev_hash.as_bytes());
        h.update(b"\n");
        h.update(content.to_string().as_bytes());
        hex::encode(h.finalize())
    }

    /// The detail as JSON (stored as text).
    pub fn detail_json(&self) -> Option<serde_json::Value> {
        self.detail
            .as_deref()
            .and_then(|d| serde_json::from_str(d).ok())
    }
}

/// What a verification found.
#[derive(Debug, PartialEq, Eq)]
pub enum Verdict {
    /// Every link holds; the number of links and jobs checked.
    Holds { links: i64, jobs: i64 },
    /// The first link that does not hold, and why.
    Broken {
        seq: i64,
        job_id: String,
        n: i64,
        why: String,
    },
}

/// Checks links in chain order, one at a time, remembering only the last
/// hash: a chain of any length is verified in constant memory.
pub struct Verifier {
    prev: String,
    expected_seq: i64,
}

impl Default for Verifier {
    fn default() -> Self {
        Verifier {
            prev: GENESIS.to_string(),
            expected_seq: 1,
        }
    }
}

impl Verifier {
    /// Checks the next link with its stored previous hash and hash; the
    /// verdict on the first one that does not hold.
    pub fn check(&mut self, link: &Event, prev_hash: &str, hash: &str) -> Result<(), Verdict> {
        let broken = |why: String| Verdict::Broken {
            seq: link.seq,
            job_id: link.job_id.clone(),
            n: link.n,
            why,
        };
        if link.seq != self.expected_seq {
            return Err(broken(format!("link {} is missing", self.expected_seq)));
        }
        if prev_hash != self.prev {
            return Err(broken(
                "its previous hash is not the hash of the link before".into(),
            ));
        }
        if link.hash(prev_hash) != hash {
            return Err(broken(
                "its content does not match its hash (edited)".into(),
            ));
        }
        self.prev = hash.to_string();
        self.expected_seq += 1;
        Ok(())
    }

    /// Links checked so far.
    pub fn links(&self) -> i64 {
        self.expected_seq - 1
    }
}

/// A job whose state is not where its last event left it.
pub fn state_mismatch(job_id: &str, state: &str, logged: Option<&str>) -> Option<Verdict> {
    (logged != Some(state)).then(|| Verdict::Broken {
        seq: 0,
        job_id: job_id.to_string(),
        n: 0,
        why: format!(
            "the job is {state} but its ledger ends in {}",
            logged.unwrap_or("nothing")
        ),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn link(seq: i64) -> Event {
        Event {
            seq,
            job_id: "job_1".into(),
            n: seq,
            at: DateTime::from_timestamp_millis(1_700_000_000_000).unwrap(),
            event: "upload".into(),
            from_state: None,
            to_state: "validating".into(),
            actor: Some("key_a".into()),
            comment: None,
            detail: None,
        }
    }

    #[test]
    fn any_change_changes_the_hash() {
        let base = link(1).hash(GENESIS);
        assert_eq!(base, link(1).hash(GENESIS), "deterministic");
        let mut edited = link(1);
        edited.comment = Some("".into());
        assert_ne!(edited.hash(GENESIS), base);
        assert_ne!(link(1).hash(&"1".repeat(64)), base);
    }

    #[test]
    fn the_verifier_finds_an_edit_and_a_gap() {
        let first = link(1);
        let h1 = first.hash(GENESIS);
        let second = link(2);
        let h2 = second.hash(&h1);
        let mut v = Verifier::default();
        assert!(v.check(&first, GENESIS, &h1).is_ok());
        assert!(v.check(&second, &h1, &h2).is_ok());
        assert_eq!(v.links(), 2);

        let mut edited = link(2);
        edited.comment = Some("approved".into());
        let mut v = Verifier::default();
        v.check(&first, GENESIS, &h1).unwrap();
        assert!(matches!(
            v.check(&edited, &h1, &h2),
            Err(Verdict::Broken { seq: 2, .. })
        ));

        let mut v = Verifier::default();
        let third = link(3);
        let h3 = third.hash(&h2);
        v.check(&first, GENESIS, &h1).unwrap();
        assert!(
            matches!(v.check(&third, &h2, &h3), Err(Verdict::Broken { why, .. }) if why == "link 2 is missing")
        );
    }
}
