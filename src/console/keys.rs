//! Key management for admins: create (the key shown once, with a copy
//! button), list, revoke; and the key requests of the developer center,
//! approved or denied here. The work is the service's
//! ([`crate::service::keys`], [`crate::service::key_requests`]).

use std::sync::Arc;

use axum::Router;
use axum::extract::{Form, Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Redirect, Response};
use axum::routing::{get, post};
use chrono::{NaiveDate, TimeZone};
use maud::{Markup, html};
use serde::Deserialize;

use super::layout::{self, Ctx, Nav, person};
use super::session::{CsrfOnly, Signed};
use super::{Fail, PageResult, Shown};
use crate::keys::{self, KeyRecord, KeyRequest, Person, RequestState};
use crate::service::keys::NewKey;
use crate::service::{self, App, key_requests};

pub fn routes() -> Router<Arc<App>> {
    Router::new()
        .route("/keys", get(page).post(create))
        .route("/keys/{id}/revoke", post(revoke))
        .route("/keys/requests/{id}/{decision}", post(decide))
}

/// What the page says above the lists.
enum Notice {
    /// A key just made: shown this once.
    NewKey(KeyRecord, String),
    Done(&'static str),
    Refused(Shown),
}

/// Splits "a, b" or "*" into module keys.
pub fn module_list(text: &str) -> Vec<String> {
    let list: Vec<String> = text
        .split([',', ' '])
        .map(str::trim)
        .filter(|m| !m.is_empty())
        .map(str::to_string)
        .collect();
    if list.is_empty() {
        vec!["*".to_string()]
    } else {
        list
    }
}

async fn page(State(app): State<Arc<App>>, signed: Signed) -> PageResult {
    service::admin_only(&signed.key)?;
    render(&app, &signed, None, StatusCode::OK).await
}

fn key_status(k: &KeyRecord) -> &'static str {
    if k.revoked_at.is_some() {
        "revoked"
    } else if !k.is_live(chrono::Utc::now()) {
        "expired"
    } else {
        "live"
    }
}

async fn render(
    app: &App,
    signed: &Signed,
    notice: Option<Notice>,
    status: StatusCode,
) -> PageResult {
    let keys = service::keys::list(app, &signed.key).await?;
    let requests = key_requests::list(app, &signed.key, false, None, 200).await?;
    let names = app.names().await?;
    let ctx = signed.ctx(app, Nav::Keys);
    let pending = requests
        .iter()
        .filter(|r| r.state == RequestState::Pending)
        .count();
    let content = html! {
        h1 { "Keys" }
        @match &notice {
            Some(Notice::NewKey(record, secret)) => {
                section.alert.alert-ok.new-key aria-labelledby="new-key-title" {
                    h2 #new-key-title { "New key for " (person(&record.person())) " (" (record.role.as_str()) ")" }
                    p { strong { "Copy it now: it is shown only this once." } " The service keeps only a hash." }
                    div.copy-row {
                        label.sr-only for="new-key" { "The new key" }
                        input #new-key .mono type="text" readonly value=(secret);
                        button.btn type="button" data-copy="#new-key" { "Copy" }
                    }
                }
            }
            Some(Notice::Done(text)) => div.alert.alert-ok role="status" { (text) },
            Some(Notice::Refused(p)) => div.alert.alert-error role="alert" { strong { (p.title) } ": " (p.detail) },
            None => {},
        }
        section.panel aria-labelledby="create-title" {
            h2 #create-title { "Create a key" }
            form.grid-form method="post" action="/keys" {
                input type="hidden" name="_csrf" value=(signed.csrf);
                div.field {
                    label for="k-name" { "Name (person or system)" }
                    input #k-name type="text" name="name" required maxlength="200" autocomplete="off";
                }
                (layout::role_and_modules("k"))
                div.field {
                    label for="k-expires" { "Expires (optional)" }
                    input #k-expires type="date" name="expires";
                }
                div.field.field-submit { button.btn.btn-primary type="submit" { "Create key" } }
            }
        }
        section.panel aria-labelledby="requests-title" {
            h2 #requests-title { "Key requests " span.tab-count { (pending) " pending" } }
            @if requests.is_empty() {
                p.empty { "No requests yet. Staff ask for keys in the " a href="/developers" { "developer center" } "." }
            } @else {
                div.table-wrap {
                    table.small {
                        (layout::table_head(&["Request", "Person", "Email", "Role", "Modules", "Reason", "State", "Decide"]))
                        tbody {
                            @for r in &requests { (request_row(&ctx, signed, r, &names)) }
                        }
                    }
                }
            }
        }
        section.panel aria-labelledby="keys-title" {
            h2 #keys-title { "All keys" }
            div.table-wrap {
                table.small {
                    (layout::table_head(&["Key", "Person", "Role", "Modules", "Created", "Expires", "Status", "Revoke"]))
                    tbody {
                        @for k in &keys {
                            tr {
                                td { code { (k.id) } }
                                // Key management: the one place people are shown in full.
                                td { (k.name) br; span.muted { (person(&k.person())) } }
                                td { (k.role.as_str()) }
                                td { (k.modules.join(", ")) }
                                td { (ctx.when(&k.created_at)) }
                                td { @if let Some(e) = &k.expires_at { (ctx.when(e)) } @else { "never" } }
                                td { span class=(format!("key-status key-{}", key_status(k))) { (key_status(k)) } }
                                td {
                                    @if k.revoked_at.is_none() && k.id != signed.key.id {
                                        details.action {
                                            summary.btn.btn-small.btn-danger { "Revoke…" }
                                            form method="post" action=(format!("/keys/{}/revoke", k.id)) {
                                                input type="hidden" name="_csrf" value=(signed.csrf);
                                                p { "Revoke " (k.person().display) "'s key? It stops working at once, in every session." }
                                                button.btn.btn-danger type="submit" { "Revoke key" }
                                            }
                                        }
                                    } @else if k.id == signed.key.id {
                                        span.muted { "your key" }
                                    }
                                }
                            }
                        }
                    }
                }
            }
        }
    };
    Ok((status, layout::page(&ctx, "Keys", content)).into_response())
}

fn request_row(
    ctx: &Ctx,
    signed: &Signed,
    r: &KeyRequest,
    names: &std::collections::HashMap<String, String>,
) -> Markup {
    let who = Person {
        key_id: r.key_id.clone().unwrap_or_default(),
        display: keys::mask(&r.name),
    };
    html! {
        tr {
            td { code { (r.id) } br; span.muted { (ctx.when(&r.created_at)) } }
            td { (r.name) br; span.muted { (person(&who)) } }
            td { (r.email) }
            td { (r.role.as_str()) }
            td { (r.modules.join(", ")) }
            td.reason { (r.reason) }
            td {
                (r.state.as_str())
                @if let Some(by) = &r.decided_by {
                    br; span.muted { "by " (person(&Person::new(by, names.get(by).map(String::as_str).unwrap_or("")))) }
                }
            }
            td {
                @if r.state == RequestState::Approved {
                    details.action {
                        summary class="btn btn-small btn-danger" { "Withdraw…" }
                        form method="post" action=(format!("/keys/requests/{}/withdraw", r.id)) {
                            input type="hidden" name="_csrf" value=(signed.csrf);
                            p { "Withdraw this approval? The key has not been collected; it never will be." }
                            button type="submit" class="btn btn-danger" { "Withdraw approval" }
                        }
                    }
                }
                @if r.state == RequestState::Pending {
                    div.action-list {
                        @for (decision, label, class) in [("approve", "Approve…", "btn-primary"), ("deny", "Deny…", "btn-danger")] {
                            details.action {
                                summary class=(format!("btn btn-small {class}")) { (label) }
                                form method="post" action=(format!("/keys/requests/{}/{decision}", r.id)) {
                                    input type="hidden" name="_csrf" value=(signed.csrf);
                                    label for=(format!("c-{}-{decision}", r.id)) { "Comment (optional)" }
                                    textarea id=(format!("c-{}-{decision}", r.id)) name="comment" rows="2" maxlength="2000" {}
                                    button type="submit" class=(format!("btn {class}")) {
                                        @if decision == "approve" { "Approve: let them collect a " (r.role.as_str()) " key" }
                                        @else { "Deny request" }
                                    }
                                }
                            }
                        }
                    }
                }
            }
        }
    }
}

#[derive(Deserialize)]
struct CreateForm {
    #[serde(rename = "_csrf")]
    csrf: String,
    name: String,
    role: String,
    #[serde(default)]
    modules: String,
    #[serde(default)]
    expires: String,
}

async fn create(
    State(app): State<Arc<App>>,
    signed: Signed,
    headers: HeaderMap,
    Form(form): Form<CreateForm>,
) -> PageResult {
    signed.check_form(&headers, &form.csrf)?;
    service::admin_only(&signed.key)?;
    let modules = module_list(&form.modules);
    let made = async {
        let expires = match form.expires.trim() {
            "" => None,
            d => {
                let day = NaiveDate::parse_from_str(d, "%Y-%m-%d").map_err(|_| {
                    service::Error::invalid("expires", "expires must be a date (YYYY-MM-DD)")
                })?;
                // The end of that day in the service's zone.
                let end = day.and_hms_opt(23, 59, 59).unwrap_or_default();
                app.settings
                    .zone
                    .from_local_datetime(&end)
                    .earliest()
                    .map(|t| t.with_timezone(&chrono::Utc))
            }
        };
        let new = NewKey::parse(&app, &form.name, &form.role, modules, expires)?;
        service::keys::create(&app, &signed.key, &new).await
    }
    .await;
    match made {
        Ok((record, secret)) => {
            render(
                &app,
                &signed,
                Some(Notice::NewKey(record, secret)),
                StatusCode::CREATED,
            )
            .await
        }
        Err(e) => {
            let shown = Shown::from(e);
            let status = shown.status;
            render(&app, &signed, Some(Notice::Refused(shown)), status).await
        }
    }
}

async fn revoke(
    State(app): State<Arc<App>>,
    signed: Signed,
    Path(id): Path<String>,
    headers: HeaderMap,
    Form(form): Form<CsrfOnly>,
) -> PageResult {
    signed.check_form(&headers, &form.csrf)?;
    match service::keys::revoke(&app, &signed.key, &id).await {
        Ok(_) => {
            render(
                &app,
                &signed,
                Some(Notice::Done("The key is revoked.")),
                StatusCode::OK,
            )
            .await
        }
        Err(e @ service::Error::Forbidden(_)) => Err(e.into()),
        Err(e) => {
            let shown = Shown::from(e);
            let status = shown.status;
            render(&app, &signed, Some(Notice::Refused(shown)), status).await
        }
    }
}

#[derive(Deserialize)]
struct DecideForm {
    #[serde(rename = "_csrf")]
    csrf: String,
    #[serde(default)]
    comment: Option<String>,
}

async fn decide(
    State(app): State<Arc<App>>,
    signed: Signed,
    Path((id, decision)): Path<(String, String)>,
    headers: HeaderMap,
    Form(form): Form<DecideForm>,
) -> Result<Response, Fail> {
    signed.check_form(&headers, &form.csrf)?;
    let done = match decision.as_str() {
        "approve" | "deny" => {
            let approve = decision == "approve";
            key_requests::decide(&app, &signed.key, &id, approve, form.comment.as_deref()).await
        }
        "withdraw" => key_requests::withdraw(&app, &signed.key, &id).await,
        _ => return Err(service::Error::not_found("decision", &decision).into()),
    };
    match done {
        Ok(_) => Ok(Redirect::to("/keys#requests-title").into_response()),
        Err(e @ service::Error::Forbidden(_)) => Err(e.into()),
        Err(e) => {
            let shown = Shown::from(e);
            let status = shown.status;
            render(&app, &signed, Some(Notice::Refused(shown)), status).await
        }
    }
}
