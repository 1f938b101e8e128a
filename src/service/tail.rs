//! The ledger's newest events, read once for every live stream of this
//! process (API.md section 13). A move wakes every stream at once; without
//! this each would read the ledger itself (1,000 streams and 5 uploads a
//! second took a probe's p99 from 13 ms to over 0.7 s). The first stream
//! woken reads what is new, as every reader would see it, and keeps the
//! newest [`KEEP`] events; each stream then takes what its key may see
//! from memory. A stream further behind than that reads the ledger itself
//! ([`super::events::list`]).

use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use super::events::{Page, shown};
use super::views::FeedEvent;
use super::{App, Result};
use crate::keys::{KeyRecord, Role};
use crate::ledger::events::client_type;
use crate::store::{self, ledger::FeedScope};

/// Events kept for the streams.
const KEEP: usize = 1000;
/// Links read from the ledger at a time.
const PAGE: i64 = 500;

/// The newest events, shared by the streams.
#[derive(Default)]
pub struct Tail {
    state: tokio::sync::Mutex<State>,
    /// Reads of the ledger made for the streams (shared ones and those of
    /// streams too far behind): what the fan-out saves is seen here.
    reads: AtomicU64,
}

#[derive(Default)]
struct State {
    /// The ledger was read up to this link.
    through: i64,
    /// The moves this process had made when it was read, and when.
    generation: u64,
    read_at: Option<Instant>,
    events: VecDeque<Seen>,
}

/// One event as every reader sees it, with what decides who may.
struct Seen {
    seq: i64,
    event: FeedEvent,
    /// The job's module, for a job's event.
    module: Option<String>,
    /// The modules of the key or key request, for an event about one.
    key_modules: Option<Vec<String>>,
}

impl Tail {
    /// The events after `after` that `actor` may see, at most `limit`:
    /// from memory while `after` is among the kept ones, the ledger read
    /// first when this process moved something since the last read or
    /// `stale` has passed (other replicas' moves).
    pub async fn page(
        &self,
        app: &App,
        actor: &KeyRecord,
        after: i64,
        limit: i64,
        stale: Duration,
    ) -> Result<Page> {
        let mut state = self.state.lock().await;
        let generation = app.moves.generation();
        let due = state.read_at.is_none_or(|t| t.elapsed() >= stale);
        if generation != state.generation || due {
            self.reads.fetch_add(1, Ordering::Relaxed);
            read_new(app, &mut state, generation).await?;
        }
        let first = state.events.front().map_or(state.through, |s| s.seq - 1);
        if after < first || state.read_at.is_none() {
            drop(state);
            self.reads.fetch_add(1, Ordering::Relaxed);
            return super::events::list(app, actor, after, limit).await;
        }
        let mut events = Vec::new();
        let mut next = state.through.max(after);
        for seen in state.events.iter().filter(|s| s.seq > after) {
            if events.len() as i64 >= limit {
                next = seen.seq - 1;
                break;
            }
            if visible(actor, seen) {
                events.push(seen.event.clone());
            }
        }
        Ok(Page {
            events,
            next_after: (next > 0).then_some(next),
        })
    }

    /// How many times the ledger was read for the streams.
    pub fn reads(&self) -> u64 {
        self.reads.load(Ordering::Relaxed)
    }
}

/// Reads the links after what `state` holds, as events every reader would
/// see, and keeps the newest [`KEEP`].
async fn read_new(app: &App, state: &mut State, generation: u64) -> Result<()> {
    let mut pooled = app.db.acquire().await?;
    let mut c = pooled.conn();
    let upto = store::ledger::last_seq(&mut c).await?;
    if state.read_at.is_none() {
        // The first read starts at the head: streams behind it read the
        // ledger themselves.
        state.through = upto;
    }
    let everything = FeedScope {
        modules: None,
        keys: true,
    };
    let mut names: Option<HashMap<String, String>> = None;
    while state.through < upto {
        let links = store::ledger::feed(&mut c, state.through, upto, everything, PAGE).await?;
        let Some(last) = links.last().map(|(e, _)| e.seq) else {
            break;
        };
        let mut modules = HashMap::new();
        let named: Vec<_> = links
            .into_iter()
            .filter_map(|(e, module)| {
                let t = client_type(&e.event, &e.to_state)?;
                modules.insert(e.seq, module);
                Some((e, t))
            })
            .collect();
        if !named.is_empty() {
            let names = match &mut names {
                Some(n) => n,
                None => names.insert(store::keys::names(&mut c).await?),
            };
            for (event, key_modules) in shown(&mut c, names, named).await? {
                let seq = super::events::parse_id("id", &event.id)?;
                let module = modules.remove(&seq).flatten();
                state.events.push_back(Seen {
                    seq,
                    event,
                    module,
                    key_modules,
                });
            }
        }
        state.through = last;
    }
    state.through = state.through.max(upto);
    while state.events.len() > KEEP {
        state.events.pop_front();
    }
    state.generation = generation;
    state.read_at = Some(Instant::now());
    Ok(())
}

/// Whether `actor` may see an event: a job's in its modules; one about a
/// key or key request to an admin whose scope holds it (as
/// [`super::events::list`] decides).
fn visible(actor: &KeyRecord, seen: &Seen) -> bool {
    match &seen.key_modules {
        Some(modules) => {
            actor.role == Role::Admin && super::keys::within_scope(actor, modules).is_ok()
        }
        None => match (actor.scope(), &seen.module) {
            (None, _) => true,
            (Some(scope), Some(m)) => scope.iter().any(|s| s == m),
            (Some(_), None) => false,
        },
    }
}
