//! `importgate demo`: the real binary, a fresh database in simulation, jobs
//! in every state, three keys printed, the banner on the console.

use std::collections::BTreeSet;
use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};

use reqwest::StatusCode;
use serde_json::Value;

const BIN: &str = env!("CARGO_BIN_EXE_importgate");

pub struct Server(Child);

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// A running `importgate demo`: its base URL, the three keys it printed
/// (submitter, approver, admin) and everything it printed before them.
pub struct Demo {
    pub base: String,
    pub keys: [String; 3],
    pub printed: String,
    _server: Server,
}

/// Starts the demo binary on a free port and reads its keys.
pub async fn start_demo() -> Demo {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let mut child = Command::new(BIN)
        .args(["demo", "--listen", &format!("127.0.0.1:{port}")])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let server = Server(child);
    let lines: Vec<String> = tokio::task::spawn_blocking(move || {
        BufReader::new(stdout)
            .lines()
            .map_while(Result::ok)
            .take_while(|l| !l.starts_with("Press Ctrl-C"))
            .collect()
    })
    .await
    .unwrap();
    let printed = lines.join("\n");
    let key = |role: &str| {
        lines
            .iter()
            .find(|l| l.trim_start().starts_with(role))
            .and_then(|l| l.split_whitespace().last())
            .unwrap_or_else(|| panic!("no {role} key in {printed}"))
            .to_string()
    };
    Demo {
        base: format!("http://127.0.0.1:{port}"),
        keys: [key("submitter"), key("approver"), key("admin")],
        printed: printed.clone(),
        _server: server,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_demo_has_jobs_in_every_state_and_says_it_simulates() {
    let demo = start_demo().await;
    let [sub, apr, admin] = demo.keys.clone();
    let text = &demo.printed;
    assert!(sub.starts_with("igk_") && apr.starts_with("igk_") && admin.starts_with("igk_"));
    assert!(text.contains(&format!("{}/", demo.base)), "{text}");
    assert!(!text.contains("Budi Santoso"), "people are masked: {text}");

    let client = reqwest::Client::new();
    let base = demo.base.clone();
    let body: Value = get_json(&client, &format!("{base}/api/jobs?limit=200"), &admin).await;
    let jobs = body["jobs"].as_array().unwrap();
    let states: BTreeSet<&str> = jobs.iter().filter_map(|j| j["state"].as_str()).collect();
    for state in [
        "validating",
        "invalid",
        "failed",
        "awaiting_approval",
        "committed",
        "rejected",
        "cancelled",
        "expired",
        "rollback_pending",
        "rolled_back",
    ] {
        assert!(states.contains(state), "no {state} job: {states:?}");
    }
    assert!(jobs.iter().all(|j| j["simulated"] == true));
    // The ledger reads as days of work, not one moment: the stories are
    // hours apart, the oldest days ago, the newest job now.
    let created: Vec<chrono::DateTime<chrono::Utc>> = (jobs.iter())
        .map(|j| j["created_at"].as_str().unwrap().parse().unwrap())
        .collect();
    let minutes: BTreeSet<i64> = created.iter().map(|t| t.timestamp() / 60).collect();
    assert!(minutes.len() >= 12, "{minutes:?}");
    let (oldest, newest) = (created.iter().min().unwrap(), created.iter().max().unwrap());
    assert!(
        *newest - *oldest >= chrono::TimeDelta::days(2),
        "{oldest} .. {newest}"
    );
    assert!(
        chrono::Utc::now() - *newest < chrono::TimeDelta::minutes(10),
        "{newest}"
    );
    // A revision waits too: a CRM export mapped, then one cell fixed.
    let revised = (jobs.iter())
        .find(|j| j["state"] == "awaiting_approval" && j["revision"]["number"] == 2)
        .expect("a revision at the gate");
    assert_eq!(revised["revision"]["fixes"], 1, "{revised}");
    assert_eq!(revised["revision"]["mapping"]["No. WA"], "wa_number");
    let modules: BTreeSet<&str> = jobs.iter().filter_map(|j| j["module"].as_str()).collect();
    assert!(modules.len() >= 5, "{modules:?}");
    // A workbook waits at the gate: products, the orders naming them and
    // their payments, one job.
    let workbook = (jobs.iter())
        .find(|j| j["module"].is_null())
        .expect("a workbook job");
    assert_eq!(workbook["state"], "awaiting_approval", "{workbook}");
    let parts: Vec<&str> = (workbook["parts"].as_array().unwrap().iter())
        .map(|p| p["module"].as_str().unwrap())
        .collect();
    assert_eq!(parts, ["products", "orders", "payments"], "{workbook}");
    // Rules are in force for three modules, and a change waits at the gate.
    for module in ["customers", "products", "orders"] {
        let set: Value =
            get_json(&client, &format!("{base}/api/modules/{module}/rules"), &sub).await;
        assert_eq!(set["version"], 2, "{set}");
        assert_eq!(set["rules"].as_array().unwrap().len(), 2, "{set}");
    }
    let waiting_rules: Value = get_json(
        &client,
        &format!("{base}/api/rule-proposals?state=awaiting_approval"),
        &apr,
    )
    .await;
    assert_eq!(
        waiting_rules["proposals"][0]["module"], "orders",
        "{waiting_rules}"
    );
    // The approver has something to decide and the submitter may not.
    let waiting = jobs
        .iter()
        .find(|j| j["state"] == "awaiting_approval" && j["submitter"]["display"] == "Bu***o")
        .expect("a job of the submitter's at the gate");
    let id = waiting["id"].as_str().unwrap();
    let resp = client
        .post(format!("{base}/api/jobs/{id}/approve"))
        .header("X-API-Key", &sub)
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), StatusCode::FORBIDDEN);
    let resp = client
        .post(format!("{base}/api/jobs/{id}/approve"))
        .header("X-API-Key", &apr)
        .header("Prefer", "wait=30")
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), StatusCode::ACCEPTED);
    let job: Value = resp.json().await.unwrap();
    assert_eq!(job["state"], "committed");
    assert_eq!(job["simulated"], true);

    // Every console page says it simulates.
    let page = client
        .get(format!("{base}/signin"))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(page.contains("Simulation — nothing is written."), "{page}");
}

/// A GET that must answer JSON.
async fn get_json(client: &reqwest::Client, url: &str, key: &str) -> Value {
    let resp = client
        .get(url)
        .header("X-API-Key", key)
        .send()
        .await
        .unwrap();
    resp.json().await.unwrap()
}

/// The API commands the demo prints work when pasted into a shell: the
/// job list, then the sample file made and uploaded.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_commands_the_demo_prints_work_when_pasted() {
    let demo = start_demo().await;
    let printed = &demo.printed;
    let from = printed.find("Try the API").expect("the API lines");
    let script: String = (printed[from..].lines().skip(1))
        .map(|l| format!("{}\n", l.trim_start()))
        .collect();
    assert!(!script.contains("//api"), "{script}");
    let dir = tempfile::tempdir().unwrap();
    let out = tokio::process::Command::new("bash")
        .args(["-euo", "pipefail", "-c", &script])
        .current_dir(dir.path())
        .output()
        .await
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout).to_string();
    assert!(
        out.status.success(),
        "{script}\n{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // The job list, then the upload's job, validated.
    assert!(stdout.starts_with("{\"jobs\":"), "{stdout}");
    assert!(stdout.contains("\"module\":\"customers\""), "{stdout}");
    assert!(
        stdout.contains("\"state\":\"awaiting_approval\""),
        "{stdout}"
    );
}

/// A demo on an address another program holds says which address.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_busy_address_is_named() {
    let busy = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let address = busy.local_addr().unwrap().to_string();
    let out = tokio::process::Command::new(BIN)
        .args(["demo", "--listen", &address])
        .output()
        .await
        .unwrap();
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains(&format!("cannot listen on {address}")),
        "{stderr}"
    );
    assert!(stderr.contains("--listen"), "{stderr}");
}
