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
use crate::store::rows::{self, BATCH};
use crate::store::staged::{self, Seqs};
use crate::store::tables::{self, TableRow, key_values, row_from_json};
use crate::store::{self, Conn, Tx};
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
    for action in ["update", "unchanged"] {
        check_action(tx, module, job, &provided, action, &mut conflicts).await?;
    }
    if conflicts.total > 0 {
        return Ok(conflicts.into_result());
    }
    for seqs in Seqs::all(job.counts.rows) {
        // The before-image is read before the update writes over it.
        staged::log_updates(&mut tx.conn(), module, &job.id, &provided, seqs).await?;
        if !simulated {
            staged::update(&mut tx.conn(), module, &job.id, &provided, seqs).await?;
        }
    }
    if !simulated {
        staged::insert(&mut tx.conn(), module, &job.id, &provided).await?;
    }
    Ok(Ok(()))
}

/// Re-checks the rows previewed with `action` (`update` or `unchanged`)
/// against the table (locked): the database names the rows that differ,
/// and each is confirmed here with the service's own notion of the same
/// value (so `12.5` against a stored `12.50` is no conflict).
async fn check_action(
    tx: &mut Tx,
    module: &Module,
    job: &Job,
    provided: &[usize],
    action: &str,
    conflicts: &mut Conflicts,
) -> anyhow::Result<()> {
    let mut after = -1i64;
    loop {
        let suspects = staged::suspects(
            &mut tx.conn(),
            module,
            &job.id,
            action,
            provided,
            after,
            BATCH as i64,
        )
        .await?;
        let Some(&last) = suspects.last() else { break };
        after = last;
        let batch = rows::rows_at(&mut tx.conn(), &job.id, &suspects).await?;
        let current = current_rows(
            &mut tx.conn(),
            module,
            batch.iter().filter_map(|r| r.nkey.as_deref()),
        )
        .await?;
        for row in &batch {
            let nkey = row.nkey.as_deref().unwrap_or("[]");
            let seen = if row.action == "update" {
                row.before.as_ref()
            } else {
                Some(&row.vals)
            };
            match current.get(nkey) {
                None => conflicts.add(row.row_no, nkey, "the row was deleted since the preview"),
                Some(cur) if !matches_now(module, cur, seen) => {
                    conflicts.add(row.row_no, nkey, "the row changed since the preview")
                }
                Some(_) => {}
            }
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
    check_updated(tx, module, job, &mut conflicts).await?;
    // The inserted rows are checked by deleting those that still hold what
    // was inserted (one pass, not a check and then a delete); if any row
    // was not deleted, the deletes are undone and the conflicts listed.
    store::savepoint(&mut tx.conn(), "ig_undo_inserts").await?;
    let mut deleted = 0;
    for seqs in Seqs::all(job.counts.rows) {
        deleted +=
            staged::delete_inserted(&mut tx.conn(), module, &job.id, &provided, seqs).await?;
    }
    if deleted != job.counts.insert as u64 {
        store::rollback_to(&mut tx.conn(), "ig_undo_inserts").await?;
        let changed =
            staged::changed_inserts(&mut tx.conn(), module, &job.id, &provided, LISTED as i64)
                .await?;
        let mut first = Conflicts::default();
        first.add_found(changed, "the row was changed or deleted since the commit");
        // Inserted rows first, then updated rows, each in file order.
        first.listed.extend(conflicts.listed);
        first.listed.truncate(LISTED);
        first.total += conflicts.total;
        conflicts = first;
    }
    if conflicts.total > 0 {
        return Ok(conflicts.into_result());
    }
    for seqs in Seqs::all(job.counts.rows) {
        staged::restore_updated(&mut tx.conn(), module, &job.id, seqs).await?;
    }
    Ok(Ok(()))
}

/// Re-checks that every row the commit updated still holds its
/// after-image: suspects from the database, confirmed as in [`check_action`].
async fn check_updated(
    tx: &mut Tx,
    module: &Module,
    job: &Job,
    conflicts: &mut Conflicts,
) -> anyhow::Result<()> {
    let mut after = -1i64;
    loop {
        let suspects =
            staged::changed_updates(&mut tx.conn(), module, &job.id, after, BATCH as i64).await?;
        let Some(&last) = suspects.last() else { break };
        after = last;
        let batch = rows::changes_at(&mut tx.conn(), &job.id, &suspects).await?;
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
    Ok(())
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
