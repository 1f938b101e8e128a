//! Key requests (API.md section 7): anyone may ask for a key, an admin
//! approves or denies, and the requester collects the key exactly once with
//! the claim token given when they asked.
//!
//! The key is made at collection, not at approval, so no secret waits in the
//! database; the claim token is kept only as a hash. The requester's name
//! and email are masked in every answer and never logged.

use std::collections::HashMap;
use std::sync::Arc;

use axum::Json;
use axum::body::Bytes;
use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde::Deserialize;
use serde_json::json;
use subtle::ConstantTimeEq;
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::auth::Caller;
use super::problem::{ApiResult, Code, Problem};
use super::views::{CommentBody, KeyRequestCreated, KeyRequestList, KeyRequestView};
use crate::app::App;
use crate::keys::{self, Role};
use crate::store::{self, key_requests::KeyRequest, key_requests::RequestState};

pub fn routes() -> OpenApiRouter<Arc<App>> {
    OpenApiRouter::new()
        .routes(routes!(list, create))
        .routes(routes!(claim_route))
        .routes(routes!(approve))
        .routes(routes!(deny))
}

/// What a person asks for.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct NewRequest {
    /// Who the key is for (1 to 200 characters).
    #[schema(min_length = 1, max_length = 200, example = "Rina Kusuma")]
    pub name: String,
    #[schema(max_length = 254, example = "rina.kusuma@contoh.co.id")]
    pub email: String,
    #[schema(value_type = Role)]
    pub role: String,
    /// Module keys, or `["*"]` (the default) for all.
    #[serde(default)]
    #[schema(nullable = false, min_items = 1, example = json!(["customers"]))]
    pub modules: Option<Vec<String>>,
    /// What the key is for: the admin decides on it (1 to 2000 characters).
    #[schema(min_length = 1, max_length = 2000)]
    pub reason: String,
}

fn check_email(email: &str) -> ApiResult<()> {
    let ok = email.len() <= 254
        && !email.chars().any(|c| c.is_whitespace() || c.is_control())
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
    if reason.contains('\0') {
        return Err(Problem::invalid_parameter(
            "reason",
            "reason may not hold NUL characters",
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

/// Asks for a key (no key needed): an admin approves or denies, and the
/// requester collects the key once with the claim token.
#[utoipa::path(post, path = "/api/key-requests", operation_id = "create_key_request", tag = "key requests", security(()),
    request_body(content = NewRequest, description = "Who asks, for what, and why"),
    responses(
        (status = 201, description = "Recorded; the claim token is shown this once", body = KeyRequestCreated),
        (status = 400, description = "`bad_request`: the body is not such an object"),
        (status = 422, description = "`invalid_parameter`: a name, email, role, module or reason that cannot be"),
    ))]
async fn create(State(app): State<Arc<App>>, body: Bytes) -> ApiResult<Response> {
    let req: NewRequest = serde_json::from_slice(&body).map_err(|e| {
        Problem::bad_request(format!(
            "the body must be {{\"name\", \"email\", \"role\", \"modules\"?, \"reason\"}}: {e}"
        ))
    })?;
    let (r, token) = submit(&app, req).await?;
    let body = KeyRequestCreated {
        id: r.id,
        claim_token: token,
        state: r.state.as_str().to_string(),
    };
    Ok((StatusCode::CREATED, Json(body)).into_response())
}

/// Key requests (admins), newest first, 500 at most.
#[utoipa::path(get, path = "/api/key-requests", operation_id = "list_key_requests", tag = "key requests",
    params(("state" = Option<String>, Query, description = "`pending`, or `any` (the default)", pattern = "^(pending|any)$")),
    responses(
        (status = 200, description = "The requests", body = KeyRequestList),
        (status = 403, description = "`forbidden`: not an admin key"),
        (status = 422, description = "`invalid_parameter`: `state` is neither"),
    ))]
async fn list(
    State(app): State<Arc<App>>,
    caller: Caller,
    Query(q): Query<HashMap<String, String>>,
) -> ApiResult<Json<KeyRequestList>> {
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
    let requests = list
        .iter()
        .map(|r| KeyRequestView::new(r, &names))
        .collect();
    Ok(Json(KeyRequestList { requests }))
}

fn request_not_pending(r: &KeyRequest) -> Problem {
    Problem::new(
        StatusCode::CONFLICT,
        Code::InvalidState,
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
) -> ApiResult<Json<KeyRequestView>> {
    let comment = super::jobs::comment(body)?;
    let r = decide_request(app, caller, id, approve, comment).await?;
    let mut c = app.db.acquire().await?;
    let names = store::keys::names(&mut c.conn()).await?;
    Ok(Json(KeyRequestView::new(&r, &names)))
}

/// An admin's decision's handler and its part of the document: approve
/// and deny differ only in their path, their doc and the decision.
macro_rules! decision_handler {
    ($name:ident, $approve:expr, $path:tt, $doc:tt) => {
        #[doc = $doc]
        #[utoipa::path(post, path = $path, tag = "key requests", operation_id = concat!(stringify!($name), "_key_request"),
            params(("id" = String, Path, description = "The request's id (`kr_…`)")),
            request_body(content = Option<CommentBody>, description = "An optional comment"),
            responses(
                (status = 200, description = "The request, decided", body = KeyRequestView),
                (status = 400, description = "`bad_request`: the body is not a JSON object"),
                (status = 403, description = "`forbidden`: not an admin key"),
                (status = 404, description = "`not_found`: no such request"),
                (status = 409, description = "`invalid_state`: the request is not pending"),
                (status = 422, description = "`invalid_parameter`: a comment that is not a string of at most 2000 characters"),
            ))]
        async fn $name(
            State(app): State<Arc<App>>,
            caller: Caller,
            Path(id): Path<String>,
            body: Bytes,
        ) -> ApiResult<Json<KeyRequestView>> {
            decision(&app, &caller, &id, $approve, &body).await
        }
    };
}

decision_handler!(
    approve,
    true,
    "/api/key-requests/{id}/approve",
    "Approves a pending request (admins); the key is made when collected."
);
decision_handler!(
    deny,
    false,
    "/api/key-requests/{id}/deny",
    "Denies a pending request (admins)."
);

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
                Code::AlreadyCollected,
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

/// The requester's look at their request (no key needed, the claim token
/// instead). The first look after approval carries the key, once.
#[utoipa::path(get, path = "/api/key-requests/{id}", operation_id = "get_key_request", tag = "key requests", security(()),
    params(
        ("id" = String, Path, description = "The request's id (`kr_…`)"),
        ("claim_token" = String, Query, description = "The token given when the request was made"),
    ),
    responses(
        (status = 200, description = "The request; `key` on the first look after approval", body = KeyRequestView),
        (status = 404, description = "`not_found`: no such request, or a wrong token"),
        (status = 410, description = "`already_collected`: the key was handed out before"),
        (status = 422, description = "`invalid_parameter`: no `claim_token`"),
    ))]
async fn claim_route(
    State(app): State<Arc<App>>,
    Path(id): Path<String>,
    Query(q): Query<HashMap<String, String>>,
) -> ApiResult<Json<KeyRequestView>> {
    let token = q
        .get("claim_token")
        .ok_or_else(|| Problem::invalid_parameter("claim_token", "claim_token is required"))?;
    let (r, secret) = claim(&app, &id, token).await?;
    let mut c = app.db.acquire().await?;
    let names = store::keys::names(&mut c.conn()).await?;
    let mut body = KeyRequestView::new(&r, &names);
    body.key = secret;
    Ok(Json(body))
}
