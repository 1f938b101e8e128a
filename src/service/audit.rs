//! `importgate ledger verify`: reads the whole hash chain page by page and
//! has the ledger's [`Verifier`] check each link under the ledger's key,
//! compares the chain's head with the checkpoint kept outside the
//! database, then checks every job row, key row, rule proposal and export
//! against the events it derives from.

use std::path::Path;

use crate::ledger::chain::{ChainKey, Verdict, Verifier};
use crate::ledger::{export, key_replay, replay, rule_replay};
use crate::store::{self, Db};

/// Links or jobs read at a time.
const PAGE: i64 = 5000;

/// Recomputes the whole chain, compares its head with the last one
/// recorded in `checkpoint` (when given), and checks every job against
/// its events.
pub async fn verify(db: &Db, key: &ChainKey, checkpoint: Option<&Path>) -> anyhow::Result<Verdict> {
    let mut pooled = db.acquire().await?;
    let mut conn = pooled.conn();
    let mut verifier = Verifier::new(key.clone());
    loop {
        let page = store::ledger::links(&mut conn, verifier.links(), PAGE).await?;
        if page.is_empty() {
            break;
        }
        for (link, prev_hash, hash) in &page {
            if let Err(broken) = verifier.check(link, prev_hash, hash) {
                return Ok(broken);
            }
        }
    }
    if let Some(path) = checkpoint
        && let Some(broken) = against_checkpoint(&mut conn, &verifier, path).await?
    {
        return Ok(broken);
    }
    let mut jobs = 0;
    let mut after = String::new();
    loop {
        let page = store::jobs::page(&mut conn, &after, PAGE).await?;
        let Some(last) = page.last() else { break };
        after = last.id.to_string();
        for job in &page {
            jobs += 1;
            let events = store::jobs::events(&mut conn, &job.id).await?;
            if let Some(why) = replay::mismatch(job, &events) {
                return Ok(Verdict::Broken {
                    seq: 0,
                    job_id: job.id.to_string(),
                    n: 0,
                    why,
                });
            }
        }
    }
    if let Some(broken) = keys_against_events(&mut conn).await? {
        return Ok(broken);
    }
    if let Some(broken) = rules_against_events(&mut conn).await? {
        return Ok(broken);
    }
    if let Some(broken) = exports_against_events(&mut conn).await? {
        return Ok(broken);
    }
    Ok(Verdict::Holds {
        links: verifier.links(),
        jobs,
    })
}

/// Every key row against its events (the links themselves were checked
/// with the whole chain): the first that disagrees.
async fn keys_against_events(conn: &mut store::Conn<'_>) -> anyhow::Result<Option<Verdict>> {
    let first = store::ledger::first_key_event(conn).await?;
    for key in store::keys::list(conn).await? {
        let events = store::ledger::events_of(conn, key.id.as_str()).await?;
        if let Some(why) = key_replay::distrust(&key, &events, first) {
            return Ok(Some(Verdict::Broken {
                seq: 0,
                job_id: key.id.to_string(),
                n: 0,
                why,
            }));
        }
    }
    Ok(None)
}

/// Every rule proposal against its events: the first that disagrees.
async fn rules_against_events(conn: &mut store::Conn<'_>) -> anyhow::Result<Option<Verdict>> {
    for p in store::rule_proposals::list(conn, None, None, i64::MAX).await? {
        let events = store::ledger::events_of(conn, p.id.as_str()).await?;
        if let Some(why) = rule_replay::mismatch(&p, &events) {
            return Ok(Some(Verdict::Broken {
                seq: 0,
                job_id: p.id.to_string(),
                n: 0,
                why,
            }));
        }
    }
    Ok(None)
}

/// Every export row against its event, page by page: the first that
/// disagrees.
async fn exports_against_events(conn: &mut store::Conn<'_>) -> anyhow::Result<Option<Verdict>> {
    let mut after = String::new();
    loop {
        let page = store::exports::page(conn, &after, PAGE).await?;
        let Some(last) = page.last() else {
            return Ok(None);
        };
        after = last.id.to_string();
        for e in &page {
            let events = store::ledger::events_of(conn, e.id.as_str()).await?;
            if let Some(why) = export::mismatch(e, &events) {
                return Ok(Some(Verdict::Broken {
                    seq: 0,
                    job_id: e.id.to_string(),
                    n: 0,
                    why,
                }));
            }
        }
    }
}

/// The chain must still hold the head the checkpoint last recorded: a
/// shorter chain lost its newest events, another hash means the links up
/// to it were replaced.
async fn against_checkpoint(
    conn: &mut store::Conn<'_>,
    verified: &Verifier,
    path: &Path,
) -> anyhow::Result<Option<Verdict>> {
    let Some((links, hash)) = super::seal::last_checkpoint(path)? else {
        return Ok(None);
    };
    let broken = |why: String| {
        Some(Verdict::Broken {
            seq: links,
            job_id: String::new(),
            n: 0,
            why,
        })
    };
    if verified.links() < links {
        return Ok(broken(format!(
            "the checkpoint {} recorded {links} events, but the ledger holds only {}: \
             the newest events were deleted",
            path.display(),
            verified.links()
        )));
    }
    let page = store::ledger::links(conn, links - 1, 1).await?;
    match page.first() {
        Some((_, _, h)) if *h == hash => Ok(None),
        _ => Ok(broken(format!(
            "event {links} is not the one the checkpoint {} recorded: the ledger was rewritten",
            path.display()
        ))),
    }
}
