//! Reading a workbook job's rows (API.md section 16): its preview and its
//! errors, of one part (`?part=`) or of every part in reference order,
//! each row naming its part. A part is read as the one-module job it is
//! underneath, seen in its workbook's state.

use super::jobs::{self, PreviewFilter, PreviewPage};
use super::{App, Error, Result};
use crate::ids::ModuleKey;
use crate::ledger::Job;
use crate::validate::RowError;

/// The one-module jobs a read of `job`'s rows covers: the job itself
/// (tagged `None`), or a workbook's parts, each tagged with its module
/// (only `part`'s when one is named). A part is shown in its workbook's
/// state, purge and revision. `part` naming no part of the job is a `422`
/// naming `part`.
pub async fn row_jobs(
    app: &App,
    job: &Job,
    part: Option<&str>,
) -> Result<Vec<(Option<ModuleKey>, Job)>> {
    if !job.is_workbook() {
        return match (part, &job.module) {
            (Some(p), Some(m)) if p != m.as_str() => Err(no_part(job, p)),
            _ => Ok(vec![(None, job.clone())]),
        };
    }
    let mut found = Vec::new();
    for p in &job.parts {
        if part.is_some_and(|wanted| wanted != p.module.as_str()) {
            continue;
        }
        let mut one = jobs::find_part(app, &p.job).await?;
        one.state = job.state;
        one.purged_at = job.purged_at;
        one.revised_as = job.revised_as.clone();
        found.push((Some(p.module.clone()), one));
    }
    match part {
        Some(p) if found.is_empty() => Err(no_part(job, p)),
        _ => Ok(found),
    }
}

fn no_part(job: &Job, part: &str) -> Error {
    let parts: Vec<&str> = job.modules().iter().map(|m| m.as_str()).collect();
    Error::invalid(
        "part",
        format!(
            "{} has no part {part:?}; its parts: {}",
            job.id,
            parts.join(", ")
        ),
    )
}

/// A page of the preview of `job` (of one `part`, or of every part in
/// reference order), each row tagged with its part on a workbook job.
pub async fn preview(
    app: &App,
    job: &Job,
    part: Option<&str>,
    filter: PreviewFilter,
    offset: i64,
    limit: i64,
) -> Result<(i64, Vec<(Option<ModuleKey>, jobs::PreviewRow)>)> {
    let mut total = 0;
    let mut rows = Vec::new();
    let mut skip = offset;
    for (tag, one) in row_jobs(app, job, part).await? {
        let room = (limit - rows.len() as i64).max(0);
        let PreviewPage {
            total: n,
            rows: got,
        } = jobs::preview(app, &one, filter, skip, room).await?;
        total += n;
        skip = (skip - n).max(0);
        rows.extend(got.into_iter().map(|r| (tag.clone(), r)));
    }
    Ok((total, rows))
}

/// A page of the row errors of `job` (of one `part`, or of every part in
/// reference order), each tagged with its part on a workbook job.
pub async fn errors(
    app: &App,
    job: &Job,
    part: Option<&str>,
    offset: i64,
    limit: i64,
) -> Result<(i64, Vec<(Option<ModuleKey>, RowError)>)> {
    let mut total = 0;
    let mut list = Vec::new();
    let mut skip = offset;
    for (tag, one) in row_jobs(app, job, part).await? {
        let room = (limit - list.len() as i64).max(0);
        let (n, got) = jobs::errors(app, &one, skip, room).await?;
        total += n;
        skip = (skip - n).max(0);
        list.extend(got.into_iter().map(|e| (tag.clone(), e)));
    }
    Ok((total, list))
}

/// The one-module job a report file of `job` is made of: the job itself,
/// or with `part` a workbook's part. A workbook's report is a part's: a
/// `422` naming `part` without one.
pub async fn report_job(app: &App, job: &Job, part: Option<&str>) -> Result<Job> {
    if job.is_workbook() && part.is_none() {
        return Err(Error::invalid(
            "part",
            "a workbook job's report files are a part's: name it with part=<module>",
        ));
    }
    let mut found = row_jobs(app, job, part).await?;
    Ok(found.remove(0).1)
}
