//! A module's data page in the console: the modules the key covers, the
//! row count and last imports, the export form's download (empty fields
//! no filter), the scope, and both languages.

use reqwest::StatusCode;

use crate::common::*;
use crate::console::Console;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_data_page_counts_rows_lists_imports_and_exports_what_the_form_asks() {
    let app = spawn_app().await;
    let (sub, apr) = (app.submitter().await, app.approver().await);
    let job = app.upload(&sub, "customers", "", CUSTOMERS).await;
    let id = job["id"].as_str().unwrap().to_string();
    assert_eq!(app.act_ok(&apr, &id, "approve").await["state"], "committed");

    let mut c = Console::new(&app);
    c.sign_in(&sub).await;
    let index = c.page("/modules").await;
    assert!(index.contains("href=\"/modules/customers\""), "{index}");
    assert!(index.contains("href=\"/modules\""), "the Data tab: {index}");
    let html = c.page("/modules/customers").await;
    assert!(html.contains("data-rows=\"3\""), "{html}");
    assert!(html.contains("The table holds 3 rows."), "{html}");
    assert!(html.contains(&format!("data-job-id=\"{id}\"")), "{html}");
    assert!(html.contains("name=\"where.city\""), "{html}");
    assert!(html.contains("mode upsert"), "the loop's help: {html}");

    // The form as a browser sends it: every field, most of them empty.
    let resp = c
        .get("/modules/customers/export?format=csv&where.customer_name=&where.city=Bandung&limit=")
        .await;
    assert_eq!(resp.status(), StatusCode::OK);
    let disposition = resp.headers()["content-disposition"]
        .to_str()
        .unwrap()
        .to_string();
    assert!(
        disposition.contains("customers-export.csv"),
        "{disposition}"
    );
    let csv = resp.text().await.unwrap();
    let lines: Vec<&str> = csv.lines().collect();
    assert_eq!(lines.len(), 2, "{csv}");
    assert!(lines[1].starts_with("Budi Hartono,"), "{csv}");
    // A filter the module cannot take is a page naming it, not a file.
    let resp = c
        .get("/modules/customers/export?where.city=X&where.planet=Mars")
        .await;
    assert_eq!(resp.status(), StatusCode::UNPROCESSABLE_ENTITY);
    assert!(resp.text().await.unwrap().contains("planet"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_module_outside_the_scope_has_no_data_page_and_no_export() {
    let app = spawn_app().await;
    let (orders_only, _) = app.key("Rina", "submitter", &["orders"]).await;
    let mut c = Console::new(&app);
    c.sign_in(&orders_only).await;
    let index = c.page("/modules").await;
    assert!(index.contains("href=\"/modules/orders\""), "{index}");
    assert!(!index.contains("href=\"/modules/customers\""), "{index}");
    for path in ["/modules/customers", "/modules/customers/export"] {
        let resp = c.get(path).await;
        assert_eq!(resp.status(), StatusCode::FORBIDDEN, "{path}");
    }
    assert_eq!(
        c.get("/modules/planets").await.status(),
        StatusCode::NOT_FOUND
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_data_page_speaks_indonesian() {
    let app = spawn_app().await;
    let sub = app.submitter().await;
    let mut c = Console::new(&app);
    c.speak("id");
    c.sign_in(&sub).await;
    let html = c.page("/modules/customers").await;
    assert!(html.contains("Tabel berisi 0 baris."), "{html}");
    assert!(html.contains("Belum ada impor untuk modul ini."), "{html}");
    assert!(html.contains("Impor terakhir"), "{html}");
}
