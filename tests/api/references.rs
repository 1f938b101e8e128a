//! References between modules (API.md section 12): an order naming a
//! product nobody has is seen before it is approved, and a rollback that
//! would leave orders naming deleted products says so at the gate.

use reqwest::StatusCode;
use serde_json::Value;

use crate::common::{TestApp, problem, spawn_app, spawn_app_with};

const PRODUCTS: &str = "sku,product_name,price_idr\n\
P-001,Kaos Polos Hitam,85000\n\
P-002,Mug Keramik,45000\n";

/// Four orders: two name committed products, one a product that only
/// waits at the gate, one a product nobody has.
const ORDERS: &str = "order_no,customer_id,sku,qty,amount_idr,order_date\n\
SO-1,C-1,P-001,2,170000,2024-05-01\n\
SO-2,C-1,P-002,1,45000,2024-05-01\n\
SO-3,C-2,P-777,1,10000,2024-05-02\n\
SO-4,C-3,P-991,3,30000,2024-05-02\n";

/// A committed import of `csv` into `module`.
async fn committed(app: &TestApp, sub: &str, apr: &str, module: &str, csv: &str) -> Value {
    let job = app.upload(sub, module, "", csv).await;
    assert_eq!(job["state"], "awaiting_approval", "{job}");
    let job = app
        .act_ok(apr, job["id"].as_str().unwrap(), "approve")
        .await;
    assert_eq!(job["state"], "committed", "{job}");
    job
}

fn rows(page: &Value) -> Vec<i64> {
    page["rows"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["row"].as_i64().unwrap())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_order_for_a_product_nobody_has_is_a_warning_the_approver_sees() {
    let app = spawn_app().await;
    let (sub, apr) = (app.submitter().await, app.approver().await);
    committed(&app, &sub, &apr, "products", PRODUCTS).await;
    // P-777 is in a products job still at the gate: not committed, so not there.
    let waiting = app
        .upload(
            &sub,
            "products",
            "",
            "sku,product_name,price_idr\nP-777,Topi,50000\n",
        )
        .await;
    assert_eq!(waiting["state"], "awaiting_approval");

    let job = app.upload(&sub, "orders", "", ORDERS).await;
    assert_eq!(
        job["state"], "awaiting_approval",
        "a warned row stays valid: {job}"
    );
    assert_eq!(job["counts"]["valid"], 4);
    assert_eq!(job["counts"]["warnings"], 2);
    assert_eq!(job["counts"]["insert"], 4);
    let summary = job["warnings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|w| w["code"] == "references")
        .unwrap_or_else(|| panic!("a references warning: {job}"));
    assert_eq!(summary["module"], "products");
    assert_eq!(summary["rows"], 2);
    assert!(
        summary["message"]
            .as_str()
            .unwrap()
            .starts_with("4 rows name products by sku: 2 found, 2 not in products"),
        "{summary}"
    );

    let id = job["id"].as_str().unwrap();
    let page = app.get_json(&sub, &format!("/api/jobs/{id}/preview")).await;
    assert_eq!(rows(&page), [2, 3, 4, 5]);
    let row4 = &page["rows"][2];
    assert_eq!(row4["action"], "insert");
    assert_eq!(row4["errors"], serde_json::json!([]));
    assert_eq!(row4["warnings"][0]["code"], "reference");
    assert_eq!(row4["warnings"][0]["column"], "sku");
    assert_eq!(row4["warnings"][0]["value"], "P-777");
    assert_eq!(
        row4["warnings"][0]["message"],
        "row 4: sku P-777 is not in products"
    );
    assert_eq!(page["rows"][0]["warnings"], serde_json::json!([]));

    let warned = app
        .get_json(&sub, &format!("/api/jobs/{id}/preview?warnings=only"))
        .await;
    assert_eq!(warned["total"], 2);
    assert_eq!(rows(&warned), [4, 5]);
    let page2 = app
        .get_json(
            &sub,
            &format!("/api/jobs/{id}/preview?warnings=only&offset=1&limit=1"),
        )
        .await;
    assert_eq!(rows(&page2), [5]);
    // Warnings are not errors.
    let errors = app.get_json(&sub, &format!("/api/jobs/{id}/errors")).await;
    assert_eq!(errors["total"], 0);

    // Approved, the warned rows are written like the others.
    let done = app.act_ok(&apr, id, "approve").await;
    assert_eq!(done["state"], "committed");
    assert_eq!(app.count("uc_sales_orders").await, 4);
}

/// A value is looked up once a validation and remembered for the batches
/// after (pipeline::references): across three batches of 500 the rows
/// naming the missing product still warn, each with its own row, and the
/// rows naming the committed one do not.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_value_remembered_across_batches_warns_on_every_row_that_names_it() {
    let app = spawn_app().await;
    let (sub, apr) = (app.submitter().await, app.approver().await);
    committed(&app, &sub, &apr, "products", PRODUCTS).await;
    let mut csv = String::from("order_no,customer_id,sku,qty,amount_idr,order_date\n");
    // Every third row names P-404, which nobody has; P-002 comes first in
    // the last batch only.
    for i in 0..1400 {
        let sku = match i {
            i if i % 3 == 2 => "P-404",
            i if i >= 1000 && i % 3 == 1 => "P-002",
            _ => "P-001",
        };
        csv.push_str(&format!("SO-{i},C-1,{sku},1,1000,2024-05-01\n"));
    }
    let job = app.upload(&sub, "orders", "", &csv).await;
    assert_eq!(job["state"], "awaiting_approval", "{job}");
    let missing = (0..1400).filter(|i| i % 3 == 2).count();
    assert_eq!(job["counts"]["warnings"], missing as i64, "{job}");
    let id = job["id"].as_str().unwrap();
    let last = app
        .get_json(
            &sub,
            &format!(
                "/api/jobs/{id}/preview?warnings=only&offset={}&limit=1",
                missing - 1
            ),
        )
        .await;
    // The last of them: data row 1399 (i = 1397), file row 1399.
    assert_eq!(rows(&last), [1399]);
    assert_eq!(
        last["rows"][0]["warnings"][0]["message"],
        "row 1399: sku P-404 is not in products"
    );
    let late = app
        .get_json(&sub, &format!("/api/jobs/{id}/preview?offset=1003&limit=2"))
        .await;
    // Rows of the third batch naming P-002 (i = 1003) and P-404 (i = 1004).
    assert_eq!(late["rows"][0]["values"]["sku"], "P-002", "{late}");
    assert_eq!(late["rows"][0]["warnings"], serde_json::json!([]));
    assert_eq!(late["rows"][1]["warnings"][0]["value"], "P-404");
}

/// A database that keeps warnings in a table of their own: its
/// `ig_job_warnings` rows (filed under the job that staged the rows, also
/// once a revision holds them) come back in the staged rows at the next
/// start, and the table is gone.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn warnings_kept_in_a_table_of_their_own_move_into_the_staged_rows() {
    if crate::common::mysql_server().is_some() {
        // No MySQL database of the release that kept them apart exists.
        return;
    }
    let app = spawn_app().await;
    let (sub, apr) = (app.submitter().await, app.approver().await);
    committed(&app, &sub, &apr, "products", PRODUCTS).await;
    let job = app.upload(&sub, "orders", "", ORDERS).await;
    let first = job["id"].as_str().unwrap().to_string();
    // A revision takes the stage: its warnings stay filed under `first`.
    let resp = reqwest::Client::new()
        .post(app.url(&format!("/api/jobs/{first}/revisions")))
        .header("X-API-Key", &sub)
        .json(&serde_json::json!({"exclude": [2]}))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), StatusCode::CREATED);
    let revision: Value = resp.json().await.unwrap();
    let id = revision["id"].as_str().unwrap().to_string();
    let done = app.wait_done(&sub, &id).await;
    assert_eq!(done["counts"]["warnings"], 2, "{done}");

    // The warnings in a table of their own.
    app.sql(
        "CREATE TABLE ig_job_warnings (job_id TEXT NOT NULL, seq BIGINT NOT NULL, \
         n BIGINT NOT NULL, row_no BIGINT NOT NULL, col TEXT, value TEXT, code TEXT NOT NULL, \
         message TEXT NOT NULL, PRIMARY KEY (job_id, seq, n))",
    )
    .await;
    app.sql(&format!(
        "UPDATE ig_jobs SET stage_owner = '{first}' WHERE id = '{id}'"
    ))
    .await;
    for (seq, row, sku) in [(2, 4, "P-777"), (3, 5, "P-991")] {
        app.sql(&format!(
            "INSERT INTO ig_job_warnings VALUES ('{first}', {seq}, 0, {row}, 'sku', '{sku}', \
             'reference', 'row {row}: sku {sku} is not in products')"
        ))
        .await;
    }
    app.sql("UPDATE ig_stage_orders SET warns = NULL").await;
    let warned = format!("/api/jobs/{id}/preview?warnings=only");
    assert_eq!(app.get_json(&sub, &warned).await["total"], 0);

    app.app.db.migrate(&app.app.catalog).await.expect("migrate");
    let page = app.get_json(&sub, &warned).await;
    assert_eq!(page["total"], 2, "{page}");
    assert_eq!(rows(&page), [4, 5]);
    assert_eq!(
        page["rows"][1]["warnings"][0]["message"],
        "row 5: sku P-991 is not in products"
    );
    assert_eq!(page["rows"][0]["warnings"][0]["value"], "P-777");
    let left = app
        .sql("SELECT CAST(COUNT(*) AS TEXT) FROM ig_stage_orders WHERE warns IS NOT NULL")
        .await;
    assert_eq!(left[0][0].as_deref(), Some("2"), "the others stay null");
    let gone = match app.database.starts_with("sqlite") {
        true => "SELECT CAST(COUNT(*) AS TEXT) FROM sqlite_master WHERE name = 'ig_job_warnings'",
        false => "SELECT CAST(COUNT(*) AS TEXT) FROM pg_tables WHERE tablename = 'ig_job_warnings'",
    };
    assert_eq!(app.sql(gone).await[0][0].as_deref(), Some("0"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn empty_references_and_files_without_the_column_warn_nothing() {
    let app = spawn_app().await;
    let sub = app.submitter().await;
    // Nothing in products yet: every sku is missing.
    let job = app.upload(&sub, "orders", "", ORDERS).await;
    assert_eq!(job["counts"]["warnings"], 4);
    // Payments name orders by order_no, and orders is empty.
    let payments = "payment_no,order_no,amount_idr,paid_at,method,status\n\
PAY-1,SO-9,1000,2024-05-01 10:00,QRIS,verified\n\
PAY-2,,1000,2024-05-01 10:00,QRIS,verified\n";
    // order_no is required: the empty one is an error, not a warning.
    let job = app
        .upload(&sub, "payments", "?on_error=skip", payments)
        .await;
    assert_eq!(job["state"], "awaiting_approval", "{job}");
    assert_eq!(job["counts"]["errors"], 1);
    assert_eq!(job["counts"]["warnings"], 1, "{job}");
}

/// A catalog whose orders must name existing products.
fn strict_catalog(dir: &std::path::Path) -> std::path::PathBuf {
    let builtin = include_str!("../../src/catalog/modules.toml");
    let strict = builtin.replacen(
        "[[module.reference]]\ncolumn = \"sku\"\nmodule = \"products\"\nkey = \"sku\"\non_missing = \"warn\"",
        "[[module.reference]]\ncolumn = \"sku\"\nmodule = \"products\"\nkey = \"sku\"\non_missing = \"error\"",
        1,
    );
    assert_ne!(strict, builtin, "the orders reference is the first");
    let path = dir.join("catalog.toml");
    std::fs::write(&path, strict).unwrap();
    path
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_on_missing_error_a_missing_product_is_a_row_error() {
    let dir = tempfile::tempdir().unwrap();
    let path = strict_catalog(dir.path());
    let app = spawn_app_with(|s| s.catalog = Some(path.clone())).await;
    let (sub, apr) = (app.submitter().await, app.approver().await);
    committed(&app, &sub, &apr, "products", PRODUCTS).await;
    let job = app.upload(&sub, "orders", "", ORDERS).await;
    assert_eq!(job["state"], "failed", "{job}");
    assert_eq!(job["counts"]["errors"], 2);
    let id = job["id"].as_str().unwrap();
    let errors = app.get_json(&sub, &format!("/api/jobs/{id}/errors")).await;
    let codes: Vec<(i64, &str)> = errors["errors"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| (e["row"].as_i64().unwrap(), e["code"].as_str().unwrap()))
        .collect();
    assert_eq!(codes, [(4, "reference"), (5, "reference")]);
    let skipped = app.upload(&sub, "orders", "?on_error=skip", ORDERS).await;
    assert_eq!(skipped["state"], "awaiting_approval");
    assert_eq!(skipped["counts"]["valid"], 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rolling_back_products_that_orders_name_shows_the_orphans_at_the_gate() {
    let app = spawn_app().await;
    let (sub, apr) = (app.submitter().await, app.approver().await);
    let other = app.key("Eko Prasetyo", "approver", &["*"]).await.0;
    let products = committed(&app, &sub, &apr, "products", PRODUCTS).await;
    // P-001 is also in the table from before this import? No: but a
    // second products job adds P-003, which stays after the rollback.
    committed(
        &app,
        &sub,
        &apr,
        "products",
        "sku,product_name,price_idr\nP-003,Topi,50000\n",
    )
    .await;
    let orders = "order_no,customer_id,sku,qty,amount_idr,order_date\n\
SO-1,C-1,P-001,2,170000,2024-05-01\n\
SO-2,C-1,P-001,1,85000,2024-05-01\n\
SO-3,C-2,P-003,1,50000,2024-05-02\n";
    committed(&app, &sub, &apr, "orders", orders).await;

    let id = products["id"].as_str().unwrap();
    let resp = app
        .act(&apr, id, "rollback", Some("wrong price list"))
        .await;
    assert_eq!(resp.status(), StatusCode::ACCEPTED);
    let job: Value = resp.json().await.unwrap();
    assert_eq!(job["state"], "rollback_pending");
    let orphans = job["warnings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|w| w["code"] == "orphans")
        .unwrap_or_else(|| panic!("an orphans warning: {job}"));
    assert_eq!(orphans["module"], "orders");
    assert_eq!(orphans["rows"], 2, "two orders name P-001; P-003 stays");

    // With on_missing = "warn" the rollback goes through.
    let done = app.act_ok(&other, id, "approve").await;
    assert_eq!(done["state"], "rolled_back", "{done}");
    assert_eq!(app.count("uc_products").await, 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_on_missing_error_a_rollback_that_orphans_orders_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let path = strict_catalog(dir.path());
    let app = spawn_app_with(|s| s.catalog = Some(path.clone())).await;
    let (sub, apr) = (app.submitter().await, app.approver().await);
    let other = app.key("Eko Prasetyo", "approver", &["*"]).await.0;
    let products = committed(&app, &sub, &apr, "products", PRODUCTS).await;
    let orders = "order_no,customer_id,sku,qty,amount_idr,order_date\n\
SO-1,C-1,P-002,2,90000,2024-05-01\n";
    committed(&app, &sub, &apr, "orders", orders).await;
    let id = products["id"].as_str().unwrap();
    let resp = app.act(&apr, id, "rollback", Some("wrong list")).await;
    assert_eq!(resp.status(), StatusCode::ACCEPTED);
    let done = app.act_ok(&other, id, "approve").await;
    assert_eq!(done["state"], "committed", "refused: {done}");
    let p = &done["problem"];
    assert_eq!(p["code"], "rollback_conflict");
    assert_eq!(p["rows"][0]["row"], 3, "the file row that inserted P-002");
    assert_eq!(p["rows"][0]["key"], "P-002");
    assert!(
        p["rows"][0]["reason"]
            .as_str()
            .unwrap()
            .contains("1 rows of orders name this sku"),
        "{p}"
    );
    // The referring rows are named: module, natural key (orders' is
    // order_no and sku), column, value.
    assert_eq!(
        p["referring"],
        serde_json::json!([{"module": "orders", "key": ["SO-1", "P-002"], "column": "sku", "value": "P-002"}]),
        "{p}"
    );
    assert!(p["detail"].as_str().unwrap().contains("orders"), "{p}");
    assert_eq!(app.count("uc_products").await, 2, "nothing undone");
    // The job page lists them too.
    let mut console = crate::console::Console::new(&app);
    console.sign_in(&apr).await;
    let page = console.page(&format!("/jobs/{id}")).await;
    let table = &page[page
        .find("id=\"problem-referring\"")
        .expect("the referring rows")..];
    assert!(
        table.contains("SO-1") && table.contains("sku = P-002"),
        "{table}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_catalog_with_a_wrong_reference_stops_the_service_naming_the_line() {
    let dir = tempfile::tempdir().unwrap();
    let builtin = include_str!("../../src/catalog/modules.toml");
    let wrong = builtin.replacen("module = \"products\"", "module = \"prodcts\"", 1);
    let line = wrong
        .lines()
        .position(|l| l == "module = \"prodcts\"")
        .unwrap()
        + 1;
    let path = dir.path().join("catalog.toml");
    std::fs::write(&path, wrong).unwrap();
    let settings = importgate::config::Settings {
        database: format!("sqlite://{}", dir.path().join("x.db").display()),
        catalog: Some(path),
        ..importgate::config::Settings::default()
    };
    let err = match importgate::app::App::open(settings).await {
        Ok(_) => panic!("a wrong catalog must not start"),
        Err(e) => e.to_string(),
    };
    assert!(
        err.contains(&format!(
            "line {line}: module orders: reference to module prodcts"
        )),
        "{err}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bad_warnings_filter_is_refused_and_modules_show_their_references() {
    let app = spawn_app().await;
    let sub = app.submitter().await;
    let job = app.upload(&sub, "orders", "", ORDERS).await;
    let id = job["id"].as_str().unwrap();
    let resp = app
        .get(&sub, &format!("/api/jobs/{id}/preview?warnings=some"))
        .await;
    let body = problem(resp, StatusCode::UNPROCESSABLE_ENTITY, "invalid_parameter").await;
    assert_eq!(body["parameter"], "warnings");
    let orders = app.get_json(&sub, "/api/modules/orders").await;
    assert_eq!(
        orders["references"],
        serde_json::json!([{"column": "sku", "module": "products", "key": "sku", "on_missing": "warn"}])
    );
}
