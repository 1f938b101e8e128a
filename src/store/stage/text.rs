//! A batch of staged rows and their errors as [`TabText`], for the
//! servers' bulk loaders: PostgreSQL's `COPY` and MySQL's `LOAD DATA`
//! read the same lines, into the columns named here, in this order.

use super::{Stage, StagedRow};
use crate::ids::JobId;
use crate::store::tab_text::TabText;
use crate::validate::Value;

/// The table of the rows' errors.
pub const ERROR_TABLE: &str = "ig_job_errors";

/// Its columns, in the order of [`errors_text`].
pub const ERROR_COLUMNS: &str = "(job_id, seq, n, row_no, col, value, code, message, rule)";

/// The stage table's columns (`stage.table()`), in the order of
/// [`rows_text`].
pub fn row_columns(stage: &Stage<'_>) -> String {
    format!(
        "(job, seq, row_no, action, nkey, vals, warns, norm{})",
        stage.written_list()
    )
}

/// The rows, a line each; typed values other than integers, text and
/// dates in the database's own words (`spell`).
pub fn rows_text(stage: &Stage<'_>, rows: &[StagedRow], spell: fn(&Value) -> String) -> TabText {
    let mut data = TabText::with_capacity(rows.len() * 256);
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
            data.value(r.typed(k).0, spell);
        }
        for k in 0..stage.provided.len() {
            data.value(r.typed(k).1, spell);
        }
        data.end_row();
    }
    data
}

/// The rows' errors, a line each (empty when they have none).
pub fn errors_text(job_id: &JobId, rows: &[StagedRow]) -> TabText {
    let mut data = TabText::with_capacity(0);
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
    data
}
