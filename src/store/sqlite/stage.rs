//! A batch of staged rows written to SQLite through sqlx: multi-row
//! `INSERT`s of the rows, then of their errors. (A validation's own
//! batches go through its writer thread instead, `super::load`; this is
//! for a revision's rows, staged again in the caller's transaction.)

use sqlx::SqliteConnection;

use crate::ids::JobId;
use crate::store::dialect::Dialect;
use crate::store::error::Result;
use crate::store::sql::{BATCH, pieces};
use crate::store::stage::{Stage, StagedRow};
use crate::store::values::BindValue;
use crate::validate::RowError;

/// Stores a batch of rows and their errors.
pub async fn insert_batch(
    c: &mut SqliteConnection,
    stage: &Stage<'_>,
    job_id: &JobId,
    rows: &[StagedRow],
) -> Result<()> {
    let width = 9 + 2 * stage.provided.len();
    // Well under SQLite's 32,766 parameters, whatever the module.
    let per_statement = (30_000 / width).clamp(1, BATCH);
    for range in pieces(rows.len(), per_statement) {
        let part = &rows[range];
        let sql = format!(
            "INSERT INTO {} (job, seq, row_no, action, nkey, vals, warns, norm{}) VALUES {}",
            stage.table(),
            stage.written_list(),
            Dialect::Sqlite.tuples(part.len(), width)
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
            for (k, &i) in stage.provided.iter().enumerate() {
                q = q.bind_value(r.typed(k).0, stage.module.columns[i].ty);
            }
            for (k, &i) in stage.provided.iter().enumerate() {
                q = q.bind_value(r.typed(k).1, stage.module.columns[i].ty);
            }
        }
        q.execute(&mut *c).await?;
    }
    let list: Vec<(i64, i64, &RowError)> = rows
        .iter()
        .flat_map(|r| (r.errors.iter().enumerate()).map(move |(n, e)| (r.seq, n as i64, e)))
        .collect();
    insert_errors(c, job_id, &list).await
}

/// Stores row errors: (row seq, index within the row, error).
async fn insert_errors(
    c: &mut SqliteConnection,
    job_id: &JobId,
    list: &[(i64, i64, &RowError)],
) -> Result<()> {
    for range in pieces(list.len(), BATCH) {
        let part = &list[range];
        let sql = format!(
            "INSERT INTO ig_job_errors (job_id, seq, n, row_no, col, value, code, message, rule) \
             VALUES {}",
            Dialect::Sqlite.tuples(part.len(), 9)
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
