//! Every format a person has: the same 26-module data set uploaded as CSV,
//! XLSX (rust_xlsxwriter and LibreOffice), XLS and ODS (LibreOffice), JSON
//! and NDJSON gives the same preview values and the same committed rows; plus
//! what each format brings of its own (sheets, encodings, exact JSON
//! numbers, multipart, detection).

use std::path::PathBuf;

use reqwest::StatusCode;
use serde_json::{Value, json};

use crate::common::*;
use crate::fixtures::{Sheet, Val, libreoffice, sheet};

const XLSX: &str = "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet";
const XLS: &str = "application/vnd.ms-excel";
const ODS: &str = "application/vnd.oasis.opendocument.spreadsheet";

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
        ODS => "ods",
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
        "xls" | "ods" | "xlsx-libreoffice" => {
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
            let (filter, ct) = match format {
                "xls" => ("xls", XLS),
                "ods" => ("ods", ODS),
                _ => ("xlsx", XLSX),
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

/// LibreOffice's own format, as LibreOffice writes it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_data_set_as_ods_equals_the_csv() {
    same_as_csv("ods").await;
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
    // 78 uploads by one key: more than the default 60 a minute.
    let app = spawn_app_with(|s| s.limits.uploads_per_minute = 0).await;
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

/// Uploads a body and waits for validation; returns the job.
async fn upload_as(
    app: &TestApp,
    key: &str,
    module: &str,
    query: &str,
    ct: &str,
    body: Vec<u8>,
) -> Value {
    let resp = app.upload_raw(key, module, query, ct, body).await;
    assert_eq!(resp.status(), StatusCode::ACCEPTED, "{ct}");
    let job: Value = resp.json().await.unwrap();
    app.wait_done(key, job["id"].as_str().unwrap()).await
}

async fn preview_rows(app: &TestApp, key: &str, job: &Value) -> Vec<Value> {
    let id = job["id"].as_str().unwrap();
    let preview = app.get_json(key, &format!("/api/jobs/{id}/preview")).await;
    preview["rows"].as_array().unwrap().clone()
}

/// A workbook whose first sheet is notes and whose second holds the data:
/// a blank row, a formula, an error cell, formatting far to the right.
fn technicians_workbook() -> Vec<u8> {
    use rust_xlsxwriter::{Format, Formula, Workbook};
    let mut book = Workbook::new();
    let notes = book.add_worksheet();
    notes.set_name("Notes").unwrap();
    notes
        .write_string(0, 0, "Exported from the HR system")
        .unwrap();
    let data = book.add_worksheet();
    data.set_name("Data").unwrap();
    for (c, h) in ["tech_name", "phone", "rating", "active", "jobs_done"]
        .iter()
        .enumerate()
    {
        data.write_string(0, c as u16, *h).unwrap();
    }
    data.write_string(1, 0, "Agus").unwrap();
    data.write_string(1, 1, "0812").unwrap();
    data.write_number(1, 2, 4.75).unwrap();
    data.write_boolean(1, 3, true).unwrap();
    data.write_number(1, 4, 12.0).unwrap();
    // Row 3 is blank; row 4 computes jobs_done with a formula.
    data.write_string(3, 0, "Bayu").unwrap();
    data.write_string(3, 1, "0813").unwrap();
    data.write_formula(3, 4, Formula::new("=E2*2").set_result("24"))
        .unwrap();
    // An error value in row 5.
    data.write_string(4, 0, "Cahya").unwrap();
    data.write_string(4, 1, "0814").unwrap();
    data.write_formula(4, 2, Formula::new("=1/0").set_result("#DIV/0!"))
        .unwrap();
    // Formatting without values right of the data and below it.
    let yellow = Format::new().set_background_color("#FFFF00");
    data.write_blank(1, 30, &yellow).unwrap();
    data.write_blank(40, 2, &yellow).unwrap();
    book.save_to_buffer().unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn excel_sheets_formulas_and_blank_rows_read_as_the_sheet_shows_them() {
    sheets_formulas_and_blank_rows(XLSX, technicians_workbook()).await;
}

/// The same workbook saved by LibreOffice as ODS reads the same.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ods_sheets_formulas_and_blank_rows_read_as_the_sheet_shows_them() {
    sheets_formulas_and_blank_rows(ODS, as_ods(technicians_workbook())).await;
}

/// An XLSX saved as ODS by LibreOffice.
fn as_ods(xlsx: Vec<u8>) -> Vec<u8> {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("book.xlsx");
    std::fs::write(&path, xlsx).unwrap();
    let out = libreoffice(&[path], "ods", dir.path());
    std::fs::read(&out[0]).unwrap()
}

async fn sheets_formulas_and_blank_rows(ct: &str, book: Vec<u8>) {
    let app = spawn_app().await;
    let sub = app.submitter().await;
    let job = upload_as(
        &app,
        &sub,
        "technicians",
        "?sheet=Data&on_error=skip",
        ct,
        book.clone(),
    )
    .await;
    assert_eq!(job["state"], "awaiting_approval", "{job}");
    assert_eq!(job["counts"]["rows"], 3);
    assert_eq!(job["counts"]["errors"], 1);
    let rows = preview_rows(&app, &sub, &job).await;
    let numbers: Vec<u64> = rows.iter().map(|r| r["row"].as_u64().unwrap()).collect();
    assert_eq!(
        numbers,
        vec![2, 4, 5],
        "the sheet's row numbers; blank row 3 skipped"
    );
    assert_eq!(
        rows[0]["values"]["jobs_done"], 12,
        "a whole number is an integer"
    );
    assert_eq!(rows[0]["values"]["rating"], "4.75");
    assert_eq!(rows[0]["values"]["active"], true);
    assert_eq!(
        rows[1]["values"]["jobs_done"], 24,
        "a formula gives its cached value"
    );
    assert_eq!(rows[2]["errors"][0]["code"], "type");
    assert!(
        rows[2]["errors"][0]["message"]
            .as_str()
            .unwrap()
            .contains("#DIV/0!"),
        "{}",
        rows[2]
    );
    assert!(job["warnings"].as_array().unwrap().is_empty(), "{job}");

    let job = upload_as(
        &app,
        &sub,
        "technicians",
        "?sheet=Payroll",
        ct,
        book.clone(),
    )
    .await;
    assert_eq!(job["state"], "invalid");
    assert_eq!(job["problem"]["code"], "unknown_sheet");
    assert!(
        job["problem"]["detail"]
            .as_str()
            .unwrap()
            .contains("Notes, Data"),
        "{job}"
    );
    let job = upload_as(&app, &sub, "technicians", "", ct, book).await;
    assert_eq!(
        job["state"], "invalid",
        "the first sheet is read by default"
    );
    assert_eq!(job["problem"]["code"], "missing_columns");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn csv_in_legacy_encodings_and_utf16_is_decoded_or_refused_clearly() {
    let app = spawn_app().await;
    let sub = app.submitter().await;
    let cp1252 = b"customer_name;wa_number;city\nJos\xe9 \x80;0811;S\xe3o Paulo\n".to_vec();
    for enc in ["windows-1252", "iso-8859-1"] {
        let job = upload_as(
            &app,
            &sub,
            "customers",
            &format!("?encoding={enc}"),
            "text/csv",
            cp1252.clone(),
        )
        .await;
        assert_eq!(job["state"], "awaiting_approval", "{enc}: {job}");
        let rows = preview_rows(&app, &sub, &job).await;
        assert_eq!(rows[0]["values"]["customer_name"], "José €");
        assert_eq!(rows[0]["values"]["city"], "São Paulo");
    }
    let job = upload_as(
        &app,
        &sub,
        "customers",
        "",
        "text/csv; charset=windows-1252",
        cp1252.clone(),
    )
    .await;
    assert_eq!(
        job["state"], "awaiting_approval",
        "the type's charset: {job}"
    );
    app.act_ok(&sub, job["id"].as_str().unwrap(), "cancel")
        .await;
    let job = upload_as(&app, &sub, "customers", "", "text/csv", cp1252).await;
    assert_eq!(job["state"], "invalid");
    assert_eq!(job["problem"]["code"], "encoding");
    assert!(
        job["problem"]["detail"]
            .as_str()
            .unwrap()
            .contains("row 2, column customer_name"),
        "{job}"
    );

    let text = "customer_name\twa_number\r\nDewi Ayu\t0815\r\n";
    let utf16le: Vec<u8> = [0xFF, 0xFE]
        .into_iter()
        .chain(text.encode_utf16().flat_map(u16::to_le_bytes))
        .collect();
    let utf16be: Vec<u8> = [0xFE, 0xFF]
        .into_iter()
        .chain(text.encode_utf16().flat_map(u16::to_be_bytes))
        .collect();
    let bare: Vec<u8> = text.encode_utf16().flat_map(u16::to_le_bytes).collect();
    for (query, body) in [("", utf16le), ("", utf16be), ("?encoding=utf-16", bare)] {
        let job = upload_as(&app, &sub, "customers", query, "text/csv", body).await;
        assert_eq!(job["state"], "awaiting_approval", "{job}");
        let rows = preview_rows(&app, &sub, &job).await;
        assert_eq!(rows[0]["values"]["customer_name"], "Dewi Ayu");
        app.act_ok(&sub, job["id"].as_str().unwrap(), "cancel")
            .await;
    }
    let mut broken: Vec<u8> = vec![0xFF, 0xFE];
    broken.extend(
        "customer_name,wa_number\nA,"
            .encode_utf16()
            .flat_map(u16::to_le_bytes),
    );
    broken.extend([0x00, 0xDC, b'1', 0, b'\n', 0]);
    let job = upload_as(&app, &sub, "customers", "", "text/csv", broken).await;
    assert_eq!(job["state"], "invalid");
    assert_eq!(job["problem"]["code"], "encoding", "no mojibake: {job}");
    problem(
        app.upload_raw(&sub, "customers", "?encoding=ebcdic", "text/csv", "a\n1\n")
            .await,
        StatusCode::UNPROCESSABLE_ENTITY,
        "invalid_parameter",
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn json_numbers_keep_their_exact_digits_to_the_table() {
    let app = spawn_app().await;
    let (sub, apr) = (app.submitter().await, app.approver().await);
    let body = r#"{"rows": [
        {"tech_name": "Agus", "phone": "0812", "rating": 123456789012345678.25, "active": "ya", "jobs_done": 12.0},
        {"tech_name": "Bayu", "phone": "0813", "rating": 1.5e3, "active": false, "jobs_done": 2147483648},
        {"tech_name": "Cahya", "phone": "0814", "rating": "0.10", "active": 1, "jobs_done": 1.5}
    ]}"#;
    let job = upload_as(
        &app,
        &sub,
        "technicians",
        "?on_error=skip",
        "application/json",
        body.into(),
    )
    .await;
    assert_eq!(job["state"], "awaiting_approval", "{job}");
    let rows = preview_rows(&app, &sub, &job).await;
    assert_eq!(rows[0]["row"], 1, "JSON rows are the objects' positions");
    // Twenty digits, past an f64's seventeen, at `rating`'s scale.
    assert_eq!(rows[0]["values"]["rating"], "123456789012345678.25");
    assert_eq!(rows[0]["values"]["active"], true);
    assert_eq!(rows[0]["values"]["jobs_done"], 12);
    assert_eq!(rows[1]["errors"][0]["code"], "out_of_range", "{}", rows[1]);
    assert_eq!(rows[2]["values"]["rating"], "0.10");
    assert_eq!(rows[2]["errors"][0]["code"], "type", "1.5 is no integer");
    app.act_ok(&apr, job["id"].as_str().unwrap(), "approve")
        .await;
    let table = app
        .sql("SELECT CAST(rating AS TEXT) FROM uc_technicians")
        .await;
    assert_eq!(table, vec![vec![Some("123456789012345678.25".to_string())]]);

    let body = "{\"payment_no\": \"P-1\", \"order_no\": \"SO-1\", \"amount_idr\": 9007199254740993, \"paid_at\": \"2024-03-31T00:00:00Z\"}\n";
    let job = upload_as(
        &app,
        &sub,
        "payments",
        "",
        "application/x-ndjson",
        body.into(),
    )
    .await;
    let rows = preview_rows(&app, &sub, &job).await;
    assert_eq!(
        rows[0]["values"]["amount_idr"], 9007199254740993i64,
        "past 2^53, exact"
    );
}

/// A JSON file is read in one pass, its header learned from its first
/// 4 MiB. A key first given past them (`warna`, in one object of 80,000)
/// sends the validation back to read the file in two passes: the job still
/// knows every column, and stages every row once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_json_key_first_given_late_in_a_large_file_is_still_a_column() {
    let app = spawn_app().await;
    let sub = app.submitter().await;
    let (objects, late) = (80_000, 75_000);
    let mut body = String::from("[\n");
    for i in 1..=objects {
        let extra = if i == late {
            r#", "warna": "biru""#
        } else {
            ""
        };
        body.push_str(&format!(
            r#"{{"customer_name": "Pelanggan {i}", "wa_number": "0812{i:08}"{extra}}}"#
        ));
        body.push_str(if i < objects { ",\n" } else { "\n]" });
    }
    assert!(
        body.find("warna").unwrap() > 4 << 20,
        "past the first 4 MiB"
    );
    let job = upload_as(&app, &sub, "customers", "", "application/json", body.into()).await;
    assert_eq!(job["state"], "awaiting_approval", "{job}");
    assert_eq!(job["counts"]["rows"], objects, "{job}");
    assert_eq!(job["counts"]["insert"], objects, "{job}");
    assert_eq!(job["warnings"][0]["columns"], json!(["warna"]), "{job}");
    let staged = app
        .sql("SELECT CAST(COUNT(*) AS TEXT) FROM ig_stage_customers")
        .await;
    assert_eq!(staged, vec![vec![Some(objects.to_string())]]);
}

/// A required column whose key the first 4 MiB of objects all leave out
/// is not missing from the file: those rows lack a value, as two passes
/// read them.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_required_json_key_first_given_late_is_a_column_not_a_missing_one() {
    let app = spawn_app().await;
    let sub = app.submitter().await;
    let (objects, from) = (20_000, 16_001);
    let city = "Kabupaten Bandung Barat, ".repeat(10);
    let mut body = String::from("[\n");
    for i in 1..=objects {
        let wa = if i >= from {
            format!(r#", "wa_number": "0812{i:08}""#)
        } else {
            String::new()
        };
        body.push_str(&format!(
            r#"{{"customer_name": "Pelanggan {i}", "city": "{city}"{wa}}}"#
        ));
        body.push_str(if i < objects { ",\n" } else { "\n]" });
    }
    assert!(
        body.find("wa_number").unwrap() > 4 << 20,
        "past the first 4 MiB"
    );
    let job = upload_as(
        &app,
        &sub,
        "customers",
        "?on_error=skip",
        "application/json",
        body.into(),
    )
    .await;
    assert_eq!(job["state"], "awaiting_approval", "{job}");
    assert_eq!(job["counts"]["errors"], from - 1, "{job}");
    assert_eq!(job["counts"]["insert"], objects - from + 1, "{job}");
    let id = job["id"].as_str().unwrap();
    let errors = app.get_json(&sub, &format!("/api/jobs/{id}/errors")).await;
    assert_eq!(errors["errors"][0]["row"], 1, "{errors}");
    assert_eq!(errors["errors"][0]["column"], "wa_number", "{errors}");
}

/// One customer, to send in many ways.
fn one_customer() -> Sheet {
    Sheet {
        module: "customers".into(),
        table: "uc_scrm_customers".into(),
        columns: vec![
            ("customer_name".into(), "text".into(), true),
            ("wa_number".into(), "text".into(), true),
        ],
        key: vec!["wa_number".into()],
        rows: vec![vec![Val::Text("Andi".into()), Val::Text("0811".into())]],
    }
}

/// A part of a multipart form: name, file name, content type, bytes.
type Part<'a> = (&'a str, Option<&'a str>, Option<&'a str>, &'a [u8]);

/// A multipart form by hand.
fn form(parts: &[Part]) -> (String, Vec<u8>) {
    let boundary = "igt-boundary-7MA4YWxkTrZu0gW";
    let mut body = Vec::new();
    for (name, file, ct, bytes) in parts {
        body.extend(
            format!("--{boundary}\r\nContent-Disposition: form-data; name=\"{name}\"").bytes(),
        );
        if let Some(f) = file {
            body.extend(format!("; filename=\"{f}\"").bytes());
        }
        body.extend(b"\r\n");
        if let Some(ct) = ct {
            body.extend(format!("Content-Type: {ct}\r\n").bytes());
        }
        body.extend(b"\r\n");
        body.extend(*bytes);
        body.extend(b"\r\n");
    }
    body.extend(format!("--{boundary}--\r\n").bytes());
    (format!("multipart/form-data; boundary={boundary}"), body)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn multipart_forms_send_the_file_part() {
    let app = spawn_app_with(|s| s.limits.body_bytes = 200_000).await;
    let sub = app.submitter().await;
    let sheet = one_customer();
    let xlsx = sheet.xlsx();
    let csv = sheet.csv();
    let cases: Vec<(Vec<Part>, &str, Option<&str>)> = vec![
        (
            vec![
                ("note", None, None, b"hello"),
                (
                    "file",
                    Some("c.xlsx"),
                    Some("application/octet-stream"),
                    &xlsx,
                ),
                (
                    "after",
                    None,
                    None,
                    b"parts after the file are read and ignored",
                ),
            ],
            "xlsx",
            Some("c.xlsx"),
        ),
        (
            vec![(
                "file",
                Some("C:\\Users\\budi\\customers.csv"),
                Some("text/csv"),
                csv.as_bytes(),
            )],
            "csv",
            Some("customers.csv"),
        ),
        // Windows browsers label .csv files with Excel's type: the bytes decide.
        (
            vec![(
                "file",
                Some("c.csv"),
                Some("application/vnd.ms-excel"),
                csv.as_bytes(),
            )],
            "csv",
            Some("c.csv"),
        ),
        (
            vec![(
                "file",
                Some("c.json"),
                Some("image/png"),
                br#"[{"customer_name": "Andi", "wa_number": "0811"}]"#,
            )],
            "json",
            Some("c.json"),
        ),
        (vec![("file", None, None, &xlsx)], "xlsx", None),
    ];
    for (parts, format, name) in cases {
        let (ct, body) = form(&parts);
        let job = upload_as(&app, &sub, "customers", "", &ct, body).await;
        assert_eq!(job["state"], "awaiting_approval", "{format}: {job}");
        assert_eq!(job["file"]["format"], format);
        assert_eq!(job["file"]["name"], json!(name));
        let rows = preview_rows(&app, &sub, &job).await;
        assert_eq!(rows[0]["values"]["wa_number"], "0811");
        app.act_ok(&sub, job["id"].as_str().unwrap(), "cancel")
            .await;
    }
    let (ct, body) = form(&[("upload", Some("c.csv"), None, csv.as_bytes())]);
    problem(
        app.upload_raw(&sub, "customers", "", &ct, body).await,
        StatusCode::BAD_REQUEST,
        "bad_request",
    )
    .await;
    let (ct, body) = form(&[("file", None, Some("image/png"), csv.as_bytes())]);
    problem(
        app.upload_raw(&sub, "customers", "", &ct, body).await,
        StatusCode::UNSUPPORTED_MEDIA_TYPE,
        "unsupported_media_type",
    )
    .await;
    let (ct, body) = form(&[("file", Some("c.csv"), None, b"")]);
    problem(
        app.upload_raw(&sub, "customers", "", &ct, body).await,
        StatusCode::BAD_REQUEST,
        "empty_body",
    )
    .await;
    // Over the limit, streamed without Content-Length.
    let big = "x".repeat(300_000);
    let (ct, body) = form(&[("file", Some("c.csv"), None, big.as_bytes())]);
    let resp = app
        .upload_raw(&sub, "customers", "", &ct, streamed(body, 10_000))
        .await;
    assert_eq!(
        resp.headers()["connection"],
        "close",
        "the unread body ends the connection"
    );
    problem(resp, StatusCode::PAYLOAD_TOO_LARGE, "too_large").await;
    assert_eq!(
        app.count("ig_blob_chunks").await,
        3,
        "only the accepted uploads' files are kept"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn undeclared_types_are_detected_from_the_bytes() {
    let app = spawn_app().await;
    let sub = app.submitter().await;
    let sheet = one_customer();
    let xls = {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("c.xlsx");
        std::fs::write(&path, sheet.xlsx()).unwrap();
        let out = libreoffice(&[path], "xls", dir.path());
        std::fs::read(&out[0]).unwrap()
    };
    let cases: Vec<(&str, Vec<u8>, &str)> = vec![
        ("application/octet-stream", sheet.xlsx(), "xlsx"),
        ("", xls.clone(), "xls"),
        (XLSX, xls, "xls"),
        (XLS, sheet.xlsx(), "xlsx"),
        (
            "application/octet-stream",
            sheet.json().into_bytes(),
            "json",
        ),
        (
            "",
            br#"{"rows": [{"customer_name": "Andi", "wa_number": "0811"}]}"#.to_vec(),
            "json",
        ),
        ("", sheet.ndjson().into_bytes(), "ndjson"),
        ("application/octet-stream", sheet.csv().into_bytes(), "csv"),
        ("text/plain; charset=utf-8", sheet.csv().into_bytes(), "csv"),
    ];
    for (ct, body, format) in cases {
        let resp = if ct.is_empty() {
            app.client
                .post(app.url("/api/import/customers"))
                .header("X-API-Key", &sub)
                .header("Prefer", "wait=30")
                .body(body)
                .send()
                .await
                .unwrap()
        } else {
            app.upload_raw(&sub, "customers", "", ct, body).await
        };
        assert_eq!(resp.status(), StatusCode::ACCEPTED, "{ct} {format}");
        let job: Value = resp.json().await.unwrap();
        let job = app.wait_done(&sub, job["id"].as_str().unwrap()).await;
        assert_eq!(job["file"]["format"], format, "{ct}");
        assert_eq!(job["state"], "awaiting_approval", "{ct} {format}: {job}");
        let rows = preview_rows(&app, &sub, &job).await;
        assert_eq!(rows[0]["values"]["customer_name"], "Andi", "{format}");
        app.act_ok(&sub, job["id"].as_str().unwrap(), "cancel")
            .await;
    }
    for ct in ["application/pdf", "image/png", "application/xml"] {
        problem(
            app.upload_raw(&sub, "customers", "", ct, sheet.csv()).await,
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            "unsupported_media_type",
        )
        .await;
    }
}

/// An ODS is known by the `mimetype` entry of its zip (wherever the entry
/// is, deflated or not), by its type, and by its name in a form; an ODS
/// sent as XLSX, or an XLSX or CSV sent as ODS, is read as what it is.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ods_is_known_by_its_mimetype_its_type_and_its_name() {
    let app = spawn_app().await;
    let sub = app.submitter().await;
    let sheet = one_customer();
    let ods = as_ods(sheet.xlsx());
    // The same package with `mimetype` last and deflated, as careless
    // writers leave it.
    let shuffled = {
        let mut source = zip::ZipArchive::new(std::io::Cursor::new(&ods)).unwrap();
        let mut out = zip::ZipWriter::new(std::io::Cursor::new(Vec::new()));
        let deflated = zip::write::SimpleFileOptions::default();
        for i in 0..source.len() {
            let part = source.by_index_raw(i).unwrap();
            if part.name().unwrap() != "mimetype" {
                out.raw_copy_file(part).unwrap();
            }
        }
        out.start_file("mimetype", deflated).unwrap();
        std::io::Write::write_all(&mut out, ODS.as_bytes()).unwrap();
        out.finish().unwrap().into_inner()
    };
    let bare = |body: Vec<u8>| {
        app.client
            .post(app.url("/api/import/customers"))
            .header("X-API-Key", &sub)
            .body(body)
            .send()
    };
    let form_with = |name: Option<&str>, ct: Option<&str>| form(&[("file", name, ct, &ods)]);
    let cases: Vec<(&str, String, Vec<u8>, Option<&str>)> = vec![
        (
            "octet-stream",
            "application/octet-stream".into(),
            ods.clone(),
            None,
        ),
        ("no type", String::new(), ods.clone(), None),
        ("no type, mimetype last", String::new(), shuffled, None),
        ("ODS as XLSX", XLSX.into(), ods.clone(), None),
        (
            "a form, by name",
            form_with(Some("c.ods"), Some("application/octet-stream")).0,
            form_with(Some("c.ods"), Some("application/octet-stream")).1,
            Some("c.ods"),
        ),
        (
            "a form, by its bytes",
            form_with(None, None).0,
            form_with(None, None).1,
            None,
        ),
        (
            "a form, by type",
            form_with(Some("export.bin"), Some(ODS)).0,
            form_with(Some("export.bin"), Some(ODS)).1,
            Some("export.bin"),
        ),
    ];
    for (case, ct, body, name) in cases {
        let resp = if ct.is_empty() {
            bare(body).await.unwrap()
        } else {
            app.upload_raw(&sub, "customers", "", &ct, body).await
        };
        assert_eq!(resp.status(), StatusCode::ACCEPTED, "{case}");
        let job: Value = resp.json().await.unwrap();
        let job = app.wait_done(&sub, job["id"].as_str().unwrap()).await;
        assert_eq!(job["file"]["format"], "ods", "{case}");
        assert_eq!(job["state"], "awaiting_approval", "{case}: {job}");
        assert_eq!(job["file"]["name"], json!(name), "{case}");
        let rows = preview_rows(&app, &sub, &job).await;
        assert_eq!(rows[0]["values"]["wa_number"], "0811", "{case}");
        app.act_ok(&sub, job["id"].as_str().unwrap(), "cancel")
            .await;
    }
    for (body, format) in [(sheet.xlsx(), "xlsx"), (sheet.csv().into_bytes(), "csv")] {
        let job = upload_as(&app, &sub, "customers", "", ODS, body).await;
        assert_eq!(job["file"]["format"], format, "{format} sent as ODS");
        assert_eq!(job["state"], "awaiting_approval", "{job}");
        app.act_ok(&sub, job["id"].as_str().unwrap(), "cancel")
            .await;
    }
    let resp = app
        .upload_raw(&sub, "customers", "", "application/pdf", ods)
        .await;
    assert_eq!(resp.status(), StatusCode::UNSUPPORTED_MEDIA_TYPE);
    let problem: Value = resp.json().await.unwrap();
    assert!(
        problem["detail"].as_str().unwrap().contains("ODS"),
        "{problem}"
    );
}

/// A catalog's own date formats replace the default `DD/MM/YYYY`; local
/// times are taken in the configured zone with its daylight-saving rules
/// (a real tz database), from text and from spreadsheet date-time cells.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn catalog_date_formats_and_the_configured_zone_apply_in_every_format() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("catalog.toml");
    std::fs::write(
        &path,
        r#"
[[module]]
key = "events"
table = "uc_events"
natural_key = ["ref"]
date_formats = ["%d.%m.%Y"]

[[module.column]]
name = "ref"
type = "text"
required = true

[[module.column]]
name = "day"
type = "date"

[[module.column]]
name = "at"
type = "timestamptz"
"#,
    )
    .unwrap();
    let app = spawn_app_with(|s| {
        s.catalog = Some(path.clone());
        s.zone = "America/New_York".parse().unwrap();
    })
    .await;
    let sub = app.submitter().await;
    let csv = "ref,day,at\nE1,31.03.2024,2024-01-15 12:00\nE2,2024-07-01,2024-07-01 12:00\nE3,31/03/2024,2024-03-10 02:30\n";
    let job = upload_as(
        &app,
        &sub,
        "events",
        "?on_error=skip",
        "text/csv",
        csv.into(),
    )
    .await;
    let rows = preview_rows(&app, &sub, &job).await;
    assert_eq!(
        rows[0]["values"],
        json!({"ref": "E1", "day": "2024-03-31", "at": "2024-01-15T17:00:00Z"})
    );
    assert_eq!(
        rows[1]["values"]["at"], "2024-07-01T16:00:00Z",
        "EDT in summer"
    );
    let codes: Vec<(&str, &str)> = rows[2]["errors"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| (e["column"].as_str().unwrap(), e["code"].as_str().unwrap()))
        .collect();
    assert_eq!(
        codes,
        vec![("day", "format"), ("at", "format")],
        "DD/MM/YYYY is replaced; 02:30 does not exist that night"
    );

    let mut book = rust_xlsxwriter::Workbook::new();
    let ws = book.add_worksheet();
    let when = rust_xlsxwriter::ExcelDateTime::from_ymd(2024, 7, 1)
        .unwrap()
        .and_hms(12, 0, 0)
        .unwrap();
    let format = rust_xlsxwriter::Format::new().set_num_format("yyyy-mm-dd hh:mm");
    ws.write_string(0, 0, "ref").unwrap();
    ws.write_string(0, 1, "at").unwrap();
    ws.write_string(1, 0, "E9").unwrap();
    ws.write_datetime_with_format(1, 1, when, &format).unwrap();
    let job = upload_as(
        &app,
        &sub,
        "events",
        "",
        XLSX,
        book.save_to_buffer().unwrap(),
    )
    .await;
    let rows = preview_rows(&app, &sub, &job).await;
    assert_eq!(
        rows[0]["values"]["at"], "2024-07-01T16:00:00Z",
        "a date-time cell is local time"
    );
}

/// A stored file is kept compressed chunk by chunk and read back exactly;
/// a chunk kept as it came, as every file stored before compression was,
/// reads the same.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stored_files_are_compressed_and_chunks_kept_as_they_came_still_read() {
    let app = spawn_app().await;
    let sub = app.submitter().await;
    // Past the spool's 4 MiB in memory: spooled to a file, six chunks.
    let mut csv = String::from("customer_name,wa_number,notes\n");
    let mut rows = 0;
    while csv.len() < 5 << 20 {
        csv += &format!(
            "Pelanggan {rows},0812{rows:08},alamat lama di Jalan Merdeka nomor {} Bandung {}\n",
            rows % 300,
            "dekat pasar ".repeat(15)
        );
        rows += 1;
    }
    let job = app.upload(&sub, "customers", "", &csv).await;
    assert_eq!(job["state"], "awaiting_approval", "{job}");
    assert_eq!(job["counts"]["insert"], rows, "{job}");
    let stored = app
        .sql(
            "SELECT CAST(COUNT(*) AS TEXT), CAST(SUM(LENGTH(data)) AS TEXT), \
             CAST(MIN(codec) AS TEXT) FROM ig_blob_chunks",
        )
        .await;
    let [count, size, codec] = [0, 1, 2].map(|i| stored[0][i].clone().unwrap());
    assert_eq!(count, "6");
    assert!(
        size.parse::<usize>().unwrap() < csv.len() / 3,
        "{size} of {}",
        csv.len()
    );
    assert_eq!(codec, "1", "every chunk compressed");

    // A small file, its one chunk then rewritten as it came; the same
    // bytes uploaded again are read from that chunk.
    let small = "customer_name,wa_number\nAni,0821\nBayu,0822\n";
    let first = app.upload(&sub, "customers", "", small).await;
    let raw = if !app.database.starts_with("postgres") {
        format!("X'{}'", hex::encode(small))
    } else {
        format!("'\\x{}'::bytea", hex::encode(small))
    };
    app.sql(&format!(
        "UPDATE ig_blob_chunks SET codec = 0, data = {raw} WHERE upload_id = \
         (SELECT upload_id FROM ig_blobs WHERE sha256 = '{}')",
        first["file"]["sha256"].as_str().unwrap()
    ))
    .await;
    assert_eq!(
        app.count("ig_blob_chunks WHERE codec = 0").await,
        1,
        "{first}"
    );
    let again = app.upload(&sub, "customers", "?mode=upsert", small).await;
    assert_eq!(again["state"], "awaiting_approval", "{again}");
    assert_eq!(again["counts"]["insert"], 2, "{again}");
    assert_eq!(again["file"]["sha256"], first["file"]["sha256"]);
}
