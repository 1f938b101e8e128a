//! Key lookups in MariaDB's and MySQL's module tables: the keys of a part
//! go as a derived table of parameters, `SELECT ? AS place, ? AS k1 UNION
//! ALL …`, joined to the table through its natural-key index, each row
//! with its key's place ([`lookup_sql`]); and which values a referenced
//! column holds ([`present`]). Found rows are decoded as any row
//! (`super::values`).

use std::collections::HashSet;

use sqlx::mysql::MySqlRow;
use sqlx::{MySqlConnection, Row};

use crate::catalog::{ColumnType, Module};
use crate::store::dialect::Dialect;
use crate::store::error::{Result, StoreError};
use crate::store::found::{Cell, Found, KeyPlan, Read, Target, Wanted, found, key_at, not_found};
use crate::store::sql::{BATCH, ident, pieces};
use crate::store::values::{BindValue, DecodeValue};
use crate::validate::Value;

/// Whether `module`'s table holds a row (a validation looks nowhere in an
/// empty one). InnoDB joins a part's keys through the unique index at any
/// size, so there is no plan to choose beyond that.
pub async fn key_plan(c: &mut MySqlConnection, module: &Module) -> Result<KeyPlan> {
    let sql = format!("SELECT EXISTS (SELECT 1 FROM {})", ident(&module.table));
    let any: i64 = sqlx::query_scalar(&sql).fetch_one(c).await?;
    Ok(if any == 0 {
        KeyPlan::Empty
    } else {
        KeyPlan::Join
    })
}

/// `(SELECT ? AS place, ? AS k1, … UNION ALL SELECT ?, ?, …) k`: `rows`
/// tuples of a place and `keys` values.
fn keys_table(rows: usize, keys: usize) -> String {
    let first: Vec<String> = std::iter::once("? AS place".to_string())
        .chain((1..=keys).map(|n| format!("? AS k{n}")))
        .collect();
    let rest = format!(" UNION ALL SELECT {}", vec!["?"; keys + 1].join(", "));
    format!(
        "(SELECT {}{}) k",
        first.join(", "),
        rest.repeat(rows.saturating_sub(1))
    )
}

/// The lookup of `rows` keys of `module`: each found row is its key's
/// place (column 0), then what `select` lists of the row `t`.
fn lookup_sql(module: &Module, rows: usize, select: &str) -> String {
    let on: Vec<String> = (module.key_columns.iter().enumerate())
        .map(|(n, &i)| format!("t.{} = k.k{}", ident(&module.columns[i].name), n + 1))
        .collect();
    format!(
        "SELECT k.place, {select} FROM {} JOIN {} t ON {}",
        keys_table(rows, module.key_columns.len()),
        ident(&module.table),
        on.join(" AND ")
    )
}

/// The rows holding the keys `part`, each with its place in `part`.
async fn rows<K>(
    c: &mut MySqlConnection,
    module: &Module,
    part: &[K],
    key: impl Fn(&K, usize) -> Option<&Value>,
    select: &str,
) -> Result<Vec<MySqlRow>> {
    let sql = lookup_sql(module, part.len(), select);
    let mut q = sqlx::query(&sql);
    for (place, k) in part.iter().enumerate() {
        q = q.bind(place as i64);
        for (n, &i) in module.key_columns.iter().enumerate() {
            let value = key(k, n).ok_or_else(|| {
                StoreError::Corrupt(format!("a key looked up in {} lacks a value", module.key))
            })?;
            q = q.bind_value(Some(value), module.columns[i].ty);
        }
    }
    Ok(q.fetch_all(c).await?)
}

/// The place column of a found row, checked to be one of the part's.
fn place(row: &MySqlRow, len: usize) -> Result<Option<usize>> {
    let p: i64 = row.try_get(0)?;
    Ok(usize::try_from(p).ok().filter(|&p| p < len))
}

/// The rows of `module`'s table holding these natural keys: each with the
/// place of its key in `keys`, then what `select` lists of it.
pub async fn by_keys(
    c: &mut MySqlConnection,
    module: &Module,
    keys: &[Vec<Value>],
    select: &str,
) -> Result<Vec<(usize, MySqlRow)>> {
    let mut found = Vec::new();
    for range in pieces(keys.len(), BATCH) {
        let part = &keys[range.clone()];
        for row in rows(c, module, part, |k, n| k.get(n), select).await? {
            if let Some(p) = place(&row, part.len())? {
                found.push((range.start + p, row));
            }
        }
    }
    Ok(found)
}

/// The positions in `values` of those the `key` column of `target`'s table
/// holds; `also` (`{v}` the value) adds others.
pub async fn present(
    c: &mut MySqlConnection,
    target: &Module,
    key: usize,
    values: &[Value],
    also: Option<&str>,
) -> Result<HashSet<usize>> {
    let mut found = HashSet::new();
    let column = &target.columns[key];
    let (t, col) = (ident(&target.table), ident(&column.name));
    let also = also.map_or(String::new(), |a| a.replace("{v}", "k.k1"));
    for range in pieces(values.len(), BATCH) {
        let part = &values[range.clone()];
        let sql = format!(
            "SELECT k.place FROM {} WHERE EXISTS (SELECT 1 FROM {t} t WHERE t.{col} = k.k1){also}",
            keys_table(part.len(), 1)
        );
        let mut q = sqlx::query(&sql);
        for (p, v) in part.iter().enumerate() {
            q = q.bind(p as i64).bind_value(Some(v), column.ty);
        }
        for row in q.fetch_all(&mut *c).await? {
            if let Some(p) = place(&row, part.len())? {
                found.insert(range.start + p);
            }
        }
    }
    Ok(found)
}

/// The lookups of a validation's batch: the found rows' cells of the
/// `provided` columns, decoded.
pub async fn found_rows(
    c: &mut MySqlConnection,
    target: &Target,
    wanted: &[Wanted],
    provided: &[usize],
) -> anyhow::Result<Vec<Option<Found>>> {
    let mut found = not_found(wanted.len());
    let module = &target.module;
    let key_at = key_at(module, provided)?;
    let my = Dialect::Mysql;
    let read = Read::of(my, target, provided);
    for part in pieces(wanted.len(), BATCH) {
        let part_of = &wanted[part.clone()];
        let found_rows = rows(c, module, part_of, |w, n| w.key(&key_at, n), &read.select).await?;
        for row in found_rows {
            let Some(p) = place(&row, part_of.len())? else {
                continue;
            };
            let at = part.start + p;
            let w = &wanted[at];
            found[at] = Some(self::found(
                my,
                target,
                w,
                &read,
                |col, ty: ColumnType, _| Ok(Cell::Value(row.value(col, ty)?)),
            )?);
        }
    }
    Ok(found)
}
