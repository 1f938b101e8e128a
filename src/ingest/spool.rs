//! Readers that need `Seek` (zip containers) get the stored file copied to
//! a temporary file first: the file streams from the database to disk, so
//! memory stays flat, and the temporary file is removed when dropped.
//! (JSON keeps the row objects its first pass finds instead:
//! `json_split::Kept`.)

use std::fs::File;
use std::io::{Read, Seek, SeekFrom};

use super::{FileError, read_error};

/// Copies `reader` to an anonymous temporary file, positioned at its start.
pub fn to_file(mut reader: impl Read) -> Result<File, FileError> {
    let mut file = tempfile::tempfile().map_err(read_error)?;
    std::io::copy(&mut reader, &mut file).map_err(read_error)?;
    file.seek(SeekFrom::Start(0)).map_err(read_error)?;
    Ok(file)
}

/// A handle on the same temporary file, at its start, for another pass.
/// Handles share one position: use one at a time.
pub fn reopen(file: &File) -> Result<File, FileError> {
    let mut again = file.try_clone().map_err(read_error)?;
    again.seek(SeekFrom::Start(0)).map_err(read_error)?;
    Ok(again)
}
