//! Four-eyes across chains (API.md section 1): keys minted through keys
//! and key requests after an upload, the jobs of a revision chain, and the
//! saved mapping a job was read with. Each is a way a person could reach
//! the gate of their own work; each is refused with `self_approval`, and a
//! person outside the chain still decides.

use reqwest::StatusCode;
use serde_json::{Value, json};

use crate::common::*;

/// Creates a key with `by` (an admin's); the answer.
async fn mint(app: &TestApp, by: &str, name: &str, role: &str) -> Value {
    let resp = app
        .client
        .post(app.url("/api/keys"))
        .header("X-API-Key", by)
        .json(&json!({"name": name, "role": role}))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), StatusCode::CREATED);
    resp.json().await.unwrap()
}

fn secret(key: &Value) -> &str {
    key["key"].as_str().unwrap()
}

async fn refused(app: &TestApp, key: &str, id: &str, action: &str) {
    let resp = app.act(key, id, action, Some("ok")).await;
    problem(resp, StatusCode::FORBIDDEN, "self_approval").await;
}

/// A revision of `id` by `key`, validated: its answer.
async fn revised(app: &TestApp, key: &str, id: &str, body: Value) -> Value {
    let resp = app
        .client
        .post(app.url(&format!("/api/jobs/{id}/revisions")))
        .header("X-API-Key", key)
        .json(&body)
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), StatusCode::CREATED);
    let made: Value = resp.json().await.unwrap();
    app.wait_done(key, made["id"].as_str().unwrap()).await
}

/// A key request approved by `admin`, collected: the key's secret.
async fn requested_key(app: &TestApp, admin: &str) -> String {
    let resp = app
        .client
        .post(app.url("/api/key-requests"))
        .json(
            &json!({"name": "Yanti Puspita", "email": "yanti@contoh.co.id",
                      "role": "approver", "modules": ["*"], "reason": "approve imports"}),
        )
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), StatusCode::CREATED);
    let made: Value = resp.json().await.unwrap();
    let id = made["id"].as_str().unwrap();
    let resp = app
        .client
        .post(app.url(&format!("/api/key-requests/{id}/approve")))
        .header("X-API-Key", admin)
        .json(&json!({"comment": "ok"}))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), StatusCode::OK);
    let query = serde_urlencoded::to_string([("claim_token", made["claim_token"].as_str())]);
    let got: Value = app
        .client
        .get(app.url(&format!("/api/key-requests/{id}?{}", query.unwrap())))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    got["key"].as_str().expect("the collected key").to_string()
}

/// Admin A uploads, mints admin K1, K1 mints approver K2: K2 may not
/// decide A's upload, nor a key K1 approved through a key request; a
/// colleague whose key predates the upload does.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_chain_of_keys_minted_after_the_upload_cannot_decide_it() {
    let app = spawn_app().await;
    let a = mint(&app, &app.admin, "Dewi Lestari", "admin").await;
    let colleague = mint(&app, &app.admin, "Siti Rahayu", "approver").await;
    let job = app.upload(secret(&a), "customers", "", CUSTOMERS).await;
    let id = job["id"].as_str().unwrap();
    assert_eq!(job["state"], "awaiting_approval", "{job}");

    let k1 = mint(&app, secret(&a), "Helper One", "admin").await;
    let k2 = mint(&app, secret(&k1), "Helper Two", "approver").await;
    assert_eq!(k2["issued_by"], k1["id"]);
    for action in ["approve", "reject"] {
        refused(&app, secret(&k2), id, action).await;
    }
    let k3 = requested_key(&app, secret(&k1)).await;
    refused(&app, &k3, id, "approve").await;

    let done = app.act_ok(secret(&colleague), id, "approve").await;
    assert_eq!(done["state"], "committed", "{done}");
}

const TWO_BAD: &str = "customer_name,wa_number,city,consumable_cycle_days\n\
Budi Santoso,081234567801,Bandung,30\n\
Siti Rahayu,081234567802,Surabaya,tiga puluh\n";

/// A revises-anyone chain keeps the first upload's time: A uploads, mints
/// approver K4 (refused on the job), someone else revises it with one
/// exclusion; K4 may not approve the revision, nor may the reviser or a
/// key the reviser minted after the first upload. A third person may.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_revision_keeps_the_first_uploads_time_and_its_people() {
    let app = spawn_app().await;
    let a = mint(&app, &app.admin, "Dewi Lestari", "admin").await;
    let reviser = mint(&app, &app.admin, "Rina Kusuma", "admin").await;
    let third = mint(&app, &app.admin, "Agus Wijaya", "approver").await;
    let job = app
        .upload(secret(&a), "customers", "?on_error=skip", TWO_BAD)
        .await;
    let id = job["id"].as_str().unwrap();
    assert_eq!(job["state"], "awaiting_approval", "{job}");
    let k4 = mint(&app, secret(&a), "Helper Four", "approver").await;
    refused(&app, secret(&k4), id, "approve").await;

    let rev = revised(&app, secret(&reviser), id, json!({"exclude": [3]})).await;
    assert_eq!(rev["state"], "awaiting_approval", "{rev}");
    let rev_id = rev["id"].as_str().unwrap();

    let k5 = mint(&app, secret(&reviser), "Helper Five", "approver").await;
    for key in [secret(&k4), secret(&reviser), secret(&k5), secret(&a)] {
        refused(&app, key, rev_id, "approve").await;
    }
    let done = app.act_ok(secret(&third), rev_id, "approve").await;
    assert_eq!(done["state"], "committed", "{done}");
}

const CRM: &str = "Nama Pelanggan,No. WA,Kota,Catatan\n\
Budi Santoso,081234567801,Bandung,pelanggan lama\n";

/// Whoever saved a mapping counts as a reviser of every job it is applied
/// to: S saves a mapping (through a revision with `remember_mapping`);
/// another person's next upload with those headers is read with it; S may
/// not decide that upload, nor a revision of it. A third person may.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_saver_of_an_applied_mapping_cannot_decide_the_upload() {
    let app = spawn_app().await;
    let saver = mint(&app, &app.admin, "Rina Kusuma", "approver").await;
    let uploader = mint(&app, &app.admin, "Budi Santoso", "submitter").await;
    let third = mint(&app, &app.admin, "Agus Wijaya", "approver").await;
    let first = app.upload(secret(&saver), "customers", "", CRM).await;
    let resp = app
        .client
        .post(app.url(&format!(
            "/api/jobs/{}/revisions",
            first["id"].as_str().unwrap()
        )))
        .header("X-API-Key", secret(&saver))
        .json(
            &json!({"mapping": {"No. WA": "wa_number", "Kota": "city", "Catatan": null},
                      "remember_mapping": true}),
        )
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), StatusCode::CREATED);

    let two = "Nama Pelanggan,No. WA,Kota,Catatan\n\
        Rina Wati,081234567811,Bogor,\n\
        Agus Salim,081234567812,Depok,baru\n";
    let job = app.upload(secret(&uploader), "customers", "", two).await;
    assert!(job["mapping_applied"]["id"].is_string(), "{job}");
    let id = job["id"].as_str().unwrap();
    for action in ["approve", "reject"] {
        refused(&app, secret(&saver), id, action).await;
    }

    let rev = revised(&app, secret(&uploader), id, json!({"exclude": [3]})).await;
    assert_eq!(rev["state"], "awaiting_approval", "{rev}");
    let rev_id = rev["id"].as_str().unwrap();
    refused(&app, secret(&saver), rev_id, "approve").await;
    let done = app.act_ok(secret(&third), rev_id, "approve").await;
    assert_eq!(done["state"], "committed", "{done}");
}
