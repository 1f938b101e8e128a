//! The parts of a job's page around its preview: counts, problem,
//! warnings, the gate and its decisions, what a revision changed, and the
//! timeline.

use maud::{Markup, html};

use super::preview::{plain, preview_link};
use crate::console::layout::{self, Ctx, badge, count, person};
use crate::console::notes;
use crate::ledger::chain::Event;
use crate::ledger::job::People;
use crate::ledger::{GateAction, Job, JobState, Move, ReferringRow};
use crate::service::jobs::PreviewFilter;
use crate::t;
use crate::validate::RowAction;

pub(super) fn working_text(s: JobState) -> String {
    match s {
        JobState::Validating => t!("job-working-validating"),
        JobState::Committing => t!("job-working-committing"),
        _ => t!("job-working-undoing"),
    }
}

pub(super) fn counts_panel(job: &Job) -> Markup {
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
    if c.normalized > 0 {
        items.push((t!("count-normalized"), c.normalized, "stat-normalized"));
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

pub(super) fn problem_panel(job: &Job) -> Markup {
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
            (referring_table(p.referring.as_deref().unwrap_or_default()))
        }
    }
}

/// The rows of other modules a refused rollback names.
fn referring_table(rows: &[ReferringRow]) -> Markup {
    if rows.is_empty() {
        return html! {};
    }
    html! {
        h3 { (t!("problem-referring")) }
        div.table-wrap {
            table.small #problem-referring {
                (layout::table_head(&[&t!("col-module"), &t!("col-key"), &t!("col-names")]))
                tbody {
                    @for r in rows {
                        tr {
                            td { (r.module) }
                            td { code { (plain(&r.key)) } }
                            td { code { (r.column) " = " (r.value) } }
                        }
                    }
                }
            }
        }
    }
}

pub(super) fn warnings_panel(job: &Job) -> Markup {
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

pub(super) fn gate_panel(ctx: &Ctx, job: &Job, people: &People, events: &[Event]) -> Markup {
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

/// A decision of the gate in words (`commit approved`).
fn decision_text(action: GateAction, decision: crate::ledger::job::DecisionKind) -> String {
    t!(
        "gate-decision",
        action = action.as_str(),
        decision = decision.as_str()
    )
}

/// Most fixed cells and excluded rows the revision panel lists one by one.
const LISTED: usize = 100;

/// What a revision changed, for the approver: whose revision of which job,
/// the mapping in force, each fixed cell as was → now, the excluded rows,
/// and everyone who revised the upload.
pub(super) fn revision_panel(job: &Job, people: &People) -> Markup {
    let (Some(r), Some(of)) = (&job.revision, &job.revision_of) else {
        return html! {};
    };
    let place = super::preview::Place {
        job: &job.id,
        part: None,
    };
    let excluded_link = preview_link(
        place,
        PreviewFilter {
            action: Some(RowAction::Excluded),
            warned: false,
            normalized: false,
        },
        0,
    );
    // The heading names this revision's author; the others who revised
    // the upload before are named below it, when there are any.
    let earlier: Vec<_> = (r.revisers.iter())
        .filter(|k| **k != r.by)
        .map(|k| people.person(k))
        .collect();
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
            @if !r.fixes.is_empty() {
                h3 { (t!("revision-fixes", n = r.fixes.len())) }
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
            @if !r.exclude.is_empty() {
                h3 { (t!("revision-excluded", n = r.exclude.len())) }
                p #revision-excluded {
                    (t!("revision-excluded-rows")) " "
                    (r.exclude.iter().take(LISTED).map(u64::to_string).collect::<Vec<_>>().join(", "))
                    @if r.exclude.len() > LISTED { " …" }
                    " · " a href=(excluded_link) { (t!("revision-excluded-see")) }
                }
            }
            @if !earlier.is_empty() {
                p #revision-revisers {
                    (t!("revision-revisers")) " "
                    @for (i, p) in earlier.iter().enumerate() {
                        @if i > 0 { ", " }
                        (person(p))
                    }
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

pub(super) fn timeline(ctx: &Ctx, events: &[Event], people: &People) -> Markup {
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
