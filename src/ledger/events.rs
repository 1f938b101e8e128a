//! The events clients see (API.md section 13): every link of the ledger,
//! named for what happened. The contract's names come first; a few moves
//! it does not name get names of their own (changes are additive), and the
//! service's private notes (`interrupted`) are not events.

/// Every event type a client may see or subscribe to.
pub const TYPES: [&str; 26] = [
    "job.created",
    "job.awaiting_approval",
    "job.invalid",
    "job.failed",
    "job.approved",
    "job.committed",
    "job.rejected",
    "job.cancelled",
    "job.expired",
    "job.rollback_requested",
    "job.rolled_back",
    "job.rollback_failed",
    "job.revised",
    "job.purged",
    "key.created",
    "key.revoked",
    "person.signed_in",
    "person.sign_in_refused",
    "key_request.created",
    "key_request.decided",
    "key_request.withdrawn",
    "rules.proposed",
    "rules.approved",
    "rules.rejected",
    "module.exported",
    // A delivery a person asked for to try an endpoint (webhooks only).
    "webhook.test",
];

/// The client's name for a ledger link (`event` as stored, and the state
/// it moved to), or `None` for a private note.
pub fn client_type(event: &str, to_state: &str) -> Option<&'static str> {
    Some(match event {
        "upload" => "job.created",
        "checked" => "job.awaiting_approval",
        "file_failure" => "job.invalid",
        "row_errors" | "commit_failed" => "job.failed",
        "gave_up" if to_state == "failed" => "job.failed",
        "gave_up" | "rollback_conflict" => "job.rollback_failed",
        "approve" => "job.approved",
        "written" => "job.committed",
        "reject" => "job.rejected",
        "cancel" => "job.cancelled",
        "expire" => "job.expired",
        "rollback" => "job.rollback_requested",
        "undone" => "job.rolled_back",
        "revised" => "job.revised",
        "purged" => "job.purged",
        "key_created" => "key.created",
        "key_revoked" => "key.revoked",
        "signed_in" => "person.signed_in",
        "sign_in_refused" => "person.sign_in_refused",
        "key_request_created" => "key_request.created",
        "key_request_decided" => "key_request.decided",
        "key_request_withdrawn" => "key_request.withdrawn",
        "rules_proposed" => "rules.proposed",
        "rules_approved" => "rules.approved",
        "rules_rejected" => "rules.rejected",
        "module_exported" => "module.exported",
        _ => return None,
    })
}

/// Whether a client's name is about a module's rules (seen within the
/// module's scope, as its jobs are).
pub fn about_rules(client_type: &str) -> bool {
    client_type.starts_with("rules.")
}

/// Whether a client's name is about an export of a module's rows (seen
/// within the module's scope, as its jobs are).
pub fn about_exports(client_type: &str) -> bool {
    client_type.starts_with("module.")
}

/// Whether a client's name is about keys or sign-ins (seen by admins
/// only).
pub fn about_keys(client_type: &str) -> bool {
    client_type.starts_with("key.")
        || client_type.starts_with("key_request.")
        || client_type.starts_with("person.")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ledger::{ALL_MOVES, JobState, next};

    #[test]
    fn every_move_but_the_private_note_is_a_known_type() {
        for m in ALL_MOVES {
            for from in JobState::sources_of(m) {
                let to = next(from, m).unwrap();
                let t = client_type(m.as_str(), to.as_str());
                if m.as_str() == "interrupted" {
                    assert_eq!(t, None);
                } else {
                    let t = t.unwrap_or_else(|| panic!("{} has no type", m.as_str()));
                    assert!(TYPES.contains(&t), "{t}");
                }
            }
        }
        assert_eq!(client_type("key_created", "active"), Some("key.created"));
        assert!(about_keys("key_request.decided") && !about_keys("job.created"));
        let exported = client_type("module_exported", "exported");
        assert!(exported.is_some_and(|t| TYPES.contains(&t) && about_exports(t)));
        assert!(!about_exports("job.committed") && !about_exports("rules.approved"));
    }
}
