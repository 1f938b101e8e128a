//! Workbooks (API.md section 16): one file holding several modules' rows,
//! one job with a part for each, approved, committed and rolled back as
//! one. An upload finds the workbook's sheets (or JSON members) and makes
//! a part of each that names a module or is mapped to one, in reference
//! order; each part is then a one-module job underneath
//! ([`crate::ledger::Part`]), which the workbook job's work runs in turn.

use std::collections::BTreeMap;

use futures::Stream;
use sha2::{Digest, Sha256};

use super::uploads::{self, Accepted};
use super::{App, Error, Result, in_scope};
use crate::ids::ModuleKey;
use crate::ingest::sheets::{self, MAX_PARTS};
use crate::ingest::{FileError, Format};
use crate::keys::KeyRecord;
use crate::ledger::{FileInfo, Job, JobOptions, Mode, NewJob, OnError, Warning, WarningCode};
use crate::store::blobs::{self, BlobReader};
use crate::store::{self, Db};

/// A workbook upload, as a front door received it.
pub struct WorkbookUpload {
    /// Every part's mode, unless `modes` names its module.
    pub mode: Mode,
    pub on_error: OnError,
    /// `mode.<module>=`: one part's mode.
    pub modes: BTreeMap<String, Mode>,
    /// `sheets.<sheet>=<module>`: the module of a sheet not named after one.
    pub sheets: BTreeMap<String, String>,
    /// The file's format: declared, or `None` to detect it from the bytes.
    pub format: Option<Format>,
    pub file_name: Option<String>,
    pub idempotency_key: Option<String>,
}

impl WorkbookUpload {
    /// Reads `mode`, `on_error`, `mode.<module>` and `sheets.<sheet>` from
    /// a query's pairs; any other parameter is ignored, as on every upload.
    pub fn from_query(pairs: &[(String, String)]) -> Result<WorkbookUpload> {
        let mode_of = |name: &str, v: &str| {
            Mode::parse(v).ok_or_else(|| {
                Error::invalid(name, format!("{name} must be insert, update or upsert"))
            })
        };
        let mut up = WorkbookUpload {
            mode: Mode::Insert,
            on_error: OnError::Fail,
            modes: BTreeMap::new(),
            sheets: BTreeMap::new(),
            format: None,
            file_name: None,
            idempotency_key: None,
        };
        for (name, value) in pairs {
            if name == "mode" {
                up.mode = mode_of(name, value)?;
            } else if name == "on_error" {
                up.on_error = OnError::parse(value)
                    .ok_or_else(|| Error::invalid(name, "on_error must be fail or skip"))?;
            } else if let Some(module) = name.strip_prefix("mode.") {
                up.modes.insert(module.to_string(), mode_of(name, value)?);
            } else if let Some(sheet) = name.strip_prefix("sheets.") {
                if sheet.is_empty() || sheet.chars().count() > 255 {
                    return Err(Error::invalid(
                        name,
                        "sheets.<sheet> must name a sheet (1 to 255 characters)",
                    ));
                }
                up.sheets.insert(sheet.to_string(), value.clone());
            }
        }
        Ok(up)
    }
}

/// A part as the upload finds it: a sheet and the module it holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Found {
    pub sheet: String,
    pub module: ModuleKey,
}

/// The parts of a workbook whose sheets are `names` (in the file's
/// order), in reference order, and a `sheet_ignored` warning for each
/// other sheet. A mapping naming no module, or two sheets of one module,
/// is a `422` naming the parameter or the sheets.
pub fn parts_of(
    app: &App,
    names: &[String],
    mapped: &BTreeMap<String, String>,
) -> Result<(Vec<Found>, Vec<Warning>)> {
    for (sheet, module) in mapped {
        if app.catalog.get(module).is_none() {
            return Err(Error::invalid(
                &format!("sheets.{sheet}"),
                format!("sheets.{sheet}: {module:?} is no module; see GET /api/modules"),
            ));
        }
    }
    let mut found: Vec<Found> = Vec::new();
    let mut ignored = Vec::new();
    for sheet in names {
        let module = mapped
            .get(sheet)
            .cloned()
            .or_else(|| app.catalog.get(sheet).map(|m| m.key.to_string()))
            .or_else(|| {
                let lower = sheet.trim().to_lowercase();
                app.catalog.get(&lower).map(|m| m.key.to_string())
            });
        let Some(module) = module.and_then(|m| app.catalog.get(&m).map(|m| m.key.clone())) else {
            ignored.push(Warning {
                code: WarningCode::SheetIgnored,
                columns: None,
                module: None,
                rows: None,
                mapping: None,
                sheet: Some(sheet.clone()),
                message: format!(
                    "sheet {sheet:?} was left out: it is named after no module (map it with sheets.{sheet}=<module>)"
                ),
            });
            continue;
        };
        if let Some(first) = found.iter().find(|f| f.module == module) {
            return Err(Error::invalid(
                "sheets",
                format!(
                    "sheets {:?} and {sheet:?} both hold {module}: a workbook has one sheet a module",
                    first.sheet
                ),
            ));
        }
        found.push(Found {
            sheet: sheet.clone(),
            module,
        });
    }
    if found.len() > MAX_PARTS {
        return Err(Error::invalid(
            "file",
            format!(
                "the workbook has {} parts; at most {MAX_PARTS}",
                found.len()
            ),
        ));
    }
    let keys: Vec<&str> = found.iter().map(|f| f.module.as_str()).collect();
    let order = app.catalog.reference_order(&keys);
    let ordered = order
        .iter()
        .filter_map(|k| found.iter().find(|f| f.module.as_str() == *k).cloned())
        .collect();
    Ok((ordered, ignored))
}

/// Where a workbook's bytes are read from: its stored file, or its
/// upload's chunks before they are filed.
pub enum Source<'a> {
    Filed(&'a str),
    Unfiled(&'a str),
}

/// The sheets of a stored workbook, read on a blocking thread.
pub async fn sheet_names(
    db: &Db,
    format: Format,
    source: Source<'_>,
    options: crate::ingest::Options,
) -> anyhow::Result<std::result::Result<Vec<String>, FileError>> {
    let db = db.clone();
    let (filed, key) = match source {
        Source::Filed(sha) => (true, sha.to_string()),
        Source::Unfiled(upload) => (false, upload.to_string()),
    };
    let runtime = tokio::runtime::Handle::current();
    Ok(tokio::task::spawn_blocking(move || {
        let blob = match filed {
            true => BlobReader::new(db, runtime, &key, true),
            false => BlobReader::unfiled(db, runtime, &key),
        };
        std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            sheets::names(format, Box::new(blob), &options)
        }))
        .unwrap_or_else(|_| {
            Err(FileError::new(
                crate::ingest::FileCode::Unreadable,
                "the workbook could not be read",
            ))
        })
    })
    .await?)
}

/// The reader options a workbook's sheets are listed with.
pub fn list_options(app: &App) -> crate::ingest::Options {
    crate::ingest::Options {
        delimiter: None,
        max_cell_bytes: app.settings.limits.cell_bytes,
        max_columns: app.settings.limits.columns,
        encoding: None,
        sheet: None,
        one_pass: false,
    }
}

/// Streams a workbook into the store and records its job as `validating`,
/// with a part for each sheet that holds a module, every one in the key's
/// scope (`403` naming the first that is not). A workbook whose sheets
/// cannot be listed, or that has no part, is recorded all the same: its
/// validation makes it `invalid` and says why. An `Idempotency-Key` works
/// as on every upload.
pub async fn upload<S, E>(
    app: &App,
    actor: &KeyRecord,
    up: WorkbookUpload,
    body: S,
) -> Result<Accepted>
where
    S: Stream<Item = std::result::Result<bytes::Bytes, E>>,
    E: std::fmt::Display,
{
    for module in up.modes.keys() {
        let m = app.module(module)?;
        in_scope(actor, &m.key)?;
    }
    app.db.room(app.settings.disk_reserve_bytes).await?;
    let stored = uploads::store_body(app, body, app.settings.limits.body_bytes).await?;
    let format = match up.format {
        Some(f) => f.refine(&stored.prefix),
        None => Format::sniff(&stored.prefix),
    };
    let upload_id = stored.upload_id.clone();
    // Refused, nothing of the upload is kept.
    let (found, ignored) = match find_parts(app, actor, &up, format, &upload_id).await {
        Ok(parts) => parts,
        Err(e) => {
            blobs::discard(&mut app.db.acquire().await?.conn(), &upload_id).await?;
            return Err(e);
        }
    };
    let now = store::now();
    let file = FileInfo {
        name: up.file_name.clone(),
        format,
        bytes: stored.bytes as i64,
        sha256: stored.sha256.clone(),
    };
    let new =
        |module: Option<ModuleKey>, table: String, mode: Mode, sheet: Option<String>| NewJob {
            module,
            table,
            mode,
            on_error: up.on_error,
            options: JobOptions {
                sheet,
                ..JobOptions::default()
            },
            simulated: app.settings.simulate,
            file: file.clone(),
            submitter: actor.id.clone(),
            mapping_applied: None,
        };
    let mut job = Job::start(new(None, String::new(), up.mode, None), now);
    job.warnings = ignored;
    let parts: Vec<Job> = found
        .iter()
        .map(|f| {
            let module = app
                .catalog
                .get(f.module.as_str())
                .expect("a found part's module");
            let mode = up.modes.get(f.module.as_str()).copied().unwrap_or(up.mode);
            let part = new(
                Some(f.module.clone()),
                module.table.clone(),
                mode,
                Some(f.sheet.clone()),
            );
            Job::start(part, now)
        })
        .collect();
    let print = fingerprint(&up, &stored.sha256);
    let idem = up.idempotency_key.as_deref();
    let mut tx = match uploads::file_upload(app, actor, idem, &print, &job.id, &stored).await? {
        uploads::Filed::New(tx) => tx,
        uploads::Filed::Before(first) => return Ok(*first),
    };
    store::jobs::insert(&mut tx.conn(), &app.seal.key, &job).await?;
    for (n, part) in parts.iter().enumerate() {
        store::jobs::insert_part(&mut tx.conn(), &job.id, n as i64, part).await?;
    }
    tx.commit().await?;
    app.moves.job(&job.id);
    tracing::info!(job = %job.id, parts = parts.len(), bytes = stored.bytes, format = format.as_str(), "workbook upload accepted");
    app.work.notify_one();
    let job = super::jobs::find(app, &job.id).await?;
    Ok(Accepted {
        job,
        replayed: false,
    })
}

/// The parts of an uploaded workbook (its chunks not filed yet) and its
/// `sheet_ignored` warnings, every part's module in the key's scope: a
/// workbook of another format is `415`. A workbook whose sheets cannot be
/// listed has no parts now; its validation says why.
async fn find_parts(
    app: &App,
    actor: &KeyRecord,
    up: &WorkbookUpload,
    format: Format,
    upload_id: &str,
) -> Result<(Vec<Found>, Vec<Warning>)> {
    if !matches!(format, Format::Xlsx | Format::Ods | Format::Json) {
        return Err(Error::UnsupportedType(format!(
            "{} (a workbook is an XLSX or ODS spreadsheet, or a JSON object of arrays)",
            format.as_str()
        )));
    }
    let source = Source::Unfiled(upload_id);
    let names = sheet_names(&app.db, format, source, list_options(app)).await?;
    let (found, ignored) = match &names {
        Ok(names) => parts_of(app, names, &up.sheets)?,
        Err(_) => (vec![], vec![]),
    };
    for part in &found {
        in_scope(actor, &part.module)?;
    }
    Ok((found, ignored))
}

/// What makes two workbook uploads the same request.
fn fingerprint(up: &WorkbookUpload, sha256: &str) -> String {
    hex::encode(Sha256::digest(format!(
        "workbook|{}|{}|{:?}|{:?}|{sha256}",
        up.mode.as_str(),
        up.on_error.as_str(),
        up.modes
            .iter()
            .map(|(k, v)| (k, v.as_str()))
            .collect::<Vec<_>>(),
        up.sheets
    )))
}

/// The modules a workbook template asks for (`products,orders`), in
/// reference order, each once: `422` naming `modules` when none is named,
/// `404` for a key no module has.
pub fn template_modules<'a>(
    app: &'a App,
    modules: Option<&str>,
) -> Result<Vec<&'a crate::catalog::Module>> {
    let mut keys: Vec<&str> = Vec::new();
    for key in modules
        .unwrap_or("")
        .split(',')
        .map(str::trim)
        .filter(|k| !k.is_empty())
    {
        let key = app.module(key)?.key.as_str();
        if !keys.contains(&key) {
            keys.push(key);
        }
    }
    if keys.is_empty() {
        return Err(Error::invalid(
            "modules",
            "modules must name at least one module (modules=products,orders)",
        ));
    }
    Ok(app
        .catalog
        .reference_order(&keys)
        .into_iter()
        .filter_map(|k| app.catalog.get(k).map(|m| m.as_ref()))
        .collect())
}

/// Why a workbook job has no parts: its sheets cannot be listed (the
/// reader's failure), or none holds a module (`no_parts`).
pub async fn no_parts(app: &App, job: &Job) -> anyhow::Result<FileError> {
    let source = Source::Filed(&job.file.sha256);
    let names = sheet_names(&app.db, job.file.format, source, list_options(app)).await?;
    Ok(match names {
        Err(e) => e,
        Ok(names) => FileError::new(
            crate::ingest::FileCode::NoParts,
            match names.len() {
                0 => "the workbook has no sheets".to_string(),
                _ => format!(
                    "no sheet of the workbook is named after a module or mapped to one (its sheets: {}); name a sheet after a module, or map it with sheets.<sheet>=<module>",
                    names.join(", ")
                ),
            },
        ),
    })
}
