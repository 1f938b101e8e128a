//! A row's version token (API.md section 15): the `_version` an export
//! writes beside each row, and what an import of that file compares with
//! the row's values then, to find rows someone else changed meanwhile.
//!
//! The token is `v1-` and the lowercase hex of the first 16 bytes of a
//! SHA-256 over the row's typed values in catalog order, each written
//! unambiguously: a tag for its kind (null has its own, so a null is never
//! an empty text), the length of what follows, and the value in a form
//! both databases give alike for the same stored datum:
//!
//! | value | tag | bytes |
//! |---|---|---|
//! | null | 0 | none |
//! | text (and a table's value that is no value of its type, `NaN`) | 1 | UTF-8 |
//! | integer, bigint | 2 | `i64`, big-endian |
//! | numeric | 3 | its text without trailing zeros (`4.50` and `4.5` are one datum, as [`Value::same`] says) |
//! | boolean | 4 | one byte, 0 or 1 |
//! | date | 5 | days from 0001-01-01 (`i32`, big-endian) |
//! | timestamp | 6 | seconds from 1970 (`i64`) and nanoseconds (`u32`), big-endian |
//!
//! Both stores read a row into these [`Value`]s ([`crate::store::values`]):
//! PostgreSQL from its native types, SQLite from its canonical text, so a
//! row holds one token on either. The prefix names the algorithm: a token
//! of another prefix was made by another one, never by this. Letters
//! first, so no spreadsheet takes a token for a number or a date.

use sha2::{Digest, Sha256};

use super::Value;

/// What every token starts with: the algorithm's name.
pub const PREFIX: &str = "v1-";

/// The column an export writes after the module's own: each row's token.
pub const VERSION_COLUMN: &str = "_version";

/// Bytes of the digest the token keeps (32 hex digits).
const KEPT: usize = 16;

/// The digits a token is written in.
const HEX: &[u8; 16] = b"0123456789abcdef";

/// The version token of a row's values, in its module's column order.
pub fn version_of(values: &[Option<Value>]) -> String {
    let mut hash = Sha256::new();
    hash.update(b"importgate row version 1\n");
    hash.update((values.len() as u64).to_be_bytes());
    // A numeric's text, written here rather than into a string of its own
    // (this runs for every row an export writes).
    let mut text = String::new();
    for value in values {
        let mut cell = |tag: u8, bytes: &[u8]| {
            hash.update([tag]);
            hash.update((bytes.len() as u64).to_be_bytes());
            hash.update(bytes);
        };
        match value {
            None => cell(0, &[]),
            Some(Value::Text(s)) => cell(1, s.as_bytes()),
            Some(Value::Int(i)) => cell(2, &i.to_be_bytes()),
            Some(Value::Decimal(d)) => {
                use std::fmt::Write;
                text.clear();
                // `normalize` keeps the sign of a negative zero.
                let _ = match d.is_zero() {
                    true => write!(text, "0"),
                    false => write!(text, "{}", d.normalize()),
                };
                cell(3, text.as_bytes());
            }
            Some(Value::Bool(b)) => cell(4, &[u8::from(*b)]),
            Some(Value::Date(d)) => {
                use chrono::Datelike;
                cell(5, &d.num_days_from_ce().to_be_bytes());
            }
            Some(Value::Timestamp(t)) => {
                let mut bytes = [0u8; 12];
                bytes[..8].copy_from_slice(&t.timestamp().to_be_bytes());
                bytes[8..].copy_from_slice(&t.timestamp_subsec_nanos().to_be_bytes());
                cell(6, &bytes);
            }
        }
    }
    let digest = hash.finalize();
    let mut token = String::with_capacity(PREFIX.len() + 2 * KEPT);
    token.push_str(PREFIX);
    for b in &digest[..KEPT] {
        token.push(char::from(HEX[usize::from(b >> 4)]));
        token.push(char::from(HEX[usize::from(b & 0x0f)]));
    }
    token
}

/// Whether `token` has the shape of a token [`version_of`] makes. A token
/// typed by hand or cut short by an editor is then named as such, not as
/// a row that changed.
pub fn is_token(token: &str) -> bool {
    token
        .strip_prefix(PREFIX)
        .is_some_and(|hex| hex.len() == 2 * KEPT && hex.bytes().all(|b| HEX.contains(&b)))
}

#[cfg(test)]
mod tests {
    use chrono::{NaiveDate, TimeZone, Utc};
    use rust_decimal::Decimal;

    use super::*;

    fn text(s: &str) -> Option<Value> {
        Some(Value::Text(s.into()))
    }

    fn dec(s: &str) -> Option<Value> {
        Some(Value::Decimal(Decimal::from_str_exact(s).unwrap()))
    }

    #[test]
    fn a_token_is_the_prefix_and_32_hex_digits() {
        let token = version_of(&[text("Andi"), Some(Value::Int(3)), None]);
        assert!(token.starts_with(PREFIX), "{token}");
        let hex = &token[PREFIX.len()..];
        assert_eq!(hex.len(), 32);
        assert!(
            hex.bytes()
                .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
        );
        // The same values, the same token.
        assert_eq!(
            token,
            version_of(&[text("Andi"), Some(Value::Int(3)), None])
        );
    }

    #[test]
    fn values_that_differ_give_other_tokens() {
        let rows: Vec<Vec<Option<Value>>> = vec![
            vec![None],
            vec![text("")],
            vec![text("0")],
            vec![Some(Value::Int(0))],
            vec![Some(Value::Bool(false))],
            vec![dec("0")],
            vec![text("a"), text("bc")],
            vec![text("ab"), text("c")],
            vec![text("abc"), None],
            vec![text("abc")],
            vec![Some(Value::Int(1)), None],
            vec![None, Some(Value::Int(1))],
            vec![Some(Value::Date(
                NaiveDate::from_ymd_opt(2024, 1, 2).unwrap(),
            ))],
            vec![text("2024-01-02")],
            vec![Some(Value::Timestamp(
                Utc.with_ymd_and_hms(2024, 1, 2, 0, 0, 0).unwrap(),
            ))],
            vec![Some(Value::Timestamp(
                Utc.with_ymd_and_hms(2024, 1, 2, 0, 0, 0).unwrap()
                    + chrono::Duration::microseconds(1),
            ))],
        ];
        let tokens: std::collections::HashSet<String> =
            rows.iter().map(|r| version_of(r)).collect();
        assert_eq!(tokens.len(), rows.len(), "every row its own token");
    }

    #[test]
    fn a_numeric_spelled_otherwise_is_the_same_datum() {
        assert_eq!(version_of(&[dec("4.50")]), version_of(&[dec("4.5")]));
        assert_eq!(version_of(&[dec("-0.00")]), version_of(&[dec("0")]));
        assert_ne!(version_of(&[dec("4.5")]), version_of(&[dec("45")]));
        assert_ne!(
            version_of(&[dec("12345678901234567890.123456")]),
            version_of(&[dec("12345678901234567890.123457")])
        );
    }

    /// The algorithm is fixed: a token written into a file today must
    /// match the same row tomorrow, on either database.
    #[test]
    fn the_algorithm_does_not_change() {
        let row = vec![
            text("Andi"),
            Some(Value::Int(9_007_199_254_740_993)),
            dec("4.50"),
            Some(Value::Bool(true)),
            Some(Value::Date(NaiveDate::from_ymd_opt(2024, 3, 31).unwrap())),
            Some(Value::Timestamp(
                Utc.with_ymd_and_hms(2024, 3, 31, 1, 2, 3).unwrap()
                    + chrono::Duration::microseconds(456_789),
            )),
            None,
        ];
        let mut hash = Sha256::new();
        hash.update(b"importgate row version 1\n");
        hash.update(7u64.to_be_bytes());
        let mut cell = |tag: u8, bytes: &[u8]| {
            hash.update([tag]);
            hash.update((bytes.len() as u64).to_be_bytes());
            hash.update(bytes);
        };
        cell(1, b"Andi");
        cell(2, &9_007_199_254_740_993i64.to_be_bytes());
        cell(3, b"4.5");
        cell(4, &[1]);
        cell(5, &738_976i32.to_be_bytes());
        let at = Utc.with_ymd_and_hms(2024, 3, 31, 1, 2, 3).unwrap();
        let mut t = at.timestamp().to_be_bytes().to_vec();
        t.extend(456_789_000u32.to_be_bytes());
        cell(6, &t);
        cell(0, &[]);
        let want = format!("v1-{}", hex::encode(&hash.finalize()[..16]));
        assert_eq!(version_of(&row), want);
        assert_eq!(
            NaiveDate::from_ymd_opt(2024, 3, 31).unwrap(),
            NaiveDate::from_num_days_from_ce_opt(738_976).unwrap()
        );
    }
}
