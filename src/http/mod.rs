//! The HTTP API of API.md: transport only. One module per resource, each
//! with its own routes, turning requests into the service's typed inputs
//! and its answers into JSON views; problems in [`problem`] (the one
//! conversion from the service's error); the key check in [`auth`]; typed
//! query strings in [`extract`].

pub mod answer;
pub mod api;
pub mod auth;
pub mod events;
pub mod export;
pub mod extract;
pub mod health;
pub mod imports;
pub mod jobs;
pub mod key_requests;
pub mod keys;
pub mod limits;
pub mod listener;
pub mod metrics;
pub mod modules;
pub mod openapi;
pub mod problem;
pub mod request_id;
pub mod revisions;
pub mod rules;
pub mod views;
pub mod webhooks;

use std::sync::Arc;

use axum::Router;
use axum::extract::Request;
use tower_http::request_id::{MakeRequestUuid, PropagateRequestIdLayer, SetRequestIdLayer};
use tower_http::trace::TraceLayer;

use crate::service::App;

/// The API's routes, with health and metrics.
pub fn routes() -> Router<Arc<App>> {
    // Install the metrics recorder before anything records.
    metrics::handle();
    // Every /api route comes with its part of the OpenAPI document.
    let api: Router<Arc<App>> =
        Router::from(api::routes()).layer(axum::middleware::from_fn(problem::no_nul_in_url));
    Router::new()
        .merge(health::routes())
        .merge(metrics::routes())
        .merge(api)
}

/// The layers every answer passes through (the console's too): metrics,
/// problems, rate-limit fields, tracing and request ids.
pub fn layered(routes: Router<Arc<App>>) -> Router<Arc<App>> {
    routes
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
        // Outermost: an id from the client that is not short and plain is
        // dropped before a fresh one is made and anything logs it.
        .layer(axum::middleware::from_fn(request_id::sanitize))
}

/// For every answer that carries a key or a claim token: no cache on the
/// way may keep it.
pub const NO_STORE: [(axum::http::HeaderName, &str); 1] =
    [(axum::http::header::CACHE_CONTROL, "no-store")];
