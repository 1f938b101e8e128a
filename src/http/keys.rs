//! Key management for admins: create (the key shown once), list, revoke.

use std::sync::Arc;

use axum::Json;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use chrono::{DateTime, Datelike, Utc};
use serde::Deserialize;
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::auth::Caller;
use super::problem::{ApiResult, Problem};
use super::views::{KeyList, KeyView, NewKeyView};
use crate::app::App;
use crate::keys::{self, KeyRecord, Role};
use crate::store;

pub fn routes() -> OpenApiRouter<Arc<App>> {
    OpenApiRouter::new()
        .routes(routes!(list, create))
        .routes(routes!(revoke))
}

/// What an admin asks for.
#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct NewKey {
    /// The person or system the key is for (1 to 200 characters).
    #[schema(min_length = 1, max_length = 200, example = "Budi Santoso")]
    name: String,
    #[schema(value_type = Role)]
    role: String,
    /// Module keys, or `["*"]` (the default) for all.
    #[serde(default)]
    #[schema(nullable = false, min_items = 1, example = json!(["*"]))]
    modules: Option<Vec<String>>,
    /// When the key stops working (years 1 to 9999); never if absent.
    #[serde(default)]
    #[schema(nullable = false)]
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
    if name.contains('\0') {
        return Err(Problem::invalid_parameter(
            "name",
            "name may not hold NUL characters",
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

/// Creates a key (admins); the secret is in this answer and nowhere else.
#[utoipa::path(post, path = "/api/keys", operation_id = "create_key", tag = "keys",
    request_body(content = NewKey, description = "The key's holder, role and scope"),
    responses(
        (status = 201, description = "The key, with its secret shown this once", body = NewKeyView),
        (status = 400, description = "`bad_request`: the body is not such an object"),
        (status = 403, description = "`forbidden`: not an admin key"),
        (status = 422, description = "`invalid_parameter`: a name, role, module or expiry that cannot be"),
    ))]
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
    if let Some(at) = req.expires_at
        && !(1..=9999).contains(&at.year())
    {
        return Err(Problem::invalid_parameter(
            "expires_at",
            "expires_at must be a time in the years 1 to 9999",
        ));
    }
    let (record, secret) = issue(&app, req.name.trim(), role, &modules, req.expires_at).await?;
    tracing::info!(key_id = %record.id, by = %caller.id(), role = role.as_str(), "key created");
    let body = NewKeyView {
        key_view: KeyView::new(&record),
        key: secret,
    };
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

/// Every key (admins), people masked.
#[utoipa::path(get, path = "/api/keys", operation_id = "list_keys", tag = "keys",
    responses(
        (status = 200, description = "The keys", body = KeyList),
        (status = 403, description = "`forbidden`: not an admin key"),
    ))]
async fn list(State(app): State<Arc<App>>, caller: Caller) -> ApiResult<Json<KeyList>> {
    caller.check_admin()?;
    let mut c = app.db.acquire().await?;
    let keys = store::keys::list(&mut c.conn())
        .await?
        .iter()
        .map(KeyView::new)
        .collect();
    Ok(Json(KeyList { keys }))
}

/// Revokes a key (admins); it stops working at once.
#[utoipa::path(delete, path = "/api/keys/{id}", operation_id = "revoke_key", tag = "keys",
    params(("id" = String, Path, description = "The key's id (`key_…`)")),
    responses(
        (status = 200, description = "The revoked key", body = KeyView),
        (status = 403, description = "`forbidden`: not an admin key"),
        (status = 404, description = "`not_found`: no such key"),
    ))]
async fn revoke(
    State(app): State<Arc<App>>,
    caller: Caller,
    Path(id): Path<String>,
) -> ApiResult<Json<KeyView>> {
    Ok(Json(KeyView::new(&revoke_key(&app, &caller, &id).await?)))
}
