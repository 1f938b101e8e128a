//! A job as the API answers with it: its view, its `ETag` and `Location`,
//! after waiting for its work when the request asks with `Prefer: wait=N`.
//! Every handler that answers with a job (an upload, a revision, a read,
//! a gate move) answers through here, so the headers cannot differ.

use std::time::Duration;

use axum::Json;
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};

use super::problem::ApiResult;
use super::views::JobView;
use crate::ids::JobId;
use crate::ledger::Job;
use crate::ledger::job::People;
use crate::service::{App, jobs};

/// A job response: the view, its `ETag`, and `Location`.
pub async fn job_response(app: &App, job: &Job, status: StatusCode) -> ApiResult<Response> {
    let names = app.names().await?;
    let mut resp = (status, Json(JobView::new(job, &People(&names)))).into_response();
    let h = resp.headers_mut();
    if let Ok(v) = HeaderValue::from_str(&job.etag()) {
        h.insert(header::ETAG, v);
    }
    if let Ok(v) = HeaderValue::from_str(&format!("/api/jobs/{}", job.id)) {
        h.insert(header::LOCATION, v);
    }
    Ok(resp)
}

/// The job as it is now, after waiting for its work if the request asked
/// with `Prefer: wait=N`.
pub async fn answer_job(
    app: &App,
    id: &JobId,
    headers: &HeaderMap,
    status: StatusCode,
) -> ApiResult<Response> {
    if let Some(wait) = prefer_wait(headers) {
        jobs::wait(app, id, wait).await?;
    }
    let job = jobs::find(app, id).await?;
    job_response(app, &job, status).await
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
