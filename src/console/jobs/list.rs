//! The job list: filtered by module, state and one's own uploads, newest
//! first, paged by cursor; rows update live through [`super::live`].

use std::sync::Arc;

use axum::extract::{Query, State};
use axum::response::IntoResponse;
use maud::html;
use serde::Deserialize;

use super::{given, short_id};
use crate::console::PageResult;
use crate::console::layout::{self, Nav, badge, count, person};
use crate::console::session::Signed;
use crate::keys::{KeyRecord, Role};
use crate::ledger::job::People;
use crate::ledger::{ALL_STATES, JobState};
use crate::rules::ProposalState;
use crate::service::jobs::{self, ListQuery};
use crate::service::{self, App};
use crate::t;

/// Jobs per page of the list.
const LIST_PAGE: i64 = 50;

#[derive(Deserialize, Default)]
pub(super) struct ListForm {
    module: Option<String>,
    state: Option<String>,
    mine: Option<String>,
    before: Option<String>,
}

pub(super) async fn list(
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
    let rules_waiting = rule_proposals_waiting(&app, caller).await?;
    let (jobs, older) = (page.jobs, page.next);
    let names = app.names().await?;
    let people = People(&names);
    let ctx = signed.ctx(&app, Nav::Jobs);
    let modules: Vec<&crate::catalog::Module> = app
        .catalog
        .modules()
        .iter()
        .filter(|m| caller.covers(&m.key))
        .map(|m| m.as_ref())
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
        @if rules_waiting > 0 {
            p.alert.alert-info #rules-waiting role="status" {
                (t!("jobs-rules-waiting", count = rules_waiting)) " "
                a href="/rules" { (t!("jobs-rules-waiting-link")) }
            }
        }
        form.filters method="get" action="/jobs" aria-label=(t!("jobs-filter-label")) {
            div.field {
                label for="f-module" { (t!("jobs-module")) }
                select #f-module name="module" {
                    option value="" { (t!("jobs-all-modules")) }
                    @for m in &modules {
                        option value=(m.key) selected[module.as_deref() == Some(m.key.as_str())] { (layout::module_name(m)) }
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
                                @let keys: Vec<&str> = j.modules().iter().map(|m| m.as_str()).collect();
                                td title=(keys.join(", ")) {
                                    (keys.iter().map(|k| layout::module_name_of(&app, k)).collect::<Vec<_>>().join(" + "))
                                }
                                td.state-cell { (badge(j.state)) }
                                td.num data-count="rows" { (count(j.counts.rows)) }
                                td.num.col-errors data-count="errors" { (count(j.counts.errors)) }
                                td.col-file {
                                    (j.file.name.as_deref().unwrap_or("—"))
                                    @if let (Some(of), Some(r)) = (&j.revision_of, &j.revision) {
                                        br;
                                        small.muted.revision-of {
                                            (t!("jobs-revision-of", number = u64::from(r.number))) " "
                                            a href=(format!("/jobs/{of}")) { code { (short_id(of)) } }
                                        }
                                    }
                                }
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

/// How many rule proposals wait at the gate for a key that may decide them
/// (approvers and admins; none for submitters).
async fn rule_proposals_waiting(app: &App, key: &KeyRecord) -> service::Result<usize> {
    if !matches!(key.role, Role::Approver | Role::Admin) {
        return Ok(0);
    }
    let waiting = ProposalState::AwaitingApproval.as_str();
    Ok(service::rules::proposals(app, key, None, Some(waiting))
        .await?
        .len())
}
