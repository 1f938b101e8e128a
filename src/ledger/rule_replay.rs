//! What a rule proposal's row must say, derived from its ledger events
//! (API.md section 14): the module, version and rules its
//! `rules_proposed` event recorded, and the state its last decision left
//! it in. A rule set is a proposal's row, so changing rules in the
//! database behind the gate (new rules in an approved row, a row marked
//! approved, a row with no events) is found by `ledger verify`, and the
//! service refuses to validate with such a set.

use serde_json::Value as Json;

use super::chain::Event;
use crate::rules::{Proposal, ProposalState};

/// How a proposal's row differs from what its events say, if it does.
pub fn mismatch(p: &Proposal, events: &[Event]) -> Option<String> {
    let Some(proposed) = events.iter().find(|e| e.event == "rules_proposed") else {
        return Some(format!(
            "rule proposal {} has no rules_proposed event: it was not made through the service",
            p.id
        ));
    };
    let detail = proposed.detail_json().unwrap_or(Json::Null);
    if detail.get("module").and_then(Json::as_str) != Some(p.module.as_str()) {
        return Some(format!(
            "rule proposal {} names another module than its event",
            p.id
        ));
    }
    if detail.get("version").and_then(Json::as_u64) != Some(u64::from(p.version)) {
        return Some(format!(
            "rule proposal {} has another version than its event",
            p.id
        ));
    }
    let rules = serde_json::to_value(&p.rules).unwrap_or(Json::Null);
    if detail.get("rules") != Some(&rules) {
        return Some(format!(
            "the rules of proposal {} are not the ones proposed: they were changed in the database",
            p.id
        ));
    }
    let decided = events.iter().rev().find_map(|e| match e.event.as_str() {
        "rules_approved" => Some(ProposalState::Approved),
        "rules_rejected" => Some(ProposalState::Rejected),
        _ => None,
    });
    let by_events = decided.unwrap_or(ProposalState::AwaitingApproval);
    if by_events != p.state {
        return Some(format!(
            "rule proposal {} is {} but its events say {}",
            p.id,
            p.state.as_str(),
            by_events.as_str()
        ));
    }
    None
}
