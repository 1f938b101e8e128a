//! OpenDocument spreadsheets (`.ods`, LibreOffice's own format), streamed
//! from the zip's `content.xml` one row at a time.
//!
//! calamine reads ODS too, but not in a way a service can take from
//! strangers: it builds every sheet of the workbook as two dense grids
//! (values and formulas) when it opens the file (a 100,000-row, 8-column
//! sheet peaked at 100 MB in calamine alone, where the XLSX reader holds
//! one row), it reads an error cell (`#DIV/0!`) as text, and quick-xml
//! hands it a whole element or text node at once, however long. So the
//! XML is read here with quick-xml, the parser calamine uses, into the
//! same row assembly as XLSX (`xlsx::Assembler`): the same header, row
//! number, blank row and column rules, and the same cell conversions.
//!
//! Memory is bounded by the limits, not the file: the zip directory is
//! checked before anything is inflated (as for XLSX), the bytes of XML
//! read for one row count against a budget (a huge cell or tag stops
//! there), nesting is limited, and the `number-rows-repeated` and
//! `number-columns-repeated` shorthands are expanded only as far as rows
//! and columns can be used.

use std::fs::File;
use std::io::{BufReader, Read};

use quick_xml::XmlVersion;
use quick_xml::events::{BytesStart, Event};

use super::budget::{self, Budget, Limited};
use super::xlsx::{self, Assembler};
use super::{Cell, FileCode, FileError, Options, RowSource, produce, spool};

/// What the `mimetype` entry of an ODS holds.
pub const MIMETYPE: &[u8] = b"application/vnd.oasis.opendocument.spreadsheet";
/// The most an ODS may expand relative to its own size. Higher than
/// XLSX's 100: ODS spells every cell out in verbose XML and has no shared
/// string table, so it deflates further (LibreOffice's file of 100,000
/// rows with constant columns: 94 times). `content.xml` is streamed, so
/// the ratio bounds the work per uploaded byte, not memory.
pub const MAX_RATIO: u64 = 250;
/// Deeper XML is refused: LibreOffice nests a cell's text about 15
/// levels down (outline groups of rows add up to 8).
pub const MAX_DEPTH: usize = 100;
/// The last row a sheet has (LibreOffice's and Excel's 1,048,576): a
/// repeated row that reaches past it is refused, so a few bytes of
/// `number-rows-repeated` cannot ask for more rows than any sheet holds.
pub const MAX_ROWS: u64 = 1 << 20;
/// Sheets in one workbook (LibreOffice's own limit is 10,000).
const MAX_SHEETS: usize = 10_000;
/// Sheet names kept for the `unknown_sheet` message are cut to this.
const NAME_SHOWN: usize = 100;

const XML: XmlVersion = XmlVersion::Implicit1_0;

/// Whether a zip's first bytes hold an ODS: its `mimetype` entry (first
/// and stored, as ODF requires, but looked for among every entry whose
/// size is known within `prefix`, and inflated if a writer deflated it)
/// names the ODS type. Only `prefix` is read, never the whole file.
pub fn is_ods(prefix: &[u8]) -> bool {
    let u16_at = |at: usize| {
        prefix
            .get(at..at + 2)
            .map(|b| u16::from_le_bytes([b[0], b[1]]))
    };
    let u32_at = |at: usize| {
        prefix
            .get(at..at + 4)
            .map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
    };
    let mut at = 0usize;
    while prefix.get(at..at + 4) == Some(b"PK\x03\x04") {
        let (Some(flags), Some(size), Some(name_len), Some(extra_len)) = (
            u16_at(at + 6),
            u32_at(at + 18),
            u16_at(at + 26),
            u16_at(at + 28),
        ) else {
            return false;
        };
        let name_at = at + 30;
        let data_at = name_at + name_len as usize + extra_len as usize;
        if prefix.get(name_at..name_at + name_len as usize) == Some(b"mimetype") {
            let Some(entry) = prefix.get(at..) else {
                return false;
            };
            let mut entry = std::io::Cursor::new(entry);
            let Ok(Some(file)) = zip::read::read_zipfile_from_stream(&mut entry) else {
                return false;
            };
            let mut content = Vec::new();
            let read = file
                .take(MIMETYPE.len() as u64 + 8)
                .read_to_end(&mut content);
            return read.is_ok() && content.trim_ascii_end() == MIMETYPE;
        }
        // Sizes written after the data (bit 3): the next entry cannot be
        // found without inflating this one.
        if flags & 0x08 != 0 {
            return false;
        }
        at = data_at + size as usize;
    }
    false
}

pub fn open(reader: Box<dyn Read + Send>, options: &Options) -> Result<RowSource, FileError> {
    let wanted = options.sheet.clone();
    let max_columns = options.max_columns;
    let limits = Limits::new(options);
    produce(move |emit| {
        let file = spool::to_file(reader)?;
        xlsx::check_zip(&file, "ODS", MAX_RATIO)?;
        let mut zip = zip::ZipArchive::new(BufReader::new(spool::reopen(&file)?))
            .map_err(|e| xlsx::unreadable("ODS", e))?;
        check_package(&mut zip)?;
        let mut rows = Assembler::new(emit, max_columns);
        let target = match &wanted {
            None => Target::Index(0),
            Some(name) => Target::Name(name),
        };
        match read_sheet(&mut zip, target, &mut rows, &limits)? {
            Found::Read => {}
            // No sheet of that exact name, one in another case: read it
            // (a second pass, as only now is it known no exact one exists).
            Found::Not {
                folded: Some(index),
                ..
            } => {
                read_sheet(&mut zip, Target::Index(index), &mut rows, &limits)?;
            }
            Found::Not { names, .. } => {
                return Err(xlsx::pick_sheet(names, wanted.as_deref())
                    .err()
                    .unwrap_or_else(|| {
                        FileError::new(FileCode::Unreadable, "the sheet was not found")
                    }));
            }
        }
        rows.finish()
    })
}

/// The sheets of an ODS, in the workbook's order, their names whole: one
/// pass over `content.xml` that reads no sheet.
pub fn sheet_names(
    reader: Box<dyn Read + Send>,
    options: &Options,
) -> Result<Vec<String>, FileError> {
    let limits = Limits::new(options);
    let file = spool::to_file(reader)?;
    xlsx::check_zip(&file, "ODS", MAX_RATIO)?;
    let mut zip = zip::ZipArchive::new(BufReader::new(spool::reopen(&file)?))
        .map_err(|e| xlsx::unreadable("ODS", e))?;
    check_package(&mut zip)?;
    // No rows are read: the assembler's channel is never sent on.
    let (tx, _rx) = std::sync::mpsc::sync_channel(1);
    let emit = super::Emit {
        tx,
        pending: Default::default(),
    };
    let mut rows = Assembler::new(&emit, options.max_columns);
    match read_sheet(&mut zip, Target::None, &mut rows, &limits)? {
        Found::Not { names, .. } => Ok(names),
        Found::Read => Ok(vec![]),
    }
}

type Zip = zip::ZipArchive<BufReader<File>>;

/// Refuses what is not an ODS spreadsheet, or one that cannot be read
/// without its password, with a message that says so.
fn check_package(zip: &mut Zip) -> Result<(), FileError> {
    let mut mimetype = Vec::new();
    let found = match zip.by_name("mimetype") {
        Ok(entry) => entry
            .take(256)
            .read_to_end(&mut mimetype)
            .map_err(|e| xlsx::unreadable("ODS", e))?,
        Err(zip::result::ZipError::FileNotFound) => 0,
        Err(e) => return Err(xlsx::unreadable("ODS", e)),
    };
    if found == 0 {
        return Err(FileError::new(
            FileCode::Unreadable,
            "the file is not readable as ODS: its zip has no mimetype entry",
        ));
    }
    if mimetype.trim_ascii_end() != MIMETYPE {
        return Err(FileError::new(
            FileCode::Unreadable,
            format!(
                "the file is not readable as ODS: its mimetype is {:?}, not an OpenDocument \
                 spreadsheet's",
                String::from_utf8_lossy(&mimetype[..mimetype.len().min(100)])
            ),
        ));
    }
    // Encrypted parts are listed in the manifest; their XML is ciphertext.
    if let Ok(manifest) = zip.by_name("META-INF/manifest.xml") {
        let mut text = Vec::new();
        manifest
            .take(1 << 20)
            .read_to_end(&mut text)
            .map_err(|e| xlsx::unreadable("ODS", e))?;
        if text.windows(24).any(|w| w == b"manifest:encryption-data") {
            return Err(FileError::new(
                FileCode::Unreadable,
                "the ODS is protected by a password; save it without one and upload it again",
            ));
        }
    }
    Ok(())
}

/// Which sheet to read.
#[derive(Clone, Copy)]
enum Target<'a> {
    Index(usize),
    Name(&'a str),
    /// None: the sheets are only listed, their names whole.
    None,
}

/// What a pass over `content.xml` found.
enum Found {
    Read,
    /// No sheet read: the sheets' names, and the first whose name matches
    /// the one asked for in another case.
    Not {
        names: Vec<String>,
        folded: Option<usize>,
    },
}

/// The bounds of one reading.
struct Limits {
    /// XML bytes of one row (or of one element outside rows).
    xml_bytes: u64,
    /// Text held for one row, its repeated cells counted each time.
    row_bytes: u64,
    /// Columns kept: past the header's width plus `max_columns` a cell can
    /// only be an error (the assembler keeps one such cell).
    columns: u64,
}

impl Limits {
    fn new(options: &Options) -> Limits {
        let row_bytes = budget::record_bytes(options);
        let max_columns = if options.max_columns == 0 {
            16_384
        } else {
            options.max_columns
        };
        Limits {
            // A row's XML spells out its cells' markup and escapes; twice
            // the text every cell could hold leaves room for that.
            xml_bytes: row_bytes.saturating_mul(2),
            row_bytes,
            columns: 2 * max_columns as u64 + 1,
        }
    }
}

type Xml<'z> = quick_xml::Reader<BufReader<Limited<zip::read::ZipFile<'z, BufReader<File>>>>>;

/// One pass over `content.xml`: reads the target sheet into `rows`, or
/// lists the sheets.
fn read_sheet(
    zip: &mut Zip,
    target: Target,
    rows: &mut Assembler,
    limits: &Limits,
) -> Result<Found, FileError> {
    let content = match zip.by_name("content.xml") {
        Ok(content) => content,
        Err(zip::result::ZipError::FileNotFound) => {
            return Err(FileError::new(
                FileCode::Unreadable,
                "the file is not readable as ODS: it has no content.xml",
            ));
        }
        Err(e) => return Err(xlsx::unreadable("ODS", e)),
    };
    let budget = Budget::new(limits.xml_bytes);
    let mut xml: Xml = quick_xml::Reader::from_reader(BufReader::new(budget.reader(content)));
    xml.config_mut().expand_empty_elements = true;
    let mut buf = Vec::new();
    let mut names: Vec<String> = Vec::new();
    let mut folded = None;
    // Sheets are the tables directly in `office:spreadsheet`; a table in a
    // cell (ODF allows sub-tables) is that cell's content.
    let mut spreadsheet = None;
    let mut reading = Reading {
        budget: &budget,
        limits,
        depth: 0,
    };
    loop {
        buf.clear();
        let event = xml
            .read_event_into(&mut buf)
            .map_err(|e| reading.xml_error(e, None))?;
        match event {
            Event::Start(e) => {
                reading.depth += 1;
                reading.check_depth()?;
                let element = e.name();
                if element.as_ref() == "office:spreadsheet" && spreadsheet.is_none() {
                    spreadsheet = Some(reading.depth);
                } else if element.as_ref() == "table:table"
                    && spreadsheet.is_some_and(|d| reading.depth == d + 1)
                {
                    let name = attribute(&e, "table:name")?.unwrap_or_default();
                    let index = names.len();
                    if index >= MAX_SHEETS {
                        return Err(FileError::new(
                            FileCode::Unreadable,
                            format!("the ODS has more than {MAX_SHEETS} sheets"),
                        ));
                    }
                    let take = match target {
                        Target::Index(i) => i == index,
                        Target::Name(wanted) => {
                            if folded.is_none()
                                && name != wanted
                                && name.eq_ignore_ascii_case(wanted)
                            {
                                folded = Some(index);
                            }
                            name == wanted
                        }
                        Target::None => false,
                    };
                    if take {
                        reading.table(&mut xml, &mut buf, rows)?;
                        return Ok(Found::Read);
                    }
                    let shown = match target {
                        Target::None => name,
                        _ => name.chars().take(NAME_SHOWN).collect(),
                    };
                    names.push(shown);
                }
            }
            Event::End(_) => reading.depth = reading.depth.saturating_sub(1),
            Event::Eof => break,
            _ => {}
        }
        // Outside the sheet read, every element is a record of its own.
        budget.next_record(limits.xml_bytes);
    }
    Ok(Found::Not { names, folded })
}

/// The state shared by a pass.
struct Reading<'b> {
    budget: &'b Budget,
    limits: &'b Limits,
    /// The current element's depth in the document.
    depth: usize,
}

/// A row being read.
struct Row {
    depth: usize,
    /// The sheet's 0-based row index of this row, and how often it repeats.
    index: u64,
    repeat: u64,
    /// The next cell's column.
    column: u64,
    /// The cells with a value: (column, cell).
    cells: Vec<(u32, Cell)>,
    /// Text held in `cells`.
    held: u64,
}

impl Reading<'_> {
    fn check_depth(&self) -> Result<(), FileError> {
        if self.depth > MAX_DEPTH {
            return Err(FileError::new(
                FileCode::Unreadable,
                format!("the ODS's XML is nested deeper than {MAX_DEPTH} levels"),
            ));
        }
        Ok(())
    }

    /// A parse failure in the row of index `row` (or outside rows): the
    /// budget's own message when the XML went past it, else the parser's.
    fn xml_error(&self, e: quick_xml::Error, row: Option<u64>) -> FileError {
        let at = match row {
            Some(row) => format!("row {}", row + 1),
            None => "an element of content.xml".to_string(),
        };
        if let quick_xml::Error::Io(io) = &e
            && let Some(over) = budget::over_budget(io, &at, self.limits.xml_bytes)
        {
            return over;
        }
        xlsx::unreadable("ODS", format!("{at}: {e}"))
    }

    fn row_too_long(&self, row: u64) -> FileError {
        FileError::new(
            FileCode::Unreadable,
            format!(
                "row {} is longer than {} bytes, more than all its cells at their size limit \
                 could be",
                row + 1,
                self.limits.row_bytes
            ),
        )
    }

    /// Reads the rows of the sheet whose start tag was just read, up to its
    /// end tag, into `rows`.
    fn table(
        &mut self,
        xml: &mut Xml,
        buf: &mut Vec<u8>,
        rows: &mut Assembler,
    ) -> Result<(), FileError> {
        let table = self.depth;
        let mut next_row = 0u64;
        let mut row: Option<Row> = None;
        let mut cell: Option<CellReader> = None;
        loop {
            buf.clear();
            let event = xml
                .read_event_into(buf)
                .map_err(|e| self.xml_error(e, Some(next_row)))?;
            match event {
                Event::Start(e) => {
                    self.depth += 1;
                    self.check_depth()?;
                    let name = e.name();
                    let name = name.as_ref();
                    if let Some(c) = &mut cell {
                        c.start(&e, self.depth, self.limits.row_bytes)
                            .map_err(|e| e.unwrap_or_else(|| self.row_too_long(next_row)))?;
                    } else if let Some(r) = &row {
                        if self.depth == r.depth + 1
                            && (name == "table:table-cell" || name == "table:covered-table-cell")
                        {
                            cell = Some(CellReader::new(&e, self.depth)?);
                        }
                    } else if name == "table:table-row" {
                        row = Some(Row {
                            depth: self.depth,
                            index: next_row,
                            repeat: count(&e, "table:number-rows-repeated")?,
                            column: 0,
                            cells: Vec::new(),
                            held: 0,
                        });
                    }
                }
                Event::End(_) => {
                    let depth = self.depth;
                    self.depth = self.depth.saturating_sub(1);
                    if cell.as_ref().is_some_and(|c| depth > c.depth) {
                        if let Some(c) = &mut cell {
                            c.end(depth);
                        }
                    } else if let Some(c) = cell.take() {
                        if let Some(r) = &mut row {
                            self.place(r, c)?;
                        }
                    } else if let Some(r) = row.take_if(|r| r.depth == depth) {
                        next_row = self.emit(r, rows)?;
                    } else if depth == table {
                        return Ok(());
                    }
                }
                Event::Text(t) => {
                    if let Some(c) = &mut cell {
                        c.text(&t.xml10_content(), self.limits.row_bytes)
                            .map_err(|()| self.row_too_long(next_row))?;
                    }
                }
                Event::CData(t) => {
                    if let Some(c) = &mut cell {
                        c.text(&t.xml10_content(), self.limits.row_bytes)
                            .map_err(|()| self.row_too_long(next_row))?;
                    }
                }
                Event::GeneralRef(r) => {
                    if let Some(c) = &mut cell {
                        let resolved = match quick_xml::escape::resolve_xml_entity(&r) {
                            Some(s) => Some(s.to_string()),
                            None => r.resolve_char_ref().ok().flatten().map(String::from),
                        };
                        let Some(text) = resolved else {
                            return Err(xlsx::unreadable(
                                "ODS",
                                format!(
                                    "row {}: the entity &{}; is not defined",
                                    next_row + 1,
                                    &*r
                                ),
                            ));
                        };
                        c.text(&text, self.limits.row_bytes)
                            .map_err(|()| self.row_too_long(next_row))?;
                    }
                }
                Event::Eof => {
                    return Err(xlsx::unreadable(
                        "ODS",
                        "content.xml ends inside a sheet (the file is cut off?)",
                    ));
                }
                _ => {}
            }
            // Between rows, every element is a record of its own.
            if row.is_none() {
                self.budget.next_record(self.limits.xml_bytes);
            }
        }
    }

    /// Puts a finished cell into its row, as often as it repeats (as far
    /// as columns are kept).
    fn place(&self, row: &mut Row, cell: CellReader) -> Result<(), FileError> {
        let at = row.column;
        row.column = at.saturating_add(cell.repeat);
        let value = cell.value();
        if value == Cell::Empty || at >= self.limits.columns {
            return Ok(());
        }
        let size = match &value {
            Cell::Text(s) | Cell::Error(s) => s.len() as u64,
            _ => 0,
        };
        let end = row.column.min(self.limits.columns);
        row.held = row.held.saturating_add(size.saturating_mul(end - at));
        if row.held > self.limits.row_bytes {
            return Err(self.row_too_long(row.index));
        }
        for column in at..end {
            row.cells.push((column as u32, value.clone()));
        }
        Ok(())
    }

    /// Hands a finished row to the assembler, once per repetition; gives
    /// the index of the next row.
    fn emit(&self, row: Row, rows: &mut Assembler) -> Result<u64, FileError> {
        let next = row.index.saturating_add(row.repeat);
        if row.cells.is_empty() {
            return Ok(next);
        }
        if next > MAX_ROWS {
            return Err(FileError::new(
                FileCode::Unreadable,
                format!(
                    "row {} repeats past row {MAX_ROWS}, the last a sheet has",
                    row.index + 1
                ),
            ));
        }
        for index in row.index..next {
            for (column, cell) in &row.cells {
                rows.cell(index as u32, *column, cell.clone())?;
            }
        }
        Ok(next)
    }
}

/// A cell being read: its attributes, then its paragraphs' text.
struct CellReader {
    depth: usize,
    repeat: u64,
    value_type: Option<String>,
    /// `office:value`, `office:date-value`, … : the one its type reads.
    value: Option<String>,
    string_value: Option<String>,
    error: bool,
    /// The text of its paragraphs (`text:p` children), joined by line breaks.
    text: String,
    /// The depth of the paragraph being read, if any.
    paragraph: Option<usize>,
    paragraphs: usize,
}

impl CellReader {
    /// From the cell's start tag, its attributes read in one pass (this
    /// runs for every cell of the sheet).
    fn new(e: &BytesStart, depth: usize) -> Result<CellReader, FileError> {
        let mut cell = CellReader {
            depth,
            repeat: 1,
            value_type: None,
            value: None,
            string_value: None,
            error: false,
            text: String::new(),
            paragraph: None,
            paragraphs: 0,
        };
        let (mut number, mut date, mut time, mut boolean) = (None, None, None, None);
        for attr in e.attributes() {
            let attr = attr.map_err(|err| xlsx::unreadable("ODS", err))?;
            let slot = match attr.key.as_ref() {
                "office:value-type" => &mut cell.value_type,
                "office:value" => &mut number,
                "office:date-value" => &mut date,
                "office:time-value" => &mut time,
                "office:boolean-value" => &mut boolean,
                "office:string-value" => &mut cell.string_value,
                "calcext:value-type" => {
                    cell.error = &*attr.value == "error";
                    continue;
                }
                "table:number-columns-repeated" => {
                    cell.repeat = count_of("table:number-columns-repeated", &attr.value)?;
                    continue;
                }
                _ => continue,
            };
            let value = attr
                .normalized_value(XML)
                .map_err(|err| xlsx::unreadable("ODS", err))?;
            *slot = Some(value.into_owned());
        }
        cell.value = match cell.value_type.as_deref() {
            Some("date") => date,
            Some("time") => time,
            Some("boolean") => boolean,
            _ => number,
        };
        Ok(cell)
    }

    /// An element inside the cell. Only the cell's own paragraphs are its
    /// text: a comment (`office:annotation`) or a shape anchored to the
    /// cell holds paragraphs of its own, one level further down.
    /// `Err(None)`: the text would pass `limit`.
    fn start(&mut self, e: &BytesStart, depth: usize, limit: u64) -> Result<(), Option<FileError>> {
        let name = e.name();
        match name.as_ref() {
            "text:p" | "text:h" if depth == self.depth + 1 => {
                self.paragraph = Some(depth);
                if self.paragraphs > 0 {
                    self.text("\n", limit).map_err(|()| None)?;
                }
                self.paragraphs += 1;
            }
            "text:s" if self.paragraph.is_some() => {
                let spaces = count(e, "text:c").map_err(Some)?;
                if self.text.len() as u64 + spaces > limit {
                    return Err(None);
                }
                self.text.extend(std::iter::repeat_n(' ', spaces as usize));
            }
            "text:tab" if self.paragraph.is_some() => self.text("\t", limit).map_err(|()| None)?,
            "text:line-break" if self.paragraph.is_some() => {
                self.text("\n", limit).map_err(|()| None)?
            }
            _ => {}
        }
        Ok(())
    }

    fn end(&mut self, depth: usize) {
        if self.paragraph == Some(depth) {
            self.paragraph = None;
        }
    }

    /// Text inside the cell; kept when it is inside one of its paragraphs.
    fn text(&mut self, text: &str, limit: u64) -> Result<(), ()> {
        if self.paragraph.is_none() {
            return Ok(());
        }
        if (self.text.len() + text.len()) as u64 > limit {
            return Err(());
        }
        self.text.push_str(text);
        Ok(())
    }

    /// The cell's value, by its type (ODF 1.3 part 3, 19.389): numbers,
    /// percentages and currencies are numbers, dates dates, times
    /// durations (a number of days, as XLSX gives a duration); a formula's
    /// cached value is read like any other; an error (LibreOffice's
    /// `calcext:value-type="error"`) is an error cell showing its text.
    fn value(self) -> Cell {
        if self.error {
            return Cell::Error(if self.text.is_empty() {
                "an error value".into()
            } else {
                self.text
            });
        }
        let value = self.value.as_deref().map(str::trim);
        match (self.value_type.as_deref(), value) {
            (Some("float" | "percentage" | "currency"), Some(v)) => match v.parse::<f64>() {
                Ok(f) if f.is_finite() => xlsx::number(f),
                _ => Cell::Error(format!("{v:?} is not a number")),
            },
            (Some("date"), Some(v)) => match date_value(v) {
                Some(dt) => xlsx::date_time(dt),
                None => Cell::Error(format!("{v:?} is not a date")),
            },
            (Some("time"), Some(v)) => match duration_days(v) {
                Some(days) => Cell::Float(days),
                None => Cell::Error(format!("{v:?} is not a duration")),
            },
            (Some("boolean"), Some(v)) => match v {
                "true" | "1" => Cell::Bool(true),
                "false" | "0" => Cell::Bool(false),
                other => Cell::Error(format!("{other:?} is not a boolean")),
            },
            // A string cell's value is its attribute if it has one (a
            // formula's result), else its paragraphs. A typed cell without
            // its value, or a cell of no type, shows its text.
            (Some("string"), _) => xlsx::text(self.string_value.unwrap_or(self.text)),
            _ => xlsx::text(self.text),
        }
    }
}

/// An attribute's value, unescaped.
fn attribute(e: &BytesStart, name: &str) -> Result<Option<String>, FileError> {
    for attr in e.attributes() {
        let attr = attr.map_err(|err| xlsx::unreadable("ODS", err))?;
        if attr.key.as_ref() == name {
            let value = attr
                .normalized_value(XML)
                .map_err(|err| xlsx::unreadable("ODS", err))?;
            return Ok(Some(value.into_owned()));
        }
    }
    Ok(None)
}

/// A repetition count (`number-rows-repeated`, `number-columns-repeated`,
/// `text:c`): 1 when absent; a count of 0 or one that is not a number is
/// malformed.
fn count(e: &BytesStart, name: &str) -> Result<u64, FileError> {
    match e.try_get_attribute(name) {
        Ok(None) => Ok(1),
        Ok(Some(attr)) => count_of(name, &attr.value),
        Err(err) => Err(xlsx::unreadable("ODS", err)),
    }
}

/// A count's raw value: digits, at least 1.
fn count_of(name: &str, raw: &str) -> Result<u64, FileError> {
    let text = raw.trim();
    match digits::<u64>(text) {
        Some(n) if n > 0 => Ok(n),
        _ => Err(xlsx::unreadable(
            "ODS",
            format!(
                "{name} is {:?}, not a count",
                raw.chars().take(40).collect::<String>()
            ),
        )),
    }
}

/// An `office:date-value`: `YYYY-MM-DD`, optionally `THH:MM:SS[.fff]`
/// (xsd:dateTime as LibreOffice writes it, without a zone). A year may have
/// more than four digits or a sign; the type rules then say it is out of
/// range.
fn date_value(v: &str) -> Option<chrono::NaiveDateTime> {
    let (date, time) = match v.split_once('T') {
        Some((d, t)) => (d, Some(t)),
        None => (v, None),
    };
    let (negative, date) = match date.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, date),
    };
    let mut parts = date.splitn(3, '-');
    let year: i32 = digits(parts.next()?)?;
    let month: u32 = digits(parts.next()?)?;
    let day: u32 = digits(parts.next()?)?;
    let year = if negative { -year } else { year };
    let date = chrono::NaiveDate::from_ymd_opt(year, month, day)?;
    let time = match time {
        None => chrono::NaiveTime::MIN,
        Some(t) => {
            let (hms, fraction) = match t.split_once('.') {
                Some((hms, f)) => (hms, Some(f)),
                None => (t, None),
            };
            let mut parts = hms.splitn(3, ':');
            let (h, m, s): (u32, u32, u32) = (
                digits(parts.next()?)?,
                digits(parts.next()?)?,
                digits(parts.next()?)?,
            );
            let nanos = match fraction {
                None => 0,
                Some(f) if !f.is_empty() && f.bytes().all(|b| b.is_ascii_digit()) => {
                    // The first nine digits are nanoseconds.
                    let f = &f[..f.len().min(9)];
                    f.parse::<u32>().ok()? * 10u32.pow(9 - f.len() as u32)
                }
                Some(_) => return None,
            };
            chrono::NaiveTime::from_hms_nano_opt(h, m, s, nanos)?
        }
    };
    Some(date.and_time(time))
}

/// Plain ASCII digits as a number (no sign, no spaces).
fn digits<T: std::str::FromStr>(s: &str) -> Option<T> {
    if s.is_empty() || !s.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    s.parse().ok()
}

/// An `office:time-value` (xsd:duration, `PT12H30M00S`, `-P1DT2H`) as a
/// number of days. Years and months have no fixed length: refused.
fn duration_days(v: &str) -> Option<f64> {
    let (negative, v) = match v.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, v),
    };
    let v = v.strip_prefix('P')?;
    let (days, time) = match v.split_once('T') {
        Some((d, t)) => (d, t),
        None => (v, ""),
    };
    let mut seconds = 0f64;
    if !days.is_empty() {
        seconds += digits::<u64>(days.strip_suffix('D')?)? as f64 * 86_400.0;
    }
    let mut rest = time;
    let mut any = !days.is_empty();
    for (unit, scale) in [('H', 3_600.0), ('M', 60.0), ('S', 1.0)] {
        if let Some((number, after)) = rest.split_once(unit) {
            let n: f64 = if unit == 'S' {
                let ok = !number.is_empty()
                    && number.bytes().all(|b| b.is_ascii_digit() || b == b'.')
                    && number.bytes().filter(|&b| b == b'.').count() <= 1;
                if !ok {
                    return None;
                }
                number.parse().ok()?
            } else {
                digits::<u64>(number)? as f64
            };
            seconds += n * scale;
            rest = after;
            any = true;
        }
    }
    if !rest.is_empty() || !any {
        return None;
    }
    let days = seconds / 86_400.0;
    Some(if negative { -days } else { days })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ingest::{Format, RawRow};
    use chrono::NaiveDate;

    /// The fuzz seed with every feature the reader knows: two sheets, row
    /// groups and header rows, repeated rows and cells, a covered cell,
    /// paragraphs, spaces, entities, a comment, every value type, an error
    /// cell, and the trailing empty rows LibreOffice writes.
    const FEATURES: &[u8] = include_bytes!("../../fuzz/seeds/ods/features_stored.ods");

    fn options(sheet: Option<&str>) -> Options {
        Options {
            max_cell_bytes: 64 * 1024,
            max_columns: 512,
            sheet: sheet.map(String::from),
            ..Options::default()
        }
    }

    fn read(bytes: &[u8], sheet: Option<&str>) -> Result<(Vec<String>, Vec<RawRow>), FileError> {
        let source = crate::ingest::open(
            Format::Ods,
            Box::new(std::io::Cursor::new(bytes.to_vec())),
            &options(sheet),
        )?;
        let rows = source.rows.collect::<Result<Vec<_>, _>>()?;
        Ok((source.header, rows))
    }

    /// An ODS of one sheet named "S", of the rows `sheet`.
    fn ods(sheet: &str) -> Vec<u8> {
        package(MIMETYPE, sheet)
    }

    fn package(mimetype: &[u8], sheet: &str) -> Vec<u8> {
        package_with(mimetype, sheet, &[])
    }

    /// An ODS package with more parts (name, content).
    fn package_with(mimetype: &[u8], sheet: &str, parts: &[(&str, &str)]) -> Vec<u8> {
        let content = format!(
            "<?xml version=\"1.0\" encoding=\"UTF-8\"?><office:document-content \
             xmlns:office=\"urn:oasis:names:tc:opendocument:xmlns:office:1.0\" \
             xmlns:table=\"urn:oasis:names:tc:opendocument:xmlns:table:1.0\" \
             xmlns:text=\"urn:oasis:names:tc:opendocument:xmlns:text:1.0\"><office:body>\
             <office:spreadsheet><table:table table:name=\"S\">{sheet}</table:table>\
             </office:spreadsheet></office:body></office:document-content>"
        );
        let mut out = zip::ZipWriter::new(std::io::Cursor::new(Vec::new()));
        let stored = zip::write::SimpleFileOptions::default()
            .compression_method(zip::CompressionMethod::Stored);
        out.start_file("mimetype", stored).unwrap();
        std::io::Write::write_all(&mut out, mimetype).unwrap();
        out.start_file("content.xml", zip::write::SimpleFileOptions::default())
            .unwrap();
        std::io::Write::write_all(&mut out, content.as_bytes()).unwrap();
        for (name, part) in parts {
            out.start_file(*name, zip::write::SimpleFileOptions::default())
                .unwrap();
            std::io::Write::write_all(&mut out, part.as_bytes()).unwrap();
        }
        out.finish().unwrap().into_inner()
    }

    /// Reading a sheet of `rows` fails with a message holding `text`.
    fn fails(rows: &str, text: &str) -> FileError {
        let err = read(&ods(rows), None).unwrap_err();
        assert!(err.message.contains(text), "{}", err.message);
        err
    }

    const HEADER: &str = "<table:table-row><table:table-cell office:value-type=\"string\">\
        <text:p>a</text:p></table:table-cell></table:table-row>";

    #[test]
    fn cells_keep_their_types_and_rows_their_sheet_numbers() {
        let (header, rows) = read(FEATURES, None).unwrap();
        assert_eq!(header, ["t", "n", "d", "y", "b"]);
        let numbers: Vec<u64> = rows.iter().map(|r| r.row).collect();
        assert_eq!(
            numbers,
            [2, 3, 7],
            "a repeated row twice; blank rows skipped"
        );
        let at = NaiveDate::from_ymd_opt(2024, 3, 31)
            .unwrap()
            .and_hms_opt(7, 30, 0)
            .unwrap();
        let first = vec![
            Cell::Text("A  B\nsecond & line!".into()),
            Cell::Float(0.25),
            Cell::DateTime(at),
            Cell::Float(1.5),
            Cell::Bool(true),
        ];
        assert_eq!(rows[0].cells, first, "the comment is not the cell's text");
        assert_eq!(rows[1].cells, first);
        assert_eq!(
            rows[2].cells,
            vec![
                Cell::Int(15000),
                Cell::Int(15000),
                Cell::Empty,
                Cell::Date(NaiveDate::from_ymd_opt(2024, 2, 29).unwrap()),
                Cell::Error("#N/A".into()),
            ]
        );
    }

    #[test]
    fn sheets_are_picked_by_name_as_in_excel() {
        let (header, rows) = read(FEATURES, Some("data")).unwrap();
        assert_eq!((header.len(), rows.len()), (5, 3));
        // No exact match: the one in another case, found on a second pass.
        let (header, rows) = read(FEATURES, Some("NOTES")).unwrap();
        assert_eq!((header, rows.len()), (vec!["notes".to_string()], 0));
        let err = read(FEATURES, Some("Payroll")).unwrap_err();
        assert_eq!(err.code, FileCode::UnknownSheet);
        assert!(
            err.message.ends_with("its sheets are: data, Notes"),
            "{}",
            err.message
        );
        // A table inside a cell is the cell's content, not a sheet.
        let nested = format!(
            "{HEADER}<table:table-row><table:table-cell><table:table table:name=\"inner\">\
             <table:table-row><table:table-cell/></table:table-row></table:table>\
             </table:table-cell></table:table-row>"
        );
        let err = read(&ods(&nested), Some("inner")).unwrap_err();
        assert!(
            err.message.ends_with("its sheets are: S"),
            "{}",
            err.message
        );
    }

    #[test]
    fn repeats_are_expanded_only_as_far_as_they_can_be_used() {
        // A value repeated across a billion columns: one past the kept
        // columns is enough to report it.
        let wide = format!(
            "{HEADER}<table:table-row><table:table-cell office:value-type=\"float\" \
             office:value=\"1\" table:number-columns-repeated=\"1000000000\"/></table:table-row>"
        );
        let (_, rows) = read(&ods(&wide), None).unwrap();
        assert_eq!(rows.len(), 1);
        assert!(rows[0].cells.len() <= 1026, "{}", rows[0].cells.len());
        // A row repeated past the last row a sheet has.
        let tall = format!(
            "{HEADER}<table:table-row table:number-rows-repeated=\"2000000\">\
             <table:table-cell office:value-type=\"float\" office:value=\"1\"/></table:table-row>"
        );
        fails(&tall, "repeats past row 1048576");
        // Empty rows may repeat as far as they like (LibreOffice writes the
        // rest of the sheet so), and the row numbers after them follow.
        let gap = format!(
            "{HEADER}<table:table-row table:number-rows-repeated=\"1000\"><table:table-cell/>\
             </table:table-row><table:table-row><table:table-cell office:value-type=\"string\">\
             <text:p>x</text:p></table:table-cell></table:table-row>"
        );
        let (_, rows) = read(&ods(&gap), None).unwrap();
        assert_eq!(rows[0].row, 1002);
    }

    #[test]
    fn hostile_xml_is_unreadable() {
        let deep = format!(
            "{HEADER}<table:table-row><table:table-cell office:value-type=\"string\"><text:p>{}x{}\
             </text:p></table:table-cell></table:table-row>",
            "<text:span>".repeat(200),
            "</text:span>".repeat(200)
        );
        fails(&deep, "nested deeper than 100");
        let spaces = format!(
            "{HEADER}<table:table-row><table:table-cell office:value-type=\"string\"><text:p>\
             <text:s text:c=\"4000000000\"/></text:p></table:table-cell></table:table-row>"
        );
        fails(&spaces, "row 2 is longer than");
        let cut = format!("{HEADER}<table:table-row>");
        assert_eq!(fails(&cut, "ODS").code, FileCode::Unreadable);
        let bad_count = format!(
            "{HEADER}<table:table-row table:number-rows-repeated=\"-1\"><table:table-cell/>\
             </table:table-row>"
        );
        fails(&bad_count, "not a count");
        let not_ods = package(b"application/vnd.oasis.opendocument.text", HEADER);
        let err = read(&not_ods, None).unwrap_err();
        assert!(err.message.contains("its mimetype is"), "{}", err.message);
        let manifest = "<manifest:manifest><manifest:file-entry manifest:full-path=\"content.xml\">\
            <manifest:encryption-data/></manifest:file-entry></manifest:manifest>";
        let locked = package_with(MIMETYPE, HEADER, &[("META-INF/manifest.xml", manifest)]);
        let err = read(&locked, None).unwrap_err();
        assert!(err.message.contains("password"), "{}", err.message);
    }

    #[test]
    fn odf_dates_and_durations() {
        let dt = |s| date_value(s).map(|d| d.to_string());
        assert_eq!(dt("2024-03-31").as_deref(), Some("2024-03-31 00:00:00"));
        assert_eq!(
            dt("2024-03-31T07:30:00.25").as_deref(),
            Some("2024-03-31 07:30:00.250")
        );
        assert_eq!(dt("10000-01-01").as_deref(), Some("+10000-01-01 00:00:00"));
        assert_eq!(dt("-0001-01-01").as_deref(), Some("-0001-01-01 00:00:00"));
        for bad in [
            "2024-02-30",
            "2024-3",
            "",
            "2024-03-31T25:00:00",
            "+2024-01-01",
            "2024-01-01T1:2",
        ] {
            assert_eq!(dt(bad), None, "{bad}");
        }
        assert_eq!(duration_days("PT12H00M00S"), Some(0.5));
        assert_eq!(duration_days("-P1DT12H"), Some(-1.5));
        assert_eq!(duration_days("PT0.5S"), Some(0.5 / 86_400.0));
        for bad in ["P1Y", "PT", "P", "12H", "PT1H2", "PTxS"] {
            assert_eq!(duration_days(bad), None, "{bad}");
        }
    }

    #[test]
    fn the_mimetype_entry_says_ods() {
        let ods = |method| {
            let mut out = zip::ZipWriter::new(std::io::Cursor::new(Vec::new()));
            let options = zip::write::SimpleFileOptions::default();
            out.start_file("other", options).unwrap();
            std::io::Write::write_all(&mut out, b"first").unwrap();
            out.start_file("mimetype", options.compression_method(method))
                .unwrap();
            std::io::Write::write_all(&mut out, MIMETYPE).unwrap();
            out.finish().unwrap().into_inner()
        };
        let stored = ods(zip::CompressionMethod::Stored);
        assert!(is_ods(&stored));
        assert!(is_ods(&ods(zip::CompressionMethod::Deflated)));
        assert_eq!(Format::sniff(&stored), Format::Ods);
        assert_eq!(
            Format::Xlsx.refine(&stored),
            Format::Ods,
            "ODS sent as XLSX"
        );
        assert_eq!(Format::Ods.refine(b"sku,name\n"), Format::Csv);
        assert_eq!(Format::from_file_name("Laporan.ODS"), Some(Format::Ods));
        let xlsx = {
            let mut out = zip::ZipWriter::new(std::io::Cursor::new(Vec::new()));
            out.start_file(
                "[Content_Types].xml",
                zip::write::SimpleFileOptions::default(),
            )
            .unwrap();
            out.finish().unwrap().into_inner()
        };
        assert!(!is_ods(&xlsx));
        assert_eq!(Format::Ods.refine(&xlsx), Format::Xlsx, "XLSX sent as ODS");
        assert!(!is_ods(b"PK\x03\x04"));
        assert!(!is_ods(&ods(zip::CompressionMethod::Stored)[..40]));
    }
}
