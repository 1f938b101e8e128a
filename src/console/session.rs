//! Signing in with an API key, the server-side session, and CSRF.
//!
//! - Sign-in takes a key in a form (never a URL) and makes a session: a
//!   random id in an `HttpOnly`, `SameSite=Strict` cookie (`Secure` when the
//!   request came over TLS), stored only as its SHA-256 with the key id, a
//!   CSRF token and an expiry. The key itself is not kept anywhere.
//! - Every request re-reads the session and its key: a revoked or expired
//!   key ends its sessions at once. Sessions slide by an idle time and end
//!   after an absolute one whatever happens ([`crate::service::sessions`]).
//! - Every state-changing request must carry the session's CSRF token (a
//!   hidden `_csrf` field, or the `X-CSRF-Token` header from the script) and
//!   must not come from another site (`Origin`, `Sec-Fetch-Site`). Forms
//!   shown before sign-in (sign-in itself, the developer center) use a
//!   double-submit token: a random cookie the form repeats.

use std::sync::Arc;

use axum::Router;
use axum::extract::{Form, FromRequestParts, Query, State};
use axum::http::request::Parts;
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Redirect, Response};
use axum::routing::{get, post};
use axum_extra::extract::cookie::{Cookie, CookieJar, SameSite};
use maud::html;
use serde::Deserialize;
use subtle::ConstantTimeEq;

use super::layout::{self, Ctx, Nav};
use super::request::{check_origin, is_https, safe_next};
use super::{Fail, PageResult, Shown};
use crate::keys::{self, KeyRecord};
use crate::service::limits::Class;
use crate::service::{self, App, sessions};
use crate::t;

/// The session cookie.
pub const SESSION_COOKIE: &str = "ig_session";
/// The double-submit cookie of forms shown before sign-in.
pub const FORM_COOKIE: &str = "ig_form";
/// The header the script sends the CSRF token in.
pub const CSRF_HEADER: &str = "x-csrf-token";

pub fn routes() -> Router<Arc<App>> {
    Router::new()
        .route("/signin", get(signin_page).post(signin))
        .route("/signout", post(signout))
}

/// A signed-in person: the live key of their session and its CSRF token.
#[derive(Debug, Clone)]
pub struct Signed {
    pub key: KeyRecord,
    pub csrf: String,
    session: sessions::Session,
}

impl Signed {
    /// `403` unless `presented` is this session's CSRF token.
    pub fn check_csrf(&self, presented: &str) -> Result<(), Shown> {
        if bool::from(presented.as_bytes().ct_eq(self.csrf.as_bytes())) {
            Ok(())
        } else {
            Err(csrf_problem())
        }
    }

    /// `403` unless a state-changing request comes from the console's own
    /// page ([`check_origin`]) with this session's CSRF token.
    pub fn check_form(&self, headers: &HeaderMap, presented: &str) -> Result<(), Shown> {
        check_origin(headers)?;
        self.check_csrf(presented)
    }

    /// The layout context of a page this person sees.
    pub fn ctx(&self, app: &App, nav: Nav) -> Ctx {
        Ctx::signed_in(app, nav, &self.key, &self.csrf)
    }
}

fn csrf_problem() -> Shown {
    Shown::new(
        StatusCode::FORBIDDEN,
        "csrf",
        &t!("problem-csrf"),
        t!("problem-csrf-detail"),
    )
}

pub fn cookie(name: &'static str, value: String, secure: bool) -> Cookie<'static> {
    Cookie::build((name, value))
        .path("/")
        .http_only(true)
        .same_site(SameSite::Strict)
        .secure(secure)
        .build()
}

/// The session a request's cookie names, if it is current and its key live.
async fn load(app: &App, jar: &CookieJar) -> Result<Option<Signed>, Shown> {
    let Some(id) = jar.get(SESSION_COOKIE).map(|c| c.value().to_string()) else {
        return Ok(None);
    };
    let Some(session) = sessions::find(app, &id).await? else {
        return Ok(None);
    };
    tracing::Span::current().record("key_id", session.key.id.as_str());
    Ok(Some(Signed {
        key: session.key.clone(),
        csrf: session.csrf.clone(),
        session,
    }))
}

impl FromRequestParts<Arc<App>> for Signed {
    type Rejection = Response;

    async fn from_request_parts(parts: &mut Parts, app: &Arc<App>) -> Result<Signed, Response> {
        let jar = CookieJar::from_headers(&parts.headers);
        match load(app, &jar).await {
            Ok(Some(s)) => match over_rate(app, parts, &s.key) {
                Some(refused) => Err(refused),
                None => Ok(s),
            },
            Ok(None) if parts.uri.path().starts_with("/console/") => {
                Err(super::ScriptFail(Shown::new(
                    StatusCode::UNAUTHORIZED,
                    "unauthorized",
                    &t!("problem-unauthorized"),
                    t!("problem-session-ended"),
                ))
                .into_response())
            }
            Ok(None) => {
                let here = parts
                    .uri
                    .path_and_query()
                    .map(|p| p.as_str())
                    .unwrap_or("/jobs");
                let next: String =
                    serde_urlencoded::to_string([("next", here)]).unwrap_or_default();
                Err(Redirect::to(&format!("/signin?{next}")).into_response())
            }
            Err(p) => Err(Fail(p).into_response()),
        }
    }
}

/// Counts a signed-in request against its key's rate limits, the same
/// budget the API draws on (an upload from the console is an upload).
/// Over the limit, the answer: `429` with `Retry-After`, as JSON for the
/// page's script and as a page otherwise.
fn over_rate(app: &App, parts: &Parts, key: &KeyRecord) -> Option<Response> {
    let upload = parts.method == axum::http::Method::POST
        && parts.uri.path().starts_with("/console/import/");
    let class = if upload {
        Class::Uploads
    } else {
        Class::Requests
    };
    let decision = app.limiter.count(&key.id, class)?;
    if decision.allowed {
        return None;
    }
    let shown = Shown::new(
        StatusCode::TOO_MANY_REQUESTS,
        "rate_limited",
        &t!("problem-too_many"),
        t!(
            "signin-too-many-detail",
            limit = decision.limit,
            class = class.name(),
            seconds = decision.reset
        ),
    );
    let mut resp = if parts.uri.path().starts_with("/console/") {
        super::ScriptFail(shown).into_response()
    } else {
        Fail(shown).into_response()
    };
    let h = resp.headers_mut();
    if let Ok(v) = axum::http::HeaderValue::from_str(&decision.reset.max(1).to_string()) {
        h.insert(header::RETRY_AFTER, v);
    }
    if upload {
        // The upload's body is left unread.
        h.insert(
            header::CONNECTION,
            axum::http::HeaderValue::from_static("close"),
        );
    }
    Some(resp)
}

/// Anyone: a signed-in person or nobody yet.
pub struct Visitor(pub Option<Signed>);

impl Visitor {
    /// The layout context of a page this visitor sees.
    pub fn ctx(&self, app: &App, nav: Nav) -> Ctx {
        match &self.0 {
            Some(signed) => signed.ctx(app, nav),
            None => Ctx::new(app, nav),
        }
    }
}

impl FromRequestParts<Arc<App>> for Visitor {
    type Rejection = Response;

    async fn from_request_parts(parts: &mut Parts, app: &Arc<App>) -> Result<Visitor, Response> {
        let jar = CookieJar::from_headers(&parts.headers);
        load(app, &jar)
            .await
            .map(Visitor)
            .map_err(|p| Fail(p).into_response())
    }
}

/// The double-submit token of a form shown before sign-in: the cookie's if
/// there is one, else a new one (and its cookie in the returned jar).
pub fn form_token(jar: CookieJar, headers: &HeaderMap) -> (CookieJar, String) {
    if let Some(c) = jar.get(FORM_COOKIE)
        && c.value().len() >= 32
    {
        let token = c.value().to_string();
        return (jar, token);
    }
    let token = keys::token(32);
    let jar = jar.add(cookie(FORM_COOKIE, token.clone(), is_https(headers)));
    (jar, token)
}

/// `403` unless a form shown before sign-in comes from the console's own
/// page and repeats its cookie's token.
pub fn check_anonymous_form(
    headers: &HeaderMap,
    jar: &CookieJar,
    presented: &str,
) -> Result<(), Shown> {
    check_origin(headers)?;
    match jar.get(FORM_COOKIE) {
        Some(c)
            if c.value().len() >= 32
                && bool::from(c.value().as_bytes().ct_eq(presented.as_bytes())) =>
        {
            Ok(())
        }
        _ => Err(csrf_problem()),
    }
}

#[derive(Deserialize)]
struct NextQuery {
    next: Option<String>,
}

async fn signin_page(
    State(app): State<Arc<App>>,
    visitor: Visitor,
    jar: CookieJar,
    headers: HeaderMap,
    Query(q): Query<NextQuery>,
) -> Response {
    let next = safe_next(q.next.as_deref());
    if visitor.0.is_some() {
        return Redirect::to(&next).into_response();
    }
    let (jar, token) = form_token(jar, &headers);
    (jar, signin_page_for(&app, &token, &next, None)).into_response()
}

/// The sign-in page: the identity provider's button when it is on, the
/// key form unless `console_key_sign_in` is off, and `error` above them.
pub fn signin_page_for(app: &App, token: &str, next: &str, error: Option<&str>) -> maud::Markup {
    let ctx = Ctx::new(app, Nav::SignIn);
    let provider = service::oidc::enabled(app).then(|| service::oidc::display_name(app));
    let start: String = serde_urlencoded::to_string([("next", next)]).unwrap_or_default();
    let keys_on = app.settings.console_key_sign_in;
    layout::page(
        &ctx,
        &t!("sign-in"),
        html! {
            div.narrow {
                h1 { (t!("sign-in")) }
                @if let Some(e) = error {
                    div.alert.alert-error role="alert" { (e) }
                }
                @if let Some(name) = &provider {
                    p { a #oidc-sign-in .btn.btn-primary href=(format!("/auth/oidc/start?{start}")) {
                        (t!("signin-with", provider = name.as_str()))
                    } }
                }
                @if keys_on {
                    @if provider.is_some() { h2 { (t!("signin-or-key")) } }
                    (key_form(token, next))
                } @else {
                    p { (t!("signin-key-off")) }
                }
            }
        },
    )
}

fn key_form(token: &str, next: &str) -> maud::Markup {
    html! {
                p.lead { (t!("signin-lead")) }
                form.card method="post" action="/signin" {
                    input type="hidden" name="_csrf" value=(token);
                    input type="hidden" name="next" value=(next);
                    label for="key" { (t!("signin-key-label")) }
                    input #key type="password" name="key" required autocomplete="off"
                        spellcheck="false" placeholder="igk_…" aria-describedby="key-help";
                    p #key-help .help { (t!("signin-key-help")) }
                    button.btn.btn-primary type="submit" { (t!("sign-in")) }
                }
                p { (t!("signin-no-key")) " " a href="/developers#request" { (t!("signin-request-key")) } "." }
    }
}

#[derive(Deserialize)]
struct SignInForm {
    #[serde(rename = "_csrf")]
    csrf: String,
    key: String,
    next: Option<String>,
}

async fn signin(
    State(app): State<Arc<App>>,
    jar: CookieJar,
    headers: HeaderMap,
    Form(form): Form<SignInForm>,
) -> PageResult {
    check_anonymous_form(&headers, &jar, &form.csrf)?;
    let next = safe_next(form.next.as_deref());
    if !app.settings.console_key_sign_in {
        let page = signin_page_for(&app, &form.csrf, &next, Some(&t!("signin-key-off")));
        return Ok((StatusCode::FORBIDDEN, page).into_response());
    }
    let id = match sessions::open(&app, form.key.trim()).await {
        Ok((id, _)) => id,
        Err(service::Error::Unauthorized) => {
            let refused = t!("signin-key-refused");
            let page = signin_page_for(&app, &form.csrf, &next, Some(&refused));
            return Ok((StatusCode::UNAUTHORIZED, page).into_response());
        }
        Err(e) => return Err(e.into()),
    };
    let jar = jar.remove(Cookie::build(FORM_COOKIE).path("/")).add(cookie(
        SESSION_COOKIE,
        id,
        is_https(&headers),
    ));
    Ok((jar, Redirect::to(&next)).into_response())
}

#[derive(Deserialize)]
pub struct CsrfOnly {
    #[serde(rename = "_csrf")]
    pub csrf: String,
}

/// A decision's form: the token and an optional comment.
#[derive(Deserialize)]
pub struct DecideForm {
    #[serde(rename = "_csrf")]
    pub csrf: String,
    #[serde(default)]
    pub comment: Option<String>,
}

async fn signout(
    State(app): State<Arc<App>>,
    signed: Signed,
    jar: CookieJar,
    headers: HeaderMap,
    Form(form): Form<CsrfOnly>,
) -> PageResult {
    signed.check_form(&headers, &form.csrf)?;
    sessions::close(&app, &signed.session).await?;
    let jar = jar.remove(Cookie::build(SESSION_COOKIE).path("/"));
    Ok((jar, Redirect::to("/signin")).into_response())
}

#[cfg(test)]
mod tests {
    use crate::console::i18n::{Arg, Lang, text_in};

    #[test]
    fn the_rate_limit_is_said_in_both_languages() {
        let args = |class: &'static str| {
            [
                ("limit", Arg::from(1200_u64)),
                ("class", Arg::from(class)),
                ("seconds", Arg::from(42_u64)),
            ]
        };
        assert_eq!(
            text_in(Lang::En, "signin-too-many-detail", &args("uploads")),
            "this key may make 1200 uploads a minute; try again in 42 s"
        );
        assert_eq!(
            text_in(Lang::Id, "signin-too-many-detail", &args("requests")),
            "kunci ini hanya boleh mengirim 1.200 permintaan per menit; coba lagi dalam 42 detik"
        );
    }
}
