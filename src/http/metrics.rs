//! `GET /metrics` in Prometheus text: jobs by state (read from the database
//! at scrape time, so every replica reports the same), rows validated and
//! committed, stage durations and HTTP latencies (this process's).
//!
//! Who may scrape (API.md section 6): with `metrics_listen` set, anyone
//! who reaches that listener, and nobody on the main one; otherwise, on
//! the main listener, a loopback client or one showing the bearer token
//! of `metrics_token_file`.

use std::net::SocketAddr;
use std::sync::{Arc, OnceLock};
use std::time::Instant;

use axum::Router;
use axum::extract::{ConnectInfo, MatchedPath, Request, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use metrics_exporter_prometheus::{PrometheusBuilder, PrometheusHandle};

use super::problem::{Code, Problem};
use crate::ledger::ALL_STATES;
use crate::service::App;

/// Seconds: from a fast API answer to a long commit.
const BUCKETS: &[f64] = &[
    0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0,
];

/// The process's recorder, installed on first use (the recorder is global
/// to the process, however many services a test starts in it).
pub fn handle() -> &'static PrometheusHandle {
    static HANDLE: OnceLock<PrometheusHandle> = OnceLock::new();
    HANDLE.get_or_init(|| {
        let builder = PrometheusBuilder::new()
            .set_buckets(BUCKETS)
            .unwrap_or_else(|_| PrometheusBuilder::new());
        let recorder = builder.build_recorder();
        let handle = recorder.handle();
        // Fails only if another recorder is installed; then this one still renders.
        let _ = metrics::set_global_recorder(recorder);
        handle
    })
}

/// `/metrics` on the main listener, for loopback or the bearer token.
pub fn routes() -> Router<Arc<App>> {
    Router::new().route("/metrics", get(guarded))
}

/// `/metrics` alone, for the listener of `metrics_listen`: reaching that
/// address is the permission.
pub fn own_listener(app: Arc<App>) -> Router {
    Router::new().route("/metrics", get(scrape)).with_state(app)
}

async fn guarded(
    State(app): State<Arc<App>>,
    ConnectInfo(peer): ConnectInfo<SocketAddr>,
    headers: HeaderMap,
) -> Result<Response, Problem> {
    if app.settings.metrics_listen.is_some() {
        return Err(Problem::new(
            StatusCode::NOT_FOUND,
            Code::NotFound,
            "Not found",
            "metrics are served on their own listener (metrics_listen)",
        ));
    }
    if !peer.ip().to_canonical().is_loopback() && !shows_token(&app, &headers).await {
        return Err(Problem::unauthorized(
            "metrics need the bearer token of metrics_token_file, or a loopback client",
        )
        .header(header::WWW_AUTHENTICATE, "Bearer realm=\"metrics\"".into()));
    }
    scrape(State(app)).await
}

/// Whether the request's `Authorization: Bearer` is the token in
/// `metrics_token_file` (read at each scrape, so it can be rotated; no
/// file or an empty one admits nobody). Compared as hashes, in constant
/// time.
async fn shows_token(app: &App, headers: &HeaderMap) -> bool {
    let Some(path) = &app.settings.metrics_token_file else {
        return false;
    };
    let Some(shown) = headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
    else {
        return false;
    };
    let token = match tokio::fs::read_to_string(path).await {
        Ok(t) => t.trim().to_string(),
        Err(e) => {
            tracing::warn!(error = %e, "cannot read metrics_token_file");
            return false;
        }
    };
    use subtle::ConstantTimeEq;
    let (a, b) = (crate::keys::hash(shown.trim()), crate::keys::hash(&token));
    !token.is_empty() && bool::from(a.as_bytes().ct_eq(b.as_bytes()))
}

async fn scrape(State(app): State<Arc<App>>) -> Result<Response, Problem> {
    let counts = crate::service::jobs::count_by_state(&app).await?;
    for state in ALL_STATES {
        let n = counts
            .iter()
            .find(|(s, _)| s == state.as_str())
            .map(|(_, n)| *n)
            .unwrap_or(0);
        metrics::gauge!("importgate_jobs", "state" => state.as_str()).set(n as f64);
    }
    Ok((
        [(
            header::CONTENT_TYPE,
            "text/plain; version=0.0.4; charset=utf-8",
        )],
        handle().render(),
    )
        .into_response())
}

/// A request method as a metric label: one of the methods HTTP defines, or
/// `other`. Clients choose the method's text, so taking it as it came let
/// 200,000 invented methods make 200,000 series (797 MB of `/metrics`).
fn method_label(method: &axum::http::Method) -> &'static str {
    const KNOWN: [&str; 7] = ["GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS"];
    KNOWN
        .into_iter()
        .find(|k| *k == method.as_str())
        .unwrap_or("other")
}

/// Records every request's latency by route (the route's pattern, never the
/// raw path: ids would make every job its own series).
pub async fn track(req: Request, next: Next) -> Response {
    let route = req
        .extensions()
        .get::<MatchedPath>()
        .map(|p| p.as_str().to_string())
        .unwrap_or_else(|| "unmatched".into());
    let method = method_label(req.method());
    let started = Instant::now();
    let resp = next.run(req).await;
    metrics::histogram!(
        "importgate_http_request_duration_seconds",
        "method" => method,
        "route" => route,
        "status" => resp.status().as_u16().to_string()
    )
    .record(started.elapsed().as_secs_f64());
    resp
}
