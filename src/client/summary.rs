//! A job as a terminal shows it: a few lines (state, file, counts, who,
//! the gate, the problem, the console's page of it, what comes next) and
//! its first errors, each naming its row and column. `--json` prints the
//! job as the API gives it instead, for scripts.

use serde_json::Value;

use super::Service;

/// How many errors a summary lists.
const FIRST_ERRORS: usize = 10;

/// The exit status a job gives a command: 1 when it is `invalid` or
/// `failed`, else 0.
pub fn status(job: &Value) -> i32 {
    match job["state"].as_str() {
        Some("invalid" | "failed") => 1,
        _ => 0,
    }
}

/// Prints `job`: a summary and its first errors, or with `json` the job
/// on standard output and its first errors on standard error. Returns
/// [`status`].
pub async fn print(
    client: &reqwest::Client,
    s: Service<'_>,
    job: &Value,
    json: bool,
) -> anyhow::Result<i32> {
    let errors = match job["counts"]["errors"].as_i64().unwrap_or(0) > 0 {
        true => first_errors(client, s, job).await?,
        false => Value::Null,
    };
    // A workbook's errors name their part (API.md section 16).
    let listed: Vec<String> = (errors["errors"].as_array().into_iter().flatten())
        .map(|e| {
            let part = e["part"]
                .as_str()
                .map(|p| format!("{p}: "))
                .unwrap_or_default();
            format!("  {part}{}", e["message"].as_str().unwrap_or(""))
        })
        .collect();
    let heading = match errors["total"].as_u64() {
        Some(total) if total as usize > listed.len() => {
            format!("errors ({total} in all, first {}):", listed.len())
        }
        Some(total) => format!("errors ({total}):"),
        None => String::new(),
    };
    if json {
        println!("{}", serde_json::to_string_pretty(job)?);
        if !listed.is_empty() {
            eprintln!("{heading}\n{}", listed.join("\n"));
        }
    } else {
        print!("{}", lines(job, s.base()));
        if !listed.is_empty() {
            println!("{heading}\n{}", listed.join("\n"));
        }
    }
    Ok(status(job))
}

async fn first_errors(
    client: &reqwest::Client,
    s: Service<'_>,
    job: &Value,
) -> anyhow::Result<Value> {
    let id = job["id"].as_str().unwrap_or_default();
    let url = format!("{}/api/jobs/{id}/errors?limit={FIRST_ERRORS}", s.base());
    let resp = super::send(s.base(), client.get(url).header("X-API-Key", s.key)).await?;
    Ok(resp.json().await.unwrap_or(Value::Null))
}

/// The summary of `job`, a line each, every line ended; `base` is the
/// service's URL, for the console's page of the job.
pub fn lines(job: &Value, base: &str) -> String {
    let text = |v: &Value| v.as_str().unwrap_or("").to_string();
    let id = text(&job["id"]);
    let state = text(&job["state"]);
    let parts = job["parts"].as_array().cloned().unwrap_or_default();
    let modules: Vec<&str> = (parts.iter())
        .filter_map(|p| p["module"].as_str())
        .collect();
    let target = match job["module"].as_str() {
        Some(m) => m.to_string(),
        None if !modules.is_empty() => format!("workbook: {}", modules.join(" + ")),
        None => "workbook".to_string(),
    };
    let mut out = format!(
        "{id}  {target}  {state}{}\n",
        if job["simulated"] == true {
            "  (simulation: no table is written)"
        } else {
            ""
        }
    );
    let mut line = |label: &str, value: String| {
        if !value.is_empty() {
            out.push_str(&format!("  {label:<10} {value}\n"));
        }
    };
    let file = &job["file"];
    line(
        "file",
        format!(
            "{} ({}, {})",
            text(&file["name"]),
            text(&file["format"]),
            bytes(file["bytes"].as_u64().unwrap_or(0))
        ),
    );
    line("rows", counts(&job["counts"]));
    for p in &parts {
        line(
            "part",
            format!(
                "{} (sheet {}): {}",
                text(&p["module"]),
                text(&p["sheet"]),
                counts(&p["counts"])
            ),
        );
    }
    line(
        "submitted",
        format!(
            "by {} at {}, {} mode, on error {}",
            text(&job["submitter"]["display"]),
            moment(&job["created_at"]),
            text(&job["mode"]),
            text(&job["on_error"])
        ),
    );
    if let Some(of) = job["revision_of"].as_str() {
        let r = &job["revision"];
        line(
            "revises",
            format!(
                "{of} (revision {}: {} fixes, {} rows left out)",
                r["number"], r["fixes"], r["excluded"]
            ),
        );
    }
    if let Some(by) = job["revised_as"].as_str() {
        line("revised", format!("as {by}, which took this job's place"));
    }
    if matches!(state.as_str(), "awaiting_approval" | "rollback_pending") {
        let g = &job["gate"];
        line(
            "gate",
            format!(
                "{} asked by {} at {}; waits for another person",
                text(&g["action"]),
                text(&g["requested_by"]["display"]),
                moment(&g["requested_at"])
            ),
        );
    }
    if let Some(d) = job["decisions"].as_array().and_then(|d| d.last()) {
        let comment = d["comment"].as_str().map(|c| format!(": {c:?}"));
        line(
            "decided",
            format!(
                "{} {} by {} at {}{}",
                text(&d["action"]),
                text(&d["decision"]),
                text(&d["by"]["display"]),
                moment(&d["at"]),
                comment.unwrap_or_default()
            ),
        );
    }
    if let Some(p) = job["problem"].as_object() {
        let code = p.get("code").and_then(Value::as_str).unwrap_or("");
        let detail = p.get("detail").and_then(Value::as_str).unwrap_or("");
        line("problem", format!("{code}: {detail}"));
    }
    for w in job["warnings"].as_array().into_iter().flatten() {
        line("warning", text(&w["message"]));
    }
    line("console", format!("{base}/jobs/{id}"));
    line("next", next(job));
    out
}

/// What a person does next with `job`, as a command.
fn next(job: &Value) -> String {
    let id = job["id"].as_str().unwrap_or("");
    let errors = job["counts"]["errors"].as_i64().unwrap_or(0);
    let problem = job["problem"]["code"].as_str().unwrap_or("");
    if let Some(by) = job["revised_as"].as_str() {
        return format!("importgate jobs show {by}");
    }
    match job["state"].as_str().unwrap_or("") {
        "awaiting_approval" => format!(
            "another person approves it: importgate jobs approve {id} (or reject, with --comment)"
        ),
        "rollback_pending" => format!(
            "a person other than the requester approves the rollback: importgate jobs approve {id}"
        ),
        "failed" if errors > 0 => format!(
            "fix the rows in a revision: importgate revise {id} --fix ROW:COLUMN=VALUE (or --exclude ROWS)"
        ),
        "invalid" if problem == "missing_columns" => format!(
            "map the file's headers in a revision: importgate revise {id} --map 'HEADER=COLUMN'"
        ),
        "validating" | "committing" | "rolling_back" => {
            format!("importgate jobs wait {id}")
        }
        _ => String::new(),
    }
}

/// The counts that say something: rows, then each action with rows in it.
fn counts(c: &Value) -> String {
    let n = |k: &str| c[k].as_i64().unwrap_or(0);
    let mut parts = Vec::new();
    for (key, word) in [
        ("insert", "insert"),
        ("update", "update"),
        ("unchanged", "unchanged"),
        ("errors", "in error"),
        ("excluded", "excluded"),
        ("warnings", "with warnings"),
        ("normalized", "normalized"),
    ] {
        if n(key) > 0 || matches!(key, "insert" | "errors") {
            parts.push(format!("{} {word}", n(key)));
        }
    }
    format!("{}: {}", n("rows"), parts.join(", "))
}

/// An RFC 3339 time as `YYYY-MM-DD HH:MM:SS UTC`.
fn moment(v: &Value) -> String {
    let t = v.as_str().unwrap_or("");
    match chrono::DateTime::parse_from_rfc3339(t) {
        Ok(t) => t
            .with_timezone(&chrono::Utc)
            .format("%Y-%m-%d %H:%M:%S UTC")
            .to_string(),
        Err(_) => t.to_string(),
    }
}

/// A size as people read it.
pub fn bytes(n: u64) -> String {
    match n {
        0..1_000 => format!("{n} B"),
        1_000..1_000_000 => format!("{:.1} kB", n as f64 / 1e3),
        _ => format!("{:.1} MB", n as f64 / 1e6),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_summary_names_the_state_the_counts_the_people_and_the_page() {
        let job = json!({
            "id": "job_1", "module": "customers", "state": "awaiting_approval",
            "mode": "upsert", "on_error": "skip", "simulated": false,
            "file": {"name": "pelanggan.csv", "format": "csv", "bytes": 18234},
            "submitter": {"display": "bu***i"},
            "counts": {"rows": 5, "insert": 3, "update": 1, "unchanged": 0, "errors": 1},
            "created_at": "2026-12-03T05:40:12.123Z",
            "decisions": [], "warnings": [], "problem": null
        });
        let text = lines(&job, "http://127.0.0.1:8080");
        assert!(
            text.starts_with("job_1  customers  awaiting_approval\n"),
            "{text}"
        );
        assert!(text.contains("pelanggan.csv (csv, 18.2 kB)"), "{text}");
        assert!(
            text.contains("5: 3 insert, 1 update, 1 in error\n"),
            "{text}"
        );
        assert!(
            text.contains("by bu***i at 2026-12-03 05:40:12 UTC, upsert mode"),
            "{text}"
        );
        assert!(
            text.contains("console    http://127.0.0.1:8080/jobs/job_1\n"),
            "{text}"
        );
        assert!(text.contains("importgate jobs approve job_1"), "{text}");
        assert!(!text.contains("problem"), "{text}");
    }
}
