//! Who may read `/metrics` (API.md section 6): on the main listener a
//! loopback client, or one showing the bearer token of
//! `metrics_token_file`; with `metrics_listen`, only that listener serves
//! it. The real binary, reached over loopback and over the machine's own
//! non-loopback address.

use std::net::IpAddr;

use reqwest::{Client, StatusCode};

use crate::common::{DropDatabase, fresh_database};
use crate::replicas::{free_port, start_with};

/// An address of this machine that is not loopback, if it has one: the
/// source address the kernel picks for a route out (nothing is sent).
fn own_address() -> Option<IpAddr> {
    ["10.255.255.255:9", "192.0.2.1:9", "172.16.0.1:9"]
        .into_iter()
        .find_map(|target| {
            let socket = std::net::UdpSocket::bind("0.0.0.0:0").ok()?;
            socket.connect(target).ok()?;
            let ip = socket.local_addr().ok()?.ip();
            (!ip.is_loopback() && !ip.is_unspecified()).then_some(ip)
        })
}

async fn status(client: &Client, url: &str, token: Option<&str>) -> StatusCode {
    let mut req = client.get(url);
    if let Some(t) = token {
        req = req.bearer_auth(t);
    }
    req.send().await.unwrap().status()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn metrics_need_loopback_or_the_bearer_token() {
    let Some(ip) = own_address() else {
        eprintln!("skipped: this machine has no address but loopback to scrape from");
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let url = fresh_database(dir.path()).await;
    let _drop = DropDatabase(url.clone());
    let token_file = dir.path().join("metrics-token");
    std::fs::write(&token_file, "s3cret-scrape-token\n").unwrap();
    let extra = [
        "--metrics-token-file".to_string(),
        token_file.display().to_string(),
    ];
    let (replica, _) = start_with(&url, &dir.path().join("a.log"), "0.0.0.0", &extra).await;
    let port = replica.base.rsplit(':').next().unwrap();
    let from_outside = format!("http://{ip}:{port}/metrics");
    let client = Client::new();

    let loopback = format!("{}/metrics", replica.base);
    assert_eq!(status(&client, &loopback, None).await, StatusCode::OK);
    let resp = client.get(&from_outside).send().await.unwrap();
    assert_eq!(resp.status(), StatusCode::UNAUTHORIZED);
    assert!(resp.headers().contains_key("www-authenticate"));
    let body = resp.text().await.unwrap();
    assert!(!body.contains("importgate_jobs"), "{body}");
    for wrong in ["nope", "s3cret-scrape-token-2", ""] {
        let got = status(&client, &from_outside, Some(wrong)).await;
        assert_eq!(got, StatusCode::UNAUTHORIZED, "{wrong:?}");
    }
    let resp = client
        .get(&from_outside)
        .bearer_auth("s3cret-scrape-token")
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), StatusCode::OK);
    assert!(resp.text().await.unwrap().contains("importgate_jobs"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn metrics_listen_moves_metrics_off_the_main_listener() {
    let dir = tempfile::tempdir().unwrap();
    let url = fresh_database(dir.path()).await;
    let _drop = DropDatabase(url.clone());
    let own = format!("127.0.0.1:{}", free_port());
    let extra = ["--metrics-listen".to_string(), own.clone()];
    let (replica, _) = start_with(&url, &dir.path().join("a.log"), "127.0.0.1", &extra).await;
    let client = Client::new();
    let main = format!("{}/metrics", replica.base);
    assert_eq!(status(&client, &main, None).await, StatusCode::NOT_FOUND);
    let resp = client
        .get(format!("http://{own}/metrics"))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), StatusCode::OK);
    assert!(resp.text().await.unwrap().contains("importgate_jobs"));
}
