//! Jobs: reading them (list, one, preview, errors, events) and the
//! Human-Gate moves (approve, reject, cancel, rollback), over HTTP. The
//! work is the service's ([`crate::service::jobs`], [`crate::service::gate`]).

use std::sync::Arc;

use axum::Json;
use axum::body::{Body, Bytes};
use axum::extract::{Path, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde::Deserialize;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::auth::Caller;
use super::extract::Params;
use super::openapi::Binary;
use super::problem::{ApiResult, Problem};
use super::views::{CommentBody, ErrorsPage, EventList, EventView, JobList, JobView, PreviewPage};
use crate::ledger::job::People;
use crate::ledger::{Job, JobState, Move};
use crate::service::modules::XLSX_TYPE;
use crate::service::{App, gate, jobs};
use crate::validate::RowAction;

pub fn routes() -> OpenApiRouter<Arc<App>> {
    OpenApiRouter::new()
        .routes(routes!(list))
        .routes(routes!(one))
        .routes(routes!(preview))
        .routes(routes!(errors))
        .routes(routes!(events))
        .routes(routes!(approve))
        .routes(routes!(reject))
        .routes(routes!(cancel))
        .routes(routes!(rollback))
}

/// A job response: the view, its `ETag`, and `Location`.
pub(super) async fn job_response(app: &App, job: &Job, status: StatusCode) -> ApiResult<Response> {
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
    id: &str,
    headers: &HeaderMap,
    status: StatusCode,
) -> ApiResult<Response> {
    if let Some(wait) = super::prefer_wait(headers) {
        jobs::wait(app, id, wait).await?;
    }
    let job = jobs::find(app, id).await?;
    job_response(app, &job, status).await
}

/// A number parameter within `0..=max`.
fn bounded(name: &str, value: Option<i64>, default: i64, max: i64) -> ApiResult<i64> {
    match value {
        None => Ok(default),
        Some(n) if (0..=max).contains(&n) => Ok(n),
        Some(_) => Err(Problem::invalid_parameter(
            name,
            format!("{name} must be a whole number from 0 to {max}"),
        )),
    }
}

/// Who uploaded the jobs a list shows.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
enum SubmittedBy {
    Me,
    #[default]
    Any,
}

#[derive(Debug, Deserialize)]
struct ListParams {
    module: Option<String>,
    state: Option<JobState>,
    submitted_by: Option<SubmittedBy>,
    limit: Option<i64>,
    cursor: Option<String>,
}

/// Jobs the key's scope covers, newest first.
#[utoipa::path(get, path = "/api/jobs", operation_id = "list_jobs", tag = "jobs",
    params(
        ("module" = Option<String>, Query, description = "Only this module's jobs"),
        ("state" = Option<JobState>, Query, description = "Only jobs in this state"),
        ("submitted_by" = Option<String>, Query, description = "`me` (this key's uploads) or `any` (the default)", pattern = "^(me|any)$"),
        ("limit" = Option<i64>, Query, description = "Jobs a page (default 50)", minimum = 0, maximum = 200),
        ("cursor" = Option<String>, Query, description = "`next_cursor` of the page before"),
    ),
    responses(
        (status = 200, description = "A page of jobs", body = JobList),
        (status = 404, description = "`unknown_module`"),
        (status = 422, description = "`invalid_parameter`"),
    ))]
async fn list(
    State(app): State<Arc<App>>,
    caller: Caller,
    Params(q): Params<ListParams>,
) -> ApiResult<Json<JobList>> {
    let query = jobs::ListQuery {
        module: q.module,
        state: q.state,
        mine: q.submitted_by == Some(SubmittedBy::Me),
        cursor: q.cursor,
        limit: bounded("limit", q.limit, 50, 200)?.max(1),
    };
    let page = jobs::list(&app, &caller.0, query).await?;
    let names = app.names().await?;
    let people = People(&names);
    Ok(Json(JobList {
        jobs: page.jobs.iter().map(|j| JobView::new(j, &people)).collect(),
        next_cursor: page.next,
    }))
}

/// One job. With `Prefer: wait=N` (an addition to API.md), answers once
/// the job has left `validating`, `committing` and `rolling_back`, or after
/// N seconds: clients wait for a stage without polling.
#[utoipa::path(get, path = "/api/jobs/{id}", operation_id = "get_job", tag = "jobs",
    params(
        ("id" = String, Path, description = "The job's id (`job_…`)"),
        ("Prefer" = Option<String>, Header, description = "`wait=N` (N ≤ 60): answer once the job has left `validating`, `committing` and `rolling_back`, or after N seconds"),
    ),
    responses(
        (status = 200, description = "The job", body = JobView),
        (status = 403, description = "`forbidden`: outside the key's module scope"),
        (status = 404, description = "`not_found`: no such job"),
    ))]
async fn one(
    State(app): State<Arc<App>>,
    caller: Caller,
    Path(id): Path<String>,
    headers: HeaderMap,
) -> ApiResult<Response> {
    jobs::get(&app, &caller.0, &id).await?;
    answer_job(&app, &id, &headers, StatusCode::OK).await
}

#[derive(Debug, Deserialize)]
struct PreviewParams {
    action: Option<RowAction>,
    warnings: Option<WarningsFilter>,
    offset: Option<i64>,
    limit: Option<i64>,
}

/// `?warnings=only`: rows with at least one warning.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "lowercase")]
enum WarningsFilter {
    Only,
    Any,
}

/// A page of the job's preview: what each row would do.
#[utoipa::path(get, path = "/api/jobs/{id}/preview", operation_id = "get_preview", tag = "jobs",
    params(
        ("id" = String, Path, description = "The job's id (`job_…`)"),
        ("action" = Option<RowAction>, Query, description = "Only rows with this action"),
        ("warnings" = Option<WarningsFilter>, Query, description = "`only`: only rows with at least one warning (a reference the referenced table does not hold); `any` (the default): every row"),
        ("offset" = Option<i64>, Query, description = "Rows to skip (default 0)", minimum = 0),
        ("limit" = Option<i64>, Query, description = "Rows a page (default 100)", minimum = 0, maximum = 1000),
    ),
    responses(
        (status = 200, description = "A page of rows, in file order", body = PreviewPage),
        (status = 403, description = "`forbidden`: outside the key's module scope"),
        (status = 404, description = "`not_found`: no such job"),
        (status = 410, description = "`purged`: the job's staged rows and stored file were purged (API.md section 10); its errors and events remain"),
        (status = 422, description = "`invalid_parameter`"),
    ))]
async fn preview(
    State(app): State<Arc<App>>,
    caller: Caller,
    Path(id): Path<String>,
    Params(q): Params<PreviewParams>,
) -> ApiResult<Json<PreviewPage>> {
    let job = jobs::get(&app, &caller.0, &id).await?;
    let offset = bounded("offset", q.offset, 0, i64::MAX)?;
    let limit = bounded("limit", q.limit, 100, 1000)?.max(1);
    let filter = jobs::PreviewFilter {
        action: q.action,
        warned: q.warnings == Some(WarningsFilter::Only),
    };
    let page = jobs::preview(&app, &job, filter, offset, limit).await?;
    let rows = page
        .rows
        .into_iter()
        .map(|p| super::views::PreviewRow {
            row: p.row.row_no,
            action: p.row.action,
            values: p.row.vals,
            before: p.row.before,
            errors: p.errors,
            warnings: p.warnings,
            fixed: (p.fixed.into_iter())
                .map(|(column, was)| (column, serde_json::json!({ "was": was })))
                .collect(),
        })
        .collect();
    Ok(Json(PreviewPage {
        total: page.total,
        offset,
        limit,
        rows,
    }))
}

pub use crate::service::formula::neutralise;

/// The formats of the errors report.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
enum ReportFormat {
    Json,
    Csv,
    Xlsx,
}

#[derive(Debug, Deserialize)]
struct ErrorsParams {
    format: Option<ReportFormat>,
    offset: Option<i64>,
    limit: Option<i64>,
}

/// The job's row errors: JSON pages, or the whole report as CSV or XLSX
/// (`?format=`, or `Accept`). Report cells that a spreadsheet would run
/// as a formula are neutralised.
#[utoipa::path(get, path = "/api/jobs/{id}/errors", operation_id = "get_errors", tag = "jobs",
    params(
        ("id" = String, Path, description = "The job's id (`job_…`)"),
        ("format" = Option<String>, Query, description = "`json` (the default), `csv` or `xlsx`", pattern = "^(json|csv|xlsx)$"),
        ("offset" = Option<i64>, Query, description = "JSON: errors to skip (default 0)", minimum = 0),
        ("limit" = Option<i64>, Query, description = "JSON: errors a page (default 1000)", minimum = 0, maximum = 10000),
        ("Accept" = Option<String>, Header, description = "`text/csv` or the XLSX type asks for that report when `format` is not given"),
    ),
    responses(
        (status = 200, description = "The errors", content(
            (ErrorsPage = "application/json"),
            (String = "text/csv"),
            (Binary = "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet"),
        ), headers(("Content-Disposition" = String, description = "CSV and XLSX: `attachment; filename=\"errors.{ext}\"`"))),
        (status = 403, description = "`forbidden`: outside the key's module scope"),
        (status = 404, description = "`not_found`: no such job"),
        (status = 422, description = "`invalid_parameter`"),
    ))]
async fn errors(
    State(app): State<Arc<App>>,
    caller: Caller,
    Path(id): Path<String>,
    Params(q): Params<ErrorsParams>,
    headers: HeaderMap,
) -> ApiResult<Response> {
    let job = jobs::get(&app, &caller.0, &id).await?;
    let accept = headers
        .get(header::ACCEPT)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("");
    let wanted = match q.format {
        Some(f) => f,
        None if accept.contains(XLSX_TYPE) => ReportFormat::Xlsx,
        None if accept.contains("text/csv") => ReportFormat::Csv,
        None => ReportFormat::Json,
    };
    match wanted {
        ReportFormat::Csv => return Ok(errors_csv(app, job)),
        ReportFormat::Xlsx => return errors_xlsx(&app, &job).await,
        ReportFormat::Json => {}
    }
    let offset = bounded("offset", q.offset, 0, i64::MAX)?;
    let limit = bounded("limit", q.limit, 1000, 10_000)?.max(1);
    let (total, list) = jobs::errors(&app, &job, offset, limit).await?;
    Ok(Json(ErrorsPage {
        total,
        offset,
        limit,
        errors: list,
    })
    .into_response())
}

/// Excel's last row: a report longer than this ends with a note.
const XLSX_MAX_ROWS: u32 = 1_048_575;

/// The whole error report as XLSX. Cells are written as strings, never as
/// formulas, so a spreadsheet shows `=HYPERLINK(…)` as the text the file
/// held and runs nothing; the values stay exactly as in the other reports.
/// Rows go to a temporary file as they are written (rust_xlsxwriter's
/// constant-memory mode); only the compressed result is held to send.
async fn errors_xlsx(app: &App, job: &Job) -> ApiResult<Response> {
    use rust_xlsxwriter::{Format, Workbook};
    let mut book = Workbook::new();
    let sheet = book
        .add_worksheet_with_constant_memory()
        .map_err(Problem::internal)?;
    sheet.set_name("errors").map_err(Problem::internal)?;
    let bold = Format::new().set_bold();
    for (col, name) in ["row", "column", "value", "code", "message"]
        .iter()
        .enumerate()
    {
        sheet
            .write_string_with_format(0, col as u16, *name, &bold)
            .map_err(Problem::internal)?;
    }
    let mut row = 1u32;
    let mut written = 0i64;
    let mut pages = jobs::error_pages(app, job);
    'pages: while let Some((total, list)) = pages.next().await? {
        for e in &list {
            if row > XLSX_MAX_ROWS {
                sheet
                    .write_string(
                        XLSX_MAX_ROWS,
                        0,
                        format!(
                            "{} more errors: download the CSV report for all {total}",
                            total - written
                        ),
                    )
                    .map_err(Problem::internal)?;
                break 'pages;
            }
            sheet
                .write_number(row, 0, e.row as f64)
                .and_then(|s| s.write_string(row, 1, e.column.as_deref().unwrap_or("")))
                .and_then(|s| s.write_string(row, 2, e.value.as_deref().unwrap_or("")))
                .and_then(|s| s.write_string(row, 3, &e.code))
                .and_then(|s| s.write_string(row, 4, &e.message))
                .map_err(Problem::internal)?;
            row += 1;
            written += 1;
        }
    }
    let body = tokio::task::spawn_blocking(move || book.save_to_buffer())
        .await
        .map_err(Problem::internal)?
        .map_err(Problem::internal)?;
    Ok((
        [
            (header::CONTENT_TYPE, XLSX_TYPE.to_string()),
            (
                header::CONTENT_DISPOSITION,
                "attachment; filename=\"errors.xlsx\"".to_string(),
            ),
        ],
        body,
    )
        .into_response())
}

/// The whole error report as CSV, streamed page by page.
fn errors_csv(app: Arc<App>, job: Job) -> Response {
    let (tx, rx) = tokio::sync::mpsc::channel::<Result<Bytes, std::io::Error>>(4);
    tokio::spawn(async move {
        let mut head = csv::Writer::from_writer(Vec::new());
        let _ = head.write_record(["row", "column", "value", "code", "message"]);
        let mut chunk = head.into_inner().unwrap_or_default();
        let mut pages = jobs::error_pages(&app, &job);
        loop {
            let list = match pages.next().await {
                Ok(Some((_, list))) => list,
                Ok(None) => return,
                Err(e) => {
                    let _ = tx.send(Err(std::io::Error::other(e.to_string()))).await;
                    return;
                }
            };
            let mut w = csv::Writer::from_writer(std::mem::take(&mut chunk));
            for e in &list {
                let _ = w.write_record([
                    e.row.to_string(),
                    neutralise(e.column.as_deref().unwrap_or("")),
                    neutralise(e.value.as_deref().unwrap_or("")),
                    e.code.clone(),
                    neutralise(&e.message),
                ]);
            }
            let bytes = w.into_inner().unwrap_or_default();
            if !bytes.is_empty() && tx.send(Ok(Bytes::from(bytes))).await.is_err() {
                return;
            }
        }
    });
    let stream = futures::stream::unfold(rx, |mut rx| async move {
        rx.recv().await.map(|item| (item, rx))
    });
    (
        [
            (header::CONTENT_TYPE, "text/csv; charset=utf-8".to_string()),
            (
                header::CONTENT_DISPOSITION,
                "attachment; filename=\"errors.csv\"".to_string(),
            ),
        ],
        Body::from_stream(stream),
    )
        .into_response()
}

/// The job's ledger: every move with its actor (masked), time and comment.
#[utoipa::path(get, path = "/api/jobs/{id}/events", operation_id = "get_events", tag = "jobs",
    params(("id" = String, Path, description = "The job's id (`job_…`)")),
    responses(
        (status = 200, description = "The events, oldest first", body = EventList),
        (status = 403, description = "`forbidden`: outside the key's module scope"),
        (status = 404, description = "`not_found`: no such job"),
    ))]
async fn events(
    State(app): State<Arc<App>>,
    caller: Caller,
    Path(id): Path<String>,
) -> ApiResult<Json<EventList>> {
    let job = jobs::get(&app, &caller.0, &id).await?;
    let list = jobs::events(&app, &job).await?;
    let names = app.names().await?;
    let people = People(&names);
    let events = list.iter().map(|e| EventView::new(e, &people)).collect();
    Ok(Json(EventList { events }))
}

/// The optional `{"comment": "..."}` body of a gate move (and of a
/// decision on a key request): the comment's text, checked by the service.
/// A body that is no such object is `400`; a comment that is not a string
/// is `422` naming it.
pub fn comment(body: &Bytes) -> ApiResult<Option<String>> {
    if body.iter().all(u8::is_ascii_whitespace) {
        return Ok(None);
    }
    let mut de = serde_json::Deserializer::from_slice(body);
    let parsed: Result<CommentBody, _> = serde_path_to_error::deserialize(&mut de);
    match parsed {
        Ok(b) if de.end().is_ok() => Ok(b.comment),
        Ok(_) => Err(Problem::bad_request(
            "the body must be one JSON object like {\"comment\": \"…\"}",
        )),
        Err(e) if e.path().to_string() == "comment" => Err(Problem::invalid_parameter(
            "comment",
            "comment must be a string",
        )),
        Err(e) => Err(Problem::bad_request(format!(
            "the body must be a JSON object like {{\"comment\": \"…\"}}: {}",
            e.into_inner()
        ))),
    }
}

/// A gate move's handler and its part of the document: the four moves
/// differ only in their path, their doc and the move they make.
macro_rules! gate_handler {
    ($name:ident, $event:expr, $path:tt, $doc:tt) => {
        #[doc = $doc]
        #[utoipa::path(post, path = $path, tag = "gate", operation_id = concat!(stringify!($name), "_job"),
            params(
                ("id" = String, Path, description = "The job's id (`job_…`)"),
                ("If-Match" = Option<String>, Header, description = "The `ETag` of the version decided on (`412` if the job moved since)"),
                ("Prefer" = Option<String>, Header, description = "`wait=N` (N ≤ 60): answer once the work the move starts has ended, or after N seconds"),
            ),
            request_body(content = Option<CommentBody>, description = "An optional comment"),
            responses(
                (status = 202, description = "The job after the move", body = JobView),
                (status = 400, description = "`bad_request`: the body is not a JSON object"),
                (status = 403, description = "`forbidden` (role, scope) or `self_approval` (four-eyes)"),
                (status = 404, description = "`not_found`: no such job"),
                (status = 409, description = "`invalid_state`: not possible from the job's state; `rollback_expired` (rollback only): the rollback window closed (API.md section 10)"),
                (status = 412, description = "`precondition_failed`: `If-Match` names another version"),
                (status = 422, description = "`invalid_parameter`: a comment that is not a string of at most 2000 characters"),
            ))]
        async fn $name(
            State(app): State<Arc<App>>,
            caller: Caller,
            Path(id): Path<String>,
            headers: HeaderMap,
            body: Bytes,
        ) -> ApiResult<Response> {
            gate_move(&app, &caller, &id, $event, &headers, &body).await
        }
    };
}

gate_handler!(
    approve,
    Move::Approve,
    "/api/jobs/{id}/approve",
    "Approves the gate request (approvers, not its requester): the commit or the rollback starts."
);
gate_handler!(
    reject,
    Move::Reject,
    "/api/jobs/{id}/reject",
    "Rejects the gate request (approvers, not its requester): a commit is `rejected`, a rollback request withdrawn."
);
gate_handler!(
    cancel,
    Move::Cancel,
    "/api/jobs/{id}/cancel",
    "Withdraws a job waiting for approval (its submitter or an admin)."
);
gate_handler!(
    rollback,
    Move::Rollback,
    "/api/jobs/{id}/rollback",
    "Asks for a committed job to be undone; the rollback waits at the gate."
);

/// One move at the gate, over the API: the body's comment, the move, then
/// (with `Prefer: wait`) the work it starts.
async fn gate_move(
    app: &App,
    caller: &Caller,
    id: &str,
    event: Move,
    headers: &HeaderMap,
    body: &Bytes,
) -> ApiResult<Response> {
    let comment = comment(body)?;
    let request = gate::MoveRequest {
        job_id: id,
        event,
        if_match: headers.get(header::IF_MATCH).and_then(|v| v.to_str().ok()),
        comment: comment.as_deref(),
        reason_required: false,
    };
    gate::make_move(app, &caller.0, request).await?;
    answer_job(app, id, headers, StatusCode::ACCEPTED).await
}
