//! The words SQLite's statements differ by, for the statements the shared
//! files write once (see `store::dialect`; PostgreSQL's are
//! `postgres::sql`).

use crate::catalog::ColumnType;

/// Bind parameters are anonymous `?`, used once each, in order: sqlx
/// resolves each named parameter by asking SQLite for its name, which
/// scans the statement's list of names, quadratic in a multi-row insert
/// (`sqlite3_bind_parameter_name` held 70 % of a 100k-row validation's
/// samples under `perf record -g`).
pub fn param(_n: usize) -> String {
    "?".to_string()
}

/// Integers and booleans are SQLite's integers, everything else text:
/// `numeric` as canonical decimal text (SQLite's own NUMERIC affinity
/// would turn `0.1` into a float and lose digits), dates and timestamps
/// as RFC 3339 text in UTC, which sorts as they do.
pub fn column_type(ty: ColumnType) -> &'static str {
    match ty {
        ColumnType::Integer | ColumnType::Bigint => "INTEGER",
        ColumnType::Boolean => "BOOLEAN",
        ColumnType::Text | ColumnType::Numeric | ColumnType::Date | ColumnType::Timestamptz => {
            "TEXT"
        }
    }
}

/// The rowid itself, never reused for a deleted row's id.
pub const ID_COLUMN: &str = "\"id\" INTEGER PRIMARY KEY AUTOINCREMENT";

/// None.
pub const MODULE_TABLE_OPTIONS: &str = "";

/// The rows themselves ordered by their key `(job, seq)`, with no rowid
/// and no second copy of the key in a separate index.
pub const STAGE_TABLE_OPTIONS: &str = " WITHOUT ROWID";

/// `IS` compares nulls as equal.
pub fn null_safe_eq(a: &str, b: &str) -> String {
    format!("{a} IS {b}")
}

/// A `numeric` is text here, kept as it was written (`4.50`), so its
/// equality is asked of the numbers the texts read as: `4.5` matches it.
/// Nearby numbers past a double's precision match too, and are told apart
/// by the caller.
pub fn equals(column: &str, param: &str, ty: ColumnType) -> String {
    match ty {
        ColumnType::Numeric => format!("CAST({column} AS REAL) = CAST({param} AS REAL)"),
        _ => format!("{column} = {param}"),
    }
}

/// `json_each`: SQLite makes a temporary index of the list.
pub fn json_text_list(param: &str) -> String {
    format!("SELECT value FROM json_each({param})")
}

/// None: a `BEGIN IMMEDIATE` transaction already excludes every other
/// writer, claims included.
pub const CLAIM_LOCK: &str = "";

/// Staged rows a commit's or rollback's `UPDATE` or `DELETE` takes at
/// most: SQLite gathers the rows such a statement touches in memory before
/// changing them, so the writes of a large job go a range at a time to
/// keep memory flat.
pub const ROWS_PER_WRITE: i64 = 50_000;

/// [`ROWS_PER_WRITE`], whatever the job's size.
pub fn rows_per_write(_rows: i64) -> i64 {
    ROWS_PER_WRITE
}

/// SQLite has no `DELETE … USING`: the ids of the rows met, by a subquery.
pub fn delete_joined(target: &str, id: &str, from: &str, on: &str, filter: &str) -> String {
    format!(
        "DELETE FROM {target} WHERE {id} IN (SELECT {target}.{id} FROM {from} r JOIN {target} \
         ON {on} WHERE {filter})"
    )
}

/// Nothing: `json_extract` reads a member where it is
/// ([`json_member`]), and SQLite caches the parsed text itself.
pub fn json_record(_json: &str, _alias: &str, _columns: &[(&str, ColumnType)]) -> String {
    String::new()
}

/// `json_extract` of the member.
pub fn json_member(json: &str, _alias: &str, name: &str) -> String {
    format!("json_extract({json}, {})", literal(&format!("$.{name}")))
}

/// `group_concat` over the rows sorted in a subquery.
pub fn joined_in_order(rows: &str, column: &str, order: &str) -> String {
    format!("(SELECT group_concat(o.{column}, ',') FROM ({rows} ORDER BY {order}) o)")
}

/// The key's text itself.
pub fn sortable_key(key: &str) -> String {
    key.to_string()
}

/// Always: SQLite compares a key in its column's affinity and binary
/// collation, so a match is the value itself.
pub fn key_match_is_exact(_ty: ColumnType) -> bool {
    true
}

/// A string literal for SQL. Only catalog identifiers ever reach it (they
/// are `[a-z0-9_]`), but it escapes quotes anyway.
fn literal(s: &str) -> String {
    format!("'{}'", s.replace('\'', "''"))
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_member_name_is_a_quoted_literal() {
        assert_eq!(
            super::json_member("r.vals", "v", "o'k"),
            "json_extract(r.vals, '$.o''k')"
        );
    }
}
