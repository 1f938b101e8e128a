//! A change of a module's rules as it waits at the gate (API.md section
//! 14): proposed by an admin, approved or rejected by another person. An
//! approved proposal is its module's rule set at its version.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use super::Rule;
use crate::ids::{KeyId, ModuleKey, ProposalId};

/// Where a proposal is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum ProposalState {
    AwaitingApproval,
    Approved,
    Rejected,
}

impl ProposalState {
    pub const ALL: [ProposalState; 3] = [
        ProposalState::AwaitingApproval,
        ProposalState::Approved,
        ProposalState::Rejected,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            ProposalState::AwaitingApproval => "awaiting_approval",
            ProposalState::Approved => "approved",
            ProposalState::Rejected => "rejected",
        }
    }

    pub fn parse(s: &str) -> Option<ProposalState> {
        ProposalState::ALL.into_iter().find(|st| st.as_str() == s)
    }
}

/// A proposed rule set and what became of it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Proposal {
    pub id: ProposalId,
    pub module: ModuleKey,
    /// The version the set becomes once approved: one past the version in
    /// force when it was proposed.
    pub version: u32,
    pub rules: Vec<Rule>,
    pub comment: Option<String>,
    pub state: ProposalState,
    pub proposed_by: KeyId,
    pub proposed_at: DateTime<Utc>,
    pub decided_by: Option<KeyId>,
    pub decided_at: Option<DateTime<Utc>>,
    pub decision_comment: Option<String>,
}

impl Proposal {
    /// The version whose rules it changes.
    pub fn base_version(&self) -> u32 {
        self.version - 1
    }
}
