//! Exporting a module's rows (API.md section 15): the table as committed,
//! in natural-key order, each row with its version token last
//! ([`version_of`]), in CSV, XLSX, JSON or NDJSON, so that it can be
//! edited and imported again.
//!
//! It streams: the table is read a page ([`page_rows`]) at a time along
//! the natural key's index (`store::tables::page_after`), each page one
//! statement on a connection given back before the page is written; one
//! task reads the next page while another writes the last into a channel
//! of two chunks that the answer's body reads. A client that reads
//! slowly, or not at all, holds no connection and at most three pages in
//! memory. XLSX cannot be sent as it
//! is written (the zip's directory comes last), so its sheet is written
//! row by row in rust_xlsxwriter's constant-memory mode, saved to an
//! anonymous temporary file, and sent from it, as the reports are
//! (`service::reports`).
//!
//! Values are written so that an import reads them back as stored: a
//! timestamp in RFC 3339 to the microsecond, a numeric with its scale,
//! booleans `true`/`false`, integers in all their digits; in JSON as the
//! preview writes them ([`Value::write_json`]: numerics as decimal
//! strings, integers as numbers with every digit). CSV text that a
//! spreadsheet could run is neutralised ([`neutralise`], section 5); typed
//! values are numbers, dates and booleans, which no spreadsheet runs.
//!
//! Every export is a ledger link, `module_exported` (client event
//! `module.exported`): who, which module, which filters and how many rows
//! were written, recorded when the body ends, sent whole or cut short
//! (`complete`); the count is known only then.

use std::borrow::Cow;
use std::sync::Arc;

use bytes::Bytes;
use chrono::{DateTime, Datelike, NaiveDate, NaiveDateTime, NaiveTime, TimeZone, Timelike, Utc};
use chrono_tz::Tz;
use rust_decimal::Decimal;
use rust_xlsxwriter::{ExcelDateTime, Format, Workbook, XlsxError};
use serde_json::{Map, Value as Json, json};
use tokio::sync::mpsc;

use super::dropdowns;
use super::modules::XLSX_TYPE;
use super::reports::{Download, DownloadBody};
use super::{App, Error, Result, in_scope};
use crate::catalog::{Column, ColumnType, Module};
use crate::ids::{ExportId, JobId};
use crate::ingest::Cell;
use crate::keys::KeyRecord;
use crate::ledger::export::{DONE, EXPORTED, Export, ExportFormat};
use crate::ledger::{Job, JobState};
use crate::store;
use crate::store::ledger::Entry;
use crate::store::stage::Stage;
use crate::store::tables::{self, PageReader, Selection, TableRow};
use crate::validate::formula::{neutralise, runnable};
use crate::validate::value::{self, Rules};
use crate::validate::{VERSION_COLUMN, Value, version_of};

/// Cells one statement reads: a page is this many cells' rows
/// ([`page_rows`]). Large enough that a statement's own cost and the wait
/// for the first row of the next are small beside its rows' (on
/// PostgreSQL, 1M products took 1.35× the database's own CSV in pages of
/// 2,000 rows and 1.28× in pages of 5,000, `bash bench/export.sh …
/// postgres`), small enough that three pages in memory are a few megabytes
/// at any width.
pub const PAGE_CELLS: usize = 50_000;

/// The rows of a page of `module`: [`PAGE_CELLS`] cells, from 500 to
/// 10,000 rows.
pub fn page_rows(module: &Module) -> i64 {
    (PAGE_CELLS / (module.columns.len() + 1)).clamp(500, 10_000) as i64
}

/// The rows a sheet holds below its header.
const XLSX_MAX_ROWS: u64 = 1_048_575;

/// What an export asks for, as the request gave it.
#[derive(Debug, Clone, Default)]
pub struct Request {
    pub format: ExportFormat,
    /// `where.<column>=<value>`: column name and value text, in the
    /// request's order.
    pub equal: Vec<(String, String)>,
    /// `job=`: a committed job's id.
    pub job: Option<String>,
    /// At most this many rows.
    pub limit: Option<u64>,
}

impl Request {
    /// The export's query string: `format`, `where.<column>`, `job`, `limit`,
    /// each once; anything else is a `422` naming it.
    pub fn read(query: &str) -> Result<Request> {
        let mut r = Request::default();
        let mut seen = std::collections::HashSet::new();
        for (name, value) in form_urlencoded::parse(query.as_bytes()) {
            if !seen.insert(name.to_string()) {
                return Err(Error::invalid(
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
                        Error::invalid(
                            "format",
                            format!("format must be csv, xlsx, json or ndjson, not {value:?}"),
                        )
                    })?
                }
                "job" => r.job = Some(value.into_owned()),
                "limit" => {
                    r.limit = Some(value.parse().map_err(|_| {
                        Error::invalid(
                            "limit",
                            format!("limit must be a whole number of rows, not {value:?}"),
                        )
                    })?)
                }
                other => {
                    return Err(Error::invalid(
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
}

/// How many rows the module's table holds, for a key whose scope covers
/// it.
pub async fn row_count(app: &App, actor: &KeyRecord, module: &str) -> Result<i64> {
    let module = app.module(module)?;
    in_scope(actor, &module.key)?;
    let mut c = app.db.acquire().await?;
    Ok(store::tables::count(&mut c.conn(), module).await?)
}

/// An export checked against its module, ready to read.
struct Plan {
    module: Arc<Module>,
    selection: Selection,
    limit: Option<u64>,
    /// What the ledger records of the request.
    filters: Json,
}

/// Streams `module`'s rows as `request` asks, to a key whose scope covers
/// the module. A module, filter or format that cannot be is an error
/// before anything is sent; a failure while the rows are read cuts the
/// body short (the client sees it fail) and the ledger records the export
/// as incomplete.
pub async fn export(
    app: &Arc<App>,
    actor: &KeyRecord,
    module: &str,
    request: Request,
) -> Result<Download> {
    let module = app.module(module)?.clone();
    in_scope(actor, &module.key)?;
    let plan = plan(app, module, &request).await?;
    let started = Export {
        id: ExportId::generate(),
        module: plan.module.key.clone(),
        by: actor.id.clone(),
        format: request.format,
        filters: plan.filters.clone(),
        rows: 0,
        complete: false,
        started_at: store::now(),
        finished_at: store::now(),
    };
    let file_name = format!("{}-export.{}", plan.module.key, request.format.as_str());
    let (tx, rx) = mpsc::channel(2);
    let content_type = match request.format {
        ExportFormat::Xlsx => {
            let (file, rows) = xlsx_file(app, &plan).await?;
            tokio::spawn(send_file(app.clone(), started, file, rows, tx));
            XLSX_TYPE
        }
        format => {
            tokio::spawn(stream(app.clone(), plan, started, Encoder::new(format), tx));
            match format {
                ExportFormat::Json => "application/json",
                ExportFormat::Ndjson => "application/x-ndjson",
                _ => "text/csv; charset=utf-8",
            }
        }
    };
    Ok(Download {
        content_type,
        file_name,
        body: DownloadBody::Pages(rx),
    })
}

/// Checks the filters against the module: columns it has, values of their
/// types, a committed job of the module whose rows are still known.
async fn plan(app: &App, module: Arc<Module>, request: &Request) -> Result<Plan> {
    let mut selection = Selection::default();
    let mut given = Map::new();
    for (name, text) in &request.equal {
        let parameter = format!("where.{name}");
        let Some(i) = module.column_index(name) else {
            let names: Vec<&str> = module.columns.iter().map(|c| c.name.as_str()).collect();
            return Err(Error::invalid(
                &parameter,
                format!(
                    "{name:?} is not a column of {}; its columns: {}",
                    module.key,
                    names.join(", ")
                ),
            ));
        };
        if selection.equal.iter().any(|(j, _)| *j == i) {
            return Err(Error::invalid(
                &parameter,
                format!("{parameter} is given twice; give each column once"),
            ));
        }
        let wanted = filter_value(app, &module, &module.columns[i], text)
            .map_err(|why| Error::invalid(&parameter, format!("{parameter}: {why}")))?;
        selection.equal.push((i, wanted));
        given.insert(name.clone(), Json::String(text.clone()));
    }
    let mut filters = Map::new();
    if !given.is_empty() {
        filters.insert("where".into(), Json::Object(given));
    }
    if let Some(text) = &request.job {
        selection.stage = Some(committed_stage(app, &module, text).await?);
        filters.insert("job".into(), Json::String(text.clone()));
    }
    if let Some(n) = request.limit {
        filters.insert("limit".into(), json!(n));
    }
    Ok(Plan {
        module,
        selection,
        limit: request.limit,
        filters: Json::Object(filters),
    })
}

/// The value a `where.` filter asks a column to hold, read as a file's
/// cell of the column is read (API.md section 5): empty text asks for
/// null.
fn filter_value(
    app: &App,
    module: &Module,
    column: &Column,
    text: &str,
) -> std::result::Result<Option<Value>, String> {
    if text.trim().is_empty() {
        return Ok(None);
    }
    let rules = Rules {
        date_formats: &module.date_formats,
        zone: app.settings.zone,
        max_cell_bytes: app.settings.limits.cell_bytes,
    };
    value::parse(&mut Cell::Text(text.to_string()), column, &rules).map_err(|e| e.message)
}

/// The stage number of the committed job named by `job=`, whose staged
/// inserts and updates are the rows its commit wrote.
async fn committed_stage(app: &App, module: &Module, text: &str) -> Result<i64> {
    let refused = |why: String| Error::invalid("job", why);
    let id = JobId::parse(text)
        .ok_or_else(|| refused(format!("job must be a job id (job_…), not {text:?}")))?;
    let job = {
        let mut c = app.db.acquire().await?;
        store::jobs::get(&mut c.conn(), &id).await?
    };
    let Some(job) = job.filter(|j| j.module.as_ref() == Some(&module.key)) else {
        return Err(refused(format!("{id} is no job of {}", module.key)));
    };
    if let Some(why) = not_written(&job) {
        return Err(refused(why));
    }
    let mut c = app.db.acquire().await?;
    match Stage::of(&mut c.conn(), module, &job.id).await? {
        Some(stage) => Ok(stage.job),
        None => Err(refused(format!(
            "the rows {} wrote are no longer known",
            job.id
        ))),
    }
}

/// Why the table holds no rows a job wrote, if it holds them.
fn not_written(job: &Job) -> Option<String> {
    let written = matches!(
        job.state,
        JobState::Committed | JobState::RollbackPending | JobState::RollingBack
    );
    if !written {
        return Some(format!(
            "{} is {}: only a committed job's rows can be exported",
            job.id,
            job.state.as_str()
        ));
    }
    if job.simulated {
        return Some(format!(
            "{} was committed in simulation and wrote no rows",
            job.id
        ));
    }
    job.purged_at.map(|at| {
        format!(
            "the rows {} wrote are no longer known: its staged rows were purged at {} \
             when its rollback window closed",
            job.id,
            crate::ledger::job::time(&at)
        )
    })
}

/// The rows of a plan, a page at a time.
struct Pages {
    app: Arc<App>,
    module: Arc<Module>,
    selection: Selection,
    reader: PageReader,
    /// The natural key of the last row read.
    after: Option<Vec<Value>>,
    /// Rows still wanted (`None`: all).
    left: Option<u64>,
    done: bool,
}

impl Pages {
    fn new(app: Arc<App>, plan: &Plan) -> Pages {
        Pages {
            app,
            module: plan.module.clone(),
            selection: plan.selection.clone(),
            reader: PageReader::default(),
            after: None,
            left: plan.limit,
            done: plan.limit == Some(0),
        }
    }

    /// The next rows, in natural-key order; empty once every row is read.
    /// Each page is one statement on a connection held only for it.
    async fn next(&mut self) -> Result<Vec<TableRow>> {
        while !self.done {
            let page = page_rows(&self.module);
            let want = self.left.map_or(page, |n| n.min(page as u64) as i64);
            let (module, after) = (&self.module, self.after.as_deref());
            let read = tables::read_page(
                &self.app.db,
                &self.reader,
                module,
                &self.selection,
                after,
                want,
            )
            .await?;
            self.done = (read.len() as i64) < want;
            let Some(last) = read.last() else {
                break;
            };
            let key = self.module.key_columns.iter();
            self.after = key.map(|&i| last.values[i].clone()).collect();
            if self.after.is_none() {
                return Err(Error::internal(format!(
                    "a row of {} has no natural key",
                    self.module.table
                )));
            }
            // The database's match of a numeric may be loose (SQLite's
            // text); the service's is exact.
            let kept: Vec<TableRow> = read
                .into_iter()
                .filter(|r| {
                    (self.selection.equal.iter()).all(|(i, v)| Value::same(&r.values[*i], v))
                })
                .collect();
            if let Some(left) = &mut self.left {
                *left -= kept.len() as u64;
                self.done |= *left == 0;
            }
            if !kept.is_empty() {
                return Ok(kept);
            }
        }
        Ok(Vec::new())
    }
}

/// Where a stream's chunks go; the answer's body reads them.
type Sink = mpsc::Sender<std::result::Result<Bytes, std::io::Error>>;

/// Writes the plan's rows into `tx` in a text format, then records the
/// export: sent whole, or cut short by the client leaving or a failure.
async fn stream(app: Arc<App>, plan: Plan, mut export: Export, mut encoder: Encoder, tx: Sink) {
    let mut pages = ahead(Pages::new(app.clone(), &plan));
    let mut sent = tx.send(Ok(encoder.head(&plan.module))).await.is_ok();
    while sent {
        let next = pages.recv().await;
        let rows = match next.unwrap_or_else(|| Err(Error::internal("the page reader stopped"))) {
            Ok(rows) => rows,
            Err(e) => {
                tracing::error!(error = %e, export = %export.id, "export cut short");
                let _ = tx.send(Err(std::io::Error::other(e.to_string()))).await;
                break;
            }
        };
        if rows.is_empty() {
            export.complete = tx.send(Ok(encoder.tail())).await.is_ok();
            break;
        }
        let chunk = encoder.rows(&plan.module, &rows);
        sent = tx.send(Ok(chunk)).await.is_ok();
        if sent {
            export.rows += rows.len() as u64;
        }
    }
    // Recorded before the body ends: a client that has read it whole finds
    // the event in the feed.
    record(&app, export).await;
}

/// The pages of `pages`, each read while the one before it is written: a
/// task reads them into a channel of one page, so the database's read of
/// a page and the writing of the last one run at once, and memory holds
/// at most three pages. The task stops after the last page or an error,
/// or when the receiver is dropped (the client left).
fn ahead(mut pages: Pages) -> mpsc::Receiver<Result<Vec<TableRow>>> {
    let (tx, rx) = mpsc::channel(1);
    tokio::spawn(async move {
        loop {
            let page = pages.next().await;
            let last = !matches!(&page, Ok(rows) if !rows.is_empty());
            if tx.send(page).await.is_err() || last {
                return;
            }
        }
    });
    rx
}

/// Sends a written workbook from its file, then records the export.
async fn send_file(app: Arc<App>, mut export: Export, file: std::fs::File, rows: u64, tx: Sink) {
    use futures::StreamExt;
    let mut chunks = tokio_util::io::ReaderStream::new(tokio::fs::File::from_std(file));
    let mut whole = true;
    while let Some(chunk) = chunks.next().await {
        let failed = chunk.is_err();
        if tx.send(chunk).await.is_err() || failed {
            whole = false;
            break;
        }
    }
    if whole {
        export.rows = rows;
        export.complete = true;
    }
    record(&app, export).await;
}

/// Appends the export's link to the ledger, with its row, in one
/// transaction. A failure is logged: the body is sent by then.
async fn record(app: &App, mut export: Export) {
    export.finished_at = store::now();
    let written = async {
        let mut tx = app.db.begin().await?;
        let mut c = tx.conn();
        store::exports::insert(&mut c, &export).await?;
        let entry = Entry {
            subject: export.id.as_str(),
            at: export.finished_at,
            event: EXPORTED,
            from: None,
            to: DONE,
            actor: Some(export.by.as_str()),
            comment: None,
            detail: Some(export.detail()),
            modules: vec![export.module.as_str()],
        };
        store::ledger::append(&mut c, &app.seal.key, entry).await?;
        tx.commit().await?;
        Ok::<(), store::StoreError>(())
    };
    match written.await {
        Ok(()) => {
            app.moves.other();
            super::seal::checkpoint_now(app).await;
            tracing::info!(export = %export.id, module = %export.module, by = %export.by,
                rows = export.rows, complete = export.complete, "module exported");
        }
        Err(e) => {
            tracing::error!(error = %e, export = %export.id, "the export could not be recorded")
        }
    }
}

/// How a text format writes its head, rows and end.
enum Encoder {
    Csv,
    /// An array of objects; whether a row was written already.
    Json(bool),
    Ndjson,
}

impl Encoder {
    fn new(format: ExportFormat) -> Encoder {
        match format {
            ExportFormat::Json => Encoder::Json(false),
            ExportFormat::Ndjson => Encoder::Ndjson,
            _ => Encoder::Csv,
        }
    }

    /// The CSV header; a JSON array's start.
    fn head(&self, module: &Module) -> Bytes {
        match self {
            Encoder::Csv => {
                let names = module.columns.iter().map(|c| c.name.as_str());
                csv_record(names.chain([VERSION_COLUMN]))
            }
            Encoder::Json(_) => Bytes::from_static(b"["),
            Encoder::Ndjson => Bytes::new(),
        }
    }

    fn rows(&mut self, module: &Module, rows: &[TableRow]) -> Bytes {
        let mut out = Vec::with_capacity(rows.len() * 64 * module.columns.len().max(1));
        match self {
            Encoder::Csv => {
                let mut w = csv_writer(&mut out);
                let mut cells = Vec::with_capacity(module.columns.len() + 1);
                for r in rows {
                    cells.clear();
                    cells.extend(r.values.iter().map(csv_cell));
                    cells.push(Cow::Owned(version_of(&r.values)));
                    // Writing into a Vec cannot fail.
                    let _ = w.write_record(cells.iter().map(|c| c.as_bytes()));
                }
                let _ = w.flush();
                drop(w);
            }
            Encoder::Json(started) => {
                for r in rows {
                    out.extend_from_slice(if *started { b",\n" } else { b"\n" });
                    json_object(&mut out, module, r);
                    *started = true;
                }
            }
            Encoder::Ndjson => {
                for r in rows {
                    json_object(&mut out, module, r);
                    out.push(b'\n');
                }
            }
        }
        Bytes::from(out)
    }

    /// A JSON array's end.
    fn tail(&self) -> Bytes {
        match self {
            Encoder::Json(true) => Bytes::from_static(b"\n]\n"),
            Encoder::Json(false) => Bytes::from_static(b"]\n"),
            _ => Bytes::new(),
        }
    }
}

/// A writer of RFC 4180 records: fields quoted where they must be, lines
/// ended by CRLF.
fn csv_writer<W: std::io::Write>(out: W) -> csv::Writer<W> {
    csv::WriterBuilder::new()
        .terminator(csv::Terminator::CRLF)
        .from_writer(out)
}

/// One CSV record (RFC 4180).
fn csv_record<'a>(cells: impl IntoIterator<Item = &'a str>) -> Bytes {
    let mut w = csv_writer(Vec::new());
    let _ = w.write_record(cells);
    Bytes::from(w.into_inner().unwrap_or_default())
}

/// A value as a CSV cell: its text as it reads back ([`Value::to_text`]),
/// text a spreadsheet could run neutralised; empty for null.
fn csv_cell(value: &Option<Value>) -> Cow<'_, str> {
    match value {
        None => Cow::Borrowed(""),
        Some(Value::Text(s)) if runnable(s) => Cow::Owned(neutralise(s)),
        Some(Value::Text(s)) => Cow::Borrowed(s),
        Some(v) => Cow::Owned(v.to_text()),
    }
}

/// A row as a JSON object: its columns, then `_version`.
fn json_object(out: &mut Vec<u8>, module: &Module, row: &TableRow) {
    out.push(b'{');
    for (c, v) in module.columns.iter().zip(&row.values) {
        // Writing into a Vec cannot fail.
        let _ = serde_json::to_writer(&mut *out, &c.name);
        out.push(b':');
        match v {
            Some(v) => v.write_json(out),
            None => out.extend_from_slice(b"null"),
        }
        out.push(b',');
    }
    let _ = serde_json::to_writer(&mut *out, VERSION_COLUMN);
    out.push(b':');
    let _ = serde_json::to_writer(&mut *out, &version_of(&row.values));
    out.push(b'}');
}

/// Writes the plan's rows as a workbook into an anonymous temporary file
/// (gone once sent), rewound; and how many rows it holds. More rows than
/// a sheet holds is an error naming the format.
async fn xlsx_file(app: &Arc<App>, plan: &Plan) -> Result<(std::fs::File, u64)> {
    let mut sheet = Sheet::new(plan.module.clone(), app.settings.zone).map_err(xlsx_error)?;
    let mut pages = Pages::new(app.clone(), plan);
    loop {
        let rows = pages.next().await?;
        if rows.is_empty() {
            break;
        }
        if sheet.rows + rows.len() as u64 > XLSX_MAX_ROWS {
            return Err(Error::invalid(
                "format",
                format!(
                    "the export holds more than {XLSX_MAX_ROWS} rows, more than a sheet \
                     holds; export it as csv, json or ndjson, or narrow it with where. \
                     filters or a limit"
                ),
            ));
        }
        // Writing cells is work for a blocking thread, not the runtime's.
        sheet = tokio::task::spawn_blocking(move || sheet.write(&rows).map(|()| sheet))
            .await
            .map_err(Error::internal)?
            .map_err(xlsx_error)?;
    }
    let rows = sheet.rows;
    let file = tokio::task::spawn_blocking(move || sheet.save())
        .await
        .map_err(Error::internal)??;
    Ok((file, rows))
}

/// A cell the workbook refused (a text longer than a cell holds).
fn xlsx_error(e: XlsxError) -> Error {
    Error::invalid(
        "format",
        format!("the rows cannot be written as XLSX: {e}; export them as csv, json or ndjson"),
    )
}

/// The workbook of an export: one sheet named after the module, in
/// constant-memory mode, its header bold and frozen, each column with
/// allowed values a dropdown of them, `_version` last.
struct Sheet {
    book: Workbook,
    module: Arc<Module>,
    zone: Tz,
    rows: u64,
    formats: Formats,
}

/// The number formats of typed cells.
struct Formats {
    integer: Format,
    date: Format,
    timestamp: Format,
    millis: Format,
    /// A numeric's, by its scale: its digits after the point shown.
    scaled: Vec<Format>,
}

impl Formats {
    fn new() -> Formats {
        let scaled = (0..=28u32)
            .map(|s| match s {
                0 => Format::new().set_num_format("0"),
                s => Format::new().set_num_format(format!("0.{}", "0".repeat(s as usize))),
            })
            .collect();
        Formats {
            integer: Format::new().set_num_format("0"),
            date: Format::new().set_num_format("yyyy-mm-dd"),
            timestamp: Format::new().set_num_format("yyyy-mm-dd hh:mm:ss"),
            millis: Format::new().set_num_format("yyyy-mm-dd hh:mm:ss.000"),
            scaled,
        }
    }
}

impl Sheet {
    fn new(module: Arc<Module>, zone: Tz) -> std::result::Result<Sheet, XlsxError> {
        let mut book = Workbook::new();
        let bold = Format::new().set_bold();
        let text = Format::new().set_num_format("@");
        let sheet = book.add_worksheet_with_constant_memory()?;
        sheet.set_name(module.key.as_str())?;
        let last = module.columns.len() as u16;
        for (i, c) in module.columns.iter().enumerate() {
            let col = i as u16;
            let width = match c.ty {
                ColumnType::Timestamptz => 24,
                _ => c.name.len().max(12) + 2,
            };
            sheet.set_column_width(col, width as f64)?;
            if c.ty == ColumnType::Text {
                // Typed into later, a phone number keeps its leading zero.
                sheet.set_column_format(col, &text)?;
            }
            sheet.write_string_with_format(0, col, &c.name, &bold)?;
        }
        sheet.set_column_width(last, 36)?;
        sheet.write_string_with_format(0, last, VERSION_COLUMN, &bold)?;
        sheet.set_freeze_panes(1, 0)?;
        dropdowns::add(&mut book, &module, XLSX_MAX_ROWS as u32)?;
        Ok(Sheet {
            book,
            module,
            zone,
            rows: 0,
            formats: Formats::new(),
        })
    }

    /// Appends rows below those written.
    fn write(&mut self, rows: &[TableRow]) -> std::result::Result<(), XlsxError> {
        let sheet = self.book.worksheet_from_index(0)?;
        let version = self.module.columns.len() as u16;
        for r in rows {
            self.rows += 1;
            let at = self.rows as u32;
            for (i, v) in r.values.iter().enumerate() {
                let Some(v) = v else { continue };
                let col = i as u16;
                match typed(v, self.zone) {
                    Typed::Number(n, None) => {
                        sheet.write_number_with_format(at, col, n, &self.formats.integer)?
                    }
                    Typed::Number(n, Some(scale)) => {
                        let format = &self.formats.scaled[scale.min(28) as usize];
                        sheet.write_number_with_format(at, col, n, format)?
                    }
                    Typed::Bool(b) => sheet.write_boolean(at, col, b)?,
                    Typed::Date(d) => {
                        let date = sheet_date_time(&d.and_time(NaiveTime::MIN))?;
                        sheet.write_datetime_with_format(at, col, date, &self.formats.date)?
                    }
                    Typed::Moment(t) => {
                        let format = match t.nanosecond() {
                            0 => &self.formats.timestamp,
                            _ => &self.formats.millis,
                        };
                        sheet.write_datetime_with_format(at, col, sheet_date_time(&t)?, format)?
                    }
                    Typed::Text(s) => sheet.write_string(at, col, s)?,
                };
            }
            sheet.write_string(at, version, version_of(&r.values))?;
        }
        Ok(())
    }

    fn save(mut self) -> Result<std::fs::File> {
        use std::io::{Seek, SeekFrom};
        let mut file = tempfile::tempfile().map_err(Error::internal)?;
        self.book
            .save_to_writer(&mut file)
            .map_err(Error::internal)?;
        file.seek(SeekFrom::Start(0)).map_err(Error::internal)?;
        Ok(file)
    }
}

/// How a value is written into a sheet.
#[derive(Debug, PartialEq)]
enum Typed {
    /// A number, with a numeric's scale.
    Number(f64, Option<u32>),
    Bool(bool),
    Date(NaiveDate),
    /// A moment as the local date and time in the service's zone.
    Moment(NaiveDateTime),
    Text(String),
}

/// Significant digits a spreadsheet keeps of a number: Excel reads no
/// more from a file, so a longer one changed when the file was saved.
const SPREADSHEET_DIGITS: u32 = 15;

/// A value as a typed cell when the cell reads back as the same value
/// (through the import's own reading of a sheet, `ingest::xlsx`); as text
/// otherwise: an integer or numeric beyond 15 significant digits, a date
/// before 1900-03-01 (Excel's calendar is wrong before it), a timestamp
/// finer than the millisecond (a sheet's serial holds no more) or at a
/// local time the zone holds twice.
fn typed(value: &Value, zone: Tz) -> Typed {
    let text = || Typed::Text(value.to_text());
    match value {
        Value::Text(s) => Typed::Text(s.clone()),
        Value::Int(i) if digits(i.unsigned_abs().into()) <= SPREADSHEET_DIGITS => {
            Typed::Number(*i as f64, None)
        }
        Value::Decimal(d) => match number_of(d) {
            Some(n) => Typed::Number(n, Some(d.scale())),
            None => text(),
        },
        Value::Bool(b) => Typed::Bool(*b),
        Value::Date(d) => excel_date(d).map_or_else(text, Typed::Date),
        Value::Timestamp(t) => excel_moment(t, zone).map_or_else(text, Typed::Moment),
        Value::Int(_) => text(),
    }
}

/// Decimal digits of `n` (1 for 0).
fn digits(mut n: u128) -> u32 {
    let mut d = 1;
    while n >= 10 {
        n /= 10;
        d += 1;
    }
    d
}

/// The number a numeric is in a sheet, when it reads back as the same
/// numeric: at most 15 significant digits, and the double's shortest text
/// (what the import reads from a number cell) the same number.
fn number_of(d: &Decimal) -> Option<f64> {
    let n = d.normalize();
    if digits(n.mantissa().unsigned_abs()) > SPREADSHEET_DIGITS {
        return None;
    }
    let f: f64 = n.to_string().parse().ok()?;
    let back = Decimal::from_str_exact(&f.to_string()).ok()?;
    (back == n).then_some(f)
}

/// The first date a sheet's serial number holds truly (Excel counts a
/// 29 February 1900 that never was).
fn first_sheet_date() -> NaiveDate {
    NaiveDate::from_ymd_opt(1900, 3, 1).unwrap_or_default()
}

/// A date, when a sheet's serial number holds it.
fn excel_date(d: &NaiveDate) -> Option<NaiveDate> {
    (*d >= first_sheet_date() && d.year() <= 9999).then_some(*d)
}

/// A local date and time as a sheet's, to the millisecond.
fn sheet_date_time(t: &NaiveDateTime) -> std::result::Result<ExcelDateTime, XlsxError> {
    ExcelDateTime::from_ymd(t.year() as u16, t.month() as u8, t.day() as u8)?.and_hms_milli(
        t.hour() as u16,
        t.minute() as u8,
        t.second() as u8,
        (t.nanosecond() / 1_000_000) as u16,
    )
}

/// A timestamp as the local date and time in `zone` that the import,
/// taking a sheet's date-times in that zone, reads back as the same
/// instant; to the millisecond, as a sheet's serial holds it.
fn excel_moment(t: &DateTime<Utc>, zone: Tz) -> Option<NaiveDateTime> {
    if !t.timestamp_subsec_nanos().is_multiple_of(1_000_000) {
        return None;
    }
    let local = t.with_timezone(&zone).naive_local();
    let back = zone.from_local_datetime(&local).earliest()?;
    if back.with_timezone(&Utc) != *t {
        return None;
    }
    excel_date(&local.date()).map(|_| local)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dec(s: &str) -> Decimal {
        Decimal::from_str_exact(s).unwrap()
    }

    #[test]
    fn numbers_are_typed_cells_only_while_a_sheet_keeps_every_digit() {
        let zone = chrono_tz::Asia::Jakarta;
        assert_eq!(
            typed(&Value::Int(999_999_999_999_999), zone),
            Typed::Number(999_999_999_999_999.0, None)
        );
        for big in [1_000_000_000_000_000i64, 9_007_199_254_740_993, i64::MIN] {
            assert_eq!(typed(&Value::Int(big), zone), Typed::Text(big.to_string()));
        }
        assert_eq!(number_of(&dec("4.50")), Some(4.5));
        assert_eq!(number_of(&dec("-0.000001")), Some(-0.000001));
        assert_eq!(number_of(&dec("123456789012.345")), Some(123456789012.345));
        assert_eq!(number_of(&dec("1234567890123.4567")), None);
        assert_eq!(
            typed(&Value::Decimal(dec("12345678901234567.89")), zone),
            Typed::Text("12345678901234567.89".into())
        );
        assert_eq!(
            typed(&Value::Decimal(dec("4.50")), zone),
            Typed::Number(4.5, Some(2))
        );
    }

    #[test]
    fn moments_are_typed_cells_in_the_zone_to_the_millisecond() {
        let zone = chrono_tz::Asia::Jakarta;
        let t = Utc.with_ymd_and_hms(2024, 3, 31, 1, 2, 3).unwrap();
        let local = NaiveDate::from_ymd_opt(2024, 3, 31)
            .unwrap()
            .and_hms_opt(8, 2, 3)
            .unwrap();
        assert_eq!(typed(&Value::Timestamp(t), zone), Typed::Moment(local));
        let ms = t + chrono::Duration::milliseconds(250);
        assert_eq!(
            typed(&Value::Timestamp(ms), zone),
            Typed::Moment(local + chrono::Duration::milliseconds(250))
        );
        let micros = t + chrono::Duration::microseconds(1);
        assert_eq!(
            typed(&Value::Timestamp(micros), zone),
            Typed::Text("2024-03-31T01:02:03.000001Z".into())
        );
        // A local time that happens twice (the end of summer time) is text.
        let berlin = chrono_tz::Europe::Berlin;
        let twice = Utc.with_ymd_and_hms(2024, 10, 27, 1, 30, 0).unwrap();
        assert!(matches!(
            typed(&Value::Timestamp(twice), berlin),
            Typed::Text(_)
        ));
        let old = NaiveDate::from_ymd_opt(1900, 2, 28).unwrap();
        assert_eq!(
            typed(&Value::Date(old), zone),
            Typed::Text("1900-02-28".into())
        );
    }

    #[test]
    fn csv_cells_read_back_and_run_nothing() {
        assert_eq!(csv_cell(&None), "");
        assert_eq!(csv_cell(&Some(Value::Text("=1+1".into()))), "'=1+1");
        assert_eq!(csv_cell(&Some(Value::Int(-5))), "-5");
        assert_eq!(csv_cell(&Some(Value::Decimal(dec("-4.50")))), "-4.50");
        assert_eq!(csv_cell(&Some(Value::Bool(true))), "true");
    }

    #[test]
    fn allowed_values_no_list_can_hold_are_kept_on_a_hidden_sheet() {
        let long: Vec<String> = (0..40)
            .map(|i| format!("\"a rather long allowed value {i}\""))
            .collect();
        let toml = format!(
            "[[module]]\nkey = \"m\"\ntable = \"uc_m\"\nnatural_key = [\"k\"]\n\n\
             [[module.column]]\nname = \"k\"\ntype = \"text\"\nrequired = true\n\n\
             [[module.column]]\nname = \"long\"\ntype = \"text\"\nallowed = [{}]\n\n\
             [[module.column]]\nname = \"comma\"\ntype = \"text\"\nallowed = [\"a,b\", \"c\"]\n\n\
             [[module.column]]\nname = \"short\"\ntype = \"text\"\nallowed = [\"x\", \"y\"]\n",
            long.join(", ")
        );
        let catalog = crate::catalog::Catalog::from_toml(&toml).unwrap();
        let module = catalog.get("m").unwrap().clone();
        let mut sheet = Sheet::new(module, chrono_tz::UTC).unwrap();
        let row = TableRow {
            id: 1,
            values: vec![Some(Value::Text("k1".into())), None, None, None],
        };
        sheet.write(&[row]).unwrap();
        let mut zip = zip::ZipArchive::new(sheet.save().unwrap()).unwrap();
        let mut read = |name: &str| {
            let mut text = String::new();
            std::io::Read::read_to_string(&mut zip.by_name(name).unwrap(), &mut text).unwrap();
            text
        };
        let book = read("xl/workbook.xml");
        assert!(
            book.contains("name=\"_lists\"") && book.contains("state=\"hidden\""),
            "{book}"
        );
        let first = read("xl/worksheets/sheet1.xml");
        for list in ["_lists!$A$1:$A$40", "_lists!$B$1:$B$2", "\"x,y\""] {
            assert!(first.contains(list), "{list}: {first}");
        }
    }

    #[test]
    fn the_query_names_each_parameter_at_fault() {
        let r = Request::read("format=ndjson&where.city=Bandung&where.grade=&job=job_1&limit=5");
        let r = r.unwrap();
        assert_eq!(r.format, ExportFormat::Ndjson);
        assert_eq!(
            r.equal,
            vec![
                ("city".to_string(), "Bandung".to_string()),
                ("grade".to_string(), String::new())
            ]
        );
        assert_eq!((r.job.as_deref(), r.limit), (Some("job_1"), Some(5)));
        assert_eq!(Request::read("").unwrap().format, ExportFormat::Csv);
        for (query, at) in [
            ("format=xls", "format"),
            ("limit=-1", "limit"),
            ("limit=many", "limit"),
            ("where.city=a&where.city=b", "where.city"),
            ("sort=city", "sort"),
        ] {
            match Request::read(query) {
                Err(Error::Invalid { parameter, message }) => {
                    assert_eq!(parameter, at, "{query}");
                    assert!(message.contains(at), "{query}: {message}");
                }
                other => panic!("{query}: {:?}", other.map(|r| r.format)),
            }
        }
    }
}
