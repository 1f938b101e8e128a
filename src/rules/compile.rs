//! A proposed rule set checked against its module and turned into what
//! validation runs, or refused with every problem found: a malformed rule
//! is refused when it is proposed, never at validation time.

use std::borrow::Cow;
use std::collections::HashMap;

use serde::Serialize;

use super::check::{Check, Expression};
use super::normalize::{self, Normalizer};
use super::{MAX_EXPRESSION_BYTES, MAX_RULES, Rule, RuleKind, Severity};
use crate::catalog::{ColumnType, Module};
use crate::validate::CellError;

/// What is wrong with one rule of a proposed set.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RuleProblem {
    /// The rule's place in the proposed list, from 0.
    pub index: usize,
    /// The rule's id as proposed (empty when it has none).
    pub id: String,
    pub message: String,
}

impl RuleProblem {
    pub fn new(index: usize, id: impl Into<String>, message: impl Into<String>) -> RuleProblem {
        RuleProblem {
            index,
            id: id.into(),
            message: message.into(),
        }
    }
}

impl std::fmt::Display for RuleProblem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.id.as_str() {
            "" => write!(f, "rule {}: {}", self.index + 1, self.message),
            id => write!(f, "rule {id}: {}", self.message),
        }
    }
}

/// A unique rule, its columns resolved.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UniqueRule {
    pub id: String,
    /// Module columns, in the rule's order.
    pub columns: Vec<usize>,
    pub severity: Severity,
}

/// A module's rule set, ready for validation.
#[derive(Debug, Default)]
pub struct Compiled {
    /// For each module column, its column type and its normalizers in rule
    /// order.
    normalizers: Vec<(ColumnType, Vec<Normalizer>)>,
    pub checks: Vec<Check>,
    pub uniques: Vec<UniqueRule>,
}

impl Compiled {
    /// Module column `column`'s normalizers, in the order they apply.
    pub fn normalizers(&self, column: usize) -> &[Normalizer] {
        self.normalizers.get(column).map_or(&[], |(_, n)| n)
    }

    /// A cell's text after module column `column`'s normalizers; borrowed
    /// when they change nothing (or there are none).
    pub fn normalize<'a>(&self, column: usize, text: &'a str) -> Result<Cow<'a, str>, CellError> {
        match self.normalizers.get(column) {
            Some((ty, list)) if !list.is_empty() => normalize::chain(list, text, *ty),
            _ => Ok(Cow::Borrowed(text)),
        }
    }

    /// Whether the set does nothing (today's behaviour).
    pub fn is_empty(&self) -> bool {
        self.checks.is_empty()
            && self.uniques.is_empty()
            && self.normalizers.iter().all(|(_, n)| n.is_empty())
    }
}

/// Checks `rules` against `module` and compiles them: each expression
/// parsed once. Every problem of every rule is returned, in rule order.
pub fn compile(module: &Module, rules: &[Rule]) -> Result<Compiled, Vec<RuleProblem>> {
    let mut compiled = Compiled {
        normalizers: (module.columns.iter())
            .map(|c| (c.ty, Vec::new()))
            .collect(),
        ..Compiled::default()
    };
    let mut problems = Vec::new();
    let mut ids: HashMap<&str, usize> = HashMap::new();
    for (index, rule) in rules.iter().enumerate() {
        let mut refuse =
            |message: String| problems.push(RuleProblem::new(index, &rule.id, message));
        if index == MAX_RULES {
            refuse(format!("a module has at most {MAX_RULES} rules"));
        }
        if let Err(why) = check_id(&rule.id, index, &mut ids) {
            refuse(why);
        }
        if let Err(whys) = add(module, rule, &mut compiled) {
            whys.into_iter().for_each(refuse);
        }
    }
    if problems.is_empty() {
        Ok(compiled)
    } else {
        Err(problems)
    }
}

/// An id is given and unique in its set.
fn check_id<'r>(
    id: &'r str,
    index: usize,
    ids: &mut HashMap<&'r str, usize>,
) -> Result<(), String> {
    if id.trim().is_empty() {
        return Err("a rule has an id".into());
    }
    match ids.insert(id, index) {
        Some(first) => {
            ids.insert(id, first);
            Err(format!("the id {id} is also rule {}'s", first + 1))
        }
        None => Ok(()),
    }
}

/// Adds one rule to `compiled`, or says what is wrong with it.
fn add(module: &Module, rule: &Rule, compiled: &mut Compiled) -> Result<(), Vec<String>> {
    match &rule.kind {
        RuleKind::Normalize { column, normalize } => {
            let c = normalizer_column(module, column, *normalize).map_err(|e| vec![e])?;
            compiled.normalizers[c].1.push(*normalize);
            Ok(())
        }
        RuleKind::Check {
            check,
            message,
            columns,
            severity,
        } => {
            let expression = expression(module, check, message, columns)?;
            let column = columns.first().cloned();
            let c = Check::new(
                rule.id.clone(),
                expression,
                message.clone(),
                column,
                *severity,
            );
            compiled.checks.push(c);
            Ok(())
        }
        RuleKind::Unique { unique, severity } => {
            let columns = unique_columns(module, unique).map_err(|e| vec![e])?;
            compiled.uniques.push(UniqueRule {
                id: rule.id.clone(),
                columns,
                severity: *severity,
            });
            Ok(())
        }
    }
}

/// A normalizer's column: one the module has, of a type it writes.
fn normalizer_column(
    module: &Module,
    column: &str,
    normalize: Normalizer,
) -> Result<usize, String> {
    let c = column_of(module, column)?;
    let ty = module.columns[c].ty;
    if !normalize.fits(ty) {
        return Err(format!(
            "{} does not write a value of {column}'s type {}",
            normalize.as_str(),
            ty.as_str()
        ));
    }
    Ok(c)
}

/// A check's expression, message and columns, checked.
fn expression(
    module: &Module,
    check: &str,
    message: &str,
    columns: &[String],
) -> Result<Expression, Vec<String>> {
    let mut problems = Vec::new();
    if message.trim().is_empty() {
        problems.push("a check has a message".to_string());
    }
    problems.extend(columns.iter().filter_map(|c| column_of(module, c).err()));
    if check.len() > MAX_EXPRESSION_BYTES {
        problems.push(format!(
            "the expression has {} bytes; at most {MAX_EXPRESSION_BYTES} are accepted",
            check.len()
        ));
        return Err(problems);
    }
    match Expression::compile(module, check) {
        Ok(e) if problems.is_empty() => Ok(e),
        Ok(_) => Err(problems),
        Err(more) => {
            problems.extend(more);
            Err(problems)
        }
    }
}

/// A unique rule's columns: at least one, each the module's, none twice.
fn unique_columns(module: &Module, unique: &[String]) -> Result<Vec<usize>, String> {
    if unique.is_empty() {
        return Err("a unique rule names at least one column".into());
    }
    let mut columns = Vec::with_capacity(unique.len());
    for name in unique {
        let c = column_of(module, name)?;
        if columns.contains(&c) {
            return Err(format!("{name} is named twice"));
        }
        columns.push(c);
    }
    Ok(columns)
}

fn column_of(module: &Module, name: &str) -> Result<usize, String> {
    module
        .column_index(name)
        .ok_or_else(|| format!("{name} is not a column of {}", module.key))
}

#[cfg(test)]
mod tests;
