//! The service's own work on jobs: validating an upload, writing an
//! approved commit, undoing an approved rollback, expiring what waited too
//! long, and the housekeeping behind them. The workers decide when; this
//! decides what, and the ledger ([`outcome`]) decides which move each
//! result makes.
//!
//! A worker holds a job's lease while it works; every move here is
//! recorded only while that lease is still held, so a job taken over by
//! another worker is never moved twice.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use tracing::{info, warn};

use super::{App, Result, jobs};
use crate::catalog::Module;
use crate::ids::{JobId, ModuleKey};
use crate::ingest::FileCode;
use crate::ledger::outcome::{self, Commit, Conflicts as Refused, Rollback, Validation};
use crate::ledger::{AppliedMapping, Job, JobState, Move, ProblemCode};
use crate::pipeline::references::{self, Target};
use crate::pipeline::validation::{self, Outcome, Setup};
use crate::store::jobs::MoveBy;
use crate::store::{self, Tx, ident, now};

fn now_ms() -> i64 {
    chrono::Utc::now().timestamp_millis()
}

/// Claims one job that needs the service's work and whose lease is free
/// or lapsed, for `owner`. In a transaction of its own: SQLite hands out
/// an `UPDATE … RETURNING`'s row before the statement's own commit, whose
/// failure (a full disk) would pass unseen and leave the job unleased, to
/// be claimed again at once.
pub async fn claim(app: &App, owner: &str) -> Result<Option<(JobId, JobState)>> {
    let mut tx = app.db.begin().await?;
    let got = store::jobs::claim(&mut tx.conn(), owner, now_ms(), app.settings.lease_ms).await?;
    tx.commit().await?;
    Ok(got)
}

/// Extends a held lease by `ms`; false when another worker holds it now.
pub async fn extend_lease(app: &App, id: &JobId, owner: &str, ms: i64) -> Result<bool> {
    let mut c = app.db.acquire().await?;
    Ok(store::jobs::heartbeat(&mut c.conn(), id, owner, now_ms() + ms).await?)
}

/// Gives a lease back so the job is picked up at once.
pub async fn release(app: &App, id: &JobId, owner: &str) -> Result<()> {
    let mut c = app.db.acquire().await?;
    Ok(store::jobs::release(&mut c.conn(), id, owner, now_ms()).await?)
}

/// Does the work a claimed job in `state` needs. Nothing when the job has
/// moved on meanwhile.
pub async fn run(app: &App, owner: &str, id: &JobId, state: JobState) -> anyhow::Result<()> {
    let job = jobs::find(app, id).await?;
    if job.state != state {
        return Ok(());
    }
    match state {
        JobState::Validating => validate(app, owner, &job).await,
        JobState::Committing => commit(app, owner, &job).await,
        JobState::RollingBack => rollback(app, owner, &job).await,
        _ => Ok(()),
    }
}

fn module_of<'a>(app: &'a App, job: &Job) -> anyhow::Result<&'a Module> {
    let key = job
        .module
        .as_ref()
        .ok_or_else(|| anyhow::anyhow!("job {} is a workbook's, of no one module", job.id))?;
    module_named(app, key)
}

fn module_named<'a>(app: &'a App, key: &ModuleKey) -> anyhow::Result<&'a Module> {
    app.catalog
        .get(key.as_str())
        .map(|m| m.as_ref())
        .ok_or_else(|| anyhow::anyhow!("module {key} is not in the catalog"))
}

async fn validate(app: &App, owner: &str, job: &Job) -> anyhow::Result<()> {
    if job.is_workbook() {
        return validate_workbook(app, owner, job).await;
    }
    let module = module_of(app, job)?;
    let started = Instant::now();
    let (job, found) = check_rows(app, owner, module, job, None).await?;
    let job = &job;
    let Some((event, mut after)) = outcome::validated(job, found, now()) else {
        return Ok(());
    };
    suggest_missing(app, module, job, &mut after).await;
    let tx = app.db.begin().await?;
    if finish(app, tx, job, &after, event, owner).await? {
        stage_done("validate", started, after.counts.rows);
    }
    Ok(())
}

/// What a workbook's part is validated after: the stages of the earlier
/// parts by module, whose valid rows satisfy references, and their rows,
/// which count against the row limit.
struct Earlier<'a> {
    staged: &'a HashMap<ModuleKey, i64>,
    rows: u64,
}

/// Reads and checks a one-module job's rows, or a workbook's part's
/// (`earlier` set): the job as validated (its mapping and rules recorded)
/// and what was found.
async fn check_rows(
    app: &App,
    owner: &str,
    module: &Module,
    job: &Job,
    earlier: Option<Earlier<'_>>,
) -> anyhow::Result<(Job, Validation)> {
    // A workbook's part is read as its sheet is: a mapping saved for the
    // module is not applied to it (its saver would be a reviser the
    // workbook's gate does not see).
    let mut job = match earlier {
        None => with_saved_mapping(app, module, job).await?,
        Some(_) => job.clone(),
    };
    let rows_before = earlier.as_ref().map_or(0, |e| e.rows);
    let (rules_version, rules) = super::rules::for_validation(app, module).await?;
    {
        let mut c = app.db.acquire().await?;
        store::jobs::set_rules_version(&mut c.conn(), &job.id, rules_version).await?;
    }
    job.rules_version = Some(rules_version);
    let limit = app.settings.limits.rows;
    let setup = Setup {
        zone: app.settings.zone,
        max_rows: limit.saturating_sub(rows_before).max(1),
        max_columns: app.settings.limits.columns,
        max_cell_bytes: app.settings.limits.cell_bytes,
        targets: module
            .references
            .iter()
            .filter_map(|r| {
                let named = app.catalog.get(&r.module)?;
                Some(Target {
                    reference: r.clone(),
                    module: named.clone(),
                    staged: (earlier.as_ref()).and_then(|e| e.staged.get(&named.key).copied()),
                })
            })
            .collect(),
        lease: Some((owner.to_string(), app.settings.lease_ms)),
        disk_reserve: app.settings.disk_reserve_bytes,
        // The version of the module's rules in force, recorded on the job.
        rules,
    };
    let found = match read(app, module, &job, &setup).await? {
        Outcome::FileFailure(e) if rows_before > 0 && e.code == FileCode::TooManyRows => {
            Validation::FileFailure {
                code: ProblemCode::TooManyRows,
                message: format!("the workbook's parts hold more than {limit} rows in all"),
            }
        }
        Outcome::FileFailure(e) => Validation::FileFailure {
            code: ProblemCode::from(e.code),
            message: e.message,
        },
        Outcome::Checked { counts, warnings } => Validation::Checked { counts, warnings },
    };
    Ok((job, found))
}

/// Validates a workbook job (API.md section 16): each part in reference
/// order, as a one-module job, its references satisfied by the table or
/// by the valid rows of an earlier part; the job's counts are their sum.
/// A part that cannot be read makes the whole job `invalid`, naming its
/// sheet.
async fn validate_workbook(app: &App, owner: &str, job: &Job) -> anyhow::Result<()> {
    let started = Instant::now();
    let found = if job.parts.is_empty() {
        let e = super::workbooks::no_parts(app, job).await?;
        Validation::FileFailure {
            code: ProblemCode::from(e.code),
            message: e.message,
        }
    } else {
        validate_parts(app, owner, job).await?
    };
    let Some((event, after)) = outcome::validated(job, found, now()) else {
        return Ok(());
    };
    let tx = app.db.begin().await?;
    if finish(app, tx, job, &after, event, owner).await? {
        stage_done("validate", started, after.counts.rows);
    }
    Ok(())
}

/// Validates each part of a workbook job in turn: the first part that
/// cannot be read ends it; else the sum of their counts, and their
/// warnings (each naming its part) after the workbook's own.
async fn validate_parts(app: &App, owner: &str, job: &Job) -> anyhow::Result<Validation> {
    let mut staged = HashMap::new();
    let mut counts = crate::ledger::Counts::default();
    let mut warnings: Vec<_> = (job.warnings.iter())
        .filter(|w| w.code == crate::ledger::WarningCode::SheetIgnored)
        .cloned()
        .collect();
    for (n, part) in job.parts.iter().enumerate() {
        let module = module_named(app, &part.module)?;
        let part_job = jobs::find_part(app, &part.job).await?;
        {
            // The part's batches renew its own lease: this worker's.
            let mut c = app.db.acquire().await?;
            let until = now_ms() + app.settings.lease_ms;
            store::jobs::hold(&mut c.conn(), &part.job, owner, until).await?;
        }
        let earlier = Earlier {
            staged: &staged,
            rows: counts.rows.max(0) as u64,
        };
        let (_, found) = check_rows(app, owner, module, &part_job, Some(earlier)).await?;
        match found {
            Validation::FileFailure { code, message } => {
                forget_kept(app, &staged).await?;
                return Ok(Validation::FileFailure {
                    code,
                    message: format!("sheet {:?} ({}): {message}", part.sheet, part.module),
                });
            }
            Validation::Checked {
                counts: part_counts,
                warnings: part_warnings,
            } => {
                let mut c = app.db.acquire().await?;
                store::jobs::set_counts(&mut c.conn(), &part.job, &part_counts).await?;
                if let Some(stage) =
                    store::stage::Stage::of(&mut c.conn(), module, &part.job).await?
                {
                    for key in named_later(app, job, n, module) {
                        store::stage::keys::keep(&mut c.conn(), module, key, stage.job).await?;
                    }
                    staged.insert(part.module.clone(), stage.job);
                }
                counts.plus(&part_counts);
                warnings.extend(part_warnings.into_iter().map(|mut w| {
                    w.message = format!("{}: {}", part.module, w.message);
                    w
                }));
            }
        }
    }
    forget_kept(app, &staged).await?;
    Ok(Validation::Checked { counts, warnings })
}

/// The columns of part `n`'s module (`module`) that the references of
/// the workbook's later parts name, each once.
fn named_later(app: &App, job: &Job, n: usize, module: &Module) -> Vec<usize> {
    let mut keys: Vec<usize> = (job.parts.iter().skip(n + 1))
        .filter_map(|later| app.catalog.get(later.module.as_str()))
        .flat_map(|later| later.references.iter())
        .filter(|r| r.module == module.key.as_str())
        .map(|r| r.key_index)
        .collect();
    keys.sort_unstable();
    keys.dedup();
    keys
}

/// Lets go of the keys the later parts looked up: they are kept only
/// while the workbook is validated.
async fn forget_kept(app: &App, staged: &HashMap<ModuleKey, i64>) -> anyhow::Result<()> {
    let mut c = app.db.acquire().await?;
    for &stage in staged.values() {
        store::stage::keys::forget(&mut c.conn(), stage).await?;
    }
    Ok(())
}

/// An upload whose exact set of headers has a mapping saved for its
/// module is read with it (API.md section 11), unless it asked for
/// `?mapping=none` or named one. The choice is recorded on the job before
/// validation starts, so a retried validation, the mapping view and a
/// revision read the file the same way whatever happens to the saved one.
async fn with_saved_mapping(app: &App, module: &Module, job: &Job) -> anyhow::Result<Job> {
    let mut job = job.clone();
    if job.revision.is_some() || job.mapping_applied.is_some() || job.options.mapping.is_some() {
        return Ok(job);
    }
    if !store::mappings::any(&mut app.db.acquire().await?.conn(), &module.key).await? {
        return Ok(job);
    }
    let limits = &app.settings.limits;
    // A file without a readable header has nothing to map: its
    // validation says why.
    let Ok(head) =
        validation::read_head(&app.db, &job, limits.cell_bytes, limits.columns, 0).await?
    else {
        return Ok(job);
    };
    let mut c = app.db.acquire().await?;
    let Some(saved) =
        store::mappings::for_headers(&mut c.conn(), &module.key, &head.header).await?
    else {
        return Ok(job);
    };
    let chosen = AppliedMapping {
        id: saved.id,
        mapping: saved.mapping,
        saved_by: Some(saved.created_by),
    };
    job.mapping_applied = store::jobs::set_mapping_applied(&mut c.conn(), &job.id, &chosen).await?;
    Ok(job)
}

/// A job `invalid` for missing columns carries the best header for each
/// (API.md section 11), and its detail names them.
async fn suggest_missing(app: &App, module: &Module, job: &Job, after: &mut Job) {
    let Some(problem) = after
        .problem
        .as_mut()
        .filter(|p| p.code == ProblemCode::MissingColumns)
    else {
        return;
    };
    let best = super::mapping::for_missing(app, module, job).await;
    if best.is_empty() {
        return;
    }
    let named: Vec<String> = (best.iter())
        .map(|(column, header, _)| format!("{header:?} for {column}"))
        .collect();
    problem.detail = format!(
        "{}; perhaps {} (revise the job with a mapping to use them)",
        problem.detail,
        named.join(", ")
    );
    problem.suggestions = Some(
        best.into_iter()
            .map(|(column, header, s)| {
                let found = crate::ledger::job::HeaderSuggestion {
                    header,
                    score: s.score,
                    why: s.why,
                };
                (column, found)
            })
            .collect(),
    );
}

/// Validates a job: a revision that changes only fixes and exclusions from
/// its parent's staged rows, any other job by reading its file.
async fn read(
    app: &App,
    module: &Module,
    job: &Job,
    setup: &Setup,
) -> anyhow::Result<validation::Outcome> {
    if let Some(parent_id) = &job.revision_of {
        let mut c = app.db.acquire().await?;
        let parent = match store::jobs::get(&mut c.conn(), parent_id).await? {
            // A workbook part's revision revises the part before it.
            None => store::jobs::get_part(&mut c.conn(), parent_id).await?,
            found => found,
        };
        drop(c);
        if let Some(parent) = parent
            && let Some(found) =
                crate::pipeline::revalidate::revalidate(&app.db, module, job, &parent, setup)
                    .await?
        {
            return Ok(found);
        }
    }
    validation::validate(&app.db, module, job, setup).await
}

/// Refreshes the statistics of a table a job just wrote many rows to (see
/// [`store::analyze`]). The job has moved already; a failure here only
/// leaves the planner with older statistics, so it is logged, not raised.
async fn after_bulk_write(app: &App, table: &str, rows: i64) {
    if rows < store::ANALYZE_AFTER_ROWS {
        return;
    }
    let analyzed = match app.db.acquire().await {
        Ok(mut c) => store::analyze(&mut c.conn(), table, &[], None).await,
        Err(e) => Err(e),
    };
    if let Err(e) = analyzed {
        warn!(table, error = %e, "cannot refresh the table's statistics");
    }
}

async fn commit(app: &App, owner: &str, job: &Job) -> anyhow::Result<()> {
    let started = Instant::now();
    let parts = parts_of(app, job).await?;
    let mut tx = app.db.begin().await?;
    let mut result = Commit::Written;
    // A workbook's parts in reference order, all in the one transaction.
    for (module, part) in &parts {
        let validated = part.rules_version.unwrap_or(1);
        let in_force = super::rules::version_in_force(&mut tx.conn(), &module.key).await?;
        if validated != in_force {
            result = Commit::StaleRules {
                validated,
                in_force,
            };
            break;
        }
        match crate::pipeline::commit::commit(&mut tx, module, part, job.simulated).await {
            Ok(Ok(())) => {}
            Ok(Err(refused)) => {
                result = Commit::Stale(in_part(job, module, refused));
                break;
            }
            Err(e) => {
                result = Commit::Failed(e.to_string());
                break;
            }
        }
    }
    if !matches!(result, Commit::Written) {
        // Nothing of the refused transaction is kept; the move is
        // recorded in a fresh one.
        tx.rollback().await?;
        tx = app.db.begin().await?;
    }
    let Some((event, after)) = outcome::committed(job, result, now()) else {
        return Ok(());
    };
    if finish(app, tx, job, &after, event, owner).await? && event == Move::Written {
        stage_done("commit", started, job.counts.insert + job.counts.update);
        for (module, part) in &parts {
            let rows = part.counts.insert + part.counts.update;
            after_bulk_write(app, &ident(&module.table), rows).await;
        }
    }
    Ok(())
}

/// The one-module jobs whose rows a job writes, in reference order: the
/// job itself, or a workbook's parts.
async fn parts_of<'a>(app: &'a App, job: &Job) -> anyhow::Result<Vec<(&'a Module, Job)>> {
    if !job.is_workbook() {
        return Ok(vec![(module_of(app, job)?, job.clone())]);
    }
    let mut parts = Vec::with_capacity(job.parts.len());
    for part in &job.parts {
        parts.push((
            module_named(app, &part.module)?,
            jobs::find_part(app, &part.job).await?,
        ));
    }
    Ok(parts)
}

/// A refusal of a workbook's part, each row naming the part.
fn in_part(job: &Job, module: &Module, mut refused: Refused) -> Refused {
    if job.is_workbook() {
        for row in &mut refused.rows {
            row.part = Some(module.key.to_string());
        }
    }
    refused
}

async fn rollback(app: &App, owner: &str, job: &Job) -> anyhow::Result<()> {
    let started = Instant::now();
    let parts = parts_of(app, job).await?;
    let mut tx = app.db.begin().await?;
    let mut result = Rollback::Undone;
    // A workbook's parts in reverse reference order: a part's referrers in
    // the same job are undone first, so they count as orphans no more.
    for (module, part) in parts.iter().rev() {
        let referrers = references::referrers(&app.catalog, &module.key);
        let undone =
            crate::pipeline::commit::rollback(&mut tx, module, part, &referrers, job.simulated)
                .await?;
        if let Err(refused) = undone {
            result = Rollback::Conflict(in_part(job, module, refused));
            break;
        }
    }
    if !matches!(result, Rollback::Undone) {
        tx.rollback().await?;
        tx = app.db.begin().await?;
    }
    let Some((event, after)) = outcome::rolled_back(job, result, now()) else {
        return Ok(());
    };
    if finish(app, tx, job, &after, event, owner).await? && event == Move::Undone {
        stage_done("rollback", started, job.counts.insert + job.counts.update);
        for (module, part) in &parts {
            let rows = part.counts.insert + part.counts.update;
            after_bulk_write(app, &ident(&module.table), rows).await;
        }
    }
    Ok(())
}

/// The longest wait before a job's work is tried again after a failure.
const RETRY_CAP: Duration = Duration::from_secs(5 * 60);

/// The failure recorded for an attempt stopped by a full disk: always the
/// same text, so that the attempts count up whichever write hit it.
const NO_SPACE: &str = "the database's disk is full";

/// After an attempt at a job's work failed: a transient error (a lost
/// connection, a lock) only backs off; any other is counted, and after
/// `work_attempts` attempts in a row that failed with the same error the
/// service gives up on the job (the ledger's `gave_up` move, the error as
/// its problem). Before that, each failure waits twice as long as the one
/// before (from `work_retry_ms`, at most [`RETRY_CAP`]). A full disk is
/// counted too, after a validation's staged rows are let go (the attempt
/// can then be written), and ends the job `no_space`.
pub async fn attempt_failed(
    app: &App,
    owner: &str,
    id: &JobId,
    error: &anyhow::Error,
) -> Result<()> {
    if is_out_of_space(error) {
        metrics::counter!("importgate_work_failures_total", "kind" => "no_space").increment(1);
        discard_staged(app, id).await;
        return counted(app, owner, id, NO_SPACE, ProblemCode::NoSpace).await;
    }
    if is_transient(error) {
        metrics::counter!("importgate_work_failures_total", "kind" => "transient").increment(1);
        extend_lease(app, id, owner, app.settings.work_retry_ms).await?;
        return Ok(());
    }
    metrics::counter!("importgate_work_failures_total", "kind" => "error").increment(1);
    let text = format!("{error:#}");
    counted(app, owner, id, &text, ProblemCode::WorkFailed).await
}

/// Records a failed attempt; backs off, or gives up after the last one
/// with the problem `code` (`work_failed` or `no_space`).
async fn counted(app: &App, owner: &str, id: &JobId, text: &str, code: ProblemCode) -> Result<()> {
    let attempts = {
        // In a transaction, so that a commit the disk refuses is seen.
        let mut tx = app.db.begin().await?;
        let attempts = store::jobs::record_failure(&mut tx.conn(), id, owner, text).await?;
        tx.commit().await?;
        attempts
    };
    let Some(attempts) = attempts else {
        // Another worker holds the job now.
        return Ok(());
    };
    if attempts >= app.settings.work_attempts {
        return give_up(app, owner, id, text, attempts, code).await;
    }
    let base = Duration::from_millis(app.settings.work_retry_ms.max(0) as u64);
    let wait = super::retry::backoff(base, attempts, RETRY_CAP);
    extend_lease(app, id, owner, wait.as_millis() as i64).await?;
    Ok(())
}

/// Lets go of the rows a validation stopped by a full disk staged, so that
/// the space is there for the attempt's record and for other work. A
/// commit's or rollback's stage is the approved preview and stays.
async fn discard_staged(app: &App, id: &JobId) {
    let discard = async {
        let job = jobs::find(app, id).await?;
        if job.state != JobState::Validating {
            return Ok(());
        }
        let mut tx = app.db.begin().await?;
        for (module, part) in parts_of(app, &job).await? {
            store::stage::Stage::discard(&mut tx.conn(), module, &part.id).await?;
        }
        tx.commit().await?;
        anyhow::Ok(())
    };
    if let Err(e) = discard.await {
        warn!(job = %id, error = %e, "cannot let go of the rows staged before the disk was full");
    }
}

/// Whether an error is the database's (or a file's) full disk.
fn is_out_of_space(error: &anyhow::Error) -> bool {
    error.chain().any(|e| {
        if let Some(e) = e.downcast_ref::<sqlx::Error>() {
            return crate::store::out_of_space(e);
        }
        if let Some(e) = e.downcast_ref::<crate::store::StoreError>() {
            return e.is_out_of_space();
        }
        e.downcast_ref::<std::io::Error>()
            .is_some_and(crate::store::io_out_of_space)
    })
}

/// Whether an error is one that passes by itself: the database was out of
/// reach, busy or read-only, not wrong.
fn is_transient(error: &anyhow::Error) -> bool {
    error
        .chain()
        .any(|e| match e.downcast_ref::<sqlx::Error>() {
            Some(e) => crate::store::unavailable(e),
            None => e
                .downcast_ref::<crate::store::StoreError>()
                .is_some_and(|s| s.is_unavailable()),
        })
}

/// Ends a job whose work kept failing with the same error.
async fn give_up(
    app: &App,
    owner: &str,
    id: &JobId,
    error: &str,
    attempts: i64,
    code: ProblemCode,
) -> Result<()> {
    let job = jobs::find(app, id).await?;
    let after = match code {
        ProblemCode::NoSpace => outcome::out_of_space(&job, attempts, now()),
        _ => outcome::gave_up(&job, error, attempts, now()),
    };
    let Some(after) = after else {
        return Ok(());
    };
    let tx = app.db.begin().await?;
    if finish(app, tx, &job, &after, Move::GaveUp, owner).await? {
        metrics::counter!("importgate_jobs_given_up_total", "state" => job.state.as_str())
            .increment(1);
        tracing::error!(job = %id, attempts, error, "gave up on the job's work");
    }
    Ok(())
}

/// Records the service's move inside `tx` and commits it, if this worker
/// still holds the lease; otherwise drops `tx` (another worker owns the
/// job now). Returns whether the move was made.
async fn finish(
    app: &App,
    mut tx: Tx,
    job: &Job,
    after: &Job,
    event: Move,
    owner: &str,
) -> anyhow::Result<bool> {
    // A validation's counts are in the event that ends it, so `ledger
    // verify` finds counts edited in the row afterwards.
    let detail =
        (job.state == JobState::Validating).then(|| serde_json::json!({"counts": after.counts}));
    let by = MoveBy {
        event,
        actor: None,
        comment: None,
        detail,
        lease_owner: Some(owner),
    };
    if store::jobs::transition(&mut tx.conn(), &app.seal.key, job, after, by).await? {
        tx.commit().await?;
        app.moves.job(&job.id);
        info!(job = %job.id, event = event.as_str(), state = after.state.as_str(), "job moved");
        Ok(true)
    } else {
        tx.rollback().await?;
        Ok(false)
    }
}

/// Records a finished stage's duration and rows.
fn stage_done(stage: &'static str, started: Instant, rows: i64) {
    let seconds = started.elapsed().as_secs_f64();
    metrics::histogram!("importgate_stage_duration_seconds", "stage" => stage).record(seconds);
    metrics::counter!("importgate_rows_total", "stage" => stage).increment(rows.max(0) as u64);
    info!(
        stage,
        rows,
        ms = (seconds * 1000.0) as u64,
        "stage finished"
    );
}

/// Takes back, at a process's start, the work an earlier process of the
/// same `instance` was doing when it stopped (killed, crashed): each job
/// gets an `interrupted` note in the ledger and is free for the next
/// worker at once, instead of after its lease lapses. `this_process` is
/// the new process's owner prefix. How many jobs were taken back.
pub async fn take_back(app: &App, instance: &str, this_process: &str) -> Result<usize> {
    let held = {
        let mut c = app.db.acquire().await?;
        store::jobs::held_by_earlier_process(&mut c.conn(), instance, this_process).await?
    };
    let mut taken = 0;
    for (id, owner) in held {
        let mut tx = app.db.begin().await?;
        let Some(job) = store::jobs::get(&mut tx.conn(), &id).await? else {
            tx.rollback().await?;
            continue;
        };
        let Some(after) = outcome::interrupted(&job, now()) else {
            tx.rollback().await?;
            continue;
        };
        let note = format!(
            "the process {owner} stopped during the {}; its restart took the job back",
            job.state.as_str()
        );
        if store::jobs::interrupted(&mut tx.conn(), &app.seal.key, &job, &after, &owner, &note)
            .await?
        {
            tx.commit().await?;
            info!(job = %id, owner = %owner, "took back the work of a stopped process");
            taken += 1;
        } else {
            tx.rollback().await?;
        }
    }
    if taken > 0 {
        app.work.notify_waiters();
        app.moves.other();
    }
    Ok(taken)
}

/// Moves every job whose approval time limit has passed to `expired`.
pub async fn expire_due(app: &App) -> Result<()> {
    let cutoff = now() - chrono::Duration::seconds(app.settings.limits.approval_secs);
    let ids = {
        let mut c = app.db.acquire().await?;
        store::jobs::expirable_since(&mut c.conn(), cutoff).await?
    };
    for id in ids {
        expire(app, &id).await?;
    }
    Ok(())
}

/// Moves one job to `expired`, if the state table allows it from where
/// the job is. False when it does not (the job moved on).
pub async fn expire(app: &App, id: &JobId) -> Result<bool> {
    let mut tx = app.db.begin().await?;
    let Some(job) = store::jobs::get(&mut tx.conn(), id).await? else {
        tx.rollback().await?;
        return Ok(false);
    };
    let Some(after) = outcome::expired(&job, now()) else {
        tx.rollback().await?;
        return Ok(false);
    };
    let by = MoveBy {
        event: Move::Expire,
        actor: None,
        comment: None,
        detail: None,
        lease_owner: None,
    };
    if store::jobs::transition(&mut tx.conn(), &app.seal.key, &job, &after, by).await? {
        tx.commit().await?;
        app.moves.job(&job.id);
        Ok(true)
    } else {
        tx.rollback().await?;
        Ok(false)
    }
}

/// Drops the chunks of uploads that died half-way and idempotency keys
/// past their answer window.
pub async fn purge(app: &App) -> Result<()> {
    let mut c = app.db.acquire().await?;
    let before = now() - chrono::Duration::hours(1);
    let n = store::blobs::purge_orphans(&mut c.conn(), before).await?;
    // Idempotency keys answer for 24 hours; keep a day more for late retries' 422.
    store::idempotency::purge(&mut c.conn(), now() - chrono::Duration::hours(48)).await?;
    // Key request attempts count for an hour.
    store::key_requests::purge_attempts(&mut c.conn(), now() - chrono::Duration::hours(1)).await?;
    drop(c);
    super::key_requests::expire_due(app).await?;
    if n > 0 {
        info!(chunks = n, "dropped chunks of unfinished uploads");
    }
    Ok(())
}

/// Holds a job's work lease for `owner` until `until_ms`, whoever held
/// it (the demo keeps one job `validating` this way).
pub async fn hold(app: &App, id: &JobId, owner: &str, until_ms: i64) -> Result<()> {
    let mut c = app.db.acquire().await?;
    Ok(store::jobs::hold(&mut c.conn(), id, owner, until_ms).await?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_lost_connection_is_transient_and_a_missing_table_is_not() {
        let pool = anyhow::Error::from(crate::store::StoreError::Sql(sqlx::Error::PoolTimedOut));
        assert!(is_transient(&pool));
        let io = anyhow::Error::from(sqlx::Error::Io(std::io::Error::other("reset")));
        assert!(is_transient(&io));
        let corrupt = anyhow::Error::from(crate::store::StoreError::Corrupt("x".into()));
        assert!(!is_transient(&corrupt));
        assert!(!is_transient(&anyhow::anyhow!(
            "no such table: ig_stage_customers"
        )));
    }
}
