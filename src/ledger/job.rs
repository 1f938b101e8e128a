//! The job record and its public view (API.md section 4).

use std::collections::HashMap;

use chrono::{DateTime, SecondsFormat, Utc};
use serde::{Deserialize, Serialize};
use serde_json::Value as Json;

use super::State;
use crate::ingest::Format;
use crate::keys::Person;

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
}

/// The pending or last gate request.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Gate {
    /// `commit` or `rollback`.
    pub action: String,
    pub requested_at: DateTime<Utc>,
    pub requested_by: String,
}

/// A decision taken on a gate request.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Decision {
    /// `commit` or `rollback`.
    pub action: String,
    /// `approved`, `rejected`, `cancelled` or `expired`.
    pub decision: String,
    pub by: Option<String>,
    pub at: DateTime<Utc>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub comment: Option<String>,
}

/// A job as the ledger keeps it. People are key ids here; they are masked
/// only when the job is shown.
#[derive(Debug, Clone)]
pub struct Job {
    pub id: String,
    pub module: String,
    pub table: String,
    pub mode: Mode,
    pub on_error: OnError,
    pub options: JobOptions,
    pub simulated: bool,
    pub file: FileInfo,
    pub submitter: String,
    pub state: State,
    pub version: i64,
    pub counts: Counts,
    pub warnings: Vec<Json>,
    pub problem: Option<Json>,
    pub gate: Option<Gate>,
    pub decisions: Vec<Decision>,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
}

/// RFC 3339 in UTC, as every response shows time.
pub fn time(t: &DateTime<Utc>) -> String {
    t.to_rfc3339_opts(SecondsFormat::Millis, true)
}

/// Masks key ids with the names of the key table.
pub struct People<'a>(pub &'a HashMap<String, String>);

impl People<'_> {
    pub fn person(&self, key_id: &str) -> Person {
        Person::new(key_id, self.0.get(key_id).map(String::as_str).unwrap_or(""))
    }
}

impl Job {
    /// The entity tag of this version of the job.
    pub fn etag(&self) -> String {
        format!("\"{}-{}\"", self.id, self.version)
    }
}
