//! Exporting a module's rows (API.md section 15): every format in natural-
//! key order with the version token last, values that read back as
//! stored, the filters, the problems, the scope, the ledger event, and an
//! untouched export imported again as all unchanged.

use reqwest::{Response, StatusCode};
use serde_json::{Value, json};

use crate::common::*;

const XLSX: &str = "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet";

/// A module with a column of every type, one with allowed values, and a
/// catalog's second module for scope.
const CATALOG: &str = r#"
[[module]]
key = "items"
table = "uc_items"
natural_key = ["code"]

[[module.column]]
name = "code"
type = "text"
required = true

[[module.column]]
name = "name"
type = "text"

[[module.column]]
name = "qty"
type = "integer"

[[module.column]]
name = "big"
type = "bigint"

[[module.column]]
name = "amount"
type = "numeric"
scale = 4

[[module.column]]
name = "day"
type = "date"

[[module.column]]
name = "at"
type = "timestamptz"

[[module.column]]
name = "ok"
type = "boolean"

[[module.column]]
name = "status"
type = "text"
allowed = ["open", "closed"]

[[module]]
key = "notes"
table = "uc_notes"
natural_key = ["code"]

[[module.column]]
name = "code"
type = "text"
required = true
"#;

/// The columns of `items`, then `_version`.
const HEADER: [&str; 10] = [
    "code", "name", "qty", "big", "amount", "day", "at", "ok", "status", "_version",
];

/// Three items, out of key order: a bigint past 2^53, a numeric with its
/// scale and one past 15 digits, a timestamp to the microsecond and one to
/// the millisecond, empty cells.
const ITEMS: &str = "code,name,qty,big,amount,day,at,ok,status\n\
B-1,Budi,3,9007199254740993,12345.6700,2024-03-31,2024-03-31T01:02:03.456789Z,true,open\n\
A-2,Ani,-7,-5,12345678901234567.8900,1999-12-31,2024-01-01T00:00:00.250Z,false,closed\n\
A-1,,,,,,,,\n";

/// The service over [`CATALOG`] with [`ITEMS`] committed; a submitter and
/// an approver.
async fn seeded() -> (TestApp, String, String, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("catalog.toml");
    std::fs::write(&path, CATALOG).unwrap();
    let app = spawn_app_with(|s| s.catalog = Some(path.clone())).await;
    let (sub, apr) = (app.submitter().await, app.approver().await);
    commit(&app, &sub, &apr, "", ITEMS).await;
    (app, sub, apr, dir)
}

/// Uploads CSV and has it approved; returns the job id.
async fn commit(app: &TestApp, sub: &str, apr: &str, query: &str, csv: &str) -> String {
    let job = app.upload(sub, "items", query, csv).await;
    let id = job["id"].as_str().unwrap().to_string();
    let job = app.act_ok(apr, &id, "approve").await;
    assert_eq!(job["state"], "committed", "{job}");
    id
}

async fn export(app: &TestApp, key: &str, module: &str, query: &str) -> Response {
    app.get(key, &format!("/api/modules/{module}/export{query}"))
        .await
}

/// An export that must succeed, as bytes, with its content type checked.
async fn exported(app: &TestApp, key: &str, query: &str, content_type: &str) -> Vec<u8> {
    let resp = export(app, key, "items", query).await;
    assert_eq!(resp.status(), StatusCode::OK, "{query}");
    let ct = resp.headers()["content-type"].to_str().unwrap().to_string();
    assert!(ct.starts_with(content_type), "{query}: {ct}");
    let disposition = resp.headers()["content-disposition"].to_str().unwrap();
    assert!(disposition.contains("items-export."), "{disposition}");
    resp.bytes().await.unwrap().to_vec()
}

/// A CSV export's records, header first.
async fn csv(app: &TestApp, key: &str, query: &str) -> Vec<Vec<String>> {
    let body = exported(app, key, query, "text/csv").await;
    let mut reader = csv::ReaderBuilder::new()
        .has_headers(false)
        .from_reader(body.as_slice());
    reader
        .records()
        .map(|r| r.unwrap().iter().map(String::from).collect())
        .collect()
}

/// The `code` of each data record of a CSV export.
async fn codes(app: &TestApp, key: &str, query: &str) -> Vec<String> {
    let records = csv(app, key, query).await;
    records[1..].iter().map(|r| r[0].clone()).collect()
}

fn is_token(v: &str) -> bool {
    v.len() == 35
        && v.starts_with("v1-")
        && v[3..]
            .bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_format_exports_the_rows_in_key_order_with_the_version_last() {
    let (app, sub, _, _dir) = seeded().await;
    // CSV: the header, values as they read back, text neutralised.
    let records = csv(&app, &sub, "").await;
    assert_eq!(records[0], HEADER);
    let codes: Vec<&str> = records[1..].iter().map(|r| r[0].as_str()).collect();
    assert_eq!(codes, ["A-1", "A-2", "B-1"], "natural-key order");
    assert_eq!(records[1][1..9], ["", "", "", "", "", "", "", ""]);
    assert_eq!(
        records[2][1..9],
        [
            "Ani",
            "-7",
            "-5",
            "12345678901234567.8900",
            "1999-12-31",
            "2024-01-01T00:00:00.250Z",
            "false",
            "closed"
        ]
    );
    assert_eq!(
        records[3][1..9],
        [
            "Budi",
            "3",
            "9007199254740993",
            "12345.6700",
            "2024-03-31",
            "2024-03-31T01:02:03.456789Z",
            "true",
            "open"
        ]
    );
    let tokens: Vec<&str> = records[1..].iter().map(|r| r[9].as_str()).collect();
    assert!(tokens.iter().all(|t| is_token(t)), "{tokens:?}");
    assert_eq!(
        tokens
            .iter()
            .collect::<std::collections::HashSet<_>>()
            .len(),
        3
    );
    // A second export gives the same tokens.
    let again = csv(&app, &sub, "?format=csv").await;
    assert_eq!(again, records);

    // JSON: an array of objects, values as the preview writes them.
    let body = exported(&app, &sub, "?format=json", "application/json").await;
    let text = String::from_utf8(body.clone()).unwrap();
    assert!(text.contains("\"big\":9007199254740993"), "{text}");
    let rows: Vec<serde_json::Map<String, Value>> = serde_json::from_slice(&body).unwrap();
    assert_eq!(rows.len(), 3);
    let keys: Vec<&String> = rows[2].keys().collect();
    assert_eq!(keys, HEADER, "columns in catalog order, _version last");
    assert_eq!(rows[2]["big"].as_i64(), Some(9_007_199_254_740_993));
    assert_eq!(rows[2]["amount"], "12345.6700");
    assert_eq!(rows[1]["amount"], "12345678901234567.8900");
    assert_eq!(rows[2]["at"], "2024-03-31T01:02:03.456789Z");
    assert_eq!(rows[2]["ok"], true);
    assert_eq!(rows[1]["qty"], -7);
    assert_eq!(rows[0]["name"], Value::Null);
    for (row, token) in rows.iter().zip(&tokens) {
        assert_eq!(row["_version"], *token);
    }

    // NDJSON: one object a line, the same.
    let body = exported(&app, &sub, "?format=ndjson", "application/x-ndjson").await;
    let lines: Vec<Value> = String::from_utf8(body)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 3);
    for (line, row) in lines.iter().zip(&rows) {
        assert_eq!(line, &Value::Object(row.clone()));
    }

    // An empty selection is a header, an empty array, nothing.
    assert_eq!(
        csv(&app, &sub, "?limit=0").await,
        vec![HEADER.map(String::from).to_vec()]
    );
    let empty = exported(&app, &sub, "?format=json&limit=0", "application/json").await;
    assert_eq!(
        serde_json::from_slice::<Value>(&empty).unwrap(),
        serde_json::json!([])
    );
    let empty = exported(&app, &sub, "?format=ndjson&limit=0", "application/x-ndjson").await;
    assert!(empty.is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_xlsx_export_has_typed_cells_that_keep_every_digit() {
    use calamine::{Data, Reader, Xlsx};
    let (app, sub, _, _dir) = seeded().await;
    let tokens: Vec<String> = csv(&app, &sub, "").await[1..]
        .iter()
        .map(|r| r[9].clone())
        .collect();
    let body = exported(&app, &sub, "?format=xlsx", XLSX).await;
    let mut book = Xlsx::new(std::io::Cursor::new(body.clone())).unwrap();
    assert_eq!(book.sheet_names()[0], "items", "the module's sheet first");
    let range = book.worksheet_range("items").unwrap();
    let rows: Vec<Vec<Data>> = range.rows().map(|r| r.to_vec()).collect();
    assert_eq!(rows.len(), 4);
    let header: Vec<Data> = HEADER.iter().map(|h| Data::String(h.to_string())).collect();
    assert_eq!(rows[0], header);
    let s = |v: &str| Data::String(v.to_string());
    // A-1: nothing but its key and token.
    assert_eq!(rows[1][0], s("A-1"));
    assert!(
        rows[1][1..9].iter().all(|d| *d == Data::Empty),
        "{:?}",
        rows[1]
    );
    // A-2: a numeric past 15 digits as text; a millisecond moment typed.
    assert_eq!(rows[2][2], Data::Float(-7.0));
    assert_eq!(rows[2][4], s("12345678901234567.8900"));
    assert!(matches!(rows[2][5], Data::DateTime(_)), "{:?}", rows[2][5]);
    match &rows[2][6] {
        Data::DateTime(d) => {
            // Seven hours ahead: the service's zone (Asia/Jakarta).
            let at = d.as_datetime().unwrap();
            assert_eq!(at.to_string(), "2024-01-01 07:00:00.250");
        }
        other => panic!("a typed moment, not {other:?}"),
    }
    assert_eq!(rows[2][7], Data::Bool(false));
    assert_eq!(rows[2][8], s("closed"));
    // B-1: a bigint past 2^53 as text, a numeric typed, a microsecond
    // moment as text.
    assert_eq!(rows[3][2], Data::Float(3.0));
    assert_eq!(rows[3][3], s("9007199254740993"));
    assert_eq!(rows[3][4], Data::Float(12345.67));
    match &rows[3][5] {
        Data::DateTime(d) => {
            assert_eq!(d.as_datetime().unwrap().to_string(), "2024-03-31 00:00:00")
        }
        other => panic!("a typed date, not {other:?}"),
    }
    assert_eq!(rows[3][6], s("2024-03-31T01:02:03.456789Z"));
    assert_eq!(rows[3][7], Data::Bool(true));
    let versions: Vec<Data> = rows[1..].iter().map(|r| r[9].clone()).collect();
    assert_eq!(versions, tokens.iter().map(|t| s(t)).collect::<Vec<_>>());

    assert_frozen_bold_with_dropdowns(&body);
}

/// The header frozen and bold, the allowed values of `status` a
/// dropdown: what an export and a template of `items` both hold.
fn assert_frozen_bold_with_dropdowns(body: &[u8]) {
    let mut zip = zip::ZipArchive::new(std::io::Cursor::new(body)).unwrap();
    let part = |zip: &mut zip::ZipArchive<_>, name: &str| {
        let mut text = String::new();
        std::io::Read::read_to_string(&mut zip.by_name(name).unwrap(), &mut text).unwrap();
        text
    };
    let sheet = part(&mut zip, "xl/worksheets/sheet1.xml");
    assert!(
        sheet.contains("state=\"frozen\"") && sheet.contains("ySplit=\"1\""),
        "{sheet}"
    );
    assert!(
        sheet.contains("<dataValidation ") && sheet.contains("\"open,closed\""),
        "{sheet}"
    );
    let styles = part(&mut zip, "xl/styles.xml");
    assert!(styles.contains("<b/>"), "{styles}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_template_offers_the_dropdowns_of_an_export_and_typed_examples() {
    let (app, sub, apr, _dir) = seeded().await;
    let resp = app
        .get(&sub, "/api/modules/items/template?format=xlsx")
        .await;
    assert_eq!(resp.status(), StatusCode::OK);
    let body = resp.bytes().await.unwrap().to_vec();
    assert_frozen_bold_with_dropdowns(&body);

    // Its example row is typed, a pick from the list, and imports.
    use calamine::{Data, Reader, Xlsx};
    let mut book = Xlsx::new(std::io::Cursor::new(body.clone())).unwrap();
    let range = book.worksheet_range("items").unwrap();
    let rows: Vec<Vec<Data>> = range.rows().map(|r| r.to_vec()).collect();
    assert_eq!(rows[0].len(), HEADER.len() - 1, "no _version in a template");
    assert_eq!(rows[1][2], Data::Float(1.0));
    assert_eq!(rows[1][7], Data::Bool(true));
    assert_eq!(rows[1][8], Data::String("open".into()));
    let resp = app.upload_raw(&sub, "items", "", XLSX, body).await;
    assert_eq!(resp.status(), StatusCode::ACCEPTED);
    let job: Value = resp.json().await.unwrap();
    let job = app.wait_done(&sub, job["id"].as_str().unwrap()).await;
    assert_eq!(job["state"], "awaiting_approval", "{job}");
    assert_eq!(job["counts"]["insert"], 1, "{job}");
    let id = job["id"].as_str().unwrap();
    assert_eq!(app.act_ok(&apr, id, "approve").await["state"], "committed");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn filters_pick_rows_by_column_by_job_and_by_limit() {
    let (app, sub, apr, _dir) = seeded().await;
    // A later job updates B-1 and inserts C-1; A-1 and A-2 are left alone.
    let job = commit(
        &app,
        &sub,
        &apr,
        "?mode=upsert",
        "code,qty,status\nB-1,4,closed\nC-1,1,open\nA-2,-7,closed\n",
    )
    .await;
    assert_eq!(codes(&app, &sub, "").await, ["A-1", "A-2", "B-1", "C-1"]);
    for (query, want) in [
        ("?where.status=closed", vec!["A-2", "B-1"]),
        ("?where.status=CLOSED", vec!["A-2", "B-1"]),
        ("?where.status=closed&where.qty=4", vec!["B-1"]),
        // A numeric matches as a number: 12345.67 is 12345.6700.
        ("?where.amount=12345.67", vec!["B-1"]),
        ("?where.big=9007199254740993", vec!["B-1"]),
        ("?where.day=31/03/2024", vec!["B-1"]),
        ("?where.at=2024-01-01%2007:00:00.25", vec!["A-2"]),
        ("?where.ok=ya", vec!["B-1"]),
        // Empty asks for null.
        ("?where.name=", vec!["A-1", "C-1"]),
        ("?limit=2", vec!["A-1", "A-2"]),
        ("?where.status=closed&limit=1", vec!["A-2"]),
        ("?where.qty=99", vec![]),
    ] {
        assert_eq!(codes(&app, &sub, query).await, want, "{query}");
    }
    for (query, want) in [
        (format!("?job={job}"), vec!["B-1", "C-1"]),
        (format!("?job={job}&where.status=open"), vec!["C-1"]),
    ] {
        assert_eq!(codes(&app, &sub, &query).await, want, "{query}");
    }
    // The first job's rows: every row it inserted, as they are now.
    let first = app.get_json(&sub, "/api/jobs?module=items&limit=10").await;
    let first = first["jobs"].as_array().unwrap().last().unwrap()["id"]
        .as_str()
        .unwrap()
        .to_string();
    let records = csv(&app, &sub, &format!("?job={first}")).await;
    let rows: Vec<(&str, &str)> = records[1..]
        .iter()
        .map(|r| (r[0].as_str(), r[2].as_str()))
        .collect();
    assert_eq!(rows, [("A-1", ""), ("A-2", "-7"), ("B-1", "4")]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_table_larger_than_a_page_comes_whole_and_in_order() {
    let app = spawn_app().await;
    let (sub, apr) = (app.submitter().await, app.approver().await);
    // Products, sent in no order: more than two pages of rows (a page of
    // products, 9 columns and the id, is a tenth of PAGE_CELLS rows).
    let page = importgate::service::export::PAGE_CELLS / 10;
    let n = 2 * page + 321;
    let mut lines: Vec<String> = (0..n)
        .map(|i| format!("P-{:05},Product {i},{}", (i * 7919) % n, 1000 + i))
        .collect();
    lines.sort_by_key(|l| l[8..].to_string());
    let csv_text = format!("sku,product_name,price_idr\n{}\n", lines.join("\n"));
    let job = app.upload(&sub, "products", "", &csv_text).await;
    assert_eq!(job["counts"]["insert"], n, "{job}");
    app.act_ok(&apr, job["id"].as_str().unwrap(), "approve")
        .await;
    let resp = export(&app, &sub, "products", "").await;
    let body = resp.text().await.unwrap();
    let skus: Vec<&str> = body
        .lines()
        .skip(1)
        .map(|l| l.split(',').next().unwrap())
        .collect();
    let want: Vec<String> = (0..n).map(|i| format!("P-{i:05}")).collect();
    assert_eq!(skus, want);
    let limit = page + 7;
    let query = format!("?format=ndjson&limit={limit}");
    let resp = export(&app, &sub, "products", &query).await;
    assert_eq!(resp.text().await.unwrap().lines().count(), limit);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_filter_that_cannot_be_is_a_problem_naming_its_parameter() {
    let (app, sub, _, _dir) = seeded().await;
    let waiting = app
        .upload(&sub, "items", "?mode=upsert", "code,qty\nA-1,5\n")
        .await;
    assert_eq!(waiting["state"], "awaiting_approval");
    let waiting = waiting["id"].as_str().unwrap().to_string();
    let other = app.upload(&sub, "notes", "", "code\nN-1\n").await;
    let other = other["id"].as_str().unwrap().to_string();
    let (by_waiting, by_other) = (format!("?job={waiting}"), format!("?job={other}"));
    for (query, parameter) in [
        ("?where.nope=1", "where.nope"),
        ("?where.qty=abc", "where.qty"),
        ("?where.qty=3000000000", "where.qty"),
        ("?where.day=2024-02-30", "where.day"),
        ("?where.status=pending", "where.status"),
        ("?where.qty=1&where.qty=2", "where.qty"),
        ("?format=xls", "format"),
        ("?limit=-1", "limit"),
        ("?job=job_nope", "job"),
        ("?job=job_01JD8Z3K6W0Q2T5N8XJ4R7M9C1", "job"),
        ("?sort=code", "sort"),
        (by_waiting.as_str(), "job"),
        (by_other.as_str(), "job"),
    ] {
        let body = problem(
            export(&app, &sub, "items", query).await,
            StatusCode::UNPROCESSABLE_ENTITY,
            "invalid_parameter",
        )
        .await;
        assert_eq!(body["parameter"], parameter, "{query}: {body}");
    }
    let body = problem(
        export(&app, &sub, "nothing", "").await,
        StatusCode::NOT_FOUND,
        "unknown_module",
    )
    .await;
    assert!(
        body["valid_modules"].as_array().unwrap().len() == 2,
        "{body}"
    );
    // A key whose scope holds another module may not export this one.
    let (notes_only, _) = app.key("Nur", "submitter", &["notes"]).await;
    problem(
        export(&app, &notes_only, "items", "").await,
        StatusCode::FORBIDDEN,
        "forbidden",
    )
    .await;
    let resp = export(&app, &notes_only, "notes", "").await;
    assert_eq!(resp.status(), StatusCode::OK);
    // No key, no export.
    let resp = app
        .client
        .get(app.url("/api/modules/items/export"))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), StatusCode::UNAUTHORIZED);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_version_changes_when_its_row_changes_and_only_then() {
    let (app, sub, apr, _dir) = seeded().await;
    let before = csv(&app, &sub, "").await;
    commit(
        &app,
        &sub,
        &apr,
        "?mode=update",
        "code,name\nA-2,Ani Lestari\n",
    )
    .await;
    let after = csv(&app, &sub, "").await;
    assert_eq!(after[1][9], before[1][9], "A-1 as it was");
    assert_ne!(after[2][9], before[2][9], "A-2 changed");
    assert_eq!(after[3][9], before[3][9], "B-1 as it was");
    // Changed behind the service's back, the token follows the row; the
    // same number spelled otherwise is the same datum.
    app.sql("UPDATE uc_items SET qty = 4 WHERE code = 'B-1'")
        .await;
    let changed = csv(&app, &sub, "").await;
    assert_ne!(changed[3][9], after[3][9]);
    app.sql("UPDATE uc_items SET qty = 3 WHERE code = 'B-1'")
        .await;
    app.sql("UPDATE uc_items SET amount = 12345.67 WHERE code = 'B-1'")
        .await;
    let respelled = csv(&app, &sub, "").await;
    assert_eq!(respelled[3][9], after[3][9]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_export_is_a_ledger_event_seen_within_the_module_scope() {
    let (app, sub, _, _dir) = seeded().await;
    let (notes_only, _) = app.key("Nur", "submitter", &["notes"]).await;
    let body = exported(&app, &sub, "?where.status=open&limit=5", "text/csv").await;
    assert_eq!(body.iter().filter(|b| **b == b'\n').count(), 2);
    let events = app
        .get_json(&app.admin, "/api/events?after=evt_0&limit=1000")
        .await;
    let exported: Vec<&Value> = events["events"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["type"] == "module.exported")
        .collect();
    assert_eq!(exported.len(), 1, "{events}");
    let e = &exported[0]["data"]["export"];
    assert_eq!(e["module"], "items");
    assert_eq!(e["format"], "csv");
    assert_eq!(e["rows"], 1);
    assert_eq!(e["complete"], true);
    assert_eq!(
        e["filters"],
        serde_json::json!({"where": {"status": "open"}, "limit": 5})
    );
    assert_eq!(e["by"]["display"], "Bu***o", "masked: {e}");
    assert!(e["id"].as_str().unwrap().starts_with("exp_"));
    // Outside the module's scope, the event is not shown.
    let theirs = app
        .get_json(&notes_only, "/api/events?after=evt_0&limit=1000")
        .await;
    assert!(
        !theirs["events"]
            .as_array()
            .unwrap()
            .iter()
            .any(|e| e["type"] == "module.exported"),
        "{theirs}"
    );
    let (holds, out) = crate::ledger::verify(&app);
    assert!(holds, "{out}");
    // An export row changed behind the service breaks the ledger.
    app.sql("UPDATE ig_exports SET row_count = 100").await;
    let (holds, out) = crate::ledger::verify(&app);
    assert!(!holds, "{out}");
}

/// Uploads a body in upsert mode and waits for validation; returns the job.
async fn upsert(app: &TestApp, key: &str, content_type: &str, body: Vec<u8>) -> Value {
    let resp = app
        .upload_raw(key, "items", "?mode=upsert", content_type, body)
        .await;
    assert_eq!(resp.status(), StatusCode::ACCEPTED, "{content_type}");
    let job: Value = resp.json().await.unwrap();
    app.wait_done(key, job["id"].as_str().unwrap()).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_untouched_export_imports_again_as_all_unchanged() {
    let (app, sub, apr, _dir) = seeded().await;
    let formats = [
        ("", "text/csv"),
        ("?format=json", "application/json"),
        ("?format=ndjson", "application/x-ndjson"),
        ("?format=xlsx", XLSX),
    ];
    let all_unchanged = |query: &str, job: &Value| {
        let counts = &job["counts"];
        assert_eq!(counts["insert"], 0, "{query}: {job}");
        assert_eq!(counts["update"], 0, "{query}: {job}");
        assert_eq!(counts["errors"], 0, "{query}: {job}");
        assert_eq!(counts["unchanged"], counts["rows"], "{query}: {job}");
    };
    for (query, content_type) in formats {
        let body = exported(&app, &sub, query, content_type).await;
        let job = upsert(&app, &sub, content_type, body).await;
        all_unchanged(query, &job);
        assert_eq!(job["counts"]["rows"], 3, "{query}: {job}");
    }
    // Text a spreadsheet could run comes back as it was from the formats
    // that write it as text (a CSV writes it neutralised).
    commit(
        &app,
        &sub,
        &apr,
        "?mode=upsert",
        "code,name\nF-1,=1+1\nF-2,+6281234567890\n",
    )
    .await;
    let records = csv(&app, &sub, "?where.code=F-1").await;
    assert_eq!(records[1][1], "'=1+1", "neutralised as section 5 says");
    let records = csv(&app, &sub, "?where.code=F-2").await;
    assert_eq!(records[1][1], "'+6281234567890");
    // ... and from the CSV, whose neutralising apostrophe comes off again.
    for (query, content_type) in formats {
        let body = exported(&app, &sub, query, content_type).await;
        let job = upsert(&app, &sub, content_type, body).await;
        all_unchanged(query, &job);
        assert_eq!(job["counts"]["rows"], 5, "{query}: {job}");
    }
}

/// A CSV export's text with its records edited by `edit` (header first).
fn edited(text: &str, edit: impl FnOnce(&mut Vec<Vec<String>>)) -> String {
    let mut reader = csv::ReaderBuilder::new()
        .has_headers(false)
        .from_reader(text.as_bytes());
    let mut records: Vec<Vec<String>> = reader
        .records()
        .map(|r| r.unwrap().iter().map(str::to_string).collect())
        .collect();
    edit(&mut records);
    let mut out = csv::Writer::from_writer(vec![]);
    for r in &records {
        out.write_record(r).unwrap();
    }
    String::from_utf8(out.into_inner().unwrap()).unwrap()
}

/// Each row's error codes and messages by row number, from the errors
/// report.
async fn errors_by_row(app: &TestApp, key: &str, id: &str) -> Vec<(u64, String, String)> {
    let report = app.get_json(key, &format!("/api/jobs/{id}/errors")).await;
    let mut found: Vec<(u64, String, String)> = (report["errors"].as_array().unwrap().iter())
        .map(|e| {
            let row = e["row"].as_u64().unwrap();
            let code = e["code"].as_str().unwrap().to_string();
            (row, code, e["message"].as_str().unwrap().to_string())
        })
        .collect();
    found.sort();
    found
}

/// An export edited and imported again in `upsert` or `update` mode: a
/// row that changed or went since the export, or that the file gives as
/// new while the table has it now, is a `conflict` with the table's
/// values as `before`; an edited row whose `_version` holds is an update.
/// The same holds for a file that leaves columns out, and a commit checks
/// again what the preview saw.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_row_changed_or_deleted_since_its_export_is_a_conflict() {
    let (app, sub, apr, _dir) = seeded().await;
    let text = String::from_utf8(exported(&app, &sub, "", "text/csv").await).unwrap();
    // The export: A-1, A-2, B-1 (rows 2 to 4). Ani gets a new name; D-1
    // and E-1 are new rows; F-1 carries a token cut short.
    let file = edited(&text, |r| {
        r[2][1] = "Ani Suryani".into();
        let blank = |code: &str, version: &str| {
            let mut row = vec![String::new(); HEADER.len()];
            row[0] = code.into();
            row[9] = version.into();
            row
        };
        r.push(blank("D-1", ""));
        r.push(blank("E-1", ""));
        r.push(blank("F-1", "v1-12ab"));
    });
    // Meanwhile someone else changes B-1, deletes A-1 and adds E-1.
    commit(
        &app,
        &sub,
        &apr,
        "?mode=upsert",
        "code,qty
B-1,4
E-1,1
",
    )
    .await;
    app.sql("DELETE FROM uc_items WHERE code = 'A-1'").await;

    let job = app
        .upload(&sub, "items", "?mode=upsert&on_error=skip", &file)
        .await;
    let id = job["id"].as_str().unwrap().to_string();
    let counts = &job["counts"];
    assert_eq!(
        (&counts["update"], &counts["insert"], &counts["errors"]),
        (&json!(1), &json!(1), &json!(4)),
        "{job}"
    );
    let errors = errors_by_row(&app, &sub, &id).await;
    let codes: Vec<(u64, &str)> = errors.iter().map(|(r, c, _)| (*r, c.as_str())).collect();
    assert_eq!(
        codes,
        [
            (2, "conflict"),
            (4, "conflict"),
            (6, "conflict"),
            (7, "format")
        ],
        "{errors:?}"
    );
    let says = |row: u64, words: &str| {
        let (_, _, message) = errors.iter().find(|(r, _, _)| *r == row).unwrap();
        assert!(message.contains(words), "row {row}: {message}");
    };
    says(
        2,
        "(code A-1) was deleted from uc_items since it was exported",
    );
    says(4, "(code B-1) changed in uc_items since it was exported");
    says(6, "(code E-1) was added to uc_items since it was exported");
    says(
        7,
        "column _version: \"v1-12ab\" is not a version an export wrote",
    );
    // The preview shows what the table holds now beside what the file says.
    let preview = app
        .get_json(&sub, &format!("/api/jobs/{id}/preview?action=error"))
        .await;
    let b1 = (preview["rows"].as_array().unwrap().iter())
        .find(|r| r["row"] == 4)
        .unwrap();
    assert_eq!(b1["before"]["qty"], 4, "{b1}");
    assert_eq!(b1["values"]["qty"], 3, "{b1}");
    assert!(
        !job["warnings"].to_string().contains("_version"),
        "the column is known: {job}"
    );

    // In update mode the new row without a key in the table is not found.
    let job = app
        .upload(&sub, "items", "?mode=update&on_error=skip", &file)
        .await;
    let errors = errors_by_row(&app, &sub, job["id"].as_str().unwrap()).await;
    let codes: Vec<(u64, &str)> = errors.iter().map(|(r, c, _)| (*r, c.as_str())).collect();
    assert_eq!(
        codes,
        [
            (2, "conflict"),
            (4, "conflict"),
            (5, "not_found"),
            (6, "conflict"),
            (7, "format")
        ]
    );

    // A file that leaves columns out is checked on the whole row too.
    let fresh = String::from_utf8(exported(&app, &sub, "", "text/csv").await).unwrap();
    let narrow = edited(&fresh, |r| {
        for row in r.iter_mut() {
            *row = vec![row[0].clone(), row[1].clone(), row[9].clone()];
        }
    });
    // B-1 now; E-1's amount changes behind the service, a column the
    // narrow file does not give.
    app.sql("UPDATE uc_items SET amount = 2 WHERE code = 'E-1'")
        .await;
    let narrow = edited(&narrow, |r| r[1][1] = "Ani S.".into());
    let job = app
        .upload(&sub, "items", "?mode=upsert&on_error=skip", &narrow)
        .await;
    let counts = &job["counts"];
    assert_eq!(
        (&counts["update"], &counts["unchanged"], &counts["errors"]),
        (&json!(1), &json!(1), &json!(1)),
        "{job}"
    );
    let errors = errors_by_row(&app, &sub, job["id"].as_str().unwrap()).await;
    assert_eq!(errors.len(), 1, "{errors:?}");
    assert!(errors[0].2.contains("(code E-1) changed"), "{errors:?}");

    // A versioned job at the gate whose row changes before the approval is
    // refused at the commit, as any stale preview.
    let fresh =
        String::from_utf8(exported(&app, &sub, "?where.code=B-1", "text/csv").await).unwrap();
    let file = edited(&fresh, |r| r[1][1] = "Bayu".into());
    let job = app.upload(&sub, "items", "?mode=upsert", &file).await;
    assert_eq!(job["counts"]["update"], 1, "{job}");
    app.sql("UPDATE uc_items SET name = 'Bima' WHERE code = 'B-1'")
        .await;
    let id = job["id"].as_str().unwrap();
    let done = app.act_ok(&apr, id, "approve").await;
    assert_eq!(done["state"], "failed", "{done}");
    assert_eq!(done["problem"]["code"], "stale_preview", "{done}");
    let name = app
        .sql("SELECT name FROM uc_items WHERE code = 'B-1'")
        .await;
    assert_eq!(name[0][0].as_deref(), Some("Bima"));

    // In insert mode the column is read and left alone.
    let job = app
        .upload(
            &sub,
            "items",
            "?mode=insert",
            "code,_version\nG-1,v1-nothing\n",
        )
        .await;
    assert_eq!(job["counts"]["insert"], 1, "{job}");
    assert!(!job["warnings"].to_string().contains("_version"), "{job}");
}

/// An XLSX export opened and saved again by LibreOffice, as XLSX and as
/// CSV, imports again as all unchanged: its typed cells hold what the
/// table holds, and what a sheet could not hold exactly is text.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_export_saved_again_by_libreoffice_imports_as_all_unchanged() {
    let (app, sub, _, _dir) = seeded().await;
    let body = exported(&app, &sub, "?format=xlsx", XLSX).await;
    let work = tempfile::tempdir().unwrap();
    let exported = work.path().join("items-export.xlsx");
    std::fs::write(&exported, body).unwrap();
    for (filter, content_type) in [
        ("xlsx", XLSX),
        ("csv:Text - txt - csv (StarCalc):44,34,76,1", "text/csv"),
    ] {
        let out = tempfile::tempdir().unwrap();
        let saved =
            crate::fixtures::libreoffice(std::slice::from_ref(&exported), filter, out.path());
        let job = upsert(&app, &sub, content_type, std::fs::read(&saved[0]).unwrap()).await;
        let counts = &job["counts"];
        assert_eq!(counts["rows"], 3, "{filter}: {job}");
        assert_eq!(counts["unchanged"], 3, "{filter}: {job}");
    }
}

/// The round trip on every module of the built-in catalog: each
/// template's typed example row committed, then exported as CSV, XLSX,
/// JSON and NDJSON, and the XLSX saved again by LibreOffice; each file
/// imported again in upsert mode is one unchanged row, no error.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_module_exported_in_every_format_imports_again_unchanged() {
    // Six uploads a module by one key: more than the default 60 a minute.
    let app = spawn_app_with(|s| s.limits.uploads_per_minute = 0).await;
    let (sub, apr) = (app.submitter().await, app.approver().await);
    let list = app.get_json(&sub, "/api/modules").await;
    let modules: Vec<String> = (list["modules"].as_array().unwrap().iter())
        .map(|m| m["key"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(modules.len(), 26);
    let work = tempfile::tempdir().unwrap();
    let again = |key: String, content_type: &'static str, body: Vec<u8>, what: String| {
        let (app, sub) = (&app, &sub);
        async move {
            let resp = app
                .upload_raw(sub, &key, "?mode=upsert", content_type, body)
                .await;
            assert_eq!(resp.status(), StatusCode::ACCEPTED, "{what}");
            let job: Value = resp.json().await.unwrap();
            let id = job["id"].as_str().unwrap().to_string();
            let job = app.wait_done(sub, &id).await;
            let counts = &job["counts"];
            assert_eq!(
                (
                    counts["rows"].as_i64(),
                    counts["unchanged"].as_i64(),
                    counts["errors"].as_i64()
                ),
                (Some(1), Some(1), Some(0)),
                "{what}: {job}"
            );
            app.act_ok(sub, &id, "cancel").await;
        }
    };
    let mut saved_by_libreoffice = Vec::new();
    for key in &modules {
        let template = app
            .get(&sub, &format!("/api/modules/{key}/template?format=csv"))
            .await;
        let template = template.text().await.unwrap();
        let job = app.upload(&sub, key, "", &template).await;
        assert_eq!(job["counts"]["insert"], 1, "{key}: {job}");
        let id = job["id"].as_str().unwrap();
        assert_eq!(
            app.act_ok(&apr, id, "approve").await["state"],
            "committed",
            "{key}"
        );
        for (format, content_type) in [
            ("csv", "text/csv"),
            ("xlsx", XLSX),
            ("json", "application/json"),
            ("ndjson", "application/x-ndjson"),
        ] {
            let body = exported_from(&app, &sub, key, &format!("?format={format}")).await;
            if format == "xlsx" {
                let path = work.path().join(format!("{key}.xlsx"));
                std::fs::write(&path, &body).unwrap();
                saved_by_libreoffice.push((key.clone(), path));
            }
            again(
                key.clone(),
                content_type,
                body,
                format!("{key} as {format}"),
            )
            .await;
        }
    }
    // One LibreOffice run saves every module's XLSX export again.
    let out = tempfile::tempdir().unwrap();
    let files: Vec<_> = saved_by_libreoffice
        .iter()
        .map(|(_, p)| p.clone())
        .collect();
    let saved = crate::fixtures::libreoffice(&files, "xlsx", out.path());
    for ((key, _), path) in saved_by_libreoffice.into_iter().zip(saved) {
        let body = std::fs::read(path).unwrap();
        again(
            key.clone(),
            XLSX,
            body,
            format!("{key} saved by LibreOffice"),
        )
        .await;
    }
}

/// A module's export as bytes; it must succeed.
async fn exported_from(app: &TestApp, key: &str, module: &str, query: &str) -> Vec<u8> {
    let resp = export(app, key, module, query).await;
    assert_eq!(resp.status(), StatusCode::OK, "{module} {query}");
    resp.bytes().await.unwrap().to_vec()
}
