//! Integration tests: the real service on a free port, a real database,
//! and HTTP. One binary, so the crate is linked once.

mod common;

mod cli;
mod errors;
mod fixtures;
mod formats;
mod gate;
mod hostile;
mod ledger;
mod modules;
mod pipeline;
mod replicas;
mod validation;
