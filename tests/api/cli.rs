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
