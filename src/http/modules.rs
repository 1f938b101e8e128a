//! `GET /api/modules`, one module, and its upload template.

use std::collections::HashMap;
use std::sync::Arc;

use axum::Json;
use axum::extract::{Path, Query, State};
use axum::http::header;
use axum::response::{IntoResponse, Response};
use rust_xlsxwriter::{ExcelDateTime, Format as XlsxFormat, Workbook, Worksheet, XlsxError};
use serde_json::{Value as JsonValue, json};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::auth::Caller;
use super::problem::{ApiResult, Problem};
use super::views::{ModuleList, ModuleView};
use crate::app::App;
use crate::catalog::{ColumnType, Module};

pub fn routes() -> OpenApiRouter<Arc<App>> {
    OpenApiRouter::new()
        .routes(routes!(list))
        .routes(routes!(one))
        .routes(routes!(template))
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
    Ok(Json(ModuleView::new(super::module(&app, &key)?)))
}

/// The example value of a column in a template, typed so that every
/// format can write it natively.
enum Example {
    Text(String),
    Int(i64),
    /// A decimal written as text, so no format rounds it.
    Decimal(&'static str),
    Bool(bool),
    Date(u16, u8, u8),
    /// A local date and time (taken in the configured zone).
    Timestamp(u16, u8, u8, u16, u8, u8),
}

fn example(m: &Module, i: usize) -> Example {
    let c = &m.columns[i];
    if let Some(first) = c.allowed.as_ref().and_then(|a| a.first()) {
        return Example::Text(first.clone());
    }
    match c.ty {
        ColumnType::Text => Example::Text(format!("{}-001", c.name.to_uppercase())),
        ColumnType::Integer => Example::Int(1),
        ColumnType::Bigint => Example::Int(150000),
        ColumnType::Numeric => Example::Decimal("4.5"),
        ColumnType::Date => Example::Date(2024, 1, 31),
        ColumnType::Timestamptz => Example::Timestamp(2024, 1, 31, 9, 30, 0),
        ColumnType::Boolean => Example::Bool(true),
    }
}

impl Example {
    /// As a person types it in a CSV.
    fn text(&self) -> String {
        match self {
            Example::Text(s) => s.clone(),
            Example::Int(i) => i.to_string(),
            Example::Decimal(d) => d.to_string(),
            Example::Bool(b) => b.to_string(),
            Example::Date(y, m, d) => format!("{y:04}-{m:02}-{d:02}"),
            Example::Timestamp(y, mo, d, h, mi, s) => {
                format!("{y:04}-{mo:02}-{d:02} {h:02}:{mi:02}:{s:02}")
            }
        }
    }

    /// As a JSON client sends it: numbers as numbers (a JSON number keeps
    /// its exact digits), booleans as booleans, dates as text.
    fn json(&self) -> JsonValue {
        match self {
            Example::Int(i) => json!(i),
            Example::Decimal(d) => serde_json::from_str(d).unwrap_or_else(|_| json!(d)),
            Example::Bool(b) => json!(b),
            other => JsonValue::String(other.text()),
        }
    }

    /// As a typed spreadsheet cell.
    fn write(&self, sheet: &mut Worksheet, row: u32, col: u16) -> Result<(), XlsxError> {
        match self {
            Example::Text(s) => sheet.write_string(row, col, s)?,
            Example::Int(i) => sheet.write_number(row, col, *i as f64)?,
            Example::Decimal(d) => sheet.write_number(row, col, d.parse::<f64>().unwrap_or(0.0))?,
            Example::Bool(b) => sheet.write_boolean(row, col, *b)?,
            Example::Date(y, m, d) => {
                let date = ExcelDateTime::from_ymd(*y, *m, *d)?;
                let format = XlsxFormat::new().set_num_format("yyyy-mm-dd");
                sheet.write_datetime_with_format(row, col, date, &format)?
            }
            Example::Timestamp(y, mo, d, h, mi, s) => {
                let at = ExcelDateTime::from_ymd(*y, *mo, *d)?.and_hms(*h, *mi, *s)?;
                let format = XlsxFormat::new().set_num_format("yyyy-mm-dd hh:mm:ss");
                sheet.write_datetime_with_format(row, col, at, &format)?
            }
        };
        Ok(())
    }
}

/// The XLSX template: a bold header row and one typed example row. Text
/// columns are formatted as text, so that a phone number typed into them
/// keeps its leading zero.
fn xlsx_template(m: &Module, examples: &[Example]) -> Result<Vec<u8>, XlsxError> {
    let mut book = Workbook::new();
    let sheet = book.add_worksheet();
    sheet.set_name(&m.key)?;
    let bold = XlsxFormat::new().set_bold();
    let text = XlsxFormat::new().set_num_format("@");
    for (i, (c, e)) in m.columns.iter().zip(examples).enumerate() {
        let col = i as u16;
        if c.ty == ColumnType::Text {
            sheet.set_column_format(col, &text)?;
        }
        sheet.set_column_width(col, (c.name.len().max(12) + 2) as f64)?;
        sheet.write_string_with_format(0, col, &c.name, &bold)?;
        e.write(sheet, 1, col)?;
    }
    book.save_to_buffer()
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
                (JsonValue = "application/json"),
                (super::openapi::Binary = "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet"),
            )),
        (status = 404, description = "`unknown_module`"),
        (status = 422, description = "`invalid_parameter`: a format not offered"),
    ))]
async fn template(
    State(app): State<Arc<App>>,
    _caller: Caller,
    Path(key): Path<String>,
    Query(q): Query<HashMap<String, String>>,
) -> ApiResult<Response> {
    let m = super::module(&app, &key)?;
    template_file(m, q.get("format").map(String::as_str).unwrap_or("csv"))
}

/// The template download of a module in a format (`csv`, `xlsx` or `json`), for the
/// API and the console alike.
pub fn template_file(m: &Module, format: &str) -> ApiResult<Response> {
    let names: Vec<&str> = m.columns.iter().map(|c| c.name.as_str()).collect();
    let examples: Vec<Example> = (0..m.columns.len()).map(|i| example(m, i)).collect();
    let file = format!("attachment; filename=\"{}-template", m.key);
    let (content_type, ext, body) = match format {
        "csv" => {
            let mut w = csv::Writer::from_writer(Vec::new());
            w.write_record(&names).map_err(Problem::internal)?;
            w.write_record(examples.iter().map(Example::text))
                .map_err(Problem::internal)?;
            let body = w.into_inner().map_err(Problem::internal)?;
            ("text/csv; charset=utf-8", "csv", body)
        }
        "json" => {
            let row: serde_json::Map<String, JsonValue> = names
                .iter()
                .zip(&examples)
                .map(|(n, e)| (n.to_string(), e.json()))
                .collect();
            let body = serde_json::to_vec_pretty(&json!([row])).map_err(Problem::internal)?;
            ("application/json", "json", body)
        }
        "xlsx" => {
            let body = xlsx_template(m, &examples).map_err(Problem::internal)?;
            (XLSX_TYPE, "xlsx", body)
        }
        other => {
            return Err(Problem::invalid_parameter(
                "format",
                format!("format {other:?} is not offered; use csv, xlsx or json"),
            ));
        }
    };
    Ok((
        [
            (header::CONTENT_TYPE, content_type.to_string()),
            (header::CONTENT_DISPOSITION, format!("{file}.{ext}\"")),
        ],
        body,
    )
        .into_response())
}

/// The formats a template is offered in.
#[derive(utoipa::ToSchema)]
#[schema(rename_all = "lowercase")]
#[allow(dead_code)]
pub enum TemplateFormat {
    Csv,
    Xlsx,
    Json,
}

/// The media type of XLSX files.
pub const XLSX_TYPE: &str = "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet";
