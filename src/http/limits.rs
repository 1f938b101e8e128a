//! Rate limits per key (API.md section 10): uploads and other requests
//! each get a number of requests per one-minute window. Every answer to a
//! known key carries the IETF `RateLimit-Policy` and `RateLimit` fields
//! (draft-ietf-httpapi-ratelimit-headers); over the limit it is `429` with
//! `Retry-After`.
//!
//! Counted in this process's memory: a fixed window per key is a few lines,
//! needs no database write per request, and tells the client exactly how
//! many requests remain (which the GCRA crates do not report). With several
//! replicas behind a load balancer each replica counts its own share.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{SystemTime, UNIX_EPOCH};

use axum::extract::Request;
use axum::http::{HeaderValue, StatusCode, header};
use axum::middleware::Next;
use axum::response::Response;

use super::problem::{Code, Problem};

const WINDOW_SECS: u64 = 60;

/// Which budget a request draws on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Class {
    Uploads,
    Requests,
}

impl Class {
    fn name(self) -> &'static str {
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

impl Decision {
    fn policy(&self) -> String {
        format!("\"{}\";q={};w={WINDOW_SECS}", self.class.name(), self.limit)
    }

    fn current(&self) -> String {
        format!(
            "\"{}\";r={};t={}",
            self.class.name(),
            self.remaining,
            self.reset
        )
    }

    /// The `429` for a request over the limit.
    pub fn problem(&self) -> Problem {
        Problem::new(
            StatusCode::TOO_MANY_REQUESTS,
            Code::RateLimited,
            "Too many requests",
            format!(
                "this key may make {} {} a minute; try again in {} s",
                self.limit,
                self.class.name(),
                self.reset
            ),
        )
        .header(header::RETRY_AFTER, self.reset.max(1).to_string())
        .header(
            header::HeaderName::from_static("ratelimit-policy"),
            self.policy(),
        )
        .header(header::HeaderName::from_static("ratelimit"), self.current())
    }
}

/// The counters of one process.
pub struct Limiter {
    uploads_per_minute: u64,
    requests_per_minute: u64,
    windows: Mutex<HashMap<(String, Class), (u64, u64)>>,
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
    pub fn count(&self, key_id: &str, class: Class) -> Option<Decision> {
        let limit = match class {
            Class::Uploads => self.uploads_per_minute,
            Class::Requests => self.requests_per_minute,
        };
        if limit == 0 {
            return None;
        }
        let now = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_secs())
            .unwrap_or(0);
        let window = now / WINDOW_SECS;
        let mut windows = self.windows.lock().unwrap_or_else(|e| e.into_inner());
        if windows.len() > 10_000 {
            // Forget keys idle since an earlier window.
            windows.retain(|_, (w, _)| *w == window);
        }
        let entry = windows
            .entry((key_id.to_string(), class))
            .or_insert((window, 0));
        if entry.0 != window {
            *entry = (window, 0);
        }
        let allowed = entry.1 < limit;
        if allowed {
            entry.1 += 1;
        }
        Some(Decision {
            class,
            limit,
            remaining: limit - entry.1,
            reset: (window + 1) * WINDOW_SECS - now,
            allowed,
        })
    }
}

/// Where the key check leaves its decision for [`headers`] to answer with.
#[derive(Clone, Default)]
pub struct Slot(pub Arc<Mutex<Option<Decision>>>);

/// Adds the rate-limit fields to every answer to a counted request.
pub async fn headers(mut req: Request, next: Next) -> Response {
    let slot = Slot::default();
    req.extensions_mut().insert(slot.clone());
    let mut resp = next.run(req).await;
    let decision = *slot.0.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(d) = decision {
        let h = resp.headers_mut();
        for (name, value) in [("ratelimit-policy", d.policy()), ("ratelimit", d.current())] {
            if let Ok(v) = HeaderValue::from_str(&value) {
                h.insert(header::HeaderName::from_static(name), v);
            }
        }
    }
    resp
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_key_gets_its_limit_then_a_refusal() {
        let limiter = Limiter::new(2, 0);
        let a = limiter.count("key_a", Class::Uploads).unwrap();
        assert!(a.allowed && a.remaining == 1);
        assert!(limiter.count("key_a", Class::Uploads).unwrap().allowed);
        let refused = limiter.count("key_a", Class::Uploads).unwrap();
        assert!(!refused.allowed);
        assert!(refused.reset <= 60);
        assert!(
            limiter.count("key_b", Class::Uploads).unwrap().allowed,
            "per key"
        );
        assert!(
            limiter.count("key_a", Class::Requests).is_none(),
            "0 is no limit"
        );
    }
}
