//! Work that fails the same way again and again ends: the job leaves its
//! work state with the error as its problem, a ledger event says so, and a
//! metric counts it. Nothing is written.

use crate::common::{TestApp, spawn_app_with};

const CUSTOMERS: &str = "customer_name,wa_number\nBudi Santoso,081200000001\n";

async fn app() -> TestApp {
    spawn_app_with(|s| {
        s.work_attempts = 3;
        s.work_retry_ms = 50;
    })
    .await
}

/// Waits until the job leaves `state` (the retries take a few backoffs).
async fn left(app: &TestApp, key: &str, id: &str, state: &str) -> serde_json::Value {
    for _ in 0..200 {
        let job = app.job(key, id).await;
        if job["state"] != state {
            return job;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    panic!("job {id} stayed {state}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_validation_that_keeps_failing_ends_failed_naming_the_error() {
    let app = app().await;
    let sub = app.submitter().await;
    // The stage table is gone behind the service's back: every attempt
    // fails the same way.
    app.sql("DROP TABLE ig_stage_customers").await;
    let resp = app
        .client
        .post(app.url("/api/import/customers"))
        .header("X-API-Key", &sub)
        .header("Content-Type", "text/csv")
        .body(CUSTOMERS)
        .send()
        .await
        .unwrap();
    let job: serde_json::Value = resp.json().await.unwrap();
    let id = job["id"].as_str().unwrap();
    let job = left(&app, &sub, id, "validating").await;
    assert_eq!(job["state"], "failed", "{job}");
    let p = &job["problem"];
    assert_eq!(p["code"], "work_failed");
    let detail = p["detail"].as_str().unwrap();
    assert!(detail.contains("failed 3 times"), "{detail}");
    assert!(
        detail.contains("ig_stage_customers"),
        "the error is named: {detail}"
    );
    let events = app.get_json(&sub, &format!("/api/jobs/{id}/events")).await;
    let last = events["events"].as_array().unwrap().last().unwrap().clone();
    assert_eq!(last["event"], "gave_up");
    assert!(last["actor"].is_null(), "the service's move");
    let metrics = app.client.get(app.url("/metrics")).send().await.unwrap();
    let text = metrics.text().await.unwrap();
    assert!(
        text.contains("importgate_jobs_given_up_total{state=\"validating\"} 1"),
        "{text}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rollback_that_keeps_failing_leaves_the_import_committed() {
    let app = app().await;
    let (sub, apr) = (app.submitter().await, app.approver().await);
    let other = app.key("Eko Prasetyo", "approver", &["*"]).await.0;
    let job = app.upload(&sub, "customers", "", CUSTOMERS).await;
    let id = job["id"].as_str().unwrap();
    assert_eq!(app.act_ok(&apr, id, "approve").await["state"], "committed");
    app.sql("DROP TABLE ig_stage_customers").await;
    let resp = app.act(&apr, id, "rollback", Some("wrong file")).await;
    assert_eq!(resp.status(), reqwest::StatusCode::ACCEPTED);
    let resp = app.act(&other, id, "approve", None).await;
    assert_eq!(resp.status(), reqwest::StatusCode::ACCEPTED);
    let job = left(&app, &sub, id, "rolling_back").await;
    assert_eq!(job["state"], "committed", "{job}");
    assert_eq!(job["problem"]["code"], "work_failed");
    assert_eq!(app.count("uc_scrm_customers").await, 1, "nothing undone");
}

/// Uploads customers without waiting for the validation; the job's id.
async fn queued(app: &TestApp, key: &str, csv: String) -> String {
    let resp = app
        .client
        .post(app.url("/api/import/customers"))
        .header("X-API-Key", key)
        .header("Content-Type", "text/csv")
        .body(csv)
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), reqwest::StatusCode::ACCEPTED);
    let job: serde_json::Value = resp.json().await.unwrap();
    job["id"].as_str().unwrap().to_string()
}

/// Customers with numbers from `from`, `rows` of them.
fn customers(from: usize, rows: usize) -> String {
    let mut csv = String::from("customer_name,wa_number,city\n");
    for i in from..from + rows {
        csv.push_str(&format!("Pelanggan {i},0812{i:08},Bandung\n"));
    }
    csv
}

/// Work is taken fairly by submitter (API.md section 10): with one worker
/// busy on one person's large upload and three more of theirs waiting,
/// another person's one-row upload is validated before the first person's
/// later ones, not after them all.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn another_persons_small_upload_does_not_wait_behind_a_queue_of_large_ones() {
    let app = spawn_app_with(|s| s.workers = 1).await;
    let (busy, _) = app.key("Budi Santoso", "submitter", &["*"]).await;
    let (other, _) = app.key("Siti Rahayu", "submitter", &["*"]).await;
    let mut large = Vec::new();
    // The first keeps the one worker busy while the rest arrive.
    for (from, rows) in [
        (0, 150_000),
        (200_000, 5_000),
        (300_000, 5_000),
        (400_000, 5_000),
    ] {
        large.push(queued(&app, &busy, customers(from, rows)).await);
    }
    let small = queued(&app, &other, customers(900_000, 1)).await;
    for id in large.iter().chain([&small]) {
        app.wait_done(&app.admin, id).await;
    }
    let order: Vec<String> = app
        .sql("SELECT job_id FROM ig_job_events WHERE from_state = 'validating' ORDER BY seq")
        .await
        .into_iter()
        .map(|r| r[0].clone().unwrap())
        .collect();
    let at = |id: &str| order.iter().position(|o| o == id).unwrap();
    assert!(
        at(&small) < at(&large[2]),
        "the small upload waited behind the other person's queue: {order:?}"
    );
}
