//! Webhooks (API.md section 13): admins register endpoints; every ledger
//! event an endpoint wants is delivered to it at least once, signed the
//! Standard Webhooks way, by workers on every replica.
//!
//! Deliveries are written with the link they report
//! (`store::ledger::append`, the outbox), so a move that happened always
//! has its deliveries and a restart loses none. Four ideas, a file each:
//!
//! - [`endpoints`]: what an admin does with an endpoint (register, read,
//!   change, delete, read its deliveries, retry one, send a test), and
//!   the checks on what is asked;
//! - [`guard`]: the SSRF guard, which keeps endpoints off loopback,
//!   private and link-local addresses when they are registered and as
//!   every delivery connects;
//! - [`signing`]: each endpoint's secret and the Standard Webhooks
//!   signature of a message;
//! - [`deliverer`]: the worker that leases due deliveries, POSTs them,
//!   and retries or gives up.
//!
//! `endpoints` and `deliverer` use `guard` and `signing`; those two use
//! neither, and neither of the first two uses the other.

pub mod deliverer;
pub mod endpoints;
pub mod guard;
pub mod signing;

pub use deliverer::{BUSY_AT_ONCE, Deliverer};
pub use endpoints::{Ask, Changes, create, delete, deliveries, get, list, retry, test, update};
