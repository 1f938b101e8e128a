//! A batch of staged rows written to PostgreSQL: `COPY`, the database's
//! bulk loader, of the rows and then of their errors, as
//! `stage::text` writes them.

use sqlx::PgConnection;

use super::values::pg_input;
use crate::ids::JobId;
use crate::store::error::Result;
use crate::store::stage::text::{ERROR_COLUMNS, ERROR_TABLE, errors_text, row_columns, rows_text};
use crate::store::stage::{Stage, StagedRow};

/// Stores a batch of rows and their errors: `COPY … FROM STDIN` in text
/// format, the rows, then their errors. Typed values go as PostgreSQL's
/// own text of them ([`pg_input`]), which it reads back exactly, whatever
/// the year of a before-image.
pub async fn insert_batch(
    c: &mut PgConnection,
    stage: &Stage<'_>,
    job_id: &JobId,
    rows: &[StagedRow],
) -> Result<()> {
    let data = rows_text(stage, rows, pg_input);
    let sql = format!("COPY {} {} FROM STDIN", stage.table(), row_columns(stage));
    let mut copy = c.copy_in_raw(&sql).await?;
    copy.send(data.into_bytes()).await?;
    copy.finish().await?;
    let errors = errors_text(job_id, rows);
    if !errors.is_empty() {
        let sql = format!("COPY {ERROR_TABLE} {ERROR_COLUMNS} FROM STDIN");
        let mut copy = c.copy_in_raw(&sql).await?;
        copy.send(errors.into_bytes()).await?;
        copy.finish().await?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use chrono::NaiveDate;

    use super::pg_input;
    use crate::store::tab_text::TabText;
    use crate::validate::Value;

    #[test]
    fn values_are_written_as_postgresql_reads_them() {
        let date = |y, m, d| Value::Date(NaiveDate::from_ymd_opt(y, m, d).unwrap());
        for value in [
            date(2024, 2, 29),
            date(1, 1, 1),
            date(9999, 12, 31),
            date(0, 6, 15),
            date(-44, 3, 15),
            date(12345, 1, 2),
            Value::Int(i64::MIN),
            Value::Text("x\ty".into()),
            Value::Decimal("-12.340".parse().unwrap()),
            Value::Bool(true),
        ] {
            let mut copy = TabText::with_capacity(0);
            copy.value(Some(&value), pg_input);
            let mut expected = TabText::with_capacity(0);
            expected.text(&pg_input(&value));
            assert_eq!(
                String::from_utf8(copy.into_bytes()).unwrap(),
                String::from_utf8(expected.into_bytes()).unwrap(),
                "{value:?}"
            );
        }
    }
}
