//! The PostgreSQL pool: every session in UTC, so timestamps read and
//! written as text are UTC's.

use std::str::FromStr;

use sqlx::PgPool;
use sqlx::postgres::{PgConnectOptions, PgPoolOptions};

/// Connections a PostgreSQL pool holds at most.
const MAX_CONNECTIONS: u32 = 16;

/// A pool over `url` (`postgres://…`).
pub async fn pool(url: &str) -> Result<PgPool, sqlx::Error> {
    let options = PgConnectOptions::from_str(url)?.options([("timezone", "UTC")]);
    PgPoolOptions::new()
        .max_connections(MAX_CONNECTIONS)
        .connect_with(options)
        .await
}
