//! The pipeline's work over the store: the stages a worker runs for a job.
//!
//! - [`validation`]: read the stored file, check every row with
//!   [`crate::validate`], compare with the target table, stage the preview;
//! - [`apply`]: the module's rules applied to each row as it is read;
//! - [`distinct`]: whether a validation's keys are certainly all
//!   distinct, learned as they are staged;
//! - [`references`]: the set-based checks of values that name rows of
//!   other modules;
//! - [`trial`]: a proposed rule set tried on a job's file, nothing staged;
//! - [`commit`]: write the approved preview in one transaction, or undo a
//!   commit, after re-checking what the approver saw.
//!
//! Each stage reports what it found; the ledger's rules
//! ([`crate::ledger::outcome`]) decide which move that makes, and the
//! service records it.

pub mod apply;
pub mod commit;
pub mod distinct;
pub mod references;
pub mod revalidate;
pub mod trial;
pub mod validation;
mod versions;
