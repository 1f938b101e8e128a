//! Webhooks (API.md section 13): admins register endpoints; every ledger
//! event an endpoint wants is delivered to it at least once, signed the
//! Standard Webhooks way, by workers on every replica.
//!
//! - The outbox: deliveries are written with the link they report
//!   (`store::ledger::append`), so a restart loses none.
//! - Workers lease due deliveries, POST them with a timeout and no
//!   redirects, and retry a non-2xx answer or a timeout with exponential
//!   backoff and jitter for the retry window; an endpoint failing for the
//!   whole window is disabled with the reason. Deliveries hold no database
//!   connection while they wait for a receiver, so a slow or dead receiver
//!   slows nothing but its own deliveries.
//! - The signing secret is derived from the ledger's key (kept outside the
//!   database) and a salt: reading the database does not give it away.
//! - SSRF guard: endpoints resolving to loopback, private or link-local
//!   addresses are refused unless `webhook_allow_private`; the address is
//!   checked again, and pinned, at every delivery (DNS can change).

use std::collections::HashMap;
use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use std::time::{Duration, Instant};

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as BASE64;
use chrono::Utc;
use hmac::{KeyInit, Mac};
use serde_json::json;
use tokio::sync::{Semaphore, mpsc};

use super::{App, Error, Result, admin_only, retry};
use crate::keys::KeyRecord;
use crate::ledger::events;
use crate::store::now;
use crate::store::webhooks::{self as stored, NewDelivery};
use crate::webhooks::{Attempt, Delivery, Webhook};

/// The prefix of a signing secret, as Standard Webhooks writes it.
pub const SECRET_PREFIX: &str = "whsec_";
/// At most this much of a receiver's answer is kept.
const ANSWER_BYTES: usize = 1024;
/// Deliveries a worker has in flight at once. A receiver answering in
/// 200 ms then takes 1,280 events a second from one replica; with 64 the
/// service's own load test (330 events a second) built a backlog.
const AT_ONCE: i64 = 256;
/// Deliveries in flight while the service is busy answering requests
/// ([`super::traffic`]): enough that a webhook is never starved, few enough
/// that deliveries do not take the CPU the waiting clients need.
pub const BUSY_AT_ONCE: i64 = 8;
/// How often, at most, the deliveries' statistics are refreshed while a
/// backlog waits.
const ANALYZE_EVERY: Duration = Duration::from_secs(60);
/// The longest wait between two attempts at a delivery.
const RETRY_CAP: Duration = Duration::from_secs(3600);

/// What an admin asks for.
#[derive(Debug, Clone, Default)]
pub struct Ask {
    pub url: String,
    pub events: Vec<String>,
    pub modules: Vec<String>,
    pub description: Option<String>,
}

/// What a change to an endpoint says; `None` leaves a part as it is.
#[derive(Debug, Clone, Default)]
pub struct Changes {
    pub url: Option<String>,
    pub events: Option<Vec<String>>,
    pub modules: Option<Vec<String>>,
    pub description: Option<String>,
    pub enabled: Option<bool>,
}

/// An endpoint's signing secret (`whsec_` + base64 of 32 bytes).
pub fn secret(app: &App, w: &Webhook) -> String {
    format!("{SECRET_PREFIX}{}", BASE64.encode(secret_bytes(app, w)))
}

fn secret_bytes(app: &App, w: &Webhook) -> [u8; 32] {
    app.seal.key.derive(
        "importgate webhook secret",
        &[w.id.as_bytes(), b"\n", w.salt.as_bytes()],
    )
}

/// The Standard Webhooks signature of a message: `v1,` + base64 of
/// HMAC-SHA256 over `{id}.{timestamp}.{body}` under the secret's bytes.
pub fn sign(secret: &[u8], id: &str, timestamp: i64, body: &str) -> String {
    let mut mac =
        <hmac::Hmac<sha2::Sha256> as KeyInit>::new_from_slice(secret).expect("any key length");
    mac.update(format!("{id}.{timestamp}.{body}").as_bytes());
    format!("v1,{}", BASE64.encode(mac.finalize().into_bytes()))
}

/// An admin registers an endpoint; it and its secret, shown once.
pub async fn create(app: &App, actor: &KeyRecord, ask: Ask) -> Result<(Webhook, String)> {
    admin_only(actor)?;
    let url = check_url(app, &ask.url).await?;
    let events = check_events(ask.events)?;
    let modules = check_modules(app, actor, ask.modules)?;
    let description = check_description(ask.description)?;
    let at = now();
    let w = Webhook {
        id: format!("wh_{}", ulid::Ulid::generate()),
        url,
        events,
        modules,
        description,
        salt: crate::keys::token(24),
        enabled: true,
        disabled_reason: None,
        failing_since: None,
        created_by: actor.id.clone(),
        created_at: at,
        updated_at: at,
    };
    let mut c = app.db.acquire().await?;
    stored::insert(&mut c.conn(), &w).await?;
    tracing::info!(webhook = %w.id, by = %actor.id, "webhook created");
    let secret = secret(app, &w);
    Ok((w, secret))
}

/// The endpoints an admin manages (within its module scope).
pub async fn list(app: &App, actor: &KeyRecord) -> Result<Vec<Webhook>> {
    admin_only(actor)?;
    let mut c = app.db.acquire().await?;
    let all = stored::list(&mut c.conn()).await?;
    Ok(all
        .into_iter()
        .filter(|w| super::keys::within_scope(actor, &w.modules).is_ok())
        .collect())
}

/// One endpoint an admin manages.
pub async fn get(app: &App, actor: &KeyRecord, id: &str) -> Result<Webhook> {
    admin_only(actor)?;
    let mut c = app.db.acquire().await?;
    let w = stored::get(&mut c.conn(), id)
        .await?
        .ok_or_else(|| Error::not_found("webhook", id))?;
    super::keys::within_scope(actor, &w.modules)?;
    Ok(w)
}

/// Changes an endpoint; enabling it again clears why it was disabled and
/// starts its failure clock afresh.
pub async fn update(app: &App, actor: &KeyRecord, id: &str, ch: Changes) -> Result<Webhook> {
    let mut w = get(app, actor, id).await?;
    if let Some(url) = ch.url {
        w.url = check_url(app, &url).await?;
    }
    if let Some(events) = ch.events {
        w.events = check_events(events)?;
    }
    if let Some(modules) = ch.modules {
        w.modules = check_modules(app, actor, modules)?;
    }
    if ch.description.is_some() {
        w.description = check_description(ch.description)?;
    }
    if let Some(enabled) = ch.enabled {
        if enabled && !w.enabled {
            w.disabled_reason = None;
            w.failing_since = None;
        }
        w.enabled = enabled;
    }
    w.updated_at = now();
    let mut c = app.db.acquire().await?;
    if !stored::update(&mut c.conn(), &w).await? {
        return Err(Error::not_found("webhook", id));
    }
    Ok(w)
}

/// Deletes an endpoint and its delivery log.
pub async fn delete(app: &App, actor: &KeyRecord, id: &str) -> Result<()> {
    get(app, actor, id).await?;
    let mut tx = app.db.begin().await?;
    stored::delete(&mut tx.conn(), id).await?;
    tx.commit().await?;
    tracing::info!(webhook = %id, by = %actor.id, "webhook deleted");
    Ok(())
}

/// An endpoint's latest deliveries, each with its attempts.
pub async fn deliveries(
    app: &App,
    actor: &KeyRecord,
    id: &str,
    limit: i64,
) -> Result<Vec<(Delivery, Vec<Attempt>)>> {
    get(app, actor, id).await?;
    let mut c = app.db.acquire().await?;
    let list = stored::deliveries(&mut c.conn(), id, limit.clamp(1, 500)).await?;
    let mut out = Vec::with_capacity(list.len());
    for d in list {
        let attempts = stored::attempts(&mut c.conn(), &d.id).await?;
        out.push((d, attempts));
    }
    Ok(out)
}

/// A person sends an ended delivery again (its attempts stay logged).
pub async fn retry(app: &App, actor: &KeyRecord, id: &str, delivery_id: &str) -> Result<Delivery> {
    let w = get(app, actor, id).await?;
    if !w.enabled {
        return Err(Error::InvalidState {
            title: "The webhook is disabled",
            detail: format!("enable {id} first; its deliveries wait while it is disabled"),
            state: "disabled".into(),
        });
    }
    let mut c = app.db.acquire().await?;
    let missing = || Error::not_found("delivery", delivery_id);
    stored::delivery_of(&mut c.conn(), id, delivery_id)
        .await?
        .ok_or_else(missing)?;
    if !stored::retry(&mut c.conn(), delivery_id, now().timestamp_millis()).await? {
        return Err(Error::InvalidState {
            title: "The delivery is still being tried",
            detail: format!("{delivery_id} is pending"),
            state: "pending".into(),
        });
    }
    app.moves.other();
    stored::delivery_of(&mut c.conn(), id, delivery_id)
        .await?
        .ok_or_else(missing)
}

/// Sends a `webhook.test` event to an endpoint (a ping, to try it).
pub async fn test(app: &App, actor: &KeyRecord, id: &str) -> Result<Delivery> {
    let w = get(app, actor, id).await?;
    let at = now();
    let body = json!({
        "id": format!("evt_test_{}", ulid::Ulid::generate()),
        "type": "webhook.test",
        "created_at": crate::ledger::job::time(&at),
        "data": {"webhook": {"id": w.id, "url": w.url}},
    });
    let mut c = app.db.acquire().await?;
    let d = NewDelivery {
        webhook_id: &w.id,
        seq: None,
        subject: &w.id,
        event_type: "webhook.test",
        body: Some(body.to_string()),
    };
    let delivery_id = stored::add(&mut c.conn(), &d, at).await?;
    app.moves.other();
    stored::delivery_of(&mut c.conn(), &w.id, &delivery_id)
        .await?
        .ok_or_else(|| Error::not_found("delivery", &delivery_id))
}

fn check_events(events: Vec<String>) -> Result<Vec<String>> {
    if events.is_empty() {
        return Err(Error::invalid(
            "events",
            "events must list event types or \"*\"",
        ));
    }
    if events.len() > events::TYPES.len() + 1 {
        return Err(Error::invalid(
            "events",
            "events lists more entries than there are types",
        ));
    }
    let mut out: Vec<String> = Vec::new();
    for e in events {
        if e != "*" && !events::TYPES.contains(&e.as_str()) {
            return Err(Error::invalid(
                "events",
                format!(
                    "{e:?} is not an event type; known: {}",
                    events::TYPES.join(", ")
                ),
            ));
        }
        if !out.contains(&e) {
            out.push(e);
        }
    }
    Ok(out)
}

fn check_modules(app: &App, actor: &KeyRecord, modules: Vec<String>) -> Result<Vec<String>> {
    let modules = if modules.is_empty() {
        vec!["*".to_string()]
    } else {
        modules
    };
    if modules.len() > app.catalog.modules().len() + 1 {
        return Err(Error::invalid(
            "modules",
            "modules lists more entries than there are modules",
        ));
    }
    let mut out: Vec<String> = Vec::new();
    for m in modules {
        if m != "*" && app.catalog.get(&m).is_none() {
            return Err(Error::invalid("modules", format!("{m:?} is not a module")));
        }
        if !out.contains(&m) {
            out.push(m);
        }
    }
    super::keys::within_scope(actor, &out)?;
    Ok(out)
}

fn check_description(d: Option<String>) -> Result<Option<String>> {
    let d = d.map(|d| d.trim().to_string()).filter(|d| !d.is_empty());
    if d.as_ref()
        .is_some_and(|d| d.chars().count() > 500 || d.contains('\0'))
    {
        return Err(Error::invalid(
            "description",
            "a description has at most 500 characters and no NUL",
        ));
    }
    Ok(d)
}

/// Checks an endpoint's URL: `http` or `https`, a host that resolves, and
/// (unless allowed) no loopback, private or link-local address.
async fn check_url(app: &App, url: &str) -> Result<String> {
    let bad = |why: String| Error::invalid("url", why);
    let url = url.trim();
    if url.len() > 2000 {
        return Err(bad("url has at most 2000 characters".into()));
    }
    let parsed = reqwest::Url::parse(url).map_err(|e| bad(format!("{url:?} is not a URL: {e}")))?;
    if !matches!(parsed.scheme(), "http" | "https") {
        return Err(bad(format!(
            "a webhook URL is http or https, not {}",
            parsed.scheme()
        )));
    }
    resolve(app, &parsed).await.map_err(bad)?;
    Ok(parsed.to_string())
}

/// The address to deliver to: the host's first address, every one of
/// which must be allowed.
async fn resolve(app: &App, url: &reqwest::Url) -> std::result::Result<SocketAddr, String> {
    let host = url.host_str().ok_or("the URL names no host")?;
    let port = url.port_or_known_default().unwrap_or(80);
    let host = host.trim_start_matches('[').trim_end_matches(']');
    let found = tokio::time::timeout(
        Duration::from_secs(5),
        tokio::net::lookup_host((host, port)),
    )
    .await
    .map_err(|_| format!("{host} did not resolve in time"))?
    .map_err(|e| format!("{host} does not resolve: {e}"))?
    .collect::<Vec<_>>();
    let first = *found.first().ok_or(format!("{host} has no address"))?;
    if !app.settings.webhooks.allow_private
        && let Some(private) = found.iter().find(|a| !public(a.ip()))
    {
        return Err(format!(
            "{host} resolves to {}, a loopback, private or link-local address; \
             the setting webhook_allow_private allows internal receivers",
            private.ip()
        ));
    }
    Ok(first)
}

/// The delivery client's resolver: the host's addresses, every one of
/// which must be public unless private ones are allowed. The addresses it
/// checks are the ones connected to, so a name cannot be pointed at a
/// private address between the check and the connection.
struct Guard {
    allow_private: bool,
}

impl reqwest::dns::Resolve for Guard {
    fn resolve(&self, name: reqwest::dns::Name) -> reqwest::dns::Resolving {
        let allow_private = self.allow_private;
        let host = name.as_str().to_string();
        Box::pin(async move {
            let found: Vec<SocketAddr> =
                tokio::net::lookup_host((host.as_str(), 0)).await?.collect();
            if !allow_private && let Some(a) = found.iter().find(|a| !public(a.ip())) {
                return Err(format!("{host} resolves to {}, a private address", a.ip()).into());
            }
            Ok(Box::new(found.into_iter()) as reqwest::dns::Addrs)
        })
    }
}

/// Whether an address is on the public internet.
fn public(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => {
            let o = v4.octets();
            !(v4.is_loopback()
                || v4.is_private()
                || v4.is_link_local()
                || v4.is_unspecified()
                || v4.is_broadcast()
                || v4.is_multicast()
                || v4.is_documentation()
                || o[0] == 0
                || (o[0] == 100 && (o[1] & 0xc0) == 64))
        }
        IpAddr::V6(v6) => {
            if let Some(v4) = v6.to_ipv4_mapped() {
                return public(IpAddr::V4(v4));
            }
            let first = v6.segments()[0];
            !(v6.is_loopback()
                || v6.is_unspecified()
                || v6.is_multicast()
                || (first & 0xfe00) == 0xfc00
                || (first & 0xffc0) == 0xfe80)
        }
    }
}

/// A delivery worker: at most [`AT_ONCE`] deliveries in flight, each sent
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
        let hooks = &app.settings.webhooks;
        let client = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .timeout(hooks.timeout)
            .dns_resolver(Guard {
                allow_private: hooks.allow_private,
            })
            .user_agent(concat!("importgate-webhooks/", env!("CARGO_PKG_VERSION")))
            .build()
            .map_err(|e| Error::Internal(format!("the webhook client: {e}")))?;
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
    /// service is `busy`, [`super::traffic`]) and starts sending them. How
    /// many it started.
    pub async fn round(&self, app: &Arc<App>, owner: &str, busy: bool) -> Result<usize> {
        let most = if busy { BUSY_AT_ONCE } else { AT_ONCE };
        let in_flight = AT_ONCE - self.permits.available_permits() as i64;
        let room = most - in_flight;
        // Leases in batches: waiting until a quarter of the room is free
        // costs a little latency and saves a write transaction a delivery.
        if room < most / 4 {
            return Ok(0);
        }
        let now_ms = now().timestamp_millis();
        // Long enough for the receiver's whole timeout and the recording;
        // a killed worker's deliveries are taken over once it lapses.
        let webhooks = &app.settings.webhooks;
        let lease = webhooks.timeout + Duration::from_millis(app.settings.lease_ms as u64);
        let until = now_ms + lease.as_millis() as i64;
        let (due, hooks) = {
            let mut c = app.db.acquire().await?;
            let due = stored::claim(&mut c.conn(), owner, now_ms, until, room).await?;
            if due.len() as i64 == room {
                self.backlog(&mut c.conn()).await?;
            }
            let hooks = if due.is_empty() {
                Vec::new()
            } else {
                stored::list(&mut c.conn()).await?
            };
            (due, hooks)
        };
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
            let (app, done, client) = (app.clone(), self.done.clone(), self.client.clone());
            tokio::spawn(async move {
                let attempt = send(&app, &client, &w, &d, &body).await;
                let _ = done.send(Done {
                    webhook: w,
                    delivery: d,
                    body,
                    attempt,
                });
                drop(permit);
            });
        }
        Ok(n)
    }

    /// A claim found more due deliveries than it had room for: a backlog.
    /// Its statistics are refreshed (at most every [`ANALYZE_EVERY`]) so
    /// that the claim is planned for the table as it is; without them
    /// PostgreSQL takes a grown outbox for the near-empty table it last
    /// measured and checks every pending delivery's predecessors one by
    /// one (50 ms a claim at 15,000 pending, against 0.2 ms).
    async fn backlog(&self, conn: &mut crate::store::Conn<'_>) -> Result<()> {
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
        super::events::payloads(app, &fresh).await?
    };
    Ok(due
        .iter()
        .map(|d| {
            let body = d.body.clone().unwrap_or_else(|| {
                // The same payload as the feed and the stream (API.md
                // section 13); a link no client sees as an event still
                // says what it was.
                d.seq
                    .and_then(|seq| made.remove(&seq))
                    .unwrap_or_else(|| {
                        json!({"id": super::events::id(d.seq.unwrap_or_default()),
                               "type": d.event_type,
                               "created_at": crate::ledger::job::time(&d.created_at),
                               "data": {}})
                    })
                    .to_string()
            });
            (d.id.clone(), body)
        })
        .collect())
}

/// Records finished attempts a batch at a time: whatever finished within
/// 50 ms of the first, up to 256.
async fn record_loop(app: Arc<App>, owner: String, mut finished: mpsc::UnboundedReceiver<Done>) {
    while let Some(first) = finished.recv().await {
        let mut batch = vec![first];
        let until = tokio::time::Instant::now() + Duration::from_millis(50);
        while batch.len() < 256 {
            match tokio::time::timeout_at(until, finished.recv()).await {
                Ok(Some(d)) => batch.push(d),
                _ => break,
            }
        }
        if let Err(e) = settle_all(&app, &owner, &batch).await {
            tracing::warn!(error = %e, n = batch.len(), "webhook attempts could not be recorded");
        }
    }
}

/// POSTs a delivery: signed, with a timeout, no redirects, at the address
/// checked now. What happened.
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
    let literal = url
        .host_str()
        .map(|h| h.trim_start_matches('[').trim_end_matches(']'))
        .and_then(|h| h.parse::<IpAddr>().ok());
    if let Some(ip) = literal
        && !app.settings.webhooks.allow_private
        && !public(ip)
    {
        return Err(format!("{ip} is a loopback, private or link-local address"));
    }
    let timestamp = Utc::now().timestamp();
    let signature = sign(&secret_bytes(app, w), &d.id, timestamp, body);
    let sent = client
        .post(url)
        .header("content-type", "application/json")
        .header("webhook-id", &d.id)
        .header("webhook-timestamp", timestamp.to_string())
        .header("webhook-signature", signature)
        .body(body.to_string())
        .send()
        .await;
    let mut resp = sent.map_err(|e| {
        if e.is_timeout() {
            format!("no answer within {:?}", app.settings.webhooks.timeout)
        } else {
            format!("could not deliver: {e}")
        }
    })?;
    let status = resp.status().as_u16();
    // At most 1 KiB of the answer is read and kept.
    let mut answer = Vec::new();
    while answer.len() < ANSWER_BYTES {
        match resp.chunk().await {
            Ok(Some(chunk)) => answer.extend_from_slice(&chunk),
            _ => break,
        }
    }
    answer.truncate(ANSWER_BYTES);
    Ok((status, String::from_utf8_lossy(&answer).into_owned()))
}

/// Records attempts in one transaction: each delivery delivered, retried
/// later with backoff, or failed for good past the retry window; an
/// endpoint whose last attempt of the batch failed, and that has failed for
/// the whole window, is disabled.
async fn settle_all(app: &App, owner: &str, batch: &[Done]) -> Result<()> {
    let window = chrono::Duration::from_std(app.settings.webhooks.retry_window)
        .unwrap_or(chrono::Duration::hours(24));
    let at = now();
    let settled: Vec<stored::Settled> = batch
        .iter()
        .map(|done| {
            let (d, a) = (&done.delivery, &done.attempt);
            let (state, next_at) = if a.error.is_none() {
                ("delivered", at.timestamp_millis())
            } else if at - d.created_at >= window {
                ("failed", at.timestamp_millis())
            } else {
                let wait = backoff(app, d.attempts + 1).as_millis() as i64;
                ("pending", at.timestamp_millis() + wait)
            };
            stored::Settled {
                delivery: d,
                attempt: a,
                next: stored::Outcome {
                    state,
                    next_at_ms: next_at,
                    body: &done.body,
                },
            }
        })
        .collect();
    let mut tx = app.db.begin().await?;
    let recorded = stored::record_all(&mut tx.conn(), owner, &settled).await?;
    // Each endpoint's last recorded attempt of the batch says whether it
    // is failing now.
    let mut last: HashMap<&str, &Done> = HashMap::new();
    for done in batch.iter().filter(|d| recorded.contains(&d.delivery.id)) {
        last.insert(&done.webhook.id, done);
    }
    for Done {
        webhook: w,
        attempt: a,
        ..
    } in last.into_values()
    {
        if a.error.is_none() {
            stored::set_failing(&mut tx.conn(), &w.id, None).await?;
            continue;
        }
        stored::set_failing(&mut tx.conn(), &w.id, Some(a.at)).await?;
        let since = w.failing_since.unwrap_or(a.at);
        // An endpoint disabled already needs no reading of its attempts.
        let disable = w.enabled
            && (at - since >= window
                || failed_all_along(&mut tx.conn(), &settled, &recorded, &w.id, since).await?);
        if disable {
            let reason = format!(
                "every delivery failed since {}; the last: {}",
                crate::ledger::job::time(&since),
                a.error.as_deref().unwrap_or("no answer")
            );
            stored::disable(&mut tx.conn(), &w.id, &reason, at).await?;
            tracing::warn!(webhook = %w.id, "webhook disabled after failing for the whole retry window");
        }
    }
    tx.commit().await?;
    Ok(())
}

/// Whether a delivery of endpoint `webhook` failed for good in this batch
/// and the endpoint has failed every attempt since that delivery's first
/// (`since` no later than it). A delivery's window counts from its
/// creation, the endpoint's from its first failed attempt, a little later:
/// without this an endpoint whose only delivery failed for good could
/// stay enabled, short of the window by the delivery's wait in the queue.
async fn failed_all_along(
    conn: &mut crate::store::Conn<'_>,
    settled: &[stored::Settled<'_>],
    recorded: &std::collections::HashSet<String>,
    webhook: &str,
    since: chrono::DateTime<Utc>,
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
fn backoff(app: &App, failed: i64) -> Duration {
    let base = app.settings.webhooks.retry_base;
    retry::jittered(retry::backoff(base, failed, RETRY_CAP))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn private_and_public_addresses_are_told_apart() {
        for ip in [
            "127.0.0.1",
            "10.1.2.3",
            "172.16.0.1",
            "192.168.1.1",
            "169.254.169.254",
            "0.0.0.0",
            "100.64.0.1",
            "::1",
            "fd00::1",
            "fe80::1",
            "::ffff:127.0.0.1",
        ] {
            assert!(!public(ip.parse().unwrap()), "{ip}");
        }
        for ip in ["8.8.8.8", "1.1.1.1", "2606:4700:4700::1111"] {
            assert!(public(ip.parse().unwrap()), "{ip}");
        }
    }

    /// The example of the Standard Webhooks specification.
    #[test]
    fn the_signature_is_the_standard_webhooks_one() {
        let secret = BASE64.decode("MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw").unwrap();
        let body = r#"{"test": 2432232314}"#;
        assert_eq!(
            sign(&secret, "msg_p5jXN8AQM9LWM0D4loKWxJek", 1614265330, body),
            "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="
        );
    }
}
