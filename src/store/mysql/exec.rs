//! The shared statements' `$n` parameters, as MySQL takes them: `?`.
//!
//! The statements the shared files write once number their parameters
//! (`$1`), which SQLite and PostgreSQL both read; MySQL's protocol takes
//! only anonymous `?`, bound in order. [`Exec`] is the connection
//! `on_conn!` hands a statement on MySQL: it rewrites the text before the
//! driver sees it, and refuses a statement that does not use each of its
//! parameters once, in order (anonymous marks could not say otherwise).
//! A rewritten text is kept for the life of the process, so that it
//! outlives the statement as the driver's cache needs: the statements
//! are the service's own, a fixed set.

use std::borrow::Cow;
use std::collections::HashMap;
use std::sync::{Mutex, OnceLock};

use futures::future::BoxFuture;
use futures::stream::BoxStream;
use futures::{FutureExt, StreamExt};
use sqlx::mysql::{MySql, MySqlArguments, MySqlConnection, MySqlQueryResult, MySqlRow};
use sqlx::mysql::{MySqlStatement, MySqlTypeInfo};
use sqlx::{Either, Execute, Executor};

/// A MySQL connection whose statements may number their parameters.
pub struct Exec<'a>(pub &'a mut MySqlConnection);

impl std::fmt::Debug for Exec<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("mysql::Exec")
    }
}

/// `sql` with each `$n` outside quotes as `?`; an error naming the
/// statement when `$n` are not 1, 2, 3, … once each.
pub fn anonymous(sql: &str) -> Result<Cow<'_, str>, String> {
    if !sql.contains('$') {
        return Ok(Cow::Borrowed(sql));
    }
    let mut out = String::with_capacity(sql.len());
    let mut next = 1usize;
    let mut quote: Option<char> = None;
    let mut chars = sql.char_indices().peekable();
    while let Some((_, ch)) = chars.next() {
        match quote {
            Some(q) => {
                if ch == q {
                    quote = None;
                }
                out.push(ch);
            }
            None if ch == '\'' || ch == '"' || ch == '`' => {
                quote = Some(ch);
                out.push(ch);
            }
            None if ch == '$' && chars.peek().is_some_and(|(_, d)| d.is_ascii_digit()) => {
                let mut n = 0usize;
                while let Some((_, d)) = chars.peek().filter(|(_, d)| d.is_ascii_digit()) {
                    n = n * 10 + d.to_digit(10).unwrap_or(0) as usize;
                    chars.next();
                }
                if n != next {
                    return Err(format!(
                        "a statement for MySQL uses ${n} where ${next} was due: {sql}"
                    ));
                }
                next += 1;
                out.push('?');
            }
            None => out.push(ch),
        }
    }
    Ok(Cow::Owned(out))
}

/// [`anonymous`], kept: the same text for the same statement.
fn kept(sql: &str) -> Result<&'static str, String> {
    static KEPT: OnceLock<Mutex<HashMap<String, &'static str>>> = OnceLock::new();
    let kept = KEPT.get_or_init(Default::default);
    let mut map = kept.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(found) = map.get(sql) {
        return Ok(found);
    }
    let text: &'static str = Box::leak(anonymous(sql)?.into_owned().into_boxed_str());
    map.insert(sql.to_string(), text);
    Ok(text)
}

/// A statement with its text rewritten.
struct Rewritten<'q, E> {
    sql: &'q str,
    inner: E,
}

impl<'q, E: Execute<'q, MySql>> Execute<'q, MySql> for Rewritten<'q, E> {
    fn sql(&self) -> &'q str {
        self.sql
    }

    fn statement(&self) -> Option<&MySqlStatement<'q>> {
        None
    }

    fn take_arguments(&mut self) -> Result<Option<MySqlArguments>, sqlx::error::BoxDynError> {
        self.inner.take_arguments()
    }

    fn persistent(&self) -> bool {
        self.inner.persistent()
    }
}

/// The statement as MySQL takes it, or the error of [`anonymous`].
fn rewrite<'q, E: Execute<'q, MySql>>(query: E) -> Result<Rewritten<'q, E>, sqlx::Error> {
    let original = query.sql();
    let sql: &'q str = if original.contains('$') {
        kept(original).map_err(sqlx::Error::Protocol)?
    } else {
        original
    };
    Ok(Rewritten { sql, inner: query })
}

impl<'c, 'a: 'c> Executor<'c> for &'c mut Exec<'a> {
    type Database = MySql;

    fn fetch_many<'e, 'q: 'e, E>(
        self,
        query: E,
    ) -> BoxStream<'e, Result<Either<MySqlQueryResult, MySqlRow>, sqlx::Error>>
    where
        'c: 'e,
        E: 'q + Execute<'q, MySql>,
    {
        match rewrite(query) {
            Ok(q) => (&mut *self.0).fetch_many(q),
            Err(e) => futures::stream::once(async move { Err(e) }).boxed(),
        }
    }

    fn fetch_optional<'e, 'q: 'e, E>(
        self,
        query: E,
    ) -> BoxFuture<'e, Result<Option<MySqlRow>, sqlx::Error>>
    where
        'c: 'e,
        E: 'q + Execute<'q, MySql>,
    {
        match rewrite(query) {
            Ok(q) => (&mut *self.0).fetch_optional(q),
            Err(e) => async move { Err(e) }.boxed(),
        }
    }

    fn prepare_with<'e, 'q: 'e>(
        self,
        sql: &'q str,
        parameters: &'e [MySqlTypeInfo],
    ) -> BoxFuture<'e, Result<MySqlStatement<'q>, sqlx::Error>>
    where
        'c: 'e,
    {
        match kept(sql) {
            Ok(sql) => (&mut *self.0).prepare_with(sql, parameters),
            Err(e) => async move { Err(sqlx::Error::Protocol(e)) }.boxed(),
        }
    }

    fn describe<'e, 'q: 'e>(
        self,
        sql: &'q str,
    ) -> BoxFuture<'e, Result<sqlx::Describe<MySql>, sqlx::Error>>
    where
        'c: 'e,
    {
        match kept(sql) {
            Ok(sql) => (&mut *self.0).describe(sql),
            Err(e) => async move { Err(sqlx::Error::Protocol(e)) }.boxed(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::anonymous;

    #[test]
    fn numbered_parameters_become_anonymous_in_order_outside_quotes() {
        assert_eq!(
            anonymous("SELECT a FROM t WHERE b = $1 AND c = '$2' AND d = $2").unwrap(),
            "SELECT a FROM t WHERE b = ? AND c = '$2' AND d = ?"
        );
        assert_eq!(anonymous("SELECT ?, ?").unwrap(), "SELECT ?, ?");
        assert!(anonymous("SELECT $2, $1").is_err());
        assert!(anonymous("SELECT $1, $1").is_err());
        assert!(anonymous("SELECT $10").unwrap_err().contains("$1 was due"));
    }
}
