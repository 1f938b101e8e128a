//! `POST /api/import/{module}`: the file becomes a validation job, never a
//! write to the module's table.
//!
//! The body is streamed into the store in chunks while it is hashed; the
//! size limit is checked against `Content-Length` before anything is read,
//! and again while reading for bodies sent without one. The format comes
//! from the `Content-Type` (or, for `multipart/form-data`, from the part
//! named `file`); where that does not say, the first bytes decide.

use std::collections::HashMap;
use std::sync::Arc;

use std::sync::atomic::{AtomicBool, Ordering};

use axum::body::{Body, Bytes};
use axum::extract::{FromRequest, Multipart, Path, RawQuery, Request, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::Response;
use futures::{Stream, StreamExt};
use sha2::{Digest, Sha256};
use utoipa::ToSchema;
use utoipa_axum::router::{OpenApiRouter, UtoipaMethodRouterExt};
use utoipa_axum::routes;

use super::auth::Caller;
use super::openapi::Binary;
use super::problem::{ApiResult, Code, Problem};
use super::views::JobView;
use crate::app::App;
use crate::ingest::decode::encoding_for;
use crate::ingest::{Declared, Format};
use crate::ledger::{Counts, FileInfo, Job, JobOptions, Mode, OnError, State as JobState};
use crate::store::idempotency::Claim;
use crate::store::{self, blobs};

pub fn routes() -> OpenApiRouter<Arc<App>> {
    OpenApiRouter::new().routes(
        // The service enforces its own, larger limit while streaming.
        routes!(upload_or_close).layer(axum::extract::DefaultBodyLimit::disable()),
    )
}

/// The encodings `?encoding=` names (`ingest::decode::encoding_for`).
#[derive(ToSchema)]
#[allow(dead_code)]
pub enum CsvEncoding {
    #[schema(rename = "utf-8")]
    Utf8,
    #[schema(rename = "utf8")]
    Utf8Short,
    #[schema(rename = "utf-16")]
    Utf16,
    #[schema(rename = "utf16")]
    Utf16Short,
    #[schema(rename = "utf-16le")]
    Utf16Le,
    #[schema(rename = "utf-16be")]
    Utf16Be,
    #[schema(rename = "windows-1252")]
    Windows1252,
    #[schema(rename = "cp1252")]
    Cp1252,
    #[schema(rename = "iso-8859-1")]
    Iso88591,
    #[schema(rename = "latin1")]
    Latin1,
    #[schema(rename = "latin-1")]
    Latin1Hyphen,
}

/// A `multipart/form-data` upload, as a browser form sends it.
#[derive(ToSchema)]
#[allow(dead_code)]
pub struct UploadForm {
    /// The file; its format from the part's type, else its file name,
    /// else its bytes. Other parts are skipped.
    file: Binary,
}

/// Uploads a file for a module: it becomes a validation job (`202`), never
/// a write to the module's table. The format comes from `Content-Type`;
/// `application/octet-stream` or none has it detected from the bytes.
///
/// A refused upload may leave the body unread (a `413` is sent before the
/// body is), so the answer says `Connection: close`, and a client does
/// not reuse the connection and fail.
#[utoipa::path(post, path = "/api/import/{module}", operation_id = "upload", tag = "uploads",
    params(
        ("module" = String, Path, description = "The module's key (`customers`, …)"),
        ("mode" = Option<crate::ledger::Mode>, Query, description = "`insert` (the default): every row must be new; `update`: every row must exist; `upsert`: either"),
        ("on_error" = Option<crate::ledger::OnError>, Query, description = "`fail` (the default): any row error fails the job; `skip`: invalid rows are left out"),
        ("sheet" = Option<String>, Query, description = "Excel: the sheet (default the first)", min_length = 1, max_length = 255),
        ("delimiter" = Option<String>, Query, description = "CSV: one ASCII character other than a quote or a line break, or `\\t`/`tab` (default detected)", pattern = "^([\t -!#-~]|\\\\t|tab)$"),
        ("encoding" = Option<CsvEncoding>, Query, description = "CSV: the text's encoding, in any case (default UTF-8, BOM honoured)"),
        ("unknown_columns" = Option<String>, Query, description = "`ignore` (the default; listed as warnings) or `reject` (the job is `invalid`)", pattern = "^(ignore|reject)$"),
        ("Idempotency-Key" = Option<String>, Header, description = "1 to 255 visible ASCII characters: the same request with the same key within 24 hours answers `200` with the first job and creates nothing; a different request is `422 idempotency_key_reused`"),
        ("Prefer" = Option<String>, Header, description = "`wait=N` (N ≤ 60): answer once validation has ended, or after N seconds"),
        ("Content-Disposition" = Option<String>, Header, description = "`attachment; filename=\"…\"`: the file's name, shown in the job"),
    ),
    request_body(description = "The file itself", content(
        (String = "text/csv"),
        (String = "application/csv"),
        (String = "text/plain"),
        (String = "text/tab-separated-values"),
        (Binary = "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet"),
        (Binary = "application/vnd.ms-excel"),
        (serde_json::Value = "application/json"),
        (String = "application/x-ndjson"),
        (String = "application/jsonl"),
        (String = "application/x-jsonlines"),
        (String = "application/jsonlines"),
        (UploadForm = "multipart/form-data"),
        (Binary = "application/octet-stream"),
    )),
    responses(
        (status = 202, description = "A new job, `validating` (or further on with `Prefer: wait`)", body = JobView),
        (status = 200, description = "A retry with the same `Idempotency-Key`: the first job, as it is now", body = JobView),
        (status = 400, description = "`empty_body`, or `bad_request` (a form without a `file` part, an unreadable body)"),
        (status = 403, description = "`forbidden`: outside the key's module scope"),
        (status = 404, description = "`unknown_module`"),
        (status = 413, description = "`too_large`: over the body limit (`limit`)"),
        (status = 415, description = "`unsupported_media_type`"),
        (status = 422, description = "`invalid_parameter`, or `idempotency_key_reused`"),
    ))]
async fn upload_or_close(
    app: State<Arc<App>>,
    caller: Caller,
    module: Path<String>,
    query: RawQuery,
    headers: HeaderMap,
    body: Body,
) -> ApiResult<Response> {
    upload(app, caller, module, query, headers, body)
        .await
        .map_err(|p| p.header(header::CONNECTION, "close".into()))
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
    let encoding = match get("encoding").map(|e| e.trim().to_ascii_lowercase()) {
        None => None,
        Some(e) if encoding_for(&e).is_some() => Some(e),
        Some(e) => {
            return Err(Problem::invalid_parameter(
                "encoding",
                format!(
                    "encoding {e:?} is not supported; use utf-8, utf-16, windows-1252 or iso-8859-1"
                ),
            ));
        }
    };
    let sheet = match get("sheet") {
        None => None,
        Some(s) if !s.is_empty() && s.chars().count() <= 255 => Some(s.to_string()),
        Some(_) => {
            return Err(Problem::invalid_parameter(
                "sheet",
                "sheet must name a sheet (1 to 255 characters)",
            ));
        }
    };
    Ok(Params {
        mode,
        on_error,
        options: JobOptions {
            delimiter,
            reject_unknown_columns,
            encoding,
            sheet,
        },
    })
}

/// The essence of a `Content-Type` value: lowercase, without parameters.
fn essence(content_type: &str) -> String {
    content_type
        .split(';')
        .next()
        .unwrap_or("")
        .trim()
        .to_ascii_lowercase()
}

fn unsupported(essence: &str) -> Problem {
    Problem::new(
        StatusCode::UNSUPPORTED_MEDIA_TYPE,
        Code::UnsupportedMediaType,
        "Unsupported media type",
        format!(
            "Content-Type {essence:?} is not an accepted file format (send CSV, XLSX, XLS, \
             JSON or NDJSON, or application/octet-stream to have it detected)"
        ),
    )
}

/// The `charset` of the request's `Content-Type`, when it names an
/// encoding the service reads: `?encoding=` said by the type itself.
fn charset(headers: &HeaderMap) -> Option<String> {
    let ct = headers.get(header::CONTENT_TYPE)?.to_str().ok()?;
    ct.split(';')
        .skip(1)
        .find_map(|p| p.trim().strip_prefix("charset="))
        .map(|c| c.trim_matches('"').to_ascii_lowercase())
        .filter(|c| encoding_for(c).is_some())
}

/// What the request's `Content-Type` says, or `415`.
fn declared(headers: &HeaderMap) -> ApiResult<Declared> {
    let ct = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("");
    let essence = essence(ct);
    Format::from_content_type(&essence).ok_or_else(|| unsupported(&essence))
}

/// The format of a multipart part: its type, else its file name's
/// extension, else (`None`) its bytes.
fn part_format(content_type: Option<&str>, name: Option<&str>) -> ApiResult<Option<Format>> {
    let by_name = name.and_then(Format::from_file_name);
    match content_type.map(essence) {
        None => Ok(by_name),
        Some(t) => match Format::from_content_type(&t) {
            Some(Declared::Format(f)) => Ok(Some(f)),
            Some(Declared::Sniff) => Ok(by_name),
            // A browser labels files by the desktop's associations; a known
            // extension is a better witness than an odd type.
            _ => by_name.map(Some).ok_or_else(|| unsupported(&t)),
        },
    }
}

fn too_large(limit: u64) -> Problem {
    Problem::new(
        StatusCode::PAYLOAD_TOO_LARGE,
        Code::TooLarge,
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
    clean_name(name.trim_matches('"'))
}

/// Only the last path segment of a client's file name, without control
/// characters (a NUL cannot be stored), and not too long.
fn clean_name(name: &str) -> Option<String> {
    let name = name.rsplit(['/', '\\']).next().unwrap_or(name);
    Some(name.chars().filter(|c| !c.is_control()).take(255).collect())
        .filter(|n: &String| !n.is_empty())
}

async fn upload(
    State(app): State<Arc<App>>,
    caller: Caller,
    Path(key): Path<String>,
    RawQuery(query): RawQuery,
    headers: HeaderMap,
    body: Body,
) -> ApiResult<Response> {
    let Accepted { job, replayed } =
        accept(&app, &caller, &key, query.as_deref(), &headers, body).await?;
    if let Some(wait) = super::prefer_wait(&headers) {
        super::wait_for_job(&app, &job.id, wait).await?;
    }
    let status = if replayed {
        StatusCode::OK
    } else {
        StatusCode::ACCEPTED
    };
    super::jobs::job_response(&app, &job.id, status).await
}

/// How long an `Idempotency-Key` answers with its first job.
const IDEMPOTENCY_HOURS: i64 = 24;

/// An accepted upload: its job, and whether it was a retry of an earlier
/// request with the same `Idempotency-Key` (nothing new was created).
pub struct Accepted {
    pub job: Job,
    pub replayed: bool,
}

/// The `Idempotency-Key` header, checked (1 to 255 visible characters).
fn idempotency_key(headers: &HeaderMap) -> ApiResult<Option<String>> {
    let Some(v) = headers.get("idempotency-key") else {
        return Ok(None);
    };
    match v.to_str() {
        Ok(k)
            if !k.is_empty()
                && k.len() <= 255
                && k.bytes().all(|b| b.is_ascii_graphic() || b == b' ') =>
        {
            Ok(Some(k.to_string()))
        }
        _ => Err(Problem::invalid_parameter(
            "Idempotency-Key",
            "Idempotency-Key must be 1 to 255 visible ASCII characters",
        )),
    }
}

/// An upload, for the API and the console alike: checks the module, the
/// caller's scope, the query and the format, streams the body into the
/// store and records the job as `validating`. With an `Idempotency-Key`
/// seen before from the same key within 24 hours, the same request answers
/// with its first job and creates nothing; a different request is `422`.
pub async fn accept(
    app: &App,
    caller: &Caller,
    module_key: &str,
    query: Option<&str>,
    headers: &HeaderMap,
    body: Body,
) -> ApiResult<Accepted> {
    let module = super::module(app, module_key)?.clone();
    caller.check_module(&module)?;
    let idem_key = idempotency_key(headers)?;
    let params = params(query)?;
    let declared = declared(headers)?;
    let limit = app.settings.limits.body_bytes;
    let length = headers
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    if length.is_some_and(|n| n > limit) {
        return Err(too_large(limit));
    }
    let (stored, format, name) = match declared {
        Declared::Multipart => {
            let mut request = Request::new(body);
            *request.headers_mut() = headers.clone();
            multipart_file(app, request, limit).await?
        }
        other => {
            let stored = store_body(app, body.into_data_stream(), limit).await?;
            let format = match other {
                Declared::Format(f) => f.refine(&stored.prefix),
                _ => Format::sniff(&stored.prefix),
            };
            (stored, format, file_name(headers))
        }
    };
    let StoredBody {
        sha256,
        bytes,
        upload_id,
        ..
    } = stored;
    let mut params = params;
    if format == Format::Csv && params.options.encoding.is_none() {
        params.options.encoding = charset(headers);
    }
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
            name,
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
    if let Some(idem) = &idem_key {
        // The same request: same module, parameters and bytes.
        let fingerprint = hex::encode(Sha256::digest(format!(
            "{}|{}|{}|{}|{}",
            job.module,
            job.mode.as_str(),
            job.on_error.as_str(),
            serde_json::to_string(&job.options).unwrap_or_default(),
            sha256
        )));
        let expired = now - chrono::Duration::hours(IDEMPOTENCY_HOURS);
        let claim = store::idempotency::claim(
            &mut tx.conn(),
            caller.id(),
            idem,
            &fingerprint,
            &job.id,
            now,
            expired,
        )
        .await?;
        if claim != Claim::New {
            // Nothing of this request is kept.
            tx.rollback().await?;
            blobs::discard(&mut app.db.acquire().await?.conn(), &upload_id).await?;
            return replayed_or_refused(app, claim).await;
        }
    }
    blobs::finish(&mut tx.conn(), &upload_id, &sha256, bytes as i64).await?;
    store::jobs::insert(&mut tx.conn(), &job).await?;
    tx.commit().await?;
    tracing::info!(job = %job.id, module = %module.key, bytes, format = format.as_str(), "upload accepted");
    app.work.notify_one();
    Ok(Accepted {
        job,
        replayed: false,
    })
}

/// The answer to an upload whose `Idempotency-Key` was seen before.
async fn replayed_or_refused(app: &App, claim: Claim) -> ApiResult<Accepted> {
    match claim {
        Claim::Replay(first) => {
            let job = store::jobs::get(&mut app.db.acquire().await?.conn(), &first)
                .await?
                .ok_or_else(|| Problem::not_found("job", &first))?;
            tracing::info!(job = %job.id, "upload replayed (Idempotency-Key)");
            Ok(Accepted {
                job,
                replayed: true,
            })
        }
        Claim::Reused => Err(Problem::new(
            StatusCode::UNPROCESSABLE_ENTITY,
            Code::IdempotencyKeyReused,
            "Idempotency key reused",
            "this Idempotency-Key was used in the last 24 hours for a different request \
                 (module, parameters or file); use a new key for a new upload",
        )),
        Claim::New => Err(Problem::internal(
            "a new idempotency claim reached the replay answer",
        )),
    }
}

/// The part named `file` of a `multipart/form-data` body, stored; its
/// format, and its file name.
async fn multipart_file(
    app: &App,
    request: Request,
    limit: u64,
) -> ApiResult<(StoredBody, Format, Option<String>)> {
    // The whole form counts against the limit too, so parts before `file`
    // cannot be used to stream without end.
    let over = Arc::new(AtomicBool::new(false));
    let (parts, body) = request.into_parts();
    let flag = over.clone();
    let mut seen = 0u64;
    let limited = body.into_data_stream().map(move |piece| {
        let piece = piece.map_err(std::io::Error::other)?;
        seen += piece.len() as u64;
        if seen > limit {
            flag.store(true, Ordering::Relaxed);
            return Err(std::io::Error::other("the body is over the size limit"));
        }
        Ok::<Bytes, std::io::Error>(piece)
    });
    let request = Request::from_parts(parts, Body::from_stream(limited));
    let form_error = |e: &dyn std::fmt::Display| {
        if over.load(Ordering::Relaxed) {
            too_large(limit)
        } else {
            Problem::bad_request(format!("the multipart form could not be read: {e}"))
        }
    };
    let mut form = Multipart::from_request(request, &())
        .await
        .map_err(|e| form_error(&e))?;
    loop {
        let Some(field) = form.next_field().await.map_err(|e| form_error(&e))? else {
            return Err(Problem::bad_request(
                "the form has no part named \"file\"; send the file in a part named file",
            ));
        };
        if field.name() != Some("file") {
            continue;
        }
        let name = field.file_name().and_then(clean_name);
        let declared = part_format(field.content_type(), name.as_deref())?;
        let stored = match store_body(app, field, limit).await {
            Err(_) if over.load(Ordering::Relaxed) => return Err(too_large(limit)),
            other => other?,
        };
        let format = match declared {
            Some(f) => f.refine(&stored.prefix),
            None => Format::sniff(&stored.prefix),
        };
        // Read the rest of the form (within the limit), so the connection
        // is left clean for the client's next request.
        while let Ok(Some(mut rest)) = form.next_field().await {
            while let Ok(Some(_)) = rest.chunk().await {}
        }
        return Ok((stored, format, name));
    }
}

/// A body stored in chunks, not yet filed under its hash.
struct StoredBody {
    sha256: String,
    bytes: u64,
    upload_id: String,
    /// The first bytes, for detecting the format.
    prefix: Vec<u8>,
}

/// How much of the body is kept for format detection.
const PREFIX: usize = 64 * 1024;

/// Streams a body into stored chunks; gives its SHA-256, size, upload id
/// and first bytes.
async fn store_body<S, E>(app: &App, stream: S, limit: u64) -> ApiResult<StoredBody>
where
    S: Stream<Item = Result<Bytes, E>>,
    E: std::fmt::Display,
{
    let upload_id = ulid::Ulid::generate().to_string();
    let mut hasher = Sha256::new();
    let mut buf: Vec<u8> = Vec::with_capacity(blobs::CHUNK);
    let mut prefix: Vec<u8> = Vec::new();
    let mut total = 0u64;
    let mut seq = 0i64;
    let mut stream = std::pin::pin!(stream);
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
            if prefix.len() < PREFIX {
                let take = piece.len().min(PREFIX - prefix.len());
                prefix.extend_from_slice(&piece[..take]);
            }
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
                Code::EmptyBody,
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
    Ok(StoredBody {
        sha256: hex::encode(hasher.finalize()),
        bytes: total,
        upload_id,
        prefix,
    })
}
