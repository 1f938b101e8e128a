//! A module's data as people see it (API.md section 15): the modules the
//! key covers, and for each its row count, its last imports and an export
//! form with a filter for each column, beside a line on the export, edit,
//! import loop. The export is the service's ([`crate::service::export`]),
//! the same the API streams: scope, filters and the ledger event are its.

use std::sync::Arc;

use axum::Router;
use axum::body::Body;
use axum::extract::{Path, State};
use axum::http::{Uri, header};
use axum::response::IntoResponse;
use axum::routing::get;
use maud::{Markup, html};

use super::PageResult;
use super::jobs::short_id;
use super::layout::{self, Ctx, Nav, badge, count, person};
use super::session::Signed;
use crate::catalog::Module;
use crate::ledger::Job;
use crate::ledger::export::ExportFormat;
use crate::ledger::job::People;
use crate::service::export::{self, Request};
use crate::service::jobs::{self, ListQuery};
use crate::service::{App, uploads};
use crate::t;

/// The imports a module's page lists.
const LAST_IMPORTS: i64 = 5;

pub fn routes() -> Router<Arc<App>> {
    Router::new()
        .route("/modules", get(index))
        .route("/modules/{module}", get(page))
        .route("/modules/{module}/export", get(download))
}

/// `/modules`: the modules the key covers, each linking to its page.
async fn index(State(app): State<Arc<App>>, signed: Signed) -> PageResult {
    let ctx = signed.ctx(&app, Nav::Data);
    let modules = (app.catalog.modules().iter()).filter(|m| signed.key.covers(&m.key));
    let content = html! {
        h1 { (t!("data-index-title")) }
        p.lead { (t!("data-loop-help")) }
        ul.data-modules {
            @for m in modules {
                li { a href=(format!("/modules/{}", m.key)) { (layout::module_label(m)) } }
            }
        }
    };
    Ok(layout::page(&ctx, &t!("data-index-title"), content).into_response())
}

/// `/modules/{module}`: the row count, the export form and the last
/// imports.
async fn page(
    State(app): State<Arc<App>>,
    signed: Signed,
    Path(module): Path<String>,
) -> PageResult {
    let rows = export::row_count(&app, &signed.key, &module).await?;
    let m = uploads::target(&app, &signed.key, &module)?;
    let query = ListQuery {
        module: Some(m.key.to_string()),
        state: None,
        mine: false,
        cursor: None,
        limit: LAST_IMPORTS,
    };
    let last = jobs::list(&app, &signed.key, query).await?.jobs;
    let names = app.names().await?;
    let ctx = signed.ctx(&app, Nav::Data);
    let content = html! {
        div.page-head {
            h1 { (layout::module_label(m)) }
            a.btn href=(format!("/modules/{}/rules", m.key)) { (t!("data-rules-link")) }
        }
        p.lead #row-count data-rows=(rows) { (t!("data-row-count", count = rows)) }
        section.panel aria-labelledby="export-title" {
            h2 #export-title { (t!("data-export-title")) }
            p { (t!("data-loop-help")) }
            (export_form(m))
        }
        section.panel aria-labelledby="imports-title" {
            h2 #imports-title { (t!("data-imports-title")) }
            (imports(&ctx, &People(&names), &last))
        }
    };
    Ok(layout::page(&ctx, &layout::module_name(m), content).into_response())
}

/// The export's form: a format, a filter field for each column (left
/// empty, no filter) and a limit; a plain GET, so the browser downloads.
fn export_form(m: &Module) -> Markup {
    html! {
        form.export method="get" action=(format!("/modules/{}/export", m.key)) {
            div.field {
                label for="x-format" { (t!("data-format")) }
                select #x-format name="format" {
                    @for f in ExportFormat::ALL {
                        option value=(f.as_str()) { (f.as_str()) }
                    }
                }
            }
            fieldset {
                legend { (t!("data-filters")) }
                @for c in &m.columns {
                    div.field {
                        label for=(format!("x-{}", c.name)) { (c.name) }
                        input id=(format!("x-{}", c.name)) name=(format!("where.{}", c.name))
                            type="text" placeholder=(t!("data-filter-any"));
                    }
                }
            }
            div.field {
                label for="x-limit" { (t!("data-limit")) }
                input #x-limit name="limit" type="number" min="0" step="1";
            }
            button.btn.btn-primary type="submit" { (t!("data-export")) }
        }
    }
}

/// The module's last imports, newest first.
fn imports(ctx: &Ctx, people: &People, jobs: &[Job]) -> Markup {
    if jobs.is_empty() {
        return html! { p.empty { (t!("data-imports-none")) } };
    }
    let heads = [
        t!("jobs-col-job"),
        t!("jobs-state"),
        t!("jobs-col-rows"),
        t!("jobs-col-submitted-by"),
        t!("jobs-col-created"),
    ];
    let heads: Vec<&str> = heads.iter().map(String::as_str).collect();
    html! {
        div.table-wrap {
            table.small.imports {
                (layout::table_head(&heads))
                tbody {
                    @for j in jobs {
                        tr data-job-id=(j.id) {
                            td { a href=(format!("/jobs/{}", j.id)) { code { (short_id(&j.id)) } } }
                            td { (badge(j.state)) }
                            td.num { (count(j.counts.rows)) }
                            td { (person(&people.person(&j.submitter))) }
                            td { (ctx.when(&j.created_at)) }
                        }
                    }
                }
            }
        }
    }
}

/// `/modules/{module}/export`: the export the form asks for, streamed as
/// the API streams it. The form sends every field: an empty filter or
/// limit is no filter or limit (a null is asked for through the API).
async fn download(
    State(app): State<Arc<App>>,
    signed: Signed,
    Path(module): Path<String>,
    uri: Uri,
) -> PageResult {
    let request = Request::read(&given_fields(uri.query().unwrap_or("")))?;
    let d = export::export(&app, &signed.key, &module, request).await?;
    let headers = [
        (header::CONTENT_TYPE, d.content_type.to_string()),
        (header::CONTENT_DISPOSITION, d.disposition()),
    ];
    Ok((headers, Body::from_stream(d.into_stream())).into_response())
}

/// The form's query without its empty fields.
fn given_fields(query: &str) -> String {
    let given = form_urlencoded::parse(query.as_bytes()).filter(|(_, v)| !v.trim().is_empty());
    form_urlencoded::Serializer::new(String::new())
        .extend_pairs(given)
        .finish()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn empty_fields_of_the_form_are_no_filter() {
        assert_eq!(
            given_fields("format=csv&where.city=Bandung+Barat&where.grade=&limit=+"),
            "format=csv&where.city=Bandung+Barat"
        );
    }
}
