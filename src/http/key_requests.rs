//! Key requests (API.md section 7): anyone may ask for a key, an admin
//! approves or denies, and the requester collects the key exactly once with
//! the claim token given when they asked.
//!
//! The key is made at collection, not at approval, so no secret waits in the
//! database; the claim token is kept only as a hash. The requester's name
//! and email are masked in every answer and never logged.

use std::sync::Arc;

use axum::Json;
use axum::body::Bytes;
use std::net::SocketAddr;

use axum::extract::{ConnectInfo, Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde::Deserialize;
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::auth::Caller;
use super::extract::Params;
use super::problem::{ApiResult, Problem};
use super::views::{CommentBody, KeyRequestCreated, KeyRequestList, KeyRequestView};
use crate::keys::Role;
use crate::service::{self, App, key_requests};

pub fn routes() -> OpenApiRouter<Arc<App>> {
    OpenApiRouter::new()
        .routes(routes!(list, create))
        .routes(routes!(claim_route))
        .routes(routes!(approve))
        .routes(routes!(deny))
        .routes(routes!(withdraw))
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

/// Asks for a key (no key needed): an admin approves or denies, and the
/// requester collects the key once with the claim token.
#[utoipa::path(post, path = "/api/key-requests", operation_id = "create_key_request", tag = "key requests", security(()),
    request_body(content = NewRequest, description = "Who asks, for what, and why"),
    responses(
        (status = 201, description = "Recorded; the claim token is shown this once", body = KeyRequestCreated),
        (status = 400, description = "`bad_request`: the body is not such an object"),
        (status = 422, description = "`invalid_parameter`: a name, email, role, module or reason that cannot be"),
        (status = 429, description = "`rate_limited`: 10 requests an hour or 3 pending from one address, or 1,000 pending in all"),
    ))]
async fn create(
    State(app): State<Arc<App>>,
    ConnectInfo(client): ConnectInfo<SocketAddr>,
    body: Bytes,
) -> ApiResult<Response> {
    let req: NewRequest = serde_json::from_slice(&body).map_err(|e| {
        Problem::bad_request(format!(
            "the body must be {{\"name\", \"email\", \"role\", \"modules\"?, \"reason\"}}: {e}"
        ))
    })?;
    let ask = key_requests::Ask {
        name: req.name,
        email: req.email,
        role: req.role,
        modules: req.modules.unwrap_or_default(),
        reason: req.reason,
    };
    let (r, token) = key_requests::submit(&app, &client.ip().to_string(), ask).await?;
    let body = KeyRequestCreated {
        id: r.id,
        claim_token: token,
        state: r.state,
    };
    Ok((StatusCode::CREATED, super::NO_STORE, Json(body)).into_response())
}

/// Key requests (admins), newest first, a page at a time.
#[utoipa::path(get, path = "/api/key-requests", operation_id = "list_key_requests", tag = "key requests",
    params(
        ("state" = Option<String>, Query, description = "`pending`, or `any` (the default)", pattern = "^(pending|any)$"),
        ("limit" = Option<i64>, Query, description = "Requests a page (default 50)", minimum = 0, maximum = 200),
        ("cursor" = Option<String>, Query, description = "`next_cursor` of the page before"),
    ),
    responses(
        (status = 200, description = "The requests", body = KeyRequestList),
        (status = 403, description = "`forbidden`: not an admin key"),
        (status = 422, description = "`invalid_parameter`: `state` is neither"),
    ))]
async fn list(
    State(app): State<Arc<App>>,
    caller: Caller,
    Params(q): Params<ListParams>,
) -> ApiResult<Json<KeyRequestList>> {
    service::admin_only(&caller.0)?;
    let pending_only = q.state == Some(Which::Pending);
    let limit = match q.limit {
        None => 50,
        Some(n) if (0..=200).contains(&n) => n.max(1),
        Some(_) => {
            return Err(Problem::invalid_parameter(
                "limit",
                "limit must be a whole number from 0 to 200",
            ));
        }
    };
    let mut list = key_requests::list(
        &app,
        &caller.0,
        pending_only,
        q.cursor.as_deref(),
        limit + 1,
    )
    .await?;
    let next_cursor = if list.len() as i64 > limit {
        list.truncate(limit as usize);
        list.last().map(|r| r.id.clone())
    } else {
        None
    };
    let names = app.names().await?;
    let requests = list
        .iter()
        .map(|r| KeyRequestView::for_admin(r, &names))
        .collect();
    Ok(Json(KeyRequestList {
        requests,
        next_cursor,
    }))
}

/// Which requests a list shows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
enum Which {
    Pending,
    Any,
}

#[derive(Debug, Deserialize)]
struct ListParams {
    state: Option<Which>,
    limit: Option<i64>,
    cursor: Option<String>,
}

async fn decision(
    app: &App,
    caller: &Caller,
    id: &str,
    approve: bool,
    body: &Bytes,
) -> ApiResult<Json<KeyRequestView>> {
    service::admin_only(&caller.0)?;
    let comment = super::extract::comment(body)?;
    let r = key_requests::decide(app, &caller.0, id, approve, comment.as_deref()).await?;
    let names = app.names().await?;
    Ok(Json(KeyRequestView::for_admin(&r, &names)))
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

/// Withdraws an approved request whose key was not collected yet (admins):
/// the requester can no longer collect it.
#[utoipa::path(post, path = "/api/key-requests/{id}/withdraw", tag = "key requests", operation_id = "withdraw_key_request",
    params(("id" = String, Path, description = "The request's id (`kr_…`)")),
    responses(
        (status = 200, description = "The request, withdrawn", body = KeyRequestView),
        (status = 403, description = "`forbidden`: not an admin key, or outside its module scope"),
        (status = 404, description = "`not_found`: no such request"),
        (status = 409, description = "`invalid_state`: not an approved request waiting to be collected"),
    ))]
async fn withdraw(
    State(app): State<Arc<App>>,
    caller: Caller,
    Path(id): Path<String>,
) -> ApiResult<Json<KeyRequestView>> {
    let r = key_requests::withdraw(&app, &caller.0, &id).await?;
    let names = app.names().await?;
    Ok(Json(KeyRequestView::for_admin(&r, &names)))
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
        (status = 410, description = "`already_collected`: the key was handed out before; `expired`: approved but not collected in time; `withdrawn`: an admin withdrew the approval"),
        (status = 422, description = "`invalid_parameter`: no `claim_token`"),
    ))]
async fn claim_route(
    State(app): State<Arc<App>>,
    Path(id): Path<String>,
    Params(q): Params<ClaimParams>,
) -> ApiResult<Response> {
    let token = q
        .claim_token
        .ok_or_else(|| Problem::invalid_parameter("claim_token", "claim_token is required"))?;
    let (r, secret) = key_requests::claim(&app, &id, &token).await?;
    let names = app.names().await?;
    let mut body = KeyRequestView::new(&r, &names);
    body.key = secret;
    Ok((super::NO_STORE, Json(body)).into_response())
}

#[derive(Debug, Deserialize)]
struct ClaimParams {
    claim_token: Option<String>,
}
