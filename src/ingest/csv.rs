//! CSV: the `csv` crate does the parsing (quotes, embedded newlines, CRLF);
//! this module adds what spreadsheet exports need around it: a UTF-8 BOM,
//! UTF-16 (by its BOM) and legacy encodings (`?encoding=`), delimiter
//! detection, and row numbers as a spreadsheet shows them: a quoted field
//! spanning lines is one row, and a blank line is a row too (counted by
//! [`super::blank_lines`], not checked), as are `,,,` rows (counted, then
//! skipped as no data).

use std::io::{Cursor, Read};

use super::blank_lines::BlankLines;
use super::budget::{Budget, HEADER_BYTES, over_budget, record_bytes};
use super::decode::{DecodeReader, bom, decode_failure, encoding_for};
use super::{Cell, FileCode, FileError, Options, RawRow, RowSource, read_error};

/// How much of the file is looked at to detect the delimiter.
const SNIFF_BYTES: usize = 64 * 1024;

/// Delimiters detected, in order of preference on a tie.
const DELIMITERS: [u8; 4] = [b',', b';', b'\t', b'|'];

pub fn open(reader: Box<dyn Read + Send>, options: &Options) -> Result<RowSource, FileError> {
    let (prefix, reader) = decoded(reader, options)?;
    if prefix.iter().all(|b| b.is_ascii_whitespace()) {
        return Err(FileError::new(FileCode::NoRows, "the file is empty"));
    }
    let delimiter = options
        .delimiter
        .unwrap_or_else(|| detect_delimiter(&prefix));
    // A header wider than the limit is refused from its first bytes, before
    // the parser holds the whole line.
    let fields = first_line_counts(&prefix)[delimiter as usize] + 1;
    if options.max_columns > 0 && fields > options.max_columns {
        return Err(too_many_columns(fields, options.max_columns));
    }
    // The first bytes are in memory already; the rest counts per record.
    let budget = Budget::new(HEADER_BYTES);
    let input = BlankLines::new(Cursor::new(prefix).chain(budget.reader(reader)), delimiter);
    let mut csv = csv::ReaderBuilder::new()
        .has_headers(false)
        .flexible(true)
        .delimiter(delimiter)
        .from_reader(input);

    let mut record = csv::ByteRecord::new();
    let got = csv.read_byte_record(&mut record).map_err(|e| {
        too_long(&e, "row 1 (the header)", HEADER_BYTES).unwrap_or_else(|| csv_error(&e))
    })?;
    if !got {
        return Err(FileError::new(FileCode::NoRows, "the file is empty"));
    }
    if options.max_columns > 0 && record.len() > options.max_columns {
        return Err(too_many_columns(record.len(), options.max_columns));
    }
    let header = record
        .iter()
        .enumerate()
        .map(|(i, field)| {
            std::str::from_utf8(field).map(str::to_string).map_err(|_| {
                FileError::new(
                    FileCode::Encoding,
                    format!("row 1, column {}: the header is not valid UTF-8; give ?encoding= for other encodings", i + 1),
                )
            })
        })
        .collect::<Result<Vec<_>, _>>()?;
    let cap = record_bytes(options);
    budget.next_record(cap);
    // The header is row 1 whatever blank lines come before it.
    csv.get_mut().blanks_before_next();
    let rows = Rows {
        csv,
        record,
        width: header.len(),
        header: header.clone(),
        budget,
        cap,
        last_row: 1,
    };
    Ok(RowSource {
        header,
        rows: Box::new(rows),
    })
}

/// Reads the first bytes of the file and decides its encoding: a BOM wins
/// (UTF-8 or UTF-16), then `?encoding=`, else UTF-8. UTF-8 is passed through
/// as bytes, so that an invalid byte is reported with its row and column;
/// anything else is decoded to UTF-8 on the way. Gives the (decoded) first
/// bytes and the rest of the stream.
fn decoded(
    mut reader: Box<dyn Read + Send>,
    options: &Options,
) -> Result<(Vec<u8>, Box<dyn Read + Send>), FileError> {
    let mut prefix = Vec::with_capacity(SNIFF_BYTES);
    (&mut reader)
        .take(SNIFF_BYTES as u64)
        .read_to_end(&mut prefix)
        .map_err(read_error)?;
    let named = match options.encoding.as_deref() {
        None => encoding_rs::UTF_8,
        Some(label) => encoding_for(label).ok_or_else(|| {
            FileError::new(
                FileCode::Encoding,
                format!("the encoding {label:?} is not supported"),
            )
        })?,
    };
    let (encoding, bom_len) = bom(&prefix).unwrap_or((named, 0));
    prefix.drain(..bom_len);
    if encoding == encoding_rs::UTF_8 {
        return Ok((prefix, reader));
    }
    let mut decoder: Box<dyn Read + Send> = Box::new(DecodeReader::new(
        Cursor::new(prefix).chain(reader),
        encoding,
    ));
    let mut text = Vec::with_capacity(SNIFF_BYTES);
    (&mut decoder)
        .take(SNIFF_BYTES as u64)
        .read_to_end(&mut text)
        .map_err(|e| decode_failure(&e).unwrap_or_else(|| read_error(e)))?;
    Ok((text, decoder))
}

/// How often each byte occurs outside quotes in the first line.
fn first_line_counts(prefix: &[u8]) -> [usize; 256] {
    let mut counts = [0usize; 256];
    let mut in_quotes = false;
    for &b in prefix {
        match b {
            b'"' => in_quotes = !in_quotes,
            b'\n' | b'\r' if !in_quotes => break,
            _ if !in_quotes => counts[b as usize] += 1,
            _ => {}
        }
    }
    counts
}

/// Picks the candidate delimiter that occurs most often outside quotes in
/// the first line; a comma when none occurs.
fn detect_delimiter(prefix: &[u8]) -> u8 {
    let all = first_line_counts(prefix);
    let counts = DELIMITERS.map(|d| all[d as usize]);
    let mut best = 0;
    for i in 1..DELIMITERS.len() {
        if counts[i] > counts[best] {
            best = i;
        }
    }
    DELIMITERS[best]
}

fn too_many_columns(found: usize, max: usize) -> FileError {
    FileError::new(
        FileCode::TooManyColumns,
        format!("the header has {found} or more columns; at most {max} are accepted"),
    )
}

/// The failure of a record over its byte budget, if that is what `e` is.
fn too_long(e: &csv::Error, what: &str, cap: u64) -> Option<FileError> {
    match e.kind() {
        csv::ErrorKind::Io(io) => over_budget(io, what, cap),
        _ => None,
    }
}

fn csv_error(e: &csv::Error) -> FileError {
    if let csv::ErrorKind::Io(io) = e.kind()
        && let Some(failure) = decode_failure(io)
    {
        return failure;
    }
    let at = e
        .position()
        .map(|p| format!("line {}: ", p.line()))
        .unwrap_or_default();
    FileError::new(
        FileCode::Unreadable,
        format!("{at}the file is not readable as CSV: {e}"),
    )
}

struct Rows<R: Read> {
    csv: csv::Reader<BlankLines<R>>,
    /// One record buffer reused for every row.
    record: csv::ByteRecord,
    width: usize,
    header: Vec<String>,
    budget: Budget,
    /// The byte budget of one record.
    cap: u64,
    /// The row number of the last record read.
    last_row: u64,
}

impl<R: Read> Iterator for Rows<R> {
    type Item = Result<RawRow, FileError>;

    fn next(&mut self) -> Option<Self::Item> {
        loop {
            match self.csv.read_byte_record(&mut self.record) {
                Ok(false) => return None,
                Err(e) => {
                    let what = format!("the row after row {}", self.last_row);
                    let failure = too_long(&e, &what, self.cap).unwrap_or_else(|| csv_error(&e));
                    return Some(Err(failure));
                }
                Ok(true) => {}
            }
            self.budget.next_record(self.cap);
            // The header is row 1. A record is the next row, as a
            // spreadsheet shows it: a quoted field spanning lines stays one
            // row, and each blank line the reader skipped before it (a
            // spreadsheet shows it as an empty row) counts as one.
            let row = self.last_row + 1 + self.csv.get_mut().blanks_before_next();
            self.last_row = row;
            // A row of empty cells (",,,") is what spreadsheets export for
            // blank rows: it is not data.
            if self
                .record
                .iter()
                .all(|f| f.iter().all(u8::is_ascii_whitespace))
            {
                continue;
            }
            return Some(self.cells(row).map(|cells| RawRow { row, cells }));
        }
    }
}

impl<R: Read> Rows<R> {
    fn cells(&self, row: u64) -> Result<Vec<Cell>, FileError> {
        let mut cells = Vec::with_capacity(self.width.max(self.record.len()));
        for (i, field) in self.record.iter().enumerate() {
            let text = std::str::from_utf8(field).map_err(|_| {
                let column = self.header.get(i).map(String::as_str).unwrap_or("?");
                FileError::new(
                    FileCode::Encoding,
                    format!(
                        "row {row}, column {column}: the text is not valid UTF-8; \
                         give ?encoding=windows-1252 (or another) for files saved in a legacy encoding"
                    ),
                )
            })?;
            cells.push(if blank(text) {
                Cell::Empty
            } else {
                Cell::Text(text.to_string())
            });
        }
        Ok(cells)
    }
}

/// Whether a cell holds nothing but spaces. A visible ASCII first byte
/// answers at once, where `str::trim` asks Unicode at both ends of every
/// cell.
fn blank(text: &str) -> bool {
    match text.as_bytes().first() {
        None => true,
        Some(b) if b.is_ascii_graphic() => false,
        Some(_) => text.trim().is_empty(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cell_is_blank_as_its_trim_is_empty() {
        for s in [
            "",
            " ",
            "\t\r",
            "\u{a0}",
            "\u{3000} ",
            "a",
            " a",
            "a ",
            "é",
            "\u{a0}x",
            "~",
        ] {
            assert_eq!(blank(s), s.trim().is_empty(), "{s:?}");
        }
    }

    fn read(text: &[u8]) -> (Vec<String>, Vec<RawRow>) {
        let src = open(Box::new(Cursor::new(text.to_vec())), &Options::default()).unwrap();
        let rows = src.rows.collect::<Result<Vec<_>, _>>().unwrap();
        (src.header, rows)
    }

    #[test]
    fn semicolons_and_bom_are_handled() {
        let (header, rows) = read(b"\xEF\xBB\xBFsku;name\nA;x\n");
        assert_eq!(header, vec!["sku", "name"]);
        assert_eq!(
            rows[0].cells,
            vec![Cell::Text("A".into()), Cell::Text("x".into())]
        );
    }

    #[test]
    fn row_numbers_match_a_spreadsheet() {
        let (_, rows) = read(b"a,b\r\n1,\"two\nlines\"\r\n\r\n,\n3,4\r\n\n\n5,\"x\r\ny\"\n6,7\n");
        let numbers: Vec<u64> = rows.iter().map(|r| r.row).collect();
        // Row 2 spans two lines; row 3 is a blank line and row 4 empty
        // cells (counted, not data); rows 6 and 7 are blank lines; row 8
        // spans two lines.
        assert_eq!(numbers, vec![2, 5, 8, 9]);
    }

    #[test]
    fn utf16_with_a_bom_and_named_legacy_encodings_are_decoded() {
        let mut utf16 = vec![0xFF, 0xFE];
        utf16.extend(
            "sku;name\r\nA;café\r\n"
                .encode_utf16()
                .flat_map(u16::to_le_bytes),
        );
        let (header, rows) = read(&utf16);
        assert_eq!(header, vec!["sku", "name"]);
        assert_eq!(rows[0].cells[1], Cell::Text("café".into()));

        let options = Options {
            encoding: Some("windows-1252".into()),
            ..Options::default()
        };
        let src = open(
            Box::new(Cursor::new(b"a,b\nx,caf\xe9 \x80\n".to_vec())),
            &options,
        )
        .unwrap();
        let rows = src.rows.collect::<Result<Vec<_>, _>>().unwrap();
        assert_eq!(rows[0].cells[1], Cell::Text("café €".into()));
    }

    #[test]
    fn broken_utf16_is_an_encoding_failure() {
        let mut bytes = vec![0xFF, 0xFE];
        bytes.extend("a,b\n1,".encode_utf16().flat_map(u16::to_le_bytes));
        bytes.extend([0x00, 0xDC, b'2', 0, b'\n', 0]);
        let result = open(Box::new(Cursor::new(bytes)), &Options::default())
            .and_then(|src| src.rows.collect::<Result<Vec<_>, _>>());
        assert_eq!(result.unwrap_err().code, FileCode::Encoding);
    }

    #[test]
    fn bad_utf8_names_row_and_column() {
        let src = open(
            Box::new(Cursor::new(b"a,b\nx,caf\xe9\n".to_vec())),
            &Options::default(),
        )
        .unwrap();
        let err = src.rows.collect::<Result<Vec<_>, _>>().unwrap_err();
        assert_eq!(err.code, FileCode::Encoding);
        assert!(err.message.contains("row 2, column b"), "{}", err.message);
    }
}
