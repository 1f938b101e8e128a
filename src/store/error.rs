//! The store's one error type, and which database failures pass by
//! themselves (each backend names its own: `sqlite::errors`,
//! `postgres::errors`).

use super::{mysql, postgres, sqlite};

/// A database error from the store.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("database: {0}")]
    Sql(sqlx::Error),
    #[error("database URL {0:?} is none of sqlite://, postgres://, mysql:// or mariadb://")]
    Url(String),
    /// The database server could not be reached, refused the user, or is
    /// a version the store does not run on (named, with host and user).
    #[error("{0}")]
    Unreachable(String),
    /// A table the store writes exists with columns of other types.
    #[error("{0}")]
    Schema(String),
    /// The database refused a value of a bulk load (MySQL's `LOAD DATA`,
    /// which warns where a statement fails).
    #[error("database: {0}")]
    Refused(String),
    #[error("stored data is corrupt: {0}")]
    Corrupt(String),
    /// The database's disk has less free space than is kept in reserve.
    #[error("{0}")]
    NoSpace(String),
}

pub type Result<T, E = StoreError> = std::result::Result<T, E>;

impl From<sqlx::Error> for StoreError {
    fn from(e: sqlx::Error) -> StoreError {
        if sqlite::errors::read_only_or_broken(&e) {
            // Connections opened while the file could not be written stay
            // read-only: none of those open now is trusted again.
            sqlite::connect::distrust_open_connections();
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
            StoreError::NoSpace(_) | StoreError::Unreachable(_) => true,
            _ => false,
        }
    }

    /// Whether the database refused a write for lack of disk space.
    pub fn is_out_of_space(&self) -> bool {
        match self {
            StoreError::Sql(e) => out_of_space(e),
            StoreError::NoSpace(_) => true,
            _ => false,
        }
    }

    /// Whether a connection that gave this error is not to be used again
    /// (see [`sqlite::errors::read_only_or_broken`]).
    pub(super) fn is_read_only_or_broken(&self) -> bool {
        matches!(self, StoreError::Sql(e) if sqlite::errors::read_only_or_broken(e))
    }
}

/// See [`StoreError::is_unavailable`]: the driver's own failures to reach
/// the database, and the database errors each backend counts as passing.
pub fn unavailable(e: &sqlx::Error) -> bool {
    match e {
        sqlx::Error::Io(_)
        | sqlx::Error::Tls(_)
        | sqlx::Error::PoolTimedOut
        | sqlx::Error::PoolClosed
        | sqlx::Error::WorkerCrashed => true,
        sqlx::Error::Database(db) => {
            sqlite::errors::unavailable(db.as_ref())
                || postgres::errors::unavailable(db.as_ref())
                || mysql::errors::unavailable(db.as_ref())
        }
        _ => false,
    }
}

/// Whether the database refused a write for lack of disk space: SQLite's
/// `SQLITE_FULL`, PostgreSQL's `disk_full`, or a file that could not grow
/// (`ENOSPC`). It is also [`unavailable`]: a request is answered `503`,
/// while a job's work counts it as a failed attempt (API.md section 6).
pub fn out_of_space(e: &sqlx::Error) -> bool {
    match e {
        sqlx::Error::Io(io) => io_out_of_space(io),
        sqlx::Error::Database(db) => {
            sqlite::errors::full(db.as_ref())
                || postgres::errors::disk_full(db.as_ref())
                || mysql::errors::disk_full(db.as_ref())
        }
        _ => false,
    }
}

/// `ENOSPC`: a file could not grow.
pub fn io_out_of_space(e: &std::io::Error) -> bool {
    e.kind() == std::io::ErrorKind::StorageFull || e.raw_os_error() == Some(28)
}

/// Parses stored JSON text, naming the column when it is not JSON.
pub(crate) fn json_col<T: serde::de::DeserializeOwned>(text: &str, what: &str) -> Result<T> {
    serde_json::from_str(text).map_err(|e| StoreError::Corrupt(format!("{what}: {e}")))
}
