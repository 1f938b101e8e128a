//! The validation stage of a job: read the stored file, check every row,
//! compare with the target table, and stage the preview.
//!
//! Parsing and type checking run on a blocking thread and hand batches of
//! rows to the async side through a small bounded channel, so memory holds
//! a few batches whatever the file's size. Duplicate natural keys are found
//! in the database at the end for the same reason.

use std::sync::Arc;
use std::time::Instant;

use serde_json::Value as Json;
use tokio::sync::mpsc;

use super::apply::{self, Apply, Typer};
use super::distinct::Distinct;
use super::references::{Checks, Target};
use super::versions::{self, Versions};
use crate::catalog::Module;
use crate::ids::JobId;
use crate::ingest::{self, FileCode, FileError, Format};
use crate::ledger::{Counts, Job, Mode, Warning, WarningCode};
use crate::rules::Compiled;
use crate::store::blobs::BlobReader;
use crate::store::load::{self, Loader};
use crate::store::lookup;
use crate::store::rows::{self, Before, StagedRow};
use crate::store::stage::{self, Stage};
use crate::store::{self, Db};
use crate::validate::formula::restore_cells;
use crate::validate::{
    CheckedRow, HeaderMap, RowAction, RowError, RowErrorCode, Rules, Value, check_row, extra_cells,
    key_text, match_header_with,
};

/// How a validation ended.
pub enum Outcome {
    /// The file could not be read as rows of the module.
    FileFailure(FileError),
    /// Every row was checked; the counts and warnings of the preview.
    Checked {
        counts: Counts,
        warnings: Vec<Warning>,
    },
}

/// Rows handed from the parser to the database side at a time: large
/// enough for bulk loading to pay, small enough that a few in flight are
/// nothing in memory.
const BATCH: usize = 2000;

enum Msg {
    Header(HeaderMap),
    Rows(Vec<CheckedRow>),
    /// What the file said in cells a revision fixes: (fix's index, text).
    Was(Vec<(usize, String)>),
}

/// Limits and rules the stage applies.
pub struct Setup {
    pub zone: chrono_tz::Tz,
    pub max_rows: u64,
    pub max_columns: usize,
    pub max_cell_bytes: usize,
    /// The module's references, with the modules they name.
    pub targets: Vec<Target>,
    /// The worker's lease on the job (owner, length in ms): every batch
    /// of staged rows extends it in its own transaction, and is refused if
    /// another worker holds it. A run whose heartbeat waited too long for
    /// the database then neither loses the job while it makes progress nor,
    /// once it has lost it, writes a batch into the new run's rows.
    pub lease: Option<(String, i64)>,
    /// Space kept free on the database's disk: a batch is not written
    /// below it ([`Db::room`]).
    pub disk_reserve: u64,
    /// The module's rule set (API.md section 14), applied as rows are
    /// read ([`super::apply`]); an empty set costs nothing.
    pub rules: Arc<Compiled>,
}

/// Validates a job's file and stages its rows. Running it again starts over.
///
/// A JSON file is read in one pass, its header learned from its first
/// objects ([`ingest::json::WINDOW`]). When a later object brings a key
/// they lacked, the rows staged so far were read against too short a
/// header; and a required column the first objects all left out may come
/// later. Either way the stage starts over and the file is read again in
/// two passes, which learn every key before the first row.
pub async fn validate(
    db: &Db,
    module: &Module,
    job: &Job,
    setup: &Setup,
) -> anyhow::Result<Outcome> {
    let one_pass = matches!(job.file.format, Format::Json | Format::Ndjson);
    match validate_with(db, module, job, setup, one_pass).await? {
        Outcome::FileFailure(e) if one_pass && header_may_grow(&e) => {
            tracing::info!(job = %job.id, code = e.code.as_str(), "read in one pass, the header was short: reading the file again in two passes");
            validate_with(db, module, job, setup, false).await
        }
        outcome => Ok(outcome),
    }
}

/// Whether a failure of a file read in one pass may be the header's, short
/// of keys only objects past the first ones give.
fn header_may_grow(e: &FileError) -> bool {
    e.code == FileCode::HeaderGrown || e.code == FileCode::MissingColumns
}

/// Validates a job's file, read in one pass or in two (JSON): a reader
/// thread sends the header and batches of checked rows; they are decided
/// and staged as they come; then the whole job's checks run over the stage.
async fn validate_with(
    db: &Db,
    module: &Module,
    job: &Job,
    setup: &Setup,
    one_pass: bool,
) -> anyhow::Result<Outcome> {
    let mut stage = Stage::begin(&mut db.acquire().await?.conn(), module, &job.id).await?;
    let (reader, mut rx) = spawn_reader(db, module, job, setup, one_pass);
    // The reader sends the header first, or the reason there is none.
    let header = match rx.recv().await {
        Some(Ok(Msg::Header(h))) => h,
        first => {
            drop(rx);
            reader.await?;
            return Ok(Outcome::FileFailure(match first {
                Some(Err(e)) => e,
                _ => FileError::new(FileCode::Unreadable, "the file has no header row"),
            }));
        }
    };
    let provided = header.provided.iter().map(|&(col, _)| col).collect();
    stage
        .set_provided(&mut db.acquire().await?.conn(), &job.id, provided)
        .await?;
    let mut checks = Checks::new(&setup.targets, &header);
    let staged = stage_rows(db, &stage, job, &header, &mut checks, &mut rx, setup).await?;
    drop(rx);
    reader.await?;
    if let Some(e) = staged.failure {
        return Ok(Outcome::FileFailure(e));
    }
    record_replaced_cells(db, job, staged.replaced).await?;
    let counts = whole_job_checks(db, &stage, job, staged.counts, staged.distinct).await?;
    if counts.rows == 0 {
        return Ok(Outcome::FileFailure(FileError::new(
            FileCode::NoRows,
            "the file has a header but no data rows",
        )));
    }
    let mut warnings: Vec<Warning> = unknown_columns(module, &header).into_iter().collect();
    warnings.extend(checks.summary());
    warnings.extend(mapping_applied(job));
    Ok(Outcome::Checked { counts, warnings })
}

/// The blocking half on a thread of its own, reading the stored file and
/// sending the header, then batches of checked rows, or the file's
/// failure. A panic in a parser ends the job as unreadable, not left
/// validating to be retried for ever.
fn spawn_reader(
    db: &Db,
    module: &Module,
    job: &Job,
    setup: &Setup,
    one_pass: bool,
) -> (
    tokio::task::JoinHandle<()>,
    mpsc::Receiver<Result<Msg, FileError>>,
) {
    let (tx, rx) = mpsc::channel::<Result<Msg, FileError>>(4);
    let db = db.clone();
    let module = module.clone();
    let job = job.clone();
    let options = job.read_options(setup.max_cell_bytes, setup.max_columns, one_pass);
    let reading = Reading {
        zone: setup.zone,
        max_rows: setup.max_rows,
        rules: Arc::clone(&setup.rules),
    };
    let runtime = tokio::runtime::Handle::current();
    let reader = tokio::task::spawn_blocking(move || {
        let ahead = !job.file.format.streams();
        let blob = BlobReader::new(db, runtime, &job.file.sha256, ahead);
        let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            read_file(&module, &job, blob, &options, &reading, &tx)
        }))
        .unwrap_or_else(|_| {
            Err(FileError::new(
                FileCode::Unreadable,
                "the file could not be read (the reader failed)",
            ))
        });
        if let Err(e) = result {
            let _ = tx.blocking_send(Err(e));
        }
    });
    (reader, rx)
}

/// A revision's record of what its fixes replaced: each fixed cell's text
/// as the file held it, known once the file was read.
async fn record_replaced_cells(
    db: &Db,
    job: &Job,
    replaced: Vec<(usize, String)>,
) -> anyhow::Result<()> {
    let Some(revision) = &job.revision else {
        return Ok(());
    };
    let mut revision = revision.clone();
    for (i, text) in replaced {
        revision.fixes[i].was = Some(text);
    }
    let mut c = db.acquire().await?;
    store::jobs::set_revision(&mut c.conn(), &job.id, &revision).await?;
    Ok(())
}

/// The checks of the whole job over its staged rows, once all are staged:
/// a key repeated in the file is an error on each of its rows. Returns the
/// counts with those rows counted as errors.
async fn whole_job_checks(
    db: &Db,
    stage: &Stage<'_>,
    job: &Job,
    mut counts: Counts,
    distinct: bool,
) -> anyhow::Result<Counts> {
    if counts.rows >= store::ANALYZE_AFTER_ROWS {
        // The statistics then know this job's rows, for the checks below
        // and the commit's plans, which need only proportions (how many of
        // the stage's rows are this job's, and of which action).
        let columns = stage.planned_columns();
        let (table, target) = (stage.table(), Some(stage::STATISTICS_TARGET));
        store::analyze(&mut db.acquire().await?.conn(), &table, &columns, target).await?;
    }
    // The writer counted each repeat as it was staged; it is an error now.
    // Keys the filter found all distinct have none to look for.
    let repeats = if distinct {
        vec![]
    } else {
        mark_duplicates(db, stage, &job.id).await?
    };
    for was in repeats {
        if was != RowAction::Error {
            counts.add(was, -1);
            counts.add(RowAction::Error, 1);
        }
    }
    Ok(counts)
}

/// The warning that columns of the file are not the module's, if any are.
fn unknown_columns(module: &Module, header: &HeaderMap) -> Option<Warning> {
    (!header.unknown.is_empty()).then(|| Warning {
        code: WarningCode::UnknownColumns,
        sheet: None,
        message: format!(
            "columns not in {} were ignored: {}",
            module.key,
            header.unknown.join(", ")
        ),
        columns: Some(header.unknown.clone()),
        module: None,
        rows: None,
        mapping: None,
    })
}

/// Most header → column pairs a `mapping_applied` warning spells out.
const SHOWN_PAIRS: usize = 12;

/// The warning that an upload was read with a saved mapping, naming it
/// and what it did (a revision shows its mapping itself).
fn mapping_applied(job: &Job) -> Option<Warning> {
    let applied = job
        .mapping_applied
        .as_ref()
        .filter(|_| job.revision.is_none())?;
    let mut pairs: Vec<String> = (applied.mapping.iter().take(SHOWN_PAIRS))
        .map(|(header, column)| match column {
            Some(c) => format!("{header:?} → {c}"),
            None => format!("{header:?} left out"),
        })
        .collect();
    if applied.mapping.len() > SHOWN_PAIRS {
        pairs.push(format!("{} more", applied.mapping.len() - SHOWN_PAIRS));
    }
    Some(Warning {
        code: WarningCode::MappingApplied,
        sheet: None,
        message: format!(
            "the saved mapping {} was applied: {}; upload with ?mapping=none to read the headers as they are",
            applied.id,
            pairs.join(", ")
        ),
        columns: None,
        module: None,
        rows: None,
        mapping: Some(applied.id.clone()),
    })
}

/// The first rows of a job's stored file: its header as written, and up to
/// `rows` values of each column (text as a person reads it), for a
/// revision's checks and the mapping screen.
#[derive(Debug, Clone, Default)]
pub struct Head {
    pub header: Vec<String>,
    /// For each header, in order: its column's first non-empty values.
    pub samples: Vec<Vec<String>>,
}

/// The head of a job's stored file, or why it cannot be read.
pub async fn read_head(
    db: &Db,
    job: &Job,
    max_cell_bytes: usize,
    max_columns: usize,
    rows: usize,
) -> anyhow::Result<Result<Head, FileError>> {
    let options = job.read_options(max_cell_bytes, max_columns, false);
    let (db, format, sha) = (db.clone(), job.file.format, job.file.sha256.clone());
    let runtime = tokio::runtime::Handle::current();
    Ok(tokio::task::spawn_blocking(move || {
        let blob = BlobReader::new(db, runtime, &sha, !format.streams());
        std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            let source = ingest::open(format, Box::new(blob), &options)?;
            let mut samples = vec![Vec::new(); source.header.len()];
            // Rows whose cells fail to read are skipped: a sample is a hint.
            for raw in source.rows.take(rows).flatten() {
                for (column, cell) in samples.iter_mut().zip(&raw.cells) {
                    let text = crate::validate::value::cell_text(cell);
                    if !text.trim().is_empty() {
                        column.push(text);
                    }
                }
            }
            Ok(Head {
                header: source.header,
                samples,
            })
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

/// What staging a file's rows found.
struct Staged {
    /// The file's failure, if it has one part-way.
    failure: Option<FileError>,
    /// What a revision's fixes replaced: a fix's index and the cell's text.
    replaced: Vec<(usize, String)>,
    /// The rows staged, by action, and how many have warnings.
    counts: Counts,
    /// Whether their keys are certainly distinct.
    distinct: bool,
}

/// Decides and stores the rows the reader sends, two batches at a time:
/// while one batch is written (its own transaction), the keys of the next
/// are looked up in the table. Done one after the other, each side waited
/// for the other: a 1M-row validation kept one of the two cores busy.
async fn stage_rows(
    db: &Db,
    stage: &Stage<'_>,
    job: &Job,
    header: &HeaderMap,
    checks: &mut Checks<'_>,
    rx: &mut mpsc::Receiver<Result<Msg, FileError>>,
    setup: &Setup,
) -> anyhow::Result<Staged> {
    let (to_write, mut writes) = mpsc::channel::<Vec<StagedRow>>(2);
    let excluded: std::collections::HashSet<u64> = job
        .revision
        .iter()
        .flat_map(|r| r.exclude.iter().copied())
        .collect();
    let finder = lookup::Lookup::new(stage.module);
    let versions =
        (header.version.is_some() && job.mode != Mode::Insert).then(|| Versions::new(stage.module));
    let decide_all = async move {
        let mut seq = 0i64;
        let mut was = Vec::new();
        while let Some(msg) = rx.recv().await {
            let batch = match msg {
                Err(e) => return Ok((Some(e), was)),
                Ok(Msg::Header(_)) => continue,
                Ok(Msg::Was(texts)) => {
                    was.extend(texts);
                    continue;
                }
                Ok(Msg::Rows(batch)) => batch,
            };
            let (batch, warnings) = check_references(db, checks, batch, &excluded).await?;
            let how = Decide {
                module: stage.module,
                lookup: &finder,
                mode: job.mode,
                header,
                excluded: &excluded,
                versions: versions.as_ref(),
            };
            let staged = decide(db, &how, batch, warnings, &mut seq).await?;
            if to_write.send(staged).await.is_err() {
                // The writer stopped; its error is the one reported.
                break;
            }
        }
        Ok::<_, anyhow::Error>((None, was))
    };
    let write_all = async {
        let mut counts = Counts::default();
        let mut keys = Distinct::start();
        let mut last_progress = Instant::now();
        let mut loader = Loader::start(db, stage, &job.id, setup.lease.clone()).await?;
        while let Some(staged) = loader.next(&mut writes).await? {
            tally(&mut counts, &staged);
            keys.add(staged.iter().filter_map(|r| r.nkey.as_deref()))
                .await;
            let progress = (last_progress.elapsed() > load::PROGRESS_EVERY).then(|| {
                last_progress = Instant::now();
                counts.clone()
            });
            let written = match db.room(setup.disk_reserve).await {
                Ok(()) => loader.load(staged, progress).await,
                Err(full) => Err(full.into()),
            };
            if let Err(e) = written {
                // The writer's own error says more than that it stopped.
                loader.finish().await?;
                return Err(e);
            }
        }
        loader.finish().await?;
        Ok((counts, keys.certain().await))
    };
    let ((failure, replaced), (counts, distinct)) = tokio::try_join!(decide_all, write_all)?;
    Ok(Staged {
        failure,
        replaced,
        counts,
        distinct,
    })
}

/// What the reader applies to the rows beyond the file's options.
struct Reading {
    zone: chrono_tz::Tz,
    max_rows: u64,
    rules: Arc<Compiled>,
}

/// The blocking half: parse, match the header, check rows, send batches.
fn read_file(
    module: &Module,
    job: &Job,
    blob: BlobReader,
    options: &ingest::Options,
    reading: &Reading,
    tx: &mpsc::Sender<Result<Msg, FileError>>,
) -> Result<(), FileError> {
    let Reading {
        zone,
        max_rows,
        ref rules,
    } = *reading;
    let source = ingest::open(job.file.format, Box::new(blob), options)?;
    let header = match_header_with(module, &source.header, &job.mapping_in_force())?;
    let fixes = Fixes::of(module, &header, job);
    if job.options.reject_unknown_columns && !header.unknown.is_empty() {
        return Err(FileError::new(
            FileCode::UnknownColumns,
            format!(
                "row 1: columns not in {}: {}",
                module.key,
                header.unknown.join(", ")
            ),
        ));
    }
    let parse = Rules {
        date_formats: &module.date_formats,
        zone,
        max_cell_bytes: options.max_cell_bytes,
    };
    if tx.blocking_send(Ok(Msg::Header(header.clone()))).is_err() {
        return Ok(());
    }
    // Asked once: without rules each row is read as it always was.
    let (typer, judge) = match Apply::new(module, rules.as_ref(), &header) {
        Some(apply) => {
            let (typer, judge) = apply.split();
            (Some(typer), judge)
        }
        None => (None, None),
    };
    let excluded: std::collections::HashSet<u64> = (job.revision.iter())
        .flat_map(|r| r.exclude.iter().copied())
        .collect();
    let typing = Typing {
        module,
        header: &header,
        parse,
        typer,
        fixes,
        restore: job.file.format.neutralises(),
        max_rows,
        width: source.header.len(),
    };
    let forward = |batch: Vec<CheckedRow>| tx.blocking_send(Ok(Msg::Rows(batch))).is_ok();
    let rows = source.rows;
    let was = match judge {
        None => typing.run(rows, &mut { forward }),
        Some(judge) => apply::judged(judge, &excluded, forward, |sink| typing.run(rows, sink)),
    }?;
    if let Some(was) = was.filter(|was| !was.is_empty()) {
        let _ = tx.blocking_send(Ok(Msg::Was(was)));
    }
    Ok(())
}

/// The reader's own part of a row: a revision's fixes, then the cells
/// normalized and typed; a set's checks judge it after
/// ([`apply::judged`]).
struct Typing<'a> {
    module: &'a Module,
    header: &'a HeaderMap,
    parse: Rules<'a>,
    typer: Option<Typer<'a>>,
    fixes: Fixes,
    /// Whether the format's cells had a formula's first character
    /// neutralised when exported, to be restored.
    restore: bool,
    max_rows: u64,
    /// The file's header's width: cells past it are the row's error.
    width: usize,
}

impl Typing<'_> {
    /// Types every row and hands them to `sink` in batches; what the fixed
    /// cells held, or `None` when the sink stopped taking rows.
    fn run(
        &self,
        rows: impl Iterator<Item = Result<ingest::RawRow, FileError>>,
        sink: &mut dyn FnMut(Vec<CheckedRow>) -> bool,
    ) -> Result<Option<Vec<(usize, String)>>, FileError> {
        let mut batch = Vec::with_capacity(BATCH);
        let mut n = 0u64;
        let mut was = Vec::new();
        for raw in rows {
            let mut raw = raw?;
            if self.restore {
                restore_cells(&mut raw.cells);
            }
            self.fixes.apply(&mut raw, &mut was);
            n += 1;
            if n > self.max_rows {
                return Err(FileError::new(
                    FileCode::TooManyRows,
                    format!("the file has more than {} data rows", self.max_rows),
                ));
            }
            let extra = extra_cells(&raw, self.width);
            let mut checked = match &self.typer {
                None => check_row(self.module, self.header, &self.parse, raw),
                Some(typer) => typer.type_row(&self.parse, raw),
            };
            checked.errors.extend(extra);
            batch.push(checked);
            if batch.len() == BATCH
                && !sink(std::mem::replace(&mut batch, Vec::with_capacity(BATCH)))
            {
                return Ok(None);
            }
        }
        if !batch.is_empty() && !sink(batch) {
            return Ok(None);
        }
        Ok(Some(was))
    }
}

/// A revision's fixes by row number, each as (file position, new text,
/// index in the revision's list).
pub(super) struct Fixes(std::collections::HashMap<u64, Vec<(usize, Option<String>, usize)>>);

impl Fixes {
    /// A job's revision's fixes (none for an upload).
    pub(super) fn of(module: &Module, header: &HeaderMap, job: &Job) -> Fixes {
        Fixes::new(
            module,
            header,
            job.revision.as_ref().map_or(&[], |r| &r.fixes),
        )
    }

    fn new(module: &Module, header: &HeaderMap, fixes: &[crate::ledger::Fix]) -> Fixes {
        let mut by_row: std::collections::HashMap<u64, Vec<_>> = Default::default();
        for (i, f) in fixes.iter().enumerate() {
            // The service refuses a fix of a column the file does not give.
            let Some(col) = module.column_index(&f.column) else {
                continue;
            };
            if let Some(&(_, pos)) = header.provided.iter().find(|&&(c, _)| c == col) {
                by_row
                    .entry(f.row)
                    .or_default()
                    .push((pos, f.value.clone(), i));
            }
        }
        Fixes(by_row)
    }

    /// Sets the fixed cells of a row, noting what the file said.
    pub(super) fn apply(&self, raw: &mut ingest::RawRow, was: &mut Vec<(usize, String)>) {
        let Some(fixes) = self.0.get(&raw.row) else {
            return;
        };
        for (pos, value, i) in fixes {
            if raw.cells.len() <= *pos {
                raw.cells.resize(pos + 1, ingest::Cell::Empty);
            }
            let cell = match value {
                Some(text) => ingest::Cell::Text(text.clone()),
                None => ingest::Cell::Empty,
            };
            let old = std::mem::replace(&mut raw.cells[*pos], cell);
            was.push((*i, crate::validate::value::cell_text(&old)));
        }
    }
}

/// Runs the reference checks over the rows a revision does not exclude,
/// and gives every row its warnings, in batch order.
pub(super) async fn check_references<'a>(
    db: &Db,
    checks: &mut Checks<'a>,
    batch: Vec<CheckedRow>,
    excluded: &std::collections::HashSet<u64>,
) -> anyhow::Result<(Vec<CheckedRow>, Vec<Vec<&'a str>>)> {
    if excluded.is_empty() {
        let mut batch = batch;
        let warnings = checks.run(db, &mut batch).await?;
        return Ok((batch, warnings));
    }
    let (mut kept, out): (Vec<CheckedRow>, Vec<CheckedRow>) =
        batch.into_iter().partition(|r| !excluded.contains(&r.row));
    let kept_warnings = checks.run(db, &mut kept).await?;
    // Both halves are in file order: merge them back by row number.
    let mut rows = Vec::with_capacity(kept.len() + out.len());
    let mut warnings = Vec::with_capacity(rows.capacity());
    let mut kept = kept.into_iter().zip(kept_warnings).peekable();
    let mut out = out.into_iter().peekable();
    loop {
        let take_kept = match (kept.peek(), out.peek()) {
            (Some((k, _)), Some(o)) => k.row < o.row,
            (Some(_), None) => true,
            (None, Some(_)) => false,
            (None, None) => break,
        };
        if take_kept {
            let (row, w) = kept.next().unwrap_or_else(|| unreachable!());
            rows.push(row);
            warnings.push(w);
        } else if let Some(row) = out.next() {
            rows.push(row);
            warnings.push(vec![]);
        }
    }
    Ok((rows, warnings))
}

/// What decides a row's action: the module, the job's mode, the file's
/// columns, and the rows a revision leaves out.
pub(super) struct Decide<'a> {
    pub module: &'a Module,
    pub lookup: &'a lookup::Lookup,
    pub mode: Mode,
    pub header: &'a HeaderMap,
    pub excluded: &'a std::collections::HashSet<u64>,
    /// The `_version` checks of an update or upsert whose file has the
    /// column (API.md section 15).
    pub versions: Option<&'a Versions>,
}

/// Decides each row's action against the table and makes it a staged row.
pub(super) async fn decide(
    db: &Db,
    how: &Decide<'_>,
    mut batch: Vec<CheckedRow>,
    warnings: Vec<Vec<&str>>,
    seq: &mut i64,
) -> anyhow::Result<Vec<StagedRow>> {
    let Decide {
        module,
        lookup: finder,
        mode,
        header,
        excluded,
        versions,
    } = *how;
    let provided: Vec<usize> = header.provided.iter().map(|&(col, _)| col).collect();
    // Where the key's columns are among the file's; none when one is
    // missing (the header check requires them, a revision's mapping may
    // not).
    let key_at = module.key_places(provided.iter().copied());
    let keys: Vec<Option<String>> = batch
        .iter()
        .map(|r| {
            let key = (key_at.as_ref()?.iter()).map(|&p| r.values.get(p).and_then(Option::as_ref));
            // An excluded row has no key: it meets neither the table nor
            // the file's other rows.
            let whole = key.clone().all(|v| v.is_some()) && !excluded.contains(&r.row);
            whole.then(|| key_text(key.flatten()))
        })
        .collect();
    // The rows without errors are looked up, their values lent to the
    // lookup (see `Wanted`); each row's place in the lookup's answer, if
    // it is looked up.
    let mut places = Vec::with_capacity(batch.len());
    let mut wanted = Vec::with_capacity(batch.len());
    for (k, r) in keys.iter().zip(&mut batch) {
        places.push(match k {
            Some(_) if r.errors.is_empty() => {
                let file = std::mem::take(&mut r.values);
                wanted.push(lookup::Wanted { file });
                Some(wanted.len() - 1)
            }
            _ => None,
        });
    }
    let (wanted, mut current) = finder.by_keys(db, wanted, &provided).await?;
    let mut lent = wanted.into_iter();
    for (r, _) in batch.iter_mut().zip(&places).filter(|(_, p)| p.is_some()) {
        if let Some(w) = lent.next() {
            r.values = w.file;
        }
    }
    let mut now = match versions {
        Some(v) => {
            let mut files: Vec<&[Option<Value>]> = vec![&[]; current.len()];
            for (r, p) in batch.iter().zip(&places) {
                if let Some(p) = p {
                    files[*p] = &r.values;
                }
            }
            v.now(db, module, &provided, &files, &current).await?
        }
        None => vec![],
    };
    let mut staged = Vec::with_capacity(batch.len());
    let rows = batch.into_iter().zip(keys).zip(warnings).zip(places);
    for (((mut row, nkey), warnings), place) in rows {
        // Each row has its own place, so its table row is moved, not cloned.
        let existing = place.and_then(|p| current[p].take());
        // Versioned: what the table holds for a looked-up row's key now.
        let row_now = place.and_then(|p| now.get_mut(p).map(Option::take));
        let mut before = None;
        let mut warnings = warnings;
        let conflict = row_now
            .as_ref()
            .and_then(|now| versions::conflict(module, &provided, &row, now.as_ref()));
        let action = if excluded.contains(&row.row) {
            row.errors.clear();
            warnings.clear();
            row.warnings.clear();
            RowAction::Excluded
        } else if !row.errors.is_empty() {
            RowAction::Error
        } else if let Some((e, image)) = conflict {
            row.errors.push(e);
            before = image;
            RowAction::Error
        } else {
            match (mode, existing) {
                (Mode::Insert, Some(_)) => {
                    row.errors.push(key_error(
                        module,
                        &row,
                        RowErrorCode::Exists,
                        "is already in",
                        mode,
                    ));
                    RowAction::Error
                }
                (Mode::Update, None) => {
                    row.errors.push(key_error(
                        module,
                        &row,
                        RowErrorCode::NotFound,
                        "is not in",
                        mode,
                    ));
                    RowAction::Error
                }
                (_, None) => RowAction::Insert,
                (_, Some(cur)) => {
                    before = update_of(&provided, cur, &row.values);
                    match before {
                        Some(_) => RowAction::Update,
                        None => RowAction::Unchanged,
                    }
                }
            }
        };
        // Rows no rule remarked on are staged as without rules.
        let warns = if row.warnings.is_empty() {
            rows::warns_text(&warnings)
        } else {
            rule_warnings(module, header, &mut row, &warnings)
        };
        let norm = if row.normalized.is_empty() {
            None
        } else {
            rows::norm_text((row.normalized.iter()).map(|(k, was)| {
                let column = &module.columns[header.provided[*k].0];
                (column.name.as_str(), was.as_str())
            }))
        };
        staged.push(StagedRow {
            seq: *seq,
            row_no: row.row as i64,
            action,
            // Failed cells have no value; the preview shows their text.
            vals: (!row.raw.is_empty()).then(|| row.values_text(module, header)),
            values: row.values,
            nkey,
            before,
            errors: row.errors,
            warns,
            norm,
        });
        *seq += 1;
    }
    Ok(staged)
}

/// The warnings of a row a module's rule warns about, whole
/// ([`rows::warns_json`]): its reference warnings (the columns in
/// `references`), then the rules'.
fn rule_warnings(
    module: &Module,
    header: &HeaderMap,
    row: &mut CheckedRow,
    references: &[&str],
) -> Option<String> {
    let mut all = Vec::with_capacity(references.len() + row.warnings.len());
    for &column in references {
        let value = (header.provided.iter())
            .position(|&(c, _)| module.columns[c].name == column)
            .and_then(|k| row.values.get(k)?.as_ref())
            .map(Value::to_json);
        let value = rows::reference_value(value.as_ref());
        if let Some(r) = module.references.iter().find(|r| r.column == column) {
            all.push(RowError::missing_reference(row.row, r, &value));
        }
    }
    all.append(&mut row.warnings);
    rows::warns_json(&all)
}

fn key_error(
    module: &Module,
    row: &CheckedRow,
    code: RowErrorCode,
    verb: &str,
    mode: Mode,
) -> RowError {
    let key: Vec<String> = module.natural_key.clone();
    RowError {
        row: row.row,
        column: Some(key.join(",")),
        value: None,
        code,
        message: format!(
            "row {}: the key ({}) {verb} {} (mode={})",
            row.row,
            key.join(", "),
            module.table,
            mode.as_str()
        ),
        rule: None,
    }
}

/// The before-image of the update of `found`, the target row's values of
/// the file's columns (`provided`, as catalog columns, in the stage's
/// order), to `new`: `None` when it would change none of them. A column
/// changes where its value is not the same datum ([`Value::same`]); the
/// columns in `found.as_file` hold the file's ([`lookup::Found`]). The
/// image is made in `found`'s own cells, as [`Before`] keeps it: where the
/// value is spelled exactly as the table's ([`Value::identical`]), a
/// column is left out (its bit in `same`), so that what the commit checks
/// and the rollback writes back is what a whole image would have held.
fn update_of(provided: &[usize], found: lookup::Found, new: &[Option<Value>]) -> Option<Before> {
    let lookup::Found {
        mut values,
        as_file,
    } = found;
    let (mut changes, mut same) = (false, 0);
    for ((&i, now), new) in provided.iter().zip(&mut values).zip(new) {
        let bit = stage::same_bit(i);
        let held = bit.is_some_and(|bit| as_file & bit != 0);
        changes |= !held && !Value::same(now, new);
        if let Some(bit) = bit.filter(|_| held || Value::identical(now, new)) {
            same |= bit;
            *now = None;
        }
    }
    changes.then_some(Before { values, same })
}

fn tally(counts: &mut Counts, staged: &[StagedRow]) {
    for r in staged {
        counts.rows += 1;
        counts.add(r.action, 1);
        counts.warnings += i64::from(r.warns.is_some());
        counts.normalized += i64::from(r.norm.is_some());
    }
}

/// Marks every row that repeats an earlier row's natural key; says what
/// each was staged as.
async fn mark_duplicates(
    db: &Db,
    stage: &Stage<'_>,
    job_id: &JobId,
) -> anyhow::Result<Vec<RowAction>> {
    let module = stage.module;
    let mut tx = db.begin().await?;
    let dups = rows::duplicates(&mut tx.conn(), stage).await?;
    for d in &dups {
        let error = duplicate_error(module, d.row_no, &d.nkey, d.first_row);
        rows::mark_error(&mut tx.conn(), stage, job_id, d.seq, &error).await?;
    }
    tx.commit().await?;
    Ok(dups.into_iter().map(|d| d.action).collect())
}

/// The error of a row repeating the key of an earlier row of the file.
pub(super) fn duplicate_error(
    module: &Module,
    row_no: i64,
    nkey: &str,
    first_row: i64,
) -> RowError {
    RowError {
        row: row_no as u64,
        column: Some(module.natural_key.join(",")),
        value: Some(key_display(nkey)),
        code: RowErrorCode::DuplicateInFile,
        message: format!(
            "row {row_no}: the key ({}) repeats row {first_row}",
            module.natural_key.join(", "),
        ),
        rule: None,
    }
}

/// `["A","B"]` → `A, B` for a person.
fn key_display(nkey: &str) -> String {
    match serde_json::from_str::<Vec<Json>>(nkey) {
        Ok(parts) => parts
            .iter()
            .map(|p| match p {
                Json::String(s) => s.clone(),
                other => other.to_string(),
            })
            .collect::<Vec<_>>()
            .join(", "),
        Err(_) => nkey.to_string(),
    }
}
