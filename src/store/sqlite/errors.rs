//! Which SQLite errors mean the database could not take the request now,
//! and which mean a connection is not to be used again.

use sqlx::error::DatabaseError;
use sqlx::sqlite::SqliteError;

/// SQLite's primary result code (the low byte of its extended code) of a
/// SQLite error; `None` for any other database's.
fn primary_code(db: &dyn DatabaseError) -> Option<i64> {
    db.try_downcast_ref::<SqliteError>()?;
    let code = db.code()?.parse::<i64>().ok()?;
    Some(code & 0xff)
}

/// Busy or locked past the busy timeout, or read-only, broken or full
/// ([`read_only_or_broken`]): it passes by itself.
pub fn unavailable(db: &dyn DatabaseError) -> bool {
    matches!(primary_code(db), Some(5 | 6 | 8 | 10 | 13 | 14))
}

/// The disk is full (`SQLITE_FULL`).
pub fn full(db: &dyn DatabaseError) -> bool {
    primary_code(db) == Some(13)
}

/// Read-only (`SQLITE_READONLY`), an I/O error, a full disk, or a file
/// that cannot be opened. SQLite opens a file it cannot write read-only,
/// and such a connection stays so after the file is writable again: none
/// of the connections open at that moment is trusted again
/// ([`super::connect::distrust_open_connections`]).
pub fn read_only_or_broken(e: &sqlx::Error) -> bool {
    let sqlx::Error::Database(db) = e else {
        return false;
    };
    matches!(primary_code(db.as_ref()), Some(8 | 10 | 13 | 14))
}
