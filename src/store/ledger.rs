//! The ledger's hash chain as stored: every event of every job and key is
//! one link of `ig_job_events` (the table keeps its first name; `job_id`
//! holds the subject, a job or a key or key request id). Links are
//! appended one at a time under a lock, read page by page for
//! verification, and sealed with the ledger's key.

use chrono::{DateTime, Utc};
use serde_json::Value as Json;
use sqlx::Row;

use super::db::Conn;
use super::error::{Result, StoreError};
use super::txn::{self, Lock};
use super::webhooks;
use crate::ledger::chain::{self, ChainKey, Event};
use crate::on_conn;

/// What a new link says; [`append`] numbers it and chains it.
#[derive(Debug, Clone)]
pub struct Entry<'a> {
    /// The job, key or key request the event is about.
    pub subject: &'a str,
    pub at: DateTime<Utc>,
    pub event: &'a str,
    pub from: Option<&'a str>,
    pub to: &'a str,
    /// The key that made the move; `None` for the service.
    pub actor: Option<&'a str>,
    pub comment: Option<&'a str>,
    pub detail: Option<Json>,
    /// The job's module (a workbook job's: its parts'), for the webhooks
    /// that filter by module; none for key events.
    pub modules: Vec<&'a str>,
}

pub(super) fn event<R: Row>(r: &R) -> Result<Event>
where
    for<'r> String: sqlx::Decode<'r, R::Database> + sqlx::Type<R::Database>,
    for<'r> i64: sqlx::Decode<'r, R::Database> + sqlx::Type<R::Database>,
    for<'r> DateTime<Utc>: sqlx::Decode<'r, R::Database> + sqlx::Type<R::Database>,
    for<'r> &'r str: sqlx::ColumnIndex<R>,
{
    Ok(Event {
        seq: r.try_get("seq")?,
        job_id: r.try_get("job_id")?,
        n: r.try_get("n")?,
        at: r.try_get("at")?,
        event: r.try_get("event")?,
        from_state: r.try_get("from_state")?,
        to_state: r.try_get("to_state")?,
        actor: r.try_get("actor")?,
        comment: r.try_get("comment")?,
        detail: r.try_get("detail")?,
    })
}

/// Appends a link, in the caller's transaction.
pub async fn append(conn: &mut Conn<'_>, key: &ChainKey, e: Entry<'_>) -> Result<()> {
    let event_type = crate::ledger::events::client_type(e.event, e.to);
    let webhooks = match event_type {
        Some(t) => webhooks::wanting(conn, t, &e.modules).await?,
        None => Vec::new(),
    };
    // One link at a time: the chain is global, so concurrent moves take
    // turns here (until their transaction ends).
    txn::lock(conn, Lock::Ledger).await?;
    let (prev_seq, prev_hash) = head(conn).await?;
    let n: i64 = on_conn!(conn, c => sqlx::query_scalar(
        "SELECT COALESCE(MAX(n), 0) + 1 FROM ig_job_events WHERE job_id = $1")
        .bind(e.subject).fetch_one(c).await)?;
    let link = Event {
        seq: prev_seq + 1,
        job_id: e.subject.to_string(),
        n,
        at: e.at,
        event: e.event.to_string(),
        from_state: e.from.map(str::to_string),
        to_state: e.to.to_string(),
        actor: e.actor.map(str::to_string),
        comment: e.comment.map(str::to_string),
        detail: e.detail.as_ref().map(Json::to_string),
    };
    let hash = link.hash(key, &prev_hash);
    on_conn!(conn, c => sqlx::query(
        "INSERT INTO ig_job_events (job_id, n, at, event, from_state, to_state, actor, comment, detail, \
                                    seq, prev_hash, hash) \
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)")
        .bind(&link.job_id).bind(link.n).bind(link.at).bind(&link.event).bind(&link.from_state)
        .bind(&link.to_state).bind(&link.actor).bind(&link.comment).bind(&link.detail)
        .bind(link.seq).bind(&prev_hash).bind(&hash)
        .execute(c).await.map(|r| r.rows_affected()))?;
    // The outbox: the link's webhook deliveries, in the same transaction.
    if let Some(t) = event_type {
        webhooks::enqueue(conn, &webhooks, link.seq, e.subject, t, e.at).await?;
    }
    Ok(())
}

/// The chain's head: its number of links and the last link's hash
/// ([`chain::GENESIS`] for an empty chain).
pub async fn head(conn: &mut Conn<'_>) -> Result<(i64, String)> {
    let last: Option<(i64, String)> = on_conn!(conn, c => sqlx::query_as(
        "SELECT seq, hash FROM ig_job_events ORDER BY seq DESC LIMIT 1").fetch_optional(c).await)?;
    Ok(last.unwrap_or((0, chain::GENESIS.to_string())))
}

/// A page of the ledger's links in chain order, after `after_seq`, each
/// with its stored previous hash and hash.
pub async fn links(
    conn: &mut Conn<'_>,
    after_seq: i64,
    limit: i64,
) -> Result<Vec<(Event, String, String)>> {
    on_conn!(conn, c => {
        let rows = sqlx::query(
            "SELECT job_id, n, at, event, from_state, to_state, actor, comment, detail, seq, prev_hash, hash \
             FROM ig_job_events WHERE seq > $1 ORDER BY seq LIMIT $2")
            .bind(after_seq).bind(limit).fetch_all(c).await?;
        rows.iter().map(|r| {
            Ok((event(r)?, r.try_get("prev_hash")?, r.try_get("hash")?))
        }).collect()
    })
}

/// When the ledger's first `key_created` event was written, if one was.
pub async fn first_key_event(conn: &mut Conn<'_>) -> Result<Option<DateTime<Utc>>> {
    Ok(on_conn!(conn, c => sqlx::query_scalar(
        "SELECT MIN(at) FROM ig_job_events WHERE event = 'key_created'").fetch_one(c).await)?)
}

/// The links of one subject (a job, a key, a key request), in its own
/// order, each with its stored previous hash and hash.
pub async fn links_of(conn: &mut Conn<'_>, subject: &str) -> Result<Vec<(Event, String, String)>> {
    on_conn!(conn, c => {
        let rows = sqlx::query(
            "SELECT job_id, n, at, event, from_state, to_state, actor, comment, detail, seq, prev_hash, hash \
             FROM ig_job_events WHERE job_id = $1 ORDER BY n")
            .bind(subject).fetch_all(c).await?;
        rows.iter().map(|r| {
            Ok((event(r)?, r.try_get("prev_hash")?, r.try_get("hash")?))
        }).collect()
    })
}

/// The links with these numbers (those the ledger has), in chain order.
pub async fn links_numbered(conn: &mut Conn<'_>, seqs: &[i64]) -> Result<Vec<Event>> {
    if seqs.is_empty() {
        return Ok(vec![]);
    }
    let sql = format!(
        "SELECT job_id, n, at, event, from_state, to_state, actor, comment, detail, seq \
         FROM ig_job_events WHERE seq IN {} ORDER BY seq",
        conn.dialect().tuples(1, seqs.len())
    );
    // Sized to the list: not kept in the statement cache (`store::pieces`).
    on_conn!(conn, c => {
        let mut q = sqlx::query(&sql).persistent(false);
        for seq in seqs {
            q = q.bind(seq);
        }
        q.fetch_all(c).await?.iter().map(event).collect()
    })
}

/// Which links a reader of the event feed may see: the events of jobs,
/// rule proposals and exports of these modules (`None`: every module), and whether the
/// events of keys and key requests.
#[derive(Debug, Clone, Copy)]
pub struct FeedScope<'a> {
    pub modules: Option<&'a [String]>,
    pub keys: bool,
}

/// The number of the chain's last link (0 for an empty chain).
pub async fn last_seq(conn: &mut Conn<'_>) -> Result<i64> {
    Ok(on_conn!(conn, c => sqlx::query_scalar(
        "SELECT COALESCE(MAX(seq), 0) FROM ig_job_events").fetch_one(c).await)?)
}

/// A page of the links numbered after `after_seq` and at most `upto`, in
/// chain order, that `scope` may see, each with its job's, rule
/// proposal's or export's module (`None` for a key or a key request). The filter is in the statement and the
/// walk follows the unique index on `seq`: a page costs the links it
/// passes over, never the table. Read the head first ([`last_seq`]) and
/// give it as `upto`: every link up to it is committed (links are appended
/// under a lock, in commit order), so a page that is not full has seen
/// everything up to `upto`.
pub async fn feed(
    conn: &mut Conn<'_>,
    after_seq: i64,
    upto: i64,
    scope: FeedScope<'_>,
    limit: i64,
) -> Result<Vec<(Event, Option<String>)>> {
    let modules = scope.modules.unwrap_or(&[]);
    // A link's module: its job's, its rule proposal's or its export's; a
    // key's or a key request's has none.
    let module = "COALESCE(j.module, p.module, x.module)";
    let in_modules = if modules.is_empty() {
        "1 = 0".to_string()
    } else {
        let marks = |from: usize| -> String {
            (0..modules.len())
                .map(|i| format!("${}", from + i))
                .collect::<Vec<_>>()
                .join(", ")
        };
        // A workbook job (module '') is seen when every part's module is.
        format!(
            "({module} IN ({}) OR (j.module = '' AND NOT EXISTS (SELECT 1 FROM ig_jobs q \
               WHERE q.parent_id = j.id AND q.module NOT IN ({}))))",
            marks(3),
            marks(3 + modules.len())
        )
    };
    let filter = match (scope.modules.is_some(), scope.keys) {
        (false, true) => "1 = 1".to_string(),
        (false, false) => format!("{module} IS NOT NULL"),
        (true, false) => in_modules,
        (true, true) => format!("({module} IS NULL OR {in_modules})"),
    };
    // Parameters in the order they are written: the range, the modules
    // twice, the limit.
    let limit_param = 3 + 2 * modules.len();
    let sql = format!(
        "SELECT e.job_id, e.n, e.at, e.event, e.from_state, e.to_state, e.actor, e.comment, \
                e.detail, e.seq, {module} AS module \
         FROM ig_job_events e LEFT JOIN ig_jobs j ON j.id = e.job_id \
              LEFT JOIN ig_rule_proposals p ON p.id = e.job_id \
              LEFT JOIN ig_exports x ON x.id = e.job_id \
         WHERE e.seq > $1 AND e.seq <= $2 AND {filter} ORDER BY e.seq LIMIT ${limit_param}"
    );
    on_conn!(conn, c => {
        let mut q = sqlx::query(&sql).bind(after_seq).bind(upto);
        for m in modules.iter().chain(modules) {
            q = q.bind(m);
        }
        q = q.bind(limit);
        let rows = q.fetch_all(c).await?;
        rows.iter().map(|r| Ok((event(r)?, r.try_get("module")?))).collect()
    })
}

/// Every event of one subject (a job, a key), oldest first.
pub async fn events_of(conn: &mut Conn<'_>, subject: &str) -> Result<Vec<Event>> {
    on_conn!(conn, c => {
        let rows = sqlx::query(
            "SELECT job_id, n, at, event, from_state, to_state, actor, comment, detail, seq \
             FROM ig_job_events WHERE job_id = $1 ORDER BY n")
            .bind(subject).fetch_all(c).await?;
        rows.iter().map(event).collect()
    })
}

/// The fingerprint of the key the chain is sealed with, once it is.
pub async fn fingerprint(conn: &mut Conn<'_>) -> Result<Option<String>> {
    Ok(on_conn!(conn, c => sqlx::query_scalar(
        "SELECT fingerprint FROM ig_ledger_seal LIMIT 1").fetch_optional(c).await)?)
}

/// Seals the chain with `key`: records its fingerprint and, for a ledger
/// written before the chain was keyed, rehashes every link under the key
/// after checking it under the old plain hash. A legacy chain that does
/// not hold is not sealed (that would launder an edit): the error names
/// the first broken link.
pub async fn seal(conn: &mut Conn<'_>, key: &ChainKey) -> Result<()> {
    txn::lock(conn, Lock::Ledger).await?;
    if fingerprint(conn).await?.is_some() {
        return Ok(());
    }
    let mut old_prev = chain::GENESIS.to_string();
    let mut new_prev = chain::GENESIS.to_string();
    let mut after = 0;
    loop {
        let page = links(conn, after, 5000).await?;
        if page.is_empty() {
            break;
        }
        for (link, prev_hash, hash) in page {
            if prev_hash != old_prev || link.legacy_hash(&prev_hash) != hash {
                return Err(StoreError::Corrupt(format!(
                    "the ledger written before its chain was keyed does not hold at event {} \
                     (subject {}, event {}); it was not sealed",
                    link.seq, link.job_id, link.n
                )));
            }
            let sealed = link.hash(key, &new_prev);
            on_conn!(conn, c => sqlx::query(
                "UPDATE ig_job_events SET prev_hash = $1, hash = $2 WHERE seq = $3")
                .bind(&new_prev).bind(&sealed).bind(link.seq)
                .execute(c).await.map(|r| r.rows_affected()))?;
            old_prev = hash;
            new_prev = sealed;
            after = link.seq;
        }
    }
    on_conn!(conn, c => sqlx::query("INSERT INTO ig_ledger_seal (fingerprint) VALUES ($1)")
        .bind(key.fingerprint()).execute(c).await.map(|r| r.rows_affected()))?;
    Ok(())
}
