//! Webhooks for admins (API.md section 13): register an endpoint (its
//! secret shown once), enable or disable it, send a test, and read its
//! deliveries with their status and latency, retrying one. The work is the
//! service's ([`crate::service::webhooks`]).

use std::sync::Arc;

use axum::Router;
use axum::extract::{Form, Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Redirect, Response};
use axum::routing::{get, post};
use maud::{Markup, html};
use serde::Deserialize;

use super::keys::module_list;
use super::layout::{self, Ctx, Nav};
use super::session::{CsrfOnly, Signed};
use super::{Fail, PageResult, Shown};
use crate::service::webhooks::{self as hooks, Ask, Changes};
use crate::service::{self, App};
use crate::t;
use crate::webhooks::{Attempt, Delivery, Webhook};

pub fn routes() -> Router<Arc<App>> {
    Router::new()
        .route("/webhooks", get(page).post(create))
        .route("/webhooks/{id}", get(detail))
        .route("/webhooks/{id}/{action}", post(act))
        .route("/webhooks/{id}/deliveries/{delivery}/retry", post(retry))
}

/// What the page says above the list.
enum Notice {
    /// An endpoint just made, with its secret: shown this once.
    Made(Webhook, String),
    Refused(Shown),
}

async fn page(State(app): State<Arc<App>>, signed: Signed) -> PageResult {
    service::admin_only(&signed.key)?;
    render(&app, &signed, None, StatusCode::OK).await
}

/// Words a person reads for an endpoint's state.
fn status_label(w: &Webhook) -> String {
    match (w.enabled, &w.failing_since) {
        (false, _) => t!("webhooks-disabled"),
        (true, Some(_)) => t!("webhooks-failing"),
        (true, None) => t!("webhooks-enabled"),
    }
}

async fn render(
    app: &App,
    signed: &Signed,
    notice: Option<Notice>,
    status: StatusCode,
) -> PageResult {
    let list = hooks::list(app, &signed.key).await?;
    let ctx = signed.ctx(app, Nav::Webhooks);
    let columns = [
        t!("webhooks-col-url"),
        t!("webhooks-col-events"),
        t!("field-modules"),
        t!("webhooks-col-status"),
        t!("webhooks-col-actions"),
    ];
    let content = html! {
        h1 { (t!("webhooks-title")) }
        p.lead { (t!("webhooks-lead")) }
        @match &notice {
            Some(Notice::Made(w, secret)) => {
                section.alert.alert-ok.new-key aria-labelledby="new-secret-title" {
                    h2 #new-secret-title { (t!("webhooks-made", url = w.url.clone())) }
                    p { strong { (t!("webhooks-secret-copy-now")) } }
                    div.copy-row {
                        label.sr-only for="new-secret" { (t!("webhooks-secret-label")) }
                        input #new-secret .mono type="text" readonly value=(secret);
                        button.btn type="button" data-copy="#new-secret" { (t!("keys-copy")) }
                    }
                }
            }
            Some(Notice::Refused(p)) => div.alert.alert-error role="alert" { strong { (p.title) } ": " (p.detail) },
            None => {},
        }
        section.panel aria-labelledby="create-title" {
            h2 #create-title { (t!("webhooks-create-title")) }
            form.grid-form method="post" action="/webhooks" {
                input type="hidden" name="_csrf" value=(signed.csrf);
                div.field {
                    label for="w-url" { (t!("webhooks-col-url")) }
                    input #w-url type="url" name="url" required maxlength="2000" placeholder="https://";
                }
                div.field {
                    label for="w-events" { (t!("webhooks-col-events")) }
                    input #w-events type="text" name="events" value="*" aria-describedby="w-events-help";
                    small #w-events-help { (t!("webhooks-events-help")) }
                }
                div.field {
                    label for="w-modules" { (t!("field-modules")) }
                    input #w-modules type="text" name="modules" value="*";
                }
                div.field {
                    label for="w-description" { (t!("webhooks-description")) }
                    input #w-description type="text" name="description" maxlength="500";
                }
                div.field.field-submit { button.btn.btn-primary type="submit" { (t!("webhooks-create")) } }
            }
        }
        section.panel aria-labelledby="list-title" {
            h2 #list-title { (t!("webhooks-list-title")) }
            @if list.is_empty() {
                p.empty { (t!("webhooks-none")) }
            } @else {
                div.table-wrap {
                    table.small {
                        (layout::table_head(&columns.each_ref().map(String::as_str)))
                        tbody { @for w in &list { (row(&ctx, signed, w)) } }
                    }
                }
            }
        }
    };
    Ok((status, layout::page(&ctx, &t!("webhooks-title"), content)).into_response())
}

fn row(ctx: &Ctx, signed: &Signed, w: &Webhook) -> Markup {
    let action = |name: &str, label: String, class: &str| {
        html! {
            form.inline method="post" action=(format!("/webhooks/{}/{name}", w.id)) {
                input type="hidden" name="_csrf" value=(signed.csrf);
                button class=(format!("btn btn-small {class}")) type="submit" { (label) }
            }
        }
    };
    html! {
        tr {
            td {
                a href=(format!("/webhooks/{}", w.id)) { code { (w.url) } }
                @if let Some(d) = &w.description { br; span.muted { (d) } }
            }
            td { (w.events.join(", ")) }
            td { (w.modules.join(", ")) }
            td {
                span class=(format!("key-status key-{}", if w.enabled { "live" } else { "revoked" })) { (status_label(w)) }
                @if let Some(since) = &w.failing_since { br; span.muted { (t!("webhooks-failing-since")) " " (ctx.when(since)) } }
                @if let Some(why) = &w.disabled_reason { br; span.muted { (why) } }
            }
            td {
                @if w.enabled {
                    (action("disable", t!("webhooks-disable"), ""))
                } @else {
                    (action("enable", t!("webhooks-enable"), ""))
                }
                " " (action("test", t!("webhooks-test"), ""))
                " " (action("delete", t!("webhooks-delete"), "btn-danger"))
            }
        }
    }
}

#[derive(Deserialize)]
struct CreateForm {
    #[serde(rename = "_csrf")]
    csrf: String,
    url: String,
    #[serde(default)]
    events: String,
    #[serde(default)]
    modules: String,
    #[serde(default)]
    description: String,
}

async fn create(
    State(app): State<Arc<App>>,
    signed: Signed,
    headers: HeaderMap,
    Form(form): Form<CreateForm>,
) -> PageResult {
    signed.check_form(&headers, &form.csrf)?;
    service::admin_only(&signed.key)?;
    let ask = Ask {
        url: form.url,
        events: module_list(&form.events),
        modules: module_list(&form.modules),
        description: Some(form.description),
    };
    let notice = match hooks::create(&app, &signed.key, ask).await {
        Ok((w, secret)) => (Notice::Made(w, secret), StatusCode::CREATED),
        Err(e) => {
            let shown = Shown::from(e);
            let status = shown.status;
            (Notice::Refused(shown), status)
        }
    };
    render(&app, &signed, Some(notice.0), notice.1).await
}

/// Enable, disable, test or delete an endpoint; back to the list.
async fn act(
    State(app): State<Arc<App>>,
    signed: Signed,
    Path((id, action)): Path<(String, String)>,
    headers: HeaderMap,
    Form(form): Form<CsrfOnly>,
) -> Result<Response, Fail> {
    signed.check_form(&headers, &form.csrf)?;
    let enabled = |on: bool| Changes {
        enabled: Some(on),
        ..Changes::default()
    };
    let done = match action.as_str() {
        "enable" => hooks::update(&app, &signed.key, &id, enabled(true))
            .await
            .map(drop),
        "disable" => hooks::update(&app, &signed.key, &id, enabled(false))
            .await
            .map(drop),
        "test" => hooks::test(&app, &signed.key, &id).await.map(drop),
        "delete" => hooks::delete(&app, &signed.key, &id).await,
        _ => return Err(service::Error::not_found("action", &action).into()),
    };
    match done {
        Ok(()) if action == "test" => Ok(Redirect::to(&format!("/webhooks/{id}")).into_response()),
        Ok(()) => Ok(Redirect::to("/webhooks").into_response()),
        Err(e @ (service::Error::Forbidden(_) | service::Error::NotFound { .. })) => Err(e.into()),
        Err(e) => {
            let shown = Shown::from(e);
            let status = shown.status;
            render(&app, &signed, Some(Notice::Refused(shown)), status).await
        }
    }
}

/// An endpoint's latest deliveries.
async fn detail(State(app): State<Arc<App>>, signed: Signed, Path(id): Path<String>) -> PageResult {
    let w = hooks::get(&app, &signed.key, &id).await?;
    let deliveries = hooks::deliveries(&app, &signed.key, &id, 100).await?;
    let ctx = signed.ctx(&app, Nav::Webhooks);
    let columns = [
        t!("webhooks-col-delivery"),
        t!("webhooks-col-event"),
        t!("webhooks-col-status"),
        t!("webhooks-col-attempts"),
        t!("webhooks-col-answer"),
        t!("webhooks-col-latency"),
        t!("webhooks-col-actions"),
    ];
    let content = html! {
        nav.crumbs aria-label=(t!("webhooks-breadcrumb")) {
            a href="/webhooks" { (t!("webhooks-title")) } " › " span { code { (w.url) } }
        }
        h1 { (t!("webhooks-deliveries-title")) }
        p.meta { code { (w.url) } " · " (status_label(&w)) }
        @if deliveries.is_empty() {
            p.empty { (t!("webhooks-no-deliveries")) }
        } @else {
            div.table-wrap {
                table.small {
                    (layout::table_head(&columns.each_ref().map(String::as_str)))
                    tbody { @for (d, attempts) in &deliveries { (delivery_row(&ctx, &signed, &w, d, attempts)) } }
                }
            }
        }
    };
    Ok(layout::page(&ctx, &t!("webhooks-deliveries-title"), content).into_response())
}

fn delivery_row(
    ctx: &Ctx,
    signed: &Signed,
    w: &Webhook,
    d: &Delivery,
    attempts: &[Attempt],
) -> Markup {
    let last = attempts.last();
    let state = match d.state.as_str() {
        "delivered" => t!("webhooks-delivered"),
        "failed" => t!("webhooks-failed"),
        _ => t!("webhooks-pending"),
    };
    html! {
        tr {
            td { code { (d.id) } br; span.muted { (ctx.when(&d.created_at)) } }
            td { (d.event_type) @if let Some(seq) = d.seq { br; span.muted { "evt_" (seq) } } }
            td { span class=(format!("delivery-state delivery-{}", d.state)) { (state) } }
            td { (attempts.len()) }
            td {
                @if let Some(a) = last {
                    @if let Some(s) = a.status { (s) } @else { "—" }
                    @if let Some(e) = &a.error { br; span.muted { (e) } }
                }
            }
            td { @if let Some(a) = last { (t!("webhooks-latency", ms = a.latency_ms)) } }
            td {
                @if d.state != "pending" && w.enabled {
                    form.inline method="post" action=(format!("/webhooks/{}/deliveries/{}/retry", w.id, d.id)) {
                        input type="hidden" name="_csrf" value=(signed.csrf);
                        button.btn.btn-small type="submit" { (t!("webhooks-retry")) }
                    }
                }
            }
        }
    }
}

async fn retry(
    State(app): State<Arc<App>>,
    signed: Signed,
    Path((id, delivery)): Path<(String, String)>,
    headers: HeaderMap,
    Form(form): Form<CsrfOnly>,
) -> Result<Response, Fail> {
    signed.check_form(&headers, &form.csrf)?;
    hooks::retry(&app, &signed.key, &id, &delivery).await?;
    Ok(Redirect::to(&format!("/webhooks/{id}")).into_response())
}
