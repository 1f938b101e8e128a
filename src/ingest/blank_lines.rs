//! Blank lines in a CSV file, counted as a spreadsheet counts them.
//!
//! The `csv` crate skips blank lines without a trace (its positions lag
//! behind them), but a spreadsheet shows each as an empty row, and people
//! find rows by the number the spreadsheet shows (API.md section 5). This
//! reader sits between the bytes and the parser and follows the same
//! quoting rules, so it knows which line breaks end a record and which are
//! inside a quoted field: for every record it notes how many blank lines
//! came before it. The parser reads ahead, so the notes wait in a queue
//! that holds only the records of the parser's buffer.

use std::collections::VecDeque;
use std::io::Read;

/// Where the scan is in the CSV grammar (as `csv_core` reads it: a quote
/// opens a quoted field only at a field's start; `""` inside one is a
/// quote).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum At {
    /// At the start of a line: a record has not begun.
    LineStart,
    FieldStart,
    Unquoted,
    Quoted,
    /// A quote inside a quoted field: its end, or the first of `""`.
    QuoteInQuoted,
}

pub struct BlankLines<R> {
    inner: R,
    delimiter: u8,
    at: At,
    /// The last byte was a `\r` ending a line (a `\n` after it is the same
    /// line break).
    after_cr: bool,
    /// Blank lines since the last record.
    blanks: u64,
    /// For each record the scan has finished and the parser not yet asked
    /// about: the blank lines before it.
    before: VecDeque<u64>,
    /// The bytes that end an unquoted field: the delimiter and line breaks.
    ends: [bool; 256],
}

impl<R: Read> BlankLines<R> {
    pub fn new(inner: R, delimiter: u8) -> Self {
        let mut ends = [false; 256];
        for b in [delimiter, b'\n', b'\r'] {
            ends[usize::from(b)] = true;
        }
        BlankLines {
            ends,
            inner,
            delimiter,
            at: At::LineStart,
            after_cr: false,
            blanks: 0,
            before: VecDeque::new(),
        }
    }

    /// The blank lines before the next record the parser hands out
    /// (records are asked about in order, each once).
    pub fn blanks_before_next(&mut self) -> u64 {
        // A last record without a line break is still being scanned.
        self.before.pop_front().unwrap_or(self.blanks)
    }

    fn line_break(&mut self) {
        if self.at == At::LineStart {
            self.blanks += 1;
        } else {
            self.before.push_back(self.blanks);
            self.blanks = 0;
        }
        self.at = At::LineStart;
    }

    /// Inside a field only the bytes that can end it matter, so the scan
    /// skips to the next (a quoted field's with `memchr`): taking every
    /// byte through the whole grammar costs 23 instructions a byte, 3.6 %
    /// of a SQLite validation's (callgrind of a 20k-row insert, `bash
    /// bench/once.sh`).
    fn scan(&mut self, bytes: &[u8]) {
        let mut i = 0;
        while i < bytes.len() {
            // A field has begun, so no `\r` ends the line before it: the
            // bytes jumped over need no `after_cr` taken.
            match self.at {
                At::Quoted => match memchr::memchr(b'"', &bytes[i..]) {
                    Some(n) => {
                        self.at = At::QuoteInQuoted;
                        i += n + 1;
                        continue;
                    }
                    None => return,
                },
                At::Unquoted => {
                    // Fields are short (a few bytes): a table beats a call
                    // to `memchr3` here.
                    match bytes[i..].iter().position(|&b| self.ends[usize::from(b)]) {
                        Some(n) => i += n,
                        None => return,
                    }
                }
                _ => {}
            }
            self.step(bytes[i]);
            i += 1;
        }
    }

    /// One byte, read where the grammar is not inside a quoted field.
    fn step(&mut self, b: u8) {
        let after_cr = std::mem::take(&mut self.after_cr);
        match b {
            b'\n' if after_cr => {}
            b'\n' | b'\r' => {
                self.line_break();
                self.after_cr = b == b'\r';
            }
            b'"' if matches!(self.at, At::LineStart | At::FieldStart) => self.at = At::Quoted,
            b'"' if self.at == At::QuoteInQuoted => self.at = At::Quoted,
            d if d == self.delimiter => self.at = At::FieldStart,
            _ if self.at == At::QuoteInQuoted => self.at = At::Unquoted,
            _ if matches!(self.at, At::LineStart | At::FieldStart) => self.at = At::Unquoted,
            _ => {}
        }
    }
}

impl<R: Read> Read for BlankLines<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.scan(&buf[..n]);
        Ok(n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn blanks(text: &[u8]) -> Vec<u64> {
        let mut r = BlankLines::new(text, b',');
        let mut sink = Vec::new();
        // Small reads, so that line breaks fall across buffers.
        let mut buf = [0u8; 3];
        loop {
            let n = r.read(&mut buf).unwrap();
            if n == 0 {
                break;
            }
            sink.extend_from_slice(&buf[..n]);
        }
        assert_eq!(sink, text, "the bytes pass unchanged");
        std::iter::from_fn(|| (!r.before.is_empty()).then(|| r.blanks_before_next())).collect()
    }

    #[test]
    fn blank_lines_are_counted_before_each_record_and_quoted_breaks_are_not() {
        assert_eq!(
            blanks(b"a,b\r\n1,\"two\n\nlines\"\r\n\r\n,\n3,4\r\n\n\n5,\"x\r\ny\"\n"),
            [0, 0, 1, 0, 2]
        );
        assert_eq!(blanks(b"\n\na\nb"), [2]);
        // A quote inside an unquoted field is a character, not a quote.
        assert_eq!(blanks(b"a\n15\" monitor,x\n\nb\n"), [0, 0, 1]);
        assert_eq!(blanks(b"\"a \"\"q\"\"\n\nb\"\n\nc\n"), [0, 1]);
    }

    /// The scan a byte at a time, as it was before it jumped inside fields.
    fn bytewise(text: &[u8], delimiter: u8) -> (Vec<u64>, u64) {
        let mut r = BlankLines::new(&b""[..], delimiter);
        for &b in text {
            if r.at == At::Quoted {
                r.after_cr = false;
                if b == b'"' {
                    r.at = At::QuoteInQuoted;
                }
            } else {
                r.step(b);
            }
        }
        (r.before.into(), r.blanks)
    }

    #[test]
    fn jumping_inside_fields_counts_as_reading_every_byte_whatever_the_reads() {
        // Texts drawn from the bytes that matter, by a fixed generator.
        let alphabet = b"ab,;\"\"\n\r\r\n";
        let mut state = 0x2545_f491_4f6c_dd1d_u64;
        for case in 0..2_000 {
            let len = case % 40;
            let text: Vec<u8> = (0..len)
                .map(|_| {
                    state ^= state << 13;
                    state ^= state >> 7;
                    state ^= state << 17;
                    alphabet[(state % alphabet.len() as u64) as usize]
                })
                .collect();
            for delimiter in [b',', b';'] {
                let want = bytewise(&text, delimiter);
                for read in [1, 2, 5, 64] {
                    let mut r = BlankLines::new(text.as_slice(), delimiter);
                    let mut buf = vec![0u8; read];
                    while r.read(&mut buf).unwrap() > 0 {}
                    let got: (Vec<u64>, u64) = (r.before.into(), r.blanks);
                    assert_eq!(got, want, "{:?} by {read}", String::from_utf8_lossy(&text));
                }
            }
        }
    }
}
