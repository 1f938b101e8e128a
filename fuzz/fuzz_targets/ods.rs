//! The ods reader, as a validation job opens an upload: see `read` in
//! fuzz/src/lib.rs.
#![no_main]

use importgate::ingest::Format;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let _ = importgate_fuzz::read(Format::Ods, data);
});
