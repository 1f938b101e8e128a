//! The tamper-evident ledger: every event is a link whose hash covers its
//! content and the previous link's hash, in one chain across all jobs and
//! keys. Editing, inserting or deleting an event behind the service's back
//! breaks the chain at that link; a [`Verifier`] fed the links in order
//! finds the first broken one.
//!
//! The hash is keyed (HMAC-SHA256 under a [`ChainKey`] kept outside the
//! database): with a plain hash, whoever can write the database could
//! recompute every link after an edit in a few lines of script.

use chrono::{DateTime, Utc};
use hmac::{KeyInit, Mac};
use serde_json::json;
use sha2::{Digest, Sha256};

type HmacSha256 = hmac::Hmac<Sha256>;

/// The ledger's secret (API.md section 9): links are HMAC-SHA256 under it.
#[derive(Clone)]
pub struct ChainKey([u8; 32]);

impl ChainKey {
    pub fn new(bytes: [u8; 32]) -> ChainKey {
        ChainKey(bytes)
    }

    pub fn bytes(&self) -> &[u8; 32] {
        &self.0
    }

    /// A name for the key that reveals nothing of it: stored in the
    /// database, so that a service started with another key file refuses
    /// to extend a chain it cannot continue.
    pub fn fingerprint(&self) -> String {
        hex::encode(&self.mac(&[b"importgate ledger key fingerprint"])[..16])
    }

    /// A secret derived from the ledger's key for another use (a
    /// webhook's signing secret): whoever lacks the key file cannot make it.
    pub fn derive(&self, label: &str, parts: &[&[u8]]) -> [u8; 32] {
        let mut all: Vec<&[u8]> = vec![label.as_bytes(), b"\n"];
        all.extend_from_slice(parts);
        let mut out = [0u8; 32];
        out.copy_from_slice(&self.mac(&all));
        out
    }

    fn mac(&self, parts: &[&[u8]]) -> Vec<u8> {
        let mut m = <HmacSha256 as KeyInit>::new_from_slice(&self.0)
            .expect("HMAC takes a key of any length");
        for p in parts {
            m.update(p);
        }
        m.finalize().into_bytes().to_vec()
    }
}

impl std::fmt::Debug for ChainKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "ChainKey({})", self.fingerprint())
    }
}

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
    /// HMAC-SHA256 under the ledger's key of the previous hash and this
    /// link's content (canonical JSON).
    pub fn hash(&self, key: &ChainKey, prev_hash: &str) -> String {
        let content = self.content();
        hex::encode(key.mac(&[prev_hash.as_bytes(), b"\n", content.as_bytes()]))
    }

    /// The unkeyed SHA-256 links of a ledger that has no key yet: checked
    /// once, when such a ledger is sealed with its key.
    pub fn legacy_hash(&self, prev_hash: &str) -> String {
        let mut h = Sha256::new();
        h.update(prev_hash.as_bytes());
        h.update(b"\n");
        h.update(self.content().as_bytes());
        hex::encode(h.finalize())
    }

    fn content(&self) -> String {
        json!([
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
        ])
        .to_string()
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
    key: ChainKey,
    prev: String,
    expected_seq: i64,
}

impl Verifier {
    pub fn new(key: ChainKey) -> Verifier {
        Verifier {
            key,
            prev: GENESIS.to_string(),
            expected_seq: 1,
        }
    }

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
        if link.hash(&self.key, prev_hash) != hash {
            return Err(broken(
                "its content does not match its hash (edited, or sealed with another key)".into(),
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

    /// The hash of the last link checked.
    pub fn head(&self) -> &str {
        &self.prev
    }
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

    fn key() -> ChainKey {
        ChainKey::new([7; 32])
    }

    #[test]
    fn any_change_changes_the_hash() {
        let base = link(1).hash(&key(), GENESIS);
        assert_eq!(base, link(1).hash(&key(), GENESIS), "deterministic");
        let mut edited = link(1);
        edited.comment = Some("".into());
        assert_ne!(edited.hash(&key(), GENESIS), base);
        assert_ne!(link(1).hash(&key(), &"1".repeat(64)), base);
        // Without the key, the right hash cannot be made.
        assert_ne!(link(1).hash(&ChainKey::new([8; 32]), GENESIS), base);
        assert_ne!(link(1).legacy_hash(GENESIS), base);
        assert_ne!(key().fingerprint(), ChainKey::new([8; 32]).fingerprint());
    }

    #[test]
    fn the_verifier_finds_an_edit_and_a_gap() {
        let first = link(1);
        let h1 = first.hash(&key(), GENESIS);
        let second = link(2);
        let h2 = second.hash(&key(), &h1);
        let mut v = Verifier::new(key());
        assert!(v.check(&first, GENESIS, &h1).is_ok());
        assert!(v.check(&second, &h1, &h2).is_ok());
        assert_eq!(v.links(), 2);

        let mut edited = link(2);
        edited.comment = Some("approved".into());
        let mut v = Verifier::new(key());
        v.check(&first, GENESIS, &h1).unwrap();
        assert!(matches!(
            v.check(&edited, &h1, &h2),
            Err(Verdict::Broken { seq: 2, .. })
        ));

        let mut v = Verifier::new(key());
        let third = link(3);
        let h3 = third.hash(&key(), &h2);
        v.check(&first, GENESIS, &h1).unwrap();
        assert!(
            matches!(v.check(&third, &h2, &h3), Err(Verdict::Broken { why, .. }) if why == "link 2 is missing")
        );
    }
}
