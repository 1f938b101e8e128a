//! The rows of a job as validation left them (the preview), their errors,
//! and the change log a commit writes for its rollback.

use sqlx::Row;

use super::{Conn, Result, json_col};
use crate::ledger::Counts;
use crate::on_conn;
use crate::validate::RowError;

/// Rows per multi-row statement: well under both databases' parameter limits.
pub const BATCH: usize = 500;

/// One validated row, staged for the preview and the commit.
#[derive(Debug, Clone)]
pub struct StagedRow {
    /// Position in the file's data rows, from 0.
    pub seq: i64,
    pub row_no: i64,
    /// `insert`, `update`, `unchanged` or `error`.
    pub action: &'static str,
    /// The natural key as canonical JSON, when every key cell is valid.
    pub nkey: Option<String>,
    /// The row's values, JSON object text.
    pub vals: String,
    /// For updates: the target's current values of the provided columns.
    pub before: Option<String>,
    pub errors: Vec<RowError>,
}

/// A staged row read back.
#[derive(Debug, Clone)]
pub struct StoredRow {
    pub seq: i64,
    pub row_no: i64,
    pub action: String,
    pub nkey: Option<String>,
    pub vals: serde_json::Map<String, serde_json::Value>,
    pub before: Option<serde_json::Map<String, serde_json::Value>>,
}

/// Forgets what an earlier, interrupted run of the job staged.
pub async fn clear(conn: &mut Conn<'_>, job_id: &str) -> Result<()> {
    for table in ["ig_job_rows", "ig_job_errors", "ig_job_changes"] {
        let sql = format!("DELETE FROM {table} WHERE job_id = $1");
        on_conn!(conn, c => sqlx::query(&sql).bind(job_id).execute(c).await.map(|r| r.rows_affected()))?;
    }
    Ok(())
}

/// Stores a batch of rows and their errors. On PostgreSQL with `COPY`,
/// the database's bulk loader.
pub async fn insert_batch(conn: &mut Conn<'_>, job_id: &str, rows: &[StagedRow]) -> Result<()> {
    if let Conn::Postgres(c) = conn {
        return copy_batch(c, job_id, rows).await;
    }
    for part in rows.chunks(BATCH) {
        let sql = format!(
            "INSERT INTO ig_job_rows (job_id, seq, row_no, action, nkey, vals, before) VALUES {}",
            super::tuples(conn.dialect(), part.len(), 7)
        );
        on_conn!(conn, c => {
            let mut q = sqlx::query(&sql);
            for r in part {
                q = q.bind(job_id).bind(r.seq).bind(r.row_no).bind(r.action).bind(&r.nkey)
                    .bind(&r.vals).bind(&r.before);
            }
            q.execute(c).await?.rows_affected()
        });
    }
    let errors: Vec<(i64, i64, &RowError)> = rows
        .iter()
        .flat_map(|r| {
            r.errors
                .iter()
                .enumerate()
                .map(move |(n, e)| (r.seq, n as i64, e))
        })
        .collect();
    insert_errors(conn, job_id, &errors).await
}

/// `COPY … FROM STDIN` in text format: the rows, then their errors.
async fn copy_batch(c: &mut sqlx::PgConnection, job_id: &str, rows: &[StagedRow]) -> Result<()> {
    let mut data = Vec::with_capacity(rows.len() * 256);
    for r in rows {
        let (seq, row_no) = (r.seq.to_string(), r.row_no.to_string());
        copy_line(
            &mut data,
            &[
                Some(job_id),
                Some(&seq),
                Some(&row_no),
                Some(r.action),
                r.nkey.as_deref(),
                Some(&r.vals),
                r.before.as_deref(),
            ],
        );
    }
    let mut copy = c
        .copy_in_raw(
            "COPY ig_job_rows (job_id, seq, row_no, action, nkey, vals, before) FROM STDIN",
        )
        .await?;
    copy.send(data).await?;
    copy.finish().await?;
    let mut data = Vec::new();
    for r in rows {
        for (n, e) in r.errors.iter().enumerate() {
            let (seq, n, row_no) = (r.seq.to_string(), n.to_string(), e.row.to_string());
            copy_line(
                &mut data,
                &[
                    Some(job_id),
                    Some(&seq),
                    Some(&n),
                    Some(&row_no),
                    e.column.as_deref(),
                    e.value.as_deref(),
                    Some(&e.code),
                    Some(&e.message),
                ],
            );
        }
    }
    if !data.is_empty() {
        let mut copy = c
            .copy_in_raw(
                "COPY ig_job_errors (job_id, seq, n, row_no, col, value, code, message) FROM STDIN",
            )
            .await?;
        copy.send(data).await?;
        copy.finish().await?;
    }
    Ok(())
}

/// One line of COPY text format: tab-separated, `\N` for null, with
/// backslash, tab, newline and carriage return escaped.
fn copy_line(out: &mut Vec<u8>, fields: &[Option<&str>]) {
    for (i, field) in fields.iter().enumerate() {
        if i > 0 {
            out.push(b'\t');
        }
        match field {
            None => out.extend_from_slice(b"\\N"),
            Some(text) => {
                for &b in text.as_bytes() {
                    match b {
                        b'\\' => out.extend_from_slice(b"\\\\"),
                        b'\t' => out.extend_from_slice(b"\\t"),
                        b'\n' => out.extend_from_slice(b"\\n"),
                        b'\r' => out.extend_from_slice(b"\\r"),
                        _ => out.push(b),
                    }
                }
            }
        }
    }
    out.push(b'\n');
}

/// Stores row errors: (row seq, index within the row, error).
pub async fn insert_errors(
    conn: &mut Conn<'_>,
    job_id: &str,
    errors: &[(i64, i64, &RowError)],
) -> Result<()> {
    for part in errors.chunks(BATCH) {
        let sql = format!(
            "INSERT INTO ig_job_errors (job_id, seq, n, row_no, col, value, code, message) VALUES {}",
            super::tuples(conn.dialect(), part.len(), 8)
        );
        on_conn!(conn, c => {
            let mut q = sqlx::query(&sql);
            for (seq, n, e) in part {
                q = q.bind(job_id).bind(*seq).bind(*n).bind(e.row as i64).bind(&e.column)
                    .bind(&e.value).bind(&e.code).bind(&e.message);
            }
            q.execute(c).await?.rows_affected()
        });
    }
    Ok(())
}

/// A later row whose natural key an earlier row of the file already has.
pub struct Duplicate {
    pub seq: i64,
    pub row_no: i64,
    pub nkey: String,
    pub first_row: i64,
}

/// Rows that repeat an earlier row's natural key (the first one stays).
/// Done in the database so memory does not grow with the file.
pub async fn duplicates(conn: &mut Conn<'_>, job_id: &str) -> Result<Vec<Duplicate>> {
    on_conn!(conn, c => {
        let rows = sqlx::query(
            "SELECT r.seq, r.row_no, r.nkey, f.first_row FROM ig_job_rows r \
             JOIN (SELECT nkey, MIN(seq) AS first_seq, MIN(row_no) AS first_row FROM ig_job_rows \
                   WHERE job_id = $1 AND nkey IS NOT NULL GROUP BY nkey HAVING COUNT(*) > 1) f \
               ON r.nkey = f.nkey \
             WHERE r.job_id = $1 AND r.seq > f.first_seq ORDER BY r.seq")
            .bind(job_id).fetch_all(c).await?;
        rows.iter().map(|r| Ok(Duplicate {
            seq: r.try_get("seq")?,
            row_no: r.try_get("row_no")?,
            nkey: r.try_get("nkey")?,
            first_row: r.try_get("first_row")?,
        })).collect()
    })
}

/// Turns a staged row into an error row and records why.
pub async fn mark_error(
    conn: &mut Conn<'_>,
    job_id: &str,
    seq: i64,
    error: &RowError,
) -> Result<()> {
    let n: i64 = on_conn!(conn, c => sqlx::query_scalar(
        "SELECT COUNT(*) FROM ig_job_errors WHERE job_id = $1 AND seq = $2")
        .bind(job_id).bind(seq).fetch_one(c).await)?;
    on_conn!(conn, c => sqlx::query(
        "UPDATE ig_job_rows SET action = 'error', before = NULL WHERE job_id = $1 AND seq = $2")
        .bind(job_id).bind(seq).execute(c).await.map(|r| r.rows_affected()))?;
    insert_errors(conn, job_id, &[(seq, n, error)]).await
}

/// Counts of a job's staged rows by action.
pub async fn counts(conn: &mut Conn<'_>, job_id: &str) -> Result<Counts> {
    let by_action: Vec<(String, i64)> = on_conn!(conn, c => sqlx::query_as(
        "SELECT action, COUNT(*) FROM ig_job_rows WHERE job_id = $1 GROUP BY action")
        .bind(job_id).fetch_all(c).await)?;
    let mut counts = Counts::default();
    for (action, n) in by_action {
        counts.rows += n;
        match action.as_str() {
            "insert" => counts.insert = n,
            "update" => counts.update = n,
            "unchanged" => counts.unchanged = n,
            _ => counts.errors = n,
        }
    }
    counts.valid = counts.rows - counts.errors;
    Ok(counts)
}

fn stored<R: Row>(r: &R) -> Result<StoredRow>
where
    for<'a> String: sqlx::Decode<'a, R::Database> + sqlx::Type<R::Database>,
    for<'a> i64: sqlx::Decode<'a, R::Database> + sqlx::Type<R::Database>,
    for<'a> &'a str: sqlx::ColumnIndex<R>,
{
    let vals: String = r.try_get("vals")?;
    let before: Option<String> = r.try_get("before")?;
    Ok(StoredRow {
        seq: r.try_get("seq")?,
        row_no: r.try_get("row_no")?,
        action: r.try_get("action")?,
        nkey: r.try_get("nkey")?,
        vals: json_col(&vals, "vals")?,
        before: before.map(|b| json_col(&b, "before")).transpose()?,
    })
}

/// A page of the preview, optionally only one action, in file order.
///
/// Every row of the file is staged with the next sequence number from 0,
/// so without a filter the page starts at `seq = offset` and the total is
/// the last seq + 1: two index probes, whatever the offset. With a filter
/// the page's first row is found by counting entries of the
/// `(job_id, action, seq)` index alone, and only the page's rows are read
/// whole.
pub async fn page(
    conn: &mut Conn<'_>,
    job_id: &str,
    action: Option<&str>,
    offset: i64,
    limit: i64,
) -> Result<(i64, Vec<StoredRow>)> {
    const COLUMNS: &str = "SELECT seq, row_no, action, nkey, vals, before FROM ig_job_rows";
    on_conn!(conn, c => {
        let (total, rows) = match action {
            None => {
                let last: Option<i64> = sqlx::query_scalar(
                    "SELECT MAX(seq) FROM ig_job_rows WHERE job_id = $1")
                    .bind(job_id).fetch_one(&mut *c).await?;
                let rows = sqlx::query(&format!(
                    "{COLUMNS} WHERE job_id = $1 AND seq >= $2 ORDER BY seq LIMIT $3"))
                    .bind(job_id).bind(offset).bind(limit).fetch_all(&mut *c).await?;
                (last.map_or(0, |l| l + 1), rows)
            }
            Some(a) => {
                let total: i64 = sqlx::query_scalar(
                    "SELECT COUNT(*) FROM ig_job_rows WHERE job_id = $1 AND action = $2")
                    .bind(job_id).bind(a).fetch_one(&mut *c).await?;
                let rows = sqlx::query(&format!(
                    "{COLUMNS} WHERE job_id = $1 AND action = $2 AND seq >= (\
                       SELECT seq FROM ig_job_rows WHERE job_id = $1 AND action = $2 \
                       ORDER BY seq LIMIT 1 OFFSET $4) \
                     ORDER BY seq LIMIT $3"))
                    .bind(job_id).bind(a).bind(limit).bind(offset).fetch_all(&mut *c).await?;
                (total, rows)
            }
        };
        let rows = rows.iter().map(stored).collect::<Result<Vec<_>>>()?;
        Ok((total, rows))
    })
}

/// Errors of the rows with these sequence numbers.
pub async fn errors_of(
    conn: &mut Conn<'_>,
    job_id: &str,
    from_seq: i64,
    to_seq: i64,
) -> Result<Vec<(i64, RowError)>> {
    on_conn!(conn, c => {
        let rows = sqlx::query(
            "SELECT seq, row_no, col, value, code, message FROM ig_job_errors \
             WHERE job_id = $1 AND seq >= $2 AND seq <= $3 ORDER BY seq, n")
            .bind(job_id).bind(from_seq).bind(to_seq).fetch_all(c).await?;
        rows.iter().map(|r| Ok((r.try_get("seq")?, row_error(r)?))).collect()
    })
}

fn row_error<R: Row>(r: &R) -> Result<RowError>
where
    for<'a> String: sqlx::Decode<'a, R::Database> + sqlx::Type<R::Database>,
    for<'a> i64: sqlx::Decode<'a, R::Database> + sqlx::Type<R::Database>,
    for<'a> &'a str: sqlx::ColumnIndex<R>,
{
    Ok(RowError {
        row: r.try_get::<i64, _>("row_no")? as u64,
        column: r.try_get("col")?,
        value: r.try_get("value")?,
        code: r.try_get("code")?,
        message: r.try_get("message")?,
    })
}

/// A page of a job's errors, in file order.
pub async fn errors(
    conn: &mut Conn<'_>,
    job_id: &str,
    offset: i64,
    limit: i64,
) -> Result<(i64, Vec<RowError>)> {
    on_conn!(conn, c => {
        let total: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM ig_job_errors WHERE job_id = $1")
            .bind(job_id).fetch_one(&mut *c).await?;
        let rows = sqlx::query(
            "SELECT row_no, col, value, code, message FROM ig_job_errors WHERE job_id = $1 \
             ORDER BY seq, n LIMIT $2 OFFSET $3")
            .bind(job_id).bind(limit).bind(offset).fetch_all(&mut *c).await?;
        let list = rows.iter().map(row_error).collect::<Result<Vec<_>>>()?;
        Ok((total, list))
    })
}

/// `seq IN (…)` for sequence numbers read from the database (integers,
/// written as literals).
fn seq_list(seqs: &[i64]) -> String {
    let list: Vec<String> = seqs.iter().map(i64::to_string).collect();
    format!("seq IN ({})", list.join(", "))
}

/// The staged rows with these sequence numbers (a commit's suspects).
pub async fn rows_at(conn: &mut Conn<'_>, job_id: &str, seqs: &[i64]) -> Result<Vec<StoredRow>> {
    if seqs.is_empty() {
        return Ok(vec![]);
    }
    let sql = format!(
        "SELECT seq, row_no, action, nkey, vals, before FROM ig_job_rows \
         WHERE job_id = $1 AND {} ORDER BY seq",
        seq_list(seqs)
    );
    on_conn!(conn, c => {
        let rows = sqlx::query(&sql).bind(job_id).fetch_all(c).await?;
        rows.iter().map(stored).collect()
    })
}

/// The catalog columns the job's file gave (the keys of a staged row).
pub async fn provided_columns(
    conn: &mut Conn<'_>,
    module: &crate::catalog::Module,
    job_id: &str,
) -> Result<Vec<usize>> {
    let vals: Option<String> = on_conn!(conn, c => sqlx::query_scalar(
        "SELECT vals FROM ig_job_rows WHERE job_id = $1 ORDER BY seq LIMIT 1")
        .bind(job_id).fetch_optional(c).await)?;
    let Some(vals) = vals else { return Ok(vec![]) };
    let obj: serde_json::Map<String, serde_json::Value> = json_col(&vals, "vals")?;
    Ok(module
        .columns
        .iter()
        .enumerate()
        .filter(|(_, c)| obj.contains_key(&c.name))
        .map(|(i, _)| i)
        .collect())
}

/// One update a commit made, logged so a rollback can undo exactly it
/// (written by `staged::log_updates`).
#[derive(Debug, Clone)]
pub struct Change {
    pub seq: i64,
    pub row_no: i64,
    pub nkey: String,
    /// The whole target row after, JSON object.
    pub after: String,
}

/// The logged changes with these sequence numbers (a rollback's suspects).
pub async fn changes_at(conn: &mut Conn<'_>, job_id: &str, seqs: &[i64]) -> Result<Vec<Change>> {
    if seqs.is_empty() {
        return Ok(vec![]);
    }
    let sql = format!(
        "SELECT seq, row_no, nkey, after FROM ig_job_changes WHERE job_id = $1 AND {} ORDER BY seq",
        seq_list(seqs)
    );
    on_conn!(conn, c => {
        let rows = sqlx::query(&sql).bind(job_id).fetch_all(c).await?;
        rows.iter().map(|r| Ok(Change {
            seq: r.try_get("seq")?,
            row_no: r.try_get("row_no")?,
            nkey: r.try_get("nkey")?,
            after: r.try_get("after")?,
        })).collect()
    })
}

#[cfg(test)]
mod tests {
    #[test]
    fn copy_lines_escape_what_copy_reads_specially() {
        let mut out = Vec::new();
        super::copy_line(&mut out, &[Some("a\tb\\c\nd\re"), None, Some("")]);
        assert_eq!(out, b"a\\tb\\\\c\\nd\\re\t\\N\t\n");
    }
}
