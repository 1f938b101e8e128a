//! Console sessions: a signed-in browser is a row here, found by the
//! SHA-256 of the random id its cookie carries (the id itself is never
//! stored), with the key it signed in with and its CSRF token.

use chrono::{DateTime, Utc};

use super::db::Conn;
use super::error::Result;
use super::sql::now;
use crate::ids::KeyId;
use crate::on_conn;

/// A session as stored.
#[derive(Debug, Clone)]
pub struct SessionRecord {
    pub key_id: KeyId,
    pub csrf: String,
    pub created_at: DateTime<Utc>,
    pub expires_at: DateTime<Utc>,
}

pub async fn insert(
    conn: &mut Conn<'_>,
    id_hash: &str,
    key_id: &KeyId,
    csrf: &str,
    expires_at: DateTime<Utc>,
) -> Result<()> {
    on_conn!(conn, c => sqlx::query(
        "INSERT INTO ig_sessions (id_hash, key_id, csrf, created_at, expires_at) VALUES ($1, $2, $3, $4, $5)")
        .bind(id_hash).bind(key_id).bind(csrf).bind(now()).bind(expires_at)
        .execute(c).await.map(|r| r.rows_affected()))?;
    Ok(())
}

/// The session with this id hash, if it has not expired.
pub async fn get(
    conn: &mut Conn<'_>,
    id_hash: &str,
    now: DateTime<Utc>,
) -> Result<Option<SessionRecord>> {
    let row: Option<(KeyId, String, DateTime<Utc>, DateTime<Utc>)> = on_conn!(conn, c => sqlx::query_as(
        "SELECT key_id, csrf, created_at, expires_at FROM ig_sessions WHERE id_hash = $1 AND expires_at > $2")
        .bind(id_hash).bind(now).fetch_optional(c).await)?;
    Ok(
        row.map(|(key_id, csrf, created_at, expires_at)| SessionRecord {
            key_id,
            csrf,
            created_at,
            expires_at,
        }),
    )
}

/// Moves a session's expiry (sliding idle timeout).
pub async fn extend(conn: &mut Conn<'_>, id_hash: &str, expires_at: DateTime<Utc>) -> Result<()> {
    on_conn!(conn, c => sqlx::query("UPDATE ig_sessions SET expires_at = $1 WHERE id_hash = $2")
        .bind(expires_at).bind(id_hash).execute(c).await.map(|r| r.rows_affected()))?;
    Ok(())
}

/// Ends a session (sign-out).
pub async fn delete(conn: &mut Conn<'_>, id_hash: &str) -> Result<()> {
    on_conn!(conn, c => sqlx::query("DELETE FROM ig_sessions WHERE id_hash = $1")
        .bind(id_hash).execute(c).await.map(|r| r.rows_affected()))?;
    Ok(())
}

/// Forgets sessions that expired before `now`.
pub async fn sweep(conn: &mut Conn<'_>, now: DateTime<Utc>) -> Result<u64> {
    Ok(
        on_conn!(conn, c => sqlx::query("DELETE FROM ig_sessions WHERE expires_at <= $1")
        .bind(now).execute(c).await.map(|r| r.rows_affected()))?,
    )
}
