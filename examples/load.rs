//! Load test: many concurrent clients upload files and read jobs against
//! the real `importgate` binary for a while; then every upload's job is
//! looked up and counted, so a lost or duplicated job fails the run.
//! Prints p50/p99 latencies per operation. See BENCHMARKS.md.
//!
//! `bash bench/load.sh [--clients 50] [--seconds 60] [--backend sqlite|postgres] [--webhook MS]`
//!
//! With `--webhook MS`, a webhook on every event goes to a receiver in this
//! process that answers after MS milliseconds; after the load, every event
//! the ledger holds since the webhook was made must arrive (counted by
//! event id), or the run fails.

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::Value;
use tokio::sync::Mutex;

struct Options {
    clients: usize,
    seconds: u64,
    backend: String,
    pg: String,
    bin: PathBuf,
    dir: PathBuf,
    /// A slow receiver's answer time, for a webhook on every event.
    webhook_ms: Option<u64>,
}

fn options() -> Options {
    let exe = std::env::current_exe().expect("own path");
    let bin = exe
        .parent()
        .and_then(Path::parent)
        .map(|p| p.join("importgate"))
        .unwrap_or_default();
    let mut o = Options {
        clients: 50,
        seconds: 60,
        backend: "sqlite".into(),
        pg: "postgres://postgres@127.0.0.1:5432".into(),
        bin,
        dir: std::env::temp_dir().join("importgate-load"),
        webhook_ms: None,
    };
    let args: Vec<String> = std::env::args().skip(1).collect();
    for pair in args.chunks(2) {
        let value = pair.get(1).cloned().unwrap_or_default();
        match pair[0].as_str() {
            "--clients" => o.clients = value.parse().expect("--clients N"),
            "--seconds" => o.seconds = value.parse().expect("--seconds N"),
            "--backend" => o.backend = value,
            "--pg" => o.pg = value,
            "--bin" => o.bin = PathBuf::from(value),
            "--webhook" => o.webhook_ms = Some(value.parse().expect("--webhook MS")),
            other => panic!("unknown option {other}"),
        }
    }
    o
}

struct Server(Child);

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn database(o: &Options) -> String {
    // A fresh database starts a fresh chain: an earlier run's checkpoint
    // would say its newest events were deleted.
    let _ = std::fs::remove_file(o.dir.join("ledger-checkpoint"));
    if o.backend == "postgres" {
        let admin = format!("{}/postgres", o.pg.trim_end_matches('/'));
        for sql in ["DROP DATABASE IF EXISTS igload", "CREATE DATABASE igload"] {
            let ok = Command::new("psql")
                .args([admin.as_str(), "-qc", sql])
                .stdout(Stdio::null())
                .status();
            assert!(ok.is_ok_and(|s| s.success()), "PostgreSQL at {}", o.pg);
        }
        format!("{}/igload", o.pg.trim_end_matches('/'))
    } else {
        let path = o.dir.join("load.db");
        for ext in ["", "-wal", "-shm"] {
            let _ = std::fs::remove_file(format!("{}{ext}", path.display()));
        }
        format!("sqlite://{}", path.display())
    }
}

/// Latencies of one kind of request, in milliseconds.
#[derive(Default)]
struct Stats {
    ms: HashMap<&'static str, Vec<f64>>,
    errors: Vec<String>,
    uploaded: Vec<String>,
}

fn percentile(v: &mut [f64], p: f64) -> f64 {
    if v.is_empty() {
        return f64::NAN;
    }
    v.sort_by(|a, b| a.partial_cmp(b).unwrap_or(std::cmp::Ordering::Equal));
    v[((v.len() - 1) as f64 * p).round() as usize]
}

async fn client_loop(
    id: usize,
    base: String,
    key: String,
    until: Instant,
    stats: Arc<Mutex<Stats>>,
) {
    let client = reqwest::Client::new();
    let mut n = 0;
    while Instant::now() < until {
        n += 1;
        let csv = (0..20).fold(
            String::from("customer_name,wa_number,city\n"),
            |mut s, r| {
                s.push_str(&format!("Pelanggan {r},08{id:03}{n:05}{r:02},Jakarta\n"));
                s
            },
        );
        let t = Instant::now();
        let resp = client
            .post(format!("{base}/api/import/customers"))
            .header("X-API-Key", &key)
            .header("Content-Type", "text/csv")
            .body(csv)
            .send()
            .await;
        let upload_ms = t.elapsed().as_secs_f64() * 1000.0;
        let job = match resp {
            Ok(r) if r.status().as_u16() == 202 => r.json::<Value>().await.ok(),
            Ok(r) => {
                stats
                    .lock()
                    .await
                    .errors
                    .push(format!("upload: {}", r.status()));
                None
            }
            Err(e) => {
                stats.lock().await.errors.push(format!("upload: {e}"));
                None
            }
        };
        let Some(job) = job else { continue };
        let job_id = job["id"].as_str().unwrap_or_default().to_string();
        let mut timings = vec![("upload", upload_ms)];
        for (op, path, wait) in [
            ("job (wait)", format!("/api/jobs/{job_id}"), true),
            (
                "preview",
                format!("/api/jobs/{job_id}/preview?limit=20"),
                false,
            ),
            (
                "list",
                "/api/jobs?limit=20&submitted_by=me".to_string(),
                false,
            ),
        ] {
            let t = Instant::now();
            let mut req = client
                .get(format!("{base}{path}"))
                .header("X-API-Key", &key);
            if wait {
                req = req.header("Prefer", "wait=10");
            }
            match req.send().await {
                Ok(r) if r.status().is_success() => {
                    let _ = r.bytes().await;
                    timings.push((op, t.elapsed().as_secs_f64() * 1000.0));
                }
                Ok(r) => stats
                    .lock()
                    .await
                    .errors
                    .push(format!("{op}: {}", r.status())),
                Err(e) => stats.lock().await.errors.push(format!("{op}: {e}")),
            }
        }
        let mut s = stats.lock().await;
        s.uploaded.push(job_id);
        for (op, ms) in timings {
            s.ms.entry(op).or_default().push(ms);
        }
    }
}

#[tokio::main]
async fn main() {
    let o = options();
    std::fs::create_dir_all(&o.dir).unwrap();
    let db = database(&o);
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    // Rate limits off, and every client comes from 127.0.0.1: this
    // measures the service, not the limiter or the per-address cap.
    let config = o.dir.join("load.toml");
    let ledger = |f: &str| o.dir.join(f).display().to_string();
    std::fs::write(
        &config,
        format!(
            "uploads_per_minute = 0\nrequests_per_minute = 0\nmax_connections_per_address = 4096\n\
             webhook_allow_private = true\n\
             ledger_key_file = {:?}\nledger_checkpoint_file = {:?}\n",
            ledger("ledger-key"),
            ledger("ledger-checkpoint")
        ),
    )
    .unwrap();
    let server = Server(
        Command::new(&o.bin)
            .args([
                "serve",
                "--listen",
                &format!("127.0.0.1:{port}"),
                "--database",
                &db,
            ])
            .args(["--config", config.to_str().unwrap_or_default()])
            .env("IMPORTGATE_LOG", "warn")
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(o.dir.join("server.err")).unwrap())
            .spawn()
            .expect("start importgate (cargo build --release first)"),
    );
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        std::thread::sleep(Duration::from_millis(25));
    }
    let base = format!("http://127.0.0.1:{port}");
    let key = |i: usize| {
        let out = Command::new(&o.bin)
            .args([
                "keys",
                "create",
                "--name",
                &format!("Klien Beban {i}"),
                "--role",
                "submitter",
                "--database",
                &db,
            ])
            .arg("--config")
            .arg(&config)
            .output()
            .unwrap();
        String::from_utf8_lossy(&out.stdout)
            .lines()
            .last()
            .unwrap_or("")
            .to_string()
    };
    let webhook = match o.webhook_ms {
        Some(ms) => Some(Webhook::start(&o, &db, &base, Duration::from_millis(ms)).await),
        None => None,
    };
    let keys: Vec<String> = (0..o.clients).map(key).collect();
    let stats = Arc::new(Mutex::new(Stats::default()));
    let started = Instant::now();
    let until = started + Duration::from_secs(o.seconds);
    let tasks: Vec<_> = keys
        .iter()
        .enumerate()
        .map(|(i, k)| {
            tokio::spawn(client_loop(
                i,
                base.clone(),
                k.clone(),
                until,
                stats.clone(),
            ))
        })
        .collect();
    for t in tasks {
        let _ = t.await;
    }
    let elapsed = started.elapsed().as_secs_f64();

    // Every upload's job exactly once, and no job nobody uploaded.
    let mut s = stats.lock().await;
    let client = reqwest::Client::new();
    let mut listed: Vec<String> = Vec::new();
    for k in &keys {
        let mut cursor = String::new();
        loop {
            let url = format!("{base}/api/jobs?limit=200&submitted_by=me{cursor}");
            let page: Value = client
                .get(url)
                .header("X-API-Key", k)
                .send()
                .await
                .unwrap()
                .json()
                .await
                .unwrap();
            for j in page["jobs"].as_array().into_iter().flatten() {
                listed.push(j["id"].as_str().unwrap_or_default().to_string());
            }
            match page["next_cursor"].as_str() {
                Some(c) => cursor = format!("&cursor={c}"),
                None => break,
            }
        }
    }
    let unique: HashSet<&String> = listed.iter().collect();
    let uploaded: HashSet<&String> = s.uploaded.iter().collect();
    let lost = uploaded.difference(&unique).count();
    let extra = unique.difference(&uploaded).count();
    let duplicated = listed.len() - unique.len();
    let undelivered = match &webhook {
        Some(w) => w.finish(&o, &db).await,
        None => 0,
    };
    drop(server);

    println!(
        "load: {} clients, {:.0} s, {} backend: {} uploads ({:.1}/s), {} errors, {} lost, {} duplicated, {} unexpected jobs",
        o.clients,
        elapsed,
        o.backend,
        s.uploaded.len(),
        s.uploaded.len() as f64 / elapsed,
        s.errors.len(),
        lost,
        duplicated,
        extra
    );
    println!("\n| request | count | p50 | p99 |\n|---|---:|---:|---:|");
    let mut ops: Vec<&'static str> = s.ms.keys().copied().collect();
    ops.sort();
    for op in ops {
        let v = s.ms.get_mut(op).unwrap();
        let n = v.len();
        println!(
            "| {op} | {n} | {:.1} ms | {:.1} ms |",
            percentile(v, 0.5),
            percentile(v, 0.99)
        );
    }
    for e in s.errors.iter().take(10) {
        eprintln!("error: {e}");
    }
    if !s.errors.is_empty()
        || lost > 0
        || duplicated > 0
        || extra > 0
        || undelivered > 0
        || s.uploaded.is_empty()
    {
        std::process::exit(1);
    }
}

/// A webhook on every event to a slow receiver in this process.
struct Webhook {
    /// Event ids received, and deliveries in all (retries included).
    got: Arc<std::sync::Mutex<(HashSet<String>, usize)>>,
    /// Ledger links before the webhook was made.
    before: i64,
}

impl Webhook {
    async fn start(o: &Options, db: &str, base: &str, delay: Duration) -> Webhook {
        let got = Arc::new(std::sync::Mutex::new((HashSet::new(), 0)));
        let seen = got.clone();
        let receive = move |body: String| {
            let seen = seen.clone();
            async move {
                tokio::time::sleep(delay).await;
                let id = serde_json::from_str::<Value>(&body)
                    .ok()
                    .and_then(|v| v["id"].as_str().map(str::to_string))
                    .unwrap_or_default();
                let mut g = seen.lock().unwrap();
                g.0.insert(id);
                g.1 += 1;
                axum::http::StatusCode::NO_CONTENT
            }
        };
        let app = axum::Router::new().route("/hook", axum::routing::post(receive));
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}/hook", listener.local_addr().unwrap());
        tokio::spawn(async move { axum::serve(listener, app).await });
        let admin = Command::new(&o.bin)
            .args([
                "keys",
                "create",
                "--name",
                "Load Admin",
                "--role",
                "admin",
                "--database",
                db,
            ])
            // Both ledger files the service uses: a key event appends the
            // chain's head to the checkpoint, which on PostgreSQL would
            // otherwise land in the working directory.
            .args([
                "--ledger-key-file",
                &o.dir.join("ledger-key").display().to_string(),
                "--ledger-checkpoint-file",
                &o.dir.join("ledger-checkpoint").display().to_string(),
            ])
            .output()
            .unwrap();
        let admin = String::from_utf8_lossy(&admin.stdout)
            .lines()
            .last()
            .unwrap_or("")
            .to_string();
        let before = links(o, db);
        let resp = reqwest::Client::new()
            .post(format!("{base}/api/webhooks"))
            .header("X-API-Key", admin)
            .json(&serde_json::json!({"url": url, "events": ["*"]}))
            .send()
            .await
            .unwrap();
        assert_eq!(
            resp.status(),
            reqwest::StatusCode::CREATED,
            "webhook: {}",
            resp.text().await.unwrap()
        );
        Webhook { got, before }
    }

    /// Waits until every event since the webhook was made arrived (at most
    /// two minutes); how many did not.
    async fn finish(&self, o: &Options, db: &str) -> usize {
        let expected = (links(o, db) - self.before).max(0) as usize;
        let started = Instant::now();
        let (mut distinct, mut all) = (0, 0);
        while started.elapsed() < Duration::from_secs(120) {
            (distinct, all) = {
                let g = self.got.lock().unwrap();
                (g.0.len(), g.1)
            };
            if distinct >= expected {
                break;
            }
            tokio::time::sleep(Duration::from_millis(250)).await;
        }
        println!(
            "webhook: {distinct} of {expected} events delivered ({} deliveries, {} repeated), the last {:.1} s after the load",
            all,
            all - distinct,
            started.elapsed().as_secs_f64()
        );
        expected.saturating_sub(distinct)
    }
}

/// The ledger's length, as `ledger verify` counts it.
fn links(o: &Options, db: &str) -> i64 {
    let out = Command::new(&o.bin)
        .args(["ledger", "verify", "--database", db])
        .args([
            "--ledger-key-file",
            &o.dir.join("ledger-key").display().to_string(),
        ])
        .args([
            "--ledger-checkpoint-file",
            &o.dir.join("ledger-checkpoint").display().to_string(),
        ])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    text.split("ledger holds: ")
        .nth(1)
        .and_then(|t| t.split(' ').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("ledger verify: {text}"))
}
