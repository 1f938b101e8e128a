//! `GET /api/modules/{module}/export` (API.md section 15): a module's rows
//! as a file to edit and import again, streamed.

use std::sync::Arc;

use axum::extract::{Path, State};
use axum::http::Uri;
use axum::response::Response;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::auth::Caller;
use super::jobs::download_response;
use super::problem::ApiResult;
use crate::ledger::export::ExportFormat;
use crate::service::App;
use crate::service::export::{self, Request};

pub fn routes() -> OpenApiRouter<Arc<App>> {
    OpenApiRouter::new().routes(routes!(download))
}

/// The module's rows as committed, in natural-key order, with each row's
/// version token last (`_version`); any key whose scope covers the module.
#[utoipa::path(get, path = "/api/modules/{module}/export", operation_id = "export_module", tag = "export",
    params(
        ("module" = String, Path, description = "The module's key"),
        ("format" = Option<ExportFormat>, Query, description = "The file's format (default `csv`)"),
        ("where.{column}" = Option<String>, Query, description = "Only rows whose `{column}` \
            (a column of the module) equals this value, read as a file's cell of the column is \
            read; empty asks for null. One a column; several are combined with AND \
            (`where.city=Bandung&where.grade=A`)."),
        ("job" = Option<String>, Query, description = "Only the rows this committed job \
            (`job_…`) of the module inserted or updated"),
        ("limit" = Option<u64>, Query, description = "At most this many rows (a whole number, 0 or more)"),
    ),
    responses(
        (status = 200, description = "The rows, streamed: the module's columns in catalog \
            order, then `_version`. CSV (RFC 4180, a header row, text a spreadsheet could run \
            neutralised as in API.md section 5), XLSX (typed cells, the header frozen, \
            dropdowns of allowed values), JSON (an array of objects, values as the preview \
            writes them) or NDJSON (one object a line). The export is the event \
            `module.exported`, recorded when the body ends.",
            headers(("Content-Disposition" = String, description = "`attachment; filename=\"{module}-export.{ext}\"`")),
            content(
                (String = "text/csv"),
                (serde_json::Value = "application/json"),
                (String = "application/x-ndjson"),
                (super::views::Binary = "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet"),
            )),
        (status = 403, description = "`forbidden`: the module is outside the key's scope"),
        (status = 404, description = "`unknown_module`"),
        (status = 422, description = "`invalid_parameter`: a format not offered, a `where.` \
            column the module lacks or a value not of its type, a `job` that is no committed \
            job of the module, a `limit` that is no whole number, more rows than an XLSX sheet \
            holds, or a parameter the export does not take (`parameter` names it)"),
    ))]
async fn download(
    State(app): State<Arc<App>>,
    caller: Caller,
    Path(module): Path<String>,
    uri: Uri,
) -> ApiResult<Response> {
    let request = Request::read(uri.query().unwrap_or(""))?;
    let d = export::export(&app, &caller.0, &module, request).await?;
    Ok(download_response(d))
}
