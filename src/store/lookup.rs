//! The validation's key lookups: which of a batch's natural keys the
//! module's table holds, and its rows for them (an update's before-image).
//!
//! On SQLite a batch's lookups run on a blocking thread, on a read
//! connection of the validation's own, through [`bound`] (keys bound in
//! place, one statement kept a part size): the same statements as
//! through sqlx ([`tables::by_keys`]), each found row read straight into
//! module values, except the cells that hold exactly the file's value
//! ([`Found::as_file`]), which are only compared. Through sqlx the
//! lookups of 1M keys, all found, took 6.4 s of a 9 s upsert validation
//! (timers around the decide side's steps on the release server): a
//! multi-row statement's arguments built on the runtime's threads and
//! bound value by value on the connection's thread, then every row sent
//! back over a channel and decoded, where SQLite's own join of the same
//! keys takes 0.5 s. Through `rusqlite` the upsert validation took 8.1 s
//! instead of 9.1 (`bash bench/run.sh --rows 1000000 --modules orders
//! --formats csv --backends sqlite`, two builds alternated). PostgreSQL
//! keeps its one `unnest` statement a batch ([`tables::pg_lookup`]), a
//! join or one index probe a key as the table's size says
//! ([`tables::key_plan`], counted at the first lookup), and reads its
//! found rows' cells as SQLite's are: those holding the file's value
//! compared on the wire, not decoded. Neither looks in a table that was
//! empty then.

use std::path::Path;
use std::sync::{Arc, Mutex};

use rusqlite::OpenFlags;
use rusqlite::types::ValueRef;

use super::db::{Conn, Db};
use super::dialect::Dialect;
use super::sql::{BATCH, ident, pieces};
use super::tables;
use super::values::{self, from_sqlite, to_param};
use super::{bound, stage};
use crate::catalog::{ColumnType, Module};
use crate::validate::Value;
use crate::validate::value::date_digits;

/// A validation's key lookups in one module: what the lookup thread needs,
/// made once. The statement of a full part ([`BATCH`] keys, with a
/// `VALUES` list of 500 tuples for a two-column key) was written again
/// for every part: 2 % of a 1M-row SQLite upsert validation's CPU
/// (`perf record --call-graph dwarf` of the server during `bash
/// bench/once.sh`).
///
/// On SQLite the lookups have a connection of their own, opened at the
/// first and kept until the validation drops its `Lookup`, so the
/// statement is also prepared once: prepared again for every batch (on a
/// pool connection, through a `rusqlite` handle made for the batch) it
/// took about 1,000 instructions a key (callgrind of the server over `bash
/// bench/once.sh`, 20,000 orders). It only reads: in WAL mode it sees the table
/// as last committed, as a pool connection did, and holds no lock a
/// writer waits for.
pub struct Lookup {
    plan: Arc<Plan>,
    reader: Arc<Mutex<Option<bound::Connection>>>,
    /// The lookups' plan, chosen at the first from the table's size
    /// ([`tables::key_plan`]): the validation does not write the table. A
    /// table empty then is not looked in: a first import of 1M orders on
    /// PostgreSQL spent 1.1 s of its validation on 500 lookups that found
    /// nothing (timers of the decide side during `bash bench/once.sh BIN
    /// postgres`).
    key_plan: std::sync::OnceLock<tables::KeyPlan>,
    /// The file's columns of the first lookup: the statements kept on the
    /// SQLite connection select their cells ([`Read`]), so every later
    /// lookup must ask for the same (a validation's file has one header).
    provided: std::sync::OnceLock<Vec<usize>>,
}

impl Lookup {
    pub fn new(module: &Module) -> Lookup {
        let in_key = (0..module.columns.len())
            .map(|c| module.key_columns.iter().position(|&k| k == c))
            .collect();
        Lookup {
            plan: Arc::new(Plan {
                module: module.clone(),
                in_key,
            }),
            reader: Arc::default(),
            key_plan: std::sync::OnceLock::new(),
            provided: std::sync::OnceLock::new(),
        }
    }

    /// The table's rows holding the natural keys of `wanted` (each in the
    /// order of the module's key columns), in its order: `None` for a key
    /// the table does not hold; of each row, the cells of the `provided`
    /// columns. `wanted` comes back as it went, after the
    /// lookups: its file values travel to the lookup thread and back
    /// rather than being copied. `provided` are the catalog columns of the
    /// file values, in their order.
    pub async fn by_keys(
        &self,
        db: &Db,
        wanted: Vec<Wanted>,
        provided: &[usize],
    ) -> anyhow::Result<(Vec<Wanted>, Vec<Option<Found>>)> {
        if wanted.is_empty() {
            return Ok((wanted, vec![]));
        }
        if self.provided.get_or_init(|| provided.to_vec()) != provided {
            anyhow::bail!("a validation's key lookups were asked for other columns");
        }
        let plan = self.key_plan(db).await?;
        if plan == tables::KeyPlan::Empty {
            let none = not_found(wanted.len());
            return Ok((wanted, none));
        }
        let file = match db {
            Db::Sqlite(pool) => pool.connect_options().get_filename().to_path_buf(),
            Db::Postgres(_) => {
                let mut pooled = db.acquire().await?;
                let Conn::Postgres(c) = pooled.conn() else {
                    anyhow::bail!("a PostgreSQL pool lent another connection");
                };
                let found = postgres(c, &self.plan, &wanted, provided, plan).await?;
                return Ok((wanted, found));
            }
        };
        let (plan, reader) = (self.plan.clone(), self.reader.clone());
        let provided = provided.to_vec();
        tokio::task::spawn_blocking(move || {
            let mut reader = reader
                .lock()
                .map_err(|_| anyhow::anyhow!("an earlier key lookup failed"))?;
            let c = match &mut *reader {
                Some(c) => c,
                none => none.insert(bound::Connection::new(open(&file)?)),
            };
            let found = sqlite(c, &plan, &wanted, &provided)?;
            Ok((wanted, found))
        })
        .await
        .map_err(|e| anyhow::anyhow!("the key lookup failed: {e}"))?
    }

    /// The lookups' plan ([`tables::key_plan`]), chosen at the first.
    async fn key_plan(&self, db: &Db) -> anyhow::Result<tables::KeyPlan> {
        if let Some(plan) = self.key_plan.get() {
            return Ok(*plan);
        }
        let module = &self.plan.module;
        let plan = tables::key_plan(&mut db.acquire().await?.conn(), module).await?;
        let _ = self.key_plan.set(plan);
        Ok(plan)
    }
}

/// A row a validation looks up: the file's values of the provided
/// columns, its natural key among them ([`Module::key_places`]). The key is not
/// copied out: three allocations a row on the decide side, which an
/// upsert validation shares its two cores with. Keys read in place, and
/// the before-image made in the found row, took the decide side of a
/// 20,000-row upsert from 69.5 M to 52.9 M instructions (callgrind of the
/// server over `bash bench/once.sh`).
pub struct Wanted {
    pub file: Vec<Option<Value>>,
}

impl Wanted {
    /// The value of the `n`th key column, at `key_at[n]` among the file's.
    fn key(&self, key_at: &[usize], n: usize) -> Option<&Value> {
        self.file.get(*key_at.get(n)?)?.as_ref()
    }
}

/// Where each key column is among the `provided` columns: a row is looked
/// up only with its whole key, so each has a place.
fn key_at(module: &Module, provided: &[usize]) -> anyhow::Result<Vec<usize>> {
    (module.key_places(provided.iter().copied()))
        .ok_or_else(|| anyhow::anyhow!("keys of {} looked up without their columns", module.key))
}

/// A table row found by its key: what an update's before-image needs.
pub struct Found {
    /// Its cells of the file's columns, in their order (an update's
    /// before-image is of those only); a cell in `as_file` is left null,
    /// not decoded.
    pub values: Vec<Option<Value>>,
    /// The catalog columns (their [`stage::same_bit`]) whose cell holds
    /// exactly what the file gives, stored alike: the row's value there is
    /// the file's, identical. Decoding such cells only to compare them
    /// was a third of the SQLite lookups' time (`perf record --call-graph
    /// dwarf` of a 1M-row upsert during `bash bench/once.sh`); a
    /// re-uploaded export leaves most cells as they are.
    pub as_file: i64,
}

/// The answer for `n` keys before any is found (`Found` is not `Clone`).
fn not_found(n: usize) -> Vec<Option<Found>> {
    std::iter::repeat_with(|| None).take(n).collect()
}

/// The lookups' read connection to the database file.
fn open(file: &Path) -> anyhow::Result<rusqlite::Connection> {
    let flags = OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX;
    let c = rusqlite::Connection::open_with_flags(file, flags)?;
    // It reads only; should a statement ever try to write, SQLite refuses.
    c.pragma_update(None, "query_only", true)?;
    Ok(c)
}

/// What the lookup thread needs of the module.
struct Plan {
    module: Module,
    /// For each catalog column, its place in the natural key, if it is in.
    in_key: Vec<Option<usize>>,
}

/// The lookups of one batch, on the lookups' connection `c`; `provided`
/// are the catalog columns of the file's values.
fn sqlite(
    c: &mut bound::Connection,
    plan: &Plan,
    wanted: &[Wanted],
    provided: &[usize],
) -> anyhow::Result<Vec<Option<Found>>> {
    let mut found = not_found(wanted.len());
    let mut params = Vec::new();
    let key_at = key_at(&plan.module, provided)?;
    let read = Read::of(Dialect::Sqlite, plan, provided);
    for part in pieces(wanted.len(), BATCH) {
        // One statement a part's size: a full part's, and the few sizes
        // [`super::pieces`] cuts a batch's rest into. What it selects is
        // the same for every batch ([`Lookup::provided`]).
        let size = part.len();
        let sql = || tables::sqlite_lookup(&plan.module, size, &read.select);
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
                found[place] = Some(table_row(plan, w, &read, row)?);
            }
            Ok::<_, anyhow::Error>(())
        })?;
    }
    Ok(found)
}

/// The lookups of one batch on PostgreSQL, on connection `c`, as `key_plan`
/// says; `provided` as for [`sqlite`]. Each found row's cells are read as
/// SQLite's are ([`found`]): decoding every cell of 1M found orders was
/// 0.66 s of the upsert validation's critical path, the lookups (`perf
/// record --call-graph dwarf` during `bash bench/once.sh BIN postgres`).
async fn postgres(
    c: &mut sqlx::PgConnection,
    plan: &Plan,
    wanted: &[Wanted],
    provided: &[usize],
    key_plan: tables::KeyPlan,
) -> anyhow::Result<Vec<Option<Found>>> {
    use sqlx::Row;
    let mut found = not_found(wanted.len());
    let module = &plan.module;
    let key_at = key_at(module, provided)?;
    let pg = Dialect::Postgres;
    let read = Read::of(pg, plan, provided);
    for part in tables::lookup_parts(pg, wanted.len(), BATCH) {
        let part_of = &wanted[part.clone()];
        let select = &read.select;
        let found_rows = tables::pg_lookup(
            c,
            module,
            part_of,
            |w, n| w.key(&key_at, n),
            key_plan,
            select,
        )
        .await?;
        for row in found_rows {
            // `WITH ORDINALITY` counts from 1, and gives back only places
            // it was given.
            let place = usize::try_from(row.try_get::<i64, _>(0)?)
                .ok()
                .and_then(|p| p.checked_sub(1))
                .map(|p| part.start + p)
                .filter(|p| part.contains(p));
            let Some(place) = place else { continue };
            let w = &wanted[place];
            found[place] = Some(self::found(pg, plan, w, &read, |at, ty, file| {
                Ok(match values::pg_cell(&row, at, ty)? {
                    None => Cell::Value(None),
                    Some(cell) if values::pg_holds_exactly(&cell, file, ty) => Cell::AsFile,
                    Some(cell) => Cell::Value(Some(values::pg_decode(cell, at, ty)?)),
                })
            })?);
        }
    }
    Ok(found)
}

/// A found row's cell as [`found`] reads it.
enum Cell {
    /// It holds exactly the file's value: left null, its bit set.
    AsFile,
    /// Its value, decoded.
    Value(Option<Value>),
}

/// What a batch's lookups select of each found row, after its key's place
/// (column 0): the cells of the file's columns ([`found`]), but for the
/// key cells whose match proves they hold the file's values
/// ([`key_is_exact`]). Its id and the other cells went unread: orders
/// came back with ten cells a row where seven are read, and selecting
/// only those took a 1M-row PostgreSQL upsert validation from 6.26 to
/// 6.05 s (`bash bench/once.sh BIN postgres`, medians of 3).
struct Read {
    /// The select list, of the found row `t`.
    select: String,
    /// The file's columns (catalog positions, in their order), and the
    /// column of each in the answer: none for a key column left unread.
    provided: Vec<usize>,
    at: Vec<Option<usize>>,
}

impl Read {
    fn of(dialect: Dialect, plan: &Plan, provided: &[usize]) -> Read {
        let (mut select, mut at) = (Vec::new(), Vec::new());
        for &i in provided {
            let c = &plan.module.columns[i];
            let exact = plan.in_key[i].is_some() && key_is_exact(dialect, c.ty);
            at.push((!exact).then(|| select.len() + 1));
            if !exact {
                select.push(format!("t.{}", ident(&c.name)));
            }
        }
        if select.is_empty() {
            // A file of the key alone: something to select.
            select.push("NULL".into());
        }
        Read {
            select: select.join(", "),
            provided: provided.to_vec(),
            at,
        }
    }
}

/// A found row's cells of the file's columns, found for `w`: each cell
/// that [`Read`] selects from `read` (given its column in the answer, its
/// type and the file's value, it gives back a [`Cell`]); the key cells
/// whose match proves they hold the file's values ([`key_is_exact`]) are
/// neither read nor decoded. An update's before-image is of the file's
/// columns only.
fn found(
    dialect: Dialect,
    plan: &Plan,
    w: &Wanted,
    read_list: &Read,
    mut read: impl FnMut(usize, ColumnType, Option<&Value>) -> anyhow::Result<Cell>,
) -> anyhow::Result<Found> {
    let mut as_file = 0;
    let mut values = Vec::with_capacity(w.file.len());
    let columns = read_list.provided.iter().zip(&read_list.at);
    for ((&i, &at), file) in columns.zip(&w.file) {
        let c = &plan.module.columns[i];
        let bit = stage::same_bit(i);
        let key = plan.in_key[i].filter(|_| key_is_exact(dialect, c.ty));
        let cell = match (key, at) {
            (Some(_), _) if bit.is_some() => Cell::AsFile,
            (Some(_), None) => Cell::Value(file.clone()),
            // Only a column with a bit can be left undecoded.
            (_, Some(at)) => read(at, c.ty, file.as_ref().filter(|_| bit.is_some()))?,
            (None, None) => anyhow::bail!("column {i} of the file was not looked up"),
        };
        match (cell, bit) {
            (Cell::AsFile, Some(bit)) => {
                as_file |= bit;
                values.push(None);
            }
            (Cell::AsFile, None) => anyhow::bail!("column {i} has no bit to be left as the file's"),
            (Cell::Value(v), _) => values.push(v),
        }
    }
    Ok(Found { values, as_file })
}

/// Whether a lookup's match on a key column of type `ty` means the cell
/// holds the file's value exactly ([`Dialect::key_match_is_exact`]).
fn key_is_exact(dialect: Dialect, ty: ColumnType) -> bool {
    dialect.key_match_is_exact(ty)
}

/// A found SQLite row (its key's place in column 0, what `read` selects
/// after it), found for `w` ([`found`]).
fn table_row(plan: &Plan, w: &Wanted, read: &Read, row: &bound::Row<'_>) -> anyhow::Result<Found> {
    found(Dialect::Sqlite, plan, w, read, |at, ty, file| {
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
