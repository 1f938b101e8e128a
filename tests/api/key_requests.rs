//! Key requests (API.md section 7): asked for without a key, decided by an
//! admin, collected once with the claim token; people masked throughout.

use reqwest::StatusCode;
use serde_json::{Value, json};

use crate::common::*;

const NAME: &str = "Rina Kusuma";
const EMAIL: &str = "rina.kusuma@contoh.co.id";

async fn ask(app: &TestApp, body: Value) -> reqwest::Response {
    app.client
        .post(app.url("/api/key-requests"))
        .json(&body)
        .send()
        .await
        .expect("request")
}

fn request_body() -> Value {
    json!({"name": NAME, "email": EMAIL, "role": "submitter",
           "modules": ["customers"], "reason": "Upload data pelanggan dari pameran"})
}

async fn claim(app: &TestApp, id: &str, token: &str) -> reqwest::Response {
    app.client
        .get(app.url(&format!(
            "/api/key-requests/{id}?{}",
            serde_urlencoded::to_string([("claim_token", token)]).unwrap()
        )))
        .send()
        .await
        .expect("request")
}

async fn decide(app: &TestApp, key: &str, id: &str, decision: &str) -> reqwest::Response {
    app.client
        .post(app.url(&format!("/api/key-requests/{id}/{decision}")))
        .header("X-API-Key", key)
        .json(&json!({"comment": "ok"}))
        .send()
        .await
        .expect("request")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_key_request_is_approved_and_collected_exactly_once() {
    let app = spawn_app().await;
    let resp = ask(&app, request_body()).await;
    assert_eq!(resp.status(), StatusCode::CREATED);
    let made: Value = resp.json().await.unwrap();
    let id = made["id"].as_str().unwrap().to_string();
    let token = made["claim_token"].as_str().unwrap().to_string();

    // Before a decision: the requester sees it pending, and no key.
    let pending: Value = claim(&app, &id, &token).await.json().await.unwrap();
    assert_eq!(pending["state"], "pending");
    assert!(pending.get("key").is_none());

    // The admin's list masks the person and the email where it shows
    // people, and names the requester in full for the admin deciding
    // (API.md section 1: key management is the one exception).
    let list = app.get(&app.admin, "/api/key-requests").await;
    assert_eq!(list.status(), StatusCode::OK);
    let list: Value = list.json().await.unwrap();
    let r = &list["requests"][0];
    assert_eq!(r["person"]["display"], "Ri***a");
    assert_eq!(r["email"], "ri***d");
    assert_eq!(r["requester"]["name"], NAME);
    assert_eq!(r["requester"]["email"], EMAIL);
    assert_eq!(r["state"], "pending");

    let resp = decide(&app, &app.admin, &id, "approve").await;
    assert_eq!(resp.status(), StatusCode::OK);
    let approved: Value = resp.json().await.unwrap();
    assert_eq!(approved["state"], "approved");
    assert_eq!(approved["decided_by"]["display"], "ad***n");

    // The first claim hands out the key; it works within its scope.
    let resp = claim(&app, &id, &token).await;
    assert_eq!(resp.status(), StatusCode::OK);
    let got: Value = resp.json().await.unwrap();
    let key = got["key"].as_str().expect("the key").to_string();
    assert!(key.starts_with("igk_"));
    assert_eq!(got["state"], "collected");
    assert_eq!(app.get(&key, "/api/jobs").await.status(), StatusCode::OK);
    let job = app.upload(&key, "customers", "", CUSTOMERS).await;
    assert_eq!(job["submitter"]["display"], "Ri***a");
    assert_eq!(
        app.upload_raw(&key, "products", "", "text/csv", "sku\nx\n")
            .await
            .status(),
        StatusCode::FORBIDDEN,
        "scope holds"
    );

    // The second claim gets nothing: the secret is gone.
    let again = claim(&app, &id, &token).await;
    problem(again, StatusCode::GONE, "already_collected").await;

    // Only a hash of the claim token is stored; the key row has the name.
    let rows = app
        .sql("SELECT claim_hash, state, key_id FROM ig_key_requests")
        .await;
    assert_ne!(rows[0][0].as_deref(), Some(token.as_str()));
    assert_eq!(rows[0][1].as_deref(), Some("collected"));
    let key_id = rows[0][2].clone().expect("key id");
    let names = app
        .sql(&format!(
            "SELECT name, role FROM ig_keys WHERE id = '{key_id}'"
        ))
        .await;
    assert_eq!(names[0][0].as_deref(), Some(NAME));
    assert_eq!(names[0][1].as_deref(), Some("submitter"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_denied_request_gives_no_key_and_stays_denied() {
    let app = spawn_app().await;
    let made: Value = ask(&app, request_body()).await.json().await.unwrap();
    let id = made["id"].as_str().unwrap();
    let token = made["claim_token"].as_str().unwrap();
    assert_eq!(
        decide(&app, &app.admin, id, "deny").await.status(),
        StatusCode::OK
    );
    let seen: Value = claim(&app, id, token).await.json().await.unwrap();
    assert_eq!(seen["state"], "denied");
    assert!(seen.get("key").is_none());
    problem(
        decide(&app, &app.admin, id, "approve").await,
        StatusCode::CONFLICT,
        "invalid_state",
    )
    .await;
    assert_eq!(app.count("ig_keys").await, 1, "only the admin key");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn key_requests_are_checked_and_guarded() {
    let app = spawn_app().await;
    let mut bad = request_body();
    bad["email"] = json!("not an email");
    let p = problem(
        ask(&app, bad).await,
        StatusCode::UNPROCESSABLE_ENTITY,
        "invalid_parameter",
    )
    .await;
    assert_eq!(p["parameter"], "email");
    let mut bad = request_body();
    bad["modules"] = json!(["gudang"]);
    let p = problem(
        ask(&app, bad).await,
        StatusCode::UNPROCESSABLE_ENTITY,
        "invalid_parameter",
    )
    .await;
    assert_eq!(p["parameter"], "modules");
    let mut bad = request_body();
    bad["reason"] = json!("  ");
    problem(
        ask(&app, bad).await,
        StatusCode::UNPROCESSABLE_ENTITY,
        "invalid_parameter",
    )
    .await;

    let made: Value = ask(&app, request_body()).await.json().await.unwrap();
    let id = made["id"].as_str().unwrap();
    // A wrong token looks like an unknown request.
    problem(
        claim(&app, id, "wrong").await,
        StatusCode::NOT_FOUND,
        "not_found",
    )
    .await;
    // Listing and deciding are for admins only.
    let sub = app.submitter().await;
    problem(
        app.get(&sub, "/api/key-requests").await,
        StatusCode::FORBIDDEN,
        "forbidden",
    )
    .await;
    problem(
        decide(&app, &sub, id, "approve").await,
        StatusCode::FORBIDDEN,
        "forbidden",
    )
    .await;
    let resp = app
        .client
        .get(app.url("/api/key-requests"))
        .send()
        .await
        .unwrap();
    problem(resp, StatusCode::UNAUTHORIZED, "unauthorized").await;
}
