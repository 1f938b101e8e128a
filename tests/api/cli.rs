//! The real binary: first start prints an admin key; `keys create` prints a
//! working key on its last line.

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use reqwest::StatusCode;

const BIN: &str = env!("CARGO_BIN_EXE_importgate");

struct Server(Child);

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn serve_prints_the_first_admin_key_once_and_keys_create_works() {
    let dir = tempfile::tempdir().unwrap();
    let db = format!("sqlite://{}", dir.path().join("cli.db").display());
    let port = free_port();
    let mut child = Command::new(BIN)
        .args([
            "serve",
            "--listen",
            &format!("127.0.0.1:{port}"),
            "--database",
            &db,
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let server = Server(child);
    let mut lines = BufReader::new(stdout).lines();
    let _intro = lines.next().unwrap().unwrap();
    let admin = lines.next().unwrap().unwrap();
    assert!(admin.starts_with("igk_"), "{admin}");

    let client = reqwest::Client::new();
    let base = format!("http://127.0.0.1:{port}");
    let mut up = false;
    for _ in 0..100 {
        if client.get(format!("{base}/healthz")).send().await.is_ok() {
            up = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(up, "server answers");
    let resp = client
        .get(format!("{base}/api/keys"))
        .header("X-API-Key", &admin)
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), StatusCode::OK);

    let out = Command::new(BIN)
        .args([
            "keys",
            "create",
            "--name",
            "Budi Santoso",
            "--role",
            "submitter",
            "--modules",
            "customers,orders",
            "--database",
            &db,
        ])
        .output()
        .unwrap();
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    let key = text.lines().last().unwrap().to_string();
    assert!(key.starts_with("igk_"));
    assert!(
        !String::from_utf8_lossy(&out.stderr).contains("Budi Santoso"),
        "names are masked"
    );
    let resp = client
        .post(format!("{base}/api/import/customers"))
        .header("X-API-Key", &key)
        .header("Content-Type", "text/csv")
        .body("customer_name,wa_number\nAndi,0811\n")
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), StatusCode::ACCEPTED);
    let resp = client
        .post(format!("{base}/api/import/products"))
        .header("X-API-Key", &key)
        .header("Content-Type", "text/csv")
        .body("sku\nx\n")
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), StatusCode::FORBIDDEN, "scope holds");
    drop(server);

    // A second start on the same database prints no key.
    let port = free_port();
    let mut child = Command::new(BIN)
        .args([
            "serve",
            "--listen",
            &format!("127.0.0.1:{port}"),
            "--database",
            &db,
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let server = Server(child);
    for _ in 0..100 {
        if client
            .get(format!("http://127.0.0.1:{port}/healthz"))
            .send()
            .await
            .is_ok()
        {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    drop(server);
    let rest: Vec<String> = BufReader::new(stdout)
        .lines()
        .map_while(Result::ok)
        .collect();
    assert!(rest.iter().all(|l| !l.contains("igk_")), "{rest:?}");
}

/// Every log line, at the most verbose level, through a whole pipeline and
/// some bad requests: JSON with a request id, and never a key or a name.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn logs_are_json_and_never_hold_keys_or_names() {
    let dir = tempfile::tempdir().unwrap();
    let db = format!("sqlite://{}", dir.path().join("logs.db").display());
    let port = free_port();
    let log_path = dir.path().join("server.log");
    let out_path = dir.path().join("server.out");
    let child = Command::new(BIN)
        .args([
            "serve",
            "--log-json",
            "--listen",
            &format!("127.0.0.1:{port}"),
            "--database",
            &db,
        ])
        .env("IMPORTGATE_LOG", "debug")
        .stdout(std::fs::File::create(&out_path).unwrap())
        .stderr(std::fs::File::create(&log_path).unwrap())
        .spawn()
        .unwrap();
    let server = Server(child);
    let client = reqwest::Client::new();
    let base = format!("http://127.0.0.1:{port}");
    let mut admin = String::new();
    for _ in 0..100 {
        admin = std::fs::read_to_string(&out_path)
            .unwrap_or_default()
            .lines()
            .find(|l| l.starts_with("igk_"))
            .unwrap_or("")
            .to_string();
        if !admin.is_empty() && client.get(format!("{base}/healthz")).send().await.is_ok() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let mut secrets = vec![admin.clone()];
    let key = |name: &'static str, role: &'static str| {
        let client = client.clone();
        let (base, admin) = (base.clone(), admin.clone());
        async move {
            let resp = client
                .post(format!("{base}/api/keys"))
                .header("X-API-Key", &admin)
                .json(&serde_json::json!({"name": name, "role": role}))
                .send()
                .await
                .unwrap();
            resp.json::<serde_json::Value>().await.unwrap()["key"]
                .as_str()
                .unwrap()
                .to_string()
        }
    };
    let sub = key("Budi Santoso", "submitter").await;
    let apr = key("Siti Rahayu", "approver").await;
    secrets.extend([sub.clone(), apr.clone()]);
    let job: serde_json::Value = client
        .post(format!("{base}/api/import/customers"))
        .header("X-API-Key", &sub)
        .header("Content-Type", "text/csv")
        .header("Prefer", "wait=10")
        .body("customer_name,wa_number\nAndi Wijaya,0811\n")
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let id = job["id"].as_str().unwrap();
    client
        .post(format!("{base}/api/jobs/{id}/approve"))
        .header("X-API-Key", &apr)
        .header("Prefer", "wait=10")
        .send()
        .await
        .unwrap();
    // A wrong key (right shape) and a self-approval attempt.
    let forged = format!("igk_{}", "Q".repeat(44));
    client
        .get(format!("{base}/api/jobs"))
        .header("X-API-Key", &forged)
        .send()
        .await
        .unwrap();
    secrets.push(forged);
    client
        .post(format!("{base}/api/jobs/{id}/rollback"))
        .header("X-API-Key", &sub)
        .send()
        .await
        .unwrap();
    client
        .post(format!("{base}/api/jobs/{id}/approve"))
        .header("X-API-Key", &sub)
        .send()
        .await
        .unwrap();
    drop(server);

    let log = std::fs::read_to_string(&log_path).unwrap();
    let lines: Vec<&str> = log.lines().collect();
    assert!(lines.len() > 10, "verbose logs expected:\n{log}");
    let mut with_request_id = 0;
    for line in &lines {
        let parsed: serde_json::Value =
            serde_json::from_str(line).unwrap_or_else(|_| panic!("not JSON: {line}"));
        if line.contains("request_id") {
            with_request_id += 1;
        }
        for secret in &secrets {
            assert!(!line.contains(secret.as_str()), "a key in the log: {line}");
            assert!(
                !line.contains(&secret[4..16]),
                "a key's lookup part in the log: {line}"
            );
        }
        for name in ["Budi Santoso", "Siti Rahayu", "Andi Wijaya"] {
            assert!(!line.contains(name), "a name in the log: {line}");
        }
        let _ = parsed;
    }
    assert!(with_request_id > 0, "request ids in the log:\n{log}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_import_command_uploads_waits_and_reports() {
    let app = crate::common::spawn_app().await;
    let sub = app.submitter().await;
    let dir = tempfile::tempdir().unwrap();
    let good = dir.path().join("customers.csv");
    std::fs::write(&good, crate::common::CUSTOMERS).unwrap();
    let run = |file: &std::path::Path, key: &str, extra: &[&str]| {
        let mut cmd = Command::new(BIN);
        cmd.args(["import", "customers"])
            .arg(file)
            .args(["--url", &app.base, "--wait"])
            .args(extra);
        cmd.env("IMPORTGATE_KEY", key);
        cmd.output().unwrap()
    };
    let out = run(&good, &sub, &["--json"]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let job: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(job["state"], "awaiting_approval");
    assert_eq!(job["file"]["name"], "customers.csv");
    assert_eq!(job["counts"]["insert"], 3);
    // Without --json, a summary of a few lines.
    let out = run(&good, &sub, &[]);
    let text = String::from_utf8_lossy(&out.stdout).to_string();
    assert_eq!(out.status.code(), Some(0), "{text}");
    assert!(text.contains("customers  awaiting_approval\n"), "{text}");
    assert!(text.contains("3: 3 insert, 0 in error"), "{text}");
    assert!(
        text.contains(&format!("console    {}/jobs/job_", app.base)),
        "{text}"
    );
    assert!(text.lines().count() < 12, "{text}");

    let bad = dir.path().join("bad.csv");
    std::fs::write(
        &bad,
        "customer_name,wa_number,consumable_cycle_days\nAndi,0899,lots\n",
    )
    .unwrap();
    let out = run(&bad, &sub, &["--mode", "upsert", "--json"]);
    assert_eq!(out.status.code(), Some(1));
    let job: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(job["state"], "failed");
    assert_eq!(job["mode"], "upsert");
    assert!(String::from_utf8_lossy(&out.stderr).contains("row 2, column consumable_cycle_days"));

    let out = run(&good, "igk_wrong", &[]);
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(app.count("uc_scrm_customers").await, 0);
}

/// `importgate revise`: a mapping, fixes and exclusions given as flags
/// become a revision; the command waits for it and prints it, and a
/// refused revision names the member and exits 2.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_revise_command_maps_fixes_and_leaves_rows_out() {
    let app = crate::common::spawn_app().await;
    let sub = app.submitter().await;
    let run = |args: &[&str]| {
        let mut cmd = Command::new(BIN);
        cmd.arg("revise")
            .args(args)
            .args(["--url", &app.base, "--wait", "--json"]);
        cmd.env("IMPORTGATE_KEY", &sub);
        cmd.output().unwrap()
    };
    let crm = "Nama Pelanggan,No. WA,Kota,Catatan\nBudi,0812,Bandung,lama\n";
    let invalid = app.upload(&sub, "customers", "", crm).await;
    let id = invalid["id"].as_str().unwrap();
    let out = run(&[
        id,
        "--map",
        "No. WA=wa_number",
        "--map",
        "Kota=city",
        "--map",
        "Catatan=",
        "--remember-mapping",
        "--comment",
        "dari CRM",
    ]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    let job: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(job["state"], "awaiting_approval", "{job}");
    assert_eq!(job["revision_of"], id);
    assert_eq!(
        job["revision"]["mapping"],
        serde_json::json!({"No. WA": "wa_number", "Kota": "city", "Catatan": null})
    );
    assert_eq!(job["revision"]["comment"], "dari CRM");
    let saved = app.get_json(&sub, "/api/modules/customers/mappings").await;
    assert_eq!(saved["mappings"].as_array().unwrap().len(), 1, "{saved}");

    let bad = "customer_name,wa_number,consumable_cycle_days\n\
        Andi,0899,lots\nBudi,0898,30\nCici,0897,banyak\n";
    let failed = app.upload(&sub, "customers", "", bad).await;
    let id = failed["id"].as_str().unwrap();
    let out = run(&[
        id,
        "--fix",
        "2:consumable_cycle_days=45",
        "--fix",
        "2:nope=1",
    ]);
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("[fixes[1].column]"), "{stderr}");
    let out = run(&[id, "--fix", "x:city=1"]);
    assert_ne!(out.status.code(), Some(0));
    assert!(String::from_utf8_lossy(&out.stderr).contains("ROW:COLUMN=VALUE"));

    let out = run(&[id, "--fix", "2:consumable_cycle_days=45", "--exclude", "4"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    let job: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(job["state"], "awaiting_approval", "{job}");
    assert_eq!(job["counts"]["excluded"], 1);
    assert_eq!(job["counts"]["insert"], 2);
    assert_eq!(job["revision"]["fixes"], 1);

    // The errored-rows file, corrected, sent back as it is.
    let again = app.upload(&sub, "customers", "", bad).await;
    let id = again["id"].as_str().unwrap();
    let rows = app.errored_rows_csv(&sub, id).await;
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("errored-rows.csv");
    std::fs::write(&file, rows.replace("lots", "45").replace("banyak", "60")).unwrap();
    let out = run(&[id, "--file", file.to_str().unwrap()]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    let job: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(job["state"], "awaiting_approval", "{job}");
    assert_eq!(job["revision"]["fixes"], 2);
    let out = run(&[id, "--file", file.to_str().unwrap(), "--exclude", "2"]);
    assert_ne!(out.status.code(), Some(0), "a file carries only fixes");
}

/// `importgate rules propose` sends a file's rule set to the gate, a
/// malformed rule refused naming it; `rules show` prints the set in force
/// once another person approved it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_rules_command_proposes_and_shows() {
    let app = crate::common::spawn_app().await;
    let apr = app.approver().await;
    let sub = app.submitter().await;
    let csv = "customer_name,wa_number\nAndi,0812-3456-7890\nBudi,bukan nomor\n";
    let job = app.upload(&sub, "customers", "", csv).await;
    let job_id = job["id"].as_str().unwrap();
    let run = |key: &str, args: &[&str]| {
        let mut cmd = Command::new(BIN);
        cmd.arg("rules").args(args).args(["--url", &app.base]);
        cmd.env("IMPORTGATE_KEY", key);
        cmd.output().unwrap()
    };
    let file = app.dir().join("rules.json");
    std::fs::write(
        &file,
        r#"[{"id": "wa", "column": "wa_number", "normalize": "phone_id"}]"#,
    )
    .unwrap();
    let out = run(
        &app.admin,
        &[
            "propose",
            "customers",
            file.to_str().unwrap(),
            "--comment",
            "nomor WA",
        ],
    );
    let stdout = String::from_utf8_lossy(&out.stdout).to_string();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout.contains("proposes version 2"), "{stdout}");
    assert!(stdout.contains("+ wa"), "{stdout}");
    let id = stdout.split_whitespace().next().unwrap().to_string();
    let resp = app
        .client
        .post(app.url(&format!("/api/rule-proposals/{id}/approve")))
        .header("X-API-Key", &apr)
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), reqwest::StatusCode::OK);
    let out = run(&apr, &["show", "customers"]);
    let stdout = String::from_utf8_lossy(&out.stdout).to_string();
    assert_eq!(out.status.code(), Some(0));
    assert!(stdout.contains("version 2"), "{stdout}");
    assert!(
        stdout.contains("normalize wa_number with phone_id"),
        "{stdout}"
    );

    // Tried on a job validated before any rule, before anyone decides:
    // what would change, the job not.
    std::fs::write(
        &file,
        r#"[{"id": "wa", "column": "wa_number", "normalize": "phone_id"},
            {"id": "city", "column": "city", "normalize": "title"}]"#,
    )
    .unwrap();
    let out = run(
        &app.admin,
        &["propose", "customers", file.to_str().unwrap()],
    );
    let third = String::from_utf8_lossy(&out.stdout);
    let third = third.split_whitespace().next().unwrap().to_string();
    let out = run(&apr, &["try", &third, job_id]);
    let stdout = String::from_utf8_lossy(&out.stdout).to_string();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        stdout.contains("version 1") && stdout.contains("version 3"),
        "{stdout}"
    );
    assert!(stdout.contains("newly failing  row 3"), "{stdout}");
    assert!(
        stdout.contains("0812-3456-7890 → +6281234567890"),
        "{stdout}"
    );
    let out = run(&sub, &["try", &third, job_id]);
    assert_eq!(out.status.code(), Some(2));

    std::fs::write(
        &file,
        r#"[{"id": "x", "column": "nope", "normalize": "trim"}]"#,
    )
    .unwrap();
    let out = run(
        &app.admin,
        &["propose", "customers", file.to_str().unwrap()],
    );
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("[rules[0]]") && stderr.contains("nope"),
        "{stderr}"
    );
}

/// `importgate export` writes a module's rows, filtered, to standard
/// output or to a file put in place once whole; the file imports again as
/// all unchanged, and a filter the module cannot take is refused naming
/// it, exit 2, with no file left behind.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_export_command_writes_the_filtered_rows_to_stdout_or_a_file() {
    let app = crate::common::spawn_app().await;
    let (sub, apr) = (app.submitter().await, app.approver().await);
    let job = app
        .upload(&sub, "customers", "", crate::common::CUSTOMERS)
        .await;
    let job_id = job["id"].as_str().unwrap();
    assert_eq!(
        app.act_ok(&apr, job_id, "approve").await["state"],
        "committed"
    );
    let run = |args: &[&str]| {
        let mut cmd = Command::new(BIN);
        cmd.args(["export", "customers"])
            .args(args)
            .args(["--url", &app.base]);
        cmd.env("IMPORTGATE_KEY", &sub);
        cmd.output().unwrap()
    };

    let out = run(&["--where", "city=Bandung"]);
    let stderr = String::from_utf8_lossy(&out.stderr).to_string();
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    let csv = String::from_utf8(out.stdout).unwrap();
    let lines: Vec<&str> = csv.lines().collect();
    assert_eq!(lines.len(), 2, "{csv}");
    assert!(lines[0].ends_with(",_version"), "{csv}");
    assert!(lines[1].starts_with("Budi Hartono,"), "{csv}");

    let file = app.dir().join("pelanggan.csv");
    let out = run(&["--job", job_id, "-o", file.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0));
    let whole = std::fs::read_to_string(&file).unwrap();
    assert_eq!(whole.lines().count(), 4, "{whole}");
    let again = app.upload(&sub, "customers", "?mode=upsert", &whole).await;
    assert_eq!(again["counts"]["unchanged"], 3, "{again}");

    let refused = app.dir().join("refused.csv");
    let out = run(&["--where", "planet=Mars", "-o", refused.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr).to_string();
    assert!(stderr.contains("[where.planet]"), "{stderr}");
    assert!(!refused.exists());
    let out = run(&["--where", "city"]);
    assert_eq!(out.status.code(), Some(2));
}

/// The client's own failures say what to do: a file that is not there
/// names its path, a service that does not answer names the URL tried,
/// and `--help` explains the modes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_clients_failures_name_the_file_and_the_url() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("pelanggan.csv");
    let closed = format!("http://127.0.0.1:{}", free_port());
    let run = |args: &[&str]| {
        let out = Command::new(BIN)
            .args(args)
            .env("IMPORTGATE_KEY", "igk_x")
            .output()
            .unwrap();
        (
            out.status.code(),
            String::from_utf8_lossy(&out.stderr).to_string(),
        )
    };
    let (code, stderr) = run(&[
        "import",
        "customers",
        missing.to_str().unwrap(),
        "--url",
        &closed,
    ]);
    assert_ne!(code, Some(0));
    assert!(stderr.contains(missing.to_str().unwrap()), "{stderr}");

    std::fs::write(&missing, crate::common::CUSTOMERS).unwrap();
    let (code, stderr) = run(&[
        "import",
        "customers",
        missing.to_str().unwrap(),
        "--url",
        &closed,
    ]);
    assert_ne!(code, Some(0));
    assert!(
        stderr.contains(&format!("cannot reach importgate at {closed}")),
        "{stderr}"
    );
    let (_, stderr) = run(&["export", "customers", "--url", &closed]);
    assert!(stderr.contains("is the service running there?"), "{stderr}");

    let out = Command::new(BIN)
        .args(["import", "--help"])
        .output()
        .unwrap();
    let help = String::from_utf8_lossy(&out.stdout);
    assert!(help.contains("upsert: either"), "{help}");
    assert!(help.contains("skip: the valid rows go on"), "{help}");
}

/// `importgate jobs`: a job followed from the upload through the gate and
/// back out, from a terminal, with the API's four-eyes refusals.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_jobs_command_follows_a_job_through_the_gate() {
    let app = crate::common::spawn_app().await;
    let sub = app.submitter().await;
    let apr = app.approver().await;
    let run = |key: &str, args: &[&str]| {
        let mut cmd = Command::new(BIN);
        cmd.args(args).args(["--url", &app.base]);
        cmd.env("IMPORTGATE_KEY", key);
        let out = cmd.output().unwrap();
        let text = String::from_utf8_lossy(&out.stdout).to_string()
            + &String::from_utf8_lossy(&out.stderr);
        (out.status.code(), text)
    };
    let file = app.dir().join("pelanggan.csv");
    std::fs::write(&file, crate::common::CUSTOMERS).unwrap();
    let (code, text) = run(&sub, &["import", "customers", file.to_str().unwrap()]);
    assert_eq!(code, Some(0), "{text}");
    let id = text.split_whitespace().next().unwrap().to_string();
    assert!(id.starts_with("job_"), "{text}");

    let (code, text) = run(&sub, &["jobs", "wait", &id]);
    assert_eq!(code, Some(0), "{text}");
    assert!(text.contains("awaiting_approval"), "{text}");
    assert!(
        text.contains(&format!("importgate jobs approve {id}")),
        "{text}"
    );

    let (code, text) = run(&apr, &["jobs", "list", "--state", "awaiting_approval"]);
    assert_eq!(code, Some(0), "{text}");
    assert!(
        text.contains(&id) && text.contains("pelanggan.csv"),
        "{text}"
    );
    let (_, text) = run(&apr, &["jobs", "list", "--state", "committed"]);
    assert!(text.contains("no jobs"), "{text}");

    // Four eyes: the submitter may not approve their own upload.
    let (code, text) = run(&sub, &["jobs", "approve", &id]);
    assert_eq!(code, Some(2), "{text}");
    assert!(text.contains("refused (403"), "{text}");
    let (code, text) = run(
        &apr,
        &["jobs", "approve", &id, "--comment", "cocok", "--wait"],
    );
    assert_eq!(code, Some(0), "{text}");
    assert!(text.contains("customers  committed"), "{text}");
    assert!(text.contains("commit approved by"), "{text}");
    assert!(text.contains("\"cocok\""), "{text}");
    assert_eq!(app.count("uc_scrm_customers").await, 3);

    // The rollback: asked by the submitter, refused to them, refused by
    // the approver, so the rows stay.
    let (code, text) = run(&sub, &["jobs", "rollback", &id, "--comment", "salah bulan"]);
    assert_eq!(code, Some(0), "{text}");
    assert!(text.contains("rollback_pending"), "{text}");
    let (code, text) = run(&sub, &["jobs", "approve", &id]);
    assert_eq!(code, Some(2), "{text}");
    let (code, text) = run(&apr, &["jobs", "reject", &id, "--comment", "tetap"]);
    assert_eq!(code, Some(0), "{text}");
    assert!(text.contains("customers  committed"), "{text}");
    assert_eq!(app.count("uc_scrm_customers").await, 3);

    let (code, text) = run(&sub, &["jobs", "show", &id, "--json"]);
    assert_eq!(code, Some(0), "{text}");
    let job: serde_json::Value = serde_json::from_str(&text).unwrap();
    assert_eq!(job["state"], "committed");
    assert_eq!(job["decisions"].as_array().unwrap().len(), 2);

    // A cancel, and a move the state does not allow.
    let other = app
        .upload(
            &sub,
            "customers",
            "",
            "customer_name,wa_number\nCici,0811000009\n",
        )
        .await;
    let other = other["id"].as_str().unwrap();
    let (code, text) = run(&sub, &["jobs", "cancel", other]);
    assert_eq!(code, Some(0), "{text}");
    assert!(text.contains("customers  cancelled"), "{text}");
    let (code, text) = run(&apr, &["jobs", "approve", other]);
    assert_eq!(code, Some(2), "{text}");
    assert!(text.contains("refused (409"), "{text}");
    let (code, text) = run(&apr, &["jobs", "show", "job_nothing"]);
    assert_eq!(code, Some(2), "{text}");
}
