//! The tamper-evident ledger: `importgate ledger verify` holds on a ledger
//! the service wrote, and finds an edit, a deletion or a forged job row
//! made behind the service's back — also by someone who can write the
//! database and rehash the chain, or who deletes the newest events (the
//! chain is keyed, its head checkpointed outside the database, and job
//! rows are checked against their events).

use std::process::Command;

use crate::common::*;

const BIN: &str = env!("CARGO_BIN_EXE_importgate");

/// `ledger verify` on the app's database with its key; the checkpoint is
/// the service's own unless `checkpoint` is false. It runs in the test's
/// own directory: on PostgreSQL the default checkpoint is looked for in
/// the working directory, where another run's file must not be found.
fn verify_with(app: &TestApp, checkpoint: bool) -> (bool, String) {
    let (key, point) = app.app.settings.ledger_files();
    let mut cmd = Command::new(BIN);
    cmd.current_dir(app.dir())
        .args(["ledger", "verify", "--database", &app.database])
        .arg("--ledger-key-file")
        .arg(&key);
    if checkpoint {
        cmd.arg("--checkpoint").arg(&point);
    }
    let out = cmd.output().unwrap();
    (
        out.status.success(),
        format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        ),
    )
}

pub fn verify(app: &TestApp) -> (bool, String) {
    verify_with(app, false)
}

/// A small ledger: three keys made, then two jobs through several moves.
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
    app.wait_done(&sub, &id).await;
    (app, id)
}

/// The chain position of a job's `n`-th event.
async fn seq_of(app: &TestApp, id: &str, n: i64) -> String {
    app.sql(&format!(
        "SELECT CAST(seq AS TEXT) FROM ig_job_events WHERE job_id = '{id}' AND n = {n}"
    ))
    .await[0][0]
        .clone()
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_ledger_verifies_as_written() {
    let (app, _) = ledger().await;
    let (ok, out) = verify_with(&app, true);
    assert!(ok, "{out}");
    // 3 keys made (the first admin, a submitter, an approver) and 7 moves.
    assert!(out.contains("10 events chained, 2 jobs"), "{out}");
    assert!(out.contains("still holds the head"), "{out}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_edited_event_breaks_the_chain_at_that_event() {
    let (app, id) = ledger().await;
    let seq = seq_of(&app, &id, 3).await;
    app.sql(&format!(
        "UPDATE ig_job_events SET comment = 'looks fine' WHERE job_id = '{id}' AND n = 3"
    ))
    .await;
    let (ok, out) = verify(&app);
    assert!(!ok, "{out}");
    assert!(
        out.contains(&format!("event {seq} (job {id}, event 3)")),
        "{out}"
    );
    assert!(out.contains("edited"), "{out}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_deleted_event_breaks_the_chain() {
    let (app, id) = ledger().await;
    let seq: i64 = seq_of(&app, &id, 2).await.parse().unwrap();
    app.sql(&format!(
        "DELETE FROM ig_job_events WHERE job_id = '{id}' AND n = 2"
    ))
    .await;
    let (ok, out) = verify(&app);
    assert!(!ok, "{out}");
    assert!(out.contains(&format!("link {seq} is missing")), "{out}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_forged_job_state_is_found() {
    let (app, id) = ledger().await;
    app.sql(&format!(
        "UPDATE ig_jobs SET state = 'rolled_back' WHERE id = '{id}'"
    ))
    .await;
    let (ok, out) = verify(&app);
    assert!(!ok, "{out}");
    assert!(
        out.contains("is rolled_back but its ledger ends in committed"),
        "{out}"
    );
}

/// Someone who can write the database edits an event, recomputes every
/// link's hash as an unkeyed chain has it (SHA-256 of the previous hash and
/// the content: 20 lines of script), and removes the seal so that a restart
/// might seal the rewritten chain. Without the key, the chain does not
/// verify, and the service refuses to start on it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_chain_rehashed_without_the_key_does_not_verify() {
    let (app, id) = ledger().await;
    app.sql(&format!(
        "UPDATE ig_job_events SET comment = 'looks fine' WHERE job_id = '{id}' AND n = 3"
    ))
    .await;
    rehash_unkeyed(&app).await;
    let (ok, out) = verify(&app);
    assert!(!ok, "{out}");
    assert!(
        out.contains("event 1 "),
        "broken from the first link: {out}"
    );
    assert!(out.contains("another key"), "{out}");
    let err = importgate::app::App::open(app.app.settings.clone())
        .await
        .err()
        .expect("an unsealed chain beside an existing key is refused")
        .to_string();
    assert!(err.contains("the seal was removed"), "{err}");
}

/// Deleting the newest events (and putting the job row back where they
/// started) leaves a chain that holds by itself; the checkpoint outside
/// the database finds it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deleting_the_newest_events_is_found_by_the_checkpoint() {
    let (app, _) = ledger().await;
    let sub = app.submitter().await;
    let apr = app.approver().await;
    let job = app
        .upload(&sub, "customers", "?mode=upsert", CUSTOMERS)
        .await;
    let id = job["id"].as_str().unwrap().to_string();
    app.act_ok(&apr, &id, "reject").await;
    // The rejection (a gate decision) was checkpointed at once.
    let (ok, out) = verify_with(&app, true);
    assert!(ok, "{out}");
    let last = seq_of(&app, &id, 3).await;
    app.sql(&format!("DELETE FROM ig_job_events WHERE seq = {last}"))
        .await;
    let gate = app
        .sql(&format!("SELECT gate FROM ig_jobs WHERE id = '{id}'"))
        .await;
    app.sql(&format!(
        "UPDATE ig_jobs SET state = 'awaiting_approval', decisions = '[]', gate = '{}' WHERE id = '{id}'",
        gate[0][0].clone().unwrap()
    ))
    .await;
    let (ok, out) = verify(&app);
    assert!(
        ok,
        "without the checkpoint the shortened chain holds: {out}"
    );
    let (ok, out) = verify_with(&app, true);
    assert!(!ok, "{out}");
    assert!(out.contains("the newest events were deleted"), "{out}");
}

/// A key event is checkpointed at once, like a gate decision: deleting
/// the newest key made or revoked is found.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deleting_the_newest_key_event_is_found_by_the_checkpoint() {
    let app = spawn_app().await;
    let (_, id) = app.key("Budi Santoso", "submitter", &["*"]).await;
    app.revoke(&id).await;
    let (ok, out) = verify_with(&app, true);
    assert!(ok, "{out}");
    app.sql("DELETE FROM ig_job_events WHERE seq = (SELECT MAX(seq) FROM ig_job_events)")
        .await;
    app.sql(&format!(
        "UPDATE ig_keys SET revoked_at = NULL WHERE id = '{id}'"
    ))
    .await;
    let (ok, out) = verify_with(&app, true);
    assert!(!ok, "{out}");
    assert!(out.contains("the newest events were deleted"), "{out}");
}

/// A key raised to admin of every module, or un-revoked, in the database
/// (the events untouched) is refused by the service and found by `ledger
/// verify`: a key row must be what its events made it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_key_raised_or_unrevoked_in_the_database_is_refused_and_found() {
    let app = spawn_app().await;
    let (raised, raised_id) = app.key("Budi Santoso", "submitter", &["customers"]).await;
    assert_eq!(
        app.get(&raised, "/api/jobs").await.status(),
        reqwest::StatusCode::OK
    );
    app.sql(&format!(
        "UPDATE ig_keys SET role = 'admin', modules = '[\"*\"]' WHERE id = '{raised_id}'"
    ))
    .await;
    for path in ["/api/keys", "/api/jobs"] {
        let resp = app.get(&raised, path).await;
        assert_eq!(resp.status(), reqwest::StatusCode::UNAUTHORIZED, "{path}");
    }
    let (ok, out) = verify(&app);
    assert!(!ok, "{out}");
    assert!(out.contains(&raised_id) && out.contains("role"), "{out}");
    app.sql(&format!(
        "UPDATE ig_keys SET role = 'submitter', modules = '[\"customers\"]' WHERE id = '{raised_id}'"
    ))
    .await;
    assert_eq!(
        app.get(&raised, "/api/jobs").await.status(),
        reqwest::StatusCode::OK
    );

    let (revoked, revoked_id) = app.key("Siti Rahayu", "approver", &["*"]).await;
    app.revoke(&revoked_id).await;
    app.sql(&format!(
        "UPDATE ig_keys SET revoked_at = NULL WHERE id = '{revoked_id}'"
    ))
    .await;
    let resp = app.get(&revoked, "/api/jobs").await;
    assert_eq!(
        resp.status(),
        reqwest::StatusCode::UNAUTHORIZED,
        "un-revoked"
    );
    let (ok, out) = verify(&app);
    assert!(!ok && out.contains(&revoked_id), "{out}");
}

/// Editing a job's counts or its file's hash in the jobs table is found:
/// the upload's event holds the hash, the validation's last event the
/// counts.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn edited_counts_or_file_hash_are_found() {
    let (app, id) = ledger().await;
    let (ok, out) = verify(&app);
    assert!(ok, "{out}");
    let before = app
        .sql(&format!(
            "SELECT counts, file_sha256 FROM ig_jobs WHERE id = '{id}'"
        ))
        .await;
    let (counts, sha) = (before[0][0].clone().unwrap(), before[0][1].clone().unwrap());
    let edited = counts.replacen("\"errors\":0", "\"errors\":7", 1);
    assert_ne!(edited, counts, "{counts}");
    app.sql(&format!(
        "UPDATE ig_jobs SET counts = '{edited}' WHERE id = '{id}'"
    ))
    .await;
    let (ok, out) = verify(&app);
    assert!(!ok && out.contains("counts"), "{out}");
    app.sql(&format!(
        "UPDATE ig_jobs SET counts = '{counts}', file_sha256 = '{}' WHERE id = '{id}'",
        "0".repeat(64)
    ))
    .await;
    let (ok, out) = verify(&app);
    assert!(!ok && out.contains("file_sha256"), "{out}");
    app.sql(&format!(
        "UPDATE ig_jobs SET file_sha256 = '{sha}' WHERE id = '{id}'"
    ))
    .await;
    let (ok, out) = verify(&app);
    assert!(ok, "{out}");
}

/// Editing a job's submitter or its decisions in the jobs table (the
/// events untouched) is found: the row must be what its events made it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_edited_submitter_or_decision_is_found() {
    let (app, id) = ledger().await;
    let before = app
        .sql(&format!(
            "SELECT submitter, decisions FROM ig_jobs WHERE id = '{id}'"
        ))
        .await;
    let (submitter, decisions) = (before[0][0].clone().unwrap(), before[0][1].clone().unwrap());
    app.sql(&format!(
        "UPDATE ig_jobs SET submitter = 'key_someone' WHERE id = '{id}'"
    ))
    .await;
    let (ok, out) = verify(&app);
    assert!(!ok, "{out}");
    assert!(out.contains("submitter is key_someone"), "{out}");

    app.sql(&format!(
        "UPDATE ig_jobs SET submitter = '{submitter}' WHERE id = '{id}'"
    ))
    .await;
    assert!(verify(&app).0, "put back, it holds");
    let forged = decisions.replace("\"approved\"", "\"rejected\"");
    assert_ne!(forged, decisions);
    app.sql(&format!(
        "UPDATE ig_jobs SET decisions = '{forged}' WHERE id = '{id}'"
    ))
    .await;
    let (ok, out) = verify(&app);
    assert!(!ok, "{out}");
    assert!(out.contains("decisions"), "{out}");
}

/// The service refuses to extend a chain it cannot continue: another key
/// file, or none, on a sealed database.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_service_without_the_ledgers_key_does_not_start() {
    let app = spawn_app().await;
    let dir = tempfile::tempdir().unwrap();
    let other = dir.path().join("other-key");
    std::fs::write(&other, format!("{}\n", "ab".repeat(32))).unwrap();
    let mut settings = app.app.settings.clone();
    settings.ledger_key_file = Some(other);
    let err = importgate::app::App::open(settings.clone())
        .await
        .err()
        .expect("another key refused")
        .to_string();
    assert!(err.contains("not the key this database"), "{err}");
    settings.ledger_key_file = Some(dir.path().join("missing"));
    let err = importgate::app::App::open(settings)
        .await
        .err()
        .expect("no key refused")
        .to_string();
    assert!(err.contains("is missing"), "{err}");
    assert!(!dir.path().join("missing").exists(), "no new key made");
}

/// An unkeyed ledger (no key file, no seal) is checked under the plain
/// hash and sealed with a new key at start; one that was edited is not
/// laundered by sealing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unkeyed_ledger_is_sealed_once_checked() {
    let (app, id) = ledger().await;
    let key_file = app.app.settings.ledger_files().0;
    rehash_unkeyed(&app).await;
    std::fs::remove_file(&key_file).unwrap();
    let reopened = importgate::app::App::open(app.app.settings.clone())
        .await
        .expect("the legacy ledger is sealed");
    reopened.db.close().await;
    assert!(key_file.exists(), "a new key was made");
    let (ok, out) = verify(&app);
    assert!(ok, "{out}");
    assert!(out.contains("10 events chained, 2 jobs"), "{out}");

    app.sql(&format!(
        "UPDATE ig_job_events SET comment = 'edited' WHERE job_id = '{id}' AND n = 2"
    ))
    .await;
    rehash_unkeyed(&app).await;
    app.sql(&format!(
        "UPDATE ig_job_events SET comment = 'edited again' WHERE job_id = '{id}' AND n = 2"
    ))
    .await;
    std::fs::remove_file(&key_file).unwrap();
    let err = importgate::app::App::open(app.app.settings.clone())
        .await
        .err()
        .expect("an edited legacy ledger is not sealed")
        .to_string();
    assert!(err.contains("does not hold"), "{err}");
}

/// Rewrites the app's chain unkeyed — every link's hash the plain SHA-256
/// of the previous hash and its content — and removes the seal.
async fn rehash_unkeyed(app: &TestApp) {
    let db = importgate::store::Db::connect(&app.database).await.unwrap();
    let mut pooled = db.acquire().await.unwrap();
    let links = importgate::store::ledger::links(&mut pooled.conn(), 0, 10_000)
        .await
        .unwrap();
    drop(pooled);
    db.close().await;
    let mut prev = "0".repeat(64);
    for (link, _, _) in links {
        let legacy = link.legacy_hash(&prev);
        app.sql(&format!(
            "UPDATE ig_job_events SET prev_hash = '{prev}', hash = '{legacy}' WHERE seq = {}",
            link.seq
        ))
        .await;
        prev = legacy;
    }
    app.sql("DELETE FROM ig_ledger_seal").await;
}
