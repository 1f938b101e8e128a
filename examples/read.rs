//! Times reading a file alone, without validation or a database: the
//! reader's share of an upload (BENCHMARKS.md). The format is the file's
//! extension (csv, json, ndjson, xlsx, xls, ods).
//!
//!   cargo run --release --example read -- FILE [RUNS]

use std::time::Instant;

use importgate::ingest::{self, Format, Options};

#[cfg(feature = "jemalloc")]
#[global_allocator]
static ALLOC: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

fn main() {
    let mut args = std::env::args().skip(1);
    let path = args.next().expect("a file to read");
    let runs: usize = args
        .next()
        .map_or(3, |r| r.parse().expect("a number of runs"));
    let format = match path.rsplit('.').next().unwrap_or("") {
        "csv" => Format::Csv,
        "json" => Format::Json,
        "ndjson" => Format::Ndjson,
        "xlsx" => Format::Xlsx,
        "xls" => Format::Xls,
        "ods" => Format::Ods,
        other => panic!("no reader for .{other}"),
    };
    // The service's defaults (config.rs), and JSON read in one pass as a
    // validation first tries it.
    let options = Options {
        max_cell_bytes: 65_536,
        max_columns: 512,
        one_pass: true,
        ..Options::default()
    };
    for _ in 0..runs {
        let start = Instant::now();
        let file = std::fs::File::open(&path).expect("the file opens");
        let source = ingest::open(format, Box::new(file), &options).expect("the file reads");
        let header = start.elapsed();
        let rows = source.rows.filter(Result::is_ok).count();
        println!(
            "{rows} rows: header after {:.0} ms, every row after {:.0} ms",
            header.as_secs_f64() * 1e3,
            start.elapsed().as_secs_f64() * 1e3
        );
    }
}
