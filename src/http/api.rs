//! Every `/api` route of the service, each registered with its part of
//! the OpenAPI document (utoipa-axum's `routes!`), and the document itself
//! at `GET /api/openapi.json`: a route cannot exist without being in it.

use std::sync::{Arc, OnceLock};

use axum::Json;
use axum::extract::State;
use axum::response::{IntoResponse, Response};
use utoipa::openapi::OpenApi as Document;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::openapi;
use super::problem::{ApiResult, Problem};
use super::{
    events, export, imports, jobs, key_requests, keys, modules, revisions, rules, webhooks,
};
use crate::service::App;

/// Every `/api` route, each with its part of the document.
pub fn routes() -> OpenApiRouter<Arc<App>> {
    OpenApiRouter::with_openapi(openapi::base())
        .merge(modules::routes())
        .merge(export::routes())
        .merge(imports::routes())
        .merge(jobs::routes())
        .merge(revisions::routes())
        .merge(rules::routes())
        .merge(keys::routes())
        .merge(key_requests::routes())
        .merge(webhooks::routes())
        .merge(events::routes())
        .routes(routes!(openapi_json))
}

/// The document of every route, completed once.
pub fn document() -> &'static Document {
    static DOC: OnceLock<Document> = OnceLock::new();
    DOC.get_or_init(|| openapi::complete(routes().into_openapi()))
}

/// This document (no key needed).
#[utoipa::path(get, path = "/api/openapi.json", operation_id = "get_openapi", tag = "meta", security(()),
    responses((status = 200, description = "The OpenAPI 3.1 document", content_type = "application/json", body = Object)))]
async fn openapi_json(State(app): State<Arc<App>>) -> ApiResult<Response> {
    let doc = openapi::for_catalog(document(), &app.catalog);
    let doc = openapi::to_json(&doc).map_err(Problem::internal)?;
    Ok(Json(doc).into_response())
}
