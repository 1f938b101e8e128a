//! `importgate export`: a module's rows out of a running service (API.md
//! section 15), streamed to standard output or a file as they arrive, with
//! a progress bar on standard error. Exit status: 0 when the whole export
//! arrived, 1 when it broke off, 2 on a refused request.

use std::path::Path;
use std::time::Duration;

use futures::StreamExt;
use tokio::io::AsyncWriteExt;

use super::{bar, refusal};

/// What to export and where from.
pub struct Export<'a> {
    pub service: super::Service<'a>,
    pub module: &'a str,
    /// `csv`, `xlsx`, `json` or `ndjson`; the service's default when none.
    pub format: Option<&'a str>,
    /// `COLUMN=VALUE` filters, combined with AND.
    pub wheres: &'a [String],
    /// Only the rows this committed job wrote.
    pub job: Option<&'a str>,
    pub limit: Option<u64>,
    /// A file to write; standard output when none.
    pub output: Option<&'a Path>,
}

/// The export's query string; a filter without `=` is refused before
/// anything is sent.
fn query(e: &Export<'_>) -> Result<String, String> {
    let mut pairs: Vec<(String, String)> = Vec::new();
    if let Some(f) = e.format {
        pairs.push(("format".into(), f.into()));
    }
    for w in e.wheres {
        let (column, value) = w
            .split_once('=')
            .ok_or_else(|| format!("--where {w:?} is not COLUMN=VALUE"))?;
        pairs.push((format!("where.{}", column.trim()), value.into()));
    }
    if let Some(j) = e.job {
        pairs.push(("job".into(), j.into()));
    }
    if let Some(l) = e.limit {
        pairs.push(("limit".into(), l.to_string()));
    }
    serde_urlencoded::to_string(&pairs).map_err(|e| e.to_string())
}

/// Runs the export; returns the process exit status.
pub async fn run(e: Export<'_>) -> anyhow::Result<i32> {
    let query = match query(&e) {
        Ok(q) => q,
        Err(why) => {
            eprintln!("refused: {why}");
            return Ok(2);
        }
    };
    let base = e.service.base();
    let resp = reqwest::Client::new()
        .get(format!("{base}/api/modules/{}/export?{query}", e.module))
        .header("X-API-Key", e.service.key);
    let resp = super::send(base, resp).await?;
    let status = resp.status();
    if !status.is_success() {
        let problem = resp.json().await.unwrap_or(serde_json::Value::Null);
        return Ok(refusal(status, &problem));
    }
    let progress = bar(0, "exporting {bytes} {binary_bytes_per_sec} {spinner}");
    progress.enable_steady_tick(Duration::from_millis(120));
    let written = match e.output {
        Some(path) => to_file(resp, path, &progress).await,
        None => copy(resp, &mut tokio::io::stdout(), &progress).await,
    };
    progress.finish_and_clear();
    match written {
        Ok(bytes) => {
            eprintln!("exported {bytes} bytes of {}", e.module);
            Ok(0)
        }
        Err(why) => {
            eprintln!("the export broke off: {why:#}");
            Ok(1)
        }
    }
}

/// Writes the body next to `path` and moves it there once whole, so that
/// a broken export leaves no half file under the name asked for.
async fn to_file(
    resp: reqwest::Response,
    path: &Path,
    progress: &indicatif::ProgressBar,
) -> anyhow::Result<u64> {
    let name = path
        .file_name()
        .and_then(|n| n.to_str())
        .unwrap_or("export");
    let part = path.with_file_name(format!(".{name}.part"));
    let mut file = tokio::fs::File::create(&part).await?;
    let copied = copy(resp, &mut file, progress).await;
    let done = match copied {
        Ok(bytes) => file.sync_all().await.map(|()| bytes).map_err(Into::into),
        Err(e) => Err(e),
    };
    drop(file);
    match done {
        Ok(bytes) => {
            tokio::fs::rename(&part, path).await?;
            Ok(bytes)
        }
        Err(e) => {
            let _ = tokio::fs::remove_file(&part).await;
            Err(e)
        }
    }
}

/// Copies the body as it arrives; the bytes written.
async fn copy(
    resp: reqwest::Response,
    out: &mut (impl tokio::io::AsyncWrite + Unpin),
    progress: &indicatif::ProgressBar,
) -> anyhow::Result<u64> {
    let mut body = resp.bytes_stream();
    let mut bytes = 0u64;
    while let Some(chunk) = body.next().await {
        let chunk = chunk?;
        out.write_all(&chunk).await?;
        bytes += chunk.len() as u64;
        progress.set_position(bytes);
    }
    out.flush().await?;
    Ok(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn export<'a>(wheres: &'a [String]) -> Export<'a> {
        Export {
            service: crate::client::Service {
                url: "http://x",
                key: "k",
            },
            module: "orders",
            format: Some("xlsx"),
            wheres,
            job: None,
            limit: Some(10),
            output: None,
        }
    }

    #[test]
    fn filters_become_where_parameters_encoded() {
        let wheres = ["city=Bandung Barat".to_string(), "note=a=b&c".to_string()];
        assert_eq!(
            query(&export(&wheres)).unwrap(),
            "format=xlsx&where.city=Bandung+Barat&where.note=a%3Db%26c&limit=10"
        );
        let bad = ["city".to_string()];
        assert!(query(&export(&bad)).unwrap_err().contains("COLUMN=VALUE"));
    }
}
