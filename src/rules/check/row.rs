//! `row`: a row's typed values as a check's expression reads them.
//!
//! The row is not copied into a CEL map: `row.<column>` looks the column
//! up in the check's own short list of the columns it reads, and converts
//! that one value when the expression reaches it. Text is borrowed, not
//! copied.
//!
//! How each type reads in CEL:
//! - `text` → `string`; `integer` and `bigint` → `int` (so
//!   `row.amount_idr == row.qty * row.unit_price_idr` is exact, and an
//!   overflow is an error); `boolean` → `bool`; `timestamptz` →
//!   `timestamp`.
//! - `numeric` → `double`. CEL has no decimal type. A double holds every
//!   whole amount below 2^53 and every amount of at most 15 significant
//!   digits to the nearest double, so comparisons with numbers
//!   (`row.price > 0`, `row.rate <= 1.5`) and with `int` values (CEL
//!   compares `int` and `double` by value) read as written; arithmetic
//!   between a `numeric` and an `int` column needs `double(row.qty)`, and
//!   sums of fractions are a double's (`0.1 + 0.2 != 0.3`).
//! - `date` → `timestamp` at midnight UTC, so that
//!   `row.order_date >= timestamp('2025-01-01T00:00:00Z')` compares days,
//!   and `getFullYear()`, `getMonth()` and the like work (in UTC).
//! - An empty cell (or one whose value failed its type) is absent:
//!   `has(row.x)` is false and reading `row.x` is an error.

use cel::ExecutionError;
use cel::common::traits::Indexer;
use cel::common::types::{CelBool, CelDouble, CelInt, CelString, CelTimestamp, Type};
use cel::common::value::{CowVal, Val};
use cel::context::VariableResolver;
use chrono::NaiveTime;
use rust_decimal::prelude::ToPrimitive;

use crate::validate::Value;

/// The row's values as validation holds them: `values` in the order of
/// the file's columns, and for each module column its place there.
#[derive(Debug, Clone, Copy)]
pub struct Row<'a> {
    places: &'a [Option<usize>],
    values: &'a [Option<Value>],
}

impl<'a> Row<'a> {
    /// `places[c]` is module column `c`'s place in `values` (see
    /// [`places`]).
    pub fn new(places: &'a [Option<usize>], values: &'a [Option<Value>]) -> Row<'a> {
        Row { places, values }
    }

    /// Module column `column`'s value, if the row has one.
    pub fn get(&self, column: usize) -> Option<&'a Value> {
        let place = (*self.places.get(column)?)?;
        self.values.get(place)?.as_ref()
    }
}

/// Each module column's place among a file's provided columns, from the
/// header's `(module column, file position)` pairs in provided order.
pub fn places(columns: usize, provided: &[(usize, usize)]) -> Vec<Option<usize>> {
    let mut places = vec![None; columns];
    for (place, &(column, _)) in provided.iter().enumerate() {
        if let Some(p) = places.get_mut(column) {
            *p = Some(place);
        }
    }
    places
}

/// The row as one CEL value whose fields are the columns a check reads.
#[derive(Debug, Clone, Copy)]
pub(super) struct RowVal<'a> {
    /// The check's columns: name, module column.
    pub fields: &'a [(Box<str>, usize)],
    pub row: Row<'a>,
}

static ROW_TYPE: Type = Type::new_unspecified_type("importgate.Row");

impl Val for RowVal<'_> {
    fn get_type(&self) -> &Type {
        &ROW_TYPE
    }

    fn cel_type() -> &'static Type {
        &ROW_TYPE
    }

    fn as_indexer<'b, 'v>(&'b self) -> Option<&'b (dyn Indexer + 'v)>
    where
        Self: 'v,
    {
        Some(self)
    }

    fn clone_as_boxed<'v>(&self) -> Box<dyn Val + 'v>
    where
        Self: 'v,
    {
        Box::new(*self)
    }
}

impl<'a> RowVal<'a> {
    /// Column `name`'s value, if the check reads that column and the row
    /// has a value in it.
    fn field<'b>(&self, name: &str) -> Option<CowVal<'b, 'a>> {
        let &(_, column) = self.fields.iter().find(|(n, _)| **n == *name)?;
        self.row.get(column).map(cel_value)
    }
}

impl Indexer for RowVal<'_> {
    fn get<'b, 'v>(&'b self, field: &dyn Val) -> Result<CowVal<'b, 'v>, ExecutionError>
    where
        Self: 'v,
    {
        let name = field
            .downcast_ref::<CelString>()
            .map(CelString::inner)
            .ok_or_else(|| ExecutionError::no_such_key(&format!("{field:?}")))?;
        self.field(name)
            .ok_or_else(|| ExecutionError::no_such_key(name))
    }

    fn steal<'v>(self: Box<Self>, field: &dyn Val) -> Result<Box<dyn Val + 'v>, ExecutionError>
    where
        Self: 'v,
    {
        self.get(field).map(CowVal::into_owned)
    }
}

/// One value as CEL reads it (see the module's documentation).
fn cel_value<'b, 'v>(value: &'v Value) -> CowVal<'b, 'v> {
    match value {
        Value::Text(s) => CowVal::owned(CelString::from(s.as_str())),
        Value::Int(i) => CowVal::owned(CelInt::from(*i)),
        Value::Decimal(d) => CowVal::owned(CelDouble::from(d.to_f64().unwrap_or(f64::NAN))),
        Value::Bool(b) => CowVal::owned(CelBool::from(*b)),
        Value::Date(d) => {
            let midnight = d.and_time(NaiveTime::MIN).and_utc();
            CowVal::owned(CelTimestamp::from(midnight.fixed_offset()))
        }
        Value::Timestamp(t) => CowVal::owned(CelTimestamp::from(t.fixed_offset())),
    }
}

/// Resolves `row`, and the single names `row.<column>` that [`super::direct`]
/// makes of column reads: the value when the cell has one; otherwise
/// nothing, which the interpreter reports as an undeclared name (an empty
/// cell read without `has`).
pub(super) struct RowResolver<'a>(pub RowVal<'a>);

impl VariableResolver for RowResolver<'_> {
    fn resolve<'b>(&'b self, variable: &str) -> Option<CowVal<'b, 'b>> {
        match variable.strip_prefix("row") {
            Some("") => Some(CowVal::Borrowed(&self.0 as &dyn Val)),
            Some(field) => self.0.field(field.strip_prefix('.')?),
            None => None,
        }
    }
}
