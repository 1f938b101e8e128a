//! Integration tests: the real service on a free port, a real database,
//! and HTTP. One binary, so the crate is linked once.

mod common;

mod browser;
mod cli;
mod console;
mod demo;
mod errors;
mod gate;
mod key_requests;
mod modules;
mod pipeline;
mod validation;
