//! `GET /api/modules`, one module, and its upload template.

use std::sync::Arc;

use axum::Json;
use axum::extract::{Path, State};
use axum::http::header;
use axum::response::{IntoResponse, Response};
use serde::Deserialize;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::auth::Caller;
use super::extract::Params;
use super::problem::ApiResult;
use super::views::{ModuleList, ModuleView};
use crate::service::App;
use crate::service::modules::{self, Template, TemplateFormat, WorkbookFormat};

pub fn routes() -> OpenApiRouter<Arc<App>> {
    OpenApiRouter::new()
        .routes(routes!(list))
        .routes(routes!(one))
        .routes(routes!(template))
        .routes(routes!(workbook_template))
}

/// A workbook template (API.md section 16): one sheet a module, named
/// after it, in reference order, each with the module's header row and
/// one example row.
#[utoipa::path(get, path = "/api/templates/workbook", operation_id = "get_workbook_template", tag = "modules",
    params(
        ("modules" = String, Query, description = "The modules, by key, comma-separated (`products,orders,payments`)"),
        ("format" = Option<WorkbookFormat>, Query, description = "The file's format (default `xlsx`)"),
    ),
    responses(
        (status = 200, description = "The template, as an attachment",
            headers(("Content-Disposition" = String, description = "`attachment; filename=\"workbook-template.{ext}\"`")),
            content(
                (super::views::Binary = "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet"),
                (super::views::Binary = "application/vnd.oasis.opendocument.spreadsheet"),
            )),
        (status = 404, description = "`unknown_module`"),
        (status = 422, description = "`invalid_parameter`: no module named, or a format not offered"),
    ))]
async fn workbook_template(
    State(app): State<Arc<App>>,
    _caller: Caller,
    Params(q): Params<WorkbookTemplateParams>,
) -> ApiResult<Response> {
    let modules = crate::service::workbooks::template_modules(&app, q.modules.as_deref())?;
    Ok(download(modules::workbook_template(
        &modules,
        q.format.unwrap_or_default(),
    )?))
}

#[derive(Debug, Deserialize)]
struct WorkbookTemplateParams {
    modules: Option<String>,
    format: Option<WorkbookFormat>,
}

/// The catalog's modules.
#[utoipa::path(get, path = "/api/modules", operation_id = "list_modules", tag = "modules",
    responses((status = 200, description = "Every module", body = ModuleList)))]
async fn list(State(app): State<Arc<App>>, _caller: Caller) -> Json<ModuleList> {
    let modules = app
        .catalog
        .modules()
        .iter()
        .map(|m| ModuleView::new(m))
        .collect();
    Json(ModuleList { modules })
}

/// One module: its columns, their types, and its natural key.
#[utoipa::path(get, path = "/api/modules/{module}", operation_id = "get_module", tag = "modules",
    params(("module" = String, Path, description = "The module's key (`customers`, …)")),
    responses(
        (status = 200, description = "The module", body = ModuleView),
        (status = 404, description = "`unknown_module`"),
    ))]
async fn one(
    State(app): State<Arc<App>>,
    _caller: Caller,
    Path(key): Path<String>,
) -> ApiResult<Json<ModuleView>> {
    Ok(Json(ModuleView::new(app.module(&key)?)))
}

/// An empty template: the header row and one example row.
#[utoipa::path(get, path = "/api/modules/{module}/template", operation_id = "get_template", tag = "modules",
    params(
        ("module" = String, Path, description = "The module's key"),
        ("format" = Option<TemplateFormat>, Query, description = "The file's format (default `csv`)"),
    ),
    responses(
        (status = 200, description = "The template, as an attachment",
            headers(("Content-Disposition" = String, description = "`attachment; filename=\"{module}-template.{ext}\"`")),
            content(
                (String = "text/csv"),
                (serde_json::Value = "application/json"),
                (super::views::Binary = "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet"),
            )),
        (status = 404, description = "`unknown_module`"),
        (status = 422, description = "`invalid_parameter`: a format not offered"),
    ))]
async fn template(
    State(app): State<Arc<App>>,
    _caller: Caller,
    Path(key): Path<String>,
    Params(q): Params<TemplateParams>,
) -> ApiResult<Response> {
    let m = app.module(&key)?;
    Ok(download(modules::template(
        m,
        q.format.unwrap_or_default(),
    )?))
}

#[derive(Debug, Deserialize)]
struct TemplateParams {
    format: Option<TemplateFormat>,
}

/// A template as a file download.
fn download(t: Template) -> Response {
    (
        [
            (header::CONTENT_TYPE, t.content_type.to_string()),
            (
                header::CONTENT_DISPOSITION,
                format!("attachment; filename=\"{}\"", t.file_name),
            ),
        ],
        t.body,
    )
        .into_response()
}
