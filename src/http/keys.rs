//! Key management for admins: create (the key shown once), list, revoke.

use std::sync::Arc;

use axum::Json;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use chrono::{DateTime, Utc};
use serde::Deserialize;
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::auth::Caller;
use super::problem::{ApiResult, Problem};
use super::views::{KeyList, KeyView, NewKeyView};
use crate::keys::Role;
use crate::service::{self, App, keys};

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
    /// The holder's email (at most 254 characters).
    #[serde(default)]
    #[schema(nullable = false, max_length = 254, example = "budi@contoh.co.id")]
    email: Option<String>,
    /// Adds the key to this existing person (`per_…`, from another of
    /// their keys); otherwise the key makes a new person.
    #[serde(default)]
    #[schema(nullable = false, example = "per_Xk29aQ7c")]
    person_id: Option<String>,
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

/// Creates a key (admins); the secret is in this answer and nowhere else.
#[utoipa::path(post, path = "/api/keys", operation_id = "create_key", tag = "keys",
    request_body(content = NewKey, description = "The key's holder, role and scope"),
    responses(
        (status = 201, description = "The key, with its secret shown this once", body = NewKeyView),
        (status = 400, description = "`bad_request`: the body is not such an object"),
        (status = 403, description = "`forbidden`: not an admin key"),
        (status = 422, description = "`invalid_parameter`: a name, email, person, role, module or expiry that cannot be"),
    ))]
async fn create(
    State(app): State<Arc<App>>,
    caller: Caller,
    body: axum::body::Bytes,
) -> ApiResult<Response> {
    // Only an admin learns what a well-formed request looks like.
    service::admin_only(&caller.0)?;
    let req: NewKey = serde_json::from_slice(&body).map_err(|e| {
        Problem::bad_request(format!(
            "the body must be {{\"name\", \"email\"?, \"person_id\"?, \"role\", \"modules\"?, \"expires_at\"?}}: {e}"
        ))
    })?;
    let modules = req.modules.unwrap_or_else(|| vec!["*".to_string()]);
    let new = keys::NewKey::parse(&app, &req.name, &req.role, modules, req.expires_at)?
        .held_by(req.email.as_deref(), req.person_id.as_deref())?;
    let (record, secret) = keys::create(&app, &caller.0, &new).await?;
    let body = NewKeyView {
        key_view: KeyView::new(&record),
        key: secret,
    };
    Ok((StatusCode::CREATED, super::NO_STORE, Json(body)).into_response())
}

/// Every key (admins), people masked.
#[utoipa::path(get, path = "/api/keys", operation_id = "list_keys", tag = "keys",
    responses(
        (status = 200, description = "The keys", body = KeyList),
        (status = 403, description = "`forbidden`: not an admin key"),
    ))]
async fn list(State(app): State<Arc<App>>, caller: Caller) -> ApiResult<Json<KeyList>> {
    let keys = keys::list(&app, &caller.0)
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
    // Only an admin learns which ids are well formed.
    service::admin_only(&caller.0)?;
    let id = keys::parse_id(&id)?;
    Ok(Json(KeyView::new(
        &keys::revoke(&app, &caller.0, &id).await?,
    )))
}
