//! Workbooks (API.md section 16): products and the orders that name them
//! in one file, one job, one approval, one transaction, one rollback.

use reqwest::StatusCode;
use serde_json::{Value, json};

use crate::common::{TestApp, problem, spawn_app};

/// Posts a file of type `ct` to `POST /api/import{query}`, waiting for
/// its validation.
async fn post_import(
    app: &TestApp,
    key: &str,
    query: &str,
    ct: &str,
    body: impl Into<reqwest::Body>,
) -> reqwest::Response {
    app.client
        .post(app.url(&format!("/api/import{query}")))
        .header("X-API-Key", key)
        .header("Content-Type", ct)
        .header("Prefer", "wait=30")
        .body(body)
        .send()
        .await
        .expect("request")
}

/// Posts a JSON workbook.
async fn post_workbook(app: &TestApp, key: &str, query: &str, body: &Value) -> reqwest::Response {
    post_import(app, key, query, "application/json", body.to_string()).await
}

/// The job of an accepted upload, once validated.
async fn validated(app: &TestApp, key: &str, resp: reqwest::Response) -> Value {
    let status = resp.status();
    let job: Value = resp.json().await.expect("json");
    assert_eq!(status, StatusCode::ACCEPTED, "{job}");
    app.wait_done(key, job["id"].as_str().unwrap()).await
}

async fn workbook(app: &TestApp, key: &str, query: &str, body: &Value) -> Value {
    validated(app, key, post_workbook(app, key, query, body).await).await
}

/// Orders (listed first in the file) naming products the same workbook
/// brings, one naming none; a member that is no module.
fn shop() -> Value {
    json!({
        "Pesanan": [
            {"order_no": "SO-1", "customer_id": "C-1", "sku": "P-001", "qty": 2, "amount_idr": 170000, "order_date": "2024-05-01"},
            {"order_no": "SO-2", "customer_id": "C-2", "sku": "P-002", "qty": 1, "amount_idr": 45000, "order_date": "2024-05-02"},
            {"order_no": "SO-3", "customer_id": "C-3", "sku": "P-404", "qty": 1, "amount_idr": 10000, "order_date": "2024-05-02"}
        ],
        "notes": ["not a module"],
        "products": [
            {"sku": "P-001", "product_name": "Kaos Polos Hitam", "price_idr": 85000},
            {"sku": "P-002", "product_name": "Mug Keramik", "price_idr": 45000}
        ]
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_workbook_is_one_job_approved_committed_and_rolled_back_as_one() {
    let app = spawn_app().await;
    let sub = app.submitter().await;
    let (apr, _) = app.key("Siti Rahayu", "approver", &["*"]).await;
    let (apr2, _) = app.key("Eko Prasetyo", "approver", &["*"]).await;

    let job = workbook(&app, &sub, "?sheets.Pesanan=orders", &shop()).await;
    assert_eq!(job["state"], "awaiting_approval", "{job}");
    assert_eq!(job["module"], Value::Null);
    assert_eq!(job["table"], Value::Null);
    let parts = job["parts"].as_array().unwrap();
    let modules: Vec<&str> = parts
        .iter()
        .map(|p| p["module"].as_str().unwrap())
        .collect();
    assert_eq!(modules, ["products", "orders"], "reference order: {job}");
    assert_eq!(parts[1]["sheet"], "Pesanan");
    assert_eq!(parts[0]["table"], "uc_products");
    assert_eq!(parts[0]["counts"]["insert"], 2);
    assert_eq!(parts[1]["counts"]["insert"], 3);
    assert_eq!(job["counts"]["rows"], 5, "the parts' sum: {job}");
    assert_eq!(job["counts"]["insert"], 5);
    // Only the order naming a product nobody brings is warned.
    assert_eq!(job["counts"]["warnings"], 1, "{job}");
    let warnings = job["warnings"].as_array().unwrap();
    let ignored = warnings
        .iter()
        .find(|w| w["code"] == "sheet_ignored")
        .unwrap_or_else(|| panic!("a sheet_ignored warning: {job}"));
    assert_eq!(ignored["sheet"], "notes");

    // The keys the orders looked up are kept only while it validates.
    assert_eq!(kept_keys(&app).await, 0);

    // Nothing is written before the gate; one approval writes both.
    assert_eq!(app.count("uc_products").await, 0);
    let id = job["id"].as_str().unwrap();
    let done = app.act_ok(&apr, id, "approve").await;
    assert_eq!(done["state"], "committed", "{done}");
    assert_eq!(app.count("uc_products").await, 2);
    assert_eq!(app.count("uc_sales_orders").await, 3);

    // The parts are no jobs of their own in the list.
    let list = app.get_json(&sub, "/api/jobs").await;
    let ids: Vec<&str> = list["jobs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|j| j["id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, [id], "{list}");

    // One rollback undoes every part; the job's own orders are no orphans.
    app.act_ok(&apr, id, "rollback").await;
    let undone = app.act_ok(&apr2, id, "approve").await;
    assert_eq!(undone["state"], "rolled_back", "{undone}");
    assert_eq!(app.count("uc_products").await, 0);
    assert_eq!(app.count("uc_sales_orders").await, 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stale_part_stops_the_whole_commit() {
    let app = spawn_app().await;
    let (sub, apr) = (app.submitter().await, app.approver().await);
    let job = workbook(&app, &sub, "?sheets.Pesanan=orders", &shop()).await;
    assert_eq!(job["state"], "awaiting_approval", "{job}");
    // An order the workbook inserts appears in the table meanwhile.
    app.upload(
        &sub,
        "orders",
        "",
        "order_no,customer_id,sku,qty,amount_idr,order_date\nSO-2,C-9,P-002,1,1,2024-01-01\n",
    )
    .await;
    let other = app
        .get_json(&sub, "/api/jobs?state=awaiting_approval")
        .await;
    let other_id = other["jobs"]
        .as_array()
        .unwrap()
        .iter()
        .find(|j| j["module"] == "orders")
        .unwrap()["id"]
        .as_str()
        .unwrap()
        .to_string();
    app.act_ok(&apr, &other_id, "approve").await;
    let id = job["id"].as_str().unwrap();
    let failed = app.act_ok(&apr, id, "approve").await;
    assert_eq!(failed["state"], "failed", "{failed}");
    assert_eq!(failed["problem"]["code"], "stale_preview");
    assert_eq!(failed["problem"]["rows"][0]["part"], "orders", "{failed}");
    // All or nothing: the products part wrote nothing either.
    assert_eq!(app.count("uc_products").await, 0);
    assert_eq!(app.count("uc_sales_orders").await, 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_workbook_without_a_module_or_with_one_twice_is_refused() {
    let app = spawn_app().await;
    let sub = app.submitter().await;
    let job = workbook(&app, &sub, "", &json!({"lembar1": [{"a": 1}]})).await;
    assert_eq!(job["state"], "invalid", "{job}");
    assert_eq!(job["problem"]["code"], "no_parts");
    let twice = json!({"products": [], "Produk": []});
    problem(
        post_workbook(&app, &sub, "?sheets.Produk=products", &twice).await,
        StatusCode::UNPROCESSABLE_ENTITY,
        "invalid_parameter",
    )
    .await;
    // Every part's module must be in the key's scope; a refused workbook
    // leaves nothing stored.
    let chunks = app.count("ig_blob_chunks").await;
    let (narrow, _) = app.key("Rina", "submitter", &["products"]).await;
    let p = problem(
        post_workbook(&app, &narrow, "?sheets.Pesanan=orders", &shop()).await,
        StatusCode::FORBIDDEN,
        "forbidden",
    )
    .await;
    assert!(p["detail"].as_str().unwrap().contains("orders"), "{p}");
    assert_eq!(app.count("ig_blob_chunks").await, chunks);
}

/// An XLSX of three sheets: products under a name of its own, orders
/// with a row in error, and a sheet of notes.
fn shop_xlsx() -> Vec<u8> {
    let mut book = rust_xlsxwriter::Workbook::new();
    let rows: [(&str, Vec<Vec<&str>>); 3] = [
        (
            "Produk",
            vec![
                vec!["sku", "product_name", "price_idr"],
                vec!["P-001", "Kaos Polos Hitam", "85000"],
                vec!["P-002", "Mug Keramik", "45000"],
            ],
        ),
        (
            "orders",
            vec![
                vec![
                    "order_no",
                    "customer_id",
                    "sku",
                    "qty",
                    "amount_idr",
                    "order_date",
                ],
                vec!["SO-1", "C-1", "P-001", "2", "170000", "2024-05-01"],
                vec!["SO-2", "C-2", "P-002", "tiga", "45000", "2024-05-02"],
            ],
        ),
        ("Catatan", vec![vec!["dibuat oleh", "Budi"]]),
    ];
    for (name, cells) in rows {
        let sheet = book.add_worksheet();
        sheet.set_name(name).unwrap();
        for (r, row) in cells.iter().enumerate() {
            for (c, cell) in row.iter().enumerate() {
                sheet.write_string(r as u32, c as u16, *cell).unwrap();
            }
        }
    }
    book.save_to_buffer().unwrap()
}

async fn post_file(app: &TestApp, key: &str, query: &str, ct: &str, body: Vec<u8>) -> Value {
    validated(app, key, post_import(app, key, query, ct, body).await).await
}

/// A spreadsheet workbook's parts, their preview and errors by part.
async fn spreadsheet_parts(app: &TestApp, key: &str, ct: &str, body: Vec<u8>) {
    let job = post_file(app, key, "?sheets.Produk=products&on_error=skip", ct, body).await;
    assert_eq!(job["state"], "awaiting_approval", "{job}");
    let sheets: Vec<(&str, &str)> = job["parts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| (p["module"].as_str().unwrap(), p["sheet"].as_str().unwrap()))
        .collect();
    assert_eq!(sheets, [("products", "Produk"), ("orders", "orders")]);
    assert_eq!(job["counts"]["rows"], 4);
    assert_eq!(job["counts"]["errors"], 1);
    assert_eq!(job["warnings"][0]["sheet"], "Catatan", "{job}");
    let id = job["id"].as_str().unwrap();

    let all = app.get_json(key, &format!("/api/jobs/{id}/preview")).await;
    assert_eq!(all["total"], 4, "{all}");
    let tagged: Vec<(&str, i64)> = all["rows"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| (r["part"].as_str().unwrap(), r["row"].as_i64().unwrap()))
        .collect();
    assert_eq!(
        tagged,
        [
            ("products", 2),
            ("products", 3),
            ("orders", 2),
            ("orders", 3)
        ]
    );
    // A page that starts in one part and ends in the next.
    let page = app
        .get_json(key, &format!("/api/jobs/{id}/preview?offset=1&limit=2"))
        .await;
    assert_eq!(page["rows"][0]["part"], "products");
    assert_eq!(page["rows"][1]["part"], "orders");
    let orders = app
        .get_json(key, &format!("/api/jobs/{id}/preview?part=orders"))
        .await;
    assert_eq!(orders["total"], 2);
    assert_eq!(orders["rows"][1]["action"], "error");

    let errors = app.get_json(key, &format!("/api/jobs/{id}/errors")).await;
    assert_eq!(errors["total"], 1);
    assert_eq!(errors["errors"][0]["part"], "orders");
    assert_eq!(errors["errors"][0]["row"], 3);
    assert_eq!(errors["errors"][0]["column"], "qty");
    problem(
        app.get(key, &format!("/api/jobs/{id}/preview?part=payments"))
            .await,
        StatusCode::UNPROCESSABLE_ENTITY,
        "invalid_parameter",
    )
    .await;
    // The errored-rows file is a part's.
    problem(
        app.get(
            key,
            &format!("/api/jobs/{id}/errors?format=csv&layout=rows"),
        )
        .await,
        StatusCode::UNPROCESSABLE_ENTITY,
        "invalid_parameter",
    )
    .await;
    let resp = app
        .get(
            key,
            &format!("/api/jobs/{id}/errors?format=csv&layout=rows&part=orders"),
        )
        .await;
    assert_eq!(resp.status(), StatusCode::OK);
    let text = resp.text().await.unwrap();
    assert!(text.contains("SO-2") && text.contains("tiga"), "{text}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_xlsx_workbook_shows_its_parts_preview_and_errors() {
    let app = spawn_app().await;
    let sub = app.submitter().await;
    let xlsx = "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet";
    spreadsheet_parts(&app, &sub, xlsx, shop_xlsx()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_ods_workbook_shows_its_parts_preview_and_errors() {
    let app = spawn_app().await;
    let sub = app.submitter().await;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("toko.xlsx");
    std::fs::write(&path, shop_xlsx()).unwrap();
    let ods = crate::fixtures::libreoffice(&[path], "ods", dir.path());
    let body = std::fs::read(&ods[0]).unwrap();
    spreadsheet_parts(
        &app,
        &sub,
        "application/vnd.oasis.opendocument.spreadsheet",
        body,
    )
    .await;
}

/// The sheet names of an XLSX or ODS, in order.
fn sheet_names(bytes: &[u8], ods: bool) -> Vec<String> {
    use calamine::Reader;
    let cursor = std::io::Cursor::new(bytes.to_vec());
    if ods {
        calamine::Ods::new(cursor).unwrap().sheet_names()
    } else {
        calamine::Xlsx::new(cursor).unwrap().sheet_names()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_workbook_template_has_a_sheet_a_module_in_reference_order_and_reads_back() {
    let app = spawn_app().await;
    let sub = app.submitter().await;
    for (format, ct, ods) in [
        (
            "xlsx",
            "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet",
            false,
        ),
        (
            "ods",
            "application/vnd.oasis.opendocument.spreadsheet",
            true,
        ),
    ] {
        let path =
            format!("/api/templates/workbook?modules=payments,orders,products&format={format}");
        let resp = app.get(&sub, &path).await;
        assert_eq!(resp.status(), StatusCode::OK, "{path}");
        assert_eq!(resp.headers()["content-type"], ct);
        let body = resp.bytes().await.unwrap().to_vec();
        assert_eq!(
            sheet_names(&body, ods),
            ["products", "orders", "payments"],
            "{format}"
        );
        // The template, sent back as it is, is a workbook of three parts.
        let job = post_file(&app, &sub, "?on_error=skip", ct, body).await;
        let modules: Vec<&str> = job["parts"]
            .as_array()
            .unwrap_or_else(|| panic!("{job}"))
            .iter()
            .map(|p| p["module"].as_str().unwrap())
            .collect();
        assert_eq!(
            modules,
            ["products", "orders", "payments"],
            "{format}: {job}"
        );
        assert_eq!(job["counts"]["rows"], 3, "{format}: {job}");
    }
    problem(
        app.get(&sub, "/api/templates/workbook?modules=").await,
        StatusCode::UNPROCESSABLE_ENTITY,
        "invalid_parameter",
    )
    .await;
    problem(
        app.get(&sub, "/api/templates/workbook?modules=products,gudang")
            .await,
        StatusCode::NOT_FOUND,
        "unknown_module",
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_console_shows_a_workbook_job_as_tabs_with_one_gate() {
    use crate::console::{Console, csrf_of, location};
    let app = spawn_app().await;
    let (sub, apr) = (app.submitter().await, app.approver().await);
    let job = workbook(&app, &sub, "?sheets.Pesanan=orders", &shop()).await;
    let id = job["id"].as_str().unwrap();
    let path = format!("/jobs/{id}");
    let mut a = Console::new(&app);
    a.sign_in(&apr).await;
    // The list names both modules.
    let list = a.page("/jobs").await;
    assert!(list.contains("Products + Sales orders"), "{list}");
    let html = a.page(&path).await;
    assert!(html.contains("id=\"parts\""), "{html}");
    assert!(html.contains(&format!("href=\"/jobs/{id}?part=orders#preview\"")));
    assert!(html.contains("Kaos Polos Hitam"), "the first part's rows");
    assert!(html.contains("uc_products") && html.contains("uc_sales_orders"));
    let orders = a.page(&format!("{path}?part=orders")).await;
    assert!(orders.contains("SO-3") && !orders.contains("Kaos Polos Hitam"));
    // One gate for the whole workbook.
    assert_eq!(
        orders
            .matches(&format!("action=\"/jobs/{id}/approve\""))
            .count(),
        1
    );
    let csrf = csrf_of(&orders);
    let etag = format!("\"{id}-{}\"", 2);
    let resp = a
        .post(
            &format!("{path}/approve"),
            &[("_csrf", &csrf), ("etag", &etag)],
        )
        .await;
    assert_eq!(
        resp.status(),
        StatusCode::SEE_OTHER,
        "{}",
        resp.text().await.unwrap()
    );
    assert_eq!(location(&resp), format!("{path}?done=approve"));
    assert_eq!(app.wait_done(&apr, id).await["state"], "committed");
    assert_eq!(app.count("uc_products").await, 2);
    assert_eq!(app.count("uc_sales_orders").await, 3);
}

/// `importgate import --workbook`: the real binary sends a workbook and
/// prints its parts; an order in error names its part.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_import_command_sends_a_workbook_and_names_its_parts() {
    let app = spawn_app().await;
    let sub = app.submitter().await;
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("toko.xlsx");
    std::fs::write(&file, shop_xlsx()).unwrap();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_importgate"))
        .args(["import", "--workbook"])
        .arg(&file)
        .args(["--sheet", "Produk=products", "--on-error", "skip"])
        .args(["--url", &app.base, "--wait"])
        .env("IMPORTGATE_KEY", &sub)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout).to_string();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{text}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        text.contains("workbook: products + orders  awaiting_approval"),
        "{text}"
    );
    assert!(
        text.contains("part       products (sheet Produk): 2: 2 insert"),
        "{text}"
    );
    assert!(
        text.contains("part       orders (sheet orders): 2: 1 insert, 1 in error"),
        "{text}"
    );
    assert!(text.contains("  orders: row 3, column qty"), "{text}");
}

/// Events carry the whole job with its parts: a webhook for orders hears
/// of a workbook with orders; the feed shows its events to a key whose
/// scope covers every part, and to no narrower one.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn events_and_webhooks_carry_the_workbook_with_its_parts() {
    use crate::webhooks::receiver;
    let app = crate::common::spawn_app_with(|s| {
        s.webhooks.allow_private = true;
        s.webhooks.retry_base = std::time::Duration::from_millis(100);
    })
    .await;
    let (base, log) = receiver().await;
    let resp = app
        .client
        .post(app.url("/api/webhooks"))
        .header("X-API-Key", &app.admin)
        .json(&json!({"url": format!("{base}/orders"), "events": ["job.committed"], "modules": ["orders"]}))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), StatusCode::CREATED);
    let (sub, apr) = (app.submitter().await, app.approver().await);
    let job = workbook(&app, &sub, "?sheets.Pesanan=orders", &shop()).await;
    let id = job["id"].as_str().unwrap();
    app.act_ok(&apr, id, "approve").await;
    let got = log.wait("/orders", 1).await;
    let sent = &got[0].1["data"]["job"];
    assert_eq!(sent["id"], id, "{sent}");
    assert_eq!(sent["module"], Value::Null);
    assert_eq!(sent["parts"][1]["module"], "orders", "{sent}");

    let seen = |key: String| {
        let app = &app;
        async move {
            let page = app.get_json(&key, "/api/events?limit=100").await;
            (page["events"].as_array().unwrap().iter())
                .filter(|e| e["data"]["job"]["id"] == id)
                .count()
        }
    };
    let (both, _) = app.key("Dewi", "approver", &["products", "orders"]).await;
    let (one, _) = app.key("Joko", "approver", &["products"]).await;
    assert!(
        seen(both).await >= 3,
        "created, awaiting approval, committed"
    );
    assert_eq!(seen(one).await, 0);
}

/// Proposes `rules` for `module` as the first admin, and has an approver
/// approve them: the version in force.
async fn rules_in_force(app: &TestApp, apr: &str, module: &str, rules: Value) -> i64 {
    let proposal = app.rules_in_force(apr, module, rules).await;
    proposal["version"].as_i64().unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_part_uses_and_pins_its_modules_rules() {
    let app = spawn_app().await;
    let (sub, apr) = (app.submitter().await, app.approver().await);
    let date = json!([{"id": "date", "column": "order_date", "normalize": "date_id"}]);
    assert_eq!(rules_in_force(&app, &apr, "orders", date).await, 2);
    let mut book = shop();
    book["Pesanan"][0]["order_date"] = json!("17 Agustus 2024");
    let job = workbook(&app, &sub, "?sheets.Pesanan=orders", &book).await;
    assert_eq!(job["state"], "awaiting_approval", "{job}");
    assert_eq!(job["parts"][0]["rules_version"], 1, "{job}");
    assert_eq!(job["parts"][1]["rules_version"], 2, "{job}");
    assert_eq!(job["parts"][1]["counts"]["normalized"], 1, "{job}");
    let id = job["id"].as_str().unwrap();
    let orders = app
        .get_json(&sub, &format!("/api/jobs/{id}/preview?part=orders"))
        .await;
    assert_eq!(orders["rows"][0]["values"]["order_date"], "2024-08-17");
    // The orders' rules change while the workbook waits: refused at commit,
    // nothing of any part written.
    let more = json!([{"id": "date", "column": "order_date", "normalize": "date_id"},
        {"id": "qty", "check": "row.qty > 0", "message": "qty > 0", "columns": ["qty"], "severity": "error"}]);
    rules_in_force(&app, &apr, "orders", more).await;
    let failed = app.act_ok(&apr, id, "approve").await;
    assert_eq!(failed["state"], "failed", "{failed}");
    assert_eq!(failed["problem"]["code"], "stale_rules");
    assert_eq!(app.count("uc_products").await, 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_part_with_a_header_problem_or_past_the_row_limit_makes_the_job_invalid() {
    let app = crate::common::spawn_app_with(|s| s.limits.rows = 4).await;
    let sub = app.submitter().await;
    let mut book = shop();
    for order in book["Pesanan"].as_array_mut().unwrap() {
        order.as_object_mut().unwrap().remove("order_no");
    }
    let job = workbook(&app, &sub, "?sheets.Pesanan=orders", &book).await;
    assert_eq!(job["state"], "invalid", "{job}");
    assert_eq!(job["problem"]["code"], "missing_columns");
    let detail = job["problem"]["detail"].as_str().unwrap();
    assert!(
        detail.starts_with("sheet \"Pesanan\" (orders): "),
        "{detail}"
    );
    assert!(detail.contains("order_no"), "{detail}");
    // 2 products and 3 orders: past a limit of 4 rows in all.
    let job = workbook(&app, &sub, "?sheets.Pesanan=orders", &shop()).await;
    assert_eq!(job["state"], "invalid", "{job}");
    assert_eq!(job["problem"]["code"], "too_many_rows");
    let detail = job["problem"]["detail"].as_str().unwrap();
    assert!(detail.contains("more than 4 rows in all"), "{detail}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_workbook_bomb_or_another_format_is_refused() {
    let app = spawn_app().await;
    let sub = app.submitter().await;
    // A CSV is no workbook.
    let resp = app
        .client
        .post(app.url("/api/import"))
        .header("X-API-Key", &sub)
        .header("Content-Type", "text/csv")
        .body("sku,product_name\nP-1,Kaos\n")
        .send()
        .await
        .unwrap();
    problem(
        resp,
        StatusCode::UNSUPPORTED_MEDIA_TYPE,
        "unsupported_media_type",
    )
    .await;
    // A zip claiming a huge sheet: the XLSX limits hold while the sheets
    // are listed; the job ends invalid, naming why.
    let mut zip = zip::ZipWriter::new(std::io::Cursor::new(Vec::new()));
    let opts = zip::write::SimpleFileOptions::default();
    zip.start_file("[Content_Types].xml", opts).unwrap();
    std::io::Write::write_all(&mut zip, &vec![b' '; 64 << 20]).unwrap();
    let bomb = zip.finish().unwrap().into_inner();
    let xlsx = "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet";
    let job = post_file(&app, &sub, "", xlsx, bomb).await;
    assert_eq!(job["state"], "invalid", "{job}");
    assert_eq!(job["problem"]["code"], "unreadable", "{job}");
}

/// Posts a revision of a job; the answer's status and body.
async fn revise(app: &TestApp, key: &str, id: &str, body: Value) -> (StatusCode, Value) {
    let resp = app
        .client
        .post(app.url(&format!("/api/jobs/{id}/revisions")))
        .header("X-API-Key", key)
        .json(&body)
        .send()
        .await
        .unwrap();
    (resp.status(), resp.json().await.unwrap())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_workbook_is_revised_part_by_part_and_approved_once() {
    let app = spawn_app().await;
    let (sub, apr) = (app.submitter().await, app.approver().await);
    let xlsx = "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet";
    let job = post_file(&app, &sub, "?sheets.Produk=products", xlsx, shop_xlsx()).await;
    assert_eq!(job["state"], "failed", "{job}");
    assert_eq!(job["problem"]["code"], "row_errors");
    let id = job["id"].as_str().unwrap();

    // Each change names its part.
    let (status, p) = revise(
        &app,
        &sub,
        id,
        json!({"fixes": [{"row": 3, "column": "qty", "value": "3"}]}),
    )
    .await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{p}");
    assert_eq!(p["parameter"], "fixes[0].part");
    let (status, p) = revise(
        &app,
        &sub,
        id,
        json!({"exclude": [{"part": "payments", "row": 2}]}),
    )
    .await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{p}");
    assert_eq!(p["parameter"], "part");
    let (status, p) = revise(
        &app,
        &sub,
        id,
        json!({"fixes": [{"part": "orders", "row": 9, "column": "qty", "value": "3"}]}),
    )
    .await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{p}");
    assert_eq!(p["parameter"], "orders.fixes", "{p}");

    // The order's quantity fixed, and the product it does not name left out.
    let body = json!({
        "fixes": [{"part": "orders", "row": 3, "column": "qty", "value": "3"}],
        "exclude": [{"part": "products", "row": 2}],
        "comment": "jumlah dari catatan toko"
    });
    let (status, new) = revise(&app, &sub, id, body).await;
    assert_eq!(status, StatusCode::CREATED, "{new}");
    assert_eq!(new["revision_of"], id);
    let new_id = new["id"].as_str().unwrap();
    let new = app.wait_done(&sub, new_id).await;
    assert_eq!(new["state"], "awaiting_approval", "{new}");
    assert_eq!(new["module"], Value::Null);
    assert_eq!(new["parts"][0]["counts"]["excluded"], 1, "{new}");
    assert_eq!(new["parts"][1]["counts"]["errors"], 0, "{new}");
    // SO-1 named the product left out: it names nothing in the workbook now.
    assert_eq!(new["parts"][1]["counts"]["warnings"], 1, "{new}");
    let orders = app
        .get_json(&sub, &format!("/api/jobs/{new_id}/preview?part=orders"))
        .await;
    assert_eq!(orders["rows"][1]["values"]["qty"], 3, "{orders}");
    assert_eq!(orders["rows"][1]["fixed"]["qty"]["was"], "tiga", "{orders}");
    assert_eq!(app.job(&sub, id).await["revised_as"], new_id);

    // The reviser may not approve it; one approval writes both parts.
    problem(
        app.act(&sub, new_id, "approve", None).await,
        StatusCode::FORBIDDEN,
        "forbidden",
    )
    .await;
    let done = app.act_ok(&apr, new_id, "approve").await;
    assert_eq!(done["state"], "committed", "{done}");
    assert_eq!(app.count("uc_products").await, 1);
    assert_eq!(app.count("uc_sales_orders").await, 2);
}

/// Rows staged for products and orders, by any job.
async fn staged(app: &TestApp) -> i64 {
    app.count("ig_stage_products").await + app.count("ig_stage_orders").await
}

/// A rejected workbook is purged with its parts: the job and its events
/// remain, every part's staged rows and the stored file go, and the
/// ledger still verifies.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_workbook_is_purged_with_its_parts() {
    let app = crate::common::spawn_app_with(|s| {
        s.limits.retention_secs = 1;
        s.expiry_sweep_ms = 200;
    })
    .await;
    let (sub, apr) = (app.submitter().await, app.approver().await);
    let job = workbook(&app, &sub, "?sheets.Pesanan=orders", &shop()).await;
    let id = job["id"].as_str().unwrap();
    let sha = job["file"]["sha256"].as_str().unwrap().to_string();
    assert_eq!(staged(&app).await, 5);
    let resp = app.act(&apr, id, "reject", Some("bulan salah")).await;
    assert_eq!(resp.status(), StatusCode::ACCEPTED);
    let mut purged = Value::Null;
    for _ in 0..80 {
        purged = app.job(&sub, id).await;
        if purged["purged_at"].is_string() && staged(&app).await == 0 {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(250)).await;
    }
    assert!(purged["purged_at"].is_string(), "{purged}");
    assert_eq!(staged(&app).await, 0, "every part's staged rows");
    assert_eq!(
        app.count(&format!("ig_blobs WHERE sha256 = '{sha}'")).await,
        0
    );
    problem(
        app.get(&sub, &format!("/api/jobs/{id}/preview?part=orders"))
            .await,
        StatusCode::GONE,
        "purged",
    )
    .await;
    match importgate::service::audit::verify(&app.app.db, &app.app.seal.key, None)
        .await
        .unwrap()
    {
        importgate::ledger::chain::Verdict::Holds { .. } => {}
        broken => panic!("{broken:?}"),
    }
}

/// A catalog file of 27 modules: a workbook of 27 parts is one too many.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn more_than_26_parts_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let catalog = dir.path().join("catalog.toml");
    let modules: String = (1..=27)
        .map(|i| {
            format!(
                "[[module]]\nkey = \"m{i:02}\"\ntable = \"t{i:02}\"\nnatural_key = [\"no\"]\n\
                 [[module.column]]\nname = \"no\"\ntype = \"text\"\nrequired = true\n\n"
            )
        })
        .collect();
    std::fs::write(&catalog, modules).unwrap();
    let app = crate::common::spawn_app_with(|s| s.catalog = Some(catalog)).await;
    let sub = app.submitter().await;
    let book: serde_json::Map<String, Value> = (1..=27)
        .map(|i| (format!("m{i:02}"), json!([{"no": "1"}])))
        .collect();
    let p = problem(
        post_workbook(&app, &sub, "", &Value::Object(book)).await,
        StatusCode::UNPROCESSABLE_ENTITY,
        "invalid_parameter",
    )
    .await;
    assert!(p["detail"].as_str().unwrap().contains("at most 26"), "{p}");
}

/// A part whose sheet's headers do not fit is mapped in a revision that
/// names the part.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_parts_headers_are_mapped_in_a_revision_naming_the_part() {
    let app = spawn_app().await;
    let (sub, apr) = (app.submitter().await, app.approver().await);
    let mut book = shop();
    for order in book["Pesanan"].as_array_mut().unwrap() {
        let o = order.as_object_mut().unwrap();
        let no = o.remove("order_no").unwrap();
        o.insert("No. Pesanan".into(), no);
    }
    let job = workbook(&app, &sub, "?sheets.Pesanan=orders", &book).await;
    assert_eq!(job["state"], "invalid", "{job}");
    assert_eq!(job["problem"]["code"], "missing_columns");
    let id = job["id"].as_str().unwrap();
    let (status, new) = revise(
        &app,
        &sub,
        id,
        json!({"mapping": {"orders": {"No. Pesanan": "order_no"}}, "comment": "kolom nomor"}),
    )
    .await;
    assert_eq!(status, StatusCode::CREATED, "{new}");
    let new = app.wait_done(&sub, new["id"].as_str().unwrap()).await;
    assert_eq!(new["state"], "awaiting_approval", "{new}");
    assert_eq!(new["parts"][1]["counts"]["insert"], 3, "{new}");
    let done = app
        .act_ok(&apr, new["id"].as_str().unwrap(), "approve")
        .await;
    assert_eq!(done["state"], "committed");
    assert_eq!(app.count("uc_sales_orders").await, 3);
}

/// The key values kept of earlier parts for the lookups of later ones:
/// SQLite keeps them while a workbook is validated, PostgreSQL none.
async fn kept_keys(app: &TestApp) -> i64 {
    match app.database.starts_with("sqlite") {
        true => app.count("ig_part_keys").await,
        false => 0,
    }
}

/// A catalog whose orders name products by an integer column too, so
/// that a later part's references look up another type than text in an
/// earlier part.
fn typed_references_catalog(dir: &std::path::Path) -> std::path::PathBuf {
    let builtin = include_str!("../../src/catalog/modules.toml");
    let sku = "[[module.reference]]\ncolumn = \"sku\"\nmodule = \"products\"\nkey = \"sku\"\non_missing = \"warn\"";
    let typed = builtin.replacen(
        sku,
        &format!(
            "{sku}\n\n[[module.reference]]\ncolumn = \"qty\"\nmodule = \"products\"\nkey = \"stock_qty\"\non_missing = \"warn\""
        ),
        1,
    );
    assert_ne!(typed, builtin, "the orders reference is the first");
    let path = dir.join("catalog.toml");
    std::fs::write(&path, typed).unwrap();
    path
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_integer_key_of_an_earlier_part_satisfies_a_later_parts_reference() {
    let dir = tempfile::tempdir().unwrap();
    let path = typed_references_catalog(dir.path());
    let app = crate::common::spawn_app_with(|s| s.catalog = Some(path.clone())).await;
    let sub = app.submitter().await;
    let book = json!({
        "products": [
            {"sku": "P-001", "product_name": "Kaos", "price_idr": 85000, "stock_qty": 2},
            {"sku": "P-002", "product_name": "Mug", "price_idr": 45000, "stock_qty": 10}
        ],
        "orders": [
            {"order_no": "SO-1", "customer_id": "C-1", "sku": "P-001", "qty": 2, "amount_idr": 170000, "order_date": "2024-05-01"},
            {"order_no": "SO-2", "customer_id": "C-2", "sku": "P-002", "qty": 10, "amount_idr": 450000, "order_date": "2024-05-02"},
            {"order_no": "SO-3", "customer_id": "C-3", "sku": "P-002", "qty": 3, "amount_idr": 135000, "order_date": "2024-05-02"}
        ]
    });
    let job = workbook(&app, &sub, "", &book).await;
    assert_eq!(job["state"], "awaiting_approval", "{job}");
    // Only qty 3 names no product's stock_qty.
    assert_eq!(job["parts"][1]["counts"]["warnings"], 1, "{job}");
    let id = job["id"].as_str().unwrap();
    let page = app
        .get_json(&sub, &format!("/api/jobs/{id}/preview?part=orders"))
        .await;
    let warned: Vec<i64> = (page["rows"].as_array().unwrap().iter())
        .filter(|r| !r["warnings"].as_array().is_none_or(|w| w.is_empty()))
        .map(|r| r["row"].as_i64().unwrap())
        .collect();
    assert_eq!(warned, [3], "{page}");
    assert_eq!(kept_keys(&app).await, 0);
}
