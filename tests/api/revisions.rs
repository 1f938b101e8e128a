//! Revisions (API.md section 11): a file that does not fit is mapped and
//! fixed inside importgate; the revision is a new job over the same stored
//! file, and the approver sees what it changed.

use reqwest::StatusCode;
use serde_json::{Value, json};

use crate::common::*;

/// `POST /api/jobs/{id}/revisions` with a JSON body.
async fn revise(app: &TestApp, key: &str, id: &str, body: Value) -> reqwest::Response {
    app.client
        .post(app.url(&format!("/api/jobs/{id}/revisions")))
        .header("X-API-Key", key)
        .json(&body)
        .send()
        .await
        .unwrap()
}

/// A revision that must be accepted; waits for its validation.
async fn revised(app: &TestApp, key: &str, id: &str, body: Value) -> Value {
    let resp = revise(app, key, id, body).await;
    let status = resp.status();
    let location = resp
        .headers()
        .get("location")
        .map(|v| v.to_str().unwrap().to_string());
    let job: Value = resp.json().await.unwrap();
    assert_eq!(status, StatusCode::CREATED, "{job}");
    assert_eq!(job["state"], "validating", "{job}");
    assert_eq!(job["revision_of"], id);
    let new = job["id"].as_str().unwrap();
    assert_eq!(
        location.as_deref(),
        Some(format!("/api/jobs/{new}").as_str())
    );
    app.wait_done(key, new).await
}

const CRM: &str = "Nama Pelanggan,No. WA,Kota,Catatan\n\
Budi Santoso,081234567801,Bandung,pelanggan lama\n\
Siti Rahayu,081234567802,Surabaya,\n\
Dewi Lestari,081234567803,Medan,minta katalog\n";

/// A CRM export whose headers do not match the module: the job is invalid;
/// a revision maps them, and whoever uploaded or revised may not approve
/// it; a third person does, and the mapped values are written.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_crm_export_is_mapped_by_a_revision_that_neither_uploader_nor_reviser_approves() {
    let app = spawn_app().await;
    let (uploader, _) = app.key("Agus Wijaya", "approver", &["*"]).await;
    let (reviser, _) = app.key("Rina Kusuma", "approver", &["*"]).await;
    let third = app.approver().await;
    let job = app.upload(&uploader, "customers", "", CRM).await;
    assert_eq!(job["state"], "invalid", "{job}");
    assert_eq!(job["problem"]["code"], "missing_columns");
    let id = job["id"].as_str().unwrap();

    let mapping = json!({"No. WA": "wa_number", "Kota": "city", "Catatan": "notes"});
    let new = revised(
        &app,
        &reviser,
        id,
        json!({"mapping": mapping, "comment": "header from the CRM export"}),
    )
    .await;
    assert_eq!(new["state"], "awaiting_approval", "{new}");
    assert_eq!(new["counts"]["insert"], 3);
    assert_eq!(new["revision"]["number"], 1);
    assert_eq!(new["revision"]["mapping"], mapping);
    assert_eq!(new["revision"]["fixes"], 0);
    assert_eq!(new["revision"]["by"]["display"], "Ri***a");
    assert_eq!(new["revision"]["comment"], "header from the CRM export");
    assert_eq!(
        new["submitter"]["display"], "Ag***a",
        "the file stays the uploader's"
    );
    let old = app.job(&uploader, id).await;
    assert_eq!(old["state"], "invalid");
    assert_eq!(old["revised_as"], new["id"]);
    let events = app
        .get_json(&uploader, &format!("/api/jobs/{id}/events"))
        .await;
    let last = events["events"].as_array().unwrap().last().unwrap().clone();
    assert_eq!(last["event"], "revised", "{events}");

    let new_id = new["id"].as_str().unwrap();
    for barred in [&uploader, &reviser] {
        let resp = app.act(barred, new_id, "approve", None).await;
        problem(resp, StatusCode::FORBIDDEN, "self_approval").await;
    }
    let done = app.act_ok(&third, new_id, "approve").await;
    assert_eq!(done["state"], "committed", "{done}");
    let rows = app
        .sql("SELECT customer_name, city, notes FROM uc_scrm_customers ORDER BY wa_number")
        .await;
    assert_eq!(rows[0][1].as_deref(), Some("Bandung"));
    assert_eq!(rows[2][2].as_deref(), Some("minta katalog"));
    let (ok, out) = crate::ledger::verify(&app);
    assert!(ok, "{out}");
}

const WRONG: &str = "customer_name,wa_number,city,consumable_cycle_days\n\
Budi Santoso,081234567801,Bandung,30\n\
Siti Rahayu,081234567802,Surabaya,tiga puluh\n\
Dewi Lestari,081234567803,Medan,14\n\
Budi Kedua,081234567801,Bogor,7\n";

/// Three wrong rows: a cell that is not a number is fixed, a duplicate is
/// excluded; the preview marks the fixed cell with what the file said and
/// lists the excluded row only when asked. Revising the revision while it
/// waits at the gate cancels it; the second revision inherits the first's
/// changes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fixes_and_exclusions_mend_a_failed_job_and_the_preview_shows_what_the_file_said() {
    let app = spawn_app().await;
    let sub = app.submitter().await;
    let apr = app.approver().await;
    let job = app.upload(&sub, "customers", "", WRONG).await;
    assert_eq!(job["state"], "failed", "{job}");
    assert_eq!(job["counts"]["errors"], 2, "{job}");
    let id = job["id"].as_str().unwrap();

    let first = revised(
        &app,
        &sub,
        id,
        json!({"fixes": [{"row": 3, "column": "consumable_cycle_days", "value": "30"}],
               "exclude": [5]}),
    )
    .await;
    assert_eq!(first["state"], "awaiting_approval", "{first}");
    let counts = &first["counts"];
    assert_eq!(
        (
            counts["rows"].as_i64(),
            counts["valid"].as_i64(),
            counts["errors"].as_i64()
        ),
        (Some(4), Some(3), Some(0)),
        "{first}"
    );
    assert_eq!(counts["excluded"], 1);
    assert_eq!(first["revision"]["fixes"], 1);
    assert_eq!(first["revision"]["excluded"], 1);
    let first_id = first["id"].as_str().unwrap();
    let preview = app
        .get_json(&apr, &format!("/api/jobs/{first_id}/preview"))
        .await;
    assert_eq!(preview["total"], 3, "{preview}");
    let row3 = &preview["rows"][1];
    assert_eq!(row3["row"], 3);
    assert_eq!(row3["values"]["consumable_cycle_days"], 30);
    assert_eq!(
        row3["fixed"],
        json!({"consumable_cycle_days": {"was": "tiga puluh"}})
    );
    assert!(preview["rows"][0].get("fixed").is_none(), "{preview}");
    let out = app
        .get_json(
            &apr,
            &format!("/api/jobs/{first_id}/preview?action=excluded"),
        )
        .await;
    assert_eq!(out["total"], 1);
    assert_eq!(out["rows"][0]["row"], 5);
    assert_eq!(out["rows"][0]["action"], "excluded");

    // A second look: revise the waiting revision; it is cancelled.
    let second = revised(
        &app,
        &sub,
        first_id,
        json!({"fixes": [{"row": 4, "column": "city", "value": "Medan Kota"}]}),
    )
    .await;
    assert_eq!(second["state"], "awaiting_approval", "{second}");
    assert_eq!(second["revision"]["number"], 2);
    assert_eq!(second["revision"]["fixes"], 2, "inherited and its own");
    assert_eq!(second["revision"]["excluded"], 1);
    let first = app.job(&sub, first_id).await;
    assert_eq!(first["state"], "cancelled");
    assert_eq!(first["revised_as"], second["id"]);
    let last = first["decisions"]
        .as_array()
        .unwrap()
        .last()
        .unwrap()
        .clone();
    assert_eq!(last["decision"], "cancelled");
    assert_eq!(
        last["comment"],
        format!("revised as {}", second["id"].as_str().unwrap())
    );

    let second_id = second["id"].as_str().unwrap();
    let done = app.act_ok(&apr, second_id, "approve").await;
    assert_eq!(done["state"], "committed", "{done}");
    let rows = app
        .sql("SELECT customer_name, city, CAST(consumable_cycle_days AS TEXT) FROM uc_scrm_customers ORDER BY wa_number")
        .await;
    assert_eq!(rows.len(), 3, "the excluded row is not written: {rows:?}");
    assert_eq!(rows[0][0].as_deref(), Some("Budi Santoso"));
    assert_eq!(rows[1][2].as_deref(), Some("30"));
    assert_eq!(rows[2][1].as_deref(), Some("Medan Kota"));
    let (ok, out) = crate::ledger::verify(&app);
    assert!(ok, "{out}");
}

/// Each bad revision is a problem naming the member, and creates nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_revisions_are_refused_naming_the_member_and_create_nothing() {
    let app = spawn_app().await;
    let sub = app.submitter().await;
    let invalid = app.upload(&sub, "customers", "", CRM).await;
    let invalid_id = invalid["id"].as_str().unwrap();
    let failed = app.upload(&sub, "customers", "", WRONG).await;
    let failed_id = failed["id"].as_str().unwrap();
    let jobs_before = app.count("ig_jobs").await;

    let cases: Vec<(&str, Value, &str)> = vec![
        (
            invalid_id,
            json!({"mapping": {"No. WA": "whatsapp_no"}}),
            "mapping.No. WA",
        ),
        (
            invalid_id,
            json!({"mapping": {"No. WA": "wa_number", "Kota": "wa_number"}}),
            "mapping.No. WA",
        ),
        (
            invalid_id,
            json!({"mapping": {"Telepon": "wa_number"}}),
            "mapping.Telepon",
        ),
        (invalid_id, json!({"mapping": {"Kota": "city"}}), "mapping"),
        (
            invalid_id,
            json!({"mapping": {"No. WA": "wa_number"}, "fixes": [{"row": 2, "column": "city", "value": "x"}]}),
            "fixes",
        ),
        (
            failed_id,
            json!({"fixes": [{"row": 99, "column": "city", "value": "x"}]}),
            "fixes",
        ),
        (
            failed_id,
            json!({"fixes": [{"row": 2, "column": "kota", "value": "x"}]}),
            "fixes[0].column",
        ),
        (
            failed_id,
            json!({"fixes": [{"row": 2, "column": "grade", "value": "A"}]}),
            "fixes",
        ),
        (
            failed_id,
            json!({"fixes": [{"row": "two", "column": "city"}]}),
            "fixes[0].row",
        ),
        (
            failed_id,
            json!({"fixes": [{"row": 2, "column": "city", "value": {"a": 1}}]}),
            "fixes[0].value",
        ),
        (failed_id, json!({"exclude": [1000]}), "exclude"),
        (failed_id, json!({"exclude": "all"}), "exclude"),
        (failed_id, json!({"exlude": [3]}), "exlude"),
        (
            failed_id,
            json!({"remember_mapping": true}),
            "remember_mapping",
        ),
    ];
    for (id, body, member) in cases {
        let resp = revise(&app, &sub, id, body.clone()).await;
        let p = problem(resp, StatusCode::UNPROCESSABLE_ENTITY, "invalid_parameter").await;
        assert_eq!(p["parameter"], member, "{body}: {p}");
    }
    let many: Vec<Value> = (0..10_001)
        .map(|i| json!({"row": 2 + i, "column": "city", "value": "x"}))
        .collect();
    let resp = revise(&app, &sub, failed_id, json!({"fixes": many})).await;
    let p = problem(resp, StatusCode::UNPROCESSABLE_ENTITY, "invalid_parameter").await;
    assert_eq!(p["parameter"], "fixes");
    assert!(p["detail"].as_str().unwrap().contains("10000"), "{p}");
    let resp = app
        .client
        .post(app.url(&format!("/api/jobs/{failed_id}/revisions")))
        .header("X-API-Key", &sub)
        .body("[1, 2]")
        .send()
        .await
        .unwrap();
    problem(resp, StatusCode::BAD_REQUEST, "bad_request").await;
    assert_eq!(
        app.count("ig_jobs").await,
        jobs_before,
        "nothing was created"
    );

    // A committed job is past revising; a revised one names its revision.
    let apr = app.approver().await;
    let good = app
        .upload(
            &sub,
            "customers",
            "",
            "customer_name,wa_number\nBudi,0812\n",
        )
        .await;
    let good_id = good["id"].as_str().unwrap();
    app.act_ok(&apr, good_id, "approve").await;
    let resp = revise(&app, &sub, good_id, json!({})).await;
    let p = problem(resp, StatusCode::CONFLICT, "invalid_state").await;
    assert!(p["detail"].as_str().unwrap().contains("committed"), "{p}");
    let again = revised(&app, &sub, failed_id, json!({"exclude": [3, 5]})).await;
    let resp = revise(&app, &sub, failed_id, json!({"exclude": [3]})).await;
    let p = problem(resp, StatusCode::CONFLICT, "invalid_state").await;
    assert!(
        p["detail"]
            .as_str()
            .unwrap()
            .contains(again["id"].as_str().unwrap()),
        "{p}"
    );
}

/// Fixes and exclusions of a job whose rows were read are checked in
/// place: the stored file is not read again (here it is gone), and the
/// whole-file key rules still hold — a fix that changes a key frees a
/// duplicate and makes another, one that avoids a key the table holds
/// (`mode=insert`) mends that row.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fix_only_revision_rechecks_the_touched_rows_and_their_keys_without_the_file() {
    let app = spawn_app().await;
    let sub = app.submitter().await;
    let apr = app.approver().await;
    let first = app
        .upload(
            &sub,
            "customers",
            "",
            "customer_name,wa_number\nLama,0811\n",
        )
        .await;
    app.act_ok(&apr, first["id"].as_str().unwrap(), "approve")
        .await;
    let csv = "customer_name,wa_number,consumable_cycle_days\n\
               Ani,0821,10\n\
               Bayu,0822,x\n\
               Citra,0811,20\n\
               Dodi,0821,30\n\
               Eka,0825,40\n";
    let job = app.upload(&sub, "customers", "?mode=insert", csv).await;
    assert_eq!(job["state"], "failed", "{job}");
    assert_eq!(job["counts"]["errors"], 3, "{job}");
    let id = job["id"].as_str().unwrap();
    app.sql("DELETE FROM ig_blob_chunks").await;

    let fixes = json!({"fixes": [
        {"row": 3, "column": "consumable_cycle_days", "value": "5"},
        {"row": 4, "column": "wa_number", "value": "0823"},
        {"row": 2, "column": "wa_number", "value": "0820"},
        {"row": 6, "column": "wa_number", "value": "0821"},
    ]});
    let second = revised(&app, &sub, id, fixes).await;
    assert_eq!(second["state"], "failed", "{second}");
    assert_eq!(second["counts"]["errors"], 1, "{second}");
    assert_eq!(second["counts"]["insert"], 4, "{second}");
    let second_id = second["id"].as_str().unwrap();
    let errors = app
        .get_json(&sub, &format!("/api/jobs/{second_id}/errors"))
        .await;
    assert_eq!(errors["total"], 1, "{errors}");
    let e = &errors["errors"][0];
    assert_eq!(
        (e["row"].as_i64(), e["code"].as_str()),
        (Some(6), Some("duplicate_in_file"))
    );
    assert!(
        e["message"].as_str().unwrap().contains("repeats row 5"),
        "{e}"
    );
    let gone = app.get(&sub, &format!("/api/jobs/{id}/preview")).await;
    let p = problem(gone, StatusCode::GONE, "revised").await;
    assert!(p["detail"].as_str().unwrap().contains(second_id), "{p}");
    let old_errors = app.get_json(&sub, &format!("/api/jobs/{id}/errors")).await;
    assert_eq!(old_errors["total"], 3, "the revised job keeps its list");

    let third = revised(&app, &sub, second_id, json!({"exclude": [6]})).await;
    assert_eq!(third["state"], "awaiting_approval", "{third}");
    let c = &third["counts"];
    assert_eq!(
        (
            c["rows"].as_i64(),
            c["valid"].as_i64(),
            c["excluded"].as_i64(),
            c["insert"].as_i64()
        ),
        (Some(5), Some(4), Some(1), Some(4)),
        "{third}"
    );
    let third_id = third["id"].as_str().unwrap();
    let preview = app
        .get_json(&apr, &format!("/api/jobs/{third_id}/preview"))
        .await;
    let fixed: Vec<&Value> = preview["rows"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| &r["fixed"])
        .collect();
    assert_eq!(
        fixed[0],
        &json!({"wa_number": {"was": "0821"}}),
        "{preview}"
    );
    assert_eq!(fixed[1], &json!({"consumable_cycle_days": {"was": "x"}}));
    let done = app.act_ok(&apr, third_id, "approve").await;
    assert_eq!(done["state"], "committed", "{done}");
    let rows = app
        .sql("SELECT wa_number FROM uc_scrm_customers ORDER BY wa_number")
        .await;
    let got: Vec<&str> = rows.iter().map(|r| r[0].as_deref().unwrap()).collect();
    assert_eq!(got, ["0811", "0820", "0821", "0822", "0823"]);
    let (ok, out) = crate::ledger::verify(&app);
    assert!(ok, "{out}");
}

/// Rows are found by the numbers a spreadsheet shows, across blank lines
/// (`rows::breaks`): a fix after two runs of blank lines reaches its row,
/// a blank line's number is no row, and a database from before the
/// breaks (a `(job, row_no)` index on the stage) gets them at start.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rows_are_found_by_their_numbers_across_blank_lines() {
    let app = spawn_app().await;
    let sub = app.submitter().await;
    // Rows 2-3, blank 4-5, row 6, blank 7, rows 8-9.
    let csv = "customer_name,wa_number,consumable_cycle_days\n\
               Ani,0821,10\n\
               Bayu,0822,x\n\
               \n\
               \n\
               Citra,0823,y\n\
               \n\
               Dodi,0824,30\n\
               Eka,0825,z\n";
    let job = app.upload(&sub, "customers", "", csv).await;
    assert_eq!(job["state"], "failed", "{job}");
    let id = job["id"].as_str().unwrap();
    let errors = app.get_json(&sub, &format!("/api/jobs/{id}/errors")).await;
    let rows: Vec<i64> = (errors["errors"].as_array().unwrap().iter())
        .map(|e| e["row"].as_i64().unwrap())
        .collect();
    assert_eq!(rows, [3, 6, 9], "{errors}");

    for blank in [4, 7, 10, 1] {
        let body = json!({"fixes": [{"row": blank, "column": "wa_number", "value": "0"}]});
        let resp = revise(&app, &sub, id, body).await;
        let p = problem(resp, StatusCode::UNPROCESSABLE_ENTITY, "invalid_parameter").await;
        assert!(
            p["detail"]
                .as_str()
                .unwrap()
                .contains(&format!("no row {blank}")),
            "{p}"
        );
    }

    // The stage as a database from before the breaks had it, with the
    // key index and the index by action over every row stages had then.
    // No MySQL database is of that time.
    if app.database.starts_with("mysql") {
        return;
    }
    app.sql("DELETE FROM ig_stage_breaks").await;
    app.sql("CREATE INDEX ig_stage_customers_row ON ig_stage_customers (job, row_no)")
        .await;
    app.sql("CREATE INDEX ig_stage_customers_nkey ON ig_stage_customers (job, nkey)")
        .await;
    app.sql("DROP INDEX ig_stage_customers_changes").await;
    app.sql("CREATE INDEX ig_stage_customers_action ON ig_stage_customers (job, action, seq)")
        .await;
    app.app.db.migrate(&app.app.catalog).await.expect("migrate");
    let indexes = [
        ("ig_stage_customers_row", "0"),
        ("ig_stage_customers_nkey", "0"),
        ("ig_stage_customers_action", "0"),
        ("ig_stage_customers_changes", "1"),
    ];
    for (name, count) in indexes {
        let index = match app.database.starts_with("sqlite") {
            true => {
                format!("SELECT CAST(COUNT(*) AS TEXT) FROM sqlite_master WHERE name = '{name}'")
            }
            false => {
                format!("SELECT CAST(COUNT(*) AS TEXT) FROM pg_class WHERE relname = '{name}'")
            }
        };
        assert_eq!(
            app.sql(&index).await[0][0].as_deref(),
            Some(count),
            "{name}"
        );
    }
    let breaks = app
        .sql("SELECT CAST(row_no AS TEXT), CAST(seq AS TEXT) FROM ig_stage_breaks ORDER BY row_no")
        .await;
    let breaks: Vec<(&str, &str)> = (breaks.iter())
        .map(|b| (b[0].as_deref().unwrap(), b[1].as_deref().unwrap()))
        .collect();
    assert_eq!(breaks, [("2", "0"), ("6", "2"), ("8", "3")]);

    let fixes = json!({"fixes": [
        {"row": 3, "column": "consumable_cycle_days", "value": "5"},
        {"row": 6, "column": "consumable_cycle_days", "value": "6"},
        {"row": 9, "column": "consumable_cycle_days", "value": "9"},
    ], "exclude": [8]});
    let second = revised(&app, &sub, id, fixes).await;
    assert_eq!(second["state"], "awaiting_approval", "{second}");
    let c = &second["counts"];
    assert_eq!(
        (
            c["rows"].as_i64(),
            c["insert"].as_i64(),
            c["excluded"].as_i64()
        ),
        (Some(5), Some(4), Some(1)),
        "{second}"
    );
    let second_id = second["id"].as_str().unwrap();
    let preview = app
        .get_json(&sub, &format!("/api/jobs/{second_id}/preview"))
        .await;
    let days: Vec<(i64, Value)> = (preview["rows"].as_array().unwrap().iter())
        .map(|r| {
            (
                r["row"].as_i64().unwrap(),
                r["values"]["consumable_cycle_days"].clone(),
            )
        })
        .collect();
    assert_eq!(
        days,
        [(2, json!(10)), (3, json!(5)), (6, json!(6)), (9, json!(9))],
        "{preview}"
    );
}

/// The mapping screen's data: each header's column and how, suggestions
/// for the rest with sample values, and a `missing_columns` problem that
/// names the best header for each missing column. A mapping people
/// confirmed in a revision ranks first the next time.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_mapping_suggests_columns_for_unmatched_headers_and_the_problem_names_them() {
    let app = spawn_app().await;
    let sub = app.submitter().await;
    let job = app.upload(&sub, "customers", "", CRM).await;
    let id = job["id"].as_str().unwrap();
    let p = &job["problem"];
    assert_eq!(p["code"], "missing_columns");
    assert_eq!(p["suggestions"]["wa_number"]["header"], "No. WA", "{p}");
    assert!(
        p["detail"]
            .as_str()
            .unwrap()
            .contains("\"No. WA\" for wa_number"),
        "{p}"
    );

    let m = app.get_json(&sub, &format!("/api/jobs/{id}/mapping")).await;
    let h = &m["headers"];
    assert_eq!(
        (
            h[0]["header"].as_str(),
            h[0]["column"].as_str(),
            h[0]["how"].as_str()
        ),
        (Some("Nama Pelanggan"), Some("customer_name"), Some("alias")),
        "{m}"
    );
    assert_eq!(h[1]["position"], 2);
    assert_eq!(h[1]["column"], Value::Null);
    assert_eq!(h[1]["how"], "none");
    assert_eq!(h[1]["suggestions"][0]["column"], "wa_number", "{m}");
    assert!(h[1]["suggestions"][0]["why"].as_str().unwrap().len() > 5);
    assert_eq!(h[1]["samples"][0], "081234567801");
    assert_eq!(h[2]["suggestions"][0]["column"], "city", "{m}");
    assert_eq!(m["missing"], json!(["wa_number"]));
    assert_eq!(m["unmatched"], json!(["No. WA", "Kota", "Catatan"]));

    let mapping = json!({"No. WA": "wa_number", "Kota": "city", "Catatan": null});
    let new = revised(
        &app,
        &sub,
        id,
        json!({"mapping": mapping, "remember_mapping": true}),
    )
    .await;
    let new_id = new["id"].as_str().unwrap();
    let saved = app.get_json(&sub, "/api/modules/customers/mappings").await;
    let first = &saved["mappings"][0];
    assert_eq!(
        first["headers"],
        json!(["Nama Pelanggan", "No. WA", "Kota", "Catatan"]),
        "{saved}"
    );
    assert_eq!(first["mapping"], mapping);
    assert!(first["id"].as_str().unwrap().starts_with("map_"));
    let url = format!(
        "/api/modules/customers/mappings/{}",
        first["id"].as_str().unwrap()
    );
    let delete = |key: String| {
        let req = app.client.delete(app.url(&url)).header("X-API-Key", key);
        async move { req.send().await.unwrap() }
    };
    problem(
        delete(sub.clone()).await,
        StatusCode::FORBIDDEN,
        "forbidden",
    )
    .await;
    assert_eq!(
        delete(app.admin.clone()).await.status(),
        StatusCode::NO_CONTENT
    );
    problem(
        delete(app.admin.clone()).await,
        StatusCode::NOT_FOUND,
        "not_found",
    )
    .await;
    let saved = app.get_json(&sub, "/api/modules/customers/mappings").await;
    assert_eq!(saved["mappings"], json!([]));
    let m = app
        .get_json(&sub, &format!("/api/jobs/{new_id}/mapping"))
        .await;
    assert_eq!(m["headers"][1]["how"], "revision");
    assert_eq!(m["headers"][1]["column"], "wa_number");
    assert_eq!(m["headers"][3]["how"], "revision", "left out on purpose");
    assert_eq!(m["missing"], json!([]));
    assert_eq!(m["unmatched"], json!([]));

    let again = app.upload(&sub, "customers", "", CRM).await;
    let again_id = again["id"].as_str().unwrap();
    let m = app
        .get_json(&sub, &format!("/api/jobs/{again_id}/mapping"))
        .await;
    let best = &m["headers"][1]["suggestions"][0];
    assert_eq!(best["column"], "wa_number");
    assert!(
        best["why"].as_str().unwrap().contains("confirmed"),
        "{best}"
    );
    let resp = app.get(&sub, "/api/jobs/job_nope/mapping").await;
    problem(resp, StatusCode::NOT_FOUND, "not_found").await;
}

/// Row warnings go with rows handed to a revision: a fix that names a
/// product the table holds clears that row's warning, the others stay.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn row_warnings_travel_with_the_rows_and_a_fix_can_clear_one() {
    let app = spawn_app().await;
    let sub = app.submitter().await;
    let apr = app.approver().await;
    let products = app
        .upload(
            &sub,
            "products",
            "",
            "sku,product_name,price_idr\nP-1,Sabun,5000\n",
        )
        .await;
    app.act_ok(&apr, products["id"].as_str().unwrap(), "approve")
        .await;
    let csv = "order_no,customer_id,sku,qty,amount_idr,order_date,status,payment_method\n\
               SO-1,C-1,P-1,1,5000,2024-03-01,paid,transfer\n\
               SO-2,C-1,P-9,x,5000,2024-03-01,paid,transfer\n\
               SO-3,C-1,P-8,2,5000,2024-03-01,paid,transfer\n";
    let job = app.upload(&sub, "orders", "", csv).await;
    assert_eq!(job["state"], "failed", "{job}");
    let id = job["id"].as_str().unwrap();
    let fix = json!({"fixes": [
        {"row": 3, "column": "qty", "value": "2"},
        {"row": 3, "column": "sku", "value": "P-1"},
    ]});
    let new = revised(&app, &sub, id, fix).await;
    assert_eq!(new["state"], "awaiting_approval", "{new}");
    assert_eq!(new["counts"]["warnings"], 1, "{new}");
    let new_id = new["id"].as_str().unwrap();
    let warned = app
        .get_json(&sub, &format!("/api/jobs/{new_id}/preview?warnings=only"))
        .await;
    assert_eq!(warned["total"], 1, "{warned}");
    assert_eq!(warned["rows"][0]["row"], 4);
    assert_eq!(warned["rows"][0]["warnings"][0]["code"], "reference");
    let page = app
        .get_json(&sub, &format!("/api/jobs/{new_id}/preview"))
        .await;
    assert_eq!(page["rows"][1]["warnings"], json!([]), "{page}");
    assert_eq!(page["rows"][1]["fixed"]["sku"]["was"], "P-9");
}

/// A mapping remembered by a revision is applied to the next upload with
/// the same set of headers (in any order), says so in a warning, and
/// shows `how: "saved"`; `?mapping=none` reads the headers as they are,
/// `?mapping=map_…` names one for other headers, a revision of such an
/// upload inherits it, and deleting it changes no job that used it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_saved_mapping_reads_the_next_upload_with_the_same_headers() {
    let app = spawn_app().await;
    let sub = app.submitter().await;
    let first = app.upload(&sub, "customers", "", CRM).await;
    let mapping = json!({"No. WA": "wa_number", "Kota": "city", "Catatan": null});
    revised(
        &app,
        &sub,
        first["id"].as_str().unwrap(),
        json!({"mapping": mapping, "remember_mapping": true}),
    )
    .await;
    let saved = app.get_json(&sub, "/api/modules/customers/mappings").await;
    let map_id = saved["mappings"][0]["id"].as_str().unwrap().to_string();

    // The same headers in another order, and other people.
    let reordered = "Kota,Catatan,No. WA,Nama Pelanggan\n\
        Bogor,,081234567811,Rina Wati\n\
        Depok,baru,081234567812,Agus Salim\n";
    let job = app.upload(&sub, "customers", "", reordered).await;
    assert_eq!(job["state"], "awaiting_approval", "{job}");
    assert_eq!(job["mapping_applied"]["id"], map_id.as_str(), "{job}");
    assert_eq!(job["mapping_applied"]["mapping"], mapping);
    let warning = &job["warnings"][0];
    assert_eq!(warning["code"], "mapping_applied", "{job}");
    assert_eq!(warning["mapping"], map_id.as_str());
    let message = warning["message"].as_str().unwrap();
    assert!(
        message.contains(&map_id) && message.contains("\"No. WA\" → wa_number"),
        "{message}"
    );
    let id = job["id"].as_str().unwrap();
    let m = app.get_json(&sub, &format!("/api/jobs/{id}/mapping")).await;
    let how: Vec<(&str, &str)> = (m["headers"].as_array().unwrap().iter())
        .map(|h| (h["header"].as_str().unwrap(), h["how"].as_str().unwrap()))
        .collect();
    assert_eq!(
        how,
        [
            ("Kota", "saved"),
            ("Catatan", "saved"),
            ("No. WA", "saved"),
            ("Nama Pelanggan", "alias")
        ],
        "{m}"
    );
    let preview = app.get_json(&sub, &format!("/api/jobs/{id}/preview")).await;
    assert_eq!(preview["rows"][0]["values"]["city"], "Bogor", "{preview}");

    // A revision of it inherits the saved mapping and adds to it.
    let rev = revised(&app, &sub, id, json!({"exclude": [3]})).await;
    assert_eq!(rev["revision"]["mapping"], mapping, "{rev}");
    assert!(rev.get("mapping_applied").is_none(), "{rev}");
    assert_eq!(rev["counts"]["excluded"], 1, "{rev}");
    assert_eq!(
        rev["warnings"],
        json!([]),
        "the revision shows its mapping itself"
    );

    let none = app
        .upload(&sub, "customers", "?mapping=none", reordered)
        .await;
    assert_eq!(none["state"], "invalid", "{none}");
    assert_eq!(none["problem"]["code"], "missing_columns");
    assert!(none.get("mapping_applied").is_none());

    // Named explicitly, it reads a file with one more column.
    let wider = "Nama Pelanggan,No. WA,Kota,Catatan,Sumber\n\
        Rudi Hartono,081234567821,Solo,,toko\n";
    let named = app
        .upload(&sub, "customers", &format!("?mapping={map_id}"), wider)
        .await;
    assert_eq!(named["state"], "awaiting_approval", "{named}");
    assert_eq!(named["mapping_applied"]["id"], map_id.as_str());
    let unsaved = app.upload(&sub, "customers", "", wider).await;
    assert_eq!(unsaved["state"], "invalid", "other headers: {unsaved}");

    for query in ["?mapping=map_01NOSUCHMAPPING", "?mapping=everything"] {
        let jobs_before = app.count("ig_jobs").await;
        let resp = app
            .upload_raw(&sub, "customers", query, "text/csv", reordered.to_string())
            .await;
        let p = problem(resp, StatusCode::UNPROCESSABLE_ENTITY, "invalid_parameter").await;
        assert_eq!(p["parameter"], "mapping", "{query}: {p}");
        assert_eq!(app.count("ig_jobs").await, jobs_before);
    }

    let url = app.url(&format!("/api/modules/customers/mappings/{map_id}"));
    let resp = app
        .client
        .delete(url)
        .header("X-API-Key", &app.admin)
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), StatusCode::NO_CONTENT);
    let kept = app.get_json(&sub, &format!("/api/jobs/{id}")).await;
    assert_eq!(kept["mapping_applied"]["id"], map_id.as_str());
    let after = app.upload(&sub, "customers", "", reordered).await;
    assert_eq!(after["state"], "invalid", "{after}");
}
