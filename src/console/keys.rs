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
use super::session::{CsrfOnly, DecideForm, Signed};
use super::{Fail, PageResult, Shown};
use crate::ids::KeyId;
use crate::keys::{self, KeyRecord, KeyRequest, Person, RequestState};
use crate::ledger::job::People;
use crate::service::keys::NewKey;
use crate::service::{self, App, key_requests};
use crate::t;

pub fn routes() -> Router<Arc<App>> {
    Router::new()
        .route("/keys", get(page).post(create))
        .route("/keys/{id}/revoke", post(revoke))
        .route("/keys/requests/{id}/{decision}", post(decide))
        .route("/keys/requests/deny-address", post(deny_address))
}

/// What the page says above the lists.
enum Notice {
    /// A key just made: shown this once.
    NewKey(KeyRecord, String),
    Done(String),
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

/// Words a person reads for a key's status.
fn key_status_label(k: &KeyRecord) -> String {
    match key_status(k) {
        "revoked" => t!("keys-status-revoked"),
        "expired" => t!("keys-status-expired"),
        _ => t!("keys-status-live"),
    }
}

/// Words a person reads for a key request's state.
fn request_state_label(s: RequestState) -> String {
    match s {
        RequestState::Pending => t!("keys-request-pending"),
        RequestState::Approved => t!("keys-request-approved"),
        RequestState::Denied => t!("keys-request-denied"),
        RequestState::Collected => t!("keys-request-collected"),
        RequestState::Expired => t!("keys-request-expired"),
        RequestState::Withdrawn => t!("keys-request-withdrawn"),
    }
}

/// What stands in a message for its `i`th piece of markup (see [`fill`]).
fn slot(i: usize) -> String {
    format!("\u{E000}{i}\u{E000}")
}

/// A whole-sentence message whose arguments are markup (a link, a person):
/// the message is asked for with a [`slot`] in each such argument's place;
/// here the text around the slots is escaped as usual and each slot
/// becomes its piece of markup. The sentence keeps its own word order.
fn fill(text: &str, parts: &[Markup]) -> Markup {
    html! {
        @for (n, piece) in text.split('\u{E000}').enumerate() {
            @if n % 2 == 0 {
                (piece)
            } @else if let Some(part) = piece.parse::<usize>().ok().and_then(|i| parts.get(i)) {
                (part)
            }
        }
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
    let request_columns = [
        t!("keys-col-request"),
        t!("keys-col-person"),
        t!("keys-col-email"),
        t!("field-role"),
        t!("field-modules"),
        t!("keys-col-reason"),
        t!("keys-col-state"),
        t!("keys-col-decide"),
    ];
    let key_columns = [
        t!("keys-col-key"),
        t!("keys-col-person"),
        t!("field-role"),
        t!("field-modules"),
        t!("keys-col-created"),
        t!("keys-col-expires"),
        t!("keys-col-status"),
        t!("keys-col-revoke"),
    ];
    let content = html! {
        h1 { (t!("keys-title")) }
        @match &notice {
            Some(Notice::NewKey(record, secret)) => {
                section.alert.alert-ok.new-key aria-labelledby="new-key-title" {
                    h2 #new-key-title {
                        (fill(
                            &t!("keys-new-key-for", person = slot(0), role = layout::role_name(record.role)),
                            &[person(&record.person())],
                        ))
                    }
                    p { strong { (t!("keys-new-key-copy-now")) } " " (t!("keys-new-key-hash-only")) }
                    div.copy-row {
                        label.sr-only for="new-key" { (t!("keys-new-key-label")) }
                        input #new-key .mono type="text" readonly value=(secret);
                        button.btn type="button" data-copy="#new-key" { (t!("keys-copy")) }
                    }
                }
            }
            Some(Notice::Done(text)) => div.alert.alert-ok role="status" { (text) },
            Some(Notice::Refused(p)) => div.alert.alert-error role="alert" { strong { (p.title) } ": " (p.detail) },
            None => {},
        }
        section.panel aria-labelledby="create-title" {
            h2 #create-title { (t!("keys-create-title")) }
            form.grid-form method="post" action="/keys" {
                input type="hidden" name="_csrf" value=(signed.csrf);
                div.field {
                    label for="k-name" { (t!("keys-field-name")) }
                    input #k-name type="text" name="name" required maxlength="200" autocomplete="off";
                }
                div.field {
                    label for="k-email" { (t!("keys-field-email")) }
                    input #k-email type="email" name="email" maxlength="254" autocomplete="off";
                }
                div.field {
                    label for="k-person" { (t!("keys-field-person")) }
                    select #k-person name="person_id" {
                        option value="" { (t!("keys-person-new")) }
                        @for (id, name) in persons(&keys) {
                            option value=(id) { (t!("keys-person-same", name = name, id = id)) }
                        }
                    }
                }
                (layout::role_and_modules("k"))
                div.field {
                    label for="k-expires" { (t!("keys-field-expires")) }
                    input #k-expires type="date" name="expires";
                }
                div.field.field-submit { button.btn.btn-primary type="submit" { (t!("keys-create")) } }
            }
        }
        section.panel aria-labelledby="requests-title" {
            h2 #requests-title { (t!("keys-requests-title")) " " span.tab-count { (t!("keys-requests-pending", n = pending)) } }
            @if requests.is_empty() {
                p.empty {
                    (fill(
                        &t!("keys-no-requests", link = slot(0)),
                        &[html! { a href="/developers" { (t!("keys-developer-center")) } }],
                    ))
                }
            } @else {
                div.table-wrap {
                    table.small {
                        (layout::table_head(&request_columns.each_ref().map(String::as_str)))
                        tbody {
                            @for r in &requests { (request_row(&ctx, signed, r, &names)) }
                        }
                    }
                }
            }
        }
        section.panel aria-labelledby="keys-title" {
            h2 #keys-title { (t!("keys-all-title")) }
            div.table-wrap {
                table.small {
                    (layout::table_head(&key_columns.each_ref().map(String::as_str)))
                    tbody {
                        @for k in &keys {
                            tr {
                                td { code { (k.id) } }
                                // Key management: the one place people are shown in full.
                                td {
                                    (k.name) br;
                                    span.muted { (person(&k.person())) " · " code { (k.person_id) } }
                                    @if let Some(e) = &k.email { br; span.muted { (e) } }
                                }
                                td { (layout::role_name(k.role)) }
                                td { (k.modules.join(", ")) }
                                td { (ctx.when(&k.created_at)) }
                                td { @if let Some(e) = &k.expires_at { (ctx.when(e)) } @else { (t!("keys-never")) } }
                                td { span class=(format!("key-status key-{}", key_status(k))) { (key_status_label(k)) } }
                                td {
                                    @if k.revoked_at.is_none() && k.id != signed.key.id {
                                        details.action {
                                            summary.btn.btn-small.btn-danger { (t!("keys-revoke-open")) }
                                            form method="post" action=(format!("/keys/{}/revoke", k.id)) {
                                                input type="hidden" name="_csrf" value=(signed.csrf);
                                                p { (t!("keys-revoke-confirm", person = k.person().display)) }
                                                button.btn.btn-danger type="submit" { (t!("keys-revoke")) }
                                            }
                                        }
                                    } @else if k.id == signed.key.id {
                                        span.muted { (t!("keys-yours")) }
                                    }
                                }
                            }
                        }
                    }
                }
            }
        }
    };
    Ok((status, layout::page(&ctx, &t!("keys-title"), content)).into_response())
}

fn request_row(
    ctx: &Ctx,
    signed: &Signed,
    r: &KeyRequest,
    names: &std::collections::HashMap<String, String>,
) -> Markup {
    let who = Person {
        key_id: r.key_id.as_ref().map(KeyId::to_string).unwrap_or_default(),
        display: keys::mask(&r.name),
    };
    html! {
        tr {
            td { code { (r.id) } br; span.muted { (ctx.when(&r.created_at)) } }
            td { (r.name) br; span.muted { (person(&who)) } }
            td {
                (r.email)
                @if let Some(address) = &r.client {
                    br; span.muted { (t!("keys-from-address", address = address.as_str())) }
                }
            }
            td { (layout::role_name(r.role)) }
            td { (r.modules.join(", ")) }
            td.reason { (r.reason) }
            td {
                (request_state_label(r.state))
                @if let Some(by) = &r.decided_by {
                    br;
                    span.muted {
                        (fill(
                            &t!("keys-decided-by", person = slot(0)),
                            &[person(&People(names).person(by))],
                        ))
                    }
                }
            }
            td {
                @if r.state == RequestState::Approved {
                    details.action {
                        summary class="btn btn-small btn-danger" { (t!("keys-withdraw-open")) }
                        form method="post" action=(format!("/keys/requests/{}/withdraw", r.id)) {
                            input type="hidden" name="_csrf" value=(signed.csrf);
                            p { (t!("keys-withdraw-confirm")) }
                            button type="submit" class="btn btn-danger" { (t!("keys-withdraw")) }
                        }
                    }
                }
                @if r.state == RequestState::Pending {
                    div.action-list {
                        @for (decision, label, class) in [("approve", t!("keys-approve-open"), "btn-primary"), ("deny", t!("keys-deny-open"), "btn-danger")] {
                            details.action {
                                summary class=(format!("btn btn-small {class}")) { (label) }
                                form method="post" action=(format!("/keys/requests/{}/{decision}", r.id)) {
                                    input type="hidden" name="_csrf" value=(signed.csrf);
                                    label for=(format!("c-{}-{decision}", r.id)) { (t!("keys-comment")) }
                                    textarea id=(format!("c-{}-{decision}", r.id)) name="comment" rows="2" maxlength="2000" {}
                                    button type="submit" class=(format!("btn {class}")) {
                                        @if decision == "approve" { (t!("keys-approve", role = layout::role_name(r.role))) }
                                        @else { (t!("keys-deny")) }
                                    }
                                }
                            }
                        }
                        @if let Some(address) = &r.client { (deny_address_form(signed, address)) }
                    }
                }
            }
        }
    }
}

/// "Deny all from this address": one action against a flood of requests
/// from one client address (API.md section 7).
fn deny_address_form(signed: &Signed, address: &str) -> Markup {
    html! {
        details.action {
            summary class="btn btn-small btn-danger" { (t!("keys-deny-address-open")) }
            form method="post" action="/keys/requests/deny-address" {
                input type="hidden" name="_csrf" value=(signed.csrf);
                input type="hidden" name="address" value=(address);
                p { (t!("keys-deny-address-confirm", address = address)) }
                button type="submit" class="btn btn-danger" { (t!("keys-deny-address")) }
            }
        }
    }
}

/// Each person holding a key, once, by the name on their first key: the
/// choices for giving a person another key.
fn persons(keys: &[KeyRecord]) -> Vec<(String, String)> {
    let mut seen = std::collections::HashSet::new();
    keys.iter()
        .filter(|k| seen.insert(k.person_id.clone()))
        .map(|k| (k.person_id.clone(), k.name.clone()))
        .collect()
}

#[derive(Deserialize)]
struct CreateForm {
    #[serde(rename = "_csrf")]
    csrf: String,
    name: String,
    #[serde(default)]
    email: String,
    #[serde(default)]
    person_id: String,
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
        let new = NewKey::parse(&app, &form.name, &form.role, modules, expires)?
            .held_by(Some(&form.email), Some(&form.person_id))?;
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
    // Only an admin learns which ids are well formed.
    let id = service::admin_only(&signed.key).and_then(|()| service::keys::parse_id(&id));
    let revoked = match id {
        Ok(id) => service::keys::revoke(&app, &signed.key, &id).await,
        Err(e) => Err(e),
    };
    match revoked {
        Ok(_) => {
            render(
                &app,
                &signed,
                Some(Notice::Done(t!("keys-revoked"))),
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

#[derive(Deserialize)]
struct DenyAddressForm {
    #[serde(rename = "_csrf")]
    csrf: String,
    address: String,
}

async fn deny_address(
    State(app): State<Arc<App>>,
    signed: Signed,
    headers: HeaderMap,
    Form(form): Form<DenyAddressForm>,
) -> Result<Response, Fail> {
    signed.check_form(&headers, &form.csrf)?;
    key_requests::deny_all_from(&app, &signed.key, &form.address, None).await?;
    Ok(Redirect::to("/keys#requests-title").into_response())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::console::i18n::{Arg, Lang, text_in};

    #[test]
    fn markup_goes_where_each_language_puts_it() {
        let link = || html! { a href="/developers" { "x" } };
        let en = fill(&t!("keys-no-requests", link = slot(0)), &[link()]);
        assert_eq!(
            en.into_string(),
            "No requests yet. Staff ask for keys in the <a href=\"/developers\">x</a>."
        );
        let id = text_in(
            Lang::Id,
            "keys-decided-by",
            &[("person", Arg::from(slot(0)))],
        );
        let shown = fill(&id, &[html! { b { "<Bu***o>" } }]);
        assert_eq!(shown.into_string(), "oleh <b>&lt;Bu***o&gt;</b>");
        // Text around the markup is escaped as any text is.
        assert_eq!(fill("a < b", &[]).into_string(), "a &lt; b");
    }
}
