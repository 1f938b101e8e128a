//! What the fuzz targets run, shared with the regression test that replays
//! their seeds and crash inputs in the normal test suite
//! (`tests/api/fuzz_regressions.rs` includes this file as a module).
//!
//! Every function here goes through the service's own public seams, with the
//! service's default limits in place: [`ingest::open`] (the reader a
//! validation job opens on an upload), then the header match and the type
//! rules of [`validate`] on every row, as the validation stage does. Nothing
//! of a reader is copied here. The property is that every input ends in rows
//! or a clean [`FileError`]: no panic, no hang, memory bounded by the limits.
//! A broken invariant panics, which libFuzzer reports as a crash.

use std::io::Cursor;

use chrono::{DateTime, NaiveDate};
use importgate::catalog::{Catalog, Column, ColumnType, Module};
use importgate::config::Limits;
use importgate::ingest::{self, Cell, FileError, Format, Options};
use importgate::validate::value::{self, CellError, Rules, Value};
use importgate::validate::{HeaderMap, check_row, extra_cells, key_text, match_header};

/// What a fuzz target runs on one input: the rows (or values) read, or the
/// file failure a validation job would end with.
pub type Run = fn(&[u8]) -> Result<u64, FileError>;

/// The fuzz targets, by name (also the folders of their seeds and crash
/// inputs), with what each runs.
pub const TARGETS: &[(&str, Run)] = &[
    ("csv", |data| read(Format::Csv, data)),
    ("decode", read_encoded),
    ("xlsx", |data| read(Format::Xlsx, data)),
    ("xls", |data| read(Format::Xls, data)),
    ("ods", |data| read(Format::Ods, data)),
    ("json", |data| read(Format::Json, data)),
    ("ndjson", |data| read(Format::Ndjson, data)),
    ("values", values),
];

/// The reader options a validation job gets with the default settings.
pub fn options() -> Options {
    let limits = Limits::default();
    Options {
        max_cell_bytes: limits.cell_bytes,
        max_columns: limits.columns,
        ..Options::default()
    }
}

/// The column types the `values` target chooses from.
const TYPES: [ColumnType; 7] = [
    ColumnType::Text,
    ColumnType::Integer,
    ColumnType::Bigint,
    ColumnType::Numeric,
    ColumnType::Date,
    ColumnType::Timestamptz,
    ColumnType::Boolean,
];

/// The module the fuzzed files are checked against: one column of each
/// type, and a text column with allowed values.
const CATALOG: &str = include_str!("../catalog.toml");

fn module() -> Module {
    let catalog = Catalog::from_toml(CATALOG).expect("the fuzz catalog is valid");
    let module = catalog.get("fuzz").expect("the fuzz module exists");
    (**module).clone()
}

/// Reads a file of `format` as a validation job does: opens it, matches
/// its header, and type-checks every row. Gives the number of rows, or the
/// file failure the job would end with.
///
/// The header is matched against the fuzz module (so header matching sees
/// the fuzzed names), but the rows are checked with the file's columns
/// mapped by position onto the module's types in turn, so that every cell
/// goes through a type rule whatever the header says.
///
/// JSON and NDJSON are read as a validation reads them: in one pass, and
/// again in two when a key first appears past the objects the header was
/// learned from.
pub fn read(format: Format, data: &[u8]) -> Result<u64, FileError> {
    if !matches!(format, Format::Json | Format::Ndjson) {
        return read_with(format, data, &options());
    }
    let one_pass = Options {
        one_pass: true,
        ..options()
    };
    match read_with(format, data, &one_pass) {
        Err(e) if e.code == ingest::FileCode::HeaderGrown => read_with(format, data, &options()),
        read => read,
    }
}

fn read_with(format: Format, data: &[u8], options: &Options) -> Result<u64, FileError> {
    let module = module();
    let source = ingest::open(format, Box::new(Cursor::new(data.to_vec())), options)?;
    // A header the module cannot take is a file failure of its own; the rows
    // are read anyway, as the reader is what is under test.
    let _ = match_header(&module, &source.header);
    let width = source.header.len();
    let header = HeaderMap {
        provided: (0..width).map(|i| (i % module.columns.len(), i)).collect(),
        unknown: Vec::new(),
        version: None,
    };
    let rules = Rules {
        date_formats: &module.date_formats,
        zone: chrono_tz::Asia::Jakarta,
        max_cell_bytes: options.max_cell_bytes,
    };
    let mut rows = 0u64;
    for raw in source.rows {
        let raw = raw?;
        rows += 1;
        let extra = extra_cells(&raw, width);
        let mut checked = check_row(&module, &header, &rules, raw);
        checked.errors.extend(extra);
        let _ = checked.values_text(&module, &header);
        if let Some(key) = checked.key(&module, &header) {
            let _ = key_text(&key);
        }
    }
    Ok(rows)
}

/// The `?encoding=` labels the `decode` target chooses from by its first
/// byte (none: a BOM or UTF-8), including one the service does not know.
const ENCODINGS: [Option<&str>; 7] = [
    None,
    Some("utf-8"),
    Some("utf-16"),
    Some("utf-16be"),
    Some("windows-1252"),
    Some("iso-8859-1"),
    Some("ebcdic"),
];

/// A CSV upload with `?encoding=` and `?delimiter=`: the first byte picks
/// the encoding and the delimiter, the rest is the file.
pub fn read_encoded(data: &[u8]) -> Result<u64, FileError> {
    let Some((&choice, file)) = data.split_first() else {
        return Ok(0);
    };
    let mut options = options();
    options.encoding = ENCODINGS[choice as usize % ENCODINGS.len()].map(str::to_string);
    options.delimiter = [None, Some(b';'), Some(b'\t'), Some(b'"')][(choice as usize / 7) % 4];
    read_with(Format::Csv, file, &options)
}

/// The date formats a module may set, chosen by the `values` target.
const DATE_FORMATS: [&[&str]; 4] = [
    &[],
    &["%d/%m/%Y"],
    &["%d/%m/%Y", "%m/%d/%y"],
    &["%Y%m%d", "%d-%b-%Y", "%d.%m.%Y"],
];

/// Runs one cell through the type rule of one column
/// ([`value::parse`], every parser of `src/validate/value.rs`), and checks
/// that a value it gives reads back from the JSON it is staged as (the
/// commit and the stale checks read it so) and that the fast JSON writer
/// agrees with [`Value::to_json`].
///
/// Input: byte 0 picks the column type and the kind of cell (text, a JSON
/// number, or a typed spreadsheet cell); byte 1 the column's options, the
/// module's date formats, the zone and the cell size limit; byte 2 a
/// length limit; the rest is the cell (its text, or the bytes of a typed
/// value).
pub fn values(data: &[u8]) -> Result<u64, FileError> {
    let [kind, flags, length, payload @ ..] = data else {
        return Ok(0);
    };
    let ty = TYPES[*kind as usize % TYPES.len()];
    let cell = cell(*kind as usize / TYPES.len(), payload);
    let column = Column {
        name: "c".into(),
        ty,
        required: flags & 1 != 0,
        // Allowed values and a length limit are for text columns only.
        allowed: (ty == ColumnType::Text && flags & 4 != 0)
            .then(|| vec!["Ya".into(), "tidak".into(), "Été".into()]),
        aliases: Vec::new(),
        max_length: (flags & 2 != 0).then_some(*length as usize),
        // A scale is for numeric columns only (their length flag).
        scale: (ty == ColumnType::Numeric && flags & 2 != 0).then_some(u32::from(*length % 21)),
    };
    let formats: Vec<String> = DATE_FORMATS[(*flags as usize >> 3) & 3]
        .iter()
        .map(|f| f.to_string())
        .collect();
    let zone = [
        chrono_tz::Asia::Jakarta,
        chrono_tz::UTC,
        chrono_tz::America::New_York,
        chrono_tz::Pacific::Apia,
    ][(*flags as usize >> 5) & 3];
    let rules = Rules {
        date_formats: &formats,
        zone,
        max_cell_bytes: if flags & 0x80 != 0 { 16 } else { 64 * 1024 },
    };
    let text = value::cell_text(&cell);
    assert!(text.chars().count() <= 201, "an error report cell is short");
    let mut taken = cell.clone();
    match value::parse(&mut taken, &column, &rules) {
        Ok(Some(v)) => {
            if let (Value::Decimal(d), Some(scale)) = (&v, column.scale) {
                assert_eq!(d.scale(), scale, "a numeric at its column's scale");
            }
            round_trip(ty, &v)
        }
        Ok(None) => assert!(!column.required, "a required column took null"),
        Err(CellError { message, .. }) => {
            assert!(!message.is_empty(), "an error says why");
            // The row's error shows the cell: parsing takes a cell's text
            // only when it passes. (Compared as shown: a NaN cell is not
            // equal to itself.)
            let shown = value::cell_text(&taken);
            assert!(shown == text, "a cell that fails is left as it was");
        }
    }
    Ok(1)
}

/// A cell of the kind chosen, made from the payload.
fn cell(kind: usize, payload: &[u8]) -> Cell {
    let text = || String::from_utf8_lossy(payload).into_owned();
    let mut word = [0u8; 8];
    let n = payload.len().min(8);
    word[..n].copy_from_slice(&payload[..n]);
    let int = i64::from_le_bytes(word);
    match kind % 9 {
        0 | 1 => Cell::Text(text()),
        2 => Cell::Number(text()),
        3 => Cell::Int(int),
        4 => Cell::Float(f64::from_bits(int as u64)),
        5 => Cell::Bool(int & 1 != 0),
        6 => NaiveDate::from_num_days_from_ce_opt(int as i32).map_or(Cell::Empty, Cell::Date),
        7 => DateTime::from_timestamp(int >> 20, (int & 0xFFFFF) as u32 * 1000)
            .map_or(Cell::Empty, |t| Cell::DateTime(t.naive_utc())),
        _ => Cell::Error(text()),
    }
}

/// A parsed value reads back from its staged JSON as the same value, and
/// both JSON writers agree.
fn round_trip(ty: ColumnType, v: &Value) {
    let json = v.to_json();
    assert_eq!(
        Value::from_json(ty, &json),
        Some(Some(v.clone())),
        "{v:?} does not read back from {json}"
    );
    let mut fast = Vec::new();
    v.write_json(&mut fast);
    let fast: serde_json::Value = serde_json::from_slice(&fast).expect("write_json writes JSON");
    assert_eq!(fast, json, "write_json and to_json differ for {v:?}");
    let _ = v.to_text();
}
