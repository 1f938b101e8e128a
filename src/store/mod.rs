//! Storage: one interface over two databases, the embedded SQLite default
//! and PostgreSQL.
//!
//! The store knows nothing about HTTP; the HTTP layer knows nothing about SQL.

pub mod blobs;
mod db;
mod dialect;
mod error;
mod found;
pub mod idempotency;
pub mod jobs;
pub mod key_requests;
pub mod keys;
pub mod ledger;
pub mod load;
pub mod lookup;
pub mod mappings;
pub mod postgres;
pub mod references;
pub mod retention;
pub mod rows;
pub mod schema;
pub mod sessions;
mod sql;
pub mod sqlite;
pub mod stage;
pub mod tables;
mod txn;
pub mod values;
pub mod webhooks;

pub use db::{Conn, Db, Pooled, Tx};
pub use dialect::Dialect;
pub use error::{Result, StoreError, unavailable};
pub use sql::{ident, now};
pub use txn::{
    ANALYZE_AFTER_ROWS, Lock, analyze, lock, relax_durability, rollback_to, savepoint, try_lock,
};
