//! The preview table of a job's page: a page of staged rows, updates as
//! before → after, wrong cells with their message.

use std::collections::HashMap;

use chrono_tz::Tz;
use maud::{Markup, html};
use serde_json::Value as JsonValue;

use crate::catalog::Module;
use crate::console::layout::count;
use crate::console::notes;
use crate::ledger::{Job, JobState};
use crate::service::jobs::{PreviewFilter, PreviewRow};
use crate::t;
use crate::validate::RowAction;

/// Preview rows per page.
pub const PAGE: i64 = 50;

/// A JSON value as plain text (strings without quotes).
pub fn plain(v: &JsonValue) -> String {
    match v {
        JsonValue::String(s) => s.clone(),
        JsonValue::Null => String::new(),
        other => other.to_string(),
    }
}

fn cell_value(v: Option<&JsonValue>) -> Markup {
    match v {
        None | Some(JsonValue::Null) => html! { span.null { (t!("empty-value")) } },
        Some(v) => html! { (plain(v)) },
    }
}

/// The columns a page of rows shows: the module's columns the rows carry,
/// in catalog order.
fn shown_columns<'a>(module: &'a Module, rows: &[PreviewRow]) -> Vec<&'a str> {
    module
        .columns
        .iter()
        .map(|c| c.name.as_str())
        .filter(|name| {
            rows.iter().any(|r| {
                r.row.vals.contains_key(*name)
                    || r.row.before.as_ref().is_some_and(|b| b.contains_key(*name))
            })
        })
        .collect()
}

/// The page a preview's links lead to: the job's, and on a workbook job
/// (API.md section 16) the part shown.
#[derive(Clone, Copy)]
pub(super) struct Place<'a> {
    pub job: &'a crate::ids::JobId,
    pub part: Option<&'a str>,
}

pub(super) fn preview_link(place: Place, filter: PreviewFilter, offset: i64) -> String {
    let mut params: Vec<(&str, String)> = Vec::new();
    if let Some(part) = place.part {
        params.push(("part", part.to_string()));
    }
    if let Some(a) = filter.action {
        params.push(("action", a.as_str().to_string()));
    }
    if filter.warned {
        params.push(("warnings", "only".to_string()));
    }
    if filter.normalized {
        params.push(("normalized", "only".to_string()));
    }
    if offset > 0 {
        params.push(("offset", offset.to_string()));
    }
    let q = serde_urlencoded::to_string(params).unwrap_or_default();
    if q.is_empty() {
        format!("/jobs/{}#preview", place.job)
    } else {
        format!("/jobs/{}?{q}#preview", place.job)
    }
}

#[allow(clippy::too_many_arguments)]
pub(super) fn preview_section(
    zone: Tz,
    job: &Job,
    place: Place,
    module: &Module,
    filter: PreviewFilter,
    offset: i64,
    total: i64,
    rows: &[PreviewRow],
) -> Markup {
    let c = &job.counts;
    let by = |action| PreviewFilter {
        action,
        warned: false,
        normalized: false,
    };
    let mut tabs = vec![
        (by(None), t!("tab-all"), c.rows - c.excluded),
        (by(Some(RowAction::Insert)), t!("count-insert"), c.insert),
        (by(Some(RowAction::Update)), t!("count-update"), c.update),
        (
            by(Some(RowAction::Unchanged)),
            t!("count-unchanged"),
            c.unchanged,
        ),
        (by(Some(RowAction::Error)), t!("count-errors"), c.errors),
    ];
    if c.excluded > 0 {
        let excluded = by(Some(RowAction::Excluded));
        tabs.push((excluded, t!("count-excluded"), c.excluded));
    }
    // Rows marked with a warning or a normalized cell, whatever their action.
    let marked = |warned, normalized| PreviewFilter {
        action: None,
        warned,
        normalized,
    };
    if c.warnings > 0 {
        tabs.push((marked(true, false), t!("count-warnings"), c.warnings));
    }
    if c.normalized > 0 {
        let label = t!("tab-normalized");
        tabs.push((marked(false, true), label, c.normalized));
    }
    let cols = shown_columns(module, rows);
    // A column of the row's own messages only when a row on the page has
    // one that no cell shows.
    let messages = rows.iter().any(|r| has_row_messages(r, &cols));
    let first = if total == 0 { 0 } else { offset + 1 };
    let last = offset + rows.len() as i64;
    let last_page = ((total - 1).max(0) / PAGE) * PAGE;
    html! {
        section #preview aria-labelledby="preview-title" {
            h2 #preview-title { (t!("preview-title")) }
            nav.tabs aria-label=(t!("preview-tabs")) {
                @for (a, label, n) in tabs {
                    @if a == filter {
                        a href=(preview_link(place, a, 0)) aria-current="true" { (label) " " span.tab-count { (count(n)) } }
                    } @else {
                        a href=(preview_link(place, a, 0)) { (label) " " span.tab-count { (count(n)) } }
                    }
                }
            }
            @if rows.is_empty() {
                p.empty {
                    @if job.purged_at.is_some() { (t!("preview-purged")) }
                    @else if job.revised_as.is_some() && job.counts.rows > 0 { (t!("preview-revised")) }
                    @else if job.state == JobState::Validating { (t!("preview-wait")) }
                    @else if job.state == JobState::Invalid { (t!("preview-unreadable")) }
                    @else { (t!("preview-no-rows")) }
                }
            } @else {
                div.table-wrap tabindex="0" role="region" aria-label=(t!("preview-rows")) {
                    table.preview {
                        thead {
                            tr {
                                th.pin-row scope="col" { (t!("col-row")) }
                                th.pin-action scope="col" { (t!("col-action")) }
                                @for col in &cols { th scope="col" { (col) } }
                                @if messages { th scope="col" { (t!("col-notes")) } }
                            }
                        }
                        tbody {
                            @for r in rows { (preview_row(module, zone, r, &cols, messages)) }
                        }
                    }
                }
                nav.pager aria-label=(t!("preview-pages")) {
                    span.range { (t!("preview-range", first = count(first), last = count(last), total = count(total))) }
                    @if offset > 0 {
                        a.btn href=(preview_link(place, filter, 0)) { (t!("pager-first")) }
                        a.btn href=(preview_link(place, filter, (offset - PAGE).max(0))) rel="prev" { (t!("pager-previous")) }
                    }
                    @if last < total {
                        a.btn href=(preview_link(place, filter, offset + PAGE)) rel="next" { (t!("pager-next")) }
                        a.btn href=(preview_link(place, filter, last_page)) { (t!("pager-last")) }
                    }
                }
            }
        }
    }
}

/// Whether a row has an error or warning that names no shown column.
fn has_row_messages(r: &PreviewRow, cols: &[&str]) -> bool {
    (r.errors.iter().chain(&r.warnings))
        .any(|e| e.column.as_deref().is_none_or(|c| !cols.contains(&c)))
}

fn preview_row(module: &Module, zone: Tz, r: &PreviewRow, cols: &[&str], messages: bool) -> Markup {
    let row = &r.row;
    let mut by_col: HashMap<&str, Vec<String>> = HashMap::new();
    let mut warned: HashMap<&str, Vec<String>> = HashMap::new();
    let mut row_notes: Vec<String> = Vec::new();
    for (list, place) in [(&r.errors, &mut by_col), (&r.warnings, &mut warned)] {
        for e in list {
            let said = match &e.rule {
                Some(rule) => t!(
                    "note-with-rule",
                    note = notes::row_note(module, e),
                    rule = rule.as_str()
                ),
                None => notes::row_note(module, e),
            };
            match e.column.as_deref().filter(|c| cols.contains(c)) {
                Some(c) => place.entry(c).or_default().push(said),
                None => row_notes.push(said),
            }
        }
    }
    // A good value the reader's way; a failed cell exactly as the file had it.
    let shown = |col: &str, v: Option<&JsonValue>| {
        let ty = module.columns.iter().find(|c| c.name == col).map(|c| c.ty);
        match v {
            Some(v) if !v.is_null() => notes::value(ty, v, zone),
            other => cell_value(other),
        }
    };
    html! {
        tr class=(format!("row-{}", row.action.as_str())) {
            th.pin-row scope="row" { (row.row_no) }
            td.pin-action { span class=(format!("row-action row-action-{}", row.action.as_str())) { (action_name(row.action)) } }
            @for col in cols {
                @let after = row.vals.get(*col);
                @let before = row.before.as_ref().and_then(|b| b.get(*col));
                @let was = r.fixed.iter().find(|(c, _)| c == col).map(|(_, was)| was);
                @let fixed = was.is_some();
                @let mark = was.map(|w| fixed_mark(w.as_deref()));
                @let normalized = row.normalized.iter().find(|(c, _)| c == col).map(|(_, was)| was.as_str());
                @let norm = normalized.map(normalized_mark);
                @if let Some(msgs) = by_col.get(col) {
                    td.cell-error.cell-fixed[fixed] {
                        (cell_value(after))
                        @for m in msgs { span.cell-msg { (m) } }
                        @if let Some(m) = &mark { (m) }
                        @if let Some(m) = &norm { (m) }
                    }
                } @else if let Some(msgs) = warned.get(col) {
                    td.cell-warn.cell-fixed[fixed] {
                        (cell_value(after))
                        @for m in msgs { span.cell-msg { (m) } }
                        @if let Some(m) = &mark { (m) }
                        @if let Some(m) = &norm { (m) }
                    }
                } @else if row.before.as_ref().is_some_and(|b| b.contains_key(*col)) && before != after {
                    td.cell-changed.cell-fixed[fixed] {
                        span.sr-only { (t!("preview-was")) " " }
                        del { (shown(col, before)) }
                        span aria-hidden="true" { " → " }
                        span.sr-only { ", " (t!("preview-becomes")) " " }
                        ins { (shown(col, after)) }
                        @if let Some(m) = &mark { (m) }
                        @if let Some(m) = &norm { (m) }
                    }
                } @else if let Some(was) = normalized {
                    td.cell-normalized.cell-fixed[fixed] {
                        span.sr-only { (t!("preview-normalized-was")) " " }
                        del { (was) }
                        span aria-hidden="true" { " → " }
                        span.sr-only { ", " (t!("preview-becomes")) " " }
                        ins { (shown(col, after)) }
                        @if let Some(m) = &mark { (m) }
                    }
                } @else {
                    td.cell-fixed[fixed] { (shown(col, after)) @if let Some(m) = &mark { (m) } }
                }
            }
            @if messages {
                td.notes {
                    @for n in &row_notes { span.cell-msg { (n) } }
                }
            }
        }
    }
}

/// What the file said in a cell a revision fixed (the value shown is the
/// fixed one).
fn fixed_mark(was: Option<&str>) -> Markup {
    html! {
        span.cell-was {
            (t!("preview-fixed-was")) " "
            @match was {
                Some(w) if !w.is_empty() => del { (w) },
                _ => span.null { (t!("empty-value")) },
            }
        }
    }
}

/// What the file said in a cell a normalizer of the module's rules
/// rewrote (the value shown is the normalized one): was → now.
fn normalized_mark(was: &str) -> Markup {
    html! {
        span.cell-was.cell-normalized-was {
            (t!("preview-normalized-was")) " "
            @if was.is_empty() { span.null { (t!("empty-value")) } } @else { del { (was) } }
        }
    }
}

/// A row's action in words.
fn action_name(a: RowAction) -> String {
    match a {
        RowAction::Insert => t!("action-insert"),
        RowAction::Update => t!("action-update"),
        RowAction::Unchanged => t!("action-unchanged"),
        RowAction::Error => t!("action-error"),
        RowAction::Excluded => t!("action-excluded"),
    }
}
