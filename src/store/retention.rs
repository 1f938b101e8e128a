//! What the retention sweep reads and removes (API.md section 10): the
//! jobs due for a purge, and their staged rows, a bounded batch at a time.
//! The stored file goes with [`super::blobs::drop_unused`], the ledger's
//! note with [`super::jobs::purged`].

use chrono::{DateTime, Utc};

use super::db::Conn;
use super::error::Result;
use crate::ids::JobId;
use crate::ledger::{ENDED_WITHOUT_COMMIT, JobState};
use crate::on_conn;

/// Jobs not purged yet that are due: those that ended without a commit and
/// have not moved since before `ended_before`, and committed ones whose
/// commit (the ledger's `written` event) is older than `committed_before`.
/// At most `limit`, oldest first.
pub async fn due(
    conn: &mut Conn<'_>,
    ended_before: DateTime<Utc>,
    committed_before: DateTime<Utc>,
    limit: i64,
) -> Result<Vec<JobId>> {
    let ended = ENDED_WITHOUT_COMMIT
        .iter()
        .map(|s| format!("'{}'", s.as_str()))
        .collect::<Vec<_>>()
        .join(", ");
    let sql = format!(
        "SELECT id FROM ig_jobs WHERE purged_at IS NULL AND (\
           (state IN ({ended}) AND updated_at < $1) \
           OR (state = '{}' AND (SELECT MIN(e.at) FROM ig_job_events e \
                WHERE e.job_id = ig_jobs.id AND e.event = 'written') < $2)) \
         ORDER BY id LIMIT $3",
        JobState::Committed.as_str()
    );
    Ok(on_conn!(conn, c => sqlx::query_scalar(&sql)
        .bind(ended_before).bind(committed_before).bind(limit).fetch_all(c).await)?)
}

/// Purged jobs whose staged rows are not all removed yet (a big stage, or
/// a sweep that stopped half-way): `(id, module, stage number)`.
pub async fn unfinished(conn: &mut Conn<'_>, limit: i64) -> Result<Vec<(JobId, String, i64)>> {
    Ok(on_conn!(conn, c => sqlx::query_as(
        "SELECT id, module, stage FROM ig_jobs \
         WHERE purged_at IS NOT NULL AND stage IS NOT NULL ORDER BY id LIMIT $1")
        .bind(limit).fetch_all(c).await)?)
}

/// How many rows a job has in a stage table (quoted).
pub async fn staged(conn: &mut Conn<'_>, table: &str, stage: i64) -> Result<i64> {
    let sql = format!("SELECT COUNT(*) FROM {table} WHERE job = $1");
    Ok(on_conn!(conn, c => sqlx::query_scalar(&sql).bind(stage).fetch_one(c).await)?)
}

/// Removes up to `batch` of a job's rows from a stage table (quoted), in
/// file order. The number removed: fewer than `batch` means the stage is
/// empty now.
pub async fn remove_staged(
    conn: &mut Conn<'_>,
    table: &str,
    stage: i64,
    batch: i64,
) -> Result<i64> {
    // The first row past the batch, then the rows before it: MySQL takes
    // no `LIMIT` in an `IN` subquery, and both walk the stage's key.
    let past = format!("SELECT seq FROM {table} WHERE job = $1 ORDER BY seq LIMIT 1 OFFSET $2");
    let past: Option<i64> = on_conn!(conn, c => sqlx::query_scalar(&past)
        .bind(stage).bind(batch).fetch_optional(c).await)?;
    let sql = match past {
        Some(_) => format!("DELETE FROM {table} WHERE job = $1 AND seq < $2"),
        None => format!("DELETE FROM {table} WHERE job = $1"),
    };
    let removed = on_conn!(conn, c => {
        let q = sqlx::query(&sql).bind(stage);
        let q = match past {
            Some(seq) => q.bind(seq),
            None => q,
        };
        q.execute(c).await.map(|r| r.rows_affected())
    })?;
    Ok(removed as i64)
}

/// Records that a purged job has no staged rows left: its stage's
/// numbering breaks and kept keys go, and the job names no stage.
pub async fn forget_stage(conn: &mut Conn<'_>, job_id: &JobId) -> Result<()> {
    let stage: Option<i64> = on_conn!(conn, c => sqlx::query_scalar(
        "SELECT stage FROM ig_jobs WHERE id = $1").bind(job_id).fetch_optional(c).await)?
    .flatten();
    if let Some(stage) = stage {
        on_conn!(conn, c => sqlx::query("DELETE FROM ig_stage_breaks WHERE job = $1")
            .bind(stage).execute(c).await.map(|r| r.rows_affected()))?;
        super::stage::keys::forget(conn, stage).await?;
    }
    on_conn!(conn, c => sqlx::query(
        "UPDATE ig_jobs SET stage = NULL WHERE id = $1 AND purged_at IS NOT NULL")
        .bind(job_id).execute(c).await.map(|r| r.rows_affected()))?;
    Ok(())
}
