//! Rules applied by validation (API.md section 14), as a catalog file
//! ships them for version 1: normalizers rewrite cells before they are
//! typed (and the preview says what the file said), checks and unique
//! rules make row errors or warnings naming the rule.

use reqwest::StatusCode;
use serde_json::{Value, json};

use crate::common::{TestApp, problem, spawn_app_with};

/// Customers: WhatsApp numbers as people write them, a city expected, one
/// name per city.
const CUSTOMER_RULES: &str = r#"
[[module.rules]]
id = "wa"
column = "wa_number"
normalize = "phone_id"

[[module.rules]]
id = "city_given"
check = "has(row.city)"
message = "a city helps the courier"
columns = ["city"]
severity = "warning"

[[module.rules]]
id = "one_name_per_city"
unique = ["customer_name", "city"]
severity = "warning"
"#;

/// Orders: rupiah as written, a positive quantity, a status expected, and
/// an amount whose scaling overflows for a large amount.
const ORDER_RULES: &str = r#"
[[module.rules]]
id = "amount"
column = "amount_idr"
normalize = "idr"

[[module.rules]]
id = "qty_positive"
check = "row.qty > 0"
message = "qty must be positive"
columns = ["qty"]

[[module.rules]]
id = "status_given"
check = "has(row.status)"
message = "a status is expected"
columns = ["status"]
severity = "warning"

[[module.rules]]
id = "amount_in_scale"
check = "row.amount_idr * 10000000000 > 0"
message = "the amount is out of scale"
columns = ["amount_idr"]
"#;

/// The built-in catalog with `rules` (TOML `[[module.rules]]` tables)
/// added to `module`.
fn catalog_with(rules: &[(&str, &str)]) -> String {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/src/catalog/modules.toml");
    let mut catalog = std::fs::read_to_string(path).expect("the built-in catalog");
    for (module, rules) in rules {
        let at = catalog
            .find(&format!("key = \"{module}\""))
            .expect("the module");
        // Its tables end where the next module begins (or the file ends).
        let end = catalog[at..]
            .find("\n[[module]]")
            .map_or(catalog.len(), |n| at + n);
        catalog.insert_str(end, rules);
    }
    catalog
}

async fn app_with(rules: &[(&str, &str)]) -> (TestApp, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("catalog.toml");
    std::fs::write(&path, catalog_with(rules)).unwrap();
    let app = spawn_app_with(|s| s.catalog = Some(path.clone())).await;
    (app, dir)
}

fn rows(page: &Value) -> Vec<i64> {
    (page["rows"].as_array().unwrap().iter())
        .map(|r| r["row"].as_i64().unwrap())
        .collect()
}

/// The row numbered `n` of a preview page.
fn row(page: &Value, n: i64) -> &Value {
    (page["rows"].as_array().unwrap().iter())
        .find(|r| r["row"] == n)
        .unwrap_or_else(|| panic!("row {n}: {page}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn phone_numbers_are_normalized_and_name_the_same_customer() {
    let (app, _dir) = app_with(&[("customers", CUSTOMER_RULES)]).await;
    let (sub, apr) = (app.submitter().await, app.approver().await);
    let csv = "customer_name,wa_number,city\n\
               Budi,0812-3456-7890,Jakarta\n\
               Sari,+62 813 1111 2222,Bandung\n\
               Andi,budi,Jakarta\n\
               Dewi,62812 3456 7890,Surabaya\n\
               Eka,0815-0000-1111,\n\
               Budi,+6281599998888,Jakarta\n";
    let job = app.upload(&sub, "customers", "?on_error=skip", csv).await;
    assert_eq!(job["state"], "awaiting_approval", "{job}");
    let counts = &job["counts"];
    assert_eq!(
        (counts["rows"].as_i64(), counts["errors"].as_i64()),
        (Some(6), Some(2))
    );
    assert_eq!(counts["warnings"], 2, "{counts}");
    // Rows 2, 3, 5 (an error for its key, normalized all the same) and 6.
    assert_eq!(counts["normalized"], 4, "{counts}");

    let id = job["id"].as_str().unwrap();
    let page = app.get_json(&sub, &format!("/api/jobs/{id}/preview")).await;
    let budi = row(&page, 2);
    assert_eq!(budi["values"]["wa_number"], "+6281234567890");
    assert_eq!(
        budi["normalized"],
        json!({"wa_number": {"was": "0812-3456-7890"}})
    );
    assert_eq!(row(&page, 3)["values"]["wa_number"], "+6281311112222");
    assert!(
        row(&page, 7).get("normalized").is_none(),
        "already in shape: {page}"
    );

    let errors = app.get_json(&sub, &format!("/api/jobs/{id}/errors")).await;
    let phone = &errors["errors"][0];
    assert_eq!(phone["code"], "phone", "{errors}");
    assert_eq!(
        (phone["row"].as_i64(), phone["column"].as_str()),
        (Some(4), Some("wa_number"))
    );
    assert_eq!(phone["value"], "budi");
    let message = phone["message"].as_str().unwrap();
    assert!(
        message.starts_with("row 4, column wa_number: "),
        "{message}"
    );
    assert!(phone.get("rule").is_none(), "a normalizer's error: {phone}");
    // Two spellings of one number are one natural key.
    let repeat = &errors["errors"][1];
    assert_eq!(repeat["code"], "duplicate_in_file", "{errors}");
    assert_eq!(repeat["row"], 5);

    // A check of severity warning, and a unique rule's: the rows stay valid.
    let eka = row(&page, 6);
    assert_eq!(eka["action"], "insert");
    assert_eq!(eka["warnings"][0]["code"], "rule");
    assert_eq!(eka["warnings"][0]["rule"], "city_given");
    assert_eq!(eka["warnings"][0]["column"], "city");
    let second_budi = &row(&page, 7)["warnings"][0];
    assert_eq!(second_budi["code"], "duplicate_in_file", "{page}");
    assert_eq!(second_budi["rule"], "one_name_per_city");
    assert_eq!(second_budi["value"], "Budi");

    let only = app
        .get_json(&sub, &format!("/api/jobs/{id}/preview?normalized=only"))
        .await;
    assert_eq!(only["total"], 4);
    assert_eq!(rows(&only), [2, 3, 5, 6]);
    let refused = problem(
        app.get(&sub, &format!("/api/jobs/{id}/preview?normalized=maybe"))
            .await,
        StatusCode::UNPROCESSABLE_ENTITY,
        "invalid_parameter",
    )
    .await;
    assert_eq!(refused["parameter"], "normalized", "{refused}");

    // Committed as normalized, then an upsert spelling the number the
    // other way updates the same customer.
    let done = app.act_ok(&apr, id, "approve").await;
    assert_eq!(done["state"], "committed", "{done}");
    let again = "customer_name,wa_number,city\nBudi Santoso,+62 812-3456-7890,Jakarta\n";
    let upsert = app.upload(&sub, "customers", "?mode=upsert", again).await;
    assert_eq!(upsert["state"], "awaiting_approval", "{upsert}");
    assert_eq!(upsert["counts"]["update"], 1, "{upsert}");
    assert_eq!(upsert["counts"]["insert"], 0);
    let upsert = app
        .act_ok(&apr, upsert["id"].as_str().unwrap(), "approve")
        .await;
    assert_eq!(upsert["state"], "committed");
    let names = app
        .sql("SELECT customer_name FROM uc_scrm_customers WHERE wa_number = '+6281234567890'")
        .await;
    assert_eq!(names, [[Some("Budi Santoso".to_string())]]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn checks_make_errors_and_warnings_that_name_their_rule() {
    let (app, _dir) = app_with(&[("orders", ORDER_RULES)]).await;
    let (sub, apr) = (app.submitter().await, app.approver().await);
    let products = "sku,product_name,price_idr\nP-001,Kaos Polos Hitam,85000\n";
    let products = app.upload(&sub, "products", "", products).await;
    app.act_ok(&apr, products["id"].as_str().unwrap(), "approve")
        .await;
    let csv = "order_no,customer_id,sku,qty,amount_idr,order_date,status\n\
               SO-1,C-1,P-001,2,\"Rp1.250.000,00\",2024-05-01,paid\n\
               SO-2,C-1,P-001,0,10000,2024-05-01,paid\n\
               SO-3,C-2,P-001,1,Rp 75.000,2024-05-02,\n\
               SO-4,C-3,P-001,1,2000000000,2024-05-02,paid\n\
               SO-5,C-3,P-777,1,IDR 75000,2024-05-02,\n\
               SO-6,C-4,P-001,1,\"Rp 1.250.000,50\",2024-05-03,paid\n";
    let job = app.upload(&sub, "orders", "?on_error=skip", csv).await;
    assert_eq!(job["state"], "awaiting_approval", "{job}");
    let counts = &job["counts"];
    assert_eq!(counts["errors"], 3, "{counts}");
    assert_eq!(counts["valid"], 3, "{counts}");
    assert_eq!(counts["warnings"], 2, "{counts}");
    assert_eq!(counts["normalized"], 3, "{counts}");

    let id = job["id"].as_str().unwrap();
    let errors = app.get_json(&sub, &format!("/api/jobs/{id}/errors")).await;
    assert_eq!(errors["total"], 3, "warnings are not errors: {errors}");
    let qty = &errors["errors"][0];
    assert_eq!(
        (
            qty["row"].as_i64(),
            qty["code"].as_str(),
            qty["rule"].as_str()
        ),
        (Some(3), Some("rule"), Some("qty_positive")),
        "{errors}"
    );
    assert_eq!(qty["column"], "qty");
    let message = qty["message"].as_str().unwrap();
    assert!(message.contains("qty must be positive"), "{message}");
    // An expression that overflows is a row error, not a failed job.
    let scale = &errors["errors"][1];
    assert_eq!(
        (scale["row"].as_i64(), scale["rule"].as_str()),
        (Some(5), Some("amount_in_scale"))
    );
    let message = scale["message"].as_str().unwrap();
    assert!(message.contains("overflows"), "{message}");
    // A fraction of a rupiah in a bigint column.
    let fraction = &errors["errors"][2];
    assert_eq!(
        (fraction["row"].as_i64(), fraction["code"].as_str()),
        (Some(7), Some("type"))
    );
    assert_eq!(fraction["value"], "Rp 1.250.000,50");
    let report = app
        .get(&sub, &format!("/api/jobs/{id}/errors?format=csv"))
        .await
        .text()
        .await
        .unwrap();
    let mut lines = report.lines();
    assert_eq!(lines.next(), Some("row,column,value,code,message,rule"));
    assert!(lines.next().unwrap().ends_with(",qty_positive"), "{report}");

    let page = app.get_json(&sub, &format!("/api/jobs/{id}/preview")).await;
    let first = row(&page, 2);
    assert_eq!(first["values"]["amount_idr"], 1250000);
    assert_eq!(
        first["normalized"],
        json!({"amount_idr": {"was": "Rp1.250.000,00"}})
    );
    let warned = row(&page, 4);
    assert_eq!(warned["action"], "insert");
    assert_eq!(warned["warnings"][0]["rule"], "status_given", "{warned}");
    // A reference warning and a rule's, on one row.
    let both = &row(&page, 6)["warnings"];
    assert_eq!(both[0]["code"], "reference", "{both}");
    assert_eq!(both[0]["value"], "P-777");
    assert_eq!(both[0]["message"], "row 6: sku P-777 is not in products");
    assert_eq!(both[1]["rule"], "status_given");
    let warned_only = app
        .get_json(&sub, &format!("/api/jobs/{id}/preview?warnings=only"))
        .await;
    assert_eq!(rows(&warned_only), [4, 6]);

    let done = app.act_ok(&apr, id, "approve").await;
    assert_eq!(done["state"], "committed", "{done}");
    let amount = app
        .sql("SELECT CAST(amount_idr AS TEXT) FROM uc_sales_orders WHERE order_no = 'SO-1'")
        .await;
    assert_eq!(amount, [[Some("1250000".to_string())]]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_catalog_whose_rules_do_not_compile_does_not_start() {
    let bad = r#"
[[module.rules]]
id = "wa"
column = "wa_number"
normalize = "phone_id"

[[module.rules]]
id = "town_known"
check = "has(row.town)"
message = "m"
"#;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("catalog.toml");
    std::fs::write(&path, catalog_with(&[("customers", bad)])).unwrap();
    let settings = importgate::config::Settings {
        database: format!("sqlite://{}", dir.path().join("test.db").display()),
        catalog: Some(path),
        ledger_key_file: Some(dir.path().join("ledger-key")),
        ledger_checkpoint_file: Some(dir.path().join("ledger-checkpoint")),
        ..importgate::config::Settings::default()
    };
    let refused = importgate::app::App::open(settings)
        .await
        .err()
        .expect("refused");
    let message = format!("{refused:#}");
    assert!(
        message.contains("module customers: rule town_known:"),
        "{message}"
    );
    assert!(message.contains("row.town"), "{message}");
}

/// A revision of a module with rules reads the file again: a unique rule
/// compares the fixed row with every other row, which the revision in
/// place (only the rows it touches) could not.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_revision_under_rules_takes_the_full_pass() {
    let (app, _dir) = app_with(&[("customers", CUSTOMER_RULES)]).await;
    let sub = app.submitter().await;
    let csv = "customer_name,wa_number,city\n\
               Budi,0812-3456-7890,Jakarta\n\
               Budi,budi,Bandung\n\
               Sari,0813-1111-2222,Bandung\n";
    let job = app.upload(&sub, "customers", "", csv).await;
    assert_eq!(job["state"], "failed", "{job}");
    let id = job["id"].as_str().unwrap();
    let fixes = json!({"fixes": [
        {"row": 3, "column": "wa_number", "value": "0857 1234 5678"},
        {"row": 3, "column": "city", "value": "Jakarta"},
    ]});
    let resp = app
        .client
        .post(app.url(&format!("/api/jobs/{id}/revisions")))
        .header("X-API-Key", &sub)
        .json(&fixes)
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), StatusCode::CREATED);
    let revision: Value = resp.json().await.unwrap();
    let revision = app.wait_done(&sub, revision["id"].as_str().unwrap()).await;
    assert_eq!(revision["state"], "awaiting_approval", "{revision}");
    let counts = &revision["counts"];
    assert_eq!(
        (counts["errors"].as_i64(), counts["warnings"].as_i64()),
        (Some(0), Some(1))
    );
    assert_eq!(counts["normalized"], 3, "{counts}");
    let rid = revision["id"].as_str().unwrap();
    let page = app
        .get_json(&sub, &format!("/api/jobs/{rid}/preview"))
        .await;
    let fixed = row(&page, 3);
    assert_eq!(fixed["values"]["wa_number"], "+6285712345678");
    assert_eq!(fixed["fixed"]["wa_number"], json!({"was": "budi"}));
    assert_eq!(
        fixed["normalized"],
        json!({"wa_number": {"was": "0857 1234 5678"}})
    );
    assert_eq!(fixed["warnings"][0]["rule"], "one_name_per_city", "{fixed}");
}
