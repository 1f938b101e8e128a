use chrono::{NaiveDate, TimeZone, Utc};

use super::*;
use crate::rules::fixture::{Values, module, text};
use crate::validate::Value;

fn check(source: &str) -> Check {
    let m = module();
    let e = Expression::compile(&m, source).unwrap_or_else(|p| panic!("{source}: {p:?}"));
    Check::new("r".into(), e, "no".into(), None, Severity::Error)
}

fn verdict(source: &str, given: &[(&str, Value)]) -> Verdict {
    let values = Values::of(&module(), given);
    check(source).eval(values.row())
}

fn unevaluable(source: &str, given: &[(&str, Value)]) -> String {
    match verdict(source, given) {
        Verdict::Unevaluable(why) => why,
        other => panic!("{source}: {other:?}"),
    }
}

#[test]
fn amount_is_qty_times_price_over_integer_columns() {
    let source = "row.amount_idr == row.qty * row.unit_price_idr";
    let row = |amount| {
        [
            ("qty", Value::Int(3)),
            ("unit_price_idr", Value::Int(25_000)),
            ("amount_idr", Value::Int(amount)),
        ]
    };
    assert_eq!(verdict(source, &row(75_000)), Verdict::Pass);
    assert_eq!(verdict(source, &row(75_001)), Verdict::Fail);
}

#[test]
fn has_asks_whether_a_cell_was_given() {
    let source = "!has(row.bank_ref) ? row.method != 'transfer' : true";
    let transfer = ("method", text("transfer"));
    assert_eq!(
        verdict(source, std::slice::from_ref(&transfer)),
        Verdict::Fail
    );
    assert_eq!(verdict(source, &[("method", text("cash"))]), Verdict::Pass);
    let with_ref = [transfer, ("bank_ref", text("BCA-1"))];
    assert_eq!(verdict(source, &with_ref), Verdict::Pass);
}

#[test]
fn an_empty_cell_read_without_has_is_unevaluable() {
    let why = unevaluable("row.method == 'cash'", &[]);
    assert_eq!(
        why,
        "row.method is empty; has(row.method) tells whether it was given"
    );
    let by_index = unevaluable("row['method'] == 'cash'", &[]);
    assert_eq!(by_index, why);
    let guarded = "has(row.bank_ref) ? row.bank_ref.startsWith('BCA') : true";
    assert_eq!(verdict(guarded, &[]), Verdict::Pass);
    let bca = [("bank_ref", text("BCA-1"))];
    assert_eq!(verdict(guarded, &bca), Verdict::Pass);
    let in_macro = "[1].all(x, row.qty == x)";
    let why = unevaluable(in_macro, &[]);
    assert!(why.starts_with("row.qty is empty"), "{why}");
    assert_eq!(verdict(in_macro, &[("qty", Value::Int(1))]), Verdict::Pass);
}

#[test]
fn matches_a_pattern() {
    let source = "row.sku.matches('^P-[0-9]{3,}$')";
    assert_eq!(verdict(source, &[("sku", text("P-001"))]), Verdict::Pass);
    assert_eq!(verdict(source, &[("sku", text("P-01"))]), Verdict::Fail);
    assert_eq!(verdict(source, &[("sku", text("x P-001"))]), Verdict::Fail);
    let global = "matches(row.sku, 'P-')";
    assert_eq!(verdict(global, &[("sku", text("x P-001"))]), Verdict::Pass);
}

#[test]
fn a_pattern_computed_per_row_that_does_not_compile_is_unevaluable() {
    let why = unevaluable(
        "row.sku.matches(row.notes)",
        &[("sku", text("P-001")), ("notes", text("["))],
    );
    assert!(why.contains("not a regular expression"), "{why}");
}

#[test]
fn matches_on_a_number_is_unevaluable() {
    let why = unevaluable("row.qty.matches('1')", &[("qty", Value::Int(1))]);
    assert!(why.contains("matches"), "{why}");
}

#[test]
fn size_of_text_counts_characters() {
    let source = "size(row.notes) <= 5";
    assert_eq!(verdict(source, &[("notes", text("ééééé"))]), Verdict::Pass);
    assert_eq!(verdict(source, &[("notes", text("123456"))]), Verdict::Fail);
    assert_eq!(
        verdict("row.notes.size() == 2", &[("notes", text("ab"))]),
        Verdict::Pass
    );
}

#[test]
fn timestamps_compare_with_timestamp_literals() {
    let source = "row.paid_at >= timestamp('2020-01-01T00:00:00Z')";
    let at = |y| Value::Timestamp(Utc.with_ymd_and_hms(y, 6, 1, 8, 30, 0).unwrap());
    assert_eq!(verdict(source, &[("paid_at", at(2024))]), Verdict::Pass);
    assert_eq!(verdict(source, &[("paid_at", at(2019))]), Verdict::Fail);
}

#[test]
fn dates_are_timestamps_at_midnight_utc() {
    let day = Value::Date(NaiveDate::from_ymd_opt(2025, 8, 17).unwrap());
    let given = [("order_date", day)];
    for (source, expected) in [
        (
            "row.order_date == timestamp('2025-08-17T00:00:00Z')",
            Verdict::Pass,
        ),
        (
            "row.order_date >= timestamp('2025-08-17T00:00:00Z')",
            Verdict::Pass,
        ),
        (
            "row.order_date < timestamp('2025-08-17T00:00:00Z')",
            Verdict::Fail,
        ),
        ("row.order_date.getFullYear() == 2025", Verdict::Pass),
        ("row.order_date.getMonth() == 7", Verdict::Pass),
        (
            "string(row.order_date) == '2025-08-17T00:00:00Z'",
            Verdict::Pass,
        ),
    ] {
        assert_eq!(verdict(source, &given), expected, "{source}");
    }
}

#[test]
fn numerics_are_doubles_that_compare_with_ints() {
    let rate = ("rate", Value::Decimal("12.50".parse().unwrap()));
    assert_eq!(
        verdict("row.rate == 12.5", std::slice::from_ref(&rate)),
        Verdict::Pass
    );
    assert_eq!(
        verdict("row.rate > 12", std::slice::from_ref(&rate)),
        Verdict::Pass
    );
    assert_eq!(
        verdict("row.rate * 2.0 == 25.0", std::slice::from_ref(&rate)),
        Verdict::Pass
    );
    let qty = ("qty", Value::Int(2));
    let mixed = "double(row.qty) * row.rate == 25.0";
    assert_eq!(verdict(mixed, &[rate.clone(), qty.clone()]), Verdict::Pass);
    let why = unevaluable("row.qty * row.rate == 25.0", &[rate, qty]);
    assert_eq!(why, "mul is not defined for int 2 and double 12.5");
}

#[test]
fn booleans_are_bools() {
    let paid = [("paid", Value::Bool(true))];
    assert_eq!(verdict("row.paid", &paid), Verdict::Pass);
    assert_eq!(verdict("!row.paid", &paid), Verdict::Fail);
}

#[test]
fn overflow_is_unevaluable_not_a_panic() {
    let why = unevaluable("9223372036854775807 + 1 > 0", &[]);
    assert_eq!(why, "add of 9223372036854775807 and 1 overflows");
    let big = [
        ("qty", Value::Int(i64::MAX)),
        ("unit_price_idr", Value::Int(2)),
        ("amount_idr", Value::Int(0)),
    ];
    let source = "row.amount_idr == row.qty * row.unit_price_idr";
    let why = unevaluable(source, &big);
    assert!(why.contains("overflows"), "{why}");
    assert!(unevaluable("-(-9223372036854775807 - 1) > 0", &[]).contains("overflow"));
}

#[test]
fn division_by_zero_is_unevaluable() {
    let why = unevaluable("row.qty / 0 > 1", &[("qty", Value::Int(1))]);
    assert_eq!(why, "it divides by zero");
}

#[test]
fn a_type_mismatch_is_unevaluable() {
    let why = unevaluable("row.sku > 3", &[("sku", text("P-001"))]);
    assert!(why.contains("_>_"), "{why}");
    let why = unevaluable("row.sku + 1 == 'x'", &[("sku", text("P-001"))]);
    assert_eq!(why, "add is not defined for string \"P-001\" and int 1");
}

#[test]
fn an_expression_that_is_no_boolean_is_unevaluable() {
    let why = unevaluable("row.qty", &[("qty", Value::Int(1))]);
    assert_eq!(why, "it gives int, not true or false");
}

#[test]
fn macros_and_their_variables() {
    let notes = [("notes", text("a,b,c"))];
    let source = "row.notes.split(',').all(x, size(x) == 1)";
    assert_eq!(verdict(source, &notes), Verdict::Pass);
    let exists = "[1, 2, 3].exists(n, n == size(row.notes))";
    assert_eq!(verdict(exists, &[("notes", text("ab"))]), Verdict::Pass);
}

#[test]
fn a_column_read_by_index_is_a_column() {
    let e = Expression::compile(&module(), "row['sku'] == 'P-001'").unwrap();
    assert_eq!(e.columns().collect::<Vec<_>>(), [7]);
    let sku = [("sku", text("P-001"))];
    assert_eq!(verdict("row['sku'] == 'P-001'", &sku), Verdict::Pass);
}

#[test]
fn compile_reads_the_columns_an_expression_names() {
    let m = module();
    let e = Expression::compile(
        &m,
        "has(row.bank_ref) || row.amount_idr == row.qty * row.unit_price_idr",
    )
    .unwrap();
    assert_eq!(e.columns().collect::<Vec<_>>(), [6, 3, 1, 2]);
}

#[test]
fn compile_refuses_a_column_the_module_lacks() {
    let m = module();
    for source in [
        "row.nonexistent > 0",
        "has(row.nonexistent)",
        "row['nonexistent'] == 1",
        "[1].all(x, row.nonexistent == x)",
    ] {
        let problems = Expression::compile(&m, source).unwrap_err();
        assert_eq!(
            problems,
            ["the expression reads row.nonexistent, which is not a column of sales"],
            "{source}"
        );
    }
}

#[test]
fn compile_refuses_a_name_that_is_not_row() {
    let problems = Expression::compile(&module(), "rows.qty > 0 && x == 1").unwrap_err();
    assert_eq!(problems.len(), 2, "{problems:?}");
    assert!(problems[0].contains("names rows"), "{problems:?}");
    assert!(problems[1].contains("names x"), "{problems:?}");
    let types = "type(row.qty) == int && [1].all(x, x > 0)";
    assert!(Expression::compile(&module(), types).is_ok());
}

#[test]
fn compile_gives_the_position_of_a_parse_error() {
    let problems = Expression::compile(&module(), "row.qty >").unwrap_err();
    assert_eq!(problems.len(), 1, "{problems:?}");
    assert!(
        problems[0].starts_with("the expression does not parse at line 1, column "),
        "{problems:?}"
    );
    let problems = Expression::compile(&module(), "row.qty > 0 &&\n  (row.qty <").unwrap_err();
    assert!(problems[0].contains("line 2"), "{problems:?}");
}

#[test]
fn compile_refuses_a_literal_pattern_that_does_not_compile() {
    let problems = Expression::compile(&module(), "row.sku.matches('[')").unwrap_err();
    assert_eq!(problems.len(), 1, "{problems:?}");
    assert!(
        problems[0].starts_with("the pattern \"[\" is not a regular expression"),
        "{problems:?}"
    );
}

#[test]
fn the_row_error_names_the_rule_and_says_why_it_was_not_evaluated() {
    let m = module();
    let e = Expression::compile(&m, "row.amount_idr == row.qty * row.unit_price_idr").unwrap();
    let c = Check::new(
        "amount_is_qty_times_price".into(),
        e,
        "amount must be qty × price".into(),
        Some("amount_idr".into()),
        Severity::Warning,
    );
    let values = Values::of(
        &m,
        &[("amount_idr", Value::Int(10)), ("qty", Value::Int(2))],
    );
    let verdict = c.eval(values.row());
    let error = c.row_error(5, values.row(), &m, &verdict);
    assert_eq!(error.code, RowErrorCode::Rule);
    assert_eq!(error.rule.as_deref(), Some("amount_is_qty_times_price"));
    assert_eq!(error.column.as_deref(), Some("amount_idr"));
    assert_eq!(error.value.as_deref(), Some("10"));
    assert_eq!(
        error.message,
        "row 5, column amount_idr: amount must be qty × price (rule amount_is_qty_times_price) \
         (not evaluated: row.unit_price_idr is empty; has(row.unit_price_idr) tells whether it \
         was given)"
    );
}

/// What one evaluation costs, printed (run with `--nocapture`); no timed
/// assertion. Three checks of the kinds the contract names, over a row of
/// the sales module. A test build is unoptimised; the same code built for
/// release took 0.3–0.7 µs a check on a shared two-core machine, by its
/// load (the three 1.1–1.8 µs a row).
#[test]
fn cost_of_an_evaluation() {
    let m = module();
    let checks: Vec<Check> = [
        "row.amount_idr == row.qty * row.unit_price_idr",
        "!has(row.bank_ref) ? row.method != 'transfer' : true",
        "row.sku.matches('^P-[0-9]{3,}$')",
    ]
    .iter()
    .map(|s| check(s))
    .collect();
    let values = Values::of(
        &m,
        &[
            ("qty", Value::Int(3)),
            ("unit_price_idr", Value::Int(25_000)),
            ("amount_idr", Value::Int(75_000)),
            ("method", text("transfer")),
            ("bank_ref", text("BCA-1")),
            ("sku", text("P-001")),
        ],
    );
    let rounds = if cfg!(debug_assertions) {
        2_000
    } else {
        200_000
    };
    let start = std::time::Instant::now();
    for _ in 0..rounds {
        for c in &checks {
            assert_eq!(c.eval(values.row()), Verdict::Pass);
        }
    }
    let each = start.elapsed().as_secs_f64() * 1e6 / (rounds * checks.len()) as f64;
    println!("one check evaluation: {each:.3} µs ({rounds} rows of three checks)");
}
