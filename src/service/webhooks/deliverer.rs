//! The deliverer: the worker every replica runs beside its job workers
//! (`worker.rs`), which leases due deliveries from the outbox, POSTs each
//! to its endpoint, and records what happened.
//!
//! - A delivery is POSTed signed ([`super::signing`]), with a timeout, no
//!   redirects, and only to addresses the guard allows as it connects
//!   ([`super::guard`]).
//! - A non-2xx answer or a timeout is retried with exponential backoff
//!   and jitter ([`crate::service::retry`]) for the retry window; past it
//!   the delivery fails for good, and an endpoint that failed for the
//!   whole window is disabled with the reason.
//! - No database connection is held while a receiver is waited for, so a
//!   slow or dead receiver slows nothing but its own deliveries; finished
//!   attempts are recorded a batch a transaction by one recorder.
//! - Leases make it safe on every replica at once: a delivery is leased
//!   by one worker, and a killed worker's leases lapse and are taken over.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::time::{Duration, Instant};

use chrono::{DateTime, Utc};
use serde_json::json;
use tokio::sync::{OwnedSemaphorePermit, Semaphore, mpsc};

use super::{guard, signing};
use crate::service::{App, Error, Result, events, retry};
use crate::store::webhooks::{self as stored, Outcome, Settled};
use crate::store::{Conn, now};
use crate::webhooks::{Attempt, Delivery, Webhook};

/// Deliveries a worker has in flight at once. A receiver answering in
/// 200 ms then takes 1,280 events a second from one replica; with 64,
/// `bash bench/load.sh --webhook 200` (about 330 events a second) built a
/// backlog.
const AT_ONCE: i64 = 256;
/// Deliveries in flight while the service is busy answering requests
/// ([`crate::service::traffic`]): enough that a webhook is never starved,
/// few enough that deliveries do not take the CPU the waiting clients
/// need.
pub const BUSY_AT_ONCE: i64 = 8;
/// How often, at most, the deliveries' statistics are refreshed while a
/// backlog waits.
const ANALYZE_EVERY: Duration = Duration::from_secs(60);
/// At most this much of a receiver's answer is kept.
const ANSWER_BYTES: usize = 1024;
/// The longest wait between two attempts at a delivery.
const RETRY_CAP: Duration = Duration::from_secs(3600);
/// How long after a batch's first finished attempt the recorder waits
/// for more to record with it.
const GATHER: Duration = Duration::from_millis(50);
/// The most attempts the recorder records in one transaction.
const BATCH: usize = 256;

/// A delivery worker: at most `AT_ONCE` (256) deliveries in flight, each sent
/// on its own task as soon as it is leased (a slow receiver holds only its
/// own), and their attempts recorded together, a batch a transaction, by
/// one recorder: delivering costs the database a few writes a batch, not a
/// few a delivery, so uploads and decisions keep their pace.
pub struct Deliverer {
    permits: Arc<Semaphore>,
    done: mpsc::UnboundedSender<Done>,
    /// One client for every delivery: its connections are kept alive and
    /// reused, and its resolver refuses private addresses as it connects.
    client: reqwest::Client,
    /// When the deliveries' statistics were last refreshed.
    analyzed: std::sync::Mutex<Option<Instant>>,
}

/// A finished attempt, waiting to be recorded.
struct Done {
    webhook: Webhook,
    delivery: Delivery,
    body: String,
    attempt: Attempt,
}

impl Deliverer {
    /// The worker of `owner`, with its recorder running until the worker
    /// and every delivery it started are gone.
    pub fn start(app: Arc<App>, owner: String) -> Result<Deliverer> {
        let client = client(&app)?;
        let (done, finished) = mpsc::unbounded_channel();
        tokio::spawn(record_loop(app, owner, finished));
        Ok(Deliverer {
            permits: Arc::new(Semaphore::new(AT_ONCE as usize)),
            done,
            client,
            analyzed: Default::default(),
        })
    }

    /// Leases as many due deliveries as there is room for (fewer while the
    /// service is `busy`, [`crate::service::traffic`]) and starts sending
    /// them. How many it leased.
    pub async fn round(&self, app: &Arc<App>, owner: &str, busy: bool) -> Result<usize> {
        let most = if busy { BUSY_AT_ONCE } else { AT_ONCE };
        let in_flight = AT_ONCE - self.permits.available_permits() as i64;
        let room = most - in_flight;
        // Leases in batches: waiting until a quarter of the room is free
        // costs a little latency and saves a write transaction a delivery.
        if room < most / 4 {
            return Ok(0);
        }
        let (due, hooks) = self.lease(app, owner, room).await?;
        let n = due.len();
        let mut bodies = bodies(app, &due).await?;
        for d in due {
            let Some(w) = hooks.iter().find(|w| w.id == d.webhook_id).cloned() else {
                continue;
            };
            let Ok(permit) = self.permits.clone().try_acquire_owned() else {
                break;
            };
            let body = bodies.remove(&d.id).unwrap_or_default();
            self.spawn_send(app, permit, w, d, body);
        }
        Ok(n)
    }

    /// Leases up to `room` due deliveries to `owner`; them and the
    /// endpoints (none when nothing was due).
    async fn lease(
        &self,
        app: &App,
        owner: &str,
        room: i64,
    ) -> Result<(Vec<Delivery>, Vec<Webhook>)> {
        let now_ms = now().timestamp_millis();
        // Long enough for the receiver's whole timeout and the recording;
        // a killed worker's deliveries are taken over once it lapses.
        let lease =
            app.settings.webhooks.timeout + Duration::from_millis(app.settings.lease_ms as u64);
        let until = now_ms + lease.as_millis() as i64;
        let mut c = app.db.acquire().await?;
        let due = stored::claim(&mut c.conn(), owner, now_ms, until, room).await?;
        if due.len() as i64 == room {
            self.backlog(&mut c.conn()).await?;
        }
        if due.is_empty() {
            return Ok((due, Vec::new()));
        }
        let hooks = stored::list(&mut c.conn()).await?;
        Ok((due, hooks))
    }

    /// Sends one delivery on a task of its own, holding `permit` until the
    /// attempt is handed to the recorder.
    fn spawn_send(
        &self,
        app: &Arc<App>,
        permit: OwnedSemaphorePermit,
        webhook: Webhook,
        delivery: Delivery,
        body: String,
    ) {
        let (app, done, client) = (app.clone(), self.done.clone(), self.client.clone());
        tokio::spawn(async move {
            let attempt = send(&app, &client, &webhook, &delivery, &body).await;
            let _ = done.send(Done {
                webhook,
                delivery,
                body,
                attempt,
            });
            drop(permit);
        });
    }

    /// A claim found more due deliveries than it had room for: a backlog.
    /// Its statistics are refreshed (at most every [`ANALYZE_EVERY`]) so
    /// that the claim is planned for the table as it is; without them
    /// PostgreSQL takes a grown outbox for the near-empty table it last
    /// measured and checks every pending delivery's predecessors one by
    /// one (50 ms a claim at 15,000 pending, against 0.2 ms).
    async fn backlog(&self, conn: &mut Conn<'_>) -> Result<()> {
        {
            let mut last = self.analyzed.lock().unwrap_or_else(|e| e.into_inner());
            if last.is_some_and(|at| at.elapsed() < ANALYZE_EVERY) {
                return Ok(());
            }
            *last = Some(Instant::now());
        }
        crate::store::analyze(conn, "ig_webhook_deliveries", &[], None).await?;
        Ok(())
    }
}

/// The one HTTP client of a deliverer: the receiver's timeout, no
/// redirects (a receiver could redirect into the network the guard
/// keeps it from), and the guard's resolver.
fn client(app: &App) -> Result<reqwest::Client> {
    let hooks = &app.settings.webhooks;
    reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .timeout(hooks.timeout)
        .dns_resolver(guard::Resolver {
            allow_private: hooks.allow_private,
        })
        .user_agent(concat!("importgate-webhooks/", env!("CARGO_PKG_VERSION")))
        .build()
        .map_err(|e| Error::Internal(format!("the webhook client: {e}")))
}

/// The bodies of leased deliveries, by delivery id: kept from their first
/// attempt (a retry sends the same bytes under the same id), or made now
/// from their ledger links, read together.
async fn bodies(app: &App, due: &[Delivery]) -> Result<HashMap<String, String>> {
    let fresh: Vec<i64> = due
        .iter()
        .filter(|d| d.body.is_none())
        .filter_map(|d| d.seq)
        .collect();
    let mut made = if fresh.is_empty() {
        HashMap::new()
    } else {
        events::payloads(app, &fresh).await?
    };
    Ok(due
        .iter()
        .map(|d| {
            let body = d.body.clone().unwrap_or_else(|| {
                // The same payload as the feed and the stream (API.md
                // section 13).
                let payload = d.seq.and_then(|seq| made.remove(&seq));
                payload.unwrap_or_else(|| unseen(d)).to_string()
            });
            (d.id.clone(), body)
        })
        .collect())
}

/// The payload of a link no client sees as an event: it still says what
/// it was.
fn unseen(d: &Delivery) -> serde_json::Value {
    json!({
        "id": events::id(d.seq.unwrap_or_default()),
        "type": d.event_type,
        "created_at": crate::ledger::job::time(&d.created_at),
        "data": {},
    })
}

/// Records finished attempts a batch at a time, until every sender is
/// gone.
async fn record_loop(app: Arc<App>, owner: String, mut finished: mpsc::UnboundedReceiver<Done>) {
    while let Some(first) = finished.recv().await {
        let batch = gather(first, &mut finished).await;
        if let Err(e) = settle_all(&app, &owner, &batch).await {
            tracing::warn!(error = %e, n = batch.len(), "webhook attempts could not be recorded");
        }
    }
}

/// `first` and whatever finished within [`GATHER`] of it, up to [`BATCH`].
async fn gather(first: Done, finished: &mut mpsc::UnboundedReceiver<Done>) -> Vec<Done> {
    let mut batch = vec![first];
    let until = tokio::time::Instant::now() + GATHER;
    while batch.len() < BATCH {
        match tokio::time::timeout_at(until, finished.recv()).await {
            Ok(Some(d)) => batch.push(d),
            _ => break,
        }
    }
    batch
}

/// POSTs a delivery and says what happened: the status and answer, or
/// why there was none.
async fn send(
    app: &App,
    client: &reqwest::Client,
    w: &Webhook,
    d: &Delivery,
    body: &str,
) -> Attempt {
    let started = Instant::now();
    let at = Utc::now();
    let result = post(app, client, w, d, body).await;
    let latency_ms = started.elapsed().as_millis() as i64;
    match result {
        Ok((status, answer)) => Attempt {
            at,
            status: Some(status as i64),
            latency_ms,
            error: (!(200..300).contains(&status))
                .then(|| format!("the receiver answered {status}")),
            answer: Some(answer).filter(|a| !a.is_empty()),
        },
        Err(error) => Attempt {
            at,
            status: None,
            latency_ms,
            error: Some(error),
            answer: None,
        },
    }
}

/// POSTs a delivery's body, signed, to an address the guard allows: the
/// receiver's status and the start of its answer.
async fn post(
    app: &App,
    client: &reqwest::Client,
    w: &Webhook,
    d: &Delivery,
    body: &str,
) -> std::result::Result<(u16, String), String> {
    let url = reqwest::Url::parse(&w.url).map_err(|e| e.to_string())?;
    // A name is checked by the client's resolver as it connects; an
    // address written in the URL is checked here.
    guard::check_literal(&url, app.settings.webhooks.allow_private)?;
    let mut request = client.post(url).header("content-type", "application/json");
    for (name, value) in signing::headers(app, w, &d.id, body) {
        request = request.header(name, value);
    }
    let resp = request.body(body.to_string()).send().await.map_err(|e| {
        if e.is_timeout() {
            format!("no answer within {:?}", app.settings.webhooks.timeout)
        } else {
            format!("could not deliver: {e}")
        }
    })?;
    let status = resp.status().as_u16();
    Ok((status, answer(resp).await))
}

/// At most [`ANSWER_BYTES`] of a receiver's answer, read no further.
async fn answer(mut resp: reqwest::Response) -> String {
    let mut answer = Vec::new();
    while answer.len() < ANSWER_BYTES {
        match resp.chunk().await {
            Ok(Some(chunk)) => answer.extend_from_slice(&chunk),
            _ => break,
        }
    }
    answer.truncate(ANSWER_BYTES);
    String::from_utf8_lossy(&answer).into_owned()
}

/// Records attempts in one transaction: each delivery delivered, retried
/// later with backoff, or failed for good past the retry window; then
/// each endpoint's failing clock, and an endpoint that has failed for the
/// whole window is disabled.
async fn settle_all(app: &App, owner: &str, batch: &[Done]) -> Result<()> {
    let window = chrono::Duration::from_std(app.settings.webhooks.retry_window)
        .unwrap_or(chrono::Duration::hours(24));
    let at = now();
    let settled: Vec<Settled> = batch
        .iter()
        .map(|done| Settled {
            delivery: &done.delivery,
            attempt: &done.attempt,
            next: next_step(app, done, at, window),
        })
        .collect();
    let mut tx = app.db.begin().await?;
    let recorded = stored::record_all(&mut tx.conn(), owner, &settled).await?;
    for done in last_of_each_endpoint(batch, &recorded) {
        judge_endpoint(&mut tx.conn(), done, &settled, &recorded, at, window).await?;
    }
    tx.commit().await?;
    Ok(())
}

/// Where a delivery goes after its attempt `done`, recorded at `at`:
/// delivered, failed for good once it is older than the retry `window`,
/// else pending again after the backoff.
fn next_step<'a>(
    app: &App,
    done: &'a Done,
    at: DateTime<Utc>,
    window: chrono::Duration,
) -> Outcome<'a> {
    let (d, a) = (&done.delivery, &done.attempt);
    let (state, next_at_ms) = if a.error.is_none() {
        ("delivered", at.timestamp_millis())
    } else if at - d.created_at >= window {
        ("failed", at.timestamp_millis())
    } else {
        let wait = wait_after(app, d.attempts + 1).as_millis() as i64;
        ("pending", at.timestamp_millis() + wait)
    };
    Outcome {
        state,
        next_at_ms,
        body: &done.body,
    }
}

/// Each endpoint's last recorded attempt of the batch: it says whether the
/// endpoint is failing now.
fn last_of_each_endpoint<'a>(batch: &'a [Done], recorded: &HashSet<String>) -> Vec<&'a Done> {
    let mut last: HashMap<&str, &Done> = HashMap::new();
    for done in batch.iter().filter(|d| recorded.contains(&d.delivery.id)) {
        last.insert(&done.webhook.id, done);
    }
    last.into_values().collect()
}

/// Starts or stops an endpoint's failing clock by its last attempt
/// `done`, and disables an enabled endpoint that has failed for the whole
/// `window` (or whose delivery failed for good while it kept failing,
/// [`failed_all_along`]).
async fn judge_endpoint(
    conn: &mut Conn<'_>,
    done: &Done,
    settled: &[Settled<'_>],
    recorded: &HashSet<String>,
    at: DateTime<Utc>,
    window: chrono::Duration,
) -> Result<()> {
    let (w, a) = (&done.webhook, &done.attempt);
    let Some(error) = &a.error else {
        stored::set_failing(conn, &w.id, None).await?;
        return Ok(());
    };
    stored::set_failing(conn, &w.id, Some(a.at)).await?;
    let since = w.failing_since.unwrap_or(a.at);
    // An endpoint disabled already needs no reading of its attempts.
    let disable = w.enabled
        && (at - since >= window
            || failed_all_along(conn, settled, recorded, &w.id, since).await?);
    if disable {
        let reason = format!(
            "every delivery failed since {}; the last: {error}",
            crate::ledger::job::time(&since),
        );
        stored::disable(conn, &w.id, &reason, at).await?;
        tracing::warn!(webhook = %w.id, "webhook disabled after failing for the whole retry window");
    }
    Ok(())
}

/// Whether a delivery of endpoint `webhook` failed for good in this batch
/// and the endpoint has failed every attempt since that delivery's first
/// (`since` no later than it). A delivery's window counts from its
/// creation, the endpoint's from its first failed attempt, a little later:
/// without this an endpoint whose only delivery failed for good could
/// stay enabled, short of the window by the delivery's wait in the queue.
async fn failed_all_along(
    conn: &mut Conn<'_>,
    settled: &[Settled<'_>],
    recorded: &HashSet<String>,
    webhook: &str,
    since: DateTime<Utc>,
) -> Result<bool> {
    let ended = settled
        .iter()
        .filter(|s| s.next.state == "failed" && s.delivery.webhook_id == webhook)
        .filter(|s| recorded.contains(&s.delivery.id));
    for s in ended {
        let first = stored::first_attempt_at(conn, &s.delivery.id).await?;
        if first.unwrap_or(s.attempt.at) >= since {
            return Ok(true);
        }
    }
    Ok(false)
}

/// The wait before the next attempt after `failed` failures: the base,
/// doubling, at most [`RETRY_CAP`], with jitter so that endpoints that
/// failed together are not retried together.
fn wait_after(app: &App, failed: i64) -> Duration {
    let base = app.settings.webhooks.retry_base;
    retry::jittered(retry::backoff(base, failed, RETRY_CAP))
}
