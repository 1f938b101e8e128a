//! Webhooks as records (API.md section 13): an endpoint, a delivery of one
//! event to it, and an attempt at that delivery.
//!
//! They are domain values, not storage's: the store reads and writes them,
//! the service makes and checks them ([`crate::service::webhooks`]), and
//! both front doors show them. Keeping them here lets every layer name them
//! while data still flows one way: the store depends on this module, never
//! on the service.

use chrono::{DateTime, Utc};

use crate::ids::KeyId;

/// An endpoint. Its signing secret is not part of it: the service derives
/// the secret from the ledger's key and `salt`, so reading the database
/// does not give it away.
#[derive(Debug, Clone)]
pub struct Webhook {
    pub id: String,
    pub url: String,
    /// Event types, or `["*"]`.
    pub events: Vec<String>,
    /// Module keys, or `["*"]`.
    pub modules: Vec<String>,
    pub description: Option<String>,
    pub salt: String,
    pub enabled: bool,
    /// Why the service disabled it, when it did.
    pub disabled_reason: Option<String>,
    /// Since when every attempt has failed (`None` once one succeeds).
    pub failing_since: Option<DateTime<Utc>>,
    /// The key that made it.
    pub created_by: KeyId,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
}

impl Webhook {
    /// Whether an event of this type, about this module (`None` for key
    /// events), goes to this endpoint.
    pub fn wants(&self, event_type: &str, module: Option<&str>) -> bool {
        let all = |list: &[String]| list.iter().any(|e| e == "*");
        let event = all(&self.events) || self.events.iter().any(|e| e == event_type);
        let module =
            all(&self.modules) || module.is_some_and(|m| self.modules.iter().any(|x| x == m));
        event && module
    }
}

/// One event for one endpoint, as the worker and the delivery log see it.
#[derive(Debug, Clone)]
pub struct Delivery {
    pub id: String,
    pub webhook_id: String,
    /// The ledger link it reports; `None` for a test ping.
    pub seq: Option<i64>,
    /// What the event is about (a job's or a key's id), whose deliveries
    /// to one endpoint go in chain order.
    pub subject: String,
    pub event_type: String,
    /// `pending`, `delivered` or `failed`.
    pub state: String,
    pub attempts: i64,
    /// The body sent, once it was first made; a retry sends the same bytes.
    pub body: Option<String>,
    pub created_at: DateTime<Utc>,
}

/// One attempt at a delivery, as logged.
#[derive(Debug, Clone)]
pub struct Attempt {
    pub at: DateTime<Utc>,
    /// The receiver's HTTP status, if it answered.
    pub status: Option<i64>,
    pub latency_ms: i64,
    pub error: Option<String>,
    /// At most 1 KiB of the answer.
    pub answer: Option<String>,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn endpoint(events: &[&str], modules: &[&str]) -> Webhook {
        let list = |l: &[&str]| l.iter().map(|s| s.to_string()).collect();
        Webhook {
            id: "wh_1".into(),
            url: "https://example.com/hooks".into(),
            events: list(events),
            modules: list(modules),
            description: None,
            salt: "salt".into(),
            enabled: true,
            disabled_reason: None,
            failing_since: None,
            created_by: KeyId::from_stored("key_1"),
            created_at: Utc::now(),
            updated_at: Utc::now(),
        }
    }

    #[test]
    fn an_endpoint_wants_the_events_and_modules_it_lists() {
        let w = endpoint(&["job.committed"], &["orders"]);
        assert!(w.wants("job.committed", Some("orders")));
        assert!(!w.wants("job.committed", Some("products")));
        assert!(!w.wants("job.failed", Some("orders")));
        // Key events are about no module: only an endpoint for every
        // module hears them.
        assert!(!w.wants("job.committed", None));
        let all = endpoint(&["*"], &["*"]);
        assert!(all.wants("key.revoked", None));
        assert!(all.wants("job.failed", Some("orders")));
    }
}
