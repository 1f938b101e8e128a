//! What an admin does with webhook endpoints, for the API and the console
//! alike: register one (its secret shown once), read, change, delete, read
//! its deliveries, retry one, send a test. Only admins may, and only for
//! endpoints within their module scope; what they ask for is checked here
//! (a URL the guard allows, known event types and modules, a short
//! description), so neither front door can let through what the other
//! refuses.

use serde_json::json;

use super::{guard, signing};
use crate::keys::KeyRecord;
use crate::ledger::events;
use crate::service::{App, Error, Result, admin_only, keys::within_scope};
use crate::store::now;
use crate::store::webhooks::{self as stored, NewDelivery};
use crate::webhooks::{Attempt, Delivery, Webhook};

/// The longest URL an endpoint may have.
const URL_CHARS: usize = 2000;
/// The longest description an endpoint may have.
const DESCRIPTION_CHARS: usize = 500;
/// The most deliveries one read of an endpoint's log returns.
const MOST_DELIVERIES: i64 = 500;

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
    let secret = signing::secret(app, &w);
    Ok((w, secret))
}

/// The endpoints an admin manages (within its module scope).
pub async fn list(app: &App, actor: &KeyRecord) -> Result<Vec<Webhook>> {
    admin_only(actor)?;
    let mut c = app.db.acquire().await?;
    let all = stored::list(&mut c.conn()).await?;
    Ok(all
        .into_iter()
        .filter(|w| within_scope(actor, &w.modules).is_ok())
        .collect())
}

/// One endpoint an admin manages.
pub async fn get(app: &App, actor: &KeyRecord, id: &str) -> Result<Webhook> {
    admin_only(actor)?;
    let mut c = app.db.acquire().await?;
    let w = stored::get(&mut c.conn(), id)
        .await?
        .ok_or_else(|| Error::not_found("webhook", id))?;
    within_scope(actor, &w.modules)?;
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

/// An endpoint's latest deliveries (at most `limit`, newest first), each
/// with its attempts.
pub async fn deliveries(
    app: &App,
    actor: &KeyRecord,
    id: &str,
    limit: i64,
) -> Result<Vec<(Delivery, Vec<Attempt>)>> {
    get(app, actor, id).await?;
    let mut c = app.db.acquire().await?;
    let limit = limit.clamp(1, MOST_DELIVERIES);
    let list = stored::deliveries(&mut c.conn(), id, limit).await?;
    let mut out = Vec::with_capacity(list.len());
    for d in list {
        let attempts = stored::attempts(&mut c.conn(), &d.id).await?;
        out.push((d, attempts));
    }
    Ok(out)
}

/// A person sends an ended delivery again (its attempts stay logged). A
/// disabled endpoint's deliveries wait, so it must be enabled first.
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
    // Wakes the deliverer now rather than at its next round.
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

/// Checks an endpoint's URL: `http` or `https`, a host that resolves, and
/// one the guard allows ([`guard::check`]). The URL as it is kept.
async fn check_url(app: &App, url: &str) -> Result<String> {
    let bad = |why: String| Error::invalid("url", why);
    let url = url.trim();
    if url.len() > URL_CHARS {
        return Err(bad(format!("url has at most {URL_CHARS} characters")));
    }
    let parsed = reqwest::Url::parse(url).map_err(|e| bad(format!("{url:?} is not a URL: {e}")))?;
    if !matches!(parsed.scheme(), "http" | "https") {
        return Err(bad(format!(
            "a webhook URL is http or https, not {}",
            parsed.scheme()
        )));
    }
    let allow_private = app.settings.webhooks.allow_private;
    guard::check(&parsed, allow_private).await.map_err(bad)?;
    Ok(parsed.to_string())
}

/// Checks the event types an endpoint wants: known types or `*`, each
/// once.
fn check_events(events: Vec<String>) -> Result<Vec<String>> {
    let bad = |why: String| Error::invalid("events", why);
    if events.is_empty() {
        return Err(bad("events must list event types or \"*\"".into()));
    }
    if events.len() > events::TYPES.len() + 1 {
        return Err(bad("events lists more entries than there are types".into()));
    }
    if let Some(e) = events
        .iter()
        .find(|e| *e != "*" && !events::TYPES.contains(&e.as_str()))
    {
        let known = events::TYPES.join(", ");
        return Err(bad(format!("{e:?} is not an event type; known: {known}")));
    }
    Ok(each_once(events))
}

/// Checks the modules an endpoint hears about: catalog modules or `*`
/// (none listed is `*`), each once, all within the admin's scope.
fn check_modules(app: &App, actor: &KeyRecord, modules: Vec<String>) -> Result<Vec<String>> {
    let bad = |why: String| Error::invalid("modules", why);
    let modules = if modules.is_empty() {
        vec!["*".to_string()]
    } else {
        modules
    };
    if modules.len() > app.catalog.modules().len() + 1 {
        return Err(bad(
            "modules lists more entries than there are modules".into()
        ));
    }
    if let Some(m) = modules
        .iter()
        .find(|m| *m != "*" && app.catalog.get(m).is_none())
    {
        return Err(bad(format!("{m:?} is not a module")));
    }
    let modules = each_once(modules);
    within_scope(actor, &modules)?;
    Ok(modules)
}

/// Checks a description: trimmed, empty is none, at most
/// [`DESCRIPTION_CHARS`] characters and no NUL (PostgreSQL text cannot
/// hold one).
fn check_description(d: Option<String>) -> Result<Option<String>> {
    let d = d.map(|d| d.trim().to_string()).filter(|d| !d.is_empty());
    if d.as_ref()
        .is_some_and(|d| d.chars().count() > DESCRIPTION_CHARS || d.contains('\0'))
    {
        return Err(Error::invalid(
            "description",
            format!("a description has at most {DESCRIPTION_CHARS} characters and no NUL"),
        ));
    }
    Ok(d)
}

/// A list with each entry once, in the order first given.
fn each_once(list: Vec<String>) -> Vec<String> {
    let mut out: Vec<String> = Vec::with_capacity(list.len());
    for item in list {
        if !out.contains(&item) {
            out.push(item);
        }
    }
    out
}
