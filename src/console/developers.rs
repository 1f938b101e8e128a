//! The developer center: how to call the API, asking for a key (no key
//! needed), and collecting it once an admin approved. The forms are open to
//! anyone, so they carry the double-submit token of
//! [`session::form_token`]; the work is the service's
//! ([`crate::service::key_requests`]).
//! The claim token travels in a form body, never in a URL.

use std::sync::Arc;

use axum::Router;
use std::net::SocketAddr;

use axum::extract::{ConnectInfo, Form, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum_extra::extract::cookie::CookieJar;
use maud::{Markup, html};
use serde::Deserialize;

use super::keys::module_list;
use super::layout::{self, Ctx, Nav};
use super::session::{Visitor, check_anonymous_form, form_token};
use super::{Fail, PageResult, Shown};
use crate::catalog::Module;
use crate::keys::RequestState;
use crate::service::App;
use crate::service::key_requests::{self, Ask};
use crate::t;

pub fn routes() -> Router<Arc<App>> {
    Router::new()
        .route("/developers", get(page))
        .route("/developers/request", post(request))
        .route("/developers/claim", post(collect))
}

/// What the page says after a form.
enum Notice {
    /// A request was recorded: its id and claim token, shown once.
    Requested {
        id: String,
        token: String,
    },
    /// The key, collected now (shown once).
    Collected {
        secret: String,
    },
    /// The request is not approved (yet).
    Waiting(RequestState),
    Refused(Shown),
}

async fn page(
    State(app): State<Arc<App>>,
    visitor: Visitor,
    jar: CookieJar,
    headers: HeaderMap,
) -> Response {
    let (jar, token) = form_token(jar, &headers);
    let ctx = visitor.ctx(&app, Nav::Developers);
    let example = example_module(&app, &visitor);
    let markup = render(&app, &ctx, &token, None, &headers, &example);
    (jar, markup).into_response()
}

/// The module the examples use: the first the signed-in key may use (any
/// key may use `customers` when its scope is every module).
fn example_module(app: &App, visitor: &Visitor) -> Arc<Module> {
    let scope = visitor.0.as_ref().map(|s| s.key.modules.as_slice());
    let first = match scope {
        Some(list) if !list.iter().any(|m| m == "*") => list.first().map(String::as_str),
        _ => None,
    };
    let key = first.unwrap_or("customers");
    (app.catalog
        .get(key)
        .or_else(|| app.catalog.modules().first()))
    .cloned()
    .expect("a catalog holds a module")
}

fn base_url(headers: &HeaderMap) -> String {
    let host = headers
        .get(axum::http::header::HOST)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("127.0.0.1:8080");
    let scheme = if super::request::is_https(headers) {
        "https"
    } else {
        "http"
    };
    format!("{scheme}://{host}")
}

/// Where a piece of markup goes in a message: the message is asked for
/// with this as an argument (a private-use character no text has), and
/// [`around`] puts the markup there.
const SLOT: &str = "\u{E000}";

/// A message with markup at its [`SLOT`], so each language keeps its own
/// word order around it.
fn around(text: &str, markup: Markup) -> Markup {
    let (before, after) = text.split_once(SLOT).unwrap_or((text, ""));
    html! { (before) (markup) (after) }
}

fn render(
    app: &App,
    ctx: &Ctx,
    token: &str,
    notice: Option<Notice>,
    headers: &HeaderMap,
    example: &Module,
) -> Markup {
    let base = base_url(headers);
    let claim_id = match &notice {
        Some(Notice::Requested { id, .. }) => id.as_str(),
        _ => "",
    };
    let content = html! {
        h1 { (t!("dev-title")) }
        p.lead { (t!("dev-lead", n = app.catalog.modules().len())) }
        @match &notice {
            Some(Notice::Requested { id, token }) => {
                section.alert.alert-ok aria-labelledby="requested-title" {
                    h2 #requested-title { (t!("dev-requested-title")) }
                    p { strong { (t!("dev-requested-keep")) } " " (t!("dev-requested-then")) }
                    div.copy-row {
                        label for="req-id" { (t!("dev-request-id")) }
                        input #req-id .mono type="text" readonly value=(id);
                        button.btn type="button" data-copy="#req-id" { (t!("dev-copy")) }
                    }
                    div.copy-row {
                        label for="req-token" { (t!("dev-claim-token")) }
                        input #req-token .mono type="text" readonly value=(token);
                        button.btn type="button" data-copy="#req-token" { (t!("dev-copy")) }
                    }
                }
            }
            Some(Notice::Collected { secret }) => {
                section.alert.alert-ok.new-key aria-labelledby="collected-title" {
                    h2 #collected-title { (t!("dev-your-key")) }
                    p { strong { (t!("dev-collected-copy")) } " " (t!("dev-collected-use")) }
                    div.copy-row {
                        label.sr-only for="new-key" { (t!("dev-your-key")) }
                        input #new-key .mono type="text" readonly value=(secret);
                        button.btn type="button" data-copy="#new-key" { (t!("dev-copy")) }
                    }
                }
            }
            Some(Notice::Waiting(state)) => {
                div.alert.alert-info role="status" {
                    @if *state == RequestState::Denied { (t!("dev-denied")) }
                    @else if *state == RequestState::Expired { (t!("dev-expired")) }
                    @else { (t!("dev-waiting")) }
                }
            }
            Some(Notice::Refused(p)) => div.alert.alert-error role="alert" { strong { (p.title) } ": " (p.detail) },
            None => {},
        }
        div.two-col {
            section.panel #request aria-labelledby="request-title" {
                h2 #request-title { (t!("dev-request-title")) }
                form method="post" action="/developers/request" {
                    input type="hidden" name="_csrf" value=(token);
                    div.field { label for="r-name" { (t!("dev-your-name")) } input #r-name type="text" name="name" required maxlength="200" autocomplete="name"; }
                    div.field { label for="r-email" { (t!("dev-work-email")) } input #r-email type="email" name="email" required maxlength="254" autocomplete="email"; }
                    (layout::role_and_modules("r"))
                    div.field { label for="r-reason" { (t!("dev-reason")) } textarea #r-reason name="reason" required maxlength="2000" rows="3" {} }
                    p.help { (t!("dev-masked-help")) }
                    button.btn.btn-primary type="submit" { (t!("dev-send-request")) }
                }
            }
            section.panel #claim aria-labelledby="claim-title" {
                h2 #claim-title { (t!("dev-claim-title")) }
                p { (t!("dev-claim-lead")) }
                form method="post" action="/developers/claim" autocomplete="off" {
                    input type="hidden" name="_csrf" value=(token);
                    div.field { label for="c-id" { (t!("dev-request-id")) } input #c-id .mono type="text" name="id" required placeholder="kr_…" value=(claim_id); }
                    div.field { label for="c-token" { (t!("dev-claim-token")) } input #c-token .mono type="password" name="claim_token" required; }
                    button.btn.btn-primary type="submit" { (t!("dev-collect-key")) }
                }
            }
        }
        section.panel aria-labelledby="api-title" {
            h2 #api-title { (t!("dev-api-title")) }
            p { (around(&t!("dev-api-intro", header = SLOT), html! { code { "X-API-Key" } })) }
            pre.code { code {
                "curl -X POST " (base) "/api/import/customers \\\n"
                "     -H 'X-API-Key: igk_…' -H 'Content-Type: text/csv' \\\n"
                "     -H 'Prefer: wait=10' --data-binary @customers.csv\n"
                "# → 202, Location: /api/jobs/job_…\n\n"
                "curl " (base) "/api/jobs/job_…/preview -H 'X-API-Key: igk_…'\n"
                "curl " (base) "/api/jobs/job_…/errors  -H 'X-API-Key: igk_…'"
            } }
            p { (around(&t!("dev-openapi", link = SLOT), html! { a #openapi href="/api/openapi.json" { code { "/api/openapi.json" } } })) }
            div.table-wrap {
                table.small.endpoints {
                    (layout::table_head(&[t!("dev-endpoint").as_str(), t!("dev-what-it-does").as_str()]))
                    tbody {
                        @for (ep, what) in endpoints() {
                            tr { td { code { (ep) } } td { (what) } }
                        }
                    }
                }
            }
            p { (around(&t!("dev-api-errors", code = SLOT), html! { code { "code" } })) " " (t!("field-modules")) ": "
                @for (i, m) in app.catalog.keys().iter().enumerate() {
                    @if i > 0 { ", " } code { (m) }
                }
                "."
            }
        }
        (beyond(&base, example))
    };
    layout::page(ctx, &t!("dev-title"), content)
}

/// What comes after the upload, each with an example for `module`:
/// revisions, export and import again, events and webhooks, the command
/// line.
fn beyond(base: &str, module: &Module) -> Markup {
    let m = module.key.as_str();
    let column = (module.columns.iter())
        .find(|c| !module.natural_key.contains(&c.name))
        .or(module.columns.first())
        .map_or("", |c| c.name.as_str());
    html! {
        section.panel #beyond aria-labelledby="beyond-title" {
            h2 #beyond-title { (t!("dev-beyond-title")) }
            h3 #dev-revisions { (t!("dev-revisions-title")) }
            p { (t!("dev-revisions")) }
            pre.code { code {
                "curl -X POST " (base) "/api/jobs/job_…/revisions -H 'X-API-Key: igk_…' \\\n"
                "     -H 'Content-Type: application/json' -H 'Prefer: wait=10' \\\n"
                "     -d '{\"fixes\": [{\"row\": 4, \"column\": \"" (column) "\", \"value\": \"…\"}], \"exclude\": [7], \"comment\": \"…\"}'"
            } }
            h3 #dev-export { (t!("dev-export-title")) }
            p { (t!("dev-export")) }
            pre.code { code {
                "curl '" (base) "/api/modules/" (m) "/export?format=csv' -H 'X-API-Key: igk_…' -o " (m) ".csv\n"
                "# … edit " (m) ".csv, keep its _version column, then:\n"
                "curl -X POST '" (base) "/api/import/" (m) "?mode=upsert' -H 'X-API-Key: igk_…' \\\n"
                "     -H 'Content-Type: text/csv' --data-binary @" (m) ".csv"
            } }
            h3 #dev-events { (t!("dev-events-title")) }
            p { (t!("dev-events")) }
            pre.code { code {
                "curl '" (base) "/api/events?after=evt_0' -H 'X-API-Key: igk_…'\n"
                "curl -N " (base) "/api/events/stream -H 'X-API-Key: igk_…'\n"
                "# an admin key: a webhook, signed (HMAC-SHA256) and retried\n"
                "curl -X POST " (base) "/api/webhooks -H 'X-API-Key: igk_…' -H 'Content-Type: application/json' \\\n"
                "     -d '{\"url\": \"https://erp.example.co.id/hooks/importgate\", \"events\": [\"job.awaiting_approval\", \"job.committed\"]}'"
            } }
            h3 #dev-cli { (t!("dev-cli-title")) }
            p { (t!("dev-cli")) }
            pre.code { code {
                "export IMPORTGATE_URL=" (base) " IMPORTGATE_KEY=igk_…\n"
                "importgate import " (m) " " (m) ".csv --wait\n"
                "importgate jobs list --state awaiting_approval\n"
                "importgate jobs approve job_… --comment '…' --wait   # another person\n"
                "importgate export " (m) " -o " (m) ".csv\n"
                "importgate events tail --types job.awaiting_approval,job.failed"
            } }
        }
    }
}

/// The API's endpoints and what each does, in the reader's language.
fn endpoints() -> [(&'static str, String); 16] {
    [
        ("GET /api/modules", t!("dev-ep-modules")),
        (
            "GET /api/modules/{module}/template?format=csv|json",
            t!("dev-ep-template"),
        ),
        (
            "POST /api/import/{module}?mode=&on_error=",
            t!("dev-ep-import"),
        ),
        (
            "GET /api/jobs?module=&state=&submitted_by=me",
            t!("dev-ep-jobs"),
        ),
        ("GET /api/jobs/{id}", t!("dev-ep-job")),
        (
            "GET /api/jobs/{id}/preview?action=&offset=&limit=",
            t!("dev-ep-preview"),
        ),
        ("GET /api/jobs/{id}/errors", t!("dev-ep-errors")),
        ("GET /api/jobs/{id}/events", t!("dev-ep-events")),
        (
            "POST /api/jobs/{id}/approve|reject|cancel|rollback",
            t!("dev-ep-gate"),
        ),
        ("POST /api/jobs/{id}/revisions", t!("dev-ep-revisions")),
        (
            "GET /api/modules/{module}/export?format=csv|xlsx|json|ndjson",
            t!("dev-ep-export"),
        ),
        (
            "GET /api/events?after= · /api/events/stream",
            t!("dev-ep-feed"),
        ),
        ("POST /api/webhooks", t!("dev-ep-webhooks")),
        ("GET /api/openapi.json", t!("dev-ep-openapi")),
        ("POST /api/key-requests", t!("dev-ep-key-request")),
        (
            "GET /api/key-requests/{id}?claim_token=",
            t!("dev-ep-key-claim"),
        ),
    ]
}

#[derive(Deserialize)]
struct RequestForm {
    #[serde(rename = "_csrf")]
    csrf: String,
    name: String,
    email: String,
    role: String,
    #[serde(default)]
    modules: String,
    reason: String,
}

async fn request(
    State(app): State<Arc<App>>,
    ConnectInfo(client): ConnectInfo<SocketAddr>,
    visitor: Visitor,
    jar: CookieJar,
    headers: HeaderMap,
    Form(form): Form<RequestForm>,
) -> Result<Response, Fail> {
    check_anonymous_form(&headers, &jar, &form.csrf)?;
    let asked = key_requests::submit(
        &app,
        &client.ip().to_string(),
        Ask {
            name: form.name,
            email: form.email,
            role: form.role,
            modules: module_list(&form.modules),
            reason: form.reason,
        },
    )
    .await;
    let (status, notice) = match asked {
        Ok((r, token)) => (StatusCode::CREATED, Notice::Requested { id: r.id, token }),
        Err(e) => {
            let shown = Shown::from(e);
            (shown.status, Notice::Refused(shown))
        }
    };
    Ok(answered(
        &app,
        &visitor,
        &form.csrf,
        (status, notice),
        &headers,
    ))
}

/// The page again after a form, with what the form did.
fn answered(
    app: &App,
    visitor: &Visitor,
    csrf: &str,
    (status, notice): (StatusCode, Notice),
    headers: &HeaderMap,
) -> Response {
    let ctx = visitor.ctx(app, Nav::Developers);
    let example = example_module(app, visitor);
    let markup = render(app, &ctx, csrf, Some(notice), headers, &example);
    (status, markup).into_response()
}

#[derive(Deserialize)]
struct ClaimForm {
    #[serde(rename = "_csrf")]
    csrf: String,
    id: String,
    claim_token: String,
}

async fn collect(
    State(app): State<Arc<App>>,
    visitor: Visitor,
    jar: CookieJar,
    headers: HeaderMap,
    Form(form): Form<ClaimForm>,
) -> PageResult {
    check_anonymous_form(&headers, &jar, &form.csrf)?;
    let claimed = key_requests::claim(&app, form.id.trim(), form.claim_token.trim()).await;
    let (status, notice) = match claimed {
        Ok((_, Some(secret))) => (StatusCode::OK, Notice::Collected { secret }),
        Ok((r, None)) => (StatusCode::OK, Notice::Waiting(r.state)),
        Err(e) => {
            let shown = Shown::from(e);
            (shown.status, Notice::Refused(shown))
        }
    };
    Ok(answered(
        &app,
        &visitor,
        &form.csrf,
        (status, notice),
        &headers,
    ))
}
