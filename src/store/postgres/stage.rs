//! A batch of staged rows written to PostgreSQL: `COPY`, the database's
//! bulk loader, of the rows and then of their errors, the text written by
//! [`CopyText`].

use sqlx::PgConnection;

use super::copy_text::CopyText;
use crate::ids::JobId;
use crate::store::error::Result;
use crate::store::stage::{Stage, StagedRow};

/// Stores a batch of rows and their errors: `COPY … FROM STDIN` in text
/// format, the rows, then their errors. Typed values go as PostgreSQL's
/// own text of them ([`CopyText::value`]), which it reads back exactly,
/// whatever the year of a before-image.
pub async fn insert_batch(
    c: &mut PgConnection,
    stage: &Stage<'_>,
    job_id: &JobId,
    rows: &[StagedRow],
) -> Result<()> {
    let mut data = CopyText::with_capacity(rows.len() * 256);
    for r in rows {
        data.int(stage.job);
        data.int(r.seq);
        data.int(r.row_no);
        data.text(r.action.as_str());
        data.opt_text(r.nkey.as_deref());
        data.opt_text(r.vals.as_deref());
        data.opt_text(r.warns.as_deref());
        data.opt_text(r.norm.as_deref());
        data.opt_int(r.same());
        for k in 0..stage.provided.len() {
            data.value(r.typed(k).0);
        }
        for k in 0..stage.provided.len() {
            data.value(r.typed(k).1);
        }
        data.end_row();
    }
    let sql = format!(
        "COPY {} (job, seq, row_no, action, nkey, vals, warns, norm{}) FROM STDIN",
        stage.table(),
        stage.written_list()
    );
    let mut copy = c.copy_in_raw(&sql).await?;
    copy.send(data.into_bytes()).await?;
    copy.finish().await?;
    copy_errors(c, job_id, rows).await
}

/// `COPY` of the rows' errors.
async fn copy_errors(c: &mut PgConnection, job_id: &JobId, rows: &[StagedRow]) -> Result<()> {
    let mut data = CopyText::with_capacity(0);
    for r in rows {
        for (n, e) in r.errors.iter().enumerate() {
            data.text(job_id.as_str());
            data.int(r.seq);
            data.int(n as i64);
            data.int(e.row as i64);
            data.opt_text(e.column.as_deref());
            data.opt_text(e.value.as_deref());
            data.text(e.code.as_str());
            data.text(&e.message);
            data.opt_text(e.rule.as_deref());
            data.end_row();
        }
    }
    if !data.is_empty() {
        let sql = "COPY ig_job_errors (job_id, seq, n, row_no, col, value, code, message, rule) FROM STDIN";
        let mut copy = c.copy_in_raw(sql).await?;
        copy.send(data.into_bytes()).await?;
        copy.finish().await?;
    }
    Ok(())
}
