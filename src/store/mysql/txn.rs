//! MariaDB's and MySQL's transactions: locks for the work replicas must
//! take turns at, held until the transaction ends.
//!
//! A lock is a row of `ig_locks`, taken `FOR UPDATE`: InnoDB lets it go
//! when the transaction ends and sees a deadlock between it and the rows a
//! transaction writes, as PostgreSQL's advisory locks are seen. Named locks
//! (`GET_LOCK`) are the session's and invisible to InnoDB's deadlock
//! detection: two transactions each holding what the other waited for
//! stalled until the row lock's timeout (50 s). The migrations' lock is
//! the exception: DDL commits the transaction it runs in, so it is a named
//! lock, the database's name in it (named locks are the server's), let go
//! when its connection goes back to the pool (`connect::pool`'s
//! `after_release`).

use sqlx::Transaction;
use sqlx::mysql::{MySql, MySqlConnection, MySqlPool};

use crate::store::error::{Result, StoreError};

/// A transaction at InnoDB's default isolation (repeatable read, whose
/// locking reads and writes see the latest committed rows).
pub async fn begin(pool: &MySqlPool) -> Result<Transaction<'static, MySql>, sqlx::Error> {
    pool.begin().await
}

/// Seconds the migrations' named lock is waited for before the start
/// fails: a day, as good as for ever, and no hang that outlives every
/// timeout.
const WAIT_SECONDS: i64 = 86_400;

/// The lock `key` until the transaction ends; `across_commits`, the
/// migrations' named lock (see the top of this file).
pub async fn lock(c: &mut MySqlConnection, key: i64, across_commits: bool) -> Result<()> {
    if across_commits {
        let sql = "SELECT GET_LOCK(CONCAT(LEFT(DATABASE(), 40), '/', ?), ?)";
        let got: Option<i64> = sqlx::query_scalar(sql)
            .bind(key)
            .bind(WAIT_SECONDS)
            .fetch_one(c)
            .await?;
        return match got {
            Some(1) => Ok(()),
            _ => Err(StoreError::Corrupt(format!("lock {key} was not granted"))),
        };
    }
    row_lock(c, &key.to_string(), "").await.map(|_| ())
}

/// Takes lock `key` until the transaction ends, unless another
/// transaction holds it (false).
pub async fn try_lock(c: &mut MySqlConnection, key: i64) -> Result<bool> {
    row_lock(c, &key.to_string(), " NOWAIT").await
}

/// Takes the writing lock of `table` (quoted), which other commits and
/// rollbacks of importgate wait for. Not `LOCK TABLES`: it would commit
/// the transaction. The business system's own writes do not take it;
/// InnoDB's row locks keep each row's writes apart.
pub async fn lock_for_writing(c: &mut MySqlConnection, table: &str) -> Result<()> {
    row_lock(c, table, "").await.map(|_| ())
}

/// The row `name` of `ig_locks`, locked (made first if it is not there);
/// with `NOWAIT`, false when another transaction holds it.
async fn row_lock(c: &mut MySqlConnection, name: &str, wait: &str) -> Result<bool> {
    let sql = format!("SELECT name FROM ig_locks WHERE name = ? FOR UPDATE{wait}");
    for _ in 0..2 {
        match sqlx::query_scalar::<_, String>(&sql)
            .bind(name)
            .fetch_optional(&mut *c)
            .await
        {
            Ok(Some(_)) => return Ok(true),
            Ok(None) => {
                sqlx::query("INSERT IGNORE INTO ig_locks (name) VALUES (?)")
                    .bind(name)
                    .execute(&mut *c)
                    .await?;
            }
            Err(sqlx::Error::Database(e))
                if !wait.is_empty() && super::errors::lock_busy(e.as_ref()) =>
            {
                return Ok(false);
            }
            Err(e) => return Err(e.into()),
        }
    }
    Err(StoreError::Corrupt(format!(
        "lock {name} could not be made"
    )))
}
