//! The validation's stage writer (`store::load`), driven directly on the
//! backend under test: every batch is written with its warnings and the job's
//! progress, in file order (PostgreSQL writes two batches at once), and a
//! batch is refused, with nothing of it kept, once the worker's lease went
//! to another worker.

use importgate::ledger::Counts;
use importgate::store::load::Loader;
use importgate::store::rows::{self, StagedRow};
use importgate::store::stage::Stage;
use importgate::validate::RowAction;

use crate::common::{TestApp, spawn_app};
use importgate::ids::JobId;

const CUSTOMERS: &str = "customer_name,wa_number\nBudi Santoso,081200000001\n";
const BATCHES: usize = 7;
const ROWS: usize = 300;

/// A batch of staged rows, each with one warning; `b` numbers the batch.
fn batch(b: usize) -> Vec<StagedRow> {
    (0..ROWS)
        .map(|i| {
            let seq = (b * ROWS + i) as i64;
            StagedRow {
                seq,
                row_no: seq + 2,
                action: RowAction::Insert,
                nkey: Some(format!("[\"K-{seq}\"]")),
                values: vec![],
                vals: None,
                before: None,
                errors: vec![],
                warns: rows::warns_text(&["wa_number"]),
                norm: None,
            }
        })
        .collect()
}

/// A validated job whose stage the test then writes itself.
async fn job(app: &TestApp) -> String {
    let sub = app.submitter().await;
    let job = app.upload(&sub, "customers", "", CUSTOMERS).await;
    let id = job["id"].as_str().expect("id").to_string();
    app.wait_done(&sub, &id).await;
    id
}

/// Writes every batch as worker `owner`; the first error, if any.
async fn write_all(app: &TestApp, id: &str, owner: &str) -> anyhow::Result<()> {
    let id = &JobId::parse(id).expect("a job id");
    let module = app.app.catalog.get("customers").expect("customers").clone();
    let stage = {
        let mut c = app.app.db.acquire().await?;
        Stage::begin(&mut c.conn(), &module, id).await?
    };
    let lease = Some((owner.to_string(), 60_000));
    let mut loader = Loader::start(&app.app.db, &stage, id, lease).await?;
    for b in 0..BATCHES {
        let progress = Counts {
            rows: ((b + 1) * ROWS) as i64,
            ..Counts::default()
        };
        if let Err(e) = loader.load(batch(b), Some(progress)).await {
            loader.finish().await?;
            return Err(e);
        }
    }
    loader.finish().await
}

async fn staged(app: &TestApp, id: &str) -> (i64, i64, String) {
    let n = |sql: String| async move { app.sql(&sql).await[0][0].clone().unwrap_or_default() };
    let stage = n(format!(
        "SELECT CAST(stage AS TEXT) FROM ig_jobs WHERE id = '{id}'"
    ))
    .await;
    let rows = n(format!(
        "SELECT CAST(COUNT(*) AS TEXT) FROM ig_stage_customers WHERE job = {stage}"
    ))
    .await;
    let warnings = n(format!(
        "SELECT CAST(COUNT(warns) AS TEXT) FROM ig_stage_customers WHERE job = {stage}"
    ))
    .await;
    let counts = n(format!("SELECT counts FROM ig_jobs WHERE id = '{id}'")).await;
    (rows.parse().unwrap(), warnings.parse().unwrap(), counts)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_stage_writer_writes_every_batch_and_refuses_one_once_the_lease_is_lost() {
    let app = spawn_app().await;
    let id = job(&app).await;

    // Another worker holds the job: nothing of any batch is kept.
    app.sql(&format!(
        "UPDATE ig_jobs SET lease_owner = 'worker-b', lease_until = 0 WHERE id = '{id}'"
    ))
    .await;
    let refused = write_all(&app, &id, "worker-a").await;
    let why = format!("{:#}", refused.expect_err("a lost lease refuses the batch"));
    assert!(why.contains("went to another worker"), "{why}");
    let (rows, warnings, _) = staged(&app, &id).await;
    assert_eq!(
        (rows, warnings),
        (0, 0),
        "nothing of a refused batch is kept"
    );

    // The lease's holder writes every batch, its warnings and progress.
    app.sql(&format!(
        "UPDATE ig_jobs SET lease_owner = 'worker-a' WHERE id = '{id}'"
    ))
    .await;
    write_all(&app, &id, "worker-a").await.expect("written");
    let (rows, warnings, counts) = staged(&app, &id).await;
    let all = (BATCHES * ROWS) as i64;
    assert_eq!((rows, warnings), (all, all));
    let counts: serde_json::Value = serde_json::from_str(&counts).expect("counts json");
    assert_eq!(counts["rows"], all, "the last batch's progress: {counts}");
    // A row's warning is staged as the column it is about.
    let back = app
        .sql(&format!(
            "SELECT s.warns, CAST(s.row_no AS TEXT) FROM ig_stage_customers s \
             JOIN ig_jobs j ON j.stage = s.job WHERE j.id = '{id}' AND s.seq = 1234"
        ))
        .await;
    assert_eq!(back[0][0].as_deref(), Some("wa_number"));
    assert_eq!(back[0][1].as_deref(), Some("1236"));
    let lease_until = app
        .sql(&format!(
            "SELECT CAST(lease_until AS TEXT) FROM ig_jobs WHERE id = '{id}'"
        ))
        .await;
    let until: i64 = lease_until[0][0].as_deref().unwrap().parse().unwrap();
    assert!(
        until > chrono::Utc::now().timestamp_millis(),
        "the batches renewed the lease"
    );
}
