//! Rate limits as HTTP says them: every answer to a known key carries the
//! IETF `RateLimit-Policy` and `RateLimit` fields
//! (draft-ietf-httpapi-ratelimit-headers); over the limit it is `429` with
//! `Retry-After`. The counting is the service's ([`crate::service::limits`]).

use std::sync::{Arc, Mutex};

use axum::extract::Request;
use axum::http::{HeaderValue, StatusCode, header};
use axum::middleware::Next;
use axum::response::Response;

use super::problem::{Code, Problem};

use crate::service::limits::{Decision, WINDOW_SECS};

/// The fields and the `429` of a counted request.
pub trait Answer {
    fn policy(&self) -> String;
    fn current(&self) -> String;
    fn problem(&self) -> Problem;
}

impl Answer for Decision {
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

    fn problem(&self) -> Problem {
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
