//! Console sign-in with the company's identity provider (API.md section
//! 17): sign-ins under way (`ig_oidc_logins`, used once) and the people the
//! provider signed in (`ig_oidc_links`: subject → person and sign-in key).

use chrono::{DateTime, Utc};

use super::db::Conn;
use super::error::Result;
use crate::ids::KeyId;
use crate::on_conn;

/// A sign-in between the redirect to the provider and its return.
#[derive(Debug, Clone)]
pub struct Login {
    pub nonce: String,
    pub verifier: String,
    pub next: String,
    pub created_at: DateTime<Utc>,
}

pub async fn insert_login(conn: &mut Conn<'_>, state_hash: &str, login: &Login) -> Result<()> {
    on_conn!(conn, c => sqlx::query(
        "INSERT INTO ig_oidc_logins (state_hash, nonce, verifier, next, created_at) \
         VALUES ($1, $2, $3, $4, $5)")
        .bind(state_hash).bind(&login.nonce).bind(&login.verifier).bind(&login.next)
        .bind(login.created_at).execute(c).await.map(|r| r.rows_affected()))?;
    Ok(())
}

/// Takes the sign-in with this state hash: it is gone afterwards, so a
/// replayed state finds nothing.
pub async fn take_login(conn: &mut Conn<'_>, state_hash: &str) -> Result<Option<Login>> {
    let row: Option<(String, String, String, DateTime<Utc>)> = if conn.dialect().update_returns() {
        on_conn!(conn, c => sqlx::query_as(
            "DELETE FROM ig_oidc_logins WHERE state_hash = $1 \
             RETURNING nonce, verifier, next, created_at")
            .bind(state_hash).fetch_optional(c).await)?
    } else {
        // Read, then dropped: the one whose `DELETE` dropped it has it.
        let row = on_conn!(conn, c => sqlx::query_as(
            "SELECT nonce, verifier, next, created_at FROM ig_oidc_logins WHERE state_hash = $1")
            .bind(state_hash).fetch_optional(c).await)?;
        let gone = on_conn!(conn, c => sqlx::query("DELETE FROM ig_oidc_logins WHERE state_hash = $1")
            .bind(state_hash).execute(c).await.map(|r| r.rows_affected()))?;
        row.filter(|_| gone == 1)
    };
    Ok(row.map(|(nonce, verifier, next, created_at)| Login {
        nonce,
        verifier,
        next,
        created_at,
    }))
}

/// Forgets sign-ins started before `before` and never finished.
pub async fn sweep_logins(conn: &mut Conn<'_>, before: DateTime<Utc>) -> Result<u64> {
    let n = on_conn!(conn, c => sqlx::query("DELETE FROM ig_oidc_logins WHERE created_at < $1")
        .bind(before).execute(c).await.map(|r| r.rows_affected()))?;
    Ok(n)
}

/// The person and sign-in key of a subject the provider signed in before.
pub async fn link(conn: &mut Conn<'_>, issuer: &str, sub: &str) -> Result<Option<(String, KeyId)>> {
    let found = on_conn!(conn, c => sqlx::query_as(
        "SELECT person_id, key_id FROM ig_oidc_links WHERE issuer = $1 AND sub = $2")
        .bind(issuer).bind(sub).fetch_optional(c).await)?;
    Ok(found)
}

pub async fn insert_link(
    conn: &mut Conn<'_>,
    issuer: &str,
    sub: &str,
    person_id: &str,
    key_id: &KeyId,
) -> Result<()> {
    on_conn!(conn, c => sqlx::query(
        "INSERT INTO ig_oidc_links (issuer, sub, person_id, key_id) VALUES ($1, $2, $3, $4)")
        .bind(issuer).bind(sub).bind(person_id).bind(key_id)
        .execute(c).await.map(|r| r.rows_affected()))?;
    Ok(())
}
