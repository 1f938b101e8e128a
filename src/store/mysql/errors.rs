//! Which MariaDB and MySQL errors mean the database could not take the
//! request now (server error numbers).

use sqlx::error::DatabaseError;
use sqlx::mysql::MySqlDatabaseError;

/// The server's number of a MySQL error, if it is one.
fn number(db: &dyn DatabaseError) -> Option<u16> {
    db.try_downcast_ref::<MySqlDatabaseError>()
        .map(|e| e.number())
}

/// The disk or a table is full (`1021 ER_DISK_FULL`, `1114
/// ER_RECORD_FILE_FULL`, `3 EE_WRITE` out of space).
pub fn disk_full(db: &dyn DatabaseError) -> bool {
    matches!(number(db), Some(1021 | 1114))
}

/// A lock wait that timed out, a deadlock, too many connections, a
/// server shutting down or gone read-only, a full disk: it passes by
/// itself.
pub fn unavailable(db: &dyn DatabaseError) -> bool {
    matches!(
        number(db),
        Some(1205 | 1213 | 1040 | 1053 | 1290 | 1836 | 1021 | 1114 | 2006 | 2013)
    )
}

/// A key's value is already in a unique index (`1062 ER_DUP_ENTRY`).
pub fn duplicate_key(db: &dyn DatabaseError) -> bool {
    matches!(number(db), Some(1062))
}

/// A lock asked for `NOWAIT` is held by another transaction (MySQL's
/// `3572 ER_LOCK_NOWAIT`; MariaDB answers a lock wait timeout, `1205`).
pub fn lock_busy(db: &dyn DatabaseError) -> bool {
    matches!(number(db), Some(3572 | 1205))
}
