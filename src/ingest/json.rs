//! JSON (an array of objects, or `{"rows": [...]}`) and NDJSON (one object
//! per line), streamed: one object is in memory at a time, never the whole
//! document as a `serde_json::Value`.
//!
//! The header is the union of the objects' keys in first-seen order, so an
//! object may leave out keys it has no value for (as serializers that skip
//! nulls do). Learning every key takes a first pass over the file, which is
//! spooled to a temporary file for it; the second pass yields the rows.
//! The row number is the 1-based position of the object (for NDJSON, its
//! line, which is the same when the file has no blank lines).
//!
//! Values keep their exact text: a number is passed on as its digits
//! (`Cell::Number`, through `RawValue`, never an `f64`), so a `numeric`
//! column gets exactly what was sent.

use std::collections::HashMap;
use std::fmt;
use std::fs::File;
use std::io::{BufRead, BufReader, Read};

use rust_decimal::Decimal;
use serde::de::{self, DeserializeSeed, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde_json::value::RawValue;

use super::budget::{Budget, record_bytes};
use super::{Cell, FileError, Item, Options, RawRow, RowSource, produce, spool};

/// Deepest nesting accepted (API.md section 10), counting the top-level
/// array (and the `{"rows": …}` wrapper) and each row object.
pub const MAX_DEPTH: usize = 32;

/// One object of the file: its keys and values in file order.
type Object = Vec<(String, Cell)>;

/// Called for every object with its row number; an error stops the walk.
type Sink<'a> = dyn FnMut(u64, Object) -> Result<(), FileError> + 'a;

pub fn open_json(reader: Box<dyn Read + Send>, options: &Options) -> Result<RowSource, FileError> {
    let (max_keys, cap) = (options.max_columns, record_bytes(options));
    two_passes(reader, options, move |file, sink| {
        walk_json(file, max_keys, cap, sink)
    })
}

pub fn open_ndjson(
    reader: Box<dyn Read + Send>,
    options: &Options,
) -> Result<RowSource, FileError> {
    let (max_line, max_keys) = (line_limit(options), options.max_columns);
    two_passes(reader, options, move |file, sink| {
        walk_ndjson(file, max_line, max_keys, sink)
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

/// First pass: the header (union of keys). Second pass: the rows. Both run
/// on the reader's own thread ([`produce`]).
fn two_passes<W>(
    reader: Box<dyn Read + Send>,
    options: &Options,
    walk: W,
) -> Result<RowSource, FileError>
where
    W: Fn(File, &mut Sink) -> Result<(), FileError> + Send + 'static,
{
    let max_columns = options.max_columns;
    produce(move |emit| {
        let file = spool::to_file(reader)?;
        let mut header: Vec<String> = Vec::new();
        let mut index: HashMap<String, usize> = HashMap::new();
        let mut objects = 0u64;
        walk(spool::reopen(&file)?, &mut |_, object| {
            objects += 1;
            for (key, _) in object {
                if index.contains_key(&key) {
                    continue;
                }
                if max_columns > 0 && header.len() >= max_columns {
                    return Err(FileError::new(
                        "too_many_columns",
                        format!(
                            "the objects have more than {max_columns} different keys; \
                             at most {max_columns} columns are accepted"
                        ),
                    ));
                }
                index.insert(key.clone(), header.len());
                header.push(key);
            }
            Ok(())
        })?;
        if objects == 0 {
            return Err(FileError::new("no_rows", "the file holds no objects"));
        }
        let width = header.len();
        emit.send(Item::Header(header))?;
        walk(spool::reopen(&file)?, &mut |row, object| {
            let mut cells = vec![Cell::Empty; width];
            for (key, cell) in object {
                if let Some(&i) = index.get(&key) {
                    cells[i] = cell;
                }
            }
            emit.send(Item::Row(RawRow { row, cells }))
        })
    })
}

/// Walks a JSON document: an array of objects, or an object whose `rows`
/// member is one (its other members are ignored).
/// serde_json holds a whole string (and `RawValue`) in memory, so the bytes
/// of one object count against a budget ([`Budget`]).
fn walk_json(file: File, max_keys: usize, cap: u64, sink: &mut Sink) -> Result<(), FileError> {
    let budget = Budget::new(cap);
    let mut reader = BufReader::new(budget.reader(file));
    skip_bom(&mut reader)?;
    let mut failure = None;
    let mut objects = 0u64;
    let mut counted = |n: u64, object: Object| {
        budget.next_record(cap);
        objects = n;
        sink(n, object)
    };
    let mut de = serde_json::Deserializer::from_reader(reader);
    let top = Top {
        sink: &mut counted,
        failure: &mut failure,
        max_keys,
    };
    let result = de::Deserializer::deserialize_any(&mut de, top).and_then(|()| de.end());
    match (failure, result) {
        (Some(f), _) => Err(f),
        (None, Ok(())) => Ok(()),
        (None, Err(e)) if e.io_error_kind() == Some(std::io::ErrorKind::FileTooLarge) => {
            Err(FileError::new(
                "unreadable",
                format!(
                    "object {} is longer than {cap} bytes, more than all its cells at their \
                     size limit could be",
                    objects + 1
                ),
            ))
        }
        (None, Err(e)) => Err(json_error(&e, None)),
    }
}

/// Walks NDJSON line by line; blank lines are skipped.
fn walk_ndjson(
    file: File,
    max_line: usize,
    max_keys: usize,
    sink: &mut Sink,
) -> Result<(), FileError> {
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
                "unreadable",
                format!("line {number} is longer than {max_line} bytes"),
            ));
        }
        if line.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        let mut de = serde_json::Deserializer::from_slice(&line);
        let mut failure = None;
        let seed = ObjectSeed {
            depth: 0,
            max_keys,
            failure: &mut failure,
        };
        let result = seed.deserialize(&mut de).and_then(|o| de.end().map(|()| o));
        let object = match (failure, result) {
            (Some(f), _) => return Err(at_line(f, number)),
            (None, Ok(o)) => o,
            (None, Err(e)) => return Err(json_error(&e, Some(number))),
        };
        sink(number, object)?;
    }
}

fn at_line(e: FileError, line: u64) -> FileError {
    FileError::new(e.code, format!("line {line}: {}", e.message))
}

fn skip_bom(reader: &mut impl BufRead) -> Result<(), FileError> {
    let head = reader.fill_buf().map_err(super::read_error)?;
    if head.starts_with(b"\xEF\xBB\xBF") {
        reader.consume(3);
    }
    Ok(())
}

/// A parse error as a person reads it: where, and what was expected.
fn json_error(e: &serde_json::Error, line: Option<u64>) -> FileError {
    let line = line.unwrap_or(e.line() as u64);
    let what = e.to_string();
    let message = if what.contains("recursion limit") {
        format!("line {line}: the JSON is nested deeper than {MAX_DEPTH} levels")
    } else if e.is_eof() {
        format!("line {line}: the JSON ends too early (the file is cut off)")
    } else {
        // serde_json's message ends with its own "at line L column C".
        format!("the file is not readable as JSON: {what}")
    };
    FileError::new("unreadable", message)
}

/// The top level: an array of objects, or `{"rows": [...]}`.
struct Top<'s, 'f> {
    sink: &'s mut Sink<'f>,
    failure: &'s mut Option<FileError>,
    max_keys: usize,
}

impl<'de> Visitor<'de> for Top<'_, '_> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str(r#"an array of objects, or {"rows": [...]}"#)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<(), A::Error> {
        rows(seq, self.sink, self.failure, 1, self.max_keys)
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        let mut found = false;
        while let Some(key) = map.next_key::<String>()? {
            if key == "rows" && !found {
                found = true;
                map.next_value_seed(RowsSeed {
                    sink: &mut *self.sink,
                    failure: &mut *self.failure,
                    max_keys: self.max_keys,
                })?;
            } else {
                map.next_value::<IgnoredAny>()?;
            }
        }
        if !found {
            return Err(de::Error::custom(
                r#"the object has no "rows" member; send an array of objects, or {"rows": [...]}"#,
            ));
        }
        Ok(())
    }
}

/// The `rows` member of the wrapper object.
struct RowsSeed<'s, 'f> {
    sink: &'s mut Sink<'f>,
    failure: &'s mut Option<FileError>,
    max_keys: usize,
}

impl<'de> DeserializeSeed<'de> for RowsSeed<'_, '_> {
    type Value = ();

    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_seq(self)
    }
}

impl<'de> Visitor<'de> for RowsSeed<'_, '_> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str(r#""rows" to be an array of objects"#)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<(), A::Error> {
        rows(seq, self.sink, self.failure, 2, self.max_keys)
    }
}

/// Hands each object of the array to the sink as it is read.
fn rows<'de, A: SeqAccess<'de>>(
    mut seq: A,
    sink: &mut Sink,
    failure: &mut Option<FileError>,
    depth: usize,
    max_keys: usize,
) -> Result<(), A::Error> {
    let mut n = 0u64;
    loop {
        let seed = ObjectSeed {
            depth,
            max_keys,
            failure: &mut *failure,
        };
        let object = match seq.next_element_seed(seed) {
            Ok(Some(object)) => object,
            Ok(None) => return Ok(()),
            Err(e) => {
                if let Some(f) = failure.take() {
                    let message = format!("object {}: {}", n + 1, f.message);
                    *failure = Some(FileError::new(f.code, message));
                }
                return Err(e);
            }
        };
        n += 1;
        if let Err(e) = sink(n, object) {
            *failure = Some(e);
            return Err(de::Error::custom("stopped"));
        }
    }
}

/// One row object. A problem inside it that is a file failure (nesting too
/// deep, too many keys) stops the parse at once and is left in `failure`,
/// so it keeps its code.
struct ObjectSeed<'s> {
    /// Levels above the object.
    depth: usize,
    /// Most keys accepted in one object (0: any).
    max_keys: usize,
    failure: &'s mut Option<FileError>,
}

impl<'de> DeserializeSeed<'de> for ObjectSeed<'_> {
    type Value = Object;

    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for ObjectSeed<'_> {
    type Value = Object;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a JSON object for each row")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut object = Vec::new();
        while let Some(key) = map.next_key::<String>()? {
            if self.max_keys > 0 && object.len() >= self.max_keys {
                *self.failure = Some(FileError::new(
                    "too_many_columns",
                    format!(
                        "an object has more than {} keys; at most {} columns are accepted",
                        self.max_keys, self.max_keys
                    ),
                ));
                return Err(de::Error::custom("stopped"));
            }
            let raw: Box<RawValue> = map.next_value()?;
            match cell(&raw, self.depth + 1) {
                Ok(c) => object.push((key, c)),
                Err(e) => {
                    let message = format!("key {key:?}: {}", e.message);
                    *self.failure = Some(FileError::new(e.code, message));
                    return Err(de::Error::custom("stopped"));
                }
            }
        }
        Ok(object)
    }
}

/// A value of a row object as a cell. `depth` counts the levels above the
/// value (the top-level array and the object).
fn cell(raw: &RawValue, depth: usize) -> Result<Cell, FileError> {
    let text = raw.get();
    Ok(match text.as_bytes().first() {
        Some(b'"') => {
            let s: String = serde_json::from_str(text).map_err(|e| json_error(&e, None))?;
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
                    "unreadable",
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
        assert_eq!(err.code, "unreadable");
        assert!(err.message.contains("line 2"), "{}", err.message);
    }

    #[test]
    fn deep_nesting_and_bad_shapes_are_unreadable() {
        let deep = format!("[{{\"a\": {}{}}}]", "[".repeat(40), "]".repeat(40));
        let err = read(open_json, &deep).unwrap_err();
        assert_eq!(err.code, "unreadable");
        assert!(err.message.contains("nested"), "{}", err.message);
        let very_deep = "[".repeat(10_000);
        assert_eq!(read(open_json, &very_deep).unwrap_err().code, "unreadable");
        let err = read(open_json, r#"[{"a": 1}, 5]"#).unwrap_err();
        assert!(err.message.contains("object"), "{}", err.message);
        let err = read(open_json, r#"{"data": []}"#).unwrap_err();
        assert!(err.message.contains("rows"), "{}", err.message);
        assert_eq!(read(open_json, "[]").unwrap_err().code, "no_rows");
        assert_eq!(
            read(open_json, r#"[{"a": 1}"#).unwrap_err().code,
            "unreadable"
        );
    }

    #[test]
    fn too_many_keys_is_too_many_columns() {
        let keys: Vec<String> = (0..600).map(|i| format!("\"k{i}\": 1")).collect();
        let text = format!("[{{{}}}]", keys.join(","));
        assert_eq!(read(open_json, &text).unwrap_err().code, "too_many_columns");
    }
}
