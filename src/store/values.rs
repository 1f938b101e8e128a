//! Module values in and out of each database: PostgreSQL gets its native
//! types; SQLite gets integers, 0/1 booleans and canonical text for
//! `numeric`, `date` and `timestamptz` (see `schema::sql_type`).

use chrono::{DateTime, Datelike, NaiveDate, NaiveDateTime, Timelike, Utc};
use rust_decimal::Decimal;
use sqlx::postgres::{PgArguments, PgRow};
use sqlx::query::Query;
use sqlx::sqlite::{SqliteArguments, SqliteRow};
use sqlx::{Postgres, Row, Sqlite, TypeInfo, ValueRef};

use crate::catalog::ColumnType;
use crate::validate::Value;

/// Binds a module value as its database type.
pub trait BindValue: Sized {
    fn bind_value(self, value: Option<&Value>, ty: ColumnType) -> Self;
}

impl<'q> BindValue for Query<'q, Sqlite, SqliteArguments<'q>> {
    fn bind_value(self, value: Option<&Value>, ty: ColumnType) -> Self {
        match value {
            None => match ty {
                ColumnType::Integer | ColumnType::Bigint => self.bind(None::<i64>),
                ColumnType::Boolean => self.bind(None::<bool>),
                _ => self.bind(None::<String>),
            },
            Some(Value::Int(i)) => self.bind(*i),
            Some(Value::Bool(b)) => self.bind(*b),
            Some(other) => self.bind(other.to_text()),
        }
    }
}

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

/// Reads a module value back from a result row. Values written by other
/// tools that do not parse as the column's type come back as text, so they
/// compare unequal instead of failing the job.
pub trait DecodeValue {
    fn value(&self, index: usize, ty: ColumnType) -> Option<Value>;
}

impl DecodeValue for SqliteRow {
    fn value(&self, index: usize, ty: ColumnType) -> Option<Value> {
        // The value's own storage class decides how it is read. Trying an
        // integer first built a type-mismatch error, with its formatted
        // message, for every text cell read back: a tenth of the CPU time
        // of validating a file whose rows are all in the table already.
        let raw = self.try_get_raw(index).ok()?;
        if raw.is_null() {
            return None;
        }
        match raw.type_info().name() {
            "INTEGER" => {
                let i: i64 = self.try_get(index).ok()?;
                Some(match ty {
                    ColumnType::Boolean => Value::Bool(i != 0),
                    ColumnType::Numeric => Value::Decimal(Decimal::from(i)),
                    ColumnType::Text => Value::Text(i.to_string()),
                    _ => Value::Int(i),
                })
            }
            "REAL" => {
                let f: f64 = self.try_get(index).ok()?;
                Some(parse_text(&f.to_string(), ty))
            }
            _ => {
                let text: String = self.try_get(index).ok()?;
                Some(parse_text(&text, ty))
            }
        }
    }
}

fn parse_text(t: &str, ty: ColumnType) -> Value {
    let parsed = match ty {
        ColumnType::Numeric => t.parse::<Decimal>().ok().map(Value::Decimal),
        // `FromStr` reads `%Y-%m-%d` without interpreting a format string.
        ColumnType::Date => t.parse::<NaiveDate>().ok().map(Value::Date),
        ColumnType::Timestamptz => DateTime::parse_from_rfc3339(t)
            .map(|d| d.with_timezone(&Utc))
            .ok()
            .or_else(|| {
                NaiveDateTime::parse_from_str(t, "%Y-%m-%d %H:%M:%S%.f")
                    .ok()
                    .map(|n| n.and_utc())
            })
            .map(Value::Timestamp),
        ColumnType::Integer | ColumnType::Bigint => t.parse().ok().map(Value::Int),
        ColumnType::Boolean => match t {
            "1" | "true" => Some(Value::Bool(true)),
            "0" | "false" => Some(Value::Bool(false)),
            _ => None,
        },
        ColumnType::Text => None,
    };
    parsed.unwrap_or_else(|| Value::Text(t.to_string()))
}

impl DecodeValue for PgRow {
    fn value(&self, index: usize, ty: ColumnType) -> Option<Value> {
        let got = match ty {
            ColumnType::Text => self
                .try_get::<Option<String>, _>(index)
                .map(|v| v.map(Value::Text)),
            ColumnType::Integer => self
                .try_get::<Option<i32>, _>(index)
                .map(|v| v.map(|i| Value::Int(i as i64))),
            ColumnType::Bigint => self
                .try_get::<Option<i64>, _>(index)
                .map(|v| v.map(Value::Int)),
            ColumnType::Numeric => self
                .try_get::<Option<Decimal>, _>(index)
                .map(|v| v.map(Value::Decimal)),
            ColumnType::Date => self
                .try_get::<Option<NaiveDate>, _>(index)
                .map(|v| v.map(Value::Date)),
            ColumnType::Timestamptz => self
                .try_get::<Option<DateTime<Utc>>, _>(index)
                .map(|v| v.map(Value::Timestamp)),
            ColumnType::Boolean => self
                .try_get::<Option<bool>, _>(index)
                .map(|v| v.map(Value::Bool)),
        };
        got.ok().flatten()
    }
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
/// lie outside the years a file may give. Text is sent as it is.
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
