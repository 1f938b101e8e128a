//! PostgreSQL keeps exactly what SQLite keeps: the same file gives the same
//! preview, the same stored values and the same rollback on both backends,
//! for the values where they used to differ: timestamps finer than a
//! microsecond, a timestamp that rounds past year 9999. Each test uploads,
//! previews, approves with a second key, commits, re-uploads with
//! `mode=upsert` and rolls back, and reads the table itself.

use serde_json::Value as Json;

use crate::common::*;

/// `logistics`: a text key, a `numeric` and a `timestamptz` column.
const TABLE: &str = "uc_logistics_shipments";

fn postgres(app: &TestApp) -> bool {
    app.database.starts_with("postgres")
}

/// Requests the rollback of a committed job, approves it with the second
/// key and checks the job rolled back.
async fn rolled_back(app: &TestApp, sub: &str, apr: &str, id: &str) {
    app.act_ok(sub, id, "rollback").await;
    let job = app.act_ok(apr, id, "approve").await;
    assert_eq!(job["state"], "rolled_back", "{job}");
}

/// The preview's rows, in file order.
async fn preview(app: &TestApp, key: &str, id: &str) -> Vec<Json> {
    let page = app
        .get_json(key, &format!("/api/jobs/{id}/preview?limit=100"))
        .await;
    page["rows"].as_array().expect("rows").clone()
}

/// One column of every preview row: `values` or `before`.
fn cells(rows: &[Json], image: &str, column: &str) -> Vec<Json> {
    rows.iter().map(|r| r[image][column].clone()).collect()
}

/// The table's text of one column, by tracking number: what each database
/// itself holds.
async fn stored(app: &TestApp, column: &str) -> Vec<Option<String>> {
    let rows = app
        .sql(&format!(
            "SELECT CAST({column} AS TEXT) FROM {TABLE} ORDER BY tracking_no"
        ))
        .await;
    rows.into_iter().map(|mut r| r.remove(0)).collect()
}

/// The stored instants of `shipped_at`, RFC 3339 in UTC as the API writes
/// them: PostgreSQL's text (`2026-03-01 01:30:00.123457+00`) and SQLite's
/// (`2026-03-01T01:30:00.123457Z`) name the same instant alike.
async fn stored_instants(app: &TestApp) -> Vec<String> {
    stored(app, "shipped_at")
        .await
        .into_iter()
        .map(|text| {
            let text = text.expect("a timestamp");
            let t = chrono::DateTime::parse_from_rfc3339(&text)
                .or_else(|_| chrono::DateTime::parse_from_str(&text, "%Y-%m-%d %H:%M:%S%.f%#z"))
                .unwrap_or_else(|e| panic!("{text}: {e}"));
            t.to_utc()
                .to_rfc3339_opts(chrono::SecondsFormat::AutoSi, true)
        })
        .collect()
}

fn texts(values: &[&str]) -> Vec<Json> {
    values.iter().map(|v| Json::from(*v)).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sub_microsecond_timestamp_is_stored_as_previewed() {
    let app = spawn_app().await;
    let (sub, apr) = (app.submitter().await, app.approver().await);
    // Nanoseconds; two ties, which go to the even microsecond as
    // PostgreSQL rounds.
    let csv = "tracking_no,order_no,courier,shipped_at\n\
TRK-1,ORD-1,JNE,2026-03-01T08:30:00.123456789+07:00\n\
TRK-2,ORD-2,JNE,2026-03-01T08:30:00.0000005+07:00\n\
TRK-3,ORD-3,JNE,2026-03-01T08:30:00.0000015+07:00\n";
    let expected = [
        "2026-03-01T01:30:00.123457Z",
        "2026-03-01T01:30:00Z",
        "2026-03-01T01:30:00.000002Z",
    ];
    let job = app.upload(&sub, "logistics", "", csv).await;
    assert_eq!(job["counts"]["insert"], 3, "{job}");
    let id = job["id"].as_str().unwrap();
    let rows = preview(&app, &sub, id).await;
    assert_eq!(cells(&rows, "values", "shipped_at"), texts(&expected));
    let job = app.act_ok(&apr, id, "approve").await;
    assert_eq!(job["state"], "committed", "{job}");
    assert_eq!(stored_instants(&app).await, expected, "stored as previewed");
    let first = stored(&app, "shipped_at").await;

    // The same file again changes nothing.
    let job = app.upload(&sub, "logistics", "?mode=upsert", csv).await;
    assert_eq!(job["counts"]["unchanged"], 3, "{job}");
    assert_eq!(job["counts"]["update"], 0, "{job}");

    // A real change: its before is what is stored, its value rounds (up
    // into the next second).
    let csv = "tracking_no,order_no,courier,shipped_at\n\
TRK-1,ORD-1,JNE,2026-03-02T08:30:00.9999996+07:00\n";
    let job = app.upload(&sub, "logistics", "?mode=upsert", csv).await;
    assert_eq!(job["counts"]["update"], 1, "{job}");
    let id = job["id"].as_str().unwrap();
    let rows = preview(&app, &sub, id).await;
    assert_eq!(rows[0]["before"]["shipped_at"], expected[0]);
    assert_eq!(rows[0]["values"]["shipped_at"], "2026-03-02T01:30:01Z");
    let job = app.act_ok(&apr, id, "approve").await;
    assert_eq!(job["state"], "committed", "{job}");
    assert_eq!(stored_instants(&app).await[0], "2026-03-02T01:30:01Z");
    rolled_back(&app, &sub, &apr, id).await;
    assert_eq!(stored(&app, "shipped_at").await, first, "exactly as before");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_timestamp_rounded_past_year_9999_is_out_of_range() {
    let app = spawn_app().await;
    let (sub, apr) = (app.submitter().await, app.approver().await);
    let csv = "tracking_no,order_no,courier,shipped_at\n\
TRK-1,ORD-1,JNE,9999-12-31T23:59:59.9999999Z\n\
TRK-2,ORD-2,JNE,9999-12-31T23:59:59.9999994Z\n";
    let job = app.upload(&sub, "logistics", "", csv).await;
    assert_eq!(job["state"], "failed", "{job}");
    let id = job["id"].as_str().unwrap();
    let errors = app.get_json(&sub, &format!("/api/jobs/{id}/errors")).await;
    assert_eq!(errors["total"], 1, "{errors}");
    let error = &errors["errors"][0];
    assert_eq!(
        (&error["row"], &error["column"], &error["code"]),
        (
            &Json::from(2),
            &Json::from("shipped_at"),
            &Json::from("out_of_range")
        ),
        "{errors}"
    );
    assert!(
        error["message"]
            .as_str()
            .is_some_and(|m| m.contains("+10000-01-01T00:00:00Z")),
        "the message names what it rounds to: {errors}"
    );

    // The row that stays in year 9999 goes to the gate and is stored.
    let job = app.upload(&sub, "logistics", "?on_error=skip", csv).await;
    assert_eq!(job["counts"]["insert"], 1, "{job}");
    let id = job["id"].as_str().unwrap();
    let rows = preview(&app, &sub, id).await;
    assert_eq!(
        rows[1]["values"]["shipped_at"],
        "9999-12-31T23:59:59.999999Z"
    );
    let job = app.act_ok(&apr, id, "approve").await;
    assert_eq!(job["state"], "committed", "{job}");
    assert_eq!(stored_instants(&app).await, ["9999-12-31T23:59:59.999999Z"]);

    // A moment past year 9999 already in the table (written by another
    // tool, or by this service before it refused such values): PostgreSQL
    // holds the instant, SQLite the text ISO 8601 gives it. An upsert over
    // it validates (its before-image reaches PostgreSQL's COPY in a form
    // PostgreSQL parses), shows it, and the rollback puts it back.
    let far = if postgres(&app) {
        "'10000-01-01 00:00:00+00'"
    } else {
        "'+10000-01-01T00:00:00Z'"
    };
    app.sql(&format!(
        "UPDATE {TABLE} SET shipped_at = {far} WHERE tracking_no = 'TRK-2'"
    ))
    .await;
    let held = stored(&app, "shipped_at").await;
    let csv = "tracking_no,order_no,courier,shipped_at\nTRK-2,ORD-2,JNE,2026-01-01T00:00:00Z\n";
    let job = app.upload(&sub, "logistics", "?mode=upsert", csv).await;
    assert_eq!(job["state"], "awaiting_approval", "{job}");
    assert_eq!(job["counts"]["update"], 1, "{job}");
    let id = job["id"].as_str().unwrap();
    let rows = preview(&app, &sub, id).await;
    assert_eq!(rows[0]["before"]["shipped_at"], "+10000-01-01T00:00:00Z");
    let job = app.act_ok(&apr, id, "approve").await;
    assert_eq!(job["state"], "committed", "{job}");
    assert_eq!(stored_instants(&app).await, ["2026-01-01T00:00:00Z"]);
    rolled_back(&app, &sub, &apr, id).await;
    assert_eq!(stored(&app, "shipped_at").await, held, "exactly as before");
}
