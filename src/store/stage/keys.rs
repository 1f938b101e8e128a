//! The key values of a workbook part's valid rows that a later part's
//! references name (API.md section 16), kept on SQLite in `ig_part_keys`
//! while the workbook is validated. The stage has no index of its columns
//! (staging stays a plain append); reading it into a temporary index once
//! a lookup statement (an uncorrelated `IN (SELECT …)`) cost SQLite 42 ms
//! a statement at 100k products, 1.1 s of a workbook of 100k products and
//! 900k orders; keeping the keys takes 0.1 s and each value is then one
//! indexed lookup. PostgreSQL hashes the stage once a statement as fast
//! as it would keep the keys (`references::in_stage`): it keeps none.

use crate::catalog::Module;
use crate::store::db::Conn;

use crate::store::error::Result;

/// Keeps the `key` column's values of the valid rows of stage `job` (an
/// earlier part of a workbook job whose later parts name them) where
/// [`kept`] looks them up: one statement.
pub async fn keep(conn: &mut Conn<'_>, target: &Module, key: usize, job: i64) -> Result<()> {
    let Conn::Sqlite(c) = conn else {
        return Ok(());
    };
    let s = super::table(target);
    let col = super::column(target, key);
    let sql = format!(
        "INSERT INTO ig_part_keys (job, key_col, value) \
         SELECT DISTINCT {job}, {key}, CAST(s.{col} AS TEXT) FROM {s} s WHERE s.job = {job} \
           AND s.action IN ('insert', 'update', 'unchanged') AND s.{col} IS NOT NULL \
         ON CONFLICT DO NOTHING"
    );
    sqlx::query(&sql).execute(&mut **c).await?;
    Ok(())
}

/// `OR …` the looked-up value (as `{v}`) is among the keys [`keep`] kept
/// of stage `job`'s column `key`. The numbers are the service's own,
/// written as literals.
pub fn kept(key: usize, job: i64) -> String {
    format!(
        " OR EXISTS (SELECT 1 FROM ig_part_keys p WHERE p.job = {job} AND p.key_col = {key} \
           AND p.value = CAST({{v}} AS TEXT))"
    )
}

/// Lets go of the keys [`keep`] kept of stage `job`.
pub async fn forget(conn: &mut Conn<'_>, job: i64) -> Result<()> {
    let Conn::Sqlite(c) = conn else {
        return Ok(());
    };
    sqlx::query("DELETE FROM ig_part_keys WHERE job = $1")
        .bind(job)
        .execute(&mut **c)
        .await?;
    Ok(())
}
