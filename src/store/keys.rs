//! The key table: the only place full names are kept.

use std::collections::HashMap;

use chrono::{DateTime, Utc};
use sqlx::Row;

use super::{Conn, Result, StoreError, json_col};
use crate::keys::{KeyRecord, NewKey, Role};
use crate::on_conn;

const COLUMNS: &str = "id, name, role, modules, created_at, expires_at, revoked_at";

fn record<R: Row>(row: &R) -> Result<KeyRecord>
where
    for<'r> String: sqlx::Decode<'r, R::Database> + sqlx::Type<R::Database>,
    for<'r> DateTime<Utc>: sqlx::Decode<'r, R::Database> + sqlx::Type<R::Database>,
    for<'r> &'r str: sqlx::ColumnIndex<R>,
{
    let role: String = row.try_get("role")?;
    let modules: String = row.try_get("modules")?;
    Ok(KeyRecord {
        id: row.try_get("id")?,
        name: row.try_get("name")?,
        role: Role::parse(&role).ok_or_else(|| StoreError::Corrupt(format!("role {role}")))?,
        modules: json_col(&modules, "modules")?,
        created_at: row.try_get("created_at")?,
        expires_at: row.try_get("expires_at")?,
        revoked_at: row.try_get("revoked_at")?,
    })
}

pub async fn insert(
    conn: &mut Conn<'_>,
    key: &NewKey,
    name: &str,
    role: Role,
    modules: &[String],
    expires_at: Option<DateTime<Utc>>,
) -> Result<KeyRecord> {
    let modules_json = serde_json::to_string(modules).unwrap_or_else(|_| "[]".into());
    let now = super::now();
    on_conn!(conn, c => sqlx::query(
        "INSERT INTO ig_keys (id, lookup, hash, name, role, modules, created_at, expires_at) \
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8)")
        .bind(&key.id).bind(&key.lookup).bind(&key.hash).bind(name).bind(role.as_str())
        .bind(&modules_json).bind(now).bind(expires_at)
        .execute(c).await.map(|r| r.rows_affected()))?;
    Ok(KeyRecord {
        id: key.id.clone(),
        name: name.to_string(),
        role,
        modules: modules.to_vec(),
        created_at: now,
        expires_at,
        revoked_at: None,
    })
}

/// The key with this lookup part and its stored hash.
pub async fn by_lookup(conn: &mut Conn<'_>, lookup: &str) -> Result<Option<(KeyRecord, String)>> {
    let sql = format!("SELECT {COLUMNS}, hash FROM ig_keys WHERE lookup = $1");
    on_conn!(conn, c => {
        match sqlx::query(&sql).bind(lookup).fetch_optional(c).await? {
            Some(row) => Ok(Some((record(&row)?, row.try_get("hash")?))),
            None => Ok(None),
        }
    })
}

pub async fn get(conn: &mut Conn<'_>, id: &str) -> Result<Option<KeyRecord>> {
    let sql = format!("SELECT {COLUMNS} FROM ig_keys WHERE id = $1");
    on_conn!(conn, c => match sqlx::query(&sql).bind(id).fetch_optional(c).await? {
        Some(row) => Ok(Some(record(&row)?)),
        None => Ok(None),
    })
}

pub async fn list(conn: &mut Conn<'_>) -> Result<Vec<KeyRecord>> {
    let sql = format!("SELECT {COLUMNS} FROM ig_keys ORDER BY created_at, id");
    on_conn!(conn, c => sqlx::query(&sql).fetch_all(c).await?.iter().map(record).collect())
}

pub async fn count(conn: &mut Conn<'_>) -> Result<i64> {
    Ok(on_conn!(conn, c => sqlx::query_scalar("SELECT COUNT(*) FROM ig_keys").fetch_one(c).await)?)
}

/// Marks a key revoked; false when there is no such key.
pub async fn revoke(conn: &mut Conn<'_>, id: &str) -> Result<bool> {
    let done = on_conn!(conn, c => sqlx::query(
        "UPDATE ig_keys SET revoked_at = COALESCE(revoked_at, $2) WHERE id = $1")
        .bind(id).bind(super::now()).execute(c).await.map(|r| r.rows_affected()))?;
    Ok(done > 0)
}

/// The names behind key ids, to mask them for display. The key table is
/// small (people and systems, not rows), so it is read whole.
pub async fn names(conn: &mut Conn<'_>) -> Result<HashMap<String, String>> {
    let rows: Vec<(String, String)> = on_conn!(conn, c => sqlx::query_as("SELECT id, name FROM ig_keys")
        .fetch_all(c).await)?;
    Ok(rows.into_iter().collect())
}
