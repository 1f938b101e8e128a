//! The web console (API.md section 6): the Human-Gate as a person sees it.
//!
//! Server-rendered HTML ([`maud`], checked at compile time) with one small
//! script, every asset embedded in the binary. The console is a front door
//! of the same service the API is — uploads through
//! [`crate::service::uploads`], gate moves through
//! [`crate::service::gate`] (which asks [`crate::ledger::gate`]), previews
//! through [`crate::service::jobs`] — so a page can never allow what the
//! API refuses. It renders the service's errors its own way ([`Shown`]).
//!
//! Where things are:
//! - [`session`]: sign-in with a key, the server-side session, CSRF;
//! - [`layout`]: the page shell and small shared pieces (badges, people, time);
//! - [`jobs`], [`fix`], [`upload`], [`data`], [`keys`], [`rules`],
//!   [`developers`]: the pages;
//! - [`assets`]: the stylesheet, the script and the icon.
//!
//! Pages live at `/`, `/jobs`, `/upload`, `/modules` (with
//! `/modules/{module}` and its export), `/keys`, `/rules` (with
//! `/modules/{module}/rules` and `/rule-proposals/{id}`), `/developers`; the few
//! JSON endpoints the script calls live under `/console/`; assets under
//! `/assets/`. Every console answer carries a strict Content-Security-Policy.

pub mod assets;
pub mod data;
pub mod developers;
pub mod fix;
pub mod i18n;
pub mod jobs;
pub mod keys;
pub mod layout;
pub mod notes;
mod oidc;
pub mod request;
pub mod rules;
pub mod session;
pub mod upload;
pub mod webhooks;

use std::sync::Arc;

use axum::Router;
use axum::extract::Request;
use axum::http::{HeaderValue, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Redirect, Response};
use axum::routing::{get, post};

use crate::service::{self, App};
use crate::t;

/// The Content-Security-Policy of every console answer: nothing but the
/// service's own scripts, styles and images, no framing, forms only to itself.
pub const CSP: &str = "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; \
     connect-src 'self'; base-uri 'none'; object-src 'none'; frame-ancestors 'none'; form-action 'self'";

/// Every console route.
pub fn routes() -> Router<Arc<App>> {
    Router::new()
        .route("/", get(home))
        .merge(session::routes())
        .merge(oidc::routes())
        .merge(jobs::routes())
        .merge(fix::routes())
        .merge(upload::routes())
        .merge(keys::routes())
        .merge(webhooks::routes())
        .merge(data::routes())
        .merge(rules::routes())
        .merge(developers::routes())
        .merge(assets::routes())
        .route("/language", post(i18n::choose))
        .layer(axum::middleware::from_fn(i18n::middleware))
        .layer(axum::middleware::from_fn(security_headers))
}

/// `/`: the job list for a signed-in person, else the sign-in page.
async fn home(visitor: session::Visitor) -> Response {
    match visitor.0 {
        Some(_) => Redirect::to("/jobs").into_response(),
        None => Redirect::to("/signin").into_response(),
    }
}

/// Any path nobody serves: under `/api` a plain 404 (the API's problem
/// layer makes it a problem), elsewhere a page a person can act on.
pub async fn not_found(uri: axum::http::Uri, headers: axum::http::HeaderMap) -> Response {
    if uri.path().starts_with("/api") {
        return StatusCode::NOT_FOUND.into_response();
    }
    // Outside the console's router: its language is decided here.
    let mut resp = i18n::answer_in(&headers, "/jobs", || {
        let shown = Shown::new(
            StatusCode::NOT_FOUND,
            "not_found",
            &t!("problem-page-not-found"),
            t!("problem-page-not-found-detail", path = uri.path()),
        );
        Fail(shown).into_response()
    });
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

/// What a person is told when something they asked for did not happen:
/// the console's own rendering of the service's error (and of its own
/// refusals: a form from another site, an expired form).
#[derive(Debug, Clone)]
pub struct Shown {
    pub status: StatusCode,
    pub code: &'static str,
    pub title: String,
    pub detail: String,
}

impl Shown {
    pub fn new(
        status: StatusCode,
        code: &'static str,
        title: &str,
        detail: impl Into<String>,
    ) -> Shown {
        Shown {
            status,
            code,
            title: title.to_string(),
            detail: detail.into(),
        }
    }
}

impl From<service::Error> for Shown {
    fn from(e: service::Error) -> Shown {
        use service::Error as E;
        let english = e.to_string();
        // The reader's words for what went wrong. Details built from the
        // error's own fields are said whole; free-form details that deeper
        // checks wrote are summarised, with their exact English kept after.
        let exact = |summary: String| {
            if i18n::current() == i18n::Lang::En {
                english.clone()
            } else {
                t!(
                    "problem-detail-with-exact",
                    summary = summary,
                    exact = english.clone()
                )
            }
        };
        let (status, title, detail) = match &e {
            E::UnknownModule { key, .. } => (
                StatusCode::NOT_FOUND,
                t!("problem-unknown_module"),
                t!("problem-unknown_module-detail", module = key),
            ),
            E::NotFound { what, id } => (
                StatusCode::NOT_FOUND,
                t!("problem-not_found"),
                t!("problem-not_found-detail", what = *what, id = id),
            ),
            E::Unauthorized => (
                StatusCode::UNAUTHORIZED,
                t!("problem-unauthorized"),
                t!("problem-unauthorized-detail"),
            ),
            E::Forbidden(_) => (
                StatusCode::FORBIDDEN,
                t!("problem-forbidden"),
                exact(t!("problem-forbidden-detail")),
            ),
            E::SelfApproval => (
                StatusCode::FORBIDDEN,
                t!("problem-self_approval"),
                t!("problem-self_approval-detail"),
            ),
            E::InvalidState { state, .. } => {
                let state = crate::ledger::JobState::parse(state)
                    .map(layout::state_label)
                    .unwrap_or_else(|| state.clone());
                (
                    StatusCode::CONFLICT,
                    t!("problem-invalid_state"),
                    exact(t!("problem-invalid_state-detail", state = state)),
                )
            }
            E::StaleEtag { .. } => (
                StatusCode::PRECONDITION_FAILED,
                t!("problem-stale"),
                t!("problem-stale-detail"),
            ),
            E::Invalid { parameter, .. } => (
                StatusCode::UNPROCESSABLE_ENTITY,
                t!("problem-invalid"),
                exact(t!("problem-invalid-detail", parameter = parameter)),
            ),
            E::BadRequest(_) => (
                StatusCode::BAD_REQUEST,
                t!("problem-bad_request"),
                exact(t!("problem-bad_request-detail")),
            ),
            E::UnsupportedType(ty) => (
                StatusCode::UNSUPPORTED_MEDIA_TYPE,
                t!("problem-unsupported_type"),
                t!("problem-unsupported_type-detail", content_type = ty),
            ),
            E::EmptyBody => (
                StatusCode::BAD_REQUEST,
                t!("problem-empty"),
                t!("problem-empty-detail"),
            ),
            E::IdempotencyReused => (
                StatusCode::UNPROCESSABLE_ENTITY,
                t!("problem-idempotency"),
                t!("problem-idempotency-detail"),
            ),
            E::TooLarge { limit } => (
                StatusCode::PAYLOAD_TOO_LARGE,
                t!("problem-too_large"),
                t!(
                    "problem-too_large-detail",
                    limit = layout::bytes(*limit as i64)
                ),
            ),
            E::SlowBody { .. } => (
                StatusCode::REQUEST_TIMEOUT,
                t!("problem-slow"),
                exact(t!("problem-slow-detail")),
            ),
            E::AlreadyCollected { id } => (
                StatusCode::GONE,
                t!("problem-collected"),
                t!("problem-collected-detail", id = id),
            ),
            E::TooMany { retry_after, .. } => (
                StatusCode::TOO_MANY_REQUESTS,
                t!("problem-too_many"),
                exact(t!("problem-too_many-detail", seconds = *retry_after)),
            ),
            E::RollbackExpired { closed, .. } => (
                StatusCode::CONFLICT,
                t!("problem-rollback_expired"),
                t!("problem-rollback_expired-detail", closed = closed),
            ),
            E::Purged { at, .. } => (
                StatusCode::GONE,
                t!("problem-purged"),
                t!("problem-purged-detail", at = at),
            ),
            E::Revised { to, .. } => (
                StatusCode::GONE,
                t!("problem-revised"),
                t!("problem-revised-detail", to = to.as_str()),
            ),
            E::Closed { .. } => (
                StatusCode::GONE,
                t!("problem-closed"),
                exact(t!("problem-closed-detail")),
            ),
            E::Store(store) if store.is_unavailable() => {
                tracing::warn!(error = %store, "the database cannot take requests now");
                (
                    StatusCode::SERVICE_UNAVAILABLE,
                    t!("problem-unavailable"),
                    t!("problem-unavailable-detail"),
                )
            }
            E::Store(_) | E::Internal(_) => {
                // The detail goes to the log, not to the person.
                tracing::error!(error = %e, "internal error");
                (
                    StatusCode::INTERNAL_SERVER_ERROR,
                    t!("problem-internal"),
                    t!("problem-internal-detail"),
                )
            }
        };
        Shown::new(status, e.code(), &title, detail)
    }
}

/// A failed page: what went wrong as an HTML page with its status.
#[derive(Debug)]
pub struct Fail(pub Shown);

impl From<Shown> for Fail {
    fn from(s: Shown) -> Fail {
        Fail(s)
    }
}

impl From<service::Error> for Fail {
    fn from(e: service::Error) -> Fail {
        Fail(e.into())
    }
}

impl IntoResponse for Fail {
    fn into_response(self) -> Response {
        let status = self.0.status;
        let body = layout::error_page(&self.0);
        let mut resp = (status, body).into_response();
        if status == StatusCode::UNAUTHORIZED {
            resp.headers_mut().remove(header::WWW_AUTHENTICATE);
        }
        resp
    }
}

/// A failed call of the console's script: the same, as JSON
/// (`{"status", "code", "title", "detail"}`), which the script shows.
#[derive(Debug)]
pub struct ScriptFail(pub Shown);

impl From<Shown> for ScriptFail {
    fn from(s: Shown) -> ScriptFail {
        ScriptFail(s)
    }
}

impl From<service::Error> for ScriptFail {
    fn from(e: service::Error) -> ScriptFail {
        ScriptFail(e.into())
    }
}

impl IntoResponse for ScriptFail {
    fn into_response(self) -> Response {
        let s = self.0;
        let body = serde_json::json!({
            "status": s.status.as_u16(),
            "code": s.code,
            "title": s.title,
            "detail": s.detail,
        });
        (s.status, axum::Json(body)).into_response()
    }
}

/// What a page handler answers.
pub type PageResult = Result<Response, Fail>;

/// What a call of the console's script answers.
pub type ScriptResult<T> = Result<T, ScriptFail>;
