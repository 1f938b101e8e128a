//! The job list and the job page: counts, warnings, the problem, the preview
//! (paged in the database), the timeline, and the gate moves the signed-in
//! key may make right now — decided by [`gate::authorize`], the same rule
//! the API applies, and carried out by [`service::gate::make_move`].

use std::collections::HashMap;
use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;

use axum::extract::{Form, Path, Query, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::sse::{Event as SseEvent, KeepAlive, Sse};
use axum::response::{IntoResponse, Redirect, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use chrono_tz::Tz;
use futures::StreamExt;
use maud::{Markup, html};
use serde::Deserialize;
use serde_json::{Value as JsonValue, json};

use super::layout::{self, Ctx, Nav, badge, count, person};
use super::notes;
use super::session::Signed;
use super::{PageResult, ScriptResult, Shown};
use crate::catalog::Module;
use crate::ledger::chain::Event;
use crate::ledger::gate::{self, PERSONS_MOVES, Refusal};
use crate::ledger::job::People;
use crate::ledger::{ALL_STATES, GateAction, Job, JobState, Move};
use crate::service::events;
use crate::service::jobs::{self, ListQuery, PreviewFilter, PreviewRow};
use crate::service::{self, App};
use crate::t;
use crate::validate::RowAction;

/// Preview rows per page.
pub const PAGE: i64 = 50;
/// Jobs per page of the list.
const LIST_PAGE: i64 = 50;

pub fn routes() -> Router<Arc<App>> {
    Router::new()
        .route("/jobs", get(list))
        .route("/jobs/{id}", get(detail))
        .route("/jobs/{id}/{action}", post(act))
        .route("/console/jobs/states", get(states))
        .route("/console/jobs/{id}/status", get(status))
        .route("/console/events/stream", get(event_stream))
}

/// A form value, with the empty string meaning "not given".
fn given(v: &Option<String>) -> Option<&str> {
    v.as_deref().map(str::trim).filter(|s| !s.is_empty())
}

#[derive(Deserialize, Default)]
struct ListForm {
    module: Option<String>,
    state: Option<String>,
    mine: Option<String>,
    before: Option<String>,
}

async fn list(
    State(app): State<Arc<App>>,
    signed: Signed,
    Query(q): Query<ListForm>,
) -> PageResult {
    let caller = &signed.key;
    let module = given(&q.module).map(str::to_string);
    let state = match given(&q.state) {
        Some(s) => Some(JobState::parse(s).ok_or_else(|| {
            service::Error::invalid("state", format!("{s:?} is not a job state"))
        })?),
        None => None,
    };
    let mine = given(&q.mine).is_some();
    let query = ListQuery {
        module: module.clone(),
        state,
        mine,
        cursor: given(&q.before).map(str::to_string),
        limit: LIST_PAGE,
    };
    let page = jobs::list(&app, caller, query).await?;
    let (jobs, older) = (page.jobs, page.next);
    let names = app.names().await?;
    let people = People(&names);
    let ctx = signed.ctx(&app, Nav::Jobs);
    let modules: Vec<&str> = app
        .catalog
        .modules()
        .iter()
        .filter(|m| caller.covers(&m.key))
        .map(|m| m.key.as_str())
        .collect();
    let older_link = older.map(|id| {
        let mut params = vec![("before", id)];
        if let Some(m) = &module {
            params.push(("module", m.clone()));
        }
        if let Some(s) = state {
            params.push(("state", s.as_str().to_string()));
        }
        if mine {
            params.push(("mine", "1".to_string()));
        }
        format!(
            "/jobs?{}",
            serde_urlencoded::to_string(params).unwrap_or_default()
        )
    });
    let content = html! {
        div.page-head {
            h1 { (t!("jobs-title")) }
            a.btn.btn-primary href="/upload" { (t!("jobs-upload-a-file")) }
        }
        form.filters method="get" action="/jobs" aria-label=(t!("jobs-filter-label")) {
            div.field {
                label for="f-module" { (t!("jobs-module")) }
                select #f-module name="module" {
                    option value="" { (t!("jobs-all-modules")) }
                    @for m in &modules {
                        option value=(m) selected[module.as_deref() == Some(*m)] { (m) }
                    }
                }
            }
            div.field {
                label for="f-state" { (t!("jobs-state")) }
                select #f-state name="state" {
                    option value="" { (t!("jobs-all-states")) }
                    @for s in ALL_STATES {
                        option value=(s.as_str()) selected[state == Some(s)] { (layout::state_label(s)) }
                    }
                }
            }
            div.field.check {
                input #f-mine type="checkbox" name="mine" value="1" checked[mine];
                label for="f-mine" { (t!("jobs-only-mine")) }
            }
            button.btn type="submit" { (t!("jobs-filter")) }
        }
        @if jobs.is_empty() {
            p.empty { (t!("jobs-none-match")) " " a href="/upload" { (t!("jobs-upload-to-start")) } }
        } @else {
            div.table-wrap {
                table.jobs data-live-jobs="/console/jobs/states" {
                    caption.sr-only { (t!("jobs-caption")) }
                    thead {
                        tr {
                            th scope="col" { (t!("jobs-col-job")) }
                            th scope="col" { (t!("jobs-module")) }
                            th scope="col" { (t!("jobs-state")) }
                            th scope="col" .num { (t!("jobs-col-rows")) }
                            th scope="col" .num.col-errors { (t!("jobs-col-errors")) }
                            th scope="col" .col-file { (t!("jobs-col-file")) }
                            th scope="col" .col-who { (t!("jobs-col-submitted-by")) }
                            th scope="col" .col-time { (t!("jobs-col-created")) }
                        }
                    }
                    tbody {
                        @for j in &jobs {
                            tr data-job-id=(j.id) {
                                th scope="row" {
                                    a href=(format!("/jobs/{}", j.id)) { code { (short_id(&j.id)) } }
                                }
                                td { (j.module) }
                                td.state-cell { (badge(j.state)) }
                                td.num data-count="rows" { (count(j.counts.rows)) }
                                td.num.col-errors data-count="errors" { (count(j.counts.errors)) }
                                td.col-file { (j.file.name.as_deref().unwrap_or("—")) }
                                td.col-who { (person(&people.person(&j.submitter))) }
                                td.col-time { (ctx.when(&j.created_at)) }
                            }
                        }
                    }
                }
            }
            p.sr-only aria-live="polite" #live-status {}
            @if let Some(link) = older_link {
                p.pager { a.btn href=(link) { (t!("jobs-older")) } }
            }
        }
    };
    Ok(layout::page(&ctx, &t!("jobs-title"), content).into_response())
}

/// The end of a job id, enough to tell jobs apart at a glance.
fn short_id(id: &str) -> &str {
    let start = id.len().saturating_sub(10);
    id.get(start..).unwrap_or(id)
}

#[derive(Deserialize, Default)]
pub struct DetailQuery {
    action: Option<String>,
    warnings: Option<String>,
    offset: Option<i64>,
    done: Option<String>,
}

/// What the page says above everything after a move.
enum Notice {
    Done(String),
    Refused(Shown),
}

async fn detail(
    State(app): State<Arc<App>>,
    signed: Signed,
    Path(id): Path<String>,
    Query(q): Query<DetailQuery>,
) -> PageResult {
    let notice = match q.done.as_deref() {
        Some("approve") => Some(Notice::Done(t!("job-done-approve"))),
        Some("reject") => Some(Notice::Done(t!("job-done-reject"))),
        Some("cancel") => Some(Notice::Done(t!("job-done-cancel"))),
        Some("rollback") => Some(Notice::Done(t!("job-done-rollback"))),
        _ => None,
    };
    render_detail(&app, &signed, &id, &q, notice, StatusCode::OK).await
}

async fn render_detail(
    app: &App,
    signed: &Signed,
    id: &str,
    q: &DetailQuery,
    notice: Option<Notice>,
    status: StatusCode,
) -> PageResult {
    let job = jobs::get(app, &signed.key, id).await?;
    let module = app.module(&job.module)?.clone();
    let filter = PreviewFilter {
        action: given(&q.action).and_then(RowAction::parse),
        warned: given(&q.warnings) == Some("only"),
    };
    let total = match (filter.warned, filter.action) {
        (true, _) => job.counts.warnings,
        (_, Some(RowAction::Insert)) => job.counts.insert,
        (_, Some(RowAction::Update)) => job.counts.update,
        (_, Some(RowAction::Unchanged)) => job.counts.unchanged,
        (_, Some(RowAction::Error)) => job.counts.errors,
        (_, Some(RowAction::Excluded)) => job.counts.excluded,
        (_, None) => job.counts.rows - job.counts.excluded,
    };
    let last_page = ((total - 1).max(0) / PAGE) * PAGE;
    let offset = q.offset.unwrap_or(0).clamp(0, last_page);
    // A purged job's page says so where the preview was, and a revised
    // job's links to its revision, which has its rows (the API answers
    // their previews `410`).
    let (total, rows) = if job.purged_at.is_some() {
        (0, vec![])
    } else {
        match jobs::preview(app, &job, filter, offset, PAGE).await {
            Err(service::Error::Revised { .. }) => (0, vec![]),
            page => {
                let page = page?;
                (page.total, page.rows)
            }
        }
    };
    let names = app.names().await?;
    let people = People(&names);
    let events = jobs::events(app, &job).await?;
    let rule = service::gate::four_eyes(app, &job).await?;
    let ctx = signed.ctx(app, Nav::Jobs);
    let title = t!("job-title", module = &job.module, id = short_id(&job.id));
    let content = html! {
        nav.crumbs aria-label=(t!("job-breadcrumb")) {
            a href="/jobs" { (t!("jobs-title")) } " › " span { code { (job.id) } }
        }
        div #job-live data-job-status=(format!("/console/jobs/{}/status", job.id))
            data-job-id=(job.id) data-version=(job.version) data-work=(job.state.is_work()) {
            div.page-head {
                h1 { (t!("job-heading", module = &job.module)) " " (badge(job.state)) }
            }
            p.meta {
                (t!("job-meta-file")) " " strong { (job.file.name.clone().unwrap_or_else(|| t!("job-meta-no-name"))) }
                " · " (job.file.format.as_str().to_uppercase())
                " · " (layout::bytes(job.file.bytes))
                " · " (t!("job-meta-into")) " " code { (job.table) }
                " · " (t!("job-meta-mode")) " " strong { (job.mode.as_str()) }
                " · " (t!("job-meta-on-error")) " " strong { (job.on_error.as_str()) }
                " · " (t!("job-meta-submitted-by")) " " (person(&people.person(&job.submitter)))
                " · " (ctx.when(&job.created_at))
            }
            @if job.simulated {
                p.note { (t!("job-simulated")) }
            }
            @if let Some(at) = &job.purged_at {
                p.note { (t!("job-purged", when = moment(&ctx, at))) }
            }
            @if let Some(to) = &job.revised_as {
                p.note #revised-as {
                    (t!("job-revised-as")) " "
                    a href=(format!("/jobs/{to}")) { (to) }
                }
            }
            div.alert.alert-info #job-changed role="status" hidden {
                span data-changed-text {} " "
                a href=(format!("/jobs/{}", job.id)) { (t!("job-reload")) }
            }
            @match &notice {
                Some(Notice::Done(text)) => div.alert.alert-ok role="status" { (text) },
                Some(Notice::Refused(p)) => div.alert.alert-error role="alert" {
                    strong { (p.title) } ": " (p.detail)
                },
                None => {},
            }
            @if job.state.is_work() {
                div.alert.alert-info role="status" {
                    (working_text(job.state)) " "
                    (t!("job-progress-before")) span data-progress-rows { (count(job.counts.rows)) } (t!("job-progress-after"))
                }
            }
            (counts_panel(&job))
            (problem_panel(&job))
            // A job that failed is there to be fixed; one at the gate is
            // there to be decided, so its Fix comes after the decision.
            @if job.state != JobState::AwaitingApproval { (fix_panel(app, signed, &job)) }
            (warnings_panel(&job))
            (revision_panel(&job, &people))
            (gate_panel(&ctx, &job, &people, &events))
            (actions_panel(app, signed, &job, &ctx, &rule))
            @if job.state == JobState::AwaitingApproval { (fix_panel(app, signed, &job)) }
        }
        (preview_section(ctx.zone, &job, &module, filter, offset, total, &rows))
        (timeline(&ctx, &events, &people))
    };
    Ok((status, layout::page(&ctx, &title, content)).into_response())
}

/// A time in a sentence, the reader's way.
fn moment(ctx: &Ctx, t: &chrono::DateTime<chrono::Utc>) -> String {
    super::i18n::moment_in(super::i18n::current(), t, ctx.zone)
}

fn working_text(s: JobState) -> String {
    match s {
        JobState::Validating => t!("job-working-validating"),
        JobState::Committing => t!("job-working-committing"),
        _ => t!("job-working-undoing"),
    }
}

fn counts_panel(job: &Job) -> Markup {
    let c = &job.counts;
    let mut items = vec![
        (t!("count-rows"), c.rows, ""),
        (t!("count-valid"), c.valid, ""),
        (t!("count-errors"), c.errors, "stat-error"),
        (t!("count-insert"), c.insert, "stat-insert"),
        (t!("count-update"), c.update, "stat-update"),
        (t!("count-unchanged"), c.unchanged, ""),
    ];
    if c.warnings > 0 {
        items.push((t!("count-warnings"), c.warnings, "stat-warn"));
    }
    if c.excluded > 0 {
        items.push((t!("count-excluded"), c.excluded, ""));
    }
    html! {
        dl.stats aria-label=(t!("job-counts")) {
            @for (label, n, class) in items {
                div class=(format!("stat {class}")) {
                    dt { (label) }
                    dd { (count(n)) }
                }
            }
        }
    }
}

fn problem_panel(job: &Job) -> Markup {
    let Some(p) = &job.problem else {
        return html! {};
    };
    let rows = p.rows.as_deref().unwrap_or_default();
    let (title, detail) = notes::problem(p);
    html! {
        section.alert.alert-error aria-labelledby="problem-title" {
            h2 #problem-title { (title) }
            p { (detail) " " span.muted { "(" code { (p.code.as_str()) } ")" } }
            @if !rows.is_empty() {
                div.table-wrap {
                    table.small {
                        (layout::table_head(&[&t!("col-row"), &t!("col-key"), &t!("col-why")]))
                        tbody {
                            @for r in rows {
                                tr {
                                    td { (r.row) }
                                    td { code { (plain(&r.key)) } }
                                    td { (r.reason) }
                                }
                            }
                        }
                    }
                }
            }
        }
    }
}

fn warnings_panel(job: &Job) -> Markup {
    if job.warnings.is_empty() {
        return html! {};
    }
    html! {
        section.alert.alert-warn aria-label=(t!("count-warnings")) {
            h2 { (t!("count-warnings")) }
            ul {
                @for w in &job.warnings {
                    li { (notes::warning(w)) }
                }
            }
        }
    }
}

fn gate_panel(ctx: &Ctx, job: &Job, people: &People, events: &[Event]) -> Markup {
    // A rollback request's reason is what its approver decides on.
    let reason = events
        .iter()
        .rev()
        .find(|e| e.event == Move::Rollback.as_str())
        .and_then(|e| e.comment.as_deref());
    html! {
        @if let Some(g) = &job.gate {
            section.panel aria-labelledby="gate-title" {
                h2 #gate-title { "Human-Gate" }
                p {
                    @if g.action == GateAction::Rollback { (t!("gate-rollback-requested-by")) } @else { (t!("gate-commit-requested-by")) }
                    " " (person(&people.person(&g.requested_by)))
                    " · " (ctx.when(&g.requested_at))
                }
                @if g.action == GateAction::Rollback && let Some(r) = reason {
                    blockquote.reason { (r) }
                }
                @if !job.decisions.is_empty() {
                    ul.decisions {
                        @for d in &job.decisions {
                            li {
                                strong { (decision_text(d.action, d.decision)) }
                                @if let Some(by) = &d.by { " " (t!("gate-by")) " " (person(&people.person(by))) }
                                @if let Some(issuer) = &d.issued_by {
                                    " " span.issued-by { "(" (t!("gate-key-issued-by")) " " (person(&people.person(issuer))) ")" }
                                }
                                " · " (ctx.when(&d.at))
                                @if let Some(c) = &d.comment { blockquote { (c) } }
                            }
                        }
                    }
                }
            }
        }
    }
}

/// The gate moves a person can be offered, in the order they are shown.
const OFFERED: [Move; 4] = PERSONS_MOVES;

/// What the button says and what the confirmation explains.
fn move_text(job: &Job, m: Move) -> (String, String, String) {
    let rollback = job.state == JobState::RollbackPending;
    let sim = if job.simulated {
        format!(" {}", t!("move-simulated"))
    } else {
        String::new()
    };
    match (m, rollback) {
        (Move::Approve, false) => {
            let c = &job.counts;
            let mut explain = t!(
                "move-approve-explain",
                table = &job.table,
                insert = c.insert,
                update = c.update,
                unchanged = c.unchanged
            );
            if c.errors > 0 {
                explain.push_str(&t!("move-approve-errors", errors = c.errors));
            }
            if c.warnings > 0 {
                explain.push_str(&t!("move-approve-warnings", warnings = c.warnings));
            }
            explain.push_str(&t!("move-approve-end"));
            explain.push_str(&sim);
            (t!("move-approve"), explain, t!("move-approve-confirm"))
        }
        (Move::Approve, true) => (
            t!("move-approve-rollback"),
            t!("move-approve-rollback-explain", table = &job.table) + &sim,
            t!("move-approve-rollback-confirm"),
        ),
        (Move::Reject, false) => (
            t!("move-reject"),
            t!("move-reject-explain"),
            t!("move-reject-confirm"),
        ),
        (Move::Reject, true) => (
            t!("move-reject-rollback"),
            t!("move-reject-rollback-explain"),
            t!("move-reject-rollback-confirm"),
        ),
        (Move::Cancel, _) => (
            t!("move-cancel"),
            t!("move-cancel-explain"),
            t!("move-cancel-confirm"),
        ),
        _ => (
            t!("move-rollback"),
            t!("move-rollback-explain"),
            t!("move-rollback-confirm"),
        ),
    }
}

/// A decision of the gate in words (`commit approved`).
fn decision_text(action: GateAction, decision: crate::ledger::job::DecisionKind) -> String {
    t!(
        "gate-decision",
        action = action.as_str(),
        decision = decision.as_str()
    )
}

/// Reject and rollback need a reason the other person can read.
fn needs_comment(m: Move) -> bool {
    service::gate::wants_reason(m)
}

fn actions_panel(
    app: &App,
    signed: &Signed,
    job: &Job,
    ctx: &Ctx,
    rule: &gate::FourEyes,
) -> Markup {
    let caller = &signed.key;
    let mut offered = Vec::new();
    let mut four_eyes = false;
    let mut approver_needed = false;
    // Past the rollback window the service refuses a rollback
    // (`rollback_expired`): not offered, said instead.
    let mut rollback_closed = None;
    for m in OFFERED {
        match gate::authorize(job, m, caller, rule) {
            Ok(_) if m == Move::Rollback && service::gate::rollback_closed(app, job).is_some() => {
                rollback_closed = service::gate::rollback_closed(app, job);
            }
            Ok(_) => offered.push(m),
            Err(Refusal::SelfApproval) => four_eyes = true,
            Err(Refusal::Forbidden(_)) if matches!(m, Move::Approve) => {
                approver_needed = matches!(
                    job.state,
                    JobState::AwaitingApproval | JobState::RollbackPending
                )
            }
            Err(_) => {}
        }
    }
    if offered.is_empty() && !four_eyes && !approver_needed && rollback_closed.is_none() {
        return html! {};
    }
    html! {
        section.panel.actions aria-labelledby="actions-title" {
            h2 #actions-title { (t!("actions-title")) }
            @if four_eyes {
                p.note { (t!("actions-four-eyes")) }
            }
            @if approver_needed {
                p.note { (t!("actions-approver-needed")) }
            }
            @if let Some(closed) = &rollback_closed {
                p.note { (t!("actions-rollback-closed", when = moment(ctx, closed))) }
            }
            div.action-list {
                @for m in &offered {
                    @let (label, explain, confirm) = move_text(job, *m);
                    @let name = m.as_str();
                    details class=(format!("action action-{name}")) {
                        summary class=(if matches!(m, Move::Approve) { "btn btn-primary" } else if matches!(m, Move::Reject | Move::Cancel) { "btn btn-danger" } else { "btn" }) {
                            (label)
                        }
                        form method="post" action=(format!("/jobs/{}/{name}", job.id)) {
                            input type="hidden" name="_csrf" value=(signed.csrf);
                            input type="hidden" name="etag" value=(job.etag());
                            p { (explain) }
                            label for=(format!("comment-{name}")) {
                                @if needs_comment(*m) { (t!("actions-comment-required")) } @else { (t!("actions-comment-optional")) }
                            }
                            textarea id=(format!("comment-{name}")) name="comment" rows="2" maxlength="2000"
                                required[needs_comment(*m)] {}
                            button type="submit" class=(if matches!(m, Move::Approve) { "btn btn-primary" } else { "btn btn-danger" })
                                data-confirm-button { (confirm) }
                        }
                    }
                }
            }
        }
    }
}

/// A JSON value as plain text (strings without quotes).
pub(super) fn plain(v: &JsonValue) -> String {
    match v {
        JsonValue::String(s) => s.clone(),
        JsonValue::Null => String::new(),
        other => other.to_string(),
    }
}

fn cell_value(v: Option<&JsonValue>) -> Markup {
    match v {
        None | Some(JsonValue::Null) => html! { span.null { (t!("empty-value")) } },
        Some(v) => html! { (plain(v)) },
    }
}

/// The columns a page of rows shows: the module's columns the rows carry,
/// in catalog order.
fn shown_columns<'a>(module: &'a Module, rows: &[PreviewRow]) -> Vec<&'a str> {
    module
        .columns
        .iter()
        .map(|c| c.name.as_str())
        .filter(|name| {
            rows.iter().any(|r| {
                r.row.vals.contains_key(*name)
                    || r.row.before.as_ref().is_some_and(|b| b.contains_key(*name))
            })
        })
        .collect()
}

fn preview_link(job: &Job, filter: PreviewFilter, offset: i64) -> String {
    let mut params: Vec<(&str, String)> = Vec::new();
    if let Some(a) = filter.action {
        params.push(("action", a.as_str().to_string()));
    }
    if filter.warned {
        params.push(("warnings", "only".to_string()));
    }
    if offset > 0 {
        params.push(("offset", offset.to_string()));
    }
    let q = serde_urlencoded::to_string(params).unwrap_or_default();
    if q.is_empty() {
        format!("/jobs/{}#preview", job.id)
    } else {
        format!("/jobs/{}?{q}#preview", job.id)
    }
}

fn preview_section(
    zone: Tz,
    job: &Job,
    module: &Module,
    filter: PreviewFilter,
    offset: i64,
    total: i64,
    rows: &[PreviewRow],
) -> Markup {
    let c = &job.counts;
    let by = |action| PreviewFilter {
        action,
        warned: false,
    };
    let mut tabs = vec![
        (by(None), t!("tab-all"), c.rows - c.excluded),
        (by(Some(RowAction::Insert)), t!("count-insert"), c.insert),
        (by(Some(RowAction::Update)), t!("count-update"), c.update),
        (
            by(Some(RowAction::Unchanged)),
            t!("count-unchanged"),
            c.unchanged,
        ),
        (by(Some(RowAction::Error)), t!("count-errors"), c.errors),
    ];
    if c.excluded > 0 {
        let excluded = by(Some(RowAction::Excluded));
        tabs.push((excluded, t!("count-excluded"), c.excluded));
    }
    if c.warnings > 0 {
        let warned = PreviewFilter {
            action: None,
            warned: true,
        };
        tabs.push((warned, t!("count-warnings"), c.warnings));
    }
    let cols = shown_columns(module, rows);
    let first = if total == 0 { 0 } else { offset + 1 };
    let last = offset + rows.len() as i64;
    let last_page = ((total - 1).max(0) / PAGE) * PAGE;
    html! {
        section #preview aria-labelledby="preview-title" {
            h2 #preview-title { (t!("preview-title")) }
            nav.tabs aria-label=(t!("preview-tabs")) {
                @for (a, label, n) in tabs {
                    @if a == filter {
                        a href=(preview_link(job, a, 0)) aria-current="true" { (label) " " span.tab-count { (count(n)) } }
                    } @else {
                        a href=(preview_link(job, a, 0)) { (label) " " span.tab-count { (count(n)) } }
                    }
                }
            }
            @if rows.is_empty() {
                p.empty {
                    @if job.purged_at.is_some() { (t!("preview-purged")) }
                    @else if job.revised_as.is_some() && job.counts.rows > 0 { (t!("preview-revised")) }
                    @else if job.state == JobState::Validating { (t!("preview-wait")) }
                    @else if job.state == JobState::Invalid { (t!("preview-unreadable")) }
                    @else { (t!("preview-no-rows")) }
                }
            } @else {
                div.table-wrap tabindex="0" role="region" aria-label=(t!("preview-rows")) {
                    table.preview {
                        thead {
                            tr {
                                th scope="col" { (t!("col-row")) }
                                th scope="col" { (t!("col-action")) }
                                @for col in &cols { th scope="col" { (col) } }
                                th scope="col" { (t!("col-notes")) }
                            }
                        }
                        tbody {
                            @for r in rows { (preview_row(module, zone, r, &cols)) }
                        }
                    }
                }
                nav.pager aria-label=(t!("preview-pages")) {
                    span.range { (t!("preview-range", first = count(first), last = count(last), total = count(total))) }
                    @if offset > 0 {
                        a.btn href=(preview_link(job, filter, 0)) { (t!("pager-first")) }
                        a.btn href=(preview_link(job, filter, (offset - PAGE).max(0))) rel="prev" { (t!("pager-previous")) }
                    }
                    @if last < total {
                        a.btn href=(preview_link(job, filter, offset + PAGE)) rel="next" { (t!("pager-next")) }
                        a.btn href=(preview_link(job, filter, last_page)) { (t!("pager-last")) }
                    }
                }
            }
        }
    }
}

fn preview_row(module: &Module, zone: Tz, r: &PreviewRow, cols: &[&str]) -> Markup {
    let row = &r.row;
    let mut by_col: HashMap<&str, Vec<String>> = HashMap::new();
    let mut warned: HashMap<&str, Vec<String>> = HashMap::new();
    let mut row_notes: Vec<String> = Vec::new();
    for (list, place) in [(&r.errors, &mut by_col), (&r.warnings, &mut warned)] {
        for e in list {
            let said = notes::row_note(module, e);
            match e.column.as_deref().filter(|c| cols.contains(c)) {
                Some(c) => place.entry(c).or_default().push(said),
                None => row_notes.push(said),
            }
        }
    }
    // A good value the reader's way; a failed cell exactly as the file had it.
    let shown = |col: &str, v: Option<&JsonValue>| {
        let ty = module.columns.iter().find(|c| c.name == col).map(|c| c.ty);
        match v {
            Some(v) if !v.is_null() => notes::value(ty, v, zone),
            other => cell_value(other),
        }
    };
    html! {
        tr class=(format!("row-{}", row.action.as_str())) {
            th scope="row" { (row.row_no) }
            td { span class=(format!("row-action row-action-{}", row.action.as_str())) { (action_name(row.action)) } }
            @for col in cols {
                @let after = row.vals.get(*col);
                @let before = row.before.as_ref().and_then(|b| b.get(*col));
                @let was = r.fixed.iter().find(|(c, _)| c == col).map(|(_, was)| was);
                @let fixed = was.is_some();
                @let mark = was.map(|w| fixed_mark(w.as_deref()));
                @if let Some(msgs) = by_col.get(col) {
                    td.cell-error.cell-fixed[fixed] {
                        (cell_value(after))
                        @for m in msgs { span.cell-msg { (m) } }
                        @if let Some(m) = &mark { (m) }
                    }
                } @else if let Some(msgs) = warned.get(col) {
                    td.cell-warn.cell-fixed[fixed] {
                        (cell_value(after))
                        @for m in msgs { span.cell-msg { (m) } }
                        @if let Some(m) = &mark { (m) }
                    }
                } @else if row.action == RowAction::Update && row.before.as_ref().is_some_and(|b| b.contains_key(*col)) && before != after {
                    td.cell-changed.cell-fixed[fixed] {
                        span.sr-only { (t!("preview-was")) " " }
                        del { (shown(col, before)) }
                        span aria-hidden="true" { " → " }
                        span.sr-only { ", " (t!("preview-becomes")) " " }
                        ins { (shown(col, after)) }
                        @if let Some(m) = &mark { (m) }
                    }
                } @else {
                    td.cell-fixed[fixed] { (shown(col, after)) @if let Some(m) = &mark { (m) } }
                }
            }
            td.notes {
                @for n in &row_notes { span.cell-msg { (n) } }
            }
        }
    }
}

/// What the file said in a cell a revision fixed (the value shown is the
/// fixed one).
fn fixed_mark(was: Option<&str>) -> Markup {
    html! {
        span.cell-was {
            (t!("preview-fixed-was")) " "
            @match was {
                Some(w) if !w.is_empty() => del { (w) },
                _ => span.null { (t!("empty-value")) },
            }
        }
    }
}

/// Where a job that can be revised is fixed: offered to keys that may
/// upload to its module (as the service requires).
fn fix_panel(app: &App, signed: &Signed, job: &Job) -> Markup {
    if !super::fix::offered(app, &signed.key, job) {
        return html! {};
    }
    let waiting = job.state == JobState::AwaitingApproval;
    html! {
        section.panel.fix-offer aria-labelledby="fix-offer-title" {
            h2 #fix-offer-title { (t!("fix-offer-title")) }
            p {
                @if waiting { (t!("fix-offer-waiting")) } @else { (t!("fix-offer-text")) }
            }
            a #fix-button class=(if waiting { "btn" } else { "btn btn-primary" })
                href=(format!("/jobs/{}/fix", job.id)) { (t!("fix-offer-button")) }
        }
    }
}

/// Most fixed cells and excluded rows the revision panel lists one by one.
const LISTED: usize = 100;

/// What a revision changed, for the approver: whose revision of which job,
/// the mapping in force, each fixed cell as was → now, the excluded rows,
/// and everyone who revised the upload.
fn revision_panel(job: &Job, people: &People) -> Markup {
    let (Some(r), Some(of)) = (&job.revision, &job.revision_of) else {
        return html! {};
    };
    let excluded_link = preview_link(
        job,
        PreviewFilter {
            action: Some(RowAction::Excluded),
            warned: false,
        },
        0,
    );
    let revisers: Vec<_> = r.revisers.iter().map(|k| people.person(k)).collect();
    html! {
        section.panel.revision #revision aria-labelledby="revision-title" {
            h2 #revision-title {
                (t!("revision-heading", number = u64::from(r.number))) " "
                a #revision-of href=(format!("/jobs/{of}")) { code { (of) } } " "
                (t!("gate-by")) " " (person(&people.person(&r.by)))
            }
            @if let Some(c) = &r.comment { blockquote #revision-comment { (c) } }
            h3 { (t!("revision-mapping")) }
            @if r.mapping.is_empty() {
                p.muted #revision-mapping { (t!("revision-mapping-none")) }
            } @else {
                ul #revision-mapping {
                    @for (header, column) in &r.mapping {
                        li {
                            code { (header) } span aria-hidden="true" { " → " } span.sr-only { " " (t!("revision-goes-to")) " " }
                            @match column {
                                Some(c) => code { (c) },
                                None => em { (t!("revision-ignored")) },
                            }
                        }
                    }
                }
            }
            h3 { (t!("revision-fixes", n = r.fixes.len())) }
            @if !r.fixes.is_empty() {
                ul #revision-fixes {
                    @for f in r.fixes.iter().take(LISTED) {
                        li {
                            (t!("revision-cell", row = f.row)) " · " code { (f.column) } ": "
                            span.sr-only { (t!("preview-was")) " " }
                            @match f.was.as_deref() {
                                Some(w) if !w.is_empty() => del { (w) },
                                Some(_) => span.null { (t!("empty-value")) },
                                None => span.muted { (t!("revision-was-unread")) },
                            }
                            span aria-hidden="true" { " → " }
                            span.sr-only { ", " (t!("preview-becomes")) " " }
                            @match f.value.as_deref() {
                                Some(v) => ins { (v) },
                                None => span.null { (t!("empty-value")) },
                            }
                        }
                    }
                }
                @if r.fixes.len() > LISTED {
                    p.muted { (t!("revision-more", n = r.fixes.len() - LISTED)) }
                }
            }
            h3 { (t!("revision-excluded", n = r.exclude.len())) }
            @if !r.exclude.is_empty() {
                p #revision-excluded {
                    (t!("revision-excluded-rows")) " "
                    (r.exclude.iter().take(LISTED).map(u64::to_string).collect::<Vec<_>>().join(", "))
                    @if r.exclude.len() > LISTED { " …" }
                    " · " a href=(excluded_link) { (t!("revision-excluded-see")) }
                }
            }
            p #revision-revisers {
                (t!("revision-revisers")) " "
                @for (i, p) in revisers.iter().enumerate() {
                    @if i > 0 { ", " }
                    (person(p))
                }
            }
        }
    }
}

fn event_label(e: &str) -> String {
    match e {
        "upload" => t!("event-upload"),
        "checked" => t!("event-checked"),
        "file_failure" => t!("event-file_failure"),
        "row_errors" => t!("event-row_errors"),
        "approve" => t!("event-approve"),
        "reject" => t!("event-reject"),
        "cancel" => t!("event-cancel"),
        "expire" => t!("event-expire"),
        "written" => t!("event-written"),
        "commit_failed" => t!("event-commit_failed"),
        "rollback" => t!("event-rollback"),
        "undone" => t!("event-undone"),
        "rollback_conflict" => t!("event-rollback_conflict"),
        "gave_up" => t!("event-gave_up"),
        "interrupted" => t!("event-interrupted"),
        "purged" => t!("event-purged"),
        "revised" => t!("event-revised"),
        _ => t!("event-other"),
    }
}

/// A row's action in words.
fn action_name(a: RowAction) -> String {
    match a {
        RowAction::Insert => t!("action-insert"),
        RowAction::Update => t!("action-update"),
        RowAction::Unchanged => t!("action-unchanged"),
        RowAction::Error => t!("action-error"),
        RowAction::Excluded => t!("action-excluded"),
    }
}

fn timeline(ctx: &Ctx, events: &[Event], people: &People) -> Markup {
    html! {
        section #timeline aria-labelledby="timeline-title" {
            h2 #timeline-title { (t!("timeline-title")) }
            ol.timeline {
                @for e in events {
                    li {
                        div.tl-head {
                            strong { (event_label(&e.event)) }
                            " · " (ctx.when(&e.at))
                            @if let Some(a) = &e.actor { " · " (person(&people.person(a))) }
                            @else { " · " span.muted { (t!("timeline-the-service")) } }
                        }
                        div.tl-move {
                            @if let Some(from) = e.from_state.as_deref().and_then(JobState::parse) {
                                (badge(from)) span aria-hidden="true" { " → " } span.sr-only { " " (t!("timeline-to")) " " }
                            }
                            @if let Some(to) = JobState::parse(&e.to_state) { (badge(to)) }
                        }
                        @if let Some(c) = &e.comment { blockquote { (c) } }
                    }
                }
            }
        }
    }
}

#[derive(Deserialize)]
struct ActForm {
    #[serde(rename = "_csrf")]
    csrf: String,
    etag: String,
    #[serde(default)]
    comment: Option<String>,
}

async fn act(
    State(app): State<Arc<App>>,
    signed: Signed,
    Path((id, action)): Path<(String, String)>,
    headers: HeaderMap,
    Form(form): Form<ActForm>,
) -> PageResult {
    signed.check_form(&headers, &form.csrf)?;
    let event = OFFERED
        .into_iter()
        .find(|m| m.as_str() == action)
        .ok_or_else(|| service::Error::not_found("action", &action))?;
    let request = service::gate::MoveRequest {
        job_id: &id,
        event,
        if_match: Some(&form.etag),
        comment: form.comment.as_deref(),
        reason_required: true,
    };
    let refused = service::gate::make_move(&app, &signed.key, request)
        .await
        .err()
        .map(Shown::from);
    match refused {
        None => Ok(Redirect::to(&format!("/jobs/{id}?done={action}")).into_response()),
        Some(p) => {
            let status = p.status;
            render_detail(
                &app,
                &signed,
                &id,
                &DetailQuery::default(),
                Some(Notice::Refused(p)),
                status,
            )
            .await
        }
    }
}

fn status_view(job: &Job) -> JsonValue {
    json!({
        "id": job.id,
        "state": job.state.as_str(),
        "label": layout::state_label(job.state),
        "version": job.version,
        "work": job.state.is_work(),
        "counts": job.counts,
    })
}

/// `GET /console/jobs/{id}/status`: a job's state and counts, for the
/// script that follows a job being worked on.
async fn status(
    State(app): State<Arc<App>>,
    signed: Signed,
    Path(id): Path<String>,
) -> ScriptResult<Json<JsonValue>> {
    let job = jobs::get(&app, &signed.key, &id).await?;
    Ok(Json(status_view(&job)))
}

#[derive(Deserialize)]
struct StatesQuery {
    ids: String,
}

/// `GET /console/jobs/states?ids=a,b`: the states of the listed jobs the
/// caller may see, for the job list to update without a reload.
async fn states(
    State(app): State<Arc<App>>,
    signed: Signed,
    Query(q): Query<StatesQuery>,
) -> ScriptResult<Response> {
    let ids: Vec<String> = q
        .ids
        .split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .take(200)
        .map(str::to_string)
        .collect();
    let jobs = jobs::some(&app, &signed.key, &ids).await?;
    let list: Vec<JsonValue> = jobs.iter().map(status_view).collect();
    Ok(Json(json!({"jobs": list})).into_response())
}

#[derive(Deserialize)]
struct StreamQuery {
    after: Option<String>,
}

/// `GET /console/events/stream`: the events the signed-in key may see,
/// live (the stream of `GET /api/events/stream`, with the session instead
/// of `X-API-Key`), for the job list and the job page to follow.
async fn event_stream(
    State(app): State<Arc<App>>,
    signed: Signed,
    headers: HeaderMap,
    Query(q): Query<StreamQuery>,
) -> ScriptResult<Response> {
    let resume = headers.get("last-event-id").and_then(|v| v.to_str().ok());
    let after = events::start(&app, resume, q.after.as_deref()).await?;
    let heartbeat = Duration::from_millis(app.settings.events_heartbeat_ms.max(10));
    let stream = events::follow(app, signed.key, after).map(|e| {
        let event = SseEvent::default().id(e.id.clone()).event(e.ty.clone());
        Ok::<_, Infallible>(event.json_data(&e).unwrap_or_default())
    });
    Ok(Sse::new(stream)
        .keep_alive(KeepAlive::new().interval(heartbeat))
        .into_response())
}
