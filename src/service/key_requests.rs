//! Key requests (API.md section 7): anyone may ask for a key, an admin
//! approves or denies, and the requester collects the key exactly once with
//! the claim token given when they asked.
//!
//! The key is made at collection, not at approval, so no secret waits in the
//! database; the claim token is kept only as a hash. The requester's name
//! and email are masked wherever a request is shown and never logged.

use serde_json::json;
use subtle::ConstantTimeEq;

use super::keys::{NewKey, log};
use super::{App, Error, Result, admin_only};
use crate::keys::{self, Email, KeyRecord, KeyRequest, RequestState};
use crate::store;

/// What a person asks for, as they wrote it.
#[derive(Debug, Clone)]
pub struct Ask {
    pub name: String,
    pub email: String,
    pub role: String,
    /// Module keys; empty means every module.
    pub modules: Vec<String>,
    pub reason: String,
}

fn check_reason(reason: &str) -> Result<()> {
    if reason.is_empty() || reason.chars().count() > 2000 {
        return Err(Error::invalid(
            "reason",
            "reason must have 1 to 2000 characters: say what the key is for",
        ));
    }
    if reason.contains('\0') {
        return Err(Error::invalid(
            "reason",
            "reason may not hold NUL characters",
        ));
    }
    Ok(())
}

/// Requests one client address may make in an hour, refused ones included.
pub const PER_CLIENT_HOUR: i64 = 10;
/// Requests from one address waiting for a decision, past which that
/// address waits.
pub const PENDING_PER_CLIENT: i64 = 3;
/// Requests waiting for a decision, in all, past which new ones wait.
pub const MOST_PENDING: i64 = 1000;

/// Counts a request from `client` (its address) against the limits of
/// API.md section 7: at most [`PER_CLIENT_HOUR`] an hour from one address
/// (refused ones included), at most [`PENDING_PER_CLIENT`] of its requests
/// waiting, and at most [`MOST_PENDING`] waiting in all. A flood from a few
/// addresses fills only their own share until an admin denies it all
/// ([`deny_all_from`]). The counts are read before the request is written,
/// so requests racing on PostgreSQL may pass a limit by the few in flight.
async fn within_limits(app: &App, client: &str) -> Result<()> {
    let now = store::now();
    let mut c = app.db.acquire().await?;
    let made =
        store::key_requests::attempt(&mut c.conn(), client, now, now - chrono::Duration::hours(1))
            .await?;
    if made > PER_CLIENT_HOUR {
        return Err(Error::TooMany {
            message: format!(
                "at most {PER_CLIENT_HOUR} key requests an hour from one address; try again later"
            ),
            retry_after: 3600,
        });
    }
    if store::key_requests::pending_from(&mut c.conn(), client).await? >= PENDING_PER_CLIENT {
        return Err(Error::TooMany {
            message: format!(
                "{PENDING_PER_CLIENT} key requests from this address already wait for an admin; \
                 try again once they are decided"
            ),
            retry_after: 3600,
        });
    }
    if store::key_requests::pending_count(&mut c.conn()).await? >= MOST_PENDING {
        return Err(Error::TooMany {
            message: format!(
                "{MOST_PENDING} key requests already wait for an admin; try again later"
            ),
            retry_after: 3600,
        });
    }
    Ok(())
}

/// Records a request (anyone, from the client address `client`); gives it
/// and the claim token (shown once).
pub async fn submit(app: &App, client: &str, ask: Ask) -> Result<(KeyRequest, String)> {
    within_limits(app, client).await?;
    let modules = if ask.modules.is_empty() {
        vec!["*".to_string()]
    } else {
        ask.modules
    };
    let new = NewKey::parse(app, &ask.name, &ask.role, modules, None)?;
    let email = Email::parse(&ask.email)?.into_string();
    let reason = ask.reason.trim().to_string();
    check_reason(&reason)?;
    let token = keys::token(40);
    let r = KeyRequest {
        id: format!("kr_{}", ulid::Ulid::generate()),
        name: new.name,
        email,
        role: new.role,
        modules: new.modules,
        reason,
        claim_hash: keys::hash(&token),
        state: RequestState::Pending,
        created_at: store::now(),
        decided_at: None,
        decided_by: None,
        comment: None,
        key_id: None,
        collected_at: None,
        client: Some(client.to_string()),
    };
    let mut tx = app.db.begin().await?;
    store::key_requests::insert(&mut tx.conn(), &r).await?;
    let detail = json!({"role": r.role.as_str(), "modules": r.modules});
    let states = (None, r.state.as_str());
    log(
        app,
        &mut tx.conn(),
        &r.id,
        "key_request_created",
        states,
        None,
        detail,
    )
    .await?;
    tx.commit().await?;
    app.moves.other();
    super::seal::checkpoint_now(app).await;
    tracing::info!(request = %r.id, role = r.role.as_str(), "key requested");
    Ok((r, token))
}

/// Ends the requests past their time (API.md section 7): a pending one
/// after 7 days, an approved one not collected after 72 hours (settings).
/// Done before every read, so no request outlives its time between sweeps.
pub async fn expire_due(app: &App) -> Result<u64> {
    let now = store::now();
    let pending = now - chrono::Duration::seconds(app.settings.key_request_pending_secs);
    let approved = now - chrono::Duration::seconds(app.settings.key_request_collect_secs);
    let mut c = app.db.acquire().await?;
    Ok(store::key_requests::expire_due(&mut c.conn(), pending, approved).await?)
}

/// An admin withdraws an approved request before its key is collected.
pub async fn withdraw(app: &App, actor: &KeyRecord, id: &str) -> Result<KeyRequest> {
    admin_only(actor)?;
    expire_due(app).await?;
    let mut tx = app.db.begin().await?;
    let mut c = tx.conn();
    let r = store::key_requests::get(&mut c, id)
        .await?
        .ok_or_else(|| Error::not_found("key request", id))?;
    super::keys::within_scope(actor, &r.modules)?;
    if !store::key_requests::withdraw(&mut c, id).await? {
        let now = store::key_requests::get(&mut c, id).await?.unwrap_or(r);
        return Err(Error::InvalidState {
            title: "Only an approved request not yet collected can be withdrawn",
            detail: format!("{} is {}", now.id, now.state.as_str()),
            state: now.state.as_str().to_string(),
        });
    }
    let states = (Some("approved"), "withdrawn");
    log(
        app,
        &mut c,
        id,
        "key_request_withdrawn",
        states,
        Some(actor),
        json!({}),
    )
    .await?;
    let r = store::key_requests::get(&mut c, id)
        .await?
        .ok_or_else(|| Error::not_found("key request", id))?;
    tx.commit().await?;
    app.moves.other();
    super::seal::checkpoint_now(app).await;
    tracing::info!(request = %id, by = %actor.id, "key request withdrawn");
    Ok(r)
}

/// Key requests (admins), newest first, a page of at most `limit` older
/// than `cursor` (an id) when given.
pub async fn list(
    app: &App,
    actor: &KeyRecord,
    pending_only: bool,
    cursor: Option<&str>,
    limit: i64,
) -> Result<Vec<KeyRequest>> {
    admin_only(actor)?;
    expire_due(app).await?;
    let mut c = app.db.acquire().await?;
    let list = store::key_requests::list(&mut c.conn(), pending_only, cursor, limit).await?;
    Ok(list
        .into_iter()
        .filter(|r| super::keys::within_scope(actor, &r.modules).is_ok())
        .collect())
}

fn not_pending(r: &KeyRequest) -> Error {
    Error::InvalidState {
        title: "The request is not pending",
        detail: format!("{} is {}", r.id, r.state.as_str()),
        state: r.state.as_str().to_string(),
    }
}

/// An admin's decision on a pending request: approve (the key is made
/// when collected) or deny.
pub async fn decide(
    app: &App,
    actor: &KeyRecord,
    id: &str,
    approve: bool,
    comment: Option<&str>,
) -> Result<KeyRequest> {
    admin_only(actor)?;
    let comment = super::comment(comment)?;
    expire_due(app).await?;
    let mut tx = app.db.begin().await?;
    let mut c = tx.conn();
    let r = store::key_requests::get(&mut c, id)
        .await?
        .ok_or_else(|| Error::not_found("key request", id))?;
    // Beyond its modules a scoped admin neither approves nor denies, and
    // learns nothing of the requester (API.md section 1).
    super::keys::within_scope(actor, &r.modules)?;
    let to = if approve {
        RequestState::Approved
    } else {
        RequestState::Denied
    };
    if r.state != RequestState::Pending
        || !store::key_requests::decide(&mut c, id, to, &actor.id, comment.as_deref()).await?
    {
        // Somebody decided first: answer from the state now.
        let now = store::key_requests::get(&mut c, id).await?.unwrap_or(r);
        return Err(not_pending(&now));
    }
    let detail = json!({"decision": to.as_str(), "comment": comment});
    let states = (Some("pending"), to.as_str());
    log(
        app,
        &mut c,
        id,
        "key_request_decided",
        states,
        Some(actor),
        detail,
    )
    .await?;
    let r = store::key_requests::get(&mut c, id)
        .await?
        .ok_or_else(|| Error::not_found("key request", id))?;
    tx.commit().await?;
    app.moves.other();
    super::seal::checkpoint_now(app).await;
    tracing::info!(request = %id, by = %actor.id, decision = to.as_str(), "key request decided");
    Ok(r)
}

/// Denies every pending request from one client address within the
/// admin's scope, each a decision of its own in the ledger, in one
/// transaction (the console's "Deny all from this address"). How many.
pub async fn deny_all_from(
    app: &App,
    actor: &KeyRecord,
    client: &str,
    comment: Option<&str>,
) -> Result<usize> {
    admin_only(actor)?;
    let comment = super::comment(comment)?;
    expire_due(app).await?;
    let mut tx = app.db.begin().await?;
    let mut c = tx.conn();
    let mut denied = 0;
    for id in store::key_requests::pending_ids_from(&mut c, client).await? {
        let Some(r) = store::key_requests::get(&mut c, &id).await? else {
            continue;
        };
        if super::keys::within_scope(actor, &r.modules).is_err() {
            continue;
        }
        let to = RequestState::Denied;
        if !store::key_requests::decide(&mut c, &id, to, &actor.id, comment.as_deref()).await? {
            continue;
        }
        let detail = json!({"decision": to.as_str(), "comment": comment, "client": client});
        let states = (Some("pending"), to.as_str());
        log(
            app,
            &mut c,
            &id,
            "key_request_decided",
            states,
            Some(actor),
            detail,
        )
        .await?;
        denied += 1;
    }
    tx.commit().await?;
    app.moves.other();
    super::seal::checkpoint_now(app).await;
    tracing::info!(by = %actor.id, denied, "key requests from one address denied");
    Ok(denied)
}

/// The requester's look at their request with the claim token: once it is
/// approved, the first look makes the key and hands it out; later looks get
/// [`Error::AlreadyCollected`]. A wrong token is the same not-found as an
/// unknown id, so tokens cannot be probed per request.
pub async fn claim(app: &App, id: &str, token: &str) -> Result<(KeyRequest, Option<String>)> {
    let unknown = || Error::not_found("key request", id);
    expire_due(app).await?;
    let mut tx = app.db.begin().await?;
    let r = store::key_requests::get(&mut tx.conn(), id)
        .await?
        .ok_or_else(unknown)?;
    let presented = keys::hash(token);
    if !bool::from(presented.as_bytes().ct_eq(r.claim_hash.as_bytes())) {
        tx.rollback().await?;
        return Err(unknown());
    }
    match r.state {
        // An approved request that expired or was withdrawn has a
        // decision: its key is gone. An undecided one that expired is
        // shown as it is, like a denied one.
        RequestState::Expired | RequestState::Withdrawn if r.decided_at.is_some() => {
            tx.rollback().await?;
            let detail = match r.state {
                RequestState::Withdrawn => format!(
                    "an admin withdrew the approval of {id} before the key was collected; ask for a new key"
                ),
                _ => format!(
                    "the key of {id} was not collected within its time after approval; ask for a new key"
                ),
            };
            Err(Error::Closed {
                state: r.state,
                detail,
            })
        }
        RequestState::Pending
        | RequestState::Denied
        | RequestState::Expired
        | RequestState::Withdrawn => {
            tx.rollback().await?;
            Ok((r, None))
        }
        RequestState::Collected => {
            tx.rollback().await?;
            Err(Error::AlreadyCollected { id: id.to_string() })
        }
        RequestState::Approved => {
            // The admin who approved the request issues its key.
            let issuer = match &r.decided_by {
                Some(by) => store::keys::get(&mut tx.conn(), by).await?,
                None => None,
            };
            let new = NewKey {
                name: r.name.clone(),
                role: r.role,
                modules: r.modules.clone(),
                expires_at: None,
                email: Some(r.email.clone()),
                person_id: None,
            };
            let (record, secret) =
                super::keys::issue_in(app, &mut tx.conn(), &new, issuer.as_ref(), Some(id)).await?;
            if !store::key_requests::collect(&mut tx.conn(), id, &record.id).await? {
                tx.rollback().await?;
                return Err(unknown());
            }
            let r = store::key_requests::get(&mut tx.conn(), id)
                .await?
                .ok_or_else(unknown)?;
            tx.commit().await?;
            app.moves.other();
            super::seal::checkpoint_now(app).await;
            tracing::info!(request = %id, key_id = %record.id, "key collected");
            Ok((r, Some(secret)))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn emails_and_reasons_are_checked() {
        assert!(Email::parse(" rina@contoh.co.id ").is_ok());
        for bad in ["rina", "@contoh.co.id", "rina@localhost", "ri na@contoh.id"] {
            assert!(Email::parse(bad).is_err(), "{bad}");
        }
        assert!(Email::parse(&format!("{}@contoh.id", "a".repeat(250))).is_err());
        assert!(check_reason("reports").is_ok());
        assert!(check_reason("").is_err());
        assert!(check_reason("re\0ports").is_err());
        assert!(check_reason(&"x".repeat(2001)).is_err());
    }
}
