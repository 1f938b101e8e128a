//! Storage: one interface over two databases, the embedded SQLite default
//! and PostgreSQL.
//!
//! Queries are written once, with `$1`-style parameters that both drivers
//! accept, and run on whichever connection type is behind a [`Conn`]: the
//! [`on_conn!`] macro expands a body for each driver, so the SQL and the row
//! mapping exist once while each driver keeps its native types. Where the
//! two databases differ (DDL, value types, locking) the code says so.
//!
//! The store knows nothing about HTTP; the HTTP layer knows nothing about SQL.

pub mod blobs;
mod bound;
mod copy_text;
pub mod idempotency;
pub mod jobs;
pub mod key_requests;
pub mod keys;
pub mod ledger;
pub mod load;
pub mod lookup;
pub mod mappings;
pub mod references;
pub mod retention;
pub mod rows;
pub mod schema;
pub mod sessions;
pub mod stage;
pub mod tables;
pub mod values;
pub mod webhooks;

use std::os::raw::c_int;
use std::str::FromStr;
use std::time::Duration;

use sqlx::pool::PoolConnection;
use sqlx::postgres::{PgConnectOptions, PgPoolOptions};
use sqlx::sqlite::{SqliteConnectOptions, SqliteJournalMode, SqlitePoolOptions, SqliteSynchronous};
use sqlx::{PgConnection, PgPool, Postgres, Sqlite, SqliteConnection, SqlitePool};

use crate::catalog::{Catalog, ColumnType};

/// Which SQL dialect a connection speaks (for the few statements that differ).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dialect {
    Sqlite,
    Postgres,
}

/// A database error from the store.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("database: {0}")]
    Sql(sqlx::Error),
    #[error("database URL {0:?} is neither sqlite:// nor postgres://")]
    Url(String),
    #[error("stored data is corrupt: {0}")]
    Corrupt(String),
}

pub type Result<T, E = StoreError> = std::result::Result<T, E>;

impl From<sqlx::Error> for StoreError {
    fn from(e: sqlx::Error) -> StoreError {
        if read_only_or_broken(&e) {
            // Connections opened while the file could not be written stay
            // read-only: none of those open now is trusted again.
            distrust_open_connections();
        }
        StoreError::Sql(e)
    }
}

impl StoreError {
    /// Whether the database could not take the request now — out of reach,
    /// busy past its timeout, read-only, out of disk — rather than being
    /// asked something wrong. It passes by itself (API: `503`).
    pub fn is_unavailable(&self) -> bool {
        match self {
            StoreError::Sql(e) => unavailable(e),
            _ => false,
        }
    }
}

/// See [`StoreError::is_unavailable`].
pub fn unavailable(e: &sqlx::Error) -> bool {
    match e {
        sqlx::Error::Io(_)
        | sqlx::Error::Tls(_)
        | sqlx::Error::PoolTimedOut
        | sqlx::Error::PoolClosed
        | sqlx::Error::WorkerCrashed => true,
        sqlx::Error::Database(db) => {
            let code = db.code().map(|c| c.to_string()).unwrap_or_default();
            // PostgreSQL: connection exceptions, serialization failures and
            // deadlocks, a lock not available, shutdowns, too many
            // connections, a read-only transaction, a full disk.
            code.starts_with("08")
                || matches!(
                    code.as_str(),
                    "40001" | "40P01" | "55P03" | "57P01" | "57P02" | "57P03" | "53300" | "25006"
                        | "53100"
                )
                || read_only_or_broken(e)
                // SQLite (primary code in the low byte): busy, locked.
                || matches!(sqlite_code(&code), Some(5 | 6))
        }
        _ => false,
    }
}

/// SQLite's primary result code from sqlx's code text.
fn sqlite_code(code: &str) -> Option<i64> {
    code.parse::<i64>().ok().map(|c| c & 0xff)
}

/// SQLite: read-only, I/O error, disk full, cannot open.
fn read_only_or_broken(e: &sqlx::Error) -> bool {
    let sqlx::Error::Database(db) = e else {
        return false;
    };
    let code = db.code().map(|c| c.to_string()).unwrap_or_default();
    db.try_downcast_ref::<sqlx::sqlite::SqliteError>().is_some()
        && matches!(sqlite_code(&code), Some(8 | 10 | 13 | 14))
}

/// When connections opened before it stopped being trusted (milliseconds
/// since [`epoch`]; 0: never). A pool checks it as it hands a connection
/// out ([`Db::connect_with`]'s `before_acquire`).
static DISTRUST_BEFORE: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

fn epoch() -> std::time::Instant {
    static EPOCH: std::sync::OnceLock<std::time::Instant> = std::sync::OnceLock::new();
    *EPOCH.get_or_init(std::time::Instant::now)
}

fn distrust_open_connections() {
    let now = epoch().elapsed().as_millis() as u64;
    DISTRUST_BEFORE.store(now.max(1), std::sync::atomic::Ordering::Relaxed);
}

/// Whether a connection of this age was opened before the last failure
/// that made open connections untrustworthy.
fn opened_before_distrust(age: Duration) -> bool {
    let mark = DISTRUST_BEFORE.load(std::sync::atomic::Ordering::Relaxed);
    if mark == 0 {
        return false;
    }
    let now = epoch().elapsed().as_millis() as u64;
    let opened = now.saturating_sub(age.as_millis() as u64);
    opened <= mark
}

/// A pool of connections to one of the two databases.
#[derive(Clone, Debug)]
pub enum Db {
    Sqlite(SqlitePool),
    Postgres(PgPool),
}

/// One connection, borrowed from a pool or from a transaction.
pub enum Conn<'c> {
    Sqlite(&'c mut SqliteConnection),
    Postgres(&'c mut PgConnection),
}

/// A transaction: everything done through [`Tx::conn`] is kept or dropped
/// as a whole.
pub enum Tx {
    Sqlite(sqlx::Transaction<'static, Sqlite>),
    Postgres(sqlx::Transaction<'static, Postgres>),
}

/// A connection held from the pool outside any transaction.
pub enum Pooled {
    Sqlite(PoolConnection<Sqlite>),
    Postgres(PoolConnection<Postgres>),
}

/// Runs `$body` with `$c` bound to the driver's own `&mut Connection`.
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
        }
    };
}

/// Turns SQLite's memory statistics off, before SQLite's first use in the
/// process (later, SQLite refuses the setting and keeps them: harmless).
/// With them on, every allocation SQLite makes takes a process-wide mutex
/// to count it: `perf` of a 100k-row validation showed binding each staged
/// value (SQLite copies the text) spend 4–5 % of the service's time locking
/// and unlocking it. Nothing here reads the statistics; SQLite's own
/// recommended options turn them off (`SQLITE_DEFAULT_MEMSTATUS=0`), and
/// neither sqlx nor rusqlite offers the setting, so it is the C call.
fn without_memory_statistics() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        // SAFETY: `SQLITE_CONFIG_MEMSTATUS` takes one int; the call only
        // changes a setting, and is refused (SQLITE_MISUSE) once SQLite is
        // initialised, which is then left as it is.
        unsafe {
            rusqlite::ffi::sqlite3_config(rusqlite::ffi::SQLITE_CONFIG_MEMSTATUS, 0 as c_int);
        }
    });
}

impl Db {
    /// Connects to `sqlite://path` (created if absent) or `postgres://…`.
    pub async fn connect(url: &str) -> Result<Db> {
        Db::connect_with(url, Duration::from_secs(60)).await
    }

    /// [`Db::connect`], with how long a SQLite writer waits for another's
    /// lock before it fails (`busy`). A connection opened before a
    /// read-only or I/O failure is not handed out again: SQLite opens a
    /// file it cannot write read-only, and such a connection would stay so
    /// after the file is writable again.
    pub async fn connect_with(url: &str, busy: Duration) -> Result<Db> {
        if url.starts_with("sqlite:") {
            without_memory_statistics();
            let options = SqliteConnectOptions::from_str(url)?
                .create_if_missing(true)
                .journal_mode(SqliteJournalMode::Wal)
                .synchronous(SqliteSynchronous::Normal)
                .busy_timeout(busy)
                .foreign_keys(true);
            let pool = SqlitePoolOptions::new()
                .max_connections(8)
                .before_acquire(|_, meta| {
                    Box::pin(async move { Ok(!opened_before_distrust(meta.age)) })
                })
                .connect_with(options)
                .await?;
            Ok(Db::Sqlite(pool))
        } else if url.starts_with("postgres:") || url.starts_with("postgresql:") {
            let options = PgConnectOptions::from_str(url)?.options([("timezone", "UTC")]);
            let pool = PgPoolOptions::new()
                .max_connections(16)
                .connect_with(options)
                .await?;
            Ok(Db::Postgres(pool))
        } else {
            Err(StoreError::Url(url.to_string()))
        }
    }

    pub fn dialect(&self) -> Dialect {
        match self {
            Db::Sqlite(_) => Dialect::Sqlite,
            Db::Postgres(_) => Dialect::Postgres,
        }
    }

    /// Creates or migrates the ledger tables and the module tables.
    pub async fn migrate(&self, catalog: &Catalog) -> Result<()> {
        schema::migrate(self, catalog).await
    }

    /// A connection outside any transaction (each statement commits alone).
    pub async fn acquire(&self) -> Result<Pooled> {
        Ok(match self {
            Db::Sqlite(p) => Pooled::Sqlite(p.acquire().await?),
            Db::Postgres(p) => Pooled::Postgres(p.acquire().await?),
        })
    }

    /// Starts a transaction. On SQLite it takes the write lock at once
    /// (`BEGIN IMMEDIATE`), so a transaction that reads and then writes
    /// cannot fail half-way on a lock upgrade.
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
                Db::Sqlite(p) => Tx::Sqlite(p.begin_with("BEGIN IMMEDIATE").await?),
                Db::Postgres(p) => Tx::Postgres(p.begin().await?),
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
                Err(StoreError::Sql(e)) if read_only_or_broken(&e) => self.write_probe().await,
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
                    // Back after an outage: connections opened meanwhile
                    // may have opened the file read-only without having
                    // failed yet; none is handed out again.
                    distrust_open_connections();
                }
                true
            }
            Ok(Err(e)) => down(&e.to_string()),
            Err(_) => down("no write in time"),
        }
    }

    /// One small write that changes nothing.
    async fn write_probe(&self) -> Result<()> {
        let mut tx = self.begin().await?;
        on_conn!(&mut tx.conn(), c => sqlx::query(
            "UPDATE ig_schema SET version = version \
             WHERE version = (SELECT MAX(version) FROM ig_schema)"
        ).execute(c).await.map(|r| r.rows_affected()))?;
        tx.commit().await
    }

    /// Closes every connection (at shutdown).
    pub async fn close(&self) {
        match self {
            Db::Sqlite(p) => p.close().await,
            Db::Postgres(p) => p.close().await,
        }
    }
}

impl Tx {
    pub fn conn(&mut self) -> Conn<'_> {
        match self {
            Tx::Sqlite(t) => Conn::Sqlite(t),
            Tx::Postgres(t) => Conn::Postgres(t),
        }
    }

    pub async fn commit(self) -> Result<()> {
        match self {
            Tx::Sqlite(t) => t.commit().await?,
            Tx::Postgres(t) => t.commit().await?,
        }
        Ok(())
    }

    pub async fn rollback(self) -> Result<()> {
        match self {
            Tx::Sqlite(t) => t.rollback().await?,
            Tx::Postgres(t) => t.rollback().await?,
        }
        Ok(())
    }
}

impl Pooled {
    pub fn conn(&mut self) -> Conn<'_> {
        match self {
            Pooled::Sqlite(c) => Conn::Sqlite(c),
            Pooled::Postgres(c) => Conn::Postgres(c),
        }
    }
}

impl Conn<'_> {
    pub fn dialect(&self) -> Dialect {
        match self {
            Conn::Sqlite(_) => Dialect::Sqlite,
            Conn::Postgres(_) => Dialect::Postgres,
        }
    }
}

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

/// Takes a lock until the transaction ends. SQLite needs none: a
/// `BEGIN IMMEDIATE` transaction already excludes every other writer.
pub async fn lock(conn: &mut Conn<'_>, lock: Lock) -> Result<()> {
    if let Conn::Postgres(c) = conn {
        sqlx::query("SELECT pg_advisory_xact_lock($1)")
            .bind(lock as i64)
            .execute(&mut **c)
            .await?;
    }
    Ok(())
}

/// Takes a lock until the transaction ends, if no other transaction holds
/// it: false when one does (the caller leaves the work to that one). On
/// SQLite, always true (see [`lock`]).
pub async fn try_lock(conn: &mut Conn<'_>, lock: Lock) -> Result<bool> {
    if let Conn::Postgres(c) = conn {
        return Ok(sqlx::query_scalar("SELECT pg_try_advisory_xact_lock($1)")
            .bind(lock as i64)
            .fetch_one(&mut **c)
            .await?);
    }
    Ok(true)
}

/// Lets the current transaction commit without waiting for its WAL to
/// reach the disk (PostgreSQL `synchronous_commit = off`; SQLite in WAL
/// mode with `synchronous = NORMAL` never waits). For work that is
/// re-done from scratch when lost, such as the batches a validation
/// stages: the next ordinary commit (the job's own move, for one) flushes
/// the WAL up to itself, and with it every relaxed commit before it. Half
/// a second of fsyncs in a 1M-row validation.
pub async fn relax_durability(conn: &mut Conn<'_>) -> Result<()> {
    if let Conn::Postgres(c) = conn {
        sqlx::query("SET LOCAL synchronous_commit = off")
            .execute(&mut **c)
            .await?;
    }
    Ok(())
}

/// Refreshes the planner's statistics of a table (quoted) after a bulk
/// write: PostgreSQL `ANALYZE`, which samples the table and blocks no
/// reader or writer. Without it the planner keeps the statistics of the
/// table before the write until autovacuum comes by: after a 1M-row commit
/// into an empty table, the next upload's key lookups were planned as
/// scans of a table it took for empty (2,437 full scans, over a minute).
/// SQLite plans without statistics unless asked to keep them.
///
/// `columns` (quoted) limits the statistics to the columns plans depend
/// on; none means every column. `target`, when given, is the statistics
/// target of this one `ANALYZE` (PostgreSQL samples 300 rows per unit of
/// it; its default is 100): a smaller sample for a table whose plans need
/// only rough proportions.
pub async fn analyze(
    conn: &mut Conn<'_>,
    table: &str,
    columns: &[String],
    target: Option<u16>,
) -> Result<()> {
    use sqlx::Connection;
    if let Conn::Postgres(c) = conn {
        let list = if columns.is_empty() {
            String::new()
        } else {
            format!(" ({})", columns.join(", "))
        };
        let sql = format!("ANALYZE {table}{list}");
        let Some(target) = target else {
            sqlx::query(&sql).execute(&mut **c).await?;
            return Ok(());
        };
        // `SET LOCAL` ends with the transaction, so the pooled connection
        // goes back with PostgreSQL's default whatever happens.
        let mut tx = c.begin().await?;
        let set = format!("SET LOCAL default_statistics_target = {target}");
        sqlx::query(&set).execute(&mut *tx).await?;
        sqlx::query(&sql).execute(&mut *tx).await?;
        tx.commit().await?;
    }
    Ok(())
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

/// Bind parameter number `n` (from 1). Statements built with it must use
/// their parameters once each, in order: SQLite gets anonymous `?`, because
/// sqlx resolves each named parameter by asking SQLite for its name, which
/// scans the statement's list of names: quadratic in a multi-row insert
/// (`sqlite3_bind_parameter_name` held 70 % of a 100k-row validation's
/// samples under `perf record -g`).
pub fn param(dialect: Dialect, n: usize) -> String {
    match dialect {
        Dialect::Sqlite => "?".to_string(),
        Dialect::Postgres => format!("${n}"),
    }
}

/// How a multi-row statement of `n` rows is split: parts of `most` rows,
/// then the rest in falling powers of two. Every connection keeps each
/// statement it prepared, so a statement sized to each batch filled the
/// eight connections' caches with up to a hundred shapes apiece: the peak
/// RSS of a 1M-row upsert validation fell from 121 to 113 MB split this
/// way (`bash bench/run.sh --rows 1000000 --modules orders --backends
/// sqlite`). Split this way a statement has at most ten shapes.
pub fn pieces(n: usize, most: usize) -> Vec<std::ops::Range<usize>> {
    let most = most.max(1);
    let mut parts = Vec::new();
    let mut start = 0;
    while n - start >= most {
        parts.push(start..start + most);
        start += most;
    }
    while start < n {
        let size = 1 << (n - start).ilog2();
        parts.push(start..start + size);
        start += size;
    }
    parts
}

/// The parts of a lookup run as one statement a part: [`pieces`] of `most`
/// on SQLite. On PostgreSQL the values go as one array parameter and the
/// statement's text is the same at any size, so the parts are plain and
/// as large as [`PG_LOOKUP`]: a validation's batch of 2,000 rows is one
/// round trip (in parts of 500, a 1M-row validation waited for 2,000 more).
pub fn lookup_parts(dialect: Dialect, n: usize, most: usize) -> Vec<std::ops::Range<usize>> {
    match dialect {
        Dialect::Postgres => (0..n)
            .step_by(PG_LOOKUP)
            .map(|start| start..n.min(start + PG_LOOKUP))
            .collect(),
        Dialect::Sqlite => pieces(n, most),
    }
}

/// Values a PostgreSQL lookup statement takes at most (its answer is at
/// most as many rows).
pub const PG_LOOKUP: usize = 5_000;

/// `(…), (…)`: value tuples of `cols` parameters for `rows` rows, numbered
/// from 1 (see [`param`]).
pub fn tuples(dialect: Dialect, rows: usize, cols: usize) -> String {
    (0..rows)
        .map(|r| {
            let marks: Vec<String> = (1..=cols).map(|c| param(dialect, r * cols + c)).collect();
            format!("({})", marks.join(", "))
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// The SQL type of a module column in each dialect. SQLite keeps `numeric`
/// as canonical decimal text: its own NUMERIC affinity would turn `0.1` into
/// a float and lose digits.
pub(crate) fn sql_type(ty: ColumnType, dialect: Dialect) -> &'static str {
    match (dialect, ty) {
        (Dialect::Sqlite, ColumnType::Integer | ColumnType::Bigint) => "INTEGER",
        (Dialect::Sqlite, ColumnType::Boolean) => "BOOLEAN",
        (Dialect::Sqlite, _) => "TEXT",
        (Dialect::Postgres, ColumnType::Text) => "TEXT",
        (Dialect::Postgres, ColumnType::Integer) => "INTEGER",
        (Dialect::Postgres, ColumnType::Bigint) => "BIGINT",
        (Dialect::Postgres, ColumnType::Numeric) => "NUMERIC",
        (Dialect::Postgres, ColumnType::Date) => "DATE",
        (Dialect::Postgres, ColumnType::Timestamptz) => "TIMESTAMPTZ",
        (Dialect::Postgres, ColumnType::Boolean) => "BOOLEAN",
    }
}

/// Quotes an identifier for SQL. Identifiers come only from the checked
/// catalog; quoting them anyway means no name can ever be read as SQL.
pub fn ident(name: &str) -> String {
    format!("\"{}\"", name.replace('"', "\"\""))
}

/// The current time, to the millisecond (what the ledger keeps).
pub fn now() -> chrono::DateTime<chrono::Utc> {
    let t = chrono::Utc::now();
    chrono::DateTime::from_timestamp_millis(t.timestamp_millis()).unwrap_or(t)
}

/// Parses stored JSON text, naming the column when it is not JSON.
pub(crate) fn json_col<T: serde::de::DeserializeOwned>(text: &str, what: &str) -> Result<T> {
    serde_json::from_str(text).map_err(|e| StoreError::Corrupt(format!("{what}: {e}")))
}

#[cfg(test)]
mod tests {
    #[test]
    fn pieces_cover_every_row_once_in_few_shapes() {
        let mut shapes = std::collections::BTreeSet::new();
        for n in 0..2000 {
            let parts = super::pieces(n, 500);
            let mut next = 0;
            for p in &parts {
                assert_eq!(p.start, next, "{n}: {parts:?}");
                assert!(!p.is_empty() && p.len() <= 500);
                next = p.end;
                shapes.insert(p.len());
            }
            assert_eq!(next, n);
        }
        // 500 and the powers of two below it.
        assert_eq!(shapes.len(), 10, "{shapes:?}");
    }

    #[test]
    fn postgres_lookups_are_plain_parts() {
        use super::{Dialect, lookup_parts};
        assert_eq!(lookup_parts(Dialect::Postgres, 1100, 500), vec![0..1100]);
        assert_eq!(
            lookup_parts(Dialect::Postgres, 12_000, 500),
            vec![0..5000, 5000..10_000, 10_000..12_000]
        );
        assert!(lookup_parts(Dialect::Postgres, 0, 500).is_empty());
        assert_eq!(
            lookup_parts(Dialect::Sqlite, 1100, 500),
            super::pieces(1100, 500)
        );
    }
}
