//! Attacks and faults, each reproduced against the real service, and
//! what holds under them.

use reqwest::StatusCode;
use serde_json::json;

use crate::common::{problem, spawn_app, spawn_app_with};
use crate::console::Console;

const CUSTOMERS: &str = "customer_name,wa_number\nBudi Santoso,081200000001\n";

/// Invented HTTP methods make no metric series of their own.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn metric_labels_come_from_known_sets_only() {
    let app = spawn_app().await;
    for i in 0..30 {
        let method = reqwest::Method::from_bytes(format!("INVENTED{i}").as_bytes()).unwrap();
        let _ = app
            .client
            .request(method, app.url("/api/jobs"))
            .send()
            .await
            .unwrap();
    }
    let text = app
        .client
        .get(app.url("/metrics"))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(!text.contains("INVENTED"), "a client's method is no label");
    assert!(text.contains("method=\"other\""), "counted as other");
}

/// A request id a client forges into log lines is replaced.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_forged_request_id_is_replaced_and_a_plain_one_kept() {
    let app = spawn_app().await;
    let id_of = |resp: &reqwest::Response| {
        resp.headers()
            .get("x-request-id")
            .and_then(|v| v.to_str().ok())
            .unwrap_or("")
            .to_string()
    };
    let forged = "x\" job=job_1 event=approve by=admin";
    let resp = app
        .client
        .get(app.url("/healthz"))
        .header("X-Request-Id", forged)
        .send()
        .await
        .unwrap();
    let got = id_of(&resp);
    assert!(!got.is_empty() && got != forged, "{got}");
    assert!(got.len() <= 64 && !got.contains(' '));
    let resp = app
        .client
        .get(app.url("/healthz"))
        .header("X-Request-Id", "batch-7.row_2")
        .send()
        .await
        .unwrap();
    assert_eq!(id_of(&resp), "batch-7.row_2");
}

/// Answers that carry a key or a claim token are not cached.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn answers_with_a_key_or_claim_token_say_no_store() {
    let app = spawn_app().await;
    let no_store = |resp: &reqwest::Response| {
        resp.headers()
            .get("cache-control")
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| v.contains("no-store"))
    };
    let resp = app
        .client
        .post(app.url("/api/keys"))
        .header("X-API-Key", &app.admin)
        .json(&json!({"name": "Budi Santoso", "role": "submitter"}))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), StatusCode::CREATED);
    assert!(no_store(&resp), "a new key");
    let resp = app
        .client
        .post(app.url("/api/key-requests"))
        .json(&json!({"name": "Rina Kusuma", "email": "rina@contoh.co.id",
                      "role": "submitter", "reason": "reports"}))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), StatusCode::CREATED);
    assert!(no_store(&resp), "a claim token");
    let body: serde_json::Value = resp.json().await.unwrap();
    let claim = format!(
        "/api/key-requests/{}?claim_token={}",
        body["id"].as_str().unwrap(),
        body["claim_token"].as_str().unwrap()
    );
    let resp = app.client.get(app.url(&claim)).send().await.unwrap();
    assert_eq!(resp.status(), StatusCode::OK);
    assert!(no_store(&resp), "the collection page of a key");
}

/// The approval limit holds before the sweep comes by.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_job_past_its_approval_limit_cannot_be_approved_before_the_sweep() {
    let app = spawn_app_with(|s| {
        s.limits.approval_secs = 1;
        s.expiry_sweep_ms = 3_600_000;
    })
    .await;
    let (sub, apr) = (app.submitter().await, app.approver().await);
    let job = app.upload(&sub, "customers", "", CUSTOMERS).await;
    let id = job["id"].as_str().unwrap();
    tokio::time::sleep(std::time::Duration::from_millis(1300)).await;
    let body = problem(
        app.act(&apr, id, "approve", None).await,
        StatusCode::CONFLICT,
        "invalid_state",
    )
    .await;
    assert_eq!(body["state"], "expired");
    assert_eq!(app.job(&sub, id).await["state"], "expired");
    assert_eq!(app.count("uc_scrm_customers").await, 0);
}

/// Every way a spreadsheet finds a formula is neutralised in the CSV error
/// report.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_error_report_neutralises_hidden_formulas() {
    let app = spawn_app().await;
    let sub = app.submitter().await;
    let cells = [";=1+1", " =1+1", "\u{a0}=1+1", "＝1+1"];
    let mut csv = String::from("customer_name,wa_number,consumable_cycle_days\n");
    for (i, c) in cells.iter().enumerate() {
        csv.push_str(&format!("Budi,08120000000{i},\"{c}\"\n"));
    }
    let job = app.upload(&sub, "customers", "", &csv).await;
    let id = job["id"].as_str().unwrap();
    let report = app
        .get(&sub, &format!("/api/jobs/{id}/errors?format=csv"))
        .await
        .text()
        .await
        .unwrap();
    let mut reader = csv::Reader::from_reader(report.as_bytes());
    let values: Vec<String> = reader
        .records()
        .map(|r| r.unwrap()[2].to_string())
        .collect();
    assert_eq!(values.len(), cells.len(), "{report}");
    for (got, cell) in values.iter().zip(cells) {
        assert_eq!(got, &format!("'{cell}"), "{report}");
    }
}

/// A 429 on an upload says the connection closes (its body is left unread).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rate_limited_upload_closes_its_connection() {
    let app = spawn_app_with(|s| s.limits.uploads_per_minute = 1).await;
    let sub = app.submitter().await;
    let first = app
        .upload_raw(&sub, "customers", "", "text/csv", CUSTOMERS)
        .await;
    assert_eq!(first.status(), StatusCode::ACCEPTED);
    let second = app
        .upload_raw(&sub, "customers", "", "text/csv", CUSTOMERS)
        .await;
    assert_eq!(second.status(), StatusCode::TOO_MANY_REQUESTS);
    assert_eq!(
        second
            .headers()
            .get("connection")
            .and_then(|v| v.to_str().ok()),
        Some("close")
    );
}

/// An admin with a module scope keeps the keys it makes within it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_module_scoped_admin_cannot_mint_a_wider_key() {
    let app = spawn_app().await;
    let (scoped, _) = app.key("Dewi Anggraini", "admin", &["customers"]).await;
    let create = |modules: serde_json::Value| {
        app.client
            .post(app.url("/api/keys"))
            .header("X-API-Key", &scoped)
            .json(&json!({"name": "Agus Setiawan", "role": "admin", "modules": modules}))
            .send()
    };
    for wider in [
        json!(["*"]),
        json!(["orders"]),
        json!(["customers", "orders"]),
    ] {
        problem(
            create(wider).await.unwrap(),
            StatusCode::FORBIDDEN,
            "forbidden",
        )
        .await;
    }
    let resp = create(json!(["customers"])).await.unwrap();
    assert_eq!(resp.status(), StatusCode::CREATED);
    // It sees, and revokes, only keys within its scope.
    let keys = app.get_json(&scoped, "/api/keys").await;
    assert!(
        keys["keys"]
            .as_array()
            .unwrap()
            .iter()
            .all(|k| k["modules"] == json!(["customers"])),
        "{keys}"
    );
}

/// An admin with a module scope neither approves nor denies a key request
/// beyond it, and its refusal names nobody; the request stays pending for
/// an admin whose scope covers it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_module_scoped_admin_cannot_decide_a_request_beyond_its_scope() {
    let app = spawn_app().await;
    let (scoped, _) = app.key("Dewi Anggraini", "admin", &["orders"]).await;
    let resp = app
        .client
        .post(app.url("/api/key-requests"))
        .json(
            &json!({"name": "Rina Kusuma", "email": "rina.kusuma@contoh.co.id",
                      "role": "submitter", "modules": ["customers"], "reason": "pelanggan"}),
        )
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), StatusCode::CREATED);
    let made: serde_json::Value = resp.json().await.unwrap();
    let id = made["id"].as_str().unwrap();
    for decision in ["deny", "approve"] {
        let resp = app
            .client
            .post(app.url(&format!("/api/key-requests/{id}/{decision}")))
            .header("X-API-Key", &scoped)
            .json(&json!({"comment": "no"}))
            .send()
            .await
            .unwrap();
        let body = problem(resp, StatusCode::FORBIDDEN, "forbidden").await;
        let text = body.to_string();
        assert!(
            !text.contains("Rina") && !text.contains("rina.kusuma"),
            "{text}"
        );
    }
    let list = app.get_json(&app.admin, "/api/key-requests").await;
    assert_eq!(list["requests"][0]["state"], "pending", "{list}");
}

/// The console draws on the same per-key limits as the API.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn console_uploads_count_against_the_api_limit() {
    let app = spawn_app_with(|s| s.limits.uploads_per_minute = 2).await;
    let sub = app.submitter().await;
    let mut c = Console::new(&app);
    c.sign_in(&sub).await;
    let resp = c.upload("customers", CUSTOMERS).await;
    assert_eq!(resp.status(), StatusCode::ACCEPTED);
    let api = app
        .upload_raw(&sub, "customers", "", "text/csv", CUSTOMERS)
        .await;
    assert_eq!(api.status(), StatusCode::ACCEPTED);
    let resp = c.upload("customers", CUSTOMERS).await;
    assert_eq!(resp.status(), StatusCode::TOO_MANY_REQUESTS);
    assert!(resp.headers().contains_key("retry-after"));
    let body: serde_json::Value = resp.json().await.unwrap();
    assert_eq!(body["code"], "rate_limited");
    let api = app
        .upload_raw(&sub, "customers", "", "text/csv", CUSTOMERS)
        .await;
    assert_eq!(api.status(), StatusCode::TOO_MANY_REQUESTS);
}

/// A blank line is a row, as the spreadsheet shows it: the rows after it
/// keep the numbers a person sees.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn row_numbers_count_blank_lines_as_a_spreadsheet_does() {
    let app = spawn_app().await;
    let sub = app.submitter().await;
    let csv = "customer_name,wa_number,consumable_cycle_days\r\n\
Budi,081200000001,7\r\n\
\r\n\
\"Sari\nWijaya\",081200000002,x\r\n\
\n\
Dewi,081200000003,y\n";
    let job = app.upload(&sub, "customers", "", csv).await;
    let id = job["id"].as_str().unwrap();
    let errors = app.get_json(&sub, &format!("/api/jobs/{id}/errors")).await;
    let rows: Vec<i64> = errors["errors"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["row"].as_i64().unwrap())
        .collect();
    // Row 3 is blank; row 4 spans two lines; row 5 is blank.
    assert_eq!(rows, [4, 6], "{errors}");
    assert_eq!(
        job["counts"]["rows"], 3,
        "blank lines are counted, not checked"
    );
}

/// The key request endpoint takes anyone, so it is bounded: the modules
/// list is checked and deduplicated, one address makes at most 10 requests
/// an hour (refused ones included), and the admin's list pages.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn key_requests_are_bounded_per_address_and_listed_a_page_at_a_time() {
    let app = spawn_app().await;
    let ask = |modules: serde_json::Value| {
        app.client
            .post(app.url("/api/key-requests"))
            .json(&json!({"name": "Rina Kusuma", "email": "rina@contoh.co.id",
                          "role": "submitter", "modules": modules, "reason": "reports"}))
            .send()
    };
    // 160,000 entries (the attack) are refused from their count.
    let flood: Vec<&str> = std::iter::repeat_n("customers", 160_000).collect();
    let body = problem(
        ask(json!(flood)).await.unwrap(),
        StatusCode::UNPROCESSABLE_ENTITY,
        "invalid_parameter",
    )
    .await;
    assert_eq!(body["parameter"], "modules");
    // Repeats are removed.
    let resp = ask(json!(["customers", "customers", "orders"]))
        .await
        .unwrap();
    assert_eq!(resp.status(), StatusCode::CREATED);
    let list = app.get_json(&app.admin, "/api/key-requests").await;
    assert_eq!(
        list["requests"][0]["modules"],
        json!(["customers", "orders"])
    );
    // Ten an hour from one address, the refused one included: 8 more pass
    // (each denied as it comes, so that no more than 3 wait at once).
    let deny = |id: String| {
        app.client
            .post(app.url(&format!("/api/key-requests/{id}/deny")))
            .header("X-API-Key", &app.admin)
            .json(&json!({"comment": "no"}))
            .send()
    };
    let first = list["requests"][0]["id"].as_str().unwrap().to_string();
    assert_eq!(deny(first).await.unwrap().status(), StatusCode::OK);
    for _ in 0..8 {
        let resp = ask(json!(["customers"])).await.unwrap();
        assert_eq!(resp.status(), StatusCode::CREATED);
        let made: serde_json::Value = resp.json().await.unwrap();
        let id = made["id"].as_str().unwrap().to_string();
        assert_eq!(deny(id).await.unwrap().status(), StatusCode::OK);
    }
    let resp = ask(json!(["customers"])).await.unwrap();
    assert!(resp.headers().contains_key("retry-after"));
    problem(resp, StatusCode::TOO_MANY_REQUESTS, "rate_limited").await;
    // Nine requests, listed four at a time.
    let mut seen = Vec::new();
    let mut path = "/api/key-requests?limit=4".to_string();
    loop {
        let page = app.get_json(&app.admin, &path).await;
        let requests = page["requests"].as_array().unwrap();
        assert!(requests.len() <= 4);
        seen.extend(
            requests
                .iter()
                .map(|r| r["id"].as_str().unwrap().to_string()),
        );
        match page["next_cursor"].as_str() {
            Some(c) => path = format!("/api/key-requests?limit=4&cursor={c}"),
            None => break,
        }
    }
    assert_eq!(seen.len(), 9);
    let mut sorted = seen.clone();
    sorted.sort();
    sorted.reverse();
    assert_eq!(seen, sorted, "newest first, no repeats");
}

/// At most 3 requests from one address wait at once; an admin denies all
/// of them in one console action, each a decision of its own, and the
/// address may ask again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_flood_from_one_address_waits_its_turn_and_is_denied_at_once() {
    let app = spawn_app().await;
    let ask = || {
        app.client
            .post(app.url("/api/key-requests"))
            .json(&json!({"name": "Rina Kusuma", "email": "rina@contoh.co.id",
                          "role": "submitter", "modules": ["customers"], "reason": "reports"}))
            .send()
    };
    for _ in 0..3 {
        assert_eq!(ask().await.unwrap().status(), StatusCode::CREATED);
    }
    let refused = problem(
        ask().await.unwrap(),
        StatusCode::TOO_MANY_REQUESTS,
        "rate_limited",
    )
    .await;
    assert!(
        refused["detail"]
            .as_str()
            .unwrap()
            .contains("from this address"),
        "{refused}"
    );

    let mut c = Console::new(&app);
    c.sign_in(&app.admin).await;
    let page = c.page("/keys").await;
    assert!(
        page.contains("action=\"/keys/requests/deny-address\""),
        "the action is offered"
    );
    assert!(
        page.contains("value=\"127.0.0.1\""),
        "for the requests' address"
    );
    let csrf = crate::console::csrf_of(&page);
    let resp = c
        .post(
            "/keys/requests/deny-address",
            &[("_csrf", &csrf), ("address", "127.0.0.1")],
        )
        .await;
    assert_eq!(resp.status(), StatusCode::SEE_OTHER);
    let list = app.get_json(&app.admin, "/api/key-requests").await;
    let states: Vec<&str> = (list["requests"].as_array().unwrap().iter())
        .map(|r| r["state"].as_str().unwrap())
        .collect();
    assert_eq!(states, ["denied", "denied", "denied"], "{list}");
    assert_eq!(ask().await.unwrap().status(), StatusCode::CREATED);
    let (ok, out) = crate::ledger::verify(&app);
    assert!(ok, "{out}");
}

/// A pending request expires, an approved one must be collected in time,
/// and an admin may withdraw an approval before collection.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn key_requests_expire_and_approvals_can_be_withdrawn() {
    let app = spawn_app_with(|s| {
        s.key_request_pending_secs = 1;
        s.key_request_collect_secs = 1;
    })
    .await;
    let ask = || async {
        let resp = app
            .client
            .post(app.url("/api/key-requests"))
            .json(&json!({"name": "Rina Kusuma", "email": "rina@contoh.co.id",
                          "role": "submitter", "reason": "reports"}))
            .send()
            .await
            .unwrap();
        assert_eq!(resp.status(), StatusCode::CREATED);
        let body: serde_json::Value = resp.json().await.unwrap();
        (
            body["id"].as_str().unwrap().to_string(),
            body["claim_token"].as_str().unwrap().to_string(),
        )
    };
    let post = |path: String| {
        app.client
            .post(app.url(&path))
            .header("X-API-Key", &app.admin)
            .send()
    };
    let claim = |id: &str, token: &str| {
        app.client
            .get(app.url(&format!("/api/key-requests/{id}?claim_token={token}")))
            .send()
    };
    let (pending, pending_token) = ask().await;
    let (approved, approved_token) = ask().await;
    let (withdrawn, withdrawn_token) = ask().await;
    for id in [&approved, &withdrawn] {
        let resp = post(format!("/api/key-requests/{id}/approve"))
            .await
            .unwrap();
        assert_eq!(resp.status(), StatusCode::OK);
    }
    let resp = post(format!("/api/key-requests/{withdrawn}/withdraw"))
        .await
        .unwrap();
    assert_eq!(resp.status(), StatusCode::OK);
    let body: serde_json::Value = resp.json().await.unwrap();
    assert_eq!(body["state"], "withdrawn");
    problem(
        claim(&withdrawn, &withdrawn_token).await.unwrap(),
        StatusCode::GONE,
        "withdrawn",
    )
    .await;
    problem(
        post(format!("/api/key-requests/{withdrawn}/withdraw"))
            .await
            .unwrap(),
        StatusCode::CONFLICT,
        "invalid_state",
    )
    .await;

    tokio::time::sleep(std::time::Duration::from_millis(1300)).await;
    problem(
        claim(&approved, &approved_token).await.unwrap(),
        StatusCode::GONE,
        "expired",
    )
    .await;
    let resp = claim(&pending, &pending_token).await.unwrap();
    assert_eq!(resp.status(), StatusCode::OK);
    let body: serde_json::Value = resp.json().await.unwrap();
    assert_eq!(body["state"], "expired");
    assert!(body.get("key").is_none());
    problem(
        post(format!("/api/key-requests/{pending}/approve"))
            .await
            .unwrap(),
        StatusCode::CONFLICT,
        "invalid_state",
    )
    .await;
}

/// A replica starting while another commits an import does not wait for
/// that commit (PostgreSQL; SQLite has one writer by design).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_replica_starts_while_a_commit_holds_its_table() {
    if !std::env::var("IMPORTGATE_TEST_POSTGRES").is_ok_and(|v| !v.is_empty()) {
        return;
    }
    let app = spawn_app().await;
    // What a commit holds on its module's table for its whole transaction.
    let db = importgate::store::Db::connect(&app.database).await.unwrap();
    let importgate::store::Db::Postgres(pool) = &db else {
        unreachable!()
    };
    let mut tx = pool.begin().await.unwrap();
    sqlx::query("LOCK TABLE uc_scrm_customers IN SHARE ROW EXCLUSIVE MODE")
        .execute(&mut *tx)
        .await
        .unwrap();
    // The same settings (and ledger key) as the running replica.
    let settings = app.app.settings.clone();
    let started = tokio::time::timeout(
        std::time::Duration::from_secs(10),
        importgate::app::App::open(settings),
    )
    .await;
    tx.rollback().await.unwrap();
    let second = started.expect("the second replica started while the table was held");
    second.expect("it opened").db.close().await;
    db.close().await;
}

/// An Excel 4.0 worksheet (no OLE2 container) is named for what it is, not
/// read as CSV and told to give `?encoding=`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_excel_4_worksheet_says_what_it_is() {
    let app = spawn_app().await;
    let sub = app.submitter().await;
    // BIFF4: a BOF record (0x0409, 6 bytes: version, worksheet), a
    // LABEL-ish record of text, then EOF (0x000A).
    let mut biff4 = vec![0x09, 0x04, 0x06, 0x00, 0x00, 0x00, 0x10, 0x00];
    biff4.extend([0x04, 0x02, 0x0C, 0x00]);
    biff4.extend(b"\x00\x00\x00\x00\x0f\x00\x04\x00name");
    biff4.extend([0x0A, 0x00, 0x00, 0x00]);
    for content_type in ["application/vnd.ms-excel", "application/octet-stream"] {
        let resp = app
            .upload_raw(&sub, "customers", "", content_type, biff4.clone())
            .await;
        assert_eq!(resp.status(), StatusCode::ACCEPTED);
        let job: serde_json::Value = resp.json().await.unwrap();
        let job = app.wait_done(&sub, job["id"].as_str().unwrap()).await;
        assert_eq!(job["state"], "invalid", "{job}");
        assert_eq!(job["problem"]["code"], "unreadable");
        let detail = job["problem"]["detail"].as_str().unwrap();
        assert!(detail.contains("Excel 2.x–4.0"), "{detail}");
        assert!(!detail.contains("encoding"), "{detail}");
    }
}

/// An upload that announces a megabyte, sends a few bytes and stops.
async fn stalled_upload(addr: &str, key: &str) -> tokio::net::TcpStream {
    use tokio::io::AsyncWriteExt;
    let mut s = tokio::net::TcpStream::connect(addr).await.unwrap();
    let head = format!(
        "POST /api/import/customers HTTP/1.1\r\nHost: {addr}\r\nX-API-Key: {key}\r\n\
         Content-Type: text/csv\r\nContent-Length: 1000000\r\n\r\n\
         customer_name,wa_number\nBudi,0812"
    );
    s.write_all(head.as_bytes()).await.unwrap();
    s
}

/// Uploads that send a few bytes and stop hold none of the database's
/// connections: the body is received before any database work, so
/// everyone else is served at once (were a connection taken first, every
/// request would wait for one and get a 500 after 30 s).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stalled_uploads_hold_no_database_connection() {
    let app = spawn_app().await;
    let sub = app.submitter().await;
    let addr = app.base.trim_start_matches("http://").to_string();
    // More stalled uploads than either backend's pool has connections.
    let mut stalled = Vec::new();
    for _ in 0..24 {
        stalled.push(stalled_upload(&addr, &sub).await);
    }
    tokio::time::sleep(std::time::Duration::from_millis(500)).await;
    let quick = std::time::Duration::from_secs(10);
    let list = tokio::time::timeout(quick, app.get(&sub, "/api/jobs"))
        .await
        .expect("the job list answers while uploads stall");
    assert_eq!(list.status(), StatusCode::OK);
    let upload = tokio::time::timeout(
        quick,
        app.upload_raw(&sub, "customers", "", "text/csv", CUSTOMERS),
    )
    .await
    .expect("another upload is taken while uploads stall");
    assert_eq!(upload.status(), StatusCode::ACCEPTED);
    let ready = tokio::time::timeout(quick, app.client.get(app.url("/readyz")).send())
        .await
        .expect("readyz answers")
        .unwrap();
    assert_eq!(ready.status(), StatusCode::OK);
    // Nothing of the stalled uploads was stored when they give up.
    drop(stalled);
    tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    let jobs = app.get_json(&sub, "/api/jobs").await;
    assert_eq!(jobs["jobs"].as_array().map(Vec::len), Some(1), "{jobs}");
}

/// Reads from `s` until the peer closes it; true if it did within `within`.
async fn closed_within(s: &mut tokio::net::TcpStream, within: std::time::Duration) -> bool {
    use tokio::io::AsyncReadExt;
    let mut buf = [0u8; 4096];
    let until = tokio::time::Instant::now() + within;
    loop {
        match tokio::time::timeout_at(until, s.read(&mut buf)).await {
            Ok(Ok(0)) | Ok(Err(_)) => return true,
            Ok(Ok(_)) => continue,
            Err(_) => return false,
        }
    }
}

/// A request head must arrive within the header time, an idle kept-alive
/// connection closes after the idle time (and not before), and a connection
/// that never sends anything is closed like a slow head.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn slow_heads_and_idle_connections_are_closed() {
    use std::time::Duration;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let app = spawn_app_with(|s| {
        s.connections.header_read = Duration::from_millis(800);
        s.connections.idle = Duration::from_millis(2500);
    })
    .await;
    let addr = app.base.trim_start_matches("http://").to_string();

    // Half a head, then nothing: closed after the header time.
    let mut half = tokio::net::TcpStream::connect(&addr).await.unwrap();
    half.write_all(b"GET /healthz HTTP/1.1\r\nHost: x\r\n")
        .await
        .unwrap();
    // Nothing at all: closed the same way.
    let mut silent = tokio::net::TcpStream::connect(&addr).await.unwrap();
    assert!(
        closed_within(&mut half, Duration::from_secs(5)).await,
        "a slow head is cut off"
    );
    assert!(
        closed_within(&mut silent, Duration::from_secs(5)).await,
        "a silent socket is cut off"
    );

    // A kept-alive connection: usable after more than the header time…
    let mut kept = tokio::net::TcpStream::connect(&addr).await.unwrap();
    let request = b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n";
    let mut buf = vec![0u8; 4096];
    kept.write_all(request).await.unwrap();
    let n = kept.read(&mut buf).await.unwrap();
    assert!(String::from_utf8_lossy(&buf[..n]).starts_with("HTTP/1.1 200"));
    tokio::time::sleep(Duration::from_millis(1500)).await;
    kept.write_all(request).await.unwrap();
    let n = kept.read(&mut buf).await.unwrap();
    assert!(
        String::from_utf8_lossy(&buf[..n]).starts_with("HTTP/1.1 200"),
        "idle for longer than the header time, shorter than the idle time: still open"
    );
    // … and closed once idle for longer than the idle time.
    assert!(
        closed_within(&mut kept, Duration::from_secs(6)).await,
        "an idle connection closes"
    );
    // The service itself is fine.
    let resp = app.client.get(app.url("/healthz")).send().await.unwrap();
    assert_eq!(resp.status(), StatusCode::OK);
}

/// One address may hold only so many connections; more are refused while
/// those open keep working, and other clients are served.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_address_cannot_hold_every_connection() {
    use std::time::Duration;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let app = spawn_app_with(|s| s.connections.max_per_address = 4).await;
    let addr = app.base.trim_start_matches("http://").to_string();
    let mut held = Vec::new();
    for _ in 0..4 {
        held.push(tokio::net::TcpStream::connect(&addr).await.unwrap());
    }
    tokio::time::sleep(Duration::from_millis(200)).await;
    let mut fifth = tokio::net::TcpStream::connect(&addr).await.unwrap();
    assert!(
        closed_within(&mut fifth, Duration::from_secs(2)).await,
        "the fifth connection from one address is refused"
    );
    // The four still answer.
    for s in &mut held {
        s.write_all(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
            .await
            .unwrap();
        let mut buf = vec![0u8; 1024];
        let n = s.read(&mut buf).await.unwrap();
        assert!(String::from_utf8_lossy(&buf[..n]).starts_with("HTTP/1.1 200"));
    }
    // One closes: a new one is taken.
    held.pop();
    tokio::time::sleep(Duration::from_millis(200)).await;
    let mut again = tokio::net::TcpStream::connect(&addr).await.unwrap();
    again
        .write_all(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
        .await
        .unwrap();
    let mut buf = vec![0u8; 1024];
    let n = again.read(&mut buf).await.unwrap();
    assert!(String::from_utf8_lossy(&buf[..n]).starts_with("HTTP/1.1 200"));
}

/// An upload whose body falls below the rate after the grace time is
/// answered `408` and nothing of it is kept.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_body_that_stops_coming_is_a_408_and_nothing_is_kept() {
    use std::time::Duration;
    use tokio::io::AsyncReadExt;
    let app = spawn_app_with(|s| {
        s.limits.body_grace = Duration::from_millis(500);
        s.limits.body_min_rate = 1000;
    })
    .await;
    let sub = app.submitter().await;
    let addr = app.base.trim_start_matches("http://").to_string();
    let mut s = stalled_upload(&addr, &sub).await;
    let started = std::time::Instant::now();
    let mut answer = Vec::new();
    let mut buf = [0u8; 4096];
    while let Ok(Ok(n)) = tokio::time::timeout(Duration::from_secs(10), s.read(&mut buf)).await {
        if n == 0 {
            break;
        }
        answer.extend_from_slice(&buf[..n]);
        if answer.windows(4).any(|w| w == b"\r\n\r\n") && answer.ends_with(b"}") {
            break;
        }
    }
    let text = String::from_utf8_lossy(&answer);
    assert!(text.starts_with("HTTP/1.1 408"), "{text}");
    assert!(text.contains("request_timeout"), "{text}");
    assert!(started.elapsed() < Duration::from_secs(8));
    let jobs = app.get_json(&sub, "/api/jobs").await;
    assert_eq!(jobs["jobs"].as_array().map(Vec::len), Some(0), "{jobs}");
    let blobs = app
        .sql("SELECT CAST(COUNT(*) AS TEXT) FROM ig_blob_chunks")
        .await;
    assert_eq!(blobs[0][0].as_deref(), Some("0"));
}

/// A SQLite write lock held elsewhere past the busy timeout (a fault
/// PostgreSQL does not have) is a `503` with `Retry-After`, `/readyz` says
/// not ready, and both recover once the lock is gone.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lock_held_elsewhere_is_a_503_and_passes() {
    use sqlx::Connection;
    let app = spawn_app_with(|s| s.sqlite_busy = std::time::Duration::from_millis(500)).await;
    let Some(path) = app.database.strip_prefix("sqlite://") else {
        return;
    };
    let sub = app.submitter().await;
    let mut other = sqlx::SqliteConnection::connect(&format!("sqlite://{path}"))
        .await
        .unwrap();
    sqlx::query("BEGIN IMMEDIATE")
        .execute(&mut other)
        .await
        .unwrap();

    let resp = app
        .upload_raw(&sub, "customers", "", "text/csv", CUSTOMERS)
        .await;
    assert_eq!(resp.status(), StatusCode::SERVICE_UNAVAILABLE);
    assert_eq!(resp.headers()["retry-after"], "5");
    let body: serde_json::Value = resp.json().await.unwrap();
    assert_eq!(body["code"], "not_ready", "{body}");
    let ready = app.client.get(app.url("/readyz")).send().await.unwrap();
    assert_eq!(ready.status(), StatusCode::SERVICE_UNAVAILABLE);

    sqlx::query("ROLLBACK").execute(&mut other).await.unwrap();
    let ready = app.client.get(app.url("/readyz")).send().await.unwrap();
    assert_eq!(ready.status(), StatusCode::OK);
    let resp = app
        .upload_raw(&sub, "customers", "", "text/csv", CUSTOMERS)
        .await;
    assert_eq!(resp.status(), StatusCode::ACCEPTED);
}

/// A SQLite file that cannot be written (made immutable, as a full or
/// read-only disk would) is a `503` on every write and not ready; writable
/// again, the service recovers by itself — connections opened read-only
/// meanwhile are not used again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_read_only_database_is_a_503_and_the_service_recovers() {
    let app = spawn_app().await;
    let Some(path) = app.database.strip_prefix("sqlite://").map(str::to_string) else {
        return;
    };
    let sub = app.submitter().await;
    let first = app.upload(&sub, "customers", "", CUSTOMERS).await;
    let files = [path.clone(), format!("{path}-wal")];
    let chattr = |flag: &str| {
        files.iter().all(|f| {
            std::process::Command::new("chattr")
                .args([flag, f])
                .status()
                .is_ok_and(|s| s.success())
        })
    };
    if !chattr("+i") {
        // Making a file read-only for root needs the immutable flag (root
        // ignores permissions); without it here, there is nothing to test.
        chattr("-i");
        eprintln!("chattr +i is not available; the fault cannot be made here");
        return;
    }
    let resp = app
        .upload_raw(&sub, "customers", "", "text/csv", CUSTOMERS)
        .await;
    let status = resp.status();
    let ready = app
        .client
        .get(app.url("/readyz"))
        .send()
        .await
        .unwrap()
        .status();
    // Reads still work.
    let job = app
        .get(
            &sub,
            &format!("/api/jobs/{}", first["id"].as_str().unwrap()),
        )
        .await;
    let job_status = job.status();
    assert!(chattr("-i"), "the files are writable again");
    assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE);
    assert_eq!(ready, StatusCode::SERVICE_UNAVAILABLE);
    assert_eq!(job_status, StatusCode::OK);

    let ready = app.client.get(app.url("/readyz")).send().await.unwrap();
    assert_eq!(ready.status(), StatusCode::OK, "ready again by itself");
    let again = app.upload(&sub, "customers", "", CUSTOMERS).await;
    assert_eq!(again["state"], "awaiting_approval", "{again}");
}
