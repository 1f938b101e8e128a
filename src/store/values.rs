//! Module values in and out of each database: how a value is bound as a
//! parameter ([`BindValue`]) and read back from a row ([`DecodeValue`]),
//! implemented by each backend (`sqlite::values`: integers, 0/1 booleans
//! and canonical text for `numeric`, `date` and `timestamptz`;
//! `postgres::values`: its native types, read from the wire).

use chrono::NaiveDate;

use super::error::Result;
use crate::catalog::ColumnType;
use crate::validate::Value;
use crate::validate::value::plain_date;

/// Binds a module value as its database type.
pub trait BindValue: Sized {
    fn bind_value(self, value: Option<&Value>, ty: ColumnType) -> Self;
}

/// Reads a module value back from a result row. Values written by other
/// tools that are no value of the column's type here (`NaN` or `1e40` in a
/// numeric column, a timestamp of `infinity`) come back as
/// [`Value::Text`], the database's own text of them: they compare unequal
/// to every value of a file, the preview shows them, and a rollback
/// writes them back exactly. Never read as null: that lost them.
pub trait DecodeValue {
    fn value(&self, index: usize, ty: ColumnType) -> Result<Option<Value>>;

    /// [`DecodeValue::value`] of a row whose column `index` is known to be
    /// of a type that `ty` reads: another row of the same result was read
    /// with `value`, and a result's columns have one type for every row.
    fn value_of_checked(&self, index: usize, ty: ColumnType) -> Result<Option<Value>> {
        self.value(index, ty)
    }
}

/// A date as either database writes it: `YYYY-MM-DD` ([`plain_date`]);
/// chrono's `FromStr` reads the rest (a signed or five-digit year).
pub(super) fn stored_date(t: &str) -> Option<NaiveDate> {
    plain_date(t).unwrap_or_else(|| t.parse().ok())
}
