//! The SQLite store.

mod bound;
pub mod connect;
pub mod errors;
pub mod load;
pub mod lookup;
pub mod schema;
pub mod sql;
pub mod stage;
pub mod txn;
pub mod values;
