//! The CEL environment every check runs in: the standard library and the
//! strings extension, with `matches` compiling each pattern once per
//! thread instead of once per call.
//!
//! cel-rust's own `matches` builds its `Regex` on every call, some
//! microseconds each, which a check like `row.sku.matches('^P-[0-9]{3,}$')`
//! would pay on every row. An overload taking `dyn` as its first argument
//! is declared before the standard library's `(string, string)` one, so it
//! is found first; the signatures differ, so the library accepts both.

use std::cell::RefCell;
use std::collections::HashMap;
use std::sync::{Arc, LazyLock};

use cel::common::types::{CelBool, CelString, DYN_TYPE, STRING_TYPE};
use cel::common::value::CowVal;
use cel::{Env, ExecutionError, extensions};
use regex::Regex;

/// Shared by every check: evaluating clones the `Arc`.
pub(super) static ENV: LazyLock<Arc<Env>> = LazyLock::new(|| Arc::new(build()));

fn build() -> Env {
    let mut env = Env::default();
    env.add_overload(
        "matches",
        "matches_cached",
        vec![DYN_TYPE, STRING_TYPE],
        matches,
    )
    .expect("the first overload of matches");
    env.add_member_overload(
        "matches",
        "matches_cached_member",
        DYN_TYPE,
        vec![STRING_TYPE],
        matches,
    )
    .expect("the first member overload of matches");
    let mut env = env.with_stdlib();
    env.add_extension(extensions::strings)
        .expect("the strings extension declares what the standard library does not");
    env
}

/// `text.matches(pattern)` and `matches(text, pattern)`: RE2 syntax, a
/// match anywhere in the text unless the pattern anchors it.
fn matches<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    let [text, pattern] = &args[..] else {
        return Err(ExecutionError::invalid_argument_count(2, args.len()));
    };
    let (Some(text), Some(pattern)) = (
        text.downcast_ref::<CelString>(),
        pattern.downcast_ref::<CelString>(),
    ) else {
        let types = args
            .iter()
            .map(|a| a.get_type().name().to_owned())
            .collect();
        return Err(ExecutionError::no_such_overload("matches", types));
    };
    let found = is_match(pattern.inner(), text.inner())?;
    Ok(CowVal::owned(CelBool::from(found)))
}

/// At most this many patterns kept per thread: a rule set has at most 200
/// checks, so only a pattern computed per row would evict.
const KEPT: usize = 256;

thread_local! {
    static COMPILED: RefCell<HashMap<String, Regex, foldhash::fast::RandomState>> =
        RefCell::default();
}

fn is_match(pattern: &str, text: &str) -> Result<bool, ExecutionError> {
    COMPILED.with_borrow_mut(|compiled| {
        if let Some(re) = compiled.get(pattern) {
            return Ok(re.is_match(text));
        }
        let re = regex(pattern).map_err(|e| ExecutionError::function_error("matches", e))?;
        if compiled.len() >= KEPT {
            compiled.clear();
        }
        let found = re.is_match(text);
        compiled.insert(pattern.to_owned(), re);
        Ok(found)
    })
}

/// A pattern as `matches` compiles it, or why it is not one.
pub(super) fn regex(pattern: &str) -> Result<Regex, String> {
    Regex::new(pattern)
        .map_err(|e| format!("the pattern {pattern:?} is not a regular expression: {e}"))
}
