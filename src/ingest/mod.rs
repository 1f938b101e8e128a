//! Ingestion: the bytes of an uploaded file → a header and rows of cells.
//!
//! Every format goes through this one seam: [`open`] picks the reader for a
//! [`Format`] and hands back a [`RowSource`], an iterator of [`RawRow`]s that
//! carry the row number a person sees in their file. Readers stream: they
//! hold one record at a time, never the whole file.

pub mod csv;

use std::io::Read;

use chrono::{NaiveDate, NaiveDateTime};
use serde::{Deserialize, Serialize};

/// A file format the service reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Format {
    Csv,
}

impl Format {
    /// The format named by a `Content-Type` (without parameters), if any.
    pub fn from_content_type(content_type: &str) -> Option<Format> {
        match content_type {
            "text/csv" | "application/csv" | "text/plain" => Some(Format::Csv),
            _ => None,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Format::Csv => "csv",
        }
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
}

/// One data row of the file.
#[derive(Debug, Clone)]
pub struct RawRow {
    /// The number a person sees: for CSV the header is row 1.
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
}

/// A file-level failure: the job becomes `invalid` with this code.
#[derive(Debug, Clone, thiserror::Error)]
#[error("{message}")]
pub struct FileError {
    /// `unreadable`, `encoding`, `no_rows`, `too_many_columns`, …
    pub code: &'static str,
    pub message: String,
}

impl FileError {
    pub fn new(code: &'static str, message: impl Into<String>) -> FileError {
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
    }
}
