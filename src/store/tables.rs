//! The module tables: finding rows by natural key (the row-by-row checks
//! of validation, commit and rollback). The writes themselves are
//! set-based, in `staged`. Every identifier comes from the checked catalog
//! and is quoted; every value is a bound parameter.

use std::collections::HashMap;

use serde_json::{Map, Value as Json};

use super::values::{BindValue, DecodeValue};
use super::{Conn, Dialect, Result, ident};
use crate::catalog::Module;
use crate::on_conn;
use crate::validate::Value;

/// A row of a module table: its id and every catalog column.
#[derive(Debug, Clone)]
pub struct TableRow {
    pub id: i64,
    pub values: Vec<Option<Value>>,
}

/// The canonical text of a natural key, as validation computes it.
pub fn key_text(module: &Module, values: &[Option<Value>]) -> String {
    let parts: Option<Vec<Value>> = module
        .key_columns
        .iter()
        .map(|&i| values[i].clone())
        .collect();
    match parts {
        Some(parts) => crate::validate::key_text(&parts),
        // Key columns are NOT NULL; a row without one matches no staged key.
        None => String::new(),
    }
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

fn select_columns(module: &Module) -> String {
    let mut cols = vec![ident("id")];
    cols.extend(module.columns.iter().map(|c| ident(&c.name)));
    cols.join(", ")
}

/// Takes the module's table for a commit or rollback: other writers wait
/// until the transaction ends, readers do not. The re-check then sees the
/// table exactly as the writes will find it, and no key can be added
/// between the check and the insert. One table lock instead of a row lock
/// per checked row: `FOR UPDATE` on every row cost 8 of the 9 s of a
/// 100k-row upsert commit. SQLite's write transaction already excludes
/// other writers.
pub async fn lock_for_writing(conn: &mut Conn<'_>, module: &Module) -> Result<()> {
    if conn.dialect() == Dialect::Postgres {
        let sql = format!(
            "LOCK TABLE {} IN SHARE ROW EXCLUSIVE MODE",
            ident(&module.table)
        );
        on_conn!(conn, c => sqlx::query(&sql).execute(c).await.map(|_| ()))?;
    }
    Ok(())
}

/// The rows holding these natural keys, by key text.
pub async fn by_keys(
    conn: &mut Conn<'_>,
    module: &Module,
    keys: &[Vec<Value>],
) -> Result<HashMap<String, TableRow>> {
    let mut found = HashMap::new();
    if keys.is_empty() {
        return Ok(found);
    }
    let width = module.key_columns.len();
    let key_cols: Vec<String> = module.natural_key.iter().map(|c| ident(c)).collect();
    for part in keys.chunks(super::rows::BATCH) {
        let d = conn.dialect();
        let condition = if width == 1 {
            let marks: Vec<String> = (1..=part.len()).map(|n| super::param(d, n)).collect();
            format!("{} IN ({})", key_cols[0], marks.join(", "))
        } else {
            let tuples = super::tuples(d, part.len(), width);
            format!("({}) IN (VALUES {tuples})", key_cols.join(", "))
        };
        let sql = format!(
            "SELECT {} FROM {} WHERE {condition}",
            select_columns(module),
            ident(&module.table)
        );
        on_conn!(conn, c => {
            let mut q = sqlx::query(&sql);
            for key in part {
                for (v, &i) in key.iter().zip(&module.key_columns) {
                    q = q.bind_value(Some(v), module.columns[i].ty);
                }
            }
            for row in q.fetch_all(c).await? {
                let id: i64 = sqlx::Row::try_get(&row, 0)?;
                let values: Vec<Option<Value>> = module.columns.iter().enumerate()
                    .map(|(i, col)| row.value(i + 1, col.ty)).collect();
                found.insert(key_text(module, &values), TableRow { id, values });
            }
        });
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
    let per_statement = (30_000 / width).clamp(1, super::rows::BATCH);
    for part in rows.chunks(per_statement) {
        let sql = format!(
            "INSERT INTO {} ({}) VALUES {}",
            ident(&module.table),
            names.join(", "),
            super::tuples(conn.dialect(), part.len(), width)
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
