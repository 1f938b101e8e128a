//! Jobs: reading them (list, one, preview, errors, events) and the
//! Human-Gate moves (approve, reject, cancel, rollback).

use std::collections::HashMap;
use std::sync::Arc;

use axum::Json;
use axum::body::{Body, Bytes};
use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde_json::{Map, Value as JsonValue, json};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::auth::Caller;
use super::modules::XLSX_TYPE;
use super::openapi::Binary;
use super::problem::{ApiResult, Code, Problem};
use super::views::{CommentBody, ErrorsPage, EventList, EventView, JobList, JobView, PreviewPage};
use crate::app::App;
use crate::ledger::gate::{self, Refusal};
use crate::ledger::job::People;
use crate::ledger::{Decision, Gate, Job, Move, State as JobState};
use crate::store::stage::Stage;
use crate::store::{self, jobs::MoveBy, rows};
use crate::validate::RowError;

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

type Params = Query<HashMap<String, String>>;

/// The job with this id, if the caller's scope covers its module.
pub async fn load(app: &App, caller: &Caller, id: &str) -> ApiResult<Job> {
    let mut c = app.db.acquire().await?;
    let job = store::jobs::get(&mut c.conn(), id)
        .await?
        .ok_or_else(|| Problem::not_found("job", id))?;
    caller.check_module_key(&job.module)?;
    Ok(job)
}

/// Names behind key ids, for masking people in views.
pub async fn people(app: &App) -> ApiResult<HashMap<String, String>> {
    let mut c = app.db.acquire().await?;
    Ok(store::keys::names(&mut c.conn()).await?)
}

/// A job response: the view, its `ETag`, and `Location`.
pub async fn job_response(app: &App, id: &str, status: StatusCode) -> ApiResult<Response> {
    let mut c = app.db.acquire().await?;
    let job = store::jobs::get(&mut c.conn(), id)
        .await?
        .ok_or_else(|| Problem::not_found("job", id))?;
    drop(c);
    let names = people(app).await?;
    let mut resp = (status, Json(JobView::new(&job, &People(&names)))).into_response();
    let h = resp.headers_mut();
    if let Ok(v) = HeaderValue::from_str(&job.etag()) {
        h.insert(header::ETAG, v);
    }
    if let Ok(v) = HeaderValue::from_str(&format!("/api/jobs/{}", job.id)) {
        h.insert(header::LOCATION, v);
    }
    Ok(resp)
}

fn number(q: &HashMap<String, String>, name: &str, default: i64, max: i64) -> ApiResult<i64> {
    match q.get(name) {
        None => Ok(default),
        Some(v) => match v.parse::<i64>() {
            Ok(n) if (0..=max).contains(&n) => Ok(n),
            _ => Err(Problem::invalid_parameter(
                name,
                format!("{name} must be a whole number from 0 to {max}"),
            )),
        },
    }
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
    Query(q): Params,
) -> ApiResult<Json<JobList>> {
    let limit = number(&q, "limit", 50, 200)?.max(1);
    let state = match q.get("state") {
        None => None,
        Some(s) => Some(JobState::parse(s).ok_or_else(|| {
            Problem::invalid_parameter("state", format!("{s:?} is not a job state"))
        })?),
    };
    if let Some(m) = q.get("module") {
        super::module(&app, m)?;
    }
    let submitter = match q.get("submitted_by").map(String::as_str) {
        None | Some("any") => None,
        Some("me") => Some(caller.id().to_string()),
        Some(other) => {
            return Err(Problem::invalid_parameter(
                "submitted_by",
                format!("{other:?} is not me or any"),
            ));
        }
    };
    let filter = store::jobs::Filter {
        modules: caller.scope(),
        module: q.get("module").cloned(),
        state,
        submitter,
        before: q.get("cursor").cloned(),
        limit: limit + 1,
    };
    let mut c = app.db.acquire().await?;
    let mut found = store::jobs::list(&mut c.conn(), &filter).await?;
    drop(c);
    let next = if found.len() as i64 > limit {
        found.truncate(limit as usize);
        found.last().map(|j| j.id.clone())
    } else {
        None
    };
    let names = people(&app).await?;
    let people = People(&names);
    let jobs = found.iter().map(|j| JobView::new(j, &people)).collect();
    Ok(Json(JobList {
        jobs,
        next_cursor: next,
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
    load(&app, &caller, &id).await?;
    if let Some(wait) = super::prefer_wait(&headers) {
        super::wait_for_job(&app, &id, wait).await?;
    }
    job_response(&app, &id, StatusCode::OK).await
}

/// A page of the job's preview: what each row would do.
#[utoipa::path(get, path = "/api/jobs/{id}/preview", operation_id = "get_preview", tag = "jobs",
    params(
        ("id" = String, Path, description = "The job's id (`job_…`)"),
        ("action" = Option<super::views::RowAction>, Query, description = "Only rows with this action"),
        ("offset" = Option<i64>, Query, description = "Rows to skip (default 0)", minimum = 0),
        ("limit" = Option<i64>, Query, description = "Rows a page (default 100)", minimum = 0, maximum = 1000),
    ),
    responses(
        (status = 200, description = "A page of rows, in file order", body = PreviewPage),
        (status = 403, description = "`forbidden`: outside the key's module scope"),
        (status = 404, description = "`not_found`: no such job"),
        (status = 422, description = "`invalid_parameter`"),
    ))]
async fn preview(
    State(app): State<Arc<App>>,
    caller: Caller,
    Path(id): Path<String>,
    Query(q): Params,
) -> ApiResult<Json<PreviewPage>> {
    let job = load(&app, &caller, &id).await?;
    let action = match q.get("action").map(String::as_str) {
        None => None,
        Some(a @ ("insert" | "update" | "unchanged" | "error")) => Some(a),
        Some(a) => {
            return Err(Problem::invalid_parameter(
                "action",
                format!("{a:?} is not insert, update, unchanged or error"),
            ));
        }
    };
    let offset = number(&q, "offset", 0, i64::MAX)?;
    let limit = number(&q, "limit", 100, 1000)?.max(1);
    let (total, page) = preview_page(&app, &job, action, offset, limit).await?;
    let rows = page
        .into_iter()
        .map(|p| super::views::PreviewRow {
            row: p.row.row_no,
            action: p.row.action,
            values: p.row.vals,
            before: p.row.before,
            errors: p.errors,
        })
        .collect();
    Ok(Json(PreviewPage {
        total,
        offset,
        limit,
        rows,
    }))
}

/// One row of the preview with its errors.
pub struct PreviewRow {
    pub row: rows::StoredRow,
    pub errors: Vec<RowError>,
}

/// A page of a job's preview (one action, or all), in file order, read
/// from the database page by page: never the whole job.
pub async fn preview_page(
    app: &App,
    job: &Job,
    action: Option<&str>,
    offset: i64,
    limit: i64,
) -> ApiResult<(i64, Vec<PreviewRow>)> {
    let job_id = job.id.as_str();
    let mut c = app.db.acquire().await?;
    // A job never validated, or of a module the catalog no longer has,
    // has no rows to show.
    let stage = match app.catalog.get(&job.module) {
        Some(module) => Stage::of(&mut c.conn(), module, job_id).await?,
        None => None,
    };
    let Some(stage) = stage else {
        return Ok((0, vec![]));
    };
    let (total, page) = rows::page(&mut c.conn(), &stage, action, offset, limit).await?;
    let mut by_seq: HashMap<i64, Vec<RowError>> = HashMap::new();
    if let (Some(first), Some(last)) = (page.first(), page.last()) {
        for (seq, e) in rows::errors_of(&mut c.conn(), job_id, first.seq, last.seq).await? {
            by_seq.entry(seq).or_default().push(e);
        }
    }
    let rows = page
        .into_iter()
        .map(|row| PreviewRow {
            errors: by_seq.remove(&row.seq).unwrap_or_default(),
            row,
        })
        .collect();
    Ok((total, rows))
}

/// Cells a spreadsheet would run as a formula get a leading apostrophe.
pub fn neutralise(cell: &str) -> String {
    match cell.chars().next() {
        Some('=' | '+' | '-' | '@' | '\t' | '\r') => format!("'{cell}"),
        _ => cell.to_string(),
    }
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
    Query(q): Params,
    headers: HeaderMap,
) -> ApiResult<Response> {
    let job = load(&app, &caller, &id).await?;
    let accept = headers
        .get(header::ACCEPT)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("");
    let wanted = match q.get("format").map(String::as_str) {
        Some(f @ ("csv" | "json" | "xlsx")) => f,
        Some(f) => {
            return Err(Problem::invalid_parameter(
                "format",
                format!("{f:?} is not csv, xlsx or json"),
            ));
        }
        None if accept.contains(XLSX_TYPE) => "xlsx",
        None if accept.contains("text/csv") => "csv",
        None => "json",
    };
    match wanted {
        "csv" => return Ok(errors_csv(app, job.id).await),
        "xlsx" => return errors_xlsx(&app, &job.id).await,
        _ => {}
    }
    let offset = number(&q, "offset", 0, i64::MAX)?;
    let limit = number(&q, "limit", 1000, 10_000)?.max(1);
    let mut c = app.db.acquire().await?;
    let (total, list) = rows::errors(&mut c.conn(), &job.id, offset, limit).await?;
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
async fn errors_xlsx(app: &App, job_id: &str) -> ApiResult<Response> {
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
    let mut offset = 0i64;
    'pages: loop {
        let mut c = app.db.acquire().await?;
        let (total, list) = rows::errors(&mut c.conn(), job_id, offset, 5000).await?;
        drop(c);
        for e in &list {
            if row > XLSX_MAX_ROWS {
                sheet
                    .write_string(
                        XLSX_MAX_ROWS,
                        0,
                        format!(
                            "{} more errors: download the CSV report for all {total}",
                            total - offset
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
            offset += 1;
        }
        if list.len() < 5000 {
            break;
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
async fn errors_csv(app: Arc<App>, job_id: String) -> Response {
    let (tx, rx) = tokio::sync::mpsc::channel::<Result<Bytes, std::io::Error>>(4);
    tokio::spawn(async move {
        let mut offset = 0i64;
        let mut head = csv::Writer::from_writer(Vec::new());
        let _ = head.write_record(["row", "column", "value", "code", "message"]);
        let mut chunk = head.into_inner().unwrap_or_default();
        loop {
            let page = match app.db.acquire().await {
                Ok(mut c) => rows::errors(&mut c.conn(), &job_id, offset, 5000).await,
                Err(e) => Err(e),
            };
            let list = match page {
                Ok((_, list)) => list,
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
            if list.len() < 5000 {
                return;
            }
            offset += list.len() as i64;
        }
    });
    let stream = tokio_stream_from(rx);
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

fn tokio_stream_from<T: Send + 'static>(
    mut rx: tokio::sync::mpsc::Receiver<T>,
) -> impl futures::Stream<Item = T> {
    futures::stream::poll_fn(move |cx| rx.poll_recv(cx))
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
    let job = load(&app, &caller, &id).await?;
    let mut c = app.db.acquire().await?;
    let list = store::jobs::events(&mut c.conn(), &job.id).await?;
    let names = store::keys::names(&mut c.conn()).await?;
    let people = People(&names);
    let events = list.iter().map(|e| EventView::new(e, &people)).collect();
    Ok(Json(EventList { events }))
}

/// The optional `{"comment": "..."}` body of a gate move (and of a
/// decision on a key request).
pub fn comment(body: &Bytes) -> ApiResult<Option<String>> {
    if body.iter().all(u8::is_ascii_whitespace) {
        return Ok(None);
    }
    let v: Map<String, JsonValue> = serde_json::from_slice(body).map_err(|e| {
        Problem::bad_request(format!(
            "the body must be a JSON object like {{\"comment\": \"…\"}}: {e}"
        ))
    })?;
    match v.get("comment") {
        None | Some(JsonValue::Null) => Ok(None),
        Some(JsonValue::String(s)) if s.contains('\0') => Err(Problem::invalid_parameter(
            "comment",
            "a comment may not hold NUL characters",
        )),
        Some(JsonValue::String(s)) if s.chars().count() <= 2000 => Ok(Some(s.clone())),
        Some(JsonValue::String(_)) => Err(Problem::invalid_parameter(
            "comment",
            "a comment has at most 2000 characters",
        )),
        Some(_) => Err(Problem::invalid_parameter(
            "comment",
            "comment must be a string",
        )),
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
                (status = 409, description = "`invalid_state`: not possible from the job's state"),
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

fn invalid_state(job: &Job, event: Move) -> Problem {
    Problem::new(
        StatusCode::CONFLICT,
        Code::InvalidState,
        "The job is not in a state for this move",
        format!(
            "{} is {}; {} is not possible from there",
            job.id,
            job.state.as_str(),
            event.as_str()
        ),
    )
    .with("state", json!(job.state.as_str()))
}

/// `If-Match` must name the job's current version when it is given.
fn check_etag(job: &Job, if_match: Option<&str>) -> ApiResult<()> {
    let Some(wanted) = if_match else {
        return Ok(());
    };
    let etag = job.etag();
    if wanted
        .split(',')
        .any(|t| t.trim() == "*" || t.trim() == etag)
    {
        Ok(())
    } else {
        Err(Problem::new(
            StatusCode::PRECONDITION_FAILED,
            Code::PreconditionFailed,
            "The job changed since you looked at it",
            format!("If-Match {wanted} does not match the job's current version {etag}; reload it and decide again"),
        )
        .with("etag", json!(etag)))
    }
}

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
    let if_match = headers.get(header::IF_MATCH).and_then(|v| v.to_str().ok());
    let job = decide(app, caller, id, event, if_match, comment).await?;
    if job.state.is_work()
        && let Some(wait) = super::prefer_wait(headers)
    {
        super::wait_for_job(app, id, wait).await?;
    }
    job_response(app, id, StatusCode::ACCEPTED).await
}

/// Why a person may not make a move, as the problem the API answers.
pub fn refusal_problem(job: &Job, event: Move, refusal: Refusal) -> Problem {
    match refusal {
        Refusal::InvalidState(_) => invalid_state(job, event),
        Refusal::Forbidden(why) => Problem::forbidden(why),
        Refusal::SelfApproval => Problem::new(
            StatusCode::FORBIDDEN,
            Code::SelfApproval,
            "Four-eyes rule",
            "the key that asked for this gate action may not decide it; another approver must",
        ),
    }
}

/// One move at the gate, for the API and the console alike: authorise it
/// with [`gate::authorize`], check the version the person looked at
/// (`if_match`), apply it if nobody moved the job meanwhile, and hand work
/// to the workers. Returns the job after the move.
pub async fn decide(
    app: &App,
    caller: &Caller,
    id: &str,
    event: Move,
    if_match: Option<&str>,
    comment: Option<String>,
) -> ApiResult<Job> {
    let job = load(app, caller, id).await?;
    check_etag(&job, if_match)?;
    let to = gate::authorize(&job, event, &caller.0, app.settings.allow_self_approval)
        .map_err(|r| refusal_problem(&job, event, r))?;
    let mut after = job.clone();
    after.state = to;
    after.updated_at = store::now();
    let action = gate::gate_action(job.state).to_string();
    match event {
        Move::Rollback => {
            after.problem = None;
            after.gate = Some(Gate {
                action: "rollback".into(),
                requested_at: after.updated_at,
                requested_by: caller.id().to_string(),
            });
        }
        _ => {
            let decision = match event {
                Move::Approve => "approved",
                Move::Reject => "rejected",
                _ => "cancelled",
            };
            after.decisions.push(Decision {
                action,
                decision: decision.into(),
                by: Some(caller.id().to_string()),
                at: after.updated_at,
                comment: comment.clone(),
            });
        }
    }
    let mut tx = app.db.begin().await?;
    let by = MoveBy {
        event,
        actor: Some(caller.id()),
        comment: comment.as_deref(),
        detail: None,
        lease_owner: None,
    };
    if !store::jobs::transition(&mut tx.conn(), &job, &after, by).await? {
        tx.rollback().await?;
        // Somebody moved the job first: answer from its state now.
        let now = load(app, caller, id).await?;
        return Err(invalid_state(&now, event));
    }
    tx.commit().await?;
    app.job_moved.notify_waiters();
    tracing::info!(job = %id, event = event.as_str(), to = to.as_str(), "gate move");
    if to.is_work() {
        app.work.notify_one();
    }
    after.version += 1;
    Ok(after)
}
