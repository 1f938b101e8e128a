//! The tamper-evident ledger: every job event is a link whose hash covers
//! its content and the previous link's hash, in one chain across all jobs.
//! Editing, inserting or deleting an event behind the service's back breaks
//! the chain at that link; [`verify`] finds the first broken one.

use chrono::{DateTime, Utc};
use serde_json::json;
use sha2::{Digest, Sha256};

use crate::store::{self, Db};

/// The previous hash of the first link.
pub const GENESIS: &str = "0000000000000000000000000000000000000000000000000000000000000000";

/// One event as the chain covers it.
#[derive(Debug, Clone)]
pub struct Link {
    /// Position in the chain, from 1.
    pub seq: i64,
    pub job_id: String,
    /// Position in the job's own events, from 1.
    pub n: i64,
    pub at: DateTime<Utc>,
    pub event: String,
    pub from_state: Option<String>,
    pub to_state: String,
    pub actor: Option<String>,
    pub comment: Option<String>,
    /// The stored JSON text of the detail, hashed as stored.
    pub detail: Option<String>,
}

impl Link {
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
}

/// What a verification found.
#[derive(Debug)]
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

/// Recomputes the whole chain, page by page, and checks that every job's
/// state is where its last event left it.
pub async fn verify(db: &Db) -> anyhow::Result<Verdict> {
    let mut pooled = db.acquire().await?;
    let mut conn = pooled.conn();
    let mut prev = GENESIS.to_string();
    let mut expected_seq = 1;
    loop {
        let page = store::jobs::links(&mut conn, expected_seq - 1, 5000).await?;
        if page.is_empty() {
            break;
        }
        for (link, prev_hash, hash) in page {
            let broken = |why: String| Verdict::Broken {
                seq: link.seq,
                job_id: link.job_id.clone(),
                n: link.n,
                why,
            };
            if link.seq != expected_seq {
                return Ok(broken(format!("link {expected_seq} is missing")));
            }
            if prev_hash != prev {
                return Ok(broken(
                    "its previous hash is not the hash of the link before".into(),
                ));
            }
            if link.hash(&prev_hash) != hash {
                return Ok(broken(
                    "its content does not match its hash (edited)".into(),
                ));
            }
            prev = hash;
            expected_seq += 1;
        }
    }
    let mut jobs = 0;
    let mut after = String::new();
    loop {
        let page = store::jobs::states(&mut conn, &after, 5000).await?;
        let Some(last) = page.last() else { break };
        after = last.0.clone();
        for (id, state) in &page {
            jobs += 1;
            let logged = store::jobs::last_event_state(&mut conn, id).await?;
            if logged.as_deref() != Some(state.as_str()) {
                return Ok(Verdict::Broken {
                    seq: 0,
                    job_id: id.clone(),
                    n: 0,
                    why: format!(
                        "the job is {state} but its ledger ends in {}",
                        logged.as_deref().unwrap_or("nothing")
                    ),
                });
            }
        }
    }
    Ok(Verdict::Holds {
        links: expected_seq - 1,
        jobs,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn link() -> Link {
        Link {
            seq: 1,
            job_id: "job_1".into(),
            n: 1,
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
        let base = link().hash(GENESIS);
        assert_eq!(base, link().hash(GENESIS), "deterministic");
        let mut edited = link();
        edited.comment = Some("".into());
        assert_ne!(edited.hash(GENESIS), base);
        assert_ne!(link().hash(&"1".repeat(64)), base);
    }
}
