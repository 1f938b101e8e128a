//! Rules: what the business expects of a row beyond its column types
//! (API.md section 14). A module's rule set is data: normalizers that
//! rewrite a cell's text before it is read as its type, checks (CEL
//! expressions over the row's typed values) and unique sets of columns.
//!
//! This module is pure. [`compile`] turns a proposed set into what
//! validation runs, refusing a malformed rule then, never at validation
//! time; [`diff`] says what a proposal changes.

pub mod check;
mod compile;
mod diff;
pub mod normalize;
mod proposal;
mod shape;
pub mod unique;

use serde::{Deserialize, Serialize};

pub use compile::{Compiled, RuleProblem, UniqueRule, compile};
pub use diff::{Changed, Diff, diff};
pub use normalize::Normalizer;
pub use proposal::{Proposal, ProposalState};
pub use shape::parse;

use crate::ids::ModuleKey;

/// At most this many rules in one module's set.
pub const MAX_RULES: usize = 200;

/// At most this many bytes in one check's expression.
pub const MAX_EXPRESSION_BYTES: usize = 4096;

/// One rule of a set, as JSON: an `id` unique in the set and the fields of
/// its kind, `{"id", "column", "normalize"}`, `{"id", "check", "message",
/// "columns", "severity"}` or `{"id", "unique", "severity"}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(try_from = "shape::RawRule")]
pub struct Rule {
    pub id: String,
    #[serde(flatten)]
    pub kind: RuleKind,
}

/// What a rule does.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(untagged)]
pub enum RuleKind {
    /// Rewrites a column's cell text before it is read as its type.
    Normalize {
        column: String,
        normalize: Normalizer,
    },
    /// A CEL expression over `row` that must be true.
    Check {
        check: String,
        message: String,
        /// The columns the row error names; the first is the error's column.
        columns: Vec<String>,
        severity: Severity,
    },
    /// Columns whose values together must not repeat within a file.
    Unique {
        unique: Vec<String>,
        severity: Severity,
    },
}

/// Whether a broken rule makes a row error, which keeps the row out, or a
/// row warning, which the approver sees (API.md section 12).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    #[default]
    Error,
    Warning,
}

/// A module's rule set at one version. Version 1 of every module is empty
/// unless the catalog ships rules with it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RuleSet {
    pub module: ModuleKey,
    pub version: u32,
    pub rules: Vec<Rule>,
}

impl RuleSet {
    /// A module's first version: no rules.
    pub fn initial(module: ModuleKey) -> RuleSet {
        RuleSet {
            module,
            version: 1,
            rules: Vec::new(),
        }
    }
}

#[cfg(test)]
mod fixture;
