//! The PostgreSQL store.

pub mod connect;
pub mod errors;
pub mod sql;
pub mod txn;
