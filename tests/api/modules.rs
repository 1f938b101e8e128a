//! The catalog over HTTP, and every module through the whole pipeline.

use reqwest::StatusCode;

use crate::common::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn modules_are_listed_with_their_schema() {
    let app = spawn_app().await;
    let sub = app.submitter().await;
    let list = app.get_json(&sub, "/api/modules").await;
    let modules = list["modules"].as_array().unwrap();
    assert_eq!(modules.len(), 26);
    assert_eq!(modules[0]["key"], "customers");
    let orders = app.get_json(&sub, "/api/modules/orders").await;
    assert_eq!(orders["table"], "uc_sales_orders");
    assert_eq!(
        orders["natural_key"],
        serde_json::json!(["order_no", "sku"])
    );
    assert_eq!(
        orders["columns"][4],
        serde_json::json!({"name": "amount_idr", "type": "bigint", "required": true})
    );
}

/// For each of the 26 modules: download the template, upload it, approve
/// it with a second key, find the row in the table, roll it back.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_module_goes_through_the_gate_and_back() {
    let app = spawn_app().await;
    let (sub, apr) = (app.submitter().await, app.approver().await);
    let list = app.get_json(&sub, "/api/modules").await;
    for module in list["modules"].as_array().unwrap() {
        let key = module["key"].as_str().unwrap();
        let table = module["table"].as_str().unwrap();
        let resp = app
            .get(&sub, &format!("/api/modules/{key}/template?format=csv"))
            .await;
        assert_eq!(resp.status(), StatusCode::OK);
        let csv = resp.text().await.unwrap();
        let job = app.upload(&sub, key, "", &csv).await;
        assert_eq!(job["state"], "awaiting_approval", "{key}: {job}");
        assert_eq!(job["counts"]["insert"], 1, "{key}");
        let id = job["id"].as_str().unwrap();
        let job = app.act_ok(&apr, id, "approve").await;
        assert_eq!(job["state"], "committed", "{key}: {job}");
        assert_eq!(app.count(table).await, 1, "{key}");
        app.act_ok(&sub, id, "rollback").await;
        let job = app.act_ok(&apr, id, "approve").await;
        assert_eq!(job["state"], "rolled_back", "{key}: {job}");
        assert_eq!(app.count(table).await, 0, "{key}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn templates_come_as_csv_and_json() {
    let app = spawn_app().await;
    let sub = app.submitter().await;
    let csv = app
        .get(&sub, "/api/modules/orders/template")
        .await
        .text()
        .await
        .unwrap();
    assert!(
        csv.starts_with(
            "order_no,customer_id,sku,qty,amount_idr,order_date,status,payment_method\n"
        )
    );
    let json = app
        .get_json(&sub, "/api/modules/orders/template?format=json")
        .await;
    assert_eq!(json[0]["qty"], 1, "integers are JSON numbers");
    problem(
        app.get(&sub, "/api/modules/orders/template?format=pdf")
            .await,
        StatusCode::UNPROCESSABLE_ENTITY,
        "invalid_parameter",
    )
    .await;
}
