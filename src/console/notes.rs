//! What a job says about itself, in the reader's language: row errors and
//! warnings, the job's warnings and its problem, and the values of the
//! preview.
//!
//! The service stores English messages (the API's) next to stable codes.
//! English readers see the stored message exactly. Other languages are
//! told from the code and the catalog — the column's type, its allowed
//! values, its length, the module's date formats — so the words are the
//! reader's and the facts the same.

use chrono_tz::Tz;
use maud::{Markup, html};
use serde_json::Value as JsonValue;

use super::i18n::{self, Lang};
use crate::catalog::{ColumnType, Module};
use crate::ledger::job::{JobProblem, Warning, WarningCode};
use crate::t;
use crate::validate::{RowError, RowErrorCode};

/// A row error or warning, as the reader reads it.
pub fn row_note(module: &Module, e: &RowError) -> String {
    if i18n::current() == Lang::En {
        return without_place(&e.message, e.row).to_string();
    }
    let column = e.column.as_deref().unwrap_or("");
    let value = e.value.as_deref().unwrap_or("");
    let spec = module.columns.iter().find(|c| c.name == column);
    let kind = spec.map(|c| type_name(c.ty)).unwrap_or_default();
    let key = module.natural_key.join(", ");
    match e.code {
        RowErrorCode::Required => t!("note-required", column = column),
        RowErrorCode::Type => t!("note-type", column = column, value = value, kind = kind),
        RowErrorCode::Format => match spec.map(|c| c.ty) {
            Some(ColumnType::Date) => t!(
                "note-format-date",
                column = column,
                value = value,
                formats = module.date_formats.join(", ")
            ),
            _ => t!("note-format", column = column, value = value, kind = kind),
        },
        RowErrorCode::OutOfRange => t!("note-out-of-range", column = column, value = value),
        RowErrorCode::NotAllowed => t!(
            "note-not-allowed",
            column = column,
            value = value,
            allowed = spec
                .and_then(|c| c.allowed.as_ref())
                .map(|a| a.join(", "))
                .unwrap_or_default()
        ),
        RowErrorCode::TooLong => match spec.and_then(|c| c.max_length) {
            Some(max) => t!("note-too-long-max", column = column, max = max),
            None => t!("note-too-long", column = column),
        },
        RowErrorCode::DuplicateInFile => t!("note-duplicate", key = key),
        RowErrorCode::Exists => t!("note-exists", key = key, table = &module.table),
        RowErrorCode::NotFound => t!("note-not-found", key = key, table = &module.table),
        RowErrorCode::Reference => {
            let other = module
                .references
                .iter()
                .find(|r| r.column == column)
                .map(|r| r.module.as_str())
                .unwrap_or("");
            t!(
                "note-reference",
                column = column,
                value = value,
                module = other
            )
        }
        // The rule's own message, in the words its author chose.
        RowErrorCode::Rule => e.message.clone(),
        RowErrorCode::Phone => t!("note-phone", value = value),
        RowErrorCode::Conflict => t!("note-conflict", key = key, table = &module.table),
    }
}

/// A stored message without its "row N, column C: " (or "row N: "): the
/// console shows it in the row and beside the cell it is about.
fn without_place(message: &str, row: u64) -> &str {
    let rest = message.strip_prefix(&format!("row {row}"));
    match rest.filter(|r| r.starts_with([',', ':'])) {
        Some(r) => r.split_once(": ").map_or(message, |(_, said)| said),
        None => message,
    }
}

/// A column type as the reader names it.
fn type_name(ty: ColumnType) -> String {
    match ty {
        ColumnType::Text => t!("type-text"),
        ColumnType::Integer | ColumnType::Bigint => t!("type-integer"),
        ColumnType::Numeric => t!("type-numeric"),
        ColumnType::Boolean => t!("type-boolean"),
        ColumnType::Date => t!("type-date"),
        ColumnType::Timestamptz => t!("type-timestamp"),
    }
}

/// A warning of the whole job.
pub fn warning(w: &Warning) -> String {
    if i18n::current() == Lang::En && w.code == WarningCode::UnknownColumns {
        return w.message.clone();
    }
    let columns = w.columns.as_deref().unwrap_or_default().join(", ");
    let module = w.module.as_deref().unwrap_or("");
    let rows = w.rows.unwrap_or(0);
    match w.code {
        WarningCode::UnknownColumns => t!("warning-unknown-columns", columns = columns),
        WarningCode::References => t!(
            "warning-references",
            rows = rows,
            columns = columns,
            module = module
        ),
        WarningCode::Orphans => t!("warning-orphans", rows = rows, module = module),
        WarningCode::MappingApplied => t!(
            "warning-mapping-applied",
            mapping = w.mapping.as_deref().unwrap_or("")
        ),
        WarningCode::SheetIgnored => t!(
            "warning-sheet-ignored",
            sheet = w.sheet.as_deref().unwrap_or("")
        ),
    }
}

/// A job's problem: its title and what it means in the reader's words,
/// followed by the detail exactly as the service wrote it (it names
/// columns, bytes and limits a person may have to look for in the file).
pub fn problem(p: &JobProblem) -> (String, String) {
    if i18n::current() == Lang::En {
        return (p.title.clone(), p.detail.clone());
    }
    use crate::ledger::job::ProblemCode as P;
    let (title, summary) = match p.code {
        P::Unreadable => (
            t!("job-problem-unreadable"),
            t!("job-problem-unreadable-detail"),
        ),
        P::Encoding => (
            t!("job-problem-encoding"),
            t!("job-problem-encoding-detail"),
        ),
        P::NoRows => (t!("job-problem-no_rows"), t!("job-problem-no_rows-detail")),
        P::MissingColumns => (
            t!("job-problem-missing_columns"),
            t!("job-problem-missing_columns-detail"),
        ),
        P::DuplicateColumns => (
            t!("job-problem-duplicate_columns"),
            t!("job-problem-duplicate_columns-detail"),
        ),
        P::UnknownColumns => (
            t!("job-problem-unknown_columns"),
            t!("job-problem-unknown_columns-detail"),
        ),
        P::UnknownSheet => (
            t!("job-problem-unknown_sheet"),
            t!("job-problem-unknown_sheet-detail"),
        ),
        P::NoParts => (
            t!("job-problem-no_parts"),
            t!("job-problem-no_parts-detail"),
        ),
        P::TooManyRows => (
            t!("job-problem-too_many_rows"),
            t!("job-problem-too_many_rows-detail"),
        ),
        P::TooManyColumns => (
            t!("job-problem-too_many_columns"),
            t!("job-problem-too_many_columns-detail"),
        ),
        P::RowErrors => (
            t!("job-problem-row_errors"),
            t!("job-problem-row_errors-detail"),
        ),
        P::StalePreview => (
            t!("job-problem-stale_preview"),
            t!("job-problem-stale_preview-detail"),
        ),
        P::StaleRules => (
            t!("job-problem-stale_rules"),
            t!("job-problem-stale_rules-detail"),
        ),
        P::DatabaseError => (
            t!("job-problem-database_error"),
            t!("job-problem-database_error-detail"),
        ),
        P::RollbackConflict => (
            t!("job-problem-rollback_conflict"),
            t!("job-problem-rollback_conflict-detail"),
        ),
        P::WorkFailed => (
            t!("job-problem-work_failed"),
            t!("job-problem-work_failed-detail"),
        ),
        P::NoSpace => (
            t!("job-problem-no_space"),
            t!("job-problem-no_space-detail"),
        ),
    };
    let detail = t!(
        "problem-detail-with-exact",
        summary = summary,
        exact = &p.detail
    );
    (title, detail)
}

/// A value of the preview the reader's way: numbers (amounts, quantities:
/// the catalog has no numeric codes) with the language's grouping and
/// decimal mark, every digit kept; dates, moments and yes/no in words.
/// A moment keeps its exact instant on hover. Text as it is.
pub fn value(ty: Option<ColumnType>, v: &JsonValue, zone: Tz) -> Markup {
    let lang = i18n::current();
    match (ty, v) {
        (_, JsonValue::Null) => html! {},
        (Some(ColumnType::Numeric), JsonValue::String(s)) => {
            html! { (i18n::decimal_in(lang, s).unwrap_or_else(|| s.clone())) }
        }
        (Some(ColumnType::Integer | ColumnType::Bigint), JsonValue::Number(n)) => {
            match n.as_i64() {
                Some(n) => html! { (i18n::count_in(lang, n)) },
                None => html! { (n) },
            }
        }
        (Some(ColumnType::Date), JsonValue::String(s)) => {
            match chrono::NaiveDate::parse_from_str(s, "%Y-%m-%d") {
                Ok(d) => html! { (i18n::date_in(lang, &d)) },
                Err(_) => html! { (s) },
            }
        }
        (Some(ColumnType::Timestamptz), JsonValue::String(s)) => {
            match chrono::DateTime::parse_from_rfc3339(s) {
                Ok(t) => {
                    html! { time datetime=(s) title=(s) { (i18n::moment_exact_in(lang, &t, zone)) } }
                }
                Err(_) => html! { (s) },
            }
        }
        (Some(ColumnType::Boolean), JsonValue::Bool(b)) => {
            html! { @if *b { (t!("value-true")) } @else { (t!("value-false")) } }
        }
        (_, JsonValue::String(s)) => html! { (s) },
        (_, other) => html! { (other.to_string()) },
    }
}

#[cfg(test)]
mod tests {
    use super::without_place;

    #[test]
    fn a_message_loses_the_row_and_column_the_page_shows() {
        let m = "row 14, column price_idr: \"Rp 45.000\" is not a whole number (bigint)";
        assert_eq!(
            without_place(m, 14),
            "\"Rp 45.000\" is not a whole number (bigint)"
        );
        assert_eq!(
            without_place("row 4: sku P-1 is not in products", 4),
            "sku P-1 is not in products"
        );
        // Another row's number, or a rule's own words, stay whole.
        let other = "row 140: sku P-1 is not in products";
        assert_eq!(without_place(other, 14), other);
        assert_eq!(
            without_place("qty must be positive", 3),
            "qty must be positive"
        );
    }
}
