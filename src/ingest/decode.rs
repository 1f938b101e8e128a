//! Text encodings for CSV: UTF-16 (found by its BOM or named), and the
//! legacy single-byte encodings staff files come in (`?encoding=windows-1252`).
//!
//! Decoding is hand-written over `encoding_rs`'s streaming decoder rather
//! than `encoding_rs_io`, because that crate replaces undecodable bytes with
//! U+FFFD; the contract wants a clear `encoding` failure instead of a
//! preview full of mojibake.

use std::io::Read;

use encoding_rs::{DecoderResult, Encoding};

use super::{FileCode, FileError};

/// The encodings `?encoding=` (and a `charset`) names, read in any case.
#[derive(Debug, Clone, Copy, PartialEq, Eq, utoipa::ToSchema)]
#[schema(as = CsvEncoding)]
pub enum Label {
    #[schema(rename = "utf-8")]
    Utf8,
    #[schema(rename = "utf8")]
    Utf8Short,
    #[schema(rename = "utf-16")]
    Utf16,
    #[schema(rename = "utf16")]
    Utf16Short,
    #[schema(rename = "utf-16le")]
    Utf16Le,
    #[schema(rename = "utf-16be")]
    Utf16Be,
    #[schema(rename = "windows-1252")]
    Windows1252,
    #[schema(rename = "cp1252")]
    Cp1252,
    #[schema(rename = "iso-8859-1")]
    Iso88591,
    #[schema(rename = "latin1")]
    Latin1,
    #[schema(rename = "latin-1")]
    Latin1Hyphen,
}

impl Label {
    pub const ALL: [Label; 11] = [
        Label::Utf8,
        Label::Utf8Short,
        Label::Utf16,
        Label::Utf16Short,
        Label::Utf16Le,
        Label::Utf16Be,
        Label::Windows1252,
        Label::Cp1252,
        Label::Iso88591,
        Label::Latin1,
        Label::Latin1Hyphen,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Label::Utf8 => "utf-8",
            Label::Utf8Short => "utf8",
            Label::Utf16 => "utf-16",
            Label::Utf16Short => "utf16",
            Label::Utf16Le => "utf-16le",
            Label::Utf16Be => "utf-16be",
            Label::Windows1252 => "windows-1252",
            Label::Cp1252 => "cp1252",
            Label::Iso88591 => "iso-8859-1",
            Label::Latin1 => "latin1",
            Label::Latin1Hyphen => "latin-1",
        }
    }

    pub fn parse(label: &str) -> Option<Label> {
        Label::ALL
            .into_iter()
            .find(|l| l.as_str().eq_ignore_ascii_case(label))
    }

    /// The encoding the label names.
    pub fn encoding(self) -> &'static Encoding {
        match self {
            Label::Utf8 | Label::Utf8Short => encoding_rs::UTF_8,
            // Without a BOM, "UTF-16" is what Windows calls "Unicode":
            // little-endian.
            Label::Utf16 | Label::Utf16Short | Label::Utf16Le => encoding_rs::UTF_16LE,
            Label::Utf16Be => encoding_rs::UTF_16BE,
            // WHATWG (and so every browser) reads ISO-8859-1 as
            // windows-1252, its superset: files labelled latin-1 often hold
            // € or smart quotes.
            Label::Windows1252
            | Label::Cp1252
            | Label::Iso88591
            | Label::Latin1
            | Label::Latin1Hyphen => encoding_rs::WINDOWS_1252,
        }
    }
}

/// The encoding a label of [`Label`] names, if it is one.
pub fn encoding_for(label: &str) -> Option<&'static Encoding> {
    Label::parse(label).map(Label::encoding)
}

/// The encoding a file's BOM names, and the BOM's length.
pub fn bom(prefix: &[u8]) -> Option<(&'static Encoding, usize)> {
    Encoding::for_bom(prefix)
}

/// A reader that decodes `inner` from `encoding` into UTF-8, failing with
/// [`std::io::ErrorKind::InvalidData`] at the first undecodable byte.
pub struct DecodeReader<R> {
    inner: R,
    decoder: encoding_rs::Decoder,
    input: Vec<u8>,
    in_start: usize,
    in_end: usize,
    output: Vec<u8>,
    out_start: usize,
    out_end: usize,
    eof: bool,
    /// The decoder has seen the end; it must not be called again.
    finished: bool,
    /// Bytes of input consumed so far, for the error message.
    offset: u64,
    name: &'static str,
}

const BUF: usize = 64 * 1024;

impl<R: Read> DecodeReader<R> {
    /// The BOM, if any, must already be removed from `inner`.
    pub fn new(inner: R, encoding: &'static Encoding) -> DecodeReader<R> {
        DecodeReader {
            inner,
            decoder: encoding.new_decoder_without_bom_handling(),
            input: vec![0; BUF],
            in_start: 0,
            in_end: 0,
            // Room for the worst case of one input buffer (3 bytes of UTF-8
            // per input byte for single-byte encodings).
            output: vec![0; 3 * BUF + 16],
            out_start: 0,
            out_end: 0,
            eof: false,
            finished: false,
            offset: 0,
            name: encoding.name(),
        }
    }

    /// Decodes more input into the empty output buffer; false at the end.
    fn fill(&mut self) -> std::io::Result<bool> {
        loop {
            if self.finished {
                return Ok(false);
            }
            if self.in_start == self.in_end && !self.eof {
                let n = self.inner.read(&mut self.input)?;
                self.in_start = 0;
                self.in_end = n;
                self.eof = n == 0;
            }
            let (result, read, written) = self.decoder.decode_to_utf8_without_replacement(
                &self.input[self.in_start..self.in_end],
                &mut self.output,
                self.eof,
            );
            self.in_start += read;
            self.offset += read as u64;
            self.out_start = 0;
            self.out_end = written;
            self.finished = self.eof && result == DecoderResult::InputEmpty;
            if let DecoderResult::Malformed(bad, _) = result {
                let at = self.offset.saturating_sub(bad as u64);
                return Err(std::io::Error::new(
                    std::io::ErrorKind::InvalidData,
                    format!("byte {at}: the text is not valid {}", self.name),
                ));
            }
            if written > 0 {
                return Ok(true);
            }
        }
    }
}

impl<R: Read> Read for DecodeReader<R> {
    fn read(&mut self, out: &mut [u8]) -> std::io::Result<usize> {
        if self.out_start == self.out_end && !self.fill()? {
            return Ok(0);
        }
        let n = out.len().min(self.out_end - self.out_start);
        out[..n].copy_from_slice(&self.output[self.out_start..self.out_start + n]);
        self.out_start += n;
        Ok(n)
    }
}

/// An I/O error from [`DecodeReader`] as the file failure it stands for.
pub fn decode_failure(e: &std::io::Error) -> Option<FileError> {
    (e.kind() == std::io::ErrorKind::InvalidData).then(|| {
        FileError::new(
            FileCode::Encoding,
            format!(
                "{e}; give ?encoding= with the file's encoding \
                 (utf-8, utf-16, windows-1252, iso-8859-1)"
            ),
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn decode(bytes: &[u8], enc: &'static Encoding) -> std::io::Result<String> {
        let mut s = String::new();
        DecodeReader::new(bytes, enc).read_to_string(&mut s)?;
        Ok(s)
    }

    #[test]
    fn legacy_and_utf16_text_decodes() {
        assert_eq!(
            decode(b"caf\xe9 \x80", encoding_rs::WINDOWS_1252).unwrap(),
            "café €"
        );
        let utf16: Vec<u8> = "a,é\n".encode_utf16().flat_map(u16::to_le_bytes).collect();
        assert_eq!(decode(&utf16, encoding_rs::UTF_16LE).unwrap(), "a,é\n");
    }

    #[test]
    fn undecodable_bytes_fail_with_their_offset() {
        // A lone low surrogate is not UTF-16.
        let err = decode(b"a\x00\x00\xdc", encoding_rs::UTF_16LE).unwrap_err();
        assert_eq!(err.kind(), std::io::ErrorKind::InvalidData);
        assert!(err.to_string().contains("UTF-16LE"), "{err}");
        assert!(decode(b"ok\xff", encoding_rs::UTF_8).is_err());
    }
}
