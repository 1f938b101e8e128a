//! Mappings saved for a module under a file's exact set of headers (API.md
//! section 11, `remember_mapping`): one per module and set; saving again
//! replaces it.

use chrono::{DateTime, Utc};
use sqlx::Row;

use super::db::Conn;
use super::error::{Result, json_col};
use crate::ids::{KeyId, ModuleKey};
use crate::on_conn;
use crate::validate::Mapping;

/// A saved mapping.
#[derive(Debug, Clone)]
pub struct Saved {
    pub id: String,
    pub module: ModuleKey,
    /// The file's headers as written, in the file's order.
    pub headers: Vec<String>,
    pub mapping: Mapping,
    pub created_by: KeyId,
    pub created_at: DateTime<Utc>,
}

/// The lookup key of a set of headers: sorted, as JSON.
pub fn header_set(headers: &[String]) -> String {
    let mut sorted: Vec<&str> = headers.iter().map(|h| h.trim()).collect();
    sorted.sort_unstable();
    serde_json::to_string(&sorted).unwrap_or_default()
}

fn saved<R: Row>(r: &R) -> Result<Saved>
where
    for<'a> String: sqlx::Decode<'a, R::Database> + sqlx::Type<R::Database>,
    for<'a> DateTime<Utc>: sqlx::Decode<'a, R::Database> + sqlx::Type<R::Database>,
    for<'a> &'a str: sqlx::ColumnIndex<R>,
{
    Ok(Saved {
        id: r.try_get("id")?,
        module: r.try_get("module")?,
        headers: json_col(&r.try_get::<String, _>("headers")?, "headers")?,
        mapping: json_col(&r.try_get::<String, _>("mapping")?, "mapping")?,
        created_by: r.try_get("created_by")?,
        created_at: r.try_get("created_at")?,
    })
}

const COLUMNS: &str = "id, module, headers, mapping, created_by, created_at";

/// Saves `s`, replacing the module's mapping for the same set of headers.
pub async fn save(conn: &mut Conn<'_>, s: &Saved) -> Result<()> {
    let set = header_set(&s.headers);
    on_conn!(conn, c => sqlx::query("DELETE FROM ig_mappings WHERE module = $1 AND header_set = $2")
        .bind(&s.module).bind(&set).execute(c).await.map(|r| r.rows_affected()))?;
    let headers = serde_json::to_string(&s.headers).unwrap_or_default();
    let mapping = serde_json::to_string(&s.mapping).unwrap_or_default();
    on_conn!(conn, c => sqlx::query(
        "INSERT INTO ig_mappings (id, module, header_set, headers, mapping, created_by, created_at) \
         VALUES ($1, $2, $3, $4, $5, $6, $7)")
        .bind(&s.id).bind(&s.module).bind(&set).bind(headers).bind(mapping)
        .bind(&s.created_by).bind(s.created_at).execute(c).await.map(|r| r.rows_affected()))?;
    Ok(())
}

/// A module's saved mappings, newest first.
pub async fn list(conn: &mut Conn<'_>, module: &ModuleKey) -> Result<Vec<Saved>> {
    let sql =
        format!("SELECT {COLUMNS} FROM ig_mappings WHERE module = $1 ORDER BY created_at DESC, id");
    on_conn!(conn, c => {
        let rows = sqlx::query(&sql).bind(module).fetch_all(c).await?;
        rows.iter().map(saved).collect()
    })
}

/// Removes a module's saved mapping; whether there was one.
pub async fn delete(conn: &mut Conn<'_>, module: &ModuleKey, id: &str) -> Result<bool> {
    let n = on_conn!(conn, c => sqlx::query("DELETE FROM ig_mappings WHERE module = $1 AND id = $2")
        .bind(module).bind(id).execute(c).await.map(|r| r.rows_affected()))?;
    Ok(n > 0)
}

/// The module's mapping saved under exactly this set of headers.
pub async fn for_headers(
    conn: &mut Conn<'_>,
    module: &ModuleKey,
    headers: &[String],
) -> Result<Option<Saved>> {
    let sql = format!("SELECT {COLUMNS} FROM ig_mappings WHERE module = $1 AND header_set = $2");
    let set = header_set(headers);
    on_conn!(conn, c => {
        let row = sqlx::query(&sql).bind(module).bind(&set).fetch_optional(c).await?;
        row.as_ref().map(saved).transpose()
    })
}

/// One of the module's saved mappings, by id.
pub async fn get(conn: &mut Conn<'_>, module: &ModuleKey, id: &str) -> Result<Option<Saved>> {
    let sql = format!("SELECT {COLUMNS} FROM ig_mappings WHERE module = $1 AND id = $2");
    on_conn!(conn, c => {
        let row = sqlx::query(&sql).bind(module).bind(id).fetch_optional(c).await?;
        row.as_ref().map(saved).transpose()
    })
}

/// Whether the module has any saved mapping: most have none, and then an
/// upload's header need not be read twice.
pub async fn any(conn: &mut Conn<'_>, module: &ModuleKey) -> Result<bool> {
    let found: Option<String> = on_conn!(conn, c => sqlx::query_scalar(
        "SELECT id FROM ig_mappings WHERE module = $1 LIMIT 1")
        .bind(module).fetch_optional(c).await)?;
    Ok(found.is_some())
}
