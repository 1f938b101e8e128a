//! Finds the bytes of each row object of a JSON document (an array of
//! objects, or an object whose `rows` member is one), a buffer at a time,
//! so that each object can be parsed on its own from a slice.
//!
//! Written by hand because serde_json parses a stream (`from_reader`)
//! byte by byte through `io::Read`, two to three times slower than from a
//! slice, and a whole document cannot be a slice without holding the file
//! in memory. Finding where a value ends needs only its strings (quotes
//! and escapes) and its brackets; whatever lies between is checked by
//! serde_json when the object is parsed.

use std::fs::File;
use std::io::{BufRead, BufReader, BufWriter, Read, Seek, SeekFrom, Write};
use std::ops::Range;

use super::{FileCode, FileError, read_error};

/// Deepest nesting accepted (API.md section 10), counting the top-level
/// array (and the `{"rows": …}` wrapper) and each row object.
pub const MAX_DEPTH: usize = 32;

/// A parse error as a person reads it: where, and what was expected.
/// `first_line` is the line the parsed bytes start on in the file.
pub fn json_error(e: &serde_json::Error, first_line: u64) -> FileError {
    let line = first_line + (e.line() as u64).saturating_sub(1);
    let what = e.to_string();
    let message = if what.contains("recursion limit") {
        format!("line {line}: the JSON is nested deeper than {MAX_DEPTH} levels")
    } else if e.is_eof() {
        format!("line {line}: the JSON ends too early (the file is cut off)")
    } else {
        // serde_json's position is within the object: the line is said
        // above, from the start of the file.
        let suffix = format!(" at line {} column {}", e.line(), e.column());
        let what = what.strip_suffix(&suffix).unwrap_or(&what);
        format!("line {line}: the file is not readable as JSON: {what}")
    };
    FileError::new(FileCode::Unreadable, message)
}

/// One row object: its bytes, its 1-based position, the line it starts
/// on and the levels above it (the array, and the wrapper if any; 0 for a
/// line of NDJSON).
pub struct Element<'a> {
    pub bytes: &'a [u8],
    pub number: u64,
    pub line: u64,
    pub depth: usize,
    /// The byte range of each key's string, when the walk that found the
    /// object found its keys too ([`object_keys`] finds them otherwise).
    pub keys: Option<&'a [Range<usize>]>,
}

/// The member of a wrapping object whose array holds the rows, unless a
/// workbook's part names another (API.md section 16).
pub const ROWS: &str = "rows";

/// Walks the row objects of a document, calling `each` for every one.
/// `cap` bounds one object's bytes (its message names the object);
/// `member` is the wrapping object's member whose array is walked. A
/// workbook's part (any member but `rows`) ends its walk with its array:
/// listing the parts at upload crossed the whole document already, so the
/// products of a workbook need not cross its orders' bytes too.
pub fn each_object<R: BufRead>(
    reader: R,
    cap: u64,
    member: &str,
    each: &mut dyn FnMut(Element) -> Result<(), FileError>,
) -> Result<(), FileError> {
    let mut s = Splitter {
        reader,
        line: 1,
        cap,
        buf: Vec::new(),
        keys: Vec::new(),
    };
    match s.next_byte()? {
        Some(b'[') if member == ROWS => s.array(1, each)?,
        Some(b'[') => {
            return Err(FileError::new(
                FileCode::UnknownSheet,
                format!("the document is one array, not an object with a {member:?} member"),
            ));
        }
        Some(b'{') => {
            if !s.wrapper(member, each)? {
                return Ok(());
            }
        }
        Some(b) => return Err(s.unexpected(b, r#"an array of objects, or {"rows": [...]}"#)),
        None => return Err(s.eof()),
    }
    match s.next_byte()? {
        None => Ok(()),
        Some(b) => Err(s.unexpected(b, "the end of the file")),
    }
}

/// The members of a document's top-level object whose values are arrays
/// (a workbook's parts, API.md section 16), read a value at a time; a
/// document that is no object has none. `cap` bounds one value's bytes.
pub fn array_members<R: BufRead>(reader: R, cap: u64) -> Result<Vec<String>, FileError> {
    let mut s = Splitter {
        reader,
        line: 1,
        cap,
        buf: Vec::new(),
        keys: Vec::new(),
    };
    match s.next_byte()? {
        Some(b'{') => s.array_members(),
        Some(_) => Ok(vec![]),
        None => Err(s.eof()),
    }
}

struct Splitter<R> {
    reader: R,
    line: u64,
    cap: u64,
    /// The value being read; reused from one object to the next.
    buf: Vec<u8>,
    /// The keys of the object found whole in the reader's buffer.
    keys: Vec<Range<usize>>,
}

impl<R: BufRead> Splitter<R> {
    /// The elements of an array whose `[` was read, `depth` levels down.
    fn array(
        &mut self,
        depth: usize,
        each: &mut dyn FnMut(Element) -> Result<(), FileError>,
    ) -> Result<(), FileError> {
        let mut number = 0u64;
        if self.peek()? == Some(b']') {
            self.reader.consume(1);
            return Ok(());
        }
        loop {
            number += 1;
            self.peek()?; // the blank lines before it
            let line = self.line;
            if !self.whole_object(number, line, depth, each)? {
                self.value(number)?;
                each(Element {
                    bytes: &self.buf,
                    number,
                    line,
                    depth,
                    keys: None,
                })?;
            }
            match self.next_byte()? {
                Some(b',') => {}
                Some(b']') => return Ok(()),
                Some(b) => return Err(self.unexpected(b, "`,` or `]` after an object")),
                None => return Err(self.eof()),
            }
        }
    }

    /// The members of `{"rows": [...], …}` whose `{` was read: `rows` is
    /// walked, the others are skipped. Whether the object was read to its
    /// end: a workbook's part stops after its own member.
    fn wrapper(
        &mut self,
        member: &str,
        each: &mut dyn FnMut(Element) -> Result<(), FileError>,
    ) -> Result<bool, FileError> {
        let mut found = false;
        if self.peek()? == Some(b'}') {
            self.reader.consume(1);
        } else {
            loop {
                let key = self.member_name()?;
                if key == member && !found {
                    found = true;
                    match self.next_byte()? {
                        Some(b'[') => self.array(2, each)?,
                        Some(b) => {
                            let what = format!("{member:?} to be an array of objects");
                            return Err(self.unexpected(b, &what));
                        }
                        None => return Err(self.eof()),
                    }
                    if member != ROWS {
                        return Ok(false);
                    }
                } else {
                    self.skip_value()?;
                }
                match self.next_byte()? {
                    Some(b',') => {}
                    Some(b'}') => break,
                    Some(b) => return Err(self.unexpected(b, "`,` or `}` after a member")),
                    None => return Err(self.eof()),
                }
            }
        }
        if !found && member == ROWS {
            return Err(FileError::new(
                FileCode::Unreadable,
                r#"the object has no "rows" member; send an array of objects, or {"rows": [...]}"#,
            ));
        }
        if !found {
            return Err(FileError::new(
                FileCode::UnknownSheet,
                format!("the object has no {member:?} member"),
            ));
        }
        Ok(true)
    }

    /// A member's name and the `:` after it.
    fn member_name(&mut self) -> Result<String, FileError> {
        match self.peek()? {
            Some(b'"') => self.value(0)?,
            Some(b) => return Err(self.unexpected(b, "a member name")),
            None => return Err(self.eof()),
        }
        let key: String =
            serde_json::from_slice(&self.buf).map_err(|e| json_error(&e, self.line))?;
        match self.next_byte()? {
            Some(b':') => Ok(key),
            Some(b) => Err(self.unexpected(b, "`:` after a member name")),
            None => Err(self.eof()),
        }
    }

    /// The members of an object whose `{` was read whose values are
    /// arrays, in the document's order; every value is skipped.
    fn array_members(&mut self) -> Result<Vec<String>, FileError> {
        let mut names = Vec::new();
        if self.peek()? == Some(b'}') {
            self.reader.consume(1);
            return Ok(names);
        }
        loop {
            let key = self.member_name()?;
            if self.peek()? == Some(b'[') {
                names.push(key);
            }
            self.skip_value()?;
            match self.next_byte()? {
                Some(b',') => {}
                Some(b'}') => return Ok(names),
                Some(b) => return Err(self.unexpected(b, "`,` or `}` after a member")),
                None => return Err(self.eof()),
            }
        }
    }

    /// Hands on the object at the start of the reader's buffer from the
    /// buffer itself, with its keys, when it lies there whole and its
    /// members follow one another as [`object_members`] walks them;
    /// `false` (nothing read) otherwise, for [`Self::value`] to read it.
    /// One walk finds where the object ends and where its keys are, where
    /// finding the end first and the keys after crossed every byte twice
    /// (a third of reading a JSON file's header, callgrind).
    fn whole_object(
        &mut self,
        number: u64,
        line: u64,
        depth: usize,
        each: &mut dyn FnMut(Element) -> Result<(), FileError>,
    ) -> Result<bool, FileError> {
        let chunk = self.reader.fill_buf().map_err(read_error)?;
        let Some(end) = object_members(chunk, &mut self.keys) else {
            return Ok(false);
        };
        if end as u64 > self.cap {
            return Ok(false);
        }
        let bytes = &chunk[..end];
        let lines = bytes.iter().filter(|&&b| b == b'\n').count() as u64;
        each(Element {
            bytes,
            number,
            line,
            depth,
            keys: Some(&self.keys),
        })?;
        self.line += lines;
        self.reader.consume(end);
        Ok(true)
    }

    /// Reads one value into `buf`: a string, an object or array (to its
    /// matching bracket), or a bare word or number (to the next `,`, `]`,
    /// `}` or space). `number` names the object in a message (0: a member
    /// of the wrapper).
    fn value(&mut self, number: u64) -> Result<(), FileError> {
        self.cross(number, true)
    }

    /// Crosses the value at the reader without keeping it: another part's
    /// rows in a workbook may be far larger than one object may be.
    fn skip_value(&mut self) -> Result<(), FileError> {
        self.cross(0, false)
    }

    /// Crosses one value, into `buf` (at most `cap` bytes) when `keep`.
    fn cross(&mut self, number: u64, keep: bool) -> Result<(), FileError> {
        self.buf.clear();
        let Some(first) = self.peek()? else {
            return Err(self.eof());
        };
        let mut scan = Scan::new(first);
        let mut crossed = 0u64;
        loop {
            let chunk = self.reader.fill_buf().map_err(read_error)?;
            if chunk.is_empty() {
                return match scan {
                    Scan::Word => Ok(()),
                    _ => Err(self.eof()),
                };
            }
            let (used, done) = scan.feed(chunk);
            self.line += chunk[..used].iter().filter(|&&b| b == b'\n').count() as u64;
            if keep {
                self.buf.extend_from_slice(&chunk[..used]);
            }
            self.reader.consume(used);
            crossed += used as u64;
            if keep && crossed > self.cap {
                return Err(self.too_long(number));
            }
            if done && crossed == 0 {
                // `,` `]` or `}` where a value belongs.
                return Err(self.unexpected(first, "a value"));
            }
            if done {
                return Ok(());
            }
        }
    }

    fn too_long(&self, number: u64) -> FileError {
        let what = match number {
            0 => "a member of the file's object".to_string(),
            n => format!("object {n}"),
        };
        FileError::new(
            FileCode::Unreadable,
            format!(
                "{what} is longer than {} bytes, more than all its cells at their size limit \
                 could be",
                self.cap
            ),
        )
    }

    /// The next byte that is not white space, left unread.
    fn peek(&mut self) -> Result<Option<u8>, FileError> {
        loop {
            let chunk = self.reader.fill_buf().map_err(read_error)?;
            let Some(&first) = chunk.first() else {
                return Ok(None);
            };
            let blank = chunk.iter().take_while(|b| b.is_ascii_whitespace()).count();
            if blank == 0 {
                return Ok(Some(first));
            }
            self.line += chunk[..blank].iter().filter(|&&b| b == b'\n').count() as u64;
            self.reader.consume(blank);
        }
    }

    /// The next byte that is not white space, read.
    fn next_byte(&mut self) -> Result<Option<u8>, FileError> {
        let b = self.peek()?;
        if b.is_some() {
            self.reader.consume(1);
        }
        Ok(b)
    }

    fn unexpected(&self, b: u8, expected: &str) -> FileError {
        let found = match b {
            b' '..=b'~' => format!("`{}`", b as char),
            _ => format!("byte 0x{b:02x}"),
        };
        FileError::new(
            FileCode::Unreadable,
            format!(
                "line {}: the file is not readable as JSON: expected {expected}, found {found}",
                self.line
            ),
        )
    }

    fn eof(&self) -> FileError {
        FileError::new(
            FileCode::Unreadable,
            format!(
                "line {}: the JSON ends too early (the file is cut off)",
                self.line
            ),
        )
    }
}

/// The row objects a first pass found, kept in a temporary file for the
/// second: each one's position, line, depth and bytes. The second pass
/// reads them back instead of splitting the file again, which cost as
/// much as the first split (15 % of reading a JSON file, callgrind).
pub struct Kept {
    file: BufWriter<File>,
}

/// A kept object's position, line, depth and length, before its bytes.
const KEPT_HEAD: usize = 32;

impl Kept {
    pub fn new() -> Result<Kept, FileError> {
        let file = tempfile::tempfile().map_err(read_error)?;
        Ok(Kept {
            file: BufWriter::with_capacity(1 << 16, file),
        })
    }

    pub fn push(&mut self, element: &Element) -> Result<(), FileError> {
        let mut head = [0u8; KEPT_HEAD];
        let fields = [
            element.number,
            element.line,
            element.depth as u64,
            element.bytes.len() as u64,
        ];
        for (slot, field) in head.chunks_exact_mut(8).zip(fields) {
            slot.copy_from_slice(&field.to_le_bytes());
        }
        self.file.write_all(&head).map_err(read_error)?;
        self.file.write_all(element.bytes).map_err(read_error)
    }

    /// Calls `each` with every kept object, in the order they were kept.
    pub fn replay(
        self,
        each: &mut dyn FnMut(Element) -> Result<(), FileError>,
    ) -> Result<(), FileError> {
        let mut file = self
            .file
            .into_inner()
            .map_err(|e| read_error(e.into_error()))?;
        file.seek(SeekFrom::Start(0)).map_err(read_error)?;
        let mut reader = BufReader::with_capacity(1 << 16, file);
        let mut bytes = Vec::new();
        while !reader.fill_buf().map_err(read_error)?.is_empty() {
            let mut head = [0u8; KEPT_HEAD];
            reader.read_exact(&mut head).map_err(read_error)?;
            let field =
                |i: usize| u64::from_le_bytes(head[i * 8..i * 8 + 8].try_into().expect("8 bytes"));
            bytes.resize(field(3) as usize, 0);
            reader.read_exact(&mut bytes).map_err(read_error)?;
            each(Element {
                bytes: &bytes,
                number: field(0),
                line: field(1),
                depth: field(2) as usize,
                keys: None,
            })?;
        }
        Ok(())
    }
}

/// The keys of one row object, found without parsing its values: the
/// byte range of each key's string, quotes included, in `keys`. `false`
/// when the bytes are not an object this scan follows (no `{`, a member
/// without its `:`, a word of other bytes than a number's or a literal's,
/// something after the `}`): the caller then parses them, which names
/// what is wrong.
///
/// Written by hand for the first pass over a JSON file, which needs only
/// the keys and runs before any row can go on: serde_json checks every
/// value as it skips it, work the second pass does again on every row.
/// A value is crossed here by its quotes and brackets alone, as the
/// splitter crosses objects; the second pass parses it whole and reports
/// a malformed one with its object.
pub fn object_keys(bytes: &[u8], keys: &mut Vec<Range<usize>>) -> bool {
    object_members(bytes, keys).is_some_and(|end| skip_blank(bytes, end) == bytes.len())
}

/// Walks the object at the start of `bytes` (blank space before it
/// allowed) member by member: the range of each key in `keys`, and where
/// the object ends, past its `}`. `None` when the bytes end first, or
/// hold something else than such an object: a word that is not only
/// letters, digits, signs and points (so that the end found is where a
/// count of brackets finds it too), a member without its `:`.
fn object_members(bytes: &[u8], keys: &mut Vec<Range<usize>>) -> Option<usize> {
    keys.clear();
    let mut at = skip_blank(bytes, 0);
    if bytes.get(at) != Some(&b'{') {
        return None;
    }
    at = skip_blank(bytes, at + 1);
    if bytes.get(at) == Some(&b'}') {
        return Some(at + 1);
    }
    loop {
        let end = string_end(bytes, at)?;
        keys.push(at..end);
        at = skip_blank(bytes, end);
        if bytes.get(at) != Some(&b':') {
            return None;
        }
        at = skip_blank(bytes, at + 1);
        let end = match bytes.get(at)? {
            b'"' | b'{' | b'[' => value_end(bytes, at)?,
            _ => match bytes[at..].iter().take_while(|&&b| plain(b)).count() {
                0 => return None,
                n => at + n,
            },
        };
        at = skip_blank(bytes, end);
        match bytes.get(at) {
            Some(b',') => at = skip_blank(bytes, at + 1),
            Some(b'}') => return Some(at + 1),
            _ => return None,
        }
    }
}

/// A byte of a number, `true`, `false` or `null`.
fn plain(b: u8) -> bool {
    b.is_ascii_alphanumeric() || matches!(b, b'+' | b'-' | b'.')
}

fn skip_blank(bytes: &[u8], from: usize) -> usize {
    let blank = bytes.get(from..).unwrap_or_default();
    from + blank.iter().take_while(|b| b.is_ascii_whitespace()).count()
}

/// Past the closing quote of the string opening at `at`.
fn string_end(bytes: &[u8], at: usize) -> Option<usize> {
    (bytes.get(at) == Some(&b'"')).then(|| value_end(bytes, at))?
}

/// Past the value starting at `at`: a string, an object or array to its
/// closing bracket, or a word (number, `true`, …) to what ends it.
fn value_end(bytes: &[u8], at: usize) -> Option<usize> {
    let first = *bytes.get(at)?;
    let mut scan = Scan::new(first);
    let (used, done) = scan.feed(&bytes[at..]);
    // Not done: a string or bracket left open, or a word running to the
    // end of the bytes (no `}` after it). Nothing used: no value at all.
    (done && used > 0).then_some(at + used)
}

/// Where a value being scanned stands.
enum Scan {
    /// In a string; `escaped` after a backslash.
    Text { escaped: bool, started: bool },
    /// In an object or array: its depth, and whether in a string.
    Nested {
        depth: usize,
        text: bool,
        escaped: bool,
    },
    /// A number, `true`, `false` or `null`.
    Word,
}

/// The bytes that can change where a scan stands outside a string.
const BRACKETS: [bool; 256] = {
    let mut table = [false; 256];
    let mut i = 0;
    while i < 4 {
        table[b"{}[]"[i] as usize] = true;
        i += 1;
    }
    table[b'"' as usize] = true;
    table
};

impl Scan {
    fn new(first: u8) -> Scan {
        match first {
            b'"' => Scan::Text {
                escaped: false,
                started: false,
            },
            b'{' | b'[' => Scan::Nested {
                depth: 0,
                text: false,
                escaped: false,
            },
            _ => Scan::Word,
        }
    }

    /// How many bytes of `chunk` belong to the value, and whether it ended.
    ///
    /// Strings and the bytes between brackets are crossed by a search for
    /// the next byte that matters, not a `match` on every byte, which holds
    /// the first pass over 100k orders at 320 MB/s. (`memchr2` to the end
    /// of a string is slower on short strings: 47-49 ms to the header
    /// against 42-45, `cargo run --release --example read`.)
    fn feed(&mut self, chunk: &[u8]) -> (usize, bool) {
        let mut i = 0;
        while i < chunk.len() {
            match self {
                Scan::Text { escaped, started } => {
                    if !*started || *escaped {
                        (*started, *escaped) = (true, false);
                        i += 1;
                    } else if let Some(end) = text_end(chunk, &mut i, escaped) {
                        return (end, true);
                    }
                }
                Scan::Nested {
                    depth,
                    text,
                    escaped,
                } => {
                    if *escaped {
                        *escaped = false;
                        i += 1;
                    } else if *text {
                        *text = text_end(chunk, &mut i, escaped).is_none();
                    } else {
                        let rest = &chunk[i..];
                        let Some(at) = rest.iter().position(|&b| BRACKETS[b as usize]) else {
                            return (chunk.len(), false);
                        };
                        i += at + 1;
                        match rest[at] {
                            b'"' => *text = true,
                            b'{' | b'[' => *depth += 1,
                            _ => {
                                *depth -= 1;
                                if *depth == 0 {
                                    return (i, true);
                                }
                            }
                        }
                    }
                }
                Scan::Word => {
                    let ends = |&b: &u8| matches!(b, b',' | b']' | b'}') || b.is_ascii_whitespace();
                    return match chunk.iter().position(ends) {
                        Some(at) => (at, true),
                        None => (chunk.len(), false),
                    };
                }
            }
        }
        (chunk.len(), false)
    }
}

/// Moves `i` in a string to past its closing quote, returned, or to past
/// a backslash (`escaped` set) or the end of `chunk` (`None` both).
fn text_end(chunk: &[u8], i: &mut usize, escaped: &mut bool) -> Option<usize> {
    match chunk[*i..].iter().position(|&b| b == b'"' || b == b'\\') {
        Some(at) if chunk[*i + at] == b'"' => {
            *i += at + 1;
            Some(*i)
        }
        Some(at) => {
            *i += at + 1;
            *escaped = true;
            None
        }
        None => {
            *i = chunk.len();
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::BufReader;

    /// The objects found, read through a buffer of `capacity` bytes, and
    /// their keys, as the walk found them or [`object_keys`] finds them.
    fn objects(text: &str, capacity: usize) -> Vec<(String, u64, u64, usize)> {
        let reader = BufReader::with_capacity(capacity, text.as_bytes());
        let mut found = Vec::new();
        let mut scanned = Vec::new();
        each_object(reader, 1 << 20, ROWS, &mut |e| {
            let keys = match e.keys {
                Some(keys) => keys.to_vec(),
                None if object_keys(e.bytes, &mut scanned) => scanned.clone(),
                None => Vec::new(),
            };
            let keys: Vec<_> = keys.iter().map(|r| &e.bytes[r.clone()]).collect();
            let text = String::from_utf8(e.bytes.to_vec()).unwrap();
            found.push((
                format!("{text} {}", keys.concat().escape_ascii()),
                e.number,
                e.line,
                e.depth,
            ));
            Ok(())
        })
        .unwrap();
        found
    }

    /// The keys [`object_keys`] finds, as their JSON strings.
    fn keys(text: &str) -> Option<Vec<&str>> {
        let mut found = Vec::new();
        object_keys(text.as_bytes(), &mut found)
            .then(|| found.iter().map(|r| &text[r.clone()]).collect())
    }

    #[test]
    fn the_quick_scan_finds_keys_past_any_value() {
        let text = r#" { "a" : "x\"}:,{" , "b\u0031":[1,{"c":"]"}] ,"d":-1.5e3,"e":{},"f":null } "#;
        assert_eq!(
            keys(text).unwrap(),
            [r#""a""#, r#""b\u0031""#, r#""d""#, r#""e""#, r#""f""#]
        );
        assert_eq!(keys("{}").unwrap(), Vec::<&str>::new());
        // What it cannot follow is left to the parser, which names it.
        for bad in [
            "[1]",
            "5",
            r#"{"a" 1}"#,
            r#"{"a": }"#,
            r#"{"a": 1"#,
            r#"{"a": 1} x"#,
            r#"{"a": "open}"#,
            r#"{"a": 1,}"#,
            r#"{a: 1}"#,
        ] {
            assert_eq!(keys(bad), None, "{bad}");
        }
    }

    #[test]
    fn values_end_where_they_end_whatever_the_buffer_cuts() {
        let text = "{\"skip\": [\"}\\\\\", {\"x\": \"]\"}], \"rows\": [\n\
                    {\"a\": \"\\\"}\", \"b\": [1, [2]]},\n\n\
                    {\"a\": {\"b\": \"{\"}}\n], \"more\": -1}";
        let whole = objects(text, 1 << 16);
        assert_eq!(
            whole,
            [
                (
                    r#"{"a": "\"}", "b": [1, [2]]} \"a\"\"b\""#.to_string(),
                    1,
                    2,
                    2
                ),
                (r#"{"a": {"b": "{"}} \"a\""#.to_string(), 2, 4, 2),
            ]
        );
        for capacity in 1..8 {
            assert_eq!(objects(text, capacity), whole, "a buffer of {capacity}");
        }
        let array = objects("[ {\"a\": 1} , {}]", 1);
        assert_eq!(array[1], ("{} ".to_string(), 2, 1, 1));
        // A word the walk does not follow: the object is found by its
        // brackets, as the walk would have ended it.
        let odd = "[{\"a\": 1/2, \"b\": 2},\n{\"a\": 3}]";
        let found = objects(odd, 1 << 16);
        assert_eq!(found[0], (r#"{"a": 1/2, "b": 2} "#.to_string(), 1, 1, 1));
        assert_eq!(found[1], (r#"{"a": 3} \"a\""#.to_string(), 2, 2, 1));
    }
}
