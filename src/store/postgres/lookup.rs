//! Key lookups in PostgreSQL's module tables: which of a batch's natural
//! keys a table holds and its rows for them, in one `unnest` statement a
//! batch ([`lookup_sql`]), a join or one index probe a key as the table's
//! size says ([`key_plan`], counted at a validation's first lookup), and
//! which values a referenced column holds ([`present`]). A validation's
//! lookups ([`found_rows`]) read their found rows' cells as SQLite's are:
//! those holding the file's value are compared on the wire, not decoded.

use std::collections::HashSet;

use sqlx::postgres::PgRow;
use sqlx::{PgConnection, Row};

use super::sql::column_type;
use super::values::{pg_cell, pg_decode, pg_holds_exactly, pg_input};
use crate::catalog::Module;
use crate::store::dialect::Dialect;
use crate::store::error::{Result, StoreError};
use crate::store::found::{Cell, Found, KeyPlan, Read, Target, Wanted, found, key_at, not_found};
use crate::store::sql::ident;
use crate::validate::Value;

/// From how many rows a table gets [`KeyPlan::Probe`]. PostgreSQL's
/// planner hashed the whole table for every batch up to about 700k rows
/// (a scan of the table costs it less than 2,000 random index reads), at
/// 0.55 µs a table row where a probe takes 4.5 µs a key: 55 ms a batch
/// at 100k rows against 9 ms probed (`EXPLAIN ANALYZE` of one batch's
/// lookup), and a 100k-row upsert over a 100k-row table took three times
/// its insert (`bash bench/once.sh BIN postgres` over a prefilled table).
/// Below this a hash of the table costs about what probing the batch does,
/// and of an empty table nothing, where probes still cost 1.4 µs a key.
pub const PROBE_FROM: i64 = 20_000;

/// The plan for a validation's lookups in `module`'s table: whether it
/// holds a row, and whether it holds [`PROBE_FROM`], counted up to there (a
/// few milliseconds, once a validation). Not from the statistics: the
/// `ANALYZE` after a commit runs once the job has moved, and an upsert
/// uploaded right after found none yet.
pub async fn key_plan(c: &mut PgConnection, module: &Module) -> Result<KeyPlan> {
    let sql = format!(
        "SELECT COUNT(*) FROM (SELECT 1 FROM {} LIMIT {PROBE_FROM}) s",
        ident(&module.table)
    );
    let rows: i64 = sqlx::query_scalar(&sql).fetch_one(c).await?;
    Ok(match rows {
        0 => KeyPlan::Empty,
        PROBE_FROM.. => KeyPlan::Probe,
        _ => KeyPlan::Join,
    })
}

/// The rows of `module`'s table holding these natural keys (each in the
/// order of the module's key columns), joined: each with the place of its
/// key in `keys`, then what `select` lists of it.
pub async fn by_keys(
    c: &mut PgConnection,
    module: &Module,
    keys: &[Vec<Value>],
    select: &str,
) -> Result<Vec<(usize, PgRow)>> {
    let mut found = Vec::new();
    for range in parts(keys.len()) {
        let part = &keys[range.clone()];
        for row in rows(c, module, part, |k, n| k.get(n), KeyPlan::Join, select).await? {
            // `WITH ORDINALITY` counts from 1.
            if let Ok(place) = usize::try_from(row.try_get::<i64, _>(0)? - 1) {
                found.push((range.start + place, row));
            }
        }
    }
    Ok(found)
}

/// The positions in `values` of those the `key` column of `target`'s table
/// holds: one text array a statement, unnested with its ordinal and each
/// value cast to the column's type (as the key lookups, it is planned as
/// index probes at any table size).
pub async fn present(
    c: &mut PgConnection,
    target: &Module,
    key: usize,
    values: &[Value],
    also: Option<&str>,
) -> Result<HashSet<usize>> {
    let mut found = HashSet::new();
    let column = &target.columns[key];
    let (t, col) = (ident(&target.table), ident(&column.name));
    let ty = column_type(column.ty);
    let also = also.map_or(String::new(), |a| a.replace("{v}", &format!("k.v::{ty}")));
    let sql = format!(
        "SELECT k.i FROM unnest($1::text[]) WITH ORDINALITY AS k(v, i) \
         WHERE EXISTS (SELECT 1 FROM {t} t WHERE t.{col} = k.v::{ty}){also}"
    );
    for range in parts(values.len()) {
        let (base, part) = (range.start, &values[range]);
        let texts: Vec<String> = part.iter().map(pg_input).collect();
        let hits: Vec<i64> = sqlx::query_scalar(&sql)
            .bind(texts)
            .fetch_all(&mut *c)
            .await?;
        found.extend(hits.into_iter().map(|i| base + i as usize - 1));
    }
    Ok(found)
}

/// The lookups of a validation's batch, on connection `c`, as `key_plan`
/// says; `provided` are the catalog columns of the file's values. Each
/// found row's cells are read as SQLite's are ([`found`]): those holding
/// the file's value compared on the wire, not decoded. Decoding every cell
/// of 1M found orders was
/// 0.66 s of the upsert validation's critical path, the lookups (`perf
/// record --call-graph dwarf` during `bash bench/once.sh BIN postgres`).
pub async fn found_rows(
    c: &mut PgConnection,
    target: &Target,
    wanted: &[Wanted],
    provided: &[usize],
    key_plan: KeyPlan,
) -> anyhow::Result<Vec<Option<Found>>> {
    let mut found = not_found(wanted.len());
    let module = &target.module;
    let key_at = key_at(module, provided)?;
    let pg = Dialect::Postgres;
    let read = Read::of(pg, target, provided);
    for part in parts(wanted.len()) {
        let part_of = &wanted[part.clone()];
        let select = &read.select;
        let found_rows = rows(
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
            found[place] = Some(self::found(pg, target, w, &read, |at, ty, file| {
                Ok(match pg_cell(&row, at, ty)? {
                    None => Cell::Value(None),
                    Some(cell) if pg_holds_exactly(&cell, file, ty) => Cell::AsFile,
                    Some(cell) => Cell::Value(Some(pg_decode(cell, at, ty)?)),
                })
            })?);
        }
    }
    Ok(found)
}

/// The key lookup: the keys arrive as one text array per key
/// column, unnested with their place (from 1) and joined to the table,
/// each cast to its column's type. With `IN (VALUES …)`
/// the planner hashed the 500 keys and scanned the whole table once it
/// held 100k rows (27 ms a batch: 3.8 s of looking up a 100k-row file
/// already imported); an `unnest` of parameters binds two arrays instead
/// of 1,000 values. [`KeyPlan::Probe`] puts the table in a `LATERAL`
/// subquery that `OFFSET 0` keeps from being merged into the join, so it
/// is run once a key, through the natural-key index. `select` lists what
/// is selected of each found row `t` (`tables::select_columns` for the
/// whole row).
fn lookup_sql(module: &Module, plan: KeyPlan, select: &str) -> String {
    let columns: Vec<String> = (1..=module.key_columns.len())
        .map(|n| format!("${n}::text[]"))
        .collect();
    let names: Vec<String> = (1..=module.key_columns.len())
        .map(|n| format!("k{n}"))
        .collect();
    let on: Vec<String> = module
        .key_columns
        .iter()
        .enumerate()
        .map(|(n, &i)| {
            let col = &module.columns[i];
            let ty = column_type(col.ty);
            format!("t.{} = k.k{}::{ty}", ident(&col.name), n + 1)
        })
        .collect();
    let (table, on) = (ident(&module.table), on.join(" AND "));
    let joined = match plan {
        // `Lookup` asks nothing of an empty table; joined, it finds nothing.
        KeyPlan::Join | KeyPlan::Empty => format!("JOIN {table} t ON {on}"),
        KeyPlan::Probe => {
            format!("CROSS JOIN LATERAL (SELECT * FROM {table} t WHERE {on} OFFSET 0) t")
        }
    };
    format!(
        "SELECT k.place, {select} FROM unnest({}) WITH ORDINALITY AS k({}, place) {joined}",
        columns.join(", "),
        names.join(", "),
    )
}

/// The rows holding the natural keys `part` (at most [`PG_LOOKUP`]), in
/// one statement as `plan` says: each row is
/// its key's place in `part` counted from 1 (column 0, `WITH
/// ORDINALITY`), then what `select` lists of it. `key` gives a key's value of the `n`th key column.
pub async fn rows<K>(
    c: &mut PgConnection,
    module: &Module,
    part: &[K],
    key: impl Fn(&K, usize) -> Option<&Value>,
    plan: KeyPlan,
    select: &str,
) -> Result<Vec<PgRow>> {
    let sql = lookup_sql(module, plan, select);
    let mut q = sqlx::query(&sql);
    for n in 0..module.key_columns.len() {
        let column = part.iter().map(|k| {
            let value = key(k, n).ok_or_else(|| {
                StoreError::Corrupt(format!("a key looked up in {} lacks a value", module.key))
            })?;
            Ok(pg_input(value))
        });
        q = q.bind(column.collect::<Result<Vec<_>>>()?);
    }
    Ok(q.fetch_all(c).await?)
}

/// The parts of a batch looked up one statement a part: the values go as
/// one array parameter and the statement's text is the same at any size,
/// so the parts are plain and as large as [`PG_LOOKUP`]: a validation's
/// batch of 2,000 rows is one round trip (in parts of 500, a 1M-row
/// validation waited for 2,000 more).
fn parts(n: usize) -> Vec<std::ops::Range<usize>> {
    (0..n)
        .step_by(PG_LOOKUP)
        .map(|start| start..n.min(start + PG_LOOKUP))
        .collect()
}

/// Values a lookup statement takes at most (its answer is at most as many
/// rows).
pub const PG_LOOKUP: usize = 5_000;

#[cfg(test)]
mod tests {
    #[test]
    fn lookups_are_plain_parts() {
        use super::parts;
        assert_eq!(parts(1100), vec![0..1100]);
        assert_eq!(parts(12_000), vec![0..5000, 5000..10_000, 10_000..12_000]);
        assert!(parts(0).is_empty());
    }
}
