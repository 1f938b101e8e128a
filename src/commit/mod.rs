//! Commit and rollback: the only code that writes a module's table.
//!
//! Both run in one database transaction together with the job's move to
//! its next state, so a crash at any moment leaves every row or none, and
//! the ledger always says which. Both first re-check what the approver saw:
//! a commit refuses when a previewed row changed since (`stale_preview`); a
//! rollback refuses when a row changed since the commit (a conflict).

use std::collections::HashMap;

use serde_json::{Map, Value as Json, json};

use crate::catalog::Module;
use crate::ledger::Job;
use crate::store::rows::{self, BATCH, Change, StoredRow};
use crate::store::staged::{self, Seqs};
use crate::store::tables::{self, TableRow, key_values, row_from_json};
use crate::store::{Conn, Tx};
use crate::validate::Value;

/// Rows listed in a refusal; the rest are counted.
const LISTED: usize = 50;

/// Why a commit or rollback wrote nothing.
#[derive(Debug)]
pub struct Refused {
    pub rows: Vec<Json>,
    /// Rows that conflict, including those not listed.
    pub total: usize,
}

/// The rows a commit or rollback refused on: the first few listed, all counted.
#[derive(Default)]
struct Conflicts {
    listed: Vec<Json>,
    total: usize,
}

impl Conflicts {
    fn add(&mut self, row: i64, nkey: &str, reason: &str) {
        self.total += 1;
        if self.listed.len() < LISTED {
            let key: Json = serde_json::from_str(nkey).unwrap_or(Json::Null);
            self.listed
                .push(json!({"row": row, "key": key, "reason": reason}));
        }
    }

    /// Adds rows found by a set-based check.
    fn add_found(&mut self, found: staged::Found, reason: &str) {
        for (row, nkey) in &found.first {
            self.add(*row, nkey, reason);
        }
        // The set-based check counted every row, listed or not.
        self.total += (found.total as usize).saturating_sub(found.first.len());
    }

    fn into_result(self) -> Result<(), Refused> {
        if self.total == 0 {
            Ok(())
        } else {
            Err(Refused {
                rows: self.listed,
                total: self.total,
            })
        }
    }
}

/// Writes a job's staged rows inside `tx`. `Ok(Err(..))` means the preview
/// is stale and the caller must roll `tx` back. With `simulated`, the checks
/// and the change log are made but the table is not touched.
pub async fn commit(
    tx: &mut Tx,
    module: &Module,
    job: &Job,
    simulated: bool,
) -> anyhow::Result<Result<(), Refused>> {
    tables::lock_for_writing(&mut tx.conn(), module).await?;
    let provided = rows::provided_columns(&mut tx.conn(), module, &job.id).await?;
    let mut conflicts = Conflicts::default();
    let taken = staged::taken_keys(&mut tx.conn(), module, &job.id, LISTED as i64).await?;
    conflicts.add_found(taken, "the key was added to the table since the preview");
    check_updates(tx, module, job, &mut conflicts).await?;
    if conflicts.total > 0 {
        return Ok(conflicts.into_result());
    }
    if !simulated {
        for seqs in Seqs::all(job.counts.rows) {
            staged::update(&mut tx.conn(), module, &job.id, &provided, seqs).await?;
        }
        staged::insert(&mut tx.conn(), module, &job.id, &provided).await?;
    }
    Ok(Ok(()))
}

/// Re-checks the rows previewed as updates or unchanged against the table
/// (locked), and records the before- and after-image of each update.
async fn check_updates(
    tx: &mut Tx,
    module: &Module,
    job: &Job,
    conflicts: &mut Conflicts,
) -> anyhow::Result<()> {
    for action in ["update", "unchanged"] {
        check_action(tx, module, job, action, conflicts).await?;
    }
    Ok(())
}

/// [`check_updates`] for the rows previewed with one action.
async fn check_action(
    tx: &mut Tx,
    module: &Module,
    job: &Job,
    action: &str,
    conflicts: &mut Conflicts,
) -> anyhow::Result<()> {
    let mut after = -1i64;
    loop {
        let batch = rows::to_check(&mut tx.conn(), &job.id, action, after, BATCH as i64).await?;
        let Some(last) = batch.last() else { break };
        after = last.seq;
        let current = current_rows(
            &mut tx.conn(),
            module,
            batch.iter().filter_map(|r| r.nkey.as_deref()),
        )
        .await?;
        let mut changes = Vec::with_capacity(batch.len());
        for row in &batch {
            let nkey = row.nkey.as_deref().unwrap_or("[]");
            let Some(cur) = current.get(nkey) else {
                conflicts.add(row.row_no, nkey, "the row was deleted since the preview");
                continue;
            };
            let updating = row.action == "update";
            let seen = if updating {
                row.before.as_ref()
            } else {
                Some(&row.vals)
            };
            if !matches_now(module, cur, seen) {
                conflicts.add(row.row_no, nkey, "the row changed since the preview");
            } else if updating && conflicts.total == 0 {
                let full = overlay(module, Some(cur), &row.vals);
                changes.push(change(row, cur, module, &full));
            }
        }
        if conflicts.total == 0 {
            rows::insert_changes(&mut tx.conn(), &job.id, &changes).await?;
        }
    }
    Ok(())
}

/// Undoes a committed job inside `tx`: deletes what it inserted, restores
/// what it updated. `Ok(Err(..))` lists rows changed since the commit; the
/// caller must then roll `tx` back.
pub async fn rollback(
    tx: &mut Tx,
    module: &Module,
    job: &Job,
    simulated: bool,
) -> anyhow::Result<Result<(), Refused>> {
    if simulated {
        // Nothing was written, so there is nothing to find or undo.
        return Ok(Ok(()));
    }
    tables::lock_for_writing(&mut tx.conn(), module).await?;
    let provided = rows::provided_columns(&mut tx.conn(), module, &job.id).await?;
    let mut conflicts = Conflicts::default();
    let changed =
        staged::changed_inserts(&mut tx.conn(), module, &job.id, &provided, LISTED as i64).await?;
    conflicts.add_found(changed, "the row was changed or deleted since the commit");
    let mut after = -1i64;
    loop {
        let batch = rows::changes(&mut tx.conn(), &job.id, after, BATCH as i64).await?;
        let Some(last) = batch.last() else { break };
        after = last.seq;
        let current = current_rows(
            &mut tx.conn(),
            module,
            batch.iter().map(|c| c.nkey.as_str()),
        )
        .await?;
        for ch in &batch {
            let after_row: Map<String, Json> = serde_json::from_str(&ch.after)?;
            match current.get(&ch.nkey) {
                None => conflicts.add(ch.row_no, &ch.nkey, "the row was deleted since the commit"),
                Some(cur) if !same_row(&cur.values, &row_from_json(module, &after_row)) => {
                    conflicts.add(ch.row_no, &ch.nkey, "the row changed since the commit")
                }
                Some(_) => {}
            }
        }
    }
    if conflicts.total > 0 {
        return Ok(conflicts.into_result());
    }
    for seqs in Seqs::all(job.counts.rows) {
        staged::delete_inserted(&mut tx.conn(), module, &job.id, seqs).await?;
        staged::restore_updated(&mut tx.conn(), module, &job.id, seqs).await?;
    }
    Ok(Ok(()))
}

/// The table's rows for these natural keys (the table is locked, see
/// [`tables::lock_for_writing`]).
async fn current_rows<'a>(
    conn: &mut Conn<'_>,
    module: &Module,
    nkeys: impl Iterator<Item = &'a str>,
) -> anyhow::Result<HashMap<String, TableRow>> {
    let keys: Vec<Vec<Value>> = nkeys.filter_map(|k| key_values(module, k)).collect();
    Ok(tables::by_keys(conn, module, &keys).await?)
}

/// The whole row a staged row leads to: the current row (or nulls) with the
/// file's columns written over it.
fn overlay(
    module: &Module,
    cur: Option<&TableRow>,
    vals: &Map<String, Json>,
) -> Vec<Option<Value>> {
    module
        .columns
        .iter()
        .enumerate()
        .map(|(i, c)| match vals.get(&c.name) {
            Some(j) => Value::from_json(c.ty, j).flatten(),
            None => cur.and_then(|r| r.values[i].clone()),
        })
        .collect()
}

/// Whether the table still holds what the preview showed for these columns.
fn matches_now(module: &Module, cur: &TableRow, seen: Option<&Map<String, Json>>) -> bool {
    let Some(seen) = seen else { return false };
    seen.iter()
        .all(|(name, j)| match module.column_index(name) {
            Some(i) => Value::same(
                &cur.values[i],
                &Value::from_json(module.columns[i].ty, j).flatten(),
            ),
            None => false,
        })
}

fn same_row(a: &[Option<Value>], b: &[Option<Value>]) -> bool {
    a.len() == b.len() && a.iter().zip(b).all(|(x, y)| Value::same(x, y))
}

/// The change-log entry of an update: the whole row before and after.
fn change(row: &StoredRow, before: &TableRow, module: &Module, after: &[Option<Value>]) -> Change {
    let after_row = TableRow {
        id: before.id,
        values: after.to_vec(),
    };
    Change {
        seq: row.seq,
        row_no: row.row_no,
        op: "update".to_string(),
        nkey: row.nkey.clone().unwrap_or_default(),
        before: Some(Json::Object(before.to_json(module)).to_string()),
        after: Json::Object(after_row.to_json(module)).to_string(),
    }
}
