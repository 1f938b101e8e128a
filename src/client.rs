//! `importgate import`: a command-line client for the upload endpoint, for
//! integrators' scripts and for people who prefer a terminal. It streams the
//! file with a progress bar, waits for validation (`--wait`), and prints the
//! job and its first errors. Exit status: 0 when the job waits at the gate
//! (or is further along), 1 when it is invalid or failed, 2 on a refused
//! request. [`events`]: `importgate events tail`, following the event
//! stream. [`revise`]: `importgate revise`, a revision of a job.
//! [`export`]: `importgate export`, a module's rows out to a file.
//! [`rules`]: `importgate rules`, a module's rules shown and proposed.
//! [`jobs`]: `importgate jobs`, a job followed to the gate and through it.
//! [`summary`]: the few lines a job is printed as.

pub mod events;
pub mod export;
pub mod jobs;
pub mod revise;
pub mod rules;
pub mod summary;

use std::path::Path;

use anyhow::Context as _;
use futures::StreamExt;
use indicatif::{ProgressBar, ProgressStyle};
use serde_json::Value;
use tokio_util::io::ReaderStream;

/// A running service and the key to call it with.
#[derive(Clone, Copy)]
pub struct Service<'a> {
    pub url: &'a str,
    pub key: &'a str,
}

impl Service<'_> {
    /// The URL without a trailing slash, so that paths after it are
    /// single-slashed.
    pub fn base(&self) -> &str {
        self.url.trim_end_matches('/')
    }
}

/// What to upload and where.
pub struct Upload<'a> {
    pub service: Service<'a>,
    /// The module; `None` for a workbook (API.md section 16), whose
    /// sheets name their modules.
    pub module: Option<&'a str>,
    /// A workbook's `SHEET=MODULE` mappings (`sheets.<sheet>=<module>`).
    pub sheets: &'a [String],
    pub file: &'a Path,
    pub mode: Option<&'a str>,
    pub on_error: Option<&'a str>,
    /// `none`, or a saved mapping's id (`map_…`).
    pub mapping: Option<&'a str>,
    pub wait: bool,
    /// The job as JSON rather than as a summary.
    pub json: bool,
}

/// The content type for a file, from its extension (the server sniffs the
/// bytes when it is unknown).
pub(crate) fn content_type(file: &Path) -> &'static str {
    match file
        .extension()
        .and_then(|e| e.to_str())
        .map(str::to_ascii_lowercase)
        .as_deref()
    {
        Some("csv" | "txt") => "text/csv",
        Some("xlsx") => "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet",
        Some("xls") => "application/vnd.ms-excel",
        Some("ods") => "application/vnd.oasis.opendocument.spreadsheet",
        Some("json") => "application/json",
        Some("ndjson" | "jsonl") => "application/x-ndjson",
        _ => "application/octet-stream",
    }
}

fn bar(len: u64, template: &str) -> ProgressBar {
    let bar = ProgressBar::new(len);
    if let Ok(style) = ProgressStyle::with_template(template) {
        bar.set_style(style.progress_chars("=> "));
    }
    bar
}

/// Runs the upload; returns the process exit status.
pub async fn run(u: Upload<'_>) -> anyhow::Result<i32> {
    let base = u.service.base();
    let file = tokio::fs::File::open(u.file)
        .await
        .with_context(|| format!("cannot read {}", u.file.display()))?;
    let len = file.metadata().await?.len();
    let upload = bar(len, "uploading {bytes:>10}/{total_bytes} [{bar:30}] {eta}");
    let counted = {
        let upload = upload.clone();
        ReaderStream::new(file).map(move |chunk| {
            if let Ok(c) = &chunk {
                upload.inc(c.len() as u64);
            }
            chunk
        })
    };
    let mut query: Vec<(&str, &str)> = Vec::new();
    if let Some(m) = u.mode {
        query.push(("mode", m));
    }
    if let Some(e) = u.on_error {
        query.push(("on_error", e));
    }
    if let Some(m) = u.mapping {
        query.push(("mapping", m));
    }
    let mut mapped = Vec::new();
    for pair in u.sheets {
        let Some((sheet, module)) = pair.split_once('=') else {
            anyhow::bail!("--sheet {pair:?}: write it SHEET=MODULE (--sheet Produk=products)");
        };
        mapped.push((format!("sheets.{sheet}"), module));
    }
    query.extend(mapped.iter().map(|(k, v)| (k.as_str(), *v)));
    let query = serde_urlencoded::to_string(&query)?;
    let path = match u.module {
        Some(module) => format!("/api/import/{module}"),
        None => "/api/import".to_string(),
    };
    let name = u
        .file
        .file_name()
        .and_then(|n| n.to_str())
        .unwrap_or("upload");
    let client = reqwest::Client::new();
    let resp = client
        .post(format!("{base}{path}?{query}"))
        .header("X-API-Key", u.service.key)
        .header("Content-Type", content_type(u.file))
        .header("Content-Length", len)
        .header(
            "Content-Disposition",
            format!("attachment; filename=\"{}\"", name.replace('"', "")),
        )
        .body(reqwest::Body::wrap_stream(counted));
    let resp = send(base, resp).await?;
    upload.finish_and_clear();
    report(&client, u.service, resp, u.wait, u.json).await
}

/// Sends a request; a service that cannot be reached is said as such,
/// with the URL tried and how to give another.
pub(crate) async fn send(
    base: &str,
    request: reqwest::RequestBuilder,
) -> anyhow::Result<reqwest::Response> {
    request.send().await.map_err(|e| {
        if e.is_connect() {
            anyhow::anyhow!(
                "cannot reach importgate at {base}: is the service running there? \
                 (--url or IMPORTGATE_URL gives another address)"
            )
        } else {
            e.into()
        }
    })
}

/// Prints a refused request's problem, naming the member at fault; the
/// exit status of a refused request.
pub(crate) fn refusal(status: reqwest::StatusCode, problem: &Value) -> i32 {
    let member = problem["parameter"]
        .as_str()
        .map(|p| format!(" [{p}]"))
        .unwrap_or_default();
    eprintln!(
        "refused ({status}){member}: {}",
        problem["detail"].as_str().unwrap_or("")
    );
    2
}

/// Prints the job a request created (after its validation, with `wait`):
/// a summary with its first errors, or the job as JSON with `json`; the
/// process exit status.
pub(crate) async fn report(
    client: &reqwest::Client,
    s: Service<'_>,
    resp: reqwest::Response,
    wait: bool,
    json: bool,
) -> anyhow::Result<i32> {
    let status = resp.status();
    let mut job: Value = resp.json().await.unwrap_or(Value::Null);
    if !status.is_success() {
        return Ok(refusal(status, &job));
    }
    if wait {
        job = jobs::until_rested(client, s, job, false).await?;
    }
    summary::print(client, s, &job, json).await
}
