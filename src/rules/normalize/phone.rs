//! `phone_id`: Indonesian phone numbers as people write them → E.164, read
//! by libphonenumber's rules and metadata (the `phonenumber` crate) with
//! Indonesia as the region a number without a country code belongs to.
//!
//! The crate's parse and validation cost about 20 µs a number (its
//! patterns are kept in one locked cache of 100 compiled regexes, shared
//! by every country's metadata and consulted for every match): a million
//! cells would take 20 s. Most cells are written one plain way (digits
//! with spaces, dashes, dots or brackets after `0`, `62` or `+62`): those
//! are matched here against the same metadata's Indonesian patterns,
//! compiled once ([`Indonesia`]); every other spelling, and any number
//! these patterns refuse, goes through the crate as a whole, so the answer
//! is always the crate's (`fast_path_agrees_with_the_crate`).

use std::borrow::Cow;
use std::sync::LazyLock;

use phonenumber::metadata::{DATABASE, Descriptor};
use phonenumber::{Mode, country};
use regex::{Regex, RegexBuilder};

use super::refuse;
use crate::validate::{CellError, RowErrorCode};

/// `0812-3456-7890`, `62812…`, `+62 812 …`, `(021) 555 1234` → `+62…`. A
/// number of another country written with its `+` code is kept as that
/// number. Text that is no valid number is a `phone` error.
pub fn phone_id(text: &str) -> Result<Cow<'_, str>, CellError> {
    if let Some(e164) = plain_indonesian(text) {
        return Ok(if e164 == text {
            Cow::Borrowed(text)
        } else {
            Cow::Owned(e164)
        });
    }
    by_the_crate(text)
}

/// The crate's own reading of any spelling.
fn by_the_crate(text: &str) -> Result<Cow<'_, str>, CellError> {
    let written = text.trim();
    let number = phonenumber::parse(Some(country::Id::ID), written)
        .ok()
        .filter(phonenumber::is_valid)
        .ok_or_else(|| not_a_number(written))?;
    let e164 = number.format().mode(Mode::E164).to_string();
    Ok(if e164 == text {
        Cow::Borrowed(text)
    } else {
        Cow::Owned(e164)
    })
}

/// A number written the plain way that Indonesia's patterns take, as
/// E.164; `None` for anything else (left to the crate).
fn plain_indonesian(text: &str) -> Option<String> {
    let written = text.trim();
    let (plus, rest) = match written.strip_prefix('+') {
        Some(r) => (true, r),
        None => (false, written),
    };
    let mut digits = String::with_capacity(rest.len());
    for c in rest.chars() {
        match c {
            '0'..='9' => digits.push(c),
            ' ' | '-' | '.' | '(' | ')' => {}
            _ => return None,
        }
    }
    let national = match (plus, digits.strip_prefix("62"), digits.strip_prefix('0')) {
        (true, Some(n), _) | (false, Some(n), _) => n,
        (false, None, Some(n)) => n,
        _ => return None,
    };
    // Mobile and fixed numbers only: 7 to 12 digits, not starting with 0
    // (the crate's parse has its own limits beyond those).
    if !(7..=12).contains(&national.len()) || national.starts_with('0') {
        return None;
    }
    let indonesia = INDONESIA.as_ref()?;
    indonesia.takes(national).then(|| format!("+62{national}"))
}

/// Indonesia's number patterns from the crate's metadata, each compiled
/// once: the general one, and one per type of number.
struct Indonesia {
    general: Pattern,
    types: Vec<Pattern>,
}

/// A descriptor's pattern and the lengths it allows, matched as the crate
/// matches them.
struct Pattern {
    regex: Regex,
    lengths: Vec<u16>,
}

impl Pattern {
    fn of(d: &Descriptor) -> Option<Pattern> {
        Some(Pattern {
            // Written with layout, read as the crate reads it; anchored, as
            // the crate takes only a match at the start (and then need not
            // look further along).
            regex: RegexBuilder::new(&format!("^(?:{})", d.national_number().as_str()))
                .ignore_whitespace(true)
                .build()
                .ok()?,
            lengths: d.possible_length().to_vec(),
        })
    }

    fn takes(&self, national: &str) -> bool {
        (self.lengths.is_empty() || self.lengths.contains(&(national.len() as u16)))
            && self.regex.is_match(national)
    }
}

impl Indonesia {
    /// Whether a national significant number is a number of some type
    /// (what the crate's validation asks).
    fn takes(&self, national: &str) -> bool {
        self.general.takes(national) && self.types.iter().any(|t| t.takes(national))
    }
}

static INDONESIA: LazyLock<Option<Indonesia>> = LazyLock::new(|| {
    let d = DATABASE.by_id("ID")?.descriptors();
    // The common types first: any match will do.
    let types = [
        d.mobile(),
        d.fixed_line(),
        d.premium_rate(),
        d.toll_free(),
        d.shared_cost(),
        d.voip(),
        d.personal_number(),
        d.pager(),
        d.uan(),
        d.voicemail(),
    ];
    Some(Indonesia {
        general: Pattern::of(d.general())?,
        types: types
            .into_iter()
            .flatten()
            .filter_map(Pattern::of)
            .collect(),
    })
});

fn not_a_number(written: &str) -> CellError {
    refuse(
        RowErrorCode::Phone,
        format!("{written} is not a phone number (Indonesian, or international with +)"),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn e164(text: &str) -> String {
        phone_id(text)
            .unwrap_or_else(|e| panic!("{text}: {}", e.message))
            .into_owned()
    }

    #[test]
    fn mobile_numbers_as_written() {
        for written in [
            "0812-3456-7890",
            "081234567890",
            "0812 3456 7890",
            "6281234567890",
            "+6281234567890",
            "+62 812 3456 7890",
            "+62 (812) 3456-7890",
            "+62-812-3456-7890",
            " 0812.3456.7890 ",
        ] {
            assert_eq!(e164(written), "+6281234567890", "{written}");
        }
    }

    #[test]
    fn landlines_with_their_area_code() {
        assert_eq!(e164("(021) 555 1234"), "+62215551234");
        assert_eq!(e164("021-5551234"), "+62215551234");
        assert_eq!(e164("(022) 2501234"), "+62222501234");
    }

    #[test]
    fn another_country_keeps_its_code() {
        assert_eq!(e164("+65 6123 4567"), "+6561234567");
    }

    #[test]
    fn e164_is_kept_as_it_is() {
        assert!(matches!(phone_id("+6281234567890"), Ok(Cow::Borrowed(_))));
    }

    /// Every spelling the fast path takes gets the crate's own answer, over
    /// numbers of every length from 5 to 15 digits after each prefix and
    /// the area codes and mobile prefixes in use.
    #[test]
    fn fast_path_agrees_with_the_crate() {
        let heads = [
            "0812", "0813", "0821", "0852", "0857", "0877", "0895", "0881", "0899", "0800", "0809",
            "021", "022", "0361", "0274", "0804", "0807", "0811", "0819", "0888", "0838", "0814",
            "0", "01", "062", "628", "6221", "62812",
        ];
        let mut checked = 0;
        for head in heads {
            for (len, step) in (5..=15usize).flat_map(|l| [(l, 7), (l, 3), (l, 9)]) {
                let tail: String = (0..len)
                    .map(|i| char::from(b'0' + ((i * step + len) % 10) as u8))
                    .collect();
                for sep in ["", "-", " "] {
                    for prefix in ["", "+62 "] {
                        let body = format!("{head}{sep}{tail}");
                        let text = match prefix {
                            "" => body,
                            p => format!("{p}{}", body.trim_start_matches('0')),
                        };
                        let fast = plain_indonesian(&text);
                        let crate_says = by_the_crate(&text).ok().map(Cow::into_owned);
                        if let Some(f) = &fast {
                            assert_eq!(Some(f), crate_says.as_ref(), "{text}");
                            checked += 1;
                        }
                    }
                }
            }
        }
        assert!(checked > 600, "the fast path took only {checked} numbers");
    }

    #[test]
    fn text_that_is_no_number_is_a_phone_error() {
        for written in ["budi", "12", "0812", "0812-3456-7890-1234-5", "+62", "-"] {
            let e = phone_id(written).unwrap_err();
            assert_eq!(e.code, RowErrorCode::Phone, "{written}");
            assert!(e.message.contains(written.trim()), "{}", e.message);
        }
    }
}
