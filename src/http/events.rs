//! Events (API.md section 13) over HTTP: the feed and the live stream of
//! what happened to the jobs and keys the caller may see. The work is the
//! service's ([`crate::service::events`]).

use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;

use axum::Json;
use axum::extract::State;
use axum::http::HeaderMap;
use axum::response::sse::{Event as SseEvent, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use futures::StreamExt;
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::auth::Caller;
use super::extract::Params;
use super::problem::ApiResult;
use crate::service::views::FeedEvent;
use crate::service::{App, events};

pub fn routes() -> OpenApiRouter<Arc<App>> {
    OpenApiRouter::new()
        .routes(routes!(list))
        .routes(routes!(stream))
}

/// A page of events, oldest first.
#[derive(Debug, Serialize, ToSchema)]
pub struct EventPage {
    pub events: Vec<FeedEvent>,
    /// Give it back as `after` for the next page (the last event this
    /// page looked at, which may be past the last one it shows); null
    /// while the ledger is empty.
    #[schema(example = "evt_42")]
    pub next_after: Option<String>,
}

#[derive(Debug, Deserialize)]
struct FeedParams {
    after: Option<String>,
    limit: Option<i64>,
}

/// The events this key may see, oldest first: the events of jobs of its
/// modules, and for admins those of keys and key requests.
#[utoipa::path(get, path = "/api/events", operation_id = "list_events", tag = "events",
    params(
        ("after" = Option<String>, Query, description = "Events after this one (`evt_…`, a page's `next_after`); from the first without it", pattern = "^evt_[0-9]+$"),
        ("limit" = Option<i64>, Query, description = "Events a page (default 100)", minimum = 1, maximum = 1000),
    ),
    responses(
        (status = 200, description = "A page of events, oldest first", body = EventPage),
        (status = 422, description = "`invalid_parameter`: `after` is not an event id, or `limit` is out of range"),
    ))]
async fn list(
    State(app): State<Arc<App>>,
    caller: Caller,
    Params(q): Params<FeedParams>,
) -> ApiResult<Json<EventPage>> {
    let after = match &q.after {
        Some(a) => events::parse_id("after", a)?,
        None => 0,
    };
    let limit = events::limit(q.limit)?;
    let page = events::list(&app, &caller.0, after, limit).await?;
    Ok(Json(EventPage {
        events: page.events,
        next_after: page.next_after.map(events::id),
    }))
}

#[derive(Debug, Deserialize)]
struct StreamParams {
    after: Option<String>,
}

/// The same events, live, as server-sent events: each with `id:` its id,
/// `event:` its type and `data:` the event as the feed shows it; a
/// comment every 15 s keeps proxies open. `Last-Event-ID` (which browsers
/// send when they reconnect) or `after` resumes after that event, nothing
/// lost and nothing twice; without either the stream starts with the
/// events after it opens. The stream counts as one request against the
/// key's rate limit, when it opens.
#[utoipa::path(get, path = "/api/events/stream", operation_id = "stream_events", tag = "events",
    params(
        ("after" = Option<String>, Query, description = "Start after this event (`evt_…`)", pattern = "^evt_[0-9]+$"),
        ("Last-Event-ID" = Option<String>, Header, description = "The last event received (`evt_…`): resume after it; wins over `after`"),
    ),
    responses(
        (status = 200, description = "Events as they happen, until the client or the service stops",
            content_type = "text/event-stream", body = String),
        (status = 422, description = "`invalid_parameter`: `after` or `Last-Event-ID` is not an event id"),
    ))]
async fn stream(
    State(app): State<Arc<App>>,
    caller: Caller,
    headers: HeaderMap,
    Params(q): Params<StreamParams>,
) -> ApiResult<Response> {
    let resume = headers.get("last-event-id").and_then(|v| v.to_str().ok());
    let after = events::start(&app, resume, q.after.as_deref()).await?;
    let heartbeat = Duration::from_millis(app.settings.events_heartbeat_ms.max(10));
    let slot = events::open_stream(&app, &caller.0)?;
    let stream = events::follow(app, caller.0, after, slot).map(|e| {
        let event = SseEvent::default().id(e.id.clone()).event(e.ty.clone());
        Ok::<_, Infallible>(event.json_data(&e).unwrap_or_default())
    });
    Ok(Sse::new(stream)
        .keep_alive(KeepAlive::new().interval(heartbeat))
        .into_response())
}
