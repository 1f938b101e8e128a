//! The Fix page of a job (API.md section 11, its console bullet): the
//! file's headers beside the module's columns, the failing rows with each
//! wrong cell editable, a way to leave rows out, and **Revalidate**, which
//! makes a revision through [`service::revisions::revise`] — the same
//! function `POST /api/jobs/{id}/revisions` calls, so the page can never
//! allow what the API refuses.
//!
//! The page is a list of sections inside one form, each drawn by its own
//! function from [`Screen`]; a new way to fix a job (a corrected file, say)
//! is one more section and one more member of [`Entered`].

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use axum::Router;
use axum::body::Body;
use axum::extract::{DefaultBodyLimit, Form, Multipart, Path, Query, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Redirect};
use axum::routing::{get, post};
use maud::{Markup, html};
use serde::Deserialize;

use super::jobs::{PAGE, plain};
use super::layout::{self, Nav};
use super::notes;
use super::session::Signed;
use super::{PageResult, Shown};
use crate::catalog::Module;
use crate::ingest::Format;
use crate::keys::KeyRecord;
use crate::ledger::revision::{self, Changes};
use crate::ledger::{Fix, Job, JobState};
use crate::service::jobs::{self, PreviewFilter, PreviewRow};
use crate::service::mapping::{self as mappings, HeaderMatch, MappingView};
use crate::service::reports::{self, FileFormat, Report};
use crate::service::rows_file::{self, RowsFile};
use crate::service::{self, App, uploads};
use crate::t;
use crate::validate::RowAction;

pub fn routes() -> Router<Arc<App>> {
    Router::new()
        .route("/jobs/{id}/fix", get(page).post(revalidate))
        .route("/jobs/{id}/fix/rows", get(rows_download))
        .route(
            "/jobs/{id}/fix/file",
            post(send_back).layer(DefaultBodyLimit::max(rows_file::MAX_BYTES)),
        )
}

/// What the person has entered (or, on first sight, what the job has now).
#[derive(Debug, Default)]
struct Entered {
    /// Column chosen for each header, by its 1-based position (`None`:
    /// ignore the column).
    mapping: BTreeMap<usize, Option<String>>,
    /// Cells as typed, by (row, column); with the value they had.
    cells: BTreeMap<(u64, String), (String, String)>,
    exclude: BTreeSet<u64>,
    comment: String,
    remember: bool,
    /// The page of failing rows shown.
    offset: i64,
}

/// A refusal of the service, and the form member it names.
struct Refused {
    shown: Shown,
    member: Option<String>,
}

/// Everything the page draws from.
struct Screen<'a> {
    job: &'a Job,
    module: &'a Module,
    view: &'a MappingView,
    /// The failing rows of this page, and how many fail in all.
    rows: &'a [PreviewRow],
    failing: i64,
    entered: &'a Entered,
    refused: Option<&'a Refused>,
}

impl Screen<'_> {
    /// The message for a member, if the service named it.
    fn said(&self, member: &str) -> Option<&str> {
        self.refused
            .filter(|r| r.member.as_deref() == Some(member))
            .map(|r| r.shown.detail.as_str())
    }

    /// Whether the job's rows were read (an `invalid` header never was).
    fn rows_read(&self) -> bool {
        self.job.state != JobState::Invalid && self.job.counts.rows > 0
    }
}

#[derive(Deserialize, Default)]
struct PageQuery {
    offset: Option<i64>,
}

/// `GET /jobs/{id}/fix`.
async fn page(
    State(app): State<Arc<App>>,
    signed: Signed,
    Path(id): Path<String>,
    Query(q): Query<PageQuery>,
) -> PageResult {
    let job = fixable(&app, &signed.key, &id).await?;
    let view = mappings::mapping(&app, &signed.key, &job.id).await?;
    let entered = Entered {
        mapping: current_mapping(&job, &view),
        offset: q.offset.unwrap_or(0).max(0),
        ..Entered::default()
    };
    render(&app, &signed, &job, &view, entered, None).await
}

/// The job, if the signed-in key may revise it; else why not.
async fn fixable(app: &App, key: &KeyRecord, id: &str) -> Result<Job, service::Error> {
    let job = jobs::get(app, key, &jobs::parse_id(id)?).await?;
    let module = service::module_of_job(app, &job, "a revision")?;
    uploads::target(app, key, module.key.as_str())?;
    if let Some(why) = revision::refusal(&job) {
        return Err(service::Error::InvalidState {
            title: "The job cannot be revised",
            detail: why,
            state: job.state.as_str().to_string(),
        });
    }
    Ok(job)
}

/// The column each header starts with. Where the job's header did not
/// match, the best suggestion is preselected — a person still confirms it
/// by sending the form. A job whose header matched keeps its columns:
/// its mapping section is folded away, and a suggestion there must not
/// be sent unseen.
fn current_mapping(job: &Job, view: &MappingView) -> BTreeMap<usize, Option<String>> {
    let mapping_screen = header_problem(job);
    view.headers
        .iter()
        .map(|h| {
            let suggested = h.suggestions.first().map(|s| s.column.clone());
            let chosen = match &h.column {
                Some(c) => Some(c.clone()),
                None if mapping_screen && h.how == "none" => suggested,
                None => None,
            };
            (h.position, chosen)
        })
        .collect()
}

/// Whether the job is `invalid` for its header: the mapping is the fix.
fn header_problem(job: &Job) -> bool {
    job.state == JobState::Invalid
}

/// Renders the page with what was entered, and the service's refusal.
async fn render(
    app: &App,
    signed: &Signed,
    job: &Job,
    view: &MappingView,
    entered: Entered,
    refused: Option<Refused>,
) -> PageResult {
    let module = service::module_of_job(app, job, "a revision")?;
    let status = refused.as_ref().map_or(StatusCode::OK, |r| r.shown.status);
    let (failing, rows) = if job.state != JobState::Invalid && job.counts.rows > 0 {
        let errors = PreviewFilter {
            action: Some(RowAction::Error),
            warned: false,
            normalized: false,
        };
        let last_page = ((job.counts.errors - 1).max(0) / PAGE) * PAGE;
        let offset = entered.offset.clamp(0, last_page);
        let page = jobs::preview(app, job, errors, offset, PAGE).await?;
        (page.total, page.rows)
    } else {
        (0, vec![])
    };
    let screen = Screen {
        job,
        module,
        view,
        rows: &rows,
        failing,
        entered: &entered,
        refused: refused.as_ref(),
    };
    let ctx = signed.ctx(app, Nav::Jobs);
    let title = t!("fix-title", module = layout::module_name(module).as_str());
    let content = html! {
        nav.crumbs aria-label=(t!("job-breadcrumb")) {
            a href="/jobs" { (t!("jobs-title")) } " › "
            a href=(format!("/jobs/{}", job.id)) { code { (job.id) } } " › "
            span { (t!("fix-crumb")) }
        }
        div.page-head {
            h1 { (title) " " (layout::badge(job.state)) }
        }
        p.lead { (t!("fix-lead")) }
        @if let Some(r) = &refused {
            div.alert.alert-error #fix-refused role="alert" {
                strong { (r.shown.title) } ": " (r.shown.detail)
            }
        }
        form.fix method="post" action=(format!("/jobs/{}/fix", job.id)) {
            input type="hidden" name="_csrf" value=(signed.csrf);
            input type="hidden" name="offset" value=(entered.offset);
            (mapping_section(&screen))
            @if screen.rows_read() {
                (rows_section(&screen))
            }
            (submit_section(&screen))
        }
        @if screen.rows_read() && screen.failing > 0 {
            (file_section(&screen, &signed.csrf))
        }
    };
    Ok((status, layout::page(&ctx, &title, content)).into_response())
}

/// The file's headers beside a choice of the module's columns.
fn mapping_section(s: &Screen) -> Markup {
    let open = header_problem(s.job);
    // A refused mapping is shown unfolded, next to its message.
    let refused = (s.refused.and_then(|r| r.member.as_deref()))
        .is_some_and(|m| m.starts_with("mapping") || m == "remember_mapping");
    let body = html! {
        @if !s.view.missing.is_empty() {
            p.note { (t!("fix-missing", columns = s.view.missing.join(", "))) }
        }
        @for member in ["mapping", "remember_mapping"] {
            @if let Some(msg) = s.said(member) { p.field-error role="alert" { (msg) } }
        }
        div.table-wrap {
            table.mapping {
                caption.sr-only { (t!("fix-mapping-caption")) }
                (layout::table_head(&[&t!("fix-col-header"), &t!("fix-col-column"), &t!("fix-col-samples")]))
                tbody {
                    @for h in &s.view.headers { (header_row(s, h)) }
                }
            }
        }
        div.field.check {
            input #fix-remember type="checkbox" name="remember_mapping" value="1" checked[s.entered.remember];
            label for="fix-remember" { (t!("fix-remember")) }
        }
    };
    html! {
        section.panel #fix-mapping aria-labelledby="fix-mapping-title" {
            @if open {
                h2 #fix-mapping-title { (t!("fix-mapping-title")) }
                (body)
            } @else {
                details open[refused] {
                    summary { h2 #fix-mapping-title { (t!("fix-mapping-title")) } }
                    p.help { (t!("fix-mapping-help")) }
                    (body)
                }
            }
        }
    }
}

/// One header: its column (a `<select>`), how it matched, the best
/// suggestion and why, and a few of its values.
fn header_row(s: &Screen, h: &HeaderMatch) -> Markup {
    let id = format!("map-{}", h.position);
    let chosen = s.entered.mapping.get(&h.position).cloned().flatten();
    let why = format!("{id}-why");
    let error = s.said(&format!("mapping.{}", h.header));
    html! {
        tr {
            th scope="row" {
                label for=(id) { (h.header) }
                " " span.muted { "(" (how_text(h.how)) ")" }
            }
            td {
                select id=(id) name=(id) aria-describedby=(why) {
                    option value="" selected[chosen.is_none()] { (t!("fix-ignore")) }
                    @for c in &s.module.columns {
                        option value=(c.name) selected[chosen.as_deref() == Some(c.name.as_str())] {
                            (c.name) @if c.required { " *" }
                        }
                    }
                }
                div.help id=(why) {
                    @if let Some(best) = h.suggestions.first() {
                        (t!("fix-suggested", column = &best.column, score = format!("{:.0}%", best.score * 100.0)))
                        ": " (best.why)
                    }
                }
                @if let Some(msg) = error { p.field-error role="alert" { (msg) } }
            }
            td.samples {
                @for v in &h.samples { code { (v) } " " }
            }
        }
    }
}

fn how_text(how: &str) -> String {
    match how {
        "exact" => t!("fix-how-exact"),
        "alias" => t!("fix-how-alias"),
        "saved" => t!("fix-how-saved"),
        "revision" => t!("fix-how-revision"),
        _ => t!("fix-how-none"),
    }
}

/// The failing rows, a page at a time: each wrong cell an input, each row
/// a box to leave it out.
fn rows_section(s: &Screen) -> Markup {
    let first = if s.failing == 0 {
        0
    } else {
        s.entered.offset + 1
    };
    let last = s.entered.offset + s.rows.len() as i64;
    html! {
        section.panel #fix-rows aria-labelledby="fix-rows-title" {
            h2 #fix-rows-title { (t!("fix-rows-title")) }
            @for member in ["fixes", "exclude"] {
                @if let Some(msg) = s.said(member) { p.field-error role="alert" { (msg) } }
            }
            @if s.rows.is_empty() {
                p.empty { (t!("fix-no-failing-rows")) }
            } @else {
                p.help { (t!("fix-rows-help")) }
                div.table-wrap {
                    table.fix-rows {
                        caption.sr-only { (t!("fix-rows-caption")) }
                        (layout::table_head(&[&t!("col-row"), &t!("fix-col-cells"), &t!("col-notes"), &t!("fix-col-exclude")]))
                        tbody {
                            @for r in s.rows { (failing_row(s, r)) }
                        }
                    }
                }
                nav.pager aria-label=(t!("preview-pages")) {
                    span.range { (t!("preview-range", first = layout::count(first), last = layout::count(last), total = layout::count(s.failing))) }
                    @if s.entered.offset > 0 {
                        a.btn href=(rows_link(s.job, (s.entered.offset - PAGE).max(0))) rel="prev" { (t!("pager-previous")) }
                    }
                    @if last < s.failing {
                        a.btn href=(rows_link(s.job, s.entered.offset + PAGE)) rel="next" { (t!("pager-next")) }
                    }
                }
            }
        }
    }
}

fn rows_link(job: &Job, offset: i64) -> String {
    format!("/jobs/{}/fix?offset={offset}#fix-rows", job.id)
}

/// A cell of a failing row that an error names.
struct WrongCell {
    column: String,
    /// What the file held.
    text: String,
    messages: Vec<String>,
}

/// The wrong cells of a failing row, in catalog order; and the row's
/// messages that name no cell.
fn wrong_cells(module: &Module, r: &PreviewRow) -> (Vec<WrongCell>, Vec<String>) {
    let mut cells: Vec<WrongCell> = Vec::new();
    let mut others = Vec::new();
    for e in &r.errors {
        let said = notes::row_note(module, e);
        let named = e.column.as_deref();
        let Some(col) = named.filter(|c| module.column_index(c).is_some()) else {
            others.push(said);
            continue;
        };
        match cells.iter_mut().find(|c| c.column == col) {
            Some(cell) => cell.messages.push(said),
            None => cells.push(WrongCell {
                column: col.to_string(),
                text: (e.value.clone())
                    .or_else(|| r.row.vals.get(col).map(plain))
                    .unwrap_or_default(),
                messages: vec![said],
            }),
        }
    }
    cells.sort_by_key(|c| module.column_index(&c.column));
    (cells, others)
}

fn failing_row(s: &Screen, r: &PreviewRow) -> Markup {
    let row = r.row.row_no.max(0) as u64;
    let (cells, others) = wrong_cells(s.module, r);
    let exclude = format!("exclude-{row}");
    html! {
        tr #(format!("fix-row-{row}")) {
            th scope="row" { (row) }
            td.cells {
                @for WrongCell { column: col, text, messages: msgs } in &cells {
                    @let name = format!("cell-{row}-{col}");
                    @let key = (row, col.clone());
                    @let typed = s.entered.cells.get(&key).map_or(text.as_str(), |(now, _)| now.as_str());
                    @let index = s.refused.and_then(|_| fix_index(s.entered, row, col));
                    @let error = index.and_then(|i| s.said(&format!("fixes[{i}].value")).or_else(|| s.said(&format!("fixes[{i}]"))));
                    div.field.cell-field {
                        label for=(name) { (col) }
                        input id=(name) name=(name) type="text" value=(typed)
                            aria-describedby=(format!("{name}-msg")) aria-invalid="true";
                        input type="hidden" name=(format!("orig-{row}-{col}")) value=(text);
                        span.cell-msg id=(format!("{name}-msg")) {
                            @for m in msgs { (m) " " }
                        }
                        @if let Some(msg) = error { p.field-error role="alert" { (msg) } }
                    }
                }
            }
            td.notes {
                @for n in &others { span.cell-msg { (n) } }
            }
            td.exclude {
                div.field.check {
                    input id=(exclude) type="checkbox" name="exclude" value=(row)
                        checked[s.entered.exclude.contains(&row)];
                    label for=(exclude) { (t!("fix-exclude-row", row = row)) }
                }
            }
        }
    }
}

/// The position of a cell in the fixes the form sent (how the service
/// names a fix it refuses: `fixes[2].value`).
fn fix_index(entered: &Entered, row: u64, col: &str) -> Option<usize> {
    changed_cells(entered).position(|f| f.row == row && f.column == col)
}

/// The comment and the button.
fn submit_section(s: &Screen) -> Markup {
    html! {
        section.panel #fix-submit aria-labelledby="fix-submit-title" {
            h2 #fix-submit-title { (t!("fix-submit-title")) }
            div.field {
                label for="fix-comment" { (t!("fix-comment")) }
                textarea #fix-comment name="comment" rows="2" maxlength="2000" { (s.entered.comment) }
                @if let Some(msg) = s.said("comment") { p.field-error role="alert" { (msg) } }
            }
            @if s.rows_read() { p.help { (t!("fix-submit-help")) } }
            button.btn.btn-primary #fix-revalidate type="submit" { (t!("fix-revalidate")) }
            " " a.btn href=(format!("/jobs/{}", s.job.id)) { (t!("fix-back")) }
        }
    }
}

/// The errored rows to download, correct in a spreadsheet and send back
/// (its own form: a file goes as multipart, the page's form does not).
fn file_section(s: &Screen, csrf: &str) -> Markup {
    let rows = format!("/jobs/{}/fix/rows", s.job.id);
    html! {
        section.panel #fix-file aria-labelledby="fix-file-title" {
            h2 #fix-file-title { (t!("fix-file-title")) }
            p.help { (t!("fix-file-help")) }
            p {
                a.btn #fix-download-xlsx href=(format!("{rows}?format=xlsx")) download { (t!("fix-file-xlsx")) }
                " "
                a.btn #fix-download-csv href=(format!("{rows}?format=csv")) download { (t!("fix-file-csv")) }
            }
            form method="post" action=(format!("/jobs/{}/fix/file", s.job.id)) enctype="multipart/form-data" {
                input type="hidden" name="_csrf" value=(csrf);
                div.field {
                    label for="fix-file-input" { (t!("fix-file-choose")) }
                    input #fix-file-input type="file" name="file" required
                        accept=".csv,.xlsx,text/csv,application/vnd.openxmlformats-officedocument.spreadsheetml.sheet";
                    @if let Some(msg) = s.said("file") { p.field-error role="alert" { (msg) } }
                }
                div.field {
                    label for="fix-file-comment" { (t!("fix-comment")) }
                    textarea #fix-file-comment name="comment" rows="2" maxlength="2000" {}
                }
                button.btn.btn-primary #fix-file-send type="submit" { (t!("fix-file-send")) }
            }
        }
    }
}

#[derive(Deserialize)]
struct RowsQuery {
    format: Option<String>,
}

/// `GET /jobs/{id}/fix/rows?format=xlsx|csv`: the errored-rows file.
async fn rows_download(
    State(app): State<Arc<App>>,
    signed: Signed,
    Path(id): Path<String>,
    Query(q): Query<RowsQuery>,
) -> PageResult {
    let job = jobs::get(&app, &signed.key, &jobs::parse_id(&id)?).await?;
    let format = match q.format.as_deref() {
        Some("csv") => FileFormat::Csv,
        _ => FileFormat::Xlsx,
    };
    let d = reports::download(&app, job, Report::Rows, format).await?;
    let headers = [
        (header::CONTENT_TYPE, d.content_type.to_string()),
        (header::CONTENT_DISPOSITION, d.disposition()),
    ];
    Ok((headers, Body::from_stream(d.into_stream())).into_response())
}

/// The multipart form of the file section: its fields and the file.
#[derive(Default)]
struct SentFile {
    csrf: String,
    comment: String,
    file: Option<RowsFile>,
}

async fn read_sent(mut form: Multipart) -> Result<SentFile, service::Error> {
    let unreadable = |e: axum::extract::multipart::MultipartError| {
        service::Error::invalid("file", format!("the form could not be read: {e}"))
    };
    let mut sent = SentFile::default();
    while let Some(part) = form.next_field().await.map_err(unreadable)? {
        match part.name().unwrap_or("") {
            "_csrf" => sent.csrf = part.text().await.map_err(unreadable)?,
            "comment" => sent.comment = part.text().await.map_err(unreadable)?,
            "file" => {
                let declared = uploads::part_format(part.content_type(), part.file_name())
                    .ok()
                    .flatten();
                let body = part.bytes().await.map_err(unreadable)?;
                // `rows_file` refines the format from the bytes itself.
                let format = declared.unwrap_or_else(|| Format::sniff(&body));
                sent.file = Some(RowsFile {
                    format,
                    encoding: None,
                    body,
                });
            }
            _ => {}
        }
    }
    Ok(sent)
}

/// `POST /jobs/{id}/fix/file`: the corrected errored-rows file as a
/// revision ([`service::rows_file::changes_from_rows_file`], as the API
/// reads it); the new job's page, or the Fix page with why not.
async fn send_back(
    State(app): State<Arc<App>>,
    signed: Signed,
    Path(id): Path<String>,
    headers: HeaderMap,
    form: Multipart,
) -> PageResult {
    let sent = read_sent(form).await;
    let csrf = sent.as_ref().map(|s| s.csrf.as_str()).unwrap_or_default();
    signed.check_form(&headers, csrf)?;
    let job = fixable(&app, &signed.key, &id).await?;
    let result = async {
        let sent = sent?;
        let file = sent
            .file
            .ok_or_else(|| service::Error::invalid("file", "choose the corrected file to send"))?;
        let mut changes =
            rows_file::changes_from_rows_file(&app, &signed.key, &job.id, file).await?;
        changes.comment = Some(sent.comment.trim().to_string()).filter(|c| !c.is_empty());
        service::revisions::revise(&app, &signed.key, &job.id, changes).await
    }
    .await;
    match result {
        Ok(new) => Ok(Redirect::to(&format!("/jobs/{}", new.id)).into_response()),
        Err(e) => {
            let view = mappings::mapping(&app, &signed.key, &job.id).await?;
            let entered = Entered {
                mapping: current_mapping(&job, &view),
                ..Entered::default()
            };
            let refused = Refused {
                shown: Shown::from(e),
                member: Some("file".to_string()),
            };
            render(&app, &signed, &job, &view, entered, Some(refused)).await
        }
    }
}

/// `POST /jobs/{id}/fix`: the form as a revision; the new job's page, or
/// this page again with what was entered and why the service refused.
async fn revalidate(
    State(app): State<Arc<App>>,
    signed: Signed,
    Path(id): Path<String>,
    headers: HeaderMap,
    Form(fields): Form<Vec<(String, String)>>,
) -> PageResult {
    let csrf = field(&fields, "_csrf").unwrap_or_default();
    signed.check_form(&headers, csrf)?;
    let job = fixable(&app, &signed.key, &id).await?;
    let view = mappings::mapping(&app, &signed.key, &job.id).await?;
    let entered = read_form(&fields, &view);
    let changes = changes(&job, &view, &entered);
    if changes.mapping.is_empty() && changes.fixes.is_empty() && changes.exclude.is_empty() {
        let shown = Shown::new(
            StatusCode::UNPROCESSABLE_ENTITY,
            "nothing_changed",
            &t!("fix-nothing-title"),
            t!("fix-nothing-detail"),
        );
        let refused = Refused {
            shown,
            member: None,
        };
        return render(&app, &signed, &job, &view, entered, Some(refused)).await;
    }
    match service::revisions::revise(&app, &signed.key, &job.id, changes).await {
        Ok(new) => Ok(Redirect::to(&format!("/jobs/{}", new.id)).into_response()),
        Err(e) => {
            let member = match &e {
                service::Error::Invalid { parameter, .. } => Some(parameter.clone()),
                _ => None,
            };
            let refused = Refused {
                shown: Shown::from(e),
                member,
            };
            render(&app, &signed, &job, &view, entered, Some(refused)).await
        }
    }
}

fn field<'a>(fields: &'a [(String, String)], name: &str) -> Option<&'a str> {
    fields
        .iter()
        .find(|(k, _)| k == name)
        .map(|(_, v)| v.as_str())
}

/// The form's fields as [`Entered`]. A header the form does not name keeps
/// its column.
fn read_form(fields: &[(String, String)], view: &MappingView) -> Entered {
    let mut e = Entered {
        offset: field(fields, "offset")
            .and_then(|o| o.parse().ok())
            .unwrap_or(0),
        comment: field(fields, "comment").unwrap_or_default().to_string(),
        remember: field(fields, "remember_mapping").is_some(),
        ..Entered::default()
    };
    for h in &view.headers {
        let chosen = match field(fields, &format!("map-{}", h.position)) {
            Some("") => None,
            Some(c) => Some(c.to_string()),
            None => h.column.clone(),
        };
        e.mapping.insert(h.position, chosen);
    }
    for (name, value) in fields {
        if let Some((row, col)) = name.strip_prefix("cell-").and_then(cell_of) {
            let orig = field(fields, &format!("orig-{row}-{col}")).unwrap_or_default();
            e.cells
                .insert((row, col.to_string()), (value.clone(), orig.to_string()));
        } else if name == "exclude"
            && let Ok(row) = value.parse()
        {
            e.exclude.insert(row);
        }
    }
    e
}

/// `{row}-{column}` of a cell's field name.
fn cell_of(rest: &str) -> Option<(u64, &str)> {
    let (row, col) = rest.split_once('-')?;
    Some((row.parse().ok()?, col))
}

/// The cells whose text the person changed, as fixes (an emptied cell is
/// an empty value).
fn changed_cells(entered: &Entered) -> impl Iterator<Item = Fix> + '_ {
    entered
        .cells
        .iter()
        .filter(|(_, (now, was))| now != was)
        .map(|((row, col), (now, _))| Fix {
            row: *row,
            column: col.clone(),
            value: Some(now.clone()).filter(|v| !v.is_empty()),
            was: None,
        })
}

/// What the form asks the revision to change. Only headers whose chosen
/// column differs from the one they have now go into the mapping, so a
/// revision that fixes cells keeps its parent's mapping (and is checked
/// in place). On a job `invalid` for its header, a header that matches
/// nothing and is left on "ignore" is said so (`null`): that is how a
/// file with extra columns gets past `unknown_columns`.
fn changes(job: &Job, view: &MappingView, entered: &Entered) -> Changes {
    let mut mapping = BTreeMap::new();
    for h in &view.headers {
        let chosen = entered.mapping.get(&h.position).cloned().flatten();
        let unmatched = h.how == "none" && !h.header.trim().is_empty();
        if chosen != h.column || (header_problem(job) && unmatched) {
            mapping.insert(h.header.clone(), chosen);
        }
    }
    Changes {
        mapping,
        fixes: changed_cells(entered).collect(),
        exclude: entered.exclude.iter().copied().collect(),
        comment: Some(entered.comment.trim().to_string()).filter(|c| !c.is_empty()),
        remember_mapping: entered.remember,
    }
}
