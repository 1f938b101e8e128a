//! The job's downloadable reports, for every front door: the error report
//! (one line an error, API.md section 5) and the errored-rows file (one
//! line a failing row, section 11), as CSV or XLSX. CSV streams page by
//! page; XLSX is written row by row (rust_xlsxwriter's constant-memory
//! mode), saved to an anonymous temporary file and streamed from it, so
//! memory stays flat in the job's size (API.md section 10).

use std::sync::Arc;

use bytes::Bytes;
use tokio::sync::mpsc;

use super::modules::XLSX_TYPE;
use super::{App, Error, Result, jobs, rows_file};
use crate::ledger::Job;
use crate::validate::formula::neutralise;

/// Which report.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Report {
    /// One line an error: `row`, `column`, `value`, `code`, `message`.
    Errors,
    /// One line a failing row, as the job read it, to correct and send
    /// back as a revision.
    Rows,
}

/// In which format.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FileFormat {
    Csv,
    Xlsx,
}

/// A report ready to send.
pub struct Download {
    pub content_type: &'static str,
    pub file_name: String,
    pub body: DownloadBody,
}

/// A whole file, or the pages of one as a task writes them (an error in
/// the stream cuts the download short: the client sees the body fail).
pub enum DownloadBody {
    Whole(Vec<u8>),
    Pages(mpsc::Receiver<std::result::Result<Bytes, std::io::Error>>),
    /// A file spooled to disk, read from its start (deleted when closed).
    Spooled(std::fs::File),
}

impl Download {
    /// `attachment; filename="…"`.
    pub fn disposition(&self) -> String {
        format!("attachment; filename=\"{}\"", self.file_name)
    }

    /// The body as a stream of chunks, whole or paged.
    pub fn into_stream(
        self,
    ) -> impl futures::Stream<Item = std::result::Result<Bytes, std::io::Error>> + Send {
        use futures::StreamExt;
        match self.body {
            DownloadBody::Whole(bytes) => {
                futures::stream::once(async move { Ok(Bytes::from(bytes)) }).boxed()
            }
            DownloadBody::Pages(rx) => futures::stream::unfold(rx, |mut rx| async move {
                rx.recv().await.map(|item| (item, rx))
            })
            .boxed(),
            DownloadBody::Spooled(file) => {
                tokio_util::io::ReaderStream::new(tokio::fs::File::from_std(file)).boxed()
            }
        }
    }
}

/// The report of `job` in `format`. A job whose staged rows are gone
/// (purged, or handed to its revision) is an error before anything is
/// sent, for the errored-rows file.
pub async fn download(
    app: &Arc<App>,
    job: Job,
    report: Report,
    format: FileFormat,
) -> Result<Download> {
    match (report, format) {
        (Report::Errors, FileFormat::Csv) => Ok(errors_csv(app.clone(), job)),
        (Report::Errors, FileFormat::Xlsx) => errors_xlsx(app, &job).await,
        (Report::Rows, FileFormat::Csv) => rows_csv(app.clone(), job).await,
        (Report::Rows, FileFormat::Xlsx) => rows_xlsx(app, &job).await,
    }
}

/// Excel's last row: a report longer than this ends with a note.
const XLSX_MAX_ROWS: u32 = 1_048_575;

/// A workbook with one sheet, written row by row to a temporary file,
/// its header in bold.
fn report_book(name: &str, header: &[&str]) -> Result<rust_xlsxwriter::Workbook> {
    use rust_xlsxwriter::{Format, Workbook};
    let mut book = Workbook::new();
    let sheet = book
        .add_worksheet_with_constant_memory()
        .map_err(Error::internal)?;
    sheet.set_name(name).map_err(Error::internal)?;
    let bold = Format::new().set_bold();
    for (col, name) in header.iter().enumerate() {
        sheet
            .write_string_with_format(0, col as u16, *name, &bold)
            .map_err(Error::internal)?;
    }
    Ok(book)
}

/// The last row's note of a report longer than a sheet.
fn cut_note(sheet: &mut rust_xlsxwriter::Worksheet, note: String) -> Result<()> {
    sheet
        .write_string(XLSX_MAX_ROWS, 0, note)
        .map_err(Error::internal)?;
    Ok(())
}

/// The finished workbook, saved to an anonymous temporary file (gone
/// once the answer is sent or dropped) and sent from it.
async fn xlsx_download(
    mut book: rust_xlsxwriter::Workbook,
    file_name: &'static str,
) -> Result<Download> {
    let spooled = tokio::task::spawn_blocking(move || -> anyhow::Result<std::fs::File> {
        use std::io::{Seek, SeekFrom};
        let mut file = tempfile::tempfile()?;
        book.save_to_writer(&mut file)?;
        file.seek(SeekFrom::Start(0))?;
        Ok(file)
    })
    .await
    .map_err(Error::internal)?
    .map_err(Error::internal)?;
    Ok(Download {
        content_type: XLSX_TYPE,
        file_name: file_name.to_string(),
        body: DownloadBody::Spooled(spooled),
    })
}

/// The error report's columns: `rule` is the id of the module's rule a
/// `rule` or `duplicate_in_file` error broke (API.md section 14), empty
/// for every other error.
const ERRORS_HEADER: [&str; 6] = ["row", "column", "value", "code", "message", "rule"];

/// The whole error report as XLSX. Cells are written as strings, never as
/// formulas, so a spreadsheet shows `=HYPERLINK(…)` as the text the file
/// held and runs nothing; the values stay exactly as in the other reports.
async fn errors_xlsx(app: &App, job: &Job) -> Result<Download> {
    let mut book = report_book("errors", &ERRORS_HEADER)?;
    let sheet = book.worksheet_from_index(0).map_err(Error::internal)?;
    let mut row = 1u32;
    let mut written = 0i64;
    let mut pages = jobs::error_pages(app, job);
    'pages: while let Some((total, list)) = pages.next().await? {
        for e in &list {
            if row > XLSX_MAX_ROWS {
                let more = total - written;
                let note = format!("{more} more errors: download the CSV report for all {total}");
                cut_note(sheet, note)?;
                break 'pages;
            }
            sheet
                .write_number(row, 0, e.row as f64)
                .and_then(|s| s.write_string(row, 1, e.column.as_deref().unwrap_or("")))
                .and_then(|s| s.write_string(row, 2, e.value.as_deref().unwrap_or("")))
                .and_then(|s| s.write_string(row, 3, e.code.as_str()))
                .and_then(|s| s.write_string(row, 4, &e.message))
                .and_then(|s| s.write_string(row, 5, e.rule.as_deref().unwrap_or("")))
                .map_err(Error::internal)?;
            row += 1;
            written += 1;
        }
    }
    xlsx_download(book, "errors.xlsx").await
}

/// Wrong cells of the errored-rows workbook that carry their messages as
/// a note: notes are held in memory until the workbook is saved (about
/// 12 KB each), so past this many the cells are only highlighted (the
/// `errors` column still says everything). At 1,000 the file of an
/// 80,000-row job took 22 MB while built and sent, against 126 MB at
/// 10,000 (`bench --revisions N`, debug build).
const MAX_NOTES: usize = 1_000;

/// The errored-rows file as XLSX (API.md section 11): strings, never
/// formulas, as in the error report (a string cell runs nothing, so it is
/// not neutralised, and reads back as it was); each wrong cell filled and
/// carrying its messages as a note; a last `errors` column with all of the
/// row's messages, those that name no cell of the file too.
async fn rows_xlsx(app: &App, job: &Job) -> Result<Download> {
    use rust_xlsxwriter::{Color, Format, Note};
    let mut pages = rows_file::errored_rows(app, job).await?;
    let header = rows_header(&pages.columns);
    let header: Vec<&str> = header.iter().map(String::as_str).collect();
    let mut book = report_book("errored rows", &header)?;
    let sheet = book.worksheet_from_index(0).map_err(Error::internal)?;
    let wrong = Format::new().set_background_color(Color::RGB(0xFFC7CE));
    let last = pages.columns.len() as u16 + 1;
    let (mut row, mut notes) = (1u32, 0usize);
    'pages: while let Some(list) = pages.next().await? {
        for r in &list {
            if row > XLSX_MAX_ROWS {
                let note = "more failing rows than a sheet holds: download the CSV \
                            (format=csv&layout=rows) for all of them";
                cut_note(sheet, note.to_string())?;
                break 'pages;
            }
            sheet
                .write_number(row, 0, r.row as f64)
                .and_then(|s| s.write_string(row, last, &r.errors))
                .map_err(Error::internal)?;
            for (k, (text, note)) in r.cells.iter().zip(&r.notes).enumerate() {
                let col = k as u16 + 1;
                let Some(note) = note else {
                    sheet
                        .write_string(row, col, text)
                        .map_err(Error::internal)?;
                    continue;
                };
                sheet
                    .write_string_with_format(row, col, text, &wrong)
                    .map_err(Error::internal)?;
                if notes < MAX_NOTES {
                    let note = Note::new(note).add_author_prefix(false);
                    sheet
                        .insert_note(row, col, &note)
                        .map_err(Error::internal)?;
                    notes += 1;
                }
            }
            row += 1;
        }
    }
    xlsx_download(book, "errored-rows.xlsx").await
}

/// `row`, the columns, `errors`.
fn rows_header(columns: &[String]) -> Vec<String> {
    let mut header = vec![rows_file::ROW.to_string()];
    header.extend(columns.iter().cloned());
    header.push(rows_file::ERRORS.to_string());
    header
}

/// Where the task writing a CSV download sends its pages.
struct CsvSink(mpsc::Sender<std::result::Result<Bytes, std::io::Error>>);

impl CsvSink {
    /// Sends records as one chunk; false once the client has gone.
    async fn records<R: IntoIterator<Item = Vec<String>>>(&self, records: R) -> bool {
        let mut w = csv::Writer::from_writer(Vec::new());
        for r in records {
            let _ = w.write_record(r);
        }
        let bytes = w.into_inner().unwrap_or_default();
        bytes.is_empty() || self.0.send(Ok(Bytes::from(bytes))).await.is_ok()
    }

    /// Ends the download cut short.
    async fn fail(&self, e: impl std::fmt::Display) {
        let _ = self.0.send(Err(std::io::Error::other(e.to_string()))).await;
    }
}

/// A CSV download a task streams: the sink it writes to, and the download.
fn csv_download(file_name: &'static str) -> (CsvSink, Download) {
    let (tx, rx) = mpsc::channel(4);
    let download = Download {
        content_type: "text/csv; charset=utf-8",
        file_name: file_name.to_string(),
        body: DownloadBody::Pages(rx),
    };
    (CsvSink(tx), download)
}

/// The whole error report as CSV, streamed page by page.
fn errors_csv(app: Arc<App>, job: Job) -> Download {
    let (sink, download) = csv_download("errors.csv");
    tokio::spawn(async move {
        let head = ERRORS_HEADER.map(String::from);
        if !sink.records([head.to_vec()]).await {
            return;
        }
        let mut pages = jobs::error_pages(&app, &job);
        loop {
            let list = match pages.next().await {
                Ok(Some((_, list))) => list,
                Ok(None) => return,
                Err(e) => return sink.fail(e).await,
            };
            let records = list.iter().map(|e| {
                vec![
                    e.row.to_string(),
                    neutralise(e.column.as_deref().unwrap_or("")),
                    neutralise(e.value.as_deref().unwrap_or("")),
                    e.code.as_str().to_string(),
                    neutralise(&e.message),
                    neutralise(e.rule.as_deref().unwrap_or("")),
                ]
            });
            if !sink.records(records).await {
                return;
            }
        }
    });
    download
}

/// The errored-rows file as CSV (API.md section 11), streamed page by
/// page; every cell neutralised (section 5), the `errors` column too.
async fn rows_csv(app: Arc<App>, job: Job) -> Result<Download> {
    // Asked first, so a purged or revised job is a problem, not a cut body.
    let columns = rows_file::errored_rows(&app, &job).await?.columns;
    let (sink, download) = csv_download("errored-rows.csv");
    tokio::spawn(async move {
        let head = rows_header(&columns)
            .iter()
            .map(|h| neutralise(h))
            .collect();
        if !sink.records([head]).await {
            return;
        }
        let mut pages = match rows_file::errored_rows(&app, &job).await {
            Ok(pages) => pages,
            Err(e) => return sink.fail(e).await,
        };
        loop {
            let list = match pages.next().await {
                Ok(Some(list)) => list,
                Ok(None) => return,
                Err(e) => return sink.fail(e).await,
            };
            let records = list.iter().map(|r| {
                let mut record = vec![r.row.to_string()];
                record.extend(r.cells.iter().map(|c| neutralise(c)));
                record.push(neutralise(&r.errors));
                record
            });
            if !sink.records(records).await {
                return;
            }
        }
    });
    Ok(download)
}
