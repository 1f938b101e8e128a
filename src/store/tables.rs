//! The module tables: finding rows by natural key (the row-by-row checks
//! of validation, commit and rollback). The writes themselves are
//! set-based, in `staged`. Every identifier comes from the checked catalog
//! and is quoted; every value is a bound parameter.

use serde_json::{Map, Value as Json};

use super::db::Conn;
use super::error::Result;
use super::found::KeyPlan;
use super::sql::{BATCH, ident, pieces};
use super::values::{BindValue, DecodeValue};
use super::{postgres, sqlite};
use crate::catalog::Module;
use crate::on_conn;
use crate::validate::Value;

/// A row of a module table: its id and every catalog column.
#[derive(Debug, Clone)]
pub struct TableRow {
    pub id: i64,
    pub values: Vec<Option<Value>>,
}

/// Reads a natural key back from its canonical text.
pub fn key_values(module: &Module, nkey: &str) -> Option<Vec<Value>> {
    let parts: Vec<Json> = serde_json::from_str(nkey).ok()?;
    if parts.len() != module.key_columns.len() {
        return None;
    }
    module
        .key_columns
        .iter()
        .zip(&parts)
        .map(|(&i, j)| Value::from_json(module.columns[i].ty, j).flatten())
        .collect()
}

pub(super) fn select_columns(module: &Module, table: Option<&str>) -> String {
    let prefix = table.map(|t| format!("{t}.")).unwrap_or_default();
    let mut cols = vec![format!("{prefix}{}", ident("id"))];
    cols.extend(
        module
            .columns
            .iter()
            .map(|c| format!("{prefix}{}", ident(&c.name))),
    );
    cols.join(", ")
}

/// A row selected with [`select_columns`], its id in column `first`.
fn table_row<R: sqlx::Row + DecodeValue>(module: &Module, row: &R, first: usize) -> Result<TableRow>
where
    usize: sqlx::ColumnIndex<R>,
    i64: for<'r> sqlx::Decode<'r, R::Database> + sqlx::Type<R::Database>,
{
    let id: i64 = row.try_get(first)?;
    let values = module
        .columns
        .iter()
        .enumerate()
        .map(|(i, col)| row.value(first + 1 + i, col.ty))
        .collect::<Result<_>>()?;
    Ok(TableRow { id, values })
}

/// The plan for this validation's lookups in `module`'s table, counted
/// from the table at the first lookup (`sqlite::lookup::key_plan`,
/// `postgres::lookup::key_plan`).
pub async fn key_plan(conn: &mut Conn<'_>, module: &Module) -> Result<KeyPlan> {
    match conn {
        Conn::Sqlite(c) => sqlite::lookup::key_plan(c, module).await,
        Conn::Postgres(c) => postgres::lookup::key_plan(c, module).await,
    }
}

/// Takes the module's table for a commit or rollback: other writers wait
/// until the transaction ends, readers do not. The re-check then sees the
/// table exactly as the writes will find it, and no key can be added
/// between the check and the insert. One table lock instead of a row lock
/// per checked row: `FOR UPDATE` on every row cost 8 of the 9 s of a
/// 100k-row upsert commit. SQLite's write transaction already excludes
/// other writers.
///
/// The transaction also gets the memory to hash in that the database lets
/// it ask for (`txn::join_memory`): its writes join a job's staged rows
/// with the table.
pub async fn lock_for_writing(conn: &mut Conn<'_>, module: &Module) -> Result<()> {
    let table = ident(&module.table);
    match conn {
        Conn::Sqlite(c) => sqlite::txn::lock_for_writing(c, &table).await,
        Conn::Postgres(c) => postgres::txn::lock_for_writing(c, &table).await,
    }
}

/// The rows holding these natural keys (each in the order of the
/// module's key columns), in the keys' order: `None` for a key the table
/// does not hold. (A validation's lookups are `lookup::Lookup`'s.)
pub async fn by_keys(
    conn: &mut Conn<'_>,
    module: &Module,
    keys: &[Vec<Value>],
) -> Result<Vec<Option<TableRow>>> {
    let mut found = vec![None; keys.len()];
    let select = select_columns(module, Some("t"));
    let mut place = |p: usize, row| {
        if let Some(slot) = found.get_mut(p) {
            *slot = Some(row);
        }
    };
    match conn {
        Conn::Sqlite(c) => {
            for (p, row) in sqlite::lookup::by_keys(c, module, keys, &select).await? {
                place(p, table_row(module, &row, 1)?);
            }
        }
        Conn::Postgres(c) => {
            for (p, row) in postgres::lookup::by_keys(c, module, keys, &select).await? {
                place(p, table_row(module, &row, 1)?);
            }
        }
    }
    Ok(found)
}

/// Inserts whole rows (every catalog column, in catalog order) outside any
/// job: for seeding tables (the demo). Imports write set-based, in `staged`.
pub async fn insert(
    conn: &mut Conn<'_>,
    module: &Module,
    rows: &[Vec<Option<Value>>],
) -> Result<()> {
    let width = module.columns.len();
    let names: Vec<String> = module.columns.iter().map(|c| ident(&c.name)).collect();
    let per_statement = (30_000 / width).clamp(1, BATCH);
    for range in pieces(rows.len(), per_statement) {
        let part = &rows[range];
        let sql = format!(
            "INSERT INTO {} ({}) VALUES {}",
            ident(&module.table),
            names.join(", "),
            conn.dialect().tuples(part.len(), width)
        );
        on_conn!(conn, c => {
            let mut q = sqlx::query(&sql);
            for row in part {
                for (v, col) in row.iter().zip(&module.columns) {
                    q = q.bind_value(v.as_ref(), col.ty);
                }
            }
            q.execute(c).await?.rows_affected()
        });
    }
    Ok(())
}

/// Sets column `set` of the row whose natural key is `key` (the key
/// columns' values, in the catalog's order) to `value`, outside any job:
/// another system's change (the demo). How many rows changed.
pub async fn set_cell(
    conn: &mut Conn<'_>,
    module: &Module,
    key: &[Value],
    set: usize,
    value: Option<&Value>,
) -> Result<u64> {
    let sql = set_cell_sql(module, set);
    let ty = module.columns[set].ty;
    Ok(on_conn!(conn, c => {
        let mut q = sqlx::query(&sql).bind_value(value, ty);
        for (v, &i) in key.iter().zip(&module.key_columns) {
            q = q.bind_value(Some(v), module.columns[i].ty);
        }
        q.execute(c).await?.rows_affected()
    }))
}

/// `UPDATE` of column `set` of `module`'s table, its value `$1`, the row
/// found by its natural key, `$2` on.
fn set_cell_sql(module: &Module, set: usize) -> String {
    let found: Vec<String> = (module.key_columns.iter().enumerate())
        .map(|(n, &i)| format!("{} = ${}", ident(&module.columns[i].name), n + 2))
        .collect();
    format!(
        "UPDATE {} SET {} = $1 WHERE {}",
        ident(&module.table),
        ident(&module.columns[set].name),
        found.join(" AND ")
    )
}

/// A whole row from a JSON object of its columns (the demo's seed rows).
pub fn row_from_json(module: &Module, obj: &Map<String, Json>) -> Vec<Option<Value>> {
    module
        .columns
        .iter()
        .map(|c| {
            obj.get(&c.name)
                .and_then(|j| Value::from_json(c.ty, j))
                .flatten()
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use crate::catalog::Catalog;

    #[test]
    fn a_cell_is_set_in_the_row_found_by_its_natural_key() {
        let catalog = Catalog::builtin();
        let products = catalog.get("products").unwrap();
        let set = products.column_index("stock_qty").unwrap();
        let sql = super::set_cell_sql(products, set);
        assert!(sql.starts_with("UPDATE "), "{sql}");
        assert!(
            sql.contains(r#"SET "stock_qty" = $1 WHERE "sku" = $2"#),
            "{sql}"
        );
    }
}
