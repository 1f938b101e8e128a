//! A rule's JSON shape: which fields make which kind of rule, checked while
//! reading it so that a rule with fields of two kinds, or none, or an
//! unknown normalizer, is refused with a sentence rather than serde's
//! "did not match any variant".

use serde::Deserialize;

use super::{Normalizer, Rule, RuleKind, RuleProblem, Severity};

/// Every field any rule may have.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawRule {
    id: String,
    column: Option<String>,
    normalize: Option<String>,
    check: Option<String>,
    message: Option<String>,
    columns: Option<Vec<String>>,
    severity: Option<Severity>,
    unique: Option<Vec<String>>,
}

impl TryFrom<RawRule> for Rule {
    type Error = String;

    fn try_from(raw: RawRule) -> Result<Rule, String> {
        let id = raw.id.clone();
        let kind = match (&raw.normalize, &raw.check, &raw.unique) {
            (Some(_), None, None) => normalizer(raw)?,
            (None, Some(_), None) => check(raw)?,
            (None, None, Some(_)) => unique(raw)?,
            _ => return Err("a rule has exactly one of normalize, check or unique".into()),
        };
        Ok(Rule { id, kind })
    }
}

fn normalizer(raw: RawRule) -> Result<RuleKind, String> {
    if raw.message.is_some() || raw.columns.is_some() || raw.severity.is_some() {
        return Err("a normalizer has only id, column and normalize".into());
    }
    let column = raw.column.ok_or("a normalizer names its column")?;
    let name = raw.normalize.unwrap_or_default();
    let normalize = Normalizer::parse(&name).ok_or_else(|| {
        let known: Vec<&str> = Normalizer::ALL.iter().map(|n| n.as_str()).collect();
        format!("unknown normalizer {name:?}; one of {}", known.join(", "))
    })?;
    Ok(RuleKind::Normalize { column, normalize })
}

fn check(raw: RawRule) -> Result<RuleKind, String> {
    if raw.column.is_some() {
        return Err("a check names its columns in columns, not column".into());
    }
    Ok(RuleKind::Check {
        check: raw.check.unwrap_or_default(),
        message: raw.message.ok_or("a check has a message")?,
        columns: raw.columns.unwrap_or_default(),
        severity: raw.severity.unwrap_or_default(),
    })
}

fn unique(raw: RawRule) -> Result<RuleKind, String> {
    if raw.column.is_some() || raw.message.is_some() || raw.columns.is_some() {
        return Err("a unique rule has only id, unique and severity".into());
    }
    Ok(RuleKind::Unique {
        unique: raw.unique.unwrap_or_default(),
        severity: raw.severity.unwrap_or_default(),
    })
}

/// Reads a proposed rule set (a JSON array of rules), naming every rule
/// that is not a rule at all; [`super::compile`] then checks them against
/// the module.
pub fn parse(json: &serde_json::Value) -> Result<Vec<Rule>, Vec<RuleProblem>> {
    let Some(items) = json.as_array() else {
        return Err(vec![RuleProblem::new(0, "", "the rules are a JSON array")]);
    };
    let mut rules = Vec::with_capacity(items.len());
    let mut problems = Vec::new();
    for (index, item) in items.iter().enumerate() {
        match Rule::deserialize(item) {
            Ok(rule) => rules.push(rule),
            Err(e) => {
                let id = item.get("id").and_then(|i| i.as_str()).unwrap_or("");
                problems.push(RuleProblem::new(index, id, e.to_string()));
            }
        }
    }
    if problems.is_empty() {
        Ok(rules)
    } else {
        Err(problems)
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn refusal(rule: serde_json::Value) -> String {
        let p = parse(&json!([rule])).unwrap_err();
        assert_eq!(p.len(), 1);
        p[0].message.clone()
    }

    #[test]
    fn each_kind_reads_and_writes_back_as_written() {
        let set = json!([
            {"id": "wa", "column": "wa_number", "normalize": "phone_id"},
            {"id": "amount_is_qty_times_price", "check": "row.amount_idr == row.qty * row.unit_price_idr",
             "message": "amount must be qty × price", "columns": ["amount_idr"], "severity": "warning"},
            {"id": "one_name_per_city", "unique": ["customer_name", "city"], "severity": "error"},
        ]);
        let rules = parse(&set).unwrap();
        assert_eq!(serde_json::to_value(&rules).unwrap(), set);
        assert_eq!(
            rules[0].kind,
            RuleKind::Normalize {
                column: "wa_number".into(),
                normalize: Normalizer::PhoneId
            }
        );
    }

    #[test]
    fn severity_defaults_to_error() {
        let rules = parse(&json!([
            {"id": "c", "check": "true", "message": "m"},
            {"id": "u", "unique": ["city"]},
        ]))
        .unwrap();
        let severities: Vec<Severity> = (rules.iter())
            .map(|r| match &r.kind {
                RuleKind::Check {
                    severity, columns, ..
                } => {
                    assert!(columns.is_empty());
                    *severity
                }
                RuleKind::Unique { severity, .. } => *severity,
                RuleKind::Normalize { .. } => unreachable!(),
            })
            .collect();
        assert_eq!(severities, [Severity::Error, Severity::Error]);
    }

    #[test]
    fn a_rule_of_no_kind_or_two_is_refused() {
        let one = "a rule has exactly one of normalize, check or unique";
        assert_eq!(refusal(json!({"id": "x"})), one);
        let two = json!({"id": "x", "column": "c", "normalize": "trim", "unique": ["c"]});
        assert_eq!(refusal(two), one);
    }

    #[test]
    fn fields_of_another_kind_are_refused() {
        let n = json!({"id": "x", "column": "c", "normalize": "trim", "severity": "warning"});
        assert_eq!(refusal(n), "a normalizer has only id, column and normalize");
        let u = json!({"id": "x", "unique": ["c"], "column": "c"});
        assert_eq!(refusal(u), "a unique rule has only id, unique and severity");
        let c = json!({"id": "x", "check": "true", "message": "m", "column": "c"});
        assert_eq!(
            refusal(c),
            "a check names its columns in columns, not column"
        );
        assert_eq!(
            refusal(json!({"id": "x", "normalize": "trim"})),
            "a normalizer names its column"
        );
        assert_eq!(
            refusal(json!({"id": "x", "check": "true"})),
            "a check has a message"
        );
    }

    #[test]
    fn unknown_fields_and_severities_are_refused() {
        let unknown = refusal(json!({"id": "x", "unique": ["c"], "sevrity": "warning"}));
        assert!(unknown.contains("unknown field `sevrity`"), "{unknown}");
        let severity = refusal(json!({"id": "x", "unique": ["c"], "severity": "fatal"}));
        assert!(severity.contains("unknown variant `fatal`"), "{severity}");
        let no_id = parse(&json!([{"unique": ["c"]}])).unwrap_err();
        assert_eq!((no_id[0].index, no_id[0].id.as_str()), (0, ""));
    }

    #[test]
    fn the_rules_are_an_array() {
        let p = parse(&json!({"rules": []})).unwrap_err();
        assert_eq!(p[0].message, "the rules are a JSON array");
    }
}
