//! Updates through the gate, end to end on every column type: the commit's
//! re-check of what the preview showed, its change log, and the rollback
//! that puts every updated row back exactly. The checks run in the database
//! and are confirmed by the service, so a value that is only spelled
//! differently (`4.5` and `4.50`) is never a conflict.

use crate::common::*;

const TABLE: &str = "uc_technicians";
const COLUMNS: &str = "tech_name, phone, city, skills, level, jobs_done, rating, active";

/// Three technicians with every column set.
const TECHNICIANS: &str = "tech_name,phone,city,skills,level,jobs_done,rating,active\n\
Andi,0812000001,Jakarta,AC,senior,10,4.50,true\n\
Budi,0812000002,Bandung,TV,junior,3,3.75,false\n\
Citra,0812000003,Medan,Fridge,senior,7,4.00,true\n";

/// Every column of the table as text, in key order.
async fn snapshot(app: &TestApp) -> Vec<Vec<Option<String>>> {
    let cols: Vec<String> = COLUMNS
        .split(", ")
        .map(|c| format!("CAST({c} AS TEXT)"))
        .collect();
    app.sql(&format!(
        "SELECT {} FROM {TABLE} ORDER BY phone",
        cols.join(", ")
    ))
    .await
}

/// Changes a technician's row behind the service's back.
async fn set(app: &TestApp, phone: &str, assignment: &str) {
    app.sql(&format!(
        "UPDATE {TABLE} SET {assignment} WHERE phone = '{phone}'"
    ))
    .await;
}

/// The row numbers a refusal lists, in its order.
fn problem_rows(job: &serde_json::Value) -> Vec<i64> {
    job["problem"]["rows"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["row"].as_i64().unwrap())
        .collect()
}

/// A table holding [`TECHNICIANS`], committed through the gate.
async fn seeded() -> (TestApp, String, String) {
    let app = spawn_app().await;
    let (sub, apr) = (app.submitter().await, app.approver().await);
    let job = app.upload(&sub, "technicians", "", TECHNICIANS).await;
    let job = app
        .act_ok(&apr, job["id"].as_str().unwrap(), "approve")
        .await;
    assert_eq!(job["state"], "committed", "{job}");
    (app, sub, apr)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_upsert_and_its_rollback_restore_every_type_exactly() {
    let (app, sub, apr) = seeded().await;
    let original = snapshot(&app).await;
    // Some columns only: the others keep their values. Andi changes,
    // Budi is unchanged, Dewi is new.
    let csv = "phone,tech_name,rating,active,jobs_done\n\
0812000001,Andi,4.8,false,11\n\
0812000002,Budi,3.75,false,3\n\
0812000004,Dewi,5,true,1\n";
    let job = app.upload(&sub, "technicians", "?mode=upsert", csv).await;
    assert_eq!(job["counts"]["update"], 1, "{job}");
    assert_eq!(job["counts"]["unchanged"], 1, "{job}");
    assert_eq!(job["counts"]["insert"], 1, "{job}");
    let id = job["id"].as_str().unwrap();
    let job = app.act_ok(&apr, id, "approve").await;
    assert_eq!(job["state"], "committed", "{job}");
    let andi = app
        .sql(&format!(
            "SELECT city, level, CAST(jobs_done AS TEXT), CAST(rating AS TEXT) FROM {TABLE} \
             WHERE phone = '0812000001'"
        ))
        .await;
    let s = |v: &str| Some(v.to_string());
    assert_eq!(
        andi,
        vec![vec![s("Jakarta"), s("senior"), s("11"), s("4.80")]]
    );
    assert_eq!(app.count(TABLE).await, 4);

    app.act_ok(&sub, id, "rollback").await;
    let job = app.act_ok(&apr, id, "approve").await;
    assert_eq!(job["state"], "rolled_back", "{job}");
    assert_eq!(snapshot(&app).await, original, "every column as it was");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_value_spelled_differently_is_no_conflict() {
    let (app, sub, apr) = seeded().await;
    let csv = "phone,tech_name,rating\n0812000001,Andi,4.8\n0812000002,Budi,3.75\n";
    let job = app.upload(&sub, "technicians", "?mode=update", csv).await;
    assert_eq!(job["counts"]["update"], 1, "{job}");
    assert_eq!(job["counts"]["unchanged"], 1, "{job}");
    let id = job["id"].as_str().unwrap();
    // Between preview and approval both rows are rewritten with the same
    // numbers spelled otherwise (SQLite keeps decimals as text, so its
    // database sees a difference the service must not).
    set(&app, "0812000001", "rating = '4.5'").await;
    set(&app, "0812000002", "rating = '3.750'").await;
    let job = app.act_ok(&apr, id, "approve").await;
    assert_eq!(job["state"], "committed", "{job}");
    let before_rollback = snapshot(&app).await;
    assert_eq!(before_rollback[0][6].as_deref(), Some("4.80"));

    // After the commit Andi's rating is rewritten as the same number, and
    // the row (with its boolean) is checked against the change log.
    set(&app, "0812000001", "rating = '4.80'").await;
    app.act_ok(&sub, id, "rollback").await;
    let job = app.act_ok(&apr, id, "approve").await;
    assert_eq!(job["state"], "rolled_back", "{job}");
    let rows = app
        .sql(&format!(
            "SELECT CAST(rating AS TEXT) FROM {TABLE} WHERE phone = '0812000001'"
        ))
        .await;
    let rating: f64 = rows[0][0].as_deref().unwrap().parse().unwrap();
    assert_eq!(rating, 4.5, "the value the commit found is back");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_changed_value_is_a_conflict_at_commit_and_at_rollback() {
    let (app, sub, apr) = seeded().await;
    let csv = "phone,tech_name,level,active\n\
0812000001,Andi,lead,true\n\
0812000002,Budi,junior,false\n\
0812000003,Citra,lead,false\n";
    // Commit: a previewed update and a previewed unchanged row both changed.
    let job = app.upload(&sub, "technicians", "?mode=update", csv).await;
    assert_eq!(job["counts"]["update"], 2, "{job}");
    assert_eq!(job["counts"]["unchanged"], 1, "{job}");
    let id = job["id"].as_str().unwrap();
    let off = if app.database.starts_with("sqlite") {
        "active = 0"
    } else {
        "active = false"
    };
    set(&app, "0812000003", off).await;
    set(&app, "0812000002", "level = 'trainee'").await;
    let job = app.act_ok(&apr, id, "approve").await;
    assert_eq!(job["state"], "failed", "{job}");
    assert_eq!(job["problem"]["code"], "stale_preview");
    let rows = problem_rows(&job);
    assert_eq!(rows, vec![4, 3], "updates, then unchanged rows: {job}");

    // Rollback: an updated row edited in a column the file gave, another
    // deleted since the commit. Budi's city, which the file did not give,
    // is edited too: the rollback neither restores nor minds it.
    let job = app.upload(&sub, "technicians", "?mode=update", csv).await;
    let id = job["id"].as_str().unwrap();
    let job = app.act_ok(&apr, id, "approve").await;
    assert_eq!(job["state"], "committed", "{job}");
    let mut committed = snapshot(&app).await;
    set(&app, "0812000001", "level = 'trainee'").await;
    set(&app, "0812000002", "city = 'Depok'").await;
    committed[1][2] = Some("Depok".into());
    app.sql(&format!("DELETE FROM {TABLE} WHERE phone = '0812000003'"))
        .await;
    app.act_ok(&sub, id, "rollback").await;
    let job = app.act_ok(&apr, id, "approve").await;
    assert_eq!(job["state"], "committed", "{job}");
    assert_eq!(job["problem"]["code"], "rollback_conflict");
    let reasons: Vec<(i64, String)> = job["problem"]["rows"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            (
                r["row"].as_i64().unwrap(),
                r["reason"].as_str().unwrap().into(),
            )
        })
        .collect();
    assert_eq!(
        reasons,
        vec![
            (2, "the row changed since the commit".to_string()),
            (4, "the row was deleted since the commit".to_string()),
        ]
    );
    let now = snapshot(&app).await;
    assert_eq!(now.len(), 2, "nothing undone");
    assert_eq!(now[0][4].as_deref(), Some("trainee"));
    assert_eq!(now[1], committed[1], "Budi still as committed");
}

/// A module with many columns of every type: an upsert and its rollback
/// restore every column.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_wide_module_is_restored_exactly() {
    const TYPES: [&str; 6] = [
        "text",
        "integer",
        "numeric",
        "date",
        "timestamptz",
        "boolean",
    ];
    const WIDTH: usize = 90;
    let mut toml =
        String::from("[[module]]\nkey = \"wide\"\ntable = \"uc_wide\"\nnatural_key = [\"k\"]\n\n");
    toml.push_str("[[module.column]]\nname = \"k\"\ntype = \"text\"\nrequired = true\n\n");
    for i in 0..WIDTH {
        let ty = TYPES[i % TYPES.len()];
        toml.push_str(&format!(
            "[[module.column]]\nname = \"c{i}\"\ntype = \"{ty}\"\n\n"
        ));
    }
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("catalog.toml");
    std::fs::write(&path, toml).unwrap();
    let app = spawn_app_with(|s| s.catalog = Some(path.clone())).await;
    let (sub, apr) = (app.submitter().await, app.approver().await);
    let cell = |i: usize, v: usize| match TYPES[i % TYPES.len()] {
        "text" => format!("t{v}"),
        "integer" => v.to_string(),
        "numeric" => format!("{v}.50"),
        "date" => format!("2024-01-{:02}", v % 28 + 1),
        "timestamptz" => format!("2024-01-{:02}T10:00:00Z", v % 28 + 1),
        _ => v.is_multiple_of(2).to_string(),
    };
    let header: Vec<String> = (0..WIDTH).map(|i| format!("c{i}")).collect();
    let line = |key: &str, v: usize| {
        let cells: Vec<String> = (0..WIDTH).map(|i| cell(i, v + i)).collect();
        format!("{key},{}\n", cells.join(","))
    };
    let csv = format!("k,{}\n{}{}", header.join(","), line("a", 1), line("b", 2));
    let job = app.upload(&sub, "wide", "", &csv).await;
    let job = app
        .act_ok(&apr, job["id"].as_str().unwrap(), "approve")
        .await;
    assert_eq!(job["state"], "committed", "{job}");
    let all: Vec<String> = std::iter::once("k".to_string())
        .chain(header.iter().cloned())
        .map(|c| format!("CAST({c} AS TEXT)"))
        .collect();
    let select = format!("SELECT {} FROM uc_wide ORDER BY k", all.join(", "));
    let original = app.sql(&select).await;

    // Half the columns change for `a`; `b` is left alone.
    let half: Vec<String> = (0..WIDTH / 2).map(|i| format!("c{i}")).collect();
    let cells: Vec<String> = (0..WIDTH / 2).map(|i| cell(i, i + 7)).collect();
    let csv = format!("k,{}\na,{}\n", half.join(","), cells.join(","));
    let job = app.upload(&sub, "wide", "?mode=upsert", &csv).await;
    assert_eq!(job["counts"]["update"], 1, "{job}");
    let id = job["id"].as_str().unwrap();
    let job = app.act_ok(&apr, id, "approve").await;
    assert_eq!(job["state"], "committed", "{job}");
    assert_ne!(app.sql(&select).await, original);
    app.act_ok(&sub, id, "rollback").await;
    let job = app.act_ok(&apr, id, "approve").await;
    assert_eq!(job["state"], "rolled_back", "{job}");
    assert_eq!(app.sql(&select).await, original, "every column as it was");
}

/// A rollback checks the rows it inserted by deleting those that still hold
/// what was inserted: when one does not, every delete is undone.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rollback_conflict_on_inserted_and_updated_rows_undoes_nothing() {
    let (app, sub, apr) = seeded().await;
    let csv = "phone,tech_name,level\n\
0812000001,Andi,lead\n\
0812000004,Dewi,junior\n\
0812000005,Eko,junior\n\
0812000006,Fajar,senior\n";
    let job = app.upload(&sub, "technicians", "?mode=upsert", csv).await;
    assert_eq!(job["counts"]["insert"], 3, "{job}");
    let id = job["id"].as_str().unwrap();
    app.act_ok(&apr, id, "approve").await;
    // Andi (updated) and Eko (inserted) edited, Fajar (inserted) deleted.
    set(&app, "0812000001", "level = 'trainee'").await;
    set(&app, "0812000005", "level = 'lead'").await;
    app.sql(&format!("DELETE FROM {TABLE} WHERE phone = '0812000006'"))
        .await;
    let committed = snapshot(&app).await;
    app.act_ok(&sub, id, "rollback").await;
    let job = app.act_ok(&apr, id, "approve").await;
    assert_eq!(job["state"], "committed", "{job}");
    assert_eq!(job["problem"]["code"], "rollback_conflict");
    let rows = problem_rows(&job);
    assert_eq!(
        rows,
        vec![4, 5, 2],
        "inserted rows, then updated rows: {job}"
    );
    assert_eq!(
        snapshot(&app).await,
        committed,
        "nothing undone (Dewi stays)"
    );
}

/// A natural key of typed columns (a date, an integer, a number, a moment):
/// the lookup that decides insert, update or unchanged finds the table's
/// rows by every one of them, as the commit and the rollback do.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn typed_natural_keys_are_found_in_the_table() {
    let toml = "[[module]]\nkey = \"readings\"\ntable = \"uc_readings\"\n\
natural_key = [\"day\", \"meter\", \"band\", \"at\"]\n\n\
[[module.column]]\nname = \"day\"\ntype = \"date\"\nrequired = true\n\n\
[[module.column]]\nname = \"meter\"\ntype = \"integer\"\nrequired = true\n\n\
[[module.column]]\nname = \"band\"\ntype = \"numeric\"\nrequired = true\n\n\
[[module.column]]\nname = \"at\"\ntype = \"timestamptz\"\nrequired = true\n\n\
[[module.column]]\nname = \"kwh\"\ntype = \"integer\"\n";
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("catalog.toml");
    std::fs::write(&path, toml).unwrap();
    let app = spawn_app_with(|s| s.catalog = Some(path.clone())).await;
    let (sub, apr) = (app.submitter().await, app.approver().await);
    let first = "day,meter,band,at,kwh\n\
2024-03-01,7,1.50,2024-03-01T06:00:00Z,10\n\
2024-03-01,8,1.50,2024-03-01T06:00:00Z,20\n";
    let job = app.upload(&sub, "readings", "", first).await;
    let job = app
        .act_ok(&apr, job["id"].as_str().unwrap(), "approve")
        .await;
    assert_eq!(job["state"], "committed", "{job}");

    // The same keys again (the date written otherwise, the moment in
    // another offset): one row changed, one as it is, one new.
    let again = "day,meter,band,at,kwh\n\
01/03/2024,7,1.50,2024-03-01T13:00:00+07:00,11\n\
2024-03-01,8,1.50,2024-03-01T06:00:00Z,20\n\
2024-03-02,7,1.50,2024-03-02T06:00:00Z,30\n";
    let job = app.upload(&sub, "readings", "?mode=upsert", again).await;
    assert_eq!(job["counts"]["update"], 1, "{job}");
    assert_eq!(job["counts"]["unchanged"], 1, "{job}");
    assert_eq!(job["counts"]["insert"], 1, "{job}");
    let job = app.upload(&sub, "readings", "?on_error=skip", again).await;
    assert_eq!(
        job["counts"]["errors"], 2,
        "the two keys in the table: {job}"
    );
    assert_eq!(job["counts"]["insert"], 1, "{job}");
}

/// On PostgreSQL a module table leaves room on its pages, so that an
/// upsert's new row versions can stay on their pages without new index
/// entries (a HOT update; `store::postgres::sql::FILL_FACTOR`). SQLite has no
/// such setting.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn module_tables_leave_room_for_updated_rows_on_postgres() {
    let app = spawn_app().await;
    if !app.database.starts_with("postgres") {
        return;
    }
    let options = app
        .sql(&format!(
            "SELECT array_to_string(reloptions, ',') FROM pg_class WHERE relname = '{TABLE}'"
        ))
        .await;
    let expected = format!(
        "fillfactor={}",
        importgate::store::postgres::sql::FILL_FACTOR
    );
    assert_eq!(options, vec![vec![Some(expected)]]);
}

/// On PostgreSQL a validation of 10,000 rows or more refreshes the stage
/// table's statistics with a small sample (`store::stage::STATISTICS_TARGET`):
/// the histogram of a planned column has at most target + 1 bounds, where
/// PostgreSQL's default would give 101.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_large_validation_samples_the_stage_for_its_statistics_on_postgres() {
    let app = spawn_app().await;
    if !app.database.starts_with("postgres") {
        return;
    }
    let sub = app.submitter().await;
    let mut csv = String::from("tech_name,phone,city,skills,level,jobs_done,rating,active\n");
    for i in 0..12_000 {
        csv.push_str(&format!(
            "Tech {i},08{i:010},Jakarta,AC,senior,{i},4.50,true\n"
        ));
    }
    let job = app.upload(&sub, "technicians", "", &csv).await;
    let job = app.wait_done(&sub, job["id"].as_str().unwrap()).await;
    assert_eq!(job["state"], "awaiting_approval", "{job}");
    let bounds = app
        .sql(
            "SELECT CAST(cardinality(histogram_bounds::text::text[]) AS TEXT) FROM pg_stats \
             WHERE tablename = 'ig_stage_technicians' AND attname = 'seq'",
        )
        .await;
    let bounds: usize = bounds[0][0]
        .as_deref()
        .expect("seq has a histogram")
        .parse()
        .unwrap();
    let target = importgate::store::stage::STATISTICS_TARGET as usize;
    assert!((2..=target + 1).contains(&bounds), "{bounds} bounds");
}

/// The counts a validation reports are those of the rows it staged, with
/// a repeated key moved from its action to the errors; pages of updates
/// hold each update once, with its before-image.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_repeated_key_among_updates_counts_as_an_error_and_pages_of_updates_hold_the_rest() {
    let (app, sub, _apr) = seeded().await;
    let csv = "phone,tech_name,jobs_done\n\
0812000001,Andi,11\n\
0812000003,Citra,8\n\
0812000001,Andi,12\n\
0812000002,Budi,3\n\
0812000004,Dewi,1\n";
    let job = app
        .upload(&sub, "technicians", "?mode=upsert&on_error=skip", csv)
        .await;
    assert_eq!(job["state"], "awaiting_approval", "{job}");
    let counts = &job["counts"];
    let got: Vec<i64> = [
        "rows",
        "valid",
        "insert",
        "update",
        "unchanged",
        "errors",
        "excluded",
    ]
    .iter()
    .map(|k| counts[*k].as_i64().unwrap())
    .collect();
    assert_eq!(got, [5, 4, 1, 2, 1, 1, 0], "{job}");
    let id = job["id"].as_str().unwrap();
    let errors = app.get_json(&sub, &format!("/api/jobs/{id}/errors")).await;
    assert_eq!(errors["errors"][0]["row"], 4, "{errors}");
    assert_eq!(errors["errors"][0]["code"], "duplicate_in_file", "{errors}");
    let mut seen = vec![];
    for offset in 0..3 {
        let page = app
            .get_json(
                &sub,
                &format!("/api/jobs/{id}/preview?action=update&limit=1&offset={offset}"),
            )
            .await;
        assert_eq!(page["total"], 2, "{page}");
        for row in page["rows"].as_array().unwrap() {
            seen.push((
                row["row"].as_i64().unwrap(),
                row["before"]["jobs_done"].as_i64().unwrap(),
                row["values"]["jobs_done"].as_i64().unwrap(),
            ));
        }
    }
    assert_eq!(seen, [(2, 10, 11), (3, 7, 8)]);
}

/// An update stages the before-image only of the cells it changes (the
/// others' is the row's own value), yet the preview shows every cell the
/// file gave as it was, the commit refuses a row changed since in a cell
/// the update leaves alone, and the rollback restores every cell as it
/// was spelled: `4.50` is not `4.5`, so its before-image is kept.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_update_stages_only_what_it_changes_and_still_checks_and_restores_every_cell() {
    let (app, sub, apr) = seeded().await;
    let original = snapshot(&app).await;
    let csv = "phone,tech_name,level,active,rating\n0812000001,Andi,lead,true,4.5\n";
    let job = app.upload(&sub, "technicians", "?mode=update", csv).await;
    assert_eq!(job["counts"]["update"], 1, "{job}");
    let id = job["id"].as_str().unwrap();
    let page = app
        .get_json(&sub, &format!("/api/jobs/{id}/preview?action=update"))
        .await;
    let before = &page["rows"][0]["before"];
    assert_eq!(before["tech_name"], "Andi", "{page}");
    assert_eq!(before["level"], "senior", "{page}");
    assert_eq!(before["active"], true, "{page}");
    assert_eq!(before["rating"], "4.50", "{page}");
    assert_eq!(before.as_object().unwrap().len(), 5, "{page}");
    // Staged: the changed level; the name, phone, flag and the rating
    // (`4.5` is `4.50` at the column's scale) only as the row's values.
    let staged = app
        .sql(&format!(
            "SELECT CAST(COUNT(s.b_tech_name) + COUNT(s.b_phone) + COUNT(s.b_active) AS TEXT), \
                    CAST(COUNT(s.b_level) + COUNT(s.b_rating) AS TEXT) \
             FROM ig_stage_technicians s JOIN ig_jobs j ON j.stage = s.job \
             WHERE j.id = '{id}' AND s.action = 'update'"
        ))
        .await;
    let n = |v: &Option<String>| v.as_deref().unwrap().to_string();
    assert_eq!(
        (n(&staged[0][0]), n(&staged[0][1])),
        ("0".into(), "1".into())
    );

    // Andi's flag, which the update leaves as it is, changes behind the
    // service's back: the preview is stale.
    let off = if app.database.starts_with("sqlite") {
        "active = 0"
    } else {
        "active = false"
    };
    set(&app, "0812000001", off).await;
    let job = app.act_ok(&apr, id, "approve").await;
    assert_eq!(job["problem"]["code"], "stale_preview", "{job}");
    assert_eq!(problem_rows(&job), vec![2], "{job}");

    let on = if app.database.starts_with("sqlite") {
        "active = 1"
    } else {
        "active = true"
    };
    set(&app, "0812000001", on).await;
    assert_eq!(snapshot(&app).await, original);
    let job = app.upload(&sub, "technicians", "?mode=update", csv).await;
    let id = job["id"].as_str().unwrap();
    let job = app.act_ok(&apr, id, "approve").await;
    assert_eq!(job["state"], "committed", "{job}");
    assert_ne!(snapshot(&app).await, original);
    app.act_ok(&sub, id, "rollback").await;
    let job = app.act_ok(&apr, id, "approve").await;
    assert_eq!(job["state"], "rolled_back", "{job}");
    assert_eq!(
        snapshot(&app).await,
        original,
        "every cell as it was spelled"
    );
}

/// A file whose found keys span several lookups (500 keys each) and are
/// in another order than the table's: every update is matched to its own
/// row of the table, whose values are its before-image, and a key the
/// table lacks is an insert.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_update_of_a_large_file_has_its_own_rows_before_image() {
    let app = spawn_app().await;
    let (sub, apr) = (app.submitter().await, app.approver().await);
    let header = "tech_name,phone,jobs_done\n";
    let mut table = String::from(header);
    for i in (0..2_600).step_by(2) {
        table.push_str(&format!("Tech {i},08{i:010},{i}\n"));
    }
    let job = app.upload(&sub, "technicians", "", &table).await;
    let job = app
        .act_ok(&apr, job["id"].as_str().unwrap(), "approve")
        .await;
    assert_eq!(job["state"], "committed", "{job}");
    // Backwards, every other key new: the places found are never the
    // places of the table's rows.
    let mut file = String::from(header);
    for i in (0..2_600).rev() {
        file.push_str(&format!("Tech {i},08{i:010},{}\n", 100_000 + i));
    }
    let job = app.upload(&sub, "technicians", "?mode=upsert", &file).await;
    assert_eq!(job["state"], "awaiting_approval", "{job}");
    assert_eq!(job["counts"]["update"], 1_300, "{job}");
    assert_eq!(job["counts"]["insert"], 1_300, "{job}");
    let id = job["id"].as_str().unwrap();
    let mut updates = 0;
    for offset in [0, 1_000] {
        let page = app
            .get_json(
                &sub,
                &format!("/api/jobs/{id}/preview?action=update&limit=1000&offset={offset}"),
            )
            .await;
        for row in page["rows"].as_array().unwrap() {
            let new = row["values"]["jobs_done"].as_i64().unwrap();
            assert_eq!(row["before"]["jobs_done"], new - 100_000, "{row}");
            assert_eq!(
                row["before"]["tech_name"], row["values"]["tech_name"],
                "{row}"
            );
            assert_eq!(row["before"]["phone"], row["values"]["phone"], "{row}");
            updates += 1;
        }
    }
    assert_eq!(updates, 1_300);
}

/// `rows` orders, `SO-00000`… each with one SKU; `qty` 1 plus what `bump`
/// says for the row.
fn orders_csv(rows: usize, bump: impl Fn(usize) -> usize) -> String {
    let mut csv =
        String::from("order_no,customer_id,sku,qty,amount_idr,order_date,status,payment_method\n");
    for i in 0..rows {
        let qty = 1 + bump(i);
        csv.push_str(&format!(
            "SO-{i:08},C-{:06},SKU-{:04},{qty},{},2024-05-{:02},paid,cod\n",
            i % 9973,
            i % 1999,
            1000 * (i % 97 + 1),
            i % 28 + 1
        ));
    }
    csv
}

/// Past [`importgate::store::postgres::lookup::PROBE_FROM`] rows,
/// PostgreSQL's lookups probe the natural-key index once a key instead of
/// joining: every key of a two-column key is still found, each with its
/// own row.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_upsert_over_a_table_past_the_probe_size_finds_every_key() {
    let app = spawn_app().await;
    let (sub, apr) = (app.submitter().await, app.approver().await);
    let rows = importgate::store::postgres::lookup::PROBE_FROM as usize + 4_000;
    let job = app
        .upload(&sub, "orders", "", &orders_csv(rows, |_| 0))
        .await;
    let job = app
        .act_ok(&apr, job["id"].as_str().unwrap(), "approve")
        .await;
    assert_eq!(job["state"], "committed", "{job}");
    // Every 1,000th order's quantity changes; two orders are new.
    let mut csv = orders_csv(rows, |i| usize::from(i % 1_000 == 7) * (i % 5 + 1));
    csv.push_str("SO-99999998,C-000001,SKU-0001,5,1000,2024-05-01,paid,cod\n");
    csv.push_str("SO-99999999,C-000001,SKU-0002,5,1000,2024-05-01,paid,cod\n");
    let job = app.upload(&sub, "orders", "?mode=upsert", &csv).await;
    let changed = (0..rows).filter(|i| i % 1_000 == 7).count() as i64;
    assert_eq!(job["counts"]["update"], changed, "{job}");
    assert_eq!(job["counts"]["insert"], 2, "{job}");
    assert_eq!(job["counts"]["unchanged"], rows as i64 - changed, "{job}");
    let job = app
        .act_ok(&apr, job["id"].as_str().unwrap(), "approve")
        .await;
    assert_eq!(job["state"], "committed", "{job}");
    let bumped = app
        .sql(
            "SELECT order_no, CAST(qty AS TEXT) FROM uc_sales_orders \
             WHERE qty > 1 ORDER BY order_no",
        )
        .await;
    assert_eq!(bumped.len() as i64, changed + 2);
    assert_eq!(bumped[1][0].as_deref(), Some("SO-00001007"));
    assert_eq!(bumped[1][1].as_deref(), Some(&*(1007 % 5 + 2).to_string()));
}

/// An update's cells that hold the file's values (text, integers, a date:
/// compared without being decoded) and its key's stage no before-image; a
/// date it changes does, as the table held it. The commit still refuses a
/// row whose kept date changed since the preview, and the rollback puts
/// every cell back.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_update_stages_no_before_image_of_a_kept_date_or_key_and_one_of_a_changed_date() {
    let app = spawn_app().await;
    let (sub, apr) = (app.submitter().await, app.approver().await);
    let header = "order_no,customer_id,sku,qty,amount_idr,order_date,status\n";
    let first = format!(
        "{header}SO-1,C-1,SKU-1,2,30000,2024-03-01,paid\nSO-2,C-2,SKU-2,1,15000,2024-03-02,paid\n"
    );
    let job = app.upload(&sub, "orders", "", &first).await;
    let job = app
        .act_ok(&apr, job["id"].as_str().unwrap(), "approve")
        .await;
    assert_eq!(job["state"], "committed", "{job}");
    let table = "SELECT order_no, sku, CAST(qty AS TEXT), CAST(order_date AS TEXT) \
                 FROM uc_sales_orders ORDER BY order_no";
    let original = app.sql(table).await;

    // SO-1: only its quantity changes; SO-2: only its date.
    let again = format!(
        "{header}SO-1,C-1,SKU-1,3,30000,2024-03-01,paid\nSO-2,C-2,SKU-2,1,15000,2024-03-05,paid\n"
    );
    let job = app.upload(&sub, "orders", "?mode=update", &again).await;
    assert_eq!(job["counts"]["update"], 2, "{job}");
    let id = job["id"].as_str().unwrap().to_string();
    let staged = app
        .sql(&format!(
            "SELECT s.v_order_no, CAST(s.b_order_no AS TEXT), CAST(s.b_sku AS TEXT), \
                    CAST(s.b_customer_id AS TEXT), CAST(s.b_amount_idr AS TEXT), \
                    CAST(s.b_qty AS TEXT), CAST(s.b_order_date AS TEXT) \
             FROM ig_stage_orders s JOIN ig_jobs j ON j.stage = s.job \
             WHERE j.id = '{id}' ORDER BY s.seq"
        ))
        .await;
    let text = |v: &[&str]| -> Vec<Option<String>> {
        v.iter()
            .map(|c| (!c.is_empty()).then(|| c.to_string()))
            .collect()
    };
    assert_eq!(
        staged,
        vec![
            text(&["SO-1", "", "", "", "", "2", ""]),
            text(&["SO-2", "", "", "", "", "", "2024-03-02"]),
        ]
    );
    let page = app
        .get_json(&sub, &format!("/api/jobs/{id}/preview?action=update"))
        .await;
    assert_eq!(
        page["rows"][0]["before"]["order_date"], "2024-03-01",
        "{page}"
    );
    assert_eq!(page["rows"][0]["before"]["order_no"], "SO-1", "{page}");
    assert_eq!(
        page["rows"][1]["before"]["order_date"], "2024-03-02",
        "{page}"
    );

    // SO-1's date, which the update keeps, changes behind the service's
    // back: the preview is stale.
    let set = |date: &str| {
        format!("UPDATE uc_sales_orders SET order_date = '{date}' WHERE order_no = 'SO-1'")
    };
    app.sql(&set("2024-04-01")).await;
    let job = app.act_ok(&apr, &id, "approve").await;
    assert_eq!(job["problem"]["code"], "stale_preview", "{job}");
    assert_eq!(problem_rows(&job), vec![2], "{job}");

    app.sql(&set("2024-03-01")).await;
    assert_eq!(app.sql(table).await, original);
    let job = app.upload(&sub, "orders", "?mode=update", &again).await;
    let id = job["id"].as_str().unwrap();
    let job = app.act_ok(&apr, id, "approve").await;
    assert_eq!(job["state"], "committed", "{job}");
    assert_ne!(app.sql(table).await, original);
    app.act_ok(&sub, id, "rollback").await;
    let job = app.act_ok(&apr, id, "approve").await;
    assert_eq!(job["state"], "rolled_back", "{job}");
    assert_eq!(app.sql(table).await, original, "every cell as it was");
}
