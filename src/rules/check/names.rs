//! What a check's expression names, read from its syntax tree once it
//! parses: the columns it reads (`row.x`, `has(row.x)`, `row['x']`), names
//! that are neither `row` nor a variable of a macro (`rows.x`, a typo), and
//! `matches` patterns written as literals that are no regular expression.
//! All of them are refused when the rule is proposed.

use cel::common::ast::{Expr, IdedExpr, LiteralValue, operators};

use super::env::regex;

/// Names an expression may use besides `row` and its macros' variables:
/// CEL's type names, which `type(x) == int` compares with.
const TYPE_NAMES: &[&str] = &[
    "bool",
    "bytes",
    "double",
    "duration",
    "dyn",
    "int",
    "list",
    "map",
    "null_type",
    "string",
    "timestamp",
    "type",
    "uint",
];

/// What a walk over an expression found.
#[derive(Debug, Default)]
pub(super) struct Names {
    /// Columns read, as written, each once, in order of appearance.
    pub columns: Vec<String>,
    /// What is wrong, as sentences.
    pub problems: Vec<String>,
    /// The variables of the macros around the node being read.
    scope: Vec<String>,
}

impl Names {
    pub fn of(expr: &IdedExpr) -> Names {
        let mut names = Names::default();
        names.walk(expr);
        names
    }

    fn walk(&mut self, e: &IdedExpr) {
        match &e.expr {
            Expr::Ident(name) => self.ident(name),
            Expr::Select(select) if is_row(&select.operand) => self.column(&select.field),
            Expr::Select(select) => self.walk(&select.operand),
            Expr::Call(call) => {
                self.call(&call.func_name, &call.args);
                call.target.iter().for_each(|t| self.walk(t));
                call.args.iter().for_each(|a| self.walk(a));
            }
            Expr::Comprehension(c) => self.comprehension(c),
            Expr::List(list) => list.elements.iter().for_each(|x| self.walk(x)),
            Expr::Map(map) => map.entries.iter().for_each(|x| self.entry(&x.expr)),
            Expr::Struct(s) => s.entries.iter().for_each(|x| self.entry(&x.expr)),
            Expr::Literal(_) | Expr::Unspecified => {}
        }
    }

    fn entry(&mut self, entry: &cel::common::ast::EntryExpr) {
        use cel::common::ast::EntryExpr;
        match entry {
            EntryExpr::StructField(f) => self.walk(&f.value),
            EntryExpr::MapEntry(m) => {
                self.walk(&m.key);
                self.walk(&m.value);
            }
        }
    }

    fn ident(&mut self, name: &str) {
        let known = name == "row"
            || name.starts_with('@')
            || self.scope.iter().any(|v| v == name)
            || TYPE_NAMES.contains(&name);
        if !known {
            self.problems.push(format!(
                "the expression names {name}, which is nothing; the row's columns are row.<column>"
            ));
        }
    }

    fn column(&mut self, name: &str) {
        if !self.columns.iter().any(|c| c == name) {
            self.columns.push(name.to_string());
        }
    }

    /// `row['x']` reads a column; `matches` with a literal pattern must
    /// have a pattern that compiles.
    fn call(&mut self, function: &str, args: &[IdedExpr]) {
        let literal = args.last().and_then(|a| literal_text(&a.expr));
        match (function, literal) {
            (operators::INDEX, Some(name)) if args.first().is_some_and(is_row) => self.column(name),
            ("matches", Some(pattern)) => {
                if let Err(why) = regex(pattern) {
                    self.problems.push(why);
                }
            }
            _ => {}
        }
    }

    fn comprehension(&mut self, c: &cel::common::ast::ComprehensionExpr) {
        self.walk(&c.iter_range);
        self.walk(&c.accu_init);
        let bound = [Some(&c.iter_var), c.iter_var2.as_ref(), Some(&c.accu_var)];
        let before = self.scope.len();
        self.scope.extend(bound.into_iter().flatten().cloned());
        self.walk(&c.loop_cond);
        self.walk(&c.loop_step);
        self.walk(&c.result);
        self.scope.truncate(before);
    }
}

/// Whether an expression is the variable `row` itself.
fn is_row(e: &IdedExpr) -> bool {
    matches!(&e.expr, Expr::Ident(name) if name == "row")
}

fn literal_text(e: &Expr) -> Option<&str> {
    match e {
        Expr::Literal(LiteralValue::String(s)) => Some(s.inner()),
        _ => None,
    }
}
