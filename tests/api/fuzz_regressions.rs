//! The fuzz targets' seeds and every input a fuzz run ever failed on
//! (`tests/fuzz-regressions/<target>/`, see docs/fuzzing.md), replayed in
//! the normal test suite through the same harness the fuzz targets run
//! (`fuzz/src/lib.rs`): each must end in rows or a clean file failure,
//! quickly, without a panic.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use importgate::ingest::PANICKED;

use crate::fuzz_harness::{Run, TARGETS};

/// The fuzz runs stop an input after 10 seconds; a replay, with its
/// unoptimized build, gets the same.
const SLOW: Duration = Duration::from_secs(10);

fn files(dir: &Path) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut files: Vec<PathBuf> = entries
        .map(|e| e.expect("a readable folder").path())
        .filter(|p| p.is_file() && !p.ends_with("README.md"))
        .collect();
    files.sort();
    files
}

/// Runs one input of a target: no panic (including one a reader thread
/// turned into an `unreadable` failure), no hang, and a failure with a
/// code and a message.
fn replay(target: &str, run: Run, path: &Path) -> Result<u64, String> {
    let data = std::fs::read(path).expect("a readable file");
    let start = Instant::now();
    let result = std::panic::catch_unwind(|| run(&data))
        .unwrap_or_else(|_| panic!("{target}: {} panics", path.display()));
    let took = start.elapsed();
    assert!(took < SLOW, "{target}: {} took {took:?}", path.display());
    result.map_err(|e| {
        assert_ne!(
            e.message,
            PANICKED,
            "{target}: {} panics in its reader",
            path.display()
        );
        assert!(!e.message.is_empty(), "{target}: {}", path.display());
        format!("{}: {}", e.code.as_str(), e.message)
    })
}

#[test]
fn seeds_are_read_as_rows() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz/seeds");
    for &(target, run) in TARGETS {
        let seeds = files(&root.join(target));
        assert!(!seeds.is_empty(), "{target} has no seeds");
        for seed in seeds {
            match replay(target, run, &seed) {
                Ok(n) => assert!(n > 0, "{target}: {} gives nothing", seed.display()),
                Err(e) => panic!("{target}: {} is a seed but fails: {e}", seed.display()),
            }
        }
    }
}

#[test]
fn every_input_a_fuzz_run_failed_on_ends_cleanly() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fuzz-regressions");
    for &(target, run) in TARGETS {
        for input in files(&root.join(target)) {
            // Rows or a clean failure are both fine; `replay` checks the rest.
            let _ = replay(target, run, &input);
        }
    }
}
