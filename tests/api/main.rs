//! Integration tests: the real service on a free port, a real database,
//! and HTTP. One binary, so the crate is linked once.

mod common;

mod browser;
mod chains;
mod cli;
mod console;
mod console_data;
mod console_rules;
mod demo;
mod disk;
mod errors;
mod events;
mod export;
mod fidelity;
mod fixtures;
mod formats;
/// What the fuzz targets run (fuzz/ is a crate of its own, outside the
/// workspace), replayed by [`fuzz_regressions`].
#[path = "../../fuzz/src/lib.rs"]
mod fuzz_harness;
mod fuzz_regressions;
mod gate;
mod hardening;
mod hostile;
mod i18n;
mod idempotency;
mod key_requests;
mod ledger;
mod load;
mod metrics;
mod modules;
mod mysql;
mod oidc;
mod openapi;
mod parity;
mod persons;
mod pipeline;
mod references;
mod replicas;
mod retention;
mod revisions;
mod rows_file;
mod rule_proposals;
mod rules;
mod upserts;
mod validation;
mod webhooks;
mod work;
mod workbooks;
