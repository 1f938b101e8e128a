//! The console's stylesheet, script and icon, compiled into the binary (no
//! CDN, nothing fetched at run time). Their URLs carry a hash of the content,
//! so browsers may keep them for a year and still never run a stale script.

use std::sync::{Arc, LazyLock};

use axum::Router;
use axum::extract::Path;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use sha2::{Digest, Sha256};

use crate::service::App;

struct Asset {
    name: &'static str,
    content_type: &'static str,
    body: &'static [u8],
}

const ASSETS: &[Asset] = &[
    Asset {
        name: "console.css",
        content_type: "text/css; charset=utf-8",
        body: include_bytes!("assets/console.css"),
    },
    Asset {
        name: "console.js",
        content_type: "text/javascript; charset=utf-8",
        body: include_bytes!("assets/console.js"),
    },
    Asset {
        name: "icon.svg",
        content_type: "image/svg+xml",
        body: include_bytes!("assets/icon.svg"),
    },
];

/// The content hash of each asset, computed once.
static VERSIONS: LazyLock<Vec<String>> = LazyLock::new(|| {
    ASSETS
        .iter()
        .map(|a| hex::encode(&Sha256::digest(a.body)[..6]))
        .collect()
});

/// The URL of an asset, with its content hash.
pub fn url(name: &str) -> String {
    match ASSETS.iter().position(|a| a.name == name) {
        Some(i) => format!("/assets/{name}?v={}", VERSIONS[i]),
        None => format!("/assets/{name}"),
    }
}

pub fn routes() -> Router<Arc<App>> {
    Router::new().route("/assets/{name}", get(serve))
}

async fn serve(Path(name): Path<String>) -> Response {
    let Some(asset) = ASSETS.iter().find(|a| a.name == name) else {
        return (StatusCode::NOT_FOUND, "no such asset").into_response();
    };
    let mut resp = asset.body.into_response();
    let h = resp.headers_mut();
    h.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static(asset.content_type),
    );
    h.insert(
        header::CACHE_CONTROL,
        HeaderValue::from_static("public, max-age=31536000, immutable"),
    );
    resp
}
