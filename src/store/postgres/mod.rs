//! The PostgreSQL store: a server shared by every replica, so the work
//! replicas must take turns at is serialised by advisory locks, and a
//! commit locks its table (`txn.rs`); staged rows are loaded with `COPY`,
//! its bulk loader, two batches at a time (`load.rs`, `stage.rs`); keys are looked up a batch per `unnest` statement
//! (`lookup.rs`); values are read from the wire, by hand, so that what
//! its types hold and this crate's do not (`NaN`, `infinity`, years past
//! chrono's) comes back exactly (`values.rs`). What each file holds is in
//! the table of `store`'s documentation.

pub mod connect;
pub mod errors;
pub mod load;
pub mod lookup;
pub mod schema;
pub mod sql;
pub mod stage;
pub mod txn;
pub mod values;
