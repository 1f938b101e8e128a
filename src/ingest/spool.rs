//! Readers that need `Seek` (zip containers) or two passes (JSON, to learn
//! every key before the first row) get the stored file copied to a
//! temporary file, first or during the first pass ([`Tee`]): the file
//! streams from the database to disk, so memory stays flat, and the
//! temporary file is removed when dropped.

use std::fs::File;
use std::io::{Read, Seek, SeekFrom, Write};

use super::{FileError, read_error};

/// Copies `reader` to an anonymous temporary file, positioned at its start.
pub fn to_file(reader: impl Read) -> Result<File, FileError> {
    Tee::new(reader)?.finish()
}

/// A handle on the same temporary file, at its start, for another pass.
/// Handles share one position: use one at a time.
pub fn reopen(file: &File) -> Result<File, FileError> {
    let mut again = file.try_clone().map_err(read_error)?;
    again.seek(SeekFrom::Start(0)).map_err(read_error)?;
    Ok(again)
}

/// A reader that copies what is read from it to a temporary file: a first
/// pass reads the stored file as it is spooled, instead of after.
pub struct Tee<R> {
    from: R,
    to: File,
}

impl<R: Read> Tee<R> {
    pub fn new(from: R) -> Result<Self, FileError> {
        let to = tempfile::tempfile().map_err(read_error)?;
        Ok(Tee { from, to })
    }

    /// The whole file spooled (what the pass left unread copied too),
    /// positioned at its start.
    pub fn finish(mut self) -> Result<File, FileError> {
        std::io::copy(&mut self.from, &mut self.to).map_err(read_error)?;
        self.to.seek(SeekFrom::Start(0)).map_err(read_error)?;
        Ok(self.to)
    }
}

impl<R: Read> Read for Tee<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.from.read(buf)?;
        self.to.write_all(&buf[..n])?;
        Ok(n)
    }
}
