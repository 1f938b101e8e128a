//! `idr`: rupiah amounts as people write them → a plain number.
//!
//! Indonesian writing groups thousands with `.` and puts sen after `,`
//! (`Rp1.250.000,00`); English writing swaps them (`1,250,000.00`). Which
//! mark is which follows from the text: when both appear, the last is the
//! decimal mark; when one appears once, it is a decimal mark before one or
//! two digits and a thousands mark before three (rupiah have no third
//! decimal); when it appears more than once it groups thousands.

use std::borrow::Cow;

use super::refuse;
use crate::validate::{CellError, RowErrorCode};

/// `Rp1.250.000,00`, `Rp 1.250.000`, `Rp. 50.000`, `1,250,000`,
/// `1.250.000,-`, `IDR 75000` → `1250000`, `50000`, `75000`; a fraction is
/// kept without trailing zeros (`Rp 1.250.000,50` → `1250000.5`). Anything
/// else is a `type` error.
pub fn idr(text: &str) -> Result<Cow<'_, str>, CellError> {
    let amount = amount(text).ok_or_else(|| {
        refuse(
            RowErrorCode::Type,
            format!("{} is not a rupiah amount", text.trim()),
        )
    })?;
    Ok(if amount == text {
        Cow::Borrowed(text)
    } else {
        Cow::Owned(amount)
    })
}

/// The plain number a rupiah text writes, if it writes one.
fn amount(text: &str) -> Option<String> {
    let (negative, body) = without_currency(text);
    let (whole, fraction) = split_decimal(body)?;
    let whole = ungrouped(whole)?;
    let fraction = fraction.trim_end_matches('0');
    let whole = whole.trim_start_matches('0');
    let mut out = String::with_capacity(whole.len() + fraction.len() + 3);
    if negative && !(whole.is_empty() && fraction.is_empty()) {
        out.push('-');
    }
    out.push_str(if whole.is_empty() { "0" } else { whole });
    if !fraction.is_empty() {
        out.push('.');
        out.push_str(fraction);
    }
    Some(out)
}

/// The number's text without `Rp`, `Rp.`, `IDR`, a minus sign and the
/// trailing `,-` of a whole amount; and whether it had the minus sign.
fn without_currency(text: &str) -> (bool, &str) {
    let mut s = text.trim();
    let mut negative = false;
    if let Some(rest) = s.strip_prefix('-') {
        negative = true;
        s = rest.trim_start();
    }
    if let Some(rest) = ["rp.", "rp", "idr"]
        .iter()
        .find_map(|p| strip_prefix_ci(s, p))
    {
        s = rest.trim_start();
    }
    if let Some(rest) = s.strip_prefix('-').filter(|_| !negative) {
        negative = true;
        s = rest.trim_start();
    }
    if let Some(rest) = strip_suffix_ci(s, "idr") {
        s = rest.trim_end();
    }
    if let Some(rest) = s.strip_suffix(",-").or_else(|| s.strip_suffix(".-")) {
        s = rest;
    }
    (negative, s)
}

fn strip_prefix_ci<'a>(s: &'a str, prefix: &str) -> Option<&'a str> {
    let head = s.get(..prefix.len())?;
    head.eq_ignore_ascii_case(prefix)
        .then(|| &s[prefix.len()..])
}

fn strip_suffix_ci<'a>(s: &'a str, suffix: &str) -> Option<&'a str> {
    let at = s.len().checked_sub(suffix.len())?;
    let tail = s.get(at..)?;
    tail.eq_ignore_ascii_case(suffix).then(|| &s[..at])
}

/// The whole part (still grouped) and the digits after the decimal mark.
fn split_decimal(body: &str) -> Option<(&str, &str)> {
    let dots = body.matches('.').count();
    let commas = body.matches(',').count();
    let mark = match (dots, commas) {
        (0, 0) => return Some((body, "")),
        (_, 0) | (0, _) => {
            let only = if dots > 0 { '.' } else { ',' };
            let after = body.len() - body.rfind(only)? - 1;
            let decimal = dots + commas == 1 && (1..=2).contains(&after);
            if !decimal {
                return Some((body, ""));
            }
            only
        }
        _ => {
            let last = if body.rfind('.') > body.rfind(',') {
                '.'
            } else {
                ','
            };
            let count = if last == '.' { dots } else { commas };
            if count != 1 {
                return None;
            }
            last
        }
    };
    let (whole, fraction) = body.rsplit_once(mark)?;
    let sen = (1..=2).contains(&fraction.len()) && fraction.bytes().all(|b| b.is_ascii_digit());
    sen.then_some((whole, fraction))
}

/// The digits of a whole part grouped in thousands by one mark (or not at
/// all): the first group one to three digits, every other three.
fn ungrouped(whole: &str) -> Option<Cow<'_, str>> {
    let Some(mark) = whole.chars().find(|&c| c == '.' || c == ',') else {
        let digits = !whole.is_empty() && whole.bytes().all(|b| b.is_ascii_digit());
        return digits.then_some(Cow::Borrowed(whole));
    };
    let mut groups = whole.split(mark);
    let first = groups.next()?;
    let mut out = String::with_capacity(whole.len());
    if !(1..=3).contains(&first.len()) {
        return None;
    }
    out.push_str(first);
    for g in groups {
        if g.len() != 3 {
            return None;
        }
        out.push_str(g);
    }
    out.bytes()
        .all(|b| b.is_ascii_digit())
        .then_some(Cow::Owned(out))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plain(text: &str) -> String {
        idr(text)
            .unwrap_or_else(|e| panic!("{text}: {}", e.message))
            .into_owned()
    }

    #[test]
    fn indonesian_spellings() {
        for (written, number) in [
            ("Rp1.250.000,00", "1250000"),
            ("Rp 1.250.000", "1250000"),
            ("Rp. 50.000", "50000"),
            ("Rp.50.000", "50000"),
            ("rp 50.000", "50000"),
            ("RP50000", "50000"),
            ("1.250.000,-", "1250000"),
            ("Rp 50.000,-", "50000"),
            ("Rp 1.250.000,50", "1250000.5"),
            ("Rp 1.250.000,05", "1250000.05"),
            ("1.250", "1250"),
            ("50,5", "50.5"),
            ("Rp 0,50", "0.5"),
            ("IDR 75000", "75000"),
            ("IDR 75.000", "75000"),
            ("75.000 IDR", "75000"),
            ("Rp 007", "7"),
            ("Rp 0", "0"),
        ] {
            assert_eq!(plain(written), number, "{written}");
        }
    }

    #[test]
    fn english_spellings() {
        for (written, number) in [
            ("1,250,000", "1250000"),
            ("1,250,000.00", "1250000"),
            ("1,250,000.50", "1250000.5"),
            ("IDR 1,250,000", "1250000"),
            ("1,250", "1250"),
            ("12.5", "12.5"),
        ] {
            assert_eq!(plain(written), number, "{written}");
        }
    }

    #[test]
    fn negative_amounts() {
        assert_eq!(plain("-Rp 50.000"), "-50000");
        assert_eq!(plain("Rp -50.000"), "-50000");
        assert_eq!(plain("-1.250.000,50"), "-1250000.5");
        assert_eq!(plain("-Rp 0"), "0");
    }

    #[test]
    fn a_plain_number_is_borrowed() {
        assert!(matches!(idr("1250000"), Ok(Cow::Borrowed("1250000"))));
    }

    #[test]
    fn what_is_no_amount_is_a_type_error() {
        for written in [
            "",
            "Rp",
            "Rp -",
            "abc",
            "Rp 50rb",
            "1,5 juta",
            "1.25.000",
            "1.2345",
            "12,345,67",
            "1,250.000,00",
            "1.250.000,505",
            ",50",
            "1..250",
            "Rp 1 250 000",
            "--50",
            "1.250.000,-,-",
        ] {
            let e = idr(written).unwrap_err();
            assert_eq!(e.code, RowErrorCode::Type, "{written:?}");
            assert!(e.message.contains(written.trim()), "{}", e.message);
        }
    }
}
