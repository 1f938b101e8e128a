//! Excel workbooks through calamine: XLSX (streamed cell by cell) and the
//! older XLS (BIFF, which calamine reads a sheet at a time).
//!
//! calamine needs `Read + Seek`, so the stored file is spooled to a
//! temporary file first. Before anything is inflated, the zip container's
//! directory is checked against the decompression limits of API.md
//! section 10, so a zip bomb is refused from its sizes, not by running it.
//!
//! Cells keep their spreadsheet types: a number that holds an integer is an
//! integer (no `12.0`), date cells are dates or date-times, formulas give
//! their cached value, error cells (`#N/A`) are errors. Row numbers are the
//! sheet's; the header is the first row with any content, and rows and
//! columns with nothing in them are ignored.

use std::fs::File;
use std::io::{BufReader, Read, Seek, SeekFrom, Write};

use calamine::{Data, DataRef, Reader, Xls, Xlsx};
use chrono::NaiveTime;

use super::{
    Cell, Emit, FileCode, FileError, Item, Options, RawRow, RowSource, biff, produce, read_error,
    spool,
};

/// The most an XLSX may expand to, in bytes.
pub const MAX_UNCOMPRESSED: u64 = 2 << 30;
/// The most an XLSX may expand relative to its own size.
pub const MAX_RATIO: u64 = 100;
/// Directory limits checked before the zip crate reads the directory into
/// memory: an XLSX has a few dozen parts, a hostile zip may claim millions.
const MAX_ENTRIES: u64 = 10_000;
const MAX_DIRECTORY_BYTES: u64 = 16 << 20;
/// calamine keeps the workbook's shared string table in memory (every cell
/// refers to it by index), so its size is capped on its own: 256 MiB of
/// XML is millions of distinct strings.
pub const MAX_SHARED_STRINGS: u64 = 256 << 20;
/// … and what it costs in memory is bounded too: calamine holds each
/// shared string as its own `String` in one `Vec`, so a string costs its
/// text and about [`STRING_OVERHEAD`] bytes more (the `String`, the
/// allocation's rounding, the `Vec`'s growth): 253 MB of tiny strings
/// take 894 MB.
pub const SHARED_STRINGS_MEMORY: u64 = 256 << 20;
const STRING_OVERHEAD: u64 = 64;

pub fn open_xlsx(reader: Box<dyn Read + Send>, options: &Options) -> Result<RowSource, FileError> {
    let (wanted, max_columns) = (options.sheet.clone(), options.max_columns);
    produce(move |emit| {
        let file = spool::to_file(reader)?;
        check_zip(&file, "XLSX", MAX_RATIO)?;
        check_shared_strings(&file, SHARED_STRINGS_MEMORY)?;
        let mut book = Xlsx::new(BufReader::new(file)).map_err(|e| unreadable("XLSX", e))?;
        let sheet = pick_sheet(book.sheet_names(), wanted.as_deref())?;
        let mut cells = book
            .worksheet_cells_reader(&sheet)
            .map_err(|e| unreadable("XLSX", e))?;
        let mut rows = Assembler::new(emit, max_columns);
        while let Some(cell) = cells.next_cell().map_err(|e| unreadable("XLSX", e))? {
            let (row, column) = cell.get_position();
            rows.cell(row, column, convert_ref(cell.get_value()))?;
        }
        rows.finish()
    })
}

/// The sheets of an XLSX, in the workbook's order (its zip is checked
/// as a read's is).
pub fn sheet_names(reader: Box<dyn Read + Send>) -> Result<Vec<String>, FileError> {
    let file = spool::to_file(reader)?;
    check_zip(&file, "XLSX", MAX_RATIO)?;
    let book = Xlsx::new(BufReader::new(file)).map_err(|e| unreadable("XLSX", e))?;
    Ok(book.sheet_names())
}

pub fn open_xls(reader: Box<dyn Read + Send>, options: &Options) -> Result<RowSource, FileError> {
    let (wanted, max_columns) = (options.sheet.clone(), options.max_columns);
    produce(move |emit| {
        let file = repack_ole2(spool::to_file(reader)?)?;
        let mut book = Xls::new(BufReader::new(file)).map_err(|e| unreadable("XLS", e))?;
        let sheet = pick_sheet(book.sheet_names(), wanted.as_deref())?;
        let range = book
            .worksheet_range(&sheet)
            .map_err(|e| unreadable("XLS", e))?;
        let (top, left) = range.start().unwrap_or((0, 0));
        let mut rows = Assembler::new(emit, max_columns);
        for (row, column, value) in range.used_cells() {
            let (row, column) = (
                top.saturating_add(row as u32),
                left.saturating_add(column as u32),
            );
            rows.cell(row, column, convert(value))?;
        }
        rows.finish()
    })
}

/// The workbook stream of an XLS, alone in a new OLE2 container that
/// calamine is given instead of the file.
///
/// calamine reads the container (sectors, FAT, directory) with a parser
/// of its own that panics on malformed sector chains: fuzzing found a chain
/// pointing past the end (its bounds check counts the header sector as
/// data), a partial last sector (an assertion on its length), and more of
/// the kind. The `cfb` crate checks the container and answers an error
/// instead; the container it writes is well-formed whatever came in, so
/// calamine only ever parses the workbook's records. The stream is all of
/// the file calamine reads for cells (summary properties and macros are
/// not data).
///
/// On the way, the stream's records are checked and its formulas blanked
/// ([`biff::prepare`]): calamine builds every sheet as a dense grid when
/// it opens the workbook, and a hostile file can ask for billions of
/// cells, an allocation that fails by aborting the process.
fn repack_ole2(mut file: File) -> Result<File, FileError> {
    let mut head = [0u8; 8];
    let got = std::io::Read::read(&mut file, &mut head).map_err(read_error)?;
    if super::is_old_excel(&head[..got]) {
        return Err(FileError::new(
            FileCode::Unreadable,
            "this is an Excel 2.x–4.0 worksheet, a format from before 1997 that importgate \
             does not read; open it in Excel or LibreOffice, save it as .xlsx (Excel Workbook), \
             and upload that",
        ));
    }
    std::io::Seek::rewind(&mut file).map_err(read_error)?;
    let mut source =
        cfb::CompoundFile::open(BufReader::new(file)).map_err(|e| unreadable("XLS", e))?;
    let streams: Vec<(String, std::path::PathBuf)> = source
        .read_root_storage()
        .filter(|e| e.is_stream())
        .map(|e| (e.name().to_ascii_lowercase(), e.path().to_path_buf()))
        .collect();
    // The names calamine looks for, in its order.
    let path = ["workbook", "book"]
        .iter()
        .find_map(|name| streams.iter().find(|(n, _)| n == name))
        .map(|(_, path)| path.clone())
        .ok_or_else(|| {
            FileError::new(
                FileCode::Unreadable,
                "the file is not readable as XLS: it holds no workbook",
            )
        })?;
    // Version 3 (512-byte sectors), as Excel writes XLS.
    let mut target = cfb::CompoundFile::create_with_version(
        cfb::Version::V3,
        tempfile::tempfile().map_err(read_error)?,
    )
    .map_err(read_error)?;
    {
        // In memory, as calamine holds it too (the upload's size bounds it),
        // to look at its records before calamine builds cells from them.
        let mut stream = Vec::new();
        source
            .open_stream(&path)
            .and_then(|mut from| from.read_to_end(&mut stream))
            .map_err(|e| unreadable("XLS", e))?;
        biff::prepare(&mut stream)?;
        let mut to = target.create_stream(&path).map_err(read_error)?;
        to.write_all(&stream).map_err(read_error)?;
    }
    target.flush().map_err(read_error)?;
    let mut file = target.into_inner();
    file.seek(SeekFrom::Start(0)).map_err(read_error)?;
    Ok(file)
}

pub(super) fn unreadable(kind: &str, e: impl std::fmt::Display) -> FileError {
    FileError::new(
        FileCode::Unreadable,
        format!("the file is not readable as {kind}: {e}"),
    )
}

/// The sheet asked for, or the first.
pub(super) fn pick_sheet(names: Vec<String>, wanted: Option<&str>) -> Result<String, FileError> {
    match wanted {
        Some(w) => names
            .iter()
            .find(|n| n.as_str() == w)
            .or_else(|| names.iter().find(|n| n.eq_ignore_ascii_case(w)))
            .cloned()
            .ok_or_else(|| {
                FileError::new(
                    FileCode::UnknownSheet,
                    format!(
                        "the workbook has no sheet {w:?}; its sheets are: {}",
                        names.join(", ")
                    ),
                )
            }),
        None => names
            .into_iter()
            .next()
            .ok_or_else(|| FileError::new(FileCode::NoRows, "the workbook has no sheets")),
    }
}

/// Refuses a zip whose parts would expand past the limits (2 GiB, and
/// `max_ratio` times the file's size), reading only its directory; `kind`
/// names the format in messages. The zip crate also refuses to inflate a
/// part past the size the directory declares, so the declared sizes are
/// the real bound.
pub(super) fn check_zip(file: &File, kind: &str, max_ratio: u64) -> Result<(), FileError> {
    let compressed = file.metadata().map_err(read_error)?.len();
    check_directory(&mut spool::reopen(file)?, compressed, kind)?;
    let mut zip = zip::ZipArchive::new(BufReader::new(spool::reopen(file)?))
        .map_err(|e| unreadable(kind, e))?;
    let mut total = 0u64;
    for i in 0..zip.len() {
        let part = zip.by_index_raw(i).map_err(|e| unreadable(kind, e))?;
        if part.name_raw().ends_with(b"sharedStrings.xml") && part.size() > MAX_SHARED_STRINGS {
            return Err(FileError::new(
                FileCode::Unreadable,
                format!(
                    "the XLSX's shared string table is {} bytes; at most {} MiB are accepted",
                    part.size(),
                    MAX_SHARED_STRINGS >> 20
                ),
            ));
        }
        total = total.saturating_add(part.size());
    }
    let limit = MAX_UNCOMPRESSED.min(compressed.saturating_mul(max_ratio));
    if total > limit {
        return Err(FileError::new(
            FileCode::Unreadable,
            format!(
                "the {kind} would expand from {compressed} to {total} bytes; at most {} GiB \
                 and {max_ratio} times the file's size are accepted",
                MAX_UNCOMPRESSED >> 30
            ),
        ));
    }
    Ok(())
}

/// The fewest bytes a shared string takes in the XML: `<si/>`.
const LEAST_STRING_XML: u64 = 5;

/// The most calamine can hold for a shared string table of `size` bytes
/// of XML: all of it as text, and as many strings as fit.
fn most_held(size: u64) -> u64 {
    let most_strings = size.div_ceil(LEAST_STRING_XML);
    size.saturating_add(most_strings.saturating_mul(STRING_OVERHEAD))
}

/// Refuses a shared string table whose strings calamine would hold in more
/// than `budget` bytes, before calamine loads them.
///
/// A table small enough is passed from its declared size alone: the zip
/// crate inflates no part past the size its directory declares (calamine
/// reads through the same crate), every string takes at least
/// [`LEAST_STRING_XML`] bytes of it, and no text is longer held than
/// written ([`most_held`]). Counting a table was a third of the time before a workbook's
/// first row: 27–29 ms of 100k orders' 80 ms (3.8 MB of XML, 145k
/// strings), inflated and parsed again right after by calamine.
fn check_shared_strings(file: &File, budget: u64) -> Result<(), FileError> {
    let mut zip = zip::ZipArchive::new(BufReader::new(spool::reopen(file)?))
        .map_err(|e| unreadable("XLSX", e))?;
    let mut found = None;
    for i in 0..zip.len() {
        let part = zip.by_index_raw(i).map_err(|e| unreadable("XLSX", e))?;
        if part.name_raw().ends_with(b"sharedStrings.xml") {
            found = Some((i, part.size()));
            break;
        }
    }
    let Some((index, size)) = found else {
        return Ok(());
    };
    if most_held(size) <= budget {
        return Ok(());
    }
    let part = zip.by_index(index).map_err(|e| unreadable("XLSX", e))?;
    count_shared_strings(part, budget)
}

/// Counts the shared strings and their text, streaming the part (memory
/// stays a buffer), and refuses the table once what calamine would hold
/// passes `budget` bytes.
fn count_shared_strings(part: impl Read, budget: u64) -> Result<(), FileError> {
    use quick_xml::events::Event;
    let mut xml = quick_xml::Reader::from_reader(BufReader::new(part));
    let mut buf = Vec::new();
    let (mut strings, mut text) = (0u64, 0u64);
    loop {
        match xml
            .read_event_into(&mut buf)
            .map_err(|e| unreadable("XLSX", e))?
        {
            Event::Start(e) | Event::Empty(e) if e.local_name().as_ref() == "si" => strings += 1,
            Event::Text(t) => text += t.len() as u64,
            Event::CData(t) => text += t.len() as u64,
            Event::Eof => return Ok(()),
            _ => {}
        }
        let cost = text.saturating_add(strings.saturating_mul(STRING_OVERHEAD));
        if cost > budget {
            return Err(FileError::new(
                FileCode::Unreadable,
                format!(
                    "the XLSX's shared string table holds more than {strings} strings and \
                     {text} bytes of text, over {} MiB in memory; at most {} MiB are accepted \
                     (split the workbook, or save it as CSV)",
                    budget >> 20,
                    budget >> 20
                ),
            ));
        }
        buf.clear();
    }
}

/// Reads the zip's end-of-central-directory record by hand (the zip crate
/// reads the whole directory into memory before it says how big it is) and
/// refuses directories an XLSX never has. ZIP64 records are left to the
/// zip crate.
fn check_directory(file: &mut File, len: u64, kind: &str) -> Result<(), FileError> {
    const EOCD: &[u8] = b"PK\x05\x06";
    let tail_len = len.min(22 + 65_535);
    file.seek(SeekFrom::Start(len - tail_len))
        .map_err(read_error)?;
    let mut tail = vec![0u8; tail_len as usize];
    file.read_exact(&mut tail).map_err(read_error)?;
    let Some(at) = tail.windows(4).rposition(|w| w == EOCD) else {
        return Err(FileError::new(
            FileCode::Unreadable,
            format!(
                "the file is not readable as {kind}: its zip directory is missing \
                 (the file is cut off?)"
            ),
        ));
    };
    let record = &tail[at..];
    if record.len() < 22 {
        return Err(FileError::new(
            FileCode::Unreadable,
            format!("the file is not readable as {kind}: its zip directory is cut off"),
        ));
    }
    let entries = u16::from_le_bytes([record[10], record[11]]) as u64;
    let size = u32::from_le_bytes([record[12], record[13], record[14], record[15]]) as u64;
    let zip64 = entries == 0xFFFF || size == 0xFFFF_FFFF;
    if !zip64 && (entries > MAX_ENTRIES || size > MAX_DIRECTORY_BYTES) {
        return Err(FileError::new(
            FileCode::Unreadable,
            format!(
                "the {kind}'s zip holds {entries} parts in a {size}-byte directory; \
                 a workbook has far fewer"
            ),
        ));
    }
    Ok(())
}

/// Builds rows from cells that arrive row by row, left to right: the
/// header is the first row with a value, rows without one are skipped,
/// and row numbers are the sheet's. Every spreadsheet reader shares it.
pub(super) struct Assembler<'a> {
    emit: &'a Emit,
    max_columns: usize,
    /// The sheet row being built (0-based) and its cells.
    current: Option<u32>,
    cells: Vec<Cell>,
    header: Option<usize>,
}

impl<'a> Assembler<'a> {
    pub(super) fn new(emit: &'a Emit, max_columns: usize) -> Assembler<'a> {
        Assembler {
            emit,
            max_columns: if max_columns == 0 {
                16_384
            } else {
                max_columns
            },
            current: None,
            cells: Vec::new(),
            header: None,
        }
    }

    pub(super) fn cell(&mut self, row: u32, column: u32, cell: Cell) -> Result<(), FileError> {
        if self.current != Some(row) {
            self.flush()?;
            self.current = Some(row);
        }
        if cell == Cell::Empty {
            return Ok(());
        }
        let column = column as usize;
        // Cells far right of the header can only be "more cells than the
        // header" errors; one past the limit is enough to report that.
        let cap = self.header.unwrap_or(self.max_columns) + self.max_columns;
        if column >= cap {
            if self.header.is_none() {
                return Err(too_many_columns(self.max_columns));
            }
            if self.cells.len() <= cap {
                self.cells.resize(cap, Cell::Empty);
                self.cells.push(cell);
            }
            return Ok(());
        }
        if self.cells.len() <= column {
            self.cells.resize(column + 1, Cell::Empty);
        }
        self.cells[column] = cell;
        Ok(())
    }

    fn flush(&mut self) -> Result<(), FileError> {
        let Some(row) = self.current.take() else {
            return Ok(());
        };
        let cells = std::mem::take(&mut self.cells);
        if cells.iter().all(|c| *c == Cell::Empty) {
            return Ok(());
        }
        match self.header {
            None => {
                if cells.len() > self.max_columns {
                    return Err(too_many_columns(self.max_columns));
                }
                self.header = Some(cells.len());
                let header = cells.iter().map(header_text).collect();
                self.emit.send(Item::Header(header))
            }
            Some(_) => self.emit.send(Item::Row(RawRow {
                row: row as u64 + 1,
                cells,
            })),
        }
    }

    pub(super) fn finish(mut self) -> Result<(), FileError> {
        self.flush()
    }
}

fn too_many_columns(max: usize) -> FileError {
    FileError::new(
        FileCode::TooManyColumns,
        format!("the header has more than {max} columns; at most {max} are accepted"),
    )
}

/// A spreadsheet value as a cell.
fn convert(value: &Data) -> Cell {
    match value {
        Data::Empty => Cell::Empty,
        Data::String(s) | Data::DateTimeIso(s) | Data::DurationIso(s) => text(s),
        Data::Int(i) => Cell::Int(*i),
        Data::Float(f) => number(*f),
        Data::Bool(b) => Cell::Bool(*b),
        Data::DateTime(d) => excel_date(d),
        Data::Error(e) => Cell::Error(e.to_string()),
    }
}

/// An XLSX cell as calamine streams it, read where it lies: its text is
/// copied once, where going through calamine's owned `Data` copied it
/// twice.
fn convert_ref(value: &DataRef) -> Cell {
    match value {
        DataRef::Empty => Cell::Empty,
        DataRef::SharedString(s) => text(*s),
        DataRef::String(s) | DataRef::DateTimeIso(s) | DataRef::DurationIso(s) => text(s),
        DataRef::Int(i) => Cell::Int(*i),
        DataRef::Float(f) => number(*f),
        DataRef::Bool(b) => Cell::Bool(*b),
        DataRef::DateTime(d) => excel_date(d),
        DataRef::Error(e) => Cell::Error(e.to_string()),
    }
}

/// A date cell's value: a duration is its number of days.
fn excel_date(d: &calamine::ExcelDateTime) -> Cell {
    if d.is_duration() {
        return Cell::Float(d.as_f64());
    }
    match d.as_datetime() {
        Some(dt) => date_time(dt),
        None => Cell::Error(format!("{} is not a date", d.as_f64())),
    }
}

/// A text cell; only spaces is empty. Owned text is kept; borrowed text
/// (a streamed cell's) is copied only when it is not blank.
pub(super) fn text<S: AsRef<str> + Into<String>>(s: S) -> Cell {
    if s.as_ref().trim().is_empty() {
        Cell::Empty
    } else {
        Cell::Text(s.into())
    }
}

/// A number cell. Spreadsheets keep every number as a double: a whole one
/// is an integer, as the person typed it.
pub(super) fn number(f: f64) -> Cell {
    if f.fract() == 0.0 && f.abs() < 9_007_199_254_740_992.0 {
        Cell::Int(f as i64)
    } else {
        Cell::Float(f)
    }
}

/// A date cell: a date when its time is midnight, else a date-time.
pub(super) fn date_time(dt: chrono::NaiveDateTime) -> Cell {
    if dt.time() == NaiveTime::MIN {
        Cell::Date(dt.date())
    } else {
        Cell::DateTime(dt)
    }
}

/// A header cell as text.
fn header_text(cell: &Cell) -> String {
    cell.plain_text().trim().to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    /// A zip with one small part whose directory entry claims `declared` bytes.
    fn zip_claiming(name: &str, declared: u32) -> File {
        let mut out = zip::ZipWriter::new(std::io::Cursor::new(Vec::new()));
        let options = zip::write::SimpleFileOptions::default()
            .compression_method(zip::CompressionMethod::Deflated);
        out.start_file(name, options).unwrap();
        out.write_all(&[b' '; 1000]).unwrap();
        let mut bytes = out.finish().unwrap().into_inner();
        let at = bytes.windows(4).rposition(|w| w == b"PK\x01\x02").unwrap();
        bytes[at + 24..at + 28].copy_from_slice(&declared.to_le_bytes());
        let mut file = tempfile::tempfile().unwrap();
        file.write_all(&bytes).unwrap();
        file
    }

    #[test]
    fn declared_sizes_are_checked_before_inflating() {
        let ok = zip_claiming("xl/sharedStrings.xml", 1000);
        assert!(check_zip(&ok, "XLSX", MAX_RATIO).is_ok());
        let strings = zip_claiming("xl/sharedStrings.xml", 300 << 20);
        let err = check_zip(&strings, "XLSX", MAX_RATIO).unwrap_err();
        assert!(
            err.message.contains("shared string table"),
            "{}",
            err.message
        );
        let bomb = zip_claiming("xl/worksheets/sheet1.xml", 300 << 20);
        let err = check_zip(&bomb, "XLSX", MAX_RATIO).unwrap_err();
        assert!(err.message.contains("would expand"), "{}", err.message);
    }

    /// A workbook part of `n` one-letter shared strings.
    fn shared_strings(n: usize) -> File {
        shared_strings_of(b"<si><t>a</t></si>", n)
    }

    /// A workbook part of `n` shared strings written as `string`.
    fn shared_strings_of(string: &[u8], n: usize) -> File {
        let mut out = zip::ZipWriter::new(std::io::Cursor::new(Vec::new()));
        let options = zip::write::SimpleFileOptions::default()
            .compression_method(zip::CompressionMethod::Deflated);
        out.start_file("xl/sharedStrings.xml", options).unwrap();
        out.write_all(b"<?xml version=\"1.0\"?><sst xmlns=\"x\">")
            .unwrap();
        out.write_all(&string.repeat(n)).unwrap();
        out.write_all(b"</sst>").unwrap();
        let mut file = tempfile::tempfile().unwrap();
        file.write_all(&out.finish().unwrap().into_inner()).unwrap();
        file
    }

    #[test]
    fn the_shared_strings_memory_is_counted_not_only_their_size() {
        // 100,000 one-letter strings: 1.7 MB of XML (the size cap is
        // 256 MiB), about 6.5 MB in memory: refused under a 4 MiB budget.
        let many = shared_strings(100_000);
        let err = check_shared_strings(&many, 4 << 20).unwrap_err();
        assert!(err.message.contains("in memory"), "{}", err.message);
        assert!(check_shared_strings(&many, 8 << 20).is_ok());
        assert!(check_shared_strings(&shared_strings(10), 1 << 20).is_ok());
    }

    /// What the shared strings of `file` cost, counted (no bound from the
    /// size): `Ok` under `budget`.
    fn counted(file: &File, budget: u64) -> Result<(), FileError> {
        let mut zip = zip::ZipArchive::new(BufReader::new(spool::reopen(file).unwrap())).unwrap();
        count_shared_strings(zip.by_name("xl/sharedStrings.xml").unwrap(), budget)
    }

    #[test]
    fn a_table_passed_by_its_size_is_one_its_count_would_pass() {
        // The smallest strings there are (`<si/>`, all overhead) and
        // one-letter ones, at budgets on both sides of the size's bound.
        let empty = |n| shared_strings_of(b"<si/>", n);
        let (mut by_size, mut by_count) = (0, 0);
        for file in [empty(20_000), empty(100_000), shared_strings(20_000)] {
            let mut zip =
                zip::ZipArchive::new(BufReader::new(spool::reopen(&file).unwrap())).unwrap();
            let size = zip.by_name("xl/sharedStrings.xml").unwrap().size();
            let bound = most_held(size);
            for budget in (1..=20).map(|half_mib| half_mib << 19) {
                let checked = check_shared_strings(&file, budget).is_ok();
                assert_eq!(checked, counted(&file, budget).is_ok(), "budget {budget}");
                if bound <= budget {
                    by_size += 1;
                } else {
                    by_count += 1;
                }
            }
        }
        // Both ways were taken.
        assert!(by_size > 0 && by_count > 0, "{by_size} {by_count}");
        let err = check_shared_strings(&empty(100_000), 4 << 20).unwrap_err();
        assert!(err.message.contains("in memory"), "{}", err.message);
    }

    #[test]
    fn whole_numbers_are_integers_and_dates_are_dates() {
        assert_eq!(convert(&Data::Float(12.0)), Cell::Int(12));
        assert_eq!(convert(&Data::Float(12.5)), Cell::Float(12.5));
        assert_eq!(convert(&Data::Float(1e300)), Cell::Float(1e300));
        assert_eq!(convert(&Data::String("  ".into())), Cell::Empty);
        let day =
            calamine::ExcelDateTime::new(45382.0, calamine::ExcelDateTimeType::DateTime, false);
        assert_eq!(
            convert(&Data::DateTime(day)),
            Cell::Date(chrono::NaiveDate::from_ymd_opt(2024, 3, 31).unwrap())
        );
        let noon =
            calamine::ExcelDateTime::new(45382.5, calamine::ExcelDateTimeType::DateTime, false);
        assert!(matches!(convert(&Data::DateTime(noon)), Cell::DateTime(_)));
    }

    #[test]
    fn a_streamed_cell_reads_as_its_owned_value_does() {
        let day =
            calamine::ExcelDateTime::new(45382.0, calamine::ExcelDateTimeType::DateTime, false);
        let hours =
            calamine::ExcelDateTime::new(1.5, calamine::ExcelDateTimeType::TimeDelta, false);
        for value in [
            DataRef::Empty,
            DataRef::SharedString("Budi Santoso"),
            DataRef::SharedString(" \t "),
            DataRef::String("Jl. Merdeka 1".into()),
            DataRef::DateTimeIso("2024-03-31T10:00:00".into()),
            DataRef::DurationIso("PT1H".into()),
            DataRef::Int(-7),
            DataRef::Float(12.0),
            DataRef::Float(0.25),
            DataRef::Bool(true),
            DataRef::DateTime(day),
            DataRef::DateTime(hours),
            DataRef::Error(calamine::CellErrorType::NA),
        ] {
            let owned = convert(&Data::from(value.clone()));
            assert_eq!(convert_ref(&value), owned, "{value:?}");
        }
        assert_eq!(
            convert_ref(&DataRef::SharedString("Budi")),
            Cell::Text("Budi".into())
        );
    }
}
