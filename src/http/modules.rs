//! `GET /api/modules`, one module, and its upload template.

use std::collections::HashMap;
use std::sync::Arc;

use axum::extract::{Path, Query, State};
use axum::http::header;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::{Json, Router};
use serde_json::{Value as JsonValue, json};

use super::auth::Caller;
use super::problem::{ApiResult, Problem};
use crate::app::App;
use crate::catalog::{ColumnType, Module};

pub fn routes() -> Router<Arc<App>> {
    Router::new()
        .route("/api/modules", get(list))
        .route("/api/modules/{module}", get(one))
        .route("/api/modules/{module}/template", get(template))
}

/// A module as the API shows it.
pub fn view(m: &Module) -> JsonValue {
    let columns: Vec<JsonValue> = m
        .columns
        .iter()
        .map(|c| {
            let mut col = json!({"name": c.name, "type": c.ty.as_str(), "required": c.required});
            if let Some(allowed) = &c.allowed {
                col["allowed"] = json!(allowed);
            }
            if !c.aliases.is_empty() {
                col["aliases"] = json!(c.aliases);
            }
            col
        })
        .collect();
    json!({"key": m.key, "table": m.table, "columns": columns, "natural_key": m.natural_key})
}

async fn list(State(app): State<Arc<App>>, _caller: Caller) -> Json<JsonValue> {
    let modules: Vec<JsonValue> = app.catalog.modules().iter().map(|m| view(m)).collect();
    Json(json!({"modules": modules}))
}

async fn one(
    State(app): State<Arc<App>>,
    _caller: Caller,
    Path(key): Path<String>,
) -> ApiResult<Json<JsonValue>> {
    Ok(Json(view(super::module(&app, &key)?)))
}

/// An example value for a column, as a person would type it.
fn example(m: &Module, i: usize) -> String {
    let c = &m.columns[i];
    if let Some(first) = c.allowed.as_ref().and_then(|a| a.first()) {
        return first.clone();
    }
    match c.ty {
        ColumnType::Text => format!("{}-001", c.name.to_uppercase()),
        ColumnType::Integer => "1".into(),
        ColumnType::Bigint => "150000".into(),
        ColumnType::Numeric => "4.5".into(),
        ColumnType::Date => "2024-01-31".into(),
        ColumnType::Timestamptz => "2024-01-31 09:30:00".into(),
        ColumnType::Boolean => "true".into(),
    }
}

/// An empty template: the header row and one example row.
async fn template(
    State(app): State<Arc<App>>,
    _caller: Caller,
    Path(key): Path<String>,
    Query(q): Query<HashMap<String, String>>,
) -> ApiResult<Response> {
    let m = super::module(&app, &key)?;
    template_file(m, q.get("format").map(String::as_str).unwrap_or("csv"))
}

/// The template download of a module in a format (`csv` or `json`), for the
/// API and the console alike.
pub fn template_file(m: &Module, format: &str) -> ApiResult<Response> {
    let names: Vec<&str> = m.columns.iter().map(|c| c.name.as_str()).collect();
    let examples: Vec<String> = (0..m.columns.len()).map(|i| example(m, i)).collect();
    let file = format!("attachment; filename=\"{}-template", m.key);
    match format {
        "csv" => {
            let mut w = csv::Writer::from_writer(Vec::new());
            w.write_record(&names).map_err(Problem::internal)?;
            w.write_record(&examples).map_err(Problem::internal)?;
            let body = w.into_inner().map_err(Problem::internal)?;
            Ok((
                [
                    (header::CONTENT_TYPE, "text/csv; charset=utf-8".to_string()),
                    (header::CONTENT_DISPOSITION, format!("{file}.csv\"")),
                ],
                body,
            )
                .into_response())
        }
        "json" => {
            let row: serde_json::Map<String, JsonValue> = names
                .iter()
                .zip(&examples)
                .map(|(n, e)| (n.to_string(), JsonValue::String(e.clone())))
                .collect();
            Ok((
                [
                    (header::CONTENT_TYPE, "application/json".to_string()),
                    (header::CONTENT_DISPOSITION, format!("{file}.json\"")),
                ],
                serde_json::to_vec_pretty(&json!([row])).map_err(Problem::internal)?,
            )
                .into_response())
        }
        other => Err(Problem::invalid_parameter(
            "format",
            format!("format {other:?} is not offered; use csv or json"),
        )),
    }
}
