//! References between modules (API.md section 12), in SQL: which
//! referencing values the referenced table holds, looked up a batch at a
//! time, and which rows of other modules a rollback would leave naming
//! nothing. Set-based: one statement a batch or a reference, never one a
//! row (the complaint about row-by-row link checks elsewhere).

use std::collections::HashSet;

use super::db::Conn;
use super::error::Result;
use super::sql::ident;
use super::stage::{self, Stage};
use super::{mysql, postgres, sqlite};
use crate::catalog::{Module, Reference};
use crate::on_conn;
use crate::validate::{RowAction, Value};

/// The positions in `values` of those the `key` column of `target`'s table
/// holds, a few statements whatever their number (`sqlite::lookup::present`,
/// `postgres::lookup::present`); with `staged`, also those a valid row of
/// that stage holds (an earlier part of the same workbook job, API.md
/// section 16: a row in error or excluded names nothing): on SQLite as
/// [`stage::keys::keep`] kept them ([`stage::keys::kept`]), on PostgreSQL
/// from the stage itself ([`in_stage`]).
pub async fn present(
    conn: &mut Conn<'_>,
    target: &Module,
    key: usize,
    values: &[Value],
    staged: Option<i64>,
) -> Result<HashSet<usize>> {
    match conn {
        Conn::Sqlite(c) => {
            let also = staged.map(|job| stage::keys::kept(key, job));
            sqlite::lookup::present(c, target, key, values, also.as_deref()).await
        }
        Conn::Postgres(c) => {
            let also = staged.map(|job| in_stage(target, key, job));
            postgres::lookup::present(c, target, key, values, also.as_deref()).await
        }
        Conn::Mysql(c) => {
            let also = staged.map(|job| in_stage(target, key, job));
            mysql::lookup::present(c, target, key, values, also.as_deref()).await
        }
    }
}

/// `OR {v} IN (…)` over a stage's valid rows, the looked-up value as
/// `{v}`. The stage has no index of the column (staging stays a plain
/// append), so the subquery is uncorrelated: PostgreSQL reads the stage
/// into a hash once a statement, 30 ms at 100k products for a statement
/// of 5,000 values, no more than keeping the keys as SQLite does costs it
/// (220–350 ms for 100k). The stage number is the service's own, written
/// as a literal.
fn in_stage(target: &Module, key: usize, job: i64) -> String {
    let s = crate::store::stage::table(target);
    let col = crate::store::stage::column(target, key);
    format!(
        " OR {{v}} IN (SELECT s.{col} FROM {s} s WHERE s.job = {job} \
           AND s.action IN ('insert', 'update', 'unchanged'))"
    )
}

/// A key value a rollback would take out of the referenced table while
/// rows of another module still name it.
#[derive(Debug, Clone)]
pub struct Orphaned {
    /// The file row of the job that inserted it (the first, if several).
    pub row_no: i64,
    /// The value, as text.
    pub value: String,
    /// Rows of the referring module that name it.
    pub rows: i64,
}

/// What undoing the inserts of `stage`'s job would orphan in `referrer`'s
/// table through reference `r` (which names `stage.module`): the values
/// the job inserted that no other row of the table holds, with the number
/// of referring rows naming each, the first `listed` in file order, and
/// the referring rows in all.
pub async fn orphans(
    conn: &mut Conn<'_>,
    stage: &Stage<'_>,
    referrer: &Module,
    r: &Reference,
    listed: i64,
) -> Result<(Vec<Orphaned>, i64)> {
    let values = gone_values(stage, r);
    let (x, x_col) = (ident(&referrer.table), ident(&r.column));
    let sql = format!(
        "SELECT gone.row_no, {}, COUNT(*) FROM ({values}) gone \
         JOIN {x} x ON x.{x_col} = gone.v GROUP BY gone.row_no, gone.v ORDER BY gone.row_no",
        conn.dialect().as_text("gone.v")
    );
    let found: Vec<(i64, String, i64)> = on_conn!(conn, c => sqlx::query_as(&sql)
        .bind(stage.job).bind(stage.job).fetch_all(c).await)?;
    let total = found.iter().map(|f| f.2).sum();
    let listed = found
        .into_iter()
        .take(listed.max(0) as usize)
        .map(|(row_no, value, rows)| Orphaned {
            row_no,
            value,
            rows,
        })
        .collect();
    Ok((listed, total))
}

/// The values of `r`'s key a rollback of the job staged in `stage` would
/// take out of the table (inserted by the job, not there again under
/// another row), each with the first file row that inserted it: a
/// subquery of `v` and `row_no`, bound to the job as `$1` and `$2`.
fn gone_values(stage: &Stage<'_>, r: &Reference) -> String {
    let target = stage.module;
    let (s, t) = (stage.table(), ident(&target.table));
    let key = stage::column(target, r.key_index);
    let insert = RowAction::Insert.as_str();
    // The same row of the table as a staged insert of this job: its
    // natural key.
    let same_row: Vec<String> = target
        .key_columns
        .iter()
        .map(|&i| {
            format!(
                "s2.{} = t.{}",
                stage::column(target, i),
                ident(&target.columns[i].name)
            )
        })
        .collect();
    format!(
        "SELECT s.{key} AS v, MIN(s.row_no) AS row_no FROM {s} s \
         WHERE s.job = $1 AND s.action = '{insert}' AND s.{key} IS NOT NULL \
           AND NOT EXISTS (SELECT 1 FROM {t} t WHERE t.{col} = s.{key} \
             AND NOT EXISTS (SELECT 1 FROM {s} s2 WHERE s2.job = $2 \
               AND s2.action = '{insert}' AND {same}))
         GROUP BY s.{key}",
        col = ident(&target.columns[r.key_index].name),
        same = same_row.join(" AND ")
    )
}

/// The first `limit` rows of `referrer` that name a value a rollback of
/// the job staged in `stage` would delete, in the referrer's key order:
/// each row's natural key (its parts as text) and the value it names.
pub async fn referring(
    conn: &mut Conn<'_>,
    stage: &Stage<'_>,
    referrer: &Module,
    r: &Reference,
    limit: i64,
) -> Result<Vec<(Vec<Option<String>>, String)>> {
    let values = gone_values(stage, r);
    let (x, x_col) = (ident(&referrer.table), ident(&r.column));
    let keys: Vec<String> = (referrer.key_columns.iter())
        .map(|&i| ident(&referrer.columns[i].name))
        .collect();
    let parts: Vec<String> = keys
        .iter()
        .map(|k| conn.dialect().as_text(&format!("x.{k}")))
        .collect();
    let sql = format!(
        "SELECT {parts}, {} FROM ({values}) gone \
         JOIN {x} x ON x.{x_col} = gone.v ORDER BY {order} LIMIT $3",
        conn.dialect().as_text(&format!("x.{x_col}")),
        parts = parts.join(", "),
        order = keys
            .iter()
            .map(|k| format!("x.{k}"))
            .collect::<Vec<_>>()
            .join(", ")
    );
    let n = keys.len();
    on_conn!(conn, c => {
        use sqlx::Row;
        let rows = sqlx::query(&sql).bind(stage.job).bind(stage.job).bind(limit)
            .fetch_all(c).await?;
        rows.iter().map(|row| {
            let key = (0..n).map(|i| row.try_get::<Option<String>, _>(i)).collect::<std::result::Result<_, _>>()?;
            let value: Option<String> = row.try_get(n)?;
            Ok((key, value.unwrap_or_default()))
        }).collect()
    })
}
