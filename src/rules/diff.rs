//! What a proposed rule set changes, rule by rule, matched by id: what the
//! approver reads before deciding.

use std::collections::{HashMap, HashSet};

use serde::Serialize;

use super::Rule;

/// A proposal's difference from the set in force.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Diff {
    /// Rules whose id the set in force lacks, in the proposal's order.
    pub added: Vec<Rule>,
    /// Rules whose id the proposal lacks, in the set in force's order.
    pub removed: Vec<Rule>,
    /// Rules kept by id but written differently, in the proposal's order.
    pub changed: Vec<Changed>,
}

/// One rule as it was and as it would be.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Changed {
    pub id: String,
    pub was: Rule,
    pub now: Rule,
}

impl Diff {
    pub fn is_empty(&self) -> bool {
        self.added.is_empty() && self.removed.is_empty() && self.changed.is_empty()
    }
}

/// The difference between the set in force (`old`) and a proposal (`new`).
/// Rules are matched by id; where a rule stands in the list is not
/// compared.
pub fn diff(old: &[Rule], new: &[Rule]) -> Diff {
    let was: HashMap<&str, &Rule> = old.iter().map(|r| (r.id.as_str(), r)).collect();
    let now: HashSet<&str> = new.iter().map(|r| r.id.as_str()).collect();
    let mut d = Diff::default();
    for rule in new {
        match was.get(rule.id.as_str()) {
            None => d.added.push(rule.clone()),
            Some(&before) if before != rule => d.changed.push(Changed {
                id: rule.id.clone(),
                was: before.clone(),
                now: rule.clone(),
            }),
            Some(_) => {}
        }
    }
    d.removed = (old.iter())
        .filter(|r| !now.contains(r.id.as_str()))
        .cloned()
        .collect();
    d
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rules(json: serde_json::Value) -> Vec<Rule> {
        serde_json::from_value(json).unwrap()
    }

    #[test]
    fn added_removed_and_changed_by_id() {
        let old = rules(serde_json::json!([
            {"id": "wa", "column": "wa_number", "normalize": "phone_id"},
            {"id": "city", "column": "city", "normalize": "title"},
            {"id": "one", "unique": ["customer_name", "city"]},
        ]));
        let new = rules(serde_json::json!([
            {"id": "one", "unique": ["customer_name", "city"], "severity": "warning"},
            {"id": "wa", "column": "wa_number", "normalize": "phone_id"},
            {"id": "name", "column": "customer_name", "normalize": "collapse_spaces"},
        ]));
        let d = diff(&old, &new);
        let ids = |rules: &[Rule]| rules.iter().map(|r| r.id.clone()).collect::<Vec<_>>();
        assert_eq!(ids(&d.added), ["name"]);
        assert_eq!(ids(&d.removed), ["city"]);
        assert_eq!(d.changed.len(), 1);
        assert_eq!(d.changed[0].id, "one");
        assert_eq!(d.changed[0].was, old[2]);
        assert_eq!(d.changed[0].now, new[0]);
    }

    #[test]
    fn the_same_set_in_another_order_changes_nothing() {
        let old = rules(serde_json::json!([
            {"id": "a", "column": "city", "normalize": "trim"},
            {"id": "b", "column": "city", "normalize": "upper"},
        ]));
        let new: Vec<Rule> = old.iter().rev().cloned().collect();
        assert!(diff(&old, &new).is_empty());
        assert!(diff(&[], &[]).is_empty());
        assert_eq!(diff(&[], &old).added, old);
    }

    #[test]
    fn a_diff_serialises_as_the_api_shows_it() {
        let old = rules(serde_json::json!([{"id": "a", "column": "city", "normalize": "trim"}]));
        let new = rules(serde_json::json!([{"id": "a", "column": "city", "normalize": "upper"}]));
        let json = serde_json::to_value(diff(&old, &new)).unwrap();
        assert_eq!(
            json,
            serde_json::json!({
                "added": [],
                "removed": [],
                "changed": [{
                    "id": "a",
                    "was": {"id": "a", "column": "city", "normalize": "trim"},
                    "now": {"id": "a", "column": "city", "normalize": "upper"},
                }],
            })
        );
    }
}
