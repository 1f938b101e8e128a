//! Webhooks (API.md section 13): the endpoints, the outbox of deliveries
//! written with the ledger's links, and each delivery's attempts.
//!
//! A delivery is one event for one endpoint. It is written in the same
//! transaction as the link it reports ([`enqueue`], called by
//! `store::ledger::append`), so a move that happened is never without its
//! deliveries and one that rolled back has none. Workers on every replica
//! lease due deliveries ([`claim`]); one subject's (a job's) deliveries to
//! one endpoint go in chain order, one at a time. The records themselves
//! are the domain's ([`crate::webhooks`]).

use chrono::{DateTime, Utc};
use sqlx::Row;

use super::db::Conn;
use super::error::{Result, json_col};
use crate::on_conn;
use crate::webhooks::{Attempt, Delivery, Webhook};

const COLUMNS: &str = "id, url, events, modules, description, salt, enabled, disabled_reason, \
    failing_since, created_by, created_at, updated_at";

fn webhook<R: Row>(row: &R) -> Result<Webhook>
where
    for<'r> String: sqlx::Decode<'r, R::Database> + sqlx::Type<R::Database>,
    for<'r> bool: sqlx::Decode<'r, R::Database> + sqlx::Type<R::Database>,
    for<'r> DateTime<Utc>: sqlx::Decode<'r, R::Database> + sqlx::Type<R::Database>,
    for<'r> &'r str: sqlx::ColumnIndex<R>,
{
    let events: String = row.try_get("events")?;
    let modules: String = row.try_get("modules")?;
    Ok(Webhook {
        id: row.try_get("id")?,
        url: row.try_get("url")?,
        events: json_col(&events, "events")?,
        modules: json_col(&modules, "modules")?,
        description: row.try_get("description")?,
        salt: row.try_get("salt")?,
        enabled: row.try_get("enabled")?,
        disabled_reason: row.try_get("disabled_reason")?,
        failing_since: row.try_get("failing_since")?,
        created_by: row.try_get("created_by")?,
        created_at: row.try_get("created_at")?,
        updated_at: row.try_get("updated_at")?,
    })
}

fn json(v: &[String]) -> String {
    serde_json::to_string(v).unwrap_or_else(|_| "[]".into())
}

pub async fn insert(conn: &mut Conn<'_>, w: &Webhook) -> Result<()> {
    let sql = format!(
        "INSERT INTO ig_webhooks ({COLUMNS}) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)"
    );
    on_conn!(conn, c => sqlx::query(&sql)
        .bind(&w.id).bind(&w.url).bind(json(&w.events)).bind(json(&w.modules))
        .bind(&w.description).bind(&w.salt).bind(w.enabled).bind(&w.disabled_reason)
        .bind(w.failing_since).bind(&w.created_by).bind(w.created_at).bind(w.updated_at)
        .execute(c).await.map(|r| r.rows_affected()))?;
    Ok(())
}

/// Writes an endpoint's changeable parts.
pub async fn update(conn: &mut Conn<'_>, w: &Webhook) -> Result<bool> {
    let done = on_conn!(conn, c => sqlx::query(
        "UPDATE ig_webhooks SET url = $1, events = $2, modules = $3, description = $4, enabled = $5, \
         disabled_reason = $6, failing_since = $7, updated_at = $8 WHERE id = $9")
        .bind(&w.url).bind(json(&w.events)).bind(json(&w.modules)).bind(&w.description)
        .bind(w.enabled).bind(&w.disabled_reason).bind(w.failing_since).bind(w.updated_at)
        .bind(&w.id)
        .execute(c).await.map(|r| r.rows_affected()))?;
    Ok(done > 0)
}

pub async fn get(conn: &mut Conn<'_>, id: &str) -> Result<Option<Webhook>> {
    let sql = format!("SELECT {COLUMNS} FROM ig_webhooks WHERE id = $1");
    on_conn!(conn, c => match sqlx::query(&sql).bind(id).fetch_optional(c).await? {
        Some(row) => Ok(Some(webhook(&row)?)),
        None => Ok(None),
    })
}

pub async fn list(conn: &mut Conn<'_>) -> Result<Vec<Webhook>> {
    let sql = format!("SELECT {COLUMNS} FROM ig_webhooks ORDER BY created_at, id");
    on_conn!(conn, c => sqlx::query(&sql).fetch_all(c).await?.iter().map(webhook).collect())
}

/// Deletes an endpoint and its deliveries.
pub async fn delete(conn: &mut Conn<'_>, id: &str) -> Result<bool> {
    on_conn!(conn, c => sqlx::query(
        "DELETE FROM ig_webhook_attempts WHERE delivery_id IN \
           (SELECT id FROM ig_webhook_deliveries WHERE webhook_id = $1)")
        .bind(id).execute(c).await.map(|r| r.rows_affected()))?;
    on_conn!(conn, c => sqlx::query("DELETE FROM ig_webhook_deliveries WHERE webhook_id = $1")
        .bind(id).execute(c).await.map(|r| r.rows_affected()))?;
    let done = on_conn!(conn, c => sqlx::query("DELETE FROM ig_webhooks WHERE id = $1")
        .bind(id).execute(c).await.map(|r| r.rows_affected()))?;
    Ok(done > 0)
}

/// The enabled endpoints that want an event of this type (about a job of
/// one of `modules`: a workbook's any part). Read before a move takes the ledger's lock, so that the lock
/// is held for the outbox's rows only.
pub async fn wanting(
    conn: &mut Conn<'_>,
    event_type: &str,
    modules: &[&str],
) -> Result<Vec<String>> {
    let sql = format!("SELECT {COLUMNS} FROM ig_webhooks WHERE enabled = $1");
    let hooks: Vec<Webhook> = on_conn!(conn, c => sqlx::query(&sql).bind(true).fetch_all(c).await?
        .iter().map(webhook).collect::<Result<_>>())?;
    Ok(hooks
        .into_iter()
        .filter(|w| match modules {
            [] => w.wants(event_type, None),
            some => some.iter().any(|m| w.wants(event_type, Some(m))),
        })
        .map(|w| w.id)
        .collect())
}

/// Writes the deliveries of one new ledger link to the endpoints that want
/// it ([`wanting`]), in the caller's transaction (the outbox).
pub async fn enqueue(
    conn: &mut Conn<'_>,
    webhooks: &[String],
    seq: i64,
    subject: &str,
    event_type: &str,
    at: DateTime<Utc>,
) -> Result<()> {
    for id in webhooks {
        let d = NewDelivery {
            webhook_id: id,
            seq: Some(seq),
            subject,
            event_type,
            body: None,
        };
        add(conn, &d, at).await?;
    }
    Ok(())
}

/// A delivery to write.
pub struct NewDelivery<'a> {
    pub webhook_id: &'a str,
    /// The ledger link it reports; `None` for a test ping.
    pub seq: Option<i64>,
    pub subject: &'a str,
    pub event_type: &'a str,
    /// The body, when it is known already (a test ping); otherwise it is
    /// made at the first attempt and kept for the retries.
    pub body: Option<String>,
}

/// Writes a pending delivery, due now; its id.
pub async fn add(conn: &mut Conn<'_>, d: &NewDelivery<'_>, at: DateTime<Utc>) -> Result<String> {
    let id = format!("msg_{}", ulid::Ulid::generate());
    on_conn!(conn, c => sqlx::query(
        "INSERT INTO ig_webhook_deliveries (id, webhook_id, seq, subject, event_type, state, \
             attempts, next_at, body, created_at) \
         VALUES ($1, $2, $3, $4, $5, 'pending', 0, $6, $7, $8)")
        .bind(&id).bind(d.webhook_id).bind(d.seq).bind(d.subject).bind(d.event_type)
        .bind(at.timestamp_millis()).bind(&d.body).bind(at)
        .execute(c).await.map(|r| r.rows_affected()))?;
    Ok(id)
}

const DELIVERY: &str =
    "id, webhook_id, seq, subject, event_type, state, attempts, body, created_at";

fn delivery<R: Row>(row: &R) -> Result<Delivery>
where
    for<'r> String: sqlx::Decode<'r, R::Database> + sqlx::Type<R::Database>,
    for<'r> i64: sqlx::Decode<'r, R::Database> + sqlx::Type<R::Database>,
    for<'r> DateTime<Utc>: sqlx::Decode<'r, R::Database> + sqlx::Type<R::Database>,
    for<'r> &'r str: sqlx::ColumnIndex<R>,
{
    Ok(Delivery {
        id: row.try_get("id")?,
        webhook_id: row.try_get("webhook_id")?,
        seq: row.try_get("seq")?,
        subject: row.try_get("subject")?,
        event_type: row.try_get("event_type")?,
        state: row.try_get("state")?,
        attempts: row.try_get("attempts")?,
        body: row.try_get("body")?,
        created_at: row.try_get("created_at")?,
    })
}

/// Leases up to `limit` due deliveries to `owner` until `until_ms`: pending,
/// due, not leased by a live worker, to an enabled endpoint, and with no
/// earlier pending delivery of the same subject to the same endpoint (one
/// event at a time per job and endpoint, in order). The leased ones.
pub async fn claim(
    conn: &mut Conn<'_>,
    owner: &str,
    now_ms: i64,
    until_ms: i64,
    limit: i64,
) -> Result<Vec<Delivery>> {
    if !conn.dialect().update_returns() {
        return claim_then_read(conn, owner, now_ms, until_ms, limit).await;
    }
    // The outer condition is checked again on each row as it is updated,
    // so two replicas racing for one delivery cannot both lease it; the
    // rows this statement leased are the ones it returns.
    let sql = format!(
        "UPDATE ig_webhook_deliveries SET lease_owner = $1, lease_until = $2 \
         WHERE state = 'pending' AND (lease_until IS NULL OR lease_until < $3) AND id IN ( \
           SELECT d.id FROM ig_webhook_deliveries d \
           JOIN ig_webhooks w ON w.id = d.webhook_id AND w.enabled = $4 \
           WHERE d.state = 'pending' AND d.next_at <= $3 \
             AND (d.lease_until IS NULL OR d.lease_until < $3) \
             AND NOT EXISTS (SELECT 1 FROM ig_webhook_deliveries e \
               WHERE e.webhook_id = d.webhook_id AND e.subject = d.subject \
                 AND e.state = 'pending' AND e.seq < d.seq) \
           ORDER BY d.next_at, d.id LIMIT $5) \
         RETURNING {DELIVERY}"
    );
    // Planned afresh each time, not prepared once: PostgreSQL keeps a
    // prepared statement's generic plan, and one made while the table was
    // nearly empty (a fresh database, the first deliveries) scans every
    // pending delivery for each pending delivery; with a backlog of 10,000
    // such a claim takes seconds and deliveries all but stop
    // (`psql -f bench/claim_plan.sql` on a scratch database times both).
    // Planning costs a millisecond a round.
    on_conn!(conn, c => sqlx::query(&sql).persistent(false)
        .bind(owner).bind(until_ms).bind(now_ms).bind(true).bind(limit)
        .fetch_all(c).await?
        .iter().map(delivery).collect())
}

/// [`claim`] where an `UPDATE` returns no rows (MySQL): the due
/// deliveries' ids, then the lease of those still free, then the rows
/// leased to `owner` until `until_ms` (the worker's own, this round's).
async fn claim_then_read(
    conn: &mut Conn<'_>,
    owner: &str,
    now_ms: i64,
    until_ms: i64,
    limit: i64,
) -> Result<Vec<Delivery>> {
    let due: Vec<String> = on_conn!(conn, c => sqlx::query_scalar(
        "SELECT d.id FROM ig_webhook_deliveries d \
         JOIN ig_webhooks w ON w.id = d.webhook_id AND w.enabled = $1 \
         WHERE d.state = 'pending' AND d.next_at <= $2 \
           AND (d.lease_until IS NULL OR d.lease_until < $3) \
           AND NOT EXISTS (SELECT 1 FROM ig_webhook_deliveries e \
             WHERE e.webhook_id = d.webhook_id AND e.subject = d.subject \
               AND e.state = 'pending' AND e.seq < d.seq) \
         ORDER BY d.next_at, d.id LIMIT $4")
        .bind(true).bind(now_ms).bind(now_ms).bind(limit).fetch_all(c).await)?;
    if due.is_empty() {
        return Ok(vec![]);
    }
    let ids = id_list(conn.dialect(), 4, due.len());
    let lease = format!(
        "UPDATE ig_webhook_deliveries SET lease_owner = $1, lease_until = $2 \
         WHERE state = 'pending' AND (lease_until IS NULL OR lease_until < $3) AND id IN ({ids})"
    );
    on_conn!(conn, c => {
        let mut q = sqlx::query(&lease).persistent(false).bind(owner).bind(until_ms).bind(now_ms);
        for id in &due {
            q = q.bind(id);
        }
        q.execute(c).await.map(|r| r.rows_affected())
    })?;
    let ids = id_list(conn.dialect(), 3, due.len());
    let read = format!(
        "SELECT {DELIVERY} FROM ig_webhook_deliveries \
         WHERE lease_owner = $1 AND lease_until = $2 AND id IN ({ids}) ORDER BY next_at, id"
    );
    on_conn!(conn, c => {
        let mut q = sqlx::query(&read).persistent(false).bind(owner).bind(until_ms);
        for id in &due {
            q = q.bind(id);
        }
        q.fetch_all(c).await?.iter().map(delivery).collect()
    })
}

/// `n` parameters after the first `before`, for an `IN` list.
fn id_list(dialect: crate::store::Dialect, before: usize, n: usize) -> String {
    let marks: Vec<String> = (1..=n).map(|i| dialect.param(before + i)).collect();
    marks.join(", ")
}

/// Where a delivery goes after an attempt.
pub struct Outcome<'a> {
    /// `delivered`, `failed`, or `pending` again at `next_at_ms`.
    pub state: &'a str,
    pub next_at_ms: i64,
    /// The body sent, kept (at the first attempt) for the retries.
    pub body: &'a str,
}

/// An attempt to record with [`record_all`].
pub struct Settled<'a> {
    pub delivery: &'a Delivery,
    pub attempt: &'a Attempt,
    pub next: Outcome<'a>,
}

/// Records attempts and where each delivery goes next, only while `owner`
/// holds its lease (otherwise another worker took it over), in two
/// statements whatever the batch's size (at most a few hundred): the ids
/// of the deliveries recorded.
pub async fn record_all(
    conn: &mut Conn<'_>,
    owner: &str,
    batch: &[Settled<'_>],
) -> Result<std::collections::HashSet<String>> {
    if batch.is_empty() {
        return Ok(Default::default());
    }
    let dialect = conn.dialect();
    if !dialect.update_returns() {
        let recorded = record_held(conn, owner, batch).await?;
        return record_attempts(conn, batch, recorded).await;
    }
    let rows: Vec<String> = (0..batch.len())
        .map(|i| {
            let p = |k| dialect.param(i * 4 + k);
            format!("({}, {}, CAST({} AS BIGINT), {})", p(1), p(2), p(3), p(4))
        })
        .collect();
    // A VALUES list's columns are column1… in both SQLite and PostgreSQL;
    // the parameters are used once each, in order (`Dialect::param`).
    let sql = format!(
        "UPDATE ig_webhook_deliveries SET state = v.column2, attempts = attempts + 1, \
             next_at = v.column3, lease_owner = NULL, lease_until = NULL, \
             body = COALESCE(body, v.column4) \
         FROM (VALUES {}) AS v \
         WHERE id = v.column1 AND lease_owner = {} AND state = 'pending' RETURNING id",
        rows.join(", "),
        dialect.param(batch.len() * 4 + 1)
    );
    // Sized to the batch: run once, not kept in the statement cache (a
    // shape per batch size would crowd it, see `store::pieces`).
    let recorded: std::collections::HashSet<String> = on_conn!(conn, c => {
        let mut q = sqlx::query_scalar::<_, String>(&sql).persistent(false);
        for s in batch {
            q = q.bind(&s.delivery.id).bind(s.next.state).bind(s.next.next_at_ms).bind(s.next.body);
        }
        q.bind(owner).fetch_all(c).await?
    })
    .into_iter()
    .collect();
    record_attempts(conn, batch, recorded).await
}

/// [`record_all`] where an `UPDATE` returns no rows (MySQL): the ids of
/// the batch's deliveries `owner` still holds, locked, then one `UPDATE`
/// joined to the batch's values.
async fn record_held(
    conn: &mut Conn<'_>,
    owner: &str,
    batch: &[Settled<'_>],
) -> Result<std::collections::HashSet<String>> {
    let dialect = conn.dialect();
    let ids = id_list(dialect, 1, batch.len());
    let held = format!(
        "SELECT id FROM ig_webhook_deliveries \
         WHERE lease_owner = $1 AND state = 'pending' AND id IN ({ids}) FOR UPDATE"
    );
    let held: std::collections::HashSet<String> = on_conn!(conn, c => {
        let mut q = sqlx::query_scalar::<_, String>(&held).persistent(false).bind(owner);
        for s in batch {
            q = q.bind(&s.delivery.id);
        }
        q.fetch_all(c).await?
    })
    .into_iter()
    .collect();
    let kept: Vec<&Settled> = batch
        .iter()
        .filter(|s| held.contains(&s.delivery.id))
        .collect();
    if kept.is_empty() {
        return Ok(held);
    }
    let p = |i: usize, k: usize| dialect.param(i * 4 + k);
    let values: Vec<String> = (0..kept.len())
        .map(|i| {
            format!(
                "SELECT {} AS id, {} AS state, {} AS next_at, {} AS body",
                p(i, 1),
                p(i, 2),
                p(i, 3),
                p(i, 4)
            )
        })
        .collect();
    let sql = format!(
        "UPDATE ig_webhook_deliveries d JOIN ({}) v ON d.id = v.id \
         SET d.state = v.state, d.attempts = d.attempts + 1, d.next_at = v.next_at, \
             d.lease_owner = NULL, d.lease_until = NULL, d.body = COALESCE(d.body, v.body)",
        values.join(" UNION ALL ")
    );
    on_conn!(conn, c => {
        let mut q = sqlx::query(&sql).persistent(false);
        for s in &kept {
            q = q.bind(&s.delivery.id).bind(s.next.state).bind(s.next.next_at_ms).bind(s.next.body);
        }
        q.execute(c).await.map(|r| r.rows_affected())
    })?;
    Ok(held)
}

/// The attempts of the deliveries `recorded` of `batch`, written.
async fn record_attempts(
    conn: &mut Conn<'_>,
    batch: &[Settled<'_>],
    recorded: std::collections::HashSet<String>,
) -> Result<std::collections::HashSet<String>> {
    let dialect = conn.dialect();
    let kept: Vec<&Settled> = batch
        .iter()
        .filter(|s| recorded.contains(&s.delivery.id))
        .collect();
    if kept.is_empty() {
        return Ok(recorded);
    }
    let sql = format!(
        "INSERT INTO ig_webhook_attempts (delivery_id, n, at, status, latency_ms, error, answer) \
         VALUES {}",
        dialect.tuples(kept.len(), 7)
    );
    on_conn!(conn, c => {
        let mut q = sqlx::query(&sql).persistent(false);
        for s in &kept {
            let (d, a) = (s.delivery, s.attempt);
            q = q.bind(&d.id).bind(d.attempts + 1).bind(a.at).bind(a.status)
                .bind(a.latency_ms).bind(&a.error).bind(&a.answer);
        }
        q.execute(c).await.map(|r| r.rows_affected())
    })?;
    Ok(recorded)
}

/// Marks an endpoint failing since `since` unless it already is; clears it
/// when `since` is `None` (an attempt succeeded).
pub async fn set_failing(
    conn: &mut Conn<'_>,
    id: &str,
    since: Option<DateTime<Utc>>,
) -> Result<()> {
    match since {
        Some(at) => on_conn!(conn, c => sqlx::query(
            "UPDATE ig_webhooks SET failing_since = $1 WHERE id = $2 AND failing_since IS NULL")
            .bind(at).bind(id).execute(c).await.map(|r| r.rows_affected()))?,
        None => on_conn!(conn, c => sqlx::query(
            "UPDATE ig_webhooks SET failing_since = NULL WHERE id = $1 AND failing_since IS NOT NULL")
            .bind(id).execute(c).await.map(|r| r.rows_affected()))?,
    };
    Ok(())
}

/// When a delivery was first attempted, if it was.
pub async fn first_attempt_at(
    conn: &mut Conn<'_>,
    delivery_id: &str,
) -> Result<Option<DateTime<Utc>>> {
    Ok(on_conn!(conn, c => sqlx::query_scalar(
        "SELECT at FROM ig_webhook_attempts WHERE delivery_id = $1 AND n = 1")
        .bind(delivery_id).fetch_optional(c).await)?)
}

/// Disables an endpoint that kept failing, with the reason.
pub async fn disable(conn: &mut Conn<'_>, id: &str, reason: &str, at: DateTime<Utc>) -> Result<()> {
    on_conn!(conn, c => sqlx::query(
        "UPDATE ig_webhooks SET enabled = $1, disabled_reason = $2, updated_at = $3 WHERE id = $4")
        .bind(false).bind(reason).bind(at).bind(id).execute(c).await.map(|r| r.rows_affected()))?;
    Ok(())
}

/// An endpoint's deliveries, newest first, at most `limit`.
pub async fn deliveries(
    conn: &mut Conn<'_>,
    webhook_id: &str,
    limit: i64,
) -> Result<Vec<Delivery>> {
    let sql = format!(
        "SELECT {DELIVERY} FROM ig_webhook_deliveries WHERE webhook_id = $1 \
         ORDER BY created_at DESC, id DESC LIMIT $2"
    );
    on_conn!(conn, c => sqlx::query(&sql).bind(webhook_id).bind(limit).fetch_all(c).await?
        .iter().map(delivery).collect())
}

pub async fn delivery_of(
    conn: &mut Conn<'_>,
    webhook_id: &str,
    id: &str,
) -> Result<Option<Delivery>> {
    let sql =
        format!("SELECT {DELIVERY} FROM ig_webhook_deliveries WHERE webhook_id = $1 AND id = $2");
    on_conn!(conn, c => match sqlx::query(&sql).bind(webhook_id).bind(id).fetch_optional(c).await? {
        Some(row) => Ok(Some(delivery(&row)?)),
        None => Ok(None),
    })
}

/// A delivery's attempts, oldest first.
pub async fn attempts(conn: &mut Conn<'_>, delivery_id: &str) -> Result<Vec<Attempt>> {
    on_conn!(conn, c => {
        let rows = sqlx::query(
            "SELECT at, status, latency_ms, error, answer FROM ig_webhook_attempts \
             WHERE delivery_id = $1 ORDER BY n")
            .bind(delivery_id).fetch_all(c).await?;
        rows.iter().map(|r| Ok(Attempt {
            at: r.try_get("at")?,
            status: r.try_get("status")?,
            latency_ms: r.try_get("latency_ms")?,
            error: r.try_get("error")?,
            answer: r.try_get("answer")?,
        })).collect::<Result<Vec<_>>>()
    })
}

/// Makes a delivery that ended (delivered or failed) pending again, due
/// now (a person's retry). False when it is pending already.
pub async fn retry(conn: &mut Conn<'_>, id: &str, now_ms: i64) -> Result<bool> {
    let done = on_conn!(conn, c => sqlx::query(
        "UPDATE ig_webhook_deliveries SET state = 'pending', next_at = $1, lease_owner = NULL, \
             lease_until = NULL WHERE id = $2 AND state <> 'pending'")
        .bind(now_ms).bind(id).execute(c).await.map(|r| r.rows_affected()))?;
    Ok(done > 0)
}
