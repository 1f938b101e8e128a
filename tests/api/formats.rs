//! Every format a person has: the same 26-module data set uploaded as CSV,
//! XLSX (rust_xlsxwriter and LibreOffice), XLS (LibreOffice), JSON and
//! NDJSON gives the same preview values and the same committed rows; plus
//! what each format brings of its own (sheets, encodings, exact JSON
//! numbers, multipart, detection).

use std::path::PathBuf;

use reqwest::StatusCode;
use serde_json::{Value, json};

use crate::common::*;
use crate::fixtures::{Sheet, Val, libreoffice, sheet};

const XLSX: &str = "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet";
const XLS: &str = "application/vnd.ms-excel";

/// The data set, one sheet per module of the running service.
async fn data_set(app: &TestApp, key: &str) -> Vec<Sheet> {
    let list = app.get_json(key, "/api/modules").await;
    list["modules"]
        .as_array()
        .unwrap()
        .iter()
        .map(sheet)
        .collect()
}

/// What the preview must show for a value (API.md section 5).
fn shown(v: &Val) -> Value {
    match v {
        Val::Null => Value::Null,
        Val::Text(s) => json!(s),
        Val::Int(i) => json!(i),
        Val::Dec(d) => json!(d),
        Val::Bool(b) => json!(b),
        Val::Date(y, m, d) => json!(format!("{y}-{m:02}-{d:02}")),
        Val::Local(y, mo, d, h, mi) => {
            json!(format!("{y}-{mo:02}-{d:02}T{:02}:{mi:02}:00Z", h - 7))
        }
    }
}

/// What one module's upload showed and wrote: the preview rows as
/// (row, action, values) and the table's rows as text.
#[derive(Debug, PartialEq)]
struct Outcome {
    preview: Vec<(u64, String, Value)>,
    table: Vec<Vec<Option<String>>>,
}

/// Uploads one file, checks it waits at the gate, approves it and reads
/// the table; then rolls it back so the next format starts empty.
async fn through_the_gate(
    app: &TestApp,
    (sub, apr): (&str, &str),
    sheet: &Sheet,
    content_type: &str,
    body: Vec<u8>,
) -> Outcome {
    let resp = app
        .upload_raw(sub, &sheet.module, "", content_type, body)
        .await;
    assert_eq!(resp.status(), StatusCode::ACCEPTED, "{}", sheet.module);
    let job: Value = resp.json().await.unwrap();
    let id = job["id"].as_str().unwrap().to_string();
    let job = app.wait_done(sub, &id).await;
    assert_eq!(
        job["state"], "awaiting_approval",
        "{} as {content_type}: {job}",
        sheet.module
    );
    let expected = match content_type {
        XLSX => "xlsx",
        XLS => "xls",
        "application/json" => "json",
        "application/x-ndjson" => "ndjson",
        _ => "csv",
    };
    assert_eq!(job["file"]["format"], expected, "{}", sheet.module);
    let preview = app.get_json(sub, &format!("/api/jobs/{id}/preview")).await;
    let preview = preview["rows"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            (
                r["row"].as_u64().unwrap(),
                r["action"].as_str().unwrap().to_string(),
                r["values"].clone(),
            )
        })
        .collect();
    let job = app.act_ok(apr, &id, "approve").await;
    assert_eq!(job["state"], "committed", "{}: {job}", sheet.module);
    let columns: Vec<String> = sheet
        .names()
        .iter()
        .map(|c| format!("CAST({c} AS TEXT)"))
        .collect();
    let table = app
        .sql(&format!(
            "SELECT {} FROM {} ORDER BY {}",
            columns.join(", "),
            sheet.table,
            sheet.key.join(", ")
        ))
        .await;
    app.act_ok(sub, &id, "rollback").await;
    let job = app.act_ok(apr, &id, "approve").await;
    assert_eq!(job["state"], "rolled_back", "{}", sheet.module);
    Outcome { preview, table }
}

/// Uploads the data set in `format` and checks, module by module, that the
/// preview shows the data set's values with the format's row numbers and
/// that the committed rows equal those committed from the CSV.
async fn same_as_csv(format: &str) {
    let app = spawn_app().await;
    let (sub, apr) = (app.submitter().await, app.approver().await);
    let sheets = data_set(&app, &sub).await;
    let dir = tempfile::tempdir().unwrap();
    let files: Vec<(&str, Vec<u8>)> = match format {
        "csv" => sheets
            .iter()
            .map(|s| ("text/csv", s.csv().into_bytes()))
            .collect(),
        "json" => sheets
            .iter()
            .map(|s| ("application/json", s.json().into_bytes()))
            .collect(),
        "ndjson" => sheets
            .iter()
            .map(|s| ("application/x-ndjson", s.ndjson().into_bytes()))
            .collect(),
        "xlsx" => sheets.iter().map(|s| (XLSX, s.xlsx())).collect(),
        "xls" | "xlsx-libreoffice" => {
            let written: Vec<PathBuf> = sheets
                .iter()
                .map(|s| {
                    let path = dir.path().join(format!("{}.xlsx", s.module));
                    std::fs::write(&path, s.xlsx()).unwrap();
                    path
                })
                .collect();
            let out = dir.path().join("out");
            std::fs::create_dir(&out).unwrap();
            let (filter, ct) = if format == "xls" {
                ("xls", XLS)
            } else {
                ("xlsx", XLSX)
            };
            libreoffice(&written, filter, &out)
                .iter()
                .map(|p| (ct, std::fs::read(p).unwrap()))
                .collect()
        }
        other => panic!("{other}"),
    };
    let first_row = if format.contains("json") { 1 } else { 2 };
    for (sheet, (ct, body)) in sheets.iter().zip(files) {
        let got = through_the_gate(&app, (&sub, &apr), sheet, ct, body).await;
        let expected: Vec<(u64, String, Value)> = sheet
            .rows
            .iter()
            .enumerate()
            .map(|(i, row)| {
                let values: serde_json::Map<String, Value> = sheet
                    .names()
                    .iter()
                    .zip(row)
                    .map(|(n, v)| (n.to_string(), shown(v)))
                    .collect();
                (
                    first_row + i as u64,
                    "insert".to_string(),
                    Value::Object(values),
                )
            })
            .collect();
        assert_eq!(got.preview, expected, "{} as {format}", sheet.module);
        if format != "csv" {
            let csv = through_the_gate(
                &app,
                (&sub, &apr),
                sheet,
                "text/csv",
                sheet.csv().into_bytes(),
            )
            .await;
            assert_eq!(got.table, csv.table, "{} as {format}", sheet.module);
        }
        assert_eq!(got.table.len(), sheet.rows.len());
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_data_set_as_csv_shows_its_values() {
    same_as_csv("csv").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_data_set_as_xlsx_equals_the_csv() {
    same_as_csv("xlsx").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_data_set_as_libreoffice_xlsx_equals_the_csv() {
    same_as_csv("xlsx-libreoffice").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_data_set_as_xls_equals_the_csv() {
    same_as_csv("xls").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_data_set_as_json_equals_the_csv() {
    same_as_csv("json").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_data_set_as_ndjson_equals_the_csv() {
    same_as_csv("ndjson").await;
}

/// Every module's template, downloaded as CSV, XLSX and JSON, uploads as
/// one row to insert, and the three previews agree.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn templates_in_every_format_upload_with_the_same_preview() {
    let app = spawn_app().await;
    let sub = app.submitter().await;
    let list = app.get_json(&sub, "/api/modules").await;
    for module in list["modules"].as_array().unwrap() {
        let key = module["key"].as_str().unwrap();
        let mut previews = Vec::new();
        for (format, ct) in [
            ("csv", "text/csv"),
            ("xlsx", XLSX),
            ("json", "application/json"),
        ] {
            let resp = app
                .get(
                    &sub,
                    &format!("/api/modules/{key}/template?format={format}"),
                )
                .await;
            assert_eq!(resp.status(), StatusCode::OK);
            let served = resp.headers()["content-type"].to_str().unwrap().to_string();
            assert!(served.starts_with(ct), "{key} {format}: {served}");
            let body = resp.bytes().await.unwrap().to_vec();
            let resp = app.upload_raw(&sub, key, "", ct, body).await;
            let job: Value = resp.json().await.unwrap();
            let job = app.wait_done(&sub, job["id"].as_str().unwrap()).await;
            assert_eq!(job["state"], "awaiting_approval", "{key} {format}: {job}");
            assert_eq!(job["counts"]["insert"], 1, "{key} {format}");
            let id = job["id"].as_str().unwrap();
            let preview = app.get_json(&sub, &format!("/api/jobs/{id}/preview")).await;
            previews.push(preview["rows"][0]["values"].clone());
            app.act_ok(&sub, id, "cancel").await;
        }
        assert_eq!(previews[0], previews[1], "{key}: CSV and XLSX templates");
        assert_eq!(previews[0], previews[2], "{key}: CSV and JSON templates");
    }
}

/// The error report as XLSX holds every cell as a string, so formula-like
/// values are shown as written and never run.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_error_report_comes_as_xlsx_with_string_cells() {
    use calamine::{Data, Reader, Xlsx};
    let app = spawn_app().await;
    let sub = app.submitter().await;
    let csv = "customer_name,wa_number,consumable_cycle_days\nAndi,0811,=HYPERLINK(\"http://x\")\nBudi,0812,@SUM(A1)\nCitra,0813,5\n";
    let job = app.upload(&sub, "customers", "", csv).await;
    assert_eq!(job["state"], "failed");
    let id = job["id"].as_str().unwrap();
    for accept in ["?format=xlsx", ""] {
        let resp = app
            .client
            .get(app.url(&format!("/api/jobs/{id}/errors{accept}")))
            .header("X-API-Key", &sub)
            .header("Accept", XLSX)
            .send()
            .await
            .unwrap();
        assert_eq!(resp.status(), StatusCode::OK);
        assert_eq!(resp.headers()["content-type"], XLSX);
        let bytes = resp.bytes().await.unwrap().to_vec();
        let mut book = Xlsx::new(std::io::Cursor::new(bytes)).unwrap();
        let range = book.worksheet_range("errors").unwrap();
        let rows: Vec<Vec<Data>> = range.rows().map(|r| r.to_vec()).collect();
        assert_eq!(rows.len(), 3, "header and two errors");
        assert_eq!(rows[0][0], Data::String("row".into()));
        assert_eq!(rows[1][0], Data::Float(2.0));
        assert_eq!(rows[1][1], Data::String("consumable_cycle_days".into()));
        assert_eq!(rows[1][2], Data::String("=HYPERLINK(\"http://x\")".into()));
        assert_eq!(rows[2][2], Data::String("@SUM(A1)".into()));
        assert_eq!(rows[2][3], Data::String("type".into()));
    }
    problem(
        app.get(&sub, &format!("/api/jobs/{id}/errors?format=pdf"))
            .await,
        StatusCode::UNPROCESSABLE_ENTITY,
        "invalid_parameter",
    )
    .await;
}
