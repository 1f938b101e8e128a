//! What every statement builder shares, whatever the database: quoted
//! identifiers, how multi-row statements are cut, and the time the store
//! writes.

/// Rows per multi-row statement: well under both databases' parameter limits.
pub const BATCH: usize = 500;

/// Quotes an identifier for SQL. Identifiers come only from the checked
/// catalog; quoting them anyway means no name can ever be read as SQL.
pub fn ident(name: &str) -> String {
    format!("\"{}\"", name.replace('"', "\"\""))
}

/// How a multi-row statement of `n` rows is split: parts of `most` rows,
/// then the rest in falling powers of two. Every connection keeps each
/// statement it prepared, so a statement sized to each batch filled the
/// eight connections' caches with up to a hundred shapes apiece: the peak
/// RSS of a 1M-row upsert validation fell from 121 to 113 MB split this
/// way (`bash bench/run.sh --rows 1000000 --modules orders --backends
/// sqlite`). Split this way a statement has at most ten shapes.
pub fn pieces(n: usize, most: usize) -> Vec<std::ops::Range<usize>> {
    let most = most.max(1);
    let mut parts = Vec::new();
    let mut start = 0;
    while n - start >= most {
        parts.push(start..start + most);
        start += most;
    }
    while start < n {
        let size = 1 << (n - start).ilog2();
        parts.push(start..start + size);
        start += size;
    }
    parts
}

/// How many milliseconds [`now`] runs behind the wall clock: zero, except
/// in `importgate demo`'s own process while it writes its ledger as a few
/// days of a team's work (`demo::Days`). Leases and deadlines of work use
/// the wall clock, not this.
static SET_BACK_MS: std::sync::atomic::AtomicI64 = std::sync::atomic::AtomicI64::new(0);

/// Sets [`now`] `ms` milliseconds behind the wall clock (0: on it).
pub fn set_clock_back(ms: i64) {
    SET_BACK_MS.store(ms.max(0), std::sync::atomic::Ordering::Relaxed);
}

/// Moves [`now`] `ms` milliseconds nearer the wall clock, not past it.
pub fn wind_clock_forward(ms: i64) {
    use std::sync::atomic::Ordering::Relaxed;
    let _ = SET_BACK_MS.fetch_update(Relaxed, Relaxed, |back| Some((back - ms).max(0)));
}

/// The current time, to the millisecond (what the ledger keeps).
pub fn now() -> chrono::DateTime<chrono::Utc> {
    let back = SET_BACK_MS.load(std::sync::atomic::Ordering::Relaxed);
    let t = chrono::Utc::now() - chrono::TimeDelta::milliseconds(back);
    chrono::DateTime::from_timestamp_millis(t.timestamp_millis()).unwrap_or(t)
}

#[cfg(test)]
mod tests {
    #[test]
    fn pieces_cover_every_row_once_in_few_shapes() {
        let mut shapes = std::collections::BTreeSet::new();
        for n in 0..2000 {
            let parts = super::pieces(n, 500);
            let mut next = 0;
            for p in &parts {
                assert_eq!(p.start, next, "{n}: {parts:?}");
                assert!(!p.is_empty() && p.len() <= 500);
                next = p.end;
                shapes.insert(p.len());
            }
            assert_eq!(next, n);
        }
        // 500 and the powers of two below it.
        assert_eq!(shapes.len(), 10, "{shapes:?}");
    }
}
