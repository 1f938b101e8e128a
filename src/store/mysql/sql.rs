//! The words MariaDB's and MySQL's statements differ by, for the
//! statements the shared files write once (see `store::dialect`; SQLite's
//! are `sqlite::sql`, PostgreSQL's `postgres::sql`). Sessions run with
//! `ANSI_QUOTES` and `PIPES_AS_CONCAT` (`connect::SQL_MODE`), so quoted
//! names and `||` read as in the other two.

use std::borrow::Cow;

use crate::catalog::{Column, ColumnType};

/// Bind parameters are anonymous `?`, used once each, in order.
pub fn param(_n: usize) -> String {
    "?".to_string()
}

/// The text of a column no index holds: `LONGTEXT`, as unbounded as the
/// other databases' text (MySQL's `TEXT` stops at 64 KiB).
pub const TEXT: &str = "LONGTEXT";

/// The text of a column an index holds: InnoDB indexes at most 3,072
/// bytes, 768 characters of `utf8mb4`, so a key of up to three text
/// columns fits at this length.
pub const KEY_TEXT: &str = "VARCHAR(255)";

/// Each type its own: `DECIMAL` with room for the values other databases
/// keep exactly (28 digits each side of the point, as many as a value here holds), `DATE`, `DATETIME(6)`
/// in UTC (sessions run at `+00:00`), `BOOLEAN` (`TINYINT(1)`).
pub fn column_type(ty: ColumnType) -> &'static str {
    match ty {
        ColumnType::Text => TEXT,
        ColumnType::Integer => "INT",
        ColumnType::Bigint => "BIGINT",
        ColumnType::Numeric => "DECIMAL(56, 28)",
        ColumnType::Date => "DATE",
        ColumnType::Timestamptz => "DATETIME(6)",
        ColumnType::Boolean => "BOOLEAN",
    }
}

/// The type of a catalog column: [`KEY_TEXT`] for text a unique index
/// holds (`key`, a natural key's), `DECIMAL` at the catalog's scale with
/// 28 digits before the point, else [`column_type`].
pub fn module_column_type(column: &Column, key: bool) -> Cow<'static, str> {
    match (column.ty, column.scale) {
        (ColumnType::Text, _) if key => Cow::Borrowed(KEY_TEXT),
        (ColumnType::Numeric, Some(s)) => Cow::Owned(format!("DECIMAL({}, {s})", 28 + s)),
        (ty, _) => Cow::Borrowed(column_type(ty)),
    }
}

/// The fraction digits of an unscaled numeric column ([`column_type`]):
/// its values are read back with the zeros that pad them trimmed.
pub const UNSCALED: usize = 28;

/// An auto-increment key, which a row given an id of its own leaves alone.
pub const ID_COLUMN: &str = "\"id\" BIGINT AUTO_INCREMENT PRIMARY KEY";

/// InnoDB (transactions), `utf8mb4` (every character, emoji included)
/// compared by its bytes, as the other databases compare text.
pub const TABLE_OPTIONS: &str = " ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin";

/// `<=>` compares nulls as equal.
pub fn null_safe_eq(a: &str, b: &str) -> String {
    format!("{a} <=> {b}")
}

/// Each type compares as itself (`4.5 = 4.50` of a `DECIMAL`).
pub fn equals(column: &str, param: &str) -> String {
    format!("{column} = {param}")
}

/// `JSON_TABLE` over the array's strings.
pub fn json_text_list(param: &str) -> String {
    format!("SELECT jt.v FROM JSON_TABLE({param}, '$[*]' COLUMNS (v {KEY_TEXT} PATH '$')) jt")
}

/// `SKIP LOCKED`: replicas claim side by side, each passing over a job
/// another's claim holds instead of waiting for it.
pub const CLAIM_LOCK: &str = " FOR UPDATE SKIP LOCKED";

/// Staged rows a commit's or rollback's `UPDATE` or `DELETE` takes at
/// most: InnoDB keeps every row lock and undo record of a statement, so a
/// large job goes a range at a time.
pub const ROWS_PER_WRITE: i64 = 50_000;

/// [`ROWS_PER_WRITE`], whatever the job's size.
pub fn rows_per_write(_rows: i64) -> i64 {
    ROWS_PER_WRITE
}

/// The multi-table `DELETE`, a join.
pub fn delete_joined(target: &str, _id: &str, from: &str, on: &str, filter: &str) -> String {
    format!("DELETE {target} FROM {from} r JOIN {target} ON {on} WHERE {filter}")
}

/// Nothing: `JSON_VALUE` reads a member where it is ([`json_member`]).
pub fn json_record(_json: &str, _alias: &str, _columns: &[(&str, ColumnType)]) -> String {
    String::new()
}

/// `JSON_VALUE` of the member.
pub fn json_member(json: &str, _alias: &str, name: &str) -> String {
    format!("JSON_VALUE({json}, {})", literal(&format!("$.\"{name}\"")))
}

/// `GROUP_CONCAT` with its own `ORDER BY`.
pub fn joined_in_order(rows: &str, column: &str, order: &str) -> String {
    format!("(SELECT GROUP_CONCAT(o.{column} ORDER BY o.{order} SEPARATOR ',') FROM ({rows}) o)")
}

/// The key's text itself (compared by its bytes).
pub fn sortable_key(key: &str) -> String {
    key.to_string()
}

/// For integers, booleans and dates. Text is not: a table the business
/// system made may compare case-insensitively, and every collation but
/// the `NO PAD` ones ignores trailing spaces; nor are `4.5 = 4.50` or two
/// timestamps of one instant.
pub fn key_match_is_exact(ty: ColumnType) -> bool {
    matches!(
        ty,
        ColumnType::Integer | ColumnType::Bigint | ColumnType::Boolean | ColumnType::Date
    )
}

/// `CREATE INDEX` without `IF NOT EXISTS` (MySQL has none; the caller
/// asks first) nor a `WHERE` (no partial indexes).
pub fn create_index(name: &str, table: &str, columns: &str, unique: bool) -> String {
    let unique = if unique { "UNIQUE " } else { "" };
    format!("CREATE {unique}INDEX {name} ON {table} ({columns})")
}

/// A string literal for SQL. Only catalog identifiers ever reach it (they
/// are `[a-z0-9_]`), but it escapes quotes anyway.
fn literal(s: &str) -> String {
    format!("'{}'", s.replace('\'', "''"))
}

/// What follows a module table's `CREATE TABLE (…)`.
pub fn module_table_options() -> String {
    TABLE_OPTIONS.to_string()
}

/// What follows a stage table's `CREATE TABLE (…)`.
pub const STAGE_TABLE_OPTIONS: &str = TABLE_OPTIONS;

/// `DROP INDEX … ON` its table (the caller asks first whether it exists).
pub fn drop_index(name: &str, table: &str) -> String {
    format!("DROP INDEX {name} ON {table}")
}

/// `CAST(… AS CHAR)`: MySQL casts to no `TEXT`.
pub fn as_text(expr: &str) -> String {
    format!("CAST({expr} AS CHAR)")
}

/// `INSERT IGNORE`, which skips a row a unique index already holds. (It
/// also turns other errors of the row into warnings, so it is used only
/// where the values are the service's own, sized to their columns.)
pub fn insert_or_skip(insert: &str) -> String {
    format!("INSERT IGNORE INTO {insert}")
}

/// The multi-table `UPDATE`, a join: every column set is the target's,
/// named with its table (a stage has columns of other names alike).
pub fn update_joined(target: &str, sets: &[(String, String)], from: &str, filter: &str) -> String {
    let sets: Vec<String> = sets
        .iter()
        .map(|(c, e)| format!("{target}.{c} = {e}"))
        .collect();
    format!(
        "UPDATE {target} JOIN {from} r ON {filter} SET {}",
        sets.join(", ")
    )
}
