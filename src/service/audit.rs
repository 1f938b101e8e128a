//! `importgate ledger verify`: reads the whole hash chain page by page and
//! has the ledger's [`Verifier`] check each link, then checks that every
//! job's state is where its last event left it.

use crate::ledger::chain::{Verdict, Verifier, state_mismatch};
use crate::store::{self, Db};

/// Links or jobs read at a time.
const PAGE: i64 = 5000;

/// Recomputes the whole chain and checks every job against its events.
pub async fn verify(db: &Db) -> store::Result<Verdict> {
    let mut pooled = db.acquire().await?;
    let mut conn = pooled.conn();
    let mut verifier = Verifier::default();
    loop {
        let page = store::jobs::links(&mut conn, verifier.links(), PAGE).await?;
        if page.is_empty() {
            break;
        }
        for (link, prev_hash, hash) in &page {
            if let Err(broken) = verifier.check(link, prev_hash, hash) {
                return Ok(broken);
            }
        }
    }
    let mut jobs = 0;
    let mut after = String::new();
    loop {
        let page = store::jobs::states(&mut conn, &after, PAGE).await?;
        let Some(last) = page.last() else { break };
        after = last.0.clone();
        for (id, state) in &page {
            jobs += 1;
            let logged = store::jobs::last_event_state(&mut conn, id).await?;
            if let Some(broken) = state_mismatch(id, state, logged.as_deref()) {
                return Ok(broken);
            }
        }
    }
    Ok(Verdict::Holds {
        links: verifier.links(),
        jobs,
    })
}
