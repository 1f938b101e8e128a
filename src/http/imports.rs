//! `POST /api/import/{module}`: the file becomes a validation job, never a
//! write to the module's table.
//!
//! Transport only: the query, the headers and the body (or the `file`
//! part of a form) become the service's typed upload
//! ([`crate::service::uploads`]), which streams the body into the store.
//! The size limit is checked against `Content-Length` before anything is
//! read, and again while reading for bodies sent without one.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use axum::body::{Body, Bytes};
use axum::extract::{FromRequest, Multipart, Path, Request, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::Response;
use futures::StreamExt;
use utoipa::openapi::schema::{ObjectBuilder, Schema};
use utoipa::openapi::{Ref, RefOr};
use utoipa::{PartialSchema, ToSchema};
use utoipa_axum::router::{OpenApiRouter, UtoipaMethodRouterExt};
use utoipa_axum::routes;

use super::auth::Caller;
use super::extract::Params;
use super::problem::{ApiResult, Problem};
use super::views::{Binary, JobView};
use crate::ingest::Declared;
use crate::service::uploads::{
    self, Accepted, Declaration, Params as UploadParams, UnknownColumns,
};
use crate::service::workbooks::{self, WorkbookUpload};
use crate::service::{App, Error};

pub fn routes() -> OpenApiRouter<Arc<App>> {
    OpenApiRouter::new()
        .routes(
            // The service enforces its own, larger limit while streaming.
            routes!(upload_or_close).layer(axum::extract::DefaultBodyLimit::disable()),
        )
        .routes(routes!(workbook_or_close).layer(axum::extract::DefaultBodyLimit::disable()))
}

/// A `multipart/form-data` upload, as a browser form sends it.
/// The form's one part the upload reads; the document describes the form
/// from it.
pub struct UploadForm;

impl UploadForm {
    /// The part that holds the file; other parts are skipped.
    pub const FILE: &'static str = "file";
}

impl PartialSchema for UploadForm {
    fn schema() -> RefOr<Schema> {
        let mut file = Ref::from_schema_name("Binary");
        file.description = "The file; its format from the part's type, else its file name,\n\
            else its bytes. Other parts are skipped."
            .into();
        ObjectBuilder::new()
            .property(UploadForm::FILE, RefOr::Ref(file))
            .required(UploadForm::FILE)
            .description(Some(
                "A `multipart/form-data` upload, as a browser form sends it.",
            ))
            .into()
    }
}

impl ToSchema for UploadForm {
    fn schemas(schemas: &mut Vec<(String, RefOr<Schema>)>) {
        schemas.push(("Binary".into(), Binary::schema()));
    }
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
        ("sheet" = Option<String>, Query, description = "Spreadsheets (XLSX, XLS, ODS): the sheet (default the first)", min_length = 1, max_length = 255),
        ("delimiter" = Option<String>, Query, description = "CSV: one ASCII character other than a quote or a line break, or `\\t`/`tab` (default detected)", pattern = "^([\t -!#-~]|\\\\t|tab)$"),
        ("encoding" = Option<crate::ingest::decode::Label>, Query, description = "CSV: the text's encoding, in any case (default UTF-8, BOM honoured)"),
        ("unknown_columns" = Option<UnknownColumns>, Query, description = "`ignore` (the default; listed as warnings) or `reject` (the job is `invalid`)"),
        ("mapping" = Option<String>, Query, description = "`none`: read the file's headers as they are, even when a mapping is saved for them; `map_…`: the saved mapping to read them with (default: the one saved for the file's exact set of headers, if any; the job then has a `mapping_applied` warning)", pattern = "^(none|map_[0-9A-Za-z]{1,60})$", example = "none"),
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
        (Binary = "application/vnd.oasis.opendocument.spreadsheet"),
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
    headers: HeaderMap,
    request: Request,
) -> ApiResult<Response> {
    upload(app, caller, module, headers, request)
        .await
        .map_err(closing)
}

/// A refused upload closes its connection: the rest of its body is not
/// read, so the connection cannot carry another request.
fn closing(refused: Problem) -> Problem {
    refused.header(header::CONNECTION, "close".into())
}

async fn upload(
    State(app): State<Arc<App>>,
    caller: Caller,
    Path(key): Path<String>,
    headers: HeaderMap,
    request: Request,
) -> ApiResult<Response> {
    uploads::target(&app, &caller.0, &key)?;
    let idempotency_key =
        uploads::idempotency_key(headers.get("idempotency-key").map(|v| v.as_bytes()))?;
    let Params(params) =
        super::extract::parse::<UploadParams>(request.uri().query().unwrap_or("")).map(Params)?;
    let options = params.options()?;
    let declaration =
        Declaration::from_headers(|name| headers.get(name).and_then(|v| v.to_str().ok()))?;
    let limit = within_limit(app.settings.limits.body_bytes, &headers)?;
    let up = uploads::Upload {
        module: &key,
        mode: params.mode.unwrap_or(crate::ledger::Mode::Insert),
        on_error: params.on_error.unwrap_or(crate::ledger::OnError::Fail),
        options,
        format: None,
        charset: declaration.charset,
        file_name: declaration.name,
        idempotency_key,
    };
    let Accepted { job, replayed } = match declaration.declared {
        Declared::Multipart => multipart_upload(&app, &caller, up, request, limit).await?,
        Declared::Format(f) => {
            let up = uploads::Upload {
                format: Some(f),
                ..up
            };
            uploads::upload(&app, &caller.0, up, request.into_body().into_data_stream()).await?
        }
        Declared::Sniff => {
            uploads::upload(&app, &caller.0, up, request.into_body().into_data_stream()).await?
        }
    };
    let status = if replayed {
        StatusCode::OK
    } else {
        StatusCode::ACCEPTED
    };
    super::answer::answer_job(&app, &job.id, &headers, status).await
}

/// Uploads a workbook (API.md section 16): an XLSX or ODS whose sheets, or
/// a JSON object whose arrays, are named after modules (or mapped to them
/// with `sheets.<sheet>=<module>`). It becomes one validation job with a
/// part for each, in reference order, approved, committed and rolled back
/// as one.
#[utoipa::path(post, path = "/api/import", operation_id = "upload_workbook", tag = "uploads",
    params(
        ("mode" = Option<crate::ledger::Mode>, Query, description = "Every part's mode: `insert` (the default), `update` or `upsert`; `mode.<module>=` sets one part's"),
        ("on_error" = Option<crate::ledger::OnError>, Query, description = "`fail` (the default): any row error of any part fails the job; `skip`: invalid rows are left out"),
        ("sheets" = Option<String>, Query, description = "`sheets.<sheet>=<module>`: the module a sheet (or JSON member) not named after one holds, one parameter a sheet (`?sheets.Produk=products`)"),
        ("Idempotency-Key" = Option<String>, Header, description = "As on every upload"),
        ("Prefer" = Option<String>, Header, description = "`wait=N` (N ≤ 60): answer once validation has ended, or after N seconds"),
        ("Content-Disposition" = Option<String>, Header, description = "`attachment; filename=\"…\"`: the file's name, shown in the job"),
    ),
    request_body(description = "The workbook itself", content(
        (Binary = "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet"),
        (Binary = "application/vnd.oasis.opendocument.spreadsheet"),
        (serde_json::Value = "application/json"),
        (Binary = "application/octet-stream"),
    )),
    responses(
        (status = 202, description = "A new workbook job, `validating` (or further on with `Prefer: wait`), `module` null, with its `parts`", body = JobView),
        (status = 200, description = "A retry with the same `Idempotency-Key`: the first job, as it is now", body = JobView),
        (status = 400, description = "`empty_body`, or `bad_request`"),
        (status = 403, description = "`forbidden`: a part's module is outside the key's scope (named)"),
        (status = 404, description = "`unknown_module`: `mode.<module>` names no module"),
        (status = 413, description = "`too_large`: over the body limit (`limit`)"),
        (status = 415, description = "`unsupported_media_type`: not an XLSX, ODS or JSON"),
        (status = 422, description = "`invalid_parameter`: a mapping naming no module, two sheets of one module, more than 26 parts; or `idempotency_key_reused`"),
    ))]
async fn workbook_or_close(
    State(app): State<Arc<App>>,
    caller: Caller,
    headers: HeaderMap,
    request: Request,
) -> ApiResult<Response> {
    workbook(&app, &caller, &headers, request)
        .await
        .map_err(closing)
}

async fn workbook(
    app: &Arc<App>,
    caller: &Caller,
    headers: &HeaderMap,
    request: Request,
) -> ApiResult<Response> {
    let idempotency_key =
        uploads::idempotency_key(headers.get("idempotency-key").map(|v| v.as_bytes()))?;
    let pairs: Vec<(String, String)> =
        form_urlencoded::parse(request.uri().query().unwrap_or("").as_bytes())
            .into_owned()
            .collect();
    let mut up = WorkbookUpload::from_query(&pairs)?;
    let declaration =
        Declaration::from_headers(|name| headers.get(name).and_then(|v| v.to_str().ok()))?;
    within_limit(app.settings.limits.body_bytes, headers)?;
    up.format = declaration.body_format()?;
    up.file_name = declaration.name;
    up.idempotency_key = idempotency_key;
    let body = request.into_body().into_data_stream();
    let Accepted { job, replayed } = workbooks::upload(app, &caller.0, up, body).await?;
    let status = if replayed {
        StatusCode::OK
    } else {
        StatusCode::ACCEPTED
    };
    super::answer::answer_job(app, &job.id, headers, status).await
}

/// The body limit, once `Content-Length` is within it: a body declared
/// larger is refused before a byte of it is read.
fn within_limit(limit: u64, headers: &HeaderMap) -> ApiResult<u64> {
    let length = headers
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    if length.is_some_and(|n| n > limit) {
        return Err(Error::TooLarge { limit }.into());
    }
    Ok(limit)
}

/// An upload whose file is the part named `file` of a
/// `multipart/form-data` body; its format from the part's type, else its
/// file name, else its bytes.
async fn multipart_upload(
    app: &App,
    caller: &Caller,
    up: uploads::Upload<'_>,
    request: Request,
    limit: u64,
) -> ApiResult<Accepted> {
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
    let form_error = |e: &dyn std::fmt::Display| -> Problem {
        if over.load(Ordering::Relaxed) {
            Error::TooLarge { limit }.into()
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
        if field.name() != Some(UploadForm::FILE) {
            continue;
        }
        let name = field.file_name().and_then(uploads::clean_name);
        let format = uploads::part_format(field.content_type(), name.as_deref())?;
        let up = uploads::Upload {
            format,
            file_name: name,
            ..up
        };
        let accepted = match uploads::upload(app, &caller.0, up, field).await {
            Err(_) if over.load(Ordering::Relaxed) => return Err(Error::TooLarge { limit }.into()),
            other => other?,
        };
        // Read the rest of the form (within the limit), so the connection
        // is left clean for the client's next request.
        while let Ok(Some(mut rest)) = form.next_field().await {
            while let Ok(Some(_)) = rest.chunk().await {}
        }
        return Ok(accepted);
    }
}
