//! The `X-API-Key` extractor: a handler that takes a [`Caller`] only runs
//! for a live key. The key itself is never logged; the key id is.

use std::sync::Arc;

use axum::extract::FromRequestParts;
use axum::http::request::Parts;

use super::limits::{Answer, Slot};
use super::problem::Problem;
use crate::ids::KeyId;
use crate::keys::KeyRecord;
use crate::service::App;
use crate::service::limits::Class;

pub const HEADER: &str = "x-api-key";

/// The key that made the request.
#[derive(Debug, Clone)]
pub struct Caller(pub KeyRecord);

impl FromRequestParts<Arc<App>> for Caller {
    type Rejection = Problem;

    async fn from_request_parts(parts: &mut Parts, app: &Arc<App>) -> Result<Caller, Problem> {
        app.traffic.request();
        let presented = parts
            .headers
            .get(HEADER)
            .and_then(|v| v.to_str().ok())
            .map(str::trim)
            .ok_or_else(|| Problem::unauthorized("the X-API-Key header is missing"))?;
        let record = crate::service::keys::verify(app, presented).await?;
        tracing::Span::current().record("key_id", record.id.as_str());
        let class = if parts.method == axum::http::Method::POST
            && (parts.uri.path().starts_with("/api/import/") || parts.uri.path() == "/api/import")
        {
            Class::Uploads
        } else {
            Class::Requests
        };
        if let Some(decision) = app.limiter.count(&record.id, class) {
            if let Some(slot) = parts.extensions.get::<Slot>() {
                *slot.0.lock().unwrap_or_else(|e| e.into_inner()) = Some(decision);
            }
            if !decision.allowed {
                let refused = decision.problem();
                // An upload refused here leaves its body unread: the
                // connection cannot carry another request.
                return Err(match class {
                    Class::Uploads => {
                        refused.header(axum::http::header::CONNECTION, "close".to_string())
                    }
                    Class::Requests => refused,
                });
            }
        }
        Ok(Caller(record))
    }
}

impl Caller {
    pub fn id(&self) -> &KeyId {
        &self.0.id
    }
}
