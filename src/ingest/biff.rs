//! A look at an XLS workbook stream's BIFF records before calamine parses
//! it, to refuse what would take the process down.
//!
//! Why by hand: calamine 0.38 opens an XLS by parsing every sheet into a
//! dense grid (`Range::from_sparse`), sized by the first and last row and
//! column that hold a cell, and first reserves room for as many cells as a
//! sheet's DIMENSIONS record declares. Both come straight from the file:
//! a cell at A1 and one at row 65,536, column 65,536 ask for four billion
//! cells, and the failed allocation aborts the process (there is no panic
//! to catch). calamine offers no hook between reading the records and
//! building the grid, and no crate reads BIFF records without building
//! cells, so this module walks the records itself, framed and read exactly
//! as calamine's `xls.rs` does (the comments name the calamine code each
//! part mirrors), and refuses a workbook with a sheet over [`MAX_CELLS`].
//! It also refuses the few malformed records on which calamine's parser
//! panics instead of answering an error (found by fuzzing).
//!
//! These are hostile bytes: every length is checked, and nothing here may
//! panic.

use super::{FileCode, FileError};

/// The most cells (rows × columns, from the first cell to the last) an XLS
/// sheet may span: calamine holds the whole span in memory, 32 bytes a
/// cell (and 24 more where formulas span it too), so this is 128 MiB. A
/// full BIFF8 sheet (65,536 × 256) is four times this.
pub const MAX_CELLS: u64 = 4_194_304;

/// The most CONTINUE records a shared string table may have (see
/// [`sheets`]).
const MAX_SST_PARTS: usize = 32_768;

// Record types (MS-XLS 2.3), the ones calamine acts on.
const BOF: u16 = 0x0809;
const EOF: u16 = 0x000A;
const BOUND_SHEET: u16 = 0x0085;
const DIMENSIONS: u16 = 0x0200;
const NUMBER: u16 = 0x0203;
const LABEL: u16 = 0x0204;
const RSTRING: u16 = 0x00D6;
const BOOL_ERR: u16 = 0x0205;
const STRING: u16 = 0x0207;
const RK: u16 = 0x027E;
const LABEL_SST: u16 = 0x00FD;
const MUL_RK: u16 = 0x00BD;
const FORMULA: u16 = 0x0006;
const MERGE_CELLS: u16 = 0x00E5;
const LBL: u16 = 0x0018;
const SST: u16 = 0x00FC;
const CONTINUE: u16 = 0x003C;

/// Checks a workbook stream before calamine parses it, and blanks the
/// formulas in it: refuses a stream on which calamine would allocate a
/// sheet of more than [`MAX_CELLS`] cells, or as many over all its sheets
/// (calamine keeps every sheet's grid), or panic.
///
/// Formulas (of cells and of defined names) are emptied, their length set
/// to 0: calamine renders every formula as text while it opens the
/// workbook, with a token parser that indexes without length checks
/// (fuzzing found it panicking), and only their cached values are read
/// here. Zeroing bytes may change how overlapping hostile records read, so
/// the stream is checked again as calamine will get it.
pub fn prepare(stream: &mut [u8]) -> Result<(), FileError> {
    for at in check(stream)? {
        stream[at..at + 2].fill(0);
    }
    if check(stream)?
        .iter()
        .any(|&at| stream[at..at + 2] != [0, 0])
    {
        return Err(unreadable(
            "its formula records overlap other records".to_string(),
        ));
    }
    Ok(())
}

/// Checks a workbook stream (see [`prepare`]); gives the offsets of the
/// formulas' lengths to blank.
fn check(stream: &[u8]) -> Result<Vec<usize>, FileError> {
    // Sheets do not overlap in a workbook, so all of them together are at
    // most the stream; a hostile one names the same bytes as thousands of
    // sheets, and calamine would read them that many times.
    let mut budget = stream.len();
    let mut total = 0u64;
    let mut formulas = Vec::new();
    for (name, pos) in sheets(stream, &mut formulas)? {
        // calamine slices the stream at the sheet's offset without a check.
        if pos > stream.len() {
            return Err(unreadable(format!(
                "its sheet {name:?} starts at byte {pos}, past the end of the workbook ({} bytes)",
                stream.len()
            )));
        }
        let (read, cells) = check_sheet(&name, stream, pos, budget, &mut formulas)?;
        budget -= read;
        total += cells;
        if total > MAX_CELLS {
            return Err(FileError::new(
                FileCode::Unreadable,
                format!(
                    "the XLS workbook's sheets span {} cells up to the sheet {name:?}; \
                     at most {} cells are accepted",
                    grouped(total),
                    grouped(MAX_CELLS),
                ),
            ));
        }
    }
    Ok(formulas)
}

/// The records of a stream, as calamine's `RecordIter` frames them: a type
/// and a length (two little-endian `u16`s), then the data. It ends where
/// the stream does or where a record is cut short (calamine stops with an
/// error there). CONTINUE records (0x003C) come as records of their own;
/// calamine appends them to the record before, and none of the types
/// looked at here is one, so it makes no difference.
#[derive(Clone)]
struct Records<'a> {
    rest: &'a [u8],
    /// The offset of `rest` in the stream, for messages.
    at: usize,
}

impl<'a> Iterator for Records<'a> {
    /// The record's offset, type and data.
    type Item = (usize, u16, &'a [u8]);

    fn next(&mut self) -> Option<Self::Item> {
        let typ = u16_at(self.rest, 0)?;
        let len = u16_at(self.rest, 2)? as usize;
        let data = self.rest.get(4..4 + len)?;
        let at = self.at;
        self.rest = &self.rest[4 + len..];
        self.at += 4 + len;
        Some((at, typ, data))
    }
}

/// The records from byte `from` of a stream (at most its length).
fn records(stream: &[u8], from: usize) -> Records<'_> {
    Records {
        rest: stream.get(from..).unwrap_or_default(),
        at: from,
    }
}

fn u16_at(data: &[u8], at: usize) -> Option<u16> {
    let bytes = data.get(at..at.checked_add(2)?)?;
    Some(u16::from_le_bytes([bytes[0], bytes[1]]))
}

fn u32_at(data: &[u8], at: usize) -> Option<u32> {
    let bytes = data.get(at..at.checked_add(4)?)?;
    Some(u32::from_le_bytes([bytes[0], bytes[1], bytes[2], bytes[3]]))
}

/// The sheets the globals substream names (BOUNDSHEET8 records up to its
/// EOF, as calamine's `parse_workbook` reads them): name and offset. Adds
/// the offsets of defined names' formula lengths to `formulas`.
fn sheets(stream: &[u8], formulas: &mut Vec<usize>) -> Result<Vec<(String, usize)>, FileError> {
    let mut biff8 = true;
    let mut sheets = Vec::new();
    let mut records = records(stream, 0);
    while let Some((at, typ, data)) = records.next() {
        // Records calamine reads a number from without checking the length.
        let needs = match typ {
            BOF | 0x002F | 0x0042 | 0x0022 | 0x0017 => 2,
            BOUND_SHEET => 6,
            // Lbl (a defined name): flags, then its formula's length at 4.
            LBL => 14,
            _ => 0,
        };
        if data.len() < needs {
            return Err(cut_short(typ, at, data.len(), needs));
        }
        match typ {
            EOF => break,
            BOF => biff8 = is_biff8(data),
            BOUND_SHEET => {
                let pos = u32_at(data, 0).unwrap_or(0) as usize;
                sheets.push((sheet_name(&data[6..], biff8), pos));
            }
            LBL => formulas.push(at + 4 + 4),
            SST => {
                // calamine reads the table's CONTINUE records with it.
                let mut rest = records.clone();
                let mut continues = Vec::new();
                while rest.rest.len() > 4 && u16_at(rest.rest, 0) == Some(CONTINUE) {
                    match rest.next() {
                        Some((_, _, more)) => continues.push(more),
                        None => break,
                    }
                }
                // calamine takes each CONTINUE off the front of a list
                // (`Vec::remove(0)`): time grows with their square. Excel
                // splits the table every 8,224 bytes, so this many hold
                // more than an upload may.
                if continues.len() > MAX_SST_PARTS {
                    return Err(unreadable(format!(
                        "its shared string table is split into {} records; \
                         at most {} are read",
                        grouped(continues.len() as u64),
                        grouped(MAX_SST_PARTS as u64)
                    )));
                }
                if !strings_read_cleanly(data, &continues) {
                    return Err(unreadable(format!(
                        "its shared string table at byte {at} is cut short inside a string"
                    )));
                }
            }
            _ => (),
        }
    }
    Ok(sheets)
}

/// Whether calamine reads a shared string table (`parse_sst`,
/// `read_rich_extended_string`, `read_dbcs`) to its end or to an error,
/// rather than indexing past a record: walks the strings as it does,
/// across the CONTINUE records, without building them.
fn strings_read_cleanly(data: &[u8], continues: &[&[u8]]) -> bool {
    let Some(mut data) = data.get(8..) else {
        return true; // calamine: "sst" too short
    };
    let mut continues = continues.iter();
    loop {
        if data.is_empty() {
            match continues.next() {
                Some(next) => data = next,
                None => return true,
            }
            // An empty string (a spec violation calamine accepts).
            if data.is_empty() {
                continue;
            }
        }
        if data.len() < 3 {
            return true; // calamine: "rich extended string" too short
        }
        let mut chars = u16_at(data, 0).unwrap_or(0) as usize;
        let flags = data[2];
        data = &data[3..];
        let mut runs = 0;
        if flags & 0x8 != 0 {
            let Some(n) = u16_at(data, 0) else {
                return false;
            };
            runs = n as usize * 4;
            data = &data[2..];
        }
        let mut extra = 0;
        if flags & 0x4 != 0 {
            let Some(n) = u32_at(data, 0) else {
                return false;
            };
            // calamine reads an i32 and casts it: a negative one is huge.
            extra = n as i32 as usize;
            data = &data[4..];
        }
        let mut wide = flags & 0x1 != 0;
        while chars > 0 {
            let taken = if wide {
                (data.len() / 2).min(chars)
            } else {
                data.len().min(chars)
            };
            data = &data[if wide { 2 * taken } else { taken }..];
            chars -= taken;
            if chars > 0 {
                let Some(next) = continues.next() else {
                    return true; // calamine: end of stream in a string
                };
                // calamine reads the next record's flags byte unchecked.
                let Some((&flags, rest)) = next.split_first() else {
                    return false;
                };
                wide = flags & 0x1 != 0;
                data = rest;
            }
        }
        for mut skip in [runs, extra] {
            while skip > 0 {
                if data.is_empty() {
                    match continues.next() {
                        Some(next) => data = next,
                        None => return true, // calamine: continue record too short
                    }
                }
                let n = skip.min(data.len());
                data = &data[n..];
                skip -= n;
            }
        }
    }
}

/// Whether a BOF record starts a BIFF8 stream (calamine's `parse_bof`);
/// earlier versions write sheet names without the flags byte.
fn is_biff8(bof: &[u8]) -> bool {
    match u16_at(bof, 0) {
        Some(0x0200 | 0x0002 | 0x0007 | 0x0300 | 0x0400 | 0x0500) => false,
        Some(0) => u16_at(bof, 2) != Some(0x1000),
        _ => true,
    }
}

/// A BOUNDSHEET8 record's name (a ShortXLUnicodeString), for messages
/// only: 8-bit names are taken as Latin-1 whatever the code page.
fn sheet_name(data: &[u8], biff8: bool) -> String {
    let Some((&cch, rest)) = data.split_first() else {
        return String::new();
    };
    let cch = cch as usize;
    let (wide, chars) = match (biff8, rest.split_first()) {
        (true, Some((&flags, chars))) => (flags & 1 != 0, chars),
        (true, None) => (false, rest),
        (false, _) => (false, rest),
    };
    let name = if wide {
        let units: Vec<u16> = chars
            .chunks_exact(2)
            .take(cch)
            .map(|c| u16::from_le_bytes([c[0], c[1]]))
            .collect();
        String::from_utf16_lossy(&units)
    } else {
        chars.iter().take(cch).map(|&b| b as char).collect()
    };
    name.replace('\0', "")
}

/// The first and last row and column holding a cell.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Area {
    top: u32,
    bottom: u32,
    left: u32,
    right: u32,
}

impl Area {
    fn add(area: &mut Option<Area>, row: u32, column: u32) {
        let a = area.get_or_insert(Area {
            top: row,
            bottom: row,
            left: column,
            right: column,
        });
        a.top = a.top.min(row);
        a.bottom = a.bottom.max(row);
        a.left = a.left.min(column);
        a.right = a.right.max(column);
    }

    fn cells(&self) -> u64 {
        (u64::from(self.bottom - self.top) + 1) * (u64::from(self.right - self.left) + 1)
    }
}

/// Reads one sheet's substream as calamine's `parse_workbook` does: from
/// its BOF to its EOF, skipping nested substreams (embedded charts), and
/// takes the position of every record calamine makes a cell of, formulas
/// included (calamine builds a grid of them too). A record that calamine
/// rejects for its length is skipped: calamine fails the workbook there.
/// Blank cells (BLANK, MULBLANK) are not cells to calamine.
///
/// Reads at most `budget` bytes; gives the bytes read and the cells the
/// sheet spans.
fn check_sheet(
    name: &str,
    stream: &[u8],
    pos: usize,
    budget: usize,
    formulas: &mut Vec<usize>,
) -> Result<(usize, u64), FileError> {
    let mut area: Option<Area> = None;
    let mut formula_at = (0, 0);
    let mut seen_bof = false;
    let mut depth = 0usize;
    let mut end = pos;
    for (at, typ, data) in records(stream, pos) {
        end = at + 4 + data.len();
        if end - pos > budget {
            return Err(unreadable(format!(
                "its sheets overlap (the sheet {name:?} at byte {pos} runs into bytes \
                 read as another sheet)"
            )));
        }
        if depth > 0 {
            match typ {
                BOF => depth += 1,
                EOF => depth -= 1,
                _ => (),
            }
            continue;
        }
        let position =
            || -> Option<(u32, u32)> { Some((u16_at(data, 0)?.into(), u16_at(data, 2)?.into())) };
        // The shortest record calamine reads a cell from.
        let shortest = match typ {
            NUMBER => 14,
            LABEL | RSTRING => 6,
            BOOL_ERR => 8,
            RK | LABEL_SST => 10,
            _ => usize::MAX,
        };
        match typ {
            BOF if seen_bof => depth += 1,
            BOF => seen_bof = true,
            EOF => break,
            DIMENSIONS => check_dimensions(name, data)?,
            _ if data.len() >= shortest => {
                if let Some((row, column)) = position() {
                    Area::add(&mut area, row, column);
                }
            }
            // The cached text of the formula before it.
            STRING => Area::add(&mut area, formula_at.0, formula_at.1),
            // The cell's cached value, then the formula's length at 20
            // (calamine reads it unchecked) and its tokens.
            FORMULA if data.len() >= 20 => {
                if data.len() < 22 {
                    return Err(cut_short(typ, at, data.len(), 22));
                }
                formulas.push(at + 4 + 20);
                if let Some(p) = position() {
                    formula_at = p;
                    Area::add(&mut area, p.0, p.1);
                }
            }
            // Row, first column, six bytes a cell, last column: calamine
            // takes a cell from every six bytes between the first column
            // and the last two bytes, the first column counting up.
            MUL_RK if data.len() >= 6 => {
                let cells = (data.len() - 6).div_ceil(6) as u32;
                if let (Some((row, first)), true) = (position(), cells > 0) {
                    Area::add(&mut area, row, first);
                    Area::add(&mut area, row, first + cells - 1);
                }
            }
            // calamine reads `count` ranges of 8 bytes without checking
            // they are there.
            MERGE_CELLS => {
                let count = u16_at(data, 0).map_or(u64::MAX, u64::from);
                let needs = count.saturating_mul(8).saturating_add(2);
                if (data.len() as u64) < needs {
                    return Err(cut_short(typ, at, data.len(), needs as usize));
                }
            }
            _ => (),
        }
    }
    let cells = area.map_or(0, |a| a.cells());
    if let Some(a) = area.filter(|_| cells > MAX_CELLS) {
        return Err(FileError::new(
            FileCode::Unreadable,
            format!(
                "the XLS sheet {name:?} spans rows {}–{} and columns {}–{} ({} cells); \
                 at most {} cells are accepted",
                grouped(u64::from(a.top) + 1),
                grouped(u64::from(a.bottom) + 1),
                column_name(a.left),
                column_name(a.right),
                grouped(cells),
                grouped(MAX_CELLS),
            ),
        ));
    }
    Ok((end - pos, cells))
}

/// calamine reserves room for the cells a DIMENSIONS record declares
/// (`parse_dimensions`, then `(last - first + 1)` rows and columns in
/// wrapping `u32` arithmetic, multiplied).
fn check_dimensions(name: &str, data: &[u8]) -> Result<(), FileError> {
    let (first_row, last_row, mut first_col, last_col) = match data.len() {
        10 => (
            u32::from(u16_at(data, 0).unwrap_or(0)),
            u32::from(u16_at(data, 2).unwrap_or(0)),
            u32::from(u16_at(data, 4).unwrap_or(0)),
            u32::from(u16_at(data, 6).unwrap_or(0)),
        ),
        14 | 16 => (
            u32_at(data, 0).unwrap_or(0),
            u32_at(data, 4).unwrap_or(0),
            u32::from(u16_at(data, 8).unwrap_or(0)),
            u32::from(u16_at(data, 10).unwrap_or(0)),
        ),
        // calamine fails the workbook.
        _ => return Ok(()),
    };
    if first_col > 0xFF || last_col < first_col {
        first_col = 0;
    }
    // The record's "last" is one past the last row and column.
    let ((top, left), (bottom, right)) = if last_row >= 1 && last_col >= 1 {
        ((first_row, first_col), (last_row - 1, last_col - 1))
    } else {
        ((first_row, first_col), (first_row, first_col))
    };
    let rows = bottom.wrapping_sub(top).wrapping_add(1);
    let columns = right.wrapping_sub(left).wrapping_add(1);
    let cells = u64::from(rows) * u64::from(columns);
    if cells > MAX_CELLS {
        return Err(FileError::new(
            FileCode::Unreadable,
            format!(
                "the XLS sheet {name:?} declares {} rows and {} columns ({} cells); \
                 at most {} cells are accepted",
                grouped(rows.into()),
                grouped(columns.into()),
                grouped(cells),
                grouped(MAX_CELLS),
            ),
        ));
    }
    Ok(())
}

fn unreadable(what: String) -> FileError {
    FileError::new(
        FileCode::Unreadable,
        format!("the file is not readable as XLS: {what}"),
    )
}

fn cut_short(typ: u16, at: usize, len: usize, needs: usize) -> FileError {
    unreadable(format!(
        "its record 0x{typ:04X} at byte {at} of the workbook has {len} bytes of data, \
         fewer than the {needs} it needs"
    ))
}

/// `4194304` → `4,194,304`.
fn grouped(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, d) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(d);
    }
    out
}

/// A 0-based column as letters: 0 → `A`, 255 → `IV`, 16,383 → `XFD`.
fn column_name(column: u32) -> String {
    let mut n = u64::from(column) + 1;
    let mut letters = Vec::new();
    while n > 0 {
        let rem = ((n - 1) % 26) as u8;
        letters.push(b'A' + rem);
        n = (n - 1) / 26;
    }
    letters.iter().rev().map(|&b| b as char).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(stream: &[u8]) -> Result<(), FileError> {
        prepare(&mut stream.to_vec())
    }

    fn record(typ: u16, data: &[u8]) -> Vec<u8> {
        let mut r = typ.to_le_bytes().to_vec();
        r.extend((data.len() as u16).to_le_bytes());
        r.extend(data);
        r
    }

    fn number(row: u16, col: u16) -> Vec<u8> {
        let mut d = row.to_le_bytes().to_vec();
        d.extend(col.to_le_bytes());
        d.extend([0, 0]);
        d.extend(1.5f64.to_le_bytes());
        record(NUMBER, &d)
    }

    /// A workbook stream: globals naming one sheet "S", then the sheet's
    /// substream of `sheet` records between BOF and EOF.
    fn stream(sheet: &[Vec<u8>]) -> Vec<u8> {
        book(&[sheet])
    }

    /// A workbook stream of sheets "S0", "S1", … each holding its records.
    fn book(sheets: &[&[Vec<u8>]]) -> Vec<u8> {
        let bof = record(BOF, &[0x00, 0x06, 0x05, 0x00]);
        let bound = |pos: usize, i: usize| {
            let mut d = (pos as u32).to_le_bytes().to_vec();
            let name = if sheets.len() == 1 {
                "S".to_string()
            } else {
                format!("S{i}")
            };
            d.extend([0, 0, name.len() as u8, 0]);
            d.extend(name.as_bytes());
            record(BOUND_SHEET, &d)
        };
        let substreams: Vec<Vec<u8>> = sheets
            .iter()
            .map(|records| {
                let mut s = record(BOF, &[0x00, 0x06, 0x10, 0x00]);
                records.iter().for_each(|r| s.extend(r));
                s.extend(record(EOF, &[]));
                s
            })
            .collect();
        let globals_len =
            bof.len() + (0..sheets.len()).map(|i| bound(0, i).len()).sum::<usize>() + 4;
        let mut s = bof.clone();
        let mut pos = globals_len;
        for (i, sub) in substreams.iter().enumerate() {
            s.extend(bound(pos, i));
            pos += sub.len();
        }
        s.extend(record(EOF, &[]));
        substreams.iter().for_each(|sub| s.extend(sub));
        s
    }

    #[test]
    fn a_cell_far_from_the_first_is_refused_with_the_sheets_extent() {
        let err = check(&stream(&[number(0, 0), number(65535, 65535)])).unwrap_err();
        assert_eq!(err.code, FileCode::Unreadable);
        assert_eq!(
            err.message,
            "the XLS sheet \"S\" spans rows 1–65,536 and columns A–CRXP \
             (4,294,967,296 cells); at most 4,194,304 cells are accepted"
        );
        // A full BIFF8 row range at the sheet's width limit is fine below it.
        assert!(check(&stream(&[number(0, 0), number(65535, 63)])).is_ok());
        assert!(check(&stream(&[number(0, 0), number(65535, 64)])).is_err());
    }

    #[test]
    fn cells_of_nested_substreams_and_blanks_are_not_counted() {
        let chart = [
            number(0, 0),
            record(BOF, &[0x00, 0x06, 0x20, 0x00]),
            number(65535, 65535),
            record(EOF, &[]),
            record(0x00BE, &[0xFF, 0xFF, 0, 0, 0, 0, 0xFF, 0xFF]),
        ];
        assert!(check(&stream(&chart)).is_ok());
    }

    #[test]
    fn a_mulrk_counts_every_cell_it_holds() {
        // 65,536 rows by 61 columns is under the limit; a MULRK from
        // column 60 holding ten cells makes it 70 columns.
        let mulrk = |cells: usize| {
            let mut d = 1u16.to_le_bytes().to_vec();
            d.extend(60u16.to_le_bytes());
            d.extend(vec![0; 6 * cells]);
            d.extend((59 + cells as u16).to_le_bytes());
            record(MUL_RK, &d)
        };
        let tall = [number(0, 0), number(65535, 0)];
        assert!(check(&stream(&[tall[0].clone(), tall[1].clone(), mulrk(1)])).is_ok());
        let err = check(&stream(&[tall[0].clone(), tall[1].clone(), mulrk(10)])).unwrap_err();
        assert!(err.message.contains("columns A–BR "), "{}", err.message);
    }

    #[test]
    fn declared_dimensions_are_checked() {
        let mut d = 0u32.to_le_bytes().to_vec();
        d.extend(u32::MAX.to_le_bytes());
        d.extend([0, 0, 0xFF, 0xFF, 0, 0]);
        let err = check(&stream(&[record(DIMENSIONS, &d)])).unwrap_err();
        assert!(err.message.contains("declares"), "{}", err.message);
        let mut ok = 0u32.to_le_bytes().to_vec();
        ok.extend(1000u32.to_le_bytes());
        ok.extend([0, 0, 10, 0, 0, 0]);
        assert!(check(&stream(&[record(DIMENSIONS, &ok)])).is_ok());
    }

    #[test]
    fn hostile_bytes_never_panic() {
        let full = stream(&[number(0, 0), number(3, 3)]);
        assert!(check(&full).is_ok());
        for cut in 0..full.len() {
            let _ = check(&full[..cut]);
        }
        let mut past = full.clone();
        past[12..16].copy_from_slice(&u32::MAX.to_le_bytes());
        assert!(check(&past).unwrap_err().message.contains("past the end"));
    }

    #[test]
    fn all_sheets_together_are_limited_and_read_in_linear_time() {
        // Two sheets of 2,048 × 1,500 cells: each is under the limit.
        let sheet = [number(0, 0), number(2047, 1499)];
        assert!(check(&book(&[&sheet])).is_ok());
        let err = check(&book(&[&sheet, &sheet])).unwrap_err();
        assert!(
            err.message
                .contains("sheets span 6,144,000 cells up to the sheet \"S1\""),
            "{}",
            err.message
        );
        // A second sheet named at the first one's offset: the two read
        // more bytes than the stream has (the reading stays linear).
        let long: Vec<Vec<u8>> = (0..50).map(|row| number(row, 0)).collect();
        let mut twice = book(&[&long, &[number(0, 0)]]);
        assert!(check(&twice).is_ok());
        let first = u32_at(&twice, 12).unwrap();
        let second_at = 8 + 4 + 10 + 4;
        twice[second_at..second_at + 4].copy_from_slice(&first.to_le_bytes());
        let err = check(&twice).unwrap_err();
        assert!(err.message.contains("overlap"), "{}", err.message);
    }

    #[test]
    fn formulas_are_blanked_and_their_values_kept() {
        // A FORMULA at B2 with a cached 7.0 and a reference token cut
        // short (calamine's token parser indexed past it).
        let mut d = [1u16.to_le_bytes(), 1u16.to_le_bytes(), [0, 0]].concat();
        d.extend(7.0f64.to_le_bytes());
        d.extend([0; 6]);
        d.extend(3u16.to_le_bytes());
        d.extend([0x24, 0x01, 0x00]);
        let mut s = stream(&[number(0, 0), record(FORMULA, &d)]);
        let at = s.windows(2).position(|w| w == [0x06, 0x00]).unwrap() + 4 + 20;
        prepare(&mut s).unwrap();
        assert_eq!(&s[at..at + 2], &[0, 0]);
        assert_eq!(&s[at - 14..at - 6], &7.0f64.to_le_bytes());
        // calamine reads the length unchecked.
        d.truncate(21);
        let err = check(&stream(&[record(FORMULA, &d)])).unwrap_err();
        assert!(err.message.contains("fewer than the 22"), "{}", err.message);
    }

    #[test]
    fn a_shared_string_table_calamine_would_index_past_is_refused() {
        let sst = |strings: &[u8]| {
            let mut d = vec![0; 8];
            d.extend(strings);
            let mut s = record(BOF, &[0x00, 0x06, 0x05, 0x00]);
            s.extend(record(SST, &d));
            s.extend(record(EOF, &[]));
            s
        };
        // "ab", then "c" as UTF-16 split over a CONTINUE record.
        let mut fine = sst(&[2, 0, 0, b'a', b'b', 2, 0, 1, b'c', 0]);
        fine.splice(
            fine.len() - 4..fine.len() - 4,
            record(CONTINUE, &[1, b'd', 0]),
        );
        assert!(check(&fine).is_ok());
        // Rich text whose run count is cut off.
        let err = check(&sst(&[1, 0, 0x8, 0])).unwrap_err();
        assert!(
            err.message.contains("shared string table"),
            "{}",
            err.message
        );
        // A string continued in an empty CONTINUE record.
        let mut empty = sst(&[3, 0, 0, b'a']);
        empty.splice(empty.len() - 4..empty.len() - 4, record(CONTINUE, &[]));
        assert!(check(&empty).is_err());
        // A table in more parts than calamine reads in reasonable time.
        let mut parts = sst(&[1, 0, 0]);
        let many: Vec<u8> = (0..=MAX_SST_PARTS)
            .flat_map(|_| record(CONTINUE, &[]))
            .collect();
        parts.splice(parts.len() - 4..parts.len() - 4, many);
        let err = check(&parts).unwrap_err();
        assert!(err.message.contains("32,769 records"), "{}", err.message);
        // A defined name too short for calamine's fixed fields.
        let mut name = record(BOF, &[0x00, 0x06, 0x05, 0x00]);
        name.extend(record(LBL, &[0; 10]));
        assert!(check(&name).is_err());
    }

    #[test]
    fn numbers_and_columns_read_as_people_write_them() {
        assert_eq!(grouped(0), "0");
        assert_eq!(grouped(999), "999");
        assert_eq!(grouped(4_194_304), "4,194,304");
        assert_eq!(column_name(0), "A");
        assert_eq!(column_name(25), "Z");
        assert_eq!(column_name(26), "AA");
        assert_eq!(column_name(255), "IV");
        assert_eq!(column_name(16_383), "XFD");
    }
}
