//! Module values in and out of SQLite: integers and booleans as its
//! integers, everything else as text (`sql::column_type`), read back by
//! each cell's own storage class, through sqlx and through `rusqlite`
//! ([`super::bound`]) alike.

use std::borrow::Cow;

use chrono::{DateTime, NaiveDateTime, Utc};
use rusqlite::types::ValueRef as SqliteCell;
use rust_decimal::Decimal;
use sqlx::query::Query;
use sqlx::sqlite::{SqliteArguments, SqliteRow};
use sqlx::{Row, Sqlite, TypeInfo, ValueRef};

use super::bound::Param;
use crate::catalog::ColumnType;
use crate::store::error::{Result, StoreError};
use crate::store::values::{BindValue, DecodeValue, stored_date};
use crate::validate::Value;
use crate::validate::value::date_digits;

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

impl DecodeValue for SqliteRow {
    fn value(&self, index: usize, ty: ColumnType) -> Result<Option<Value>> {
        // The value's own storage class decides how it is read. Trying an
        // integer first built a type-mismatch error, with its formatted
        // message, for every text cell read back: a tenth of the CPU time
        // of validating a file whose rows are all in the table already.
        let raw = self.try_get_raw(index)?;
        if raw.is_null() {
            return Ok(None);
        }
        Ok(Some(match raw.type_info().name() {
            "INTEGER" => stored_value(Stored::Int(self.try_get(index)?), ty),
            "REAL" => stored_value(Stored::Real(self.try_get(index)?), ty),
            _ => {
                let text: String = self.try_get(index)?;
                stored_value(Stored::Text(&text), ty)
            }
        }))
    }
}

/// A module value read through `rusqlite` (the lookups, `super::lookup`),
/// exactly as [`DecodeValue`] reads it through sqlx.
pub fn from_sqlite(raw: SqliteCell<'_>, ty: ColumnType) -> Result<Option<Value>> {
    Ok(Some(match raw {
        SqliteCell::Null => return Ok(None),
        SqliteCell::Integer(i) => stored_value(Stored::Int(i), ty),
        SqliteCell::Real(f) => stored_value(Stored::Real(f), ty),
        SqliteCell::Text(t) | SqliteCell::Blob(t) => {
            let text = std::str::from_utf8(t)
                .map_err(|_| StoreError::Corrupt(format!("a {ty:?} cell is not UTF-8 text")))?;
            stored_value(Stored::Text(text), ty)
        }
    }))
}

/// A module value as a SQLite parameter, stored as sqlx's SQLite binding
/// ([`BindValue`]) stores it: integers and booleans as integers,
/// everything else as its text. Bound in place ([`super::bound`]).
pub fn to_param(v: &Value) -> Param<'_> {
    match v {
        Value::Int(i) => Param::Int(*i),
        Value::Bool(b) => Param::Int(i64::from(*b)),
        Value::Text(s) => Param::Text(Cow::Borrowed(s)),
        Value::Date(d) => {
            date_digits(d).map_or_else(|| Param::Text(Cow::Owned(v.to_text())), Param::Date)
        }
        other => Param::Text(Cow::Owned(other.to_text())),
    }
}

/// A non-null SQLite cell by its storage class.
enum Stored<'a> {
    Int(i64),
    Real(f64),
    Text(&'a str),
}

/// The module value of a stored SQLite cell in a column of type `ty`.
fn stored_value(cell: Stored<'_>, ty: ColumnType) -> Value {
    match cell {
        Stored::Int(i) => match ty {
            ColumnType::Boolean => Value::Bool(i != 0),
            ColumnType::Numeric => Value::Decimal(Decimal::from(i)),
            ColumnType::Text => Value::Text(i.to_string()),
            _ => Value::Int(i),
        },
        Stored::Real(f) => parse_text(&f.to_string(), ty),
        Stored::Text(t) => parse_text(t, ty),
    }
}

fn parse_text(t: &str, ty: ColumnType) -> Value {
    let parsed = match ty {
        // Exact: `Decimal::from_str` rounds digits past 28 and reads
        // exponents, so the value written back would not be the text read.
        ColumnType::Numeric => Decimal::from_str_exact(t).ok().map(Value::Decimal),
        ColumnType::Date => stored_date(t).map(Value::Date),
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
