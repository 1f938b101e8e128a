//! `Idempotency-Key` on uploads (API.md section 3).

use reqwest::StatusCode;
use serde_json::Value;

use crate::common::*;

async fn upload_with_key(app: &TestApp, key: &str, idem: &str, body: &str) -> reqwest::Response {
    app.client
        .post(app.url("/api/import/customers"))
        .header("X-API-Key", key)
        .header("Content-Type", "text/csv")
        .header("Idempotency-Key", idem)
        .body(body.to_string())
        .send()
        .await
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_retried_upload_returns_the_same_job_and_creates_nothing() {
    let app = spawn_app().await;
    let sub = app.submitter().await;
    let first = upload_with_key(&app, &sub, "upload-2024-03-31-a", CUSTOMERS).await;
    assert_eq!(first.status(), StatusCode::ACCEPTED);
    let first: Value = first.json().await.unwrap();
    let again = upload_with_key(&app, &sub, "upload-2024-03-31-a", CUSTOMERS).await;
    assert_eq!(again.status(), StatusCode::OK);
    let again: Value = again.json().await.unwrap();
    assert_eq!(again["id"], first["id"]);
    let jobs = app.get_json(&sub, "/api/jobs").await;
    assert_eq!(jobs["jobs"].as_array().unwrap().len(), 1);
    assert_eq!(
        app.count("ig_blob_chunks").await,
        1,
        "the retry's bytes were not kept"
    );
    // The same key from another API key is that key's own.
    let other = app.key("Dewi Anggraini", "submitter", &["*"]).await.0;
    let theirs = upload_with_key(&app, &other, "upload-2024-03-31-a", CUSTOMERS).await;
    assert_eq!(theirs.status(), StatusCode::ACCEPTED);
    assert_ne!(theirs.json::<Value>().await.unwrap()["id"], first["id"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reused_key_with_another_body_is_refused() {
    let app = spawn_app().await;
    let sub = app.submitter().await;
    assert_eq!(
        upload_with_key(&app, &sub, "k-1", CUSTOMERS).await.status(),
        StatusCode::ACCEPTED
    );
    let other_body = "customer_name,wa_number\nZaki,0899\n";
    problem(
        upload_with_key(&app, &sub, "k-1", other_body).await,
        StatusCode::UNPROCESSABLE_ENTITY,
        "idempotency_key_reused",
    )
    .await;
    // Same bytes but another mode is another request too.
    let resp = app
        .client
        .post(app.url("/api/import/customers?mode=upsert"))
        .header("X-API-Key", &sub)
        .header("Content-Type", "text/csv")
        .header("Idempotency-Key", "k-1")
        .body(CUSTOMERS)
        .send()
        .await
        .unwrap();
    problem(
        resp,
        StatusCode::UNPROCESSABLE_ENTITY,
        "idempotency_key_reused",
    )
    .await;
    let long = "x".repeat(256);
    problem(
        upload_with_key(&app, &sub, &long, CUSTOMERS).await,
        StatusCode::UNPROCESSABLE_ENTITY,
        "invalid_parameter",
    )
    .await;
    let jobs = app.get_json(&sub, "/api/jobs").await;
    assert_eq!(jobs["jobs"].as_array().unwrap().len(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_retries_make_one_job() {
    let app = spawn_app().await;
    let sub = app.submitter().await;
    let tries = (0..6).map(|_| upload_with_key(&app, &sub, "burst", CUSTOMERS));
    let answers = futures::future::join_all(tries).await;
    let mut ids = std::collections::HashSet::new();
    let mut created = 0;
    for resp in answers {
        match resp.status() {
            StatusCode::ACCEPTED => created += 1,
            StatusCode::OK => {}
            other => panic!("unexpected {other}"),
        }
        ids.insert(
            resp.json::<Value>().await.unwrap()["id"]
                .as_str()
                .unwrap()
                .to_string(),
        );
    }
    assert_eq!(created, 1, "exactly one request created the job");
    assert_eq!(ids.len(), 1, "every retry got the same job");
    let jobs = app.get_json(&sub, "/api/jobs").await;
    assert_eq!(jobs["jobs"].as_array().unwrap().len(), 1);
    assert_eq!(app.count("ig_job_events WHERE event = 'upload'").await, 1);
}
