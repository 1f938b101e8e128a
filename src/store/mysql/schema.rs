//! MariaDB's and MySQL's schema: the ledger's migrations, and what the
//! database says of the tables, indexes and columns it has (in the
//! connection's database), including whether a module table the business
//! system made holds the types importgate writes.

use sqlx::MySqlConnection;
use sqlx::migrate::Migrator;

use crate::catalog::{ColumnType, Module};
use crate::store::error::{Result, StoreError};

/// The ledger's migrations for MariaDB and MySQL, `migrations/mysql/`:
/// timestamps as `DATETIME(6)` in UTC, bytes as `LONGBLOB`, indexed text
/// as `VARCHAR`.
pub fn migrations() -> Migrator {
    sqlx::migrate!("./migrations/mysql")
}

/// Whether a table or an index of this name exists in the database.
pub async fn exists(c: &mut MySqlConnection, name: &str) -> Result<bool> {
    let found: i64 = sqlx::query_scalar(
        "SELECT (SELECT COUNT(*) FROM information_schema.tables \
                 WHERE table_schema = DATABASE() AND table_name = ?) + \
                (SELECT COUNT(*) FROM information_schema.statistics \
                 WHERE table_schema = DATABASE() AND index_name = ?)",
    )
    .bind(name)
    .bind(name)
    .fetch_one(c)
    .await?;
    Ok(found > 0)
}

/// The names of a table's columns.
pub async fn columns(c: &mut MySqlConnection, table: &str) -> Result<Vec<String>> {
    Ok(types(c, table).await?.into_iter().map(|(n, _)| n).collect())
}

/// A table's columns with their types as the server writes them
/// (`varchar(255)`, `decimal(12,2)`, `tinyint(1)`).
async fn types(c: &mut MySqlConnection, table: &str) -> Result<Vec<(String, String)>> {
    Ok(sqlx::query_as(
        "SELECT CAST(column_name AS CHAR), CAST(column_type AS CHAR) \
         FROM information_schema.columns \
         WHERE table_schema = DATABASE() AND table_name = ? ORDER BY ordinal_position",
    )
    .bind(table)
    .fetch_all(c)
    .await?)
}

/// `Ok` when the module's table is missing or holds, in each catalog
/// column it has, a type that keeps the module's values: a table the
/// business system made may be older than importgate. The error names the
/// table, the column, the type found and the one expected.
pub async fn check_module_table(c: &mut MySqlConnection, module: &Module) -> Result<()> {
    let found = types(c, &module.table).await?;
    for column in &module.columns {
        let Some((_, ty)) = found.iter().find(|(n, _)| *n == column.name) else {
            continue;
        };
        let scaled = column.scale.is_none_or(|s| scale_of(ty) == Some(s));
        if !keeps(ty, column.ty) || !scaled {
            return Err(StoreError::Schema(format!(
                "table {} column {} is {ty}, where importgate writes {} ({})",
                module.table,
                column.name,
                column.ty.as_str(),
                super::sql::module_column_type(column, false)
            )));
        }
    }
    Ok(())
}

/// The scale of a `decimal(p,s)` type: a catalog scale keeps values at
/// exactly that many places, so a table at another would read them back
/// otherwise (or round them).
fn scale_of(found: &str) -> Option<u32> {
    let inside = found.split_once('(')?.1.split_once(')')?.0;
    inside.split_once(',')?.1.trim().parse().ok()
}

/// Whether a column of server type `found` keeps values of `ty`.
fn keeps(found: &str, ty: ColumnType) -> bool {
    let found = found.to_ascii_lowercase();
    let base = found.split(['(', ' ']).next().unwrap_or_default();
    match ty {
        ColumnType::Text => matches!(
            base,
            "varchar" | "char" | "text" | "tinytext" | "mediumtext" | "longtext"
        ),
        ColumnType::Integer => matches!(base, "int" | "bigint") && !found.contains("unsigned"),
        ColumnType::Bigint => base == "bigint" && !found.contains("unsigned"),
        ColumnType::Numeric => base == "decimal",
        ColumnType::Date => base == "date",
        ColumnType::Timestamptz => matches!(base, "datetime" | "timestamp"),
        ColumnType::Boolean => found.starts_with("tinyint(1)") || base == "boolean",
    }
}

#[cfg(test)]
mod tests {
    use super::{keeps, scale_of};
    use crate::catalog::ColumnType;

    #[test]
    fn a_column_keeps_the_values_of_its_own_kind_only() {
        assert!(keeps("varchar(255)", ColumnType::Text));
        assert!(keeps("decimal(12,2)", ColumnType::Numeric));
        assert!(keeps("tinyint(1)", ColumnType::Boolean));
        assert!(keeps("datetime(6)", ColumnType::Timestamptz));
        assert!(!keeps("int(11)", ColumnType::Numeric));
        assert!(!keeps("varchar(20)", ColumnType::Date));
        assert!(!keeps("int(10) unsigned", ColumnType::Bigint));
        assert!(!keeps("tinyint(4)", ColumnType::Boolean));
        assert_eq!(scale_of("decimal(12,2)"), Some(2));
        assert_eq!(scale_of("decimal(30, 3) unsigned"), Some(3));
        assert_eq!(scale_of("decimal(10)"), None);
    }
}
