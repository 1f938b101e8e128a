//! The reference checks of the validation stage (API.md section 12): every
//! non-empty referencing value of a batch is looked up in the referenced
//! module's table as committed, one statement a batch and reference. A
//! value the table lacks is a row error (`on_missing = "error"`) or a row
//! warning (`"warn"`), code `reference`.

use std::borrow::Cow;
use std::collections::HashMap;
use std::sync::Arc;

use foldhash::fast::RandomState;

use crate::catalog::{Module, OnMissing, Reference};
use crate::ids::ModuleKey;
use crate::ledger::{ReferringRow, Warning, WarningCode};
use crate::store::{Db, references};
use crate::validate::{CheckedRow, HeaderMap, RowError, Value};

/// A reference of the job's module, with the module it names.
#[derive(Debug, Clone)]
pub struct Target {
    pub reference: Reference,
    pub module: Arc<Module>,
    /// The stage of an earlier part of the same workbook job that holds
    /// the named module's rows (API.md section 16): its valid rows count
    /// as the table's.
    pub staged: Option<i64>,
}

/// A reference whose column the file gives: where its values are in a
/// checked row, and what the file's rows named so far.
struct Check<'a> {
    target: &'a Target,
    /// The column's position among the file's provided columns.
    position: usize,
    /// Rows with a value in the column, and those whose value is missing.
    named: i64,
    missing: i64,
    /// Values looked up in earlier batches, by their text: whether the
    /// referenced table held them.
    known: HashMap<String, bool>,
}

/// Values a check remembers, at most: a file names the same few thousand
/// products or customers over and over (the harness's 1M orders name
/// 2,000 skus, and looking them up again in each batch of 500 takes 1.1 s
/// of a validation), while memory stays bounded whatever the file (about
/// 100 bytes a value). Values past it are looked up each time they come.
const REMEMBERED: usize = 50_000;

/// The reference checks of one job, kept across its batches.
pub struct Checks<'a> {
    checks: Vec<Check<'a>>,
}

impl<'a> Checks<'a> {
    /// The checks of the references whose column the file's header gives.
    pub fn new(targets: &'a [Target], header: &HeaderMap) -> Checks<'a> {
        let checks = targets
            .iter()
            .filter_map(|target| {
                let position = header
                    .provided
                    .iter()
                    .position(|&(col, _)| col == target.reference.column_index)?;
                Some(Check {
                    target,
                    position,
                    named: 0,
                    missing: 0,
                    known: HashMap::new(),
                })
            })
            .collect();
        Checks { checks }
    }

    /// Looks a batch's referencing values up and gives each row's warnings
    /// (in batch order) as the referencing columns' names, all the stage
    /// keeps of them (`rows::warns_text`); errors are added to the rows
    /// themselves. Building a message for every warned row, only to drop
    /// it, costs 1.8 % of a 1M-row validation naming no known product
    /// (`perf`, through `bash bench/once.sh … perf`).
    pub async fn run(
        &mut self,
        db: &Db,
        batch: &mut [CheckedRow],
    ) -> anyhow::Result<Vec<Vec<&'a str>>> {
        let mut warnings = vec![Vec::new(); batch.len()];
        for check in &mut self.checks {
            let r = &check.target.reference;
            let distinct = distinct_values(batch, check.position);
            if distinct.is_empty() {
                continue;
            }
            let found = check.look_up(db, &distinct).await?;
            let mut missing = Vec::new();
            for ((text, (_, rows)), found) in distinct.iter().zip(found) {
                check.named += rows.len() as i64;
                if found {
                    continue;
                }
                check.missing += rows.len() as i64;
                match r.on_missing {
                    OnMissing::Error => missing.push((text.to_string(), rows.clone())),
                    OnMissing::Warn => rows
                        .iter()
                        .for_each(|&i| warnings[i].push(r.column.as_str())),
                }
            }
            drop(distinct);
            for (text, rows) in missing {
                for i in rows {
                    let error = RowError::missing_reference(batch[i].row, r, &text);
                    batch[i].errors.push(error);
                }
            }
        }
        Ok(warnings)
    }

    /// What the approver reads before deciding: for each reference the
    /// file uses, how many rows name the referenced module and how many of
    /// those name nothing there.
    pub fn summary(&self) -> Vec<Warning> {
        self.checks
            .iter()
            .filter(|c| c.named > 0)
            .map(|c| {
                let r = &c.target.reference;
                let found = c.named - c.missing;
                let named = match c.named {
                    1 => format!("1 row names {} by {}", r.module, r.column),
                    n => format!("{n} rows name {} by {}", r.module, r.column),
                };
                let kind = match r.on_missing {
                    OnMissing::Warn => "warnings",
                    OnMissing::Error => "errors",
                };
                let message = match (c.named, c.missing) {
                    (1, 0) => format!("{named}; {} holds it", r.module),
                    (_, 0) => format!("{named}; {} holds every one", r.module),
                    (_, n) => format!("{named}: {found} found, {n} not in {} ({kind})", r.module),
                };
                Warning {
                    code: WarningCode::References,
                    columns: Some(vec![r.column.clone()]),
                    module: Some(r.module.clone()),
                    rows: Some(c.missing),
                    mapping: None,
                    sheet: None,
                    message,
                }
            })
            .collect()
    }
}

impl Check<'_> {
    /// Whether the referenced table holds each of a batch's distinct
    /// values (in their order): those an earlier batch looked up as it
    /// answered then, the others in one lookup now. A value is so judged
    /// once a validation, as if the whole file were checked at one moment.
    async fn look_up(&mut self, db: &Db, distinct: &[Distinct<'_>]) -> anyhow::Result<Vec<bool>> {
        let unknown: Vec<usize> = (0..distinct.len())
            .filter(|&n| !self.known.contains_key(&*distinct[n].0))
            .collect();
        let mut fresh = std::collections::HashSet::new();
        if !unknown.is_empty() {
            let values: Vec<Value> = unknown.iter().map(|&n| distinct[n].1.0.clone()).collect();
            let (module, key) = (&self.target.module, self.target.reference.key_index);
            let mut c = db.acquire().await?;
            let staged = self.target.staged;
            let present = references::present(&mut c.conn(), module, key, &values, staged).await?;
            for (k, &n) in unknown.iter().enumerate() {
                let held = present.contains(&k);
                if held {
                    fresh.insert(n);
                }
                if self.known.len() < REMEMBERED {
                    self.known.insert(distinct[n].0.to_string(), held);
                }
            }
        }
        Ok((0..distinct.len())
            .map(|n| fresh.contains(&n) || self.known.get(&*distinct[n].0) == Some(&true))
            .collect())
    }
}

/// A referencing value of a batch, by its text, and the rows naming it.
type Distinct<'b> = (Cow<'b, str>, (&'b Value, Vec<usize>));

/// A batch's distinct values in the column at `position` (among the
/// provided ones), each with the rows that name it. Text values are
/// compared where they lie, not copied: a copy, and SipHash of it, for
/// every row of 1M orders naming a product costs 1,800 instructions a row
/// on the decide side, which an upsert validation shares its two cores
/// with (callgrind, `bash bench/once.sh`).
fn distinct_values(batch: &[CheckedRow], position: usize) -> Vec<Distinct<'_>> {
    let mut rows_of: HashMap<Cow<'_, str>, (&Value, Vec<usize>), RandomState> =
        HashMap::with_capacity_and_hasher(batch.len(), RandomState::default());
    for (i, row) in batch.iter().enumerate() {
        if let Some(Some(v)) = row.values.get(position) {
            let text = match v {
                Value::Text(t) => Cow::Borrowed(t.as_str()),
                other => Cow::Owned(other.to_text()),
            };
            rows_of.entry(text).or_insert_with(|| (v, vec![])).1.push(i);
        }
    }
    rows_of.into_iter().collect()
}

/// A module whose reference names the module of a job being rolled back.
#[derive(Debug, Clone)]
pub struct Referrer {
    pub module: Arc<Module>,
    pub reference: Reference,
}

/// The referrers of `module` in `catalog`.
pub fn referrers(catalog: &crate::catalog::Catalog, module: &ModuleKey) -> Vec<Referrer> {
    catalog
        .referrers(module.as_str())
        .map(|(m, r)| Referrer {
            module: m.clone(),
            reference: r.clone(),
        })
        .collect()
}

/// What undoing a job's inserts would leave naming nothing in one
/// referring module: the first keys (with the file rows that inserted
/// them), and the referring rows in all.
#[derive(Debug, Clone)]
pub struct Orphans {
    pub referrer: Referrer,
    pub listed: Vec<references::Orphaned>,
    pub rows: i64,
}

/// The orphans a rollback of the job staged in `stage` would make, by
/// referring module (those with none are left out). `only_errors` looks
/// only at references with `on_missing = "error"` (what refuses a
/// rollback).
pub async fn orphans(
    conn: &mut crate::store::Conn<'_>,
    stage: &crate::store::stage::Stage<'_>,
    referrers: &[Referrer],
    only_errors: bool,
    listed: i64,
) -> anyhow::Result<Vec<Orphans>> {
    let mut found = Vec::new();
    for referrer in referrers {
        if only_errors && referrer.reference.on_missing != OnMissing::Error {
            continue;
        }
        let (listed, rows) =
            references::orphans(conn, stage, &referrer.module, &referrer.reference, listed).await?;
        if rows > 0 {
            found.push(Orphans {
                referrer: referrer.clone(),
                listed,
                rows,
            });
        }
    }
    Ok(found)
}

/// The first `limit` rows of the referring modules that name what a
/// rollback would delete (API.md section 12: a refused rollback names
/// them), module by module in the order `found` has them.
pub async fn referring_rows(
    conn: &mut crate::store::Conn<'_>,
    stage: &crate::store::stage::Stage<'_>,
    found: &[Orphans],
    limit: usize,
) -> anyhow::Result<Vec<ReferringRow>> {
    let mut rows = Vec::new();
    for o in found {
        let left = limit.saturating_sub(rows.len());
        if left == 0 {
            break;
        }
        let (module, r) = (&o.referrer.module, &o.referrer.reference);
        let named = references::referring(conn, stage, module, r, left as i64).await?;
        rows.extend(named.into_iter().map(|(key, value)| ReferringRow {
            module: module.key.to_string(),
            key: match key.as_slice() {
                [one] => serde_json::json!(one),
                _ => serde_json::json!(key),
            },
            column: r.column.clone(),
            value,
        }));
    }
    Ok(rows)
}

impl Orphans {
    /// The warning shown at the rollback gate.
    pub fn warning(&self) -> Warning {
        let r = &self.referrer.reference;
        Warning {
            code: WarningCode::Orphans,
            columns: Some(vec![r.column.clone()]),
            module: Some(self.referrer.module.key.to_string()),
            rows: Some(self.rows),
            mapping: None,
            sheet: None,
            message: format!(
                "{} of {} {} a {} this rollback deletes{}",
                match self.rows {
                    1 => "1 row".to_string(),
                    n => format!("{n} rows"),
                },
                self.referrer.module.key,
                if self.rows == 1 { "names" } else { "name" },
                r.key,
                match r.on_missing {
                    OnMissing::Warn => "; they will name nothing",
                    OnMissing::Error => "; the rollback will be refused",
                }
            ),
        }
    }
}
