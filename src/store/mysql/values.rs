//! Module values in and out of MariaDB and MySQL: each of its own types,
//! bound as such, and read back through sqlx's decoders, which hold what
//! the server's types hold (a `DECIMAL` at its scale; an unscaled
//! `DECIMAL(56, 28)` with its padding zeros trimmed). A timestamp is sent
//! as a `DATETIME` in UTC (the vendored driver's one change besides
//! `type_info.rs`; sessions run at `+00:00`).

use chrono::{DateTime, NaiveDate, Utc};
use rust_decimal::Decimal;
use sqlx::mysql::{MySql, MySqlArguments, MySqlRow};
use sqlx::query::Query;
use sqlx::{Decode, Row, ValueRef};

use crate::catalog::ColumnType;
use crate::store::error::{Result, StoreError};
use crate::store::values::{BindValue, DecodeValue};
use crate::validate::Value;

impl<'q> BindValue for Query<'q, MySql, MySqlArguments> {
    fn bind_value(self, value: Option<&Value>, ty: ColumnType) -> Self {
        match (value, ty) {
            (None, ColumnType::Text) => self.bind(None::<String>),
            (None, ColumnType::Integer | ColumnType::Bigint) => self.bind(None::<i64>),
            (None, ColumnType::Numeric) => self.bind(None::<Decimal>),
            (None, ColumnType::Date) => self.bind(None::<NaiveDate>),
            (None, ColumnType::Timestamptz) => self.bind(None::<DateTime<Utc>>),
            (None, ColumnType::Boolean) => self.bind(None::<bool>),
            (Some(Value::Int(i)), _) => self.bind(*i),
            (Some(Value::Text(s)), _) => self.bind(s.clone()),
            (Some(Value::Decimal(d)), _) => self.bind(*d),
            (Some(Value::Bool(b)), _) => self.bind(*b),
            (Some(Value::Date(d)), _) => self.bind(*d),
            (Some(Value::Timestamp(t)), _) => self.bind(*t),
        }
    }
}

/// A typed value as `LOAD DATA` reads it into its column: a `DATETIME`'s
/// microseconds in UTC, a boolean as `1` or `0`, a `DECIMAL` with its
/// scale, text as it is.
pub fn mysql_input(value: &Value) -> String {
    match value {
        Value::Date(d) => d.format("%Y-%m-%d").to_string(),
        Value::Timestamp(t) => t.format("%Y-%m-%d %H:%M:%S%.6f").to_string(),
        Value::Bool(b) => if *b { "1" } else { "0" }.to_string(),
        other => other.to_text(),
    }
}

impl DecodeValue for MySqlRow {
    fn value(&self, index: usize, ty: ColumnType) -> Result<Option<Value>> {
        let raw = self.try_get_raw(index)?;
        if raw.is_null() {
            return Ok(None);
        }
        let corrupt = |e: sqlx::error::BoxDynError| {
            StoreError::Corrupt(format!("column {index} is no MySQL {}: {e}", ty.as_str()))
        };
        Ok(Some(match ty {
            ColumnType::Text => Value::Text(self.try_get(index)?),
            ColumnType::Integer | ColumnType::Bigint => Value::Int(self.try_get(index)?),
            ColumnType::Boolean => Value::Bool(self.try_get::<i64, _>(index)? != 0),
            ColumnType::Numeric => {
                let text = <&str as Decode<MySql>>::decode(raw).map_err(corrupt)?;
                decimal(text)
            }
            ColumnType::Date => Value::Date(self.try_get(index)?),
            ColumnType::Timestamptz => Value::Timestamp(self.try_get(index)?),
        }))
    }
}

/// A `DECIMAL`'s text as a number, at its column's scale; the zeros that
/// pad an unscaled column's ([`super::sql::UNSCALED`]) trimmed. What no
/// `Decimal` holds is kept as the server's text.
fn decimal(text: &str) -> Value {
    let trimmed = match text.split_once('.') {
        Some((_, fraction)) if fraction.len() == super::sql::UNSCALED => {
            text.trim_end_matches('0').trim_end_matches('.')
        }
        _ => text,
    };
    Decimal::from_str_exact(trimmed).map_or_else(|_| Value::Text(text.to_string()), Value::Decimal)
}

#[cfg(test)]
mod tests {
    use super::decimal;
    use crate::validate::Value;

    #[test]
    fn decimals_keep_their_scale_but_the_unscaled_padding() {
        let d = |t: &str| match decimal(t) {
            Value::Decimal(d) => d.to_string(),
            other => panic!("{other:?}"),
        };
        assert_eq!(d("4.5000000000000000000000000000"), "4.5");
        assert_eq!(d("100.0000000000000000000000000000"), "100");
        assert_eq!(d("100.0000"), "100.0000");
        assert_eq!(d("100"), "100");
        assert_eq!(d("-0.0100"), "-0.0100");
        // Past a `Decimal`'s 28 digits: the server's text, never rounded.
        let wide = "1234567890123456789012345678.1234567890123456789012345678";
        assert_eq!(decimal(wide), Value::Text(wide.to_string()));
    }
}
