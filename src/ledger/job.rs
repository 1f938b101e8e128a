//! The job record and its public view (API.md section 4).

use std::collections::HashMap;

use chrono::{DateTime, SecondsFormat, Utc};
use serde::{Deserialize, Serialize};
use serde_json::Value as Json;

use super::JobState;
use crate::ids::{JobId, KeyId, ModuleKey};
use crate::ingest::{FileCode, Format};
use crate::keys::Person;
use crate::validate::{Mapping, RowAction};

/// How rows meet the table.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum Mode {
    /// Every row must be new.
    Insert,
    /// Every row must exist.
    Update,
    /// Either.
    Upsert,
}

impl Mode {
    pub fn as_str(self) -> &'static str {
        match self {
            Mode::Insert => "insert",
            Mode::Update => "update",
            Mode::Upsert => "upsert",
        }
    }

    pub fn parse(s: &str) -> Option<Mode> {
        match s {
            "insert" => Some(Mode::Insert),
            "update" => Some(Mode::Update),
            "upsert" => Some(Mode::Upsert),
            _ => None,
        }
    }
}

/// What row errors do to a job.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum OnError {
    /// Any row error fails the job.
    Fail,
    /// Invalid rows are left out; the rest goes to the gate.
    Skip,
}

impl OnError {
    pub fn as_str(self) -> &'static str {
        match self {
            OnError::Fail => "fail",
            OnError::Skip => "skip",
        }
    }

    pub fn parse(s: &str) -> Option<OnError> {
        match s {
            "fail" => Some(OnError::Fail),
            "skip" => Some(OnError::Skip),
            _ => None,
        }
    }
}

/// Reader and header options given at upload, kept with the job so that a
/// re-run reads the file exactly the same way.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct JobOptions {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub delimiter: Option<u8>,
    #[serde(default)]
    pub reject_unknown_columns: bool,
    /// CSV: `?encoding=`, as given (checked at upload).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub encoding: Option<String>,
    /// Excel: `?sheet=`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sheet: Option<String>,
    /// `?mapping=`: `none` reads the headers as they are even when a
    /// mapping is saved for them; `map_…` names the saved mapping to use.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mapping: Option<String>,
}

/// The uploaded file.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct FileInfo {
    pub name: Option<String>,
    pub format: Format,
    pub bytes: i64,
    pub sha256: String,
}

/// Row counts; during validation they grow as the file is read.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct Counts {
    pub rows: i64,
    pub valid: i64,
    pub errors: i64,
    pub insert: i64,
    pub update: i64,
    pub unchanged: i64,
    /// Rows with at least one warning (they stay valid).
    #[serde(default)]
    pub warnings: i64,
    /// Rows a revision left out (API.md section 11); neither valid nor errors.
    #[serde(default)]
    pub excluded: i64,
    /// Rows with a cell a normalizer of the module's rules rewrote (API.md
    /// section 14), errors among them.
    #[serde(default)]
    pub normalized: i64,
}

impl Counts {
    /// Counts `n` more rows (fewer, when negative) as `action`, and keeps
    /// `valid` the rows neither in error nor excluded. `rows` is the
    /// caller's: a row moved from one action to another is the same row.
    pub fn add(&mut self, action: RowAction, n: i64) {
        let slot = match action {
            RowAction::Insert => &mut self.insert,
            RowAction::Update => &mut self.update,
            RowAction::Unchanged => &mut self.unchanged,
            RowAction::Error => &mut self.errors,
            RowAction::Excluded => &mut self.excluded,
        };
        *slot += n;
        self.valid = self.rows - self.errors - self.excluded;
    }

    /// Adds a workbook part's counts to these (API.md section 16: a
    /// workbook job's counts are its parts' sum).
    pub fn plus(&mut self, other: &Counts) {
        self.rows += other.rows;
        self.valid += other.valid;
        self.errors += other.errors;
        self.insert += other.insert;
        self.update += other.update;
        self.unchanged += other.unchanged;
        self.warnings += other.warnings;
        self.excluded += other.excluded;
        self.normalized += other.normalized;
    }
}

/// What a request at the Human-Gate asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum GateAction {
    /// Write the previewed rows.
    Commit,
    /// Undo a commit.
    Rollback,
}

impl GateAction {
    pub fn as_str(self) -> &'static str {
        match self {
            GateAction::Commit => "commit",
            GateAction::Rollback => "rollback",
        }
    }
}

/// The pending or last gate request.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Gate {
    pub action: GateAction,
    pub requested_at: DateTime<Utc>,
    pub requested_by: KeyId,
}

/// How a gate request ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum DecisionKind {
    Approved,
    Rejected,
    /// Withdrawn by the submitter (or an admin) before a decision.
    Cancelled,
    /// Nobody decided within the approval time limit.
    Expired,
}

impl DecisionKind {
    pub fn as_str(self) -> &'static str {
        match self {
            DecisionKind::Approved => "approved",
            DecisionKind::Rejected => "rejected",
            DecisionKind::Cancelled => "cancelled",
            DecisionKind::Expired => "expired",
        }
    }
}

/// A decision taken on a gate request.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Decision {
    pub action: GateAction,
    pub decision: DecisionKind,
    pub by: Option<KeyId>,
    pub at: DateTime<Utc>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub comment: Option<String>,
    /// The key that issued the deciding key (API.md section 1), when one
    /// did (not for keys made at first start or on the command line).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub issued_by: Option<KeyId>,
}

/// The code of a job's problem: a client switches on it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "snake_case")]
#[schema(as = JobProblemCode)]
pub enum ProblemCode {
    /// `invalid`: the file cannot be read (format, limits of the reader).
    Unreadable,
    /// `invalid`: bytes that are not text in the encoding.
    Encoding,
    /// `invalid`: a header but no data rows.
    NoRows,
    /// `invalid`: required columns are not in the header.
    MissingColumns,
    /// `invalid`: one column named twice in the header.
    DuplicateColumns,
    /// `invalid`: columns not in the module, with `unknown_columns=reject`.
    UnknownColumns,
    /// `invalid`: the `sheet` is not in the workbook.
    UnknownSheet,
    /// `invalid`: more rows than the limit.
    TooManyRows,
    /// `invalid`: a workbook with no sheet (or member) named after a
    /// module or mapped to one (API.md section 16).
    NoParts,
    /// `invalid`: more columns than the limit.
    TooManyColumns,
    /// `failed`: rows have errors and `on_error=fail`.
    RowErrors,
    /// `failed`: previewed rows changed before the commit; nothing written.
    StalePreview,
    /// `failed`: the module's rules changed after the job was validated
    /// (API.md section 14); nothing written.
    StaleRules,
    /// `failed`: the database refused the commit; nothing written.
    DatabaseError,
    /// `committed`: rows changed since the commit; nothing undone.
    RollbackConflict,
    /// `failed` (validation, commit) or `committed` (rollback): the work
    /// failed the same way every time it was tried; the error is named.
    WorkFailed,
    /// `failed` (validation, commit) or `committed` (rollback): the
    /// database's disk was full every time the work was tried.
    NoSpace,
}

impl ProblemCode {
    pub fn as_str(self) -> &'static str {
        match self {
            ProblemCode::Unreadable => "unreadable",
            ProblemCode::Encoding => "encoding",
            ProblemCode::NoRows => "no_rows",
            ProblemCode::MissingColumns => "missing_columns",
            ProblemCode::DuplicateColumns => "duplicate_columns",
            ProblemCode::UnknownColumns => "unknown_columns",
            ProblemCode::UnknownSheet => "unknown_sheet",
            ProblemCode::TooManyRows => "too_many_rows",
            ProblemCode::NoParts => "no_parts",
            ProblemCode::TooManyColumns => "too_many_columns",
            ProblemCode::RowErrors => "row_errors",
            ProblemCode::StalePreview => "stale_preview",
            ProblemCode::StaleRules => "stale_rules",
            ProblemCode::DatabaseError => "database_error",
            ProblemCode::RollbackConflict => "rollback_conflict",
            ProblemCode::WorkFailed => "work_failed",
            ProblemCode::NoSpace => "no_space",
        }
    }
}

impl From<FileCode> for ProblemCode {
    /// A file-level failure's problem. A read stopped on purpose never
    /// ends a job ([`FileCode::HeaderGrown`] is read again, [`FileCode::Stopped`]
    /// is no longer listened to); should one reach here, the file is
    /// `unreadable`.
    fn from(code: FileCode) -> ProblemCode {
        match code {
            FileCode::Unreadable | FileCode::HeaderGrown | FileCode::Stopped => {
                ProblemCode::Unreadable
            }
            FileCode::Encoding => ProblemCode::Encoding,
            FileCode::NoRows => ProblemCode::NoRows,
            FileCode::MissingColumns => ProblemCode::MissingColumns,
            FileCode::DuplicateColumns => ProblemCode::DuplicateColumns,
            FileCode::UnknownColumns => ProblemCode::UnknownColumns,
            FileCode::UnknownSheet => ProblemCode::UnknownSheet,
            FileCode::NoParts => ProblemCode::NoParts,
            FileCode::TooManyRows => ProblemCode::TooManyRows,
            FileCode::TooManyColumns => ProblemCode::TooManyColumns,
        }
    }
}

/// A row that stopped a commit or a rollback.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct ConflictRow {
    /// A workbook job's part (its module) the row is in (API.md section 16).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    pub part: Option<String>,
    /// The row in the file.
    pub row: i64,
    /// Its natural key.
    pub key: Json,
    pub reason: String,
}

/// Why a job is `invalid` or `failed`, or why its rollback was refused.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct JobProblem {
    pub code: ProblemCode,
    pub title: String,
    pub detail: String,
    /// `stale_preview`, `rollback_conflict`: the first 50 rows concerned.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    pub rows: Option<Vec<ConflictRow>>,
    /// `missing_columns`: the best header of the file for each missing
    /// column (API.md section 11), never applied without a person.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    pub suggestions: Option<std::collections::BTreeMap<String, HeaderSuggestion>>,
    /// `rollback_conflict` over references with `on_missing = "error"`
    /// (API.md section 12): the first 100 rows of other modules that name
    /// a key the rollback would delete.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    pub referring: Option<Vec<ReferringRow>>,
}

/// A row of another module that names a key a rollback would delete.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct ReferringRow {
    /// The referring module (`orders`).
    pub module: String,
    /// The referring row's natural key, as [`ConflictRow`] shows keys: the
    /// value of a one-column key, else its parts in the module's key order.
    pub key: Json,
    /// The referring column (`sku`) and the value it holds (`P-002`).
    pub column: String,
    pub value: String,
}

/// A header of the file that could fill a missing column.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct HeaderSuggestion {
    pub header: String,
    pub score: f64,
    pub why: String,
}

impl JobProblem {
    pub fn new(code: ProblemCode, title: &str, detail: impl Into<String>) -> JobProblem {
        JobProblem {
            code,
            title: title.to_string(),
            detail: detail.into(),
            rows: None,
            suggestions: None,
            referring: None,
        }
    }
}

/// What a job-level warning is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum WarningCode {
    /// Columns not in the module were ignored.
    UnknownColumns,
    /// How many rows name rows of another module, and how many name
    /// nothing there (API.md section 12).
    References,
    /// A rollback would leave rows of another module naming keys it
    /// deletes (`module`, `rows`).
    Orphans,
    /// A mapping saved for the module was applied to the file's headers
    /// (`mapping`: its id; API.md section 11).
    MappingApplied,
    /// A workbook's sheet (or member) that is no module and is mapped to
    /// none was left out (`sheet`; API.md section 16).
    SheetIgnored,
}

/// A file-level remark that does not stop the job.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct Warning {
    pub code: WarningCode,
    /// The columns concerned.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    pub columns: Option<Vec<String>>,
    /// `references`, `orphans`: the other module.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    pub module: Option<String>,
    /// `references`: rows naming nothing there; `orphans`: rows left so.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    pub rows: Option<i64>,
    /// `mapping_applied`: the saved mapping's id (`map_…`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    pub mapping: Option<String>,
    /// `sheet_ignored`: the sheet (or JSON member) left out.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    pub sheet: Option<String>,
    pub message: String,
}

/// A job as the ledger keeps it. People are key ids here; they are masked
/// only when the job is shown.
#[derive(Debug, Clone)]
pub struct Job {
    pub id: JobId,
    /// The module its rows are for; `None` for a workbook job (API.md
    /// section 16), whose rows are its [`parts`](Job::parts)'.
    pub module: Option<ModuleKey>,
    /// The module's table; empty for a workbook job.
    pub table: String,
    pub mode: Mode,
    pub on_error: OnError,
    pub options: JobOptions,
    pub simulated: bool,
    pub file: FileInfo,
    pub submitter: KeyId,
    pub state: JobState,
    pub version: i64,
    pub counts: Counts,
    pub warnings: Vec<Warning>,
    pub problem: Option<JobProblem>,
    pub gate: Option<Gate>,
    pub decisions: Vec<Decision>,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
    /// When the commit was written (the ledger's `written` event), if it was.
    pub committed_at: Option<DateTime<Utc>>,
    /// When the job's staged rows and stored file were purged, if they were.
    pub purged_at: Option<DateTime<Utc>>,
    /// The job this one revises (API.md section 11), and what it changes.
    pub revision_of: Option<JobId>,
    pub revision: Option<Revision>,
    /// The revision that took this job's place, once one did.
    pub revised_as: Option<JobId>,
    /// The saved mapping an upload was read with (`?mapping=map_…`, or
    /// the one saved for its exact set of headers), as it was then: a
    /// mapping changed or deleted later does not change this job.
    pub mapping_applied: Option<AppliedMapping>,
    /// The version of its module's rules the job was validated with (API.md
    /// section 14); none before its validation began.
    pub rules_version: Option<u32>,
    /// A workbook job's parts, in reference order; none for any other job.
    pub parts: Vec<Part>,
}

/// One module's rows in a workbook job (API.md section 16). Underneath it
/// is a one-module job of its own (its stage, counts and row errors), so
/// that it is validated, previewed, committed and rolled back as one; it
/// is never worked on, listed or moved by itself: its workbook job is.
#[derive(Debug, Clone)]
pub struct Part {
    /// The job that holds the part's rows.
    pub job: JobId,
    pub module: ModuleKey,
    pub table: String,
    /// The sheet (or JSON member) its rows are read from.
    pub sheet: String,
    pub mode: Mode,
    pub counts: Counts,
    /// The version of its module's rules the part was validated with
    /// (API.md section 14); none before its validation began.
    pub rules_version: Option<u32>,
}

/// What a job is made of when it starts: who sent which file into which
/// table, and how it is to be read and written.
pub struct NewJob {
    pub module: Option<ModuleKey>,
    pub table: String,
    pub mode: Mode,
    pub on_error: OnError,
    pub options: JobOptions,
    pub simulated: bool,
    pub file: FileInfo,
    pub submitter: KeyId,
    pub mapping_applied: Option<AppliedMapping>,
}

impl Job {
    /// A job as every job starts: a new id, in [`super::START`] at
    /// version 1, nothing counted, decided or revised yet.
    pub fn start(new: NewJob, now: DateTime<Utc>) -> Job {
        Job {
            id: JobId::generate(),
            module: new.module,
            table: new.table,
            mode: new.mode,
            on_error: new.on_error,
            options: new.options,
            simulated: new.simulated,
            file: new.file,
            submitter: new.submitter,
            state: super::START,
            version: 1,
            counts: Counts::default(),
            warnings: vec![],
            problem: None,
            gate: None,
            decisions: vec![],
            created_at: now,
            updated_at: now,
            committed_at: None,
            purged_at: None,
            revision_of: None,
            revision: None,
            revised_as: None,
            mapping_applied: new.mapping_applied,
            rules_version: None,
            parts: vec![],
        }
    }

    /// The job a revision of this one makes (API.md section 11): the same
    /// file, table, options and submitter, started afresh, recording what
    /// it revises and how. The revision carries the whole mapping in force,
    /// so no saved mapping is applied to it.
    pub fn revised_by(&self, revision: Revision, now: DateTime<Utc>) -> Job {
        let new = NewJob {
            module: self.module.clone(),
            table: self.table.clone(),
            mode: self.mode,
            on_error: self.on_error,
            options: self.options.clone(),
            simulated: self.simulated,
            file: self.file.clone(),
            submitter: self.submitter.clone(),
            mapping_applied: None,
        };
        Job {
            revision_of: Some(self.id.clone()),
            revision: Some(revision),
            ..Job::start(new, now)
        }
    }

    /// Whether the job is a workbook's (API.md section 16).
    pub fn is_workbook(&self) -> bool {
        self.module.is_none()
    }

    /// The modules whose rows the job holds: its own, or its parts'.
    pub fn modules(&self) -> Vec<&ModuleKey> {
        match &self.module {
            Some(m) => vec![m],
            None => self.parts.iter().map(|p| &p.module).collect(),
        }
    }

    /// How the job's stored file is read: its own options (delimiter,
    /// encoding, sheet) within the service's limits.
    pub fn read_options(
        &self,
        max_cell_bytes: usize,
        max_columns: usize,
        one_pass: bool,
    ) -> crate::ingest::Options {
        crate::ingest::Options {
            delimiter: self.options.delimiter,
            max_cell_bytes,
            max_columns,
            encoding: self.options.encoding.clone(),
            sheet: self.options.sheet.clone(),
            one_pass,
        }
    }

    /// The header → column mapping the job's file is read with: a
    /// revision's (which carries the whole mapping in force), else the
    /// saved mapping an upload was given, else none.
    pub fn mapping_in_force(&self) -> Mapping {
        match (&self.revision, &self.mapping_applied) {
            (Some(r), _) => r.mapping.clone(),
            (None, Some(applied)) => applied.mapping.clone(),
            (None, None) => Mapping::new(),
        }
    }
}

/// A saved mapping as an upload applied it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AppliedMapping {
    /// The saved mapping's id (`map_…`).
    pub id: String,
    pub mapping: Mapping,
    /// The key that saved it: four-eyes counts its person as a reviser of
    /// the job (API.md section 1). Absent on jobs recorded before the
    /// saver was kept; the service then looks the mapping up.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub saved_by: Option<KeyId>,
}

/// One cell set by a revision: by row number (as errors name rows) and
/// module column, to a text read by the same rules as a file cell.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Fix {
    pub row: u64,
    pub column: String,
    /// `None` empties the cell.
    pub value: Option<String>,
    /// What the file said, once a validation has read it: the approver
    /// sees it next to the new value.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub was: Option<String>,
}

/// What a revision changes, the inherited changes included: a revision
/// carries its whole mapping, fixes and exclusions, so its validation
/// needs nothing of the jobs before it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Revision {
    /// 1 for the first revision of an upload, 2 for a revision of it, …
    pub number: u32,
    /// File header as written → module column (`None`: ignore the column).
    pub mapping: Mapping,
    /// In row order, one per (row, column).
    pub fixes: Vec<Fix>,
    /// Row numbers left out, ascending.
    pub exclude: Vec<u64>,
    /// The key that made this revision.
    pub by: KeyId,
    /// Every key that revised the upload, this one included (four-eyes
    /// bars their persons from the gate, API.md section 1).
    pub revisers: Vec<KeyId>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub comment: Option<String>,
}

/// RFC 3339 in UTC, as every response shows time.
pub fn time(t: &DateTime<Utc>) -> String {
    t.to_rfc3339_opts(SecondsFormat::Millis, true)
}

/// Masks key ids with the names of the key table.
pub struct People<'a>(pub &'a HashMap<String, String>);

impl People<'_> {
    /// The person behind a key id: a [`KeyId`], or the text the ledger's
    /// chain names an actor by.
    pub fn person(&self, key_id: impl AsRef<str>) -> Person {
        let key_id = key_id.as_ref();
        Person::new(key_id, self.0.get(key_id).map(String::as_str).unwrap_or(""))
    }
}

impl Job {
    /// The entity tag of this version of the job.
    pub fn etag(&self) -> String {
        format!("\"{}-{}\"", self.id, self.version)
    }
}
