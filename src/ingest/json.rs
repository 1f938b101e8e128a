//! JSON (an array of objects, or `{"rows": [...]}`) and NDJSON (one object
//! per line), streamed: one object is in memory at a time (the objects of
//! the first 4 MiB in one pass), never the whole document as a
//! `serde_json::Value`.
//!
//! The header is the union of the objects' keys in first-seen order, so an
//! object may leave out keys it has no value for (as serializers that skip
//! nulls do). Learning every key takes a first pass over the file, which
//! keeps each row object it finds in a temporary file; the second pass
//! parses them from there into rows. A validation first reads in one pass,
//! the header learned from the first objects, and reads again in two only
//! if a later object brings a new key ([`one_pass`]).
//! The row number is the 1-based position of the object (for NDJSON, its
//! line, which is the same when the file has no blank lines).
//!
//! Values keep their exact text: a number is passed on as its digits
//! (`Cell::Number`, through `RawValue`, never an `f64`), so a `numeric`
//! column gets exactly what was sent.

use std::borrow::Cow;
use std::collections::HashMap;
use std::fmt;
use std::io::{BufRead, BufReader, Read};

use rust_decimal::Decimal;
use serde::de::{self, DeserializeSeed, IgnoredAny, MapAccess, Visitor};
use serde_json::value::RawValue;

use super::budget::record_bytes;
use super::json_split::{Element, Kept, MAX_DEPTH, ROWS, each_object, json_error, object_keys};
use super::{Cell, Emit, FileCode, FileError, Item, Options, RawRow, RowSource, produce};

/// Called with the bytes of every row object; an error stops the walk.
type Sink<'a> = dyn FnMut(Element) -> Result<(), FileError> + 'a;

/// How a file's row objects are found: in an array (levels above a row
/// object: 1, or 2 in the `{"rows": …}` wrapper; told apart by their
/// position), or one a line.
#[derive(Clone, Copy)]
enum Layout {
    Array,
    Lines,
}

pub fn open_json(reader: Box<dyn Read + Send>, options: &Options) -> Result<RowSource, FileError> {
    let cap = record_bytes(options);
    let member = options.sheet.clone().unwrap_or_else(|| ROWS.to_string());
    read_objects(reader, options, Layout::Array, move |file, sink| {
        let mut reader = BufReader::with_capacity(1 << 16, file);
        skip_bom(&mut reader)?;
        each_object(reader, cap, &member, sink)
    })
}

pub fn open_ndjson(
    reader: Box<dyn Read + Send>,
    options: &Options,
) -> Result<RowSource, FileError> {
    let max_line = line_limit(options);
    read_objects(reader, options, Layout::Lines, move |file, sink| {
        walk_ndjson(file, max_line, sink)
    })
}

/// The longest NDJSON line read: every cell at its size limit, with room
/// for keys and punctuation. A longer line cannot hold a valid row.
fn line_limit(options: &Options) -> usize {
    let cells = options
        .max_columns
        .max(1)
        .saturating_mul(options.max_cell_bytes.max(1024));
    cells.saturating_add(1 << 20).min(1 << 30)
}

/// Reads the row objects `walk` finds: in one pass when the options ask
/// for it ([`one_pass`]), else in two ([`two_passes`]). Both run on the
/// reader's own thread ([`produce`]).
fn read_objects<W>(
    mut reader: Box<dyn Read + Send>,
    options: &Options,
    layout: Layout,
    walk: W,
) -> Result<RowSource, FileError>
where
    W: FnOnce(&mut dyn Read, &mut Sink) -> Result<(), FileError> + Send + 'static,
{
    let mut learner = Learner::new(options.max_columns, layout);
    let in_one = options.one_pass;
    produce(move |emit| {
        if in_one {
            one_pass(&mut reader, walk, &mut learner, emit)
        } else {
            two_passes(&mut reader, walk, &mut learner, emit)
        }
    })
}

/// First pass: the header (union of keys; values are only crossed), each
/// object kept as found. Second pass: the kept objects parsed into rows.
fn two_passes(
    reader: &mut dyn Read,
    walk: impl FnOnce(&mut dyn Read, &mut Sink) -> Result<(), FileError>,
    learner: &mut Learner,
    emit: &Emit,
) -> Result<(), FileError> {
    let mut kept = Kept::new()?;
    walk(reader, &mut |element| {
        learner.learn(&element)?;
        kept.push(&element)
    })?;
    emit.send(Item::Header(learner.header()?))?;
    kept.replay(&mut |element| emit.send(Item::Row(learner.row(&element)?)))
}

/// How many bytes of row objects [`one_pass`] learns the header from
/// before it sends it: about 24,000 orders of the harness, so that a key
/// left out of most objects (as serializers that skip nulls do) is met
/// before the header goes. A file this small is read as in two passes,
/// from memory.
pub const WINDOW: usize = 4 << 20;

/// One pass: the objects of the first [`WINDOW`] bytes are held while
/// their keys are learned; then the header goes, then those rows, then
/// every other row as it is found. The rows go on while the rest of the
/// file is read, where two passes held every row back until the whole file
/// was crossed once (45 ms of 100k orders, a core idle beside it). An
/// object with a key not in the header stops the read ([`FileCode::HeaderGrown`]).
fn one_pass(
    reader: &mut dyn Read,
    walk: impl FnOnce(&mut dyn Read, &mut Sink) -> Result<(), FileError>,
    learner: &mut Learner,
    emit: &Emit,
) -> Result<(), FileError> {
    let mut held = Held::default();
    let mut sent = false;
    walk(reader, &mut |element| {
        let known = learner.header.len();
        learner.learn(&element)?;
        if sent {
            if learner.header.len() > known {
                return Err(grown(&element, learner, known));
            }
            return emit.send(Item::Row(learner.row(&element)?));
        }
        held.push(&element);
        if held.bytes.len() >= WINDOW {
            sent = true;
            held.send(learner, emit)?;
        }
        Ok(())
    })?;
    if !sent {
        held.send(learner, emit)?;
    }
    Ok(())
}

/// The failure of an object whose key `learner.header[known]` came after
/// the header was sent.
fn grown(element: &Element, learner: &Learner, known: usize) -> FileError {
    let key = &learner.header[known];
    let message = format!("key {key:?} first appears past the objects the header was taken from");
    FileError::new(
        FileCode::HeaderGrown,
        placed(element, learner.layout, &message),
    )
}

/// The row objects [`one_pass`] holds until it knows the header: their
/// bytes end to end, and each one's position, line, depth and end.
#[derive(Default)]
struct Held {
    bytes: Vec<u8>,
    objects: Vec<(u64, u64, usize, usize)>,
}

impl Held {
    fn push(&mut self, element: &Element) {
        self.bytes.extend_from_slice(element.bytes);
        let end = self.bytes.len();
        (self.objects).push((element.number, element.line, element.depth, end));
    }

    /// Sends the header the learner knows, then the held objects' rows.
    fn send(&mut self, learner: &mut Learner, emit: &Emit) -> Result<(), FileError> {
        emit.send(Item::Header(learner.header()?))?;
        let mut start = 0;
        for &(number, line, depth, end) in &self.objects {
            let element = Element {
                bytes: &self.bytes[start..end],
                number,
                line,
                depth,
                keys: None,
            };
            emit.send(Item::Row(learner.row(&element)?))?;
            start = end;
        }
        *self = Held::default();
        Ok(())
    }
}

/// What a reader learns of a file's header from its objects: the union of
/// their keys in first-seen order, each with its column.
struct Learner {
    layout: Layout,
    max_columns: usize,
    header: Vec<String>,
    columns: Columns,
    same: SameKeys,
    /// The keys [`object_keys`] found in the last object it scanned.
    scanned: Vec<std::ops::Range<usize>>,
    objects: u64,
}

impl Learner {
    fn new(max_columns: usize, layout: Layout) -> Learner {
        Learner {
            layout,
            max_columns,
            header: Vec::new(),
            columns: Columns::default(),
            same: SameKeys::default(),
            scanned: Vec::new(),
            objects: 0,
        }
    }

    /// Learns the keys of one row object; an object too wide, or not an
    /// object, is the file's failure.
    fn learn(&mut self, element: &Element) -> Result<(), FileError> {
        self.objects += 1;
        let Learner {
            layout,
            max_columns,
            header,
            columns,
            same,
            scanned,
            ..
        } = self;
        let max_columns = *max_columns;
        let mut add = |place: usize, key: &str| {
            if columns.get(place, key).is_some() {
                return Ok(());
            }
            if max_columns > 0 && header.len() >= max_columns {
                return Err(FileError::new(
                    FileCode::TooManyColumns,
                    format!(
                        "the objects have more than {max_columns} different keys; \
                         at most {max_columns} columns are accepted"
                    ),
                ));
            }
            columns.add(place, key);
            header.push(key.to_string());
            Ok(())
        };
        let found = match element.keys {
            Some(keys) => Some(keys),
            None => object_keys(element.bytes, scanned).then_some(&scanned[..]),
        };
        if let Some(found) = found {
            if max_columns > 0 && found.len() > max_columns {
                let f = too_many_keys(max_columns);
                return Err(FileError::new(f.code, placed(element, *layout, &f.message)));
            }
            if same.as_before(element.bytes, found) {
                return Ok(());
            }
            let mut readable = true;
            for (place, range) in found.iter().enumerate() {
                match key_text(&element.bytes[range.clone()]) {
                    Some(key) => add(place, &key)?,
                    None => readable = false,
                }
            }
            if readable {
                same.remember(element.bytes, found);
                return Ok(());
            }
        }
        // Not an object the quick scan follows, or a key that is not a
        // readable string: serde_json's parse says what is wrong.
        let mut failure = None;
        let seed = KeysSeed {
            max_keys: max_columns,
            failure: &mut failure,
            each: &mut add,
        };
        parse(element.bytes, seed).map_err(|e| failed(element, *layout, failure, &e))
    }

    /// The header learned so far; a file without objects has none.
    fn header(&self) -> Result<Vec<String>, FileError> {
        if self.objects == 0 {
            return Err(FileError::new(
                FileCode::NoRows,
                "the file holds no objects",
            ));
        }
        Ok(self.header.clone())
    }

    /// One row object's row, its values in their keys' columns (every key
    /// learned before).
    fn row(&mut self, element: &Element) -> Result<RawRow, FileError> {
        let row = element.number;
        if let Ok(text) = std::str::from_utf8(element.bytes)
            && let Some(cells) = plain_cells(text, &mut self.columns)
        {
            return Ok(RawRow { row, cells });
        }
        let mut failure = None;
        let seed = ObjectSeed {
            depth: element.depth,
            columns: &mut self.columns,
            failure: &mut failure,
        };
        let cells =
            parse(element.bytes, seed).map_err(|e| failed(element, self.layout, failure, &e))?;
        Ok(RawRow { row, cells })
    }
}

/// The keys of the last object learned, as its bytes held them: an object
/// whose keys are the same bytes in the same order (most are) has nothing
/// to teach the first pass, and is passed by a comparison instead of its
/// keys' decoding and lookup (a quarter of the first pass, callgrind).
#[derive(Default)]
struct SameKeys {
    bytes: Vec<u8>,
    ends: Vec<usize>,
}

impl SameKeys {
    fn as_before(&self, object: &[u8], found: &[std::ops::Range<usize>]) -> bool {
        found.len() == self.ends.len()
            && found.iter().enumerate().all(|(i, range)| {
                let start = if i == 0 { 0 } else { self.ends[i - 1] };
                object[range.clone()] == self.bytes[start..self.ends[i]]
            })
    }

    fn remember(&mut self, object: &[u8], found: &[std::ops::Range<usize>]) {
        self.bytes.clear();
        self.ends.clear();
        for range in found {
            self.bytes.extend_from_slice(&object[range.clone()]);
            self.ends.push(self.bytes.len());
        }
    }
}

/// A key's text from its JSON string, quotes included: borrowed when it
/// holds no escape.
fn key_text(quoted: &[u8]) -> Option<Cow<'_, str>> {
    let inner = &quoted[1..quoted.len() - 1];
    if inner.contains(&b'\\') {
        serde_json::from_slice::<String>(quoted)
            .ok()
            .map(Cow::Owned)
    } else {
        std::str::from_utf8(inner).ok().map(Cow::Borrowed)
    }
}

/// Parses one row object from its bytes with `seed`.
///
/// The bytes are checked as UTF-8 once, whole, and parsed as text: from a
/// byte slice serde_json checks every string on its own, a call per key
/// and value that was a tenth of reading a JSON file (callgrind). Bytes
/// that are not UTF-8 are parsed as bytes, so serde_json says where.
fn parse<'a, S: DeserializeSeed<'a>>(bytes: &'a [u8], seed: S) -> serde_json::Result<S::Value> {
    match std::str::from_utf8(bytes) {
        Ok(text) => parse_with(serde_json::Deserializer::from_str(text), seed),
        Err(_) => parse_with(serde_json::Deserializer::from_slice(bytes), seed),
    }
}

fn parse_with<'a, R, S>(
    mut de: serde_json::Deserializer<R>,
    seed: S,
) -> serde_json::Result<S::Value>
where
    R: serde_json::de::Read<'a>,
    S: DeserializeSeed<'a>,
{
    let value = seed.deserialize(&mut de)?;
    de.end()?;
    Ok(value)
}

/// Why a row object could not be parsed: the seed's own failure (with its
/// code), or the parser's error. Messages name the object (JSON) or its
/// line (NDJSON).
fn failed(
    element: &Element,
    layout: Layout,
    failure: Option<FileError>,
    e: &serde_json::Error,
) -> FileError {
    let Some(f) = failure else {
        return json_error(e, element.line);
    };
    FileError::new(f.code, placed(element, layout, &f.message))
}

/// A message about one row object, after the object (JSON) or its line
/// (NDJSON).
fn placed(element: &Element, layout: Layout, message: &str) -> String {
    match layout {
        Layout::Array => format!("object {}: {message}", element.number),
        Layout::Lines => format!("line {}: {message}", element.line),
    }
}

/// Walks NDJSON line by line; blank lines are skipped.
fn walk_ndjson(file: &mut dyn Read, max_line: usize, sink: &mut Sink) -> Result<(), FileError> {
    let mut reader = BufReader::new(file);
    skip_bom(&mut reader)?;
    let mut line = Vec::new();
    let mut number = 0u64;
    loop {
        line.clear();
        let n = (&mut reader)
            .take(max_line as u64 + 1)
            .read_until(b'\n', &mut line)
            .map_err(super::read_error)?;
        if n == 0 {
            return Ok(());
        }
        number += 1;
        if line.len() > max_line && line.last() != Some(&b'\n') {
            return Err(FileError::new(
                FileCode::Unreadable,
                format!("line {number} is longer than {max_line} bytes"),
            ));
        }
        if line.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        sink(Element {
            // Without its line end, so an error is placed on this line.
            bytes: line.trim_ascii_end(),
            number,
            line: number,
            depth: 0,
            keys: None,
        })?;
    }
}

pub(super) fn skip_bom(reader: &mut impl BufRead) -> Result<(), FileError> {
    let head = reader.fill_buf().map_err(super::read_error)?;
    if head.starts_with(b"\xEF\xBB\xBF") {
        reader.consume(3);
    }
    Ok(())
}

/// A key of a row object: borrowed from the file's bytes unless it holds
/// an escape.
struct Key;

impl<'de> DeserializeSeed<'de> for Key {
    type Value = Cow<'de, str>;

    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_str(self)
    }
}

impl<'de> Visitor<'de> for Key {
    type Value = Cow<'de, str>;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a key")
    }

    fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<Self::Value, E> {
        Ok(Cow::Borrowed(v))
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<Self::Value, E> {
        Ok(Cow::Owned(v.to_string()))
    }
}

/// The failure of an object with more keys than columns accepted.
fn too_many_keys(max_keys: usize) -> FileError {
    FileError::new(
        FileCode::TooManyColumns,
        format!("an object has more than {max_keys} keys; at most {max_keys} columns are accepted"),
    )
}

/// The first pass over one row object: its keys, each handed to `each`;
/// its values are checked as JSON and skipped.
struct KeysSeed<'s, F> {
    max_keys: usize,
    failure: &'s mut Option<FileError>,
    each: &'s mut F,
}

impl<'de, F: FnMut(usize, &str) -> Result<(), FileError>> DeserializeSeed<'de> for KeysSeed<'_, F> {
    type Value = ();

    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_map(self)
    }
}

impl<'de, F: FnMut(usize, &str) -> Result<(), FileError>> Visitor<'de> for KeysSeed<'_, F> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a JSON object for each row")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        let mut keys = 0usize;
        while let Some(key) = map.next_key_seed(Key)? {
            keys += 1;
            let stop = if self.max_keys > 0 && keys > self.max_keys {
                Err(too_many_keys(self.max_keys))
            } else {
                (self.each)(keys - 1, &key)
            };
            if let Err(e) = stop {
                *self.failure = Some(e);
                return Err(de::Error::custom("stopped"));
            }
            map.next_value::<IgnoredAny>()?;
        }
        Ok(())
    }
}

/// The header's column of each key, and the keys of the last object
/// looked up, in their order. A file's objects mostly repeat their keys in
/// one order: comparing a key with the one in its place in the last object
/// costs a `memcmp`, where hashing it (SipHash) was 8 % of reading 100k
/// orders.
#[derive(Default)]
struct Columns {
    index: HashMap<String, usize>,
    last: Vec<(String, usize)>,
}

impl Columns {
    /// The column of `key`, the `place`-th key (from 0) of its object.
    fn get(&mut self, place: usize, key: &str) -> Option<usize> {
        if let Some((known, column)) = self.last.get(place)
            && known == key
        {
            return Some(*column);
        }
        let column = *self.index.get(key)?;
        self.remember(place, key, column);
        Some(column)
    }

    /// A new key, the next column.
    fn add(&mut self, place: usize, key: &str) {
        let column = self.index.len();
        self.index.insert(key.to_string(), column);
        self.remember(place, key, column);
    }

    fn remember(&mut self, place: usize, key: &str, column: usize) {
        if let Some(slot) = self.last.get_mut(place) {
            slot.0.clear();
            slot.0.push_str(key);
            slot.1 = column;
        } else if place == self.last.len() {
            self.last.push((key.to_string(), column));
        }
    }

    fn len(&self) -> usize {
        self.index.len()
    }
}

/// One row object, read whole into its row's cells: each value at its
/// key's column of the header (the first pass learned every key, and
/// refused an object with too many). A problem inside it that is a file
/// failure (nesting too deep) stops the parse at once and is left in
/// `failure`, so it keeps its code.
struct ObjectSeed<'s> {
    /// Levels above the object.
    depth: usize,
    /// The header's column of each key.
    columns: &'s mut Columns,
    failure: &'s mut Option<FileError>,
}

impl<'de> DeserializeSeed<'de> for ObjectSeed<'_> {
    type Value = Vec<Cell>;

    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for ObjectSeed<'_> {
    type Value = Vec<Cell>;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a JSON object for each row")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut cells = vec![Cell::Empty; self.columns.len()];
        let mut place = 0;
        while let Some(key) = map.next_key_seed(Key)? {
            let raw: &RawValue = map.next_value()?;
            let cell = cell(raw.get(), self.depth + 1).map_err(|e| {
                let message = format!("key {key:?}: {}", e.message);
                *self.failure = Some(FileError::new(e.code, message));
                de::Error::custom("stopped")
            })?;
            // A key given twice: the last value counts (as `JSON.parse`).
            if let Some(i) = self.columns.get(place, &key) {
                cells[i] = cell;
            }
            place += 1;
        }
        Ok(cells)
    }
}

/// A value of a row object, as its JSON text, as a cell. `depth` counts
/// the levels above the value (the top-level array and the object).
fn cell(text: &str, depth: usize) -> Result<Cell, FileError> {
    Ok(match text.as_bytes().first() {
        Some(b'"') => {
            // Without an escape the text between the quotes is the string.
            let s = match text.contains('\\') {
                false => text[1..text.len() - 1].to_string(),
                true => serde_json::from_str(text).map_err(|e| json_error(&e, 1))?,
            };
            if s.trim().is_empty() {
                Cell::Empty
            } else {
                Cell::Text(s)
            }
        }
        Some(b't') => Cell::Bool(true),
        Some(b'f') => Cell::Bool(false),
        Some(b'n') => Cell::Empty,
        Some(b'{' | b'[') => {
            let deepest = depth + nesting(text);
            if deepest > MAX_DEPTH {
                return Err(FileError::new(
                    FileCode::Unreadable,
                    format!(
                        "the JSON is nested {deepest} levels deep; at most {MAX_DEPTH} are accepted"
                    ),
                ));
            }
            // A nested value is kept as its JSON text: a text column stores
            // it as sent, a typed column reports it as a type error.
            Cell::Text(text.to_string())
        }
        _ => Cell::Number(plain_number(text)),
    })
}

/// One row object's cells read straight from its text, when it is an
/// object of the plainest kind: every key and every string value without
/// an escape or a control character, every other value a number, `true`,
/// `false` or `null`, JSON's own blanks between them (nearly every row a
/// serializer writes). `None` for anything else, even valid JSON (a nested
/// value, an escape, a malformed number): serde_json then parses the
/// object, and names what is wrong with it.
///
/// Written by hand because serde_json's walk through `MapAccess`, a
/// `RawValue` for each value, was 840 instructions a cell, the largest
/// part of reading a JSON file (callgrind); what this accepts is a strict
/// subset of JSON, whose cells are the ones [`ObjectSeed`] gives.
fn plain_cells(text: &str, columns: &mut Columns) -> Option<Vec<Cell>> {
    let b = text.as_bytes();
    let mut at = json_blank(b, 0);
    if b.get(at) != Some(&b'{') {
        return None;
    }
    let mut cells = vec![Cell::Empty; columns.len()];
    at = json_blank(b, at + 1);
    let closed = if b.get(at) == Some(&b'}') {
        at + 1
    } else {
        let mut place = 0;
        loop {
            let key_end = plain_string_end(b, at)?;
            let key = &text[at + 1..key_end - 1];
            at = json_blank(b, key_end);
            if b.get(at) != Some(&b':') {
                return None;
            }
            at = json_blank(b, at + 1);
            let end = match b.get(at)? {
                b'"' => plain_string_end(b, at)?,
                _ => word_end(b, at)?,
            };
            let cell = cell(&text[at..end], 0).ok()?;
            // A key given twice: the last value counts, as in ObjectSeed.
            if let Some(i) = columns.get(place, key) {
                cells[i] = cell;
            }
            place += 1;
            at = json_blank(b, end);
            match b.get(at)? {
                b',' => at = json_blank(b, at + 1),
                b'}' => break at + 1,
                _ => return None,
            }
        }
    };
    (json_blank(b, closed) == b.len()).then_some(cells)
}

/// Past JSON's blanks (space, tab, line feed, carriage return) from `at`.
fn json_blank(b: &[u8], mut at: usize) -> usize {
    while let Some(b' ' | b'\t' | b'\n' | b'\r') = b.get(at) {
        at += 1;
    }
    at
}

/// Past the closing quote of the string opening at `at`, if it holds no
/// escape and no control character.
fn plain_string_end(b: &[u8], at: usize) -> Option<usize> {
    if b.get(at) != Some(&b'"') {
        return None;
    }
    let inner = &b[at + 1..];
    let n = inner
        .iter()
        .position(|&c| c == b'"' || c == b'\\' || c < 0x20)?;
    (inner[n] == b'"').then_some(at + 1 + n + 1)
}

/// Past `true`, `false`, `null` or a number as JSON writes one
/// (`-?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)?`) at `at`. What
/// follows is for the caller to check.
fn word_end(b: &[u8], at: usize) -> Option<usize> {
    let rest = &b[at..];
    for literal in [&b"true"[..], b"false", b"null"] {
        if rest.starts_with(literal) {
            return Some(at + literal.len());
        }
    }
    let digits = |from: usize| from + b[from..].iter().take_while(|c| c.is_ascii_digit()).count();
    let mut i = at + usize::from(b.get(at) == Some(&b'-'));
    i = match b.get(i)? {
        b'0' => i + 1,
        b'1'..=b'9' => digits(i + 1),
        _ => return None,
    };
    if b.get(i) == Some(&b'.') {
        let end = digits(i + 1);
        if end == i + 1 {
            return None;
        }
        i = end;
    }
    if let Some(b'e' | b'E') = b.get(i) {
        i += 1;
        if let Some(b'+' | b'-') = b.get(i) {
            i += 1;
        }
        let end = digits(i);
        if end == i {
            return None;
        }
        i = end;
    }
    Some(i)
}

/// How deeply a JSON text nests (`[]` is 1), ignoring brackets in strings.
fn nesting(text: &str) -> usize {
    let (mut depth, mut deepest) = (0usize, 0usize);
    let (mut in_string, mut escaped) = (false, false);
    for b in text.bytes() {
        if in_string {
            match b {
                _ if escaped => escaped = false,
                b'\\' => escaped = true,
                b'"' => in_string = false,
                _ => {}
            }
            continue;
        }
        match b {
            b'"' => in_string = true,
            b'[' | b'{' => {
                depth += 1;
                deepest = deepest.max(depth);
            }
            b']' | b'}' => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    deepest
}

/// JSON numbers with an exponent (`1.5e3`, as JavaScript writes large and
/// small numbers) become plain decimals when that is exact; others keep
/// their digits as sent.
fn plain_number(text: &str) -> String {
    if text.contains(['e', 'E'])
        && let Ok(d) = Decimal::from_scientific(text)
    {
        return d.normalize().to_string();
    }
    text.to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Cursor;

    fn options() -> Options {
        Options {
            max_columns: 512,
            max_cell_bytes: 65536,
            ..Options::default()
        }
    }

    fn read(
        format: fn(Box<dyn Read + Send>, &Options) -> Result<RowSource, FileError>,
        text: &str,
    ) -> Result<(Vec<String>, Vec<RawRow>), FileError> {
        let src = format(Box::new(Cursor::new(text.as_bytes().to_vec())), &options())?;
        let rows = src.rows.collect::<Result<Vec<_>, _>>()?;
        Ok((src.header, rows))
    }

    #[test]
    fn arrays_and_wrapped_rows_give_the_union_of_keys() {
        let (header, rows) = read(
            open_json,
            r#"[{"sku": "A", "price": 12.50}, {"sku": "B", "active": true, "price": null}]"#,
        )
        .unwrap();
        assert_eq!(header, vec!["sku", "price", "active"]);
        assert_eq!(
            rows[0].cells,
            vec![
                Cell::Text("A".into()),
                Cell::Number("12.50".into()),
                Cell::Empty
            ]
        );
        assert_eq!(rows[1].row, 2);
        assert_eq!(rows[1].cells[2], Cell::Bool(true));
        let (header, rows) =
            read(open_json, r#"{"meta": {"x": [1]}, "rows": [{"a": 1e3}]}"#).unwrap();
        assert_eq!(header, vec!["a"]);
        assert_eq!(rows[0].cells[0], Cell::Number("1000".into()));
    }

    #[test]
    fn keys_repeated_or_changed_from_object_to_object_land_in_their_columns() {
        let (header, rows) = read(
            open_json,
            r#"[{"a": 1, "b": 2}, {"a": 3, "b": 4}, {"a": 5, "c": 6}, {"b": 7, "a": 8},
                {"a": 9, "b": 10}, {"b\u0031": 11, "a": 12}]"#,
        )
        .unwrap();
        assert_eq!(header, vec!["a", "b", "c", "b1"]);
        let numbers = |row: &RawRow| -> Vec<String> {
            row.cells
                .iter()
                .map(|c| match c {
                    Cell::Number(n) => n.clone(),
                    _ => "-".into(),
                })
                .collect()
        };
        let seen: Vec<_> = rows.iter().map(numbers).collect();
        assert_eq!(
            seen,
            [
                ["1", "2", "-", "-"],
                ["3", "4", "-", "-"],
                ["5", "-", "6", "-"],
                ["8", "7", "-", "-"],
                ["9", "10", "-", "-"],
                ["12", "-", "-", "11"],
            ]
        );
        // Bytes that are not UTF-8 after an object with the same keys:
        // still refused, on their line.
        let mut bad = b"[{\"a\": \"x\"},\n{\"a\": \"".to_vec();
        bad.extend_from_slice(b"\xff\"}]");
        let src = open_json(Box::new(Cursor::new(bad)), &options()).unwrap();
        let err = src.rows.collect::<Result<Vec<_>, _>>().unwrap_err();
        assert_eq!(err.code, FileCode::Unreadable);
        assert!(err.message.contains("line 2"), "{}", err.message);
    }

    #[test]
    fn ndjson_rows_are_lines() {
        let (header, rows) = read(
            open_ndjson,
            "{\"a\": \"x\"}\n\n{\"a\": 12345678901234567890.123}\n",
        )
        .unwrap();
        assert_eq!(header, vec!["a"]);
        assert_eq!(rows[1].row, 3);
        assert_eq!(
            rows[1].cells[0],
            Cell::Number("12345678901234567890.123".into())
        );
        let err = read(open_ndjson, "{\"a\": 1}\n{\"a\": \n").unwrap_err();
        assert_eq!(err.code, FileCode::Unreadable);
        assert!(err.message.contains("line 2"), "{}", err.message);
    }

    #[test]
    fn deep_nesting_and_bad_shapes_are_unreadable() {
        let deep = format!("[{{\"a\": {}{}}}]", "[".repeat(40), "]".repeat(40));
        let err = read(open_json, &deep).unwrap_err();
        assert_eq!(err.code, FileCode::Unreadable);
        assert!(err.message.contains("nested"), "{}", err.message);
        let very_deep = "[".repeat(10_000);
        assert_eq!(
            read(open_json, &very_deep).unwrap_err().code,
            FileCode::Unreadable
        );
        let err = read(open_json, r#"[{"a": 1}, 5]"#).unwrap_err();
        assert!(err.message.contains("object"), "{}", err.message);
        let err = read(open_json, r#"{"data": []}"#).unwrap_err();
        assert!(err.message.contains("rows"), "{}", err.message);
        assert_eq!(read(open_json, "[]").unwrap_err().code, FileCode::NoRows);
        assert_eq!(
            read(open_json, r#"[{"a": 1}"#).unwrap_err().code,
            FileCode::Unreadable
        );
    }

    #[test]
    fn objects_are_found_whatever_their_strings_hold() {
        let text = "\u{feff}{\"meta\": {\"note\": \"]} \\\" [{\"}, \"rows\": [\n\
                    {\"a\": \"x]}\\\"{\", \"b\\u0031\": [1, {\"c\": \"}\"}]},\n\
                    {\"a\": \"line\\nbreak\", \"b1\": -1.5E+2}\n\
                    ], \"after\": [true, null]}\n";
        let (header, rows) = read(open_json, text).unwrap();
        assert_eq!(header, vec!["a", "b1"]);
        assert_eq!(rows[0].cells[0], Cell::Text("x]}\"{".into()));
        assert_eq!(rows[0].cells[1], Cell::Text(r#"[1, {"c": "}"}]"#.into()));
        assert_eq!(rows[1].cells[0], Cell::Text("line\nbreak".into()));
        assert_eq!(rows[1].cells[1], Cell::Number("-150".into()));
        assert_eq!(rows[1].row, 2);
    }

    #[test]
    fn a_broken_document_names_where() {
        let cases = [
            ("[{\"a\": 1}\n{\"a\": 2}]", "line 2", "`,` or `]`"),
            (
                "[{\"a\": 1},\n\n{\"a\": }]",
                "line 3",
                "not readable as JSON",
            ),
            ("[{\"a\": 1}] x", "line 1", "the end of the file"),
            ("[{\"a\": \"open", "line 1", "ends too early"),
            ("\"rows\"", "line 1", "an array of objects"),
            ("{\"rows\": 5}", "line 1", "\"rows\" to be an array"),
            ("[{\"a\": 1}, 5]", "line 1", "object"),
            ("[{\"a\": 1},]", "line 1", "a value"),
        ];
        for (text, line, says) in cases {
            let err = read(open_json, text).unwrap_err();
            assert_eq!(err.code, FileCode::Unreadable, "{text}");
            assert!(err.message.contains(line), "{text}: {}", err.message);
            assert!(err.message.contains(says), "{text}: {}", err.message);
        }
    }

    #[test]
    fn an_object_past_the_budget_is_named() {
        let options = Options {
            max_columns: 1,
            max_cell_bytes: 1,
            ..Options::default()
        };
        let long = format!("[{{\"a\": 1}}, {{\"a\": \"{}\"}}]", "x".repeat(2 << 20));
        let src = open_json(Box::new(Cursor::new(long.into_bytes())), &options);
        let err = src.err().expect("refused before the header");
        assert!(
            err.message.contains("object 2 is longer than"),
            "{}",
            err.message
        );
    }

    #[test]
    fn keys_in_another_order_or_escaped_find_their_columns() {
        let text =
            r#"[{"a": 1, "b": 2}, {"b": 3, "a": 4}, {"c": 5, "b": 6}, {"\u0061": 7}, {"a" 8}]"#;
        let err = read(open_json, text).unwrap_err();
        assert!(err.message.contains("line 1"), "{}", err.message);
        let (header, rows) = read(open_json, &text.replace(r#", {"a" 8}"#, "")).unwrap();
        assert_eq!(header, vec!["a", "b", "c"]);
        let numbers = |i: usize| -> Vec<Cell> { rows[i].cells.clone() };
        let n = |s: &str| Cell::Number(s.into());
        assert_eq!(numbers(1), vec![n("4"), n("3"), Cell::Empty]);
        assert_eq!(numbers(2), vec![Cell::Empty, n("6"), n("5")]);
        assert_eq!(numbers(3), vec![n("7"), Cell::Empty, Cell::Empty]);
    }

    #[test]
    fn too_many_keys_is_too_many_columns() {
        let keys: Vec<String> = (0..600).map(|i| format!("\"k{i}\": 1")).collect();
        let text = format!("[{{{}}}]", keys.join(","));
        assert_eq!(
            read(open_json, &text).unwrap_err().code,
            FileCode::TooManyColumns
        );
    }

    /// The plain walk gives exactly the cells serde_json's parse gives, and
    /// leaves to it every object it does not follow, valid or not: objects
    /// made of valid and invalid pieces (blanks JSON has and has not, keys
    /// and values with escapes, control characters, numbers and words
    /// malformed, nesting, missing and doubled commas).
    #[test]
    fn plain_cells_are_serde_jsons_cells_or_none() {
        const BLANKS: &[&str] = &["", "", " ", "\n ", "\t", "\r\n", "\x0c"];
        const KEYS: &[&str] = &[
            r#""a""#,
            r#""b""#,
            r#""c""#,
            r#""é""#,
            r#""b\u0031""#,
            "\"t\tb\"",
            "a",
            r#""a"#,
        ];
        const VALUES: &[&str] = &[
            "1",
            "-0",
            "01",
            "1.",
            "1.5",
            "-1.5e3",
            "1E+2",
            "2e-1",
            "1e",
            "-",
            "+1",
            ".5",
            "NaN",
            "true",
            "truex",
            "nul",
            "null",
            "false",
            r#""x""#,
            r#"" ""#,
            r#""""#,
            r#""a\"b""#,
            "\"tab\there\"",
            "[1, 2]",
            r#"{"x": 1}"#,
            r#""\u00e9""#,
            "12345678901234567890",
            r#""Ä ok""#,
            r#""x"#,
        ];
        let mut state = 0x9e37_79b9_7f4a_7c15_u64;
        let mut pick = |n: usize| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            (state % n as u64) as usize
        };
        let mut columns = Columns::default();
        for (place, key) in ["a", "b", "c", "é", "b1"].iter().enumerate() {
            columns.add(place, key);
        }
        let (mut plain, mut fell_back) = (0, 0);
        for _ in 0..20_000 {
            let mut text = String::from(BLANKS[pick(BLANKS.len())]);
            text.push('{');
            let members = pick(5);
            for m in 0..members {
                if m > 0 {
                    text.push_str([",", ",", ",", ",", "", ",,"][pick(6)]);
                }
                text.push_str(BLANKS[pick(BLANKS.len())]);
                text.push_str(KEYS[pick(KEYS.len())]);
                text.push_str(BLANKS[pick(BLANKS.len())]);
                text.push_str([":", ":", ":", ""][pick(4)]);
                text.push_str(BLANKS[pick(BLANKS.len())]);
                text.push_str(VALUES[pick(VALUES.len())]);
            }
            text.push_str(["", "", "", ","][pick(4)]);
            text.push_str(BLANKS[pick(BLANKS.len())]);
            text.push_str(["}", "}", "}", "} x", ""][pick(5)]);
            text.push_str(BLANKS[pick(BLANKS.len())]);
            let fast = plain_cells(&text, &mut columns);
            let mut failure = None;
            let seed = ObjectSeed {
                depth: 1,
                columns: &mut columns,
                failure: &mut failure,
            };
            let parsed = parse(text.as_bytes(), seed);
            match (fast, parsed) {
                (Some(fast), Ok(cells)) => {
                    assert_eq!(fast, cells, "{text:?}");
                    plain += 1;
                }
                (Some(fast), Err(e)) => panic!("{text:?}: plain {fast:?}, serde_json: {e}"),
                (None, _) => fell_back += 1,
            }
        }
        // Both ways were taken often: the comparison above was made.
        assert!(
            plain > 1_000 && fell_back > 1_000,
            "{plain} plain, {fell_back} not"
        );
    }

    /// The header, the rows (position, cells) as far as they went, and
    /// the failure that stopped them.
    type Got = (Vec<String>, Vec<(u64, Vec<Cell>)>, Option<FileError>);

    /// Reads `text` in one pass or two.
    fn read_in(
        format: fn(Box<dyn Read + Send>, &Options) -> Result<RowSource, FileError>,
        text: &str,
        one_pass: bool,
    ) -> Got {
        let options = Options {
            one_pass,
            ..options()
        };
        let src = format(Box::new(Cursor::new(text.as_bytes().to_vec())), &options).unwrap();
        let mut rows = Vec::new();
        for row in src.rows {
            match row {
                Ok(row) => rows.push((row.row, row.cells)),
                Err(e) => return (src.header, rows, Some(e)),
            }
        }
        (src.header, rows, None)
    }

    /// Row objects well past [`WINDOW`]: keys in two orders, one key left
    /// out of most objects, escapes and nesting (parsed by serde_json),
    /// and `late` first given in object `late_at`, if any.
    fn many_objects(late_at: Option<usize>, lines: bool) -> String {
        let mut text = String::from(if lines { "" } else { "[\n" });
        let mut i = 0;
        while text.len() < WINDOW + WINDOW / 2 {
            i += 1;
            let object = match i % 7 {
                0 => format!(r#"{{"qty": {i}, "sku": "B-{i}", "diskon": 5}}"#),
                3 => format!(r#"{{"sku": "C\u002d{i}", "qty": [{i}], "catatan": "x"}}"#),
                _ => format!(r#"{{"sku": "A-{i}", "qty": {i}}}"#),
            };
            let object = match late_at {
                Some(at) if at == i => object.replace('}', r#", "late": true}"#),
                _ => object,
            };
            text.push_str(&object);
            text.push_str(if lines { "\n" } else { ",\n" });
        }
        if lines {
            text
        } else {
            text.push_str(r#"{"sku": "Z"}]"#);
            text
        }
    }

    #[test]
    fn one_pass_reads_what_two_passes_read() {
        for (format, lines) in [(open_json as fn(_, &_) -> _, false), (open_ndjson, true)] {
            let text = many_objects(None, lines);
            let (header, rows, failure) = read_in(format, &text, true);
            assert!(failure.is_none(), "{failure:?}");
            assert_eq!(header, vec!["sku", "qty", "catatan", "diskon"]);
            assert!(rows.len() > 50_000, "{} rows", rows.len());
            assert_eq!((header, rows, None), {
                let (h, r, f) = read_in(format, &text, false);
                (h, r, f.map(|e| e.message))
            });
        }
    }

    #[test]
    fn a_key_first_met_past_the_window_stops_one_pass_and_two_passes_learn_it() {
        for (format, lines) in [(open_json as fn(_, &_) -> _, false), (open_ndjson, true)] {
            let late = 130_001;
            let text = many_objects(Some(late), lines);
            assert!(text.find("late").unwrap() > WINDOW);
            let (header, rows, failure) = read_in(format, &text, true);
            let failure = failure.expect("the late key stops the read");
            assert_eq!(failure.code, FileCode::HeaderGrown);
            let place = if lines { "line" } else { "object" };
            assert!(
                failure
                    .message
                    .starts_with(&format!("{place} {late}: key \"late\"")),
                "{}",
                failure.message
            );
            assert_eq!(header.len(), 4);
            // Every row before it went, read against the header sent.
            assert_eq!(rows.len(), late - 1);
            assert!(rows.iter().all(|(_, cells)| cells.len() == 4));
            let (header, rows, failure) = read_in(format, &text, false);
            assert!(failure.is_none(), "{failure:?}");
            assert_eq!(header, vec!["sku", "qty", "catatan", "diskon", "late"]);
            assert_eq!(rows[late - 1].1[4], Cell::Bool(true));
            assert!(rows.iter().all(|(_, cells)| cells.len() == 5));
            // A late key inside the window is learned like any other.
            let (header, _, failure) = read_in(format, &many_objects(Some(5_000), lines), true);
            assert!(failure.is_none(), "{failure:?}");
            assert_eq!(header.last().map(String::as_str), Some("late"));
        }
    }
}
