//! `email`: an address trimmed, its domain lower-cased (domains are not
//! case-sensitive; the part before `@` may be, so it is kept as written).
//! The shape is RFC 5322's as the `email_address` crate reads it, with a
//! dotted domain and nothing around the address.

use std::borrow::Cow;

use email_address::{EmailAddress, Options};

use super::refuse;
use crate::validate::{CellError, RowErrorCode};

/// ` Budi@Example.COM ` → `Budi@example.com`; text not shaped like an
/// address is a `format` error.
pub fn email(text: &str) -> Result<Cow<'_, str>, CellError> {
    let written = text.trim();
    let options = Options::default()
        .with_required_tld()
        .without_display_text()
        .without_domain_literal();
    let address = EmailAddress::parse_with_options(written, options).map_err(|e| {
        refuse(
            RowErrorCode::Format,
            format!("{written} is not an email address: {e}"),
        )
    })?;
    let domain = address.domain();
    if written.len() == text.len() && !domain.chars().any(char::is_uppercase) {
        return Ok(Cow::Borrowed(text));
    }
    Ok(Cow::Owned(format!(
        "{}@{}",
        address.local_part(),
        domain.to_lowercase()
    )))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn trimmed_with_the_domain_in_lower_case() {
        assert_eq!(email(" Budi@Example.COM ").unwrap(), "Budi@example.com");
        assert_eq!(
            email("siti.rahma+toko@mail.co.id").unwrap(),
            "siti.rahma+toko@mail.co.id"
        );
        assert!(matches!(email("a@b.id"), Ok(Cow::Borrowed(_))));
    }

    #[test]
    fn what_is_no_address_is_a_format_error() {
        for written in [
            "budi",
            "budi@",
            "@example.com",
            "budi@localhost",
            "budi@@example.com",
            "budi @example.com",
            "Budi <budi@example.com>",
            "budi@[127.0.0.1]",
            "budi@example..com",
        ] {
            let e = email(written).unwrap_err();
            assert_eq!(e.code, RowErrorCode::Format, "{written}");
            assert!(e.message.contains(written), "{}", e.message);
        }
    }
}
