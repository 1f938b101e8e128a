//! A byte budget per record, so that memory is bounded by the limits and
//! not by the file: the CSV and ODS parsers hold a whole record before
//! anyone can look at it, so a 200 MB cell
//! would be 200 MB in memory. The reader counts the bytes pulled since the
//! last record ended and fails once a record could not be valid anyway:
//! longer than every cell at its size limit (`max_cell_bytes` ×
//! `max_columns`).

use std::io::Read;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use super::{FileCode, FileError, Options};

/// The most a header row may take: room for every column name there may be.
pub const HEADER_BYTES: u64 = 1 << 20;

/// The most one record may take under these options (at least 1 MiB).
pub fn record_bytes(options: &Options) -> u64 {
    if options.max_cell_bytes == 0 || options.max_columns == 0 {
        return u64::MAX;
    }
    (options.max_cell_bytes as u64)
        .saturating_mul(options.max_columns as u64)
        .max(1 << 20)
}

/// The shared count of one reader's budget.
#[derive(Clone)]
pub struct Budget(Arc<[AtomicU64; 2]>);

impl Budget {
    pub fn new(cap: u64) -> Budget {
        Budget(Arc::new([AtomicU64::new(0), AtomicU64::new(cap)]))
    }

    /// A record ended: the next one starts with the whole budget `cap`.
    pub fn next_record(&self, cap: u64) {
        self.0[0].store(0, Ordering::Relaxed);
        self.0[1].store(cap, Ordering::Relaxed);
    }

    pub fn cap(&self) -> u64 {
        self.0[1].load(Ordering::Relaxed)
    }

    /// Wraps a reader to count against this budget.
    pub fn reader<R: Read>(&self, inner: R) -> Limited<R> {
        Limited {
            inner,
            budget: self.clone(),
        }
    }
}

/// A reader failing with [`std::io::ErrorKind::FileTooLarge`] once the
/// current record is over its budget. Counting happens as the parser pulls
/// bytes, so the limit holds to within the parser's buffer.
pub struct Limited<R> {
    inner: R,
    budget: Budget,
}

impl<R: Read> Read for Limited<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        let used = self.budget.0[0].fetch_add(n as u64, Ordering::Relaxed) + n as u64;
        if used > self.budget.cap() {
            return Err(std::io::Error::new(
                std::io::ErrorKind::FileTooLarge,
                "a record is over its byte budget",
            ));
        }
        Ok(n)
    }
}

/// The file failure for an over-budget record, if `e` is one.
pub fn over_budget(e: &std::io::Error, what: &str, cap: u64) -> Option<FileError> {
    (e.kind() == std::io::ErrorKind::FileTooLarge).then(|| {
        FileError::new(
            FileCode::Unreadable,
            format!(
                "{what} is longer than {cap} bytes, more than all its cells at their size \
                 limit could be"
            ),
        )
    })
}
