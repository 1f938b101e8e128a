//! Exports of module tables (API.md section 15) in `ig_exports`: one row
//! an export, written with its ledger link in one transaction. The event
//! feed reads an export link's module from here (`ledger::feed`).

use chrono::{DateTime, Utc};
use sqlx::Row;

use super::db::Conn;
use super::error::{Result, StoreError, json_col};
use crate::ids::{ExportId, KeyId, ModuleKey};
use crate::ledger::export::{Export, ExportFormat};
use crate::on_conn;

const COLUMNS: &str =
    "id, module, key_id, format, filters, row_count, complete, started_at, finished_at";

fn record<R: Row>(row: &R) -> Result<Export>
where
    for<'r> String: sqlx::Decode<'r, R::Database> + sqlx::Type<R::Database>,
    for<'r> i64: sqlx::Decode<'r, R::Database> + sqlx::Type<R::Database>,
    for<'r> bool: sqlx::Decode<'r, R::Database> + sqlx::Type<R::Database>,
    for<'r> DateTime<Utc>: sqlx::Decode<'r, R::Database> + sqlx::Type<R::Database>,
    for<'r> &'r str: sqlx::ColumnIndex<R>,
{
    let format: String = row.try_get("format")?;
    let filters: String = row.try_get("filters")?;
    let rows: i64 = row.try_get("row_count")?;
    Ok(Export {
        id: ExportId::from_stored(row.try_get::<String, _>("id")?),
        module: ModuleKey::from_stored(row.try_get::<String, _>("module")?),
        by: KeyId::from_stored(row.try_get::<String, _>("key_id")?),
        format: ExportFormat::parse(&format)
            .ok_or_else(|| StoreError::Corrupt(format!("export format {format:?}")))?,
        filters: json_col(&filters, "filters")?,
        rows: u64::try_from(rows)
            .map_err(|_| StoreError::Corrupt(format!("export row count {rows}")))?,
        complete: row.try_get("complete")?,
        started_at: row.try_get("started_at")?,
        finished_at: row.try_get("finished_at")?,
    })
}

/// Records an export, in the caller's transaction (with its link).
pub async fn insert(conn: &mut Conn<'_>, e: &Export) -> Result<()> {
    let sql =
        format!("INSERT INTO ig_exports ({COLUMNS}) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)");
    let rows = i64::try_from(e.rows).unwrap_or(i64::MAX);
    on_conn!(conn, c => sqlx::query(&sql)
        .bind(&e.id).bind(&e.module).bind(&e.by).bind(e.format.as_str())
        .bind(e.filters.to_string()).bind(rows).bind(e.complete)
        .bind(e.started_at).bind(e.finished_at)
        .execute(c).await.map(|x| x.rows_affected()))?;
    Ok(())
}

pub async fn get(conn: &mut Conn<'_>, id: &ExportId) -> Result<Option<Export>> {
    let sql = format!("SELECT {COLUMNS} FROM ig_exports WHERE id = $1");
    on_conn!(conn, c => match sqlx::query(&sql).bind(id).fetch_optional(c).await? {
        Some(row) => Ok(Some(record(&row)?)),
        None => Ok(None),
    })
}

/// Up to `limit` exports after the one with id `after` (empty: from the
/// first), in id order: their time order.
pub async fn page(conn: &mut Conn<'_>, after: &str, limit: i64) -> Result<Vec<Export>> {
    let sql = format!("SELECT {COLUMNS} FROM ig_exports WHERE id > $1 ORDER BY id LIMIT $2");
    on_conn!(conn, c => {
        let rows = sqlx::query(&sql).bind(after).bind(limit).fetch_all(c).await?;
        rows.iter().map(record).collect()
    })
}
