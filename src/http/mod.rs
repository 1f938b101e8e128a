//! The HTTP API of API.md: one module per resource, each with its own
//! routes; problems in [`problem`]; the key check in [`auth`].

pub mod auth;
pub mod health;
pub mod imports;
pub mod jobs;
pub mod key_requests;
pub mod keys;
pub mod limits;
pub mod metrics;
pub mod modules;
pub mod openapi;
pub mod problem;
pub mod views;

use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::extract::Request;
use axum::http::HeaderMap;
use tower_http::request_id::{MakeRequestUuid, PropagateRequestIdLayer, SetRequestIdLayer};
use tower_http::trace::TraceLayer;

use crate::app::App;
use crate::catalog::Module;
use problem::{Code, Problem};

/// The whole router of the service.
pub fn router(app: Arc<App>) -> Router {
    // Install the metrics recorder before anything records.
    metrics::handle();
    // Every /api route comes with its part of the OpenAPI document.
    let api: Router<Arc<App>> = Router::from(openapi::api_routes())
        .layer(axum::middleware::from_fn(problem::no_nul_in_url));
    Router::new()
        .merge(health::routes())
        .merge(metrics::routes())
        .merge(api)
        .merge(crate::console::routes())
        .fallback(crate::console::not_found)
        .route_layer(axum::middleware::from_fn(metrics::track))
        .layer(axum::middleware::from_fn(problem::problems))
        // Outside the problem renderer, so problems keep the fields too.
        .layer(axum::middleware::from_fn(limits::headers))
        .layer(TraceLayer::new_for_http().make_span_with(|req: &Request| {
            let id = req
                .headers()
                .get("x-request-id")
                .and_then(|v| v.to_str().ok())
                .unwrap_or("");
            // The path only: query strings may carry tokens.
            tracing::info_span!("request", method = %req.method(), path = %req.uri().path(),
                    request_id = %id, key_id = tracing::field::Empty)
        }))
        .layer(PropagateRequestIdLayer::x_request_id())
        .layer(SetRequestIdLayer::x_request_id(MakeRequestUuid))
        .with_state(app)
}

/// The module named in a path, or `404 unknown_module` listing the valid keys.
pub fn module<'a>(app: &'a App, key: &str) -> Result<&'a Arc<Module>, Problem> {
    app.catalog.get(key).ok_or_else(|| {
        let keys = app.catalog.keys();
        Problem::new(
            axum::http::StatusCode::NOT_FOUND,
            Code::UnknownModule,
            "Unknown module",
            format!(
                "{key:?} is not a module; valid modules: {}",
                keys.join(", ")
            ),
        )
        .with("valid_modules", serde_json::json!(keys))
    })
}

/// `Prefer: wait=N` (seconds, at most 60), if the request asks for it.
pub fn prefer_wait(headers: &HeaderMap) -> Option<Duration> {
    headers
        .get_all("prefer")
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split([',', ';']))
        .filter_map(|p| p.trim().strip_prefix("wait="))
        .filter_map(|n| n.trim().parse::<u64>().ok())
        .map(|n| Duration::from_secs(n.min(60)))
        .next()
}

/// Waits until a job has left the states in which the service works on it,
/// or the time is up. Woken at once by moves made in this process; moves
/// made by another replica are seen by re-reading the job at least every
/// quarter second.
pub async fn wait_for_job(app: &App, id: &str, wait: Duration) -> Result<(), Problem> {
    let deadline = tokio::time::Instant::now() + wait;
    loop {
        let moved = app.job_moved.notified();
        tokio::pin!(moved);
        moved.as_mut().enable();
        let mut c = app.db.acquire().await?;
        let job = crate::store::jobs::get(&mut c.conn(), id).await?;
        drop(c);
        let stopping = *app.shutdown.borrow();
        if job.is_none_or(|j| !j.state.is_work())
            || tokio::time::Instant::now() >= deadline
            || stopping
        {
            return Ok(());
        }
        let step = Duration::from_millis(250).min(deadline - tokio::time::Instant::now());
        tokio::select! {
            _ = moved => {},
            _ = tokio::time::sleep(step) => {},
        }
    }
}
