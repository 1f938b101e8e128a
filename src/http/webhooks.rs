//! Webhooks for admins (API.md section 13): register an endpoint (its
//! secret shown once), change, enable or disable it, read its deliveries,
//! retry one, and send a test ping.

use std::sync::Arc;

use axum::Json;
use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::auth::Caller;
use super::problem::{ApiResult, Problem};
use crate::ledger::job::time;
use crate::service::webhooks::{self as hooks, Ask, Changes};
use crate::service::{self, App};
use crate::webhooks::{Attempt, Delivery, Webhook};

pub fn routes() -> OpenApiRouter<Arc<App>> {
    OpenApiRouter::new()
        .routes(routes!(list, create))
        .routes(routes!(get_one, update, delete))
        .routes(routes!(deliveries))
        .routes(routes!(retry))
        .routes(routes!(test))
}

/// What an admin asks for.
#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct NewWebhook {
    /// Where events are POSTed (`http` or `https`).
    #[schema(example = "https://example.com/importgate-hooks")]
    url: String,
    /// Event types (API.md section 13), or `["*"]` for all.
    #[schema(example = json!(["job.awaiting_approval", "job.committed"]))]
    events: Vec<String>,
    /// Module keys, or `["*"]` (the default) for all.
    #[serde(default)]
    #[schema(nullable = false, example = json!(["*"]))]
    modules: Option<Vec<String>>,
    #[serde(default)]
    #[schema(nullable = false, max_length = 500)]
    description: Option<String>,
}

/// A change to an endpoint; what is left out stays.
#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct WebhookChange {
    #[serde(default)]
    #[schema(nullable = false)]
    url: Option<String>,
    #[serde(default)]
    #[schema(nullable = false)]
    events: Option<Vec<String>>,
    #[serde(default)]
    #[schema(nullable = false)]
    modules: Option<Vec<String>>,
    #[serde(default)]
    #[schema(nullable = false)]
    description: Option<String>,
    /// Enabling an endpoint the service disabled clears the reason.
    #[serde(default)]
    #[schema(nullable = false)]
    enabled: Option<bool>,
}

/// An endpoint (never its secret).
#[derive(Debug, Serialize, ToSchema)]
#[schema(as = Webhook)]
pub struct WebhookView {
    #[schema(example = "wh_01JD8Z3K6W0Q2T5N8XJ4R7M9C1")]
    pub id: String,
    pub url: String,
    pub events: Vec<String>,
    pub modules: Vec<String>,
    pub description: Option<String>,
    pub enabled: bool,
    /// Why the service disabled it (it failed for the whole retry window).
    pub disabled_reason: Option<String>,
    /// Since when every attempt has failed.
    #[schema(format = DateTime)]
    pub failing_since: Option<String>,
    #[schema(format = DateTime)]
    pub created_at: String,
    #[schema(format = DateTime)]
    pub updated_at: String,
}

impl WebhookView {
    fn new(w: &Webhook) -> WebhookView {
        WebhookView {
            id: w.id.clone(),
            url: w.url.clone(),
            events: w.events.clone(),
            modules: w.modules.clone(),
            description: w.description.clone(),
            enabled: w.enabled,
            disabled_reason: w.disabled_reason.clone(),
            failing_since: w.failing_since.as_ref().map(time),
            created_at: time(&w.created_at),
            updated_at: time(&w.updated_at),
        }
    }
}

/// A new endpoint, with its signing secret: shown this once.
#[derive(Debug, Serialize, ToSchema)]
pub struct NewWebhookView {
    #[serde(flatten)]
    pub webhook: WebhookView,
    /// The Standard Webhooks signing secret.
    #[schema(pattern = "^whsec_[A-Za-z0-9+/=]+$")]
    pub secret: String,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct WebhookList {
    pub webhooks: Vec<WebhookView>,
}

/// One attempt at a delivery.
#[derive(Debug, Serialize, ToSchema)]
pub struct AttemptView {
    #[schema(format = DateTime)]
    pub at: String,
    /// The receiver's HTTP status; null when it did not answer.
    pub status: Option<i64>,
    pub latency_ms: i64,
    pub error: Option<String>,
    /// At most 1 KiB of the receiver's answer.
    pub answer: Option<String>,
}

/// One event for one endpoint.
#[derive(Debug, Serialize, ToSchema)]
pub struct DeliveryView {
    /// Also the `webhook-id` header, the same on every attempt.
    #[schema(example = "msg_01JD8Z3K6W0Q2T5N8XJ4R7M9C1")]
    pub id: String,
    /// The event (`null` for a test ping).
    pub event_id: Option<String>,
    #[serde(rename = "type")]
    #[schema(rename = "type", example = "job.committed")]
    pub event_type: String,
    /// `pending`, `delivered` or `failed`.
    #[schema(example = "delivered")]
    pub state: String,
    pub attempts: Vec<AttemptView>,
}

impl DeliveryView {
    fn new(d: &Delivery, attempts: &[Attempt]) -> DeliveryView {
        DeliveryView {
            id: d.id.clone(),
            event_id: d.seq.map(|s| format!("evt_{s}")),
            event_type: d.event_type.clone(),
            state: d.state.clone(),
            attempts: attempts
                .iter()
                .map(|a| AttemptView {
                    at: time(&a.at),
                    status: a.status,
                    latency_ms: a.latency_ms,
                    error: a.error.clone(),
                    answer: a.answer.clone(),
                })
                .collect(),
        }
    }
}

#[derive(Debug, Serialize, ToSchema)]
pub struct DeliveryList {
    pub deliveries: Vec<DeliveryView>,
}

fn json_body<T: serde::de::DeserializeOwned>(body: &[u8], shape: &str) -> ApiResult<T> {
    serde_json::from_slice(body)
        .map_err(|e| Problem::bad_request(format!("the body must be {shape}: {e}")))
}

/// Registers an endpoint (admins); its secret is in this answer and
/// nowhere else.
#[utoipa::path(post, path = "/api/webhooks", operation_id = "create_webhook", tag = "webhooks",
    request_body(content = NewWebhook, description = "Where to, which events, which modules"),
    responses(
        (status = 201, description = "The endpoint, with its secret shown this once", body = NewWebhookView),
        (status = 400, description = "`bad_request`: the body is not such an object"),
        (status = 403, description = "`forbidden`: not an admin key, or modules beyond its scope"),
        (status = 422, description = "`invalid_parameter`: a URL that is not http(s) or resolves to a private address, an unknown event type or module"),
    ))]
async fn create(
    State(app): State<Arc<App>>,
    caller: Caller,
    body: axum::body::Bytes,
) -> ApiResult<Response> {
    service::admin_only(&caller.0)?;
    let req: NewWebhook = json_body(
        &body,
        "{\"url\", \"events\", \"modules\"?, \"description\"?}",
    )?;
    let ask = Ask {
        url: req.url,
        events: req.events,
        modules: req.modules.unwrap_or_default(),
        description: req.description,
    };
    let (w, secret) = hooks::create(&app, &caller.0, ask).await?;
    let body = NewWebhookView {
        webhook: WebhookView::new(&w),
        secret,
    };
    Ok((StatusCode::CREATED, super::NO_STORE, Json(body)).into_response())
}

/// The endpoints (admins).
#[utoipa::path(get, path = "/api/webhooks", operation_id = "list_webhooks", tag = "webhooks",
    responses(
        (status = 200, description = "The endpoints", body = WebhookList),
        (status = 403, description = "`forbidden`: not an admin key"),
    ))]
async fn list(State(app): State<Arc<App>>, caller: Caller) -> ApiResult<Json<WebhookList>> {
    let webhooks = hooks::list(&app, &caller.0).await?;
    Ok(Json(WebhookList {
        webhooks: webhooks.iter().map(WebhookView::new).collect(),
    }))
}

/// One endpoint (admins).
#[utoipa::path(get, path = "/api/webhooks/{id}", operation_id = "get_webhook", tag = "webhooks",
    params(("id" = String, Path, description = "The endpoint's id (`wh_…`)")),
    responses(
        (status = 200, description = "The endpoint", body = WebhookView),
        (status = 403, description = "`forbidden`: not an admin key"),
        (status = 404, description = "`not_found`: no such endpoint"),
    ))]
async fn get_one(
    State(app): State<Arc<App>>,
    caller: Caller,
    Path(id): Path<String>,
) -> ApiResult<Json<WebhookView>> {
    Ok(Json(WebhookView::new(
        &hooks::get(&app, &caller.0, &id).await?,
    )))
}

/// Changes an endpoint: its URL, events, modules, description, or whether
/// it is enabled.
#[utoipa::path(patch, path = "/api/webhooks/{id}", operation_id = "update_webhook", tag = "webhooks",
    params(("id" = String, Path, description = "The endpoint's id (`wh_…`)")),
    request_body(content = WebhookChange, description = "The parts to change"),
    responses(
        (status = 200, description = "The endpoint as it is now", body = WebhookView),
        (status = 400, description = "`bad_request`: the body is not such an object"),
        (status = 403, description = "`forbidden`: not an admin key"),
        (status = 404, description = "`not_found`: no such endpoint"),
        (status = 422, description = "`invalid_parameter`: a URL, event type or module that cannot be"),
    ))]
async fn update(
    State(app): State<Arc<App>>,
    caller: Caller,
    Path(id): Path<String>,
    body: axum::body::Bytes,
) -> ApiResult<Json<WebhookView>> {
    service::admin_only(&caller.0)?;
    let req: WebhookChange = json_body(
        &body,
        "{\"url\"?, \"events\"?, \"modules\"?, \"description\"?, \"enabled\"?}",
    )?;
    let changes = Changes {
        url: req.url,
        events: req.events,
        modules: req.modules,
        description: req.description,
        enabled: req.enabled,
    };
    Ok(Json(WebhookView::new(
        &hooks::update(&app, &caller.0, &id, changes).await?,
    )))
}

/// Deletes an endpoint and its delivery log.
#[utoipa::path(delete, path = "/api/webhooks/{id}", operation_id = "delete_webhook", tag = "webhooks",
    params(("id" = String, Path, description = "The endpoint's id (`wh_…`)")),
    responses(
        (status = 204, description = "Deleted"),
        (status = 403, description = "`forbidden`: not an admin key"),
        (status = 404, description = "`not_found`: no such endpoint"),
    ))]
async fn delete(
    State(app): State<Arc<App>>,
    caller: Caller,
    Path(id): Path<String>,
) -> ApiResult<StatusCode> {
    hooks::delete(&app, &caller.0, &id).await?;
    Ok(StatusCode::NO_CONTENT)
}

#[derive(Debug, Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
struct DeliveryParams {
    /// At most this many, newest first (1 to 500; default 100).
    limit: Option<i64>,
}

/// An endpoint's latest deliveries, newest first, each with its attempts.
#[utoipa::path(get, path = "/api/webhooks/{id}/deliveries", operation_id = "list_webhook_deliveries", tag = "webhooks",
    params(("id" = String, Path, description = "The endpoint's id (`wh_…`)"), DeliveryParams),
    responses(
        (status = 200, description = "The deliveries", body = DeliveryList),
        (status = 403, description = "`forbidden`: not an admin key"),
        (status = 404, description = "`not_found`: no such endpoint"),
    ))]
async fn deliveries(
    State(app): State<Arc<App>>,
    caller: Caller,
    Path(id): Path<String>,
    Query(q): Query<DeliveryParams>,
) -> ApiResult<Json<DeliveryList>> {
    let limit = q.limit.unwrap_or(100);
    let list = hooks::deliveries(&app, &caller.0, &id, limit).await?;
    Ok(Json(DeliveryList {
        deliveries: list.iter().map(|(d, a)| DeliveryView::new(d, a)).collect(),
    }))
}

/// Sends a delivered or failed delivery again (its attempts stay logged).
#[utoipa::path(post, path = "/api/webhooks/{id}/deliveries/{delivery_id}/retry", operation_id = "retry_webhook_delivery", tag = "webhooks",
    params(("id" = String, Path, description = "The endpoint's id (`wh_…`)"),
           ("delivery_id" = String, Path, description = "The delivery's id (`msg_…`)")),
    responses(
        (status = 202, description = "The delivery, pending again", body = DeliveryView),
        (status = 403, description = "`forbidden`: not an admin key"),
        (status = 404, description = "`not_found`: no such endpoint or delivery"),
        (status = 409, description = "`invalid_state`: the delivery is pending, or the endpoint disabled"),
    ))]
async fn retry(
    State(app): State<Arc<App>>,
    caller: Caller,
    Path((id, delivery_id)): Path<(String, String)>,
) -> ApiResult<Response> {
    let d = hooks::retry(&app, &caller.0, &id, &delivery_id).await?;
    Ok((StatusCode::ACCEPTED, Json(DeliveryView::new(&d, &[]))).into_response())
}

/// Sends a `webhook.test` event to the endpoint.
#[utoipa::path(post, path = "/api/webhooks/{id}/test", operation_id = "test_webhook", tag = "webhooks",
    params(("id" = String, Path, description = "The endpoint's id (`wh_…`)")),
    responses(
        (status = 202, description = "The test delivery, pending", body = DeliveryView),
        (status = 403, description = "`forbidden`: not an admin key"),
        (status = 404, description = "`not_found`: no such endpoint"),
    ))]
async fn test(
    State(app): State<Arc<App>>,
    caller: Caller,
    Path(id): Path<String>,
) -> ApiResult<Response> {
    let d = hooks::test(&app, &caller.0, &id).await?;
    Ok((StatusCode::ACCEPTED, Json(DeliveryView::new(&d, &[]))).into_response())
}
