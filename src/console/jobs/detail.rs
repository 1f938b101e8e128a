//! One job's page, and a gate move made from it (a refused move shows the
//! page again with the refusal).

use std::sync::Arc;

use axum::extract::{Form, Path, Query, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Redirect};
use maud::{Markup, html};
use serde::Deserialize;

use super::moves::{OFFERED, actions_panel};
use super::panels::{
    counts_panel, gate_panel, problem_panel, revision_panel, timeline, warnings_panel, working_text,
};
use super::preview::{PAGE, Place, preview_section};
use super::{given, moment, short_id};
use crate::console::layout::{self, Nav, badge, count, person};
use crate::console::session::Signed;
use crate::console::{PageResult, Shown};
use crate::ids::JobId;
use crate::ledger::job::People;
use crate::ledger::{Job, JobState};
use crate::service::jobs::{self, PreviewFilter};
use crate::service::{self, App};
use crate::t;
use crate::validate::RowAction;

#[derive(Deserialize, Default)]
pub struct DetailQuery {
    /// A workbook job's part shown (its module); the first when absent.
    part: Option<String>,
    action: Option<String>,
    warnings: Option<String>,
    normalized: Option<String>,
    offset: Option<i64>,
    done: Option<String>,
}

/// What the page says above everything after a move.
enum Notice {
    Done(String),
    Refused(Shown),
}

pub(super) async fn detail(
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
    let id = jobs::parse_id(&id)?;
    render_detail(&app, &signed, &id, &q, notice, StatusCode::OK).await
}

async fn render_detail(
    app: &App,
    signed: &Signed,
    id: &JobId,
    q: &DetailQuery,
    notice: Option<Notice>,
    status: StatusCode,
) -> PageResult {
    let job = jobs::get(app, &signed.key, id).await?;
    // The rows shown: the job's, or a workbook's part's (a tab each).
    let part = job.is_workbook().then(|| {
        let wanted = given(&q.part);
        (job.parts.iter())
            .find(|p| Some(p.module.as_str()) == wanted)
            .or(job.parts.first())
            .map(|p| p.module.to_string())
    });
    let part = part.flatten();
    let shown = match &part {
        Some(p) => {
            service::parts::row_jobs(app, &job, Some(p))
                .await?
                .remove(0)
                .1
        }
        None => job.clone(),
    };
    let module = match &shown.module {
        Some(m) => Some(app.module(m.as_str())?.clone()),
        None => None,
    };
    let place = Place {
        job: &job.id,
        part: part.as_deref(),
    };
    let filter = PreviewFilter {
        action: given(&q.action).and_then(RowAction::parse),
        warned: given(&q.warnings) == Some("only"),
        normalized: given(&q.normalized) == Some("only"),
    };
    let c = &shown.counts;
    let total = match (filter.warned, filter.action) {
        _ if filter.normalized => c.normalized,
        (true, _) => c.warnings,
        (_, Some(RowAction::Insert)) => c.insert,
        (_, Some(RowAction::Update)) => c.update,
        (_, Some(RowAction::Unchanged)) => c.unchanged,
        (_, Some(RowAction::Error)) => c.errors,
        (_, Some(RowAction::Excluded)) => c.excluded,
        (_, None) => c.rows - c.excluded,
    };
    let last_page = ((total - 1).max(0) / PAGE) * PAGE;
    let offset = q.offset.unwrap_or(0).clamp(0, last_page);
    // A purged job's page says so where the preview was, and a revised
    // job's links to its revision, which has its rows (the API answers
    // their previews `410`).
    let (total, rows) = if job.purged_at.is_some() || module.is_none() {
        (0, vec![])
    } else {
        match jobs::preview(app, &shown, filter, offset, PAGE).await {
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
    let rule = service::gate::four_eyes(app, &job, &signed.key).await?;
    let ctx = signed.ctx(app, Nav::Jobs);
    let module_name = (job.modules().iter())
        .map(|m| layout::module_name_of(app, m.as_str()))
        .collect::<Vec<_>>()
        .join(" + ");
    let title = t!(
        "job-title",
        module = module_name.as_str(),
        id = short_id(&job.id)
    );
    let content = html! {
        nav.crumbs aria-label=(t!("job-breadcrumb")) {
            a href="/jobs" { (t!("jobs-title")) } " › " span { code { (job.id) } }
        }
        div #job-live data-job-status=(format!("/console/jobs/{}/status", job.id))
            data-job-id=(job.id) data-version=(job.version) data-work=(job.state.is_work()) {
            div.page-head {
                h1 { (t!("job-heading", module = module_name.as_str())) " " (badge(job.state)) }
            }
            p.meta {
                (t!("job-meta-file")) " " strong { (job.file.name.clone().unwrap_or_else(|| t!("job-meta-no-name"))) }
                " · " (job.file.format.as_str().to_uppercase())
                " · " (layout::bytes(job.file.bytes))
                " · " (t!("job-meta-into")) " "
                @for (i, table) in tables(&job).iter().enumerate() {
                    @if i > 0 { ", " }
                    code { (table) }
                }
                " · " (t!("job-meta-mode")) " " strong { (t!("job-mode", mode = job.mode.as_str())) }
                " · " (t!("job-meta-on-error")) " " strong { (t!("job-on-error", on_error = job.on_error.as_str())) }
                " · " (t!("job-meta-submitted-by")) " " (person(&people.person(&job.submitter)))
                " · " (ctx.when(&job.created_at))
                @if let (Some(v), Some(key)) = (job.rules_version, &job.module) {
                    " · " a #rules-version href=(format!("/modules/{key}/rules?version={v}")) {
                        (t!("job-meta-rules-version", version = v))
                    }
                }
            }
            // The banner of every page says it while the service simulates.
            @if job.simulated && !ctx.simulate {
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
        @if let Some(part) = &part { (part_tabs(app, &job, part)) }
        @if let Some(module) = &module {
            (preview_section(ctx.zone, &shown, place, module, filter, offset, total, &rows))
        }
        (timeline(&ctx, &events, &people))
    };
    Ok((status, layout::page(&ctx, &title, content)).into_response())
}

/// The tables a job writes: its module's, or each part's of a workbook.
fn tables(job: &Job) -> Vec<&str> {
    if job.is_workbook() {
        job.parts.iter().map(|p| p.table.as_str()).collect()
    } else {
        vec![job.table.as_str()]
    }
}

/// A workbook job's parts as tabs (API.md section 16), each with its
/// module, sheet and counts; the one shown is marked.
fn part_tabs(app: &App, job: &Job, shown: &str) -> Markup {
    html! {
        nav.tabs.part-tabs #parts aria-label=(t!("job-parts")) {
            @for p in &job.parts {
                @let href = format!("/jobs/{}?part={}#preview", job.id, p.module);
                @let current = p.module.as_str() == shown;
                a href=(href) aria-current=[current.then_some("true")] data-part=(p.module) {
                    (layout::module_name_of(app, p.module.as_str()))
                    " " span.tab-count { (count(p.counts.rows)) }
                    @if p.counts.errors > 0 {
                        " " span.tab-count.tab-errors title=(t!("count-errors")) { "⚠ " (count(p.counts.errors)) }
                    }
                    " " small.part-sheet { (t!("job-part-sheet", sheet = p.sheet.as_str())) }
                }
            }
        }
    }
}

/// Where a job that can be revised is fixed: offered to keys that may
/// upload to its module (as the service requires).
fn fix_panel(app: &App, signed: &Signed, job: &Job) -> Markup {
    if !service::revisions::may_revise(app, &signed.key, job) {
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

#[derive(Deserialize)]
pub(super) struct ActForm {
    #[serde(rename = "_csrf")]
    csrf: String,
    etag: String,
    #[serde(default)]
    comment: Option<String>,
}

pub(super) async fn act(
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
    let id = jobs::parse_id(&id)?;
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
