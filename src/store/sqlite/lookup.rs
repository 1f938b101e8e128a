//! Key lookups in SQLite's module tables: which of a batch's natural keys
//! a table holds and its rows for them ([`lookup_sql`], each found row
//! with its key's place in the batch), and which values a referenced
//! column holds ([`present`]).
//!
//! A validation's lookups ([`Reader`]) run on a blocking thread, on a read
//! connection of the validation's own, through [`super::bound`] (keys
//! bound in place, one statement kept a part size), each found row read
//! straight into module values, except the cells that hold exactly the
//! file's value (`Found::as_file`), which are only compared. Through sqlx
//! the lookups of 1M keys, all found, took 6.4 s of a 9 s upsert
//! validation (timers around the decide side's steps on the release
//! server): a multi-row statement's arguments built on the runtime's
//! threads and bound value by value on the connection's thread, then
//! every row sent back over a channel and decoded, where SQLite's own join
//! of the same keys takes 0.5 s. Through `rusqlite` the upsert validation
//! took 8.1 s instead of 9.1 (`bash bench/run.sh --rows 1000000 --modules
//! orders --formats csv --backends sqlite`, two builds alternated).
//!
//! The reader is opened at the first lookup and kept until the validation
//! drops it, so its statements are prepared once: prepared again for
//! every batch (on a pool connection, through a `rusqlite` handle made for
//! the batch) they took about 1,000 instructions a key (callgrind of the
//! server over `bash bench/once.sh`, 20,000 orders). It only reads: in WAL
//! mode it sees the table as last committed, as a pool connection does,
//! and holds no lock a writer waits for.
//!
//! The commit's checks ([`by_keys`]) and the references' ([`present`]) send
//! the same kind of statement through sqlx, in the caller's transaction.

use std::collections::HashSet;
use std::path::Path;
use std::sync::{Arc, Mutex};

use rusqlite::OpenFlags;
use rusqlite::types::ValueRef;
use sqlx::sqlite::SqliteRow;
use sqlx::{Row, SqliteConnection, SqlitePool};

use super::bound;
use super::sql::param;
use super::values::{from_sqlite, to_param};
use crate::catalog::{ColumnType, Module};
use crate::store::dialect::Dialect;
use crate::store::error::Result;
use crate::store::found::{Cell, Found, KeyPlan, Read, Target, Wanted, found, key_at, not_found};
use crate::store::sql::{BATCH, ident, pieces};
use crate::store::values::BindValue;
use crate::validate::Value;
use crate::validate::value::date_digits;

/// A validation's read connection, opened at its first lookup.
#[derive(Default)]
pub struct Reader(Arc<Mutex<Option<bound::Connection>>>);

impl Reader {
    /// The rows of `target`'s table holding the keys of `wanted`, looked up
    /// on a blocking thread, on this reader's connection to `pool`'s file
    /// (see `lookup::Lookup::by_keys`, whose answer it is).
    pub async fn found(
        &self,
        pool: &SqlitePool,
        target: &Arc<Target>,
        wanted: Vec<Wanted>,
        provided: &[usize],
    ) -> anyhow::Result<(Vec<Wanted>, Vec<Option<Found>>)> {
        let file = pool.connect_options().get_filename().to_path_buf();
        let (target, reader) = (target.clone(), self.0.clone());
        let provided = provided.to_vec();
        tokio::task::spawn_blocking(move || {
            let mut reader = reader
                .lock()
                .map_err(|_| anyhow::anyhow!("an earlier key lookup failed"))?;
            let c = match &mut *reader {
                Some(c) => c,
                none => none.insert(bound::Connection::new(open(&file)?)),
            };
            let found = found_rows(c, &target, &wanted, &provided)?;
            Ok((wanted, found))
        })
        .await
        .map_err(|e| anyhow::anyhow!("the key lookup failed: {e}"))?
    }
}

/// The lookups' read connection to the database file (an export's too).
pub(super) fn open(file: &Path) -> anyhow::Result<rusqlite::Connection> {
    let flags = OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX;
    let c = rusqlite::Connection::open_with_flags(file, flags)?;
    // It reads only; should a statement ever try to write, SQLite refuses.
    c.pragma_update(None, "query_only", true)?;
    Ok(c)
}

/// The lookups of one batch, on the lookups' connection `c`; `provided`
/// are the catalog columns of the file's values.
fn found_rows(
    c: &mut bound::Connection,
    target: &Target,
    wanted: &[Wanted],
    provided: &[usize],
) -> anyhow::Result<Vec<Option<Found>>> {
    let mut found = not_found(wanted.len());
    let mut params = Vec::new();
    let key_at = key_at(&target.module, provided)?;
    let read = Read::of(Dialect::Sqlite, target, provided);
    for part in pieces(wanted.len(), BATCH) {
        // One statement a part's size: a full part's, and the few sizes
        // `pieces` cuts a batch's rest into. What it selects is the
        // same for every batch (a validation's file has one header).
        let size = part.len();
        let sql = || lookup_sql(&target.module, size, &read.select);
        let select = c.statement(size, sql)?;
        params.clear();
        let keys = wanted[part.clone()].iter().flat_map(|w| {
            (0..key_at.len()).map(|n| w.key(&key_at, n).map_or(bound::Param::Null, to_param))
        });
        params.extend(keys);
        select.query(&params, |row| {
            // Column 0 is the key's place in the part; the statement gives
            // back only places it was given.
            let place = part.start + usize::try_from(row.get_i64(0)?)?;
            if let Some(w) = wanted.get(place) {
                found[place] = Some(table_row(target, w, &read, row)?);
            }
            Ok::<_, anyhow::Error>(())
        })?;
    }
    Ok(found)
}

/// The key lookup of `keys` keys: the keys are a `VALUES` list, each
/// with its place in the list, that the table is joined to (`CROSS JOIN`
/// keeps the list the outer loop, an index lookup a key). A found row
/// comes back with the place of its key (column 0), so the caller needs no
/// key text to match it: the canonical text of every found row's key,
/// and a hash map of them, were 2–3 % of an upsert validation's
/// instructions (callgrind of the server over `bash bench/once.sh`, 20,000
/// orders). With `(a, b) IN (VALUES …)` SQLite scanned the whole table for
/// each batch (17 ms a batch of 500 at 100k rows, against 1.3 ms joined).
///
/// `select` lists what is selected of each found row `t`
/// (`tables::select_columns` for the whole row).
fn lookup_sql(module: &Module, keys: usize, select: &str) -> String {
    let width = module.key_columns.len();
    let on: Vec<String> = module
        .natural_key
        .iter()
        .enumerate()
        .map(|(n, name)| format!("t.{} = k.column{}", ident(name), n + 2))
        .collect();
    let list: Vec<String> = (0..keys)
        .map(|k| {
            let marks: Vec<String> = (1..=width).map(|c| param(k * width + c)).collect();
            format!("({k}, {})", marks.join(", "))
        })
        .collect();
    format!(
        "SELECT k.column1, {select} FROM (VALUES {}) AS k CROSS JOIN {} t ON {}",
        list.join(", "),
        ident(&module.table),
        on.join(" AND ")
    )
}

/// The plan for a validation's lookups in `module`'s table: none if the
/// table holds no row, else SQLite's own join, which probes the key index
/// a key.
pub async fn key_plan(c: &mut SqliteConnection, module: &Module) -> Result<KeyPlan> {
    let sql = format!(
        "SELECT COUNT(*) FROM (SELECT 1 FROM {} LIMIT 1) s",
        ident(&module.table)
    );
    let rows: i64 = sqlx::query_scalar(&sql).fetch_one(c).await?;
    Ok(if rows == 0 {
        KeyPlan::Empty
    } else {
        KeyPlan::Join
    })
}

/// The rows of `module`'s table holding these natural keys (each in the
/// order of the module's key columns), through sqlx: each with the place
/// of its key in `keys` (column 0), then what `select` lists of it.
pub async fn by_keys(
    c: &mut SqliteConnection,
    module: &Module,
    keys: &[Vec<Value>],
    select: &str,
) -> Result<Vec<(usize, SqliteRow)>> {
    let mut found = Vec::new();
    for range in pieces(keys.len(), BATCH) {
        let part = &keys[range.clone()];
        let sql = lookup_sql(module, part.len(), select);
        let mut q = sqlx::query(&sql);
        for key in part {
            for (v, &i) in key.iter().zip(&module.key_columns) {
                q = q.bind_value(Some(v), module.columns[i].ty);
            }
        }
        for row in q.fetch_all(&mut *c).await? {
            // The statement gives back the places it was given.
            if let Ok(place) = usize::try_from(row.try_get::<i64, _>(0)?) {
                found.push((range.start + place, row));
            }
        }
    }
    Ok(found)
}

/// The positions in `values` of those the `key` column of `target`'s table
/// holds: a `VALUES` list of (position, value) probing the table, one
/// statement per [`BATCH`] values.
pub async fn present(
    c: &mut SqliteConnection,
    target: &Module,
    key: usize,
    values: &[Value],
    also: Option<&str>,
) -> Result<HashSet<usize>> {
    let mut found = HashSet::new();
    let column = &target.columns[key];
    let (t, col) = (ident(&target.table), ident(&column.name));
    let also = also.map_or(String::new(), |a| a.replace("{v}", "k.column2"));
    for range in pieces(values.len(), BATCH) {
        let (base, part) = (range.start, &values[range]);
        // Positions are written as literals (they are this loop's own
        // numbers); the values are bound.
        let list: Vec<String> = (0..part.len()).map(|i| format!("({i}, ?)")).collect();
        let sql = format!(
            "SELECT k.column1 FROM (VALUES {}) AS k \
             WHERE EXISTS (SELECT 1 FROM {t} t WHERE t.{col} = k.column2){also}",
            list.join(", ")
        );
        let mut q = sqlx::query(&sql);
        for v in part {
            q = q.bind_value(Some(v), column.ty);
        }
        for row in q.fetch_all(&mut *c).await? {
            let i: i64 = row.try_get(0)?;
            found.insert(base + i as usize);
        }
    }
    Ok(found)
}

/// A found SQLite row (its key's place in column 0, what `read` selects
/// after it), found for `w` ([`found`]).
fn table_row(
    target: &Target,
    w: &Wanted,
    read: &Read,
    row: &bound::Row<'_>,
) -> anyhow::Result<Found> {
    found(Dialect::Sqlite, target, w, read, |at, ty, file| {
        let cell = row.get_ref(at)?;
        Ok(if holds_exactly(cell, file, ty) {
            Cell::AsFile
        } else {
            Cell::Value(from_sqlite(cell, ty)?)
        })
    })
}

/// Whether a cell of a column of type `ty` holds `file` exactly as the
/// stage stores it ([`to_param`]), so that [`from_sqlite`] would read it
/// back as `file` itself. Only text, integers, booleans and dates (the
/// date's digits against the stored text), which are compared without
/// being made: a cell of any other kind, or stored otherwise, is decoded
/// and compared as before.
fn holds_exactly(cell: ValueRef<'_>, file: Option<&Value>, ty: ColumnType) -> bool {
    match (cell, file, ty) {
        (ValueRef::Text(stored), Some(Value::Text(text)), ColumnType::Text) => {
            stored == text.as_bytes()
        }
        (
            ValueRef::Integer(stored),
            Some(Value::Int(n)),
            ColumnType::Integer | ColumnType::Bigint,
        ) => stored == *n,
        (ValueRef::Integer(stored), Some(Value::Bool(b)), ColumnType::Boolean) => {
            stored == i64::from(*b)
        }
        (ValueRef::Text(stored), Some(Value::Date(d)), ColumnType::Date) => {
            date_digits(d).is_some_and(|digits| stored == digits)
        }
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_cell_stored_as_the_stage_stores_the_files_value_holds_it_exactly() {
        let text = Value::Text("Jakarta".into());
        let holds = |cell, file: &Value, ty| holds_exactly(cell, Some(file), ty);
        assert!(holds(ValueRef::Text(b"Jakarta"), &text, ColumnType::Text));
        assert!(!holds(ValueRef::Text(b"jakarta"), &text, ColumnType::Text));
        assert!(!holds(ValueRef::Text(b"Jakarta "), &text, ColumnType::Text));
        assert!(holds(
            ValueRef::Integer(7),
            &Value::Int(7),
            ColumnType::Integer
        ));
        assert!(holds(
            ValueRef::Integer(7),
            &Value::Int(7),
            ColumnType::Bigint
        ));
        assert!(!holds(
            ValueRef::Integer(8),
            &Value::Int(7),
            ColumnType::Integer
        ));
        assert!(holds(
            ValueRef::Integer(1),
            &Value::Bool(true),
            ColumnType::Boolean
        ));
        assert!(!holds(
            ValueRef::Integer(2),
            &Value::Bool(true),
            ColumnType::Boolean
        ));
        assert!(!holds(
            ValueRef::Integer(0),
            &Value::Bool(true),
            ColumnType::Boolean
        ));
        // Stored otherwise, or a kind read through its text: decoded.
        assert!(!holds(
            ValueRef::Real(7.0),
            &Value::Int(7),
            ColumnType::Integer
        ));
        assert!(!holds(
            ValueRef::Text(b"7"),
            &Value::Int(7),
            ColumnType::Integer
        ));
        let decimal = Value::Decimal("4.50".parse().unwrap());
        assert!(!holds(
            ValueRef::Text(b"4.50"),
            &decimal,
            ColumnType::Numeric
        ));
        assert!(!holds(
            ValueRef::Text(b"12"),
            &Value::Text("12".into()),
            ColumnType::Numeric
        ));
        let date = Value::Date(chrono::NaiveDate::from_ymd_opt(2024, 3, 1).unwrap());
        assert!(holds(
            ValueRef::Text(b"2024-03-01"),
            &date,
            ColumnType::Date
        ));
        assert!(!holds(
            ValueRef::Text(b"2024-03-02"),
            &date,
            ColumnType::Date
        ));
        assert!(!holds(ValueRef::Text(b"2024-3-1"), &date, ColumnType::Date));
        // A null cell and a null file value are compared as values.
        assert!(!holds_exactly(ValueRef::Null, None, ColumnType::Text));
    }
}
