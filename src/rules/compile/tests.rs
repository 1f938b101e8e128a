use serde_json::json;

use super::*;
use crate::rules::check::Verdict;
use crate::rules::fixture::{Values, module, text};
use crate::rules::parse;
use crate::validate::{RowErrorCode, Value};

fn rules(json: serde_json::Value) -> Vec<Rule> {
    serde_json::from_value(json).unwrap()
}

fn problems(json: serde_json::Value) -> Vec<RuleProblem> {
    compile(&module(), &rules(json)).unwrap_err()
}

#[test]
fn a_set_of_every_kind_compiles() {
    let set = rules(json!([
        {"id": "wa", "column": "wa_number", "normalize": "phone_id"},
        {"id": "amount", "column": "amount_idr", "normalize": "idr"},
        {"id": "sku_upper", "column": "sku", "normalize": "upper"},
        {"id": "sku_trim", "column": "sku", "normalize": "trim"},
        {"id": "amount_is_qty_times_price",
         "check": "row.amount_idr == row.qty * row.unit_price_idr",
         "message": "amount must be qty × price", "columns": ["amount_idr"]},
        {"id": "ref", "check": "!has(row.bank_ref) ? row.method != 'transfer' : true",
         "message": "a transfer has a bank reference", "columns": ["bank_ref", "method"],
         "severity": "warning"},
        {"id": "one_sku_per_order", "unique": ["order_no", "sku"], "severity": "warning"},
    ]));
    let c = compile(&module(), &set).unwrap();
    let m = module();
    let sku = m.column_index("sku").unwrap();
    assert_eq!(c.normalizers(sku), [Normalizer::Upper, Normalizer::Trim]);
    assert_eq!(c.normalize(sku, " p-001 ").unwrap(), "P-001");
    let wa = m.column_index("wa_number").unwrap();
    assert_eq!(c.normalize(wa, "0812-3456-7890").unwrap(), "+6281234567890");
    let e = c.normalize(wa, "budi").unwrap_err();
    assert_eq!(e.code, RowErrorCode::Phone);
    let amount = m.column_index("amount_idr").unwrap();
    assert_eq!(c.normalize(amount, "Rp 1.250.000").unwrap(), "1250000");
    let notes = m.column_index("notes").unwrap();
    assert!(matches!(
        c.normalize(notes, " x "),
        Ok(Cow::Borrowed(" x "))
    ));
    assert_eq!(c.checks.len(), 2);
    assert_eq!(c.checks[1].severity, Severity::Warning);
    assert_eq!(c.checks[1].column.as_deref(), Some("bank_ref"));
    assert_eq!(c.uniques[0].columns, [0, 7]);
    assert!(!c.is_empty());
    assert!(compile(&module(), &[]).unwrap().is_empty());
}

#[test]
fn compiled_checks_run_over_a_row() {
    let set = rules(json!([
        {"id": "amount", "check": "row.amount_idr == row.qty * row.unit_price_idr",
         "message": "amount must be qty × price", "columns": ["amount_idr"]},
    ]));
    let c = compile(&module(), &set).unwrap();
    let values = Values::of(
        &module(),
        &[
            ("qty", Value::Int(2)),
            ("unit_price_idr", Value::Int(5)),
            ("amount_idr", Value::Int(10)),
            ("sku", text("P-001")),
        ],
    );
    assert_eq!(c.checks[0].eval(values.row()), Verdict::Pass);
}

#[test]
fn a_column_the_module_lacks_is_refused() {
    let p = problems(json!([
        {"id": "a", "column": "nope", "normalize": "trim"},
        {"id": "b", "check": "row.qty > 0", "message": "m", "columns": ["nope"]},
        {"id": "c", "check": "row.nonexistent > 0", "message": "m"},
        {"id": "d", "unique": ["order_no", "nope"]},
    ]));
    let said: Vec<String> = p.iter().map(|p| p.to_string()).collect();
    assert_eq!(
        said,
        [
            "rule a: nope is not a column of sales",
            "rule b: nope is not a column of sales",
            "rule c: the expression reads row.nonexistent, which is not a column of sales",
            "rule d: nope is not a column of sales",
        ]
    );
    assert_eq!(p.iter().map(|p| p.index).collect::<Vec<_>>(), [0, 1, 2, 3]);
}

#[test]
fn a_duplicate_id_is_refused_on_its_second_use() {
    let p = problems(json!([
        {"id": "a", "column": "sku", "normalize": "trim"},
        {"id": "b", "column": "sku", "normalize": "upper"},
        {"id": "a", "column": "notes", "normalize": "trim"},
        {"id": "a", "column": "notes", "normalize": "lower"},
    ]));
    assert_eq!(p.len(), 2);
    assert_eq!((p[0].index, p[1].index), (2, 3));
    assert_eq!(p[0].message, "the id a is also rule 1's");
    assert_eq!(p[1].message, "the id a is also rule 1's");
}

#[test]
fn an_empty_id_is_refused() {
    let p = problems(json!([{"id": " ", "column": "sku", "normalize": "trim"}]));
    assert_eq!(p[0].message, "a rule has an id");
}

#[test]
fn a_parse_error_is_refused_with_its_position() {
    let p = problems(json!([
        {"id": "broken", "check": "row.qty > ", "message": "m", "columns": ["qty"]},
    ]));
    assert_eq!(p.len(), 1);
    assert_eq!(p[0].id, "broken");
    assert!(
        p[0].message
            .starts_with("the expression does not parse at line 1, column "),
        "{}",
        p[0]
    );
}

#[test]
fn an_empty_unique_list_is_refused() {
    let p = problems(json!([
        {"id": "u", "unique": []},
        {"id": "v", "unique": ["sku", "sku"]},
    ]));
    assert_eq!(p[0].message, "a unique rule names at least one column");
    assert_eq!(p[1].message, "sku is named twice");
}

#[test]
fn a_normalizer_on_a_column_of_another_type_is_refused() {
    let p = problems(json!([
        {"id": "d", "column": "qty", "normalize": "date_id"},
        {"id": "p", "column": "paid", "normalize": "phone_id"},
    ]));
    assert_eq!(
        p[0].message,
        "date_id does not write a value of qty's type integer"
    );
    assert_eq!(
        p[1].message,
        "phone_id does not write a value of paid's type boolean"
    );
}

#[test]
fn a_check_without_a_message_is_refused() {
    let p = problems(json!([{"id": "c", "check": "row.qty > 0", "message": " "}]));
    assert_eq!(p[0].message, "a check has a message");
}

#[test]
fn an_expression_over_4_kib_is_refused() {
    let long = format!("row.qty > 0{}", " && row.qty > 0".repeat(300));
    assert!(long.len() > MAX_EXPRESSION_BYTES);
    let p = problems(json!([{"id": "long", "check": long, "message": "m"}]));
    assert_eq!(p.len(), 1);
    assert!(p[0].message.starts_with("the expression has "), "{}", p[0]);
    let fits = "row.qty > 0".to_string() + &" ".repeat(MAX_EXPRESSION_BYTES - 11);
    let ok = rules(json!([{"id": "fits", "check": fits, "message": "m"}]));
    assert!(compile(&module(), &ok).is_ok());
}

#[test]
fn more_than_200_rules_are_refused() {
    let many: Vec<serde_json::Value> = (0..=MAX_RULES)
        .map(|i| json!({"id": format!("r{i}"), "column": "notes", "normalize": "trim"}))
        .collect();
    let p = problems(serde_json::Value::Array(many.clone()));
    assert_eq!(p.len(), 1);
    assert_eq!(p[0].index, MAX_RULES);
    assert_eq!(p[0].message, "a module has at most 200 rules");
    let p = compile(
        &module(),
        &rules(serde_json::Value::Array(many[..MAX_RULES].to_vec())),
    );
    assert!(p.is_ok());
}

#[test]
fn every_problem_of_every_rule_is_returned() {
    let p = problems(json!([
        {"id": "a", "check": "rows.qty > 0 && row.nope", "message": "", "columns": ["x"]},
        {"id": "a", "unique": []},
    ]));
    let said: Vec<String> = p.iter().map(|p| p.to_string()).collect();
    assert_eq!(
        said,
        [
            "rule a: a check has a message",
            "rule a: x is not a column of sales",
            "rule a: the expression names rows, which is nothing; the row's columns are row.<column>",
            "rule a: the expression reads row.nope, which is not a column of sales",
            "rule a: the id a is also rule 1's",
            "rule a: a unique rule names at least one column",
        ]
    );
}

#[test]
fn an_unknown_normalizer_is_refused_naming_the_rule() {
    let p = parse(&json!([
        {"id": "ok", "column": "sku", "normalize": "trim"},
        {"id": "wa", "column": "wa_number", "normalize": "phone"},
    ]))
    .unwrap_err();
    assert_eq!(p.len(), 1);
    assert_eq!((p[0].index, p[0].id.as_str()), (1, "wa"));
    assert!(
        p[0].message
            .starts_with("unknown normalizer \"phone\"; one of trim, "),
        "{}",
        p[0]
    );
}
