//! SQLite's schema: the ledger's migrations, and what the database says
//! of the tables, indexes and columns it has.

use sqlx::SqliteConnection;
use sqlx::migrate::Migrator;

use crate::store::error::Result;

/// The ledger's migrations for SQLite, `migrations/sqlite/`: timestamps as
/// RFC 3339 text in UTC (SQLite has no timestamp type, and the text sorts
/// as the instants do), bytes as BLOBs.
pub fn migrations() -> Migrator {
    sqlx::migrate!("./migrations/sqlite")
}

/// Nothing to set after the migrations: SQLite stores a file's chunks as
/// they come.
pub async fn after_migrations(_c: &mut SqliteConnection) -> Result<()> {
    Ok(())
}

/// Whether a table or an index of this name exists.
pub async fn exists(c: &mut SqliteConnection, name: &str) -> Result<bool> {
    let found: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM sqlite_master WHERE name = $1")
        .bind(name)
        .fetch_one(c)
        .await?;
    Ok(found > 0)
}

/// The names of a table's columns.
pub async fn columns(c: &mut SqliteConnection, table: &str) -> Result<Vec<String>> {
    Ok(sqlx::query_scalar("SELECT name FROM pragma_table_info($1)")
        .bind(table)
        .fetch_all(c)
        .await?)
}
