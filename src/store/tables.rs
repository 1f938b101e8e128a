//! The module tables: finding rows by natural key (the row-by-row checks
//! of validation, commit and rollback). The writes themselves are
//! set-based, in `staged`. Every identifier comes from the checked catalog
//! and is quoted; every value is a bound parameter.

use futures::TryStreamExt;
use serde_json::{Map, Value as Json};

use super::db::{Conn, Db};
use super::dialect::Dialect;
use super::error::Result;
use super::found::KeyPlan;
use super::sql::{BATCH, ident, pieces};
use super::values::{BindValue, DecodeValue};
use super::{mysql, postgres, sqlite};
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
    read_row(module, row, first, false)
}

/// [`table_row`]; with `checked`, a row of a result whose column types
/// were checked on an earlier row ([`DecodeValue::value_of_checked`]).
fn read_row<R: sqlx::Row + DecodeValue>(
    module: &Module,
    row: &R,
    first: usize,
    checked: bool,
) -> Result<TableRow>
where
    usize: sqlx::ColumnIndex<R>,
    i64: for<'r> sqlx::Decode<'r, R::Database> + sqlx::Type<R::Database>,
{
    let id: i64 = row.try_get(first)?;
    let mut values = Vec::with_capacity(module.columns.len());
    for (i, col) in module.columns.iter().enumerate() {
        values.push(match checked {
            true => row.value_of_checked(first + 1 + i, col.ty)?,
            false => row.value(first + 1 + i, col.ty)?,
        });
    }
    Ok(TableRow { id, values })
}

/// The plan for this validation's lookups in `module`'s table, counted
/// from the table at the first lookup (`sqlite::lookup::key_plan`,
/// `postgres::lookup::key_plan`).
pub async fn key_plan(conn: &mut Conn<'_>, module: &Module) -> Result<KeyPlan> {
    match conn {
        Conn::Sqlite(c) => sqlite::lookup::key_plan(c, module).await,
        Conn::Postgres(c) => postgres::lookup::key_plan(c, module).await,
        Conn::Mysql(c) => mysql::lookup::key_plan(c, module).await,
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
        Conn::Mysql(c) => mysql::txn::lock_for_writing(c, &table).await,
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
        Conn::Mysql(c) => {
            for (p, row) in mysql::lookup::by_keys(c, module, keys, &select).await? {
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

/// Which rows of a module table an export reads (API.md section 15).
#[derive(Debug, Clone, Default)]
pub struct Selection {
    /// Columns that must hold a value: a catalog position and the value
    /// (`None`: null). The database matches numerics as numbers, so on
    /// SQLite a row may match whose value only resembles the one asked
    /// for ([`Dialect::equals`](super::Dialect::equals)): the caller
    /// confirms each row with `Value::same`.
    pub equal: Vec<(usize, Option<Value>)>,
    /// A job's stage number: only rows whose natural key the job's staged
    /// inserts and updates hold (the rows its commit wrote).
    pub stage: Option<i64>,
}

/// Up to `limit` rows of `selection` in natural-key order, after the row
/// whose key is `after` (the key columns' values, in the order of the
/// module's natural key; `None`: from the first). Each call is one
/// statement along the natural key's unique index, so a reader that
/// pages through a table holds a connection for one page at a time and
/// never skips or repeats a row that stays.
///
/// The order is the database's order of the stored keys: text in the
/// database's collation (PostgreSQL's default one, SQLite's bytes), and on
/// SQLite a `numeric`, `date` or `timestamptz` key by its stored text.
///
/// With [`Selection::stage`] each page reads the job's staged rows once
/// (no index holds them by key, see `stage::retired_indexes`): a job's
/// export costs its staged rows times its pages.
pub async fn page_after(
    conn: &mut Conn<'_>,
    module: &Module,
    selection: &Selection,
    after: Option<&[Value]>,
    limit: i64,
) -> Result<Vec<TableRow>> {
    let sql = page_sql(module, conn.dialect(), selection, after.is_some());
    on_conn!(conn, c => {
        let mut q = sqlx::query(&sql);
        for (v, &i) in after.unwrap_or_default().iter().zip(&module.key_columns) {
            q = q.bind_value(Some(v), module.columns[i].ty);
        }
        for (i, v) in &selection.equal {
            if v.is_some() {
                q = q.bind_value(v.as_ref(), module.columns[*i].ty);
            }
        }
        if let Some(stage) = selection.stage {
            q = q.bind(stage);
        }
        // Each row is read as it arrives, so that the last is read soon
        // after it comes and the next page is asked for at once.
        let mut rows = q.bind(limit).fetch(c);
        let mut page = Vec::new();
        while let Some(row) = rows.try_next().await? {
            let checked = !page.is_empty();
            page.push(read_row(module, &row, 0, checked)?);
        }
        Ok(page)
    })
}

/// How many rows a module's table holds: one `count(*)`, which reads the
/// table (or its smallest index) whole.
pub async fn count(conn: &mut Conn<'_>, module: &Module) -> Result<i64> {
    let sql = format!("SELECT count(*) FROM {}", ident(&module.table));
    on_conn!(conn, c => {
        let n: i64 = sqlx::query_scalar(&sql).fetch_one(c).await?;
        Ok(n)
    })
}

/// Where an export reads its pages ([`read_page`]): on PostgreSQL a pool
/// connection a page; on SQLite a read connection of the export's own, on
/// a blocking thread (`sqlite::pages`), which holds no lock between pages.
#[derive(Default)]
pub struct PageReader {
    sqlite: sqlite::pages::Reader,
}

/// [`page_after`], read through `reader`: one statement a page, no
/// connection of the pool held between pages.
pub async fn read_page(
    db: &Db,
    reader: &PageReader,
    module: &Module,
    selection: &Selection,
    after: Option<&[Value]>,
    limit: i64,
) -> anyhow::Result<Vec<TableRow>> {
    let Db::Sqlite(pool) = db else {
        let mut c = db.acquire().await?;
        return Ok(page_after(&mut c.conn(), module, selection, after, limit).await?);
    };
    let sql = page_sql(module, Dialect::Sqlite, selection, after.is_some());
    // The parameters in the statement's order (see `page_sql`).
    let mut params: Vec<Option<Value>> = after
        .unwrap_or_default()
        .iter()
        .cloned()
        .map(Some)
        .collect();
    params.extend(
        selection
            .equal
            .iter()
            .filter_map(|(_, v)| v.clone())
            .map(Some),
    );
    params.extend(selection.stage.map(|s| Some(Value::Int(s))));
    params.push(Some(Value::Int(limit)));
    let types = module.columns.iter().map(|c| c.ty).collect();
    let rows = reader.sqlite.page(pool, sql, params, types).await?;
    Ok(rows
        .into_iter()
        .map(|(id, values)| TableRow { id, values })
        .collect())
}

/// The statement of [`page_after`]; its parameters, each used once and in
/// this order: the key after which it reads, the values of
/// [`Selection::equal`] that are not null, the stage number, the limit.
fn page_sql(module: &Module, dialect: Dialect, selection: &Selection, after: bool) -> String {
    let mut n = 0;
    let mut param = || {
        n += 1;
        dialect.param(n)
    };
    let key: Vec<String> = (module.key_columns.iter())
        .map(|&i| format!("t.{}", ident(&module.columns[i].name)))
        .collect();
    let tuple = |items: &[String]| match items {
        [one] => one.clone(),
        many => format!("({})", many.join(", ")),
    };
    let mut filters = Vec::new();
    if after {
        let marks: Vec<String> = key.iter().map(|_| param()).collect();
        filters.push(format!("{} > {}", tuple(&key), tuple(&marks)));
    }
    for (i, v) in &selection.equal {
        let column = &module.columns[*i];
        let name = format!("t.{}", ident(&column.name));
        filters.push(match v {
            Some(_) => dialect.equals(&name, &param(), column.ty),
            None => format!("{name} IS NULL"),
        });
    }
    if selection.stage.is_some() {
        let staged: Vec<String> = (module.key_columns.iter())
            .map(|&i| format!("r.{}", super::stage::column(module, i)))
            .collect();
        filters.push(format!(
            "{} IN (SELECT {} FROM {} r WHERE r.job = {} AND r.action IN ('insert', 'update'))",
            tuple(&key),
            staged.join(", "),
            super::stage::table(module),
            param()
        ));
    }
    let filters = match filters.is_empty() {
        true => String::new(),
        false => format!(" WHERE {}", filters.join(" AND ")),
    };
    format!(
        "SELECT {} FROM {} t{filters} ORDER BY {} LIMIT {}",
        select_columns(module, Some("t")),
        ident(&module.table),
        key.join(", "),
        param()
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
    fn a_page_reads_after_the_last_key_in_key_order() {
        use super::{Dialect, Selection, page_sql};
        use crate::validate::Value;
        let catalog = Catalog::builtin();
        let orders = catalog.get("orders").unwrap();
        let status = orders.column_index("status").unwrap();
        let selection = Selection {
            equal: vec![(status, Some(Value::Text("paid".into()))), (0, None)],
            stage: Some(7),
        };
        let sql = page_sql(orders, Dialect::Postgres, &selection, true);
        assert!(
            sql.contains(r#"WHERE (t."order_no", t."sku") > ($1, $2) AND t."status" = $3 AND t."order_no" IS NULL AND (t."order_no", t."sku") IN (SELECT r."v_order_no", r."v_sku" FROM "ig_stage_orders" r WHERE r.job = $4 AND r.action IN ('insert', 'update'))"#),
            "{sql}"
        );
        assert!(
            sql.ends_with(r#"ORDER BY t."order_no", t."sku" LIMIT $5"#),
            "{sql}"
        );
        let products = catalog.get("products").unwrap();
        let first = page_sql(products, Dialect::Sqlite, &Selection::default(), false);
        assert!(
            first.ends_with(r#"FROM "uc_products" t ORDER BY t."sku" LIMIT ?"#),
            "{first}"
        );
        let next = page_sql(products, Dialect::Sqlite, &Selection::default(), true);
        assert!(next.contains(r#"WHERE t."sku" > ? ORDER BY"#), "{next}");
    }

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
