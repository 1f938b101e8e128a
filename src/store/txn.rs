//! What a transaction asks of the database besides rows: locks that
//! serialise work across processes, durability relaxed for work that is
//! redone when lost, memory for the joins of a commit, the planner's
//! statistics after a bulk write, and savepoints. Each backend does what
//! it needs for them (`sqlite::txn`, `postgres::txn`).

use super::db::Conn;
use super::error::Result;
use super::{mysql, postgres, sqlite};
use crate::on_conn;

/// Transaction-long locks that serialise work across processes.
#[derive(Debug, Clone, Copy)]
pub enum Lock {
    /// Migrations at start-up.
    Migrate = 7_310_573,
    /// Making the first admin key on an empty database.
    FirstKey = 7_310_574,
    /// Appending to the ledger's hash chain (one link at a time).
    Ledger = 7_310_575,
    /// The retention sweep: one replica purges at a time.
    Purge = 7_310_576,
    /// Filing an upload under a stored file, or dropping a stored file no
    /// job needs: an upload must not be filed under a file being dropped.
    /// Taken before [`Lock::Ledger`] by both.
    Blobs = 7_310_577,
}

/// Takes a lock until the transaction ends.
pub async fn lock(conn: &mut Conn<'_>, lock: Lock) -> Result<()> {
    match conn {
        Conn::Sqlite(c) => sqlite::txn::lock(c, lock as i64).await,
        Conn::Postgres(c) => postgres::txn::lock(c, lock as i64).await,
        Conn::Mysql(c) => mysql::txn::lock(c, lock as i64, matches!(lock, Lock::Migrate)).await,
    }
}

/// Takes a lock until the transaction ends, if no other transaction holds
/// it: false when one does (the caller leaves the work to that one).
pub async fn try_lock(conn: &mut Conn<'_>, lock: Lock) -> Result<bool> {
    match conn {
        Conn::Sqlite(c) => sqlite::txn::try_lock(c, lock as i64).await,
        Conn::Postgres(c) => postgres::txn::try_lock(c, lock as i64).await,
        Conn::Mysql(c) => mysql::txn::try_lock(c, lock as i64).await,
    }
}

/// Lets the current transaction commit without waiting for its WAL to
/// reach the disk. For work that is re-done from scratch when lost, such
/// as the batches a validation stages: the next ordinary commit (the
/// job's own move, for one) flushes the WAL up to itself, and with it
/// every relaxed commit before it.
pub async fn relax_durability(conn: &mut Conn<'_>) -> Result<()> {
    match conn {
        Conn::Sqlite(c) => sqlite::txn::relax_durability(c).await,
        Conn::Postgres(c) => postgres::txn::relax_durability(c).await,
        // InnoDB's flush at commit is the server's setting.
        Conn::Mysql(_) => Ok(()),
    }
}

/// Gives the current transaction the memory its joins and sorts of a
/// job's staged rows need (a commit's, a rollback's, the duplicate
/// check's), where the database lets a transaction ask for it.
pub async fn join_memory(conn: &mut Conn<'_>) -> Result<()> {
    match conn {
        Conn::Sqlite(c) => sqlite::txn::join_memory(c).await,
        Conn::Postgres(c) => postgres::txn::join_memory(c).await,
        Conn::Mysql(_) => Ok(()),
    }
}

/// Refreshes the planner's statistics of a table (quoted) after a bulk
/// write, where the database plans with statistics it keeps. `columns`
/// (quoted) limits them to the columns plans depend on; none means every
/// column. `target`, when given, is the statistics target of this one
/// refresh: a smaller sample for a table whose plans need only rough
/// proportions.
pub async fn analyze(
    conn: &mut Conn<'_>,
    table: &str,
    columns: &[String],
    target: Option<u16>,
) -> Result<()> {
    match conn {
        Conn::Sqlite(c) => sqlite::txn::analyze(c, table, columns, target).await,
        Conn::Postgres(c) => postgres::txn::analyze(c, table, columns, target).await,
        // InnoDB recounts a table's statistics itself after a tenth of it
        // changed; `ANALYZE TABLE` would commit the transaction.
        Conn::Mysql(_) => Ok(()),
    }
}

/// Rows written at once past which a table's statistics are refreshed
/// ([`analyze`]).
pub const ANALYZE_AFTER_ROWS: i64 = 10_000;

/// A savepoint in the current transaction: work after it can be undone
/// with [`rollback_to`] while the transaction (and its locks) goes on.
pub async fn savepoint(conn: &mut Conn<'_>, name: &'static str) -> Result<()> {
    let sql = format!("SAVEPOINT {name}");
    on_conn!(conn, c => sqlx::query(&sql).execute(c).await.map(|r| r.rows_affected()))?;
    Ok(())
}

/// Undoes everything since [`savepoint`] `name`.
pub async fn rollback_to(conn: &mut Conn<'_>, name: &'static str) -> Result<()> {
    let sql = format!("ROLLBACK TO SAVEPOINT {name}");
    on_conn!(conn, c => sqlx::query(&sql).execute(c).await.map(|r| r.rows_affected()))?;
    Ok(())
}
