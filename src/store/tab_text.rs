//! The tab-separated text both servers' bulk loaders read, written field
//! by field straight into one buffer for the whole batch: PostgreSQL's
//! `COPY … FROM STDIN` text format, which MySQL's `LOAD DATA` reads too
//! when told its separators and escape (`mysql::stage`).
//!
//! Written by hand because it is a dozen lines and no crate writes it
//! without a `String` per field: the stage's writer used to make the text
//! of every number and typed value, gather a row's fields into a `Vec`,
//! and escape byte by byte: a quarter of the service's instructions in a
//! PostgreSQL validation, 8,200 a row; written this way 2,650 (callgrind
//! of the server over `bash bench/once.sh BIN postgres` with 20,000 of the
//! harness's orders). Nearly every field needs no escape, so a field is
//! scanned first and copied whole.

use chrono::Datelike;

use crate::validate::Value;
use crate::validate::value::date_digits;

/// Tab-separated fields, `\N` for null, backslash escapes, one line a
/// row.
pub struct TabText {
    out: Vec<u8>,
    /// No field written on the current line yet.
    line_start: bool,
}

impl TabText {
    /// An empty buffer with room for `bytes`.
    pub fn with_capacity(bytes: usize) -> TabText {
        TabText {
            out: Vec::with_capacity(bytes),
            line_start: true,
        }
    }

    fn separate(&mut self) {
        if !std::mem::replace(&mut self.line_start, false) {
            self.out.push(b'\t');
        }
    }

    /// A text field, with backslash, tab, newline and carriage return
    /// escaped (what the loaders read specially).
    pub fn text(&mut self, text: &str) {
        self.separate();
        let bytes = text.as_bytes();
        // Tab, newline and carriage return are all at most `\r`: two
        // comparisons a byte find them (other control bytes take the slow
        // way and come out as they are).
        if !bytes.iter().any(|&b| b == b'\\' || b <= b'\r') {
            self.out.extend_from_slice(bytes);
            return;
        }
        for &b in bytes {
            match b {
                b'\\' => self.out.extend_from_slice(b"\\\\"),
                b'\t' => self.out.extend_from_slice(b"\\t"),
                b'\n' => self.out.extend_from_slice(b"\\n"),
                b'\r' => self.out.extend_from_slice(b"\\r"),
                _ => self.out.push(b),
            }
        }
    }

    pub fn int(&mut self, n: i64) {
        self.separate();
        self.out
            .extend_from_slice(itoa::Buffer::new().format(n).as_bytes());
    }

    pub fn null(&mut self) {
        self.separate();
        self.out.extend_from_slice(b"\\N");
    }

    pub fn opt_text(&mut self, text: Option<&str>) {
        match text {
            Some(t) => self.text(t),
            None => self.null(),
        }
    }

    pub fn opt_int(&mut self, n: Option<i64>) {
        match n {
            Some(n) => self.int(n),
            None => self.null(),
        }
    }

    /// A typed value as the database reads it back exactly: integers,
    /// text and dates of years 1 to 9999 without making a `String` first,
    /// any other in the database's own words (`spell`).
    pub fn value(&mut self, value: Option<&Value>, spell: fn(&Value) -> String) {
        match value {
            None => self.null(),
            Some(Value::Int(n)) => self.int(*n),
            Some(Value::Text(t)) => self.text(t),
            Some(other) => match common_era_date(other) {
                Some(digits) => {
                    self.separate();
                    self.out.extend_from_slice(&digits);
                }
                None => self.text(&spell(other)),
            },
        }
    }

    /// Ends the current row.
    pub fn end_row(&mut self) {
        self.out.push(b'\n');
        self.line_start = true;
    }

    pub fn is_empty(&self) -> bool {
        self.out.is_empty()
    }

    pub fn into_bytes(self) -> Vec<u8> {
        self.out
    }
}

/// The `YYYY-MM-DD` of a date of the years 1 to 9999. Year 0 is 1 BC to
/// PostgreSQL, which its spelling writes so.
fn common_era_date(value: &Value) -> Option<[u8; 10]> {
    match value {
        Value::Date(d) if d.year() > 0 => date_digits(d),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields_escape_what_the_loaders_read_specially() {
        let mut copy = TabText::with_capacity(0);
        copy.text("a\tb\\c\nd\re");
        copy.null();
        copy.text("");
        copy.end_row();
        copy.int(-42);
        copy.opt_int(None);
        copy.opt_text(Some("plain"));
        copy.text("\u{1}\u{b}\r");
        copy.end_row();
        assert_eq!(
            copy.into_bytes(),
            b"a\\tb\\\\c\\nd\\re\t\\N\t\n-42\t\\N\tplain\t\x01\x0b\\r\n"
        );
    }
}
