//! The catalog's modules as people and clients see them, and the empty
//! template of each in every format the service offers.

use rust_xlsxwriter::{ExcelDateTime, Format as XlsxFormat, Workbook, Worksheet, XlsxError};
use serde::Deserialize;
use serde_json::{Value as JsonValue, json};

use super::{Error, Result, dropdowns};
use crate::catalog::{ColumnType, Module};

/// The media type of XLSX files.
pub const XLSX_TYPE: &str = "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet";

/// A sheet's last row, counted from 0: a template's dropdowns reach it.
const XLSX_LAST_ROW: u32 = 1_048_575;

/// The formats a template is offered in.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum TemplateFormat {
    #[default]
    Csv,
    Xlsx,
    Json,
}

/// A template file, ready to download.
pub struct Template {
    pub content_type: &'static str,
    /// `{module}-template.{ext}`.
    pub file_name: String,
    pub body: Vec<u8>,
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
        // Within every scale but none.
        ColumnType::Numeric if c.scale == Some(0) => Example::Decimal("4"),
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

/// The XLSX template: a bold header row, frozen, and one typed example
/// row. Text columns are formatted as text, so that a phone number typed
/// into them keeps its leading zero; a column with allowed values has
/// them as a dropdown down the sheet.
fn xlsx_template(m: &Module, examples: &[Example]) -> Result<Vec<u8>, XlsxError> {
    let mut book = Workbook::new();
    xlsx_sheet(&mut book, m, examples)?;
    dropdowns::add(&mut book, m, XLSX_LAST_ROW)?;
    book.save_to_buffer()
}

/// A module's template sheet, added to `book`: its bold header row,
/// frozen, and one typed example row.
fn xlsx_sheet(book: &mut Workbook, m: &Module, examples: &[Example]) -> Result<(), XlsxError> {
    let sheet = book.add_worksheet();
    sheet.set_name(m.key.as_str())?;
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
    sheet.set_freeze_panes(1, 0)?;
    Ok(())
}

/// A template cell of an ODS sheet.
fn ods_cell(e: &Example) -> super::ods::Cell {
    use super::ods::Cell;
    match e {
        Example::Int(i) => Cell::Number(i.to_string()),
        Example::Decimal(d) => Cell::Number(d.to_string()),
        Example::Bool(b) => Cell::Bool(*b),
        Example::Date(..) => Cell::Date(e.text()),
        Example::Timestamp(..) => Cell::Date(e.text().replace(' ', "T")),
        Example::Text(t) => Cell::Text(t.clone()),
    }
}

/// The formats of a workbook template (API.md section 16).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum WorkbookFormat {
    #[default]
    Xlsx,
    Ods,
}

/// A workbook template (API.md section 16): a sheet for each module, in
/// reference order (`modules` is that order), named after it, each with
/// the header row and one example row of the module's template.
pub fn workbook_template(modules: &[&Module], format: WorkbookFormat) -> Result<Template> {
    let examples =
        |m: &Module| -> Vec<Example> { (0..m.columns.len()).map(|i| example(m, i)).collect() };
    let (content_type, ext, body) = match format {
        WorkbookFormat::Xlsx => {
            let mut book = Workbook::new();
            for m in modules {
                xlsx_sheet(&mut book, m, &examples(m)).map_err(Error::internal)?;
            }
            (
                XLSX_TYPE,
                "xlsx",
                book.save_to_buffer().map_err(Error::internal)?,
            )
        }
        WorkbookFormat::Ods => {
            let sheets: Vec<super::ods::Sheet> = modules
                .iter()
                .map(|m| super::ods::Sheet {
                    name: m.key.to_string(),
                    rows: vec![
                        (m.columns.iter())
                            .map(|c| super::ods::Cell::Text(c.name.clone()))
                            .collect(),
                        examples(m).iter().map(ods_cell).collect(),
                    ],
                })
                .collect();
            let body = super::ods::book(&sheets).map_err(Error::internal)?;
            (
                "application/vnd.oasis.opendocument.spreadsheet",
                "ods",
                body,
            )
        }
    };
    Ok(Template {
        content_type,
        file_name: format!("workbook-template.{ext}"),
        body,
    })
}

/// A module's empty template in a format: the header row and one example
/// row, typed so that each format writes it natively.
pub fn template(m: &Module, format: TemplateFormat) -> Result<Template> {
    let names: Vec<&str> = m.columns.iter().map(|c| c.name.as_str()).collect();
    let examples: Vec<Example> = (0..m.columns.len()).map(|i| example(m, i)).collect();
    let (content_type, ext, body) = match format {
        TemplateFormat::Csv => {
            let mut w = csv::Writer::from_writer(Vec::new());
            w.write_record(&names).map_err(Error::internal)?;
            w.write_record(examples.iter().map(Example::text))
                .map_err(Error::internal)?;
            let body = w.into_inner().map_err(Error::internal)?;
            ("text/csv; charset=utf-8", "csv", body)
        }
        TemplateFormat::Json => {
            let row: serde_json::Map<String, JsonValue> = names
                .iter()
                .zip(&examples)
                .map(|(n, e)| (n.to_string(), e.json()))
                .collect();
            let body = serde_json::to_vec_pretty(&json!([row])).map_err(Error::internal)?;
            ("application/json", "json", body)
        }
        TemplateFormat::Xlsx => {
            let body = xlsx_template(m, &examples).map_err(Error::internal)?;
            (XLSX_TYPE, "xlsx", body)
        }
    };
    Ok(Template {
        content_type,
        file_name: format!("{}-template.{ext}", m.key),
        body,
    })
}
