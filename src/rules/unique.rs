//! Unique rules within one file: which row first had the values a later
//! row repeats.
//!
//! Each row's values are kept as a 128-bit SipHash of them, not as the
//! values: sixteen bytes and a row number a row whatever the text, and two
//! different sets of values share a hash with a chance of about n²/2^129
//! (below 10^-26 for a million rows). `siphasher`'s SipHash-1-3 is already
//! in the dependency tree (through `fastbloom`).

use std::collections::HashMap;
use std::collections::hash_map::Entry;
use std::hash::Hash;

use siphasher::sip128::{Hasher128, SipHasher13};

use super::UniqueRule;
use super::check::Row;
use crate::catalog::Module;
use crate::validate::{RowError, RowErrorCode, Value};

/// Fixed keys: the same file finds the same repeats every time.
const KEYS: (u64, u64) = (0x7275_6c65_735f_756e, 0x6971_7565_5f68_6173);

/// The values one unique rule has seen in a file.
#[derive(Debug, Default)]
pub struct Tracker {
    /// Hash of a row's values → the first row that had them.
    seen: HashMap<u128, u64, foldhash::fast::RandomState>,
}

impl Tracker {
    pub fn new() -> Tracker {
        Tracker::default()
    }

    /// Notes row `row`'s values of the rule's columns; the first row that
    /// had the same values, if one did. A row with an empty value among
    /// them is not compared (as a database's unique index treats null).
    pub fn feed<'v>(
        &mut self,
        row: u64,
        values: impl IntoIterator<Item = Option<&'v Value>>,
    ) -> Option<u64> {
        let hash = hash(values)?;
        match self.seen.entry(hash) {
            Entry::Occupied(first) => Some(*first.get()),
            Entry::Vacant(place) => {
                place.insert(row);
                None
            }
        }
    }

    /// [`Tracker::feed`] with the rule's columns of a row.
    pub fn feed_row(&mut self, rule: &UniqueRule, number: u64, row: Row<'_>) -> Option<u64> {
        self.feed(number, rule.columns.iter().map(|&c| row.get(c)))
    }

    /// How many distinct sets of values were seen.
    pub fn len(&self) -> usize {
        self.seen.len()
    }

    pub fn is_empty(&self) -> bool {
        self.seen.is_empty()
    }
}

/// The 128-bit hash of a row's values, or `None` if one is empty.
fn hash<'v>(values: impl IntoIterator<Item = Option<&'v Value>>) -> Option<u128> {
    let mut hasher = SipHasher13::new_with_keys(KEYS.0, KEYS.1);
    for v in values {
        v?.hash(&mut hasher);
    }
    Some(hasher.finish128().as_u128())
}

/// The row error (or warning, by the rule's severity) of a row repeating
/// row `first`'s values: code `duplicate_in_file`, on the rule's first
/// column, naming the rule.
pub fn row_error(
    module: &Module,
    rule: &UniqueRule,
    number: u64,
    first: u64,
    row: Row<'_>,
) -> RowError {
    let names: Vec<&str> = (rule.columns.iter())
        .map(|&c| module.columns[c].name.as_str())
        .collect();
    let column = rule
        .columns
        .first()
        .map(|&c| module.columns[c].name.clone());
    let value = rule
        .columns
        .first()
        .and_then(|&c| row.get(c))
        .map(Value::to_text);
    RowError {
        row: number,
        column,
        value,
        code: RowErrorCode::DuplicateInFile,
        message: format!(
            "row {number}: {} repeat row {first}'s (rule {})",
            names.join(", "),
            rule.id
        ),
        rule: Some(rule.id.clone()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rules::Severity;

    fn text(s: &str) -> Value {
        Value::Text(s.to_string())
    }

    #[test]
    fn a_repeat_names_the_first_row() {
        let mut t = Tracker::new();
        let (budi, jakarta, bandung) = (text("Budi"), text("Jakarta"), text("Bandung"));
        assert_eq!(t.feed(2, [Some(&budi), Some(&jakarta)]), None);
        assert_eq!(t.feed(3, [Some(&budi), Some(&bandung)]), None);
        assert_eq!(t.feed(4, [Some(&budi), Some(&jakarta)]), Some(2));
        assert_eq!(t.feed(5, [Some(&budi), Some(&jakarta)]), Some(2));
        assert_eq!(t.len(), 2);
    }

    #[test]
    fn values_do_not_run_into_each_other() {
        let mut t = Tracker::new();
        let (ab, c, a, bc) = (text("ab"), text("c"), text("a"), text("bc"));
        assert_eq!(t.feed(2, [Some(&ab), Some(&c)]), None);
        assert_eq!(t.feed(3, [Some(&a), Some(&bc)]), None);
        assert_eq!(t.feed(4, [Some(&Value::Int(1))]), None);
        assert_eq!(t.feed(5, [Some(&text("1"))]), None);
    }

    #[test]
    fn equal_numerics_repeat_whatever_their_scale() {
        let mut t = Tracker::new();
        let (a, b) = (
            Value::Decimal("12.50".parse().unwrap()),
            Value::Decimal("12.5".parse().unwrap()),
        );
        assert_eq!(t.feed(2, [Some(&a)]), None);
        assert_eq!(t.feed(3, [Some(&b)]), Some(2));
    }

    #[test]
    fn a_row_with_an_empty_value_is_not_compared() {
        let mut t = Tracker::new();
        let budi = text("Budi");
        assert_eq!(t.feed(2, [Some(&budi), None]), None);
        assert_eq!(t.feed(3, [Some(&budi), None]), None);
        assert!(t.is_empty());
    }

    #[test]
    fn the_row_error_names_the_rule_and_the_first_row() {
        let catalog = crate::catalog::Catalog::builtin();
        let module = catalog.get("customers").unwrap();
        let rule = UniqueRule {
            id: "one_name_per_city".into(),
            columns: vec![0, 2],
            severity: Severity::Warning,
        };
        let values = vec![
            Some(text("Budi")),
            Some(text("+62812")),
            Some(text("Bandung")),
        ];
        let places = crate::rules::check::places(module.columns.len(), &[(0, 0), (1, 1), (2, 2)]);
        let row = Row::new(&places, &values);
        let mut t = Tracker::new();
        assert_eq!(t.feed_row(&rule, 2, row), None);
        let first = t.feed_row(&rule, 7, row).unwrap();
        let e = row_error(module, &rule, 7, first, row);
        assert_eq!(e.code, RowErrorCode::DuplicateInFile);
        assert_eq!(e.rule.as_deref(), Some("one_name_per_city"));
        assert_eq!(e.column.as_deref(), Some("customer_name"));
        assert_eq!(e.value.as_deref(), Some("Budi"));
        assert_eq!(
            e.message,
            "row 7: customer_name, city repeat row 2's (rule one_name_per_city)"
        );
    }
}
