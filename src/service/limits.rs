//! Rate limits per key (API.md section 10): uploads and other requests
//! each get a number of requests per one-minute window, counted here for
//! every front door (the API and the console draw on the same budget).
//!
//! Counted in this process's memory: a fixed window per key is a few lines,
//! needs no database write per request, and tells the client exactly how
//! many requests remain (which the GCRA crates do not report). With several
//! replicas behind a load balancer each replica counts its own share.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use crate::ids::KeyId;

pub const WINDOW_SECS: u64 = 60;

/// Which budget a request draws on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Class {
    Uploads,
    Requests,
}

impl Class {
    pub fn name(self) -> &'static str {
        match self {
            Class::Uploads => "uploads",
            Class::Requests => "requests",
        }
    }
}

/// The outcome of counting one request.
#[derive(Debug, Clone, Copy)]
pub struct Decision {
    pub class: Class,
    pub limit: u64,
    pub remaining: u64,
    /// Seconds until the window ends.
    pub reset: u64,
    pub allowed: bool,
}

/// The counters of one process.
pub struct Limiter {
    uploads_per_minute: u64,
    requests_per_minute: u64,
    /// Per key and class: when its window opened, and how many it counted.
    windows: Mutex<HashMap<(KeyId, Class), (Instant, u64)>>,
}

impl Limiter {
    /// A limit of 0 turns that limit off.
    pub fn new(uploads_per_minute: u64, requests_per_minute: u64) -> Limiter {
        Limiter {
            uploads_per_minute,
            requests_per_minute,
            windows: Mutex::new(HashMap::new()),
        }
    }

    /// Counts one request of a key; `None` when the class has no limit.
    pub fn count(&self, key_id: &KeyId, class: Class) -> Option<Decision> {
        let limit = match class {
            Class::Uploads => self.uploads_per_minute,
            Class::Requests => self.requests_per_minute,
        };
        if limit == 0 {
            return None;
        }
        // A window opens at a key's first request, not at the clock's
        // minute: a key's budget never resets in the middle of a burst
        // just because a minute turned (which made a test of three quick
        // uploads flaky near :59).
        let now = Instant::now();
        let span = Duration::from_secs(WINDOW_SECS);
        let mut windows = self.windows.lock().unwrap_or_else(|e| e.into_inner());
        if windows.len() > 10_000 {
            // Forget keys whose window has closed.
            windows.retain(|_, (opened, _)| now.duration_since(*opened) < span);
        }
        let entry = windows.entry((key_id.clone(), class)).or_insert((now, 0));
        if now.duration_since(entry.0) >= span {
            *entry = (now, 0);
        }
        let allowed = entry.1 < limit;
        if allowed {
            entry.1 += 1;
        }
        let left = span.saturating_sub(now.duration_since(entry.0));
        Some(Decision {
            class,
            limit,
            remaining: limit - entry.1,
            // Whole seconds, rounded up: a client that waits this long finds
            // the window closed.
            reset: left.as_secs() + u64::from(left.subsec_nanos() > 0),
            allowed,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_key_gets_its_limit_then_a_refusal() {
        let limiter = Limiter::new(2, 0);
        let (key_a, key_b) = (KeyId::from_stored("key_a"), KeyId::from_stored("key_b"));
        let a = limiter.count(&key_a, Class::Uploads).unwrap();
        assert!(a.allowed && a.remaining == 1);
        assert!(limiter.count(&key_a, Class::Uploads).unwrap().allowed);
        let refused = limiter.count(&key_a, Class::Uploads).unwrap();
        assert!(!refused.allowed);
        assert!(refused.reset <= 60);
        assert!(
            limiter.count(&key_b, Class::Uploads).unwrap().allowed,
            "per key"
        );
        assert!(
            limiter.count(&key_a, Class::Requests).is_none(),
            "0 is no limit"
        );
    }
}
