//! Test helpers: start the real service on a free port with a fresh
//! database, and talk to it over HTTP like any client.
//!
//! The backend is SQLite (a new file per test) unless
//! `IMPORTGATE_TEST_POSTGRES` names a PostgreSQL server
//! (`postgres://postgres@127.0.0.1:5432`) or `IMPORTGATE_TEST_MYSQL` a
//! MariaDB or MySQL server (`mysql://root@127.0.0.1:3306`): then each test
//! gets a fresh database on it, dropped when the test ends. The same tests
//! run on all three (see `.ci/run`).

#![allow(dead_code)]

use std::sync::Arc;

use importgate::app::App;
use importgate::config::Settings;
use importgate::store::Db;
use reqwest::{Client, Response, StatusCode};
use serde_json::{Value, json};

pub struct TestApp {
    pub base: String,
    pub client: Client,
    pub admin: String,
    pub app: Arc<App>,
    pub database: String,
    _dir: tempfile::TempDir,
}

/// The service with default settings.
pub async fn spawn_app() -> TestApp {
    spawn_app_with(|_| {}).await
}

/// The service with settings changed by `tweak`.
pub async fn spawn_app_with(tweak: impl FnOnce(&mut Settings)) -> TestApp {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    spawn_app_on(listener, tweak).await
}

/// The service on `listener` (bound first, so that settings can name its
/// address), with settings changed by `tweak`.
pub async fn spawn_app_on(
    listener: tokio::net::TcpListener,
    tweak: impl FnOnce(&mut Settings),
) -> TestApp {
    spawn_app_over(listener, false, tweak).await
}

/// The service over a SQLite file whatever the backend under test, to
/// compare that backend's answers with.
pub async fn spawn_sqlite_app() -> TestApp {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    spawn_app_over(listener, true, |_| {}).await
}

async fn spawn_app_over(
    listener: tokio::net::TcpListener,
    sqlite: bool,
    tweak: impl FnOnce(&mut Settings),
) -> TestApp {
    // `IMPORTGATE_TEST_LOG=warn` shows the service's log beside a test's.
    if let Ok(filter) = tracing_subscriber::EnvFilter::try_from_env("IMPORTGATE_TEST_LOG") {
        let _ = tracing_subscriber::fmt()
            .with_env_filter(filter)
            .with_test_writer()
            .try_init();
    }
    let dir = tempfile::tempdir().expect("temp dir");
    let database = if sqlite {
        format!("sqlite://{}", dir.path().join("test.db").display())
    } else {
        fresh_database(dir.path()).await
    };
    let mut settings = Settings {
        database: database.clone(),
        lease_ms: 5_000,
        ledger_key_file: Some(dir.path().join("ledger-key")),
        ledger_checkpoint_file: Some(dir.path().join("ledger-checkpoint")),
        ..Settings::default()
    };
    tweak(&mut settings);
    let app = App::open(settings).await.expect("service starts");
    let admin = app
        .first_admin_key()
        .await
        .expect("admin key")
        .expect("fresh database");
    let base = format!("http://{}", listener.local_addr().expect("addr"));
    tokio::spawn(app.clone().serve(listener));
    TestApp {
        base,
        client: Client::new(),
        admin,
        app,
        database,
        _dir: dir,
    }
}

/// A new, empty database of the backend under test: a SQLite file in `dir`,
/// or a new database on the PostgreSQL server of `IMPORTGATE_TEST_POSTGRES`.
pub async fn fresh_database(dir: &std::path::Path) -> String {
    if let Some(server) = mysql_server() {
        return fresh_mysql(&server).await;
    }
    match std::env::var("IMPORTGATE_TEST_POSTGRES") {
        Ok(server) if !server.is_empty() => fresh_postgres(&server).await,
        _ => format!("sqlite://{}", dir.join("test.db").display()),
    }
}

/// The MariaDB or MySQL server of `IMPORTGATE_TEST_MYSQL`, if set.
pub fn mysql_server() -> Option<String> {
    std::env::var("IMPORTGATE_TEST_MYSQL")
        .ok()
        .filter(|s| !s.is_empty())
        .map(|s| s.trim_end_matches('/').to_string())
}

/// Which backend the tests run on: `sqlite`, `postgres` or `mysql`.
pub fn backend() -> &'static str {
    if mysql_server().is_some() {
        "mysql"
    } else if std::env::var("IMPORTGATE_TEST_POSTGRES").is_ok_and(|s| !s.is_empty()) {
        "postgres"
    } else {
        "sqlite"
    }
}

/// A new database on the MariaDB or MySQL server `server`.
pub async fn fresh_mysql(server: &str) -> String {
    use sqlx::Connection;
    let name = format!("igt_{}", ulid::Ulid::generate().to_string().to_lowercase());
    let mut c = sqlx::MySqlConnection::connect(server)
        .await
        .expect("mysql reachable");
    sqlx::query(&format!(
        "CREATE DATABASE {name} CHARACTER SET utf8mb4 COLLATE utf8mb4_bin"
    ))
    .execute(&mut c)
    .await
    .expect("create database");
    let _ = c.close().await;
    format!("{server}/{name}")
}

pub async fn fresh_postgres(server: &str) -> String {
    let server = server.trim_end_matches('/');
    let name = format!("igt_{}", ulid::Ulid::generate().to_string().to_lowercase());
    let admin = Db::connect(&format!("{server}/postgres"))
        .await
        .expect("postgres reachable");
    let Db::Postgres(pool) = &admin else {
        unreachable!()
    };
    sqlx::query(&format!("CREATE DATABASE {name}"))
        .execute(pool)
        .await
        .expect("create database");
    admin.close().await;
    format!("{server}/{name}")
}

/// A test's PostgreSQL database is dropped when the test ends: ~440 tests
/// each leave about 11 MB, which filled a small disk in one run (the
/// server then dropped every connection at once).
impl Drop for TestApp {
    fn drop(&mut self) {
        drop_test_database(&self.database);
    }
}

/// Drops the test database of `url` when it goes out of scope, for tests
/// that make one without a [`TestApp`]. Declared after the database is
/// made and before the services using it, it goes after them.
pub struct DropDatabase(pub String);

impl Drop for DropDatabase {
    fn drop(&mut self) {
        drop_test_database(&self.0);
    }
}

/// Drops the database of `url` if it is a test's (`igt_…`) on PostgreSQL
/// or MariaDB; a SQLite file goes with its directory. A service may still
/// hold connections, so they are ended with the database.
fn drop_test_database(url: &str) {
    let Some((server, name)) = url.rsplit_once('/') else {
        return;
    };
    if !name.starts_with("igt_") {
        return;
    }
    if url.starts_with("mysql") {
        drop_mysql_database(server, name);
        return;
    }
    if !url.starts_with("postgres") {
        return;
    }
    let _ = std::process::Command::new("psql")
        .arg(format!("{server}/postgres"))
        .args([
            "-qc",
            &format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)"),
        ])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status();
}

/// `sql` with each quoted RFC 3339 instant (`'2020-01-01T00:00:00Z'`)
/// written as MySQL's `DATETIME` takes it, in UTC
/// (`'2020-01-01 00:00:00.000000'`).
pub fn mysql_literals(sql: &str) -> String {
    let mut out = String::new();
    for (i, part) in sql.split('\'').enumerate() {
        if i > 0 {
            out.push('\'');
        }
        match chrono::DateTime::parse_from_rfc3339(part) {
            Ok(t) if i % 2 == 1 => {
                out.push_str(&t.to_utc().format("%Y-%m-%d %H:%M:%S%.6f").to_string());
            }
            _ => out.push_str(part),
        }
    }
    out
}

/// Drops a test's MariaDB database, through the server's own client (the
/// test's runtime may be ending). Its connections are killed first, as
/// PostgreSQL's `WITH (FORCE)` does: a connection the ending runtime left
/// inside a transaction holds its tables' metadata locks, and the drop
/// would wait for them (`lock_wait_timeout`, a day by default).
fn drop_mysql_database(server: &str, name: &str) {
    let ids = mariadb(
        server,
        &format!("SELECT id FROM information_schema.processlist WHERE db = '{name}'"),
    );
    let kills: String = ids
        .split_whitespace()
        .filter(|id| id.bytes().all(|b| b.is_ascii_digit()))
        .map(|id| format!("KILL CONNECTION {id}; "))
        .collect();
    mariadb(
        server,
        &format!("{kills}SET SESSION lock_wait_timeout = 60; DROP DATABASE IF EXISTS {name}"),
    );
}

/// Runs `sql` through the `mariadb` client, going on past a failing
/// statement (a connection that ended before its `KILL`); its output.
fn mariadb(server: &str, sql: &str) -> String {
    // `mysql://user@host:port`, as the tests name their server.
    let rest = server.split_once("://").map_or(server, |(_, r)| r);
    let (user, host) = rest.split_once('@').unwrap_or(("root", rest));
    let (host, port) = host.split_once(':').unwrap_or((host, "3306"));
    std::process::Command::new("mariadb")
        .args(["-h", host, "-P", port, "-u", user, "--force", "-N", "-B"])
        .args(["-e", sql])
        .stderr(std::process::Stdio::null())
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).into_owned())
        .unwrap_or_default()
}

impl TestApp {
    pub fn url(&self, path: &str) -> String {
        format!("{}{}", self.base, path)
    }

    /// The test's own directory (its SQLite file, its ledger files).
    pub fn dir(&self) -> &std::path::Path {
        self._dir.path()
    }

    /// Creates a key through the API; returns (secret, key id).
    pub async fn key(&self, name: &str, role: &str, modules: &[&str]) -> (String, String) {
        let resp = self
            .client
            .post(self.url("/api/keys"))
            .header("X-API-Key", &self.admin)
            .json(&json!({"name": name, "role": role, "modules": modules}))
            .send()
            .await
            .expect("request");
        assert_eq!(resp.status(), StatusCode::CREATED);
        let body: Value = resp.json().await.expect("json");
        (
            body["key"].as_str().expect("key").to_string(),
            body["id"].as_str().expect("id").to_string(),
        )
    }

    /// Revokes a key through the API, as the first admin; it must work.
    pub async fn revoke(&self, key_id: &str) {
        let resp = self
            .client
            .delete(self.url(&format!("/api/keys/{key_id}")))
            .header("X-API-Key", &self.admin)
            .send()
            .await
            .expect("request");
        assert_eq!(resp.status(), StatusCode::OK, "revoke {key_id}");
    }

    pub async fn submitter(&self) -> String {
        self.key("Budi Santoso", "submitter", &["*"]).await.0
    }

    pub async fn approver(&self) -> String {
        self.key("Siti Rahayu", "approver", &["*"]).await.0
    }

    /// Uploads CSV text; returns the raw response.
    pub async fn upload_raw(
        &self,
        key: &str,
        module: &str,
        query: &str,
        content_type: &str,
        body: impl Into<reqwest::Body>,
    ) -> Response {
        self.client
            .post(self.url(&format!("/api/import/{module}{query}")))
            .header("X-API-Key", key)
            .header("Content-Type", content_type)
            .header("Prefer", "wait=30")
            .body(body)
            .send()
            .await
            .expect("request")
    }

    /// Uploads CSV and waits for validation to end; returns the job.
    pub async fn upload(&self, key: &str, module: &str, query: &str, csv: &str) -> Value {
        let resp = self
            .upload_raw(key, module, query, "text/csv", csv.to_string())
            .await;
        assert_eq!(
            resp.status(),
            StatusCode::ACCEPTED,
            "upload answered {}",
            resp.status()
        );
        let job: Value = resp.json().await.expect("json");
        self.wait_done(key, job["id"].as_str().expect("id")).await
    }

    pub async fn get(&self, key: &str, path: &str) -> Response {
        self.client
            .get(self.url(path))
            .header("X-API-Key", key)
            .send()
            .await
            .expect("request")
    }

    pub async fn get_json(&self, key: &str, path: &str) -> Value {
        let resp = self.get(key, path).await;
        assert_eq!(resp.status(), StatusCode::OK, "GET {path}");
        resp.json().await.expect("json")
    }

    /// A job's errored-rows file as CSV (API.md section 11).
    pub async fn errored_rows_csv(&self, key: &str, id: &str) -> String {
        let path = format!("/api/jobs/{id}/errors?layout=rows&format=csv");
        let resp = self.get(key, &path).await;
        assert_eq!(resp.status(), StatusCode::OK, "GET {path}");
        resp.text().await.expect("text")
    }

    pub async fn job(&self, key: &str, id: &str) -> Value {
        self.get_json(key, &format!("/api/jobs/{id}")).await
    }

    /// Waits (`Prefer: wait`) until the job is out of the states the
    /// service works in.
    pub async fn wait_done(&self, key: &str, id: &str) -> Value {
        for _ in 0..10 {
            let resp = self
                .client
                .get(self.url(&format!("/api/jobs/{id}")))
                .header("X-API-Key", key)
                .header("Prefer", "wait=30")
                .send()
                .await
                .expect("request");
            assert_eq!(resp.status(), StatusCode::OK);
            let job: Value = resp.json().await.expect("json");
            let state = job["state"].as_str().unwrap_or("");
            if !matches!(state, "validating" | "committing" | "rolling_back") {
                return job;
            }
        }
        panic!("job {id} did not finish");
    }

    /// A gate move (`approve`, `reject`, `cancel`, `rollback`).
    pub async fn act(&self, key: &str, id: &str, action: &str, comment: Option<&str>) -> Response {
        let mut req = self
            .client
            .post(self.url(&format!("/api/jobs/{id}/{action}")))
            .header("X-API-Key", key)
            .header("Prefer", "wait=30");
        if let Some(c) = comment {
            req = req.json(&json!({"comment": c}));
        }
        req.send().await.expect("request")
    }

    /// A gate move that must be accepted; waits for the work it starts.
    pub async fn act_ok(&self, key: &str, id: &str, action: &str) -> Value {
        let resp = self.act(key, id, action, None).await;
        let status = resp.status();
        let body: Value = resp.json().await.expect("json");
        assert_eq!(status, StatusCode::ACCEPTED, "{action}: {body}");
        self.wait_done(key, id).await
    }

    /// Runs SQL on the service's database (to look at or change a table
    /// behind the service's back); every column is read as text.
    /// Rules for `module` proposed by the admin and approved by `apr`:
    /// the proposal, its version now in force.
    pub async fn rules_in_force(&self, apr: &str, module: &str, rules: Value) -> Value {
        let resp = (self.client)
            .post(self.url(&format!("/api/modules/{module}/rules")))
            .header("X-API-Key", &self.admin)
            .json(&serde_json::json!({"rules": rules}))
            .send()
            .await
            .unwrap();
        assert_eq!(resp.status(), StatusCode::CREATED);
        let proposal: Value = resp.json().await.unwrap();
        let id = proposal["id"].as_str().unwrap();
        let resp = (self.client)
            .post(self.url(&format!("/api/rule-proposals/{id}/approve")))
            .header("X-API-Key", apr)
            .send()
            .await
            .unwrap();
        assert_eq!(resp.status(), StatusCode::OK);
        proposal
    }

    /// Rows of a statement, every column as text. On MySQL `CAST(… AS
    /// TEXT)` is said `CAST(… AS CHAR)` and RFC 3339 literals are its
    /// `DATETIME`'s ([`mysql_literals`]).
    pub async fn sql(&self, sql: &str) -> Vec<Vec<Option<String>>> {
        use sqlx::Row;
        let mysql_text;
        let sql = if self.database.starts_with("mysql") {
            mysql_text = mysql_literals(&sql.replace(" AS TEXT)", " AS CHAR)"));
            mysql_text.as_str()
        } else {
            sql
        };
        let mut pooled = self.app.db.acquire().await.expect("conn");
        let mut conn = pooled.conn();
        importgate::on_conn!(&mut conn, c => {
            let rows = sqlx::query(sql).fetch_all(c).await.expect(sql);
            rows.iter().map(|r| (0..r.columns().len()).map(|i| r.try_get::<Option<String>, _>(i).expect("text column")).collect()).collect()
        })
    }

    /// The number of rows in a table.
    pub async fn count(&self, table: &str) -> i64 {
        let rows = self
            .sql(&format!("SELECT CAST(COUNT(*) AS TEXT) FROM {table}"))
            .await;
        rows[0][0].as_deref().unwrap_or("0").parse().expect("count")
    }
}

/// A body sent in chunks without `Content-Length`, as a streaming client
/// sends it.
pub fn streamed(bytes: Vec<u8>, chunk: usize) -> reqwest::Body {
    let chunks: Vec<Result<Vec<u8>, std::io::Error>> =
        bytes.chunks(chunk).map(|c| Ok(c.to_vec())).collect();
    reqwest::Body::wrap_stream(futures::stream::iter(chunks))
}

/// Reads a problem answer and checks its status and code.
pub async fn problem(resp: Response, status: StatusCode, code: &str) -> Value {
    assert_eq!(resp.status(), status, "status");
    let ct = resp
        .headers()
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .to_string();
    assert_eq!(ct, "application/problem+json");
    let body: Value = resp.json().await.expect("json");
    assert_eq!(body["code"], code, "{body}");
    assert_eq!(body["status"], status.as_u16());
    assert!(
        body["instance"]
            .as_str()
            .is_some_and(|i| i.starts_with('/')),
        "{body}"
    );
    body
}

pub const CUSTOMERS: &str = "customer_name,wa_number,city,grade,consumable_cycle_days\n\
Andi Wijaya,0811000001,Jakarta,A,30\n\
Budi Hartono,0811000002,Bandung,B,\n\
Citra Lestari,0811000003,Surabaya,,14\n";
