//! The sheets of a workbook (API.md section 16), in the file's order: an
//! XLSX's or ODS's sheet names, or the members of a JSON object whose
//! values are arrays. Each may become a part of a workbook job; a part is
//! then read as any file is, its sheet (or member) named in its options.

use std::io::{BufReader, Read};

use super::{FileCode, FileError, Format, Options, budget, json, json_split, ods, xlsx};

/// The most parts a workbook job has (one per module of the catalog).
pub const MAX_PARTS: usize = 26;

/// The sheets (or array members) of a workbook, whole, in its order.
pub fn names(
    format: Format,
    reader: Box<dyn Read + Send>,
    options: &Options,
) -> Result<Vec<String>, FileError> {
    match format {
        Format::Xlsx => xlsx::sheet_names(reader),
        Format::Ods => ods::sheet_names(reader, options),
        Format::Json => {
            let mut reader = BufReader::with_capacity(1 << 16, reader);
            json::skip_bom(&mut reader)?;
            json_split::array_members(reader, budget::record_bytes(options))
        }
        other => Err(FileError::new(
            FileCode::Unreadable,
            format!(
                "a workbook is an XLSX or ODS spreadsheet, or a JSON object of arrays; \
                 this file is {}",
                other.as_str()
            ),
        )),
    }
}
