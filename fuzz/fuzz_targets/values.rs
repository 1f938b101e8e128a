//! Every type rule of src/validate/value.rs on arbitrary cells: see
//! `values` in fuzz/src/lib.rs.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let _ = importgate_fuzz::values(data);
});
