//! A batch of staged rows written to MariaDB or MySQL, two ways.
//!
//! Where the connection may (`connect::pool`), `LOAD DATA LOCAL
//! INFILE`, the server's bulk loader over the client's connection, of
//! the rows and then of their errors, as `stage::text` writes them: the
//! vendored driver sends the batch from memory, and no file is read. It
//! stores 1M staged orders in 4.6 s where multi-row `INSERT`s of the same
//! rows take 10.3 s, two connections at once either way (MariaDB 10.11,
//! the `mariadb` client; 8.0 and 21.6 s on one).
//!
//! Otherwise multi-row `INSERT`s of the rows, then of their errors, each
//! statement as large as the server's packet allows
//! (`connect::statement_bytes`) and within its 65,535 parameters.

use sqlx::MySqlConnection;

use super::connect::statement_bytes;
use super::values::mysql_input;
use crate::catalog::ColumnType;
use crate::ids::JobId;
use crate::store::dialect::Dialect;
use crate::store::error::{Result, StoreError};
use crate::store::stage::text::{ERROR_COLUMNS, ERROR_TABLE, errors_text, row_columns, rows_text};
use crate::store::stage::{Stage, StagedRow};
use crate::store::values::BindValue;
use crate::validate::{RowError, Value};

/// How `LOAD DATA` reads [`rows_text`]'s lines, spelled in hexadecimal:
/// the sessions' `NO_BACKSLASH_ESCAPES` makes `'\\'` two characters, and
/// takes the backslash from the statement's default escape (so `\N`
/// would be text, not null). With `LOCAL`, a value the server cannot
/// take is a warning, not an error, whatever the `sql_mode`: a load that
/// warns fails ([`refused`]).
const LINES: &str = "CHARACTER SET utf8mb4 FIELDS TERMINATED BY X'09' ESCAPED BY X'5C' \
                     LINES TERMINATED BY X'0A'";

/// Stores a batch of rows and their errors by `LOAD DATA LOCAL INFILE`.
pub async fn load_batch(
    c: &mut MySqlConnection,
    stage: &Stage<'_>,
    job_id: &JobId,
    rows: &[StagedRow],
) -> Result<()> {
    let data = rows_text(stage, rows, mysql_input);
    load(c, &stage.table(), &row_columns(stage), &data.into_bytes()).await?;
    let errors = errors_text(job_id, rows);
    if !errors.is_empty() {
        load(c, ERROR_TABLE, ERROR_COLUMNS, &errors.into_bytes()).await?;
    }
    Ok(())
}

/// `LOAD DATA` of `data` into `columns` of `table`.
async fn load(c: &mut MySqlConnection, table: &str, columns: &str, data: &[u8]) -> Result<()> {
    let sql = format!("LOAD DATA LOCAL INFILE 'batch' INTO TABLE {table} {LINES} {columns}");
    let loaded = c.load_local_infile(&sql, data).await?;
    if loaded.warnings > 0 {
        return Err(refused(c, table).await);
    }
    Ok(())
}

/// The error of a load that warned: the server's first warning.
async fn refused(c: &mut MySqlConnection, table: &str) -> StoreError {
    let first: std::result::Result<Option<(String, u32, String)>, _> =
        sqlx::query_as("SHOW WARNINGS LIMIT 1")
            .fetch_optional(&mut *c)
            .await;
    let why = match first {
        Ok(Some((_, code, message))) => format!("{message} ({code})"),
        Ok(None) => "a warning the server no longer shows".into(),
        Err(e) => e.to_string(),
    };
    StoreError::Refused(format!("loading into {table}: {why}"))
}

/// Parameters a statement takes at most: MySQL's limit is 65,535.
const MAX_PARAMS: usize = 60_000;

/// Stores a batch of rows and their errors.
pub async fn insert_batch(
    c: &mut MySqlConnection,
    stage: &Stage<'_>,
    job_id: &JobId,
    rows: &[StagedRow],
) -> Result<()> {
    let width = 9 + 2 * stage.provided.len();
    let types: Vec<ColumnType> = (stage.provided.iter())
        .map(|&i| stage.module.columns[i].ty)
        .collect();
    for part in cut(rows, width, row_bytes) {
        let sql = format!(
            "INSERT INTO {} (job, seq, row_no, action, nkey, vals, warns, norm{}) VALUES {}",
            stage.table(),
            stage.written_list(),
            Dialect::Mysql.tuples(part.len(), width)
        );
        let mut q = sqlx::query(&sql);
        for r in part {
            q = q
                .bind(stage.job)
                .bind(r.seq)
                .bind(r.row_no)
                .bind(r.action.as_str())
                .bind(&r.nkey)
                .bind(&r.vals)
                .bind(&r.warns)
                .bind(&r.norm)
                .bind(r.same());
            for (k, ty) in types.iter().enumerate() {
                q = q.bind_value(r.typed(k).0, *ty);
            }
            for (k, ty) in types.iter().enumerate() {
                q = q.bind_value(r.typed(k).1, *ty);
            }
        }
        q.execute(&mut *c).await?;
    }
    let list: Vec<(i64, i64, &RowError)> = rows
        .iter()
        .flat_map(|r| (r.errors.iter().enumerate()).map(move |(n, e)| (r.seq, n as i64, e)))
        .collect();
    for part in cut(&list, 9, |(_, _, e)| error_bytes(e)) {
        let sql = format!(
            "INSERT INTO ig_job_errors (job_id, seq, n, row_no, col, value, code, message, rule) \
             VALUES {}",
            Dialect::Mysql.tuples(part.len(), 9)
        );
        let mut q = sqlx::query(&sql);
        for (seq, n, e) in part {
            q = q
                .bind(job_id)
                .bind(*seq)
                .bind(*n)
                .bind(e.row as i64)
                .bind(&e.column)
                .bind(&e.value)
                .bind(e.code.as_str())
                .bind(&e.message)
                .bind(&e.rule);
        }
        q.execute(&mut *c).await?;
    }
    Ok(())
}

/// `items` in runs that each fit one statement: at most [`MAX_PARAMS`]
/// parameters of `width` an item, and at most [`statement_bytes`] of
/// `bytes` (an item's parameters' size, roughly) together.
fn cut<T>(items: &[T], width: usize, bytes: impl Fn(&T) -> usize) -> Vec<&[T]> {
    let (most, budget) = ((MAX_PARAMS / width).max(1), statement_bytes());
    let mut parts = Vec::new();
    let (mut start, mut size) = (0, 0);
    for (i, item) in items.iter().enumerate() {
        let b = bytes(item);
        if i > start && (i - start == most || size + b > budget) {
            parts.push(&items[start..i]);
            (start, size) = (i, 0);
        }
        size += b;
    }
    if start < items.len() {
        parts.push(&items[start..]);
    }
    parts
}

/// About what a staged row's parameters take on the wire.
fn row_bytes(r: &StagedRow) -> usize {
    let texts = [&r.nkey, &r.vals, &r.warns, &r.norm];
    let own: usize = texts
        .iter()
        .map(|t| t.as_ref().map_or(0, String::len))
        .sum();
    let values = r
        .values
        .iter()
        .chain(r.before.iter().flat_map(|b| &b.values));
    own + 64
        + values
            .map(|v| v.as_ref().map_or(1, value_bytes))
            .sum::<usize>()
}

fn value_bytes(v: &Value) -> usize {
    match v {
        Value::Text(s) => s.len() + 9,
        _ => 40,
    }
}

fn error_bytes(e: &RowError) -> usize {
    let texts = [&e.column, &e.value, &e.rule];
    let own: usize = texts
        .iter()
        .map(|t| t.as_ref().map_or(0, String::len))
        .sum();
    own + e.message.len() + 96
}

#[cfg(test)]
mod tests {
    use super::cut;

    #[test]
    fn runs_keep_to_the_count_and_the_bytes() {
        let items = vec![10usize; 25];
        let parts = cut(&items, 6_000, |b| *b);
        assert!(parts.iter().all(|p| p.len() <= 10));
        assert_eq!(parts.iter().map(|p| p.len()).sum::<usize>(), 25);
        let big = vec![usize::MAX / 4, 1, 1];
        assert_eq!(cut(&big, 1, |b| *b).len(), 2);
    }
}
