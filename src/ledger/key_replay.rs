//! What a key row must say, derived from its ledger events (API.md
//! section 9): the role, scope, person and issuer its `key_created` event
//! recorded, its expiry when the event has one, and whether a
//! `key_revoked` event followed. `ledger verify` checks every key with it,
//! and the service refuses a key whose row disagrees, so that raising a
//! key's role or scope, or un-revoking it, in the database is found and
//! does not work.

use chrono::{DateTime, Utc};
use serde_json::Value as Json;

use super::chain::Event;
use crate::keys::KeyRecord;

/// How a key row differs from what its events say, if it does (`None`
/// for a key without a `key_created` event: see [`distrust`]).
pub fn key_mismatch(key: &KeyRecord, events: &[Event]) -> Option<String> {
    let created = events.iter().find(|e| e.event == "key_created")?;
    let detail = created.detail_json().unwrap_or(Json::Null);
    let text = |name: &str| detail.get(name).map(|v| v.as_str().map(str::to_string));
    // A sign-in key's role and modules are its holder's latest sign-in's
    // (API.md section 17): the last `key_regranted` says them.
    let granted = (events.iter().rev())
        .find(|e| e.event == "key_regranted")
        .and_then(|e| e.detail_json())
        .unwrap_or_else(|| detail.clone());
    if let Some(role) = granted.get("role").map(|v| v.as_str().map(str::to_string))
        && role.as_deref() != Some(key.role.as_str())
    {
        return Some(differs("role", key.role.as_str(), role));
    }
    if let Some(modules) = granted.get("modules")
        && modules != &serde_json::json!(key.modules)
    {
        return Some(differs(
            "modules",
            &key.modules.join(","),
            Some(modules.to_string()),
        ));
    }
    if let Some(person) = text("person_id")
        && person.as_deref() != Some(key.person_id.as_str())
    {
        return Some(differs("person_id", &key.person_id, person));
    }
    let row_issuer = key.issued_by.as_ref().map(|k| k.as_str().to_string());
    if let Some(issuer) = text("issued_by")
        && issuer != row_issuer
    {
        let row = row_issuer.as_deref().unwrap_or("none");
        return Some(differs("issued_by", row, issuer));
    }
    if let Some(expires) = text("expires_at")
        && expires != key.expires_at.map(|t| super::job::time(&t))
    {
        let row = key.expires_at.map(|t| super::job::time(&t));
        return Some(differs(
            "expires_at",
            row.as_deref().unwrap_or("never"),
            expires,
        ));
    }
    let revoked = events.iter().any(|e| e.event == "key_revoked");
    if revoked != key.revoked_at.is_some() {
        return Some(format!(
            "the key row says {} but its events say {}",
            if key.revoked_at.is_some() {
                "revoked"
            } else {
                "live"
            },
            if revoked { "revoked" } else { "live" }
        ));
    }
    None
}

/// Why a key row cannot be trusted, if it cannot: it disagrees with its
/// events, or it has no `key_created` event although it was made after
/// the ledger's first one (`first_key_event`) — a row put in the database
/// behind the service's back. A key made before keys had ledger events
/// has none and is let through.
pub fn distrust(
    key: &KeyRecord,
    events: &[Event],
    first_key_event: Option<DateTime<Utc>>,
) -> Option<String> {
    if has_created(events) {
        return key_mismatch(key, events);
    }
    first_key_event
        .filter(|first| key.created_at >= *first)
        .map(|_| "the key has no key_created event".to_string())
}

/// Whether the events hold the key's `key_created`; without it
/// [`distrust`] needs the time of the ledger's first one.
pub fn has_created(events: &[Event]) -> bool {
    events.iter().any(|e| e.event == "key_created")
}

fn differs(field: &str, row: &str, event: Option<String>) -> String {
    format!(
        "the key row's {field} is {row} but its key_created event says {}",
        event.as_deref().unwrap_or("none")
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::keys::Role;

    fn key() -> KeyRecord {
        KeyRecord {
            id: crate::ids::KeyId::from_stored("key_a"),
            name: "Budi Santoso".into(),
            role: Role::Submitter,
            modules: vec!["customers".into()],
            created_at: chrono::Utc::now(),
            expires_at: None,
            revoked_at: None,
            person_id: "per_a".into(),
            email: None,
            issued_by: Some(crate::ids::KeyId::from_stored("key_admin")),
            issuer_person: None,
        }
    }

    fn event(name: &str, detail: Json) -> Event {
        Event {
            seq: 1,
            job_id: "key_a".into(),
            n: 1,
            at: chrono::Utc::now(),
            event: name.into(),
            from_state: None,
            to_state: "active".into(),
            actor: None,
            comment: None,
            detail: Some(detail.to_string()),
        }
    }

    #[test]
    fn a_raised_role_a_wider_scope_or_an_unrevoked_key_is_found() {
        let created = event(
            "key_created",
            serde_json::json!({"role": "submitter", "modules": ["customers"],
                               "person_id": "per_a", "issued_by": "key_admin"}),
        );
        assert_eq!(key_mismatch(&key(), std::slice::from_ref(&created)), None);
        let mut raised = key();
        raised.role = Role::Admin;
        assert!(key_mismatch(&raised, std::slice::from_ref(&created)).is_some());
        let mut wider = key();
        wider.modules = vec!["*".into()];
        assert!(key_mismatch(&wider, std::slice::from_ref(&created)).is_some());
        let revoked = [created, event("key_revoked", Json::Null)];
        assert!(key_mismatch(&key(), &revoked).is_some(), "un-revoked");
    }
}
