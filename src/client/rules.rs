//! `importgate rules`: a module's rules from a terminal (API.md section
//! 14) — the set in force or at a version (`show`), a new set proposed
//! from a JSON file (`propose`), which then waits at the gate for another
//! person, and what a proposal would do to a job's rows (`try`). Exit status 0, or 2 on a refused request (a malformed rule is
//! named with what is wrong with it).

use std::path::Path;

use anyhow::Context;
use serde_json::{Value, json};

use super::Service;

/// Prints a refusal as `importgate import` does; the exit status.
async fn refused(resp: reqwest::Response) -> i32 {
    let status = resp.status();
    let body: Value = resp.json().await.unwrap_or(Value::Null);
    super::refusal(status, &body)
}

/// One rule as a line: its id, then what it does.
pub fn line(rule: &Value) -> String {
    let id = rule["id"].as_str().unwrap_or("?");
    let text = |k: &str| rule[k].as_str().unwrap_or("").to_string();
    let what = if let Some(n) = rule["normalize"].as_str() {
        format!("normalize {} with {n}", text("column"))
    } else if let Some(check) = rule["check"].as_str() {
        let severity = rule["severity"].as_str().unwrap_or("error");
        format!("check ({severity}) {check}  — {}", text("message"))
    } else if let Some(cols) = rule["unique"].as_array() {
        let severity = rule["severity"].as_str().unwrap_or("error");
        let cols: Vec<&str> = cols.iter().filter_map(Value::as_str).collect();
        format!("unique ({severity}) {}", cols.join(", "))
    } else {
        rule.to_string()
    };
    format!("{id:<24} {what}")
}

/// `rules show MODULE [--version N]`.
pub async fn show(s: Service<'_>, module: &str, version: Option<u32>) -> anyhow::Result<i32> {
    let mut url = format!("{}/api/modules/{module}/rules", s.base());
    if let Some(v) = version {
        url.push_str(&format!("?version={v}"));
    }
    let resp = reqwest::Client::new().get(url).header("X-API-Key", s.key);
    let resp = super::send(s.base(), resp).await?;
    if !resp.status().is_success() {
        return Ok(refused(resp).await);
    }
    let set: Value = resp.json().await?;
    let by = |k: &str| set[k]["display"].as_str().unwrap_or("").to_string();
    match set["proposal"].as_str() {
        Some(p) => println!(
            "{module} rules, version {}: proposed by {}, approved by {} at {} ({p})",
            set["version"],
            by("proposed_by"),
            by("approved_by"),
            set["approved_at"].as_str().unwrap_or("")
        ),
        None => println!("{module} rules, version {} (the catalog's)", set["version"]),
    }
    let rules = set["rules"].as_array().cloned().unwrap_or_default();
    if rules.is_empty() {
        println!("  no rules");
    }
    for rule in &rules {
        println!("  {}", line(rule));
    }
    Ok(0)
}

/// `rules propose MODULE FILE [--comment C]`: FILE holds the whole new
/// set, a JSON array of rules (or `{"rules": [...]}`).
pub async fn propose(
    s: Service<'_>,
    module: &str,
    file: &Path,
    comment: Option<&str>,
) -> anyhow::Result<i32> {
    let text =
        std::fs::read_to_string(file).with_context(|| format!("reading {}", file.display()))?;
    let parsed: Value = serde_json::from_str(&text)
        .with_context(|| format!("{}: a rule set is a JSON array of rules", file.display()))?;
    let rules = match parsed {
        Value::Object(mut o) if o.contains_key("rules") => o.remove("rules").unwrap_or_default(),
        other => other,
    };
    let resp = reqwest::Client::new()
        .post(format!("{}/api/modules/{module}/rules", s.base()))
        .header("X-API-Key", s.key)
        .json(&json!({"rules": rules, "comment": comment}));
    let resp = super::send(s.base(), resp).await?;
    if !resp.status().is_success() {
        return Ok(refused(resp).await);
    }
    let p: Value = resp.json().await?;
    println!(
        "{} proposes version {} of the {module} rules; it waits for another person's approval",
        p["id"].as_str().unwrap_or("?"),
        p["version"]
    );
    for (mark, list) in [("+", "added"), ("-", "removed")] {
        for rule in p["diff"][list].as_array().into_iter().flatten() {
            println!("  {mark} {}", line(rule));
        }
    }
    for c in p["diff"]["changed"].as_array().into_iter().flatten() {
        println!("  ~ {}", line(&c["now"]));
    }
    Ok(0)
}

/// `rules try PROPOSAL JOB`: what a proposal would do to a job's rows,
/// the job unchanged.
pub async fn try_on(s: Service<'_>, proposal: &str, job: &str) -> anyhow::Result<i32> {
    let resp = reqwest::Client::new()
        .post(format!("{}/api/rule-proposals/{proposal}/try", s.base()))
        .header("X-API-Key", s.key)
        .json(&json!({"job": job}));
    let resp = super::send(s.base(), resp).await?;
    if !resp.status().is_success() {
        return Ok(refused(resp).await);
    }
    let t: Value = resp.json().await?;
    for side in ["now", "proposed"] {
        let c = &t[side]["counts"];
        println!(
            "version {:<3} rows {}  valid {}  errors {}  warnings {}  normalized {}",
            t[side]["version"], c["rows"], c["valid"], c["errors"], c["warnings"], c["normalized"]
        );
    }
    for (title, list, errors) in [
        ("newly failing", "newly_failing", "errors_proposed"),
        ("newly passing", "newly_passing", "errors_now"),
    ] {
        for r in t[list].as_array().into_iter().flatten() {
            let why: Vec<&str> = (r[errors].as_array().into_iter().flatten())
                .filter_map(|e| e["message"].as_str())
                .collect();
            println!("{title:<14} row {}: {}", r["row"], why.join("; "));
        }
    }
    for r in t["newly_normalized"].as_array().into_iter().flatten() {
        for n in r["normalized"].as_array().into_iter().flatten() {
            let text = |k: &str| n[k].as_str().unwrap_or("").to_string();
            println!(
                "normalized     row {}, {}: {} → {}",
                r["row"],
                text("column"),
                text("was"),
                text("now")
            );
        }
    }
    Ok(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_kind_of_rule_reads_as_one_line() {
        let n = json!({"id": "wa", "column": "wa_number", "normalize": "phone_id"});
        assert!(line(&n).ends_with("normalize wa_number with phone_id"));
        let c = json!({"id": "q", "check": "row.qty > 0", "message": "qty", "columns": ["qty"], "severity": "warning"});
        assert!(line(&c).contains("check (warning) row.qty > 0  — qty"));
        let u = json!({"id": "u", "unique": ["a", "b"], "severity": "error"});
        assert!(line(&u).ends_with("unique (error) a, b"));
    }
}
