//! The web console (API.md section 6): the Human-Gate as a person sees it.
//!
//! Server-rendered HTML ([`maud`], checked at compile time) with one small
//! script, every asset embedded in the binary. The console is a client of
//! the same functions the API runs — uploads through
//! [`crate::http::imports::accept`], gate moves through
//! [`crate::http::jobs::decide`] (which asks [`crate::ledger::gate`]),
//! previews through [`crate::store::rows::page`] — so a page can never
//! allow what the API refuses.
//!
//! Where things are:
//! - [`session`]: sign-in with a key, the server-side session, CSRF;
//! - [`layout`]: the page shell and small shared pieces (badges, people, time);
//! - [`jobs`], [`upload`], [`keys`], [`developers`]: the pages;
//! - [`assets`]: the stylesheet, the script and the icon.
//!
//! Pages live at `/`, `/jobs`, `/upload`, `/keys`, `/developers`; the few
//! JSON endpoints the script calls live under `/console/`; assets under
//! `/assets/`. Every console answer carries a strict Content-Security-Policy.

pub mod assets;
pub mod developers;
pub mod jobs;
pub mod keys;
pub mod layout;
pub mod session;
pub mod upload;

use std::sync::Arc;

use axum::Router;
use axum::extract::Request;
use axum::http::{HeaderValue, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Redirect, Response};
use axum::routing::get;

use crate::app::App;
use crate::http::problem::{Code, Problem};

/// The Content-Security-Policy of every console answer: nothing but the
/// service's own scripts, styles and images, no framing, forms only to itself.
pub const CSP: &str = "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; \
     connect-src 'self'; base-uri 'none'; object-src 'none'; frame-ancestors 'none'; form-action 'self'";

/// Every console route.
pub fn routes() -> Router<Arc<App>> {
    Router::new()
        .route("/", get(home))
        .merge(session::routes())
        .merge(jobs::routes())
        .merge(upload::routes())
        .merge(keys::routes())
        .merge(developers::routes())
        .merge(assets::routes())
        .layer(axum::middleware::from_fn(security_headers))
}

/// `/`: the job list for a signed-in person, else the sign-in page.
async fn home(visitor: session::Visitor) -> Response {
    match visitor.0 {
        Some(_) => Redirect::to("/jobs").into_response(),
        None => Redirect::to("/signin").into_response(),
    }
}

/// Any path nobody serves: under `/api` a plain 404 (the problem
/// middleware makes it a problem), elsewhere a page a person can act on.
pub async fn not_found(uri: axum::http::Uri) -> Response {
    if uri.path().starts_with("/api") {
        return StatusCode::NOT_FOUND.into_response();
    }
    let p = Problem::new(
        StatusCode::NOT_FOUND,
        Code::NotFound,
        "Page not found",
        format!("there is no page at {}", uri.path()),
    );
    let mut resp = Fail(p).into_response();
    resp.headers_mut().insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(CSP),
    );
    resp
}

/// Adds the security headers to every console answer; pages (not assets)
/// are never cached, as they show data a person may no longer see.
async fn security_headers(req: Request, next: Next) -> Response {
    let is_asset = req.uri().path().starts_with("/assets/");
    let mut resp = next.run(req).await;
    let h = resp.headers_mut();
    h.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(CSP),
    );
    h.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    h.insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("no-referrer"),
    );
    h.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    if !is_asset && !h.contains_key(header::CACHE_CONTROL) {
        h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    }
    resp
}

/// A failed page: the problem rendered as an HTML page with its status.
#[derive(Debug)]
pub struct Fail(pub Problem);

impl From<Problem> for Fail {
    fn from(p: Problem) -> Fail {
        Fail(p)
    }
}

impl From<crate::store::StoreError> for Fail {
    fn from(e: crate::store::StoreError) -> Fail {
        Fail(Problem::from(e))
    }
}

impl IntoResponse for Fail {
    fn into_response(self) -> Response {
        let p = &self.0;
        let status = p.status();
        let body = layout::error_page(status, p);
        let mut resp = (status, body).into_response();
        if status == StatusCode::UNAUTHORIZED {
            resp.headers_mut().remove(header::WWW_AUTHENTICATE);
        }
        resp
    }
}

/// What a page handler answers.
pub type PageResult = Result<Response, Fail>;
