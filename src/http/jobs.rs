//! Jobs: reading them (list, one, preview, errors, events) and the
//! Human-Gate moves (approve, reject, cancel, rollback), over HTTP. The
//! work is the service's ([`crate::service::jobs`], [`crate::service::gate`]).

use std::sync::Arc;

use axum::Json;
use axum::body::{Body, Bytes};
use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde::Deserialize;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::answer::answer_job;
use super::auth::Caller;
use super::extract::{Params, comment};
use super::problem::{ApiResult, Problem};
use super::views::{
    Binary, CommentBody, ErrorView, ErrorsPage, EventList, EventView, JobList, JobView, PreviewPage,
};
use crate::ledger::job::People;
use crate::ledger::{JobState, Move};
use crate::service::modules::XLSX_TYPE;
use crate::service::reports::{self, Download, FileFormat, Report};
use crate::service::{App, gate, jobs, parts};
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
    let id = jobs::parse_id(&id)?;
    jobs::get(&app, &caller.0, &id).await?;
    answer_job(&app, &id, &headers, StatusCode::OK).await
}

#[derive(Debug, Deserialize)]
struct PreviewParams {
    part: Option<String>,
    action: Option<RowAction>,
    warnings: Option<WarningsFilter>,
    normalized: Option<WarningsFilter>,
    offset: Option<i64>,
    limit: Option<i64>,
}

/// `?warnings=only`: rows with at least one warning; `?normalized=only`:
/// rows with a cell a normalizer rewrote.
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
        ("part" = Option<String>, Query, description = "A workbook job (API.md section 16): only the rows of this part (its module); without it, every part's in reference order"),
        ("action" = Option<RowAction>, Query, description = "Only rows with this action"),
        ("warnings" = Option<WarningsFilter>, Query, description = "`only`: only rows with at least one warning (a reference the referenced table does not hold, a rule of severity `warning`); `any` (the default): every row"),
        ("normalized" = Option<WarningsFilter>, Query, description = "`only`: only rows with a cell a normalizer of the module's rules rewrote (API.md section 14); `any` (the default): every row"),
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
    let job = jobs::get(&app, &caller.0, &jobs::parse_id(&id)?).await?;
    let offset = bounded("offset", q.offset, 0, i64::MAX)?;
    let limit = bounded("limit", q.limit, 100, 1000)?.max(1);
    let filter = jobs::PreviewFilter {
        action: q.action,
        warned: q.warnings == Some(WarningsFilter::Only),
        normalized: q.normalized == Some(WarningsFilter::Only),
    };
    let (total, rows) =
        parts::preview(&app, &job, q.part.as_deref(), filter, offset, limit).await?;
    let rows = rows
        .into_iter()
        .map(|(part, p)| super::views::PreviewRow {
            part: part.map(|m| m.to_string()),
            row: p.row.row_no,
            action: p.row.action,
            values: p.row.vals,
            before: p.row.before,
            errors: p.errors,
            warnings: p.warnings,
            fixed: (p.fixed.into_iter())
                .map(|(column, was)| (column, serde_json::json!({ "was": was })))
                .collect(),
            normalized: (p.row.normalized.into_iter())
                .map(|(column, was)| (column, serde_json::json!({ "was": was })))
                .collect(),
        })
        .collect();
    Ok(Json(PreviewPage {
        total,
        offset,
        limit,
        rows,
    }))
}

/// The formats of the errors report.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
enum ReportFormat {
    Json,
    Csv,
    Xlsx,
}

/// The shapes of the errors report: one line an error, or one line a
/// failing row (API.md section 11).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
enum Layout {
    #[default]
    Errors,
    Rows,
}

#[derive(Debug, Deserialize)]
struct ErrorsParams {
    part: Option<String>,
    format: Option<ReportFormat>,
    layout: Option<Layout>,
    offset: Option<i64>,
    limit: Option<i64>,
}

/// The job's row errors: JSON pages, or the whole report as CSV or XLSX
/// (`?format=`, or `Accept`). Report cells that a spreadsheet would run
/// as a formula are neutralised. `?layout=rows` (CSV or XLSX only) is the
/// errored-rows file of API.md section 11: one line a failing row, as the
/// job read it, to correct and send back as a revision.
#[utoipa::path(get, path = "/api/jobs/{id}/errors", operation_id = "get_errors", tag = "jobs",
    params(
        ("id" = String, Path, description = "The job's id (`job_…`)"),
        ("part" = Option<String>, Query, description = "A workbook job (API.md section 16): only this part's errors (its module); without it, every part's in reference order (JSON), and a CSV or XLSX report needs it"),
        ("format" = Option<String>, Query, description = "`json` (the default), `csv` or `xlsx`", pattern = "^(json|csv|xlsx)$"),
        ("layout" = Option<String>, Query, description = "`errors` (the default): one line an error (`row`, `column`, `value`, `code`, `message`); `rows`: one line a failing row (`row`, the columns the job's file gave as the job read them, `errors`: the row's messages), CSV or XLSX only; in XLSX each wrong cell is highlighted and carries its messages as a note. Corrected, the file is a revision's body (`POST /api/jobs/{id}/revisions`)", pattern = "^(errors|rows)$"),
        ("offset" = Option<i64>, Query, description = "JSON: errors to skip (default 0)", minimum = 0),
        ("limit" = Option<i64>, Query, description = "JSON: errors a page (default 1000)", minimum = 0, maximum = 10000),
        ("Accept" = Option<String>, Header, description = "`text/csv` or the XLSX type asks for that report when `format` is not given"),
    ),
    responses(
        (status = 200, description = "The errors", content(
            (ErrorsPage = "application/json"),
            (String = "text/csv"),
            (Binary = "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet"),
        ), headers(("Content-Disposition" = String, description = "CSV and XLSX: `attachment; filename=\"errors.{ext}\"` (`errored-rows.{ext}` with `layout=rows`)"))),
        (status = 403, description = "`forbidden`: outside the key's module scope"),
        (status = 404, description = "`not_found`: no such job"),
        (status = 410, description = "`layout=rows`: `purged`, the job's staged rows were purged (API.md section 10); `revised`, the job handed its rows to its revision"),
        (status = 422, description = "`invalid_parameter`; `layout=rows` without `format=csv|xlsx` names `layout`"),
    ))]
async fn errors(
    State(app): State<Arc<App>>,
    caller: Caller,
    Path(id): Path<String>,
    Params(q): Params<ErrorsParams>,
    headers: HeaderMap,
) -> ApiResult<Response> {
    let job = jobs::get(&app, &caller.0, &jobs::parse_id(&id)?).await?;
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
    let report = match q.layout.unwrap_or_default() {
        Layout::Errors => Report::Errors,
        Layout::Rows => Report::Rows,
    };
    let file = match wanted {
        ReportFormat::Csv => Some(FileFormat::Csv),
        ReportFormat::Xlsx => Some(FileFormat::Xlsx),
        ReportFormat::Json => None,
    };
    match (report, file) {
        (_, Some(format)) => {
            let job = parts::report_job(&app, &job, q.part.as_deref()).await?;
            let d = reports::download(&app, job, report, format).await?;
            return Ok(download_response(d));
        }
        (Report::Rows, None) => {
            return Err(Problem::invalid_parameter(
                "layout",
                "layout=rows is a file to correct in a spreadsheet: ask for format=csv or format=xlsx",
            ));
        }
        (Report::Errors, None) => {}
    }
    let offset = bounded("offset", q.offset, 0, i64::MAX)?;
    let limit = bounded("limit", q.limit, 1000, 10_000)?.max(1);
    let (total, list) = parts::errors(&app, &job, q.part.as_deref(), offset, limit).await?;
    let errors = list
        .into_iter()
        .map(|(part, error)| ErrorView {
            part: part.map(|m| m.to_string()),
            error,
        })
        .collect();
    Ok(Json(ErrorsPage {
        total,
        offset,
        limit,
        errors,
    })
    .into_response())
}

/// A download (a report, an export): the whole file, or its pages as they
/// come.
pub fn download_response(d: Download) -> Response {
    let headers = [
        (header::CONTENT_TYPE, d.content_type.to_string()),
        (header::CONTENT_DISPOSITION, d.disposition()),
    ];
    (headers, Body::from_stream(d.into_stream())).into_response()
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
    let job = jobs::get(&app, &caller.0, &jobs::parse_id(&id)?).await?;
    let list = jobs::events(&app, &job).await?;
    let names = app.names().await?;
    let people = People(&names);
    let events = list.iter().map(|e| EventView::new(e, &people)).collect();
    Ok(Json(EventList { events }))
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
    let id = &jobs::parse_id(id)?;
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
