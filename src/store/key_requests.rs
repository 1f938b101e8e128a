//! Key requests of the developer center (API.md section 7). Like the key
//! table, this table keeps the requester's full name and email; everything
//! that shows a request masks them. Only a hash of the claim token is kept,
//! and the key itself is made when it is collected, so no key secret is
//! ever at rest.

use chrono::{DateTime, Utc};
use sqlx::Row;

use super::db::Conn;
use super::error::{Result, StoreError, json_col};
use super::sql::now;
use crate::ids::KeyId;
use crate::keys::{KeyRequest, RequestState, Role};
use crate::on_conn;

const COLUMNS: &str = "id, name, email, role, modules, reason, claim_hash, state, created_at, \
    decided_at, decided_by, comment, key_id, collected_at, client";

fn record<R: Row>(row: &R) -> Result<KeyRequest>
where
    for<'r> String: sqlx::Decode<'r, R::Database> + sqlx::Type<R::Database>,
    for<'r> DateTime<Utc>: sqlx::Decode<'r, R::Database> + sqlx::Type<R::Database>,
    for<'r> &'r str: sqlx::ColumnIndex<R>,
{
    let role: String = row.try_get("role")?;
    let state: String = row.try_get("state")?;
    let modules: String = row.try_get("modules")?;
    Ok(KeyRequest {
        id: row.try_get("id")?,
        name: row.try_get("name")?,
        email: row.try_get("email")?,
        role: Role::parse(&role).ok_or_else(|| StoreError::Corrupt(format!("role {role}")))?,
        modules: json_col(&modules, "modules")?,
        reason: row.try_get("reason")?,
        claim_hash: row.try_get("claim_hash")?,
        state: RequestState::parse(&state)
            .ok_or_else(|| StoreError::Corrupt(format!("request state {state}")))?,
        created_at: row.try_get("created_at")?,
        decided_at: row.try_get("decided_at")?,
        decided_by: row.try_get("decided_by")?,
        comment: row.try_get("comment")?,
        key_id: row.try_get("key_id")?,
        collected_at: row.try_get("collected_at")?,
        client: row.try_get("client")?,
    })
}

pub async fn insert(conn: &mut Conn<'_>, r: &KeyRequest) -> Result<()> {
    let modules = serde_json::to_string(&r.modules).unwrap_or_else(|_| "[]".into());
    on_conn!(conn, c => sqlx::query(
        "INSERT INTO ig_key_requests (id, name, email, role, modules, reason, claim_hash, state, created_at, client) \
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)")
        .bind(&r.id).bind(&r.name).bind(&r.email).bind(r.role.as_str()).bind(&modules)
        .bind(&r.reason).bind(&r.claim_hash).bind(r.state.as_str()).bind(r.created_at).bind(&r.client)
        .execute(c).await.map(|x| x.rows_affected()))?;
    Ok(())
}

pub async fn get(conn: &mut Conn<'_>, id: &str) -> Result<Option<KeyRequest>> {
    let sql = format!("SELECT {COLUMNS} FROM ig_key_requests WHERE id = $1");
    on_conn!(conn, c => match sqlx::query(&sql).bind(id).fetch_optional(c).await? {
        Some(row) => Ok(Some(record(&row)?)),
        None => Ok(None),
    })
}

/// Requests, newest first; only pending ones when `pending_only`.
/// Requests, newest first, older than `before` (an id) when given.
pub async fn list(
    conn: &mut Conn<'_>,
    pending_only: bool,
    before: Option<&str>,
    limit: i64,
) -> Result<Vec<KeyRequest>> {
    let pending = if pending_only {
        " AND state = 'pending'"
    } else {
        ""
    };
    let sql = format!(
        "SELECT {COLUMNS} FROM ig_key_requests WHERE id < $1{pending} ORDER BY id DESC LIMIT $2"
    );
    // Every id sorts before `~`.
    let before = before.unwrap_or("~");
    on_conn!(conn, c => sqlx::query(&sql).bind(before).bind(limit)
        .fetch_all(c).await?.iter().map(record).collect())
}

/// Ends requests past their time: pending ones created before
/// `pending_before`, approved ones decided before `approved_before` and
/// never collected.
pub async fn expire_due(
    conn: &mut Conn<'_>,
    pending_before: DateTime<Utc>,
    approved_before: DateTime<Utc>,
) -> Result<u64> {
    Ok(on_conn!(conn, c => sqlx::query(
        "UPDATE ig_key_requests SET state = 'expired' \
         WHERE (state = 'pending' AND created_at < $1) OR (state = 'approved' AND decided_at < $2)")
        .bind(pending_before).bind(approved_before).execute(c).await.map(|r| r.rows_affected()))?)
}

/// Withdraws an approved request not yet collected; false when it was not so.
pub async fn withdraw(conn: &mut Conn<'_>, id: &str) -> Result<bool> {
    let done = on_conn!(conn, c => sqlx::query(
        "UPDATE ig_key_requests SET state = 'withdrawn' WHERE id = $1 AND state = 'approved'")
        .bind(id).execute(c).await.map(|r| r.rows_affected()))?;
    Ok(done > 0)
}

/// Records a key request attempt from a client address, and how many it
/// made since `since` (this one included).
pub async fn attempt(
    conn: &mut Conn<'_>,
    client: &str,
    at: DateTime<Utc>,
    since: DateTime<Utc>,
) -> Result<i64> {
    on_conn!(conn, c => sqlx::query("INSERT INTO ig_request_attempts (client, at) VALUES ($1, $2)")
        .bind(client).bind(at).execute(&mut *c).await.map(|r| r.rows_affected()))?;
    Ok(on_conn!(conn, c => sqlx::query_scalar(
        "SELECT COUNT(*) FROM ig_request_attempts WHERE client = $1 AND at > $2")
        .bind(client).bind(since).fetch_one(c).await)?)
}

/// Forgets attempts older than `before`.
pub async fn purge_attempts(conn: &mut Conn<'_>, before: DateTime<Utc>) -> Result<u64> {
    Ok(
        on_conn!(conn, c => sqlx::query("DELETE FROM ig_request_attempts WHERE at < $1")
        .bind(before).execute(c).await.map(|r| r.rows_affected()))?,
    )
}

/// How many requests wait for a decision.
pub async fn pending_count(conn: &mut Conn<'_>) -> Result<i64> {
    Ok(on_conn!(conn, c => sqlx::query_scalar(
        "SELECT COUNT(*) FROM ig_key_requests WHERE state = 'pending'").fetch_one(c).await)?)
}

/// How many requests from one client address wait for a decision.
pub async fn pending_from(conn: &mut Conn<'_>, client: &str) -> Result<i64> {
    Ok(on_conn!(conn, c => sqlx::query_scalar(
        "SELECT COUNT(*) FROM ig_key_requests WHERE client = $1 AND state = 'pending'")
        .bind(client).fetch_one(c).await)?)
}

/// The ids of the requests from one client address that wait for a
/// decision, oldest first.
pub async fn pending_ids_from(conn: &mut Conn<'_>, client: &str) -> Result<Vec<String>> {
    Ok(on_conn!(conn, c => sqlx::query_scalar(
        "SELECT id FROM ig_key_requests WHERE client = $1 AND state = 'pending' ORDER BY id")
        .bind(client).fetch_all(c).await)?)
}

/// Records a decision on a pending request; false when it was not pending
/// (somebody decided first).
pub async fn decide(
    conn: &mut Conn<'_>,
    id: &str,
    to: RequestState,
    by: &KeyId,
    comment: Option<&str>,
) -> Result<bool> {
    let done = on_conn!(conn, c => sqlx::query(
        "UPDATE ig_key_requests SET state = $1, decided_at = $2, decided_by = $3, comment = $4 \
         WHERE id = $5 AND state = 'pending'")
        .bind(to.as_str()).bind(now()).bind(by).bind(comment).bind(id)
        .execute(c).await.map(|r| r.rows_affected()))?;
    Ok(done > 0)
}

/// Marks an approved request collected with the key made for it; false when
/// it was collected already (two claims at once: the first wins).
pub async fn collect(conn: &mut Conn<'_>, id: &str, key_id: &KeyId) -> Result<bool> {
    let done = on_conn!(conn, c => sqlx::query(
        "UPDATE ig_key_requests SET state = 'collected', key_id = $1, collected_at = $2 \
         WHERE id = $3 AND state = 'approved'")
        .bind(key_id).bind(now()).bind(id)
        .execute(c).await.map(|r| r.rows_affected()))?;
    Ok(done > 0)
}
