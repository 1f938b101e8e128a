//! An export's pages of a module table (`tables::PageReader`), read on a
//! blocking thread, on a read connection of the export's own, through
//! `rusqlite`: each page one statement, its rows read straight into
//! module values. Through sqlx every row of a page went from the
//! connection's thread to the runtime over a channel, a wakeup a row: half
//! of a 1M-row export's samples under `perf` (`PERF=1 bash
//! bench/export.sh`).
//!
//! The connection is opened at the first page and closed with the
//! export. It only reads, and each page is a statement of its own that
//! ends before the page is written: in WAL mode it sees the table as last
//! committed and holds no lock or snapshot between pages, so a client that
//! reads slowly keeps no writer waiting.

use std::sync::{Arc, Mutex};

use rusqlite::types::Value as Param;
use sqlx::SqlitePool;

use super::lookup::open;
use super::values::from_sqlite;
use crate::catalog::ColumnType;
use crate::validate::Value;

/// An export's read connection, opened at its first page.
#[derive(Default)]
pub struct Reader(Arc<Mutex<Option<rusqlite::Connection>>>);

/// A row of a page: its id and its columns' values.
pub type PageRow = (i64, Vec<Option<Value>>);

impl Reader {
    /// The rows of `sql` (selecting `id`, then columns of the types
    /// `types`) with `params` bound in order, on this reader's connection
    /// to `pool`'s file.
    pub async fn page(
        &self,
        pool: &SqlitePool,
        sql: String,
        params: Vec<Option<Value>>,
        types: Vec<ColumnType>,
    ) -> anyhow::Result<Vec<PageRow>> {
        let file = pool.connect_options().get_filename().to_path_buf();
        let reader = self.0.clone();
        tokio::task::spawn_blocking(move || {
            let mut reader = reader
                .lock()
                .map_err(|_| anyhow::anyhow!("an earlier page of the export failed"))?;
            let c = match &mut *reader {
                Some(c) => c,
                none => none.insert(open(&file)?),
            };
            let mut select = c.prepare_cached(&sql)?;
            let params: Vec<Param> = params.iter().map(param).collect();
            let mut rows = select.query(rusqlite::params_from_iter(params))?;
            let mut page = Vec::new();
            while let Some(row) = rows.next()? {
                let id: i64 = row.get(0)?;
                let values = (types.iter().enumerate())
                    .map(|(i, &ty)| from_sqlite(row.get_ref(i + 1)?, ty).map_err(Into::into))
                    .collect::<anyhow::Result<_>>()?;
                page.push((id, values));
            }
            Ok(page)
        })
        .await
        .map_err(|e| anyhow::anyhow!("reading a page of the export failed: {e}"))?
    }
}

/// A module value as a parameter, stored as the sqlx binding stores it
/// (`BindValue`): integers and booleans as integers, the rest as text.
fn param(value: &Option<Value>) -> Param {
    match value {
        None => Param::Null,
        Some(Value::Int(i)) => Param::Integer(*i),
        Some(Value::Bool(b)) => Param::Integer(i64::from(*b)),
        Some(other) => Param::Text(other.to_text()),
    }
}
