//! Revisions (API.md section 11): a new job over the same stored file with
//! a column mapping, fixed cells and excluded rows. Nothing is edited in
//! place: the revised job stays as it was (a job waiting at the gate is
//! cancelled by its revision), and the revision's validation reads the
//! file again with the changes applied.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::json;

use super::{App, Error, Result, comment, jobs, uploads};
use crate::catalog::Module;
use crate::ids::JobId;
use crate::keys::KeyRecord;
use crate::ledger::revision::{self, Changes};
use crate::ledger::{Fix, Job, Move};
use crate::store::{self, jobs::MoveBy, stage::Stage};
use crate::validate::{Mapping, match_header_with};

/// Most fixes one revision may carry, inherited ones included: a revision
/// mends a file, it does not retype it.
pub const MAX_FIXES: usize = 10_000;
/// Most rows one revision may leave out, inherited ones included.
pub const MAX_EXCLUDED: usize = 100_000;

/// Whether `actor` may revise `job` now: the job can be revised and the
/// key may upload to its module. Both doors offer a fix on this, and
/// [`revise`] checks it again.
pub fn may_revise(app: &App, actor: &KeyRecord, job: &Job) -> bool {
    // A workbook job is revised through the API (its parts named); the
    // console's fix page is a one-module job's.
    revision::refusal(job).is_none()
        && (job.module.as_ref()).is_some_and(|m| uploads::target(app, actor, m.as_str()).is_ok())
}

/// Revises `job_id` with `changes`: checks them against the module and
/// the file, then in one transaction records the new job (`validating`)
/// and the revised job's move. The new job.
pub async fn revise(app: &App, actor: &KeyRecord, job_id: &JobId, changes: Changes) -> Result<Job> {
    let job = jobs::get(app, actor, job_id).await?;
    let key = super::module_of_job(app, &job, "a revision without parts")?
        .key
        .clone();
    let module = uploads::target(app, actor, key.as_str())?;
    revisable(&job)?;
    let mut changes = changes;
    changes.comment = comment(changes.comment.as_deref())?;
    let (combined, saved) = prepare(app, actor, module, &job, changes).await?;
    let now = store::now();
    let new = job.revised_by(combined, now);
    record(app, actor, &job, &new, &[], saved).await?;
    tracing::info!(job = %new.id, revision_of = %job.id, "revision accepted");
    Ok(new)
}

/// Revises a workbook job (API.md section 16): each part's changes (by
/// its module) checked against the part's module and sheet; the new job
/// is a workbook whose every part revises the part before it, and whose
/// own revision names who revised (for four-eyes) and why.
pub async fn revise_workbook(
    app: &App,
    actor: &KeyRecord,
    job_id: &JobId,
    mut by_part: BTreeMap<String, Changes>,
    why: Option<String>,
) -> Result<Job> {
    let job = jobs::get(app, actor, job_id).await?;
    if !job.is_workbook() {
        return Err(Error::invalid(
            "part",
            format!(
                "{} is a one-module job: its fixes, exclusions and mapping name no part",
                job.id
            ),
        ));
    }
    revisable(&job)?;
    if let Some(unknown) = by_part
        .keys()
        .find(|p| !job.parts.iter().any(|x| x.module.as_str() == p.as_str()))
    {
        let parts: Vec<&str> = job.parts.iter().map(|p| p.module.as_str()).collect();
        return Err(Error::invalid(
            "part",
            format!(
                "{} has no part {unknown:?}; its parts: {}",
                job.id,
                parts.join(", ")
            ),
        ));
    }
    let why = comment(why.as_deref())?;
    let now = store::now();
    let mut new_parts = Vec::with_capacity(job.parts.len());
    let mut saved = None;
    for (_, part) in super::parts::row_jobs(app, &job, None).await? {
        let key = part
            .module
            .clone()
            .unwrap_or_else(|| unreachable_module(&job));
        let module = uploads::target(app, actor, key.as_str())?;
        let mut changes = by_part.remove(key.as_str()).unwrap_or_default();
        changes.comment = why.clone();
        let (combined, remembered) = prepare(app, actor, module, &part, changes)
            .await
            .map_err(|e| in_part(e, key.as_str()))?;
        saved = saved.or(remembered);
        new_parts.push(part.revised_by(combined, now));
    }
    let own = revision::combine(
        &job,
        Changes {
            comment: why,
            ..Changes::default()
        },
        actor,
    );
    let new = job.revised_by(own, now);
    record(app, actor, &job, &new, &new_parts, saved).await?;
    tracing::info!(job = %new.id, revision_of = %job.id, parts = new_parts.len(), "workbook revision accepted");
    super::jobs::find(app, &new.id).await
}

/// A part's module, which every part has.
fn unreachable_module(job: &Job) -> crate::ids::ModuleKey {
    job.parts
        .first()
        .map(|p| p.module.clone())
        .unwrap_or_else(|| crate::ids::ModuleKey::from_stored(""))
}

/// A refusal of a part's changes, its parameter prefixed with the part
/// (`orders.fixes[0].column`).
fn in_part(e: Error, part: &str) -> Error {
    match e {
        Error::Invalid { parameter, message } => Error::Invalid {
            parameter: format!("{part}.{parameter}"),
            message: format!("{part}: {message}"),
        },
        other => other,
    }
}

/// [`Error::InvalidState`] unless the job can be revised now.
fn revisable(job: &Job) -> Result<()> {
    match revision::refusal(job) {
        None => Ok(()),
        Some(why) => Err(Error::InvalidState {
            title: "The job cannot be revised",
            detail: why,
            state: job.state.as_str().to_string(),
        }),
    }
}

/// Checks `changes` to a one-module job (or a workbook's part) against
/// its module and file: the revision they make, and the mapping to save
/// when asked to remember it.
async fn prepare(
    app: &App,
    actor: &KeyRecord,
    module: &Module,
    job: &Job,
    changes: Changes,
) -> Result<(crate::ledger::Revision, Option<store::mappings::Saved>)> {
    check_members(app, module, &changes)?;
    let remember = changes.remember_mapping;
    let combined = revision::combine(job, changes, actor);
    check_limits(&combined)?;
    let provided = match staged_columns(app, module, job, &combined.mapping).await? {
        Some(provided) => provided,
        None => {
            let header = file_header(app, job).await?;
            check_mapping(module, &header, &combined.mapping)?
        }
    };
    check_fixed_columns(module, &combined.fixes, &provided)?;
    check_rows(app, module, job, &combined.fixes, &combined.exclude).await?;
    let saved = match remember {
        true if combined.mapping.is_empty() => {
            return Err(Error::invalid(
                "remember_mapping",
                "this revision has no mapping to remember; give one in `mapping`",
            ));
        }
        true => Some(store::mappings::Saved {
            id: format!("map_{}", ulid::Ulid::generate()),
            module: module.key.clone(),
            headers: file_header(app, job).await?,
            mapping: combined.mapping.clone(),
            created_by: actor.id.clone(),
            created_at: store::now(),
        }),
        false => None,
    };
    Ok((combined, saved))
}

/// Records a revision in one transaction: the new job (`validating`; a
/// workbook's with its `parts`), the revised job's move, and the mapping
/// to remember.
async fn record(
    app: &App,
    actor: &KeyRecord,
    job: &Job,
    new: &Job,
    parts: &[Job],
    saved: Option<store::mappings::Saved>,
) -> Result<()> {
    let now = new.created_at;
    let after = revision::revised(job, &new.id, actor, now);
    // The revised job's event says what took its place (its comment is
    // the cancelled request's decision); the revision's first event names
    // the file's submitter, whom the new job keeps.
    let note = format!("revised as {}", new.id);
    let by = MoveBy {
        event: Move::Revised,
        actor: Some(&actor.id),
        comment: Some(&note),
        detail: Some(json!({ "revised_as": new.id, "issued_by": actor.issued_by })),
        lease_owner: None,
    };
    let mut tx = app.db.begin().await?;
    let created = json!({
        "revision_of": job.id,
        "submitter": job.submitter,
        "comment": new.revision.as_ref().and_then(|r| r.comment.as_deref()),
    });
    store::jobs::insert_by(&mut tx.conn(), &app.seal.key, new, &actor.id, Some(created)).await?;
    for (n, part) in parts.iter().enumerate() {
        store::jobs::insert_part(&mut tx.conn(), &new.id, n as i64, part).await?;
    }
    if !store::jobs::transition(&mut tx.conn(), &app.seal.key, job, &after, by).await? {
        tx.rollback().await?;
        let now = jobs::get(app, actor, &job.id).await?;
        return Err(Error::job_state(&now, Move::Revised));
    }
    store::jobs::set_revised_as(&mut tx.conn(), &job.id, &new.id).await?;
    if let Some(saved) = &saved {
        store::mappings::save(&mut tx.conn(), saved).await?;
    }
    tx.commit().await?;
    app.moves.job(&job.id);
    app.work.notify_one();
    Ok(())
}

/// Each named column is one of the module's, each fixed cell's text fits
/// a cell.
fn check_members(app: &App, module: &Module, changes: &Changes) -> Result<()> {
    let known = |name: &str| module.column_index(name).is_some();
    let columns = || {
        (module.columns.iter())
            .map(|c| c.name.as_str())
            .collect::<Vec<_>>()
            .join(", ")
    };
    for (header, column) in &changes.mapping {
        if let Some(c) = column.as_deref().filter(|c| !known(c)) {
            return Err(Error::invalid(
                &format!("mapping.{header}"),
                format!(
                    "{c:?} is not a column of {}; its columns: {}",
                    module.key,
                    columns()
                ),
            ));
        }
    }
    for (i, f) in changes.fixes.iter().enumerate() {
        if !known(&f.column) {
            return Err(Error::invalid(
                &format!("fixes[{i}].column"),
                format!(
                    "{:?} is not a column of {}; its columns: {}",
                    f.column,
                    module.key,
                    columns()
                ),
            ));
        }
        let long = f
            .value
            .as_ref()
            .is_some_and(|v| v.len() > app.settings.limits.cell_bytes);
        if long || f.value.as_ref().is_some_and(|v| v.contains('\0')) {
            return Err(Error::invalid(
                &format!("fixes[{i}].value"),
                format!(
                    "a value has at most {} bytes and no NUL characters",
                    app.settings.limits.cell_bytes
                ),
            ));
        }
    }
    let mut seen = BTreeSet::new();
    for (i, f) in changes.fixes.iter().enumerate() {
        if !seen.insert((f.row, f.column.as_str())) {
            return Err(Error::invalid(
                &format!("fixes[{i}]"),
                format!("row {} column {} is fixed twice", f.row, f.column),
            ));
        }
    }
    Ok(())
}

fn check_limits(revision: &crate::ledger::Revision) -> Result<()> {
    if revision.fixes.len() > MAX_FIXES {
        return Err(Error::invalid(
            "fixes",
            format!(
                "a revision fixes at most {MAX_FIXES} cells (this one, with those before it: {}); \
                 upload a corrected file instead",
                revision.fixes.len()
            ),
        ));
    }
    if revision.exclude.len() > MAX_EXCLUDED {
        return Err(Error::invalid(
            "exclude",
            format!(
                "a revision leaves out at most {MAX_EXCLUDED} rows (this one, with those before it: {})",
                revision.exclude.len()
            ),
        ));
    }
    Ok(())
}

/// The columns the job's file gave as its rows were staged, when the
/// revision keeps its mapping: the file need not be opened again (a large
/// workbook's header is not free).
async fn staged_columns(
    app: &App,
    module: &Module,
    job: &Job,
    mapping: &Mapping,
) -> Result<Option<Vec<usize>>> {
    if job.mapping_in_force() != *mapping || job.counts.rows == 0 {
        return Ok(None);
    }
    let mut c = app.db.acquire().await?;
    let stage = Stage::of(&mut c.conn(), module, &job.id).await?;
    Ok(stage.map(|s| s.provided))
}

/// The header of the job's file.
async fn file_header(app: &App, job: &Job) -> Result<Vec<String>> {
    Ok(super::mapping::head(app, job, 0).await?.header)
}

/// The mapping names headers of the file, maps no column twice and leaves
/// no required column out. The catalog positions the file then gives.
fn check_mapping(module: &Module, header: &[String], mapping: &Mapping) -> Result<Vec<usize>> {
    for name in mapping.keys() {
        if !header.iter().any(|h| h.trim() == name.trim()) {
            return Err(Error::invalid(
                &format!("mapping.{name}"),
                format!(
                    "the file has no header {name:?}; its headers: {}",
                    header.join(", ")
                ),
            ));
        }
    }
    let mut targets: BTreeMap<&str, &str> = BTreeMap::new();
    for (name, column) in mapping {
        if let Some(c) = column
            && let Some(first) = targets.insert(c, name)
        {
            return Err(Error::invalid(
                &format!("mapping.{name}"),
                format!("{first:?} and {name:?} are both mapped to {c}; map one of them to null"),
            ));
        }
    }
    match match_header_with(module, header, mapping) {
        Ok(map) => Ok(map.provided.iter().map(|&(c, _)| c).collect()),
        Err(e) => Err(Error::invalid(
            "mapping",
            e.message.trim_start_matches("row 1: "),
        )),
    }
}

/// A fix sets a column the file (as mapped) gives.
fn check_fixed_columns(module: &Module, fixes: &[Fix], provided: &[usize]) -> Result<()> {
    for f in fixes {
        let given = module
            .column_index(&f.column)
            .is_some_and(|c| provided.contains(&c));
        if !given {
            return Err(Error::invalid(
                "fixes",
                format!(
                    "row {}: the file has no column for {}; map one of its headers to it first",
                    f.row, f.column
                ),
            ));
        }
    }
    Ok(())
}

/// Every fixed or excluded row is a row of the file, as the job read it.
async fn check_rows(
    app: &App,
    module: &Module,
    job: &Job,
    fixes: &[Fix],
    exclude: &[u64],
) -> Result<()> {
    let wanted: BTreeSet<u64> = fixes
        .iter()
        .map(|f| f.row)
        .chain(exclude.iter().copied())
        .collect();
    if wanted.is_empty() {
        return Ok(());
    }
    let mut c = app.db.acquire().await?;
    let stage = match Stage::of(&mut c.conn(), module, &job.id).await? {
        Some(stage) if job.counts.rows > 0 => stage,
        _ => {
            return Err(Error::invalid(
                if fixes.is_empty() { "exclude" } else { "fixes" },
                "the rows of this file were never read (its header did not match the module); \
                 map the columns first, then fix or exclude rows in a revision of that job",
            ));
        }
    };
    let list: Vec<i64> = wanted.iter().map(|&r| r as i64).collect();
    let found = store::rows::existing_rows(&mut c.conn(), &stage, &list).await?;
    if let Some(missing) = list.iter().find(|r| !found.contains(r)) {
        let member = if fixes.iter().any(|f| f.row as i64 == *missing) {
            "fixes"
        } else {
            "exclude"
        };
        return Err(Error::invalid(
            member,
            format!(
                "the file has no row {missing}; rows are numbered as in the errors (the header is row 1)"
            ),
        ));
    }
    Ok(())
}
