//! Key requests (API.md section 7): anyone may ask for a key, an admin
//! approves or denies, and the requester collects the key exactly once with
//! the claim token given when they asked.
//!
//! The key is made at collection, not at approval, so no secret waits in the
//! database; the claim token is kept only as a hash. The requester's name
//! and email are masked in every answer and never logged.

use std::collections::HashMap;
use std::sync::Arc;

use axum::body::Bytes;
use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use serde::Deserialize;
use serde_json::{Value as JsonValue, json};
use subtle::ConstantTimeEq;

use super::auth::Caller;
use super::problem::{ApiResult, Problem};
use crate::app::App;
use crate::keys::{self, Person};
use crate::ledger::job::time;
use crate::store::{self, key_requests::KeyRequest, key_requests::RequestState};

pub fn routes() -> Router<Arc<App>> {
    Router::new()
        .route("/api/key-requests", get(list).post(create))
        .route("/api/key-requests/{id}", get(claim_route))
        .route("/api/key-requests/{id}/approve", post(approve))
        .route("/api/key-requests/{id}/deny", post(deny))
}

/// A request as every answer shows it: people masked, never the token.
pub fn view(r: &KeyRequest, names: &HashMap<String, String>) -> JsonValue {
    json!({
        "id": r.id,
        "person": {"key_id": r.key_id, "display": keys::mask(&r.name)},
        "email": keys::mask_email(&r.email),
        "role": r.role.as_str(),
        "modules": r.modules,
        "reason": r.reason,
        "state": r.state.as_str(),
        "created_at": time(&r.created_at),
        "decided_at": r.decided_at.as_ref().map(time),
        "decided_by": r.decided_by.as_deref().map(|id| Person::new(id, names.get(id).map(String::as_str).unwrap_or(""))),
        "comment": r.comment,
        "collected_at": r.collected_at.as_ref().map(time),
    })
}

/// What a person asks for.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NewRequest {
    pub name: String,
    pub email: String,
    pub role: String,
    #[serde(default)]
    pub modules: Option<Vec<String>>,
    pub reason: String,
}

fn check_email(email: &str) -> ApiResult<()> {
    let ok = email.len() <= 254
        && !email.chars().any(char::is_whitespace)
        && email
            .split_once('@')
            .is_some_and(|(local, domain)| !local.is_empty() && domain.contains('.'));
    if ok {
        Ok(())
    } else {
        Err(Problem::invalid_parameter(
            "email",
            "email must be an address like name@example.co.id",
        ))
    }
}

/// Records a request; gives it and the claim token (shown once).
pub async fn submit(app: &App, req: NewRequest) -> ApiResult<(KeyRequest, String)> {
    let modules = req.modules.unwrap_or_else(|| vec!["*".to_string()]);
    let role = super::keys::check_new_key(app, &req.name, &req.role, &modules)?;
    let email = req.email.trim().to_string();
    check_email(&email)?;
    let reason = req.reason.trim().to_string();
    if reason.is_empty() || reason.chars().count() > 2000 {
        return Err(Problem::invalid_parameter(
            "reason",
            "reason must have 1 to 2000 characters: say what the key is for",
        ));
    }
    let token = keys::token(40);
    let r = KeyRequest {
        id: format!("kr_{}", ulid::Ulid::generate()),
        name: req.name.trim().to_string(),
        email,
        role,
        modules,
        reason,
        claim_hash: keys::hash(&token),
        state: RequestState::Pending,
        created_at: store::now(),
        decided_at: None,
        decided_by: None,
        comment: None,
        key_id: None,
        collected_at: None,
    };
    let mut c = app.db.acquire().await?;
    store::key_requests::insert(&mut c.conn(), &r).await?;
    tracing::info!(request = %r.id, role = role.as_str(), "key requested");
    Ok((r, token))
}

async fn create(State(app): State<Arc<App>>, body: Bytes) -> ApiResult<Response> {
    let req: NewRequest = serde_json::from_slice(&body).map_err(|e| {
        Problem::bad_request(format!(
            "the body must be {{\"name\", \"email\", \"role\", \"modules\"?, \"reason\"}}: {e}"
        ))
    })?;
    let (r, token) = submit(&app, req).await?;
    Ok((
        StatusCode::CREATED,
        Json(json!({"id": r.id, "claim_token": token, "state": r.state.as_str()})),
    )
        .into_response())
}

async fn list(
    State(app): State<Arc<App>>,
    caller: Caller,
    Query(q): Query<HashMap<String, String>>,
) -> ApiResult<Json<JsonValue>> {
    caller.check_admin()?;
    let pending_only = match q.get("state").map(String::as_str) {
        None | Some("any") => false,
        Some("pending") => true,
        Some(other) => {
            return Err(Problem::invalid_parameter(
                "state",
                format!("{other:?} is not pending or any"),
            ));
        }
    };
    let mut c = app.db.acquire().await?;
    let list = store::key_requests::list(&mut c.conn(), pending_only, 500).await?;
    let names = store::keys::names(&mut c.conn()).await?;
    let requests: Vec<JsonValue> = list.iter().map(|r| view(r, &names)).collect();
    Ok(Json(json!({"requests": requests})))
}

fn request_not_pending(r: &KeyRequest) -> Problem {
    Problem::new(
        StatusCode::CONFLICT,
        "invalid_state",
        "The request is not pending",
        format!("{} is {}", r.id, r.state.as_str()),
    )
    .with("state", json!(r.state.as_str()))
}

/// An admin's decision on a pending request.
pub async fn decide_request(
    app: &App,
    caller: &Caller,
    id: &str,
    approve: bool,
    comment: Option<String>,
) -> ApiResult<KeyRequest> {
    caller.check_admin()?;
    let mut c = app.db.acquire().await?;
    let r = store::key_requests::get(&mut c.conn(), id)
        .await?
        .ok_or_else(|| Problem::not_found("key request", id))?;
    let to = if approve {
        RequestState::Approved
    } else {
        RequestState::Denied
    };
    if r.state != RequestState::Pending
        || !store::key_requests::decide(&mut c.conn(), id, to, caller.id(), comment.as_deref())
            .await?
    {
        // Somebody decided first: answer from the state now.
        let now = store::key_requests::get(&mut c.conn(), id)
            .await?
            .unwrap_or(r);
        return Err(request_not_pending(&now));
    }
    tracing::info!(request = %id, by = %caller.id(), decision = to.as_str(), "key request decided");
    store::key_requests::get(&mut c.conn(), id)
        .await?
        .ok_or_else(|| Problem::not_found("key request", id))
}

async fn decision(
    app: &App,
    caller: &Caller,
    id: &str,
    approve: bool,
    body: &Bytes,
) -> ApiResult<Json<JsonValue>> {
    let comment = super::jobs::comment(body)?;
    let r = decide_request(app, caller, id, approve, comment).await?;
    let mut c = app.db.acquire().await?;
    let names = store::keys::names(&mut c.conn()).await?;
    Ok(Json(view(&r, &names)))
}

async fn approve(
    State(app): State<Arc<App>>,
    caller: Caller,
    Path(id): Path<String>,
    body: Bytes,
) -> ApiResult<Json<JsonValue>> {
    decision(&app, &caller, &id, true, &body).await
}

async fn deny(
    State(app): State<Arc<App>>,
    caller: Caller,
    Path(id): Path<String>,
    body: Bytes,
) -> ApiResult<Json<JsonValue>> {
    decision(&app, &caller, &id, false, &body).await
}

/// The requester's look at their request with the claim token: once it is
/// approved, the first look makes the key and hands it out; later looks get
/// `410 already_collected`. A wrong token is the same `404` as an unknown
/// id, so tokens cannot be probed per request.
pub async fn claim(app: &App, id: &str, token: &str) -> ApiResult<(KeyRequest, Option<String>)> {
    let unknown = || Problem::not_found("key request", id);
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
        RequestState::Pending | RequestState::Denied => {
            tx.rollback().await?;
            Ok((r, None))
        }
        RequestState::Collected => {
            tx.rollback().await?;
            Err(Problem::new(
                StatusCode::GONE,
                "already_collected",
                "The key was already collected",
                format!(
                    "the key of {id} was handed out once and is not kept; ask an admin to revoke it if it was not you"
                ),
            ))
        }
        RequestState::Approved => {
            let key = keys::generate();
            let record =
                store::keys::insert(&mut tx.conn(), &key, &r.name, r.role, &r.modules, None)
                    .await?;
            if !store::key_requests::collect(&mut tx.conn(), id, &record.id).await? {
                tx.rollback().await?;
                return Err(unknown());
            }
            let r = store::key_requests::get(&mut tx.conn(), id)
                .await?
                .ok_or_else(unknown)?;
            tx.commit().await?;
            tracing::info!(request = %id, key_id = %record.id, "key collected");
            Ok((r, Some(key.secret)))
        }
    }
}

async fn claim_route(
    State(app): State<Arc<App>>,
    Path(id): Path<String>,
    Query(q): Query<HashMap<String, String>>,
) -> ApiResult<Json<JsonValue>> {
    let token = q
        .get("claim_token")
        .ok_or_else(|| Problem::invalid_parameter("claim_token", "claim_token is required"))?;
    let (r, secret) = claim(&app, &id, token).await?;
    let mut c = app.db.acquire().await?;
    let names = store::keys::names(&mut c.conn()).await?;
    let mut body = view(&r, &names);
    if let Some(s) = secret {
        body["key"] = JsonValue::String(s);
    }
    Ok(Json(body))
}
