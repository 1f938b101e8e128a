//! Typed values and the type rules of API.md section 5: one cell of a file
//! becomes one [`Value`] of its column's type, or a row error with a code.

use chrono::format::{Item, Numeric, Pad, Parsed};
use chrono::{
    DateTime, Datelike, NaiveDate, NaiveDateTime, NaiveTime, SecondsFormat, TimeDelta, TimeZone,
    Timelike, Utc,
};
use chrono_tz::Tz;
use rust_decimal::Decimal;
use serde_json::Value as Json;

use super::RowErrorCode;
use crate::catalog::{Column, ColumnType};
use crate::ingest::Cell;

/// A typed, non-null value of a column. Null is `None` around it.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Value {
    /// A text column's value; also a value read from a table that is no
    /// value of its column's type here (`NaN` in a numeric column, a
    /// timestamp of `infinity`), kept as the database's text so that it
    /// compares unequal to every file value and is written back exactly.
    Text(String),
    /// `integer` and `bigint` (the range is checked when parsing).
    Int(i64),
    /// `numeric`: exact, never a float.
    Decimal(Decimal),
    Bool(bool),
    Date(NaiveDate),
    /// `timestamptz`, kept in UTC; to the microsecond when read from a
    /// file (see [`to_microseconds`]).
    Timestamp(DateTime<Utc>),
}

/// Why a cell is not a value of its column.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CellError {
    pub code: RowErrorCode,
    pub message: String,
}

fn err(code: RowErrorCode, message: String) -> CellError {
    CellError { code, message }
}

/// What parsing needs beyond the column: the module's date formats, the
/// zone for timestamps without an offset, the cell size limit.
pub struct Rules<'a> {
    pub date_formats: &'a [String],
    pub zone: Tz,
    pub max_cell_bytes: usize,
}

impl Value {
    /// The value as JSON, the way the API shows it: numbers as numbers,
    /// `numeric` as a decimal string, dates `YYYY-MM-DD`, timestamps RFC 3339 UTC.
    pub fn to_json(&self) -> Json {
        match self {
            Value::Text(s) => Json::String(s.clone()),
            Value::Int(i) => Json::from(*i),
            Value::Decimal(d) => Json::String(d.to_string()),
            Value::Bool(b) => Json::Bool(*b),
            Value::Date(d) => Json::String(date_text(d)),
            Value::Timestamp(t) => Json::String(t.to_rfc3339_opts(SecondsFormat::AutoSi, true)),
        }
    }

    /// Appends the value as JSON text, exactly as [`Value::to_json`] would
    /// serialise, without building a `serde_json::Value` (this runs for
    /// every cell of every file).
    pub fn write_json(&self, out: &mut Vec<u8>) {
        use std::io::Write;
        let quoted = |out: &mut Vec<u8>, text: &str| {
            // Writing into a Vec cannot fail.
            let _ = serde_json::to_writer(&mut *out, text);
        };
        let _ = match self {
            Value::Text(s) => {
                quoted(out, s);
                Ok(())
            }
            Value::Int(i) => write!(out, "{i}"),
            Value::Decimal(d) => write!(out, "\"{d}\""),
            Value::Bool(b) => write!(out, "{b}"),
            Value::Date(d) => write!(out, "\"{}\"", date_text(d)),
            Value::Timestamp(_) => {
                quoted(out, &self.to_text());
                Ok(())
            }
        };
    }

    /// Reads back a value written by [`Value::to_json`] for a column type.
    /// A string that is no value of the type is [`Value::Text`], as it was
    /// read from the table (`"NaN"` in a numeric column).
    pub fn from_json(ty: ColumnType, json: &Json) -> Option<Option<Value>> {
        if json.is_null() {
            return Some(None);
        }
        let v = match (ty, json) {
            (ColumnType::Text, Json::String(s)) => Value::Text(s.clone()),
            (ColumnType::Integer | ColumnType::Bigint, Json::Number(n)) => Value::Int(n.as_i64()?),
            // Exact: `Decimal::from_str` would round a 30-digit text to 28.
            (ColumnType::Numeric, Json::String(s)) => Decimal::from_str_exact(s)
                .map(Value::Decimal)
                .unwrap_or_else(|_| Value::Text(s.clone())),
            (ColumnType::Boolean, Json::Bool(b)) => Value::Bool(*b),
            (ColumnType::Date, Json::String(s)) => {
                iso_date(s).map_or_else(|| Value::Text(s.clone()), Value::Date)
            }
            (ColumnType::Timestamptz, Json::String(s)) => DateTime::parse_from_rfc3339(s)
                .map(|t| Value::Timestamp(t.with_timezone(&Utc)))
                .unwrap_or_else(|_| Value::Text(s.clone())),
            _ => return None,
        };
        Some(Some(v))
    }

    /// The value as text for a database column stored as text (SQLite
    /// keeps `numeric`, `date` and `timestamptz` as canonical text).
    pub fn to_text(&self) -> String {
        match self {
            Value::Text(s) => s.clone(),
            Value::Int(i) => i.to_string(),
            Value::Decimal(d) => d.to_string(),
            Value::Bool(b) => b.to_string(),
            Value::Date(d) => date_text(d),
            Value::Timestamp(t) => t.to_rfc3339_opts(SecondsFormat::AutoSi, true),
        }
    }

    /// Whether two values are the same datum spelled the same way, as a
    /// database stores them: `12.50` and `12.5` are not (see [`Value::same`]).
    pub fn identical(a: &Option<Value>, b: &Option<Value>) -> bool {
        match (a, b) {
            // Sign, scale and digits: `-0`, `0` and `0.0` are three.
            (Some(Value::Decimal(x)), Some(Value::Decimal(y))) => x.serialize() == y.serialize(),
            _ => a == b,
        }
    }

    /// Whether two values are the same datum: `12.50` and `12.5` are equal
    /// numerics, so re-importing a table does not show every row as changed.
    pub fn same(a: &Option<Value>, b: &Option<Value>) -> bool {
        match (a, b) {
            (Some(Value::Decimal(x)), Some(Value::Decimal(y))) => x.normalize() == y.normalize(),
            _ => a == b,
        }
    }
}

/// `YYYY-MM-DD`, without a format string to interpret for every cell.
/// A year outside 0 to 9999 (only read from a table) is signed, as chrono
/// and ISO 8601 write it (`+10000-01-01`, `-0043-03-15`).
///
/// Written digit by digit: `format!` with three padded fields takes about
/// 1,600 instructions a date under callgrind (a date column's every cell
/// is written to the stage as text), 2.5 % of a SQLite validation of the
/// harness's orders (`bash bench/once.sh`, BENCHMARKS.md).
pub fn date_text(d: &NaiveDate) -> String {
    match date_digits(d) {
        // The digits are ASCII.
        Some(digits) => digits.iter().map(|&b| char::from(b)).collect(),
        None => format!("{:+05}-{:02}-{:02}", d.year(), d.month(), d.day()),
    }
}

/// `YYYY-MM-DD` of a date in the years 0 to 9999, written digit by digit;
/// `None` for other years. Also what the stage's `COPY` sends.
pub fn date_digits(d: &NaiveDate) -> Option<[u8; 10]> {
    let year = d.year();
    if !(0..=9999).contains(&year) {
        return None;
    }
    let (y, m, day) = (year as u32, d.month(), d.day());
    let digit = |n: u32| b'0' + (n % 10) as u8;
    Some([
        digit(y / 1000),
        digit(y / 100),
        digit(y / 10),
        digit(y),
        b'-',
        digit(m / 10),
        digit(m),
        b'-',
        digit(day / 10),
        digit(day),
    ])
}

/// Parses one cell for its column. `Ok(None)` is an empty cell (null).
/// A text cell of a text column that passes is moved into its value, its
/// cell left empty: copying it (twice, with the column's checks) is ten
/// allocations a row of 1M orders on the reader's thread, whose time an
/// upsert validation shares its two cores with (callgrind, `bash
/// bench/once.sh`). A cell that fails is left as it was, for the error
/// to show.
pub fn parse(cell: &mut Cell, column: &Column, rules: &Rules) -> Result<Option<Value>, CellError> {
    let value = match cell {
        Cell::Empty => None,
        Cell::Text(s) if trim(s).is_empty() => None,
        Cell::Text(s) if column.ty == ColumnType::Text => {
            check_size(s, rules)?;
            // Text is kept exactly as written, spaces included.
            return Ok(Some(Value::Text(checked_text(s, column)?)));
        }
        Cell::Text(s) => {
            check_size(s, rules)?;
            Some(parse_text(s, column, rules)?)
        }
        Cell::Number(s) => {
            check_size(s, rules)?;
            Some(parse_typed(cell, column, rules)?)
        }
        Cell::Error(e) => {
            return Err(err(
                RowErrorCode::Type,
                format!("the cell holds the spreadsheet error {e}, not a value"),
            ));
        }
        other => Some(parse_typed(other, column, rules)?),
    };
    if value.is_none() && column.required {
        return Err(err(
            RowErrorCode::Required,
            format!("{} is required", column.name),
        ));
    }
    let value = value.map(settle_time).transpose()?;
    let value = value.map(|v| fit_scale(v, column)).transpose()?;
    if let Some(Value::Text(mut s)) = value {
        return Ok(Some(Value::Text(checked_text(&mut s, column)?)));
    }
    Ok(value)
}

/// A numeric at its column's scale (`4.5` → `4.50` at 2), so that every
/// database stores and reads back the same text; a value that needs more
/// places than the scale is `out_of_range`, never rounded. Other values,
/// and numerics of a column without a scale, as they are.
fn fit_scale(v: Value, column: &Column) -> Result<Value, CellError> {
    let (Value::Decimal(d), Some(scale)) = (&v, column.scale) else {
        return Ok(v);
    };
    let needed = d.normalize().scale();
    if needed > scale {
        return Err(err(
            RowErrorCode::OutOfRange,
            format!(
                "{d} has {needed} decimal places; {} keeps {scale}",
                column.name
            ),
        ));
    }
    let mut fitted = *d;
    fitted.rescale(scale);
    if fitted.is_zero() {
        // `-0.00` is `0.00`, as PostgreSQL stores it.
        fitted.set_sign_positive(true);
    }
    if fitted.scale() != scale {
        return Err(err(
            RowErrorCode::OutOfRange,
            format!("{d} has too many digits to keep {scale} decimal places (28 in all)"),
        ));
    }
    Ok(Value::Decimal(fitted))
}

/// The cell size limit, and text no table can store.
fn check_size(s: &str, rules: &Rules) -> Result<(), CellError> {
    if s.len() > rules.max_cell_bytes && rules.max_cell_bytes > 0 {
        return Err(err(
            RowErrorCode::TooLong,
            format!(
                "the cell has {} bytes; at most {} are accepted",
                s.len(),
                rules.max_cell_bytes
            ),
        ));
    }
    if s.contains('\0') {
        // PostgreSQL text cannot hold NUL; a NUL usually means a binary or
        // UTF-16 file read as text.
        return Err(err(
            RowErrorCode::Format,
            "the cell holds a NUL character (is the file binary, or UTF-16 without a BOM?)".into(),
        ));
    }
    Ok(())
}

/// The years a date or timestamp may have. chrono reaches year 262,143,
/// but a value outside four digits cannot be written as `YYYY-MM-DD` or
/// RFC 3339, so it would not read back from the staged JSON at commit
/// (fuzzing found a spreadsheet date cell in year 196,299 staged as
/// `+196299-01-12T00:00:00Z`). No business date is outside them.
const YEARS: std::ops::RangeInclusive<i32> = 1..=9999;

/// Puts a date or timestamp into the form both databases store, or
/// refuses it: a timestamp in a leap second is a `format` error; a
/// timestamp is rounded to the microsecond ([`to_microseconds`]); a date,
/// or a timestamp once rounded (in UTC, as stored), outside [`YEARS`] is
/// `out_of_range`.
///
/// chrono takes a 60th second anywhere (`07:46:60`), but keeps it as a
/// leap second that RFC 3339 can show only at `:59`: taken in a zone whose
/// offset is not whole minutes (Jakarta before 1924) it was staged as a
/// different instant from the one checked (found by fuzzing), and the two
/// databases disagree on it (PostgreSQL moves it to the next minute,
/// SQLite keeps the text). Spreadsheets never write one; a person who does
/// has mistyped.
fn settle_time(v: Value) -> Result<Value, CellError> {
    let (year, rounded) = match &v {
        Value::Date(d) => (d.year(), None),
        Value::Timestamp(t) if t.nanosecond() >= 1_000_000_000 => {
            return Err(err(
                RowErrorCode::Format,
                format!(
                    "{} is in a leap second (second 60); give the next minute instead",
                    v.to_text()
                ),
            ));
        }
        Value::Timestamp(t) => {
            // `None` only at chrono's last instant, far outside the years.
            let Some(r) = to_microseconds(*t) else {
                return Err(out_of_range(&v, None));
            };
            (r.year(), Some(Value::Timestamp(r)))
        }
        _ => return Ok(v),
    };
    if !YEARS.contains(&year) {
        return Err(out_of_range(&v, rounded.as_ref()));
    }
    Ok(rounded.unwrap_or(v))
}

/// The `out_of_range` error of a date or timestamp, naming what it became
/// when rounding moved it out of the years.
fn out_of_range(v: &Value, rounded: Option<&Value>) -> CellError {
    let stored = match rounded {
        Some(r) if r != v => format!(" ({} to the microsecond)", r.to_text()),
        _ => String::new(),
    };
    err(
        RowErrorCode::OutOfRange,
        format!(
            "{}{stored} is outside the years {} to {}",
            v.to_text(),
            YEARS.start(),
            YEARS.end()
        ),
    )
}

/// A timestamp to the microsecond, PostgreSQL's precision, so that both
/// databases store the same instant and the preview shows it: rounded to
/// the nearest microsecond, a tie to the even one, as PostgreSQL rounds
/// the text it is given (`.0000005` → `.000000`, `.0000015` → `.000002`).
/// `None` past chrono's last instant. Not for leap seconds (refused first).
pub fn to_microseconds(t: DateTime<Utc>) -> Option<DateTime<Utc>> {
    let nanos = t.nanosecond();
    let (micros, rest) = (nanos / 1000, nanos % 1000);
    let down = t.with_nanosecond(micros * 1000)?;
    if rest > 500 || (rest == 500 && micros % 2 == 1) {
        down.checked_add_signed(TimeDelta::microseconds(1))
    } else {
        Some(down)
    }
}

/// A text column's value of `s` ([`check_text`]): `s` itself, taken
/// (left empty), or the allowed value's own spelling. A text that fails
/// is left as it was.
fn checked_text(s: &mut String, column: &Column) -> Result<String, CellError> {
    let spelled = check_text(s, column)?.cloned();
    Ok(spelled.unwrap_or_else(|| std::mem::take(s)))
}

/// Applies a text column's length limit and allowed values, whose own
/// spelling a value takes (`paid` for `PAID`): that spelling, where it
/// differs from `s`.
fn check_text<'c>(s: &str, column: &'c Column) -> Result<Option<&'c String>, CellError> {
    if let Some(max) = column.max_length {
        let n = s.chars().count();
        if n > max {
            return Err(err(
                RowErrorCode::TooLong,
                format!("{n} characters; at most {max} are accepted"),
            ));
        }
    }
    if let Some(allowed) = &column.allowed {
        return match allowed.iter().find(|a| a.eq_ignore_ascii_case(s.trim())) {
            Some(a) => Ok(Some(a).filter(|a| *a != s)),
            None => Err(err(
                RowErrorCode::NotAllowed,
                format!("{:?} is not one of: {}", s, allowed.join(", ")),
            )),
        };
    }
    Ok(None)
}

/// `s.trim()`, answered at once for a cell that starts and ends with a
/// visible ASCII character (nearly every cell): `str::trim` decodes a
/// character at each end and asks Unicode whether it is a space, 75
/// instructions a call, twice a cell (callgrind).
fn trim(s: &str) -> &str {
    match (s.as_bytes().first(), s.as_bytes().last()) {
        (Some(first), Some(last)) if first.is_ascii_graphic() && last.is_ascii_graphic() => s,
        _ => s.trim(),
    }
}

fn parse_text(raw: &str, column: &Column, rules: &Rules) -> Result<Value, CellError> {
    let s = trim(raw);
    match column.ty {
        // Text is kept exactly as written, spaces included.
        ColumnType::Text => Ok(Value::Text(raw.to_string())),
        ColumnType::Integer => parse_int(s, i32::MIN as i64, i32::MAX as i64, "integer"),
        ColumnType::Bigint => parse_int(s, i64::MIN, i64::MAX, "bigint"),
        ColumnType::Numeric => parse_decimal(s),
        ColumnType::Boolean => parse_bool(s),
        ColumnType::Date => parse_date(s, rules).map(Value::Date),
        ColumnType::Timestamptz => parse_timestamp(s, rules).map(Value::Timestamp),
    }
}

/// Integers: an optional sign and digits. A whole number written with a
/// zero fraction (`12.0`, as spreadsheets export) is accepted as that number.
fn parse_int(s: &str, min: i64, max: i64, name: &str) -> Result<Value, CellError> {
    let digits = s.strip_prefix('+').unwrap_or(s);
    let whole = match digits.split_once('.') {
        Some((w, frac)) if !frac.is_empty() && frac.bytes().all(|b| b == b'0') => w,
        _ => digits,
    };
    let body = whole.strip_prefix('-').unwrap_or(whole);
    if body.is_empty() || !body.bytes().all(|b| b.is_ascii_digit()) {
        return Err(err(
            RowErrorCode::Type,
            format!("{s:?} is not a whole number ({name})"),
        ));
    }
    match whole.parse::<i128>() {
        Ok(n) if n >= min as i128 && n <= max as i128 => Ok(Value::Int(n as i64)),
        _ => Err(err(
            RowErrorCode::OutOfRange,
            format!("{s} is outside the {name} range {min}..={max}"),
        )),
    }
}

fn parse_decimal(s: &str) -> Result<Value, CellError> {
    let body = s.strip_prefix('+').unwrap_or(s);
    let plain = body.strip_prefix('-').unwrap_or(body);
    let well_formed = !plain.is_empty()
        && plain.bytes().filter(|&b| b == b'.').count() <= 1
        && plain.bytes().all(|b| b.is_ascii_digit() || b == b'.')
        && plain.bytes().any(|b| b.is_ascii_digit());
    if !well_formed {
        return Err(err(
            RowErrorCode::Type,
            format!("{s:?} is not a decimal number"),
        ));
    }
    Decimal::from_str_exact(body)
        .map(Value::Decimal)
        .map_err(|_| {
            err(
                RowErrorCode::OutOfRange,
                format!("{s} has more digits than a numeric holds (28)"),
            )
        })
}

fn parse_bool(s: &str) -> Result<Value, CellError> {
    match s.to_ascii_lowercase().as_str() {
        "true" | "yes" | "1" | "y" | "ya" => Ok(Value::Bool(true)),
        "false" | "no" | "0" | "n" | "tidak" => Ok(Value::Bool(false)),
        _ => Err(err(
            RowErrorCode::Type,
            format!("{s:?} is not a boolean (true/false, yes/no, 1/0, y/n, ya/tidak)"),
        )),
    }
}

/// A date written as ten characters `YYYY-MM-DD`, as every date is stored
/// and nearly every date cell is written: `Some` of the date, or of `None`
/// for no such day (`2024-02-30`); `None` for any other text, which chrono
/// then reads. Digit by digit because chrono's parser takes 760–870
/// instructions a date under callgrind, 1.2 % of a validation reading the
/// file's dates and 1.3 % more of an upsert's reading the table's (`bash
/// bench/once.sh`, BENCHMARKS.md).
pub fn plain_date(s: &str) -> Option<Option<NaiveDate>> {
    let &[y1, y2, y3, y4, b'-', m1, m2, b'-', d1, d2] = s.as_bytes() else {
        return None;
    };
    let digits = [y1, y2, y3, y4, m1, m2, d1, d2];
    if !digits.iter().all(u8::is_ascii_digit) {
        return None;
    }
    let n = |ds: &[u8]| ds.iter().fold(0, |acc, &d| acc * 10 + u32::from(d - b'0'));
    let year = n(&digits[..4]) as i32;
    Some(NaiveDate::from_ymd_opt(
        year,
        n(&digits[4..6]),
        n(&digits[6..]),
    ))
}

/// `%Y-%m-%d` as chrono's parsed items: `parse_from_str` reads its format
/// string again for every value (`perf`: 1.7 % of a 1M-row validation in
/// chrono's format reader), and nearly every date cell is in this one.
const ISO_DATE: &[Item<'static>] = &[
    Item::Numeric(Numeric::Year, Pad::Zero),
    Item::Literal("-"),
    Item::Numeric(Numeric::Month, Pad::Zero),
    Item::Literal("-"),
    Item::Numeric(Numeric::Day, Pad::Zero),
];

/// `s` in `%Y-%m-%d`, as `NaiveDate::parse_from_str(s, "%Y-%m-%d")`.
fn iso_date(s: &str) -> Option<NaiveDate> {
    if let Some(date) = plain_date(s) {
        return date;
    }
    let mut parsed = Parsed::new();
    chrono::format::parse(&mut parsed, s, ISO_DATE.iter()).ok()?;
    parsed.to_naive_date().ok()
}

fn parse_date(s: &str, rules: &Rules) -> Result<NaiveDate, CellError> {
    iso_date(s)
        .or_else(|| (rules.date_formats.iter()).find_map(|f| NaiveDate::parse_from_str(s, f).ok()))
        .ok_or_else(|| {
            err(
                RowErrorCode::Format,
                format!(
                    "{s:?} is not a date (YYYY-MM-DD{})",
                    rules
                        .date_formats
                        .iter()
                        .map(|f| format!(", {}", human_format(f)))
                        .collect::<String>()
                ),
            )
        })
}

/// `%d/%m/%Y` → `DD/MM/YYYY`, for messages a person reads.
fn human_format(f: &str) -> String {
    f.replace("%d", "DD")
        .replace("%m", "MM")
        .replace("%Y", "YYYY")
        .replace("%y", "YY")
}

/// RFC 3339 with an offset, or a local date and time taken in the
/// configured zone (a real tz database, so any zone's rules apply).
fn parse_timestamp(s: &str, rules: &Rules) -> Result<DateTime<Utc>, CellError> {
    if let Ok(t) = DateTime::parse_from_rfc3339(s) {
        return Ok(t.with_timezone(&Utc));
    }
    local_datetime(s, rules)
        .and_then(|local| rules.zone.from_local_datetime(&local).earliest())
        .map(|t| t.with_timezone(&Utc))
        .ok_or_else(|| {
            err(
                RowErrorCode::Format,
                format!(
                    "{s:?} is not a timestamp (RFC 3339, or YYYY-MM-DD HH:MM[:SS] in {})",
                    rules.zone
                ),
            )
        })
}

fn local_datetime(s: &str, rules: &Rules) -> Option<NaiveDateTime> {
    let (date, time) = s.split_once([' ', 'T'])?;
    let date = parse_date(date.trim(), rules).ok()?;
    let time = ["%H:%M:%S%.f", "%H:%M"]
        .iter()
        .find_map(|f| NaiveTime::parse_from_str(time.trim(), f).ok())?;
    Some(date.and_time(time))
}

/// Cells that already carry a type (spreadsheets, JSON).
fn parse_typed(cell: &Cell, column: &Column, rules: &Rules) -> Result<Value, CellError> {
    let mismatch = |what: &str| {
        err(
            RowErrorCode::Type,
            format!("{what} is not a {}", column.ty.as_str()),
        )
    };
    match (column.ty, cell) {
        (ColumnType::Text, Cell::Int(i)) => Ok(Value::Text(i.to_string())),
        (ColumnType::Text, Cell::Number(n)) => Ok(Value::Text(n.clone())),
        (ColumnType::Text, Cell::Float(f)) => Ok(Value::Text(f.to_string())),
        (ColumnType::Text, Cell::Bool(b)) => Ok(Value::Text(b.to_string())),
        (ColumnType::Text, Cell::Date(d)) => Ok(Value::Text(d.format("%Y-%m-%d").to_string())),
        (ColumnType::Text, Cell::DateTime(d)) => {
            Ok(Value::Text(d.format("%Y-%m-%d %H:%M:%S").to_string()))
        }
        (_, Cell::Int(i)) => parse_text(&i.to_string(), column, rules),
        (_, Cell::Number(n)) => parse_text(n, column, rules),
        (ColumnType::Integer | ColumnType::Bigint | ColumnType::Numeric, Cell::Float(f)) => {
            // `{}` prints the shortest text that reads back as the same f64.
            parse_text(&f.to_string(), column, rules)
        }
        (ColumnType::Boolean, Cell::Bool(b)) => Ok(Value::Bool(*b)),
        (ColumnType::Date, Cell::Date(d)) => Ok(Value::Date(*d)),
        (ColumnType::Date, Cell::DateTime(dt)) if dt.time() == NaiveTime::MIN => {
            Ok(Value::Date(dt.date()))
        }
        (ColumnType::Timestamptz, Cell::Date(d)) => local_to_utc(d.and_time(NaiveTime::MIN), rules),
        (ColumnType::Timestamptz, Cell::DateTime(dt)) => local_to_utc(*dt, rules),
        (_, Cell::Text(s)) => parse_text(s, column, rules),
        (_, Cell::Bool(b)) => Err(mismatch(&b.to_string())),
        (_, Cell::Float(f)) => Err(mismatch(&f.to_string())),
        (_, Cell::Date(d)) => Err(mismatch(&d.to_string())),
        (_, Cell::DateTime(d)) => Err(mismatch(&d.to_string())),
        (_, Cell::Empty) => Err(mismatch("an empty cell")),
        (_, Cell::Error(e)) => Err(mismatch(e)),
    }
}

fn local_to_utc(dt: NaiveDateTime, rules: &Rules) -> Result<Value, CellError> {
    rules
        .zone
        .from_local_datetime(&dt)
        .earliest()
        .map(|t| Value::Timestamp(t.with_timezone(&Utc)))
        .ok_or_else(|| {
            err(
                RowErrorCode::Format,
                format!("{dt} does not exist in {}", rules.zone),
            )
        })
}

/// The text of a cell for an error report (long cells shortened, without
/// copying them whole first).
pub fn cell_text(cell: &Cell) -> String {
    let s = match cell {
        Cell::Empty => String::new(),
        Cell::Text(s) | Cell::Number(s) | Cell::Error(s) => {
            let end = s.char_indices().nth(201).map_or(s.len(), |(i, _)| i);
            s[..end].replace('\0', "\u{FFFD}")
        }
        Cell::Int(i) => i.to_string(),
        Cell::Float(f) => f.to_string(),
        Cell::Bool(b) => b.to_string(),
        Cell::Date(d) => d.to_string(),
        Cell::DateTime(d) => d.to_string(),
    };
    shorten(s, 200)
}

fn shorten(mut s: String, max_chars: usize) -> String {
    if let Some((i, _)) = s.char_indices().nth(max_chars) {
        s.truncate(i);
        s.push('…');
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_quick_trim_trims_as_str_trim_does() {
        for s in [
            "",
            " ",
            "a",
            " a",
            "a ",
            "\ta\n",
            "ab",
            "\u{a0}x",
            "x\u{a0}",
            "\u{3000}",
            "Jl. Merdeka 1",
            "é",
            " é ",
            "\u{2003}5\u{2003}",
            "~",
            "!x!",
            "\u{7f}",
        ] {
            assert_eq!(trim(s), s.trim(), "{s:?}");
        }
    }

    #[test]
    fn iso_dates_read_as_chrono_reads_their_format() {
        let cases = [
            "2024-01-02",
            "2024-1-2",
            "2024-02-30",
            "2024-02-29",
            "2023-02-29",
            "+2024-01-02",
            "2024-01-02x",
            "20240102",
            "02/01/2024",
            "2024-01",
            "",
            "-0001-01-01",
            "2024 -01-02",
            "99999-12-31",
            "2024-13-01",
            "0000-01-01",
            "9999-12-31",
            "2024-00-10",
            "2024-04-31",
            "2024-04-00",
            "2024-0a-01",
            "2024/01/02",
            "١٢٣٤-01-01",
        ];
        for s in cases {
            assert_eq!(
                iso_date(s),
                NaiveDate::parse_from_str(s, "%Y-%m-%d").ok(),
                "{s:?}"
            );
            // The store reads its dates with chrono's `FromStr` after it.
            if let Some(date) = plain_date(s) {
                assert_eq!(date, s.parse::<NaiveDate>().ok(), "{s:?}");
            }
        }
    }

    fn col(ty: ColumnType) -> Column {
        Column {
            name: "c".into(),
            ty,
            required: false,
            allowed: None,
            aliases: vec![],
            max_length: None,
            scale: None,
        }
    }

    fn p(ty: ColumnType, s: &str) -> Result<Option<Value>, CellError> {
        let formats = vec!["%d/%m/%Y".to_string()];
        parse(&mut Cell::Text(s.into()), &col(ty), &in_jakarta(&formats))
    }

    /// The rules of a service in Jakarta with these extra date formats.
    fn in_jakarta(date_formats: &[String]) -> Rules<'_> {
        Rules {
            date_formats,
            zone: chrono_tz::Asia::Jakarta,
            max_cell_bytes: 65536,
        }
    }

    #[test]
    fn a_numeric_is_kept_at_its_columns_scale_or_refused() {
        let rules = in_jakarta(&[]);
        let weight = Column {
            scale: Some(2),
            ..col(ColumnType::Numeric)
        };
        let run = |cell: Cell| parse(&mut cell.clone(), &weight, &rules);
        let text = |s: &str| run(Cell::Text(s.into())).map(|v| v.unwrap().to_text());
        assert_eq!(text("4.5").unwrap(), "4.50");
        assert_eq!(text("0").unwrap(), "0.00");
        assert_eq!(text("-0.000").unwrap(), "0.00");
        assert_eq!(text("10.50").unwrap(), "10.50");
        assert_eq!(run(Cell::Float(2.25)).unwrap().unwrap().to_text(), "2.25");
        for refused in ["1.255", "0.001", "792345678901234567890123456.5"] {
            let e = text(refused).unwrap_err();
            assert_eq!(e.code.as_str(), "out_of_range", "{refused}");
        }
        assert!(text("1.255").unwrap_err().message.contains("keeps 2"));
        // Without a scale, the written scale stays.
        let free = col(ColumnType::Numeric);
        let kept = parse(&mut Cell::Text("4.500".into()), &free, &rules);
        assert_eq!(kept.unwrap().unwrap().to_text(), "4.500");
    }

    #[test]
    fn a_text_cell_is_taken_as_its_value_only_when_it_passes() {
        let rules = in_jakarta(&[]);
        let status = Column {
            allowed: Some(vec!["paid".into(), "pending".into()]),
            max_length: Some(7),
            ..col(ColumnType::Text)
        };
        let run = |text: &str| {
            let mut cell = Cell::Text(text.into());
            (parse(&mut cell, &status, &rules), cell)
        };
        // Taken as written, or in the list's spelling; the cell is spent.
        let (value, cell) = run("paid");
        assert_eq!(value.unwrap(), Some(Value::Text("paid".into())));
        assert_eq!(cell, Cell::Text(String::new()));
        assert_eq!(run(" PAID").0.unwrap(), Some(Value::Text("paid".into())));
        // A cell that fails is left whole, for the row's error to show.
        for (text, code) in [("shipped", "not_allowed"), ("pending!", "too_long")] {
            let (value, cell) = run(text);
            assert_eq!(value.unwrap_err().code.as_str(), code);
            assert_eq!(cell, Cell::Text(text.into()));
        }
        // A value made from another kind of cell is checked alike.
        let value = parse(&mut Cell::Int(7), &status, &rules);
        assert_eq!(value.unwrap_err().code.as_str(), "not_allowed");
    }

    fn code(r: Result<Option<Value>, CellError>) -> &'static str {
        r.unwrap_err().code.as_str()
    }

    #[test]
    fn integers_are_32_bit_and_bigints_64_bit() {
        assert_eq!(
            p(ColumnType::Integer, "2147483647").unwrap(),
            Some(Value::Int(2147483647))
        );
        assert_eq!(code(p(ColumnType::Integer, "2147483648")), "out_of_range");
        assert_eq!(
            p(ColumnType::Bigint, "-9223372036854775808").unwrap(),
            Some(Value::Int(i64::MIN))
        );
        assert_eq!(
            code(p(ColumnType::Bigint, "9223372036854775808")),
            "out_of_range"
        );
        assert_eq!(code(p(ColumnType::Integer, "12a")), "type");
        assert_eq!(code(p(ColumnType::Integer, "1.5")), "type");
        assert_eq!(
            p(ColumnType::Integer, " 12.0 ").unwrap(),
            Some(Value::Int(12))
        );
    }

    #[test]
    fn numerics_are_exact() {
        let v = p(ColumnType::Numeric, "12345678901234567.123456789")
            .unwrap()
            .unwrap();
        assert_eq!(
            v.to_json(),
            Json::String("12345678901234567.123456789".into())
        );
        assert_eq!(code(p(ColumnType::Numeric, "1,5")), "type");
        assert_eq!(code(p(ColumnType::Numeric, "1e5")), "type");
        assert!(Value::same(
            &p(ColumnType::Numeric, "12.50").unwrap(),
            &p(ColumnType::Numeric, "12.5").unwrap()
        ));
    }

    #[test]
    fn booleans_accept_indonesian() {
        assert_eq!(
            p(ColumnType::Boolean, "Ya").unwrap(),
            Some(Value::Bool(true))
        );
        assert_eq!(
            p(ColumnType::Boolean, "TIDAK").unwrap(),
            Some(Value::Bool(false))
        );
        assert_eq!(code(p(ColumnType::Boolean, "maybe")), "type");
    }

    #[test]
    fn dates_accept_iso_and_day_first() {
        let d = NaiveDate::from_ymd_opt(2024, 3, 31).unwrap();
        assert_eq!(
            p(ColumnType::Date, "2024-03-31").unwrap(),
            Some(Value::Date(d))
        );
        assert_eq!(
            p(ColumnType::Date, "31/03/2024").unwrap(),
            Some(Value::Date(d))
        );
        assert_eq!(code(p(ColumnType::Date, "2024-02-30")), "format");
        assert_eq!(code(p(ColumnType::Date, "03/31/2024")), "format");
    }

    #[test]
    fn dates_outside_four_digit_years_and_leap_seconds_are_refused() {
        let rules = Rules {
            date_formats: &[],
            zone: chrono_tz::UTC,
            max_cell_bytes: 64,
        };
        let far = NaiveDate::from_ymd_opt(196_299, 1, 12).unwrap();
        for ty in [ColumnType::Date, ColumnType::Timestamptz] {
            let e = parse(&mut Cell::Date(far), &col(ty), &rules).unwrap_err();
            assert_eq!(e.code.as_str(), "out_of_range", "{ty:?}: {}", e.message);
        }
        assert_eq!(code(p(ColumnType::Date, "+12345-01-01")), "out_of_range");
        assert_eq!(
            code(p(ColumnType::Timestamptz, "9999-12-31T23:00:00-05:00")),
            "out_of_range"
        );
        assert!(p(ColumnType::Date, "9999-12-31").is_ok());
        assert_eq!(
            code(p(ColumnType::Timestamptz, "1893-05-30 07:46:60.039091")),
            "format"
        );
        assert_eq!(
            code(p(ColumnType::Timestamptz, "2016-12-31T23:59:60Z")),
            "format"
        );
        assert!(p(ColumnType::Date, "0001-01-01").is_ok());
    }

    #[test]
    fn timestamps_are_rounded_to_the_microsecond_as_postgresql_rounds() {
        let ts = |s: &str| p(ColumnType::Timestamptz, s).map(|v| v.unwrap().to_text());
        for (cell, stored) in [
            (
                "2026-03-01T08:30:00.123456789+07:00",
                "2026-03-01T01:30:00.123457Z",
            ),
            (
                "2026-03-01T00:00:00.1234564Z",
                "2026-03-01T00:00:00.123456Z",
            ),
            // Ties go to the even microsecond (PostgreSQL's `rint`).
            ("2000-01-01T00:00:00.0000005Z", "2000-01-01T00:00:00Z"),
            (
                "2000-01-01T00:00:00.0000015Z",
                "2000-01-01T00:00:00.000002Z",
            ),
            (
                "2000-01-01T00:00:00.0000025Z",
                "2000-01-01T00:00:00.000002Z",
            ),
            (
                "1900-01-01T00:00:00.0000035Z",
                "1900-01-01T00:00:00.000004Z",
            ),
            // A carry reaches the next second, day and year.
            ("2024-12-31T23:59:59.9999996Z", "2025-01-01T00:00:00Z"),
            ("2024-05-03 07:00:00.5", "2024-05-03T00:00:00.500Z"),
        ] {
            assert_eq!(ts(cell).as_deref(), Ok(stored), "{cell}");
        }
    }

    #[test]
    fn a_timestamp_rounded_out_of_the_years_is_out_of_range() {
        let e = p(ColumnType::Timestamptz, "9999-12-31T23:59:59.9999999Z").unwrap_err();
        assert_eq!(e.code.as_str(), "out_of_range");
        assert!(
            e.message.contains("+10000-01-01T00:00:00Z"),
            "{}",
            e.message
        );
        assert!(p(ColumnType::Timestamptz, "9999-12-31T23:59:59.9999994Z").is_ok());
        // Rounded up into year 1, it is in range.
        assert_eq!(
            p(ColumnType::Timestamptz, "0000-12-31T23:59:59.9999996Z")
                .unwrap()
                .unwrap()
                .to_text(),
            "0001-01-01T00:00:00Z"
        );
        assert_eq!(
            code(p(ColumnType::Timestamptz, "0000-12-31T23:59:59.9999994Z")),
            "out_of_range"
        );
    }

    #[test]
    fn text_that_is_no_value_of_its_type_reads_back_as_text() {
        for (ty, s) in [
            (ColumnType::Numeric, "NaN"),
            (ColumnType::Numeric, "0.123456789012345678901234567890"),
            (ColumnType::Date, "infinity"),
            (ColumnType::Timestamptz, "+10000-01-01T00:00:00Z"),
        ] {
            assert_eq!(
                Value::from_json(ty, &Json::String(s.into())),
                Some(Some(Value::Text(s.into()))),
                "{s}"
            );
        }
        assert_eq!(
            Value::from_json(ColumnType::Numeric, &Json::String("0.00".into()))
                .flatten()
                .map(|v| v.to_text()),
            Some("0.00".into())
        );
        let far = NaiveDate::from_ymd_opt(10_000, 1, 1).unwrap();
        assert_eq!(date_text(&far), "+10000-01-01");
        let bc = NaiveDate::from_ymd_opt(-43, 3, 15).unwrap();
        assert_eq!(date_text(&bc), "-0043-03-15");
        // Dates 397 days apart over years 0 to 9999, as chrono writes them.
        let mut d = NaiveDate::from_ymd_opt(0, 1, 1).unwrap();
        while d.year() <= 9999 {
            assert_eq!(date_text(&d), d.format("%Y-%m-%d").to_string());
            d = d + chrono::Days::new(397);
        }
    }

    #[test]
    fn local_timestamps_are_taken_in_jakarta() {
        let v = p(ColumnType::Timestamptz, "2024-03-31 07:00")
            .unwrap()
            .unwrap();
        assert_eq!(v.to_json(), Json::String("2024-03-31T00:00:00Z".into()));
        let v = p(ColumnType::Timestamptz, "2024-03-31T09:00:00+02:00")
            .unwrap()
            .unwrap();
        assert_eq!(v.to_json(), Json::String("2024-03-31T07:00:00Z".into()));
        assert_eq!(code(p(ColumnType::Timestamptz, "yesterday")), "format");
    }

    #[test]
    fn empty_required_cells_are_errors() {
        let mut c = col(ColumnType::Text);
        c.required = true;
        let rules = Rules {
            date_formats: &[],
            zone: chrono_tz::UTC,
            max_cell_bytes: 10,
        };
        assert_eq!(
            parse(&mut Cell::Text("  ".into()), &c, &rules)
                .unwrap_err()
                .code,
            RowErrorCode::Required
        );
        assert_eq!(
            parse(&mut Cell::Text("12345678901".into()), &c, &rules)
                .unwrap_err()
                .code,
            RowErrorCode::TooLong
        );
    }

    #[test]
    fn json_round_trips() {
        for (ty, s) in [
            (ColumnType::Numeric, "-0.0100"),
            (ColumnType::Timestamptz, "2024-01-02 03:04:05.25"),
            (ColumnType::Date, "2024-01-02"),
            (ColumnType::Bigint, "-5"),
            (ColumnType::Boolean, "y"),
        ] {
            let v = p(ty, s).unwrap();
            assert_eq!(
                Value::from_json(ty, &v.as_ref().unwrap().to_json()),
                Some(v)
            );
        }
    }
}
