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
use super::problem::{ApiResult, Problem};
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
    let request = request(uri.query().unwrap_or(""))?;
    let d = export::export(&app, &caller.0, &module, request).await?;
    Ok(download_response(d))
}

/// The export's query string: `format`, `where.<column>`, `job`, `limit`,
/// each once; anything else is a `422` naming it.
fn request(query: &str) -> ApiResult<Request> {
    let mut r = Request::default();
    let mut seen = std::collections::HashSet::new();
    for (name, value) in form_urlencoded::parse(query.as_bytes()) {
        if !seen.insert(name.to_string()) {
            return Err(Problem::invalid_parameter(
                &name,
                format!("{name} is given twice; give it once"),
            ));
        }
        if let Some(column) = name.strip_prefix("where.") {
            r.equal.push((column.to_string(), value.into_owned()));
            continue;
        }
        match &*name {
            "format" => {
                r.format = ExportFormat::parse(&value).ok_or_else(|| {
                    Problem::invalid_parameter(
                        "format",
                        format!("format must be csv, xlsx, json or ndjson, not {value:?}"),
                    )
                })?
            }
            "job" => r.job = Some(value.into_owned()),
            "limit" => {
                r.limit = Some(value.parse().map_err(|_| {
                    Problem::invalid_parameter(
                        "limit",
                        format!("limit must be a whole number of rows, not {value:?}"),
                    )
                })?)
            }
            other => {
                return Err(Problem::invalid_parameter(
                    other,
                    format!(
                        "{other} is not a parameter of an export (format, where.<column>, job, limit)"
                    ),
                ));
            }
        }
    }
    Ok(r)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_query_names_each_parameter_at_fault() {
        let r = request("format=ndjson&where.city=Bandung&where.grade=&job=job_1&limit=5").unwrap();
        assert_eq!(r.format, ExportFormat::Ndjson);
        assert_eq!(
            r.equal,
            vec![
                ("city".to_string(), "Bandung".to_string()),
                ("grade".to_string(), String::new())
            ]
        );
        assert_eq!((r.job.as_deref(), r.limit), (Some("job_1"), Some(5)));
        assert_eq!(request("").unwrap().format, ExportFormat::Csv);
        for (query, parameter) in [
            ("format=xls", "format"),
            ("limit=-1", "limit"),
            ("limit=many", "limit"),
            ("where.city=a&where.city=b", "where.city"),
            ("sort=city", "sort"),
        ] {
            let p = request(query).unwrap_err();
            assert_eq!(p.code(), "invalid_parameter", "{query}");
            assert!(p.detail().contains(parameter), "{query}: {}", p.detail());
        }
    }
}
