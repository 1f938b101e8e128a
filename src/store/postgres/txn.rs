//! PostgreSQL's transactions: advisory locks for the work that replicas
//! must take turns at, table locks for commits, and settings that last
//! until the transaction ends (`SET LOCAL`).

use sqlx::{Connection, PgConnection, PgPool, Postgres, Transaction};

use crate::store::error::Result;

/// A transaction at PostgreSQL's default isolation (read committed).
pub async fn begin(pool: &PgPool) -> Result<Transaction<'static, Postgres>, sqlx::Error> {
    pool.begin().await
}

/// Takes advisory lock `key` until the transaction ends.
pub async fn lock(c: &mut PgConnection, key: i64) -> Result<()> {
    sqlx::query("SELECT pg_advisory_xact_lock($1)")
        .bind(key)
        .execute(c)
        .await?;
    Ok(())
}

/// Takes advisory lock `key` until the transaction ends, unless another
/// transaction holds it (false).
pub async fn try_lock(c: &mut PgConnection, key: i64) -> Result<bool> {
    Ok(sqlx::query_scalar("SELECT pg_try_advisory_xact_lock($1)")
        .bind(key)
        .fetch_one(c)
        .await?)
}

/// `synchronous_commit = off`: half a second of fsyncs in a 1M-row
/// validation.
pub async fn relax_durability(c: &mut PgConnection) -> Result<()> {
    sqlx::query("SET LOCAL synchronous_commit = off")
        .execute(c)
        .await?;
    Ok(())
}

/// `work_mem` of a PostgreSQL commit or rollback. With the default 4 MB an
/// upsert's `UPDATE … FROM` stage hashed 1M rows in 16 batches through
/// temporary files and then visited the table in hash order, re-reading
/// evicted pages (9.3 s); with 64 MB it hashes the staged rows in one or two
/// batches and walks the table in its own order (6.6 s; `EXPLAIN (ANALYZE,
/// BUFFERS)` of the statement over the harness's 1M orders). Set per
/// transaction, so only the module's one writer at a time has it.
pub const JOIN_MEMORY: &str = "64MB";

/// [`JOIN_MEMORY`] for the rest of the transaction.
pub async fn join_memory(c: &mut PgConnection) -> Result<()> {
    let sql = format!("SET LOCAL work_mem = '{JOIN_MEMORY}'");
    sqlx::query(&sql).execute(c).await?;
    Ok(())
}

/// `ANALYZE`, which samples the table and blocks no reader or writer.
/// Without it the planner keeps the statistics of the table before the
/// write until autovacuum comes by: after a 1M-row commit into an empty
/// table, the next upload's key lookups were planned as scans of a table
/// it took for empty (2,437 full scans, over a minute). PostgreSQL samples
/// 300 rows per unit of `target`; its default is 100.
pub async fn analyze(
    c: &mut PgConnection,
    table: &str,
    columns: &[String],
    target: Option<u16>,
) -> Result<()> {
    let list = if columns.is_empty() {
        String::new()
    } else {
        format!(" ({})", columns.join(", "))
    };
    let sql = format!("ANALYZE {table}{list}");
    let Some(target) = target else {
        sqlx::query(&sql).execute(c).await?;
        return Ok(());
    };
    // `SET LOCAL` ends with the transaction, so the pooled connection
    // goes back with PostgreSQL's default whatever happens.
    let mut tx = c.begin().await?;
    let set = format!("SET LOCAL default_statistics_target = {target}");
    sqlx::query(&set).execute(&mut *tx).await?;
    sqlx::query(&sql).execute(&mut *tx).await?;
    tx.commit().await?;
    Ok(())
}

/// Takes `table` (quoted) in `SHARE ROW EXCLUSIVE` mode, which other
/// writers wait for and readers do not, with [`JOIN_MEMORY`] to hash in.
pub async fn lock_for_writing(c: &mut PgConnection, table: &str) -> Result<()> {
    let sql = format!("LOCK TABLE {table} IN SHARE ROW EXCLUSIVE MODE");
    sqlx::query(&sql).execute(&mut *c).await?;
    join_memory(c).await
}
