//! The SQLite pool: the file created if absent, written ahead (WAL), and
//! no connection handed out again once it may have opened the file
//! read-only.

use std::os::raw::c_int;
use std::str::FromStr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use sqlx::SqlitePool;
use sqlx::sqlite::{SqliteConnectOptions, SqliteJournalMode, SqlitePoolOptions, SqliteSynchronous};

/// Connections a SQLite pool holds at most.
const MAX_CONNECTIONS: u32 = 8;

/// A pool over `url` (`sqlite://path`). A writer waits up to `busy` for
/// another writer's lock before it fails (SQLite's `busy`). A connection
/// opened before a
/// read-only or I/O failure is not handed out again: SQLite opens a file
/// it cannot write read-only, and such a connection would stay so after
/// the file is writable again.
pub async fn pool(url: &str, busy: Duration) -> Result<SqlitePool, sqlx::Error> {
    without_memory_statistics();
    let options = SqliteConnectOptions::from_str(url)?
        .create_if_missing(true)
        .journal_mode(SqliteJournalMode::Wal)
        .synchronous(SqliteSynchronous::Normal)
        .busy_timeout(busy)
        .foreign_keys(true);
    SqlitePoolOptions::new()
        .max_connections(MAX_CONNECTIONS)
        .before_acquire(|_, meta| Box::pin(async move { Ok(!opened_before_distrust(meta.age)) }))
        .connect_with(options)
        .await
}

/// Turns SQLite's memory statistics off, before SQLite's first use in the
/// process (later, SQLite refuses the setting and keeps them: harmless).
/// With them on, every allocation SQLite makes takes a process-wide mutex
/// to count it: `perf record --call-graph dwarf` of a 100k-row validation
/// (`bash bench/once.sh`) showed binding each staged value (SQLite copies
/// the text) spend 4–5 % of the service's time locking and unlocking it,
/// and turning them off took the validation's median from 0.77 to 0.72
/// s. Nothing here reads the statistics; SQLite's own recommended options
/// turn them off (`SQLITE_DEFAULT_MEMSTATUS=0`), and neither sqlx nor
/// rusqlite offers the setting, so it is the C call.
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

/// When connections opened before it stopped being trusted (milliseconds
/// since [`epoch`]; 0: never). A pool checks it as it hands a connection
/// out ([`pool`]'s `before_acquire`).
static DISTRUST_BEFORE: AtomicU64 = AtomicU64::new(0);

fn epoch() -> std::time::Instant {
    static EPOCH: std::sync::OnceLock<std::time::Instant> = std::sync::OnceLock::new();
    *EPOCH.get_or_init(std::time::Instant::now)
}

/// No connection open now is handed out again (see [`pool`]).
pub fn distrust_open_connections() {
    let now = epoch().elapsed().as_millis() as u64;
    DISTRUST_BEFORE.store(now.max(1), Ordering::Relaxed);
}

/// Whether a connection of this age was opened before the last failure
/// that made open connections untrustworthy.
fn opened_before_distrust(age: Duration) -> bool {
    let mark = DISTRUST_BEFORE.load(Ordering::Relaxed);
    if mark == 0 {
        return false;
    }
    let now = epoch().elapsed().as_millis() as u64;
    let opened = now.saturating_sub(age.as_millis() as u64);
    opened <= mark
}

/// Bytes an unprivileged writer may still use on the disk that holds the
/// pool's database file; `None` when that cannot be asked (an in-memory
/// database, a platform without `statvfs`).
pub fn free_bytes(pool: &SqlitePool) -> Option<u64> {
    let file = pool.connect_options().get_filename().to_path_buf();
    let dir = match file.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
        _ => std::path::PathBuf::from("."),
    };
    free_in(&dir)
}

/// Bytes of the pages the database file holds free (its freelist), which
/// SQLite fills before the file grows.
pub async fn free_pages_bytes(pool: &SqlitePool) -> Result<u64, sqlx::Error> {
    let pages: i64 = sqlx::query_scalar("PRAGMA freelist_count")
        .fetch_one(pool)
        .await?;
    let size: i64 = sqlx::query_scalar("PRAGMA page_size")
        .fetch_one(pool)
        .await?;
    Ok((pages.max(0) as u64).saturating_mul(size.max(0) as u64))
}

#[cfg(unix)]
fn free_in(dir: &std::path::Path) -> Option<u64> {
    let st = rustix::fs::statvfs(dir).ok()?;
    Some(st.f_bavail.saturating_mul(st.f_frsize))
}

#[cfg(not(unix))]
fn free_in(_dir: &std::path::Path) -> Option<u64> {
    None
}
