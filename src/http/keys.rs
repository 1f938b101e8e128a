//! Key management for admins: create (the key shown once), list, revoke.

use std::sync::Arc;

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::{delete, get};
use axum::{Json, Router};
use chrono::{DateTime, Utc};
use serde::Deserialize;
use serde_json::{Value as JsonValue, json};

use super::auth::Caller;
use super::problem::{ApiResult, Problem};
use crate::app::App;
use crate::keys::{self, KeyRecord, Role};
use crate::ledger::job::time;
use crate::store;

pub fn routes() -> Router<Arc<App>> {
    Router::new()
        .route("/api/keys", get(list).post(create))
        .route("/api/keys/{id}", delete(revoke))
}

/// A key as the API shows it: the person masked, never the secret or hash.
pub fn view(k: &KeyRecord) -> JsonValue {
    json!({
        "id": k.id,
        "person": k.person(),
        "role": k.role.as_str(),
        "modules": k.modules,
        "created_at": time(&k.created_at),
        "expires_at": k.expires_at.as_ref().map(time),
        "revoked_at": k.revoked_at.as_ref().map(time),
    })
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct NewKey {
    name: String,
    role: String,
    #[serde(default)]
    modules: Option<Vec<String>>,
    #[serde(default)]
    expires_at: Option<DateTime<Utc>>,
}

/// Checks what a new key asks for (shared with key requests).
pub fn check_new_key(app: &App, name: &str, role: &str, modules: &[String]) -> ApiResult<Role> {
    let name = name.trim();
    if name.is_empty() || name.chars().count() > 200 {
        return Err(Problem::invalid_parameter(
            "name",
            "name must have 1 to 200 characters",
        ));
    }
    let role = Role::parse(role).ok_or_else(|| {
        Problem::invalid_parameter(
            "role",
            format!("{role:?} is not submitter, approver or admin"),
        )
    })?;
    if modules.is_empty() {
        return Err(Problem::invalid_parameter(
            "modules",
            "modules must list module keys or \"*\"",
        ));
    }
    for m in modules {
        if m != "*" && app.catalog.get(m).is_none() {
            return Err(Problem::invalid_parameter(
                "modules",
                format!("{m:?} is not a module"),
            ));
        }
    }
    Ok(role)
}

async fn create(
    State(app): State<Arc<App>>,
    caller: Caller,
    body: axum::body::Bytes,
) -> ApiResult<Response> {
    caller.check_admin()?;
    let req: NewKey = serde_json::from_slice(&body).map_err(|e| {
        Problem::bad_request(format!(
            "the body must be {{\"name\", \"role\", \"modules\"?, \"expires_at\"?}}: {e}"
        ))
    })?;
    let modules = req.modules.unwrap_or_else(|| vec!["*".to_string()]);
    let role = check_new_key(&app, &req.name, &req.role, &modules)?;
    let (record, secret) = issue(&app, req.name.trim(), role, &modules, req.expires_at).await?;
    tracing::info!(key_id = %record.id, by = %caller.id(), role = role.as_str(), "key created");
    let mut body = view(&record);
    body["key"] = JsonValue::String(secret);
    Ok((StatusCode::CREATED, Json(body)).into_response())
}

/// Makes and stores a new key; gives its record and the secret to show once.
/// The name, role and modules must have passed [`check_new_key`].
pub async fn issue(
    app: &App,
    name: &str,
    role: Role,
    modules: &[String],
    expires_at: Option<DateTime<Utc>>,
) -> ApiResult<(KeyRecord, String)> {
    let key = keys::generate();
    let mut c = app.db.acquire().await?;
    let record = store::keys::insert(&mut c.conn(), &key, name, role, modules, expires_at).await?;
    Ok((record, key.secret))
}

/// Revokes a key (an admin's act, checked by the caller); gives it back.
pub async fn revoke_key(app: &App, caller: &Caller, id: &str) -> ApiResult<KeyRecord> {
    caller.check_admin()?;
    let mut c = app.db.acquire().await?;
    if !store::keys::revoke(&mut c.conn(), id).await? {
        return Err(Problem::not_found("key", id));
    }
    let record = store::keys::get(&mut c.conn(), id)
        .await?
        .ok_or_else(|| Problem::not_found("key", id))?;
    tracing::info!(key_id = %id, by = %caller.id(), "key revoked");
    Ok(record)
}

async fn list(State(app): State<Arc<App>>, caller: Caller) -> ApiResult<Json<JsonValue>> {
    caller.check_admin()?;
    let mut c = app.db.acquire().await?;
    let keys: Vec<JsonValue> = store::keys::list(&mut c.conn())
        .await?
        .iter()
        .map(view)
        .collect();
    Ok(Json(json!({"keys": keys})))
}

async fn revoke(
    State(app): State<Arc<App>>,
    caller: Caller,
    Path(id): Path<String>,
) -> ApiResult<Json<JsonValue>> {
    Ok(Json(view(&revoke_key(&app, &caller, &id).await?)))
}
