//! What a key lookup asks and what it finds, the same on every backend:
//! the rows a validation looks up ([`Wanted`]), a row found ([`Found`]),
//! how the lookups meet the table ([`KeyPlan`]), and how a found row's
//! cells are read ([`Read`], [`found`]). The lookups themselves are each
//! backend's (`sqlite::lookup`, `postgres::lookup`).

use super::dialect::Dialect;
use super::sql::ident;
use super::stage;
use crate::catalog::{ColumnType, Module};
use crate::validate::Value;

/// How a validation's key lookups meet the table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KeyPlan {
    /// The table held no row when the validation began: no key is looked
    /// up, every one is new. A row written meanwhile (another job's
    /// commit, or anything else writing the table) is caught by the
    /// commit, which refuses a staged insert whose key was taken since its
    /// preview, as it was when each batch looked.
    Empty,
    /// A join, planned as PostgreSQL sees fit (SQLite: its own plan,
    /// index probes).
    Join,
    /// One probe of the natural-key index a key, whatever the plan.
    Probe,
}

/// A row a validation looks up: the file's values of the provided
/// columns, its natural key among them ([`Module::key_places`]). The key is
/// not copied out: three allocations a row on the decide side, which an
/// upsert validation shares its two cores with. Keys read in place, and
/// the before-image made in the found row, took the decide side of a
/// 20,000-row upsert from 69.5 M to 52.9 M instructions (callgrind of the
/// server over `bash bench/once.sh`).
pub struct Wanted {
    pub file: Vec<Option<Value>>,
}

impl Wanted {
    /// The value of the `n`th key column, at `key_at[n]` among the file's.
    pub fn key(&self, key_at: &[usize], n: usize) -> Option<&Value> {
        self.file.get(*key_at.get(n)?)?.as_ref()
    }
}

/// Where each key column is among the `provided` columns: a row is looked
/// up only with its whole key, so each has a place.
pub fn key_at(module: &Module, provided: &[usize]) -> anyhow::Result<Vec<usize>> {
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
pub fn not_found(n: usize) -> Vec<Option<Found>> {
    std::iter::repeat_with(|| None).take(n).collect()
}

/// What the lookups need of the module, made once a validation.
pub struct Target {
    pub module: Module,
    /// For each catalog column, its place in the natural key, if it is in.
    pub in_key: Vec<Option<usize>>,
}

impl Target {
    pub fn new(module: &Module) -> Target {
        let in_key = (0..module.columns.len())
            .map(|c| module.key_columns.iter().position(|&k| k == c))
            .collect();
        Target {
            module: module.clone(),
            in_key,
        }
    }
}

/// A found row's cell as [`found`] reads it.
pub enum Cell {
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
pub struct Read {
    /// The select list, of the found row `t`.
    pub select: String,
    /// The file's columns (catalog positions, in their order), and the
    /// column of each in the answer: none for a key column left unread.
    provided: Vec<usize>,
    at: Vec<Option<usize>>,
}

impl Read {
    /// What `dialect`'s lookups select of each row found for the file's
    /// columns `provided`.
    pub fn of(dialect: Dialect, target: &Target, provided: &[usize]) -> Read {
        let (mut select, mut at) = (Vec::new(), Vec::new());
        for &i in provided {
            let c = &target.module.columns[i];
            let exact = target.in_key[i].is_some() && key_is_exact(dialect, c.ty);
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
pub fn found(
    dialect: Dialect,
    target: &Target,
    w: &Wanted,
    read_list: &Read,
    mut read: impl FnMut(usize, ColumnType, Option<&Value>) -> anyhow::Result<Cell>,
) -> anyhow::Result<Found> {
    let mut as_file = 0;
    let mut values = Vec::with_capacity(w.file.len());
    let columns = read_list.provided.iter().zip(&read_list.at);
    for ((&i, &at), file) in columns.zip(&w.file) {
        let c = &target.module.columns[i];
        let bit = stage::same_bit(i);
        let key = target.in_key[i].filter(|_| key_is_exact(dialect, c.ty));
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
