//! Several `importgate serve` processes sharing one database, as replicas
//! behind a load balancer: any replica serves any request, a replica killed
//! in the middle of a job leaves it to the others, and two approvals at the
//! same instant on two replicas commit once. Runs on the backend under test
//! (PostgreSQL in the CI's second half; SQLite files work across processes
//! too, which is the restart-recovery case).

use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use importgate::on_conn;
use importgate::store::Db;
use reqwest::{Client, StatusCode};
use serde_json::Value;

use crate::common::{DropDatabase, fresh_database};

const BIN: &str = env!("CARGO_BIN_EXE_importgate");

pub struct Replica {
    pub child: Child,
    pub base: String,
}

impl Drop for Replica {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Replica {
    fn pid(&self) -> u32 {
        self.child.id()
    }
}

pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// The rows a job has staged (its module: orders).
const STAGED_ROWS: &str =
    "SELECT COUNT(*) FROM ig_stage_orders s JOIN ig_jobs j ON j.stage = s.job WHERE j.id = $1";

/// Starts a replica and waits until it answers; returns it and whatever it
/// printed on stdout (the first admin key, on an empty database).
async fn start(db: &str, log: &std::path::Path) -> (Replica, String) {
    start_as(db, log, None, 2).await
}

/// [`start`], as the replica `instance` (else the default, host:port),
/// with leases of `lease` seconds.
async fn start_as(
    db: &str,
    log: &std::path::Path,
    instance: Option<&str>,
    lease: u32,
) -> (Replica, String) {
    let mut args = vec!["--lease-seconds".to_string(), lease.to_string()];
    if let Some(i) = instance {
        args.extend(["--instance".to_string(), i.to_string()]);
    }
    start_with(db, log, "127.0.0.1", &args).await
}

/// [`start`], listening on `host` (the base URL says 127.0.0.1 all the
/// same), with more `serve` arguments.
pub async fn start_with(
    db: &str,
    log: &std::path::Path,
    host: &str,
    extra: &[String],
) -> (Replica, String) {
    let port = free_port();
    let mut args = vec![
        "serve".to_string(),
        "--listen".to_string(),
        format!("{host}:{port}"),
        "--database".to_string(),
        db.to_string(),
        "--shutdown-grace-seconds".to_string(),
        "0".to_string(),
    ];
    args.extend(extra.iter().cloned());
    let out = log.with_extension("out");
    // Every replica of a test shares one ledger key, as they must.
    let dir = log.parent().unwrap();
    let child = Command::new(BIN)
        .args(&args)
        .env("IMPORTGATE_LEDGER_KEY_FILE", dir.join("ledger-key"))
        .env(
            "IMPORTGATE_LEDGER_CHECKPOINT_FILE",
            dir.join("ledger-checkpoint"),
        )
        // Webhooks to the tests' own receivers, retried quickly.
        .env("IMPORTGATE_WEBHOOK_ALLOW_PRIVATE", "true")
        .env("IMPORTGATE_WEBHOOK_RETRY_BASE_SECONDS", "0.2")
        .stdout(std::fs::File::create(&out).unwrap())
        .stderr(std::fs::File::create(log).unwrap())
        .stdin(Stdio::null())
        .spawn()
        .unwrap();
    let replica = Replica {
        child,
        base: format!("http://127.0.0.1:{port}"),
    };
    let client = Client::new();
    for _ in 0..200 {
        if client
            .get(format!("{}/readyz", replica.base))
            .send()
            .await
            .is_ok_and(|r| r.status().is_success())
        {
            let printed = std::fs::read_to_string(&out).unwrap_or_default();
            return (replica, printed);
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!(
        "replica did not start: {}",
        std::fs::read_to_string(log).unwrap_or_default()
    );
}

/// The key the first replica on an empty database printed.
fn first_admin_key(printed: &str) -> String {
    printed
        .lines()
        .find(|l| l.starts_with("igk_"))
        .expect("first admin key")
        .to_string()
}

async fn create_key(client: &Client, base: &str, admin: &str, name: &str, role: &str) -> String {
    let resp = client
        .post(format!("{base}/api/keys"))
        .header("X-API-Key", admin)
        .json(&serde_json::json!({"name": name, "role": role}))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), StatusCode::CREATED);
    resp.json::<Value>().await.unwrap()["key"]
        .as_str()
        .unwrap()
        .to_string()
}

/// (state, lease owner) of a job, read straight from the database.
async fn lease(db: &Db, id: &str) -> (String, Option<String>) {
    let mut pooled = db.acquire().await.unwrap();
    let mut conn = pooled.conn();
    on_conn!(&mut conn, c => sqlx::query_as("SELECT state, lease_owner FROM ig_jobs WHERE id = $1")
        .bind(id).fetch_one(c).await.unwrap())
}

async fn count(db: &Db, sql: &str, id: Option<&str>) -> i64 {
    // MySQL's `SUM` of integers is a `DECIMAL`.
    let sum_as_integer;
    let sql = if matches!(db, Db::Mysql(_)) {
        sum_as_integer = sql.replace("SUM(qty)", "CAST(SUM(qty) AS SIGNED)");
        sum_as_integer.as_str()
    } else {
        sql
    };
    let mut pooled = db.acquire().await.unwrap();
    let mut conn = pooled.conn();
    on_conn!(&mut conn, c => {
        let mut q = sqlx::query_scalar(sql);
        if let Some(id) = id {
            q = q.bind(id);
        }
        q.fetch_one(c).await.unwrap()
    })
}

/// The replica whose process holds the job's lease (owners are
/// `<instance>/w-<pid>-…`).
fn holder(replicas: &[Replica], owner: &str) -> Option<usize> {
    let process = owner.rsplit('/').next()?;
    let pid: u32 = process.split('-').nth(1)?.parse().ok()?;
    replicas.iter().position(|r| r.pid() == pid)
}

/// Waits until some replica holds the job in `state`; returns its index.
async fn wait_for_holder(db: &Db, replicas: &[Replica], id: &str, state: &str) -> usize {
    let deadline = Instant::now() + Duration::from_secs(60);
    while Instant::now() < deadline {
        if let (s, Some(owner)) = lease(db, id).await
            && s == state
            && let Some(i) = holder(replicas, &owner)
        {
            return i;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!("no replica took job {id} in state {state}");
}

async fn wait_state(client: &Client, base: &str, key: &str, id: &str, want: &str) -> Value {
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        let job = get_json(client, base, key, &format!("/api/jobs/{id}")).await;
        if job["state"] == want {
            return job;
        }
        assert!(Instant::now() < deadline, "job stuck: {job}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// `GET {base}{path}` with `key`, as JSON.
async fn get_json(client: &Client, base: &str, key: &str, path: &str) -> Value {
    client
        .get(format!("{base}{path}"))
        .header("X-API-Key", key)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap()
}

/// A job's ledger as the API shows it, and its events' names in order.
async fn events(client: &Client, base: &str, key: &str, id: &str) -> (Value, Vec<String>) {
    let events = get_json(client, base, key, &format!("/api/jobs/{id}/events")).await;
    let names = events["events"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["event"].as_str().unwrap().to_string())
        .collect();
    (events, names)
}

/// Posts a CSV to `{base}/api/import/{target}` (`target` the module and
/// query), waiting up to `wait` seconds for its validation (`Prefer: wait`)
/// if given; the answer's status and the job's id.
async fn upload(
    client: &Client,
    base: &str,
    target: &str,
    key: &str,
    csv: String,
    wait: Option<u32>,
) -> (StatusCode, String) {
    let mut request = client
        .post(format!("{base}/api/import/{target}"))
        .header("X-API-Key", key)
        .header("Content-Type", "text/csv");
    if let Some(seconds) = wait {
        request = request.header("Prefer", format!("wait={seconds}"));
    }
    let resp = request.body(csv).send().await.unwrap();
    let status = resp.status();
    let job: Value = resp.json().await.unwrap();
    (status, job["id"].as_str().unwrap().to_string())
}

fn orders_csv(rows: usize) -> String {
    orders_csv_shifted(rows, 0)
}

/// Orders whose quantity is `1 + (i + shift) % 9`: a shift changes every row.
fn orders_csv_shifted(rows: usize, shift: usize) -> String {
    let mut csv = String::with_capacity(rows * 80);
    csv.push_str("order_no,customer_id,sku,qty,amount_idr,order_date,status,payment_method\n");
    for i in 0..rows {
        csv.push_str(&format!(
            "SO-{i:07},C-{:05},SKU-{:03},{},{},2024-03-{:02},paid,transfer\n",
            i % 5000,
            i % 300,
            1 + (i + shift) % 9,
            15000 * (1 + i % 40),
            1 + i % 28
        ));
    }
    csv
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn replicas_finish_the_jobs_of_a_replica_killed_mid_validation_and_mid_commit() {
    let dir = tempfile::tempdir().unwrap();
    let url = fresh_database(dir.path()).await;
    let _drop = DropDatabase(url.clone());
    let (first, printed) = start(&url, &dir.path().join("r0.log")).await;
    let admin = first_admin_key(&printed);
    let (second, _) = start(&url, &dir.path().join("r1.log")).await;
    let (third, _) = start(&url, &dir.path().join("r2.log")).await;
    let mut replicas = vec![first, second, third];
    let db = Db::connect(&url).await.unwrap();
    let client = Client::new();
    let base = replicas[0].base.clone();
    let sub = create_key(&client, &base, &admin, "Budi Santoso", "submitter").await;
    let apr = create_key(&client, &base, &admin, "Siti Rahayu", "approver").await;

    const ROWS: usize = 30_000;
    let (status, id) = upload(
        &client,
        &replicas[1].base,
        "orders",
        &sub,
        orders_csv(ROWS),
        None,
    )
    .await;
    assert_eq!(status, StatusCode::ACCEPTED);

    // Kill the replica validating the file, once it is part-way through.
    let v = wait_for_holder(&db, &replicas, &id, "validating").await;
    let deadline = Instant::now() + Duration::from_secs(60);
    while count(&db, STAGED_ROWS, Some(&id)).await == 0 {
        assert!(Instant::now() < deadline, "validation never started");
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let killed = replicas.remove(v);
    drop(killed);
    assert_eq!(
        lease(&db, &id).await.0,
        "validating",
        "killed mid-validation"
    );
    let survivor = replicas[0].base.clone();
    let job = wait_state(&client, &survivor, &sub, &id, "awaiting_approval").await;
    assert_eq!(job["counts"]["rows"], ROWS as i64);
    assert_eq!(job["counts"]["insert"], ROWS as i64);
    assert_eq!(count(&db, STAGED_ROWS, Some(&id)).await, ROWS as i64);

    // Approve; it commits on whichever replica claims it.
    approve(&client, &survivor, &apr, &id).await;
    wait_state(&client, &survivor, &sub, &id, "committed").await;
    assert_eq!(
        count(&db, "SELECT COUNT(*) FROM uc_sales_orders", None).await,
        ROWS as i64
    );

    // A second large file changes every row and adds more; kill the replica
    // committing it while its transaction is open.
    let csv = orders_csv_shifted(ROWS + 1000, 1);
    let (_, id) = upload(
        &client,
        &survivor,
        "orders?mode=upsert",
        &sub,
        csv,
        Some(60),
    )
    .await;
    let job = wait_state(&client, &survivor, &sub, &id, "awaiting_approval").await;
    assert_eq!(job["counts"]["update"], ROWS as i64);
    assert_eq!(job["counts"]["insert"], 1000);
    let sum_before = count(&db, "SELECT SUM(qty) FROM uc_sales_orders", None).await;
    let postgres = url.starts_with("postgres");
    // On PostgreSQL, a lock held here on one row it updates stops the commit
    // at its first write to the table, after it has taken the table and
    // checked the preview: a kill then is certainly mid-transaction. (SQLite has one writer at a time, so there
    // the replica is killed as soon as it holds the job.)
    let mut blocker = None;
    if postgres {
        let mut tx = db.begin().await.unwrap();
        on_conn!(&mut tx.conn(), c => {
            sqlx::query("SELECT id FROM uc_sales_orders ORDER BY id LIMIT 1 FOR UPDATE")
                .execute(c).await.unwrap();
        });
        blocker = Some(tx);
    }
    approve(&client, &survivor, &apr, &id).await;
    let c = wait_for_holder(&db, &replicas, &id, "committing").await;
    if postgres {
        wait_for_blocked_update(&db).await;
    }
    let killed = replicas.remove(c);
    drop(killed);
    if let Some(tx) = blocker {
        tx.rollback().await.unwrap();
    }
    assert_eq!(lease(&db, &id).await.0, "committing", "killed mid-commit");
    assert_eq!(
        count(&db, "SELECT COUNT(*) FROM uc_sales_orders", None).await,
        ROWS as i64,
        "nothing of the killed commit"
    );
    assert_eq!(
        count(&db, "SELECT SUM(qty) FROM uc_sales_orders", None).await,
        sum_before
    );

    let last = replicas[0].base.clone();
    let job = wait_state(&client, &last, &sub, &id, "committed").await;
    assert!(job["problem"].is_null(), "{job}");
    let total = (ROWS + 1000) as i64;
    assert_eq!(
        count(&db, "SELECT COUNT(*) FROM uc_sales_orders", None).await,
        total
    );
    assert_eq!(
        count(
            &db,
            "SELECT COUNT(DISTINCT order_no) FROM uc_sales_orders",
            None
        )
        .await,
        total,
        "every row exactly once"
    );
    let want: i64 = (0..ROWS + 1000).map(|i| 1 + ((i + 1) % 9) as i64).sum();
    assert_eq!(
        count(&db, "SELECT SUM(qty) FROM uc_sales_orders", None).await,
        want,
        "every update applied"
    );
    let (_, names) = events(&client, &last, &sub, &id).await;
    assert_eq!(
        names,
        ["upload", "checked", "approve", "written"],
        "each move once"
    );
    db.close().await;
}

async fn approve(client: &Client, base: &str, key: &str, id: &str) {
    let resp = client
        .post(format!("{base}/api/jobs/{id}/approve"))
        .header("X-API-Key", key)
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), StatusCode::ACCEPTED);
}

/// Waits until a PostgreSQL backend is stuck on a lock while updating the
/// orders table (the commit, stopped by the test's lock).
async fn wait_for_blocked_update(db: &Db) {
    wait_for_blocked(db, "UPDATE \"uc_sales_orders\"").await
}

/// Waits until a PostgreSQL backend is stuck on a lock in a statement
/// that starts with `statement`.
async fn wait_for_blocked(db: &Db, statement: &str) {
    let deadline = Instant::now() + Duration::from_secs(60);
    let sql = format!(
        "SELECT COUNT(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' \
         AND query LIKE '{statement}%'"
    );
    while count(db, &sql, None).await == 0 {
        assert!(
            Instant::now() < deadline,
            "the commit never reached the table"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_approvals_on_two_replicas_at_once_commit_once() {
    let dir = tempfile::tempdir().unwrap();
    let url = fresh_database(dir.path()).await;
    let _drop = DropDatabase(url.clone());
    let (a, printed) = start(&url, &dir.path().join("a.log")).await;
    let admin = first_admin_key(&printed);
    let (b, _) = start(&url, &dir.path().join("b.log")).await;
    let client = Client::new();
    let sub = create_key(&client, &a.base, &admin, "Budi Santoso", "submitter").await;
    let apr1 = create_key(&client, &a.base, &admin, "Siti Rahayu", "approver").await;
    let apr2 = create_key(&client, &b.base, &admin, "Eko Prasetyo", "approver").await;
    let db = Db::connect(&url).await.unwrap();
    for round in 0..5 {
        let csv = orders_csv(200 + round);
        let (_, id) = upload(&client, &a.base, "orders?mode=upsert", &sub, csv, Some(30)).await;
        let approve = |base: String, key: String| {
            let client = client.clone();
            let id = id.clone();
            async move {
                client
                    .post(format!("{base}/api/jobs/{id}/approve"))
                    .header("X-API-Key", key)
                    .send()
                    .await
                    .unwrap()
                    .status()
            }
        };
        let (ra, rb) = tokio::join!(
            approve(a.base.clone(), apr1.clone()),
            approve(b.base.clone(), apr2.clone())
        );
        let mut statuses = [ra, rb];
        statuses.sort();
        assert_eq!(
            statuses,
            [StatusCode::ACCEPTED, StatusCode::CONFLICT],
            "round {round}"
        );
        let job = wait_state(&client, &b.base, &sub, &id, "committed").await;
        assert_eq!(job["decisions"].as_array().unwrap().len(), 1);
        assert_eq!(
            count(&db, "SELECT COUNT(*) FROM uc_sales_orders", None).await,
            200 + round as i64
        );
        assert_eq!(
            count(
                &db,
                "SELECT COUNT(*) FROM ig_job_events WHERE job_id = $1 AND event = 'written'",
                Some(&id)
            )
            .await,
            1
        );
    }
    db.close().await;
}

/// SIGTERM: the process stops at once and hands its running job back (the
/// lease released, not left to lapse); the next process to start resumes it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_hands_running_work_back() {
    let dir = tempfile::tempdir().unwrap();
    let url = fresh_database(dir.path()).await;
    let _drop = DropDatabase(url.clone());
    let (first, printed) = start(&url, &dir.path().join("first.log")).await;
    let admin = first_admin_key(&printed);
    let db = Db::connect(&url).await.unwrap();
    let client = Client::new();
    let sub = create_key(&client, &first.base, &admin, "Budi Santoso", "submitter").await;
    const ROWS: usize = 150_000;
    let (_, id) = upload(&client, &first.base, "orders", &sub, orders_csv(ROWS), None).await;
    let replicas = vec![first];
    wait_for_holder(&db, &replicas, &id, "validating").await;
    while count(&db, STAGED_ROWS, Some(&id)).await == 0 {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let mut first = replicas.into_iter().next().unwrap();
    let asked = Instant::now();
    let term = Command::new("kill")
        .args(["-TERM", &first.pid().to_string()])
        .status()
        .unwrap();
    assert!(term.success());
    let status = first.child.wait().unwrap();
    assert!(
        asked.elapsed() < Duration::from_secs(5),
        "stopped promptly: {:?}",
        asked.elapsed()
    );
    assert!(status.success(), "a clean exit: {status:?}");
    let (state, owner) = lease(&db, &id).await;
    assert_eq!(state, "validating", "handed back, not finished");
    assert_eq!(owner, None, "the lease is released, not left to lapse");

    // The second process validates 150k rows while other tests load the
    // machine: with 2 s leases a heartbeat waiting for SQLite's write lock
    // lapsed, and its other worker took the job mid-run. The hand-back is
    // what this test is about; the lease only has to outlast the run.
    let (second, _) = start_as(&url, &dir.path().join("second.log"), None, 30).await;
    let job = wait_state(&client, &second.base, &sub, &id, "awaiting_approval").await;
    assert_eq!(job["counts"]["rows"], ROWS as i64);
    assert_eq!(count(&db, STAGED_ROWS, Some(&id)).await, ROWS as i64);
    db.close().await;
}

/// A graceful stop appends the chain's head to the checkpoint: the moves
/// the workers made since the last gate decision or key event (an upload
/// validated) are covered before the process ends.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_graceful_stop_checkpoints_the_ledgers_head() {
    let dir = tempfile::tempdir().unwrap();
    let url = fresh_database(dir.path()).await;
    let _drop = DropDatabase(url.clone());
    let (mut replica, printed) = start(&url, &dir.path().join("a.log")).await;
    let admin = first_admin_key(&printed);
    let client = Client::new();
    let sub = create_key(&client, &replica.base, &admin, "Budi Santoso", "submitter").await;
    let (_, id) = upload(&client, &replica.base, "orders", &sub, orders_csv(5), None).await;
    wait_state(&client, &replica.base, &sub, &id, "awaiting_approval").await;
    let term = Command::new("kill")
        .args(["-TERM", &replica.pid().to_string()])
        .status()
        .unwrap();
    assert!(term.success());
    assert!(replica.child.wait().unwrap().success());
    let db = Db::connect(&url).await.unwrap();
    let head = count(&db, "SELECT MAX(seq) FROM ig_job_events", None).await;
    db.close().await;
    let text = std::fs::read_to_string(dir.path().join("ledger-checkpoint")).unwrap();
    let last = text.lines().last().unwrap_or_default();
    let links: i64 = last.split(' ').next().unwrap().parse().unwrap();
    assert_eq!(links, head, "the checkpoint's last head: {text}");
}

/// Runs statements with text parameters, straight on the database.
async fn exec(db: &Db, sql: &str, params: &[&str]) {
    let mut pooled = db.acquire().await.unwrap();
    let mut conn = pooled.conn();
    on_conn!(&mut conn, c => {
        let mut q = sqlx::query(sql);
        for p in params {
            q = q.bind(*p);
        }
        q.execute(c).await.unwrap().rows_affected()
    });
}

/// Uploads a CSV of technicians (upsert mode) and waits for its preview.
async fn upload_technicians(client: &Client, base: &str, key: &str, csv: &str) -> String {
    let target = "technicians?mode=upsert&on_error=skip";
    let (_, id) = upload(client, base, target, key, csv.to_string(), None).await;
    wait_state(client, base, key, &id, "awaiting_approval").await;
    id
}

/// The whole preview of a job, as the API shows it.
async fn preview(client: &Client, base: &str, key: &str, id: &str) -> Value {
    get_json(client, base, key, &format!("/api/jobs/{id}/preview")).await
}

/// A service upgraded from the release that staged rows as JSON in
/// `ig_job_rows` moves them into the typed stage tables at its first start:
/// a job waiting at the gate keeps its preview (updates, unchanged rows,
/// inserts, a row with a failed cell) and commits and rolls back as before,
/// their before-images whole (the stage gets its `same` mask back, null).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_upgrade_moves_rows_staged_as_json_into_the_stage_tables() {
    if crate::common::mysql_server().is_some() {
        // No MySQL database of the release that staged rows as JSON exists.
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let url = fresh_database(dir.path()).await;
    let _drop = DropDatabase(url.clone());
    let (first, printed) = start(&url, &dir.path().join("first.log")).await;
    let admin = first_admin_key(&printed);
    let client = Client::new();
    let sub = create_key(&client, &first.base, &admin, "Budi Santoso", "submitter").await;
    let apr = create_key(&client, &first.base, &admin, "Siti Rahayu", "approver").await;
    let seed = "tech_name,phone,city,rating,active\n\
Andi,0812000001,Jakarta,4.50,true\n\
Budi,0812000002,Bandung,3.75,false\n";
    let seeded = upload_technicians(&client, &first.base, &sub, seed).await;
    approve(&client, &first.base, &apr, &seeded).await;
    wait_state(&client, &first.base, &sub, &seeded, "committed").await;
    let csv = "tech_name,phone,city,rating,active\n\
Andi,0812000001,Depok,4.5,true\n\
Budi,0812000002,Bandung,3.75,false\n\
Citra,0812000003,Medan,lima,true\n\
Dewi,0812000004,Bogor,5,true\n";
    let waiting = upload_technicians(&client, &first.base, &sub, csv).await;
    let before = [
        preview(&client, &first.base, &sub, &seeded).await,
        preview(&client, &first.base, &sub, &waiting).await,
    ];
    let actions: Vec<&Value> = before[1]["rows"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| &r["action"])
        .collect();
    assert_eq!(actions, ["update", "unchanged", "error", "insert"]);
    drop(first);

    // Rows staged as JSON: every job's rows in ig_job_rows, their values
    // JSON, as the preview shows them.
    let db = Db::connect(&url).await.unwrap();
    exec(
        &db,
        "CREATE TABLE ig_job_rows (job_id TEXT NOT NULL, seq BIGINT NOT NULL, \
         row_no BIGINT NOT NULL, action TEXT NOT NULL, nkey TEXT, vals TEXT NOT NULL, \
         before TEXT, PRIMARY KEY (job_id, seq))",
        &[],
    )
    .await;
    exec(
        &db,
        "INSERT INTO ig_job_rows (job_id, seq, row_no, action, nkey, vals, before) \
         SELECT j.id, s.seq, s.row_no, s.action, s.nkey, '{}', NULL \
         FROM ig_stage_technicians s JOIN ig_jobs j ON j.stage = s.job",
        &[],
    )
    .await;
    for (id, shown) in [&seeded, &waiting].into_iter().zip(&before) {
        for row in shown["rows"].as_array().unwrap() {
            let (vals, row_no) = (row["values"].to_string(), row["row"].to_string());
            exec(
                &db,
                "UPDATE ig_job_rows SET vals = $1 WHERE job_id = $2 AND row_no = CAST($3 AS BIGINT)",
                &[&vals, id, &row_no],
            )
            .await;
            if let Some(before) = row.get("before").filter(|b| !b.is_null()) {
                exec(
                    &db,
                    "UPDATE ig_job_rows SET before = $1 \
                     WHERE job_id = $2 AND row_no = CAST($3 AS BIGINT)",
                    &[&before.to_string(), id, &row_no],
                )
                .await;
            }
        }
    }
    exec(&db, "DELETE FROM ig_stage_technicians", &[]).await;
    // Nor had its stage tables the mask of the columns an update leaves
    // alone: the moved rows' before-images are whole.
    exec(
        &db,
        "ALTER TABLE ig_stage_technicians DROP COLUMN same",
        &[],
    )
    .await;
    exec(&db, "UPDATE ig_jobs SET columns = NULL", &[]).await;

    let (second, _) = start(&url, &dir.path().join("second.log")).await;
    let after = [
        preview(&client, &second.base, &sub, &seeded).await,
        preview(&client, &second.base, &sub, &waiting).await,
    ];
    assert_eq!(after, before, "the previews survive the upgrade");
    let mut pooled = db.acquire().await.unwrap();
    let mut conn = pooled.conn();
    let gone = on_conn!(&mut conn, c => sqlx::query("SELECT 1 FROM ig_job_rows")
        .fetch_optional(c).await.is_err());
    drop(pooled);
    assert!(gone, "the old table is dropped once its rows moved");

    // The moved rows commit and roll back as the preview said.
    let cities = "SELECT COUNT(*) FROM uc_technicians WHERE \
                  (phone = '0812000001' AND city = 'Depok') OR phone IN ('0812000003', '0812000004')";
    approve(&client, &second.base, &apr, &waiting).await;
    wait_state(&client, &second.base, &sub, &waiting, "committed").await;
    assert_eq!(
        count(&db, cities, None).await,
        2,
        "Andi updated, Dewi inserted"
    );
    let resp = client
        .post(format!("{}/api/jobs/{waiting}/rollback", second.base))
        .header("X-API-Key", &sub)
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), StatusCode::ACCEPTED);
    approve(&client, &second.base, &apr, &waiting).await;
    wait_state(&client, &second.base, &sub, &waiting, "rolled_back").await;
    assert_eq!(count(&db, cities, None).await, 0, "back as it was");
    assert_eq!(
        count(&db, "SELECT COUNT(*) FROM uc_technicians", None).await,
        2
    );
    db.close().await;
}

/// A database the service's earlier migration runner set up (each step run
/// in order, the number of the last in `ig_schema`) is adopted at its
/// first start under sqlx's migrator: the steps it ran are recorded in
/// `_sqlx_migrations` with the checksums of the migration files, the steps
/// it lacked are applied, its rows stay, the service is ready, and
/// `ig_schema` stays as it was for replicas still running the runner. A
/// second start checks the recorded checksums against the files and finds
/// nothing to do.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_database_of_the_earlier_migration_runner_is_adopted() {
    use sha2::{Digest, Sha384};
    if crate::common::mysql_server().is_some() {
        // No MySQL database of the earlier runner exists to adopt.
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let url = fresh_database(dir.path()).await;
    let _drop = DropDatabase(url.clone());
    let backend = if url.starts_with("sqlite") {
        "sqlite"
    } else {
        "postgres"
    };
    let files = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("migrations")
        .join(backend);
    let mut steps: Vec<_> = std::fs::read_dir(&files)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    steps.sort();
    assert!(steps.len() >= 15, "{steps:?}");
    let total = steps.len() as i64;

    // What the runner left after its twelfth step.
    let db = Db::connect(&url).await.unwrap();
    exec(&db, "CREATE TABLE ig_schema (version BIGINT NOT NULL)", &[]).await;
    for (n, step) in steps.iter().take(12).enumerate() {
        let sql = std::fs::read_to_string(step).unwrap();
        let mut pooled = db.acquire().await.unwrap();
        on_conn!(&mut pooled.conn(), c => sqlx::raw_sql(&sql).execute(c).await.unwrap().rows_affected());
        let done = format!("INSERT INTO ig_schema (version) VALUES ({})", n + 1);
        exec(&db, &done, &[]).await;
    }
    let counted = "SELECT COUNT(*) FROM ig_counters WHERE name = 'stage'";
    assert_eq!(count(&db, counted, None).await, 1, "step 4's row");

    let client = Client::new();
    for round in ["first", "second"] {
        let log = dir.path().join(format!("{round}.log"));
        let (replica, _) = start(&url, &log).await;
        let ready = client
            .get(format!("{}/readyz", replica.base))
            .send()
            .await
            .unwrap();
        assert_eq!(ready.status(), StatusCode::OK, "{round} start");
        drop(replica);
        let applied = "SELECT COUNT(*) FROM _sqlx_migrations WHERE success";
        assert_eq!(count(&db, applied, None).await, total, "{round} start");
        let adopted = "SELECT COUNT(*) FROM _sqlx_migrations WHERE execution_time = -1";
        assert_eq!(count(&db, adopted, None).await, 12, "{round} start");
        assert_eq!(count(&db, "SELECT COUNT(*) FROM ig_schema", None).await, 12);
        assert_eq!(count(&db, counted, None).await, 1, "the rows stay");
        // Steps 14 and 15: the stage's breaks, the chunks' codec.
        let breaks = "SELECT COUNT(*) FROM ig_stage_breaks";
        assert_eq!(count(&db, breaks, None).await, 0);
        let codec = "SELECT COUNT(*) FROM ig_blob_chunks WHERE codec = 0";
        assert_eq!(count(&db, codec, None).await, 0);
    }
    let mut pooled = db.acquire().await.unwrap();
    let recorded: Vec<(i64, Vec<u8>)> = on_conn!(&mut pooled.conn(), c => sqlx::query_as(
        "SELECT version, checksum FROM _sqlx_migrations ORDER BY version")
        .fetch_all(c).await.unwrap());
    let expected: Vec<(i64, Vec<u8>)> = (steps.iter().enumerate())
        .map(|(n, step)| {
            let sql = std::fs::read(step).unwrap();
            (n as i64 + 1, Sha384::digest(&sql).to_vec())
        })
        .collect();
    assert_eq!(recorded, expected, "each step with its file's checksum");
    drop(pooled);
    db.close().await;
}

/// A replica killed mid-validation and started again as the same instance
/// takes its job back at once — not after the lease lapses — and the ledger
/// notes the interrupted attempt.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_restarted_replica_takes_its_own_work_back_at_once() {
    let dir = tempfile::tempdir().unwrap();
    let url = fresh_database(dir.path()).await;
    let _drop = DropDatabase(url.clone());
    // Leases far longer than the test may take: only taking back helps.
    const LEASE: u32 = 120;
    let (first, printed) = start_as(&url, &dir.path().join("a0.log"), Some("alpha"), LEASE).await;
    let admin = first_admin_key(&printed);
    let db = Db::connect(&url).await.unwrap();
    let client = Client::new();
    let sub = create_key(&client, &first.base, &admin, "Budi Santoso", "submitter").await;
    const ROWS: usize = 30_000;
    let (status, id) = upload(&client, &first.base, "orders", &sub, orders_csv(ROWS), None).await;
    assert_eq!(status, StatusCode::ACCEPTED);
    let replicas = vec![first];
    wait_for_holder(&db, &replicas, &id, "validating").await;
    let deadline = Instant::now() + Duration::from_secs(60);
    while count(&db, STAGED_ROWS, Some(&id)).await == 0 {
        assert!(Instant::now() < deadline, "validation never started");
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    drop(replicas); // SIGKILL mid-validation
    let (state, owner) = lease(&db, &id).await;
    assert_eq!(state, "validating");
    assert!(owner.unwrap_or_default().starts_with("alpha/w-"));

    let restarted_at = Instant::now();
    let (again, _) = start_as(&url, &dir.path().join("a1.log"), Some("alpha"), LEASE).await;
    let job = wait_state(&client, &again.base, &sub, &id, "awaiting_approval").await;
    assert!(
        restarted_at.elapsed() < Duration::from_secs(LEASE as u64 / 2),
        "taken back at once, not after the {LEASE} s lease"
    );
    assert_eq!(job["counts"]["rows"], ROWS as i64);
    assert_eq!(count(&db, STAGED_ROWS, Some(&id)).await, ROWS as i64);
    let (events, names) = events(&client, &again.base, &sub, &id).await;
    assert_eq!(names, ["upload", "interrupted", "checked"], "{events}");
    let note = &events["events"][1];
    assert_eq!(note["from"], "validating");
    assert_eq!(note["to"], "validating");
    assert!(
        note["comment"].as_str().unwrap().contains("alpha/w-"),
        "{note}"
    );
    // The chain still verifies with the note in it.
    let out = Command::new(BIN)
        .args(["ledger", "verify", "--database", &url])
        .env("IMPORTGATE_LEDGER_KEY_FILE", dir.path().join("ledger-key"))
        .env(
            "IMPORTGATE_LEDGER_CHECKPOINT_FILE",
            dir.path().join("ledger-checkpoint"),
        )
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Webhook deliveries survive a replica killed while they are in flight.
/// Two replicas deliver to a slow receiver; one is killed with `kill -9` in
/// the middle; every event the ledger holds after the webhook was made
/// still arrives, at least once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_replica_loses_no_webhook_delivery() {
    let dir = tempfile::tempdir().unwrap();
    let url = fresh_database(dir.path()).await;
    let _drop = DropDatabase(url.clone());
    let (a, printed) = start_as(&url, &dir.path().join("a.log"), None, 2).await;
    let admin = first_admin_key(&printed);
    let (b, _) = start_as(&url, &dir.path().join("b.log"), None, 2).await;
    let client = Client::new();
    let sub = create_key(&client, &a.base, &admin, "Budi Santoso", "submitter").await;
    let apr = create_key(&client, &a.base, &admin, "Siti Rahayu", "approver").await;
    let (receiver, log) = crate::webhooks::receiver().await;
    *log.usual.lock().unwrap() = Some(crate::webhooks::Answer {
        status: 200,
        delay: Duration::from_millis(300),
        body: String::new(),
        location: None,
    });
    let resp = client
        .post(format!("{}/api/webhooks", a.base))
        .header("X-API-Key", &admin)
        .json(&serde_json::json!({"url": format!("{receiver}/in"), "events": ["*"]}))
        .send()
        .await
        .unwrap();
    assert_eq!(
        resp.status(),
        StatusCode::CREATED,
        "{}",
        resp.text().await.unwrap()
    );
    let db = Db::connect(&url).await.unwrap();
    let from = count(&db, "SELECT COALESCE(MAX(seq), 0) FROM ig_job_events", None).await;

    let mut ids = Vec::new();
    for round in 0..6 {
        let base = if round % 2 == 0 { &a.base } else { &b.base };
        let (_, id) = upload(
            &client,
            base,
            "orders?mode=upsert",
            &sub,
            orders_csv(50 + round),
            Some(30),
        )
        .await;
        let resp = client
            .post(format!("{}/api/jobs/{id}/approve", b.base))
            .header("X-API-Key", &apr)
            .send()
            .await
            .unwrap();
        assert_eq!(resp.status(), StatusCode::ACCEPTED);
        // Each round's file shares keys with the next one: the next preview
        // must see this commit, or it is rightly refused as stale.
        wait_state(&client, &b.base, &sub, &id, "committed").await;
        ids.push(id);
    }
    // Deliveries are in flight (each takes 300 ms at the receiver).
    std::process::Command::new("kill")
        .args(["-9", &a.pid().to_string()])
        .status()
        .unwrap();
    drop(a);
    for id in &ids {
        wait_state(&client, &b.base, &sub, id, "committed").await;
    }

    let expected: std::collections::BTreeSet<String> = {
        let mut pooled = db.acquire().await.unwrap();
        let mut conn = pooled.conn();
        let rows: Vec<(i64, String, String)> = on_conn!(&mut conn, c => sqlx::query_as(
            "SELECT seq, event, to_state FROM ig_job_events WHERE seq > $1 ORDER BY seq")
            .bind(from).fetch_all(c).await.unwrap());
        rows.into_iter()
            .filter(|(_, e, to)| importgate::ledger::events::client_type(e, to).is_some())
            .map(|(seq, _, _)| format!("evt_{seq}"))
            .collect()
    };
    assert!(expected.len() >= 24, "{expected:?}");
    let deadline = Instant::now() + Duration::from_secs(90);
    loop {
        let got: std::collections::BTreeSet<String> = log
            .got
            .lock()
            .unwrap()
            .iter()
            .filter_map(|g| serde_json::from_str::<Value>(&g.2).ok())
            .filter_map(|v| v["id"].as_str().map(str::to_string))
            .collect();
        let missing: Vec<_> = expected.difference(&got).collect();
        if missing.is_empty() {
            break;
        }
        assert!(Instant::now() < deadline, "never delivered: {missing:?}");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    drop(b);
    db.close().await;
}

/// A workbook of `products` new products and `orders` orders naming them,
/// the first order `SO-0000000` (upserted: the table holds it already).
fn shop_workbook(products: usize, orders: usize) -> String {
    let products: Vec<Value> = (0..products)
        .map(|i| serde_json::json!({"sku": format!("WB-{i:05}"), "product_name": format!("Barang {i}"), "price_idr": 1000 + i}))
        .collect();
    let orders: Vec<Value> = (0..orders)
        .map(|i| serde_json::json!({
            "order_no": format!("SO-{i:07}"), "customer_id": "C-1",
            "sku": if i == 0 { "SKU-000".to_string() } else { format!("WB-{:05}", i % products.len()) },
            "qty": 2, "amount_idr": 5000, "order_date": "2024-03-01"
        }))
        .collect();
    serde_json::json!({"products": products, "orders": orders}).to_string()
}

/// A locked row that a workbook's commit or rollback writes: on
/// PostgreSQL the work stops there, its transaction open, with one part
/// written in it already; the replica is killed then (on SQLite, as
/// soon as it holds the job). All or nothing, and the survivor does it once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_workbook_killed_mid_commit_or_mid_rollback_leaves_all_or_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let url = fresh_database(dir.path()).await;
    let _drop = DropDatabase(url.clone());
    let (first, printed) = start(&url, &dir.path().join("r0.log")).await;
    let admin = first_admin_key(&printed);
    let (second, _) = start(&url, &dir.path().join("r1.log")).await;
    let mut replicas = vec![first, second];
    let db = Db::connect(&url).await.unwrap();
    let client = Client::new();
    let base = replicas[0].base.clone();
    let sub = create_key(&client, &base, &admin, "Budi Santoso", "submitter").await;
    let apr = create_key(&client, &base, &admin, "Siti Rahayu", "approver").await;
    let apr2 = create_key(&client, &base, &admin, "Eko Prasetyo", "approver").await;
    let postgres = url.starts_with("postgres");
    // One order in the table, which the workbook updates.
    let (_, first_order) = upload(&client, &base, "orders", &sub, orders_csv(1), Some(30)).await;
    wait_state(&client, &base, &sub, &first_order, "awaiting_approval").await;
    approve(&client, &base, &apr, &first_order).await;
    wait_state(&client, &base, &sub, &first_order, "committed").await;

    let resp = client
        .post(format!("{base}/api/import?mode.orders=upsert"))
        .header("X-API-Key", &sub)
        .header("Content-Type", "application/json")
        .header("Prefer", "wait=60")
        .body(shop_workbook(1000, 20_000))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), StatusCode::ACCEPTED);
    let id = resp.json::<Value>().await.unwrap()["id"]
        .as_str()
        .unwrap()
        .to_string();
    let job = wait_state(&client, &base, &sub, &id, "awaiting_approval").await;
    assert_eq!(job["counts"]["update"], 1, "{job}");
    let products = "SELECT COUNT(*) FROM uc_products";
    let orders = "SELECT COUNT(*) FROM uc_sales_orders";

    // Mid-commit: the products part is written in the transaction when the
    // orders part waits on the locked order.
    let mut blocker = None;
    if postgres {
        let mut tx = db.begin().await.unwrap();
        on_conn!(&mut tx.conn(), c => {
            sqlx::query("SELECT id FROM uc_sales_orders FOR UPDATE").execute(c).await.unwrap();
        });
        blocker = Some(tx);
    }
    approve(&client, &base, &apr, &id).await;
    let c = wait_for_holder(&db, &replicas, &id, "committing").await;
    if postgres {
        wait_for_blocked_update(&db).await;
    }
    drop(replicas.remove(c));
    if let Some(tx) = blocker {
        tx.rollback().await.unwrap();
    }
    assert_eq!(
        count(&db, products, None).await,
        0,
        "no part of the killed commit"
    );
    assert_eq!(count(&db, orders, None).await, 1);
    let survivor = replicas[0].base.clone();
    let job = wait_state(&client, &survivor, &sub, &id, "committed").await;
    assert!(job["problem"].is_null(), "{job}");
    assert_eq!(count(&db, products, None).await, 1000);
    assert_eq!(count(&db, orders, None).await, 20_000, "every order once");

    // Mid-rollback: the orders part is undone in the transaction when the
    // products part waits on a locked product.
    let (third, _) = start(&url, &dir.path().join("r2.log")).await;
    replicas.push(third);
    let resp = client
        .post(format!("{survivor}/api/jobs/{id}/rollback"))
        .header("X-API-Key", &apr)
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), StatusCode::ACCEPTED);
    let mut blocker = None;
    if postgres {
        let mut tx = db.begin().await.unwrap();
        on_conn!(&mut tx.conn(), c => {
            sqlx::query("SELECT id FROM uc_products FOR UPDATE").execute(c).await.unwrap();
        });
        blocker = Some(tx);
    }
    approve(&client, &survivor, &apr2, &id).await;
    let r = wait_for_holder(&db, &replicas, &id, "rolling_back").await;
    if postgres {
        wait_for_blocked(&db, "DELETE FROM \"uc_products\"").await;
    }
    drop(replicas.remove(r));
    if let Some(tx) = blocker {
        tx.rollback().await.unwrap();
    }
    assert_eq!(
        count(&db, orders, None).await,
        20_000,
        "no part of the killed rollback"
    );
    assert_eq!(count(&db, products, None).await, 1000);
    let last = replicas[0].base.clone();
    let job = wait_state(&client, &last, &sub, &id, "rolled_back").await;
    assert!(job["problem"].is_null(), "{job}");
    assert_eq!(count(&db, products, None).await, 0);
    assert_eq!(
        count(&db, orders, None).await,
        1,
        "the order it updated is back"
    );
    let (_, names) = events(&client, &last, &sub, &id).await;
    assert_eq!(
        names,
        [
            "upload", "checked", "approve", "written", "rollback", "approve", "undone"
        ],
        "each move once"
    );
    db.close().await;
}
