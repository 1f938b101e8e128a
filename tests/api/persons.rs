//! Four-eyes by person (API.md section 1): a person may hold several keys;
//! no key of the person who uploaded a job may decide it, nor a key they
//! issued after the upload; every decision names the issuer of the deciding
//! key; keys' lifecycle is in the ledger.

use reqwest::StatusCode;
use serde_json::{Value, json};

use crate::common::*;

/// Creates a key with `key` (an admin's) and the given body; the answer.
async fn create(app: &TestApp, key: &str, body: Value) -> (StatusCode, Value) {
    let resp = app
        .client
        .post(app.url("/api/keys"))
        .header("X-API-Key", key)
        .json(&body)
        .send()
        .await
        .unwrap();
    (resp.status(), resp.json().await.unwrap())
}

async fn created(app: &TestApp, key: &str, body: Value) -> Value {
    let (status, body) = create(app, key, body).await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    body
}

/// A decision by `key` that the four-eyes rule must refuse.
async fn refused(app: &TestApp, key: &Value, id: &str, action: &str) {
    let resp = app
        .act(key["key"].as_str().unwrap(), id, action, Some("ok"))
        .await;
    problem(resp, StatusCode::FORBIDDEN, "self_approval").await;
}

/// An admin uploads, then mints a second key for themselves and approves
/// their own upload with it: refused, whether the key is added to their
/// person or made for a "new" person after the upload; a key issued before
/// the upload to someone else decides.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_person_cannot_approve_their_own_upload_with_another_key() {
    let app = spawn_app().await;
    let boss = created(
        &app,
        &app.admin,
        json!({"name": "Dewi Lestari", "email": "dewi@contoh.co.id", "role": "admin"}),
    )
    .await;
    let boss_key = boss["key"].as_str().unwrap().to_string();
    let person = boss["person_id"].as_str().unwrap().to_string();
    assert!(person.starts_with("per_"), "{boss}");
    assert_eq!(boss["email"], "dewi@contoh.co.id");
    let colleague = created(
        &app,
        &boss_key,
        json!({"name": "Siti Rahayu", "role": "approver"}),
    )
    .await;
    assert_ne!(colleague["person_id"], boss["person_id"], "a new person");
    assert_eq!(colleague["issued_by"], boss["id"]);

    let job = app.upload(&boss_key, "customers", "", CUSTOMERS).await;
    let id = job["id"].as_str().unwrap().to_string();

    // A second key of the same person.
    let second = created(
        &app,
        &boss_key,
        json!({"name": "Dewi Lestari", "role": "approver", "person_id": person}),
    )
    .await;
    assert_eq!(second["person_id"], boss["person_id"]);
    refused(&app, &second, &id, "approve").await;

    // A key for a "new person", minted by the uploader after the upload.
    let puppet = created(
        &app,
        &boss_key,
        json!({"name": "Helper Account", "role": "approver"}),
    )
    .await;
    assert_ne!(puppet["person_id"], boss["person_id"]);
    for action in ["approve", "reject"] {
        refused(&app, &puppet, &id, action).await;
    }

    // The colleague's key was issued by the uploader too, but before the
    // upload: another person's, who may decide.
    let done = app
        .act_ok(colleague["key"].as_str().unwrap(), &id, "approve")
        .await;
    assert_eq!(done["state"], "committed", "{done}");
    let decision = &done["decisions"][0];
    assert_eq!(decision["by"]["key_id"], colleague["id"]);
    assert_eq!(
        decision["issued_by"],
        json!({"key_id": boss["id"], "display": "De***i"}),
        "the deciding key's issuer, masked"
    );
}

/// The same person may not decide a rollback they asked for with another
/// of their keys.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rollback_requester_cannot_approve_it_with_another_key() {
    let app = spawn_app().await;
    let sub = app.submitter().await;
    let first = created(
        &app,
        &app.admin,
        json!({"name": "Rudi Hartono", "role": "approver"}),
    )
    .await;
    let other = created(
        &app,
        &app.admin,
        json!({"name": "Wati Susanti", "role": "approver"}),
    )
    .await;
    let job = app.upload(&sub, "customers", "", CUSTOMERS).await;
    let id = job["id"].as_str().unwrap().to_string();
    app.act_ok(other["key"].as_str().unwrap(), &id, "approve")
        .await;
    let resp = app
        .act(
            first["key"].as_str().unwrap(),
            &id,
            "rollback",
            Some("wrong file"),
        )
        .await;
    assert_eq!(resp.status(), StatusCode::ACCEPTED);
    let second = created(
        &app,
        &app.admin,
        json!({"name": "Rudi Hartono", "role": "approver", "person_id": first["person_id"]}),
    )
    .await;
    refused(&app, &second, &id, "approve").await;
    let done = app
        .act_ok(other["key"].as_str().unwrap(), &id, "approve")
        .await;
    assert_eq!(done["state"], "rolled_back", "{done}");
}

/// `person_id` must name a person who holds a key; emails are checked;
/// the list shows each key's person.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn keys_name_their_person_and_bad_persons_are_refused() {
    let app = spawn_app().await;
    for (body, member) in [
        (
            json!({"name": "A B", "role": "submitter", "person_id": "per_nobody12"}),
            "person_id",
        ),
        (
            json!({"name": "A B", "role": "submitter", "person_id": "x'; DROP"}),
            "person_id",
        ),
        (
            json!({"name": "A B", "role": "submitter", "email": "not an email"}),
            "email",
        ),
    ] {
        let (status, problem) = create(&app, &app.admin, body).await;
        assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{problem}");
        assert_eq!(problem["parameter"], member, "{problem}");
    }
    let keys = app.get_json(&app.admin, "/api/keys").await;
    assert_eq!(
        keys["keys"].as_array().unwrap().len(),
        1,
        "nothing made: {keys}"
    );
    let first = &keys["keys"][0];
    assert!(first["person_id"].as_str().unwrap().starts_with("per_"));
    assert_eq!(
        first["issued_by"],
        Value::Null,
        "the first key has no issuer"
    );
}

/// Creating and revoking keys and deciding key requests are ledger events,
/// chained like the moves of jobs.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_lifecycle_of_keys_is_in_the_ledger() {
    let app = spawn_app().await;
    let made = created(
        &app,
        &app.admin,
        json!({"name": "Budi Santoso", "role": "submitter"}),
    )
    .await;
    let id = made["id"].as_str().unwrap();
    let admin = |req: reqwest::RequestBuilder| req.header("X-API-Key", &app.admin).send();
    let resp = admin(app.client.delete(app.url(&format!("/api/keys/{id}"))));
    assert_eq!(resp.await.unwrap().status(), StatusCode::OK);
    let ask = json!({"name": "Agus Salim", "email": "agus@contoh.id", "role": "submitter",
                     "modules": ["customers"], "reason": "orders team"});
    let asked = app
        .client
        .post(app.url("/api/key-requests"))
        .json(&ask)
        .send();
    let request: Value = asked.await.unwrap().json().await.unwrap();
    let rid = request["id"].as_str().unwrap();
    let resp = admin(
        app.client
            .post(app.url(&format!("/api/key-requests/{rid}/approve"))),
    );
    assert_eq!(resp.await.unwrap().status(), StatusCode::OK);
    let events = app
        .sql(&format!(
            "SELECT job_id, event, from_state, to_state, actor FROM ig_job_events \
             WHERE job_id IN ('{id}', '{rid}') ORDER BY seq"
        ))
        .await;
    let admin_id = app
        .sql("SELECT id FROM ig_keys WHERE issued_by IS NULL")
        .await[0][0]
        .clone();
    let got: Vec<(String, String, Option<String>)> = events
        .iter()
        .map(|r| (r[1].clone().unwrap(), r[3].clone().unwrap(), r[4].clone()))
        .collect();
    assert_eq!(
        got,
        vec![
            ("key_created".into(), "active".into(), admin_id.clone()),
            ("key_revoked".into(), "revoked".into(), admin_id.clone()),
            ("key_request_created".into(), "pending".into(), None),
            (
                "key_request_decided".into(),
                "approved".into(),
                admin_id.clone()
            ),
        ]
    );
    // Collecting the key makes it, issued by the approving admin.
    let token = request["claim_token"].as_str().unwrap();
    let claim = app.url(&format!("/api/key-requests/{rid}?claim_token={token}"));
    let claimed: Value = app
        .client
        .get(claim)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert!(claimed["key"].as_str().is_some(), "{claimed}");
    let key_id = app
        .sql(&format!(
            "SELECT key_id FROM ig_key_requests WHERE id = '{rid}'"
        ))
        .await[0][0]
        .clone()
        .unwrap();
    let row = app
        .sql(&format!(
            "SELECT issued_by, email FROM ig_keys WHERE id = '{key_id}'"
        ))
        .await;
    assert_eq!(row[0][0], admin_id, "{claimed}");
    assert_eq!(row[0][1].as_deref(), Some("agus@contoh.id"));
    assert!(
        importgate::service::audit::verify(&app.app.db, &app.app.seal.key, None)
            .await
            .map(|v| matches!(v, importgate::ledger::chain::Verdict::Holds { .. }))
            .unwrap(),
        "the chain holds"
    );
}
