//! `Idempotency-Key` records: which job an API key's retried upload maps to.

use chrono::{DateTime, Utc};

use super::db::Conn;
use super::error::Result;
use crate::ids::{JobId, KeyId};
use crate::on_conn;

/// What a key's idempotency key means for this upload.
#[derive(Debug, PartialEq, Eq)]
pub enum Claim {
    /// First use (or the earlier use has expired): go on with `job_id`.
    New,
    /// The same request again: answer with this job.
    Replay(JobId),
    /// The key was used for a different request.
    Reused,
}

/// Claims an idempotency key for a new job inside the upload's transaction.
/// Concurrent retries of one request serialise on the primary key: the
/// second waits for the first to commit, then finds it.
pub async fn claim(
    conn: &mut Conn<'_>,
    key_id: &KeyId,
    idem_key: &str,
    fingerprint: &str,
    job_id: &JobId,
    now: DateTime<Utc>,
    expired_before: DateTime<Utc>,
) -> Result<Claim> {
    let sql = conn.dialect().insert_or_skip(
        "ig_idempotency (key_id, idem_key, fingerprint, job_id, created_at) \
         VALUES ($1, $2, $3, $4, $5)",
        "key_id, idem_key",
    );
    let inserted = on_conn!(conn, c => sqlx::query(&sql)
        .bind(key_id).bind(idem_key).bind(fingerprint).bind(job_id).bind(now)
        .execute(c).await.map(|r| r.rows_affected()))?;
    if inserted == 1 {
        return Ok(Claim::New);
    }
    let (seen, earlier, at): (String, JobId, DateTime<Utc>) = on_conn!(conn, c => sqlx::query_as(
        "SELECT fingerprint, job_id, created_at FROM ig_idempotency WHERE key_id = $1 AND idem_key = $2")
        .bind(key_id).bind(idem_key).fetch_one(c).await)?;
    if at < expired_before {
        on_conn!(conn, c => sqlx::query(
            "UPDATE ig_idempotency SET fingerprint = $1, job_id = $2, created_at = $3 \
             WHERE key_id = $4 AND idem_key = $5")
            .bind(fingerprint).bind(job_id).bind(now).bind(key_id).bind(idem_key)
            .execute(c).await.map(|r| r.rows_affected()))?;
        return Ok(Claim::New);
    }
    Ok(if seen == fingerprint {
        Claim::Replay(earlier)
    } else {
        Claim::Reused
    })
}

/// Forgets records older than `before`.
pub async fn purge(conn: &mut Conn<'_>, before: DateTime<Utc>) -> Result<u64> {
    Ok(
        on_conn!(conn, c => sqlx::query("DELETE FROM ig_idempotency WHERE created_at < $1")
        .bind(before).execute(c).await.map(|r| r.rows_affected()))?,
    )
}
