//! The SQLite store: the embedded default, one file, one writer at a time
//! (each transaction takes the write lock as it begins, `txn.rs`). What
//! each file holds is in the table of `store`'s documentation.
//!
//! # Why a second driver
//!
//! Beside sqlx, this store writes and reads through `rusqlite` where a
//! validation spends its time, and through its FFI where `rusqlite` copies
//! (`bound.rs`). sqlx builds a multi-row statement's argument list on the
//! runtime's threads, binds it value by value on the connection's own
//! thread, and sends each result row back over a channel:
//!
//! - the stage writer (`load.rs`): through sqlx, writing the stage took
//!   6.5 s of a 9 s validation of 1M `orders` rows (timers around the
//!   staging), where SQLite's own `INSERT … SELECT` of the same rows takes
//!   3.3 s (`sqlite3`, `.timer on`); through `rusqlite`, the validation
//!   took 6.5–7.2 s instead of 9.2–10.4 (`bash bench/run.sh --rows 1000000
//!   --modules orders --formats csv`, two builds alternated);
//! - the key lookups (`lookup.rs`): through sqlx, 6.4 s of a 9 s upsert
//!   validation of 1M orders, against 0.5 s of SQLite's own join; through
//!   `rusqlite`, the upsert validation took 8.1 s instead of 9.1 (the same
//!   command, `--backends sqlite`);
//! - texts bound where they lie (`bound.rs`, `SQLITE_STATIC`, which
//!   `rusqlite` does not offer): the writer's instructions for 20,000
//!   orders fell from 273 M to 220 M (callgrind of the server over `bash
//!   bench/once.sh`), and the 1M-row insert and upsert validations took
//!   4.3 % and 5.6 % less time (`bash bench/once.sh`, alternated, medians
//!   of 3);
//! - an export's pages (`pages.rs`): through sqlx, half of a 1M-row
//!   export's samples were rows handed from the connection's thread to
//!   the runtime, one wakeup a row;
//! - memory statistics off (`connect.rs`, a setting neither driver
//!   offers): a 100k-row validation's median fell from 0.77 to 0.72 s
//!   (`bash bench/once.sh`, eight alternated rounds).
//!
//! With them, the harness's latest run (`bash bench/run.sh --rows 1000000
//! --runs 3 --modules orders --formats csv`) validates 1M orders on SQLite
//! in 2.79 s, 0.98× the bare CSV loop plus `sqlite3 .import` (0.40 + 2.44
//! s), and the stage writer is SQLite's critical path: sqlx in its place
//! brings back the per-value binding measured above.
//!
//! `rusqlite` is named in this folder only (`store::imports` checks it).
//! Its `unsafe` is in three places, each with its reason: `bound.rs`
//! (statements bound in place), `load.rs` (sqlx's locked handle lent to
//! `rusqlite` for the writer's run) and `connect.rs` (one `sqlite3_config`
//! call before SQLite's first use).

mod bound;
pub mod connect;
pub mod errors;
pub mod load;
pub mod lookup;
pub mod pages;
pub mod schema;
pub mod sql;
pub mod stage;
pub mod txn;
pub mod values;
