//! The errored-rows file (API.md section 11), both ways: the failing rows
//! of a job as it read them, page by page, for a report a person corrects
//! in a spreadsheet; and that file, corrected and sent back, turned into
//! a revision's fixes. The report's rendering (CSV, XLSX) is the
//! transport's; what the file says, and what it changes, is decided here
//! so that every front door reads it the same way.

use std::collections::HashMap;

use serde_json::Value as Json;

use super::{App, Error, Result};
use crate::ledger::Job;
use crate::store::rows::{self, Notes, StoredRow};
use crate::store::stage::Stage;
use crate::validate::RowError;

/// The file's first column: the row number as the errors name it.
pub const ROW: &str = "row";
/// The file's last column: the row's messages.
pub const ERRORS: &str = "errors";

/// Failing rows a report page reads at a time.
const PAGE: i64 = 1000;

/// One failing row as the job read it.
pub struct ErroredRow {
    /// The row number, as the errors name it.
    pub row: i64,
    /// The text of each of [`ErroredRows::columns`], as staged.
    pub cells: Vec<String>,
    /// For each column: the messages of the errors that name it, one a
    /// line (a key error names every column of the key).
    pub notes: Vec<Option<String>>,
    /// Every message of the row: `column: message; …`.
    pub errors: String,
}

/// A job's failing rows, a page at a time: memory holds one page,
/// however many rows failed.
pub struct ErroredRows<'a> {
    app: &'a App,
    job_id: String,
    stage: Option<Stage<'a>>,
    /// The columns the job's file gave (as mapped), in catalog order: a
    /// fix may only set those, so the others are left out of the file.
    pub columns: Vec<String>,
    after: i64,
}

/// The failing rows of `job`. Like the preview: a purged job's rows are
/// gone (`purged`), and a revised job handed them to its revision
/// (`revised`); a job never validated has none.
pub async fn errored_rows<'a>(app: &'a App, job: &Job) -> Result<ErroredRows<'a>> {
    if let Some(at) = job.purged_at {
        return Err(Error::purged(job, at, app.settings.limits.retention_secs));
    }
    let stage = staged(app, job).await?;
    if stage.is_none()
        && let Some(to) = &job.revised_as
    {
        return Err(Error::Revised {
            id: job.id.clone(),
            to: to.clone(),
        });
    }
    let columns = stage.as_ref().map_or_else(Vec::new, |s| {
        (s.provided.iter())
            .map(|&i| s.module.columns[i].name.clone())
            .collect()
    });
    Ok(ErroredRows {
        app,
        job_id: job.id.clone(),
        stage,
        columns,
        after: -1,
    })
}

/// The job's stage, if it has rows staged (and its module still exists).
async fn staged<'a>(app: &'a App, job: &Job) -> Result<Option<Stage<'a>>> {
    let Some(module) = app.catalog.get(&job.module) else {
        return Ok(None);
    };
    let mut c = app.db.acquire().await?;
    Ok(Stage::of(&mut c.conn(), module, &job.id).await?)
}

impl ErroredRows<'_> {
    /// The next page of failing rows, in file order; `None` after the last.
    pub async fn next(&mut self) -> Result<Option<Vec<ErroredRow>>> {
        let Some(stage) = &self.stage else {
            return Ok(None);
        };
        let mut c = self.app.db.acquire().await?;
        let page = rows::errored_after(&mut c.conn(), stage, self.after, PAGE).await?;
        let (Some(first), Some(last)) = (page.first(), page.last()) else {
            return Ok(None);
        };
        let (from, to) = (first.seq, last.seq);
        self.after = to;
        let mut errors: HashMap<i64, Vec<RowError>> = HashMap::new();
        let found =
            rows::notes_of(&mut c.conn(), stage, Notes::Errors, &self.job_id, from, to).await?;
        for (seq, e) in found {
            errors.entry(seq).or_default().push(e);
        }
        let lines = page.iter().map(|r| {
            let own = errors.remove(&r.seq).unwrap_or_default();
            errored_row(&self.columns, r, &own)
        });
        Ok(Some(lines.collect()))
    }
}

/// A staged row and its errors as a line of the file.
fn errored_row(columns: &[String], r: &StoredRow, errors: &[RowError]) -> ErroredRow {
    let mut notes: Vec<Option<String>> = vec![None; columns.len()];
    let mut all = Vec::with_capacity(errors.len());
    for e in errors {
        let message = own_message(e);
        let named = e.column.iter().flat_map(|c| c.split(','));
        for k in named.filter_map(|name| columns.iter().position(|c| c == name.trim())) {
            let note = notes[k].get_or_insert_with(String::new);
            if !note.is_empty() {
                note.push('\n');
            }
            note.push_str(message);
        }
        all.push(match &e.column {
            Some(c) => format!("{c}: {message}"),
            None => message.to_string(),
        });
    }
    ErroredRow {
        row: r.row_no,
        cells: columns.iter().map(|c| staged_text(r.vals.get(c))).collect(),
        notes,
        errors: all.join("; "),
    }
}

/// An error's message without the `row N, column C: ` (or `row N: `) it
/// starts with: the line and the cell already say where.
fn own_message(e: &RowError) -> &str {
    let at_cell = e
        .column
        .as_ref()
        .map(|c| format!("row {}, column {c}: ", e.row));
    let at_row = format!("row {}: ", e.row);
    let m = e.message.as_str();
    at_cell
        .and_then(|p| m.strip_prefix(p.as_str()))
        .or_else(|| m.strip_prefix(at_row.as_str()))
        .unwrap_or(m)
}

/// A staged cell's text, whole: the raw text of a cell that failed, the
/// value of one that did not, written as a file cell that reads back as
/// the same value (`30`, `true`, `2024-03-31`, RFC 3339 for a timestamp).
fn staged_text(value: Option<&Json>) -> String {
    match value {
        None | Some(Json::Null) => String::new(),
        Some(Json::String(s)) => s.clone(),
        Some(other) => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_lose_the_place_the_file_already_shows() {
        let e = RowError {
            row: 3,
            column: Some("grade".into()),
            value: Some("Z".into()),
            code: "not_allowed".into(),
            message: "row 3, column grade: must be one of A, B".into(),
        };
        assert_eq!(own_message(&e), "must be one of A, B");
        let key = RowError {
            column: Some("wa_number".into()),
            message: "row 3: the key (wa_number) repeats row 2".into(),
            ..e
        };
        assert_eq!(own_message(&key), "the key (wa_number) repeats row 2");
    }
}
