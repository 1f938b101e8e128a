//! The key table: the only place full names are kept.

use std::collections::HashMap;

use chrono::{DateTime, Utc};
use sqlx::Row;

use super::db::Conn;
use super::error::{Result, StoreError, json_col};
use super::sql::now;
use crate::ids::KeyId;
use crate::keys::{KeyRecord, NewKey, Role};
use crate::on_conn;

/// A key's columns, with its issuer's person (`k` is the key).
const COLUMNS: &str = "k.id, k.name, k.role, k.modules, k.created_at, k.expires_at, k.revoked_at, \
    k.person_id, k.email, k.issued_by, \
    (SELECT i.person_id FROM ig_keys i WHERE i.id = k.issued_by) AS issuer_person";

/// Who a new key is for and who issues it.
#[derive(Debug, Clone)]
pub struct Holder<'a> {
    pub name: &'a str,
    pub email: Option<&'a str>,
    pub person_id: &'a str,
    pub role: Role,
    pub modules: &'a [String],
    pub expires_at: Option<DateTime<Utc>>,
    pub issued_by: Option<&'a KeyRecord>,
}

fn record<R: Row>(row: &R) -> Result<KeyRecord>
where
    for<'r> String: sqlx::Decode<'r, R::Database> + sqlx::Type<R::Database>,
    for<'r> DateTime<Utc>: sqlx::Decode<'r, R::Database> + sqlx::Type<R::Database>,
    for<'r> &'r str: sqlx::ColumnIndex<R>,
{
    let role: String = row.try_get("role")?;
    let modules: String = row.try_get("modules")?;
    Ok(KeyRecord {
        id: row.try_get("id")?,
        name: row.try_get("name")?,
        role: Role::parse(&role).ok_or_else(|| StoreError::Corrupt(format!("role {role}")))?,
        modules: json_col(&modules, "modules")?,
        created_at: row.try_get("created_at")?,
        expires_at: row.try_get("expires_at")?,
        revoked_at: row.try_get("revoked_at")?,
        person_id: row.try_get("person_id")?,
        email: row.try_get("email")?,
        issued_by: row.try_get("issued_by")?,
        issuer_person: row.try_get("issuer_person")?,
    })
}

pub async fn insert(conn: &mut Conn<'_>, key: &NewKey, h: &Holder<'_>) -> Result<KeyRecord> {
    let modules_json = serde_json::to_string(h.modules).unwrap_or_else(|_| "[]".into());
    let now = now();
    let issued_by = h.issued_by.map(|k| &k.id);
    on_conn!(conn, c => sqlx::query(
        "INSERT INTO ig_keys (id, lookup, hash, name, role, modules, created_at, expires_at, \
                              person_id, email, issued_by) \
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)")
        .bind(&key.id).bind(&key.lookup).bind(&key.hash).bind(h.name).bind(h.role.as_str())
        .bind(&modules_json).bind(now).bind(h.expires_at).bind(h.person_id).bind(h.email)
        .bind(issued_by)
        .execute(c).await.map(|r| r.rows_affected()))?;
    Ok(KeyRecord {
        id: key.id.clone(),
        name: h.name.to_string(),
        role: h.role,
        modules: h.modules.to_vec(),
        created_at: now,
        expires_at: h.expires_at,
        revoked_at: None,
        person_id: h.person_id.to_string(),
        email: h.email.map(str::to_string),
        issued_by: issued_by.cloned(),
        issuer_person: h.issued_by.map(|k| k.person_id.clone()),
    })
}

/// The key with this lookup part and its stored hash.
pub async fn by_lookup(conn: &mut Conn<'_>, lookup: &str) -> Result<Option<(KeyRecord, String)>> {
    let sql = format!("SELECT {COLUMNS}, k.hash FROM ig_keys k WHERE k.lookup = $1");
    on_conn!(conn, c => {
        match sqlx::query(&sql).bind(lookup).fetch_optional(c).await? {
            Some(row) => Ok(Some((record(&row)?, row.try_get("hash")?))),
            None => Ok(None),
        }
    })
}

pub async fn get(conn: &mut Conn<'_>, id: &KeyId) -> Result<Option<KeyRecord>> {
    let sql = format!("SELECT {COLUMNS} FROM ig_keys k WHERE k.id = $1");
    on_conn!(conn, c => match sqlx::query(&sql).bind(id).fetch_optional(c).await? {
        Some(row) => Ok(Some(record(&row)?)),
        None => Ok(None),
    })
}

pub async fn list(conn: &mut Conn<'_>) -> Result<Vec<KeyRecord>> {
    let sql = format!("SELECT {COLUMNS} FROM ig_keys k ORDER BY k.created_at, k.id");
    on_conn!(conn, c => sqlx::query(&sql).fetch_all(c).await?.iter().map(record).collect())
}

pub async fn count(conn: &mut Conn<'_>) -> Result<i64> {
    Ok(on_conn!(conn, c => sqlx::query_scalar("SELECT COUNT(*) FROM ig_keys").fetch_one(c).await)?)
}

/// Marks a key revoked; false when there is no such key.
pub async fn revoke(conn: &mut Conn<'_>, id: &KeyId) -> Result<bool> {
    let done = on_conn!(conn, c => sqlx::query(
        "UPDATE ig_keys SET revoked_at = COALESCE(revoked_at, $1) WHERE id = $2")
        .bind(now()).bind(id).execute(c).await.map(|r| r.rows_affected()))?;
    Ok(done > 0)
}

/// Whether some key belongs to this person.
pub async fn person_exists(conn: &mut Conn<'_>, person_id: &str) -> Result<bool> {
    let n: i64 = on_conn!(conn, c => sqlx::query_scalar(
        "SELECT COUNT(*) FROM ig_keys WHERE person_id = $1").bind(person_id).fetch_one(c).await)?;
    Ok(n > 0)
}

/// The persons behind key ids (unknown ids are left out).
pub async fn persons_of(conn: &mut Conn<'_>, ids: &[KeyId]) -> Result<Vec<String>> {
    let mut persons = Vec::new();
    for id in ids {
        let p: Option<String> = on_conn!(conn, c => sqlx::query_scalar(
            "SELECT person_id FROM ig_keys WHERE id = $1").bind(id).fetch_optional(c).await)?;
        persons.extend(p);
    }
    Ok(persons)
}

/// The keys that issued `key`, nearest first: its issuer, that key's
/// issuer, and so on up to a key nobody issued (a first key or one made on
/// the command line). A key is issued by one that existed before it, so
/// the walk ends; `MAX_ISSUERS` bounds it all the same.
pub async fn issuers(conn: &mut Conn<'_>, key: &KeyRecord) -> Result<Vec<KeyRecord>> {
    const MAX_ISSUERS: usize = 256;
    let mut found: Vec<KeyRecord> = Vec::new();
    let mut next = key.issued_by.clone();
    while let Some(id) = next.take() {
        let Some(issuer) = get(conn, &id).await? else {
            break;
        };
        next = issuer.issued_by.clone();
        found.push(issuer);
        if found.len() >= MAX_ISSUERS {
            break;
        }
    }
    Ok(found)
}

/// The names behind key ids, to mask them for display. The key table is
/// small (people and systems, not rows), so it is read whole.
pub async fn names(conn: &mut Conn<'_>) -> Result<HashMap<String, String>> {
    let rows: Vec<(String, String)> = on_conn!(conn, c => sqlx::query_as("SELECT id, name FROM ig_keys")
        .fetch_all(c).await)?;
    Ok(rows.into_iter().collect())
}

/// Gives a key the role, modules, name and email of its holder's latest
/// sign-in with the identity provider (API.md section 17).
pub async fn regrant(
    conn: &mut Conn<'_>,
    id: &KeyId,
    role: Role,
    modules: &[String],
    name: &str,
    email: Option<&str>,
) -> Result<()> {
    let modules_json = serde_json::to_string(modules).unwrap_or_else(|_| "[]".into());
    on_conn!(conn, c => sqlx::query(
        "UPDATE ig_keys SET role = $1, modules = $2, name = $3, email = $4 WHERE id = $5")
        .bind(role.as_str()).bind(&modules_json).bind(name).bind(email).bind(id)
        .execute(c).await.map(|r| r.rows_affected()))?;
    Ok(())
}

/// The persons whose live keys have this email (compared without case).
pub async fn persons_with_email(
    conn: &mut Conn<'_>,
    email: &str,
    now: DateTime<Utc>,
) -> Result<Vec<String>> {
    let found = on_conn!(conn, c => sqlx::query_scalar(
        "SELECT DISTINCT person_id FROM ig_keys WHERE LOWER(email) = LOWER($1) \
           AND revoked_at IS NULL AND (expires_at IS NULL OR expires_at > $2)")
        .bind(email).bind(now).fetch_all(c).await)?;
    Ok(found)
}
