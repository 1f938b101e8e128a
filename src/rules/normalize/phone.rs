//! `phone_id`: Indonesian phone numbers as people write them → E.164, read
//! by libphonenumber's rules and metadata (the `phonenumber` crate) with
//! Indonesia as the region a number without a country code belongs to.

use std::borrow::Cow;

use phonenumber::{Mode, country};

use super::refuse;
use crate::validate::{CellError, RowErrorCode};

/// `0812-3456-7890`, `62812…`, `+62 812 …`, `(021) 555 1234` → `+62…`. A
/// number of another country written with its `+` code is kept as that
/// number. Text that is no valid number is a `phone` error.
pub fn phone_id(text: &str) -> Result<Cow<'_, str>, CellError> {
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

    #[test]
    fn text_that_is_no_number_is_a_phone_error() {
        for written in ["budi", "12", "0812", "0812-3456-7890-1234-5", "+62", "-"] {
            let e = phone_id(written).unwrap_err();
            assert_eq!(e.code, RowErrorCode::Phone, "{written}");
            assert!(e.message.contains(written.trim()), "{}", e.message);
        }
    }
}
