//! The MariaDB/MySQL pool: every session in UTC, quoting as ANSI SQL
//! does (`"name"`, `||`), strict about what a column takes, and on a
//! server recent enough for what the store asks of it (`SKIP LOCKED`,
//! `JSON_TABLE`, `RETURNING` of a `DELETE`). A server that cannot be
//! reached, refuses the user or is too old is named in the error, with
//! the host and user, and the service does not start.

use std::str::FromStr;
use std::sync::atomic::{AtomicUsize, Ordering};

use sqlx::mysql::{MySqlConnectOptions, MySqlPool, MySqlPoolOptions};
use sqlx::{ConnectOptions, Connection, Executor};

use crate::store::error::{Result, StoreError};

/// Connections a MySQL pool holds at most.
const MAX_CONNECTIONS: u32 = 16;

/// What every session sets: ANSI quoting and concatenation, no silent
/// truncation or zero dates, and no backslash escapes in literals.
pub const SQL_MODE: &str = "ANSI_QUOTES,PIPES_AS_CONCAT,STRICT_ALL_TABLES,NO_ZERO_IN_DATE,\
NO_ZERO_DATE,ERROR_FOR_DIVISION_BY_ZERO,NO_BACKSLASH_ESCAPES,NO_ENGINE_SUBSTITUTION";

/// Each statement sees what is committed when it starts, as on
/// PostgreSQL. InnoDB's default, `REPEATABLE READ`, reads a transaction's
/// first snapshot: the ledger's head read after waiting for its lock was
/// the head before the other writer's link, and two links took one number
/// (`Duplicate entry … for key 'ig_job_events_seq_key'`, a `500` to one of
/// sixteen uploads at once).
const ISOLATION: &str = "SET SESSION TRANSACTION ISOLATION LEVEL READ COMMITTED";

/// The server's `max_allowed_packet`, read as the pool starts.
static PACKET: AtomicUsize = AtomicUsize::new(16 << 20);

/// Bytes of parameters one statement carries at most: half the server's
/// packet, the rest for the statement's text and the protocol's framing.
pub fn statement_bytes() -> usize {
    PACKET.load(Ordering::Relaxed) / 2
}

/// What the URL says of `LOAD DATA LOCAL INFILE`: its `local_infile`
/// parameter, if any, is `0`, `false` or `off` to turn it off.
fn url_allows_local_infile(url: &str) -> bool {
    let query = url.split_once('?').map_or("", |(_, q)| q);
    !query.split('&').any(|pair| {
        let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
        key == "local_infile" && matches!(value, "0" | "false" | "off")
    })
}

/// The oldest servers the store runs on.
const MARIADB_AT_LEAST: (u32, u32) = (10, 6);
const MYSQL_AT_LEAST: (u32, u32) = (8, 0);

/// A pool over `url` (`mysql://…` or `mariadb://…`).
pub async fn pool(url: &str) -> Result<MySqlPool> {
    let url = url
        .strip_prefix("mariadb:")
        .map_or_else(|| url.to_string(), |rest| format!("mysql:{rest}"));
    let options = MySqlConnectOptions::from_str(&url)?
        .charset("utf8mb4")
        .timezone(Some("+00:00".to_string()))
        .pipes_as_concat(true);
    let whom = whom(&options);
    let mut first = options
        .connect()
        .await
        .map_err(|e| StoreError::Unreachable(format!("cannot connect to {whom}: {e}")))?;
    let version: String = sqlx::query_scalar("SELECT VERSION()")
        .fetch_one(&mut first)
        .await?;
    let packet: u64 = sqlx::query_scalar("SELECT @@max_allowed_packet")
        .fetch_one(&mut first)
        .await?;
    PACKET.store(packet.max(1 << 20) as usize, Ordering::Relaxed);
    let server_infile: i64 = sqlx::query_scalar("SELECT @@local_infile")
        .fetch_one(&mut first)
        .await?;
    // Staged rows go by `LOAD DATA LOCAL INFILE` (`super::stage`) on
    // connections opened for it: where the server allows it (its
    // `local_infile`, on by default in MariaDB and off in MySQL 8) and
    // the URL does not turn it off (`?local_infile=0`, for a proxy that
    // passes no file, ProxySQL's way). Otherwise as multi-row `INSERT`s.
    let options = options.local_infile(server_infile != 0 && url_allows_local_infile(&url));
    let _ = first.close().await;
    supported(&version).map_err(|why| StoreError::Unreachable(format!("{whom}: {why}")))?;
    let sql_mode = format!("SET SESSION sql_mode = '{SQL_MODE}'");
    Ok(MySqlPoolOptions::new()
        .max_connections(MAX_CONNECTIONS)
        .after_connect(move |c, _| {
            let sql_mode = sql_mode.clone();
            Box::pin(async move {
                c.execute(sql_mode.as_str()).await?;
                c.execute(ISOLATION).await?;
                Ok(())
            })
        })
        .after_release(|c, _| {
            // The migrations' named lock is the session's: it ends when
            // its connection comes back, even from work dropped midway
            // (`txn::lock`).
            Box::pin(async move {
                c.execute("DO RELEASE_ALL_LOCKS()").await?;
                Ok(true)
            })
        })
        .connect_with(options)
        .await?)
}

/// `user@host:port/database`, as an error names the server.
fn whom(options: &MySqlConnectOptions) -> String {
    format!(
        "MySQL server {}:{} as user {:?} (database {:?})",
        options.get_host(),
        options.get_port(),
        options.get_username(),
        options.get_database().unwrap_or_default()
    )
}

/// `Ok` for MariaDB 10.6+ and MySQL 8.0+, given `SELECT VERSION()`
/// (`10.11.6-MariaDB-0+deb12u1`, `8.0.36`); the reason otherwise.
pub fn supported(version: &str) -> std::result::Result<(), String> {
    let mut parts = version.split(|c: char| !c.is_ascii_digit());
    let mut next = || parts.next().and_then(|p| p.parse::<u32>().ok());
    let found = (next(), next());
    let (Some(major), Some(minor)) = found else {
        return Err(format!(
            "server version {version:?} is not one the store knows"
        ));
    };
    let mariadb = version.to_ascii_lowercase().contains("mariadb");
    let (name, least) = if mariadb {
        ("MariaDB", MARIADB_AT_LEAST)
    } else {
        ("MySQL", MYSQL_AT_LEAST)
    };
    if (major, minor) < least {
        return Err(format!(
            "{name} {version} is older than {}.{}, the oldest importgate runs on",
            least.0, least.1
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::{supported, url_allows_local_infile};

    #[test]
    fn a_url_may_turn_local_infile_off() {
        assert!(url_allows_local_infile("mysql://root@db:3306/erp"));
        assert!(url_allows_local_infile("mysql://db/erp?local_infile=1"));
        assert!(!url_allows_local_infile("mysql://db/erp?local_infile=0"));
        assert!(!url_allows_local_infile(
            "mysql://db/erp?ssl-mode=required&local_infile=off"
        ));
    }

    #[test]
    fn versions_are_told_apart_by_maker() {
        assert!(supported("10.11.19-MariaDB-0+deb12u1").is_ok());
        assert!(supported("10.6.0-MariaDB").is_ok());
        assert!(supported("8.0.36").is_ok());
        assert!(supported("8.4.0-log").is_ok());
        let old = supported("10.5.23-MariaDB").unwrap_err();
        assert!(
            old.contains("MariaDB 10.5.23-MariaDB is older than 10.6"),
            "{old}"
        );
        assert!(supported("5.7.44").unwrap_err().contains("MySQL 5.7.44"));
        assert!(supported("weird").is_err());
    }
}
