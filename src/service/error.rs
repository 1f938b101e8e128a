//! The one error of the service layer. Every operation a person or a
//! worker performs fails with one of these; the API turns it into a
//! problem in one place (`http::problem`), the console into a page of its
//! own (`console::Fail`), and the CLI and the demo print it.

use chrono::{DateTime, Utc};

use crate::ids::JobId;
use crate::ledger::gate::Refusal;
use crate::ledger::job::time;
use crate::ledger::{Job, Move};
use crate::store::StoreError;

/// Why an operation did not happen.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// No such module in the catalog.
    #[error("{key:?} is not a module; valid modules: {}", valid.join(", "))]
    UnknownModule { key: String, valid: Vec<String> },
    /// No such job, key or key request (or one the caller may not know of).
    #[error("no {what} {id}")]
    NotFound { what: &'static str, id: String },
    /// The presented key is unknown, revoked or expired.
    #[error("the key is unknown, revoked or expired")]
    Unauthorized,
    /// Outside the acting key's role or module scope.
    #[error("{0}")]
    Forbidden(String),
    /// Four-eyes: the requester of a gate action may not decide it.
    #[error("the key that asked for this gate action may not decide it; another approver must")]
    SelfApproval,
    /// The job or key request is not in a state for this move.
    #[error("{detail}")]
    InvalidState {
        title: &'static str,
        detail: String,
        state: String,
    },
    /// The job moved since the version the person decided on.
    #[error(
        "If-Match {given} does not match the job's current version {current}; reload it and decide again"
    )]
    StaleEtag { given: String, current: String },
    /// A parameter, header or member that cannot be.
    #[error("{message}")]
    Invalid { parameter: String, message: String },
    /// A body the operation cannot read at all.
    #[error("{0}")]
    BadRequest(String),
    /// A file type the service does not read.
    #[error(
        "Content-Type {0:?} is not an accepted file format (send CSV, XLSX, XLS, \
         ODS, JSON or NDJSON, or application/octet-stream to have it detected)"
    )]
    UnsupportedType(String),
    /// An upload without a file.
    #[error("the request has no file")]
    EmptyBody,
    /// An `Idempotency-Key` used before for a different upload.
    #[error(
        "this Idempotency-Key was used in the last 24 hours for a different request \
         (module, parameters or file); use a new key for a new upload"
    )]
    IdempotencyReused,
    /// A body over the size limit.
    #[error("the body is larger than the limit of {limit} bytes")]
    TooLarge { limit: u64 },
    /// A body that arrived too slowly (API.md section 10); nothing is kept.
    #[error(
        "the body arrived too slowly: {bytes} bytes in {seconds} s; a body must average \
         {min_rate} bytes a second after the first {grace} s and end within {total} s; nothing was kept"
    )]
    SlowBody {
        bytes: u64,
        seconds: u64,
        min_rate: u64,
        grace: u64,
        total: u64,
    },
    /// The key of a key request was handed out already.
    #[error(
        "the key of {id} was handed out once and is not kept; ask an admin to revoke it if it was not you"
    )]
    AlreadyCollected { id: String },
    /// An approved key request that can no longer be collected.
    #[error("{detail}")]
    Closed {
        state: crate::keys::RequestState,
        detail: String,
    },
    /// A rollback asked for after the rollback window closed (API.md
    /// section 10).
    #[error(
        "the rollback window of {id} closed at {closed} ({window} after its commit); \
         it can no longer be rolled back, and its staged rows and stored file are purged"
    )]
    RollbackExpired {
        id: JobId,
        closed: String,
        window: String,
    },
    /// What a job's purge removed (its preview) was asked for.
    #[error(
        "the preview of {id} is gone: its staged rows and stored file were purged at {at}, \
         {why}; the job, its events and its error list remain"
    )]
    Purged { id: JobId, at: String, why: String },
    /// The preview of a job whose staged rows went to its revision (API.md
    /// section 11) was asked for.
    #[error(
        "the preview of {id} is now its revision's: its rows were handed to {to} when it was \
         revised; the job, its events and its error list remain"
    )]
    Revised { id: JobId, to: JobId },
    /// Too many requests of a kind, from a client or in all.
    #[error("{message}")]
    TooMany { message: String, retry_after: u64 },
    /// The database failed.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// Anything else that failed inside the service (a defect).
    #[error("{0}")]
    Internal(String),
}

pub type Result<T, E = Error> = std::result::Result<T, E>;

impl Error {
    pub fn not_found(what: &'static str, id: &str) -> Error {
        Error::NotFound {
            what,
            id: id.to_string(),
        }
    }

    pub fn invalid(parameter: &str, message: impl Into<String>) -> Error {
        Error::Invalid {
            parameter: parameter.to_string(),
            message: message.into(),
        }
    }

    pub fn internal(e: impl std::fmt::Display) -> Error {
        Error::Internal(e.to_string())
    }

    /// A job not in a state for `event`.
    pub fn job_state(job: &Job, event: Move) -> Error {
        Error::InvalidState {
            title: "The job is not in a state for this move",
            detail: format!(
                "{} is {}; {} is not possible from there",
                job.id,
                job.state.as_str(),
                event.as_str()
            ),
            state: job.state.as_str().to_string(),
        }
    }

    /// A rollback refused because the window closed at `closed`.
    pub fn rollback_expired(job: &Job, closed: DateTime<Utc>, window_secs: i64) -> Error {
        Error::RollbackExpired {
            id: job.id.clone(),
            closed: time(&closed),
            window: span(window_secs),
        }
    }

    /// The preview of a purged job.
    pub fn purged(job: &Job, at: DateTime<Utc>, retention_secs: i64) -> Error {
        let why = if job.committed_at.is_some() {
            "when its rollback window closed".to_string()
        } else {
            format!("{} after it ended without a commit", span(retention_secs))
        };
        Error::Purged {
            id: job.id.clone(),
            at: time(&at),
            why,
        }
    }

    /// The gate's refusal of a person's move.
    pub fn refused(job: &Job, event: Move, refusal: Refusal) -> Error {
        match refusal {
            Refusal::InvalidState(_) => Error::job_state(job, event),
            Refusal::Forbidden(why) => Error::Forbidden(why),
            Refusal::SelfApproval => Error::SelfApproval,
        }
    }

    /// The stable code a client switches on (the API's problem codes).
    pub fn code(&self) -> &'static str {
        match self {
            Error::UnknownModule { .. } => "unknown_module",
            Error::NotFound { .. } => "not_found",
            Error::Unauthorized => "unauthorized",
            Error::Forbidden(_) => "forbidden",
            Error::SelfApproval => "self_approval",
            Error::InvalidState { .. } => "invalid_state",
            Error::StaleEtag { .. } => "precondition_failed",
            Error::Invalid { .. } => "invalid_parameter",
            Error::BadRequest(_) => "bad_request",
            Error::UnsupportedType(_) => "unsupported_media_type",
            Error::EmptyBody => "empty_body",
            Error::IdempotencyReused => "idempotency_key_reused",
            Error::TooLarge { .. } => "too_large",
            Error::SlowBody { .. } => "request_timeout",
            Error::AlreadyCollected { .. } => "already_collected",
            Error::TooMany { .. } => "rate_limited",
            Error::RollbackExpired { .. } => "rollback_expired",
            Error::Purged { .. } => "purged",
            Error::Revised { .. } => "revised",
            Error::Closed { state, .. } => match state {
                crate::keys::RequestState::Withdrawn => "withdrawn",
                _ => "expired",
            },
            Error::Store(_) | Error::Internal(_) => "internal",
        }
    }
}

/// A length of time as a setting reads: whole days, whole hours, or seconds.
pub fn span(secs: i64) -> String {
    let (n, unit) = match secs {
        s if s % 86_400 == 0 => (s / 86_400, "day"),
        s if s % 3600 == 0 => (s / 3600, "hour"),
        s => (s, "second"),
    };
    let plural = if n == 1 { "" } else { "s" };
    format!("{n} {unit}{plural}")
}

impl From<anyhow::Error> for Error {
    fn from(e: anyhow::Error) -> Error {
        match e.downcast::<StoreError>() {
            Ok(s) => Error::Store(s),
            Err(e) => Error::Internal(format!("{e:#}")),
        }
    }
}

impl From<crate::keys::NotAnEmail> for Error {
    fn from(e: crate::keys::NotAnEmail) -> Error {
        Error::invalid("email", e.to_string())
    }
}
