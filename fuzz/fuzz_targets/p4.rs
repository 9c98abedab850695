//! cargo-fuzz target: any bytes through the whole P4 front end (lex, parse, include, check) must
//! give Ok or Err, never a panic. Run from fuzz/: `cargo fuzz run p4 corpus/p4 ../examples/p4`
//! to start from the shipped programs.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    let _ = linerate_p4::load_str("fuzz.p4", &text);
});
