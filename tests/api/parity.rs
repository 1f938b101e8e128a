//! PostgreSQL keeps exactly what SQLite keeps: the same file gives the same
//! preview, the same stored values and the same rollback on both backends,
//! for the values where the two can differ: timestamps finer than a
//! microsecond, a timestamp that rounds past year 9999, zero numerics with
//! a scale, and values in a table that no reader of the service decodes
//! (written there by another tool). Each test uploads, previews, approves
//! with a second key, commits, re-uploads with `mode=upsert` and rolls
//! back, and reads the table itself.

use serde_json::Value as Json;

use crate::common::*;

/// `logistics`: a text key, a `numeric` and a `timestamptz` column.
const TABLE: &str = "uc_logistics_shipments";

fn postgres(app: &TestApp) -> bool {
    app.database.starts_with("postgres")
}

/// Uploads, approves with the second key and checks the job committed.
async fn committed(app: &TestApp, sub: &str, apr: &str, query: &str, csv: &str) -> String {
    let job = app.upload(sub, "logistics", query, csv).await;
    let id = job["id"].as_str().expect("id").to_string();
    let job = app.act_ok(apr, &id, "approve").await;
    assert_eq!(job["state"], "committed", "{job}");
    id
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
/// them: PostgreSQL's text (`2026-03-01 01:30:00.123457+00`), SQLite's
/// (`2026-03-01T01:30:00.123457Z`) and MySQL's `DATETIME(6)` in UTC
/// (`2026-03-01 01:30:00.123457`) name the same instant alike.
async fn stored_instants(app: &TestApp) -> Vec<String> {
    stored(app, "shipped_at")
        .await
        .into_iter()
        .map(|text| {
            let text = text.expect("a timestamp");
            let t = chrono::DateTime::parse_from_rfc3339(&text)
                .or_else(|_| chrono::DateTime::parse_from_str(&text, "%Y-%m-%d %H:%M:%S%.f%#z"))
                .map(|t| t.to_utc())
                .or_else(|_| {
                    chrono::NaiveDateTime::parse_from_str(&text, "%Y-%m-%d %H:%M:%S%.f")
                        .map(|t| t.and_utc())
                })
                .unwrap_or_else(|e| panic!("{text}: {e}"));
            t.to_rfc3339_opts(chrono::SecondsFormat::AutoSi, true)
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
    if crate::common::backend() == "mysql" {
        // `DATETIME` ends in year 9999: no tool can leave a later moment.
        return;
    }

    // A moment past year 9999 already in the table (written by another
    // tool): PostgreSQL holds the instant, SQLite the text ISO 8601 gives
    // it. An upsert over it validates (its before-image reaches
    // PostgreSQL's COPY in a form PostgreSQL parses), shows it, and the
    // rollback puts it back.
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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_numeric_is_kept_at_its_columns_scale() {
    // `weight_kg` keeps three places (the catalog's `scale`): every value
    // is stored with exactly three, on each database alike.
    let app = spawn_app().await;
    let (sub, apr) = (app.submitter().await, app.approver().await);
    let csv = "tracking_no,order_no,courier,weight_kg\n\
TRK-1,ORD-1,JNE,0.00\n\
TRK-2,ORD-2,JNE,0\n\
TRK-3,ORD-3,JNE,10.50\n";
    let job = app.upload(&sub, "logistics", "", csv).await;
    let id = job["id"].as_str().unwrap();
    let rows = preview(&app, &sub, id).await;
    assert_eq!(
        cells(&rows, "values", "weight_kg"),
        texts(&["0.000", "0.000", "10.500"])
    );
    let job = app.act_ok(&apr, id, "approve").await;
    assert_eq!(job["state"], "committed", "{job}");
    let s = |v: &str| Some(v.to_string());
    let first = vec![s("0.000"), s("0.000"), s("10.500")];
    assert_eq!(stored(&app, "weight_kg").await, first);

    let job = app.upload(&sub, "logistics", "?mode=upsert", csv).await;
    assert_eq!(job["counts"]["unchanged"], 3, "{job}");

    // `0.0` over `0.000` is the same number (unchanged); the others change.
    let csv = "tracking_no,order_no,courier,weight_kg\n\
TRK-1,ORD-1,JNE,1.25\n\
TRK-2,ORD-2,JNE,0.0\n\
TRK-3,ORD-3,JNE,0.000\n";
    let job = app.upload(&sub, "logistics", "?mode=upsert", csv).await;
    assert_eq!(job["counts"]["update"], 2, "{job}");
    assert_eq!(job["counts"]["unchanged"], 1, "{job}");
    let id = job["id"].as_str().unwrap();
    let rows = preview(&app, &sub, id).await;
    assert_eq!(
        cells(&rows, "before", "weight_kg"),
        [Json::from("0.000"), Json::Null, Json::from("10.500")]
    );
    assert_eq!(
        cells(&rows, "values", "weight_kg"),
        texts(&["1.250", "0.000", "0.000"])
    );
    let job = app.act_ok(&apr, id, "approve").await;
    assert_eq!(job["state"], "committed", "{job}");
    assert_eq!(
        stored(&app, "weight_kg").await,
        [s("1.250"), s("0.000"), s("0.000")]
    );
    rolled_back(&app, &sub, &apr, id).await;
    assert_eq!(
        stored(&app, "weight_kg").await,
        first,
        "the same digits back"
    );

    // A value that needs a fourth place is refused, never rounded.
    let csv = "tracking_no,order_no,courier,weight_kg\nTRK-4,ORD-4,JNE,1.2345\n";
    let job = app.upload(&sub, "logistics", "", csv).await;
    let id = job["id"].as_str().unwrap();
    let report = app.get_json(&sub, &format!("/api/jobs/{id}/errors")).await;
    let error = &report["errors"][0];
    assert_eq!(error["code"], "out_of_range", "{report}");
    assert_eq!(error["column"], "weight_kg", "{report}");
    let message = error["message"].as_str().unwrap();
    assert!(message.contains("keeps 3"), "{report}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_value_no_reader_decodes_is_shown_compared_and_restored() {
    if crate::common::mysql_server().is_some() {
        // MySQL holds no NaN, infinity or number past its column's
        // `DECIMAL(56, 28)`; what it holds past a `Decimal`'s digits reads
        // back as its text (`store::mysql::values`' unit test).
        return;
    }
    // `weight_kg` without its scale, so that a file can give the 28-digit
    // rounding of a 30-digit value.
    let dir = tempfile::tempdir().unwrap();
    let catalog = dir.path().join("catalog.toml");
    let unscaled = include_str!("../../src/catalog/modules.toml").replace("scale = 3\n", "");
    std::fs::write(&catalog, unscaled).unwrap();
    let app = spawn_app_with(|s| s.catalog = Some(catalog.clone())).await;
    let (sub, apr) = (app.submitter().await, app.approver().await);
    let csv = "tracking_no,order_no,courier,weight_kg,shipped_at\n\
TRK-1,ORD-1,JNE,1.00,2026-01-01T00:00:00Z\n\
TRK-2,ORD-2,JNE,1.00,2026-01-01T00:00:00Z\n\
TRK-3,ORD-3,JNE,1.00,2026-01-01T00:00:00Z\n\
TRK-4,ORD-4,JNE,1.00,2026-01-01T00:00:00Z\n\
TRK-5,ORD-5,JNE,1.00,2026-01-01T00:00:00Z\n";
    committed(&app, &sub, &apr, "", csv).await;

    // Another tool writes values that are no rust_decimal or chrono value:
    // NaN, a number past 28 digits either way, infinities. On SQLite the
    // same values as that tool leaves them in these TEXT columns: a REAL
    // 1e40 is kept as the text `1.0e+40`, and SQLite has no NaN (a REAL
    // NaN is stored as NULL), so a tool writes the text `NaN`.
    let pg = postgres(&app);
    let weights = [
        ("TRK-1", "'NaN'"),
        ("TRK-2", if pg { "'1e40'" } else { "1e40" }),
        ("TRK-3", "'Infinity'"),
        ("TRK-4", "'0.123456789012345678901234567890'"),
    ];
    for (key, weight) in weights {
        app.sql(&format!(
            "UPDATE {TABLE} SET weight_kg = {weight} WHERE tracking_no = '{key}'"
        ))
        .await;
    }
    app.sql(&format!(
        "UPDATE {TABLE} SET shipped_at = 'infinity' WHERE tracking_no = 'TRK-5'"
    ))
    .await;
    let weight = stored(&app, "weight_kg").await;
    let shipped = stored(&app, "shipped_at").await;
    let big = if pg {
        "10000000000000000000000000000000000000000"
    } else {
        "1.0e+40"
    };
    let s = |v: &str| Some(v.to_string());
    assert_eq!(
        weight,
        [
            s("NaN"),
            s(big),
            s("Infinity"),
            s("0.123456789012345678901234567890"),
            s("1.00")
        ]
    );
    assert_eq!(shipped[4].as_deref(), Some("infinity"));

    // Every row changes: a number over NaN, an empty cell over 1e40, the
    // 28-digit rounding of the 30-digit value (a reader that rounded it
    // took them for the same), and a moment over infinity.
    let csv = "tracking_no,order_no,courier,weight_kg,shipped_at\n\
TRK-1,ORD-1,JNE,2.5,2026-01-01T00:00:00Z\n\
TRK-2,ORD-2,JNE,,2026-01-01T00:00:00Z\n\
TRK-3,ORD-3,JNE,3,2026-01-01T00:00:00Z\n\
TRK-4,ORD-4,JNE,0.1234567890123456789012345679,2026-01-01T00:00:00Z\n\
TRK-5,ORD-5,JNE,1.00,2026-01-02T00:00:00Z\n";
    let job = app.upload(&sub, "logistics", "?mode=upsert", csv).await;
    assert_eq!(job["counts"]["update"], 5, "{job}");
    let id = job["id"].as_str().unwrap();
    let rows = preview(&app, &sub, id).await;
    // The preview shows each as the database holds it.
    let shown: Vec<Option<String>> = cells(&rows, "before", "weight_kg")
        .iter()
        .map(|v| v.as_str().map(String::from))
        .collect();
    assert_eq!(shown, weight);
    assert_eq!(rows[4]["before"]["shipped_at"], "infinity");
    assert_eq!(rows[1]["values"]["weight_kg"], Json::Null);
    let job = app.act_ok(&apr, id, "approve").await;
    assert_eq!(job["state"], "committed", "{job}");
    assert_eq!(
        stored(&app, "weight_kg").await,
        [
            s("2.5"),
            None,
            s("3"),
            s("0.1234567890123456789012345679"),
            s("1.00")
        ]
    );
    rolled_back(&app, &sub, &apr, id).await;
    assert_eq!(stored(&app, "weight_kg").await, weight, "restored exactly");
    assert_eq!(
        stored(&app, "shipped_at").await,
        shipped,
        "restored exactly"
    );
}

/// The PostgreSQL reader against PostgreSQL's own text of the same values,
/// over the edges of each type: what the preview shows is what the
/// database holds, and what goes back to it is read as the same value.
/// PostgreSQL only: SQLite keeps these columns as text, which its reader
/// takes as it is.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgresql_values_read_back_as_postgresql_writes_them() {
    use importgate::catalog::ColumnType;
    use importgate::store::postgres::values::pg_input;
    use importgate::store::values::DecodeValue;
    let app = spawn_app().await;
    if !postgres(&app) {
        return;
    }
    let numerics = [
        "0",
        "0.00",
        "-0.00",
        "1",
        "-1",
        "12.345",
        "-12.3450",
        "0.0001",
        "0.00012",
        "9999",
        "10000",
        "10000.0001",
        "123456789.987654321",
        "79228162514264337593543950335",
        "79228162514264337593543950336",
        "-0.123456789012345678901234567890",
        "1e40",
        "1e-40",
        "NaN",
        "Infinity",
        "-Infinity",
    ];
    let dates = [
        "2024-02-29",
        "0001-01-01",
        "0044-03-15 BC",
        "4714-11-24 BC",
        "9999-12-31",
        "10000-01-01",
        "262143-12-31",
        "262144-01-01",
        "5874897-12-31",
        "infinity",
        "-infinity",
    ];
    let moments = [
        "2026-03-01 01:30:00.123457+00",
        "2000-01-01 00:00:00+00",
        "1900-06-30 12:00:00.5+00",
        "0044-03-15 12:00:00.000001+00 BC",
        "10000-01-01 00:00:00+00",
        "262144-01-01 00:00:00+00",
        "294276-12-31 23:59:59.999999+00",
        "infinity",
        "-infinity",
    ];
    for (ty, name, values) in [
        (ColumnType::Numeric, "numeric", &numerics[..]),
        (ColumnType::Date, "date", &dates[..]),
        (ColumnType::Timestamptz, "timestamptz", &moments[..]),
    ] {
        let sql = format!("SELECT v::{name}, v::{name}::text FROM unnest($1::text[]) v");
        let mut pooled = app.app.db.acquire().await.expect("conn");
        let importgate::store::Conn::Postgres(c) = pooled.conn() else {
            unreachable!("PostgreSQL")
        };
        let rows = sqlx::query(&sql)
            .bind(values.iter().map(|v| v.to_string()).collect::<Vec<_>>())
            .fetch_all(&mut *c)
            .await
            .expect(&sql);
        for row in rows {
            let text: String = sqlx::Row::get(&row, 1);
            let value = row.value(0, ty).expect("decodes").expect("not null");
            assert_eq!(pg_input(&value), text, "{name} {value:?}");
        }
    }
    // A column of another type is an error, not bytes read as this type
    // (eight bytes of text would make a timestamp).
    let mut pooled = app.app.db.acquire().await.expect("conn");
    let importgate::store::Conn::Postgres(c) = pooled.conn() else {
        unreachable!("PostgreSQL")
    };
    let row = sqlx::query("SELECT '20240101'::text")
        .fetch_one(&mut *c)
        .await
        .expect("select");
    assert!(row.value(0, ColumnType::Timestamptz).is_err());
}
