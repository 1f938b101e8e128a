//! Validation: a file's header and cells → typed rows of a module, with the
//! row errors a person needs to fix them (row, column, value, code, message).
//!
//! This module is pure: it knows nothing of the database. Checks that need
//! the target table (`exists`, `not_found`) and the whole file
//! (`duplicate_in_file`) are made by the pipeline's validation stage.

pub mod formula;
pub mod suggest;
pub mod value;
pub mod version;

use std::collections::HashMap;

use crate::catalog::{Module, Reference};
use crate::ingest::{Cell, FileCode, FileError, RawRow};
pub use value::{CellError, Rules, Value};
pub use version::{VERSION_COLUMN, version_of};

/// How the file's columns map onto the module's columns.
#[derive(Debug, Clone)]
pub struct HeaderMap {
    /// For each provided catalog column (catalog order): its position in the file.
    pub provided: Vec<(usize, usize)>,
    /// Headers that name no column of the module.
    pub unknown: Vec<String>,
    /// The position of the file's `_version` column, the row version
    /// tokens of an export (API.md section 15), if it has one.
    pub version: Option<usize>,
}

/// Header names are matched without regard to case or surrounding spaces,
/// and spaces and hyphens count as underscores.
pub fn normalize_header(h: &str) -> String {
    h.trim()
        .chars()
        .map(|c| match c {
            ' ' | '-' => '_',
            c => c.to_ascii_lowercase(),
        })
        .collect()
}

/// Matches a file's header against a module's columns and aliases.
pub fn match_header(module: &Module, header: &[String]) -> Result<HeaderMap, FileError> {
    match_header_with(module, header, &Mapping::new())
}

/// A revision's mapping (API.md section 11): file header as written →
/// module column, or `None` to leave the column out.
pub type Mapping = std::collections::BTreeMap<String, Option<String>>;

/// The mapped column of a header, if the mapping names the header: as
/// written, or as written but for surrounding spaces.
pub fn mapped<'m>(mapping: &'m Mapping, header: &str) -> Option<&'m Option<String>> {
    mapping.get(header).or_else(|| {
        mapping
            .iter()
            .find(|(k, _)| k.trim() == header.trim())
            .map(|(_, v)| v)
    })
}

/// How a header names a module column by the catalog alone.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Named {
    /// The column's own name.
    Exact,
    Alias,
}

/// Every normalised name and alias of a module's columns: the column and
/// how it is named. The one rule headers are matched by (uploads, and the
/// mapping screen's `how`).
pub fn header_names(module: &Module) -> HashMap<String, (usize, Named)> {
    let mut names = HashMap::new();
    for (i, c) in module.columns.iter().enumerate() {
        names.insert(normalize_header(&c.name), (i, Named::Exact));
        for a in &c.aliases {
            names.insert(normalize_header(a), (i, Named::Alias));
        }
    }
    names
}

/// Matches a file's header with a mapping first, then by the module's
/// columns and aliases.
pub fn match_header_with(
    module: &Module,
    header: &[String],
    mapping: &Mapping,
) -> Result<HeaderMap, FileError> {
    let names: HashMap<String, usize> = (header_names(module).into_iter())
        .map(|(name, (i, _))| (name, i))
        .collect();
    let mut position: Vec<Option<usize>> = vec![None; module.columns.len()];
    let mut unknown = Vec::new();
    let mut version = None;
    for (file_idx, h) in header.iter().enumerate() {
        let norm = normalize_header(h);
        let by_mapping = match mapped(mapping, h) {
            Some(None) => continue,
            Some(Some(name)) => module.column_index(name),
            None if norm == VERSION_COLUMN => {
                if let Some(first) = version.replace(file_idx) {
                    return Err(FileError::new(
                        FileCode::DuplicateColumns,
                        format!(
                            "row 1: columns {} and {} are both {VERSION_COLUMN}",
                            first + 1,
                            file_idx + 1
                        ),
                    ));
                }
                continue;
            }
            None => None,
        };
        if norm.is_empty() && by_mapping.is_none() {
            continue;
        }
        match by_mapping.as_ref().or_else(|| names.get(&norm)) {
            Some(&col) if position[col].is_some() => {
                return Err(FileError::new(
                    FileCode::DuplicateColumns,
                    format!(
                        "row 1: columns {} and {} both name {}",
                        position[col].map(|p| p + 1).unwrap_or(0),
                        file_idx + 1,
                        module.columns[col].name
                    ),
                ));
            }
            Some(&col) => position[col] = Some(file_idx),
            // Shown in warnings and messages: shortened, and without NULs
            // (which no database text column holds).
            None => unknown.push(value::cell_text(&Cell::Text(h.trim().to_string()))),
        }
    }
    let missing: Vec<&str> = module
        .columns
        .iter()
        .zip(&position)
        .filter(|(c, p)| c.required && p.is_none())
        .map(|(c, _)| c.name.as_str())
        .collect();
    if !missing.is_empty() {
        return Err(FileError::new(
            FileCode::MissingColumns,
            format!("row 1: required columns missing: {}", missing.join(", ")),
        ));
    }
    let provided = position
        .iter()
        .enumerate()
        .filter_map(|(col, p)| p.map(|p| (col, p)))
        .collect();
    Ok(HeaderMap {
        provided,
        unknown,
        version,
    })
}

/// What a row of the file does to the table, as validation found it.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize, utoipa::ToSchema,
)]
#[serde(rename_all = "lowercase")]
pub enum RowAction {
    Insert,
    Update,
    Unchanged,
    Error,
    /// Left out by a revision (API.md section 11): never written.
    Excluded,
}

impl RowAction {
    pub const ALL: [RowAction; 5] = [
        RowAction::Insert,
        RowAction::Update,
        RowAction::Unchanged,
        RowAction::Error,
        RowAction::Excluded,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            RowAction::Insert => "insert",
            RowAction::Update => "update",
            RowAction::Unchanged => "unchanged",
            RowAction::Error => "error",
            RowAction::Excluded => "excluded",
        }
    }

    pub fn parse(s: &str) -> Option<RowAction> {
        RowAction::ALL.into_iter().find(|a| a.as_str() == s)
    }
}

/// What is wrong with a row or one of its cells (API.md section 5): a
/// client switches on it, the console words it in the reader's language.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize, utoipa::ToSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum RowErrorCode {
    /// A required column's cell is empty.
    Required,
    /// The cell is not a value of the column's type.
    Type,
    /// A number or a date outside what the column holds.
    OutOfRange,
    /// The cell does not have the column's format (a date, a pattern), or
    /// the row has more cells than the header.
    Format,
    /// A value outside the column's allowed values.
    NotAllowed,
    /// Longer than the column's maximum length, or than a cell may be.
    TooLong,
    /// The natural key is on another row of the file too.
    DuplicateInFile,
    /// `mode=insert`: the natural key is already in the table.
    Exists,
    /// `mode=update`: the natural key is not in the table.
    NotFound,
    /// A referencing column's value is not in the referenced module's
    /// table (API.md section 12).
    Reference,
    /// A check of the module's rules is false for the row, or cannot be
    /// evaluated for it (API.md section 14); the message is the rule's.
    Rule,
    /// A `phone_id` normalizer's cell is no phone number (API.md section 14).
    Phone,
    /// The row's `_version` is not the table row's current one: it changed
    /// or was deleted since it was exported, or a row given as new (empty
    /// `_version`) was added meanwhile (API.md section 15).
    Conflict,
}

impl RowErrorCode {
    pub const ALL: [RowErrorCode; 13] = [
        RowErrorCode::Required,
        RowErrorCode::Type,
        RowErrorCode::OutOfRange,
        RowErrorCode::Format,
        RowErrorCode::NotAllowed,
        RowErrorCode::TooLong,
        RowErrorCode::DuplicateInFile,
        RowErrorCode::Exists,
        RowErrorCode::NotFound,
        RowErrorCode::Reference,
        RowErrorCode::Rule,
        RowErrorCode::Phone,
        RowErrorCode::Conflict,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            RowErrorCode::Required => "required",
            RowErrorCode::Type => "type",
            RowErrorCode::OutOfRange => "out_of_range",
            RowErrorCode::Format => "format",
            RowErrorCode::NotAllowed => "not_allowed",
            RowErrorCode::TooLong => "too_long",
            RowErrorCode::DuplicateInFile => "duplicate_in_file",
            RowErrorCode::Exists => "exists",
            RowErrorCode::NotFound => "not_found",
            RowErrorCode::Reference => "reference",
            RowErrorCode::Rule => "rule",
            RowErrorCode::Phone => "phone",
            RowErrorCode::Conflict => "conflict",
        }
    }

    pub fn parse(s: &str) -> Option<RowErrorCode> {
        RowErrorCode::ALL.into_iter().find(|c| c.as_str() == s)
    }
}

impl std::fmt::Display for RowErrorCode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One row error, as the errors report shows it.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize, utoipa::ToSchema)]
pub struct RowError {
    /// The row as a person sees it in the file (CSV and Excel: the header
    /// is row 1; JSON: the object's 1-based position).
    pub row: u64,
    /// The column, or null for an error of the whole row.
    pub column: Option<String>,
    /// The cell's text as the file held it.
    pub value: Option<String>,
    pub code: RowErrorCode,
    pub message: String,
    /// The id of the module's rule (API.md section 14) a `rule` or
    /// `duplicate_in_file` error of a check or unique rule broke.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    pub rule: Option<String>,
}

impl RowError {
    /// A value of a referencing column that the referenced module's table
    /// does not hold (API.md section 12): code `reference`.
    pub fn missing_reference(row: u64, reference: &Reference, value: &str) -> RowError {
        RowError {
            row,
            column: Some(reference.column.clone()),
            value: Some(value.to_string()),
            code: RowErrorCode::Reference,
            message: format!(
                "row {row}: {} {value} is not in {}",
                reference.column, reference.module
            ),
            rule: None,
        }
    }
}

/// One row after type checking.
#[derive(Debug, Clone)]
pub struct CheckedRow {
    pub row: u64,
    /// Values of the provided columns, in [`HeaderMap::provided`] order
    /// (`None` is null; also `None` where the cell had an error).
    pub values: Vec<Option<Value>>,
    pub errors: Vec<RowError>,
    /// The raw text of cells that failed, so the preview shows what was there.
    pub raw: Vec<(usize, String)>,
    /// Cells a normalizer of the module's rules rewrote: their place among
    /// the provided columns and what the file said.
    pub normalized: Vec<(usize, String)>,
    /// Remarks of the module's rules that leave the row valid (checks and
    /// unique rules of severity `warning`).
    pub warnings: Vec<RowError>,
    /// The row's `_version` cell, trimmed, when the file has the column and
    /// the cell is not empty (API.md section 15).
    pub version: Option<String>,
}

impl CheckedRow {
    /// The natural key's values, when every key cell is valid.
    pub fn key(&self, module: &Module, header: &HeaderMap) -> Option<Vec<Value>> {
        let places = module.key_places(header.provided.iter().map(|&(c, _)| c))?;
        places.iter().map(|&i| self.values[i].clone()).collect()
    }

    /// The row's values as a JSON object keyed by column name; failed cells
    /// carry their raw text. Written straight to text: this runs per row.
    pub fn values_text(&self, module: &Module, header: &HeaderMap) -> String {
        let mut out = Vec::with_capacity(64 * header.provided.len());
        out.push(b'{');
        for (i, &(col, _)) in header.provided.iter().enumerate() {
            if i > 0 {
                out.push(b',');
            }
            let _ = serde_json::to_writer(&mut out, &module.columns[col].name);
            out.push(b':');
            match &self.values[i] {
                Some(v) => v.write_json(&mut out),
                None => match self.raw.iter().find(|(r, _)| *r == i) {
                    Some((_, text)) => {
                        let _ = serde_json::to_writer(&mut out, text);
                    }
                    None => out.extend_from_slice(b"null"),
                },
            }
        }
        out.push(b'}');
        // Only JSON (UTF-8) was written.
        String::from_utf8(out).unwrap_or_default()
    }
}

/// The canonical text of a natural key (a JSON array of its values), as
/// the staged rows name keys (the table lookups answer by place).
pub fn key_text<'v>(values: impl IntoIterator<Item = &'v Value>) -> String {
    let values = values.into_iter();
    // Room for a short code a column without growing: this runs per row.
    let mut out = Vec::with_capacity(2 + 24 * values.size_hint().0);
    out.push(b'[');
    for (i, v) in values.enumerate() {
        if i > 0 {
            out.push(b',');
        }
        v.write_json(&mut out);
    }
    out.push(b']');
    String::from_utf8(out).unwrap_or_default()
}

/// Type-checks one row of the file, whose cells it takes: its text cells
/// become its values ([`value::parse`]).
pub fn check_row(module: &Module, header: &HeaderMap, rules: &Rules, raw: RawRow) -> CheckedRow {
    check_row_with(module, header, rules, raw, |_, _| Ok(None))
}

/// [`check_row`], each provided cell first given to `prepare` with its
/// module column: it may rewrite the cell in place (a module's
/// normalizers, `pipeline::apply`) and answer what the file said, or
/// refuse the cell, which is then the column's row error. A row error of
/// a rewritten cell shows what the file said. A `prepare` that does
/// nothing costs nothing: the closure is inlined away.
pub fn check_row_with(
    module: &Module,
    header: &HeaderMap,
    rules: &Rules,
    raw: RawRow,
    mut prepare: impl FnMut(usize, &mut Cell) -> Result<Option<String>, CellError>,
) -> CheckedRow {
    let RawRow { row, mut cells } = raw;
    let mut values = Vec::with_capacity(header.provided.len());
    let mut errors = Vec::new();
    let mut failed = Vec::new();
    let mut normalized = Vec::new();
    // A short row's missing cells are empty.
    let width = header.provided.iter().map(|&(_, pos)| pos + 1).max();
    if let Some(width) = width.filter(|&w| w > cells.len()) {
        cells.resize(width, Cell::Empty);
    }
    for (i, &(col, pos)) in header.provided.iter().enumerate() {
        let column = &module.columns[col];
        // Each file position serves one column at most (`match_header_with`).
        let cell = &mut cells[pos];
        let (parsed, was) = match prepare(col, cell) {
            Ok(was) => (value::parse(cell, column, rules), was),
            Err(e) => (Err(e), None),
        };
        match parsed {
            Ok(v) => {
                if let Some(was) = was {
                    normalized.push((i, was));
                }
                values.push(v);
            }
            Err(CellError { code, message }) => {
                let text = was.unwrap_or_else(|| value::cell_text(cell));
                errors.push(RowError {
                    row,
                    column: Some(column.name.clone()),
                    value: Some(text.clone()),
                    code,
                    message: format!("row {row}, column {}: {message}", column.name),
                    rule: None,
                });
                failed.push((i, text));
                values.push(None);
            }
        }
    }
    let version = (header.version.and_then(|pos| cells.get(pos)))
        .map(|cell| value::cell_text(cell).trim().to_string())
        .filter(|token| !token.is_empty());
    CheckedRow {
        row,
        values,
        errors,
        raw: failed,
        normalized,
        warnings: Vec::new(),
        version,
    }
}

/// The row error for cells beyond the header's `width` columns, when any
/// of them holds a value (a row with trailing empty cells is fine: editors
/// pad rows with delimiters).
pub fn extra_cells(raw: &RawRow, width: usize) -> Option<RowError> {
    let extra = raw
        .cells
        .get(width..)
        .filter(|x| x.iter().any(|c| *c != Cell::Empty))?;
    Some(RowError {
        row: raw.row,
        column: None,
        value: None,
        code: RowErrorCode::Format,
        message: format!(
            "row {}: {} cells more than the header's {width} columns",
            raw.row,
            extra.len(),
        ),
        rule: None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::catalog::Catalog;

    #[test]
    fn headers_match_loosely_and_by_alias() {
        let catalog = Catalog::builtin();
        let m = catalog.get("customers").unwrap();
        let header: Vec<String> = [" Customer Name ", "WA-Number", "nonsense", "City"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        let map = match_header(m, &header).unwrap();
        assert_eq!(map.provided, vec![(0, 0), (1, 1), (2, 3)]);
        assert_eq!(map.unknown, vec!["nonsense"]);
        let alias: Vec<String> = vec!["Nama".into(), "whatsapp".into()];
        assert_eq!(
            match_header(m, &alias).unwrap().provided,
            vec![(0, 0), (1, 1)]
        );
    }

    #[test]
    fn a_mapping_names_columns_and_leaves_others_out() {
        let catalog = Catalog::builtin();
        let m = catalog.get("customers").unwrap();
        let header: Vec<String> = ["Nama Pelanggan", "No. WA", "Catatan", "city"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        assert_eq!(
            match_header(m, &header).unwrap_err().code,
            FileCode::MissingColumns
        );
        let mapping: Mapping = [
            (
                "Nama Pelanggan".to_string(),
                Some("customer_name".to_string()),
            ),
            (" No. WA ".to_string(), Some("wa_number".to_string())),
            ("Catatan".to_string(), None),
        ]
        .into();
        let map = match_header_with(m, &header, &mapping).unwrap();
        assert_eq!(map.provided, vec![(0, 0), (1, 1), (2, 3)]);
        assert!(map.unknown.is_empty(), "an ignored column is not unknown");
    }

    #[test]
    fn missing_required_columns_are_listed() {
        let catalog = Catalog::builtin();
        let m = catalog.get("orders").unwrap();
        let err = match_header(m, &["order_no".to_string(), "sku".to_string()]).unwrap_err();
        assert_eq!(err.code, FileCode::MissingColumns);
        assert!(
            err.message
                .contains("customer_id, qty, amount_idr, order_date"),
            "{}",
            err.message
        );
    }
}
