//! Checks: a CEL expression over `row` that must be true (API.md section
//! 14), parsed once when its rule set is compiled and evaluated per row.
//!
//! The expression language is cel-rust's (the `cel` crate). How a row's
//! values read in CEL is [`row`]'s choice. A check that cannot be evaluated
//! for a row (a type mismatch, an overflow, an empty cell read without
//! `has`) counts as false, with the reason in its message; nothing a row
//! holds makes evaluation panic.

mod direct;
mod env;
mod names;
mod row;

use std::sync::Arc;

use cel::common::types::CelBool;
use cel::{Context, ExecutionError, IdedExpr, Program, Value as CelValue};

pub use row::{Row, places};

use super::Severity;
use crate::catalog::Module;
use crate::validate::{RowError, RowErrorCode};
use names::Names;
use row::{RowResolver, RowVal};

/// One check, compiled.
#[derive(Debug)]
pub struct Check {
    pub id: String,
    pub message: String,
    /// The row error's column: the rule's first column, if it names one.
    pub column: Option<String>,
    pub severity: Severity,
    /// The parsed expression, its column reads made direct.
    expr: IdedExpr,
    /// The columns the expression reads: name, module column.
    fields: Box<[(Box<str>, usize)]>,
}

/// What a check says of one row.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    Pass,
    Fail,
    /// The check could not be evaluated; why, for the message.
    Unevaluable(String),
}

/// A rule's expression parsed and checked against the module, ready to be
/// made a [`Check`].
#[derive(Debug)]
pub struct Expression {
    expr: IdedExpr,
    fields: Box<[(Box<str>, usize)]>,
}

impl Expression {
    /// Parses `source` and checks the names it uses against `module`: a
    /// parse error (with its line and column), a column the module lacks,
    /// a name that is neither `row` nor a macro's variable, or a literal
    /// `matches` pattern that does not compile is refused, each a sentence.
    pub fn compile(module: &Module, source: &str) -> Result<Expression, Vec<String>> {
        let program = Program::compile(source).map_err(|errors| {
            let positions = errors.errors.iter().map(|e| {
                let (line, column) = e.pos;
                format!(
                    "the expression does not parse at line {line}, column {}: {}",
                    column + 1,
                    e.msg
                )
            });
            positions.collect::<Vec<_>>()
        })?;
        let names = Names::of(program.expression());
        let mut problems = names.problems;
        let mut fields = Vec::with_capacity(names.columns.len());
        for name in names.columns {
            match module.column_index(&name) {
                Some(c) => fields.push((name.into_boxed_str(), c)),
                None => problems.push(format!(
                    "the expression reads row.{name}, which is not a column of {}",
                    module.key
                )),
            }
        }
        if !problems.is_empty() {
            return Err(problems);
        }
        let fields = fields.into_boxed_slice();
        let mut expr = program.expression().clone();
        direct::direct(&mut expr);
        Ok(Expression { expr, fields })
    }

    /// The module columns the expression reads.
    pub fn columns(&self) -> impl Iterator<Item = usize> + '_ {
        self.fields.iter().map(|&(_, c)| c)
    }
}

impl Check {
    pub fn new(
        id: String,
        expression: Expression,
        message: String,
        column: Option<String>,
        severity: Severity,
    ) -> Check {
        Check {
            id,
            message,
            column,
            severity,
            expr: expression.expr,
            fields: expression.fields,
        }
    }

    /// The module columns the expression reads.
    pub fn columns(&self) -> impl Iterator<Item = usize> + '_ {
        self.fields.iter().map(|&(_, c)| c)
    }

    /// Evaluates the check over one row. Allocates only what the CEL
    /// interpreter allocates: the row is read in place.
    pub fn eval(&self, row: Row<'_>) -> Verdict {
        let fields = &self.fields[..];
        let resolver = RowResolver(RowVal { fields, row });
        let mut context = Context::with_env(Arc::clone(&env::ENV));
        context.set_variable_resolver(&resolver);
        let value = match CelValue::resolve_val(&self.expr, &context) {
            Ok(value) => value,
            Err(e) => return Verdict::Unevaluable(why(&e)),
        };
        match value.downcast_ref::<CelBool>().map(|b| *b.inner()) {
            Some(true) => Verdict::Pass,
            Some(false) => Verdict::Fail,
            None => Verdict::Unevaluable(format!(
                "it gives {}, not true or false",
                value.get_type().name()
            )),
        }
    }

    /// The row error (or warning, by [`Check::severity`]) for a verdict
    /// other than [`Verdict::Pass`]: code `rule`, on the rule's first
    /// column, its message naming the rule.
    pub fn row_error(
        &self,
        number: u64,
        row: Row<'_>,
        module: &Module,
        verdict: &Verdict,
    ) -> RowError {
        let place = match &self.column {
            Some(c) => format!("row {number}, column {c}"),
            None => format!("row {number}"),
        };
        let because = match verdict {
            Verdict::Unevaluable(why) => format!(" (not evaluated: {why})"),
            _ => String::new(),
        };
        let value = (self.column.as_deref())
            .and_then(|c| module.column_index(c))
            .and_then(|c| row.get(c))
            .map(|v| v.to_text());
        RowError {
            row: number,
            column: self.column.clone(),
            value,
            code: RowErrorCode::Rule,
            message: format!("{place}: {} (rule {}){because}", self.message, self.id),
            rule: Some(self.id.clone()),
        }
    }
}

/// Why an expression could not be evaluated, for a person.
fn why(e: &ExecutionError) -> String {
    match e {
        ExecutionError::NoSuchKey(column) => empty(column),
        // A direct read of an empty cell (see `direct`).
        ExecutionError::UndeclaredReference(name) if name.starts_with("row.") => {
            empty(&name["row.".len()..])
        }
        ExecutionError::Overflow(op, a, b) => {
            format!("{op} of {} and {} overflows", plain(a), plain(b))
        }
        ExecutionError::UnsupportedBinaryOperator(op, a, b) => format!(
            "{op} is not defined for {} {} and {} {}",
            type_name(a),
            plain(a),
            type_name(b),
            plain(b)
        ),
        ExecutionError::DivisionByZero(_) | ExecutionError::RemainderByZero(_) => {
            "it divides by zero".into()
        }
        other => other.to_string(),
    }
}

fn empty(column: &str) -> String {
    format!("row.{column} is empty; has(row.{column}) tells whether it was given")
}

/// A value's CEL type as the language names it (`double`, not `float`).
fn type_name(v: &CelValue) -> String {
    match v {
        CelValue::Float(_) => "double".into(),
        other => other.type_of().to_string(),
    }
}

/// A CEL value as an expression writes it, for messages.
fn plain(v: &CelValue) -> String {
    match v {
        CelValue::Int(i) => i.to_string(),
        CelValue::UInt(u) => format!("{u}u"),
        CelValue::Float(f) => f.to_string(),
        CelValue::String(s) => format!("{s:?}"),
        other => format!("{other:?}"),
    }
}

#[cfg(test)]
mod tests;
