//! Set-based writes from the staged rows of a job to its module table.
//!
//! A job's validated rows sit in `ig_job_rows` as JSON. Inserting them, and
//! undoing those inserts, is one SQL statement each that reads the JSON
//! inside the database (PostgreSQL `->>` with a cast to the column's type,
//! SQLite `json_extract`), so a million rows never travel through the
//! service. Updates keep a row-by-row check in the commit module (the
//! before-image of each row must be recorded), then apply here in one
//! statement as well.

use super::{Conn, Dialect, Result, ident};
use crate::catalog::{ColumnType, Module};
use crate::on_conn;

/// A string literal for SQL. Only catalog identifiers ever reach it (they
/// are `[a-z0-9_]`), but it escapes quotes anyway.
fn literal(s: &str) -> String {
    format!("'{}'", s.replace('\'', "''"))
}

fn pg_type(ty: ColumnType) -> &'static str {
    match ty {
        ColumnType::Text => "text",
        ColumnType::Integer => "integer",
        ColumnType::Bigint => "bigint",
        ColumnType::Numeric => "numeric",
        ColumnType::Date => "date",
        ColumnType::Timestamptz => "timestamptz",
        ColumnType::Boolean => "boolean",
    }
}

/// The SQL expression for field `name` of the JSON text in column `src`,
/// as the column's type. The JSON was written by `Value::to_json`, so
/// SQLite gets exactly the representation `store::values` binds (numbers
/// as integers, `true` as 1, decimals, dates and timestamps as text).
fn field(dialect: Dialect, src: &str, name: &str, ty: ColumnType) -> String {
    match dialect {
        Dialect::Postgres => format!("(({src})::jsonb ->> {})::{}", literal(name), pg_type(ty)),
        Dialect::Sqlite => format!("json_extract({src}, {})", literal(&format!("$.{name}"))),
    }
}

/// `t.k1 = <r.vals.k1> AND …`: a staged row meets its target row.
fn key_match(dialect: Dialect, module: &Module, target: &str, src: &str) -> String {
    module
        .key_columns
        .iter()
        .map(|&i| {
            let c = &module.columns[i];
            format!(
                "{target}.{} = {}",
                ident(&c.name),
                field(dialect, src, &c.name, c.ty)
            )
        })
        .collect::<Vec<_>>()
        .join(" AND ")
}

/// Null-safe equality in each dialect.
fn same(dialect: Dialect, a: &str, b: &str) -> String {
    match dialect {
        Dialect::Postgres => format!("{a} IS NOT DISTINCT FROM {b}"),
        Dialect::Sqlite => format!("{a} IS {b}"),
    }
}

/// Rows found by a check: how many in all, and the first ones (row number,
/// natural key text).
pub struct Found {
    pub total: i64,
    pub first: Vec<(i64, String)>,
}

/// Runs a `SELECT r.row_no, r.nkey FROM … WHERE {condition}` check.
async fn find(conn: &mut Conn<'_>, from_where: &str, job_id: &str, listed: i64) -> Result<Found> {
    let list = format!("SELECT r.row_no, r.nkey {from_where} ORDER BY r.seq LIMIT {listed}");
    let first: Vec<(i64, Option<String>)> =
        on_conn!(conn, c => sqlx::query_as(&list).bind(job_id).fetch_all(c).await)?;
    let total = if (first.len() as i64) < listed {
        first.len() as i64
    } else {
        let count = format!("SELECT COUNT(*) {from_where}");
        on_conn!(conn, c => sqlx::query_scalar(&count).bind(job_id).fetch_one(c).await)?
    };
    Ok(Found {
        total,
        first: first
            .into_iter()
            .map(|(r, k)| (r, k.unwrap_or_default()))
            .collect(),
    })
}

/// Staged inserts whose key is in the table now (it was free at preview).
pub async fn taken_keys(
    conn: &mut Conn<'_>,
    module: &Module,
    job_id: &str,
    listed: i64,
) -> Result<Found> {
    let d = conn.dialect();
    let t = ident(&module.table);
    let sql = format!(
        "FROM ig_job_rows r JOIN {t} ON {} WHERE r.job_id = $1 AND r.action = 'insert'",
        key_match(d, module, &t, "r.vals")
    );
    find(conn, &sql, job_id, listed).await
}

/// Inserts every staged insert of the job; `provided` are the columns the
/// file gave (the others are null).
pub async fn insert(
    conn: &mut Conn<'_>,
    module: &Module,
    job_id: &str,
    provided: &[usize],
) -> Result<u64> {
    let d = conn.dialect();
    let names: Vec<String> = provided
        .iter()
        .map(|&i| ident(&module.columns[i].name))
        .collect();
    let fields: Vec<String> = provided
        .iter()
        .map(|&i| field(d, "r.vals", &module.columns[i].name, module.columns[i].ty))
        .collect();
    let sql = format!(
        "INSERT INTO {} ({}) SELECT {} FROM ig_job_rows r \
         WHERE r.job_id = $1 AND r.action = 'insert' ORDER BY r.seq",
        ident(&module.table),
        names.join(", "),
        fields.join(", ")
    );
    Ok(
        on_conn!(conn, c => sqlx::query(&sql).bind(job_id).execute(c).await.map(|r| r.rows_affected()))?,
    )
}

/// Writes the file's columns over every staged update of the job.
pub async fn update(
    conn: &mut Conn<'_>,
    module: &Module,
    job_id: &str,
    provided: &[usize],
) -> Result<u64> {
    let d = conn.dialect();
    let t = ident(&module.table);
    let sets: Vec<String> = provided
        .iter()
        .filter(|i| !module.key_columns.contains(i))
        .map(|&i| {
            let c = &module.columns[i];
            format!("{} = {}", ident(&c.name), field(d, "r.vals", &c.name, c.ty))
        })
        .collect();
    if sets.is_empty() {
        return Ok(0);
    }
    let sql = format!(
        "UPDATE {t} SET {} FROM ig_job_rows r \
         WHERE r.job_id = $1 AND r.action = 'update' AND {}",
        sets.join(", "),
        key_match(d, module, &t, "r.vals")
    );
    Ok(
        on_conn!(conn, c => sqlx::query(&sql).bind(job_id).execute(c).await.map(|r| r.rows_affected()))?,
    )
}

/// Rows the job inserted that are gone or differ from what was inserted
/// (a rollback conflict).
pub async fn changed_inserts(
    conn: &mut Conn<'_>,
    module: &Module,
    job_id: &str,
    provided: &[usize],
    listed: i64,
) -> Result<Found> {
    let d = conn.dialect();
    let t = ident(&module.table);
    let unchanged: Vec<String> = module
        .columns
        .iter()
        .enumerate()
        .map(|(i, c)| {
            let col = format!("{t}.{}", ident(&c.name));
            if provided.contains(&i) {
                same(d, &col, &field(d, "r.vals", &c.name, c.ty))
            } else {
                format!("{col} IS NULL")
            }
        })
        .collect();
    let sql = format!(
        "FROM ig_job_rows r LEFT JOIN {t} ON {} \
         WHERE r.job_id = $1 AND r.action = 'insert' AND ({t}.{} IS NULL OR NOT ({}))",
        key_match(d, module, &t, "r.vals"),
        ident("id"),
        unchanged.join(" AND ")
    );
    find(conn, &sql, job_id, listed).await
}

/// Deletes the rows the job inserted.
pub async fn delete_inserted(conn: &mut Conn<'_>, module: &Module, job_id: &str) -> Result<u64> {
    let d = conn.dialect();
    let t = ident(&module.table);
    let sql = format!(
        "DELETE FROM {t} WHERE {id} IN (SELECT {t}.{id} FROM ig_job_rows r JOIN {t} ON {} \
         WHERE r.job_id = $1 AND r.action = 'insert')",
        key_match(d, module, &t, "r.vals"),
        id = ident("id"),
    );
    Ok(
        on_conn!(conn, c => sqlx::query(&sql).bind(job_id).execute(c).await.map(|r| r.rows_affected()))?,
    )
}

/// Puts back the before-image of every row the job updated.
pub async fn restore_updated(conn: &mut Conn<'_>, module: &Module, job_id: &str) -> Result<u64> {
    let d = conn.dialect();
    let t = ident(&module.table);
    let sets: Vec<String> = module
        .columns
        .iter()
        .enumerate()
        .filter(|(i, _)| !module.key_columns.contains(i))
        .map(|(_, c)| {
            format!(
                "{} = {}",
                ident(&c.name),
                field(d, "ch.before", &c.name, c.ty)
            )
        })
        .collect();
    let sql = format!(
        "UPDATE {t} SET {} FROM ig_job_changes ch \
         WHERE ch.job_id = $1 AND ch.op = 'update' AND {}",
        sets.join(", "),
        key_match(d, module, &t, "ch.before")
    );
    Ok(
        on_conn!(conn, c => sqlx::query(&sql).bind(job_id).execute(c).await.map(|r| r.rows_affected()))?,
    )
}
