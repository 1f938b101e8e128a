//! A proposed rule set tried on a job's stored file before anyone decides
//! on it (API.md section 14, `try`): the file is read once, each row
//! checked under the rules the job was validated with and under the
//! proposal, and the rows whose outcome differs are named. Nothing is
//! staged and the job does not change.
//!
//! What the rules decide is compared: types after normalizing, checks,
//! unique rules, and natural keys repeated within the file (which a
//! normalizer can make equal, `0812…` and `+62812…`). Whether a key is in
//! the table (`exists`, `not_found`) and references are the table's, not
//! the rules', and are left to the job's own validation.

use std::collections::HashSet;

use serde::Serialize;

use super::apply::Apply;
use super::validation::Fixes;
use crate::catalog::Module;
use crate::ingest::{self, FileCode, FileError};
use crate::ledger::Job;
use crate::rules::check::{Row, places};
use crate::rules::unique::Tracker;
use crate::rules::{Compiled, Severity, UniqueRule};
use crate::store::Db;
use crate::store::blobs::BlobReader;
use crate::validate::formula::restore_cells;
use crate::validate::{
    CheckedRow, HeaderMap, RowError, Rules, check_row, extra_cells, key_text, match_header_with,
};

/// Rows of each kind a trial names at most.
pub const SHOWN: usize = 100;

/// How the rows of a file fare under one rule set.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, utoipa::ToSchema)]
pub struct TrialCounts {
    pub rows: i64,
    /// Rows without errors.
    pub valid: i64,
    pub errors: i64,
    /// Valid rows with at least one warning.
    pub warnings: i64,
    /// Rows with a normalized cell.
    pub normalized: i64,
}

/// A row whose outcome the proposal changes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, utoipa::ToSchema)]
pub struct TrialRow {
    pub row: u64,
    /// Its errors under the rules in force for the job and under the
    /// proposal.
    pub errors_now: Vec<RowError>,
    pub errors_proposed: Vec<RowError>,
    /// What the proposal's normalizers make of its cells: column, what the
    /// file said, what it becomes.
    pub normalized: Vec<NormalizedCell>,
}

/// One cell a normalizer rewrote.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, utoipa::ToSchema)]
pub struct NormalizedCell {
    pub column: String,
    pub was: String,
    pub now: String,
}

/// What trying a proposal on a file found.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, utoipa::ToSchema)]
pub struct Trial {
    pub now: TrialCounts,
    pub proposed: TrialCounts,
    /// Rows valid now and in error under the proposal (the first 100).
    pub newly_failing: Vec<TrialRow>,
    /// Rows in error now and valid under the proposal (the first 100).
    pub newly_passing: Vec<TrialRow>,
    /// Rows the proposal normalizes differently (the first 100).
    pub newly_normalized: Vec<TrialRow>,
}

/// One side of the comparison: a rule set applied in file order, with its
/// own natural-key tracker.
struct Side<'a> {
    apply: Option<Apply<'a>>,
    keys: Tracker,
    counts: TrialCounts,
}

/// Tries `proposed` against `now` on the job's stored file. The read runs
/// on a blocking thread; a file that cannot be read is its failure.
pub async fn try_rules(
    db: &Db,
    module: &Module,
    job: &Job,
    options: ingest::Options,
    zone: chrono_tz::Tz,
    sets: (std::sync::Arc<Compiled>, std::sync::Arc<Compiled>),
) -> anyhow::Result<Result<Trial, FileError>> {
    let (db, module, job) = (db.clone(), module.clone(), job.clone());
    let runtime = tokio::runtime::Handle::current();
    Ok(tokio::task::spawn_blocking(move || {
        let blob = BlobReader::new(db, runtime, &job.file.sha256, !job.file.format.streams());
        std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            compare(&module, &job, blob, &options, zone, (&sets.0, &sets.1))
        }))
        .unwrap_or_else(|_| {
            Err(FileError::new(
                FileCode::Unreadable,
                "the file could not be read",
            ))
        })
    })
    .await?)
}

fn compare(
    module: &Module,
    job: &Job,
    blob: BlobReader,
    options: &ingest::Options,
    zone: chrono_tz::Tz,
    (now, proposed): (&Compiled, &Compiled),
) -> Result<Trial, FileError> {
    let source = ingest::open(job.file.format, Box::new(blob), options)?;
    let header = match_header_with(module, &source.header, &job.mapping_in_force())?;
    let fixes = Fixes::of(module, &header, job);
    let excluded: HashSet<u64> = (job.revision.iter())
        .flat_map(|r| r.exclude.iter().copied())
        .collect();
    let parse = Rules {
        date_formats: &module.date_formats,
        zone,
        max_cell_bytes: options.max_cell_bytes,
    };
    let file = File {
        module,
        header: &header,
        parse,
        key: natural_key(module),
        places: places(module.columns.len(), &header.provided),
        key_at: module.key_places(header.provided.iter().map(|&(c, _)| c)),
    };
    let mut sides = [now, proposed].map(|set| Side {
        apply: Apply::new(module, set, &header),
        keys: Tracker::new(),
        counts: TrialCounts::default(),
    });
    let mut trial = Trial::default();
    let mut ignored = Vec::new();
    let restore = job.file.format.neutralises();
    for raw in source.rows {
        let mut raw = raw?;
        if restore {
            restore_cells(&mut raw.cells);
        }
        fixes.apply(&mut raw, &mut ignored);
        ignored.clear();
        if excluded.contains(&raw.row) {
            continue;
        }
        let extra = extra_cells(&raw, source.header.len());
        let [a, b] = &mut sides;
        let was = file.check(a, raw.clone(), extra.clone());
        let will = file.check(b, raw, extra);
        note(&mut trial, module, &header, was, will);
    }
    let [a, b] = sides;
    trial.now = a.counts;
    trial.proposed = b.counts;
    Ok(trial)
}

/// The natural key as a unique rule, so a side finds keys repeated in the
/// file as the validation does, after normalizing.
fn natural_key(module: &Module) -> UniqueRule {
    UniqueRule {
        id: String::new(),
        columns: module.key_columns.clone(),
        severity: Severity::Error,
    }
}

/// What checking a row of this file needs, whichever side checks it.
struct File<'a> {
    module: &'a Module,
    header: &'a HeaderMap,
    parse: Rules<'a>,
    key: UniqueRule,
    /// Each module column's place among the provided columns.
    places: Vec<Option<usize>>,
    /// The natural key's places among them, when the file has it whole.
    key_at: Option<Vec<usize>>,
}

impl File<'_> {
    /// Checks one row under `side`'s rules and counts it there.
    fn check(
        &self,
        side: &mut Side<'_>,
        raw: ingest::RawRow,
        extra: Option<RowError>,
    ) -> CheckedRow {
        let mut row = match &mut side.apply {
            Some(apply) => apply.check_row(&self.parse, raw, true),
            None => check_row(self.module, self.header, &self.parse, raw),
        };
        row.errors.extend(extra);
        let seen = Row::new(&self.places, &row.values);
        if let Some(first) = side.keys.feed_row(&self.key, row.row, seen) {
            let key_at = self.key_at.as_deref().unwrap_or_default();
            let nkey = key_text(key_at.iter().filter_map(|&p| row.values[p].as_ref()));
            row.errors.push(super::validation::duplicate_error(
                self.module,
                row.row as i64,
                &nkey,
                first as i64,
            ));
        }
        let c = &mut side.counts;
        c.rows += 1;
        if row.errors.is_empty() {
            c.valid += 1;
            c.warnings += i64::from(!row.warnings.is_empty());
        } else {
            c.errors += 1;
        }
        c.normalized += i64::from(!row.normalized.is_empty());
        row
    }
}

/// Records a row whose outcome differs between the two sides.
fn note(trial: &mut Trial, module: &Module, header: &HeaderMap, was: CheckedRow, will: CheckedRow) {
    let room = |list: &Vec<TrialRow>| list.len() < SHOWN;
    let failing = was.errors.is_empty() && !will.errors.is_empty();
    let passing = !was.errors.is_empty() && will.errors.is_empty();
    let normalized = was.normalized != will.normalized && !will.normalized.is_empty();
    let into_failing = failing && room(&trial.newly_failing);
    let into_passing = passing && room(&trial.newly_passing);
    let into_normalized = normalized && room(&trial.newly_normalized);
    if !(into_failing || into_passing || into_normalized) {
        return;
    }
    let shown = TrialRow {
        row: will.row,
        normalized: normalized_cells(module, header, &will),
        errors_now: was.errors,
        errors_proposed: will.errors,
    };
    if into_normalized {
        trial.newly_normalized.push(shown.clone());
    }
    if into_failing {
        trial.newly_failing.push(shown);
    } else if into_passing {
        trial.newly_passing.push(shown);
    }
}

fn normalized_cells(module: &Module, header: &HeaderMap, row: &CheckedRow) -> Vec<NormalizedCell> {
    (row.normalized.iter())
        .map(|(k, was)| NormalizedCell {
            column: module.columns[header.provided[*k].0].name.clone(),
            was: was.clone(),
            now: row.values[*k]
                .as_ref()
                .map(|v| v.to_text())
                .unwrap_or_default(),
        })
        .collect()
}
