//! A module's rule set applied to a file's rows as the reader types them
//! (API.md section 14): its normalizers rewrite a cell's text before it
//! is read as its type, then its checks and unique rules judge the typed
//! row. A validation whose set is empty never makes an [`Apply`]: its rows
//! are read exactly as without rules, at no cost.

use std::borrow::Cow;
use std::collections::HashSet;

use crate::catalog::Module;
use crate::ingest::{Cell, RawRow};
use crate::rules::check::{Row, Verdict, places};
use crate::rules::unique::{self, Tracker};
use crate::rules::{Compiled, Severity};
use crate::validate::{CellError, CheckedRow, HeaderMap, RowError, Rules, check_row_with, value};

/// A rule set applied to the rows of one file, in file order: a
/// [`Typer`] that normalizes and types each row, then a [`Judge`] that
/// runs the checks and unique rules over it. The two may run on two
/// threads ([`Apply::split`]): typing needs no row but its own, judging
/// needs every row before it in file order.
pub struct Apply<'a> {
    typer: Typer<'a>,
    judge: Option<Judge<'a>>,
}

/// Normalizes a row's cells and reads them as their columns' types.
#[derive(Clone, Copy)]
pub struct Typer<'a> {
    module: &'a Module,
    rules: &'a Compiled,
    header: &'a HeaderMap,
}

/// Judges typed rows, in file order, by a set's checks and unique rules.
pub struct Judge<'a> {
    module: &'a Module,
    rules: &'a Compiled,
    header: &'a HeaderMap,
    /// Each module column's place among the file's provided columns.
    places: Vec<Option<usize>>,
    /// What each unique rule has seen, in the set's order.
    seen: Vec<Tracker>,
}

impl<'a> Apply<'a> {
    /// The set applied to a file with `header`; `None` when it does
    /// nothing.
    pub fn new(
        module: &'a Module,
        rules: &'a Compiled,
        header: &'a HeaderMap,
    ) -> Option<Apply<'a>> {
        if rules.is_empty() {
            return None;
        }
        let judges = !rules.checks.is_empty() || !rules.uniques.is_empty();
        Some(Apply {
            typer: Typer {
                module,
                rules,
                header,
            },
            judge: judges.then(|| Judge {
                module,
                rules,
                header,
                places: places(module.columns.len(), &header.provided),
                seen: rules.uniques.iter().map(|_| Tracker::new()).collect(),
            }),
        })
    }

    /// One row normalized and typed, then judged by the checks and unique
    /// rules unless `judged` is false (a row a revision leaves out, which
    /// meets neither the rules nor the file's other rows).
    pub fn check_row(&mut self, parse: &Rules, raw: RawRow, judged: bool) -> CheckedRow {
        let mut row = self.typer.type_row(parse, raw);
        if let Some(judge) = self.judge.as_mut().filter(|_| judged) {
            judge.judge(&mut row);
        }
        row
    }

    /// The typing and the judging apart; no judge when the set has
    /// neither checks nor unique rules.
    pub fn split(self) -> (Typer<'a>, Option<Judge<'a>>) {
        (self.typer, self.judge)
    }
}

impl Typer<'_> {
    /// One row with its cells normalized, then typed.
    pub fn type_row(&self, parse: &Rules, raw: RawRow) -> CheckedRow {
        let rules = self.rules;
        check_row_with(self.module, self.header, parse, raw, |column, cell| {
            normalize(rules, column, cell)
        })
    }
}

impl Judge<'_> {
    /// Runs each check whose columns all read (a check reading a cell that
    /// failed its type is left out: that cell's own error says why), then
    /// feeds each unique rule; what they find is an error or a warning by
    /// the rule's severity.
    pub fn judge(&mut self, row: &mut CheckedRow) {
        let CheckedRow {
            row: number,
            values,
            errors,
            raw: failed,
            warnings,
            ..
        } = row;
        let view = Row::new(&self.places, values);
        let header = self.header;
        let is_failed = |column: usize| {
            failed
                .iter()
                .any(|&(k, _)| header.provided.get(k).is_some_and(|&(c, _)| c == column))
        };
        let mut found = |severity: Severity, e: RowError| match severity {
            Severity::Error => errors.push(e),
            Severity::Warning => warnings.push(e),
        };
        for check in &self.rules.checks {
            if !failed.is_empty() && check.columns().any(&is_failed) {
                continue;
            }
            let verdict = check.eval(view);
            if verdict != Verdict::Pass {
                found(
                    check.severity,
                    check.row_error(*number, view, self.module, &verdict),
                );
            }
        }
        for (rule, seen) in self.rules.uniques.iter().zip(&mut self.seen) {
            if let Some(first) = seen.feed_row(rule, *number, view) {
                let e = unique::row_error(self.module, rule, *number, first, view);
                found(rule.severity, e);
            }
        }
    }
}

/// Batches of typed rows judged on a thread of their own, beside the
/// reader: `read` types rows and hands each batch to the sink it is given;
/// the judge runs over every row not in `excluded`, in file order, and
/// passes the batch to `forward`. A sink that returns false has lost its
/// receiver (the judge ended, or `forward` refused), and the reader stops.
/// A panic in the judge, or no thread to be had, surfaces as a panic of
/// this call once the reader stops; the validation's reader catches it.
pub fn judged<R>(
    mut judge: Judge<'_>,
    excluded: &HashSet<u64>,
    mut forward: impl FnMut(Vec<CheckedRow>) -> bool + Send,
    read: impl FnOnce(&mut dyn FnMut(Vec<CheckedRow>) -> bool) -> R,
) -> R {
    std::thread::scope(|scope| {
        // Two batches ahead: enough to keep both threads busy, nothing in
        // memory.
        let (to_judge, judging) = std::sync::mpsc::sync_channel::<Vec<CheckedRow>>(2);
        scope.spawn(move || {
            for mut batch in judging {
                for row in batch.iter_mut().filter(|r| !excluded.contains(&r.row)) {
                    judge.judge(row);
                }
                if !forward(batch) {
                    return;
                }
            }
        });
        read(&mut |batch| to_judge.send(batch).is_ok())
    })
}

/// Applies module column `column`'s normalizers to a cell's text: the
/// cell becomes the text they make, and what the file said is returned,
/// when that differs. An empty cell stays empty (null); a cell that is no
/// text (an Excel number or date) is normalized as its text reads, only
/// when the column has normalizers.
fn normalize(
    rules: &Compiled,
    column: usize,
    cell: &mut Cell,
) -> Result<Option<String>, CellError> {
    if rules.normalizers(column).is_empty() {
        return Ok(None);
    }
    let now = match &*cell {
        Cell::Empty | Cell::Error(_) => return Ok(None),
        Cell::Text(s) if s.trim().is_empty() => return Ok(None),
        Cell::Text(s) => match rules.normalize(column, s)? {
            Cow::Owned(now) if now != *s => now,
            _ => return Ok(None),
        },
        other => {
            let text = value::cell_text(other);
            match rules.normalize(column, &text)? {
                Cow::Owned(now) if now != text => now,
                _ => return Ok(None),
            }
        }
    };
    let was = std::mem::replace(cell, Cell::Text(now));
    Ok(Some(value::cell_text(&was)))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::catalog::Catalog;
    use crate::validate::{RowErrorCode, Value, match_header};

    fn customers_with(rules: serde_json::Value) -> (std::sync::Arc<Module>, Compiled) {
        let module = Catalog::builtin().get("customers").unwrap().clone();
        let rules = crate::rules::parse(&rules).unwrap();
        let compiled = crate::rules::compile(&module, &rules).unwrap();
        (module, compiled)
    }

    fn raw(row: u64, cells: &[&str]) -> RawRow {
        let cells = cells.iter().map(|c| Cell::Text(c.to_string())).collect();
        RawRow { row, cells }
    }

    #[test]
    fn a_row_is_normalized_typed_and_judged() {
        let (module, compiled) = customers_with(json!([
            {"id": "wa", "column": "wa_number", "normalize": "phone_id"},
            {"id": "city_known", "check": "has(row.city)", "message": "a city is given",
             "columns": ["city"], "severity": "warning"},
            {"id": "one_name", "unique": ["customer_name"]},
        ]));
        let names = ["customer_name", "wa_number", "city"].map(String::from);
        let header = match_header(&module, &names).unwrap();
        let parse = Rules {
            date_formats: &module.date_formats,
            zone: chrono_tz::Asia::Jakarta,
            max_cell_bytes: 1024,
        };
        let mut apply = Apply::new(&module, &compiled, &header).unwrap();
        let first = apply.check_row(&parse, raw(2, &["Budi", "0812-3456-7890", ""]), true);
        assert_eq!(first.values[1], Some(Value::Text("+6281234567890".into())));
        assert_eq!(first.normalized, [(1, "0812-3456-7890".to_string())]);
        assert!(first.errors.is_empty(), "{:?}", first.errors);
        assert_eq!(first.warnings[0].rule.as_deref(), Some("city_known"));

        let second = apply.check_row(&parse, raw(3, &["Budi", "budi", "Bandung"]), true);
        let codes: Vec<_> = second.errors.iter().map(|e| e.code).collect();
        assert_eq!(codes, [RowErrorCode::Phone, RowErrorCode::DuplicateInFile]);
        assert_eq!(second.errors[0].value.as_deref(), Some("budi"));
        assert!(second.warnings.is_empty());

        // Typed after normalizing, an error shows what the file said.
        let big = RawRow {
            row: 4,
            cells: vec![
                Cell::Text("Cici".into()),
                Cell::Int(81234567890),
                Cell::Empty,
            ],
        };
        let number = apply.check_row(&parse, big, true);
        assert_eq!(number.values[1], Some(Value::Text("+6281234567890".into())));
        assert_eq!(number.normalized, [(1, "81234567890".to_string())]);

        // Left out of the judging, the row repeats nothing.
        let out = apply.check_row(&parse, raw(4, &["Budi", "+6281234567890", "X"]), false);
        assert!(out.errors.is_empty() && out.normalized.is_empty());
    }

    #[test]
    fn a_normalized_cell_that_fails_its_type_shows_what_the_file_said() {
        let module = Catalog::builtin().get("orders").unwrap().clone();
        let rules = json!([{"id": "amount", "column": "amount_idr", "normalize": "idr"}]);
        let compiled = crate::rules::compile(&module, &crate::rules::parse(&rules).unwrap());
        let compiled = compiled.unwrap();
        let header = match_header(
            &module,
            &module
                .columns
                .iter()
                .map(|c| c.name.clone())
                .collect::<Vec<_>>(),
        );
        let header = header.unwrap();
        let parse = Rules {
            date_formats: &module.date_formats,
            zone: chrono_tz::Asia::Jakarta,
            max_cell_bytes: 1024,
        };
        let mut apply = Apply::new(&module, &compiled, &header).unwrap();
        let mut cells = vec![""; module.columns.len()];
        let amount = module.column_index("amount_idr").unwrap();
        cells[amount] = "Rp 99.999.999.999.999.999.999";
        let row = apply.check_row(&parse, raw(2, &cells), true);
        let e = (row.errors.iter()).find(|e| e.column.as_deref() == Some("amount_idr"));
        let e = e.expect("the amount's error");
        assert_eq!(e.code, RowErrorCode::OutOfRange, "{e:?}");
        assert_eq!(e.value.as_deref(), Some("Rp 99.999.999.999.999.999.999"));
        assert!(row.normalized.is_empty());
    }

    #[test]
    fn rows_judged_beside_the_reader_meet_every_row_before_them() {
        let (module, compiled) = customers_with(json!([
            {"id": "lower", "column": "city", "normalize": "lower"},
            {"id": "one_name", "unique": ["customer_name"]},
        ]));
        let names = ["customer_name", "city", "wa_number"].map(String::from);
        let header = match_header(&module, &names).unwrap();
        let parse = Rules {
            date_formats: &module.date_formats,
            zone: chrono_tz::Asia::Jakarta,
            max_cell_bytes: 1024,
        };
        let (typer, judge) = Apply::new(&module, &compiled, &header).unwrap().split();
        let excluded = HashSet::from([4]);
        let mut out = Vec::new();
        let typed = judged(
            judge.expect("a unique rule judges"),
            &excluded,
            |batch| {
                out.push(batch);
                true
            },
            |sink| {
                let batches = [
                    vec![(2, "Budi")],
                    vec![(3, "Budi"), (4, "Budi")],
                    vec![(5, "Cici")],
                ];
                let mut n = 0;
                for batch in batches {
                    let rows = batch.into_iter().map(|(row, name)| {
                        typer.type_row(&parse, raw(row, &[name, "BANDUNG", "+6281234567890"]))
                    });
                    n += 1;
                    assert!(sink(rows.collect()));
                }
                n
            },
        );
        assert_eq!(typed, 3);
        let rows: Vec<_> = out.into_iter().flatten().collect();
        let numbers: Vec<_> = rows.iter().map(|r| r.row).collect();
        assert_eq!(numbers, [2, 3, 4, 5], "in file order");
        let codes = |i: usize| rows[i].errors.iter().map(|e| e.code).collect::<Vec<_>>();
        assert_eq!(codes(1), [RowErrorCode::DuplicateInFile]);
        assert!(codes(0).is_empty() && codes(2).is_empty() && codes(3).is_empty());
        let city = module.column_index("city").unwrap();
        assert_eq!(rows[3].values[city], Some(Value::Text("bandung".into())));

        // A forward that refuses stops the reader.
        let (_, judge) = Apply::new(&module, &compiled, &header).unwrap().split();
        let sent = judged(
            judge.unwrap(),
            &excluded,
            |_| false,
            |sink| {
                (0..100)
                    .take_while(|&n| {
                        sink(vec![
                            typer.type_row(&parse, raw(n, &["X", "y", "+6281234567890"])),
                        ])
                    })
                    .count()
            },
        );
        assert!(sent < 100, "the reader stopped after {sent} batches");
    }

    #[test]
    fn a_set_of_normalizers_alone_has_no_judge() {
        let (module, compiled) = customers_with(json!([
            {"id": "lower", "column": "city", "normalize": "lower"},
        ]));
        let names = ["customer_name", "wa_number", "city"].map(String::from);
        let header = match_header(&module, &names).unwrap();
        let (_, judge) = Apply::new(&module, &compiled, &header).unwrap().split();
        assert!(judge.is_none());
    }

    #[test]
    fn an_empty_set_is_never_applied() {
        let (module, compiled) = customers_with(json!([]));
        let header = match_header(&module, &["customer_name", "wa_number"].map(String::from));
        assert!(Apply::new(&module, &compiled, &header.unwrap()).is_none());
    }
}
