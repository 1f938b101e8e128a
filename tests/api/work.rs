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
