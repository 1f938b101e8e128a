//! A CSV upload with `?encoding=` and `?delimiter=` (the first byte picks
//! them): see `read_encoded` in fuzz/src/lib.rs.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let _ = importgate_fuzz::read_encoded(data);
});
