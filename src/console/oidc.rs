//! The console's doors to the company's identity provider (API.md section
//! 17): `GET /auth/oidc/start` sends the browser to the provider,
//! `GET /auth/oidc/callback` takes it back and signs the person in. Both
//! are `404` while no provider is set.
//!
//! The sign-in's `state` rides in a cookie of its own, `SameSite=Lax` (the
//! provider's return is a navigation from another site, which a `Strict`
//! cookie does not follow) and limited to `/auth/oidc`. The session cookie
//! stays `Strict`: the return answers with a page that moves on to the
//! console itself, so that the first console request is the console's own.

use std::sync::Arc;

use axum::Router;
use axum::extract::{Query, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Redirect, Response};
use axum::routing::get;
use axum_extra::extract::cookie::{Cookie, CookieJar, SameSite};
use maud::html;
use serde::Deserialize;

use super::PageResult;
use super::request::{is_https, safe_next};
use super::session::{SESSION_COOKIE, cookie, form_token, signin_page_for};
use crate::service::{self, App};
use crate::t;

/// The cookie holding a started sign-in's `state`.
const STATE_COOKIE: &str = "ig_oidc_state";

pub fn routes() -> Router<Arc<App>> {
    Router::new()
        .route("/auth/oidc/start", get(start))
        .route("/auth/oidc/callback", get(callback))
}

#[derive(Deserialize)]
struct StartQuery {
    next: Option<String>,
}

async fn start(
    State(app): State<Arc<App>>,
    jar: CookieJar,
    headers: HeaderMap,
    Query(q): Query<StartQuery>,
) -> PageResult {
    let next = safe_next(q.next.as_deref());
    match service::oidc::start(&app, &next).await? {
        Ok(started) => {
            let state = Cookie::build((STATE_COOKIE, started.state))
                .path("/auth/oidc")
                .http_only(true)
                .same_site(SameSite::Lax)
                .secure(is_https(&headers))
                .max_age(time::Duration::minutes(15))
                .build();
            Ok((jar.add(state), Redirect::to(&started.url)).into_response())
        }
        Err(refused) => Ok(refusal(
            &app,
            jar,
            &headers,
            &next,
            &refused.message,
            StatusCode::SERVICE_UNAVAILABLE,
        )),
    }
}

#[derive(Deserialize)]
struct CallbackQuery {
    code: Option<String>,
    state: Option<String>,
    error: Option<String>,
    error_description: Option<String>,
}

async fn callback(
    State(app): State<Arc<App>>,
    jar: CookieJar,
    headers: HeaderMap,
    Query(q): Query<CallbackQuery>,
) -> PageResult {
    if !service::oidc::enabled(&app) {
        return Err(service::Error::NotFound {
            what: "page",
            id: "/auth/oidc/callback".into(),
        }
        .into());
    }
    let held = jar
        .get(STATE_COOKIE)
        .map(|c| c.value().to_string())
        .unwrap_or_default();
    let jar = jar.remove(Cookie::build(STATE_COOKIE).path("/auth/oidc"));
    if let Some(error) = q.error {
        let said = q.error_description.unwrap_or(error);
        let why = format!(
            "the provider said: {}",
            said.chars().take(200).collect::<String>()
        );
        return Ok(refusal(
            &app,
            jar,
            &headers,
            "/jobs",
            &why,
            StatusCode::UNAUTHORIZED,
        ));
    }
    let (code, state) = (q.code.unwrap_or_default(), q.state.unwrap_or_default());
    match service::oidc::finish(&app, &code, &state, &held).await? {
        Ok(done) => {
            let jar = jar.add(cookie(SESSION_COOKIE, done.session, is_https(&headers)));
            Ok((jar, moving_on(&done.next)).into_response())
        }
        Err(refused) => Ok(refusal(
            &app,
            jar,
            &headers,
            "/jobs",
            &refused.message,
            StatusCode::UNAUTHORIZED,
        )),
    }
}

/// The page after a sign-in: it moves on to `next` at once, as the
/// console's own navigation (see the module's note on cookies).
fn moving_on(next: &str) -> maud::Markup {
    let next = safe_next(Some(next));
    html! {
        (maud::DOCTYPE)
        html {
            head {
                meta charset="utf-8";
                meta http-equiv="refresh" content=(format!("0;url={next}"));
                title { (t!("sign-in")) }
            }
            body { p { a #continue href=(next) { (t!("signin-oidc-continue")) } } }
        }
    }
}

/// The sign-in page saying why a sign-in with the provider did not happen.
fn refusal(
    app: &App,
    jar: CookieJar,
    headers: &HeaderMap,
    next: &str,
    why: &str,
    status: StatusCode,
) -> Response {
    let (jar, token) = form_token(jar, headers);
    let said = t!("signin-oidc-refused", why = why);
    (status, jar, signin_page_for(app, &token, next, Some(&said))).into_response()
}
