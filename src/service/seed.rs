//! Rows written into a module table outside the gate, as another system
//! does: the business data that existed before anyone used importgate
//! ([`fill`]), and a change made to a row while an import of it waits at
//! the gate ([`change`]). And the ledger's clock set back while the demo
//! tells its stories ([`clock_back`]), so they span a few days.
//!
//! Only the demo calls it, to show what the gate does about such data
//! (updates find rows to change; a commit refuses rows changed since
//! their preview). Every real write goes through a job and the gate, so
//! both refuse outside simulation.

use serde_json::{Map, Value as Json};

use super::{App, Error, Result};
use crate::catalog::Module;
use crate::store::tables;
use crate::validate::Value;

/// Puts rows into `module`'s table as they are, each a JSON object of its
/// columns (one left out, or not of its column's type, is null): data
/// that was there before importgate. How many rows.
pub async fn fill(app: &App, module: &str, rows: &[Map<String, Json>]) -> Result<usize> {
    simulation_only(app)?;
    let module = app.module(module)?;
    let rows: Vec<_> = rows
        .iter()
        .map(|obj| tables::row_from_json(module, obj))
        .collect();
    let mut c = app.db.acquire().await?;
    tables::insert(&mut c.conn(), module, &rows).await?;
    Ok(rows.len())
}

/// Sets `column` of the row of `module` whose natural key is `key` (the
/// key columns' values, in the catalog's order) to `value`, as another
/// system would between an import's preview and its decision. How many
/// rows changed: 0 when no row has that key.
pub async fn change(
    app: &App,
    module: &str,
    key: &[Json],
    column: &str,
    value: &Json,
) -> Result<u64> {
    simulation_only(app)?;
    let module = app.module(module)?;
    let set = module.column_index(column).ok_or_else(|| {
        Error::invalid(
            "column",
            format!("{column:?} is not a column of {}", module.key),
        )
    })?;
    let ty = module.columns[set].ty;
    let value = Value::from_json(ty, value)
        .ok_or_else(|| Error::invalid("value", format!("{value} is no value of {column}")))?;
    let key = key_values(module, key)?;
    let mut c = app.db.acquire().await?;
    Ok(tables::set_cell(&mut c.conn(), module, &key, set, value.as_ref()).await?)
}

/// Writes to module tables outside the gate are the demo's only.
fn simulation_only(app: &App) -> Result<()> {
    if app.settings.simulate {
        Ok(())
    } else {
        Err(Error::Forbidden(
            "rows are written outside the gate only in simulation".into(),
        ))
    }
}

/// A natural key's values, typed by their columns; none of them null.
fn key_values(module: &Module, key: &[Json]) -> Result<Vec<Value>> {
    let bad = |why: String| Error::invalid("key", why);
    if key.len() != module.key_columns.len() {
        let names = module.natural_key.join(", ");
        return Err(bad(format!("the key of {} is ({names})", module.key)));
    }
    key.iter()
        .zip(&module.key_columns)
        .map(|(j, &i)| {
            let col = &module.columns[i];
            Value::from_json(col.ty, j)
                .flatten()
                .ok_or_else(|| bad(format!("{j} is no value of {}", col.name)))
        })
        .collect()
}

/// Sets the ledger's clock `ms` milliseconds back (0: on time), for the
/// demo's process only (`store::set_clock_back`).
pub fn clock_back(ms: i64) {
    crate::store::set_clock_back(ms);
}

/// Moves the ledger's clock `ms` milliseconds nearer the wall clock.
pub fn clock_forward(ms: i64) {
    crate::store::wind_clock_forward(ms);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::catalog::Catalog;

    #[test]
    fn a_key_is_as_long_as_the_natural_key_and_never_null() {
        let catalog = Catalog::builtin();
        let products = catalog.get("products").unwrap();
        let sku = serde_json::json!("SKU-000002");
        assert_eq!(
            key_values(products, std::slice::from_ref(&sku)).unwrap(),
            [Value::Text("SKU-000002".into())]
        );
        assert!(key_values(products, &[]).is_err());
        assert!(key_values(products, &[Json::Null]).is_err());
        assert!(key_values(products, &[sku.clone(), sku]).is_err());
    }
}
