//! Column reads made direct: the parsed expression's `row.qty` becomes a
//! single name, `row.qty`, that the row's resolver answers.
//!
//! The interpreter reads `row.qty` as a qualified name: it collects the
//! segments in a vector, joins them in a string, then looks the name up
//! (two allocations and a type registry search) before selecting the
//! field, about a third of a simple check's time. A name with a dot in it
//! is one the parser never writes, so it means nothing else. `has(row.qty)`
//! is left as it is: it asks the row, whose empty cells are absent.

use cel::common::ast::{EntryExpr, Expr, IdedExpr};

/// Rewrites every `row.<column>` read (not under `has`) in `expr`.
pub(super) fn direct(expr: &mut IdedExpr) {
    match &mut expr.expr {
        Expr::Select(select) if !select.test && is_row(&select.operand) => {
            expr.expr = Expr::Ident(format!("row.{}", select.field));
        }
        Expr::Select(select) => direct(&mut select.operand),
        Expr::Call(call) => {
            call.target.iter_mut().for_each(|t| direct(t));
            call.args.iter_mut().for_each(direct);
        }
        Expr::Comprehension(c) => {
            for part in [
                &mut c.iter_range,
                &mut c.accu_init,
                &mut c.loop_cond,
                &mut c.loop_step,
                &mut c.result,
            ] {
                direct(part);
            }
        }
        Expr::List(list) => list.elements.iter_mut().for_each(direct),
        Expr::Map(map) => map.entries.iter_mut().for_each(|e| entry(&mut e.expr)),
        Expr::Struct(s) => s.entries.iter_mut().for_each(|e| entry(&mut e.expr)),
        Expr::Ident(_) | Expr::Literal(_) | Expr::Unspecified => {}
    }
}

fn entry(entry: &mut EntryExpr) {
    match entry {
        EntryExpr::StructField(f) => direct(&mut f.value),
        EntryExpr::MapEntry(m) => {
            direct(&mut m.key);
            direct(&mut m.value);
        }
    }
}

fn is_row(e: &IdedExpr) -> bool {
    matches!(&e.expr, Expr::Ident(name) if name == "row")
}
