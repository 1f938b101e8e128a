//! A module with a column of every type, for the rules' tests.

use std::sync::Arc;

use crate::catalog::{Catalog, Module};
use crate::validate::Value;

use super::check::{Row, places};

const CATALOG: &str = r#"
[[module]]
key = "sales"
table = "t_sales"
natural_key = ["order_no"]

[[module.column]]
name = "order_no"
type = "text"
required = true

[[module.column]]
name = "qty"
type = "integer"

[[module.column]]
name = "unit_price_idr"
type = "bigint"

[[module.column]]
name = "amount_idr"
type = "bigint"

[[module.column]]
name = "rate"
type = "numeric"

[[module.column]]
name = "method"
type = "text"

[[module.column]]
name = "bank_ref"
type = "text"

[[module.column]]
name = "sku"
type = "text"

[[module.column]]
name = "notes"
type = "text"

[[module.column]]
name = "paid_at"
type = "timestamptz"

[[module.column]]
name = "order_date"
type = "date"

[[module.column]]
name = "paid"
type = "boolean"

[[module.column]]
name = "wa_number"
type = "text"
"#;

pub fn module() -> Arc<Module> {
    let catalog = Catalog::from_toml(CATALOG).expect("the test catalog");
    catalog.get("sales").expect("the sales module").clone()
}

/// A row's values by column name, the rest empty, held for [`Row`]s.
pub struct Values {
    places: Vec<Option<usize>>,
    values: Vec<Option<Value>>,
}

impl Values {
    pub fn of(module: &Module, given: &[(&str, Value)]) -> Values {
        let provided: Vec<(usize, usize)> = (given.iter().enumerate())
            .map(|(i, (name, _))| (module.column_index(name).expect("a column"), i))
            .collect();
        Values {
            places: places(module.columns.len(), &provided),
            values: given.iter().map(|(_, v)| Some(v.clone())).collect(),
        }
    }

    pub fn row(&self) -> Row<'_> {
        Row::new(&self.places, &self.values)
    }
}

pub fn text(s: &str) -> Value {
    Value::Text(s.to_string())
}
