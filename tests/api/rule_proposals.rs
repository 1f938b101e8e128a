//! A module's rules changed through the gate (API.md section 14): the set
//! in force and its versions, proposals refused when malformed, four-eyes
//! by person on the decision, events, and a job validated under an older
//! version refused at commit (`stale_rules`).

use reqwest::StatusCode;
use serde_json::{Value, json};

use crate::common::*;

fn phone_rules() -> Value {
    json!([
        {"id": "wa", "column": "wa_number", "normalize": "phone_id"},
        {"id": "short_cycle", "check": "!has(row.consumable_cycle_days) || row.consumable_cycle_days <= 365",
         "message": "a cycle is at most a year", "columns": ["consumable_cycle_days"], "severity": "error"},
    ])
}

async fn propose(app: &TestApp, key: &str, module: &str, body: Value) -> reqwest::Response {
    app.client
        .post(app.url(&format!("/api/modules/{module}/rules")))
        .header("X-API-Key", key)
        .json(&body)
        .send()
        .await
        .expect("request")
}

async fn decide(app: &TestApp, key: &str, id: &str, action: &str) -> reqwest::Response {
    app.client
        .post(app.url(&format!("/api/rule-proposals/{id}/{action}")))
        .header("X-API-Key", key)
        .json(&json!({"comment": "checked against last week's file"}))
        .send()
        .await
        .expect("request")
}

/// Proposes `rules` for customers as the first admin; the proposal.
async fn proposed(app: &TestApp, rules: Value) -> Value {
    let resp = propose(
        app,
        &app.admin,
        "customers",
        json!({"rules": rules, "comment": "WA numbers"}),
    )
    .await;
    assert_eq!(resp.status(), StatusCode::CREATED);
    resp.json().await.expect("json")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_proposal_approved_by_another_person_becomes_the_version_in_force() {
    let app = spawn_app().await;
    let sub = app.submitter().await;
    let apr = app.approver().await;
    let first = app
        .get_json(&app.admin, "/api/modules/customers/rules")
        .await;
    assert_eq!(first["version"], 1);
    assert_eq!(first["rules"], json!([]));
    assert!(first["approved_by"].is_null());

    let p = proposed(&app, phone_rules()).await;
    let id = p["id"].as_str().unwrap();
    assert!(id.starts_with("rpr_"), "{p}");
    assert_eq!(p["version"], 2);
    assert_eq!(p["state"], "awaiting_approval");
    assert_eq!(p["diff"]["added"].as_array().unwrap().len(), 2);
    assert_eq!(p["diff"]["removed"], json!([]));
    // Nothing changes until it is approved.
    let still = app
        .get_json(&app.admin, "/api/modules/customers/rules")
        .await;
    assert_eq!(still["version"], 1);

    // The proposer may not decide it, nor may a submitter.
    let body = problem(
        decide(&app, &app.admin, id, "approve").await,
        StatusCode::FORBIDDEN,
        "self_approval",
    )
    .await;
    assert!(body["detail"].as_str().is_some());
    problem(
        decide(&app, &sub, id, "approve").await,
        StatusCode::FORBIDDEN,
        "forbidden",
    )
    .await;
    // Nor may a key the proposer made after proposing.
    let (minted, _) = app.key("Teman Admin", "approver", &["*"]).await;
    problem(
        decide(&app, &minted, id, "approve").await,
        StatusCode::FORBIDDEN,
        "self_approval",
    )
    .await;

    let resp = decide(&app, &apr, id, "approve").await;
    assert_eq!(resp.status(), StatusCode::OK);
    let approved: Value = resp.json().await.unwrap();
    assert_eq!(approved["state"], "approved");
    assert_eq!(
        approved["decision_comment"],
        "checked against last week's file"
    );
    // Decided once only.
    problem(
        decide(&app, &apr, id, "reject").await,
        StatusCode::CONFLICT,
        "invalid_state",
    )
    .await;

    let now = app.get_json(&sub, "/api/modules/customers/rules").await;
    assert_eq!(now["version"], 2);
    assert_eq!(now["rules"], phone_rules());
    assert_eq!(now["proposal"], id);
    // People are masked.
    let approver = now["approved_by"]["display"].as_str().unwrap();
    assert!(!approver.contains("Rahayu"), "{approver}");
    assert!(now["proposed_by"]["key_id"].as_str().is_some());
    let older = app
        .get_json(&sub, "/api/modules/customers/rules?version=1")
        .await;
    assert_eq!(older["rules"], json!([]));
    problem(
        app.get(&sub, "/api/modules/customers/rules?version=7")
            .await,
        StatusCode::NOT_FOUND,
        "not_found",
    )
    .await;
    problem(
        app.get(&sub, "/api/modules/customers/rules?version=x")
            .await,
        StatusCode::UNPROCESSABLE_ENTITY,
        "invalid_parameter",
    )
    .await;
    problem(
        app.get(&sub, "/api/modules/nope/rules").await,
        StatusCode::NOT_FOUND,
        "unknown_module",
    )
    .await;

    let listed = app
        .get_json(&apr, "/api/rule-proposals?module=customers&state=approved")
        .await;
    assert_eq!(listed["proposals"].as_array().unwrap().len(), 1);
    let none = app
        .get_json(&apr, "/api/rule-proposals?state=awaiting_approval")
        .await;
    assert_eq!(none["proposals"], json!([]));
    problem(
        app.get(&apr, "/api/rule-proposals?state=maybe").await,
        StatusCode::UNPROCESSABLE_ENTITY,
        "invalid_parameter",
    )
    .await;

    // The proposal and the decision are in the ledger, and it verifies.
    let events = app.get_json(&app.admin, "/api/events?after=evt_0").await;
    let types: Vec<&str> = events["events"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|e| e["type"].as_str())
        .collect();
    assert!(
        types.contains(&"rules.proposed") && types.contains(&"rules.approved"),
        "{types:?}"
    );
    let ev = events["events"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["type"] == "rules.approved")
        .unwrap();
    assert_eq!(ev["data"]["rule_proposal"]["id"], id);
    let (holds, out) = crate::ledger::verify(&app);
    assert!(holds, "{out}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_malformed_rule_is_refused_when_proposed_naming_it() {
    let app = spawn_app().await;
    let cases = [
        (
            json!([{"id": "x", "column": "no_such", "normalize": "trim"}]),
            "rules[0]",
            "no_such",
        ),
        (
            json!([{"id": "x", "column": "city", "normalize": "shout"}]),
            "rules[0]",
            "shout",
        ),
        (
            json!([{"id": "a", "column": "city", "normalize": "trim"}, {"id": "a", "column": "city", "normalize": "upper"}]),
            "rules[1]",
            "a",
        ),
        (
            json!([{"id": "c", "check": "row.city ==", "message": "m", "columns": ["city"]}]),
            "rules[0]",
            "c",
        ),
        (
            json!([{"id": "c", "check": "row.nope > 1", "message": "m", "columns": ["city"]}]),
            "rules[0]",
            "nope",
        ),
        (
            json!([{"id": "c", "check": "x".repeat(5000), "message": "m", "columns": ["city"]}]),
            "rules[0]",
            "c",
        ),
    ];
    for (rules, parameter, named) in cases {
        let resp = propose(&app, &app.admin, "customers", json!({"rules": rules})).await;
        let body = problem(resp, StatusCode::UNPROCESSABLE_ENTITY, "invalid_parameter").await;
        assert_eq!(body["parameter"], parameter, "{body}");
        assert!(body["detail"].as_str().unwrap().contains(named), "{body}");
    }
    let many: Vec<Value> = (0..201)
        .map(|i| json!({"id": format!("r{i}"), "column": "city", "normalize": "trim"}))
        .collect();
    let resp = propose(&app, &app.admin, "customers", json!({"rules": many})).await;
    problem(resp, StatusCode::UNPROCESSABLE_ENTITY, "invalid_parameter").await;
    let resp = propose(&app, &app.admin, "customers", json!({"rulez": []})).await;
    problem(resp, StatusCode::BAD_REQUEST, "bad_request").await;
    // Only an admin proposes, within its scope.
    let apr = app.approver().await;
    let resp = propose(&app, &apr, "customers", json!({"rules": []})).await;
    problem(resp, StatusCode::FORBIDDEN, "forbidden").await;
    let (scoped, _) = app.key("Dewi Anggraini", "admin", &["orders"]).await;
    let resp = propose(&app, &scoped, "customers", json!({"rules": []})).await;
    problem(resp, StatusCode::FORBIDDEN, "forbidden").await;
    // Nothing was stored.
    let listed = app.get_json(&app.admin, "/api/rule-proposals").await;
    assert_eq!(listed["proposals"], json!([]));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_job_waiting_when_the_rules_change_is_refused_at_commit_as_stale_rules() {
    let app = spawn_app().await;
    let sub = app.submitter().await;
    let apr = app.approver().await;
    let job = app.upload(&sub, "customers", "", CUSTOMERS).await;
    assert_eq!(job["state"], "awaiting_approval");
    assert_eq!(job["rules_version"], 1);
    let id = job["id"].as_str().unwrap();

    let p = proposed(&app, phone_rules()).await;
    let resp = decide(&app, &apr, p["id"].as_str().unwrap(), "approve").await;
    assert_eq!(resp.status(), StatusCode::OK);

    let after = app.act_ok(&apr, id, "approve").await;
    assert_eq!(after["state"], "failed", "{after}");
    assert_eq!(after["problem"]["code"], "stale_rules");
    assert_eq!(app.count("uc_scrm_customers").await, 0);

    // A revision validates the file again under the rules in force.
    let resp = app
        .client
        .post(app.url(&format!("/api/jobs/{id}/revisions")))
        .header("X-API-Key", &sub)
        .json(&json!({}))
        .send()
        .await
        .unwrap();
    let revision: Value = resp.json().await.unwrap();
    assert!(revision["id"].as_str().is_some(), "{revision}");
    let revised = app.wait_done(&sub, revision["id"].as_str().unwrap()).await;
    assert_eq!(revised["rules_version"], 2, "{revised}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rejected_proposal_changes_nothing_and_an_outdated_one_cannot_be_approved() {
    let app = spawn_app().await;
    let apr = app.approver().await;
    let one = proposed(&app, phone_rules()).await;
    let two = proposed(
        &app,
        json!([{"id": "city", "column": "city", "normalize": "title"}]),
    )
    .await;
    assert_eq!(two["version"], 2, "both are proposed against version 1");

    let resp = decide(&app, &apr, one["id"].as_str().unwrap(), "reject").await;
    assert_eq!(resp.status(), StatusCode::OK);
    let rejected: Value = resp.json().await.unwrap();
    assert_eq!(rejected["state"], "rejected");
    assert_eq!(
        app.get_json(&apr, "/api/modules/customers/rules").await["version"],
        1
    );

    let resp = decide(&app, &apr, two["id"].as_str().unwrap(), "approve").await;
    assert_eq!(resp.status(), StatusCode::OK);
    // A third, proposed against version 1 before the second was approved,
    // is outdated now: version 2 is in force.
    let late = app
        .sql("SELECT id FROM ig_rule_proposals WHERE state = 'rejected'")
        .await;
    assert_eq!(late.len(), 1);
    let three = proposed(&app, json!([])).await;
    assert_eq!(three["version"], 3);
    assert_eq!(three["diff"]["removed"].as_array().unwrap().len(), 1);
    let stale = proposed(&app, json!([])).await;
    let resp = decide(&app, &apr, three["id"].as_str().unwrap(), "approve").await;
    assert_eq!(resp.status(), StatusCode::OK);
    let body = problem(
        decide(&app, &apr, stale["id"].as_str().unwrap(), "approve").await,
        StatusCode::CONFLICT,
        "invalid_state",
    )
    .await;
    assert!(
        body["detail"].as_str().unwrap().contains("version 3"),
        "{body}"
    );

    // Events about customers' rules are not for a key scoped elsewhere.
    let (orders_only, _) = app.key("Eko Prasetyo", "approver", &["orders"]).await;
    let events = app.get_json(&orders_only, "/api/events?after=evt_0").await;
    assert!(
        events["events"]
            .as_array()
            .unwrap()
            .iter()
            .all(|e| !e["type"].as_str().unwrap().starts_with("rules.")),
        "{events}"
    );
    problem(
        app.get(
            &orders_only,
            &format!("/api/rule-proposals/{}", two["id"].as_str().unwrap()),
        )
        .await,
        StatusCode::NOT_FOUND,
        "not_found",
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rules_changed_in_the_database_behind_the_gate_break_the_ledger() {
    let app = spawn_app().await;
    let apr = app.approver().await;
    let p = proposed(&app, phone_rules()).await;
    let id = p["id"].as_str().unwrap();
    let resp = decide(&app, &apr, id, "approve").await;
    assert_eq!(resp.status(), StatusCode::OK);
    let (holds, out) = crate::ledger::verify(&app);
    assert!(holds, "{out}");

    app.sql(&format!(
        "UPDATE ig_rule_proposals SET rules = '[]' WHERE id = '{id}'"
    ))
    .await;
    let (holds, out) = crate::ledger::verify(&app);
    assert!(!holds, "{out}");
    assert!(
        out.contains(id) && out.contains("changed in the database"),
        "{out}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn trying_a_proposal_on_a_job_names_the_rows_it_would_change() {
    let app = spawn_app().await;
    let sub = app.submitter().await;
    let apr = app.approver().await;
    let csv = "customer_name,wa_number,city,consumable_cycle_days\n\
        Andi Wijaya,0812-3456-7890,Jakarta,30\n\
        Budi Hartono,+62 812 3456 7890,Bandung,30\n\
        Citra Lestari,bukan nomor,Surabaya,400\n\
        Dewi Anggraini,081100000004,Medan,14\n";
    let job = app.upload(&sub, "customers", "", csv).await;
    assert_eq!(job["counts"]["valid"], 4, "{job}");
    let job_id = job["id"].as_str().unwrap();
    let p = proposed(&app, phone_rules()).await;
    let id = p["id"].as_str().unwrap();
    let try_on = |key: &str, body: Value| {
        app.client
            .post(app.url(&format!("/api/rule-proposals/{id}/try")))
            .header("X-API-Key", key)
            .json(&body)
            .send()
    };
    let resp = try_on(&apr, json!({"job": job_id})).await.unwrap();
    assert_eq!(resp.status(), StatusCode::OK);
    let t: Value = resp.json().await.unwrap();
    assert_eq!(t["now"]["version"], 1);
    assert_eq!(t["now"]["counts"]["valid"], 4, "{t}");
    assert_eq!(t["proposed"]["version"], 2);
    assert_eq!(t["proposed"]["counts"]["errors"], 2, "{t}");
    assert_eq!(t["proposed"]["counts"]["normalized"], 3, "{t}");
    let failing: Vec<u64> = t["newly_failing"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["row"].as_u64().unwrap())
        .collect();
    assert_eq!(failing, [3, 4], "{t}");
    let codes: Vec<&str> = t["newly_failing"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|r| {
            r["errors_proposed"]
                .as_array()
                .unwrap()
                .iter()
                .map(|e| e["code"].as_str().unwrap())
        })
        .collect();
    assert!(
        codes.contains(&"duplicate_in_file") && codes.contains(&"phone") && codes.contains(&"rule"),
        "{codes:?}"
    );
    let normalized = &t["newly_normalized"][0]["normalized"][0];
    assert_eq!(normalized["was"], "0812-3456-7890");
    assert_eq!(normalized["now"], "+6281234567890");
    // Nothing changed: the job and the rules are as they were.
    let again = app.job(&sub, job_id).await;
    assert_eq!(again["counts"], job["counts"]);
    assert_eq!(again["version"], job["version"]);
    assert_eq!(
        app.get_json(&apr, "/api/modules/customers/rules").await["version"],
        1
    );
    // A submitter may not try it; a job of another module is refused.
    problem(
        try_on(&sub, json!({"job": job_id})).await.unwrap(),
        StatusCode::FORBIDDEN,
        "forbidden",
    )
    .await;
    let orders = app.upload(&sub, "orders", "", "order_no,customer_id,sku,qty,amount_idr,order_date\nSO-1,C-1,SKU-1,1,1000,2024-01-01\n").await;
    let resp = try_on(&apr, json!({"job": orders["id"]})).await.unwrap();
    problem(resp, StatusCode::UNPROCESSABLE_ENTITY, "invalid_parameter").await;
    let resp = try_on(&apr, json!({"job": "nope"})).await.unwrap();
    problem(resp, StatusCode::UNPROCESSABLE_ENTITY, "invalid_parameter").await;
    let resp = try_on(&apr, json!({"jobs": job_id})).await.unwrap();
    problem(resp, StatusCode::BAD_REQUEST, "bad_request").await;
}
