//! Prepared SQLite statements whose text parameters are bound where they
//! lie, not copied: the stage writer's `INSERT`s and the validation's key
//! lookups.
//!
//! Written by hand because `rusqlite` binds every text with
//! `SQLITE_TRANSIENT`, so SQLite copies each into memory of its own and
//! frees it at the next bind (rusqlite issue #164; its pull request #1836
//! adds borrowed texts and reports the same gain). In a 20,000-row orders
//! validation that binding was 112 M of the stage writer's 273 M
//! instructions, and the writer is a SQLite validation's critical path;
//! bound in place, the writer takes 220 M (callgrind of the server over
//! `bash bench/once.sh`). At 1M orders the insert validation took 4.3 %
//! less time and the upsert 5.6 % (`bash bench/once.sh`, two builds
//! alternated, medians of 3).
//!
//! Sound by construction: [`Raw::query`] binds a whole parameter list,
//! steps the statement to its end, and clears every binding before it
//! returns, so no pointer SQLite was given outlives the borrow of the list;
//! the statements belong to a [`Connection`], which finalizes them before
//! its SQLite connection can go.

use std::borrow::Cow;
use std::collections::HashMap;
use std::ffi::{CStr, c_int};
use std::marker::PhantomData;
use std::ptr::NonNull;

use rusqlite::ffi;
use rusqlite::types::ValueRef;

/// A parameter's value: SQLite's storage classes the stage uses.
#[derive(Debug, Clone, PartialEq)]
pub enum Param<'a> {
    Null,
    Int(i64),
    Text(Cow<'a, str>),
    /// A date's text as stored, `YYYY-MM-DD` ([`date_digits`]), held in
    /// place: made into a `String` for each row, it was an allocation and
    /// 450 instructions a row of the stage writer's (callgrind of the
    /// server over `bash bench/once.sh`).
    ///
    /// [`date_digits`]: crate::validate::value::date_digits
    Date([u8; 10]),
}

impl<'a> From<Option<&'a str>> for Param<'a> {
    fn from(text: Option<&'a str>) -> Self {
        text.map_or(Param::Null, |t| Param::Text(Cow::Borrowed(t)))
    }
}

impl From<Option<i64>> for Param<'_> {
    fn from(n: Option<i64>) -> Self {
        n.map_or(Param::Null, Param::Int)
    }
}

/// A connection with statements kept prepared on it, by a key of the
/// caller's: they are finalized before it closes (the fields drop in
/// order).
pub struct Connection {
    statements: HashMap<usize, Raw>,
    connection: rusqlite::Connection,
}

// SAFETY: as `rusqlite::Connection` is `Send`: SQLite lets a connection
// and its statements move between threads as long as one thread at a time
// uses them, and `&mut self` on every use makes that so. The statements
// move with their connection.
unsafe impl Send for Connection {}

impl Connection {
    pub fn new(connection: rusqlite::Connection) -> Connection {
        Connection {
            statements: HashMap::new(),
            connection,
        }
    }

    /// The SQLite connection, for statements run a few times a batch.
    pub fn rusqlite(&self) -> &rusqlite::Connection {
        &self.connection
    }

    /// The statement kept under `key`, prepared from `sql()` the first
    /// time.
    pub fn statement(
        &mut self,
        key: usize,
        sql: impl FnOnce() -> String,
    ) -> rusqlite::Result<&mut Raw> {
        use std::collections::hash_map::Entry;
        match self.statements.entry(key) {
            Entry::Occupied(e) => Ok(e.into_mut()),
            // SAFETY: kept in `statements`, which drops before `connection`.
            Entry::Vacant(e) => Ok(e.insert(unsafe { Raw::prepare(&self.connection, &sql())? })),
        }
    }
}

/// A prepared statement, finalized when dropped; its owner keeps the
/// connection open as long.
pub struct Raw {
    db: *mut ffi::sqlite3,
    stmt: NonNull<ffi::sqlite3_stmt>,
    params: usize,
}

impl Raw {
    /// Prepares `sql` on `c`.
    ///
    /// # Safety
    /// `c` must stay open until the statement drops.
    unsafe fn prepare(c: &rusqlite::Connection, sql: &str) -> rusqlite::Result<Raw> {
        // SAFETY: the caller keeps the handle open while the statement lives.
        let db = unsafe { c.handle() };
        let len = c_int::try_from(sql.len()).map_err(|_| too_big())?;
        let mut stmt = std::ptr::null_mut();
        // SAFETY: `sql` is valid for `len` bytes; SQLite writes `stmt`.
        let rc = unsafe {
            ffi::sqlite3_prepare_v3(
                db,
                sql.as_ptr().cast(),
                len,
                ffi::SQLITE_PREPARE_PERSISTENT,
                &mut stmt,
                std::ptr::null_mut(),
            )
        };
        if rc != ffi::SQLITE_OK {
            return Err(failure(db, rc));
        }
        let stmt = NonNull::new(stmt).ok_or_else(|| {
            rusqlite::Error::SqliteFailure(
                ffi::Error::new(ffi::SQLITE_MISUSE),
                Some("no statement in the SQL".into()),
            )
        })?;
        // SAFETY: `stmt` was just prepared.
        let params = unsafe { ffi::sqlite3_bind_parameter_count(stmt.as_ptr()) };
        Ok(Raw {
            db,
            stmt,
            params: usize::try_from(params).unwrap_or(0),
        })
    }

    /// Binds `params` to the statement's parameters in order (as many as it
    /// has), runs it to its end and leaves it reset with no binding.
    pub fn execute(&mut self, params: &[Param<'_>]) -> rusqlite::Result<()> {
        self.query(params, |_| Ok::<_, rusqlite::Error>(()))
    }

    /// As [`execute`](Self::execute), giving each row of the answer to
    /// `each`, which may stop it with an error.
    pub fn query<E: From<rusqlite::Error>>(
        &mut self,
        params: &[Param<'_>],
        mut each: impl FnMut(&Row<'_>) -> Result<(), E>,
    ) -> Result<(), E> {
        if params.len() != self.params {
            let wrong = rusqlite::Error::InvalidParameterCount(params.len(), self.params);
            return Err(wrong.into());
        }
        let run = self.bind(params).map_err(E::from).and_then(|()| {
            // SAFETY: the statement is ours.
            let columns = unsafe { ffi::sqlite3_column_count(self.stmt.as_ptr()) };
            let row = Row {
                stmt: self.stmt.as_ptr(),
                columns: usize::try_from(columns).unwrap_or(0),
                _statement: PhantomData,
            };
            while self.step()? {
                each(&row)?;
            }
            Ok(())
        });
        // SAFETY: the statement is ours; clearing drops every pointer into
        // `params` before their borrow ends.
        unsafe {
            ffi::sqlite3_reset(self.stmt.as_ptr());
            ffi::sqlite3_clear_bindings(self.stmt.as_ptr());
        }
        run
    }

    fn bind(&mut self, params: &[Param<'_>]) -> rusqlite::Result<()> {
        let stmt = self.stmt.as_ptr();
        for (i, p) in params.iter().enumerate() {
            let at = c_int::try_from(i + 1).map_err(|_| too_big())?;
            // SAFETY: `at` is within the statement's parameters. A text is
            // bound SQLITE_STATIC: `query` clears it before `params` can
            // go.
            let rc = unsafe {
                match p {
                    // Every parameter is null until bound: a statement is
                    // prepared so, and `query` clears its bindings after
                    // each run. Binding the nulls again (an update's
                    // unchanged before-images, an insert's all) was 6 % of
                    // the stage writer's instructions (callgrind of the
                    // server over `bash bench/once.sh`).
                    Param::Null => continue,
                    Param::Int(n) => ffi::sqlite3_bind_int64(stmt, at, *n),
                    Param::Text(t) => {
                        let len = c_int::try_from(t.len()).map_err(|_| too_big())?;
                        ffi::sqlite3_bind_text(
                            stmt,
                            at,
                            t.as_ptr().cast(),
                            len,
                            ffi::SQLITE_STATIC(),
                        )
                    }
                    Param::Date(d) => {
                        let (text, len) = (d.as_ptr().cast(), d.len() as c_int);
                        ffi::sqlite3_bind_text(stmt, at, text, len, ffi::SQLITE_STATIC())
                    }
                }
            };
            if rc != ffi::SQLITE_OK {
                return Err(failure(self.db, rc));
            }
        }
        Ok(())
    }

    /// Steps the statement: whether it gave a row.
    fn step(&mut self) -> rusqlite::Result<bool> {
        // SAFETY: the statement is ours and bound.
        match unsafe { ffi::sqlite3_step(self.stmt.as_ptr()) } {
            ffi::SQLITE_DONE => Ok(false),
            ffi::SQLITE_ROW => Ok(true),
            rc => Err(failure(self.db, rc)),
        }
    }
}

/// The row a statement stands on, while [`Raw::query`] gives it.
pub struct Row<'s> {
    stmt: *mut ffi::sqlite3_stmt,
    columns: usize,
    _statement: PhantomData<&'s mut Raw>,
}

impl Row<'_> {
    /// Column `i`'s cell, as SQLite stores it; valid while the row is.
    pub fn get_ref(&self, i: usize) -> rusqlite::Result<ValueRef<'_>> {
        let at = c_int::try_from(i)
            .ok()
            .filter(|_| i < self.columns)
            .ok_or(rusqlite::Error::InvalidColumnIndex(i))?;
        let stmt = self.stmt;
        // SAFETY: the statement stands on a row, `at` is one of its
        // columns, and a cell is read as the type SQLite says it has, so
        // nothing is converted: its pointers stay valid until the next
        // step, which the borrow of `self` rules out.
        Ok(unsafe {
            match ffi::sqlite3_column_type(stmt, at) {
                ffi::SQLITE_INTEGER => ValueRef::Integer(ffi::sqlite3_column_int64(stmt, at)),
                ffi::SQLITE_FLOAT => ValueRef::Real(ffi::sqlite3_column_double(stmt, at)),
                ffi::SQLITE_TEXT => ValueRef::Text(bytes(
                    ffi::sqlite3_column_text(stmt, at),
                    ffi::sqlite3_column_bytes(stmt, at),
                )),
                ffi::SQLITE_BLOB => ValueRef::Blob(bytes(
                    ffi::sqlite3_column_blob(stmt, at).cast(),
                    ffi::sqlite3_column_bytes(stmt, at),
                )),
                _ => ValueRef::Null,
            }
        })
    }

    /// Column `i` as an integer, which it must hold.
    pub fn get_i64(&self, i: usize) -> rusqlite::Result<i64> {
        match self.get_ref(i)? {
            ValueRef::Integer(n) => Ok(n),
            other => Err(rusqlite::Error::InvalidColumnType(
                i,
                String::new(),
                other.data_type(),
            )),
        }
    }
}

/// The `n` bytes at `p` (none for a null pointer).
///
/// # Safety
/// `p` must be valid for `n` bytes as long as the answer is used.
unsafe fn bytes<'a>(p: *const u8, n: c_int) -> &'a [u8] {
    match usize::try_from(n) {
        // SAFETY: as the caller promises.
        Ok(n) if !p.is_null() && n > 0 => unsafe { std::slice::from_raw_parts(p, n) },
        _ => &[],
    }
}

impl Drop for Raw {
    fn drop(&mut self) {
        // SAFETY: the statement is ours, and finalized only here.
        unsafe { ffi::sqlite3_finalize(self.stmt.as_ptr()) };
    }
}

/// The error of a call that returned `rc`, with the connection's message.
fn failure(db: *mut ffi::sqlite3, rc: c_int) -> rusqlite::Error {
    // SAFETY: `db` is open; SQLite owns the message until the next call.
    let message = unsafe {
        let m = ffi::sqlite3_errmsg(db);
        (!m.is_null()).then(|| CStr::from_ptr(m).to_string_lossy().into_owned())
    };
    rusqlite::Error::SqliteFailure(ffi::Error::new(rc), message)
}

fn too_big() -> rusqlite::Error {
    rusqlite::Error::SqliteFailure(ffi::Error::new(ffi::SQLITE_TOOBIG), None)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_null_is_null_after_any_value_and_dates_are_stored_as_their_text() {
        let mut c = Connection::new(rusqlite::Connection::open_in_memory().unwrap());
        c.rusqlite()
            .execute_batch("CREATE TABLE t (a, b, c)")
            .unwrap();
        let date = Param::Date(*b"2024-03-01");
        let rounds = [
            [Param::from(Some("x")), Param::Int(1), date.clone()],
            [Param::Null, Param::Null, Param::Null],
            [Param::Null, Param::Int(2), Param::Null],
            [date, Param::Null, Param::from(Some("y"))],
        ];
        for params in &rounds {
            let insert = c.statement(3, || "INSERT INTO t VALUES (?, ?, ?)".into());
            insert.unwrap().execute(params).unwrap();
        }
        let rows: Vec<String> = c
            .rusqlite()
            .prepare("SELECT quote(a) || ' ' || quote(b) || ' ' || quote(c) FROM t ORDER BY rowid")
            .unwrap()
            .query_map([], |r| r.get(0))
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap();
        assert_eq!(
            rows,
            [
                "'x' 1 '2024-03-01'",
                "NULL NULL NULL",
                "NULL 2 NULL",
                "'2024-03-01' NULL 'y'"
            ]
        );
    }

    #[test]
    fn texts_bound_in_place_are_stored_and_nothing_stays_bound() {
        let mut c = Connection::new(rusqlite::Connection::open_in_memory().unwrap());
        c.rusqlite()
            .execute_batch("CREATE TABLE t (a, b, c)")
            .unwrap();
        for round in 0..3 {
            // Texts made for this round only, dropped before the next.
            let owned = format!("owned {round}");
            let params = [
                Param::Text(Cow::Borrowed(owned.as_str())),
                Param::Int(round),
                Param::Null,
                Param::Text(Cow::Owned(format!("{owned} again"))),
                Param::from(None::<&str>),
                Param::from(Some("ünïcode")),
            ];
            let insert = c.statement(0, || "INSERT INTO t VALUES (?, ?, ?), (?, ?, ?)".into());
            insert.unwrap().execute(&params).unwrap();
        }
        let rows: Vec<(Option<String>, Option<i64>, Option<String>)> = c
            .rusqlite()
            .prepare("SELECT a, b, c FROM t ORDER BY rowid")
            .unwrap()
            .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap();
        assert_eq!(rows.len(), 6);
        assert_eq!(rows[4], (Some("owned 2".into()), Some(2), None));
        assert_eq!(
            rows[5],
            (Some("owned 2 again".into()), None, Some("ünïcode".into()))
        );
        // The wrong number of parameters is refused before anything runs.
        let short = c
            .statement(0, || unreachable!())
            .unwrap()
            .execute(&[Param::Null]);
        assert!(matches!(
            short,
            Err(rusqlite::Error::InvalidParameterCount(1, 6))
        ));
        // A failing statement says why, and stays usable.
        c.rusqlite()
            .execute_batch("CREATE TABLE u (a UNIQUE)")
            .unwrap();
        let unique = c
            .statement(1, || "INSERT INTO u VALUES (?)".into())
            .unwrap();
        unique.execute(&[Param::from(Some("x"))]).unwrap();
        let err = unique.execute(&[Param::from(Some("x"))]).unwrap_err();
        assert!(err.to_string().contains("UNIQUE"), "{err}");
        unique.execute(&[Param::from(Some("y"))]).unwrap();
        let n: i64 = c
            .rusqlite()
            .query_row("SELECT count(*) FROM u", [], |r| r.get(0))
            .unwrap();
        assert_eq!(n, 2);
    }

    #[test]
    fn a_kept_statement_reads_each_cell_as_stored_and_refuses_a_column_it_lacks() {
        let c = rusqlite::Connection::open_in_memory().unwrap();
        c.execute_batch(
            "CREATE TABLE t (k TEXT, n, r, b, z); \
             INSERT INTO t VALUES ('a', 1, 1.5, x'0102', NULL), ('b', -7, 0.0, x'', 'zz');",
        )
        .unwrap();
        let mut c = Connection::new(c);
        for round in 0..2 {
            let key = ["a", "b"][round].to_string();
            let select = c
                .statement(1, || "SELECT k, n, r, b, z FROM t WHERE k = ?".into())
                .unwrap();
            let mut seen = vec![];
            select
                .query(&[Param::from(Some(key.as_str()))], |row| {
                    let cells: Vec<String> = (0..5)
                        .map(|i| format!("{:?}", row.get_ref(i).unwrap()))
                        .collect();
                    seen.push((cells, row.get_i64(1)?));
                    assert!(matches!(
                        row.get_ref(5),
                        Err(rusqlite::Error::InvalidColumnIndex(5))
                    ));
                    assert!(row.get_i64(0).is_err());
                    Ok::<_, rusqlite::Error>(())
                })
                .unwrap();
            let want = [
                (
                    "Text([97])",
                    "Integer(1)",
                    "Real(1.5)",
                    "Blob([1, 2])",
                    "Null",
                    1,
                ),
                (
                    "Text([98])",
                    "Integer(-7)",
                    "Real(0.0)",
                    "Blob([])",
                    "Text([122, 122])",
                    -7,
                ),
            ][round];
            assert_eq!(seen.len(), 1);
            assert_eq!(seen[0].0, [want.0, want.1, want.2, want.3, want.4]);
            assert_eq!(seen[0].1, want.5);
        }
        // The statement was kept: the second key's SQL was never asked for.
        c.statement(1, || unreachable!()).unwrap();
        // An error from the closure stops the rows and comes back.
        let all = c.statement(2, || "SELECT k FROM t".into()).unwrap();
        let mut rows = 0;
        let stopped = all.query(&[], |_| {
            rows += 1;
            Err(rusqlite::Error::QueryReturnedNoRows)
        });
        assert_eq!(rows, 1);
        assert!(matches!(stopped, Err(rusqlite::Error::QueryReturnedNoRows)));
    }
}
