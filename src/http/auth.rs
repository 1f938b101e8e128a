//! The `X-API-Key` extractor: a handler that takes a [`Caller`] only runs
//! for a live key. The key itself is never logged; the key id is.

use std::sync::Arc;

use axum::extract::FromRequestParts;
use axum::http::request::Parts;

use super::limits::{Class, Slot};
use super::problem::Problem;
use crate::app::App;
use crate::catalog::Module;
use crate::keys::{self, KeyRecord, Role};
use crate::store;

pub const HEADER: &str = "x-api-key";

/// The key that made the request.
#[derive(Debug, Clone)]
pub struct Caller(pub KeyRecord);

impl FromRequestParts<Arc<App>> for Caller {
    type Rejection = Problem;

    async fn from_request_parts(parts: &mut Parts, app: &Arc<App>) -> Result<Caller, Problem> {
        let presented = parts
            .headers
            .get(HEADER)
            .and_then(|v| v.to_str().ok())
            .map(str::trim)
            .ok_or_else(|| Problem::unauthorized("the X-API-Key header is missing"))?;
        let record = verify(app, presented).await?;
        tracing::Span::current().record("key_id", record.id.as_str());
        let class = if parts.method == axum::http::Method::POST
            && parts.uri.path().starts_with("/api/import/")
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
                return Err(decision.problem());
            }
        }
        Ok(Caller(record))
    }
}

/// The live key a presented secret belongs to, or `401` (unknown, revoked
/// or expired alike). Shared by the API and the console's sign-in.
pub async fn verify(app: &App, presented: &str) -> Result<KeyRecord, Problem> {
    let bad = || Problem::unauthorized("the key is unknown, revoked or expired");
    let lookup = keys::lookup_part(presented).ok_or_else(bad)?;
    let mut c = app.db.acquire().await?;
    let (record, hash) = store::keys::by_lookup(&mut c.conn(), lookup)
        .await?
        .ok_or_else(bad)?;
    if !keys::matches(presented, &hash) || !record.is_live(chrono::Utc::now()) {
        return Err(bad());
    }
    Ok(record)
}

impl Caller {
    pub fn id(&self) -> &str {
        &self.0.id
    }

    /// 403 unless the key's scope covers the module.
    pub fn check_module(&self, module: &Module) -> Result<(), Problem> {
        self.check_module_key(&module.key)
    }

    pub fn check_module_key(&self, module: &str) -> Result<(), Problem> {
        if self.0.covers(module) {
            Ok(())
        } else {
            Err(Problem::forbidden(format!(
                "this key's scope does not include the module {module}"
            )))
        }
    }

    /// 403 unless the key is an admin's.
    pub fn check_admin(&self) -> Result<(), Problem> {
        if self.0.role == Role::Admin {
            Ok(())
        } else {
            Err(Problem::forbidden("only an admin key may do this"))
        }
    }

    /// The modules this key may see, or `None` for all.
    pub fn scope(&self) -> Option<Vec<String>> {
        if self.0.modules.iter().any(|m| m == "*") {
            None
        } else {
            Some(self.0.modules.clone())
        }
    }
}
