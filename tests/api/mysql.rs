//! MariaDB and MySQL at start: a server that is down or refuses the user
//! stops the start with the host and user named, and so does a module
//! table the business system made with columns of other types; one whose
//! types fit is used as it is. (The rest of the suite runs on MariaDB too,
//! with `IMPORTGATE_TEST_MYSQL`.)

use importgate::app::App;
use importgate::config::Settings;
use serde_json::json;

use crate::common::{DropDatabase, fresh_mysql, mysql_server, spawn_app_with};

/// The service's settings over `database`, its ledger files in `dir`.
fn settings(database: &str, dir: &std::path::Path) -> Settings {
    Settings {
        database: database.to_string(),
        ledger_key_file: Some(dir.join("ledger-key")),
        ledger_checkpoint_file: Some(dir.join("ledger-checkpoint")),
        ..Settings::default()
    }
}

/// Why the service did not start over `database`.
async fn refusal(database: &str) -> String {
    let dir = tempfile::tempdir().unwrap();
    match App::open(settings(database, dir.path())).await {
        Ok(_) => panic!("the service started over {database}"),
        Err(e) => format!("{e:#}"),
    }
}

#[tokio::test]
async fn a_server_that_is_down_is_named_with_its_user() {
    // Nothing listens on port 1.
    let why = refusal("mysql://importgate@127.0.0.1:1/erp").await;
    for part in ["127.0.0.1:1", "\"importgate\"", "\"erp\""] {
        assert!(why.contains(part), "{part} in: {why}");
    }
}

#[tokio::test]
async fn a_user_the_server_refuses_is_named() {
    let Some(server) = mysql_server() else {
        return;
    };
    let (_, host) = server.split_once('@').expect("user@host");
    let why = refusal(&format!("mysql://ig_nobody:wrong@{host}/erp")).await;
    assert!(why.contains("\"ig_nobody\"") && why.contains(host), "{why}");
    assert!(why.contains("Access denied"), "the server's reason: {why}");
}

#[tokio::test]
async fn a_module_table_with_a_column_of_another_type_stops_the_start() {
    let Some(server) = mysql_server() else {
        return;
    };
    let database = fresh_mysql(&server).await;
    let _drop = DropDatabase(database.clone());
    business_table(
        &database,
        "CREATE TABLE uc_scrm_customers (id INT AUTO_INCREMENT PRIMARY KEY, \
         customer_name VARCHAR(120), wa_number VARCHAR(20) UNIQUE, \
         consumable_cycle_days VARCHAR(10))",
    )
    .await;
    let why = refusal(&database).await;
    for part in [
        "uc_scrm_customers",
        "consumable_cycle_days",
        "varchar(10)",
        "integer",
    ] {
        assert!(why.contains(part), "{part} in: {why}");
    }
}

#[tokio::test]
async fn a_business_systems_table_whose_types_fit_is_filled_and_kept() {
    let Some(server) = mysql_server() else {
        return;
    };
    // A Laravel-style table: case-insensitive collation, a timestamp of
    // its own, a row already there.
    let database = fresh_mysql(&server).await;
    let _drop = DropDatabase(database.clone());
    business_table(
        &database,
        "CREATE TABLE uc_scrm_customers (id BIGINT UNSIGNED AUTO_INCREMENT PRIMARY KEY, \
         customer_name VARCHAR(191) NOT NULL, wa_number VARCHAR(32) NOT NULL UNIQUE, \
         city VARCHAR(100) NULL, created_at TIMESTAMP NULL DEFAULT CURRENT_TIMESTAMP) \
         DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci",
    )
    .await;
    business_table(
        &database,
        "INSERT INTO uc_scrm_customers (customer_name, wa_number, city) \
         VALUES ('Lama', '0811', 'Medan')",
    )
    .await;
    let business = database.clone();
    let app = spawn_app_with(move |s| s.database = business).await;
    let (sub, apr) = (app.submitter().await, app.approver().await);
    let csv = "customer_name,wa_number,city,consumable_cycle_days\nBudi,0812,Bandung,30\n";
    let job = app.upload(&sub, "customers", "", csv).await;
    assert_eq!(job["counts"]["insert"], json!(1), "{job}");
    let id = job["id"].as_str().unwrap();
    let job = app.act_ok(&apr, id, "approve").await;
    assert_eq!(job["state"], "committed", "{job}");
    let rows = app
        .sql(
            "SELECT customer_name, city, CAST(consumable_cycle_days AS TEXT), \
             CAST(created_at IS NOT NULL AS TEXT) FROM uc_scrm_customers ORDER BY wa_number",
        )
        .await;
    let text = |r: &[Option<String>]| {
        r.iter()
            .map(|c| c.clone().unwrap_or_default())
            .collect::<Vec<_>>()
    };
    assert_eq!(text(&rows[0]), ["Lama", "Medan", "", "1"]);
    // The column the catalog has and the table lacked was added; the
    // table's own column kept its default.
    assert_eq!(text(&rows[1]), ["Budi", "Bandung", "30", "1"]);
}

/// Runs one statement of the business system's on `database`.
async fn business_table(database: &str, sql: &str) {
    use sqlx::Connection;
    let mut c = sqlx::MySqlConnection::connect(database)
        .await
        .expect("connect");
    sqlx::query(sql).execute(&mut c).await.expect(sql);
    let _ = c.close().await;
}

/// The vendored driver's `LOAD DATA LOCAL INFILE`, by which staged rows
/// go: it sends the caller's bytes whatever file the server names, and
/// counts what the table could not take as warnings (a load that warns
/// fails in the store). A statement run any other way that meets the
/// server's request for a file refuses it, and the connection goes on;
/// a connection not opened for it is refused by the server.
#[tokio::test]
async fn local_infile_sends_memory_never_a_file() {
    use sqlx::mysql::{Loaded, MySqlConnectOptions};
    use sqlx::{ConnectOptions, Connection};
    let Some(server) = mysql_server() else {
        return;
    };
    let database = fresh_mysql(&server).await;
    let _drop = DropDatabase(database.clone());
    let options: MySqlConnectOptions = database.parse().expect("url");
    let mut c = options.clone().local_infile(true).connect().await.unwrap();
    assert!(c.local_infile(), "MariaDB allows LOCAL INFILE by default");
    sqlx::query("CREATE TABLE t (a INT, b LONGTEXT)")
        .execute(&mut c)
        .await
        .unwrap();
    let load = "LOAD DATA LOCAL INFILE '/etc/passwd' INTO TABLE t CHARACTER SET utf8mb4 \
                FIELDS TERMINATED BY X'09' ESCAPED BY X'5C' LINES TERMINATED BY X'0A' (a, b)";
    let loaded = c
        .load_local_infile(load, b"1\tsatu \\\\ \xF0\x9F\x98\x80\n2\t\\N\n")
        .await
        .unwrap();
    assert_eq!(
        loaded,
        Loaded {
            rows: 2,
            warnings: 0
        }
    );
    let rows: Vec<(i32, Option<String>)> = sqlx::query_as("SELECT a, b FROM t ORDER BY a")
        .fetch_all(&mut c)
        .await
        .unwrap();
    assert_eq!(rows, [(1, Some("satu \\ 😀".into())), (2, None)]);

    let warned = c.load_local_infile(load, b"tiga\tx\n").await.unwrap();
    assert!(warned.warnings > 0, "{warned:?}");

    let refused = sqlx::query(load).execute(&mut c).await;
    assert!(refused.is_err(), "{refused:?}");
    let count: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM t")
        .fetch_one(&mut c)
        .await
        .expect("the connection goes on");
    assert_eq!(count, 3, "nothing of /etc/passwd was loaded");
    let _ = c.close().await;

    let mut plain = options.connect().await.unwrap();
    assert!(!plain.local_infile());
    let refused = plain.load_local_infile(load, b"4\tempat\n").await;
    assert!(refused.is_err(), "{refused:?}");
    let _ = plain.close().await;
}
