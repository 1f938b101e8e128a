//! The tamper-evident ledger: `importgate ledger verify` holds on a ledger
//! the service wrote, and finds an edit, a deletion or a forged state made
//! behind the service's back.

use std::process::Command;

use crate::common::*;

const BIN: &str = env!("CARGO_BIN_EXE_importgate");

fn verify(database: &str) -> (bool, String) {
    let out = Command::new(BIN)
        .args(["ledger", "verify", "--database", database])
        .output()
        .unwrap();
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).to_string(),
    )
}

/// A small ledger: two jobs through several moves.
async fn ledger() -> (TestApp, String) {
    let app = spawn_app().await;
    let (sub, apr) = (app.submitter().await, app.approver().await);
    let job = app.upload(&sub, "customers", "", CUSTOMERS).await;
    let id = job["id"].as_str().unwrap().to_string();
    app.act_ok(&apr, &id, "approve").await;
    let other = app
        .upload(&sub, "customers", "?mode=upsert", CUSTOMERS)
        .await;
    app.act_ok(&sub, other["id"].as_str().unwrap(), "cancel")
        .await;
    (app, id)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_ledger_verifies_as_written() {
    let (app, _) = ledger().await;
    let (ok, out) = verify(&app.database);
    assert!(ok, "{out}");
    assert!(out.contains("7 events chained, 2 jobs"), "{out}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_edited_event_breaks_the_chain_at_that_event() {
    let (app, id) = ledger().await;
    app.sql(&format!(
        "UPDATE ig_job_events SET comment = 'looks fine' WHERE job_id = '{id}' AND n = 3"
    ))
    .await;
    let (ok, out) = verify(&app.database);
    assert!(!ok, "{out}");
    assert!(
        out.contains(&format!("event 3 (job {id}, event 3)")),
        "{out}"
    );
    assert!(out.contains("edited"), "{out}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_deleted_event_breaks_the_chain() {
    let (app, id) = ledger().await;
    app.sql(&format!(
        "DELETE FROM ig_job_events WHERE job_id = '{id}' AND n = 2"
    ))
    .await;
    let (ok, out) = verify(&app.database);
    assert!(!ok, "{out}");
    assert!(out.contains("link 2 is missing"), "{out}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_forged_job_state_is_found() {
    let (app, id) = ledger().await;
    app.sql(&format!(
        "UPDATE ig_jobs SET state = 'rolled_back' WHERE id = '{id}'"
    ))
    .await;
    let (ok, out) = verify(&app.database);
    assert!(!ok, "{out}");
    assert!(
        out.contains("is rolled_back but its ledger ends in committed"),
        "{out}"
    );
}
