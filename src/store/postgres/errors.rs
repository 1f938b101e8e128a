//! Which PostgreSQL errors mean the database could not take the request
//! now (SQLSTATE codes).

use sqlx::error::DatabaseError;
use sqlx::postgres::PgDatabaseError;

/// The disk is full (`53100 disk_full`).
pub fn disk_full(db: &dyn DatabaseError) -> bool {
    db.try_downcast_ref::<PgDatabaseError>().is_some() && db.code().as_deref() == Some("53100")
}

/// Connection exceptions (class `08`), serialization failures and
/// deadlocks, a lock not available, shutdowns, too many connections, a
/// read-only transaction, a full disk: it passes by itself.
pub fn unavailable(db: &dyn DatabaseError) -> bool {
    if db.try_downcast_ref::<PgDatabaseError>().is_none() {
        return false;
    }
    let code = db.code().unwrap_or_default();
    code.starts_with("08")
        || matches!(
            code.as_ref(),
            "40001" | "40P01" | "55P03" | "57P01" | "57P02" | "57P03" | "53300" | "25006" | "53100"
        )
}
