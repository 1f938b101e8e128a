//! The PostgreSQL store.

pub mod connect;
mod copy_text;
pub mod errors;
pub mod load;
pub mod lookup;
pub mod schema;
pub mod sql;
pub mod stage;
pub mod txn;
pub mod values;
