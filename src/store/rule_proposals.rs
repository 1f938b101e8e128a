//! Rule proposals and the rule sets they become (API.md section 14), in
//! `ig_rule_proposals`: a module's rule set at version N is its approved
//! proposal of version N (a unique index keeps it one). Version 1 is the
//! catalog's and has no row.

use chrono::{DateTime, Utc};
use sqlx::Row;

use super::db::Conn;
use super::error::{Result, StoreError, json_col};
use crate::ids::{KeyId, ModuleKey, ProposalId};
use crate::on_conn;
use crate::rules::{Proposal, ProposalState};

const COLUMNS: &str = "id, module, version, rules, comment, state, proposed_by, proposed_at, \
    decided_by, decided_at, decision_comment";

fn record<R: Row>(row: &R) -> Result<Proposal>
where
    for<'r> String: sqlx::Decode<'r, R::Database> + sqlx::Type<R::Database>,
    for<'r> i64: sqlx::Decode<'r, R::Database> + sqlx::Type<R::Database>,
    for<'r> DateTime<Utc>: sqlx::Decode<'r, R::Database> + sqlx::Type<R::Database>,
    for<'r> &'r str: sqlx::ColumnIndex<R>,
{
    let state: String = row.try_get("state")?;
    let rules: String = row.try_get("rules")?;
    let version: i64 = row.try_get("version")?;
    let decided_by: Option<String> = row.try_get("decided_by")?;
    Ok(Proposal {
        id: ProposalId::from_stored(row.try_get::<String, _>("id")?),
        module: ModuleKey::from_stored(row.try_get::<String, _>("module")?),
        version: u32::try_from(version)
            .map_err(|_| StoreError::Corrupt(format!("rule set version {version}")))?,
        rules: json_col(&rules, "rules")?,
        comment: row.try_get("comment")?,
        state: ProposalState::parse(&state)
            .ok_or_else(|| StoreError::Corrupt(format!("proposal state {state}")))?,
        proposed_by: KeyId::from_stored(row.try_get::<String, _>("proposed_by")?),
        proposed_at: row.try_get("proposed_at")?,
        decided_by: decided_by.map(KeyId::from_stored),
        decided_at: row.try_get("decided_at")?,
        decision_comment: row.try_get("decision_comment")?,
    })
}

pub async fn insert(conn: &mut Conn<'_>, p: &Proposal) -> Result<()> {
    let rules = serde_json::to_string(&p.rules).unwrap_or_else(|_| "[]".into());
    on_conn!(conn, c => sqlx::query(
        "INSERT INTO ig_rule_proposals (id, module, version, rules, comment, state, proposed_by, proposed_at) \
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8)")
        .bind(&p.id).bind(&p.module).bind(i64::from(p.version)).bind(&rules).bind(&p.comment)
        .bind(p.state.as_str()).bind(&p.proposed_by).bind(p.proposed_at)
        .execute(c).await.map(|x| x.rows_affected()))?;
    Ok(())
}

pub async fn get(conn: &mut Conn<'_>, id: &ProposalId) -> Result<Option<Proposal>> {
    let sql = format!("SELECT {COLUMNS} FROM ig_rule_proposals WHERE id = $1");
    on_conn!(conn, c => match sqlx::query(&sql).bind(id).fetch_optional(c).await? {
        Some(row) => Ok(Some(record(&row)?)),
        None => Ok(None),
    })
}

/// The approved proposal that is `module`'s rule set at `version`, or the
/// newest one when `version` is `None`.
pub async fn rule_set(
    conn: &mut Conn<'_>,
    module: &ModuleKey,
    version: Option<u32>,
) -> Result<Option<Proposal>> {
    let sql = format!(
        "SELECT {COLUMNS} FROM ig_rule_proposals \
         WHERE module = $1 AND state = 'approved' AND ($2 < 0 OR version = $3) \
         ORDER BY version DESC LIMIT 1"
    );
    let v = version.map_or(-1, i64::from);
    on_conn!(conn, c => match sqlx::query(&sql).bind(module).bind(v).bind(v).fetch_optional(c).await? {
        Some(row) => Ok(Some(record(&row)?)),
        None => Ok(None),
    })
}

/// The version in force of each module with an approved proposal.
pub async fn versions(conn: &mut Conn<'_>) -> Result<Vec<(ModuleKey, u32)>> {
    let rows: Vec<(String, i64)> = on_conn!(conn, c => sqlx::query_as(
        "SELECT module, MAX(version) FROM ig_rule_proposals WHERE state = 'approved' GROUP BY module")
        .fetch_all(c).await)?;
    Ok(rows
        .into_iter()
        .map(|(m, v)| {
            (
                ModuleKey::from_stored(m),
                u32::try_from(v).unwrap_or(u32::MAX),
            )
        })
        .collect())
}

/// Proposals, newest first, of the given modules (`None`: every module)
/// and state, at most `limit`.
pub async fn list(
    conn: &mut Conn<'_>,
    modules: Option<&[ModuleKey]>,
    state: Option<ProposalState>,
    limit: i64,
) -> Result<Vec<Proposal>> {
    let mut filter = vec!["1 = 1".to_string()];
    let mut n = 1;
    if state.is_some() {
        filter.push(format!("state = ${n}"));
        n += 1;
    }
    if let Some(modules) = modules {
        let marks: Vec<String> = (0..modules.len()).map(|i| format!("${}", n + i)).collect();
        filter.push(match marks.is_empty() {
            true => "1 = 0".to_string(),
            false => format!("module IN ({})", marks.join(", ")),
        });
        n += modules.len();
    }
    let sql = format!(
        "SELECT {COLUMNS} FROM ig_rule_proposals WHERE {} ORDER BY id DESC LIMIT ${n}",
        filter.join(" AND ")
    );
    on_conn!(conn, c => {
        let mut q = sqlx::query(&sql);
        if let Some(s) = state {
            q = q.bind(s.as_str());
        }
        for m in modules.unwrap_or(&[]) {
            q = q.bind(m);
        }
        let rows = q.bind(limit).fetch_all(c).await?;
        rows.iter().map(record).collect()
    })
}

/// Records a decision on a proposal still awaiting one; false when it was
/// decided already (somebody decided first).
pub async fn decide(
    conn: &mut Conn<'_>,
    id: &ProposalId,
    to: ProposalState,
    by: &KeyId,
    at: DateTime<Utc>,
    comment: Option<&str>,
) -> Result<bool> {
    let n = on_conn!(conn, c => sqlx::query(
        "UPDATE ig_rule_proposals SET state = $1, decided_by = $2, decided_at = $3, decision_comment = $4 \
         WHERE id = $5 AND state = 'awaiting_approval'")
        .bind(to.as_str()).bind(by).bind(at).bind(comment).bind(id)
        .execute(c).await.map(|x| x.rows_affected()))?;
    Ok(n == 1)
}
