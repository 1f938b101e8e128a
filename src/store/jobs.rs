//! Jobs, their events, and the work leases that let any process (or, on
//! PostgreSQL, any replica) pick up a job whose worker has gone.

use chrono::{DateTime, Utc};
use serde_json::Value as Json;
use sqlx::Row;

use super::db::Conn;
use super::error::{Result, StoreError, json_col};
use super::ledger;
use crate::ids::{JobId, KeyId, ModuleKey};
use crate::ingest::Format;
use crate::ledger::chain::{ChainKey, Event};
use crate::ledger::{
    AppliedMapping, Counts, FileInfo, Job, JobState, Mode, Move, OnError, Part, Revision,
};
use crate::on_conn;

/// The columns a job is written with.
macro_rules! job_columns {
    () => {
        "id, module, target_table, mode, on_error, options, simulated, \
         file_name, file_format, file_bytes, file_sha256, submitter, state, version, counts, \
         warnings, problem, gate, decisions, created_at, updated_at, revision_of, revision, \
         mapping_applied"
    };
}
const COLUMNS: &str = job_columns!();

/// The columns a job is read with: those it is written with, when it was
/// purged, and when it was committed. The commit's time is read from the
/// ledger (its `written` event, hash-chained and written in the commit's
/// own transaction), not kept a second time: `updated_at` moves on with
/// every later move (a rollback asked and refused, a rollback conflict,
/// a purge), and the approval's decision is not the commit (the work may
/// be retried). A job has at most one `written` event.
const READ_COLUMNS: &str = concat!(
    job_columns!(),
    ", purged_at, revised_as, rules_version, (SELECT MIN(e.at) FROM ig_job_events e \
       WHERE e.job_id = ig_jobs.id AND e.event = 'written') AS committed_at"
);

fn corrupt(what: &str, value: &str) -> StoreError {
    StoreError::Corrupt(format!("{what} {value:?}"))
}

fn job<R: Row>(row: &R) -> Result<Job>
where
    for<'r> String: sqlx::Decode<'r, R::Database> + sqlx::Type<R::Database>,
    for<'r> i64: sqlx::Decode<'r, R::Database> + sqlx::Type<R::Database>,
    for<'r> bool: sqlx::Decode<'r, R::Database> + sqlx::Type<R::Database>,
    for<'r> DateTime<Utc>: sqlx::Decode<'r, R::Database> + sqlx::Type<R::Database>,
    for<'r> &'r str: sqlx::ColumnIndex<R>,
{
    let text = |name: &str| -> Result<String> { Ok(row.try_get::<String, _>(name)?) };
    let opt_text =
        |name: &str| -> Result<Option<String>> { Ok(row.try_get::<Option<String>, _>(name)?) };
    let mode = text("mode")?;
    let on_error = text("on_error")?;
    let state = text("state")?;
    let format = text("file_format")?;
    let module = text("module")?;
    Ok(Job {
        id: row.try_get("id")?,
        // A workbook job's is '' (the migration that added parts says why).
        module: (!module.is_empty()).then(|| ModuleKey::from_stored(module)),
        table: text("target_table")?,
        mode: Mode::parse(&mode).ok_or_else(|| corrupt("mode", &mode))?,
        on_error: OnError::parse(&on_error).ok_or_else(|| corrupt("on_error", &on_error))?,
        options: json_col(&text("options")?, "options")?,
        simulated: row.try_get("simulated")?,
        file: FileInfo {
            name: opt_text("file_name")?,
            format: serde_json::from_value(Json::String(format.clone()))
                .map_err(|_| corrupt("format", &format))?,
            bytes: row.try_get("file_bytes")?,
            sha256: text("file_sha256")?,
        },
        submitter: row.try_get("submitter")?,
        state: JobState::parse(&state).ok_or_else(|| corrupt("state", &state))?,
        version: row.try_get("version")?,
        counts: json_col(&text("counts")?, "counts")?,
        warnings: json_col(&text("warnings")?, "warnings")?,
        problem: opt_text("problem")?
            .map(|p| json_col(&p, "problem"))
            .transpose()?,
        gate: opt_text("gate")?
            .map(|g| json_col(&g, "gate"))
            .transpose()?,
        decisions: json_col(&text("decisions")?, "decisions")?,
        created_at: row.try_get("created_at")?,
        updated_at: row.try_get("updated_at")?,
        committed_at: row.try_get("committed_at")?,
        purged_at: row.try_get("purged_at")?,
        revision_of: row.try_get("revision_of")?,
        revision: opt_text("revision")?
            .map(|r| json_col(&r, "revision"))
            .transpose()?,
        revised_as: row.try_get("revised_as")?,
        mapping_applied: opt_text("mapping_applied")?
            .map(|m| json_col(&m, "mapping_applied"))
            .transpose()?,
        rules_version: row
            .try_get::<Option<i64>, _>("rules_version")?
            .and_then(|v| u32::try_from(v).ok()),
        parts: vec![],
    })
}

/// A job's module as `ig_jobs.module` holds it: '' for a workbook's.
fn module_text(job: &Job) -> &str {
    job.module.as_ref().map_or("", ModuleKey::as_str)
}

/// A job's counts as `ig_jobs.counts` holds them.
pub fn counts_text(counts: &Counts) -> String {
    to_json(counts)
}

fn to_json<T: serde::Serialize>(v: &T) -> String {
    serde_json::to_string(v).unwrap_or_else(|_| "null".into())
}

fn format_str(f: Format) -> &'static str {
    f.as_str()
}

/// Records a new job and its first event (the upload, by its submitter).
pub async fn insert(conn: &mut Conn<'_>, key: &ChainKey, job: &Job) -> Result<()> {
    insert_by(conn, key, job, &job.submitter, None).await
}

/// Records a new job and its first event, made by `actor` (a revision's
/// reviser) with `detail`.
pub async fn insert_by(
    conn: &mut Conn<'_>,
    key: &ChainKey,
    job: &Job,
    actor: &KeyId,
    detail: Option<Json>,
) -> Result<()> {
    let sql = format!(
        "INSERT INTO ig_jobs ({COLUMNS}) VALUES \
         ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19, $20, $21, $22, $23, $24)"
    );
    on_conn!(conn, c => sqlx::query(&sql)
        .bind(&job.id).bind(module_text(job)).bind(&job.table).bind(job.mode.as_str())
        .bind(job.on_error.as_str()).bind(to_json(&job.options)).bind(job.simulated)
        .bind(&job.file.name).bind(format_str(job.file.format)).bind(job.file.bytes)
        .bind(&job.file.sha256).bind(&job.submitter).bind(job.state.as_str()).bind(job.version)
        .bind(to_json(&job.counts)).bind(to_json(&job.warnings))
        .bind(job.problem.as_ref().map(to_json)).bind(job.gate.as_ref().map(to_json))
        .bind(to_json(&job.decisions)).bind(job.created_at).bind(job.updated_at)
        .bind(&job.revision_of).bind(job.revision.as_ref().map(to_json))
        .bind(job.mapping_applied.as_ref().map(to_json))
        .execute(c).await.map(|r| r.rows_affected()))?;
    // The file's hash is in the upload's event, so `ledger verify` finds
    // a row whose file was swapped.
    let mut detail = detail.unwrap_or_else(|| serde_json::json!({}));
    detail["file_sha256"] = serde_json::json!(job.file.sha256);
    add_event(
        conn,
        key,
        job,
        job.created_at,
        Move::Upload,
        None,
        job.state,
        Some(actor.as_str()),
        None,
        Some(detail),
    )
    .await
}

/// Records a workbook job's part (API.md section 16): a job of its own
/// that names its workbook and its place in reference order, with no event:
/// the workbook's events tell its story.
pub async fn insert_part(
    conn: &mut Conn<'_>,
    workbook: &JobId,
    part_no: i64,
    part: &Job,
) -> Result<()> {
    let sql = format!(
        "INSERT INTO ig_jobs ({COLUMNS}, parent_id, part_no) VALUES \
         ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19, $20, $21, $22, $23, $24, $25, $26)"
    );
    on_conn!(conn, c => sqlx::query(&sql)
        .bind(&part.id).bind(module_text(part)).bind(&part.table).bind(part.mode.as_str())
        .bind(part.on_error.as_str()).bind(to_json(&part.options)).bind(part.simulated)
        .bind(&part.file.name).bind(format_str(part.file.format)).bind(part.file.bytes)
        .bind(&part.file.sha256).bind(&part.submitter).bind(part.state.as_str()).bind(part.version)
        .bind(to_json(&part.counts)).bind(to_json(&part.warnings))
        .bind(part.problem.as_ref().map(to_json)).bind(part.gate.as_ref().map(to_json))
        .bind(to_json(&part.decisions)).bind(part.created_at).bind(part.updated_at)
        .bind(&part.revision_of).bind(part.revision.as_ref().map(to_json))
        .bind(part.mapping_applied.as_ref().map(to_json))
        .bind(workbook).bind(part_no)
        .execute(c).await.map(|r| r.rows_affected()))?;
    Ok(())
}

/// A workbook job's parts, in reference order.
pub async fn parts(conn: &mut Conn<'_>, workbook: &JobId) -> Result<Vec<Part>> {
    type PartRow = (JobId, String, String, String, String, String, Option<i64>);
    let rows: Vec<PartRow> = on_conn!(conn, c => sqlx::query_as(
        "SELECT id, module, target_table, mode, options, counts, rules_version FROM ig_jobs \
         WHERE parent_id = $1 ORDER BY part_no")
        .bind(workbook).fetch_all(c).await)?;
    rows.into_iter()
        .map(|(job, module, table, mode, options, counts, rules)| {
            let options: crate::ledger::JobOptions = json_col(&options, "options")?;
            Ok(Part {
                job,
                module: ModuleKey::from_stored(module),
                table,
                sheet: options.sheet.unwrap_or_default(),
                mode: Mode::parse(&mode).ok_or_else(|| corrupt("mode", &mode))?,
                counts: json_col(&counts, "counts")?,
                rules_version: rules.and_then(|v| u32::try_from(v).ok()),
            })
        })
        .collect()
}

/// Fills in the parts of the workbook jobs among `jobs`.
async fn with_parts(conn: &mut Conn<'_>, mut jobs: Vec<Job>) -> Result<Vec<Job>> {
    for job in jobs.iter_mut().filter(|j| j.is_workbook()) {
        job.parts = parts(conn, &job.id).await?;
    }
    Ok(jobs)
}

/// Marks a purged workbook's parts purged too, in the purge's transaction:
/// their stored file is then no longer needed by them, and their staged
/// rows are removed as every purged job's are.
pub async fn mark_parts_purged(
    conn: &mut Conn<'_>,
    workbook: &JobId,
    at: DateTime<Utc>,
) -> Result<()> {
    on_conn!(conn, c => sqlx::query(
        "UPDATE ig_jobs SET purged_at = $1 WHERE parent_id = $2 AND purged_at IS NULL")
        .bind(at).bind(workbook).execute(c).await.map(|r| r.rows_affected()))?;
    Ok(())
}

/// The mappings of the latest `limit` revisions of a module, newest first.
pub async fn revision_mappings(
    conn: &mut Conn<'_>,
    module: &ModuleKey,
    limit: i64,
) -> Result<Vec<crate::validate::Mapping>> {
    let texts: Vec<String> = on_conn!(conn, c => sqlx::query_scalar(
        "SELECT revision FROM ig_jobs WHERE module = $1 AND revision IS NOT NULL \
         ORDER BY created_at DESC LIMIT $2")
        .bind(module).bind(limit).fetch_all(c).await)?;
    texts
        .iter()
        .map(|t| json_col::<Revision>(t, "revision").map(|r| r.mapping))
        .collect()
}

/// Names the revision that took a job's place (in the revision's
/// transaction, after the job's own move).
pub async fn set_revised_as(conn: &mut Conn<'_>, id: &JobId, revision: &JobId) -> Result<()> {
    on_conn!(conn, c => sqlx::query("UPDATE ig_jobs SET revised_as = $1 WHERE id = $2")
        .bind(revision).bind(id).execute(c).await.map(|r| r.rows_affected()))?;
    Ok(())
}

/// Stores a revision as its validation completed it (what each fixed
/// cell said in the file).
pub async fn set_revision(conn: &mut Conn<'_>, id: &JobId, revision: &Revision) -> Result<()> {
    on_conn!(conn, c => sqlx::query("UPDATE ig_jobs SET revision = $1 WHERE id = $2")
        .bind(to_json(revision)).bind(id).execute(c).await.map(|r| r.rows_affected()))?;
    Ok(())
}

/// Records the saved mapping a validation applies to an upload, unless
/// one is recorded already (a retried validation keeps the first choice);
/// the mapping in force afterwards.
pub async fn set_mapping_applied(
    conn: &mut Conn<'_>,
    id: &JobId,
    applied: &AppliedMapping,
) -> Result<Option<AppliedMapping>> {
    on_conn!(conn, c => sqlx::query(
        "UPDATE ig_jobs SET mapping_applied = $1 WHERE id = $2 AND mapping_applied IS NULL")
        .bind(to_json(applied)).bind(id).execute(c).await.map(|r| r.rows_affected()))?;
    let text: Option<String> = on_conn!(conn, c => sqlx::query_scalar(
        "SELECT mapping_applied FROM ig_jobs WHERE id = $1")
        .bind(id).fetch_optional(c).await.map(Option::flatten))?;
    text.map(|t| json_col(&t, "mapping_applied")).transpose()
}

/// Records the version of its module's rules a validation of the job
/// applies (API.md section 14); a retried validation records its own.
pub async fn set_rules_version(conn: &mut Conn<'_>, id: &JobId, version: u32) -> Result<()> {
    on_conn!(conn, c => sqlx::query("UPDATE ig_jobs SET rules_version = $1 WHERE id = $2")
        .bind(i64::from(version)).bind(id).execute(c).await.map(|r| r.rows_affected()))?;
    Ok(())
}

/// A job by its id, a workbook's with its parts; a workbook's part is no
/// job of its own ([`get_part`]).
pub async fn get(conn: &mut Conn<'_>, id: &JobId) -> Result<Option<Job>> {
    get_where(conn, id, "parent_id IS NULL").await
}

/// A workbook's part, as the one-module job it is underneath.
pub async fn get_part(conn: &mut Conn<'_>, id: &JobId) -> Result<Option<Job>> {
    get_where(conn, id, "parent_id IS NOT NULL").await
}

async fn get_where(conn: &mut Conn<'_>, id: &JobId, which: &str) -> Result<Option<Job>> {
    let sql = format!("SELECT {READ_COLUMNS} FROM ig_jobs WHERE id = $1 AND {which}");
    let found = on_conn!(conn, c => match sqlx::query(&sql).bind(id).fetch_optional(c).await? {
        Some(row) => Ok::<_, StoreError>(Some(job(&row)?)),
        None => Ok(None),
    })?;
    Ok(with_parts(conn, found.into_iter().collect()).await?.pop())
}

/// Filters for listing jobs.
#[derive(Debug, Default, Clone)]
pub struct Filter {
    /// Only these modules (a key's scope); `None` is every module.
    pub modules: Option<Vec<String>>,
    pub module: Option<String>,
    pub state: Option<JobState>,
    pub submitter: Option<KeyId>,
    /// Jobs older than this id (ids sort by time).
    pub before: Option<String>,
    pub limit: i64,
}

/// Jobs, newest first.
pub async fn list(conn: &mut Conn<'_>, f: &Filter) -> Result<Vec<Job>> {
    let mut sql = format!("SELECT {READ_COLUMNS} FROM ig_jobs WHERE parent_id IS NULL");
    let mut args: Vec<String> = Vec::new();
    let mut arg = |sql: &mut String, clause: &str, value: String| {
        args.push(value);
        sql.push_str(&clause.replace('?', &format!("${}", args.len())));
    };
    if let Some(m) = &f.module {
        arg(&mut sql, " AND module = ?", m.clone());
    }
    if let Some(s) = f.state {
        arg(&mut sql, " AND state = ?", s.as_str().to_string());
    }
    if let Some(s) = &f.submitter {
        arg(&mut sql, " AND submitter = ?", s.to_string());
    }
    if let Some(b) = &f.before {
        arg(&mut sql, " AND id < ?", b.clone());
    }
    if let Some(mods) = &f.modules {
        if mods.is_empty() {
            return Ok(vec![]);
        }
        let mut marks = Vec::new();
        for m in mods {
            args.push(m.clone());
            marks.push(format!("${}", args.len()));
        }
        sql.push_str(&format!(" AND module IN ({})", marks.join(", ")));
    }
    sql.push_str(&format!(
        " ORDER BY id DESC LIMIT {}",
        f.limit.clamp(1, 1000)
    ));
    let jobs = on_conn!(conn, c => {
        let mut q = sqlx::query(&sql);
        for a in &args {
            q = q.bind(a);
        }
        q.fetch_all(c).await?.iter().map(job).collect::<Result<Vec<_>>>()
    })?;
    with_parts(conn, jobs).await
}

/// Who or what makes a move, and why.
pub struct MoveBy<'a> {
    pub event: Move,
    /// The key that made it; `None` for the service.
    pub actor: Option<&'a KeyId>,
    pub comment: Option<&'a str>,
    pub detail: Option<Json>,
    /// For the service: the worker that must still hold the job's lease.
    pub lease_owner: Option<&'a str>,
}

/// Writes `after` over `before` if nobody moved the job meanwhile (same
/// state and version, and the lease still held when one is named), and
/// records the event. Returns false, writing nothing, when the job moved.
pub async fn transition(
    conn: &mut Conn<'_>,
    key: &ChainKey,
    before: &Job,
    after: &Job,
    by: MoveBy<'_>,
) -> Result<bool> {
    let lease_clause = if by.lease_owner.is_some() {
        " AND lease_owner = $11"
    } else {
        ""
    };
    let sql = format!(
        "UPDATE ig_jobs SET state = $1, version = version + 1, counts = $2, warnings = $3, \
         problem = $4, gate = $5, decisions = $6, updated_at = $7, attempts = 0, last_error = NULL \
         WHERE id = $8 AND state = $9 AND version = $10{lease_clause}"
    );
    let done = on_conn!(conn, c => {
        let mut q = sqlx::query(&sql)
            .bind(after.state.as_str()).bind(to_json(&after.counts)).bind(to_json(&after.warnings))
            .bind(after.problem.as_ref().map(to_json)).bind(after.gate.as_ref().map(to_json))
            .bind(to_json(&after.decisions)).bind(after.updated_at)
            .bind(&before.id).bind(before.state.as_str()).bind(before.version);
        if let Some(owner) = by.lease_owner {
            q = q.bind(owner);
        }
        q.execute(c).await?.rows_affected()
    });
    if done == 0 {
        return Ok(false);
    }
    add_event(
        conn,
        key,
        before,
        after.updated_at,
        by.event,
        Some(before.state),
        after.state,
        by.actor.map(KeyId::as_str),
        by.comment,
        by.detail,
    )
    .await?;
    Ok(true)
}

/// Jobs in a work state whose lease an earlier process of `instance`
/// holds (owners are `{instance}/…`; `this_process` is the owner prefix of
/// the process asking, whose leases are left alone): `(id, owner)`.
pub async fn held_by_earlier_process(
    conn: &mut Conn<'_>,
    instance: &str,
    this_process: &str,
) -> Result<Vec<(JobId, String)>> {
    let mine = format!("{instance}/");
    // The prefixes are compared here: the jobs at work are few, and SQL's
    // `substr` length wants a cast each server spells its own way.
    let sql = format!(
        "SELECT id, lease_owner FROM ig_jobs \
         WHERE state IN ({}) AND lease_owner IS NOT NULL ORDER BY id",
        state_list(&JobState::work_states())
    );
    let leased: Vec<(JobId, String)> =
        on_conn!(conn, c => sqlx::query_as(&sql).fetch_all(c).await)?;
    Ok(leased
        .into_iter()
        .filter(|(_, owner)| owner.starts_with(&mine) && !owner.starts_with(this_process))
        .collect())
}

/// Notes in the ledger that the process holding `before`'s lease (`owner`)
/// stopped, and frees the job for the next worker at once. The attempt
/// counts (`attempts`, `last_error`). False if the job moved meanwhile.
pub async fn interrupted(
    conn: &mut Conn<'_>,
    key: &ChainKey,
    before: &Job,
    after: &Job,
    owner: &str,
    note: &str,
) -> Result<bool> {
    let done = on_conn!(conn, c => sqlx::query(
        "UPDATE ig_jobs SET version = version + 1, updated_at = $1, lease_owner = NULL, \
           lease_until = NULL, attempts = attempts + 1, last_error = $2 \
         WHERE id = $3 AND state = $4 AND version = $5 AND lease_owner = $6")
        .bind(after.updated_at).bind(note).bind(&before.id).bind(before.state.as_str())
        .bind(before.version).bind(owner)
        .execute(c).await.map(|r| r.rows_affected()))?;
    noted(
        conn,
        key,
        done,
        before,
        after,
        Move::Interrupted,
        Some(note),
        None,
    )
    .await
}

/// Notes in the ledger that `before`'s staged rows and stored file were
/// purged (`detail` says what was removed) and marks the job purged, in
/// the caller's transaction. False, writing nothing, if the job moved or
/// was purged meanwhile.
pub async fn purged(
    conn: &mut Conn<'_>,
    key: &ChainKey,
    before: &Job,
    after: &Job,
    detail: Json,
) -> Result<bool> {
    let done = on_conn!(conn, c => sqlx::query(
        "UPDATE ig_jobs SET version = version + 1, updated_at = $1, purged_at = $2 \
         WHERE id = $3 AND state = $4 AND version = $5 AND purged_at IS NULL")
        .bind(after.updated_at).bind(after.purged_at).bind(&before.id)
        .bind(before.state.as_str()).bind(before.version)
        .execute(c).await.map(|r| r.rows_affected()))?;
    noted(
        conn,
        key,
        done,
        before,
        after,
        Move::Purged,
        None,
        Some(detail),
    )
    .await
}

/// The service's note in the ledger (a move that leaves the job where it
/// is), once its update of the job's row touched `done` rows: none means
/// the job moved, and nothing is noted.
#[allow(clippy::too_many_arguments)]
async fn noted(
    conn: &mut Conn<'_>,
    key: &ChainKey,
    done: u64,
    before: &Job,
    after: &Job,
    event: Move,
    comment: Option<&str>,
    detail: Option<Json>,
) -> Result<bool> {
    if done == 0 {
        return Ok(false);
    }
    let (at, from) = (after.updated_at, Some(before.state));
    add_event(
        conn,
        key,
        before,
        at,
        event,
        from,
        after.state,
        None,
        comment,
        detail,
    )
    .await?;
    Ok(true)
}

#[allow(clippy::too_many_arguments)]
async fn add_event(
    conn: &mut Conn<'_>,
    key: &ChainKey,
    job: &Job,
    at: DateTime<Utc>,
    event: Move,
    from: Option<JobState>,
    to: JobState,
    actor: Option<&str>,
    comment: Option<&str>,
    detail: Option<Json>,
) -> Result<()> {
    let entry = ledger::Entry {
        subject: job.id.as_str(),
        at,
        event: event.as_str(),
        from: from.map(JobState::as_str),
        to: to.as_str(),
        actor,
        comment,
        detail,
        // A workbook's are its parts' (API.md section 16).
        modules: job.modules().into_iter().map(ModuleKey::as_str).collect(),
    };
    ledger::append(conn, key, entry).await
}

/// A page of jobs in id order, after `after_id` (for `ledger verify`).
pub async fn page(conn: &mut Conn<'_>, after_id: &str, limit: i64) -> Result<Vec<Job>> {
    let sql = format!(
        "SELECT {READ_COLUMNS} FROM ig_jobs WHERE id > $1 AND parent_id IS NULL ORDER BY id LIMIT $2"
    );
    on_conn!(conn, c => sqlx::query(&sql).bind(after_id).bind(limit).fetch_all(c).await?
        .iter().map(job).collect())
}

/// Every event of a job, oldest first.
pub async fn events(conn: &mut Conn<'_>, job_id: &JobId) -> Result<Vec<Event>> {
    ledger::events_of(conn, job_id.as_str()).await
}

/// Updates the running counts of a job being validated (progress), without
/// a new version: counts alone are not something an approver decides on.
pub async fn set_counts(conn: &mut Conn<'_>, id: &JobId, counts: &Counts) -> Result<()> {
    on_conn!(conn, c => sqlx::query("UPDATE ig_jobs SET counts = $1 WHERE id = $2")
        .bind(counts_text(counts)).bind(id).execute(c).await.map(|r| r.rows_affected()))?;
    Ok(())
}

/// Claims one job that needs the service's work and whose lease is free or
/// lapsed. On PostgreSQL, `SKIP LOCKED` lets replicas claim side by side.
/// The order work is taken in: fairly by submitter (API.md section 10),
/// so that one person's many large uploads do not hold up another's
/// small one. First the job whose submitter has the fewest jobs being
/// worked on or waiting ahead of it; then the submitter served least
/// recently (the latest lease of any of their jobs, which [`release`]
/// leaves on a job after its work: never served comes first); then the
/// oldest job.
fn fair_order(work: &str, now: &str) -> String {
    format!(
        "(SELECT COUNT(*) FROM ig_jobs o WHERE o.submitter = j.submitter \
           AND o.state IN ({work}) AND o.parent_id IS NULL AND (o.lease_until >= {now} OR o.id < j.id)), \
         (SELECT COALESCE(MAX(o.lease_until), 0) FROM ig_jobs o \
           WHERE o.submitter = j.submitter AND o.lease_until IS NOT NULL), \
         j.id"
    )
}

pub async fn claim(
    conn: &mut Conn<'_>,
    owner: &str,
    now_ms: i64,
    lease_ms: i64,
) -> Result<Option<(JobId, JobState)>> {
    let lock = conn.dialect().claim_lock();
    let work = state_list(&JobState::work_states());
    if !conn.dialect().update_returns() {
        return claim_then_lease(conn, owner, now_ms, lease_ms).await;
    }
    let sql = format!(
        "UPDATE ig_jobs SET lease_owner = $1, lease_until = $2 WHERE id = (\
           SELECT j.id FROM ig_jobs j \
           WHERE j.state IN ({work}) AND j.parent_id IS NULL \
             AND (j.lease_until IS NULL OR j.lease_until < $3) \
           ORDER BY {order} LIMIT 1{lock}) \
         AND (lease_until IS NULL OR lease_until < $3) \
         RETURNING id, state",
        order = fair_order(&work, "$3")
    );
    let got: Option<(JobId, String)> = on_conn!(conn, c => sqlx::query_as(&sql)
        .bind(owner).bind(now_ms + lease_ms).bind(now_ms).fetch_optional(c).await)?;
    Ok(got.and_then(|(id, s)| JobState::parse(&s).map(|s| (id, s))))
}

/// [`claim`] where an `UPDATE` returns no rows and may not read its own
/// table in a subquery (MySQL): the job to claim, locked and passing over
/// those another claim has locked, then its lease, taken only if still
/// free (two replicas choosing the same job lease it once).
async fn claim_then_lease(
    conn: &mut Conn<'_>,
    owner: &str,
    now_ms: i64,
    lease_ms: i64,
) -> Result<Option<(JobId, JobState)>> {
    let lock = conn.dialect().claim_lock();
    let work = state_list(&JobState::work_states());
    let sql = format!(
        "SELECT j.id, j.state FROM ig_jobs j \
         WHERE j.state IN ({work}) AND j.parent_id IS NULL \
           AND (j.lease_until IS NULL OR j.lease_until < $1) \
         ORDER BY {order} LIMIT 1{lock}",
        order = fair_order(&work, "$2")
    );
    let found: Option<(JobId, String)> = on_conn!(conn, c => sqlx::query_as(&sql)
        .bind(now_ms).bind(now_ms).fetch_optional(c).await)?;
    let Some((id, state)) = found else {
        return Ok(None);
    };
    let leased = on_conn!(conn, c => sqlx::query(
        "UPDATE ig_jobs SET lease_owner = $1, lease_until = $2 \
         WHERE id = $3 AND (lease_until IS NULL OR lease_until < $4)")
        .bind(owner).bind(now_ms + lease_ms).bind(&id).bind(now_ms)
        .execute(c).await.map(|r| r.rows_affected()))?;
    Ok((leased == 1)
        .then_some(())
        .and_then(|_| JobState::parse(&state).map(|s| (id, s))))
}

/// Who must still hold a job for work on it to be written (a validation's
/// batches): the lease's owner and how long each write renews it for, in
/// milliseconds.
pub type Lease = Option<(String, i64)>;

/// Why a write was refused: another worker holds the job now. It is no
/// failure of the job: the worker that holds it does the work.
#[derive(Debug)]
pub struct LeaseLost(pub JobId);

impl std::fmt::Display for LeaseLost {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "the lease on {} went to another worker mid-run", self.0)
    }
}

impl std::error::Error for LeaseLost {}

pub fn lease_lost(job_id: &JobId) -> anyhow::Error {
    LeaseLost(job_id.clone()).into()
}

/// Whether `e` is, or was caused by, a [`LeaseLost`].
pub fn lease_was_lost(e: &anyhow::Error) -> bool {
    e.chain().any(|c| c.is::<LeaseLost>())
}

/// Extends a held lease; false when the lease was lost to another worker.
pub async fn heartbeat(
    conn: &mut Conn<'_>,
    id: &JobId,
    owner: &str,
    until_ms: i64,
) -> Result<bool> {
    let done = on_conn!(conn, c => sqlx::query(
        "UPDATE ig_jobs SET lease_until = $1 WHERE id = $2 AND lease_owner = $3")
        .bind(until_ms).bind(id).bind(owner).execute(c).await.map(|r| r.rows_affected()))?;
    Ok(done > 0)
}

/// Records a failed attempt at a job's work by the lease's holder: the
/// count of attempts in a row that failed with this same error (a
/// different error starts again at 1). Nothing when the lease was lost.
pub async fn record_failure(
    conn: &mut Conn<'_>,
    id: &JobId,
    owner: &str,
    error: &str,
) -> Result<Option<i64>> {
    let update = "UPDATE ig_jobs SET attempts = CASE WHEN last_error = $1 THEN attempts + 1 ELSE 1 END, \
                                     last_error = $2 \
                  WHERE id = $3 AND lease_owner = $4";
    if conn.dialect().update_returns() {
        let sql = format!("{update} RETURNING attempts");
        return Ok(on_conn!(conn, c => sqlx::query_scalar(&sql)
            .bind(error).bind(error).bind(id).bind(owner).fetch_optional(c).await)?);
    }
    let done = on_conn!(conn, c => sqlx::query(update)
        .bind(error).bind(error).bind(id).bind(owner).execute(c).await.map(|r| r.rows_affected()))?;
    if done == 0 {
        return Ok(None);
    }
    Ok(on_conn!(conn, c => sqlx::query_scalar(
        "SELECT attempts FROM ig_jobs WHERE id = $1 AND lease_owner = $2")
        .bind(id).bind(owner).fetch_optional(c).await)?)
}

/// Gives a lease back so the job is picked up at once (by this or another
/// process). The lease ends at `now_ms`, just past: it stays on the job as
/// the time its submitter was last served, which the fair order reads.
pub async fn release(conn: &mut Conn<'_>, id: &JobId, owner: &str, now_ms: i64) -> Result<()> {
    on_conn!(conn, c => sqlx::query(
        "UPDATE ig_jobs SET lease_owner = NULL, lease_until = $1 WHERE id = $2 AND lease_owner = $3")
        .bind(now_ms - 1).bind(id).bind(owner).execute(c).await.map(|r| r.rows_affected()))?;
    Ok(())
}

/// How many jobs are in each state.
pub async fn count_by_state(conn: &mut Conn<'_>) -> Result<Vec<(String, i64)>> {
    Ok(on_conn!(conn, c => sqlx::query_as(
            "SELECT state, COUNT(*) FROM ig_jobs WHERE parent_id IS NULL GROUP BY state")
        .fetch_all(c).await)?)
}

/// Jobs that may expire (by the state table) and have not moved since
/// before `cutoff`.
pub async fn expirable_since(conn: &mut Conn<'_>, cutoff: DateTime<Utc>) -> Result<Vec<JobId>> {
    let sql = format!(
        "SELECT id FROM ig_jobs WHERE state IN ({}) AND updated_at < $1 AND parent_id IS NULL \
         ORDER BY id LIMIT 100",
        state_list(&JobState::sources_of(Move::Expire))
    );
    Ok(on_conn!(conn, c => sqlx::query_scalar(&sql).bind(cutoff).fetch_all(c).await)?)
}

/// States as an SQL list of literals. The names come from the ledger's
/// enum (`[a-z_]`), never from a client.
fn state_list(states: &[JobState]) -> String {
    states
        .iter()
        .map(|s| format!("'{}'", s.as_str()))
        .collect::<Vec<_>>()
        .join(", ")
}

/// The jobs with these ids (those that exist), for refreshing a list.
pub async fn get_many(conn: &mut Conn<'_>, ids: &[JobId]) -> Result<Vec<Job>> {
    if ids.is_empty() {
        return Ok(vec![]);
    }
    let marks: Vec<String> = (1..=ids.len()).map(|i| format!("${i}")).collect();
    let sql = format!(
        "SELECT {READ_COLUMNS} FROM ig_jobs WHERE id IN ({}) AND parent_id IS NULL ORDER BY id DESC",
        marks.join(", ")
    );
    // Sized to the list: not kept in the statement cache (`store::pieces`).
    let jobs = on_conn!(conn, c => {
        let mut q = sqlx::query(&sql).persistent(false);
        for id in ids {
            q = q.bind(id);
        }
        q.fetch_all(c).await?.iter().map(job).collect::<Result<Vec<_>>>()
    })?;
    with_parts(conn, jobs).await
}

/// Gives a job's work lease to `owner` until `until_ms`, whoever held it:
/// no worker touches the job before then. The demo uses it to leave one job
/// `validating` for a while; a lapsed hold is claimed like any lease.
pub async fn hold(conn: &mut Conn<'_>, id: &JobId, owner: &str, until_ms: i64) -> Result<()> {
    on_conn!(conn, c => sqlx::query(
        "UPDATE ig_jobs SET lease_owner = $1, lease_until = $2 WHERE id = $3")
        .bind(owner).bind(until_ms).bind(id).execute(c).await.map(|r| r.rows_affected()))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_lease_lost_is_known_through_the_context_around_it() {
        let id = JobId::from_stored("job_1");
        let e = lease_lost(&id).context("writing a batch");
        assert!(lease_was_lost(&e));
        assert!(!lease_was_lost(&anyhow::anyhow!("disk full")));
    }
}
