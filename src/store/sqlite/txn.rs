//! SQLite's transactions: each takes the write lock as it begins, which
//! leaves most of `store::txn` nothing to do.

use sqlx::{Sqlite, SqliteConnection, SqlitePool, Transaction};

use crate::store::error::Result;

/// A transaction that takes the write lock at once (`BEGIN IMMEDIATE`), so
/// one that reads and then writes cannot fail half-way on a lock upgrade.
pub async fn begin(pool: &SqlitePool) -> Result<Transaction<'static, Sqlite>, sqlx::Error> {
    pool.begin_with("BEGIN IMMEDIATE").await
}

/// Nothing to take: the transaction excludes every other writer already
/// ([`begin`]).
pub async fn lock(_c: &mut SqliteConnection, _key: i64) -> Result<()> {
    Ok(())
}

/// Always taken (see [`lock`]).
pub async fn try_lock(_c: &mut SqliteConnection, _key: i64) -> Result<bool> {
    Ok(true)
}

/// Nothing to relax: in WAL mode with `synchronous = NORMAL` a commit never
/// waits for the disk.
pub async fn relax_durability(_c: &mut SqliteConnection) -> Result<()> {
    Ok(())
}

/// Nothing to ask: SQLite's memory for a join or a sort is its page
/// cache's, the same for every statement.
pub async fn join_memory(_c: &mut SqliteConnection) -> Result<()> {
    Ok(())
}

/// Nothing to refresh: SQLite plans without statistics unless asked to
/// keep them.
pub async fn analyze(
    _c: &mut SqliteConnection,
    _table: &str,
    _columns: &[String],
    _target: Option<u16>,
) -> Result<()> {
    Ok(())
}

/// Nothing to lock: the transaction excludes every other writer of the
/// table already ([`begin`]).
pub async fn lock_for_writing(_c: &mut SqliteConnection, _table: &str) -> Result<()> {
    Ok(())
}
