//! Liveness and readiness.

use std::sync::Arc;

use axum::extract::State;
use axum::http::StatusCode;
use axum::routing::get;
use axum::{Json, Router};
use serde_json::{Value, json};

use super::problem::{Code, Problem};
use crate::service::App;

pub fn routes() -> Router<Arc<App>> {
    Router::new()
        .route("/healthz", get(healthz))
        .route("/readyz", get(readyz))
}

/// The process is alive.
async fn healthz() -> Json<Value> {
    Json(json!({"status": "ok"}))
}

/// The database answers.
async fn readyz(State(app): State<Arc<App>>) -> Result<Json<Value>, Problem> {
    if app.ready().await {
        Ok(Json(json!({"status": "ready"})))
    } else {
        Err(Problem::new(
            StatusCode::SERVICE_UNAVAILABLE,
            Code::NotReady,
            "Not ready",
            "the database takes no write now: out of reach, read-only, or its disk full",
        ))
    }
}
