//! The gate moves a job's page offers the signed-in key — those
//! [`gate::authorize`] allows now — each with its confirmation text.

use maud::{Markup, html};

use super::moment;
use crate::console::layout::Ctx;
use crate::console::session::Signed;
use crate::ledger::gate::{self, PERSONS_MOVES, Refusal};
use crate::ledger::{Job, JobState, Move};
use crate::service::{self, App};
use crate::t;

/// The gate moves a person can be offered, in the order they are shown.
pub(super) const OFFERED: [Move; 4] = PERSONS_MOVES;

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

/// Reject and rollback need a reason the other person can read.
fn needs_comment(m: Move) -> bool {
    service::gate::wants_reason(m)
}

pub(super) fn actions_panel(
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
