//! `importgate jobs`: a job followed from a terminal to the gate and
//! through it (API.md sections 4 and 5) — the jobs a key may see
//! (`list`), one job (`show`), the gate's moves (`approve`, `reject`,
//! `cancel`, `rollback`), answered with the same four-eyes refusals as the
//! API, and `wait` for the work a job is in to end. Exit status: 0, 1 when
//! the job is `invalid` or `failed`, 2 on a refused request.

use std::time::Duration;

use serde_json::{Value, json};

use super::{Service, summary};

/// The states in which the service is working on a job.
const WORKING: [&str; 3] = ["validating", "committing", "rolling_back"];

/// The states in which a job waits for a person at the gate.
const AT_THE_GATE: [&str; 2] = ["awaiting_approval", "rollback_pending"];

/// Which jobs `list` shows.
pub struct Filter<'a> {
    pub module: Option<&'a str>,
    pub state: Option<&'a str>,
    /// Only the key's own uploads.
    pub mine: bool,
    pub limit: u32,
}

/// `jobs list`: the newest jobs first, a line each.
pub async fn list(s: Service<'_>, f: Filter<'_>, json: bool) -> anyhow::Result<i32> {
    let mut query = vec![("limit", f.limit.to_string())];
    query.extend(f.module.map(|m| ("module", m.to_string())));
    query.extend(f.state.map(|m| ("state", m.to_string())));
    if f.mine {
        query.push(("submitted_by", "me".to_string()));
    }
    let url = format!(
        "{}/api/jobs?{}",
        s.base(),
        serde_urlencoded::to_string(&query)?
    );
    let resp = super::send(
        s.base(),
        reqwest::Client::new().get(url).header("X-API-Key", s.key),
    )
    .await?;
    let Some(page) = answer(resp).await? else {
        return Ok(2);
    };
    if json {
        println!("{}", serde_json::to_string_pretty(&page)?);
        return Ok(0);
    }
    let jobs = page["jobs"].as_array().cloned().unwrap_or_default();
    if jobs.is_empty() {
        println!("no jobs");
    }
    for job in &jobs {
        println!("{}", row(job));
    }
    if page["next_cursor"].is_string() {
        println!("(more: a larger --limit shows further back)");
    }
    Ok(0)
}

/// A job as a line of `list`: when, id, module, state, rows and errors,
/// who, the file, and the job it revises.
fn row(job: &Value) -> String {
    let text = |v: &Value| v.as_str().unwrap_or("").to_string();
    let created = text(&job["created_at"]);
    let created = created.get(..16).unwrap_or(&created).replace('T', " ");
    let c = &job["counts"];
    let mut line = format!(
        "{created}  {:<28} {:<18} {:<18} {:>7} rows {:>6} errors  {:<8} {}",
        text(&job["id"]),
        job["module"].as_str().unwrap_or("-"),
        text(&job["state"]),
        c["rows"].as_i64().unwrap_or(0),
        c["errors"].as_i64().unwrap_or(0),
        text(&job["submitter"]["display"]),
        text(&job["file"]["name"]),
    );
    if let Some(of) = job["revision_of"].as_str() {
        line.push_str(&format!(
            "  (revision {} of {of})",
            job["revision"]["number"]
        ));
    }
    line
}

/// `jobs show JOB`.
pub async fn show(s: Service<'_>, id: &str, json: bool) -> anyhow::Result<i32> {
    let client = reqwest::Client::new();
    let Some(job) = get(&client, s, id, None).await? else {
        return Ok(2);
    };
    summary::print(&client, s, &job, json).await
}

/// A move at the gate, as the API names it.
#[derive(Debug, Clone, Copy)]
pub enum Move {
    Approve,
    Reject,
    Cancel,
    Rollback,
}

impl Move {
    fn path(self) -> &'static str {
        match self {
            Move::Approve => "approve",
            Move::Reject => "reject",
            Move::Cancel => "cancel",
            Move::Rollback => "rollback",
        }
    }
}

/// `jobs approve|reject|cancel|rollback JOB [--comment C] [--wait]`: the
/// move, then the job as it stands (with `wait`, once the work the move
/// starts has ended). A refusal (another person must decide, the job is
/// in another state, the key's role) is printed as the API words it.
pub async fn decide(
    s: Service<'_>,
    id: &str,
    what: Move,
    comment: Option<&str>,
    wait: bool,
    json: bool,
) -> anyhow::Result<i32> {
    let client = reqwest::Client::new();
    let url = format!("{}/api/jobs/{id}/{}", s.base(), what.path());
    let mut request = client
        .post(url)
        .header("X-API-Key", s.key)
        .json(&json!({ "comment": comment }));
    if wait {
        request = request.header("Prefer", "wait=30");
    }
    let resp = super::send(s.base(), request).await?;
    let Some(mut job) = answer(resp).await? else {
        return Ok(2);
    };
    if wait {
        job = until_rested(&client, s, job, false).await?;
    }
    summary::print(&client, s, &job, json).await
}

/// `jobs wait JOB [--decided]`: returns once the service's work on the job
/// has ended (with `decided`, once a person has decided at the gate too),
/// then prints the job.
pub async fn wait(s: Service<'_>, id: &str, decided: bool, json: bool) -> anyhow::Result<i32> {
    let client = reqwest::Client::new();
    let Some(job) = get(&client, s, id, None).await? else {
        return Ok(2);
    };
    let job = until_rested(&client, s, job, decided).await?;
    summary::print(&client, s, &job, json).await
}

/// `job`, read again until it is in no state the service works in (and,
/// with `decided`, none that waits at the gate), with a spinner on a
/// terminal showing the state and the rows read.
pub(crate) async fn until_rested(
    client: &reqwest::Client,
    s: Service<'_>,
    mut job: Value,
    decided: bool,
) -> anyhow::Result<Value> {
    let moving = |job: &Value| {
        let state = job["state"].as_str().unwrap_or("");
        WORKING.contains(&state) || (decided && AT_THE_GATE.contains(&state))
    };
    let id = job["id"].as_str().unwrap_or_default().to_string();
    let progress = super::bar(0, "{msg} {pos} rows {spinner}");
    progress.enable_steady_tick(Duration::from_millis(120));
    while moving(&job) {
        progress.set_message(job["state"].as_str().unwrap_or("").to_string());
        progress.set_position(job["counts"]["rows"].as_u64().unwrap_or(0));
        match get(client, s, &id, Some(10)).await? {
            Some(now) => job = now,
            None => anyhow::bail!("{id} can no longer be read"),
        }
    }
    progress.finish_and_clear();
    Ok(job)
}

/// The job `id` (after up to `wait` seconds for its work to end); `None`
/// once a refusal is printed.
async fn get(
    client: &reqwest::Client,
    s: Service<'_>,
    id: &str,
    wait: Option<u32>,
) -> anyhow::Result<Option<Value>> {
    let mut request = client
        .get(format!("{}/api/jobs/{id}", s.base()))
        .header("X-API-Key", s.key);
    if let Some(n) = wait {
        request = request.header("Prefer", format!("wait={n}"));
    }
    answer(super::send(s.base(), request).await?).await
}

/// The body of a successful answer; a refusal is printed and is `None`.
async fn answer(resp: reqwest::Response) -> anyhow::Result<Option<Value>> {
    let status = resp.status();
    let body: Value = resp.json().await.unwrap_or(Value::Null);
    if status.is_success() {
        return Ok(Some(body));
    }
    super::refusal(status, &body);
    Ok(None)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_listed_revision_names_the_job_it_revises() {
        let job = json!({
            "id": "job_2", "module": "customers", "state": "awaiting_approval",
            "created_at": "2026-12-03T05:40:12Z", "counts": {"rows": 12, "errors": 0},
            "submitter": {"display": "ag***s"}, "file": {"name": "crm.csv"},
            "revision_of": "job_1", "revision": {"number": 2}
        });
        let line = row(&job);
        assert!(line.starts_with("2026-12-03 05:40  job_2"), "{line}");
        assert!(line.contains("awaiting_approval"), "{line}");
        assert!(line.ends_with("crm.csv  (revision 2 of job_1)"), "{line}");
    }
}
