//! The ledger as events for clients (API.md section 13): the feed
//! (`GET /api/events`), the live stream both front doors serve, and one
//! event's payload for the webhook deliverer.
//!
//! Every link of the ledger's chain is an event, named by
//! [`ledger::events::client_type`] (the service's private notes are not
//! events). An event's id is `evt_` and the link's place in the chain
//! (`seq`): gap-free and growing in commit order, so "after `evt_N`" misses
//! nothing and repeats nothing. `data` shows the job, key or key request as
//! it is when the event is read, people masked.
//!
//! Scope: a key sees the events of jobs, rule proposals and exports of the
//! modules it covers (a rule proposal's event carries no diff: the
//! proposal's own answer has it); events
//! about keys and key requests are for admins only, and an admin with a
//! module scope sees them only for keys and requests within it
//! ([`super::keys::within_scope`]).

use std::collections::{HashMap, VecDeque};
use std::sync::Arc;
use std::time::{Duration, Instant};

use futures::Stream;

use super::views::{
    EventData, ExportView, FeedEvent, JobView, KeyBrief, KeyRequestBrief, RuleProposalView,
};
use super::{App, Error, Result};
use crate::ids::{ExportId, JobId, KeyId, ProposalId};
use crate::keys::{KeyRecord, Role};
use crate::ledger::chain::Event;
use crate::ledger::events::{about_exports, about_keys, about_rules, client_type};
use crate::ledger::job::{People, time};
use crate::store::{self, Conn, ledger::FeedScope};

/// Events a page holds unless the reader asks for another number.
pub const DEFAULT_LIMIT: i64 = 100;
/// The most events a page holds.
pub const MAX_LIMIT: i64 = 1000;
/// How often a stream checks that its key is still live.
const KEY_CHECK: Duration = Duration::from_secs(30);

/// The id of the event at this place of the chain.
pub fn id(seq: i64) -> String {
    format!("evt_{seq}")
}

/// The chain place an event id names (`evt_N`); a malformed id is
/// [`Error::Invalid`] naming `parameter` (`after`, `Last-Event-ID`).
pub fn parse_id(parameter: &str, text: &str) -> Result<i64> {
    text.trim()
        .strip_prefix("evt_")
        .filter(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
        .and_then(|n| n.parse::<i64>().ok())
        .ok_or_else(|| {
            Error::invalid(
                parameter,
                format!("{parameter} must be an event id (evt_ and a number), not {text:?}"),
            )
        })
}

/// A page's size as asked (`limit`): 1 to [`MAX_LIMIT`], by default
/// [`DEFAULT_LIMIT`].
pub fn limit(asked: Option<i64>) -> Result<i64> {
    match asked {
        None => Ok(DEFAULT_LIMIT),
        Some(n) if (1..=MAX_LIMIT).contains(&n) => Ok(n),
        Some(_) => Err(Error::invalid(
            "limit",
            format!("limit must be a whole number from 1 to {MAX_LIMIT}"),
        )),
    }
}

/// A page of the feed.
pub struct Page {
    /// Oldest first.
    pub events: Vec<FeedEvent>,
    /// Where the next page starts (give it back as `after`): the last link
    /// this page looked at, which may be past its last event when later
    /// links are not for this key; `None` while the ledger is empty.
    pub next_after: Option<i64>,
}

/// The place of the ledger's newest event: a stream that starts "now"
/// starts after it.
pub async fn head(app: &App) -> Result<i64> {
    let mut c = app.db.acquire().await?;
    Ok(store::ledger::last_seq(&mut c.conn()).await?)
}

/// Where a stream starts: after the event of `Last-Event-ID` (what a
/// client that reconnects sends), else after `after`, else after the
/// newest event there is (the stream shows what happens from now on).
pub async fn start(app: &App, last_event_id: Option<&str>, after: Option<&str>) -> Result<i64> {
    match (last_event_id, after) {
        (Some(id), _) => parse_id("Last-Event-ID", id),
        (None, Some(id)) => parse_id("after", id),
        (None, None) => head(app).await,
    }
}

/// The events after `after_seq` the key may see, oldest first, at most
/// `limit` of them.
pub async fn list(app: &App, actor: &KeyRecord, after_seq: i64, limit: i64) -> Result<Page> {
    let limit = limit.clamp(1, MAX_LIMIT);
    let scope_modules = actor.scope();
    let scope = FeedScope {
        modules: scope_modules.as_deref(),
        keys: actor.role == Role::Admin,
    };
    let mut pooled = app.db.acquire().await?;
    let mut c = pooled.conn();
    let upto = store::ledger::last_seq(&mut c).await?;
    let mut names = None;
    let mut events = Vec::new();
    let mut from = after_seq;
    // Private notes and, for an admin with a module scope, keys outside it
    // are dropped after reading: read on until the page is full or the
    // chain's end (as it was when this page began) is reached. A reader
    // that is up to date costs one look at the head.
    while from < upto {
        let want = limit - events.len() as i64;
        let links = store::ledger::feed(&mut c, from, upto, scope, want).await?;
        let full = links.len() as i64 == want;
        if let Some((last, _)) = links.last() {
            from = last.seq;
        }
        let named: Vec<_> = links
            .into_iter()
            .filter_map(|(e, _)| client_type(&e.event, &e.to_state).map(|t| (e, t)))
            .collect();
        if !named.is_empty() {
            let names = match &mut names {
                Some(n) => n,
                None => names.insert(store::keys::names(&mut c).await?),
            };
            events.extend(
                shown(&mut c, names, named)
                    .await?
                    .into_iter()
                    .filter(|(_, scoped)| {
                        scoped
                            .as_deref()
                            .is_none_or(|m| super::keys::within_scope(actor, m).is_ok())
                    })
                    .map(|(e, _)| e),
            );
        }
        if !full {
            from = upto;
            break;
        }
        if events.len() as i64 >= limit {
            break;
        }
    }
    Ok(Page {
        events,
        next_after: (from > 0).then_some(from),
    })
}

/// Links as the events clients see (what webhooks deliver), whoever reads
/// them, by the link's number: read together, a round of deliveries costs
/// three queries, not three a delivery. A private note or a subject that is
/// gone has none.
pub async fn payloads(app: &App, seqs: &[i64]) -> Result<HashMap<i64, serde_json::Value>> {
    let mut pooled = app.db.acquire().await?;
    let mut c = pooled.conn();
    let links: Vec<(Event, &'static str)> = store::ledger::links_numbered(&mut c, seqs)
        .await?
        .into_iter()
        .filter_map(|l| client_type(&l.event, &l.to_state).map(|t| (l, t)))
        .collect();
    if links.is_empty() {
        return Ok(HashMap::new());
    }
    let by_id: HashMap<String, i64> = links.iter().map(|(l, _)| (id(l.seq), l.seq)).collect();
    let names = store::keys::names(&mut c).await?;
    let mut out = HashMap::with_capacity(links.len());
    for (e, _) in shown(&mut c, &names, links).await? {
        let Some(&seq) = by_id.get(&e.id) else {
            continue;
        };
        let value = serde_json::to_value(e).map_err(|e| Error::Internal(e.to_string()))?;
        out.insert(seq, value);
    }
    Ok(out)
}

/// The events of named links, their subjects read as they are now, each
/// with the modules of the key or key request it is about (for an admin's
/// scope). Links whose subject is gone are left out.
pub(super) async fn shown(
    c: &mut Conn<'_>,
    names: &HashMap<String, String>,
    links: Vec<(Event, &'static str)>,
) -> Result<Vec<(FeedEvent, Option<Vec<String>>)>> {
    let people = People(names);
    let job_ids: Vec<JobId> = links
        .iter()
        .filter(|(_, t)| !about_keys(t) && !about_rules(t) && !about_exports(t))
        .map(|(e, _)| JobId::from_stored(e.job_id.as_str()))
        .collect::<std::collections::BTreeSet<_>>()
        .into_iter()
        .collect();
    let jobs: HashMap<JobId, crate::ledger::Job> = store::jobs::get_many(c, &job_ids)
        .await?
        .into_iter()
        .map(|j| (j.id.clone(), j))
        .collect();
    let mut out = Vec::with_capacity(links.len());
    for (link, ty) in links {
        let (data, modules) = if about_exports(ty) {
            let id = ExportId::from_stored(link.job_id.as_str());
            let Some(e) = store::exports::get(c, &id).await? else {
                continue;
            };
            let data = EventData {
                export: Some(ExportView::new(&e, &people)),
                ..EventData::default()
            };
            (data, None)
        } else if about_rules(ty) {
            let id = ProposalId::from_stored(link.job_id.as_str());
            let Some(p) = store::rule_proposals::get(c, &id).await? else {
                continue;
            };
            let data = EventData {
                rule_proposal: Some(RuleProposalView::new(&p, None, &people)),
                ..EventData::default()
            };
            (data, None)
        } else if !about_keys(ty) {
            let Some(job) = jobs.get(link.job_id.as_str()) else {
                continue;
            };
            let data = EventData {
                job: Some(JobView::new(job, &people)),
                ..EventData::default()
            };
            (data, None)
        } else if ty == "person.sign_in_refused" {
            let detail = link.detail_json().unwrap_or_default();
            let reason = detail["reason"].as_str().unwrap_or_default().to_string();
            let data = EventData {
                sign_in: Some(super::views::SignInRefusal { reason }),
                ..EventData::default()
            };
            (data, None)
        } else if ty.starts_with("key_request.") {
            let Some(r) = store::key_requests::get(c, &link.job_id).await? else {
                continue;
            };
            let data = EventData {
                key_request: Some(KeyRequestBrief::new(&r)),
                ..EventData::default()
            };
            (data, Some(r.modules))
        } else {
            let key = KeyId::from_stored(&link.job_id);
            let Some(k) = store::keys::get(c, &key).await? else {
                continue;
            };
            let data = EventData {
                key: Some(KeyBrief::new(&k)),
                ..EventData::default()
            };
            (data, Some(k.modules))
        };
        let event = FeedEvent {
            id: id(link.seq),
            ty: ty.to_string(),
            created_at: time(&link.at),
            data,
        };
        out.push((event, modules));
    }
    Ok(out)
}

/// The events after `after_seq` the key may see, live: the events there
/// are, then each new one as it is appended. Woken at once by this
/// process's appends ([`App::moves`]); other replicas' are found by
/// reading the ledger again every `events_poll_ms`. No connection is held
/// between reads. Ends when the service shuts down or the key stops being
/// live; a database that cannot answer is waited out.
pub fn follow(
    app: Arc<App>,
    actor: KeyRecord,
    after_seq: i64,
    slot: StreamSlot,
) -> impl Stream<Item = FeedEvent> + Send + 'static {
    let state = Follow {
        _slot: slot,
        stop: app.shutdown.subscribe(),
        app,
        actor,
        after: after_seq,
        queue: VecDeque::new(),
        checked: Instant::now(),
    };
    futures::stream::unfold(state, |mut s| async move {
        loop {
            if let Some(e) = s.queue.pop_front() {
                return Some((e, s));
            }
            if *s.stop.borrow() {
                return None;
            }
            let woken = s.app.moves.any().notified();
            tokio::pin!(woken);
            woken.as_mut().enable();
            if s.checked.elapsed() >= KEY_CHECK {
                match super::keys::find(&s.app, &s.actor.id).await {
                    Ok(Some(k)) if k.is_live(store::now()) => {
                        s.actor = k;
                        s.checked = Instant::now();
                    }
                    Ok(_) => return None,
                    Err(e) => tracing::warn!(error = %e, "event stream: could not check its key"),
                }
            }
            let poll = Duration::from_millis(s.app.settings.events_poll_ms.max(10));
            let page = s
                .app
                .tail
                .page(&s.app, &s.actor, s.after, DEFAULT_LIMIT, poll / 2);
            match page.await {
                Ok(page) => {
                    if let Some(n) = page.next_after {
                        s.after = s.after.max(n);
                    }
                    if !page.events.is_empty() {
                        s.queue.extend(page.events);
                        continue;
                    }
                }
                Err(e) => tracing::warn!(error = %e, "event stream: could not read the ledger"),
            }
            tokio::select! {
                _ = woken => {},
                _ = tokio::time::sleep(poll) => {},
                changed = s.stop.changed() => {
                    if changed.is_err() {
                        return None;
                    }
                },
            }
        }
    })
}

struct Follow {
    /// Held while the stream lives; given back when the client leaves.
    _slot: StreamSlot,
    app: Arc<App>,
    actor: KeyRecord,
    after: i64,
    queue: VecDeque<FeedEvent>,
    stop: tokio::sync::watch::Receiver<bool>,
    checked: Instant,
}

/// The live streams this process serves, per key and in all (API.md
/// section 10: 8 per key, 512 in all), so that streams cannot multiply the
/// load without bound.
#[derive(Default)]
pub struct Streams(std::sync::Mutex<HashMap<KeyId, usize>>);

/// A stream's place among [`Streams`], taken by [`open_stream`] and given
/// back when dropped (the client went away, the service stopped).
pub struct StreamSlot {
    app: Arc<App>,
    key: KeyId,
}

impl Drop for StreamSlot {
    fn drop(&mut self) {
        let mut open = self.app.streams.0.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(n) = open.get_mut(&self.key) {
            *n -= 1;
            if *n == 0 {
                open.remove(&self.key);
            }
        }
    }
}

/// A place for one more live stream of `actor`, or [`Error::TooMany`]
/// when the key has `streams_per_key` open or the process
/// `streams_total`.
pub fn open_stream(app: &Arc<App>, actor: &KeyRecord) -> Result<StreamSlot> {
    let limits = &app.settings.limits;
    let mut open = app.streams.0.lock().unwrap_or_else(|p| p.into_inner());
    let total: usize = open.values().sum();
    let own = open.get(&actor.id).copied().unwrap_or(0);
    let refused = if own >= limits.streams_per_key {
        Some(format!(
            "this key has {own} live event streams open, the most one key may hold; close one"
        ))
    } else if total >= limits.streams_total {
        Some(format!(
            "the service serves {total} live event streams, its most; try again shortly"
        ))
    } else {
        None
    };
    if let Some(message) = refused {
        return Err(Error::TooMany {
            message,
            retry_after: 30,
        });
    }
    *open.entry(actor.id.clone()).or_insert(0) += 1;
    Ok(StreamSlot {
        app: app.clone(),
        key: actor.id.clone(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn event_ids_and_limits_are_checked() {
        assert_eq!(id(42), "evt_42");
        assert_eq!(parse_id("after", "evt_42").unwrap(), 42);
        for bad in [
            "",
            "evt_",
            "42",
            "evt_-1",
            "evt_4x",
            "evt_99999999999999999999",
        ] {
            assert!(
                matches!(parse_id("after", bad), Err(Error::Invalid { parameter, .. }) if parameter == "after"),
                "{bad}"
            );
        }
        assert_eq!(limit(None).unwrap(), DEFAULT_LIMIT);
        assert_eq!(limit(Some(1000)).unwrap(), 1000);
        for bad in [0, -1, 1001, 100_000] {
            assert!(limit(Some(bad)).is_err());
        }
    }
}
