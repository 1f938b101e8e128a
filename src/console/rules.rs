//! A module's rules (API.md section 14) as people read and change them:
//! the set in force or at an older version with who proposed and approved
//! it, the version history and the module's proposals; a form for admins
//! to propose a whole new set; and a proposal's page with what it changes
//! and the decision for another approver. The work is the service's
//! ([`crate::service::rules`]): four-eyes and the module's scope are its.

use std::sync::Arc;

use axum::Router;
use axum::extract::{Form, Path, Query, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Redirect};
use axum::routing::{get, post};
use maud::{Markup, html};
use serde::Deserialize;

use super::layout::{self, Ctx, Nav, person};
use super::session::{DecideForm, Signed};
use super::{PageResult, Shown};
use crate::keys::Role;
use crate::ledger::Job;
use crate::ledger::job::People;
use crate::rules::{Diff, Proposal, ProposalState, Rule, RuleKind, Severity};
use crate::service::jobs::ListQuery;
use crate::service::rules::{self, RuleSetShown};
use crate::service::views::{TrialRow, TrialView};
use crate::service::{self, App};
use crate::t;
use crate::validate::RowError;

pub fn routes() -> Router<Arc<App>> {
    Router::new()
        .route("/rules", get(index))
        .route("/modules/{module}/rules", get(page).post(propose))
        .route("/rule-proposals/{id}", get(proposal))
        .route("/rule-proposals/{id}/{action}", post(decide))
}

/// Words a person reads for a proposal's state.
fn state_label(s: ProposalState) -> String {
    match s {
        ProposalState::AwaitingApproval => t!("rules-state-awaiting_approval"),
        ProposalState::Approved => t!("rules-state-approved"),
        ProposalState::Rejected => t!("rules-state-rejected"),
    }
}

/// A proposal's state as a badge, coloured as a job's.
fn badge(s: ProposalState) -> Markup {
    html! {
        span class=(format!("badge state-{}", s.as_str())) data-state=(s.as_str()) {
            (state_label(s))
        }
    }
}

fn proposal_link(p: &Proposal) -> Markup {
    html! { a href=(format!("/rule-proposals/{}", p.id)) { code { (p.id) } } }
}

/// Whether the key may decide proposals at all (four-eyes aside).
fn decides(signed: &Signed) -> bool {
    matches!(signed.key.role, Role::Approver | Role::Admin)
}

/// `/rules`: the modules the key covers, each linking to its rules, and the
/// proposals that wait for a decision.
async fn index(State(app): State<Arc<App>>, signed: Signed) -> PageResult {
    let waiting = rules::proposals(
        &app,
        &signed.key,
        None,
        Some(ProposalState::AwaitingApproval.as_str()),
    )
    .await?;
    let names = app.names().await?;
    let people = People(&names);
    let ctx = signed.ctx(&app, Nav::Rules);
    let modules: Vec<&crate::catalog::Module> = (app.catalog.modules().iter())
        .filter(|m| signed.key.covers(&m.key))
        .map(|m| m.as_ref())
        .collect();
    let content = html! {
        h1 { (t!("rules-index-title")) }
        p.lead { (t!("rules-index-lead")) }
        section.panel aria-labelledby="waiting-title" {
            h2 #waiting-title { (t!("rules-waiting-title")) }
            (proposal_table(&ctx, &people, &waiting.iter().collect::<Vec<_>>(), true))
        }
        section.panel aria-labelledby="modules-title" {
            h2 #modules-title { (t!("rules-modules-title")) }
            ul.rule-modules {
                @for m in &modules {
                    li { a href=(format!("/modules/{}/rules", m.key)) { (layout::module_label(m)) } }
                }
            }
        }
    };
    Ok(layout::page(&ctx, &t!("rules-index-title"), content).into_response())
}

/// A table of proposals, newest first; `module` adds the module's column.
fn proposal_table(ctx: &Ctx, people: &People, list: &[&Proposal], module: bool) -> Markup {
    if list.is_empty() {
        return html! { p.empty { (t!("rules-proposals-none")) } };
    }
    let mut columns = vec![t!("rules-col-proposal")];
    if module {
        columns.push(t!("rules-col-module"));
    }
    columns.extend([
        t!("rules-col-version"),
        t!("rules-col-state"),
        t!("rules-col-proposed-by"),
        t!("rules-col-comment"),
    ]);
    let heads: Vec<&str> = columns.iter().map(String::as_str).collect();
    html! {
        div.table-wrap {
            table.small.rule-proposals {
                (layout::table_head(&heads))
                tbody {
                    @for p in list {
                        tr data-proposal=(p.id) {
                            td { (proposal_link(p)) }
                            @if module {
                                td { a href=(format!("/modules/{}/rules", p.module)) { (p.module) } }
                            }
                            td { (p.version) }
                            td { (badge(p.state)) }
                            td { (person(&people.person(&p.proposed_by))) br; span.muted { (ctx.when(&p.proposed_at)) } }
                            td { (p.comment.as_deref().unwrap_or("—")) }
                        }
                    }
                }
            }
        }
    }
}

#[derive(Deserialize, Default)]
struct VersionQuery {
    version: Option<String>,
}

/// What the propose form shows again after a refusal: the text as it was
/// sent, and why it was refused.
struct Refused {
    rules: String,
    comment: String,
    shown: Shown,
}

async fn page(
    State(app): State<Arc<App>>,
    signed: Signed,
    Path(module): Path<String>,
    Query(q): Query<VersionQuery>,
) -> PageResult {
    let version = match q
        .version
        .as_deref()
        .map(str::trim)
        .filter(|v| !v.is_empty())
    {
        Some(v) => Some(v.parse::<u32>().ok().filter(|v| *v >= 1).ok_or_else(|| {
            service::Error::invalid("version", format!("{v:?} is not a version number"))
        })?),
        None => None,
    };
    render(&app, &signed, &module, version, None, StatusCode::OK).await
}

async fn render(
    app: &App,
    signed: &Signed,
    module: &str,
    version: Option<u32>,
    refused: Option<Refused>,
    status: StatusCode,
) -> PageResult {
    let current = rules::show(app, &signed.key, module, None).await?;
    let set = match version {
        Some(v) if v != current.version => rules::show(app, &signed.key, module, version).await?,
        _ => current.clone(),
    };
    let in_force = current.version;
    let proposals = rules::proposals(app, &signed.key, Some(module), None).await?;
    let proposals: Vec<&Proposal> = proposals.iter().collect();
    let names = app.names().await?;
    let people = People(&names);
    let ctx = signed.ctx(app, Nav::Rules);
    let module = set.module.as_str();
    let title = t!("rules-title", module = module);
    let content = html! {
        nav.crumbs aria-label=(t!("rules-breadcrumb")) {
            a href="/rules" { (t!("rules-index-title")) } " › " span { code { (module) } }
        }
        h1 { (title) }
        @if let Some(r) = &refused {
            div.alert.alert-error role="alert" { strong { (r.shown.title) } ": " (r.shown.detail) }
        }
        section.panel aria-labelledby="set-title" {
            h2 #set-title {
                @if set.version == in_force {
                    (t!("rules-in-force", version = set.version))
                } @else {
                    (t!("rules-at-version", version = set.version))
                }
            }
            @if set.version != in_force {
                p.note {
                    (t!("rules-not-in-force", version = in_force)) " "
                    a href=(format!("/modules/{module}/rules")) { (t!("rules-see-in-force")) }
                }
            }
            (made_by(&ctx, &people, &set))
            (rule_table(&set.rules))
        }
        section.panel aria-labelledby="history-title" {
            h2 #history-title { (t!("rules-history-title")) }
            (history(&ctx, &people, module, set.version, &proposals))
        }
        section.panel aria-labelledby="proposals-title" {
            h2 #proposals-title { (t!("rules-proposals-title")) }
            (proposal_table(&ctx, &people, &proposals, false))
        }
        @if ctx.is_admin() {
            (propose_form(signed, module, &current, refused.as_ref()))
        }
    };
    Ok((status, layout::page(&ctx, &title, content)).into_response())
}

/// Who proposed and approved a version (the catalog's for version 1).
fn made_by(ctx: &Ctx, people: &People, set: &RuleSetShown) -> Markup {
    html! {
        p.meta {
            @match &set.proposal {
                Some(p) => {
                    (t!("rules-proposed-by")) " " (person(&people.person(&p.proposed_by)))
                    " · " (ctx.when(&p.proposed_at))
                    @if let (Some(by), Some(at)) = (&p.decided_by, &p.decided_at) {
                        " · " (t!("rules-approved-by")) " " (person(&people.person(by)))
                        " · " (ctx.when(at))
                    }
                    " · " (proposal_link(p))
                }
                None => (t!("rules-from-catalog")),
            }
        }
    }
}

/// Each approved version, newest first, down to the catalog's version 1.
fn history(
    ctx: &Ctx,
    people: &People,
    module: &str,
    shown: u32,
    proposals: &[&Proposal],
) -> Markup {
    let approved = proposals
        .iter()
        .filter(|p| p.state == ProposalState::Approved);
    let link = |v: u32| {
        html! {
            @if v == shown {
                strong aria-current="true" { (t!("rules-version", version = v)) }
            } @else {
                a href=(format!("/modules/{module}/rules?version={v}")) { (t!("rules-version", version = v)) }
            }
        }
    };
    html! {
        ul.rule-history {
            @for p in approved {
                li {
                    (link(p.version)) " · "
                    (t!("rules-proposed-by")) " " (person(&people.person(&p.proposed_by)))
                    @if let (Some(by), Some(at)) = (&p.decided_by, &p.decided_at) {
                        " · " (t!("rules-approved-by")) " " (person(&people.person(by)))
                        " · " (ctx.when(at))
                    }
                    @if let Some(c) = &p.comment { " · " span.muted { (c) } }
                }
            }
            li { (link(1)) " · " (t!("rules-from-catalog")) }
        }
    }
}

/// Words a person reads for a rule's severity.
fn severity_label(s: Severity) -> String {
    match s {
        Severity::Error => t!("rules-severity-error"),
        Severity::Warning => t!("rules-severity-warning"),
    }
}

/// A rule's cells after its id: kind, columns, what it does, message,
/// severity.
fn rule_cells(r: &Rule) -> Markup {
    match &r.kind {
        RuleKind::Normalize { column, normalize } => html! {
            td { (t!("rules-kind-normalize")) }
            td { code { (column) } }
            td { code { (normalize.as_str()) } }
            td { "—" }
            td { "—" }
        },
        RuleKind::Check {
            check,
            message,
            columns,
            severity,
        } => html! {
            td { (t!("rules-kind-check")) }
            td { (column_list(columns)) }
            td { code.rule-expression { (check) } }
            td { (message) }
            td { (severity_label(*severity)) }
        },
        RuleKind::Unique { unique, severity } => html! {
            td { (t!("rules-kind-unique")) }
            td { (column_list(unique)) }
            td { "—" }
            td { "—" }
            td { (severity_label(*severity)) }
        },
    }
}

fn column_list(columns: &[String]) -> Markup {
    html! {
        @for (i, c) in columns.iter().enumerate() {
            @if i > 0 { ", " }
            code { (c) }
        }
    }
}

fn rule_columns() -> [String; 6] {
    [
        t!("rules-col-id"),
        t!("rules-col-kind"),
        t!("rules-col-columns"),
        t!("rules-col-does"),
        t!("rules-col-message"),
        t!("rules-col-severity"),
    ]
}

/// The rules of a set, one row each.
fn rule_table(list: &[Rule]) -> Markup {
    if list.is_empty() {
        return html! { p.empty { (t!("rules-none")) } };
    }
    let columns = rule_columns();
    html! {
        div.table-wrap {
            table.small.rules {
                (layout::table_head(&columns.each_ref().map(String::as_str)))
                tbody {
                    @for r in list {
                        tr data-rule=(r.id) { th scope="row" { code { (r.id) } } (rule_cells(r)) }
                    }
                }
            }
        }
    }
}

/// The form that proposes a whole new set, prefilled with the set in
/// force (or with what was sent, after a refusal).
fn propose_form(signed: &Signed, module: &str, set: &RuleSetShown, r: Option<&Refused>) -> Markup {
    let text = match r {
        Some(r) => r.rules.clone(),
        None => serde_json::to_string_pretty(&set.rules).unwrap_or_else(|_| "[]".into()),
    };
    let comment = r.map_or("", |r| r.comment.as_str());
    html! {
        section.panel #propose aria-labelledby="propose-title" {
            h2 #propose-title { (t!("rules-propose-title")) }
            p { (t!("rules-propose-lead")) }
            form method="post" action=(format!("/modules/{module}/rules")) {
                input type="hidden" name="_csrf" value=(signed.csrf);
                div.field {
                    label for="rules-json" { (t!("rules-propose-json")) }
                    textarea #rules-json .mono name="rules" rows="16" spellcheck="false"
                        aria-describedby="rules-json-help" { (text) }
                    p.help #rules-json-help { (t!("rules-propose-json-help")) }
                }
                div.field {
                    label for="rules-comment" { (t!("rules-propose-comment")) }
                    textarea #rules-comment name="comment" rows="2" maxlength="2000" { (comment) }
                }
                button.btn.btn-primary type="submit" { (t!("rules-propose-submit")) }
            }
        }
    }
}

#[derive(Deserialize)]
struct ProposeForm {
    #[serde(rename = "_csrf")]
    csrf: String,
    #[serde(default)]
    rules: String,
    #[serde(default)]
    comment: String,
}

/// Proposes the set the form holds; a refusal shows the page again with
/// the text kept, success goes to the proposal's page.
async fn propose(
    State(app): State<Arc<App>>,
    signed: Signed,
    Path(module): Path<String>,
    headers: HeaderMap,
    Form(form): Form<ProposeForm>,
) -> PageResult {
    signed.check_form(&headers, &form.csrf)?;
    service::admin_only(&signed.key)?;
    let done = match serde_json::from_str::<serde_json::Value>(&form.rules) {
        Ok(rules) => rules::propose(&app, &signed.key, &module, &rules, Some(&form.comment)).await,
        Err(e) => Err(service::Error::invalid(
            "rules",
            format!("the rules are not JSON: {e}"),
        )),
    };
    match done {
        Ok((p, _)) => Ok(Redirect::to(&format!("/rule-proposals/{}", p.id)).into_response()),
        Err(e @ service::Error::Invalid { .. }) => {
            let shown = Shown::from(e);
            let status = shown.status;
            let refused = Refused {
                rules: form.rules,
                comment: form.comment,
                shown,
            };
            render(&app, &signed, &module, None, Some(refused), status).await
        }
        Err(e) => Err(e.into()),
    }
}

#[derive(Deserialize, Default)]
struct ProposalQuery {
    done: Option<String>,
    /// A job to try the proposal on (`job_…`).
    #[serde(rename = "try")]
    try_on: Option<String>,
}

/// What the proposal's page says above everything after a decision.
enum Notice {
    Done(String),
    Refused(Shown),
}

async fn proposal(
    State(app): State<Arc<App>>,
    signed: Signed,
    Path(id): Path<String>,
    Query(q): Query<ProposalQuery>,
) -> PageResult {
    let notice = match q.done.as_deref() {
        Some("approve") => Some(Notice::Done(t!("rules-done-approve"))),
        Some("reject") => Some(Notice::Done(t!("rules-done-reject"))),
        _ => None,
    };
    let tried = q.try_on.as_deref().map(str::trim).filter(|j| !j.is_empty());
    render_proposal(&app, &signed, &id, notice, tried, StatusCode::OK).await
}

async fn render_proposal(
    app: &App,
    signed: &Signed,
    id: &str,
    notice: Option<Notice>,
    tried: Option<&str>,
    status: StatusCode,
) -> PageResult {
    let (p, diff) = rules::get(app, &signed.key, id).await?;
    let trial = match tried {
        // Refused to a key offered no try: the page is the refusal.
        Some(job) if !decides(signed) => Some(Ok(rules::try_on(app, &signed.key, id, job).await?)),
        Some(job) => Some(rules::try_on(app, &signed.key, id, job).await),
        None => None,
    };
    let trial = trial.map(|t| t.map(TrialView::new).map_err(Shown::from));
    let recent = if decides(signed) {
        recent_jobs(app, signed, p.module.as_str()).await?
    } else {
        vec![]
    };
    let waiting = p.state == ProposalState::AwaitingApproval;
    let barred = waiting && decides(signed) && rules::self_barred(app, &signed.key, &p).await?;
    let names = app.names().await?;
    let people = People(&names);
    let ctx = signed.ctx(app, Nav::Rules);
    let module = p.module.as_str();
    let title = t!("rules-proposal-title", module = module, version = p.version);
    let content = html! {
        nav.crumbs aria-label=(t!("rules-breadcrumb")) {
            a href="/rules" { (t!("rules-index-title")) } " › "
            a href=(format!("/modules/{module}/rules")) { code { (module) } } " › "
            span { code { (p.id) } }
        }
        div.page-head { h1 { (title) " " (badge(p.state)) } }
        p.meta {
            (t!("rules-col-module")) " " a href=(format!("/modules/{module}/rules")) { code { (module) } }
            " · " (t!("rules-version", version = p.version))
            " · " (t!("rules-proposed-by")) " " (person(&people.person(&p.proposed_by)))
            " · " (ctx.when(&p.proposed_at))
        }
        @if let Some(c) = &p.comment {
            p.proposal-comment { strong { (t!("rules-col-comment")) ": " } (c) }
        }
        @match &notice {
            Some(Notice::Done(text)) => div.alert.alert-ok role="status" { (text) },
            Some(Notice::Refused(s)) => div.alert.alert-error role="alert" { strong { (s.title) } ": " (s.detail) },
            None => {},
        }
        @if let (Some(by), Some(at)) = (&p.decided_by, &p.decided_at) {
            p.meta #decision {
                @if p.state == ProposalState::Approved { (t!("rules-approved-by")) } @else { (t!("rules-rejected-by")) }
                " " (person(&people.person(by))) " · " (ctx.when(at))
                @if let Some(c) = &p.decision_comment { " · " span.muted { (c) } }
            }
        }
        section.panel aria-labelledby="diff-title" {
            h2 #diff-title { (t!("rules-diff-title", version = p.base_version())) }
            (diff_panel(&diff))
        }
        @if decides(signed) {
            (try_panel(&ctx, &p, &recent, tried, trial.as_ref()))
        }
        @if waiting && decides(signed) {
            (decision_panel(signed, &p, barred))
        }
        section.panel aria-labelledby="proposed-title" {
            h2 #proposed-title { (t!("rules-proposed-set")) }
            (rule_table(&p.rules))
        }
    };
    Ok((status, layout::page(&ctx, &title, content)).into_response())
}

/// What the proposal adds, removes and changes; a changed rule as it was
/// and as it would be.
fn diff_panel(diff: &Diff) -> Markup {
    if diff.is_empty() {
        return html! { p.empty { (t!("rules-diff-none")) } };
    }
    let columns = rule_columns();
    let mut changed_columns = vec![t!("rules-col-change")];
    changed_columns.extend(columns.iter().cloned());
    let changed_heads: Vec<&str> = changed_columns.iter().map(String::as_str).collect();
    html! {
        @if !diff.added.is_empty() {
            h3 { (t!("rules-diff-added")) }
            div #diff-added { (rule_table(&diff.added)) }
        }
        @if !diff.removed.is_empty() {
            h3 { (t!("rules-diff-removed")) }
            div #diff-removed { (rule_table(&diff.removed)) }
        }
        @if !diff.changed.is_empty() {
            h3 { (t!("rules-diff-changed")) }
            div.table-wrap #diff-changed {
                table.small.rules {
                    (layout::table_head(&changed_heads))
                    tbody {
                        @for c in &diff.changed {
                            tr.rule-was data-rule=(c.id) {
                                td { (t!("rules-was")) }
                                th scope="row" { code { (c.was.id) } }
                                (rule_cells(&c.was))
                            }
                            tr.rule-now data-rule=(c.id) {
                                td { (t!("rules-now")) }
                                th scope="row" { code { (c.now.id) } }
                                (rule_cells(&c.now))
                            }
                        }
                    }
                }
            }
        }
    }
}

/// Approve and Reject with an optional comment, or why this key may not.
fn decision_panel(signed: &Signed, p: &Proposal, barred: bool) -> Markup {
    html! {
        section.panel.actions aria-labelledby="actions-title" {
            h2 #actions-title { (t!("actions-title")) }
            @if barred {
                p.note { (t!("rules-four-eyes")) }
            } @else {
                div.action-list {
                    @for (name, label, class) in [
                        ("approve", t!("rules-approve"), "btn btn-primary"),
                        ("reject", t!("rules-reject"), "btn btn-danger"),
                    ] {
                        form class=(format!("action action-{name}")) method="post"
                            action=(format!("/rule-proposals/{}/{name}", p.id)) {
                            input type="hidden" name="_csrf" value=(signed.csrf);
                            label for=(format!("comment-{name}")) { (t!("actions-comment-optional")) }
                            textarea id=(format!("comment-{name}")) name="comment" rows="2" maxlength="2000" {}
                            button type="submit" class=(class) { (label) }
                        }
                    }
                }
            }
        }
    }
}

/// Approves or rejects; a refusal (four-eyes, a decision already made)
/// shows the page again with it.
async fn decide(
    State(app): State<Arc<App>>,
    signed: Signed,
    Path((id, action)): Path<(String, String)>,
    headers: HeaderMap,
    Form(form): Form<DecideForm>,
) -> PageResult {
    signed.check_form(&headers, &form.csrf)?;
    let approve = match action.as_str() {
        "approve" => true,
        "reject" => false,
        _ => return Err(service::Error::not_found("action", &action).into()),
    };
    match rules::decide(&app, &signed.key, &id, approve, form.comment.as_deref()).await {
        Ok((p, _)) => {
            Ok(Redirect::to(&format!("/rule-proposals/{}?done={action}", p.id)).into_response())
        }
        Err(e @ service::Error::NotFound { .. }) => Err(e.into()),
        Err(e) => {
            let shown = Shown::from(e);
            let status = shown.status;
            let notice = Some(Notice::Refused(shown));
            render_proposal(&app, &signed, &id, notice, None, status).await
        }
    }
}

/// Jobs offered to try a proposal on.
const RECENT: usize = 10;

/// The module's latest jobs whose file is still kept, newest first.
async fn recent_jobs(app: &App, signed: &Signed, module: &str) -> service::Result<Vec<Job>> {
    let page = service::jobs::list(
        app,
        &signed.key,
        ListQuery {
            module: Some(module.to_string()),
            limit: 50,
            ..ListQuery::default()
        },
    )
    .await?;
    Ok((page.jobs.into_iter())
        .filter(|j| j.purged_at.is_none())
        .take(RECENT)
        .collect())
}

/// A form choosing one of the module's recent jobs to validate again
/// under the proposal, and what the try found (or why it could not).
fn try_panel(
    ctx: &Ctx,
    p: &Proposal,
    recent: &[Job],
    tried: Option<&str>,
    trial: Option<&Result<TrialView, Shown>>,
) -> Markup {
    html! {
        section.panel #try aria-labelledby="try-title" {
            h2 #try-title { (t!("rules-try-title")) }
            p { (t!("rules-try-lead")) }
            @if recent.is_empty() {
                p.empty #try-no-jobs { (t!("rules-try-no-jobs")) }
            } @else {
                form.try-form method="get" action=(format!("/rule-proposals/{}#try", p.id)) {
                    div.field {
                        label for="try-job" { (t!("rules-try-job")) }
                        select #try-job name="try" {
                            @for j in recent {
                                option value=(j.id) selected[tried == Some(j.id.as_str())] {
                                    (j.id) " · " (j.file.name.as_deref().unwrap_or("—"))
                                    " · " (ctx.when(&j.created_at))
                                }
                            }
                        }
                    }
                    button.btn #try-button type="submit" { (t!("rules-try-submit")) }
                }
            }
            @match trial {
                Some(Ok(t)) => (trial_result(t)),
                Some(Err(s)) => div.alert.alert-error #try-error role="alert" { strong { (s.title) } ": " (s.detail) },
                None => {},
            }
        }
    }
}

/// The counts under both versions and the rows whose outcome changes.
fn trial_result(trial: &TrialView) -> Markup {
    let (now, proposed) = (&trial.now.counts, &trial.proposed.counts);
    let counts = [
        (t!("rules-try-rows"), now.rows, proposed.rows),
        (t!("rules-try-valid"), now.valid, proposed.valid),
        (t!("rules-try-errors"), now.errors, proposed.errors),
        (t!("rules-try-warnings"), now.warnings, proposed.warnings),
        (
            t!("rules-try-normalized"),
            now.normalized,
            proposed.normalized,
        ),
    ];
    let heads = [
        String::new(),
        t!("rules-try-under-job", version = trial.now.version),
        t!("rules-try-under-proposal", version = trial.proposed.version),
    ];
    html! {
        div #try-result data-job=(trial.job) {
            h3 { (t!("rules-try-result", job = trial.job.as_str())) }
            div.table-wrap {
                table.small #try-counts {
                    (layout::table_head(&heads.each_ref().map(String::as_str)))
                    tbody {
                        @for (label, a, b) in counts {
                            tr.changed[a != b] { th scope="row" { (label) } td { (a) } td { (b) } }
                        }
                    }
                }
            }
            (trial_rows("try-failing", &t!("rules-try-failing"), &trial.newly_failing, |r| &r.errors_proposed))
            (trial_rows("try-passing", &t!("rules-try-passing"), &trial.newly_passing, |r| &r.errors_now))
            h3 { (t!("rules-try-normalized-rows")) }
            @if trial.newly_normalized.is_empty() {
                p.empty { (t!("rules-try-none")) }
            } @else {
                ul #try-normalized {
                    @for r in &trial.newly_normalized {
                        @for c in &r.normalized {
                            li data-row=(r.row) {
                                (t!("rules-try-row", row = r.row)) " · " code { (c.column) } ": "
                                span.sr-only { (t!("rules-was")) " " }
                                del { (c.was) }
                                span aria-hidden="true" { " → " }
                                span.sr-only { ", " (t!("rules-now")) " " }
                                ins { (c.now) }
                            }
                        }
                    }
                }
            }
        }
    }
}

/// Rows newly failing (with their errors under the proposal) or newly
/// passing (with the errors they had).
fn trial_rows(
    id: &str,
    title: &str,
    rows: &[TrialRow],
    errors: impl Fn(&TrialRow) -> &Vec<RowError>,
) -> Markup {
    let heads = [
        t!("rules-try-col-row"),
        t!("rules-try-col-column"),
        t!("rules-try-col-code"),
        t!("rules-try-col-message"),
    ];
    html! {
        h3 { (title) " " span.tab-count { (rows.len()) } }
        @if rows.is_empty() {
            p.empty { (t!("rules-try-none")) }
        } @else {
            div.table-wrap {
                table.small id=(id) {
                    (layout::table_head(&heads.each_ref().map(String::as_str)))
                    tbody {
                        @for r in rows {
                            @for e in errors(r) {
                                tr data-row=(r.row) {
                                    th scope="row" { (r.row) }
                                    td { code { (e.column.as_deref().unwrap_or("—")) } }
                                    td { code { (e.code.as_str()) } @if let Some(rule) = &e.rule { " · " code { (rule) } } }
                                    td { (e.message) }
                                }
                            }
                        }
                    }
                }
            }
        }
    }
}
