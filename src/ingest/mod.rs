//! Ingestion: the bytes of an uploaded file → a header and rows of cells.
//!
//! Every format goes through this one seam: [`open`] picks the reader for a
//! [`Format`] and hands back a [`RowSource`], an iterator of [`RawRow`]s that
//! carry the row number a person sees in their file. Readers stream: they
//! hold one record at a time, never the whole file.

pub mod biff;
pub mod blank_lines;
pub mod budget;
pub mod csv;
pub mod decode;
pub mod json;
pub mod json_split;
pub mod ods;
pub mod sheets;
pub mod spool;
pub mod xlsx;

use std::io::Read;

use chrono::{NaiveDate, NaiveDateTime};
use serde::{Deserialize, Serialize};

/// A file format the service reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum Format {
    Csv,
    Xlsx,
    Xls,
    Json,
    Ndjson,
    /// OpenDocument spreadsheet (LibreOffice's own format).
    Ods,
}

/// What a `Content-Type` says about the body.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Declared {
    /// A format the service reads.
    Format(Format),
    /// `application/octet-stream` or no type: the bytes decide.
    Sniff,
    /// `multipart/form-data`: the part named `file` decides.
    Multipart,
}

/// The magic numbers of the two spreadsheet containers.
const ZIP_MAGIC: &[u8] = b"PK\x03\x04";
const OLE2_MAGIC: &[u8] = b"\xD0\xCF\x11\xE0\xA1\xB1\x1A\xE1";

/// Whether a file is a zip container (XLSX, ODS): its bytes are
/// compressed already.
pub fn is_zip(prefix: &[u8]) -> bool {
    prefix.starts_with(ZIP_MAGIC)
}

impl Format {
    /// Whether its reader hands rows on as it reads the file (CSV), rather
    /// than crossing much of the file first (JSON's and NDJSON's header is
    /// learned from their first 4 MiB, or from the whole file in a first
    /// pass; a workbook is spooled before it is opened).
    pub fn streams(self) -> bool {
        matches!(self, Format::Csv)
    }

    /// Whether the format is a spreadsheet's, whose text cells may carry
    /// the apostrophe that neutralises a formula (API.md section 5): the
    /// service writes one on every cell of a CSV a spreadsheet could run,
    /// and a spreadsheet keeps it when it saves the cell again. JSON is
    /// written as it is and read as it is.
    pub fn neutralises(self) -> bool {
        !matches!(self, Format::Json | Format::Ndjson)
    }

    /// What a `Content-Type` essence (lowercase, without parameters) names;
    /// `None` for a type the service does not take (`415`).
    pub fn from_content_type(content_type: &str) -> Option<Declared> {
        let format = match content_type {
            "text/csv" | "application/csv" | "text/plain" | "text/tab-separated-values" => {
                Format::Csv
            }
            "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet" => Format::Xlsx,
            "application/vnd.ms-excel" => Format::Xls,
            "application/vnd.oasis.opendocument.spreadsheet" => Format::Ods,
            "application/json" => Format::Json,
            "application/x-ndjson"
            | "application/jsonl"
            | "application/x-jsonlines"
            | "application/jsonlines" => Format::Ndjson,
            "application/octet-stream" | "" => return Some(Declared::Sniff),
            "multipart/form-data" => return Some(Declared::Multipart),
            _ => return None,
        };
        Some(Declared::Format(format))
    }

    /// The format a file name's extension names, if any.
    pub fn from_file_name(name: &str) -> Option<Format> {
        let ext = name.rsplit_once('.')?.1.to_ascii_lowercase();
        match ext.as_str() {
            "csv" | "tsv" | "txt" => Some(Format::Csv),
            "xlsx" | "xlsm" => Some(Format::Xlsx),
            "xls" => Some(Format::Xls),
            "ods" => Some(Format::Ods),
            "json" => Some(Format::Json),
            "ndjson" | "jsonl" => Some(Format::Ndjson),
            _ => None,
        }
    }

    /// Detects the format from the first bytes of a file: a zip container is
    /// ODS when its `mimetype` entry says so, else XLSX; an OLE2 container
    /// is XLS; text whose first character (after a BOM
    /// and spaces) is `[` is JSON; `{` is NDJSON when the first line is a
    /// complete object other than the `{"rows": [...]}` wrapper, else JSON;
    /// anything else is CSV.
    pub fn sniff(prefix: &[u8]) -> Format {
        if is_zip(prefix) {
            return if ods::is_ods(prefix) {
                Format::Ods
            } else {
                Format::Xlsx
            };
        }
        if prefix.starts_with(OLE2_MAGIC) || is_old_excel(prefix) {
            // An Excel 2.x–4.0 worksheet goes to the XLS reader too, which
            // says what it is (read as CSV, it was told to give ?encoding=).
            return Format::Xls;
        }
        let text = prefix.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(prefix);
        let start = text.iter().position(|b| !b.is_ascii_whitespace());
        let Some(start) = start else {
            return Format::Csv;
        };
        let text = &text[start..];
        match text[0] {
            b'[' => Format::Json,
            b'{' if first_line_is_an_object(text) => Format::Ndjson,
            b'{' => Format::Json,
            _ => Format::Csv,
        }
    }

    /// Spreadsheet types are often mixed up by clients (an `.xlsx` sent as
    /// `application/vnd.ms-excel` or an `.ods` as XLSX, or a `.csv` labelled
    /// so by Windows, where Excel owns the extension): for them the bytes
    /// decide. Other formats are taken as declared.
    pub fn refine(self, prefix: &[u8]) -> Format {
        match self {
            Format::Xls | Format::Xlsx | Format::Ods => Format::sniff(prefix),
            other => other,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Format::Csv => "csv",
            Format::Xlsx => "xlsx",
            Format::Xls => "xls",
            Format::Json => "json",
            Format::Ndjson => "ndjson",
            Format::Ods => "ods",
        }
    }
}

/// Whether the bytes begin as an Excel 2.x, 3.0 or 4.0 file (BIFF2–4, a
/// bare record stream with no OLE2 container): a BOF record (`0x0009`,
/// `0x0209` or `0x0409`) of 4 to 16 bytes, then a worksheet, chart, macro
/// sheet or workbook type.
pub fn is_old_excel(prefix: &[u8]) -> bool {
    let [0x09, version, len_lo, len_hi, ..] = *prefix else {
        return false;
    };
    let len = u16::from_le_bytes([len_lo, len_hi]);
    matches!(version, 0x00 | 0x02 | 0x04) && (4..=16).contains(&len) && prefix.len() >= 8
}

/// Whether `text` (starting with `{`) begins with one complete JSON object
/// on its first line that is not the `{"rows": [...]}` wrapper: NDJSON
/// rather than one JSON document.
fn first_line_is_an_object(text: &[u8]) -> bool {
    let end = text.iter().position(|&b| b == b'\n').unwrap_or(text.len());
    match serde_json::from_slice::<serde_json::Map<String, serde_json::Value>>(&text[..end]) {
        Ok(object) => !object.get("rows").is_some_and(|r| r.is_array()),
        Err(_) => false,
    }
}

/// One cell as the file gave it. Text formats give `Text`; typed formats
/// (spreadsheets, JSON) give the typed variants so that validation never has
/// to guess a type back from a rendered string.
#[derive(Debug, Clone, PartialEq)]
pub enum Cell {
    Empty,
    Text(String),
    Int(i64),
    Float(f64),
    /// A number with its exact digits (JSON), never passed through f64.
    Number(String),
    Bool(bool),
    Date(NaiveDate),
    DateTime(NaiveDateTime),
    /// A spreadsheet error value (`#N/A`, `#DIV/0!`): never a value.
    Error(String),
}

impl Cell {
    /// The cell as a person reads it: numbers in their shortest form,
    /// dates as `YYYY-MM-DD` and date-times as `YYYY-MM-DD HH:MM:SS` (both
    /// as the date rules read them back), text as it is.
    pub fn plain_text(&self) -> String {
        match self {
            Cell::Empty => String::new(),
            Cell::Text(s) | Cell::Number(s) | Cell::Error(s) => s.clone(),
            Cell::Int(i) => i.to_string(),
            Cell::Float(f) => f.to_string(),
            Cell::Bool(b) => b.to_string(),
            Cell::Date(d) => d.format("%Y-%m-%d").to_string(),
            Cell::DateTime(d) => d.format("%Y-%m-%d %H:%M:%S").to_string(),
        }
    }
}

/// One data row of the file.
#[derive(Debug, Clone)]
pub struct RawRow {
    /// The number a person sees: for CSV and spreadsheets the header is
    /// row 1; for JSON the 1-based position of the object.
    pub row: u64,
    pub cells: Vec<Cell>,
}

/// Reader options that come from the upload's query string.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Options {
    /// CSV: the field delimiter; detected when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub delimiter: Option<u8>,
    /// Largest cell accepted, in bytes (a longer cell is a row error).
    #[serde(default)]
    pub max_cell_bytes: usize,
    /// Most columns accepted in the header.
    #[serde(default)]
    pub max_columns: usize,
    /// CSV: the encoding named by `?encoding=` (a WHATWG label); UTF-8 with
    /// its BOM honoured when absent, UTF-16 detected by its BOM.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub encoding: Option<String>,
    /// Spreadsheets (XLSX, XLS, ODS): the sheet to read; the first when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sheet: Option<String>,
    /// JSON and NDJSON: read in one pass, the header learned from the
    /// first objects ([`json::WINDOW`]). The read then fails with
    /// [`FileCode::HeaderGrown`] if a later object brings a new key, and the
    /// caller reads the file again without this option.
    #[serde(skip)]
    pub one_pass: bool,
}

/// Why a file cannot be read as rows. Each but the last two is the code of
/// the `invalid` job it makes (`ledger::ProblemCode` has each under the
/// same name); the last two stop a read on purpose and never reach a job.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FileCode {
    /// Not readable in its format, or past a reader's limit.
    Unreadable,
    /// Bytes that are not text in the encoding.
    Encoding,
    /// A header but no data rows, or nothing at all.
    NoRows,
    /// Required columns are not in the header.
    MissingColumns,
    /// One column named twice in the header.
    DuplicateColumns,
    /// Columns not in the module, with `unknown_columns=reject`.
    UnknownColumns,
    /// The `sheet` asked for is not in the workbook.
    UnknownSheet,
    /// A workbook with no sheet (or member) that holds a module.
    NoParts,
    /// More rows than the limit.
    TooManyRows,
    /// More columns than the limit.
    TooManyColumns,
    /// JSON read in one pass met a key its header lacks
    /// ([`json::one_pass`]): the caller reads the file again in two passes.
    HeaderGrown,
    /// The rows are no longer wanted: the reader stops.
    Stopped,
}

impl FileCode {
    pub fn as_str(self) -> &'static str {
        match self {
            FileCode::Unreadable => "unreadable",
            FileCode::Encoding => "encoding",
            FileCode::NoRows => "no_rows",
            FileCode::MissingColumns => "missing_columns",
            FileCode::DuplicateColumns => "duplicate_columns",
            FileCode::UnknownColumns => "unknown_columns",
            FileCode::UnknownSheet => "unknown_sheet",
            FileCode::NoParts => "no_parts",
            FileCode::TooManyRows => "too_many_rows",
            FileCode::TooManyColumns => "too_many_columns",
            FileCode::HeaderGrown => "header_grown",
            FileCode::Stopped => "stopped",
        }
    }
}

/// A file-level failure: the job becomes `invalid` with this code.
#[derive(Debug, Clone, thiserror::Error)]
#[error("{message}")]
pub struct FileError {
    pub code: FileCode,
    pub message: String,
}

impl FileError {
    pub fn new(code: FileCode, message: impl Into<String>) -> FileError {
        FileError {
            code,
            message: message.into(),
        }
    }
}

/// The rows of an opened file, after its header.
pub struct RowSource {
    pub header: Vec<String>,
    pub rows: Box<dyn Iterator<Item = Result<RawRow, FileError>> + Send>,
}

/// Opens a file of the given format. The reader is consumed as rows are
/// pulled, so memory stays flat however large the file is.
pub fn open(
    format: Format,
    reader: Box<dyn Read + Send>,
    options: &Options,
) -> Result<RowSource, FileError> {
    match format {
        Format::Csv => csv::open(reader, options),
        Format::Xlsx => xlsx::open_xlsx(reader, options),
        Format::Xls => xlsx::open_xls(reader, options),
        Format::Json => json::open_json(reader, options),
        Format::Ndjson => json::open_ndjson(reader, options),
        Format::Ods => ods::open(reader, options),
    }
}

/// What a reader running on its own thread hands over: the header first,
/// then the rows.
pub enum Item {
    Header(Vec<String>),
    Row(RawRow),
}

/// What crosses from a [`produce`] thread: the header, or rows in chunks.
enum Chunk {
    Header(Vec<String>),
    Rows(Vec<RawRow>),
}

/// Rows handed over at a time: one hand-off per row cost more than the
/// XLSX parse itself (a profile of reading 100k rows: a third of the time
/// in thread wake-ups and lock contention).
const CHUNK_ROWS: usize = 256;
/// ... unless the rows are large: the chunk goes at this many bytes of cell
/// text, so the rows in flight stay a few MiB whatever the cell limit.
const CHUNK_BYTES: usize = 1 << 20;
/// Chunks in flight between the reader thread and the validation.
const CHUNKS_IN_FLIGHT: usize = 4;

/// The sending end given to a reader run by [`produce`].
pub struct Emit {
    tx: std::sync::mpsc::SyncSender<Result<Chunk, FileError>>,
    pending: std::cell::RefCell<(Vec<RawRow>, usize)>,
}

/// The message of the `unreadable` failure a reader's panic becomes. The
/// job ends cleanly, but a panic is a bug to fix: the fuzz regression test
/// looks for this message.
pub const PANICKED: &str = "the file could not be read";

impl Emit {
    /// Hands over the header or a row; fails once nobody is reading.
    pub fn send(&self, item: Item) -> Result<(), FileError> {
        match item {
            Item::Header(header) => {
                self.flush()?;
                self.hand_over(Ok(Chunk::Header(header)))
            }
            Item::Row(row) => {
                let full = {
                    let mut pending = self.pending.borrow_mut();
                    pending.1 += weight(&row);
                    pending.0.push(row);
                    pending.0.len() >= CHUNK_ROWS || pending.1 >= CHUNK_BYTES
                };
                if full { self.flush() } else { Ok(()) }
            }
        }
    }

    /// Hands over the rows held back.
    fn flush(&self) -> Result<(), FileError> {
        let rows = std::mem::take(&mut *self.pending.borrow_mut()).0;
        if rows.is_empty() {
            return Ok(());
        }
        self.hand_over(Ok(Chunk::Rows(rows)))
    }

    fn hand_over(&self, chunk: Result<Chunk, FileError>) -> Result<(), FileError> {
        self.tx
            .send(chunk)
            .map_err(|_| FileError::new(FileCode::Stopped, "the rows are no longer read"))
    }
}

/// Roughly the bytes a row holds.
fn weight(row: &RawRow) -> usize {
    let text = |c: &Cell| match c {
        Cell::Text(s) | Cell::Number(s) | Cell::Error(s) => s.len(),
        _ => 0,
    };
    row.cells
        .iter()
        .map(|c| std::mem::size_of::<Cell>() + text(c))
        .sum()
}

/// Runs a reader that cannot be an iterator itself (a serde visitor drives
/// the JSON parse; calamine's cell reader borrows its workbook) on its own
/// thread, feeding a small bounded channel of row chunks: memory holds a
/// few chunks, and the reader stops when the rows are no longer wanted. A
/// panic in a third-party parser becomes an `unreadable` file, never a
/// stuck job.
pub fn produce<F>(read: F) -> Result<RowSource, FileError>
where
    F: FnOnce(&Emit) -> Result<(), FileError> + Send + 'static,
{
    let (tx, rx) = std::sync::mpsc::sync_channel(CHUNKS_IN_FLIGHT);
    std::thread::Builder::new()
        .name("ingest".into())
        .spawn(move || {
            let emit = Emit {
                tx,
                pending: Default::default(),
            };
            let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                read(&emit).and_then(|()| emit.flush())
            }));
            let failure = match result {
                Ok(Ok(())) => return,
                Ok(Err(e)) if e.code == FileCode::Stopped => return,
                Ok(Err(e)) => e,
                Err(_) => FileError::new(FileCode::Unreadable, PANICKED),
            };
            // The rows before the failure first, as a person reads the file.
            if emit.flush().is_ok() {
                let _ = emit.hand_over(Err(failure));
            }
        })
        .map_err(read_error)?;
    match rx.recv() {
        Ok(Ok(Chunk::Header(header))) => Ok(RowSource {
            header,
            rows: Box::new(rx.into_iter().flat_map(|chunk| match chunk {
                Ok(Chunk::Rows(rows)) => rows.into_iter().map(Ok).collect::<Vec<_>>(),
                Ok(Chunk::Header(_)) => {
                    vec![Err(FileError::new(FileCode::Unreadable, "a second header"))]
                }
                Err(e) => vec![Err(e)],
            })),
        }),
        Ok(Ok(Chunk::Rows(_))) => Err(FileError::new(
            FileCode::Unreadable,
            "rows before the header",
        )),
        Ok(Err(e)) => Err(e),
        Err(_) => Err(FileError::new(FileCode::NoRows, "the file is empty")),
    }
}

/// The message of a reader that failed unexpectedly.
pub fn read_error(e: impl std::fmt::Display) -> FileError {
    FileError::new(FileCode::Unreadable, format!("cannot read the file: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn excel_2_to_4_worksheets_are_known_by_their_first_record() {
        let biff4 = [0x09, 0x04, 0x06, 0x00, 0x00, 0x00, 0x10, 0x00];
        assert!(is_old_excel(&biff4));
        assert_eq!(Format::sniff(&biff4), Format::Xls);
        assert_eq!(Format::Xls.refine(&biff4), Format::Xls);
        assert!(is_old_excel(&[
            0x09, 0x00, 0x04, 0x00, 0x02, 0x00, 0x10, 0x00
        ]));
        assert!(!is_old_excel(b"\tname,wa"), "a CSV starting with a tab");
        assert!(!is_old_excel(&[0x09, 0x04]));
    }

    #[test]
    fn formats_are_sniffed_from_the_first_bytes() {
        assert_eq!(Format::sniff(b"PK\x03\x04rest"), Format::Xlsx);
        assert_eq!(Format::sniff(OLE2_MAGIC), Format::Xls);
        assert_eq!(Format::sniff(b"\xEF\xBB\xBF  [{\"a\":1}]"), Format::Json);
        assert_eq!(Format::sniff(b"{\"rows\": [\n{\"a\": 1}]}"), Format::Json);
        assert_eq!(Format::sniff(b"{\"a\": 1}\n{\"a\": 2}\n"), Format::Ndjson);
        assert_eq!(Format::sniff(b"{\"a\": 1}\n"), Format::Ndjson);
        assert_eq!(Format::sniff(b"{\"rows\": [{\"a\": 1}]}"), Format::Json);
        assert_eq!(Format::sniff(b"{\n  \"a\": 1\n}\n"), Format::Json);
        assert_eq!(Format::sniff(b"a,b\n1,2\n"), Format::Csv);
        assert_eq!(Format::sniff(b""), Format::Csv);
        assert_eq!(Format::Xls.refine(b"PK\x03\x04"), Format::Xlsx);
        assert_eq!(Format::Xlsx.refine(OLE2_MAGIC), Format::Xls);
        assert_eq!(Format::Xls.refine(b"sku,name\n"), Format::Csv);
        assert_eq!(Format::Json.refine(b"PK\x03\x04"), Format::Json);
    }
}
