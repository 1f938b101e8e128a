//! An export imported again (API.md section 15): each row's `_version`
//! against the token of what the table holds for its key now, so that
//! nobody overwrites unseen what changed since they exported.
//!
//! A file that gives every column (what an export writes) needs no query
//! of its own: the key lookup that decides each row's action already read
//! the row, and a cell it left undecoded holds exactly the file's value
//! ([`Found::as_file`]). A file that leaves columns out has its rows read
//! again whole, by key, in one more lookup a batch.
//!
//! Only `update` and `upsert` jobs are checked; the commit's own re-check
//! of what the preview showed (section 4) covers the columns it writes.

use crate::catalog::Module;
use crate::store::Db;
use crate::store::lookup::{Found, Lookup, Wanted};
use crate::store::rows::Before;
use crate::store::stage::same_bit;
use crate::validate::version::is_token;
use crate::validate::{CheckedRow, RowError, RowErrorCode, VERSION_COLUMN, Value, version_of};

/// A row of the table as it is now: every column, in catalog order.
pub(super) type Now = Vec<Option<Value>>;

/// The version checks of one validation.
pub(super) struct Versions {
    /// The lookup of whole rows, for a file that leaves columns out.
    whole: Lookup,
}

impl Versions {
    pub(super) fn new(module: &Module) -> Versions {
        Versions {
            whole: Lookup::new(module),
        }
    }

    /// What the table holds now for each row the batch looked up, by its
    /// place in the lookup's answer `found`: `None` where the key is not
    /// in the table. `files` are the file's values of those rows (of the
    /// `provided` columns), by the same places.
    pub(super) async fn now(
        &self,
        db: &Db,
        module: &Module,
        provided: &[usize],
        files: &[&[Option<Value>]],
        found: &[Option<Found>],
    ) -> anyhow::Result<Vec<Option<Now>>> {
        let every = provided.len() == module.columns.len();
        if every {
            return Ok((found.iter().zip(files))
                .map(|(f, file)| f.as_ref().map(|f| merged(f, file, provided)))
                .collect());
        }
        let Some(key_at) = module.key_places(provided.iter().copied()) else {
            return Ok(found.iter().map(|_| None).collect());
        };
        // Whole rows of the keys found: the file's key, nothing else.
        let all: Vec<usize> = (0..module.columns.len()).collect();
        let mut asked = Vec::new();
        let mut wanted = Vec::new();
        for (p, (f, file)) in found.iter().zip(files).enumerate() {
            if f.is_some() {
                let mut whole = vec![None; all.len()];
                for (&column, &at) in module.key_columns.iter().zip(&key_at) {
                    whole[column] = file[at].clone();
                }
                asked.push(p);
                wanted.push(Wanted { file: whole });
            }
        }
        let (wanted, rows) = self.whole.by_keys(db, wanted, &all).await?;
        let mut now: Vec<Option<Now>> = found.iter().map(|_| None).collect();
        for ((p, w), row) in asked.into_iter().zip(&wanted).zip(rows) {
            now[p] = row.map(|f| merged(&f, &w.file, &all));
        }
        Ok(now)
    }
}

/// A found row's values of `columns`, with the cells it left as the
/// file's (`file`, by the same places) filled in.
fn merged(found: &Found, file: &[Option<Value>], columns: &[usize]) -> Vec<Option<Value>> {
    (columns.iter().enumerate())
        .map(|(k, &i)| match same_bit(i) {
            Some(bit) if found.as_file & bit != 0 => file.get(k).cloned().flatten(),
            _ => found.values.get(k).cloned().flatten(),
        })
        .collect()
}

/// What is wrong with a looked-up row's `_version`, if anything: `now` is
/// what the table holds for its key (`None`: nothing). The error, and for
/// a row the table holds, the table's values of the `provided` columns as
/// the preview's `before`.
pub(super) fn conflict(
    module: &Module,
    provided: &[usize],
    row: &CheckedRow,
    now: Option<&Now>,
) -> Option<(RowError, Option<Before>)> {
    let n = row.row;
    let key = key_shown(module, provided, row);
    let columns = module.natural_key.join(",");
    let error = |code, column: String, value, message: String| RowError {
        row: n,
        column: Some(column),
        value,
        code,
        message: format!("row {n}: {message}"),
        rule: None,
    };
    let table = &module.table;
    let e = match (row.version.as_deref(), now) {
        (Some(token), _) if !is_token(token) => {
            let message = format!(
                "column {VERSION_COLUMN}: {token:?} is not a version an export wrote \
                 (leave it empty for a new row)"
            );
            let e = error(
                RowErrorCode::Format,
                VERSION_COLUMN.into(),
                Some(token.into()),
                message,
            );
            return Some((e, None));
        }
        (Some(_), None) => {
            let message =
                format!("the row of key ({key}) was deleted from {table} since it was exported");
            return Some((error(RowErrorCode::Conflict, columns, None, message), None));
        }
        (Some(token), Some(now)) if version_of(now) != token => error(
            RowErrorCode::Conflict,
            columns,
            None,
            format!("the row of key ({key}) changed in {table} since it was exported"),
        ),
        (None, Some(_)) => error(
            RowErrorCode::Conflict,
            columns,
            None,
            format!(
                "the key ({key}) was added to {table} since it was exported \
                 (its {VERSION_COLUMN} is empty, as a new row's)"
            ),
        ),
        _ => return None,
    };
    let now = now?;
    let before = Before {
        values: provided.iter().map(|&i| now[i].clone()).collect(),
        same: 0,
    };
    Some((e, Some(before)))
}

/// A row's key as a person reads it: `order_no SO-1, line 2`.
fn key_shown(module: &Module, provided: &[usize], row: &CheckedRow) -> String {
    let key_at = module
        .key_places(provided.iter().copied())
        .unwrap_or_default();
    (module.natural_key.iter().zip(key_at))
        .map(
            |(name, at)| match row.values.get(at).and_then(Option::as_ref) {
                Some(v) => format!("{name} {}", v.to_text()),
                None => name.clone(),
            },
        )
        .collect::<Vec<_>>()
        .join(", ")
}
