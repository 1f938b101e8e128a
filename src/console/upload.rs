//! The upload page: pick a module (its columns and a template shown),
//! choose or drop a file, mode and on_error; the script sends the file with
//! a progress bar, follows validation, and lands on the job page.
//!
//! The file goes through [`crate::service::uploads`], exactly as an API
//! upload does: the same checks, the same streaming into the store.

use std::collections::HashMap;
use std::sync::Arc;

use axum::body::Body;
use axum::extract::{Path, Query, RawQuery, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use maud::html;
use serde::Deserialize;
use serde_json::json;

use super::layout::{self, Nav};
use super::session::{CSRF_HEADER, Signed};
use super::{PageResult, ScriptResult};
use crate::ledger::{Mode, OnError};
use crate::service::modules::{self, TemplateFormat};
use crate::service::uploads::{self, Declaration, Params};
use crate::service::workbooks::{self, WorkbookUpload};
use crate::service::{self, App};
use crate::t;

pub fn routes() -> Router<Arc<App>> {
    Router::new()
        .route("/upload", get(page))
        .route(
            "/console/import/{module}",
            post(upload).layer(axum::extract::DefaultBodyLimit::disable()),
        )
        .route(
            "/console/import",
            post(upload_workbook).layer(axum::extract::DefaultBodyLimit::disable()),
        )
        .route("/console/modules/{module}/template", get(template))
        .route("/console/templates/workbook", get(workbook_template))
}

async fn page(
    State(app): State<Arc<App>>,
    signed: Signed,
    Query(q): Query<HashMap<String, String>>,
) -> PageResult {
    let ctx = signed.ctx(&app, Nav::Upload);
    let modules: Vec<_> = app
        .catalog
        .modules()
        .iter()
        .filter(|m| signed.key.covers(&m.key))
        .cloned()
        .collect();
    // `?module=` (empty) asks for a workbook.
    let selected = match q.get("module") {
        Some(m) if m.is_empty() => String::new(),
        wanted => wanted
            .filter(|m| modules.iter().any(|x| x.key == m.as_str()))
            .cloned()
            .or_else(|| modules.first().map(|m| m.key.to_string()))
            .unwrap_or_default(),
    };
    let column_heads = [
        t!("upload-column"),
        t!("upload-type"),
        t!("upload-required-head"),
        t!("upload-aliases"),
    ];
    let column_heads = column_heads.each_ref().map(String::as_str);
    let content = html! {
        h1 { (t!("upload-title")) }
        p.lead { (t!("upload-lead")) }
        @if modules.is_empty() {
            div.alert.alert-warn { (t!("upload-no-modules")) }
        } @else {
            form #upload-form .card method="get" action="/upload" data-upload="/console/import/" data-workbook="/console/import" {
                div.field {
                    label for="module" { (t!("upload-module")) }
                    select #module name="module" required aria-describedby="module-help" {
                        @for m in &modules {
                            option value=(m.key) selected[m.key == selected.as_str()] { (layout::module_name(m)) " (" (m.key) ")" }
                        }
                        option value="" selected[selected.is_empty() && q.contains_key("module")] { (t!("upload-workbook")) }
                    }
                    noscript { button.btn type="submit" { (t!("upload-show-columns")) } }
                    p #module-help .help { (t!("upload-module-help")) }
                }
                @for m in &modules {
                    section.module-info data-module=(m.key) hidden[m.key != selected.as_str()] aria-label=(t!("upload-columns-of", module = m.key.as_str())) {
                        p {
                            (t!("upload-natural-key")) ": " strong { (m.natural_key.join(", ")) }
                            " · " (t!("upload-template")) ": "
                            a href=(format!("/console/modules/{}/template?format=csv", m.key)) download { "CSV" }
                            " · "
                            a href=(format!("/console/modules/{}/template?format=json", m.key)) download { "JSON" }
                            " · "
                            a href=(format!("/console/modules/{}/template?format=xlsx", m.key)) download { "XLSX" }
                        }
                        div.table-wrap {
                            table.small {
                                (layout::table_head(&column_heads))
                                tbody {
                                    @for c in &m.columns {
                                        tr {
                                            td { code { (c.name) } }
                                            td { (c.ty.as_str()) }
                                            td { @if c.required { strong { (t!("upload-required")) } } @else { (t!("upload-optional")) } }
                                            td { (c.aliases.join(", ")) }
                                        }
                                    }
                                }
                            }
                        }
                    }
                }
                section.module-info #workbook-info data-module="" hidden[!(selected.is_empty() && q.contains_key("module"))] aria-label=(t!("upload-workbook")) {
                    p { (t!("upload-workbook-help")) }
                    p {
                        (t!("upload-template")) ": "
                        a #workbook-template href=(format!("/console/templates/workbook?modules={}&format=xlsx", modules.iter().map(|m| m.key.as_str()).collect::<Vec<_>>().join(","))) download { "XLSX" }
                    }
                }
                div.field {
                    label for="file" { (t!("upload-file")) }
                    div.dropzone #dropzone {
                        input #file type="file" name="file" required
                            accept=".csv,.txt,.xlsx,.xls,.ods,.json,.jsonl,.ndjson,text/csv" aria-describedby="file-help";
                        p #file-help .help { (t!("upload-file-help")) }
                    }
                }
                fieldset {
                    legend { (t!("upload-mode")) }
                    div.radio { input #mode-insert type="radio" name="mode" value="insert" checked; label for="mode-insert" { strong { "insert" } " — " (t!("upload-mode-insert")) } }
                    div.radio { input #mode-update type="radio" name="mode" value="update"; label for="mode-update" { strong { "update" } " — " (t!("upload-mode-update")) } }
                    div.radio { input #mode-upsert type="radio" name="mode" value="upsert"; label for="mode-upsert" { strong { "upsert" } " — " (t!("upload-mode-upsert")) } }
                }
                fieldset {
                    legend { (t!("upload-on-error")) }
                    div.radio { input #err-fail type="radio" name="on_error" value="fail" checked; label for="err-fail" { strong { "fail" } " — " (t!("upload-on-error-fail")) } }
                    div.radio { input #err-skip type="radio" name="on_error" value="skip"; label for="err-skip" { strong { "skip" } " — " (t!("upload-on-error-skip")) } }
                }
                noscript {
                    div.alert.alert-warn { (t!("upload-needs-script", endpoint = "POST /api/import/{module}")) }
                }
                button.btn.btn-primary #upload-button type="submit" { (t!("upload-submit")) }
                div #upload-status .progress-box hidden {
                    label for="upload-progress" { (t!("upload-progress-upload")) }
                    progress #upload-progress max="100" value="0" {}
                    label for="validate-progress" { (t!("upload-progress-validation")) }
                    progress #validate-progress {}
                    p #upload-message aria-live="polite" {}
                }
                div #upload-error .alert.alert-error role="alert" hidden {}
            }
        }
    };
    Ok(layout::page(&ctx, &t!("nav-upload"), content).into_response())
}

/// `POST /console/import/{module}`: the body is the file, as on the API;
/// the session and its CSRF header stand in for the API key.
async fn upload(
    State(app): State<Arc<App>>,
    signed: Signed,
    Path(module): Path<String>,
    RawQuery(query): RawQuery,
    headers: HeaderMap,
    body: Body,
) -> ScriptResult<Response> {
    let params: Params = serde_urlencoded::from_str(query.as_deref().unwrap_or(""))
        .map_err(|e| service::Error::invalid("query", format!("the upload's options: {e}")))?;
    let declaration = sent_file(&signed, &headers)?;
    let format = declaration.body_format()?;
    let up = uploads::Upload {
        module: &module,
        mode: params.mode.unwrap_or(Mode::Insert),
        on_error: params.on_error.unwrap_or(OnError::Fail),
        options: params.options()?,
        format,
        charset: declaration.charset,
        file_name: declaration.name,
        idempotency_key: None,
    };
    let job = uploads::upload(&app, &signed.key, up, body.into_data_stream())
        .await?
        .job;
    Ok(accepted(&job.id))
}

/// What the page's script sent: checked against the session's CSRF token
/// (in a header), and declared by its headers.
fn sent_file(signed: &Signed, headers: &HeaderMap) -> Result<Declaration, crate::console::Shown> {
    let presented = headers
        .get(CSRF_HEADER)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("");
    signed.check_form(headers, presented)?;
    Ok(Declaration::from_headers(|name| {
        headers.get(name).and_then(|v| v.to_str().ok())
    })?)
}

/// The answer to an accepted upload: where its job is, and its status.
fn accepted(id: &crate::ids::JobId) -> Response {
    let body = json!({
        "id": id,
        "url": format!("/jobs/{id}"),
        "status": format!("/console/jobs/{id}/status"),
    });
    (StatusCode::ACCEPTED, Json(body)).into_response()
}

/// `POST /console/import`: a workbook (API.md section 16), as the API's
/// `POST /api/import` takes it; its sheets are named after modules.
async fn upload_workbook(
    State(app): State<Arc<App>>,
    signed: Signed,
    RawQuery(query): RawQuery,
    headers: HeaderMap,
    body: Body,
) -> ScriptResult<Response> {
    let pairs: Vec<(String, String)> =
        form_urlencoded::parse(query.as_deref().unwrap_or("").as_bytes())
            .into_owned()
            .collect();
    let mut up = WorkbookUpload::from_query(&pairs)?;
    let declaration = sent_file(&signed, &headers)?;
    up.format = declaration.body_format()?;
    up.file_name = declaration.name;
    let job = workbooks::upload(&app, &signed.key, up, body.into_data_stream())
        .await?
        .job;
    Ok(accepted(&job.id))
}

#[derive(Deserialize)]
struct WorkbookTemplateQuery {
    modules: Option<String>,
    format: Option<modules::WorkbookFormat>,
}

async fn workbook_template(
    State(app): State<Arc<App>>,
    _signed: Signed,
    Query(q): Query<WorkbookTemplateQuery>,
) -> ScriptResult<Response> {
    let list = workbooks::template_modules(&app, q.modules.as_deref())?;
    let t = modules::workbook_template(&list, q.format.unwrap_or_default())?;
    Ok((
        [
            (header::CONTENT_TYPE, t.content_type.to_string()),
            (
                header::CONTENT_DISPOSITION,
                format!("attachment; filename=\"{}\"", t.file_name),
            ),
        ],
        t.body,
    )
        .into_response())
}

#[derive(Deserialize)]
struct TemplateQuery {
    format: Option<TemplateFormat>,
}

async fn template(
    State(app): State<Arc<App>>,
    signed: Signed,
    Path(module): Path<String>,
    Query(q): Query<TemplateQuery>,
) -> ScriptResult<Response> {
    let m = uploads::target(&app, &signed.key, &module)?;
    let t = modules::template(m, q.format.unwrap_or_default())?;
    Ok((
        [
            (header::CONTENT_TYPE, t.content_type.to_string()),
            (
                header::CONTENT_DISPOSITION,
                format!("attachment; filename=\"{}\"", t.file_name),
            ),
        ],
        t.body,
    )
        .into_response())
}
