//! Which SQL a connection speaks, and the words that differ: each method
//! is one small difference in the text of a statement written once in the
//! shared files, answered by each backend's `sql.rs`
//! (`sqlite::sql`, `postgres::sql`) side by side.

use super::{mysql, postgres, sqlite};
use std::borrow::Cow;

use crate::catalog::{Column, ColumnType};

/// Which SQL dialect a connection speaks (for the few statements that differ).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dialect {
    Sqlite,
    Postgres,
    Mysql,
}

impl Dialect {
    /// Bind parameter number `n` (from 1). Statements built with it must
    /// use their parameters once each, in order (see `sqlite::sql::param`).
    pub fn param(self, n: usize) -> String {
        match self {
            Dialect::Sqlite => sqlite::sql::param(n),
            Dialect::Postgres => postgres::sql::param(n),
            Dialect::Mysql => mysql::sql::param(n),
        }
    }

    /// `(…), (…)`: value tuples of `cols` parameters for `rows` rows,
    /// numbered from 1 (see [`Dialect::param`]).
    pub fn tuples(self, rows: usize, cols: usize) -> String {
        (0..rows)
            .map(|r| {
                let marks: Vec<String> = (1..=cols).map(|c| self.param(r * cols + c)).collect();
                format!("({})", marks.join(", "))
            })
            .collect::<Vec<_>>()
            .join(", ")
    }

    /// The SQL type of a module column.
    pub fn column_type(self, ty: ColumnType) -> &'static str {
        match self {
            Dialect::Sqlite => sqlite::sql::column_type(ty),
            Dialect::Postgres => postgres::sql::column_type(ty),
            Dialect::Mysql => mysql::sql::column_type(ty),
        }
    }

    /// The `id` column of a module table: its key, numbered by the database.
    pub fn id_column(self) -> &'static str {
        match self {
            Dialect::Sqlite => sqlite::sql::ID_COLUMN,
            Dialect::Postgres => postgres::sql::ID_COLUMN,
            Dialect::Mysql => mysql::sql::ID_COLUMN,
        }
    }

    /// What follows a module table's `CREATE TABLE (…)`.
    pub fn module_table_options(self) -> String {
        match self {
            Dialect::Sqlite => sqlite::sql::MODULE_TABLE_OPTIONS.to_string(),
            Dialect::Postgres => postgres::sql::module_table_options(),
            Dialect::Mysql => mysql::sql::module_table_options(),
        }
    }

    /// What follows a stage table's `CREATE TABLE (…)`.
    pub fn stage_table_options(self) -> &'static str {
        match self {
            Dialect::Sqlite => sqlite::sql::STAGE_TABLE_OPTIONS,
            Dialect::Postgres => postgres::sql::STAGE_TABLE_OPTIONS,
            Dialect::Mysql => mysql::sql::STAGE_TABLE_OPTIONS,
        }
    }

    /// `a` equals `b`, nulls equal to each other.
    pub fn null_safe_eq(self, a: &str, b: &str) -> String {
        match self {
            Dialect::Sqlite => sqlite::sql::null_safe_eq(a, b),
            Dialect::Postgres => postgres::sql::null_safe_eq(a, b),
            Dialect::Mysql => mysql::sql::null_safe_eq(a, b),
        }
    }

    /// `column` holds the value of parameter `param` (of a column of type
    /// `ty`), as far as the database can tell: every row that holds it
    /// matches, and a row whose value only resembles it may too (the caller
    /// confirms each with `Value::same`).
    pub fn equals(self, column: &str, param: &str, ty: ColumnType) -> String {
        match self {
            Dialect::Sqlite => sqlite::sql::equals(column, param, ty),
            Dialect::Postgres => postgres::sql::equals(column, param),
            Dialect::Mysql => mysql::sql::equals(column, param),
        }
    }

    /// A subquery of the texts of the JSON array of strings in parameter
    /// `param`.
    pub fn json_text_list(self, param: &str) -> String {
        match self {
            Dialect::Sqlite => sqlite::sql::json_text_list(param),
            Dialect::Postgres => postgres::sql::json_text_list(param),
            Dialect::Mysql => mysql::sql::json_text_list(param),
        }
    }

    /// What ends the `SELECT` of the job a worker claims.
    pub fn claim_lock(self) -> &'static str {
        match self {
            Dialect::Sqlite => sqlite::sql::CLAIM_LOCK,
            Dialect::Postgres => postgres::sql::CLAIM_LOCK,
            Dialect::Mysql => mysql::sql::CLAIM_LOCK,
        }
    }

    /// Staged rows one `UPDATE` or `DELETE` of a commit or rollback takes,
    /// of a job of `rows` (see `stage::writes::Seqs`).
    pub fn rows_per_write(self, rows: i64) -> i64 {
        match self {
            Dialect::Sqlite => sqlite::sql::rows_per_write(rows),
            Dialect::Postgres => postgres::sql::rows_per_write(rows),
            Dialect::Mysql => mysql::sql::rows_per_write(rows),
        }
    }

    /// `DELETE` of the rows of `target` (its key `id`) that the rows `r`
    /// of `from` meet `on`, where `filter` holds.
    pub fn delete_joined(
        self,
        target: &str,
        id: &str,
        from: &str,
        on: &str,
        filter: &str,
    ) -> String {
        match self {
            Dialect::Sqlite => sqlite::sql::delete_joined(target, id, from, on, filter),
            Dialect::Postgres => postgres::sql::delete_joined(target, id, from, on, filter),
            Dialect::Mysql => mysql::sql::delete_joined(target, id, from, on, filter),
        }
    }

    /// What a statement joins after the table holding the JSON object
    /// text `json`, to read its members `columns` through
    /// [`Dialect::json_member`] under `alias`.
    pub fn json_record(self, json: &str, alias: &str, columns: &[(&str, ColumnType)]) -> String {
        match self {
            Dialect::Sqlite => sqlite::sql::json_record(json, alias, columns),
            Dialect::Postgres => postgres::sql::json_record(json, alias, columns),
            Dialect::Mysql => mysql::sql::json_record(json, alias, columns),
        }
    }

    /// Member `name` of the JSON object text `json` (joined as `alias`
    /// by [`Dialect::json_record`]), typed.
    pub fn json_member(self, json: &str, alias: &str, name: &str) -> String {
        match self {
            Dialect::Sqlite => sqlite::sql::json_member(json, alias, name),
            Dialect::Postgres => postgres::sql::json_member(json, alias, name),
            Dialect::Mysql => mysql::sql::json_member(json, alias, name),
        }
    }

    /// A subquery of the texts of `column` of the rows `rows` (a
    /// `SELECT`), joined by commas in the order of their `order` column.
    pub fn joined_in_order(self, rows: &str, column: &str, order: &str) -> String {
        match self {
            Dialect::Sqlite => sqlite::sql::joined_in_order(rows, column, order),
            Dialect::Postgres => postgres::sql::joined_in_order(rows, column, order),
            Dialect::Mysql => mysql::sql::joined_in_order(rows, column, order),
        }
    }

    /// What a count of distinct natural keys (`key`, their text) sorts.
    pub fn sortable_key(self, key: &str) -> String {
        match self {
            Dialect::Sqlite => sqlite::sql::sortable_key(key),
            Dialect::Postgres => postgres::sql::sortable_key(key),
            Dialect::Mysql => mysql::sql::sortable_key(key),
        }
    }

    /// Whether a key lookup's match on a key column of type `ty` means the
    /// cell holds the looked-up value exactly.
    pub fn key_match_is_exact(self, ty: ColumnType) -> bool {
        match self {
            Dialect::Sqlite => sqlite::sql::key_match_is_exact(ty),
            Dialect::Postgres => postgres::sql::key_match_is_exact(ty),
            Dialect::Mysql => mysql::sql::key_match_is_exact(ty),
        }
    }

    /// The SQL type of a catalog column, `key` when a unique index holds
    /// it (a natural key's): MySQL indexes no unbounded text, and keeps a
    /// numeric at the catalog's scale (`DECIMAL(30, 2)`); the other two
    /// keep what they are given, which validation put at that scale.
    pub fn module_column_type(self, column: &Column, key: bool) -> Cow<'static, str> {
        match self {
            Dialect::Mysql => mysql::sql::module_column_type(column, key),
            _ => Cow::Borrowed(self.column_type(column.ty)),
        }
    }

    /// The type of a text column an index holds.
    pub fn key_text(self) -> &'static str {
        match self {
            Dialect::Mysql => mysql::sql::KEY_TEXT,
            _ => "TEXT",
        }
    }

    /// `CREATE [UNIQUE] INDEX` of `columns` (a list) on `table`, over the
    /// rows where `filter` holds where the database keeps partial indexes
    /// (MySQL keeps every row). The caller asks first whether it exists.
    pub fn create_index(
        self,
        name: &str,
        table: &str,
        columns: &str,
        unique: bool,
        filter: Option<&str>,
    ) -> String {
        match self {
            Dialect::Mysql => mysql::sql::create_index(name, table, columns, unique),
            _ => {
                let unique = if unique { "UNIQUE " } else { "" };
                let filter = filter.map(|f| format!(" WHERE {f}")).unwrap_or_default();
                format!("CREATE {unique}INDEX IF NOT EXISTS {name} ON {table} ({columns}){filter}")
            }
        }
    }

    /// `DROP INDEX` of index `name` of `table`, which exists.
    pub fn drop_index(self, name: &str, table: &str) -> String {
        match self {
            Dialect::Mysql => mysql::sql::drop_index(name, table),
            _ => format!("DROP INDEX IF EXISTS {name}"),
        }
    }

    /// `expr` as text.
    pub fn as_text(self, expr: &str) -> String {
        match self {
            Dialect::Mysql => mysql::sql::as_text(expr),
            _ => format!("CAST({expr} AS TEXT)"),
        }
    }

    /// Whether DDL commits the transaction it runs in (MySQL's does).
    pub fn ddl_commits(self) -> bool {
        self == Dialect::Mysql
    }

    /// `INSERT INTO {insert}` that inserts nothing where a row with the
    /// same `key` (a unique index's columns) is there: the statement's
    /// count of rows says which.
    pub fn insert_or_skip(self, insert: &str, key: &str) -> String {
        match self {
            Dialect::Mysql => mysql::sql::insert_or_skip(insert),
            _ => format!("INSERT INTO {insert} ON CONFLICT ({key}) DO NOTHING"),
        }
    }

    /// Whether an `UPDATE` can return the rows it wrote (`RETURNING`):
    /// MySQL's cannot.
    pub fn update_returns(self) -> bool {
        self != Dialect::Mysql
    }

    /// `UPDATE` of `target`'s rows that the rows `r` of `from` meet where
    /// `filter` holds, each column of `sets` to its expression (of `r`).
    pub fn update_joined(
        self,
        target: &str,
        sets: &[(String, String)],
        from: &str,
        filter: &str,
    ) -> String {
        match self {
            Dialect::Mysql => mysql::sql::update_joined(target, sets, from, filter),
            _ => {
                let sets: Vec<String> = sets.iter().map(|(c, e)| format!("{c} = {e}")).collect();
                format!(
                    "UPDATE {target} SET {} FROM {from} r WHERE {filter}",
                    sets.join(", ")
                )
            }
        }
    }
}
