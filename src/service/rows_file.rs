//! The errored-rows file (API.md section 11), both ways: the failing rows
//! of a job as it read them, page by page, for a report a person corrects
//! in a spreadsheet; and that file, corrected and sent back, turned into
//! a revision's fixes. The report's rendering (CSV, XLSX) is the
//! transport's; what the file says, and what it changes, is decided here
//! so that every front door reads it the same way.

use std::collections::{HashMap, HashSet};
use std::io::Cursor;

use bytes::Bytes;
use serde_json::Value as Json;

use super::revisions::MAX_FIXES;
use super::{App, Error, Result, jobs, uploads};
use crate::catalog::Module;
use crate::ids::JobId;
use crate::ingest::{self, Cell, FileError, Format, RawRow, RowSource};
use crate::keys::KeyRecord;
use crate::ledger::revision::Changes;
use crate::ledger::{Fix, Job};
use crate::store::rows::{self, StoredRow};
use crate::store::stage::Stage;
use crate::validate::formula::restore;
use crate::validate::{RowError, header_names, normalize_header};

/// Most bytes a corrected errored-rows file may have, through either
/// door: people send back the whole file they downloaded, thousands of
/// rows, not only the ones they fixed. It is held in memory while it is
/// compared.
pub const MAX_BYTES: usize = 32 << 20;

/// The file's first column: the row number as the errors name it.
pub const ROW: &str = "row";
/// The file's last column: the row's messages. Ignored when it comes back.
pub const ERRORS: &str = "errors";

/// Failing rows a report page reads at a time.
const PAGE: i64 = 1000;
/// Lines of a corrected file compared with the staged rows at a time.
const CHUNK: usize = 500;

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
    job_id: JobId,
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
    let Some(module) = (job.module.as_ref()).and_then(|m| app.catalog.get(m.as_str())) else {
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
        let found = rows::errors_of(&mut c.conn(), &self.job_id, from, to).await?;
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

/// A corrected errored-rows file as received.
pub struct RowsFile {
    /// CSV or a spreadsheet (the bytes decide between XLSX, XLS and ODS).
    pub format: Format,
    /// CSV: the `charset` the request named (UTF-8, BOM honoured, else).
    pub encoding: Option<String>,
    pub body: Bytes,
}

/// The fixes a corrected errored-rows file makes to `job_id`: for each
/// line, each non-empty cell of a module column whose text is not what
/// the job read for that row (a round trip fixes only what was edited).
/// The `errors` column is ignored; a cell neutralised on the way out reads
/// back as its value. The file is read with the upload's readers
/// (encoding, BOM, separator, Excel date cells) and compared a chunk of
/// lines at a time. Refused with the member named: no `row` first column
/// (`row`), a row that is not a whole number (`row`, with the line), a
/// header that names no column (that header), more fixes than a revision
/// may carry (`fixes`), no fix at all (`fixes`). Rows the job does not
/// have are left for [`super::revisions::revise`] to refuse.
pub async fn changes_from_rows_file(
    app: &App,
    actor: &KeyRecord,
    job_id: &JobId,
    file: RowsFile,
) -> Result<Changes> {
    let job = jobs::get(app, actor, job_id).await?;
    let key = super::module_of_job(app, &job, "a corrected rows file")?
        .key
        .clone();
    let module = uploads::target(app, actor, key.as_str())?;
    let stage = staged(app, &job).await?;
    let source = open(app, file).await?;
    let layout = layout(module, &source.header)?;
    let mut fixes = Vec::new();
    let mut source = Some(source);
    while let Some(open) = source.take() {
        let (rest, lines) = next_chunk(open).await?;
        if lines.is_empty() {
            break;
        }
        source = Some(rest);
        chunk_fixes(app, module, stage.as_ref(), &layout, &lines, &mut fixes).await?;
        if fixes.len() > MAX_FIXES {
            return Err(Error::invalid(
                "fixes",
                format!(
                    "a revision fixes at most {MAX_FIXES} cells and this file changes more; \
                     upload a corrected file instead"
                ),
            ));
        }
    }
    if fixes.is_empty() {
        return Err(Error::invalid(
            "fixes",
            "the file fixes no cell: each cell is empty or as the job read it",
        ));
    }
    Ok(Changes {
        fixes,
        ..Changes::default()
    })
}

/// Opens the file with the upload's readers, on a blocking thread (the
/// spreadsheet readers hand their header over from a thread of their own).
async fn open(app: &App, file: RowsFile) -> Result<RowSource> {
    let prefix = &file.body[..file.body.len().min(4096)];
    let format = file.format.refine(prefix);
    let options = ingest::Options {
        delimiter: None,
        max_cell_bytes: app.settings.limits.cell_bytes,
        max_columns: app.settings.limits.columns,
        encoding: file.encoding,
        sheet: None,
        one_pass: false,
    };
    let body = Box::new(Cursor::new(file.body));
    tokio::task::spawn_blocking(move || ingest::open(format, body, &options))
        .await
        .map_err(Error::internal)?
        .map_err(unreadable)
}

/// The next lines of the file (none at its end), read on a blocking thread.
async fn next_chunk(mut source: RowSource) -> Result<(RowSource, Vec<RawRow>)> {
    let (source, lines) = tokio::task::spawn_blocking(move || {
        let lines: std::result::Result<Vec<RawRow>, FileError> =
            source.rows.by_ref().take(CHUNK).collect();
        (source, lines)
    })
    .await
    .map_err(Error::internal)?;
    Ok((source, lines.map_err(unreadable)?))
}

fn unreadable(e: FileError) -> Error {
    Error::invalid("body", format!("the file could not be read: {e}"))
}

/// The catalog column of each of the file's columns; `None` for `row`,
/// `errors` and columns without a header. Headers match as an upload's do
/// (case, spaces, aliases).
fn layout(module: &Module, header: &[String]) -> Result<Vec<Option<usize>>> {
    let first = header.first().map(String::as_str).unwrap_or("");
    if normalize_header(first) != ROW {
        return Err(Error::invalid(
            ROW,
            format!(
                "the first column must be `row`, the row number as the errors name it; \
                 this file's first column is {first:?}"
            ),
        ));
    }
    let names = header_names(module);
    let mut seen = HashSet::new();
    let mut layout = vec![None];
    for h in &header[1..] {
        let norm = normalize_header(h);
        if norm.is_empty() || norm == ERRORS {
            layout.push(None);
            continue;
        }
        let Some(&(col, _)) = names.get(&norm) else {
            return Err(Error::invalid(
                h.trim(),
                format!(
                    "{h:?} is not a column of {}; a corrected errored-rows file has `row`, \
                     columns of the module and `errors`",
                    module.key
                ),
            ));
        };
        if !seen.insert(col) {
            return Err(Error::invalid(
                h.trim(),
                format!("two columns of the file name {}", module.columns[col].name),
            ));
        }
        layout.push(Some(col));
    }
    Ok(layout)
}

/// Adds the fixes of some lines of the file, compared with the rows the
/// job staged under their row numbers.
async fn chunk_fixes(
    app: &App,
    module: &Module,
    stage: Option<&Stage<'_>>,
    layout: &[Option<usize>],
    lines: &[RawRow],
    fixes: &mut Vec<Fix>,
) -> Result<()> {
    let mut numbered = Vec::with_capacity(lines.len());
    for line in lines {
        if let Some(row) = row_number(line, layout)? {
            numbered.push((row, line));
        }
    }
    let wanted: Vec<i64> = numbered.iter().map(|&(row, _)| row as i64).collect();
    let staged: HashMap<i64, StoredRow> = match stage {
        Some(stage) => {
            let mut c = app.db.acquire().await?;
            let found = rows::rows_numbered(&mut c.conn(), stage, &wanted).await?;
            found.into_iter().map(|r| (r.row_no, r)).collect()
        }
        None => HashMap::new(),
    };
    for (row, line) in numbered {
        let read = staged.get(&(row as i64));
        for (pos, col) in layout.iter().enumerate() {
            let (Some(col), Some(cell)) = (col, line.cells.get(pos)) else {
                continue;
            };
            let column = &module.columns[*col].name;
            let Some(text) = fix_text(cell, line.row, column)? else {
                continue;
            };
            if read.is_some_and(|r| staged_text(r.vals.get(column)) == text) {
                continue;
            }
            fixes.push(Fix {
                row,
                column: column.clone(),
                value: Some(text),
                was: None,
            });
        }
    }
    Ok(())
}

/// The row a line fixes; `None` for a line with nothing to fix.
fn row_number(line: &RawRow, layout: &[Option<usize>]) -> Result<Option<u64>> {
    let text = line.cells.first().map(Cell::plain_text).unwrap_or_default();
    let text = text.trim();
    let nothing = || {
        (line.cells.iter().zip(layout).skip(1))
            .all(|(cell, col)| col.is_none() || cell.plain_text().trim().is_empty())
    };
    match text.parse::<u64>() {
        Ok(n) if n >= 1 => Ok(Some(n)),
        _ if text.is_empty() && nothing() => Ok(None),
        _ => Err(Error::invalid(
            ROW,
            format!(
                "line {}: row must be a whole number from 1, got {text:?}",
                line.row
            ),
        )),
    }
}

/// A cell's text as a fix: `None` when empty (an empty cell fixes
/// nothing; a JSON revision's `null` empties a cell), the value a
/// neutralised cell held, and never a spreadsheet error.
fn fix_text(cell: &Cell, line: u64, column: &str) -> Result<Option<String>> {
    if let Cell::Error(e) = cell {
        return Err(Error::invalid(
            column,
            format!("line {line}: {column} holds the spreadsheet error {e}, which is no value"),
        ));
    }
    let text = cell.plain_text();
    if text.trim().is_empty() {
        return Ok(None);
    }
    Ok(Some(restore(&text).to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::validate::RowErrorCode;
    use crate::validate::formula::neutralise;

    fn line(row: u64, cells: &[&str]) -> RawRow {
        RawRow {
            row,
            cells: cells
                .iter()
                .map(|c| match *c {
                    "" => Cell::Empty,
                    c => Cell::Text(c.to_string()),
                })
                .collect(),
        }
    }

    #[test]
    fn a_neutralised_cell_reads_back_as_the_value_it_was() {
        for value in ["=HYPERLINK(\"x\")", "-12", "@home", "Bandung; =1"] {
            let cell = Cell::Text(neutralise(value));
            assert_eq!(fix_text(&cell, 2, "city").unwrap().as_deref(), Some(value));
        }
        let own = Cell::Text("'90s".into());
        assert_eq!(fix_text(&own, 2, "city").unwrap().as_deref(), Some("'90s"));
        assert_eq!(fix_text(&Cell::Text("  ".into()), 2, "city").unwrap(), None);
        let error = fix_text(&Cell::Error("#N/A".into()), 4, "city").unwrap_err();
        assert!(error.to_string().contains("line 4"), "{error}");
    }

    #[test]
    fn rows_are_whole_numbers_and_empty_lines_fix_nothing() {
        let layout = [None, Some(0), None];
        assert_eq!(
            row_number(&line(2, &["3", "x", ""]), &layout).unwrap(),
            Some(3)
        );
        assert_eq!(
            row_number(&line(3, &["", "", "msg"]), &layout).unwrap(),
            None
        );
        for bad in ["abc", "0", "2.5", "-1", ""] {
            let e = row_number(&line(3, &[bad, "x"]), &layout).unwrap_err();
            assert!(e.to_string().contains("line 3"), "{bad}: {e}");
        }
    }

    #[test]
    fn messages_lose_the_place_the_file_already_shows() {
        let e = RowError {
            row: 3,
            column: Some("grade".into()),
            value: Some("Z".into()),
            code: RowErrorCode::NotAllowed,
            message: "row 3, column grade: must be one of A, B".into(),
            rule: None,
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
