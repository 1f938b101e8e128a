//! The Human-Gate: four-eyes, entity tags, moves outside the table, and two
//! approvers at once.

use reqwest::StatusCode;
use serde_json::Value;

use crate::common::*;

const TABLE: &str = "uc_scrm_customers";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn approving_own_job_is_forbidden() {
    let app = spawn_app().await;
    // An approver who uploads is the submitter of that job.
    let (apr, _) = app.key("Siti Rahayu", "approver", &["*"]).await;
    let job = app.upload(&apr, "customers", "", CUSTOMERS).await;
    let id = job["id"].as_str().unwrap();
    problem(
        app.act(&apr, id, "approve", None).await,
        StatusCode::FORBIDDEN,
        "self_approval",
    )
    .await;
    problem(
        app.act(&apr, id, "reject", None).await,
        StatusCode::FORBIDDEN,
        "self_approval",
    )
    .await;
    let job = app.job(&apr, id).await;
    assert_eq!(job["state"], "awaiting_approval");
    assert_eq!(app.count(TABLE).await, 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_rollback_requester_may_not_approve_the_rollback() {
    let app = spawn_app().await;
    let sub = app.submitter().await;
    let (apr, _) = app.key("Siti Rahayu", "approver", &["*"]).await;
    let (apr2, _) = app.key("Eko Prasetyo", "approver", &["*"]).await;
    let job = app.upload(&sub, "customers", "", CUSTOMERS).await;
    let id = job["id"].as_str().unwrap();
    app.act_ok(&apr, id, "approve").await;
    app.act_ok(&apr, id, "rollback").await;
    problem(
        app.act(&apr, id, "approve", None).await,
        StatusCode::FORBIDDEN,
        "self_approval",
    )
    .await;
    assert_eq!(app.count(TABLE).await, 3);
    let job = app.act_ok(&apr2, id, "approve").await;
    assert_eq!(job["state"], "rolled_back");
    assert_eq!(app.count(TABLE).await, 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn self_approval_can_be_allowed_for_demos() {
    let app = spawn_app_with(|s| s.allow_self_approval = true).await;
    let (apr, _) = app.key("Siti Rahayu", "approver", &["*"]).await;
    let job = app.upload(&apr, "customers", "", CUSTOMERS).await;
    let job = app
        .act_ok(&apr, job["id"].as_str().unwrap(), "approve")
        .await;
    assert_eq!(job["state"], "committed");
    assert_eq!(app.count(TABLE).await, 3);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_submitter_key_cannot_decide() {
    let app = spawn_app().await;
    let sub = app.submitter().await;
    let other = app.key("Dewi Anggraini", "submitter", &["*"]).await.0;
    let job = app.upload(&sub, "customers", "", CUSTOMERS).await;
    let id = job["id"].as_str().unwrap();
    problem(
        app.act(&other, id, "approve", None).await,
        StatusCode::FORBIDDEN,
        "forbidden",
    )
    .await;
    problem(
        app.act(&other, id, "reject", None).await,
        StatusCode::FORBIDDEN,
        "forbidden",
    )
    .await;
    assert_eq!(app.count(TABLE).await, 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn approval_honours_if_match() {
    let app = spawn_app().await;
    let (sub, apr) = (app.submitter().await, app.approver().await);
    let job = app.upload(&sub, "customers", "", CUSTOMERS).await;
    let id = job["id"].as_str().unwrap();
    let resp = app.get(&apr, &format!("/api/jobs/{id}")).await;
    let etag = resp.headers()["etag"].to_str().unwrap().to_string();
    let stale = app
        .client
        .post(app.url(&format!("/api/jobs/{id}/approve")))
        .header("X-API-Key", &apr)
        .header("If-Match", "\"job_other-1\"")
        .send()
        .await
        .unwrap();
    let body = problem(
        stale,
        StatusCode::PRECONDITION_FAILED,
        "precondition_failed",
    )
    .await;
    assert_eq!(body["etag"], etag);
    assert_eq!(app.count(TABLE).await, 0);
    let ok = app
        .client
        .post(app.url(&format!("/api/jobs/{id}/approve")))
        .header("X-API-Key", &apr)
        .header("If-Match", &etag)
        .header("Prefer", "wait=30")
        .send()
        .await
        .unwrap();
    assert_eq!(ok.status(), StatusCode::ACCEPTED);
    let job = app.wait_done(&apr, id).await;
    assert_eq!(job["state"], "committed");
    assert_ne!(
        app.get(&apr, &format!("/api/jobs/{id}")).await.headers()["etag"]
            .to_str()
            .unwrap(),
        etag
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn moves_outside_the_state_table_are_invalid_state() {
    let app = spawn_app().await;
    let (sub, apr) = (app.submitter().await, app.approver().await);
    // awaiting_approval: rollback is not a move from here.
    let waiting = app.upload(&sub, "customers", "", CUSTOMERS).await;
    let wid = waiting["id"].as_str().unwrap();
    let body = problem(
        app.act(&sub, wid, "rollback", None).await,
        StatusCode::CONFLICT,
        "invalid_state",
    )
    .await;
    assert_eq!(body["state"], "awaiting_approval");
    // committed: approve, reject and cancel are not.
    let job = app.act_ok(&apr, wid, "approve").await;
    assert_eq!(job["state"], "committed");
    for action in ["approve", "reject", "cancel"] {
        let body = problem(
            app.act(&apr, wid, action, None).await,
            StatusCode::CONFLICT,
            "invalid_state",
        )
        .await;
        assert_eq!(body["state"], "committed", "{action}");
    }
    // invalid and failed jobs are terminal.
    let invalid = app.upload(&sub, "customers", "", "city\nJakarta\n").await;
    let failed = app
        .upload(&sub, "customers", "", "customer_name,wa_number\n,0811\n")
        .await;
    for job in [&invalid, &failed] {
        let id = job["id"].as_str().unwrap();
        for action in ["approve", "reject", "cancel", "rollback"] {
            let who = if action == "cancel" || action == "rollback" {
                &sub
            } else {
                &apr
            };
            problem(
                app.act(who, id, action, None).await,
                StatusCode::CONFLICT,
                "invalid_state",
            )
            .await;
        }
    }
    // rolled_back is terminal too.
    app.act_ok(&sub, wid, "rollback").await;
    app.act_ok(&apr, wid, "approve").await;
    problem(
        app.act(&sub, wid, "rollback", None).await,
        StatusCode::CONFLICT,
        "invalid_state",
    )
    .await;
    assert_eq!(app.count(TABLE).await, 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_approvers_at_once_commit_once() {
    let app = spawn_app().await;
    let sub = app.submitter().await;
    let (a, _) = app.key("Siti Rahayu", "approver", &["*"]).await;
    let (b, _) = app.key("Eko Prasetyo", "approver", &["*"]).await;
    let job = app.upload(&sub, "customers", "", CUSTOMERS).await;
    let id = job["id"].as_str().unwrap();
    let (ra, rb) = tokio::join!(
        app.act(&a, id, "approve", None),
        app.act(&b, id, "approve", None)
    );
    let mut statuses = vec![ra.status(), rb.status()];
    statuses.sort();
    assert_eq!(statuses, vec![StatusCode::ACCEPTED, StatusCode::CONFLICT]);
    let job: Value = app.wait_done(&sub, id).await;
    assert_eq!(job["state"], "committed");
    assert_eq!(job["decisions"].as_array().unwrap().len(), 1);
    assert_eq!(app.count(TABLE).await, 3);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn gate_moves_take_an_optional_comment_body() {
    let app = spawn_app().await;
    let (sub, apr) = (app.submitter().await, app.approver().await);
    let job = app.upload(&sub, "customers", "", CUSTOMERS).await;
    let id = job["id"].as_str().unwrap();
    let bad = app
        .client
        .post(app.url(&format!("/api/jobs/{id}/reject")))
        .header("X-API-Key", &apr)
        .body("{not json")
        .send()
        .await
        .unwrap();
    problem(bad, StatusCode::BAD_REQUEST, "bad_request").await;
    let resp = app
        .act(&apr, id, "reject", Some("duplicate of yesterday's file"))
        .await;
    assert_eq!(resp.status(), StatusCode::ACCEPTED);
    let events = app.get_json(&sub, &format!("/api/jobs/{id}/events")).await;
    assert_eq!(
        events["events"][2]["comment"],
        "duplicate of yesterday's file"
    );
}
