//! PostgreSQL's schema: the ledger's migrations, what is set after them,
//! and what the database says of the tables, indexes and columns it has
//! (in the connection's current schema).

use sqlx::PgConnection;
use sqlx::migrate::Migrator;

use crate::store::error::Result;

/// The ledger's migrations for PostgreSQL, `migrations/postgres/`:
/// timestamps as `TIMESTAMPTZ`, bytes as `BYTEA`.
pub fn migrations() -> Migrator {
    sqlx::migrate!("./migrations/postgres")
}

/// Stored files as they came, not compressed: pglz took most of a 65 MB
/// upload's time (1.7 s against 0.5 s on SQLite, which never compresses).
/// Checked first: the `ALTER` would wait for uploads in progress on other
/// replicas.
pub async fn after_migrations(c: &mut PgConnection) -> Result<()> {
    let storage: String = sqlx::query_scalar(
        "SELECT attstorage::text FROM pg_attribute \
         WHERE attrelid = 'ig_blob_chunks'::regclass AND attname = 'data'",
    )
    .fetch_one(&mut *c)
    .await?;
    if storage != "e" {
        sqlx::query("ALTER TABLE ig_blob_chunks ALTER COLUMN data SET STORAGE EXTERNAL")
            .execute(c)
            .await?;
    }
    Ok(())
}

/// Whether a table or an index of this name exists. Asked of the
/// catalog, which takes no lock: PostgreSQL takes a lock on the table even
/// for `CREATE INDEX IF NOT EXISTS` of an index it has.
pub async fn exists(c: &mut PgConnection, name: &str) -> Result<bool> {
    let found: i64 = sqlx::query_scalar(
        "SELECT COUNT(*) FROM pg_class WHERE relname = $1 \
         AND relnamespace = to_regnamespace(current_schema())::oid",
    )
    .bind(name)
    .fetch_one(c)
    .await?;
    Ok(found > 0)
}

/// The names of a table's columns.
pub async fn columns(c: &mut PgConnection, table: &str) -> Result<Vec<String>> {
    Ok(sqlx::query_scalar(
        "SELECT column_name::text FROM information_schema.columns \
         WHERE table_schema = current_schema() AND table_name = $1",
    )
    .bind(table)
    .fetch_all(c)
    .await?)
}
