//! A prepared SQLite statement whose text parameters are bound where they
//! lie, not copied: the stage writer's multi-row `INSERT`.
//!
//! Written by hand because `rusqlite` binds every text with
//! `SQLITE_TRANSIENT`, so SQLite copies each into memory of its own and
//! frees it at the next bind (rusqlite issue #164, open since 2016, and
//! its pull request #1836, still open, which reports the same gain). On a
//! 20,000-row orders validation that binding was 112 M of the stage
//! writer's 273 M instructions, and the writer is a SQLite validation's
//! critical path (BENCHMARKS.md, issue 18, nineteenth session).
//!
//! Sound by construction: [`Statement::execute`] binds a whole parameter
//! list, steps the statement to its end, and clears every binding before
//! it returns, so no pointer SQLite was given outlives the borrow of the
//! list; the statement borrows its connection, so it is finalized before
//! the connection can go.

use std::borrow::Cow;
use std::ffi::{CStr, c_int};
use std::marker::PhantomData;
use std::ptr::NonNull;

use rusqlite::ffi;

/// A parameter's value: SQLite's storage classes the stage uses.
#[derive(Debug, Clone, PartialEq)]
pub enum Param<'a> {
    Null,
    Int(i64),
    Text(Cow<'a, str>),
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

/// A statement prepared on connection `'c`, finalized when dropped.
pub struct Statement<'c> {
    db: *mut ffi::sqlite3,
    stmt: NonNull<ffi::sqlite3_stmt>,
    params: usize,
    _connection: PhantomData<&'c rusqlite::Connection>,
}

impl<'c> Statement<'c> {
    /// Prepares `sql`, one statement, to be run many times.
    pub fn prepare(c: &'c rusqlite::Connection, sql: &str) -> rusqlite::Result<Statement<'c>> {
        // SAFETY: the handle stays open while `c` lives, and the statement
        // borrows `c`.
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
        Ok(Statement {
            db,
            stmt,
            params: usize::try_from(params).unwrap_or(0),
            _connection: PhantomData,
        })
    }

    /// Binds `params` to the statement's parameters in order (as many as it
    /// has), runs it to its end and leaves it reset with no binding.
    pub fn execute(&mut self, params: &[Param<'_>]) -> rusqlite::Result<()> {
        if params.len() != self.params {
            return Err(rusqlite::Error::InvalidParameterCount(
                params.len(),
                self.params,
            ));
        }
        let run = self.bind(params).and_then(|()| self.step());
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
            // bound SQLITE_STATIC: `execute` clears it before `params` can
            // go.
            let rc = unsafe {
                match p {
                    Param::Null => ffi::sqlite3_bind_null(stmt, at),
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
                }
            };
            if rc != ffi::SQLITE_OK {
                return Err(failure(self.db, rc));
            }
        }
        Ok(())
    }

    /// Steps the statement until it is done (an `INSERT` gives no row).
    fn step(&mut self) -> rusqlite::Result<()> {
        loop {
            // SAFETY: the statement is ours and bound.
            match unsafe { ffi::sqlite3_step(self.stmt.as_ptr()) } {
                ffi::SQLITE_DONE => return Ok(()),
                ffi::SQLITE_ROW => continue,
                rc => return Err(failure(self.db, rc)),
            }
        }
    }
}

impl Drop for Statement<'_> {
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
    fn texts_bound_in_place_are_stored_and_nothing_stays_bound() {
        let c = rusqlite::Connection::open_in_memory().unwrap();
        c.execute_batch("CREATE TABLE t (a, b, c)").unwrap();
        let mut insert =
            Statement::prepare(&c, "INSERT INTO t VALUES (?, ?, ?), (?, ?, ?)").unwrap();
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
            insert.execute(&params).unwrap();
        }
        let rows: Vec<(Option<String>, Option<i64>, Option<String>)> = c
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
        let short = insert.execute(&[Param::Null]);
        assert!(matches!(
            short,
            Err(rusqlite::Error::InvalidParameterCount(1, 6))
        ));
        // A failing statement says why, and stays usable.
        c.execute_batch("CREATE TABLE u (a UNIQUE)").unwrap();
        let mut unique = Statement::prepare(&c, "INSERT INTO u VALUES (?)").unwrap();
        unique.execute(&[Param::from(Some("x"))]).unwrap();
        let err = unique.execute(&[Param::from(Some("x"))]).unwrap_err();
        assert!(err.to_string().contains("UNIQUE"), "{err}");
        unique.execute(&[Param::from(Some("y"))]).unwrap();
        let n: i64 = c
            .query_row("SELECT count(*) FROM u", [], |r| r.get(0))
            .unwrap();
        assert_eq!(n, 2);
    }
}
