//! The errored-rows file (API.md section 11): `GET
//! /api/jobs/{id}/errors?layout=rows` gives one line a failing row, as the
//! job read it; corrected in a spreadsheet, the same file is the body of a
//! revision, and only the cells a person changed are fixes.

use std::io::{Cursor, Read};

use reqwest::StatusCode;
use serde_json::Value;

use crate::common::*;

const XLSX: &str = "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet";

/// Row 3: a days cell that is no number, beside a city that looks like a
/// formula; row 4: no name; row 5: the key of row 2 again.
const FAILING: &str = "customer_name,wa_number,city,consumable_cycle_days\n\
Budi Santoso,081234567801,Bandung,30\n\
Siti Rahayu,081234567802,=1+2,tiga puluh\n\
,081234567803,Medan,14\n\
Budi Kedua,081234567801,Bogor,7\n\
Dewi Anggraini,081234567804,Depok,5\n";

/// A customers job failed with three wrong rows.
async fn failed_job(app: &TestApp, key: &str) -> String {
    let job = app.upload(key, "customers", "", FAILING).await;
    assert_eq!(job["state"], "failed", "{job}");
    assert_eq!(job["counts"]["errors"], 3, "{job}");
    job["id"].as_str().unwrap().to_string()
}

/// The errored-rows file in a format; the answer's bytes.
async fn download(app: &TestApp, key: &str, id: &str, format: &str) -> Vec<u8> {
    let path = format!("/api/jobs/{id}/errors?layout=rows&format={format}");
    let resp = app.get(key, &path).await;
    assert_eq!(resp.status(), StatusCode::OK, "GET {path}");
    let disposition = resp.headers()["content-disposition"].to_str().unwrap();
    assert_eq!(
        disposition,
        format!("attachment; filename=\"errored-rows.{format}\"")
    );
    resp.bytes().await.unwrap().to_vec()
}

/// `POST /api/jobs/{id}/revisions` with a file body.
async fn send_back(
    app: &TestApp,
    key: &str,
    id: &str,
    content_type: &str,
    body: Vec<u8>,
) -> reqwest::Response {
    app.client
        .post(app.url(&format!("/api/jobs/{id}/revisions")))
        .header("X-API-Key", key)
        .header("Content-Type", content_type)
        .body(body)
        .send()
        .await
        .unwrap()
}

/// A revision from a file that must be accepted; waits for its validation.
async fn revised_by_file(
    app: &TestApp,
    key: &str,
    id: &str,
    content_type: &str,
    body: Vec<u8>,
) -> Value {
    let resp = send_back(app, key, id, content_type, body).await;
    let status = resp.status();
    let job: Value = resp.json().await.unwrap();
    assert_eq!(status, StatusCode::CREATED, "{job}");
    assert_eq!(job["revision_of"], id);
    app.wait_done(key, job["id"].as_str().unwrap()).await
}

/// What a corrected file must have fixed, and nothing more: the preview
/// marks the three edited cells with what the file said, and the city
/// that round-tripped neutralised is neither a fix nor changed.
async fn check_the_three_fixes(app: &TestApp, key: &str, new: &Value) {
    assert_eq!(new["state"], "awaiting_approval", "{new}");
    assert_eq!(new["revision"]["fixes"], 3, "only the edited cells: {new}");
    let id = new["id"].as_str().unwrap();
    let preview = app.get_json(key, &format!("/api/jobs/{id}/preview")).await;
    let rows = preview["rows"].as_array().unwrap();
    let row = |n: i64| rows.iter().find(|r| r["row"] == n).unwrap().clone();
    let three = row(3);
    assert_eq!(
        three["fixed"],
        serde_json::json!({"consumable_cycle_days": {"was": "tiga puluh"}}),
        "{three}"
    );
    assert_eq!(three["values"]["city"], "=1+2", "read back as its value");
    assert_eq!(three["values"]["consumable_cycle_days"], 30);
    assert_eq!(row(4)["fixed"]["customer_name"]["was"], "", "{preview}");
    assert_eq!(row(4)["values"]["customer_name"], "Dewi Lestari");
    assert_eq!(
        row(5)["fixed"]["wa_number"]["was"],
        "081234567801",
        "{preview}"
    );
    assert!(row(2).get("fixed").is_none(), "{preview}");
}

/// The CSV round trip: the file lists the failing rows as read, with
/// their messages and the formula-like city neutralised; the same text
/// with three cells corrected, sent back as `text/csv`, fixes exactly
/// those three.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_errored_rows_csv_corrected_and_sent_back_fixes_only_the_edited_cells() {
    let app = spawn_app().await;
    let sub = app.submitter().await;
    let id = failed_job(&app, &sub).await;

    let text = String::from_utf8(download(&app, &sub, &id, "csv").await).unwrap();
    let mut reader = csv::Reader::from_reader(text.as_bytes());
    let header: Vec<String> = reader.headers().unwrap().iter().map(String::from).collect();
    assert_eq!(
        header,
        [
            "row",
            "customer_name",
            "wa_number",
            "city",
            "consumable_cycle_days",
            "errors"
        ]
    );
    let lines: Vec<Vec<String>> = reader
        .records()
        .map(|r| r.unwrap().iter().map(String::from).collect())
        .collect();
    let rows: Vec<&str> = lines.iter().map(|l| l[0].as_str()).collect();
    assert_eq!(rows, ["3", "4", "5"], "{text}");
    assert_eq!(
        lines[0][1..5],
        ["Siti Rahayu", "081234567802", "'=1+2", "tiga puluh"],
        "as read, neutralised: {text}"
    );
    assert!(lines[0][5].starts_with("consumable_cycle_days: "), "{text}");
    assert!(lines[1][5].starts_with("customer_name: "), "{text}");
    assert!(lines[2][5].contains("repeats row 2"), "a key error: {text}");

    let corrected = text
        .replace("tiga puluh", "30")
        .replace("\n4,,", "\n4,Dewi Lestari,")
        .replace("5,Budi Kedua,081234567801", "5,Budi Kedua,081234567805");
    let new = revised_by_file(&app, &sub, &id, "text/csv", corrected.into_bytes()).await;
    check_the_three_fixes(&app, &sub, &new).await;
}

/// The text of an XLSX part.
fn part(xlsx: &[u8], name: &str) -> String {
    let mut zip = zip::ZipArchive::new(Cursor::new(xlsx)).unwrap();
    let mut text = String::new();
    zip.by_name(name)
        .unwrap()
        .read_to_string(&mut text)
        .unwrap();
    text
}

/// The XLSX round trip: wrong cells are filled and carry a note, cells
/// are strings (the formula-like city too, as it was); a workbook written
/// anew with three cells corrected (one as a number cell, as a person
/// typing in Excel makes it) fixes exactly those three.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_errored_rows_workbook_marks_wrong_cells_and_corrected_fixes_them() {
    use calamine::{Data, Reader, Xlsx};
    let app = spawn_app().await;
    let sub = app.submitter().await;
    let id = failed_job(&app, &sub).await;

    let xlsx = download(&app, &sub, &id, "xlsx").await;
    let mut book: Xlsx<_> = calamine::open_workbook_from_rs(Cursor::new(&xlsx)).unwrap();
    let sheet = book.worksheet_range("errored rows").unwrap();
    let text = |r: u32, c: u32| sheet.get_value((r, c)).cloned().unwrap_or(Data::Empty);
    assert_eq!(text(0, 0), Data::String("row".into()));
    assert_eq!(text(0, 5), Data::String("errors".into()));
    assert_eq!(text(1, 0), Data::Float(3.0));
    assert_eq!(text(1, 3), Data::String("=1+2".into()), "a string, as read");
    assert_eq!(text(1, 4), Data::String("tiga puluh".into()));
    assert_eq!(text(3, 2), Data::String("081234567801".into()));
    assert_eq!(sheet.height(), 4, "the header and three failing rows");

    let cells = part(&xlsx, "xl/worksheets/sheet1.xml");
    for wrong in ["E2", "B3", "C4"] {
        assert!(
            cells.contains(&format!("<c r=\"{wrong}\" s=")),
            "{wrong} is filled"
        );
    }
    assert!(!cells.contains("<c r=\"D2\" s="), "D2 is right");
    let notes = part(&xlsx, "xl/comments1.xml");
    for wrong in ["E2", "B3", "C4"] {
        assert!(notes.contains(&format!("ref=\"{wrong}\"")), "{notes}");
    }
    assert!(notes.contains("repeats row 2"), "{notes}");

    let new = revised_by_file(&app, &sub, &id, XLSX, corrected_workbook()).await;
    check_the_three_fixes(&app, &sub, &new).await;
}

/// The failing rows, corrected, as a person saves them from Excel.
fn corrected_workbook() -> Vec<u8> {
    let mut book = rust_xlsxwriter::Workbook::new();
    let sheet = book.add_worksheet();
    let header = [
        "row",
        "customer_name",
        "wa_number",
        "city",
        "consumable_cycle_days",
        "errors",
    ];
    sheet.write_row(0, 0, header).unwrap();
    sheet.write_number(1, 0, 3).unwrap();
    sheet
        .write_row(1, 1, ["Siti Rahayu", "081234567802", "=1+2"])
        .unwrap();
    sheet.write_number(1, 4, 30).unwrap();
    sheet.write_string(1, 5, "a note to ignore").unwrap();
    sheet.write_number(2, 0, 4).unwrap();
    sheet
        .write_row(2, 1, ["Dewi Lestari", "081234567803", "Medan", "14"])
        .unwrap();
    sheet.write_number(3, 0, 5).unwrap();
    sheet
        .write_row(3, 1, ["Budi Kedua", "081234567805", "Bogor", "7"])
        .unwrap();
    book.save_to_buffer().unwrap()
}

/// A file that is no errored-rows file is a problem naming what is
/// wrong, and creates no job.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_wrong_rows_file_is_refused_naming_the_member_and_creates_nothing() {
    let app = spawn_app().await;
    let sub = app.submitter().await;
    let id = failed_job(&app, &sub).await;
    let jobs = async || {
        app.get_json(&sub, "/api/jobs").await["jobs"]
            .as_array()
            .unwrap()
            .len()
    };
    let before = jobs().await;
    let cases = [
        ("customer_name,city\nSiti,Bogor\n", "row", "first column"),
        ("row,city\n3,Bogor\nabc,Depok\n", "row", "line 3"),
        ("row,kota_lama\n3,Bogor\n", "kota_lama", "not a column"),
        ("row,city,errors\n3,=1+2,whatever\n", "fixes", "no cell"),
        ("row,city\n99,Bogor\n", "fixes", "no row 99"),
    ];
    for (body, member, says) in cases {
        let resp = send_back(&app, &sub, &id, "text/csv", body.into()).await;
        let p = problem(resp, StatusCode::UNPROCESSABLE_ENTITY, "invalid_parameter").await;
        assert_eq!(p["parameter"], member, "{body}: {p}");
        assert!(p["detail"].as_str().unwrap().contains(says), "{body}: {p}");
    }
    let big = format!("row,city\n{}", "3,Bogor\n".repeat(4_300_000));
    let resp = send_back(&app, &sub, &id, "text/csv", big.into()).await;
    // The rest of the body was never read: the connection is not reused.
    let connection = resp.headers().get("connection").cloned();
    assert_eq!(
        connection.as_ref().map(|v| v.as_bytes()),
        Some(&b"close"[..])
    );
    problem(resp, StatusCode::PAYLOAD_TOO_LARGE, "too_large").await;
    assert_eq!(jobs().await, before, "nothing was created");

    // The rows layout is a file; JSON or another layout is refused.
    for query in ["layout=rows", "layout=rows&format=json", "layout=columns"] {
        let resp = app
            .get(&sub, &format!("/api/jobs/{id}/errors?{query}"))
            .await;
        let p = problem(resp, StatusCode::UNPROCESSABLE_ENTITY, "invalid_parameter").await;
        assert_eq!(p["parameter"], "layout", "{query}: {p}");
    }
}

/// More failing rows than a page: every one is listed once, in file
/// order, in both formats.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_failing_row_is_listed_once_across_pages() {
    use calamine::{Data, Reader, Xlsx};
    let app = spawn_app().await;
    let sub = app.submitter().await;
    let mut csv = String::from("customer_name,wa_number,consumable_cycle_days\n");
    for i in 0..2600 {
        let days = if i % 5 == 0 { "7" } else { "x" };
        csv.push_str(&format!("Budi {i},08{i:010},{days}\n"));
    }
    let job = app.upload(&sub, "customers", "", &csv).await;
    assert_eq!(job["counts"]["errors"], 2080, "{job}");
    let id = job["id"].as_str().unwrap();

    let text = String::from_utf8(download(&app, &sub, id, "csv").await).unwrap();
    let rows: Vec<i64> = csv::Reader::from_reader(text.as_bytes())
        .records()
        .map(|r| r.unwrap()[0].parse().unwrap())
        .collect();
    let expected: Vec<i64> = (0..2600).filter(|i| i % 5 != 0).map(|i| i + 2).collect();
    assert_eq!(rows, expected);

    let xlsx = download(&app, &sub, id, "xlsx").await;
    let mut book: Xlsx<_> = calamine::open_workbook_from_rs(Cursor::new(&xlsx)).unwrap();
    let sheet = book.worksheet_range("errored rows").unwrap();
    assert_eq!(sheet.height(), 2081);
    assert_eq!(sheet.get_value((2080, 0)), Some(&Data::Float(2601.0)));
}
