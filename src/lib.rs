//! importgate: a bulk data import service with a Human-Gate.
//!
//! A file uploaded for one of the catalog's modules becomes a validation
//! job; its preview waits at the gate until a second person approves it;
//! only then is it committed, in one transaction, and it can be rolled back
//! through the gate again.
//!
//! Where each part lives:
//! - [`catalog`]: the modules, their tables, columns and natural keys;
//! - [`ingest`]: file bytes → rows of cells (one seam for every format);
//! - [`validate`]: cells → typed values and row errors; the validation stage;
//! - [`ledger`]: jobs, states, the moves table and the gate rules;
//! - [`store`]: SQLite and PostgreSQL behind one interface;
//! - [`commit`]: the writes of a commit and of a rollback;
//! - [`worker`]: the leases that run validation, commit and rollback;
//! - [`http`]: the API; [`keys`]: keys, roles and masking;
//! - [`console`]: the web console at `/`; [`demo`]: `importgate demo`'s ledger;
//! - [`config`] and [`app`]: settings and the running service;
//! - [`client`]: `importgate import`, the command-line upload client.

pub mod app;
pub mod catalog;
pub mod client;
pub mod commit;
pub mod config;
pub mod console;
pub mod demo;
pub mod http;
pub mod ingest;
pub mod keys;
pub mod ledger;
pub mod store;
pub mod validate;
pub mod worker;
