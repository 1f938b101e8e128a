//! Row errors by code, the type rules, and the preview and error report.

use reqwest::StatusCode;
use serde_json::Value;

use crate::common::*;

/// The errors of a job as (row, column, code).
async fn error_codes(app: &TestApp, key: &str, job: &Value) -> Vec<(u64, String, String)> {
    let id = job["id"].as_str().unwrap();
    let errors = app.get_json(key, &format!("/api/jobs/{id}/errors")).await;
    errors["errors"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| {
            (
                e["row"].as_u64().unwrap(),
                e["column"].as_str().unwrap_or("").to_string(),
                e["code"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

fn e(row: u64, column: &str, code: &str) -> (u64, String, String) {
    (row, column.to_string(), code.to_string())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_type_rule_has_its_error_code() {
    let app = spawn_app().await;
    let sub = app.submitter().await;
    let csv = "order_no,customer_id,sku,qty,amount_idr,order_date,status\n\
SO-1,C-1,SKU-1,2,150000,2024-03-31,paid\n\
SO-2,,SKU-1,2,150000,2024-03-31,paid\n\
SO-3,C-1,SKU-1,two,150000,2024-03-31,paid\n\
SO-4,C-1,SKU-1,3000000000,150000,2024-03-31,paid\n\
SO-5,C-1,SKU-1,1,99999999999999999999,2024-03-31,paid\n\
SO-6,C-1,SKU-1,1,150000,31-03-2024,paid\n\
SO-7,C-1,SKU-1,1,150000,31/03/2024,paid\n\
SO-1,C-9,SKU-1,1,150000,2024-03-31,paid\n";
    let job = app.upload(&sub, "orders", "?on_error=skip", csv).await;
    assert_eq!(job["state"], "awaiting_approval");
    assert_eq!(
        error_codes(&app, &sub, &job).await,
        vec![
            e(3, "customer_id", "required"),
            e(4, "qty", "type"),
            e(5, "qty", "out_of_range"),
            e(6, "amount_idr", "out_of_range"),
            e(7, "order_date", "format"),
            e(9, "order_no,sku", "duplicate_in_file"),
        ]
    );
    assert_eq!(
        job["counts"]["valid"], 2,
        "rows 2 and 8 (DD/MM/YYYY) are valid"
    );
    // The repeated key was staged as an insert, then counted as an error.
    assert_eq!(job["counts"]["insert"], 2, "{job}");
    assert_eq!(job["counts"]["errors"], 6, "{job}");
    let id = job["id"].as_str().unwrap();
    let preview = app
        .get_json(&sub, &format!("/api/jobs/{id}/preview?action=insert"))
        .await;
    assert_eq!(preview["rows"][1]["row"], 8);
    assert_eq!(preview["rows"][1]["values"]["order_date"], "2024-03-31");
    let dup = app.get_json(&sub, &format!("/api/jobs/{id}/errors")).await;
    assert!(
        dup["errors"][5]["message"]
            .as_str()
            .unwrap()
            .contains("repeats row 2")
    );
}

/// Uploads `csv` to customers with `query`: the job, and its errors as
/// (row, column, code).
async fn customers_errors(
    app: &TestApp,
    key: &str,
    query: &str,
    csv: &str,
) -> (Value, Vec<(u64, String, String)>) {
    let job = app.upload(key, "customers", query, csv).await;
    let codes = error_codes(app, key, &job).await;
    (job, codes)
}

/// A validation does not look in a table that was empty when it began
/// (`tables::KeyPlan::Empty`): every key is new, so an update finds none.
/// One row in the table is enough for the keys to be looked up again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_empty_table_finds_no_key_and_one_row_is_looked_up() {
    let app = spawn_app().await;
    let (sub, apr) = (app.submitter().await, app.approver().await);
    let andi = "customer_name,wa_number\nAndi,0811000001\n";
    let (update, codes) = customers_errors(&app, &sub, "?mode=update", andi).await;
    assert_eq!(update["state"], "failed", "{update}");
    assert_eq!(codes, vec![e(2, "wa_number", "not_found")]);
    let first = app.upload(&sub, "customers", "", andi).await;
    app.act_ok(&apr, first["id"].as_str().unwrap(), "approve")
        .await;
    let (_, codes) = customers_errors(&app, &sub, "", andi).await;
    assert_eq!(codes, vec![e(2, "wa_number", "exists")]);
    let (update, codes) = customers_errors(&app, &sub, "?mode=update", andi).await;
    assert_eq!(update["counts"]["unchanged"], 1, "{update}");
    assert!(codes.is_empty(), "{codes:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn exists_in_insert_mode_and_not_found_in_update_mode() {
    let app = spawn_app().await;
    let (sub, apr) = (app.submitter().await, app.approver().await);
    let job = app.upload(&sub, "customers", "", CUSTOMERS).await;
    app.act_ok(&apr, job["id"].as_str().unwrap(), "approve")
        .await;
    let csv = "customer_name,wa_number\nAndi,0811000001\nNew,0811000009\n";
    let (again, codes) = customers_errors(&app, &sub, "", csv).await;
    assert_eq!(again["state"], "failed");
    assert_eq!(codes, vec![e(2, "wa_number", "exists")]);
    let (update, codes) = customers_errors(&app, &sub, "?mode=update", csv).await;
    assert_eq!(update["state"], "failed");
    assert_eq!(codes, vec![e(3, "wa_number", "not_found")]);
    let upsert = app.upload(&sub, "customers", "?mode=upsert", csv).await;
    assert_eq!(upsert["state"], "awaiting_approval");
    assert_eq!(upsert["counts"]["update"], 1);
    assert_eq!(upsert["counts"]["insert"], 1);
    assert_eq!(app.count("uc_scrm_customers").await, 3);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn allowed_values_and_lengths_come_from_the_catalog() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("catalog.toml");
    std::fs::write(
        &path,
        r#"
[[module]]
key = "customers"
table = "uc_scrm_customers"
natural_key = ["wa_number"]

[[module.column]]
name = "customer_name"
type = "text"
required = true
max_length = 10

[[module.column]]
name = "wa_number"
type = "text"
required = true

[[module.column]]
name = "grade"
type = "text"
allowed = ["A", "B", "C"]
"#,
    )
    .unwrap();
    let app = spawn_app_with(|s| {
        s.catalog = Some(path.clone());
        s.limits.cell_bytes = 40;
    })
    .await;
    let sub = app.submitter().await;
    let csv = format!(
        "customer_name,wa_number,grade\nAndi,0811,b\nBudi,0812,VIP\nCitra Kirana Dewi,0813,A\nDewi,{},A\n",
        "9".repeat(41)
    );
    let job = app.upload(&sub, "customers", "?on_error=skip", &csv).await;
    assert_eq!(
        error_codes(&app, &sub, &job).await,
        vec![
            e(3, "grade", "not_allowed"),
            e(4, "customer_name", "too_long"),
            e(5, "wa_number", "too_long")
        ]
    );
    let id = job["id"].as_str().unwrap();
    let preview = app
        .get_json(&sub, &format!("/api/jobs/{id}/preview?action=insert"))
        .await;
    assert_eq!(
        preview["rows"][0]["values"]["grade"], "B",
        "stored in the catalog's spelling"
    );
    let modules = app.get_json(&sub, "/api/modules").await;
    assert_eq!(
        modules["modules"].as_array().unwrap().len(),
        1,
        "the file replaces the built-in catalog"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn numerics_booleans_dates_and_timestamps_are_kept_exactly() {
    let app = spawn_app().await;
    let (sub, apr) = (app.submitter().await, app.approver().await);
    let csv =
        "tech_name,phone,rating,active,jobs_done\nAgus,0812,4.75,ya,12\nBayu,0813,0.1,TIDAK,\n";
    let job = app.upload(&sub, "technicians", "", csv).await;
    assert_eq!(job["state"], "awaiting_approval", "{job}");
    let id = job["id"].as_str().unwrap();
    let preview = app.get_json(&sub, &format!("/api/jobs/{id}/preview")).await;
    assert_eq!(
        preview["rows"][0]["values"]["rating"], "4.75",
        "numeric is a decimal string"
    );
    assert_eq!(preview["rows"][0]["values"]["active"], true);
    assert_eq!(preview["rows"][1]["values"]["active"], false);
    app.act_ok(&apr, id, "approve").await;
    let rows = app
        .sql("SELECT CAST(rating AS TEXT) FROM uc_technicians ORDER BY phone")
        .await;
    assert_eq!(
        rows,
        vec![
            vec![Some("4.75".to_string())],
            vec![Some("0.10".to_string())]
        ]
    );

    let csv = "payment_no,order_no,amount_idr,paid_at\nP-1,SO-1,150000,2024-03-31 07:00\nP-2,SO-2,5,2024-03-31T09:00:00+02:00\n";
    let job = app.upload(&sub, "payments", "", csv).await;
    let id = job["id"].as_str().unwrap();
    let preview = app.get_json(&sub, &format!("/api/jobs/{id}/preview")).await;
    assert_eq!(
        preview["rows"][0]["values"]["paid_at"], "2024-03-31T00:00:00Z",
        "local time is Asia/Jakarta"
    );
    assert_eq!(
        preview["rows"][1]["values"]["paid_at"],
        "2024-03-31T07:00:00Z"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn spreadsheet_exports_with_bom_and_semicolons_are_read() {
    let app = spawn_app().await;
    let sub = app.submitter().await;
    let csv = "\u{feff}Customer Name;WA-Number;City\r\nAndi;0811;\"Jakarta; Selatan\"\r\n;;\r\nBudi;0812;Bandung\r\n";
    let job = app.upload(&sub, "customers", "", csv).await;
    assert_eq!(job["state"], "awaiting_approval", "{job}");
    assert_eq!(job["counts"]["rows"], 2);
    let id = job["id"].as_str().unwrap();
    let preview = app.get_json(&sub, &format!("/api/jobs/{id}/preview")).await;
    assert_eq!(preview["rows"][0]["values"]["city"], "Jakarta; Selatan");
    assert_eq!(
        preview["rows"][1]["row"], 4,
        "the blank row 3 still counts as a row"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unknown_columns_are_warnings_or_refused() {
    let app = spawn_app().await;
    let sub = app.submitter().await;
    let csv = "customer_name,wa_number,favourite_colour\nAndi,0811,blue\n";
    let job = app.upload(&sub, "customers", "", csv).await;
    assert_eq!(job["state"], "awaiting_approval");
    assert_eq!(job["warnings"][0]["code"], "unknown_columns");
    assert_eq!(job["warnings"][0]["columns"][0], "favourite_colour");
    let job = app
        .upload(&sub, "customers", "?unknown_columns=reject", csv)
        .await;
    assert_eq!(job["state"], "invalid");
    assert_eq!(job["problem"]["code"], "unknown_columns");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unreadable_files_are_invalid_with_a_code() {
    let app = spawn_app_with(|s| {
        s.limits.columns = 5;
        s.limits.rows = 3;
    })
    .await;
    let sub = app.submitter().await;
    let cases: [(&[u8], &str); 4] = [
        (b"customer_name,wa_number\n", "no_rows"),
        (b"customer_name,wa_number\nAndi,08\xff11\n", "encoding"),
        (b"a,b,c,d,e,f\n1,2,3,4,5,6\n", "too_many_columns"),
        (
            b"customer_name,wa_number\nA,1\nB,2\nC,3\nD,4\n",
            "too_many_rows",
        ),
    ];
    for (body, code) in cases {
        let resp = app
            .upload_raw(&sub, "customers", "", "text/csv", body.to_vec())
            .await;
        assert_eq!(resp.status(), StatusCode::ACCEPTED);
        let job: Value = resp.json().await.unwrap();
        let job = app.wait_done(&sub, job["id"].as_str().unwrap()).await;
        assert_eq!(job["state"], "invalid", "{code}");
        assert_eq!(job["problem"]["code"], code);
    }
    let job = app
        .upload_raw(
            &sub,
            "customers",
            "",
            "text/csv",
            b"customer_name,wa_number\nAndi,08\xff11\n".to_vec(),
        )
        .await;
    let job: Value = job.json().await.unwrap();
    let job = app.wait_done(&sub, job["id"].as_str().unwrap()).await;
    assert!(
        job["problem"]["detail"]
            .as_str()
            .unwrap()
            .contains("row 2, column wa_number"),
        "{job}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_error_report_neutralises_formulas() {
    let app = spawn_app().await;
    let sub = app.submitter().await;
    let csv = "customer_name,wa_number,consumable_cycle_days\nAndi,0811,=HYPERLINK(\"http://x\")\nBudi,0812,@SUM(A1)\n";
    let job = app.upload(&sub, "customers", "", csv).await;
    let id = job["id"].as_str().unwrap();
    let resp = app
        .client
        .get(app.url(&format!("/api/jobs/{id}/errors")))
        .header("X-API-Key", &sub)
        .header("Accept", "text/csv")
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), StatusCode::OK);
    assert!(
        resp.headers()["content-type"]
            .to_str()
            .unwrap()
            .starts_with("text/csv")
    );
    let text = resp.text().await.unwrap();
    let mut reader = csv::Reader::from_reader(text.as_bytes());
    let values: Vec<String> = reader
        .records()
        .map(|r| r.unwrap()[2].to_string())
        .collect();
    assert_eq!(values, vec!["'=HYPERLINK(\"http://x\")", "'@SUM(A1)"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_preview_pages_and_filters() {
    let app = spawn_app().await;
    let sub = app.submitter().await;
    let mut csv = String::from("customer_name,wa_number,consumable_cycle_days\n");
    for i in 0..1200 {
        let days = if i % 100 == 7 {
            "x".to_string()
        } else {
            i.to_string()
        };
        csv.push_str(&format!("Name {i},08{i:08},{days}\n"));
    }
    let job = app.upload(&sub, "customers", "?on_error=skip", &csv).await;
    assert_eq!(job["counts"]["rows"], 1200);
    assert_eq!(job["counts"]["errors"], 12);
    let id = job["id"].as_str().unwrap();
    let page = app
        .get_json(&sub, &format!("/api/jobs/{id}/preview?offset=1000&limit=5"))
        .await;
    assert_eq!(page["total"], 1200);
    let rows: Vec<u64> = page["rows"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["row"].as_u64().unwrap())
        .collect();
    assert_eq!(rows, vec![1002, 1003, 1004, 1005, 1006]);
    let errors = app
        .get_json(
            &sub,
            &format!("/api/jobs/{id}/preview?action=error&offset=10"),
        )
        .await;
    assert_eq!(errors["total"], 12);
    assert_eq!(errors["rows"][0]["row"], 1009);
    assert_eq!(errors["rows"][0]["errors"][0]["code"], "type");
    problem(
        app.get(&sub, &format!("/api/jobs/{id}/preview?action=delete"))
            .await,
        StatusCode::UNPROCESSABLE_ENTITY,
        "invalid_parameter",
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn jobs_are_listed_newest_first_with_filters_and_cursor() {
    let app = spawn_app().await;
    let sub = app.submitter().await;
    let other = app.key("Dewi Anggraini", "submitter", &["*"]).await.0;
    let a = app.upload(&sub, "customers", "", CUSTOMERS).await;
    let b = app.upload(&other, "customers", "", "city\nx\n").await;
    let c = app
        .upload(
            &sub,
            "products",
            "",
            "sku,product_name,price_idr\nS1,Kaos,50000\n",
        )
        .await;
    let all = app.get_json(&sub, "/api/jobs").await;
    let ids: Vec<&str> = all["jobs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|j| j["id"].as_str().unwrap())
        .collect();
    assert_eq!(
        ids,
        vec![
            c["id"].as_str().unwrap(),
            b["id"].as_str().unwrap(),
            a["id"].as_str().unwrap()
        ]
    );
    let mine = app.get_json(&sub, "/api/jobs?submitted_by=me").await;
    assert_eq!(mine["jobs"].as_array().unwrap().len(), 2);
    let invalid = app.get_json(&sub, "/api/jobs?state=invalid").await;
    assert_eq!(invalid["jobs"][0]["id"], b["id"]);
    let products = app.get_json(&sub, "/api/jobs?module=products").await;
    assert_eq!(products["jobs"].as_array().unwrap().len(), 1);
    let page1 = app.get_json(&sub, "/api/jobs?limit=2").await;
    assert_eq!(page1["jobs"].as_array().unwrap().len(), 2);
    let cursor = page1["next_cursor"].as_str().unwrap();
    let page2 = app
        .get_json(&sub, &format!("/api/jobs?limit=2&cursor={cursor}"))
        .await;
    assert_eq!(page2["jobs"][0]["id"], a["id"]);
    assert!(page2["next_cursor"].is_null());
}
