//! importgate: a bulk data import service with a Human-Gate.
//!
//! A file uploaded for one of the catalog's modules becomes a validation
//! job; its preview waits at the gate until a second person approves it;
//! only then is it committed, in one transaction, and it can be rolled back
//! through the gate again.
//!
//! The layers, top to bottom (data flows one way; `docs/architecture.md`):
//! - transport: [`http`] (the API), [`console`] (the web console), the
//!   command line (`main.rs`, [`client`]); [`app`] puts them together;
//! - [`service`]: what people and workers do (upload, read, decide, manage
//!   keys), written once for every front door; [`worker`] and [`demo`]
//!   call it too;
//! - the domain: [`ledger`] (the state table, the gate, the hash chain;
//!   pure rules), [`catalog`], [`ingest`] (bytes → rows of cells),
//!   [`validate`] (cells → typed values and row errors, pure), [`pipeline`]
//!   (the validation stage, commit and rollback: the domain's work over the
//!   store), [`rules`] (a module's normalizers, checks and unique rules,
//!   compiled and evaluated; pure), [`keys`] (keys, roles, masking),
//!   [`webhooks`] (endpoints, deliveries and attempts as records);
//! - storage: [`store`], SQLite and PostgreSQL behind one interface;
//! - settings: [`config`].

pub mod app;
pub mod catalog;
pub mod client;
pub mod config;
pub mod console;
pub mod demo;
pub mod http;
pub mod ids;
pub mod ingest;
pub mod keys;
pub mod ledger;
pub mod pipeline;
pub mod rules;
pub mod service;
pub mod store;
pub mod validate;
pub mod webhooks;
pub mod worker;
