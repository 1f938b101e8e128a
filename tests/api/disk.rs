//! A full disk (API.md section 6): the work it stops is retried with the
//! backoff and ends `failed` with `no_space`, never in a loop; uploads are
//! `503` with `Retry-After` meanwhile; and the service takes work again by
//! itself once space is back. The database lives on a small tmpfs, filled
//! by the job's own rows and then by a file beside it; the test says it
//! is skipped where this machine does not let it mount one.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use reqwest::{Client, StatusCode};
use serde_json::Value;

use crate::replicas::start_with;

/// A tmpfs of `mib` MiB mounted on `dir`, unmounted when dropped.
struct Tmpfs(PathBuf);

impl Tmpfs {
    fn mount(dir: &Path, mib: u64) -> Result<Tmpfs, String> {
        std::fs::create_dir_all(dir).map_err(|e| e.to_string())?;
        let out = Command::new("mount")
            .args([
                "-t",
                "tmpfs",
                "-o",
                &format!("size={mib}m,mode=1777"),
                "tmpfs",
            ])
            .arg(dir)
            .output()
            .map_err(|e| e.to_string())?;
        if !out.status.success() {
            return Err(String::from_utf8_lossy(&out.stderr).trim().to_string());
        }
        Ok(Tmpfs(dir.to_path_buf()))
    }

    /// Writes a file `name` until the disk has at most `leave` bytes free;
    /// gives its path.
    fn fill(&self, name: &str, leave: u64) -> PathBuf {
        use std::io::Write;
        let path = self.0.join(name);
        let mut f = std::fs::File::create(&path).unwrap();
        let chunk = vec![0u8; 64 << 10];
        while free_bytes(&self.0) > leave + chunk.len() as u64 {
            if f.write_all(&chunk).is_err() {
                break;
            }
        }
        if leave == 0 {
            while f.write_all(&chunk[..4096]).is_ok() {}
        }
        let _ = f.sync_all();
        path
    }
}

/// Bytes free on the disk of `dir`.
fn free_bytes(dir: &Path) -> u64 {
    let out = Command::new("df")
        .args(["-B1", "--output=avail"])
        .arg(dir)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    text.lines().last().unwrap().trim().parse().unwrap()
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg("-l").arg(&self.0).status();
    }
}

/// A customers file of `rows` rows.
fn customers(rows: usize) -> String {
    let mut s = String::from("customer_name,wa_number,city,grade,consumable_cycle_days\n");
    for i in 0..rows {
        s.push_str(&format!(
            "Pelanggan Nomor {i:06},0811{i:07},Jakarta Selatan,A,30\n"
        ));
    }
    s
}

async fn upload(client: &Client, base: &str, key: &str, body: String) -> reqwest::Response {
    client
        .post(format!("{base}/api/import/customers"))
        .header("X-API-Key", key)
        .header("Content-Type", "text/csv")
        .body(body)
        .send()
        .await
        .unwrap()
}

/// Uploads a file that is accepted; the job once its validation ended.
async fn validated(client: &Client, base: &str, key: &str, body: String) -> Value {
    let resp = upload(client, base, key, body).await;
    assert_eq!(resp.status(), StatusCode::ACCEPTED);
    let job: Value = resp.json().await.unwrap();
    settled(client, base, key, job["id"].as_str().unwrap()).await
}

/// Polls a job until it leaves `validating` (at most a minute).
async fn settled(client: &Client, base: &str, key: &str, id: &str) -> Value {
    for _ in 0..600 {
        let job: Value = client
            .get(format!("{base}/api/jobs/{id}"))
            .header("X-API-Key", key)
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        if job["state"] != "validating" {
            return job;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("job {id} still validating after a minute");
}

async fn ready(client: &Client, base: &str) -> StatusCode {
    client
        .get(format!("{base}/readyz"))
        .send()
        .await
        .unwrap()
        .status()
}

/// How one backend meets the full disk.
struct Backend {
    /// The database, on the tmpfs.
    database: String,
    /// What the disk keeps free before the job fills it (`None`: as it is).
    leave_before_job: Option<u64>,
    /// The rows of the upload refused on a full disk: big enough to need
    /// new space (PostgreSQL fits a small one in the pages it has).
    refused_rows: usize,
    /// Whether the service reads the disk's free space (a SQLite file's),
    /// so that readiness turns with it; PostgreSQL's disk is the server's.
    sees_free_space: bool,
}

/// The service on the backend's database, run through a disk its job
/// fills, then a disk a file fills, then a disk with room again.
async fn full_disk_is_answered(disk: &Tmpfs, backend: Backend, dir: &Path) {
    let config = dir.join("importgate.toml");
    std::fs::write(
        &config,
        "work_attempts = 3\nwork_retry_seconds = 0.2\ndisk_reserve_mb = 10\n",
    )
    .unwrap();
    let log = dir.join("serve.log");
    let extra = ["--config".to_string(), config.display().to_string()];
    let (_server, printed) = start_with(&backend.database, &log, "127.0.0.1", &extra).await;
    let admin = printed.lines().find(|l| l.starts_with("igk_")).unwrap();
    let base = &_server.base;
    let client = Client::new();

    // The job's own rows fill the disk: it ends no_space, its rows let go.
    let before = backend
        .leave_before_job
        .map(|leave| disk.fill("before", leave));
    let job = validated(&client, base, admin, customers(60_000)).await;
    assert_eq!(job["state"], "failed", "{job}");
    assert_eq!(job["problem"]["code"], "no_space", "{job}");
    assert!(
        job["problem"]["detail"]
            .as_str()
            .unwrap()
            .contains("full 3 times"),
        "{job}"
    );

    // A file fills what is left: uploads wait, and say why and how long.
    let filler = disk.fill("filler", 0);
    let refused = upload(&client, base, admin, customers(backend.refused_rows)).await;
    assert_eq!(refused.status(), StatusCode::SERVICE_UNAVAILABLE);
    assert!(refused.headers().contains_key("retry-after"));
    let problem: Value = refused.json().await.unwrap();
    assert_eq!(problem["code"], "no_space", "{problem}");
    if backend.sees_free_space {
        assert_eq!(ready(&client, base).await, StatusCode::SERVICE_UNAVAILABLE);
    }
    // Idle workers do not hammer a database that takes no write.
    tokio::time::sleep(Duration::from_secs(3)).await;

    // Space is back: the service takes work again by itself.
    std::fs::remove_file(filler).unwrap();
    if let Some(before) = before {
        std::fs::remove_file(before).unwrap();
    }
    eprintln!(
        "free once the file is gone: {} KiB",
        free_bytes(&disk.0) >> 10
    );
    assert_eq!(ready(&client, base).await, StatusCode::OK);
    let job = validated(&client, base, admin, customers(10)).await;
    assert_eq!(job["state"], "awaiting_approval", "{job}");

    let text = std::fs::read_to_string(&log).unwrap();
    let failures = text.matches("job work failed").count() + text.matches("cannot claim").count();
    assert!(
        failures < 40,
        "{failures} failures logged: a retry loop\n{text}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_full_disk_ends_the_job_no_space_and_the_service_recovers() {
    if std::env::var("IMPORTGATE_TEST_POSTGRES").is_ok_and(|s| !s.is_empty()) {
        return; // the PostgreSQL half runs the test below
    }
    let dir = tempfile::tempdir().unwrap();
    // 16 MiB, 10 kept free. The database and the stored file (it
    // compresses well) leave about 14.5 MiB of room, under twice the
    // reserve: the rows a stopped job staged, freed inside the database
    // file, are fewer than the reserve (so a full disk is seen), and once
    // the filling file is gone the room is back above it.
    let disk = match Tmpfs::mount(&dir.path().join("disk"), 16) {
        Ok(d) => d,
        Err(why) => {
            eprintln!("skipped: this machine does not let the test mount a tmpfs ({why})");
            return;
        }
    };
    let backend = Backend {
        database: format!("sqlite://{}", disk.0.join("db.sqlite").display()),
        leave_before_job: None,
        refused_rows: 10,
        sees_free_space: true,
    };
    full_disk_is_answered(&disk, backend, dir.path()).await;
}

/// The same on PostgreSQL: a server of the test's own, its data on the
/// tmpfs and its write-ahead log beside it (a full data disk is then the
/// server's `disk_full` error; a full log disk stops any server). Runs
/// with the PostgreSQL half of the suite.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_full_disk_on_postgresql_ends_the_job_no_space_and_the_service_recovers() {
    if std::env::var("IMPORTGATE_TEST_POSTGRES").map_or(true, |s| s.is_empty()) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let disk = match Tmpfs::mount(&dir.path().join("disk"), 64) {
        Ok(d) => d,
        Err(why) => {
            eprintln!("skipped: this machine does not let the test mount a tmpfs ({why})");
            return;
        }
    };
    let server = match PrivatePostgres::start(&disk, dir.path()) {
        Ok(s) => s,
        Err(why) => {
            eprintln!("skipped: no PostgreSQL server of the test's own could start ({why})");
            return;
        }
    };
    let backend = Backend {
        database: server.url(),
        leave_before_job: Some(4 << 20),
        refused_rows: 20_000,
        sees_free_space: false,
    };
    full_disk_is_answered(&disk, backend, dir.path()).await;
}

/// A PostgreSQL server started for one test, stopped when dropped.
struct PrivatePostgres {
    bin: PathBuf,
    data: PathBuf,
    port: u16,
}

impl PrivatePostgres {
    /// `initdb` and `pg_ctl start` of the installed PostgreSQL, as the
    /// `postgres` user when the test runs as root (the server refuses
    /// root), its data on `disk` and its log and socket in `dir`.
    fn start(disk: &Tmpfs, dir: &Path) -> Result<PrivatePostgres, String> {
        let bin = std::fs::read_dir("/usr/lib/postgresql")
            .map_err(|e| e.to_string())?
            .filter_map(|e| e.ok().map(|e| e.path().join("bin")))
            .find(|b| b.join("initdb").exists())
            .ok_or("no initdb under /usr/lib/postgresql")?;
        let own = dir.join("pg");
        std::fs::create_dir_all(&own).map_err(|e| e.to_string())?;
        for d in [dir, own.as_path()] {
            run("chmod", &["755".as_ref(), d.as_os_str()], false)?;
        }
        run("chown", &["postgres".as_ref(), own.as_os_str()], false)?;
        let data = disk.0.join("data");
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .map_err(|e| e.to_string())?
            .port();
        let initdb = bin.join("initdb");
        let waldir = own.join("wal");
        run(
            initdb.as_os_str().to_str().unwrap(),
            &[
                "-D".as_ref(),
                data.as_os_str(),
                format!("--waldir={}", waldir.display()).as_ref(),
                "-A".as_ref(),
                "trust".as_ref(),
                "-U".as_ref(),
                "postgres".as_ref(),
                "--no-sync".as_ref(),
            ],
            true,
        )?;
        let options = format!(
            "-p {port} -k {} -c listen_addresses=127.0.0.1 -c fsync=off",
            own.display()
        );
        let pg_ctl = bin.join("pg_ctl");
        let log = own.join("server.log");
        run(
            pg_ctl.as_os_str().to_str().unwrap(),
            &[
                "-D".as_ref(),
                data.as_os_str(),
                "-l".as_ref(),
                log.as_os_str(),
                "-w".as_ref(),
                "-o".as_ref(),
                options.as_ref(),
                "start".as_ref(),
            ],
            true,
        )?;
        Ok(PrivatePostgres { bin, data, port })
    }

    fn url(&self) -> String {
        format!("postgres://postgres@127.0.0.1:{}/postgres", self.port)
    }
}

impl Drop for PrivatePostgres {
    fn drop(&mut self) {
        let pg_ctl = self.bin.join("pg_ctl");
        let _ = run(
            pg_ctl.as_os_str().to_str().unwrap(),
            &[
                "-D".as_ref(),
                self.data.as_os_str(),
                "-m".as_ref(),
                "immediate".as_ref(),
                "stop".as_ref(),
            ],
            true,
        );
    }
}

/// Runs a command, as the `postgres` user when `as_postgres` and this is
/// root; its error output when it fails.
fn run(program: &str, args: &[&std::ffi::OsStr], as_postgres: bool) -> Result<(), String> {
    let root = Command::new("id")
        .arg("-u")
        .output()
        .is_ok_and(|o| o.stdout.starts_with(b"0"));
    let mut cmd = if as_postgres && root {
        let mut c = Command::new("runuser");
        c.args(["-u", "postgres", "--", program]);
        c
    } else {
        Command::new(program)
    };
    let out = cmd
        .args(args)
        .output()
        .map_err(|e| format!("{program}: {e}"))?;
    if out.status.success() {
        Ok(())
    } else {
        Err(format!(
            "{program}: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        ))
    }
}
