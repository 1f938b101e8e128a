//! Reading jobs: one job, a page of jobs, the preview, the errors and the
//! events; and waiting for the service's work on a job. Every read is
//! scoped: a job outside the acting key's modules is `forbidden`.

use std::collections::HashMap;
use std::time::Duration;

use super::{App, Error, Result, in_scope};
use crate::ids::JobId;
use crate::keys::KeyRecord;
use crate::ledger::chain::Event;
use crate::ledger::{Job, JobState};
use crate::store::rows::{self, StoredRow};
use crate::store::stage::Stage;
use crate::store::{self, jobs::Filter};
use crate::validate::{RowAction, RowError};

/// A job id as a request gives it. Text no job can have is answered as
/// an id no job has: `not_found`, naming it.
pub fn parse_id(text: &str) -> Result<JobId> {
    JobId::parse(text).ok_or_else(|| Error::not_found("job", text))
}

/// The job with this id, if the key's scope covers its module.
pub async fn get(app: &App, actor: &KeyRecord, id: &JobId) -> Result<Job> {
    let job = find(app, id).await?;
    super::job_in_scope(actor, &job)?;
    Ok(job)
}

/// The job with this id, whoever asks (the service's own reads).
pub async fn find(app: &App, id: &JobId) -> Result<Job> {
    let mut c = app.db.acquire().await?;
    store::jobs::get(&mut c.conn(), id)
        .await?
        .ok_or_else(|| Error::not_found("job", id.as_str()))
}

/// A workbook job's part, as the one-module job it is underneath (the
/// service's own reads of its rows).
pub async fn find_part(app: &App, id: &JobId) -> Result<Job> {
    let mut c = app.db.acquire().await?;
    store::jobs::get_part(&mut c.conn(), id)
        .await?
        .ok_or_else(|| Error::not_found("part", id.as_str()))
}

/// What a list of jobs asks for.
#[derive(Debug, Default, Clone)]
pub struct ListQuery {
    pub module: Option<String>,
    pub state: Option<JobState>,
    /// Only the acting key's uploads.
    pub mine: bool,
    /// The `next` of the page before.
    pub cursor: Option<String>,
    pub limit: i64,
}

/// A page of jobs, newest first, and where the next page starts.
pub struct JobPage {
    pub jobs: Vec<Job>,
    pub next: Option<String>,
}

/// The jobs the key's scope covers, newest first, one page at a time.
pub async fn list(app: &App, actor: &KeyRecord, q: ListQuery) -> Result<JobPage> {
    if let Some(m) = &q.module {
        let module = app.module(m)?;
        in_scope(actor, &module.key)?;
    }
    let limit = q.limit.clamp(1, 200);
    let filter = Filter {
        modules: actor.scope(),
        module: q.module,
        state: q.state,
        submitter: q.mine.then(|| actor.id.clone()),
        before: q.cursor,
        limit: limit + 1,
    };
    let mut c = app.db.acquire().await?;
    let mut jobs = store::jobs::list(&mut c.conn(), &filter).await?;
    let next = if jobs.len() as i64 > limit {
        jobs.truncate(limit as usize);
        jobs.last().map(|j| j.id.to_string())
    } else {
        None
    };
    Ok(JobPage { jobs, next })
}

/// The jobs with these ids that the key may see (for a list that
/// refreshes itself); at most 200.
pub async fn some(app: &App, actor: &KeyRecord, ids: &[JobId]) -> Result<Vec<Job>> {
    let ids = &ids[..ids.len().min(200)];
    let mut c = app.db.acquire().await?;
    let jobs = store::jobs::get_many(&mut c.conn(), ids).await?;
    Ok(jobs
        .into_iter()
        .filter(|j| j.modules().into_iter().all(|m| actor.covers(m)))
        .collect())
}

/// One row of the preview with its errors and warnings.
pub struct PreviewRow {
    pub row: StoredRow,
    pub errors: Vec<RowError>,
    pub warnings: Vec<RowError>,
    /// Cells a revision set (API.md section 11): column → what the file said.
    pub fixed: Vec<(String, Option<String>)>,
}

/// Which rows a preview page shows.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PreviewFilter {
    /// Only rows with this action.
    pub action: Option<RowAction>,
    /// Only rows with at least one warning.
    pub warned: bool,
    /// Only rows with a cell a normalizer of the module's rules rewrote.
    pub normalized: bool,
}

/// A page of a job's preview.
pub struct PreviewPage {
    /// Rows with the asked action (or all rows) in the job.
    pub total: i64,
    pub rows: Vec<PreviewRow>,
}

/// A page of a job's preview (one action, or all), in file order, read
/// from the database page by page: never the whole job.
pub async fn preview(
    app: &App,
    job: &Job,
    filter: PreviewFilter,
    offset: i64,
    limit: i64,
) -> Result<PreviewPage> {
    if let Some(at) = job.purged_at {
        // What the preview showed is gone; the job and its errors are not.
        return Err(Error::purged(job, at, app.settings.limits.retention_secs));
    }
    let mut c = app.db.acquire().await?;
    // A job never validated, or of a module the catalog no longer has,
    // has no rows to show.
    let stage = match (job.module.as_ref()).and_then(|m| app.catalog.get(m.as_str())) {
        Some(module) => Stage::of(&mut c.conn(), module, &job.id).await?,
        None => None,
    };
    let Some(stage) = stage else {
        if let Some(to) = &job.revised_as {
            return Err(Error::Revised {
                id: job.id.clone(),
                to: to.clone(),
            });
        }
        return Ok(PreviewPage {
            total: 0,
            rows: vec![],
        });
    };
    let marked = rows::Marked {
        warned: filter.warned,
        normalized: filter.normalized,
    };
    let (total, page) = if marked != rows::Marked::default() {
        rows::page_marked(&mut c.conn(), &stage, marked, filter.action, offset, limit).await?
    } else if filter.action.is_none() && job.counts.excluded > 0 {
        rows::page_included(&mut c.conn(), &stage, offset, limit).await?
    } else {
        rows::page(&mut c.conn(), &stage, filter.action, offset, limit).await?
    };
    let mut errors: HashMap<i64, Vec<RowError>> = HashMap::new();
    if let (Some(first), Some(last)) = (page.first(), page.last()) {
        let found = rows::errors_of(&mut c.conn(), &job.id, first.seq, last.seq).await?;
        for (seq, e) in found {
            errors.entry(seq).or_default().push(e);
        }
    }
    let rows = page
        .into_iter()
        .map(|mut row| PreviewRow {
            errors: errors.remove(&row.seq).unwrap_or_default(),
            warnings: std::mem::take(&mut row.warnings),
            fixed: fixed_cells(job, row.row_no),
            row,
        })
        .collect();
    Ok(PreviewPage { total, rows })
}

/// The cells of row `row_no` a revision set, with what the file said.
fn fixed_cells(job: &Job, row_no: i64) -> Vec<(String, Option<String>)> {
    let Some(revision) = &job.revision else {
        return vec![];
    };
    // Fixes are kept in row order: the row's are one run of the list.
    let from = revision.fixes.partition_point(|f| (f.row as i64) < row_no);
    (revision.fixes[from..].iter())
        .take_while(|f| f.row as i64 == row_no)
        .map(|f| (f.column.clone(), f.was.clone()))
        .collect()
}

/// A page of a job's row errors, in file order, and how many there are.
pub async fn errors(app: &App, job: &Job, offset: i64, limit: i64) -> Result<(i64, Vec<RowError>)> {
    let mut c = app.db.acquire().await?;
    Ok(rows::errors(&mut c.conn(), &job.id, offset, limit).await?)
}

/// Every error of a job, page by page, for a report of any length: the
/// pages come one at a time, so a million errors are never in memory.
pub struct ErrorPages<'a> {
    app: &'a App,
    job_id: JobId,
    offset: i64,
    done: bool,
}

/// Errors a report page reads at a time.
const REPORT_PAGE: i64 = 5000;

impl ErrorPages<'_> {
    /// The next page, or `None` after the last.
    pub async fn next(&mut self) -> Result<Option<(i64, Vec<RowError>)>> {
        if self.done {
            return Ok(None);
        }
        let mut c = self.app.db.acquire().await?;
        let (total, list) =
            rows::errors(&mut c.conn(), &self.job_id, self.offset, REPORT_PAGE).await?;
        self.offset += list.len() as i64;
        self.done = (list.len() as i64) < REPORT_PAGE;
        Ok(Some((total, list)))
    }
}

/// The pages of a job's whole error report.
pub fn error_pages<'a>(app: &'a App, job: &Job) -> ErrorPages<'a> {
    ErrorPages {
        app,
        job_id: job.id.clone(),
        offset: 0,
        done: false,
    }
}

/// Every event of a job, oldest first.
pub async fn events(app: &App, job: &Job) -> Result<Vec<Event>> {
    let mut c = app.db.acquire().await?;
    Ok(store::jobs::events(&mut c.conn(), &job.id).await?)
}

/// Waits until a job has left the states in which the service works on it,
/// or the time is up. Woken at once by this job's moves made in this
/// process; moves made by another replica are seen by re-reading the job at
/// least every quarter second.
pub async fn wait(app: &App, id: &JobId, wait: Duration) -> Result<()> {
    let deadline = tokio::time::Instant::now() + wait;
    let watch = app.moves.watch(id);
    loop {
        let moved = watch.notify().notified();
        tokio::pin!(moved);
        moved.as_mut().enable();
        let job = {
            let mut c = app.db.acquire().await?;
            store::jobs::get(&mut c.conn(), id).await?
        };
        let stopping = *app.shutdown.borrow();
        if job.is_none_or(|j| !j.state.is_work())
            || tokio::time::Instant::now() >= deadline
            || stopping
        {
            return Ok(());
        }
        let step = Duration::from_millis(250).min(deadline - tokio::time::Instant::now());
        tokio::select! {
            _ = moved => {},
            _ = tokio::time::sleep(step) => {},
        }
    }
}

/// Job counts by state (for the metrics).
pub async fn count_by_state(app: &App) -> Result<Vec<(String, i64)>> {
    let mut c = app.db.acquire().await?;
    Ok(store::jobs::count_by_state(&mut c.conn()).await?)
}
