//! Normalizers: a cell's text as people write it → the text its column's
//! type reads (API.md section 14). Each is a pure function of the text;
//! the result borrows the input when nothing changed, so a cell already
//! in shape costs no allocation.

mod date;
mod email;
mod idr;
mod phone;
mod text;

use std::borrow::Cow;

use serde::{Deserialize, Serialize};

use crate::catalog::ColumnType;
use crate::validate::{CellError, RowErrorCode};

pub use date::date_id;
pub use email::email;
pub use idr::idr;
pub use phone::phone_id;
pub use text::{collapse_spaces, lower, title, trim, upper};

/// The normalizers a rule may name: a closed set.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Normalizer {
    Trim,
    CollapseSpaces,
    Upper,
    Lower,
    Title,
    /// Indonesian phone numbers → E.164.
    PhoneId,
    /// Rupiah amounts as written → a plain number.
    Idr,
    /// Indonesian and English dates → `YYYY-MM-DD`.
    DateId,
    /// Trimmed, domain lower-cased.
    Email,
}

impl Normalizer {
    pub const ALL: [Normalizer; 9] = [
        Normalizer::Trim,
        Normalizer::CollapseSpaces,
        Normalizer::Upper,
        Normalizer::Lower,
        Normalizer::Title,
        Normalizer::PhoneId,
        Normalizer::Idr,
        Normalizer::DateId,
        Normalizer::Email,
    ];

    /// The name a rule gives it.
    pub fn as_str(self) -> &'static str {
        match self {
            Normalizer::Trim => "trim",
            Normalizer::CollapseSpaces => "collapse_spaces",
            Normalizer::Upper => "upper",
            Normalizer::Lower => "lower",
            Normalizer::Title => "title",
            Normalizer::PhoneId => "phone_id",
            Normalizer::Idr => "idr",
            Normalizer::DateId => "date_id",
            Normalizer::Email => "email",
        }
    }

    pub fn parse(name: &str) -> Option<Normalizer> {
        Normalizer::ALL.into_iter().find(|n| n.as_str() == name)
    }

    /// Normalizes one cell's text for a column of type `ty`: `idr` refuses a
    /// fraction of a rupiah in an `integer` or `bigint` column.
    pub fn apply(self, text: &str, ty: ColumnType) -> Result<Cow<'_, str>, CellError> {
        match self {
            Normalizer::Trim => Ok(trim(text)),
            Normalizer::CollapseSpaces => Ok(collapse_spaces(text)),
            Normalizer::Upper => Ok(upper(text)),
            Normalizer::Lower => Ok(lower(text)),
            Normalizer::Title => Ok(title(text)),
            Normalizer::PhoneId => phone_id(text),
            Normalizer::Idr => whole_for(ty, text, idr(text)?),
            Normalizer::DateId => date_id(text),
            Normalizer::Email => email(text),
        }
    }

    /// Which column types the normalizer's output is meant for: text
    /// normalizers and `phone_id`, `email` write text; `idr` a number;
    /// `date_id` a date.
    pub fn fits(self, ty: ColumnType) -> bool {
        match self {
            Normalizer::Idr => matches!(
                ty,
                ColumnType::Integer | ColumnType::Bigint | ColumnType::Numeric | ColumnType::Text
            ),
            Normalizer::DateId => matches!(ty, ColumnType::Date | ColumnType::Text),
            Normalizer::PhoneId | Normalizer::Email => ty == ColumnType::Text,
            _ => true,
        }
    }
}

/// `idr`'s amount, refused when it has a fraction of a rupiah and the
/// column holds whole numbers.
fn whole_for<'a>(
    ty: ColumnType,
    written: &str,
    amount: Cow<'a, str>,
) -> Result<Cow<'a, str>, CellError> {
    let whole = matches!(ty, ColumnType::Integer | ColumnType::Bigint);
    if whole && amount.contains('.') {
        return Err(CellError {
            code: RowErrorCode::Type,
            message: format!("{written} has a fraction of a rupiah; the column holds whole rupiah"),
        });
    }
    Ok(amount)
}

/// Applies normalizers in turn, each to the previous one's text.
pub fn chain<'a>(
    normalizers: &[Normalizer],
    text: &'a str,
    ty: ColumnType,
) -> Result<Cow<'a, str>, CellError> {
    let mut now = Cow::Borrowed(text);
    for n in normalizers {
        now = match now {
            Cow::Borrowed(s) => n.apply(s, ty)?,
            Cow::Owned(s) => match n.apply(&s, ty)? {
                Cow::Borrowed(r) if r.len() == s.len() => Cow::Owned(s),
                next => Cow::Owned(next.into_owned()),
            },
        };
    }
    Ok(now)
}

/// A normalizer's refusal: code and a message naming what was written.
fn refuse(code: RowErrorCode, message: String) -> CellError {
    CellError { code, message }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_read_back() {
        for n in Normalizer::ALL {
            assert_eq!(Normalizer::parse(n.as_str()), Some(n));
            let json = serde_json::to_value(n).unwrap();
            assert_eq!(json, n.as_str());
        }
        assert_eq!(Normalizer::parse("phone"), None);
    }

    #[test]
    fn a_chain_applies_each_in_turn_and_borrows_when_nothing_changes() {
        let both = [Normalizer::Trim, Normalizer::Upper];
        assert_eq!(chain(&both, "  p-001 ", ColumnType::Text).unwrap(), "P-001");
        let kept = chain(&both, "P-001", ColumnType::Text).unwrap();
        assert!(matches!(kept, Cow::Borrowed("P-001")));
        let two = [Normalizer::Upper, Normalizer::Trim];
        assert_eq!(chain(&two, " ab ", ColumnType::Text).unwrap(), "AB");
    }

    #[test]
    fn idr_refuses_a_fraction_in_a_whole_number_column() {
        let e = Normalizer::Idr
            .apply("Rp 1.250.000,50", ColumnType::Bigint)
            .unwrap_err();
        assert_eq!(e.code, RowErrorCode::Type);
        assert!(e.message.contains("Rp 1.250.000,50"), "{}", e.message);
        let n = Normalizer::Idr.apply("Rp 1.250.000,50", ColumnType::Numeric);
        assert_eq!(n.unwrap(), "1250000.5");
        let whole = Normalizer::Idr.apply("Rp1.250.000,00", ColumnType::Integer);
        assert_eq!(whole.unwrap(), "1250000");
    }

    #[test]
    fn fits_the_column_types_it_writes() {
        assert!(Normalizer::Idr.fits(ColumnType::Bigint));
        assert!(!Normalizer::Idr.fits(ColumnType::Date));
        assert!(Normalizer::DateId.fits(ColumnType::Date));
        assert!(!Normalizer::PhoneId.fits(ColumnType::Integer));
        assert!(Normalizer::Trim.fits(ColumnType::Numeric));
    }
}
