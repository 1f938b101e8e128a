//! A revision validated in place (API.md section 11): when a revision
//! changes only fixes and exclusions, its parent's staged rows are handed
//! to it and only the rows it touches are checked again — with the rows
//! sharing their keys, for `duplicate_in_file` — without reading the file.
//! Ten fixes in a million rows are then a few queries, not a new pass.
//!
//! A module with rules takes the full pass instead: a unique rule
//! compares a row with every other row of the file, which only reading
//! the file does. So the rows checked here were checked without rules
//! (`revision::incremental` asks for the parent's rules version to be the
//! revision's), and none has a normalized cell.
//!
//! Everything is written in one transaction with the revision's counts and
//! what the file said in each fixed cell, so a run interrupted and run
//! again finds the rows already as it left them and changes nothing more.

use std::collections::{BTreeMap, HashSet};

use serde_json::Value as Json;

use super::references::Checks;
use super::validation::{
    Decide, Outcome, Setup, check_references, decide, duplicate_error, read_head,
};
use crate::catalog::Module;
use crate::ingest::{Cell, RawRow};
use crate::ledger::{Counts, Job, Mode, Revision, WarningCode, revision};
use crate::store::rows::{self, StagedRow, StoredRow};
use crate::store::stage::{self, Stage};
use crate::store::{self, Db};
use crate::validate::{
    CheckedRow, HeaderMap, RowAction, Rules, check_row, match_header_with, value,
};

/// Validates `job`, a revision of `parent`, from `parent`'s staged rows;
/// `None` when it cannot be (it must then read the file): a revision
/// that changes more than fixes and exclusions, or one whose module has
/// rules.
pub async fn revalidate(
    db: &Db,
    module: &Module,
    job: &Job,
    parent: &Job,
    setup: &Setup,
) -> anyhow::Result<Option<Outcome>> {
    let Some(own) = job
        .revision
        .as_ref()
        .filter(|_| setup.rules.is_empty() && revision::incremental(job, parent))
    else {
        return Ok(None);
    };
    if job.mode != Mode::Insert && versioned(db, module, job, setup).await? {
        return Ok(None);
    }
    let mut tx = db.begin().await?;
    stage::hand_over(&mut tx.conn(), &parent.id, &job.id).await?;
    tx.commit().await?;
    let Some(stage) = Stage::of(&mut db.acquire().await?.conn(), module, &job.id).await? else {
        return Ok(None);
    };
    // The stage's columns, in its order, as if they were the file's.
    let header = HeaderMap {
        provided: stage
            .provided
            .iter()
            .enumerate()
            .map(|(k, &c)| (c, k))
            .collect(),
        unknown: vec![],
        version: None,
    };
    let touched = revision::touched(own, parent.revision.as_ref());
    let rows = affected(db, &stage, &header, own, &touched, setup).await?;
    let mut own = own.clone();
    let checked: Vec<CheckedRow> = rows
        .iter()
        .map(|r| recheck(module, &header, &mut own, r, setup))
        .collect();
    let excluded: HashSet<u64> = own.exclude.iter().copied().collect();
    let mut checks = Checks::new(&setup.targets, &header);
    let (checked, warnings) = check_references(db, &mut checks, checked, &excluded).await?;
    let finder = crate::store::lookup::Lookup::new(module);
    let how = Decide {
        module,
        lookup: &finder,
        mode: job.mode,
        header: &header,
        excluded: &excluded,
        versions: None,
    };
    let mut staged = decide(db, &how, checked, warnings, &mut 0).await?;
    for (s, r) in staged.iter_mut().zip(&rows) {
        s.seq = r.seq;
    }
    mark_duplicates(module, &mut staged);

    let seqs: Vec<i64> = rows.iter().map(|r| r.seq).collect();
    let mut tx = db.begin().await?;
    // A run interrupted after its transaction starts from its own counts.
    let base = if job.counts.rows > 0 {
        &job.counts
    } else {
        &parent.counts
    };
    let counts = recount(base, &rows, &staged);
    rows::remove(&mut tx.conn(), &stage, &job.id, &seqs).await?;
    rows::insert_batch(&mut tx.conn(), &stage, &job.id, &staged).await?;
    store::jobs::set_counts(&mut tx.conn(), &job.id, &counts).await?;
    store::jobs::set_revision(&mut tx.conn(), &job.id, &own).await?;
    tx.commit().await?;
    // The parent's file-level warnings hold for the same file, but for
    // the saved mapping it was read with: a revision shows its mapping
    // itself, as one read from the file again would.
    let warnings = (parent.warnings.iter())
        .filter(|w| w.code != WarningCode::MappingApplied)
        .cloned()
        .collect();
    Ok(Some(Outcome::Checked { counts, warnings }))
}

/// Whether the job's file has a `_version` column (API.md section 15):
/// its tokens are checked against the table as the file is read and are
/// not staged, so an update or upsert that carries them reads the file
/// again rather than re-deciding rows without them.
async fn versioned(db: &Db, module: &Module, job: &Job, setup: &Setup) -> anyhow::Result<bool> {
    let head = read_head(db, job, setup.max_cell_bytes, setup.max_columns, 0).await?;
    Ok(head
        .ok()
        .and_then(|h| match_header_with(module, &h.header, &job.mapping_in_force()).ok())
        .is_some_and(|h| h.version.is_some()))
}

/// The staged rows to check again: those the revision touches, and every
/// row sharing a key with one of them before or after (a duplicate may
/// appear or go away), in file order.
async fn affected(
    db: &Db,
    stage: &Stage<'_>,
    header: &HeaderMap,
    own: &Revision,
    touched: &[u64],
    setup: &Setup,
) -> anyhow::Result<Vec<StoredRow>> {
    let mut c = db.acquire().await?;
    let numbers: Vec<i64> = touched.iter().map(|&r| r as i64).collect();
    let mut rows = rows::rows_numbered(&mut c.conn(), stage, &numbers).await?;
    let mut keys: Vec<String> = rows.iter().filter_map(|r| r.nkey.clone()).collect();
    let mut scratch = own.clone();
    for r in &rows {
        let again = recheck(stage.module, header, &mut scratch, r, setup);
        if let Some(k) = again.key(stage.module, header) {
            keys.push(crate::validate::key_text(&k));
        }
    }
    keys.sort();
    keys.dedup();
    let seen: HashSet<i64> = rows.iter().map(|r| r.seq).collect();
    let sharing = rows::rows_keyed(&mut c.conn(), stage, &keys).await?;
    rows.extend(sharing.into_iter().filter(|r| !seen.contains(&r.seq)));
    rows.sort_by_key(|r| r.seq);
    Ok(rows)
}

/// A staged row checked again with the revision's fixes of its cells;
/// each fix's `was` is set to the staged text the first time.
fn recheck(
    module: &Module,
    header: &HeaderMap,
    own: &mut Revision,
    row: &StoredRow,
    setup: &Setup,
) -> CheckedRow {
    let mut cells: Vec<Cell> = (header.provided.iter())
        .map(|&(col, _)| cell_of(row.vals.get(&module.columns[col].name)))
        .collect();
    let row_no = row.row_no as u64;
    for fix in own.fixes.iter_mut().filter(|f| f.row == row_no) {
        let Some(k) =
            (header.provided.iter()).position(|&(col, _)| module.columns[col].name == fix.column)
        else {
            continue;
        };
        let new = fix.value.clone().map_or(Cell::Empty, Cell::Text);
        let old = std::mem::replace(&mut cells[k], new);
        if fix.was.is_none() {
            fix.was = Some(value::cell_text(&old));
        }
    }
    let rules = Rules {
        date_formats: &module.date_formats,
        zone: setup.zone,
        max_cell_bytes: setup.max_cell_bytes,
    };
    check_row(module, header, &rules, RawRow { row: row_no, cells })
}

/// A staged value as the cell it was read from: text as text, numbers
/// with their digits, `true`/`false`, null as empty.
fn cell_of(json: Option<&Json>) -> Cell {
    match json {
        None | Some(Json::Null) => Cell::Empty,
        Some(Json::String(s)) => Cell::Text(s.clone()),
        Some(Json::Number(n)) => Cell::Number(n.to_string()),
        Some(Json::Bool(b)) => Cell::Bool(*b),
        Some(other) => Cell::Text(other.to_string()),
    }
}

/// Marks every row repeating the key of an earlier one among `staged`,
/// which holds every row of each of its keys.
fn mark_duplicates(module: &Module, staged: &mut [StagedRow]) {
    let mut first: BTreeMap<String, i64> = BTreeMap::new();
    for r in staged.iter_mut() {
        let Some(key) = r.nkey.clone() else {
            continue;
        };
        match first.get(&key) {
            None => {
                first.insert(key, r.row_no);
            }
            Some(&earlier) => {
                r.errors
                    .push(duplicate_error(module, r.row_no, &key, earlier));
                r.action = RowAction::Error;
                r.before = None;
            }
        }
    }
}

/// The counts after the rows were staged again: `base` less what the
/// rows were, plus what they are.
fn recount(base: &Counts, before: &[StoredRow], after: &[StagedRow]) -> Counts {
    let mut counts = base.clone();
    for r in before {
        counts.add(r.action, -1);
    }
    for r in after {
        counts.add(r.action, 1);
    }
    let warned_before = before.iter().filter(|r| !r.warnings.is_empty()).count() as i64;
    let warned_after = after.iter().filter(|r| r.warns.is_some()).count() as i64;
    counts.warnings += warned_after - warned_before;
    counts
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn staged_values_become_the_cells_they_were_read_from() {
        assert_eq!(cell_of(None), Cell::Empty);
        assert_eq!(cell_of(Some(&Json::from(30))), Cell::Number("30".into()));
        assert_eq!(
            cell_of(Some(&Json::from("12.50"))),
            Cell::Text("12.50".into())
        );
        assert_eq!(cell_of(Some(&Json::Bool(true))), Cell::Bool(true));
    }

    #[test]
    fn counts_move_by_what_the_rows_were_and_are() {
        let base = Counts {
            rows: 10,
            valid: 8,
            errors: 2,
            insert: 8,
            ..Counts::default()
        };
        let was = |action| StoredRow {
            seq: 0,
            row_no: 2,
            action,
            nkey: None,
            vals: Default::default(),
            before: None,
            warnings: vec![],
            normalized: vec![],
        };
        let now = |action| StagedRow {
            seq: 0,
            row_no: 2,
            action,
            nkey: None,
            values: vec![],
            vals: None,
            before: None,
            errors: vec![],
            warns: None,
            norm: None,
        };
        let counts = recount(
            &base,
            &[was(RowAction::Error), was(RowAction::Error)],
            &[now(RowAction::Insert), now(RowAction::Excluded)],
        );
        assert_eq!((counts.errors, counts.insert, counts.excluded), (0, 9, 1));
        assert_eq!((counts.rows, counts.valid), (10, 9));
    }
}
