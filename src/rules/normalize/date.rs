//! `date_id`: dates as Indonesian (and English) writers write them →
//! `YYYY-MM-DD`.
//!
//! Numbers are day first (`17-08-2025`, `17/08/25`) unless the year leads
//! (`2025/08/17`); a two-digit year is 2000–2068 or 1969–1999, as chrono's
//! `%y` reads it. A month may be named in Indonesian or English, in full or
//! abbreviated (`17 Agustus 2025`, `17 Agu 2025`, `17 Agt 2025`, `Aug 17,
//! 2025`), and the day's name before it is skipped (`Minggu, 17 Agustus
//! 2025`).

use std::borrow::Cow;

use chrono::NaiveDate;

use super::refuse;
use crate::validate::value::{date_text, plain_date};
use crate::validate::{CellError, RowErrorCode};

/// Month names and abbreviations, Indonesian and English, lower case.
const MONTHS: [&[&str]; 12] = [
    &["januari", "january", "jan"],
    &["februari", "pebruari", "february", "feb", "peb"],
    &["maret", "march", "mar"],
    &["april", "apr"],
    &["mei", "may"],
    &["juni", "june", "jun"],
    &["juli", "july", "jul"],
    &["agustus", "august", "agu", "agt", "ags", "agst", "aug"],
    &["september", "sep", "sept"],
    &["oktober", "october", "okt", "oct"],
    &["november", "nopember", "nov", "nop"],
    &["desember", "december", "des", "dec"],
];

/// Day names, Indonesian and English, lower case: skipped before a date.
const DAYS: &[&str] = &[
    "senin",
    "selasa",
    "rabu",
    "kamis",
    "jumat",
    "jum'at",
    "sabtu",
    "minggu",
    "ahad",
    "monday",
    "tuesday",
    "wednesday",
    "thursday",
    "friday",
    "saturday",
    "sunday",
    "mon",
    "tue",
    "wed",
    "thu",
    "fri",
    "sat",
    "sun",
];

/// The date a text writes, as `YYYY-MM-DD`; anything else, an impossible
/// day included (`31 Februari 2025`), is a `format` error.
pub fn date_id(text: &str) -> Result<Cow<'_, str>, CellError> {
    // Already `YYYY-MM-DD`, as most cells of a date column are: read digit
    // by digit, without the lower-casing and splitting below.
    if let Some(Some(_)) = plain_date(text) {
        return Ok(Cow::Borrowed(text));
    }
    let date = read(text).map_err(|why| {
        refuse(
            RowErrorCode::Format,
            format!("{} is not a date: {why}", text.trim()),
        )
    })?;
    let iso = date_text(&date);
    Ok(if iso == text {
        Cow::Borrowed(text)
    } else {
        Cow::Owned(iso)
    })
}

fn read(text: &str) -> Result<NaiveDate, String> {
    let lower = text.trim().to_lowercase();
    let mut parts: Vec<&str> = lower
        .split(|c: char| c.is_whitespace() || matches!(c, '-' | '/' | '.' | ','))
        .filter(|p| !p.is_empty())
        .collect();
    if parts.len() == 4 && DAYS.contains(&parts[0]) {
        parts.remove(0);
    }
    let [a, b, c] = parts[..] else {
        return Err("expected a day, a month and a year".into());
    };
    let (day, month, year) = match (month_named(a), month_named(b)) {
        (None, Some(m)) => (a, m, c),
        (Some(m), None) => (b, m, c),
        _ if a.len() == 4 => (c, number(b, "month")?, a),
        _ => (a, number(b, "month")?, c),
    };
    let (day, year) = (number(day, "day")?, year_of(year)?);
    NaiveDate::from_ymd_opt(year, month, day).ok_or_else(|| impossible(year, month, day))
}

fn month_named(word: &str) -> Option<u32> {
    let found = MONTHS.iter().position(|names| names.contains(&word))?;
    Some(found as u32 + 1)
}

/// A one- or two-digit day or month number.
fn number(part: &str, what: &str) -> Result<u32, String> {
    let digits = (1..=2).contains(&part.len()) && part.bytes().all(|b| b.is_ascii_digit());
    match part.parse() {
        Ok(n) if digits => Ok(n),
        _ => Err(format!("{part:?} is no {what}")),
    }
}

/// A four-digit year, or two digits as chrono's `%y` reads them.
fn year_of(part: &str) -> Result<i32, String> {
    let digits = part.bytes().all(|b| b.is_ascii_digit());
    match (part.len(), part.parse::<i32>()) {
        (4, Ok(y)) if digits && y >= 1 => Ok(y),
        (2, Ok(y)) if digits && y < 69 => Ok(2000 + y),
        (2, Ok(y)) if digits => Ok(1900 + y),
        _ => Err(format!("{part:?} is no year")),
    }
}

fn impossible(year: i32, month: u32, day: u32) -> String {
    match NaiveDate::from_ymd_opt(year, month, 1) {
        Some(first) => format!("{} {year} has no day {day}", first.format("%B")),
        None => format!("there is no month {month}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn iso(text: &str) -> String {
        date_id(text)
            .unwrap_or_else(|e| panic!("{text}: {}", e.message))
            .into_owned()
    }

    #[test]
    fn indonesian_month_names() {
        for written in [
            "17 Agustus 2025",
            "17 agustus 2025",
            "17 AGUSTUS 2025",
            "17 Agu 2025",
            "17 Agt 2025",
            "17 Ags 2025",
            "17 Agst 2025",
            "17 Agu. 2025",
            "17-Agu-2025",
            "17-Agustus-2025",
            "Minggu, 17 Agustus 2025",
            "  17  Agustus  2025 ",
        ] {
            assert_eq!(iso(written), "2025-08-17", "{written}");
        }
        assert_eq!(iso("1 Mei 2025"), "2025-05-01");
        assert_eq!(iso("31 Des 2024"), "2024-12-31");
        assert_eq!(iso("5 Okt 2025"), "2025-10-05");
        assert_eq!(iso("29 Pebruari 2024"), "2024-02-29");
        assert_eq!(iso("10 Nopember 2025"), "2025-11-10");
        assert_eq!(iso("3 Maret 2025"), "2025-03-03");
    }

    #[test]
    fn english_month_names() {
        assert_eq!(iso("17 August 2025"), "2025-08-17");
        assert_eq!(iso("17 Aug 2025"), "2025-08-17");
        assert_eq!(iso("Aug 17, 2025"), "2025-08-17");
        assert_eq!(iso("August 17 2025"), "2025-08-17");
        assert_eq!(iso("Sunday, 17 August 2025"), "2025-08-17");
        assert_eq!(iso("1 May 2025"), "2025-05-01");
        assert_eq!(iso("31 Dec 2024"), "2024-12-31");
        assert_eq!(iso("Oct 5, 2025"), "2025-10-05");
    }

    #[test]
    fn numbers_day_first_unless_the_year_leads() {
        for written in [
            "17-08-2025",
            "17/08/2025",
            "17.08.2025",
            "17/8/2025",
            "17/08/25",
            "2025/08/17",
            "2025-08-17",
            "2025.8.17",
        ] {
            assert_eq!(iso(written), "2025-08-17", "{written}");
        }
        assert_eq!(iso("01/02/2025"), "2025-02-01");
        assert_eq!(iso("17/08/99"), "1999-08-17");
    }

    #[test]
    fn iso_is_kept_as_it_is() {
        assert!(matches!(date_id("2025-08-17"), Ok(Cow::Borrowed(_))));
    }

    #[test]
    fn impossible_dates_are_format_errors() {
        for written in [
            "31 Februari 2025",
            "29 Feb 2025",
            "31 April 2025",
            "32-01-2025",
            "17-13-2025",
            "0 Mei 2025",
            "2025/02/30",
            "2025-02-30",
        ] {
            let e = date_id(written).unwrap_err();
            assert_eq!(e.code, RowErrorCode::Format, "{written}");
            assert!(e.message.contains(written), "{}", e.message);
        }
        let e = date_id("31 Februari 2025").unwrap_err();
        assert!(
            e.message.contains("February 2025 has no day 31"),
            "{}",
            e.message
        );
    }

    #[test]
    fn what_is_no_date_is_a_format_error() {
        for written in [
            "",
            "besok",
            "17 Agustus",
            "17 Augustos 2025",
            "Agustus 2025",
            "17 08 2025 10:00",
            "17/08/202",
            "117/08/2025",
            "17 Agu 2025 2026",
            "Senin 17 Agustus",
            "+17/08/2025",
        ] {
            let e = date_id(written).unwrap_err();
            assert_eq!(e.code, RowErrorCode::Format, "{written:?}");
        }
    }
}
