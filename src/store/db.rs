//! Pools, connections and transactions: one enum each, a variant per
//! backend, so that the rest of the crate holds a [`Db`] or a [`Conn`]
//! without knowing which database is behind it.

use std::time::Duration;

use sqlx::pool::PoolConnection;
use sqlx::{MySql, MySqlConnection, MySqlPool};
use sqlx::{PgConnection, PgPool, Postgres, Sqlite, SqliteConnection, SqlitePool};

use super::dialect::Dialect;
use super::error::{Result, StoreError};
use super::{mysql, postgres, sqlite};

/// A pool of connections to one of the three databases.
#[derive(Clone, Debug)]
pub enum Db {
    Sqlite(SqlitePool),
    Postgres(PgPool),
    Mysql(MySqlPool),
}

/// One connection, borrowed from a pool or from a transaction.
pub enum Conn<'c> {
    Sqlite(&'c mut SqliteConnection),
    Postgres(&'c mut PgConnection),
    Mysql(&'c mut MySqlConnection),
}

/// A transaction: everything done through [`Tx::conn`] is kept or dropped
/// as a whole.
pub enum Tx {
    Sqlite(sqlx::Transaction<'static, Sqlite>),
    Postgres(sqlx::Transaction<'static, Postgres>),
    Mysql(sqlx::Transaction<'static, MySql>),
}

/// A connection held from the pool outside any transaction.
pub enum Pooled {
    Sqlite(PoolConnection<Sqlite>),
    Postgres(PoolConnection<Postgres>),
    Mysql(PoolConnection<MySql>),
}

/// Runs `$body` with `$c` bound to the driver's own `&mut Connection`: SQL
/// that is the same for every database, written once. On MySQL `$c` is
/// the connection as [`mysql::exec::Exec`](crate::store::mysql::exec::Exec),
/// which takes the statements' `$n` parameters as MySQL's `?`.
#[macro_export]
macro_rules! on_conn {
    ($conn:expr, $c:ident => $body:expr) => {
        match $conn {
            $crate::store::Conn::Sqlite(inner) => {
                let $c: &mut sqlx::SqliteConnection = &mut **inner;
                $body
            }
            $crate::store::Conn::Postgres(inner) => {
                let $c: &mut sqlx::PgConnection = &mut **inner;
                $body
            }
            $crate::store::Conn::Mysql(inner) => {
                let mut exec = $crate::store::mysql::exec::Exec(&mut **inner);
                let $c = &mut exec;
                $body
            }
        }
    };
}

impl Db {
    /// `Ok` while the database has at least `reserve` bytes to grow into;
    /// [`StoreError::NoSpace`] below. Only a SQLite file's disk is seen
    /// here (its free space, and the pages the file holds free inside it:
    /// what a stopped validation staged is freed there, not on the disk);
    /// a PostgreSQL server's full disk is its own error.
    pub async fn room(&self, reserve: u64) -> Result<()> {
        let Db::Sqlite(pool) = self else {
            return Ok(());
        };
        let Some(disk) = sqlite::connect::free_bytes(pool) else {
            return Ok(());
        };
        if disk >= reserve {
            return Ok(());
        }
        let free = disk.saturating_add(sqlite::connect::free_pages_bytes(pool).await?);
        if free >= reserve {
            return Ok(());
        }
        Err(StoreError::NoSpace(format!(
            "the database has {} MiB to grow into, under the {} MiB kept free",
            free >> 20,
            reserve >> 20
        )))
    }

    /// Connects to `sqlite://path` (created if absent), `postgres://…`,
    /// or `mysql://…` / `mariadb://…`.
    pub async fn connect(url: &str) -> Result<Db> {
        Db::connect_with(url, Duration::from_secs(60)).await
    }

    /// [`Db::connect`], with how long a SQLite writer waits for another's
    /// lock before it fails (`busy`; see `sqlite::connect::pool`).
    pub async fn connect_with(url: &str, busy: Duration) -> Result<Db> {
        if url.starts_with("sqlite:") {
            Ok(Db::Sqlite(sqlite::connect::pool(url, busy).await?))
        } else if url.starts_with("postgres:") || url.starts_with("postgresql:") {
            Ok(Db::Postgres(postgres::connect::pool(url).await?))
        } else if url.starts_with("mysql:") || url.starts_with("mariadb:") {
            Ok(Db::Mysql(mysql::connect::pool(url).await?))
        } else {
            Err(StoreError::Url(url.to_string()))
        }
    }

    pub fn dialect(&self) -> Dialect {
        match self {
            Db::Sqlite(_) => Dialect::Sqlite,
            Db::Postgres(_) => Dialect::Postgres,
            Db::Mysql(_) => Dialect::Mysql,
        }
    }

    /// A connection outside any transaction (each statement commits alone).
    pub async fn acquire(&self) -> Result<Pooled> {
        Ok(match self {
            Db::Sqlite(p) => Pooled::Sqlite(p.acquire().await?),
            Db::Postgres(p) => Pooled::Postgres(p.acquire().await?),
            Db::Mysql(p) => Pooled::Mysql(p.acquire().await?),
        })
    }

    /// Starts a transaction (on SQLite one that holds the write lock from
    /// its start: `sqlite::txn::begin`).
    ///
    /// The BEGIN runs on a task of its own. Work is dropped wherever it
    /// waits (a job handed back at shutdown, a lease lost), and sqlx 0.8
    /// makes its `Transaction` only after the database acknowledged the
    /// BEGIN (and, for a custom BEGIN on SQLite, after a second look at the
    /// handle): a caller dropped in between left a transaction nobody
    /// could end, its connection back in the pool holding SQLite's write
    /// lock, and every other writer waited out the busy timeout. On a task,
    /// the BEGIN completes; a `Transaction` nobody receives is rolled back
    /// when it drops.
    pub async fn begin(&self) -> Result<Tx> {
        let db = self.clone();
        let started = tokio::spawn(async move {
            Ok::<_, sqlx::Error>(match db {
                Db::Sqlite(p) => Tx::Sqlite(sqlite::txn::begin(&p).await?),
                Db::Postgres(p) => Tx::Postgres(postgres::txn::begin(&p).await?),
                Db::Mysql(p) => Tx::Mysql(mysql::txn::begin(&p).await?),
            })
        });
        match started.await {
            Ok(tx) => Ok(tx?),
            Err(e) => {
                tracing::error!(error = %e, "the task starting a transaction failed");
                Err(StoreError::Sql(sqlx::Error::WorkerCrashed))
            }
        }
    }

    /// Whether the database answers and takes a write (for `/readyz`): a
    /// read-only file or a lock held elsewhere says not ready, within
    /// `within`. A connection found read-only is not used again, so the
    /// probe asks twice: a file writable again is ready at once.
    pub async fn ping(&self, within: Duration) -> bool {
        let probe = async {
            match self.write_probe().await {
                Err(e) if e.is_read_only_or_broken() => self.write_probe().await,
                other => other,
            }
        };
        static WAS_DOWN: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);
        let down = |why: &str| {
            WAS_DOWN.store(true, std::sync::atomic::Ordering::Relaxed);
            tracing::warn!(error = %why, "not ready: the database takes no write");
            false
        };
        match tokio::time::timeout(within, probe).await {
            Ok(Ok(())) => {
                if WAS_DOWN.swap(false, std::sync::atomic::Ordering::Relaxed) {
                    self.back_after_outage();
                }
                true
            }
            Ok(Err(e)) => down(&e.to_string()),
            Err(_) => down("no write in time"),
        }
    }

    /// One small write that changes nothing (the row of the latest
    /// migration, which every migrated database has).
    async fn write_probe(&self) -> Result<()> {
        let mut tx = self.begin().await?;
        crate::on_conn!(&mut tx.conn(), c => sqlx::query(
            "UPDATE _sqlx_migrations SET version = version \
             WHERE version = (SELECT MAX(version) FROM _sqlx_migrations)"
        ).execute(c).await.map(|r| r.rows_affected()))?;
        tx.commit().await
    }

    /// The database takes writes again after [`Db::ping`] found it could
    /// not: on SQLite, connections opened meanwhile may have opened the
    /// file read-only without having failed yet, and none is handed out
    /// again.
    fn back_after_outage(&self) {
        match self {
            Db::Sqlite(_) => sqlite::connect::distrust_open_connections(),
            Db::Postgres(_) | Db::Mysql(_) => {}
        }
    }

    /// Closes every connection (at shutdown).
    pub async fn close(&self) {
        match self {
            Db::Sqlite(p) => p.close().await,
            Db::Postgres(p) => p.close().await,
            Db::Mysql(p) => p.close().await,
        }
    }
}

impl Tx {
    pub fn conn(&mut self) -> Conn<'_> {
        match self {
            Tx::Sqlite(t) => Conn::Sqlite(t),
            Tx::Postgres(t) => Conn::Postgres(t),
            Tx::Mysql(t) => Conn::Mysql(t),
        }
    }

    pub async fn commit(self) -> Result<()> {
        match self {
            Tx::Sqlite(t) => t.commit().await?,
            Tx::Postgres(t) => t.commit().await?,
            Tx::Mysql(t) => t.commit().await?,
        }
        Ok(())
    }

    pub async fn rollback(self) -> Result<()> {
        match self {
            Tx::Sqlite(t) => t.rollback().await?,
            Tx::Postgres(t) => t.rollback().await?,
            Tx::Mysql(t) => t.rollback().await?,
        }
        Ok(())
    }
}

impl Pooled {
    pub fn conn(&mut self) -> Conn<'_> {
        match self {
            Pooled::Sqlite(c) => Conn::Sqlite(c),
            Pooled::Postgres(c) => Conn::Postgres(c),
            Pooled::Mysql(c) => Conn::Mysql(c),
        }
    }
}

impl Conn<'_> {
    pub fn dialect(&self) -> Dialect {
        match self {
            Conn::Sqlite(_) => Dialect::Sqlite,
            Conn::Postgres(_) => Dialect::Postgres,
            Conn::Mysql(_) => Dialect::Mysql,
        }
    }
}
