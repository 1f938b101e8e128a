//! Revisions over HTTP (API.md section 11): `POST /api/jobs/{id}/revisions`
//! with a mapping, fixes and exclusions. The work is the service's
//! ([`crate::service::revisions`]).

use std::collections::BTreeMap;
use std::sync::Arc;

use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::Response;
use serde::Deserialize;
use serde_json::Value;
use utoipa::ToSchema;
use utoipa_axum::router::{OpenApiRouter, UtoipaMethodRouterExt};
use utoipa_axum::routes;

use super::auth::Caller;
use super::problem::{ApiResult, Problem};
use super::views::{Binary, JobView};
use crate::ingest::{Declared, Format};
use crate::ledger::Fix;
use crate::ledger::revision::Changes;
use crate::service::mapping::{MappingView, SavedView};
use crate::service::rows_file::{self, RowsFile};
use crate::service::uploads::Declaration;
use crate::service::{App, Error as ServiceError, jobs, mapping as mappings, revisions};

/// Most bytes of a JSON revision: 10,000 fixes fit many times over.
const JSON_BYTES: usize = 2 << 20;

pub fn routes() -> OpenApiRouter<Arc<App>> {
    OpenApiRouter::new()
        .routes(routes!(revise).layer(axum::extract::DefaultBodyLimit::max(rows_file::MAX_BYTES)))
        .routes(routes!(mapping))
        .routes(routes!(saved_mappings))
        .routes(routes!(forget_mapping))
}

/// What a revision changes; every member is optional.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(example = json!({
    "mapping": {"Nama Pelanggan": "customer_name", "No. WA": "wa_number", "Catatan": null},
    "fixes": [{"row": 4, "column": "consumable_cycle_days", "value": "30"}],
    "exclude": [7, 12],
    "remember_mapping": true,
    "comment": "header from the CRM export"
}))]
pub struct RevisionBody {
    /// The file's headers, as written, → module columns (null: leave the
    /// column out).
    #[serde(default)]
    #[schema(value_type = Object, example = json!({"Nama Pelanggan": "customer_name", "Catatan": null}))]
    mapping: BTreeMap<String, Option<String>>,
    /// Cells to set, by row number (as errors name rows) and module column.
    #[serde(default)]
    fixes: Vec<FixBody>,
    /// Row numbers to leave out.
    #[serde(default)]
    exclude: Vec<u64>,
    /// Why, for the approver.
    #[serde(default)]
    #[schema(nullable = false, max_length = 2000)]
    comment: Option<String>,
    /// Save the mapping in force for the module under the file's exact set
    /// of headers.
    #[serde(default)]
    remember_mapping: bool,
}

/// One fixed cell.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct FixBody {
    /// A workbook job's part (its module) the row is in (API.md section
    /// 16); required there, absent on other jobs.
    #[serde(default)]
    #[schema(nullable = false)]
    part: Option<String>,
    #[schema(minimum = 1)]
    row: u64,
    column: String,
    /// The new text, read by the same rules as a file cell (a number or
    /// `true`/`false` is taken as its text); null empties the cell.
    #[serde(default)]
    #[schema(value_type = Option<String>)]
    value: Value,
}

/// A workbook job's revision (API.md section 16): each fix, exclusion and
/// mapping names its part.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(example = json!({
    "mapping": {"orders": {"Jumlah": "qty"}},
    "fixes": [{"part": "orders", "row": 12, "column": "qty", "value": "3"}],
    "exclude": [{"part": "products", "row": 7}],
    "comment": "quantities from the shop's notes"
}))]
pub struct WorkbookRevisionBody {
    /// By part: the sheet's headers, as written, → module columns.
    #[serde(default)]
    #[schema(value_type = Object)]
    mapping: BTreeMap<String, BTreeMap<String, Option<String>>>,
    /// Cells to set, each naming its part.
    #[serde(default)]
    fixes: Vec<FixBody>,
    /// Rows to leave out, each naming its part.
    #[serde(default)]
    exclude: Vec<PartRow>,
    #[serde(default)]
    #[schema(nullable = false, max_length = 2000)]
    comment: Option<String>,
}

/// A row of a workbook job's part.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct PartRow {
    part: String,
    #[schema(minimum = 1)]
    row: u64,
}

/// The JSON object of a body, or the problem saying the shape it must have.
fn object_of(body: &[u8], shape: &str) -> ApiResult<Value> {
    match serde_json::from_slice::<Value>(body) {
        Ok(v @ Value::Object(_)) => Ok(v),
        Ok(_) => Err(Problem::bad_request(shape)),
        Err(e) => Err(Problem::bad_request(format!("{shape}: {e}"))),
    }
}

/// The problem naming the member a body's deserialisation stopped at.
fn member_problem(e: serde_path_to_error::Error<serde_json::Error>) -> Problem {
    let why = e.inner().to_string();
    // A member the body may not have is named by the message alone.
    let member = match e.path().to_string().as_str() {
        "." => why
            .strip_prefix("unknown field `")
            .and_then(|rest| rest.split('`').next())
            .unwrap_or("body")
            .to_string(),
        path => path.to_string(),
    };
    Problem::invalid_parameter(&member, format!("{member}: {why}"))
}

/// A fix's value as text (`None` empties the cell).
fn fix_value(value: Value, i: usize) -> ApiResult<Option<String>> {
    match value {
        Value::Null => Ok(None),
        Value::String(s) => Ok(Some(s)),
        Value::Number(n) => Ok(Some(n.to_string())),
        Value::Bool(b) => Ok(Some(b.to_string())),
        _ => {
            let member = format!("fixes[{i}].value");
            Err(Problem::invalid_parameter(
                &member,
                format!("{member} must be a string, a number, true, false or null"),
            ))
        }
    }
}

/// Parses a workbook job's revision: the changes of each part, by its
/// module, and the comment.
fn parse_workbook(body: &[u8]) -> ApiResult<(BTreeMap<String, Changes>, Option<String>)> {
    let mut parts: BTreeMap<String, Changes> = BTreeMap::new();
    if body.iter().all(u8::is_ascii_whitespace) {
        return Ok((parts, None));
    }
    let shape = "the body must be a JSON object like {\"mapping\": {\"orders\": {…}}, \"fixes\": [{\"part\", \"row\", \"column\", \"value\"}], \"exclude\": [{\"part\", \"row\"}]}";
    let req: WorkbookRevisionBody =
        serde_path_to_error::deserialize(object_of(body, shape)?).map_err(member_problem)?;
    for (part, mapping) in req.mapping {
        parts.entry(part).or_default().mapping = mapping;
    }
    for (i, f) in req.fixes.into_iter().enumerate() {
        let Some(part) = f.part else {
            let member = format!("fixes[{i}].part");
            return Err(Problem::invalid_parameter(
                &member,
                format!("{member}: a workbook job's fix names its part (its module)"),
            ));
        };
        let fix = Fix {
            row: f.row,
            column: f.column,
            value: fix_value(f.value, i)?,
            was: None,
        };
        parts.entry(part).or_default().fixes.push(fix);
    }
    for e in req.exclude {
        parts.entry(e.part).or_default().exclude.push(e.row);
    }
    Ok((parts, req.comment))
}

/// Parses the body, or the problem naming the member that is wrong.
fn parse(body: &[u8]) -> ApiResult<Changes> {
    if body.iter().all(u8::is_ascii_whitespace) {
        return Ok(Changes::default());
    }
    let shape = "the body must be a JSON object like {\"mapping\": {…}, \"fixes\": [{\"row\", \"column\", \"value\"}], \"exclude\": [rows]}";
    let object = object_of(body, shape)?;
    let req: RevisionBody = serde_path_to_error::deserialize(object).map_err(member_problem)?;
    let mut fixes = Vec::with_capacity(req.fixes.len());
    for (i, f) in req.fixes.into_iter().enumerate() {
        if f.part.is_some() {
            let member = format!("fixes[{i}].part");
            return Err(Problem::invalid_parameter(
                &member,
                format!("{member}: only a workbook job's fixes name a part"),
            ));
        }
        let value = fix_value(f.value, i)?;
        fixes.push(Fix {
            row: f.row,
            column: f.column,
            value,
            was: None,
        });
    }
    Ok(Changes {
        mapping: req.mapping,
        fixes,
        exclude: req.exclude,
        comment: req.comment,
        remember_mapping: req.remember_mapping,
    })
}

/// The errored-rows file a body is, by its `Content-Type` (a CSV or a
/// spreadsheet type of the upload's); `None` for JSON, which is also what
/// a body without a type (or of another type) is taken to be.
fn rows_file_of(headers: &HeaderMap, body: Bytes) -> Option<RowsFile> {
    let declared = Declaration::from_headers(|name| headers.get(name)?.to_str().ok()).ok()?;
    match declared.declared {
        Declared::Format(Format::Json | Format::Ndjson) => None,
        Declared::Format(format) => Some(RowsFile {
            format,
            encoding: declared.charset,
            body,
        }),
        Declared::Sniff | Declared::Multipart => None,
    }
}

/// Revises a job: a new job over the same file with the mapping, fixes
/// and exclusions (its own on top of those it inherits), validated again.
/// The body is JSON, or the job's errored-rows file (`GET
/// /api/jobs/{id}/errors?layout=rows`) corrected: CSV (`text/csv`, …) or
/// a spreadsheet, whose first column is `row`; each non-empty cell that
/// differs from what the job read is a fix, the `errors` column is
/// ignored, a neutralised cell reads back as its value.
#[utoipa::path(post, path = "/api/jobs/{id}/revisions", tag = "jobs", operation_id = "revise_job",
    params(("id" = String, Path, description = "The job to revise (`job_…`)")),
    request_body(description = "What the revision changes: JSON, or the corrected errored-rows file (CSV or XLSX, at most 32 MiB; JSON at most 2 MiB). A workbook job's JSON names the part of each fix and exclusion, and keys its mapping by part: `{\"mapping\": {\"orders\": {\"Jumlah\": \"qty\"}}, \"fixes\": [{\"part\": \"orders\", \"row\": 12, \"column\": \"qty\", \"value\": \"3\"}], \"exclude\": [{\"part\": \"products\", \"row\": 7}]}`", content(
        (RevisionBody = "application/json"),
        (String = "text/csv"),
        (Binary = "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet"),
    )),
    responses(
        (status = 201, description = "The new job, `validating`, with `revision_of` and `revision`; `Location` names it", body = JobView),
        (status = 400, description = "`bad_request`: the body is not a JSON object"),
        (status = 403, description = "`forbidden`: the key may not upload to the job's module"),
        (status = 404, description = "`not_found`: no such job"),
        (status = 409, description = "`invalid_state`: the job cannot be revised from its state (or was revised already)"),
        (status = 413, description = "`too_large`: a file over 32 MiB, or JSON over 2 MiB"),
        (status = 422, description = "`invalid_parameter`: an unknown column, a column mapped twice, a header the file lacks, a row the file lacks, a fix of a column the file does not give, over the limits; the member is named. A corrected errored-rows file: no `row` first column or a row that is not a whole number (`row`), a header that names no column (that header), no cell changed (`fixes`), an unreadable file (`body`)"),
    ))]
async fn revise(
    State(app): State<Arc<App>>,
    caller: Caller,
    Path(id): Path<String>,
    headers: HeaderMap,
    body: Bytes,
) -> ApiResult<Response> {
    let job_id = jobs::parse_id(&id)?;
    if jobs::get(&app, &caller.0, &job_id).await?.is_workbook()
        && rows_file_of(&headers, body.clone()).is_none()
    {
        if body.len() > JSON_BYTES {
            return Err(ServiceError::TooLarge {
                limit: JSON_BYTES as u64,
            }
            .into());
        }
        let (parts, comment) = parse_workbook(&body)?;
        let job = revisions::revise_workbook(&app, &caller.0, &job_id, parts, comment).await?;
        return super::answer::job_response(&app, &job, StatusCode::CREATED).await;
    }
    let changes = match rows_file_of(&headers, body.clone()) {
        Some(file) => {
            let id = jobs::parse_id(&id)?;
            rows_file::changes_from_rows_file(&app, &caller.0, &id, file).await?
        }
        None if body.len() > JSON_BYTES => {
            return Err(ServiceError::TooLarge {
                limit: JSON_BYTES as u64,
            }
            .into());
        }
        None => parse(&body)?,
    };
    let job = revisions::revise(&app, &caller.0, &jobs::parse_id(&id)?, changes).await?;
    super::answer::job_response(&app, &job, StatusCode::CREATED).await
}

/// How the file's headers meet the module's columns: each header's column
/// and how it was matched, ranked suggestions for the others (never
/// applied by themselves), sample values, missing columns.
#[utoipa::path(get, path = "/api/jobs/{id}/mapping", tag = "jobs", operation_id = "job_mapping",
    params(("id" = String, Path, description = "The job (`job_…`)")),
    responses(
        (status = 200, description = "The headers, the missing columns, the unmatched headers", body = MappingView),
        (status = 403, description = "`forbidden`: the job's module is outside the key's scope"),
        (status = 404, description = "`not_found`: no such job"),
        (status = 409, description = "`invalid_state`: the job's file never had a readable header (unreadable, another encoding, too wide)"),
        (status = 410, description = "`purged`: the job's file was purged (API.md section 10)"),
    ))]
async fn mapping(
    State(app): State<Arc<App>>,
    caller: Caller,
    Path(id): Path<String>,
) -> ApiResult<axum::Json<MappingView>> {
    let id = jobs::parse_id(&id)?;
    Ok(axum::Json(mappings::mapping(&app, &caller.0, &id).await?))
}

/// The saved mappings of a module.
#[derive(Debug, serde::Serialize, ToSchema)]
pub struct SavedList {
    pub mappings: Vec<SavedView>,
}

/// The mappings saved for a module (`remember_mapping`), newest first.
#[utoipa::path(get, path = "/api/modules/{module}/mappings", tag = "modules", operation_id = "list_mappings",
    params(("module" = String, Path, description = "The module's key")),
    responses(
        (status = 200, description = "The module's saved mappings", body = SavedList),
        (status = 403, description = "`forbidden`: the module is outside the key's scope"),
        (status = 404, description = "`unknown_module`"),
    ))]
async fn saved_mappings(
    State(app): State<Arc<App>>,
    caller: Caller,
    Path(module): Path<String>,
) -> ApiResult<axum::Json<SavedList>> {
    let mappings = mappings::saved(&app, &caller.0, &module).await?;
    Ok(axum::Json(SavedList { mappings }))
}

/// Forgets a saved mapping (admins).
#[utoipa::path(delete, path = "/api/modules/{module}/mappings/{id}", tag = "modules", operation_id = "delete_mapping",
    params(
        ("module" = String, Path, description = "The module's key"),
        ("id" = String, Path, description = "The mapping (`map_…`)"),
    ),
    responses(
        (status = 204, description = "Forgotten"),
        (status = 403, description = "`forbidden`: not an admin key, or outside its scope"),
        (status = 404, description = "`unknown_module`, or `not_found`: no such mapping"),
    ))]
async fn forget_mapping(
    State(app): State<Arc<App>>,
    caller: Caller,
    Path((module, id)): Path<(String, String)>,
) -> ApiResult<StatusCode> {
    mappings::forget(&app, &caller.0, &module, &id).await?;
    Ok(StatusCode::NO_CONTENT)
}
