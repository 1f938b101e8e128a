//! Module values in and out of PostgreSQL: each of its own types, bound
//! as such, and read from the wire by hand ([`DecodeValue`] for
//! [`PgRow`]), including what no type here holds (`NaN`, `infinity`, years
//! past chrono's), which comes back as PostgreSQL's text of it.

use chrono::{DateTime, Datelike, NaiveDate, TimeDelta, Timelike, Utc};
use rust_decimal::Decimal;
use sqlx::postgres::{PgArguments, PgRow, PgValueFormat, PgValueRef};
use sqlx::query::Query;
use sqlx::{Postgres, Row, TypeInfo, ValueRef};

use crate::catalog::ColumnType;
use crate::store::error::{Result, StoreError};
use crate::store::values::{BindValue, DecodeValue, stored_date};
use crate::validate::Value;

impl<'q> BindValue for Query<'q, Postgres, PgArguments> {
    fn bind_value(self, value: Option<&Value>, ty: ColumnType) -> Self {
        match (value, ty) {
            (None, ColumnType::Text) => self.bind(None::<String>),
            (None, ColumnType::Integer) => self.bind(None::<i32>),
            (None, ColumnType::Bigint) => self.bind(None::<i64>),
            (None, ColumnType::Numeric) => self.bind(None::<Decimal>),
            (None, ColumnType::Date) => self.bind(None::<NaiveDate>),
            (None, ColumnType::Timestamptz) => self.bind(None::<DateTime<Utc>>),
            (None, ColumnType::Boolean) => self.bind(None::<bool>),
            // The range was checked when the cell was parsed.
            (Some(Value::Int(i)), ColumnType::Integer) => self.bind(*i as i32),
            (Some(Value::Int(i)), _) => self.bind(*i),
            (Some(Value::Text(s)), _) => self.bind(s.clone()),
            (Some(Value::Decimal(d)), _) => self.bind(*d),
            (Some(Value::Bool(b)), _) => self.bind(*b),
            (Some(Value::Date(d)), _) => self.bind(*d),
            (Some(Value::Timestamp(t)), _) => self.bind(*t),
        }
    }
}

impl DecodeValue for PgRow {
    /// Every type is read from the wire here, not through sqlx's `try_get`:
    /// sqlx reads numerics, dates and timestamps into rust_decimal and
    /// chrono, which hold less than PostgreSQL: it fails on `NaN`,
    /// `Infinity` and numbers past 28 digits, drops the scale of a zero
    /// (`0.00` came back `0`), and panics on `infinity` dates and
    /// timestamps. And for text and integers its checks of the column's
    /// type cost more than the decoding: a found row's columns took about
    /// 600 instructions each, 15 % of an upsert validation's on PostgreSQL
    /// (callgrind of the server over `bash bench/once.sh`, 20,000 orders
    /// upserted over a prefilled table).
    fn value(&self, index: usize, ty: ColumnType) -> Result<Option<Value>> {
        pg_cell(self, index, ty)?
            .map(|raw| pg_decode(raw, index, ty))
            .transpose()
    }

    /// Without [`pg_cell`]'s check of the column's type by its name, which
    /// took a tenth of an export's time done for every cell (`PERF=1 bash
    /// bench/export.sh … postgres`).
    fn value_of_checked(&self, index: usize, ty: ColumnType) -> Result<Option<Value>> {
        let raw = self.try_get_raw(index)?;
        match raw.is_null() {
            true => Ok(None),
            false => pg_decode(raw, index, ty).map(Some),
        }
    }
}

/// Cell `index` of a PostgreSQL row, checked to be of a type a column of
/// type `ty` reads; `None` for null.
pub fn pg_cell(row: &PgRow, index: usize, ty: ColumnType) -> Result<Option<PgValueRef<'_>>> {
    let raw = row.try_get_raw(index)?;
    // The bytes are read by hand, so the type sqlx would check is checked
    // here: eight bytes of text are no timestamp. (sqlx took `timestamp`
    // for `timestamptz` too, alike on the wire.)
    let expected: &[&str] = match ty {
        // As sqlx reads a `String`.
        ColumnType::Text => &["TEXT", "VARCHAR", "BPCHAR", "NAME", "UNKNOWN", "citext"],
        ColumnType::Integer | ColumnType::Bigint => &["INT4", "INT8", "INT2"],
        ColumnType::Boolean => &["BOOL"],
        ColumnType::Numeric => &["NUMERIC"],
        ColumnType::Date => &["DATE"],
        ColumnType::Timestamptz => &["TIMESTAMPTZ", "TIMESTAMP"],
    };
    let info = raw.type_info();
    if !expected.contains(&info.name()) {
        return Err(StoreError::Corrupt(format!(
            "column {index} is {}, not {}",
            info.name(),
            ty.as_str()
        )));
    }
    Ok((!raw.is_null()).then_some(raw))
}

/// The value of a non-null cell from [`pg_cell`].
pub fn pg_decode(raw: PgValueRef<'_>, index: usize, ty: ColumnType) -> Result<Value> {
    let value = match raw.format() {
        PgValueFormat::Binary => pg_binary(raw.as_bytes(), ty),
        PgValueFormat::Text => raw.as_str().ok().and_then(|t| pg_text(t, ty)),
    };
    value.ok_or_else(|| {
        StoreError::Corrupt(format!("column {index} is no PostgreSQL {}", ty.as_str()))
    })
}

/// Whether a non-null cell from [`pg_cell`] holds exactly `file`, so that
/// [`pg_decode`] would read it back as `file` itself: text by its bytes,
/// without making a `String`; integers, booleans and dates as the decoder
/// reads them, which allocates nothing for them (PostgreSQL's twin of
/// `sqlite::lookup::holds_exactly`). Any other kind or format is decoded and
/// compared as before.
pub fn pg_holds_exactly(raw: &PgValueRef<'_>, file: Option<&Value>, ty: ColumnType) -> bool {
    if raw.format() != PgValueFormat::Binary {
        return false;
    }
    let Ok(bytes) = raw.as_bytes() else {
        return false;
    };
    match (file, ty) {
        (Some(Value::Text(text)), ColumnType::Text) => bytes == text.as_bytes(),
        // Read by the decoder itself, which makes these without allocating.
        (
            Some(file @ (Value::Int(_) | Value::Bool(_) | Value::Date(_))),
            ColumnType::Integer | ColumnType::Bigint | ColumnType::Boolean | ColumnType::Date,
        ) => pg_binary(Ok(bytes), ty).as_ref() == Some(file),
        _ => false,
    }
}

/// A value in PostgreSQL's binary format, as a value of its column or,
/// when it is none here (a `NaN` numeric, an `infinity` date), as
/// PostgreSQL's text of it. `None` when the bytes are not of that type.
fn pg_binary(bytes: Result<&[u8], sqlx::error::BoxDynError>, ty: ColumnType) -> Option<Value> {
    let bytes = bytes.ok()?;
    match ty {
        ColumnType::Text => Some(Value::Text(std::str::from_utf8(bytes).ok()?.to_string())),
        // `int2`, `int4` or `int8`, by its width, big-endian.
        ColumnType::Integer | ColumnType::Bigint => Some(Value::Int(match bytes.len() {
            2 => i16::from_be_bytes(bytes.try_into().ok()?).into(),
            4 => i32::from_be_bytes(bytes.try_into().ok()?).into(),
            8 => i64::from_be_bytes(bytes.try_into().ok()?),
            _ => return None,
        })),
        ColumnType::Boolean => match bytes {
            [b] => Some(Value::Bool(*b != 0)),
            _ => None,
        },
        ColumnType::Numeric => {
            let text = numeric_text(bytes)?;
            Some(match Decimal::from_str_exact(&text) {
                Ok(d) => Value::Decimal(d),
                Err(_) => Value::Text(text),
            })
        }
        ColumnType::Date => {
            let days = i32::from_be_bytes(bytes.try_into().ok()?);
            Some(match days {
                i32::MAX => Value::Text("infinity".into()),
                i32::MIN => Value::Text("-infinity".into()),
                _ => match pg_epoch().checked_add_signed(TimeDelta::days(days.into())) {
                    Some(d) => Value::Date(d),
                    None => Value::Text(pg_date_text(civil(days.into()))),
                },
            })
        }
        ColumnType::Timestamptz => {
            let micros = i64::from_be_bytes(bytes.try_into().ok()?);
            Some(match micros {
                i64::MAX => Value::Text("infinity".into()),
                i64::MIN => Value::Text("-infinity".into()),
                _ => match micros
                    .checked_add(PG_EPOCH_MICROS)
                    .and_then(DateTime::from_timestamp_micros)
                {
                    Some(t) => Value::Timestamp(t),
                    None => Value::Text(pg_timestamp_text(micros)),
                },
            })
        }
    }
}

/// The same in PostgreSQL's text format (the session's zone is UTC).
fn pg_text(t: &str, ty: ColumnType) -> Option<Value> {
    let as_text = || Value::Text(t.to_string());
    match ty {
        ColumnType::Text => Some(as_text()),
        ColumnType::Integer | ColumnType::Bigint => t.parse().ok().map(Value::Int),
        ColumnType::Boolean => match t {
            "t" => Some(Value::Bool(true)),
            "f" => Some(Value::Bool(false)),
            _ => None,
        },
        // What no type here holds stays PostgreSQL's text of it.
        ColumnType::Numeric => {
            Some(Decimal::from_str_exact(t).map_or_else(|_| as_text(), Value::Decimal))
        }
        ColumnType::Date => Some(stored_date(t).map_or_else(as_text, Value::Date)),
        ColumnType::Timestamptz => Some(
            DateTime::parse_from_str(t, "%Y-%m-%d %H:%M:%S%.f%#z")
                .map_or_else(|_| as_text(), |d| Value::Timestamp(d.with_timezone(&Utc))),
        ),
    }
}

/// PostgreSQL's epoch, 2000-01-01: dates count days and timestamps
/// microseconds from it.
fn pg_epoch() -> NaiveDate {
    NaiveDate::from_ymd_opt(2000, 1, 1).unwrap_or_default()
}

/// 2000-01-01T00:00:00Z in microseconds since 1970.
const PG_EPOCH_MICROS: i64 = 946_684_800_000_000;

/// The text PostgreSQL prints for a `numeric` in its binary format
/// (`numeric_out`): `NaN`, `Infinity`, `-Infinity`, or the digits with
/// exactly the value's scale (`0.00`, `10000000000000000000000000000000000000000`).
/// The format: the number of base-10000 digits, the weight of the first,
/// the sign, the display scale, then the digits (each 0 to 9999).
fn numeric_text(bytes: &[u8]) -> Option<String> {
    use std::fmt::Write;
    let word = |i: usize| -> Option<i16> {
        let b = bytes.get(2 * i..2 * i + 2)?;
        Some(i16::from_be_bytes([b[0], b[1]]))
    };
    let (count, weight, sign, scale) = (word(0)?, word(1)?, word(2)? as u16, word(3)?);
    match sign {
        0xC000 => return Some("NaN".into()),
        0xD000 => return Some("Infinity".into()),
        0xF000 => return Some("-Infinity".into()),
        0x0000 | 0x4000 => {}
        _ => return None,
    }
    let count = usize::try_from(count).ok()?;
    let scale = usize::try_from(scale).ok()?;
    if bytes.len() != 8 + 2 * count {
        return None;
    }
    let digits: Vec<i16> = (0..count).map(|i| word(4 + i)).collect::<Option<_>>()?;
    if digits.iter().any(|d| !(0..10_000).contains(d)) {
        return None;
    }
    // The base-10000 digit of weight `w` (10000^w), zero where none is sent.
    let digit = |w: i32| {
        usize::try_from(i32::from(weight) - w)
            .ok()
            .and_then(|i| digits.get(i).copied())
            .unwrap_or(0)
    };
    let mut out = String::new();
    if sign == 0x4000 {
        out.push('-');
    }
    if weight < 0 {
        out.push('0');
    } else {
        let _ = write!(out, "{}", digit(weight.into()));
        for w in (0..i32::from(weight)).rev() {
            let _ = write!(out, "{:04}", digit(w));
        }
    }
    if scale > 0 {
        out.push('.');
        let start = out.len();
        let mut w = -1;
        while out.len() - start < scale {
            let _ = write!(out, "{:04}", digit(w));
            w -= 1;
        }
        out.truncate(start + scale);
    }
    Some(out)
}

/// Year, month and day of a day counted from 2000-01-01, for dates past
/// chrono's years (PostgreSQL reaches 5874897 AD). Howard Hinnant's
/// `civil_from_days`, on the proleptic Gregorian calendar as PostgreSQL's.
fn civil(days_since_2000: i64) -> (i64, i64, i64) {
    let z = days_since_2000 + 10_957 + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    (yoe + era * 400 + i64::from(month <= 2), month, day)
}

/// PostgreSQL's text of a date: `YYYY-MM-DD`, with ` BC` before year 1.
fn pg_date_text((year, month, day): (i64, i64, i64)) -> String {
    let (year, era) = if year <= 0 {
        (1 - year, " BC")
    } else {
        (year, "")
    };
    format!("{year:04}-{month:02}-{day:02}{era}")
}

/// PostgreSQL's text of a `timestamptz` in UTC from its microseconds since
/// 2000-01-01, for instants past chrono's years: `YYYY-MM-DD HH:MM:SS[.f]+00`.
fn pg_timestamp_text(micros: i64) -> String {
    let (days, micros) = (
        micros.div_euclid(86_400_000_000),
        micros.rem_euclid(86_400_000_000),
    );
    let (year, month, day) = civil(days);
    let seconds = micros / 1_000_000;
    let time = format!(
        "{:02}:{:02}:{:02}{}",
        seconds / 3600,
        seconds / 60 % 60,
        seconds % 60,
        fraction((micros % 1_000_000) as u32 * 1000)
    );
    with_time(pg_date_text((year, month, day)), &time)
}

/// `.123457` for nanoseconds, without trailing zeros (none for zero), as
/// PostgreSQL prints seconds.
fn fraction(nanos: u32) -> String {
    if nanos == 0 {
        return String::new();
    }
    let digits = format!(".{nanos:09}");
    digits.trim_end_matches('0').to_string()
}

/// Puts ` HH:MM:SS+00` into a date's text before its era (` BC`).
fn with_time(date: String, time: &str) -> String {
    match date.strip_suffix(" BC") {
        Some(d) => format!("{d} {time}+00 BC"),
        None => format!("{date} {time}+00"),
    }
}

/// A value as PostgreSQL reads it as input (`COPY`, a cast from text):
/// dates and timestamps as PostgreSQL writes them, whatever their year,
/// where chrono's RFC 3339 (`+10000-01-01T00:00:00Z`) fails to parse
/// (`time zone displacement out of range`). A value read from a table may
/// lie outside the years a file may give. Text is sent as it is, so a
/// value read as text (`NaN`) goes back exactly.
pub fn pg_input(value: &Value) -> String {
    match value {
        Value::Date(d) => pg_date_text((d.year().into(), d.month().into(), d.day().into())),
        Value::Timestamp(t) => {
            let date = (t.year().into(), t.month().into(), t.day().into());
            let time = format!(
                "{:02}:{:02}:{:02}{}",
                t.hour(),
                t.minute(),
                t.second(),
                fraction(t.nanosecond())
            );
            with_time(pg_date_text(date), &time)
        }
        other => other.to_text(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A `numeric` in PostgreSQL's binary format.
    fn numeric(weight: i16, sign: u16, scale: i16, digits: &[i16]) -> Vec<u8> {
        let mut out = Vec::new();
        for w in [digits.len() as i16, weight, sign as i16, scale] {
            out.extend_from_slice(&w.to_be_bytes());
        }
        for d in digits {
            out.extend_from_slice(&d.to_be_bytes());
        }
        out
    }

    #[test]
    fn numerics_read_as_postgresql_prints_them() {
        for (bytes, text) in [
            (numeric(0, 0, 2, &[]), "0.00"),
            (numeric(0, 0, 0, &[]), "0"),
            (numeric(0, 0x4000, 3, &[12, 3450]), "-12.345"),
            (numeric(-1, 0, 5, &[1200]), "0.12000"),
            (numeric(-2, 0, 6, &[1200]), "0.000012"),
            (numeric(1, 0, 0, &[1, 0]), "10000"),
            (
                numeric(10, 0, 0, &[1]),
                "10000000000000000000000000000000000000000",
            ),
            (numeric(0, 0xC000, 0, &[]), "NaN"),
            (numeric(0, 0xD000, 0, &[]), "Infinity"),
            (numeric(0, 0xF000, 0, &[]), "-Infinity"),
        ] {
            assert_eq!(numeric_text(&bytes).as_deref(), Some(text));
        }
        assert_eq!(numeric_text(&numeric(0, 0x1234, 0, &[])), None);
        assert_eq!(numeric_text(&numeric(0, 0, 0, &[10_000])), None);
        assert_eq!(
            numeric_text(&[0, 1, 0, 0, 0, 0, 0, 0]),
            None,
            "a digit short"
        );
        let zero = pg_binary(Ok(&numeric(0, 0, 2, &[])), ColumnType::Numeric);
        assert_eq!(zero.map(|v| v.to_text()).as_deref(), Some("0.00"));
        let big = pg_binary(Ok(&numeric(10, 0, 0, &[1])), ColumnType::Numeric);
        assert!(matches!(big, Some(Value::Text(_))), "{big:?}");
    }

    #[test]
    fn text_integers_and_booleans_read_from_either_wire_format() {
        use ColumnType::*;
        let binary = |bytes: &[u8], ty| pg_binary(Ok(bytes), ty);
        // An integer column reads `int2`, `int4` and `int8` by width.
        assert_eq!(
            binary(&(-7i16).to_be_bytes(), Integer),
            Some(Value::Int(-7))
        );
        assert_eq!(
            binary(&i32::MIN.to_be_bytes(), Integer),
            Some(Value::Int(i32::MIN.into()))
        );
        assert_eq!(
            binary(&i64::MAX.to_be_bytes(), Bigint),
            Some(Value::Int(i64::MAX))
        );
        assert_eq!(
            binary(&[0, 0, 1], Bigint),
            None,
            "three bytes are no integer"
        );
        assert_eq!(binary(&[1], Boolean), Some(Value::Bool(true)));
        assert_eq!(binary(&[0], Boolean), Some(Value::Bool(false)));
        assert_eq!(binary(&[0, 1], Boolean), None);
        assert_eq!(
            binary("Ü\t".as_bytes(), Text),
            Some(Value::Text("Ü\t".into()))
        );
        assert_eq!(binary(&[0xff, 0xfe], Text), None, "not UTF-8");
        assert_eq!(pg_text("-42", Integer), Some(Value::Int(-42)));
        assert_eq!(pg_text("4x", Bigint), None);
        assert_eq!(pg_text("t", Boolean), Some(Value::Bool(true)));
        assert_eq!(pg_text("f", Boolean), Some(Value::Bool(false)));
        assert_eq!(pg_text("yes", Boolean), None);
        assert_eq!(pg_text("a b", Text), Some(Value::Text("a b".into())));
        assert_eq!(pg_text("NaN", Numeric), Some(Value::Text("NaN".into())));
        assert_eq!(
            pg_text("infinity", Date),
            Some(Value::Text("infinity".into()))
        );
    }

    #[test]
    fn dates_and_timestamps_past_chrono_read_as_postgresql_prints_them() {
        let date = |days: i32| pg_binary(Ok(&days.to_be_bytes()), ColumnType::Date);
        let moment = |us: i64| pg_binary(Ok(&us.to_be_bytes()), ColumnType::Timestamptz);
        assert_eq!(date(i32::MAX), Some(Value::Text("infinity".into())));
        assert_eq!(moment(i64::MIN), Some(Value::Text("-infinity".into())));
        assert_eq!(
            date(0),
            Some(Value::Date(NaiveDate::from_ymd_opt(2000, 1, 1).unwrap()))
        );
        // PostgreSQL's last date and instant ('5874897-12-31',
        // '294276-12-31 23:59:59.999999+00').
        assert_eq!(
            date(2_145_031_948),
            Some(Value::Text("5874897-12-31".into()))
        );
        assert_eq!(
            moment(9_223_371_331_199_999_999),
            Some(Value::Text("294276-12-31 23:59:59.999999+00".into()))
        );
        // civil() agrees with chrono wherever chrono reaches.
        for days in (-2_000_000..2_000_000).step_by(997) {
            let (y, m, d) = civil(days);
            let c = pg_epoch() + TimeDelta::days(days);
            assert_eq!(
                (y, m, d),
                (c.year().into(), c.month().into(), c.day().into())
            );
        }
    }

    #[test]
    fn postgresql_input_text_has_years_it_parses() {
        let t = |s: &str| Value::Timestamp(DateTime::parse_from_rfc3339(s).unwrap().to_utc());
        assert_eq!(
            pg_input(&t("2026-03-01T01:30:00.123457Z")),
            "2026-03-01 01:30:00.123457+00"
        );
        let far = NaiveDate::from_ymd_opt(10_000, 1, 1).unwrap();
        assert_eq!(
            pg_input(&Value::Timestamp(
                far.and_hms_opt(0, 0, 0).unwrap().and_utc()
            )),
            "10000-01-01 00:00:00+00"
        );
        let bc = NaiveDate::from_ymd_opt(-43, 3, 15).unwrap();
        assert_eq!(pg_input(&Value::Date(bc)), "0044-03-15 BC");
        assert_eq!(
            pg_input(&Value::Timestamp(
                bc.and_hms_milli_opt(12, 0, 0, 500).unwrap().and_utc()
            )),
            "0044-03-15 12:00:00.5+00 BC"
        );
        assert_eq!(pg_input(&Value::Text("NaN".into())), "NaN");
    }
}
