//! The moves of the state table (API.md section 4), each checked against
//! the rows in the target table.

use reqwest::StatusCode;
use serde_json::Value;

use crate::common::*;

const TABLE: &str = "uc_scrm_customers";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn upload_creates_a_validation_job_and_writes_nothing() {
    let app = spawn_app().await;
    let sub = app.submitter().await;
    let resp = app
        .client
        .post(app.url("/api/import/customers"))
        .header("X-API-Key", &sub)
        .header("Content-Type", "text/csv")
        .body(CUSTOMERS)
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), StatusCode::ACCEPTED);
    let location = resp.headers()["location"].to_str().unwrap().to_string();
    assert!(resp.headers().contains_key("etag"));
    let job: Value = resp.json().await.unwrap();
    assert_eq!(
        location,
        format!("/api/jobs/{}", job["id"].as_str().unwrap())
    );
    assert!(job["id"].as_str().unwrap().starts_with("job_"));
    assert_eq!(job["module"], "customers");
    assert_eq!(job["table"], TABLE);
    assert_eq!(job["submitter"]["display"], "Bu***o");
    assert_eq!(job["file"]["format"], "csv");
    assert_eq!(job["file"]["bytes"], CUSTOMERS.len());
    let job = app.wait_done(&sub, job["id"].as_str().unwrap()).await;
    assert_eq!(job["state"], "awaiting_approval");
    assert_eq!(
        app.count(TABLE).await,
        0,
        "an upload never writes the table"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn checked_file_waits_at_the_gate_with_its_preview() {
    let app = spawn_app().await;
    let sub = app.submitter().await;
    let job = app.upload(&sub, "customers", "", CUSTOMERS).await;
    assert_eq!(job["state"], "awaiting_approval");
    assert_eq!(job["counts"]["rows"], 3);
    assert_eq!(job["counts"]["insert"], 3);
    assert_eq!(job["gate"]["action"], "commit");
    assert_eq!(job["gate"]["requested_by"]["display"], "Bu***o");
    let id = job["id"].as_str().unwrap();
    let preview = app.get_json(&sub, &format!("/api/jobs/{id}/preview")).await;
    assert_eq!(preview["total"], 3);
    let first = &preview["rows"][0];
    assert_eq!(first["row"], 2);
    assert_eq!(first["action"], "insert");
    assert_eq!(first["values"]["customer_name"], "Andi Wijaya");
    assert_eq!(
        first["values"]["consumable_cycle_days"], 30,
        "integers are JSON numbers"
    );
    assert!(preview["rows"][1]["values"]["consumable_cycle_days"].is_null());
    assert_eq!(app.count(TABLE).await, 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn missing_required_columns_make_the_job_invalid() {
    let app = spawn_app().await;
    let sub = app.submitter().await;
    let job = app
        .upload(&sub, "customers", "", "customer_name,city\nAndi,Jakarta\n")
        .await;
    assert_eq!(job["state"], "invalid");
    assert_eq!(job["problem"]["code"], "missing_columns");
    assert!(
        job["problem"]["detail"]
            .as_str()
            .unwrap()
            .contains("wa_number")
    );
    assert!(job["gate"].is_null());
    assert_eq!(app.count(TABLE).await, 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn row_errors_fail_the_job_when_on_error_is_fail() {
    let app = spawn_app().await;
    let sub = app.submitter().await;
    let csv = "customer_name,wa_number,consumable_cycle_days\nAndi,0811,30\nBudi,0812,many\n";
    let job = app.upload(&sub, "customers", "", csv).await;
    assert_eq!(job["state"], "failed");
    assert_eq!(job["problem"]["code"], "row_errors");
    assert_eq!(job["counts"]["errors"], 1);
    let id = job["id"].as_str().unwrap();
    let errors = app.get_json(&sub, &format!("/api/jobs/{id}/errors")).await;
    assert_eq!(errors["total"], 1);
    assert_eq!(errors["errors"][0]["row"], 3);
    assert_eq!(errors["errors"][0]["column"], "consumable_cycle_days");
    assert_eq!(errors["errors"][0]["code"], "type");
    assert_eq!(app.count(TABLE).await, 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn skipped_rows_are_left_out_of_the_commit() {
    let app = spawn_app().await;
    let (sub, apr) = (app.submitter().await, app.approver().await);
    let csv = "customer_name,wa_number,consumable_cycle_days\nAndi,0811,30\nBudi,0812,many\n";
    let job = app.upload(&sub, "customers", "?on_error=skip", csv).await;
    assert_eq!(job["state"], "awaiting_approval");
    assert_eq!(job["counts"]["errors"], 1);
    assert_eq!(job["counts"]["valid"], 1);
    let job = app
        .act_ok(&apr, job["id"].as_str().unwrap(), "approve")
        .await;
    assert_eq!(job["state"], "committed");
    let rows = app.sql(&format!("SELECT wa_number FROM {TABLE}")).await;
    assert_eq!(rows, vec![vec![Some("0811".to_string())]]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn approval_by_a_second_key_commits_exactly_the_preview() {
    let app = spawn_app().await;
    let (sub, apr) = (app.submitter().await, app.approver().await);
    let job = app.upload(&sub, "customers", "", CUSTOMERS).await;
    let id = job["id"].as_str().unwrap();
    let job = app.act_ok(&apr, id, "approve").await;
    assert_eq!(job["state"], "committed");
    assert_eq!(job["decisions"][0]["decision"], "approved");
    assert_eq!(job["decisions"][0]["by"]["display"], "Si***u");
    let rows = app
        .sql(&format!(
            "SELECT customer_name, wa_number, city, grade, CAST(consumable_cycle_days AS TEXT) FROM {TABLE} ORDER BY wa_number"
        ))
        .await;
    let s = |v: &str| Some(v.to_string());
    assert_eq!(
        rows,
        vec![
            vec![
                s("Andi Wijaya"),
                s("0811000001"),
                s("Jakarta"),
                s("A"),
                s("30")
            ],
            vec![
                s("Budi Hartono"),
                s("0811000002"),
                s("Bandung"),
                s("B"),
                None
            ],
            vec![
                s("Citra Lestari"),
                s("0811000003"),
                s("Surabaya"),
                None,
                s("14")
            ],
        ]
    );
    let events = app.get_json(&sub, &format!("/api/jobs/{id}/events")).await;
    let names: Vec<&str> = events["events"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["event"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["upload", "checked", "approve", "written"]);
    assert_eq!(events["events"][2]["actor"]["display"], "Si***u");
    assert!(events["events"][3]["actor"].is_null(), "the service writes");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rejection_writes_nothing() {
    let app = spawn_app().await;
    let (sub, apr) = (app.submitter().await, app.approver().await);
    let job = app.upload(&sub, "customers", "", CUSTOMERS).await;
    let id = job["id"].as_str().unwrap();
    let resp = app.act(&apr, id, "reject", Some("wrong branch")).await;
    assert_eq!(resp.status(), StatusCode::ACCEPTED);
    let job: Value = resp.json().await.unwrap();
    assert_eq!(job["state"], "rejected");
    assert_eq!(job["decisions"][0]["comment"], "wrong branch");
    assert_eq!(app.count(TABLE).await, 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_submitter_or_an_admin_may_cancel_but_nobody_else() {
    let app = spawn_app().await;
    let sub = app.submitter().await;
    let other = app.key("Dewi Anggraini", "submitter", &["*"]).await.0;
    let apr = app.approver().await;
    let job = app.upload(&sub, "customers", "", CUSTOMERS).await;
    let id = job["id"].as_str().unwrap();
    problem(
        app.act(&other, id, "cancel", None).await,
        StatusCode::FORBIDDEN,
        "forbidden",
    )
    .await;
    problem(
        app.act(&apr, id, "cancel", None).await,
        StatusCode::FORBIDDEN,
        "forbidden",
    )
    .await;
    let job = app.act_ok(&sub, id, "cancel").await;
    assert_eq!(job["state"], "cancelled");
    // An admin may cancel someone else's job.
    let job = app.upload(&sub, "customers", "", CUSTOMERS).await;
    let job = app
        .act_ok(&app.admin, job["id"].as_str().unwrap(), "cancel")
        .await;
    assert_eq!(job["state"], "cancelled");
    assert_eq!(app.count(TABLE).await, 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn jobs_left_at_the_gate_expire() {
    let app = spawn_app_with(|s| {
        s.limits.approval_secs = 1;
        s.expiry_sweep_ms = 200;
    })
    .await;
    let (sub, apr) = (app.submitter().await, app.approver().await);
    let job = app.upload(&sub, "customers", "", CUSTOMERS).await;
    let id = job["id"].as_str().unwrap();
    let mut state = String::new();
    for _ in 0..100 {
        state = app.job(&sub, id).await["state"]
            .as_str()
            .unwrap()
            .to_string();
        if state == "expired" {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    assert_eq!(state, "expired");
    problem(
        app.act(&apr, id, "approve", None).await,
        StatusCode::CONFLICT,
        "invalid_state",
    )
    .await;
    assert_eq!(app.count(TABLE).await, 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rollback_through_the_gate_undoes_inserts_and_updates() {
    let app = spawn_app().await;
    let (sub, apr) = (app.submitter().await, app.approver().await);
    let first = app.upload(&sub, "customers", "", CUSTOMERS).await;
    app.act_ok(&apr, first["id"].as_str().unwrap(), "approve")
        .await;
    // A second import updates one row and inserts another.
    let csv = "customer_name,wa_number,city\nAndi Wijaya,0811000001,Medan\nDewi,0811000004,Bogor\n";
    let job = app.upload(&sub, "customers", "?mode=upsert", csv).await;
    assert_eq!(job["counts"]["update"], 1);
    assert_eq!(job["counts"]["insert"], 1);
    let id = job["id"].as_str().unwrap();
    app.act_ok(&apr, id, "approve").await;
    assert_eq!(app.count(TABLE).await, 4);
    let job = app.act_ok(&sub, id, "rollback").await;
    assert_eq!(job["state"], "rollback_pending");
    assert_eq!(job["gate"]["action"], "rollback");
    // Four-eyes holds for the rollback too: the requester may not approve it.
    let other_approver = app.key("Eko Prasetyo", "approver", &["*"]).await.0;
    let job = app.act_ok(&other_approver, id, "approve").await;
    assert_eq!(job["state"], "rolled_back");
    let rows = app
        .sql(&format!(
            "SELECT wa_number, city, grade FROM {TABLE} ORDER BY wa_number"
        ))
        .await;
    let s = |v: &str| Some(v.to_string());
    assert_eq!(
        rows,
        vec![
            vec![s("0811000001"), s("Jakarta"), s("A")],
            vec![s("0811000002"), s("Bandung"), s("B")],
            vec![s("0811000003"), s("Surabaya"), None],
        ]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rejected_rollback_leaves_the_job_committed() {
    let app = spawn_app().await;
    let (sub, apr) = (app.submitter().await, app.approver().await);
    let job = app.upload(&sub, "customers", "", CUSTOMERS).await;
    let id = job["id"].as_str().unwrap();
    app.act_ok(&apr, id, "approve").await;
    app.act_ok(&sub, id, "rollback").await;
    let job = app.act_ok(&apr, id, "reject").await;
    assert_eq!(job["state"], "committed");
    assert_eq!(job["decisions"][1]["action"], "rollback");
    assert_eq!(job["decisions"][1]["decision"], "rejected");
    assert_eq!(app.count(TABLE).await, 3);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_commit_fails_with_stale_preview_when_the_table_changed() {
    let app = spawn_app().await;
    let (sub, apr) = (app.submitter().await, app.approver().await);
    let job = app.upload(&sub, "customers", "", CUSTOMERS).await;
    app.act_ok(&apr, job["id"].as_str().unwrap(), "approve")
        .await;
    let update = "customer_name,wa_number,city\nAndi Wijaya,0811000001,Medan\n";
    let job = app.upload(&sub, "customers", "?mode=update", update).await;
    let id = job["id"].as_str().unwrap();
    let preview = app.get_json(&sub, &format!("/api/jobs/{id}/preview")).await;
    assert_eq!(preview["rows"][0]["before"]["city"], "Jakarta");
    // Someone changes the row between the preview and the approval.
    app.sql(&format!(
        "UPDATE {TABLE} SET city = 'Depok' WHERE wa_number = '0811000001'"
    ))
    .await;
    let job = app.act_ok(&apr, id, "approve").await;
    assert_eq!(job["state"], "failed");
    assert_eq!(job["problem"]["code"], "stale_preview");
    assert_eq!(job["problem"]["rows"][0]["row"], 2);
    let rows = app
        .sql(&format!(
            "SELECT city FROM {TABLE} WHERE wa_number = '0811000001'"
        ))
        .await;
    assert_eq!(
        rows,
        vec![vec![Some("Depok".to_string())]],
        "nothing written"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_insert_fails_with_stale_preview_when_a_key_was_taken_meanwhile() {
    let app = spawn_app().await;
    let (sub, apr) = (app.submitter().await, app.approver().await);
    let job = app.upload(&sub, "customers", "", CUSTOMERS).await;
    app.sql(&format!(
        "INSERT INTO {TABLE} (customer_name, wa_number) VALUES ('Zaki', '0811000003')"
    ))
    .await;
    let job = app
        .act_ok(&apr, job["id"].as_str().unwrap(), "approve")
        .await;
    assert_eq!(job["state"], "failed");
    assert_eq!(job["problem"]["code"], "stale_preview");
    assert_eq!(job["problem"]["rows"][0]["row"], 4);
    assert_eq!(
        app.count(TABLE).await,
        1,
        "all or nothing: only the outside row"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_database_error_fails_the_commit_and_writes_nothing() {
    let app = spawn_app().await;
    let (sub, apr) = (app.submitter().await, app.approver().await);
    let job = app.upload(&sub, "customers", "", CUSTOMERS).await;
    // A constraint the catalog knows nothing about rejects the third row.
    let constraint = if app.database.starts_with("sqlite") {
        format!(
            "CREATE TRIGGER no_surabaya BEFORE INSERT ON {TABLE} WHEN NEW.city = 'Surabaya' BEGIN SELECT RAISE(ABORT, 'no Surabaya'); END"
        )
    } else {
        format!("ALTER TABLE {TABLE} ADD CONSTRAINT no_surabaya CHECK (city <> 'Surabaya')")
    };
    app.sql(&constraint).await;
    let job = app
        .act_ok(&apr, job["id"].as_str().unwrap(), "approve")
        .await;
    assert_eq!(job["state"], "failed");
    assert_eq!(job["problem"]["code"], "database_error");
    assert_eq!(app.count(TABLE).await, 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rollback_conflict_undoes_nothing_and_names_the_rows() {
    let app = spawn_app().await;
    let (sub, apr) = (app.submitter().await, app.approver().await);
    let job = app.upload(&sub, "customers", "", CUSTOMERS).await;
    let id = job["id"].as_str().unwrap();
    app.act_ok(&apr, id, "approve").await;
    // Someone edits a committed row afterwards.
    app.sql(&format!(
        "UPDATE {TABLE} SET grade = 'VIP' WHERE wa_number = '0811000002'"
    ))
    .await;
    app.act_ok(&sub, id, "rollback").await;
    let job = app.act_ok(&apr, id, "approve").await;
    assert_eq!(job["state"], "committed");
    assert_eq!(job["problem"]["code"], "rollback_conflict");
    assert_eq!(job["problem"]["rows"].as_array().unwrap().len(), 1);
    assert_eq!(job["problem"]["rows"][0]["row"], 3);
    assert_eq!(app.count(TABLE).await, 3, "nothing undone");
    let events = app.get_json(&sub, &format!("/api/jobs/{id}/events")).await;
    let last = events["events"].as_array().unwrap().last().unwrap().clone();
    assert_eq!(last["event"], "rollback_conflict");
    assert_eq!(last["to"], "committed");
}

/// A rollback deletes a job's inserted rows by their range of ids when
/// they still fill it; this holds it to deleting exactly the job's rows
/// when they do not, and when the job staged other rows between them.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rollback_deletes_exactly_the_jobs_rows_whatever_their_ids() {
    let app = spawn_app().await;
    let (sub, apr) = (app.submitter().await, app.approver().await);
    let cols = "customer_name, wa_number, city, grade, consumable_cycle_days";
    let numbers = || async {
        app.sql(&format!("SELECT wa_number FROM {TABLE} ORDER BY wa_number"))
            .await
            .into_iter()
            .map(|r| r[0].clone().unwrap())
            .collect::<Vec<_>>()
    };
    // Only inserts. Afterwards a committed row is deleted, a row of
    // someone else's goes in, and the deleted row is put back as it was:
    // the job's rows now span a range of ids with another row in it.
    let job = app.upload(&sub, "customers", "", CUSTOMERS).await;
    let id = job["id"].as_str().unwrap();
    app.act_ok(&apr, id, "approve").await;
    app.sql(&format!(
        "DELETE FROM {TABLE} WHERE wa_number = '0811000002'"
    ))
    .await;
    app.sql(&format!(
        "INSERT INTO {TABLE} ({cols}) VALUES ('Lina', '0811000099', 'Depok', NULL, NULL)"
    ))
    .await;
    app.sql(&format!(
        "INSERT INTO {TABLE} ({cols}) VALUES ('Budi Hartono', '0811000002', 'Bandung', 'B', NULL)"
    ))
    .await;
    app.act_ok(&sub, id, "rollback").await;
    let job = app.act_ok(&apr, id, "approve").await;
    assert_eq!(job["state"], "rolled_back", "{job}");
    assert_eq!(numbers().await, ["0811000099"]);

    // Inserts with a skipped bad row between them, after a row of the
    // table's and before another: only the job's two rows go.
    let csv =
        "customer_name,wa_number,city\nDewi,0811000004,Bogor\nEko,,Medan\nFajar,0811000005,Solo\n";
    let job = app.upload(&sub, "customers", "?on_error=skip", csv).await;
    assert_eq!(job["counts"]["insert"], 2, "{job}");
    assert_eq!(job["counts"]["errors"], 1, "{job}");
    let id = job["id"].as_str().unwrap();
    app.act_ok(&apr, id, "approve").await;
    app.sql(&format!(
        "INSERT INTO {TABLE} ({cols}) VALUES ('Gita', '0811000100', 'Bekasi', NULL, NULL)"
    ))
    .await;
    assert_eq!(
        numbers().await,
        ["0811000004", "0811000005", "0811000099", "0811000100"]
    );
    app.act_ok(&sub, id, "rollback").await;
    let job = app.act_ok(&apr, id, "approve").await;
    assert_eq!(job["state"], "rolled_back", "{job}");
    assert_eq!(numbers().await, ["0811000099", "0811000100"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn update_mode_shows_before_and_after_and_unchanged_rows() {
    let app = spawn_app().await;
    let (sub, apr) = (app.submitter().await, app.approver().await);
    let job = app.upload(&sub, "customers", "", CUSTOMERS).await;
    app.act_ok(&apr, job["id"].as_str().unwrap(), "approve")
        .await;
    let csv = "wa_number,customer_name,city\n0811000001,Andi Wijaya,Jakarta\n0811000002,Budi Hartono,Cimahi\n";
    let job = app.upload(&sub, "customers", "?mode=update", csv).await;
    assert_eq!(job["counts"]["unchanged"], 1);
    assert_eq!(job["counts"]["update"], 1);
    let id = job["id"].as_str().unwrap();
    let updates = app
        .get_json(&sub, &format!("/api/jobs/{id}/preview?action=update"))
        .await;
    assert_eq!(updates["total"], 1);
    assert_eq!(updates["rows"][0]["row"], 3);
    assert_eq!(updates["rows"][0]["before"]["city"], "Bandung");
    assert_eq!(updates["rows"][0]["values"]["city"], "Cimahi");
    app.act_ok(&apr, id, "approve").await;
    // Columns absent from the file keep their values.
    let rows = app
        .sql(&format!(
            "SELECT city, grade FROM {TABLE} WHERE wa_number = '0811000002'"
        ))
        .await;
    assert_eq!(
        rows,
        vec![vec![Some("Cimahi".to_string()), Some("B".to_string())]]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn simulation_passes_the_gate_without_touching_tables() {
    let app = spawn_app_with(|s| s.simulate = true).await;
    let (sub, apr) = (app.submitter().await, app.approver().await);
    let job = app.upload(&sub, "customers", "", CUSTOMERS).await;
    assert_eq!(job["simulated"], true);
    let id = job["id"].as_str().unwrap();
    let job = app.act_ok(&apr, id, "approve").await;
    assert_eq!(job["state"], "committed");
    assert_eq!(app.count(TABLE).await, 0);
    app.act_ok(&sub, id, "rollback").await;
    let job = app.act_ok(&apr, id, "approve").await;
    assert_eq!(job["state"], "rolled_back");
    assert_eq!(app.count(TABLE).await, 0);
}
