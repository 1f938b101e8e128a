//! An upload: a file becomes a validation job, never a write to the
//! module's table.
//!
//! The body is received in full first, hashed, checked against the size
//! limit and packed into chunks as it comes (in memory, then a temporary
//! file: [`super::packing`]), and only then stored: no database
//! connection waits on a client. The format
//! comes from what the client declared, refined or decided by the first
//! bytes. The same
//! operation serves the API, the console and the demo.

use futures::{Stream, StreamExt};
use serde::Deserialize;
use sha2::{Digest, Sha256};

use super::packing::Packer;
use super::{App, Error, Result, in_scope};
use crate::catalog::Module;
use crate::ingest::decode::encoding_for;
use crate::ingest::{Declared, Format};
use crate::keys::KeyRecord;
use crate::ledger::{AppliedMapping, FileInfo, Job, JobOptions, Mode, NewJob, OnError};
use crate::store::idempotency::Claim;
use crate::store::{self, blobs};

/// How long an `Idempotency-Key` answers with its first job.
const IDEMPOTENCY_HOURS: i64 = 24;

/// The module a file is uploaded for, if the key may upload to it.
pub fn target<'a>(app: &'a App, actor: &KeyRecord, module: &str) -> Result<&'a Module> {
    let module = app.module(module)?;
    in_scope(actor, &module.key)?;
    Ok(module)
}

/// What `columns not in the module` do to a job.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum UnknownColumns {
    /// Listed as job warnings.
    #[default]
    Ignore,
    /// The job is `invalid`.
    Reject,
}

/// An upload's parameters as a client writes them (`?mode=…&delimiter=…`).
/// Unknown members are ignored.
#[derive(Debug, Default, Clone, Deserialize)]
pub struct Params {
    pub mode: Option<Mode>,
    pub on_error: Option<OnError>,
    pub sheet: Option<String>,
    pub delimiter: Option<String>,
    pub encoding: Option<String>,
    pub unknown_columns: Option<UnknownColumns>,
    pub mapping: Option<String>,
}

impl Params {
    /// The reader options these parameters ask for, checked.
    pub fn options(&self) -> Result<JobOptions> {
        let delimiter = match self.delimiter.as_deref() {
            None => None,
            Some("\\t") | Some("tab") => Some(b'\t'),
            Some(d) if d.len() == 1 && d != "\"" && d != "\n" && d != "\r" => Some(d.as_bytes()[0]),
            Some(d) => {
                return Err(Error::invalid(
                    "delimiter",
                    format!("delimiter {d:?} must be one character (or \\t)"),
                ));
            }
        };
        let encoding = match self
            .encoding
            .as_deref()
            .map(|e| e.trim().to_ascii_lowercase())
        {
            None => None,
            Some(e) if encoding_for(&e).is_some() => Some(e),
            Some(e) => {
                return Err(Error::invalid(
                    "encoding",
                    format!(
                        "encoding {e:?} is not supported; use utf-8, utf-16, windows-1252 or iso-8859-1"
                    ),
                ));
            }
        };
        let sheet = match self.sheet.as_deref() {
            None => None,
            Some(s) if !s.is_empty() && s.chars().count() <= 255 => Some(s.to_string()),
            Some(_) => {
                return Err(Error::invalid(
                    "sheet",
                    "sheet must name a sheet (1 to 255 characters)",
                ));
            }
        };
        let mapping = match self.mapping.as_deref().map(str::trim) {
            None | Some("") => None,
            Some(m) if m == "none" || (m.starts_with("map_") && m.len() <= 64) => {
                Some(m.to_string())
            }
            Some(_) => {
                return Err(Error::invalid(
                    "mapping",
                    "mapping must be `none` or the id of a saved mapping (`map_…`, see GET /api/modules/{module}/mappings)",
                ));
            }
        };
        Ok(JobOptions {
            delimiter,
            reject_unknown_columns: self.unknown_columns == Some(UnknownColumns::Reject),
            encoding,
            sheet,
            mapping,
        })
    }
}

/// What the client said about the file it sends.
#[derive(Debug, Clone)]
pub struct Declaration {
    /// The format its type names (or "detect from the bytes").
    pub declared: Declared,
    /// The `charset` of its type, when it names an encoding the service reads.
    pub charset: Option<String>,
    /// Its name (last path segment, no control characters), if given.
    pub name: Option<String>,
}

impl Declaration {
    /// The format of a file sent as the body itself, not a form (a
    /// workbook; the console's uploads): `None` to tell it from its bytes.
    pub fn body_format(&self) -> Result<Option<Format>> {
        match self.declared {
            Declared::Format(f) => Ok(Some(f)),
            Declared::Sniff => Ok(None),
            Declared::Multipart => Err(Error::BadRequest(
                "send the file itself as the body (its type, or application/octet-stream), \
                 not a form"
                    .into(),
            )),
        }
    }

    /// From the request's `Content-Type` and `Content-Disposition`, as
    /// `header` gives them by (lowercase) name.
    /// [`Error::UnsupportedType`] for a type the service does not read.
    pub fn from_headers<'h>(header: impl Fn(&str) -> Option<&'h str>) -> Result<Self> {
        let disposition = header("content-disposition");
        let ct = header("content-type").unwrap_or("");
        let essence = essence(ct);
        let declared =
            Format::from_content_type(&essence).ok_or(Error::UnsupportedType(essence))?;
        let charset = ct
            .split(';')
            .skip(1)
            .find_map(|p| p.trim().strip_prefix("charset="))
            .map(|c| c.trim_matches('"').to_ascii_lowercase())
            .filter(|c| encoding_for(c).is_some());
        let name = disposition.and_then(|cd| {
            let name = cd
                .split(';')
                .find_map(|p| p.trim().strip_prefix("filename="))?;
            clean_name(name.trim_matches('"'))
        });
        Ok(Declaration {
            declared,
            charset,
            name,
        })
    }
}

/// The essence of a `Content-Type` value: lowercase, without parameters.
fn essence(content_type: &str) -> String {
    content_type
        .split(';')
        .next()
        .unwrap_or("")
        .trim()
        .to_ascii_lowercase()
}

/// The format of a multipart part: its type, else its file name's
/// extension, else (`None`) its bytes.
pub fn part_format(content_type: Option<&str>, name: Option<&str>) -> Result<Option<Format>> {
    let by_name = name.and_then(Format::from_file_name);
    match content_type.map(essence) {
        None => Ok(by_name),
        Some(t) => match Format::from_content_type(&t) {
            Some(Declared::Format(f)) => Ok(Some(f)),
            Some(Declared::Sniff) => Ok(by_name),
            // A browser labels files by the desktop's associations; a known
            // extension is a better witness than an odd type.
            _ => by_name.map(Some).ok_or(Error::UnsupportedType(t)),
        },
    }
}

/// Only the last path segment of a client's file name, without control
/// characters (a NUL cannot be stored), and not too long.
pub fn clean_name(name: &str) -> Option<String> {
    let name = name.rsplit(['/', '\\']).next().unwrap_or(name);
    Some(name.chars().filter(|c| !c.is_control()).take(255).collect())
        .filter(|n: &String| !n.is_empty())
}

/// The `Idempotency-Key`, checked (1 to 255 visible ASCII characters).
pub fn idempotency_key(raw: Option<&[u8]>) -> Result<Option<String>> {
    let Some(raw) = raw else { return Ok(None) };
    match std::str::from_utf8(raw) {
        Ok(k)
            if !k.is_empty()
                && k.len() <= 255
                && k.bytes().all(|b| b.is_ascii_graphic() || b == b' ') =>
        {
            Ok(Some(k.to_string()))
        }
        _ => Err(Error::invalid(
            "Idempotency-Key",
            "Idempotency-Key must be 1 to 255 visible ASCII characters",
        )),
    }
}

/// An upload, as a front door received it.
pub struct Upload<'a> {
    pub module: &'a str,
    pub mode: Mode,
    pub on_error: OnError,
    pub options: JobOptions,
    /// The file's format: declared, or `None` to detect it from the bytes.
    pub format: Option<Format>,
    pub charset: Option<String>,
    pub file_name: Option<String>,
    pub idempotency_key: Option<String>,
}

/// An accepted upload: its job, and whether it was a retry of an earlier
/// request with the same `Idempotency-Key` (nothing new was created).
pub struct Accepted {
    pub job: Job,
    pub replayed: bool,
}

/// Streams a file into the store and records its job as `validating`.
/// With an `Idempotency-Key` seen before from the same key within 24 hours,
/// the same request answers with its first job and creates nothing; a
/// different request is [`Error::IdempotencyReused`].
pub async fn upload<S, E>(app: &App, actor: &KeyRecord, up: Upload<'_>, body: S) -> Result<Accepted>
where
    S: Stream<Item = std::result::Result<bytes::Bytes, E>>,
    E: std::fmt::Display,
{
    let module = target(app, actor, up.module)?;
    app.db.room(app.settings.disk_reserve_bytes).await?;
    let mapping_applied = named_mapping(app, module, &up.options).await?;
    let stored = store_body(app, body, app.settings.limits.body_bytes).await?;
    let format = match up.format {
        Some(f) => f.refine(&stored.prefix),
        None => Format::sniff(&stored.prefix),
    };
    let mut options = up.options;
    if format == Format::Csv && options.encoding.is_none() {
        options.encoding = up.charset;
    }
    let now = store::now();
    let new = NewJob {
        module: Some(module.key.clone()),
        table: module.table.clone(),
        mode: up.mode,
        on_error: up.on_error,
        options,
        simulated: app.settings.simulate,
        file: FileInfo {
            name: up.file_name,
            format,
            bytes: stored.bytes as i64,
            sha256: stored.sha256.clone(),
        },
        submitter: actor.id.clone(),
        mapping_applied,
    };
    let job = Job::start(new, now);
    let print = fingerprint(&job);
    let idem = up.idempotency_key.as_deref();
    let mut tx = match file_upload(app, actor, idem, &print, &job.id, &stored).await? {
        Filed::New(tx) => tx,
        Filed::Before(first) => return Ok(*first),
    };
    store::jobs::insert(&mut tx.conn(), &app.seal.key, &job).await?;
    tx.commit().await?;
    app.moves.job(&job.id);
    tracing::info!(job = %job.id, module = %module.key, bytes = stored.bytes, format = format.as_str(), "upload accepted");
    app.work.notify_one();
    Ok(Accepted {
        job,
        replayed: false,
    })
}

/// An upload's chunks filed under its hash, or the answer to a request
/// seen before.
pub(super) enum Filed {
    /// Filed, in this transaction, which records the new job next.
    New(store::Tx),
    /// The first job of a request with the same `Idempotency-Key`: nothing
    /// of this one is kept.
    Before(Box<Accepted>),
}

/// Claims the request's `Idempotency-Key`, when it has one, for job `job`
/// (`print`: what makes two requests the same) and files the stored
/// upload's chunks, in a transaction the caller records the job in. With
/// the key seen before, nothing of the upload is kept and the answer is
/// [`replayed_or_refused`]'s.
pub(super) async fn file_upload(
    app: &App,
    actor: &KeyRecord,
    idem: Option<&str>,
    print: &str,
    job: &crate::ids::JobId,
    stored: &StoredBody,
) -> Result<Filed> {
    let mut tx = app.db.begin().await?;
    if let Some(idem) = idem {
        let now = store::now();
        let expired = now - chrono::Duration::hours(IDEMPOTENCY_HOURS);
        let claim =
            store::idempotency::claim(&mut tx.conn(), &actor.id, idem, print, job, now, expired)
                .await?;
        if claim != Claim::New {
            tx.rollback().await?;
            blobs::discard(&mut app.db.acquire().await?.conn(), &stored.upload_id).await?;
            return Ok(Filed::Before(Box::new(
                replayed_or_refused(app, claim).await?,
            )));
        }
    }
    let (id, sha, bytes) = (&stored.upload_id, &stored.sha256, stored.bytes as i64);
    blobs::finish(&mut tx.conn(), id, sha, bytes).await?;
    Ok(Filed::New(tx))
}

/// What makes two uploads the same request: module, parameters and bytes.
fn fingerprint(job: &Job) -> String {
    hex::encode(Sha256::digest(format!(
        "{}|{}|{}|{}|{}",
        job.module.as_ref().map_or("", |m| m.as_str()),
        job.mode.as_str(),
        job.on_error.as_str(),
        serde_json::to_string(&job.options).unwrap_or_default(),
        job.file.sha256
    )))
}

/// The saved mapping `?mapping=map_…` names, as the upload applies it
/// (read now: deleting or replacing it later does not change this job);
/// a `422` naming `mapping` when the module has no such mapping.
async fn named_mapping(
    app: &App,
    module: &Module,
    options: &JobOptions,
) -> Result<Option<AppliedMapping>> {
    let Some(id) = options.mapping.as_deref().filter(|m| *m != "none") else {
        return Ok(None);
    };
    let mut c = app.db.acquire().await?;
    match store::mappings::get(&mut c.conn(), &module.key, id).await? {
        Some(saved) => Ok(Some(AppliedMapping {
            id: saved.id,
            mapping: saved.mapping,
            saved_by: Some(saved.created_by),
        })),
        None => Err(Error::invalid(
            "mapping",
            format!(
                "{} has no saved mapping {id}; see GET /api/modules/{}/mappings",
                module.key, module.key
            ),
        )),
    }
}

/// The answer to an upload whose `Idempotency-Key` was seen before.
async fn replayed_or_refused(app: &App, claim: Claim) -> Result<Accepted> {
    match claim {
        Claim::Replay(first) => {
            let job = super::jobs::find(app, &first).await?;
            tracing::info!(job = %job.id, "upload replayed (Idempotency-Key)");
            Ok(Accepted {
                job,
                replayed: true,
            })
        }
        Claim::Reused => Err(Error::IdempotencyReused),
        Claim::New => Err(Error::internal(
            "a new idempotency claim reached the replay answer",
        )),
    }
}

/// A body stored in chunks, not yet filed under its hash.
pub(super) struct StoredBody {
    pub(super) sha256: String,
    pub(super) bytes: u64,
    pub(super) upload_id: String,
    /// The first bytes, for detecting the format.
    pub(super) prefix: Vec<u8>,
}

/// How much of the body is kept for format detection.
const PREFIX: usize = 64 * 1024;

/// How long after its start a body may take to bring its next byte, when
/// `received` have come: it must average `body_min_rate` once
/// `body_grace` has passed, and end within `body_total` (API.md section
/// 10). A client that stops sending is cut off when its average falls
/// below the rate, not after a fixed silence.
fn body_time(received: u64, limits: &crate::config::Limits) -> std::time::Duration {
    let at_rate = std::time::Duration::from_secs_f64(
        (received + 1) as f64 / limits.body_min_rate.max(1) as f64,
    );
    at_rate.max(limits.body_grace).min(limits.body_total)
}

/// Receives a body in full, hashing it and checking it against `limit` as
/// it comes ([`Error::TooLarge`] at once, nothing kept) and packing its
/// chunks ([`Packer`]), then stores them; gives its SHA-256, size, upload
/// id and first bytes.
pub(super) async fn store_body<S, E>(app: &App, stream: S, limit: u64) -> Result<StoredBody>
where
    S: Stream<Item = std::result::Result<bytes::Bytes, E>>,
    E: std::fmt::Display,
{
    let mut hasher = Sha256::new();
    let mut prefix: Vec<u8> = Vec::new();
    let mut total = 0u64;
    let mut packer = Packer::default();
    let mut stream = std::pin::pin!(stream);
    let started = tokio::time::Instant::now();
    let limits = &app.settings.limits;
    loop {
        let deadline = started + body_time(total, limits);
        let Ok(next) = tokio::time::timeout_at(deadline, stream.next()).await else {
            return Err(Error::SlowBody {
                bytes: total,
                seconds: started.elapsed().as_secs(),
                min_rate: limits.body_min_rate,
                grace: limits.body_grace.as_secs(),
                total: limits.body_total.as_secs(),
            });
        };
        let Some(piece) = next else { break };
        let piece =
            piece.map_err(|e| Error::BadRequest(format!("the body could not be read: {e}")))?;
        total += piece.len() as u64;
        if total > limit {
            return Err(Error::TooLarge { limit });
        }
        hasher.update(&piece);
        if prefix.len() < PREFIX {
            let take = piece.len().min(PREFIX - prefix.len());
            prefix.extend_from_slice(&piece[..take]);
        }
        packer.push(&piece).await?;
    }
    if total == 0 {
        return Err(Error::EmptyBody);
    }
    let kept = packer.finish().await?;
    // Only now, with every byte here, a connection. The chunks go in one
    // transaction that commits without waiting for the disk: the job that
    // needs them commits after them and waits for both, and chunks a crash
    // leaves without a job are swept ([`blobs::purge_orphans`]). On
    // PostgreSQL a commit per chunk would wait for the disk each time, 15 ms
    // of a 17 MB upload. A failure rolls them all back.
    let upload_id = ulid::Ulid::generate().to_string();
    let mut tx = app.db.begin().await?;
    store::relax_durability(&mut tx.conn()).await?;
    kept.store(&mut tx.conn(), &upload_id).await?;
    tx.commit().await?;
    Ok(StoredBody {
        sha256: hex::encode(hasher.finalize()),
        bytes: total,
        upload_id,
        prefix,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parameters_become_reader_options() {
        let p = Params {
            delimiter: Some("tab".into()),
            encoding: Some(" Windows-1252 ".into()),
            sheet: Some("Data".into()),
            unknown_columns: Some(UnknownColumns::Reject),
            ..Params::default()
        };
        let o = p.options().unwrap();
        assert_eq!(o.delimiter, Some(b'\t'));
        assert_eq!(o.encoding.as_deref(), Some("windows-1252"));
        assert_eq!(o.sheet.as_deref(), Some("Data"));
        assert!(o.reject_unknown_columns);
        for (p, name) in [
            (
                Params {
                    delimiter: Some("ab".into()),
                    ..Params::default()
                },
                "delimiter",
            ),
            (
                Params {
                    encoding: Some("ebcdic".into()),
                    ..Params::default()
                },
                "encoding",
            ),
            (
                Params {
                    sheet: Some(String::new()),
                    ..Params::default()
                },
                "sheet",
            ),
        ] {
            assert!(
                matches!(p.options(), Err(Error::Invalid { parameter, .. }) if parameter == name)
            );
        }
    }

    #[test]
    fn a_declaration_names_the_format_charset_and_a_clean_name() {
        let d = Declaration::from_headers(|name| match name {
            "content-type" => Some("text/csv; charset=\"ISO-8859-1\""),
            "content-disposition" => {
                Some("attachment; filename=\"C:\\\\exports\\\\pelanggan.csv\"")
            }
            _ => None,
        })
        .unwrap();
        assert_eq!(d.declared, Declared::Format(Format::Csv));
        assert_eq!(d.charset.as_deref(), Some("iso-8859-1"));
        assert_eq!(d.name.as_deref(), Some("pelanggan.csv"));
        assert!(matches!(
            Declaration::from_headers(|n| (n == "content-type").then_some("image/png")),
            Err(Error::UnsupportedType(t)) if t == "image/png"
        ));
        assert_eq!(
            Declaration::from_headers(|_| None).unwrap().declared,
            Declared::Sniff
        );
    }

    #[test]
    fn idempotency_keys_are_visible_ascii() {
        assert_eq!(idempotency_key(None).unwrap(), None);
        assert_eq!(
            idempotency_key(Some(b"order 42")).unwrap().as_deref(),
            Some("order 42")
        );
        assert!(idempotency_key(Some(b"")).is_err());
        assert!(idempotency_key(Some("caf\u{e9}".as_bytes())).is_err());
        assert!(idempotency_key(Some(&[b'a'; 256])).is_err());
    }
}
