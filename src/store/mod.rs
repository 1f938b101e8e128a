//! Storage: one interface over three databases, the embedded SQLite
//! default, PostgreSQL, and MariaDB or MySQL. The store knows nothing about HTTP; the HTTP layer
//! knows nothing about SQL.
//!
//! # One enum, one folder per backend
//!
//! The rest of the crate holds a [`Db`] (a pool), a [`Tx`] or a [`Conn`],
//! enums with a variant per backend (`db.rs`). SQL that is the same for
//! all is written once, with `$1`-style parameters (which MySQL's
//! connection, `mysql::exec`, rewrites to its `?`), and run through
//! [`on_conn!`](crate::on_conn), which expands it for each driver's own
//! connection type: jobs, keys, the ledger, webhooks,
//! retention, the stage's reads, the commit's set-based writes.
//!
//! What differs is in the backend's own folder, the three side by side:
//!
//! | | `sqlite/` | `postgres/` | `mysql/` |
//! |---|---|---|---|
//! | `connect.rs` | the file in WAL mode, a busy timeout, memory statistics off, connections distrusted after a read-only failure | sessions in UTC | sessions in UTC and ANSI quoting; the server, user and version checked |
//! | `errors.rs` | which result codes pass by themselves | which SQLSTATEs pass by themselves | which error numbers pass by themselves |
//! | `sql.rs` | the words of shared statements: `?`, types as text, `IS`, `json_each`, … | `$n`, native types, `IS NOT DISTINCT FROM`, `json_array_elements_text`, fill factor, … | `?`, `LONGTEXT` and `VARCHAR`, `<=>`, `JSON_TABLE`, multi-table `UPDATE`, … |
//! | `txn.rs` | `BEGIN IMMEDIATE`, so nothing else to lock | advisory and table locks, `SET LOCAL`, `ANALYZE` | rows of `ig_locks` `FOR UPDATE`, a named lock for migrations |
//! | `schema.rs` | its migrations (`migrations/sqlite/`), its catalog | its migrations (`migrations/postgres/`), its catalog, chunk storage | its migrations (`migrations/mysql/`), its catalog, the types of a business system's table |
//! | `values.rs` | values by storage class, through sqlx and `rusqlite` | values by wire format | values through sqlx's decoders |
//! | `stage.rs` | a batch of staged rows as multi-row `INSERT`s | as `COPY` (`stage::text`) | as `LOAD DATA LOCAL INFILE` (`stage::text`), or multi-row `INSERT`s sized to the packet where the server or the URL refuses it |
//! | `load.rs` | the validation's writer: a thread through `rusqlite` (`bound.rs`) | two `COPY`s in flight (`store::flight`) | two `LOAD DATA`s in flight (`store::flight`) |
//! | `lookup.rs` | key lookups: a `VALUES` list joined, on a read connection of the validation's own | one `unnest` a batch, joined or probed | a derived table of parameters, joined |
//!
//! MySQL's own file, `exec.rs`, is the connection `on_conn!` hands its
//! statements: it rewrites their `$n` to `?`.
//!
//! A shared file reaches a backend at a dispatch point only: a `match` on
//! the connection (or pool) with one arm per backend, each calling the
//! function of that name in its folder (`txn::lock`, `rows::insert_batch`,
//! `tables::by_keys`, `references::present`, `lookup::Lookup::by_keys`,
//! `load::Loader`, `schema`'s `ledger_tables`), or, for a word in a
//! statement written once, a method of [`Dialect`] (`dialect.rs`), each
//! answered by the backends' `sql.rs`.
//!
//! # Files import one way
//!
//! No two files of the store import each other, directly or through
//! others (`tests/layers.rs` checks it for the whole crate, and that nothing outside `sqlite/`
//! names `rusqlite`). The backends' files use the shared types and
//! helpers (`db`, `error`, `sql`, `dialect`, `values`, `stage`, `found`,
//! `jobs`); the files that dispatch (`txn`, `rows`, `tables`, `lookup`,
//! `load`, `references`, `schema`) call the backends. So what both sides
//! need sits below both: a staged row in `stage`, what a lookup asks and
//! finds in `found`, a lease in `jobs`, the batch size in `sql`. This file
//! declares the modules and re-exports the paths the crate uses
//! (`store::Db`, `store::lock`, `store::now`, …), nothing more.
//!
//! # Adding a backend
//!
//! A backend is a variant of each enum in `db.rs` (and an arm of
//! `on_conn!`), a variant of [`Dialect`], a folder with the files of the
//! table above, its migrations in `migrations/`, and one arm at each
//! dispatch point: the compiler names every `match` that lacks it.

pub mod blobs;
mod db;
mod dialect;
mod error;
pub mod exports;
mod flight;
mod found;
pub mod idempotency;
pub mod jobs;
pub mod key_requests;
pub mod keys;
pub mod ledger;
pub mod load;
pub mod lookup;
pub mod mappings;
pub mod mysql;
pub mod oidc;
pub mod postgres;
pub mod references;
pub mod retention;
pub mod rows;
pub mod rule_proposals;
pub mod schema;
pub mod sessions;
mod sql;
pub mod sqlite;
pub mod stage;
mod tab_text;
pub mod tables;
mod txn;
pub mod values;
pub mod webhooks;

pub use db::{Conn, Db, Pooled, Tx};
pub use dialect::Dialect;
pub use error::{Result, StoreError, io_out_of_space, out_of_space, unavailable};
pub use sql::{ident, now, set_clock_back, wind_clock_forward};
pub use txn::{
    ANALYZE_AFTER_ROWS, Lock, analyze, lock, relax_durability, rollback_to, savepoint, try_lock,
};
