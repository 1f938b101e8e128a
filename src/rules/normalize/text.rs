//! The text normalizers: spaces and letter case.

use std::borrow::Cow;

/// Without leading and trailing white space (Unicode's, so a no-break
/// space pasted from a web page goes too).
pub fn trim(text: &str) -> Cow<'_, str> {
    Cow::Borrowed(text.trim())
}

/// Trimmed, and every run of white space inside one plain space.
pub fn collapse_spaces(text: &str) -> Cow<'_, str> {
    let trimmed = text.trim();
    if !needs_collapse(trimmed) {
        return Cow::Borrowed(trimmed);
    }
    let mut out = String::with_capacity(trimmed.len());
    for word in trimmed.split_whitespace() {
        if !out.is_empty() {
            out.push(' ');
        }
        out.push_str(word);
    }
    Cow::Owned(out)
}

/// Whether some white space is not a single plain space.
fn needs_collapse(text: &str) -> bool {
    let mut previous_space = false;
    for c in text.chars() {
        let space = c.is_whitespace();
        if space && (c != ' ' || previous_space) {
            return true;
        }
        previous_space = space;
    }
    false
}

pub fn upper(text: &str) -> Cow<'_, str> {
    if text.chars().any(char::is_lowercase) {
        Cow::Owned(text.to_uppercase())
    } else {
        Cow::Borrowed(text)
    }
}

pub fn lower(text: &str) -> Cow<'_, str> {
    if text.chars().any(char::is_uppercase) {
        Cow::Owned(text.to_lowercase())
    } else {
        Cow::Borrowed(text)
    }
}

/// Each word's first letter upper case and the others lower: a letter
/// starts a word after anything but a letter or digit (`jl. sudirman` →
/// `Jl. Sudirman`, `o'neil` → `O'Neil`).
pub fn title(text: &str) -> Cow<'_, str> {
    let titled = titled(text);
    if titled == text {
        Cow::Borrowed(text)
    } else {
        Cow::Owned(titled)
    }
}

fn titled(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut in_word = false;
    for c in text.chars() {
        if in_word {
            out.extend(c.to_lowercase());
        } else {
            out.extend(c.to_uppercase());
        }
        in_word = c.is_alphanumeric();
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn trim_removes_outer_white_space_only() {
        assert_eq!(trim("  Budi  Santoso \t"), "Budi  Santoso");
        assert_eq!(trim("\u{a0}Budi\u{a0}"), "Budi");
        assert!(matches!(trim("Budi"), Cow::Borrowed("Budi")));
    }

    #[test]
    fn collapse_spaces_leaves_one_plain_space_between_words() {
        assert_eq!(
            collapse_spaces("  Jl.  Sudirman\t\tNo. 5 "),
            "Jl. Sudirman No. 5"
        );
        assert_eq!(collapse_spaces("a\u{a0}b"), "a b");
        assert_eq!(collapse_spaces("a\nb"), "a b");
        assert!(matches!(collapse_spaces(" a b "), Cow::Borrowed("a b")));
        assert_eq!(collapse_spaces("   "), "");
    }

    #[test]
    fn case_changes_borrow_when_nothing_changes() {
        assert_eq!(upper("p-001a"), "P-001A");
        assert!(matches!(upper("P-001"), Cow::Borrowed(_)));
        assert_eq!(lower("Budi@Example.COM"), "budi@example.com");
        assert!(matches!(lower("budi"), Cow::Borrowed(_)));
        assert_eq!(upper("straße"), "STRASSE");
    }

    #[test]
    fn title_capitalises_each_word() {
        assert_eq!(title("budi SANTOSO"), "Budi Santoso");
        assert_eq!(title("jl. sudirman no.5"), "Jl. Sudirman No.5");
        assert_eq!(title("o'neil-smith"), "O'Neil-Smith");
        assert_eq!(title("3rd street"), "3rd Street");
        assert!(matches!(title("Budi Santoso"), Cow::Borrowed(_)));
    }
}
