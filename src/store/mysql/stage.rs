//! A batch of staged rows written to MariaDB or MySQL: multi-row
//! `INSERT`s of the rows, then of their errors, each statement as large
//! as the server's packet allows (`connect::statement_bytes`) and within
//! its 65,535 parameters. sqlx's MySQL driver has no `LOAD DATA LOCAL
//! INFILE`, the server's bulk loader over the client's connection.

use sqlx::MySqlConnection;

use super::connect::statement_bytes;
use crate::catalog::ColumnType;
use crate::ids::JobId;
use crate::store::dialect::Dialect;
use crate::store::error::Result;
use crate::store::stage::{Stage, StagedRow};
use crate::store::values::BindValue;
use crate::validate::{RowError, Value};

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
