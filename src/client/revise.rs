//! `importgate revise`: a revision of a job from a terminal (API.md
//! section 11) — a mapping, fixed cells and excluded rows given as flags,
//! or a corrected errored-rows file sent as it is. Prints the new job like
//! `importgate import` does, with the same exit status.

use std::collections::BTreeMap;
use std::path::Path;

use anyhow::{Context, bail};
use serde_json::{Value, json};

/// What to revise and how.
pub struct Revise<'a> {
    pub service: super::Service<'a>,
    pub job: &'a str,
    /// A JSON file: `{"file header": "column" | null}`.
    pub mapping_file: Option<&'a Path>,
    /// `HEADER=COLUMN` (an empty column leaves the header out).
    pub map: &'a [String],
    /// `ROW:COLUMN=VALUE` (an empty value empties the cell).
    pub fix: &'a [String],
    pub exclude: &'a [u64],
    pub comment: Option<&'a str>,
    pub remember_mapping: bool,
    /// A corrected errored-rows file (CSV or XLSX) sent as the body.
    pub file: Option<&'a Path>,
    pub wait: bool,
    /// The job as JSON rather than as a summary.
    pub json: bool,
}

/// `HEADER=COLUMN`, split at the last `=` (a header may hold one).
fn map_pair(text: &str) -> anyhow::Result<(String, Option<String>)> {
    let Some((header, column)) = text.rsplit_once('=') else {
        bail!("--map {text:?}: write HEADER=COLUMN (HEADER= leaves the column out)");
    };
    let column = column.trim();
    Ok((
        header.to_string(),
        (!column.is_empty()).then(|| column.to_string()),
    ))
}

/// `ROW:COLUMN=VALUE`, split at the first `:` and the first `=` after it
/// (a value may hold either).
fn fix_cell(text: &str) -> anyhow::Result<Value> {
    let parsed = text.split_once(':').and_then(|(row, rest)| {
        let (column, value) = rest.split_once('=')?;
        Some((row.trim().parse::<u64>().ok()?, column.trim(), value))
    });
    let Some((row, column, value)) = parsed else {
        bail!("--fix {text:?}: write ROW:COLUMN=VALUE, e.g. 4:city=Bandung");
    };
    let value = (!value.is_empty()).then_some(value);
    Ok(json!({"row": row, "column": column, "value": value}))
}

/// The JSON body of a revision given by flags.
fn body(r: &Revise<'_>) -> anyhow::Result<Value> {
    let mut mapping: BTreeMap<String, Option<String>> = match r.mapping_file {
        Some(path) => {
            let text = std::fs::read_to_string(path)
                .with_context(|| format!("reading {}", path.display()))?;
            serde_json::from_str(&text).with_context(|| {
                format!(
                    "{}: a mapping is a JSON object of file headers to columns or null",
                    path.display()
                )
            })?
        }
        None => BTreeMap::new(),
    };
    for m in r.map {
        let (header, column) = map_pair(m)?;
        mapping.insert(header, column);
    }
    let fixes = r
        .fix
        .iter()
        .map(|f| fix_cell(f))
        .collect::<anyhow::Result<Vec<_>>>()?;
    let mut body = json!({});
    if !mapping.is_empty() {
        body["mapping"] = json!(mapping);
    }
    if !fixes.is_empty() {
        body["fixes"] = json!(fixes);
    }
    if !r.exclude.is_empty() {
        body["exclude"] = json!(r.exclude);
    }
    if let Some(c) = r.comment {
        body["comment"] = json!(c);
    }
    if r.remember_mapping {
        body["remember_mapping"] = json!(true);
    }
    Ok(body)
}

/// Sends the revision; returns the process exit status.
pub async fn run(r: Revise<'_>) -> anyhow::Result<i32> {
    let base = r.service.base();
    let client = reqwest::Client::new();
    let request = client
        .post(format!("{base}/api/jobs/{}/revisions", r.job))
        .header("X-API-Key", r.service.key);
    let request = match r.file {
        Some(path) => {
            let bytes = tokio::fs::read(path)
                .await
                .with_context(|| format!("reading {}", path.display()))?;
            request
                .header("Content-Type", super::content_type(path))
                .body(bytes)
        }
        None => request.json(&body(&r)?),
    };
    let resp = super::send(base, request).await?;
    super::report(&client, r.service, resp, r.wait, r.json).await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flags_read_as_a_person_writes_them() {
        assert_eq!(
            map_pair("No. WA=wa_number").unwrap(),
            ("No. WA".into(), Some("wa_number".into()))
        );
        assert_eq!(map_pair("Catatan=").unwrap(), ("Catatan".into(), None));
        assert!(map_pair("Catatan").is_err());
        assert_eq!(
            fix_cell("4:city=Bandung=Barat").unwrap(),
            json!({"row": 4, "column": "city", "value": "Bandung=Barat"})
        );
        assert_eq!(
            fix_cell("7:notes=").unwrap(),
            json!({"row": 7, "column": "notes", "value": null})
        );
        for bad in ["city=Bandung", "x:city=1", "4:city"] {
            assert!(fix_cell(bad).is_err(), "{bad}");
        }
    }
}
