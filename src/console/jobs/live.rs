//! What the console's script reads to follow jobs without a reload: one
//! job's state and counts, the states of a list, and the event stream.

use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;

use axum::Json;
use axum::extract::{Path, Query, State};
use axum::http::HeaderMap;
use axum::response::sse::{Event as SseEvent, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use futures::StreamExt;
use serde::Deserialize;
use serde_json::{Value as JsonValue, json};

use crate::console::ScriptResult;
use crate::console::layout::{self};
use crate::console::session::Signed;
use crate::ids::JobId;
use crate::ledger::Job;
use crate::service::App;
use crate::service::events;
use crate::service::jobs::{self};

fn status_view(job: &Job) -> JsonValue {
    json!({
        "id": job.id,
        "state": job.state.as_str(),
        "label": layout::state_label(job.state),
        "version": job.version,
        "work": job.state.is_work(),
        "counts": job.counts,
    })
}

/// `GET /console/jobs/{id}/status`: a job's state and counts, for the
/// script that follows a job being worked on.
pub(super) async fn status(
    State(app): State<Arc<App>>,
    signed: Signed,
    Path(id): Path<String>,
) -> ScriptResult<Json<JsonValue>> {
    let job = jobs::get(&app, &signed.key, &jobs::parse_id(&id)?).await?;
    Ok(Json(status_view(&job)))
}

#[derive(Deserialize)]
pub(super) struct StatesQuery {
    ids: String,
}

/// `GET /console/jobs/states?ids=a,b`: the states of the listed jobs the
/// caller may see, for the job list to update without a reload.
pub(super) async fn states(
    State(app): State<Arc<App>>,
    signed: Signed,
    Query(q): Query<StatesQuery>,
) -> ScriptResult<Response> {
    let ids: Vec<JobId> = q
        .ids
        .split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .take(200)
        .filter_map(JobId::parse)
        .collect();
    let jobs = jobs::some(&app, &signed.key, &ids).await?;
    let list: Vec<JsonValue> = jobs.iter().map(status_view).collect();
    Ok(Json(json!({"jobs": list})).into_response())
}

#[derive(Deserialize)]
pub(super) struct StreamQuery {
    after: Option<String>,
}

/// `GET /console/events/stream`: the events the signed-in key may see,
/// live (the stream of `GET /api/events/stream`, with the session instead
/// of `X-API-Key`), for the job list and the job page to follow.
pub(super) async fn event_stream(
    State(app): State<Arc<App>>,
    signed: Signed,
    headers: HeaderMap,
    Query(q): Query<StreamQuery>,
) -> ScriptResult<Response> {
    let resume = headers.get("last-event-id").and_then(|v| v.to_str().ok());
    let after = events::start(&app, resume, q.after.as_deref()).await?;
    let heartbeat = Duration::from_millis(app.settings.events_heartbeat_ms.max(10));
    let slot = events::open_stream(&app, &signed.key)?;
    let stream = events::follow(app, signed.key, after, slot).map(|e| {
        let event = SseEvent::default().id(e.id.clone()).event(e.ty.clone());
        Ok::<_, Infallible>(event.json_data(&e).unwrap_or_default())
    });
    Ok(Sse::new(stream)
        .keep_alive(KeepAlive::new().interval(heartbeat))
        .into_response())
}
