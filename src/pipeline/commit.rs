//! Commit and rollback: the only code that writes a module's table.
//!
//! Both run in one database transaction together with the job's move to
//! its next state, so a crash at any moment leaves every row or none, and
//! the ledger always says which. Both first re-check what the approver saw:
//! a commit refuses when a previewed row changed since (`stale_preview`); a
//! rollback refuses when a row changed since the commit (a conflict).

use std::collections::HashMap;

use serde_json::{Map, Value as Json};

use super::references::{self, Referrer};
use crate::catalog::Module;
use crate::ledger::outcome;
use crate::ledger::{ConflictRow, Job, ReferringRow};
use crate::store::rows::{self, BATCH};
use crate::store::stage::Stage;
use crate::store::stage::writes::{self as staged, Image, Seqs};
use crate::store::tables::{self, TableRow, key_values};
use crate::store::{self, Conn, Tx};
use crate::validate::{RowAction, Value};

/// Rows listed in a refusal; the rest are counted.
const LISTED: usize = 50;
/// Rows of other modules a refused rollback names (API.md section 12).
const REFERRING: usize = 100;

/// Why a commit or rollback wrote nothing: the rows that conflict.
pub type Refused = outcome::Conflicts;

/// The rows a commit or rollback refused on: the first few listed, all counted.
#[derive(Default)]
struct Conflicts {
    listed: Vec<ConflictRow>,
    total: usize,
    referring: Vec<ReferringRow>,
}

impl Conflicts {
    fn add(&mut self, row: i64, nkey: &str, reason: &str) {
        let key: Json = serde_json::from_str(nkey).unwrap_or(Json::Null);
        self.add_row(row, key, reason);
    }

    fn add_row(&mut self, row: i64, key: Json, reason: &str) {
        self.total += 1;
        if self.listed.len() < LISTED {
            self.listed.push(ConflictRow {
                part: None,
                row,
                key,
                reason: reason.to_string(),
            });
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

    /// Adds another check's conflicts after these.
    fn extend(&mut self, other: Conflicts) {
        self.listed.extend(other.listed);
        self.listed.truncate(LISTED);
        self.total += other.total;
        self.referring.extend(other.referring);
    }

    fn into_result(self) -> Result<(), Refused> {
        if self.total == 0 {
            Ok(())
        } else {
            Err(Refused {
                rows: self.listed,
                total: self.total,
                referring: self.referring,
            })
        }
    }
}

/// Writes a job's staged rows inside `tx`. `Ok(Err(..))` means the preview
/// is stale and the caller must roll `tx` back. With `simulated`, the
/// checks are made but the table is not touched.
pub async fn commit(
    tx: &mut Tx,
    module: &Module,
    job: &Job,
    simulated: bool,
) -> anyhow::Result<Result<(), Refused>> {
    tables::lock_for_writing(&mut tx.conn(), module).await?;
    let stage = staged_rows(tx, module, job).await?;
    let mut conflicts = Conflicts::default();
    let taken = staged::taken_keys(&mut tx.conn(), &stage, LISTED as i64).await?;
    conflicts.add_found(taken, "the key was added to the table since the preview");
    let mut unchanged = Conflicts::default();
    check(
        tx,
        &stage,
        RowAction::Unchanged,
        Image::Values,
        SINCE_PREVIEW,
        &mut unchanged,
    )
    .await?;
    if conflicts.total > 0 || unchanged.total > 0 || simulated {
        // Refused (or nothing to write): the updates are checked on their
        // own, so that the refusal lists them all, before unchanged rows.
        stale_updates(tx, &stage, &mut conflicts).await?;
        conflicts.extend(unchanged);
        return Ok(conflicts.into_result());
    }
    if !update_checked(tx, &stage, job).await? {
        stale_updates(tx, &stage, &mut conflicts).await?;
        if conflicts.total > 0 {
            return Ok(conflicts.into_result());
        }
        // The database saw differences the service does not (a value only
        // spelled otherwise): nothing changed, so write without the check.
        for seqs in Seqs::all(tx.conn().dialect(), job.counts.rows) {
            staged::update(&mut tx.conn(), &stage, seqs, false).await?;
        }
    }
    staged::insert(&mut tx.conn(), &stage).await?;
    Ok(Ok(()))
}

/// Lists the previewed updates whose row no longer holds its before-image.
async fn stale_updates(
    tx: &mut Tx,
    stage: &Stage<'_>,
    conflicts: &mut Conflicts,
) -> anyhow::Result<()> {
    check(
        tx,
        stage,
        RowAction::Update,
        Image::Before,
        SINCE_PREVIEW,
        conflicts,
    )
    .await
}

/// Checked updates, one range at a time ([`staged::update`]): whether
/// every staged update was written. If not, the writes are undone.
async fn update_checked(tx: &mut Tx, stage: &Stage<'_>, job: &Job) -> anyhow::Result<bool> {
    store::savepoint(&mut tx.conn(), "ig_checked_updates").await?;
    let mut written = 0;
    for seqs in Seqs::all(tx.conn().dialect(), job.counts.rows) {
        written += staged::update(&mut tx.conn(), stage, seqs, true).await?;
    }
    if written == job.counts.update as u64 {
        return Ok(true);
    }
    store::rollback_to(&mut tx.conn(), "ig_checked_updates").await?;
    Ok(false)
}

/// Where the job's validated rows are (every job at the gate has them).
async fn staged_rows<'a>(tx: &mut Tx, module: &'a Module, job: &Job) -> anyhow::Result<Stage<'a>> {
    Stage::of(&mut tx.conn(), module, &job.id)
        .await?
        .ok_or_else(|| anyhow::anyhow!("job {} has no staged rows", job.id))
}

/// What a conflict says: the row was deleted, or changed, since …
type Reasons = (&'static str, &'static str);
const SINCE_PREVIEW: Reasons = (
    "the row was deleted since the preview",
    "the row changed since the preview",
);
const SINCE_COMMIT: Reasons = (
    "the row was deleted since the commit",
    "the row changed since the commit",
);

/// Re-checks the staged rows with `action` against the table (locked): the
/// database names the rows that no longer hold `image`, and each is
/// confirmed here with the service's own notion of the same value (so
/// `12.5` against a stored `12.50` is no conflict).
async fn check(
    tx: &mut Tx,
    stage: &Stage<'_>,
    action: RowAction,
    image: Image,
    (deleted, changed): Reasons,
    conflicts: &mut Conflicts,
) -> anyhow::Result<()> {
    let module = stage.module;
    let mut after = -1i64;
    loop {
        let suspects =
            staged::suspects(&mut tx.conn(), stage, action, image, after, BATCH as i64).await?;
        let Some(&last) = suspects.last() else { break };
        after = last;
        let batch = rows::rows_at(&mut tx.conn(), stage, &suspects).await?;
        let current = current_rows(
            &mut tx.conn(),
            module,
            batch.iter().filter_map(|r| r.nkey.as_deref()),
        )
        .await?;
        for row in &batch {
            let nkey = row.nkey.as_deref().unwrap_or("[]");
            let seen = match image {
                Image::Values => Some(&row.vals),
                Image::Before => row.before.as_ref(),
            };
            match current.get(nkey) {
                None => conflicts.add(row.row_no, nkey, deleted),
                Some(cur) if !matches_now(module, cur, seen) => {
                    conflicts.add(row.row_no, nkey, changed)
                }
                Some(_) => {}
            }
        }
    }
    Ok(())
}

/// Undoes a committed job inside `tx`: deletes what it inserted, puts back
/// what it updated. `Ok(Err(..))` lists rows changed since the commit; the
/// caller must then roll `tx` back.
pub async fn rollback(
    tx: &mut Tx,
    module: &Module,
    job: &Job,
    referrers: &[Referrer],
    simulated: bool,
) -> anyhow::Result<Result<(), Refused>> {
    if simulated {
        // Nothing was written, so there is nothing to find or undo.
        return Ok(Ok(()));
    }
    tables::lock_for_writing(&mut tx.conn(), module).await?;
    let stage = staged_rows(tx, module, job).await?;
    // Every updated row must still hold what the commit wrote.
    let mut updated = Conflicts::default();
    check(
        tx,
        &stage,
        RowAction::Update,
        Image::Values,
        SINCE_COMMIT,
        &mut updated,
    )
    .await?;
    // Keys that rows of other modules name, with on_missing = "error",
    // may not go: checked while the inserted rows are still there.
    let mut orphaned = Conflicts::default();
    let found = references::orphans(&mut tx.conn(), &stage, referrers, true, LISTED as i64).await?;
    orphaned.referring =
        references::referring_rows(&mut tx.conn(), &stage, &found, REFERRING).await?;
    for o in found {
        let r = &o.referrer.reference;
        for gone in &o.listed {
            orphaned.add_row(
                gone.row_no,
                Json::String(gone.value.clone()),
                &format!(
                    "{} rows of {} name this {} (on_missing = error)",
                    gone.rows, o.referrer.module.key, r.key
                ),
            );
        }
        orphaned.total += (o.rows as usize).saturating_sub(o.listed.len());
    }
    let mut conflicts = undo_inserts(tx, &stage, job).await?;
    // Inserted rows first, then updated rows, each in file order; then
    // the keys other modules still name.
    conflicts.extend(updated);
    conflicts.extend(orphaned);
    if conflicts.total > 0 {
        return Ok(conflicts.into_result());
    }
    for seqs in Seqs::all(tx.conn().dialect(), job.counts.rows) {
        staged::restore_updated(&mut tx.conn(), &stage, seqs).await?;
    }
    Ok(Ok(()))
}

/// Deletes the rows a committed job inserted, if every one still holds
/// what was inserted; otherwise deletes nothing and lists those that do
/// not. When they are still the one range of ids the commit gave them
/// (nearly always), one read proves it and they go by id; else each is
/// checked and deleted through its key in one pass, and if any was not
/// deleted the deletes are undone and the conflicts listed.
async fn undo_inserts(tx: &mut Tx, stage: &Stage<'_>, job: &Job) -> anyhow::Result<Conflicts> {
    let inserted = job.counts.insert;
    let mut conflicts = Conflicts::default();
    if inserted == 0 {
        return Ok(conflicts);
    }
    let only_inserts = inserted == job.counts.rows;
    let ids = staged::inserted_ids(&mut tx.conn(), stage, inserted, only_inserts).await?;
    if let Some((first, last)) = ids {
        staged::delete_ids(&mut tx.conn(), stage.module, first, last).await?;
        return Ok(conflicts);
    }
    store::savepoint(&mut tx.conn(), "ig_undo_inserts").await?;
    let mut deleted = 0;
    for seqs in Seqs::all(tx.conn().dialect(), job.counts.rows) {
        deleted += staged::delete_inserted(&mut tx.conn(), stage, seqs).await?;
    }
    if deleted != inserted as u64 {
        store::rollback_to(&mut tx.conn(), "ig_undo_inserts").await?;
        let changed = staged::changed_inserts(&mut tx.conn(), stage, LISTED as i64).await?;
        conflicts.add_found(changed, "the row was changed or deleted since the commit");
    }
    Ok(conflicts)
}

/// The table's rows for these natural keys (the table is locked, see
/// [`tables::lock_for_writing`]).
async fn current_rows<'a>(
    conn: &mut Conn<'_>,
    module: &Module,
    nkeys: impl Iterator<Item = &'a str>,
) -> anyhow::Result<HashMap<String, TableRow>> {
    let (texts, keys): (Vec<&str>, Vec<Vec<Value>>) = nkeys
        .filter_map(|k| Some((k, key_values(module, k)?)))
        .unzip();
    let found = tables::by_keys(conn, module, &keys).await?;
    Ok((texts.into_iter().zip(found))
        .filter_map(|(k, row)| Some((k.to_string(), row?)))
        .collect())
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
