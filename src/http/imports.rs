//! `POST /api/import/{module}`: the file becomes a validation job, never a
//! write to the module's table.
//!
//! The body is streamed into the store in chunks while it is hashed; the
//! size limit is checked against `Content-Length` before anything is read,
//! and again while reading for bodies sent without one.

use std::collections::HashMap;
use std::sync::Arc;

use axum::Router;
use axum::body::Body;
use axum::extract::{Path, RawQuery, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::Response;
use axum::routing::post;
use futures::StreamExt;
use sha2::{Digest, Sha256};

use super::auth::Caller;
use super::problem::{ApiResult, Problem};
use crate::app::App;
use crate::ingest::Format;
use crate::ledger::{Counts, FileInfo, Job, JobOptions, Mode, OnError, State as JobState};
use crate::store::{self, blobs};

pub fn routes() -> Router<Arc<App>> {
    Router::new().route(
        "/api/import/{module}",
        // The service enforces its own, larger limit while streaming.
        post(upload).layer(axum::extract::DefaultBodyLimit::disable()),
    )
}

/// The upload's query parameters, checked.
struct Params {
    mode: Mode,
    on_error: OnError,
    options: JobOptions,
}

fn params(raw: Option<&str>) -> ApiResult<Params> {
    let q: HashMap<String, String> = raw
        .map(|r| serde_urlencoded::from_str(r).unwrap_or_default())
        .unwrap_or_default();
    let get = |k: &str| q.get(k).map(String::as_str);
    let mode = match get("mode") {
        None => Mode::Insert,
        Some(m) => Mode::parse(m).ok_or_else(|| {
            Problem::invalid_parameter(
                "mode",
                format!("mode {m:?} is not insert, update or upsert"),
            )
        })?,
    };
    let on_error = match get("on_error") {
        None => OnError::Fail,
        Some(m) => OnError::parse(m).ok_or_else(|| {
            Problem::invalid_parameter("on_error", format!("on_error {m:?} is not fail or skip"))
        })?,
    };
    let delimiter = match get("delimiter") {
        None => None,
        Some("\\t") | Some("tab") => Some(b'\t'),
        Some(d) if d.len() == 1 && d != "\"" && d != "\n" && d != "\r" => Some(d.as_bytes()[0]),
        Some(d) => {
            return Err(Problem::invalid_parameter(
                "delimiter",
                format!("delimiter {d:?} must be one character (or \\t)"),
            ));
        }
    };
    let reject_unknown_columns = match get("unknown_columns") {
        None | Some("ignore") => false,
        Some("reject") => true,
        Some(u) => {
            return Err(Problem::invalid_parameter(
                "unknown_columns",
                format!("unknown_columns {u:?} is not ignore or reject"),
            ));
        }
    };
    match get("encoding").map(|e| e.to_ascii_lowercase()) {
        None => {}
        Some(e) if e == "utf-8" || e == "utf8" => {}
        Some(e) => {
            return Err(Problem::invalid_parameter(
                "encoding",
                format!("encoding {e:?} is not supported; send UTF-8"),
            ));
        }
    }
    Ok(Params {
        mode,
        on_error,
        options: JobOptions {
            delimiter,
            reject_unknown_columns,
        },
    })
}

/// The format named by the request's `Content-Type`, or `415`.
fn format(headers: &HeaderMap) -> ApiResult<Format> {
    let ct = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("text/csv");
    let essence = ct
        .split(';')
        .next()
        .unwrap_or("")
        .trim()
        .to_ascii_lowercase();
    Format::from_content_type(&essence).ok_or_else(|| {
        Problem::new(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            "unsupported_media_type",
            "Unsupported media type",
            format!("Content-Type {essence:?} is not an accepted file format (send text/csv)"),
        )
    })
}

fn too_large(limit: u64) -> Problem {
    Problem::new(
        StatusCode::PAYLOAD_TOO_LARGE,
        "too_large",
        "File too large",
        format!("the body is larger than the limit of {limit} bytes"),
    )
    .with("limit", serde_json::json!(limit))
    // The rest of the body is not read, so the connection cannot carry
    // another request: say so, or a client may reuse it and fail.
    .header(header::CONNECTION, "close".to_string())
}

/// The file name from `Content-Disposition`, if the client sent one.
fn file_name(headers: &HeaderMap) -> Option<String> {
    let cd = headers.get(header::CONTENT_DISPOSITION)?.to_str().ok()?;
    let name = cd
        .split(';')
        .find_map(|p| p.trim().strip_prefix("filename="))?;
    let name = name.trim_matches('"');
    // Only the last path segment, and not too long.
    let name = name.rsplit(['/', '\\']).next().unwrap_or(name);
    Some(name.chars().take(255).collect()).filter(|n: &String| !n.is_empty())
}

async fn upload(
    State(app): State<Arc<App>>,
    caller: Caller,
    Path(key): Path<String>,
    RawQuery(query): RawQuery,
    headers: HeaderMap,
    body: Body,
) -> ApiResult<Response> {
    let job = accept(&app, &caller, &key, query.as_deref(), &headers, body).await?;
    if let Some(wait) = super::prefer_wait(&headers) {
        super::wait_for_job(&app, &job.id, wait).await?;
    }
    super::jobs::job_response(&app, &job.id, StatusCode::ACCEPTED).await
}

/// An upload, for the API and the console alike: checks the module, the
/// caller's scope, the query and the format, streams the body into the
/// store and records the job as `validating`. Returns the new job.
pub async fn accept(
    app: &App,
    caller: &Caller,
    module_key: &str,
    query: Option<&str>,
    headers: &HeaderMap,
    body: Body,
) -> ApiResult<Job> {
    let module = super::module(app, module_key)?.clone();
    caller.check_module(&module)?;
    let params = params(query)?;
    let format = format(headers)?;
    let limit = app.settings.limits.body_bytes;
    let declared = headers
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    if declared.is_some_and(|n| n > limit) {
        return Err(too_large(limit));
    }
    let (sha256, bytes, upload_id) = store_body(app, body, limit).await?;
    let now = store::now();
    let job = Job {
        id: format!("job_{}", ulid::Ulid::generate()),
        module: module.key.clone(),
        table: module.table.clone(),
        mode: params.mode,
        on_error: params.on_error,
        options: params.options,
        simulated: app.settings.simulate,
        file: FileInfo {
            name: file_name(headers),
            format,
            bytes: bytes as i64,
            sha256: sha256.clone(),
        },
        submitter: caller.id().to_string(),
        state: JobState::Validating,
        version: 1,
        counts: Counts::default(),
        warnings: vec![],
        problem: None,
        gate: None,
        decisions: vec![],
        created_at: now,
        updated_at: now,
    };
    let mut tx = app.db.begin().await?;
    blobs::finish(&mut tx.conn(), &upload_id, &sha256, bytes as i64).await?;
    store::jobs::insert(&mut tx.conn(), &job).await?;
    tx.commit().await?;
    tracing::info!(job = %job.id, module = %module.key, bytes, "upload accepted");
    app.work.notify_one();
    Ok(job)
}

/// Streams the body into stored chunks; gives its SHA-256, size and upload id.
async fn store_body(app: &App, body: Body, limit: u64) -> ApiResult<(String, u64, String)> {
    let upload_id = ulid::Ulid::generate().to_string();
    let mut hasher = Sha256::new();
    let mut buf: Vec<u8> = Vec::with_capacity(blobs::CHUNK);
    let mut total = 0u64;
    let mut seq = 0i64;
    let mut stream = body.into_data_stream();
    let mut conn = app.db.acquire().await?;
    let result: ApiResult<()> = async {
        while let Some(piece) = stream.next().await {
            let piece = piece
                .map_err(|e| Problem::bad_request(format!("the body could not be read: {e}")))?;
            total += piece.len() as u64;
            if total > limit {
                return Err(too_large(limit));
            }
            hasher.update(&piece);
            buf.extend_from_slice(&piece);
            while buf.len() >= blobs::CHUNK {
                let rest = buf.split_off(blobs::CHUNK);
                blobs::put_chunk(&mut conn.conn(), &upload_id, seq, &buf).await?;
                seq += 1;
                buf = rest;
            }
        }
        if total == 0 {
            return Err(Problem::new(
                StatusCode::BAD_REQUEST,
                "empty_body",
                "Empty body",
                "the request has no file",
            ));
        }
        if !buf.is_empty() {
            blobs::put_chunk(&mut conn.conn(), &upload_id, seq, &buf).await?;
        }
        Ok(())
    }
    .await;
    if let Err(p) = result {
        blobs::discard(&mut conn.conn(), &upload_id).await?;
        return Err(p);
    }
    Ok((hex::encode(hasher.finalize()), total, upload_id))
}
