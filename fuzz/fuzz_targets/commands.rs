//! Every command that reads a program — `inspect`, `cost` under both shipped models, and the
//! analyses (regions, packet lengths, loop bounds) — on arbitrary decodable programs: no panic,
//! and, in the debug-assertion build this target is meant to run in (`-a`), no arithmetic
//! overflow. The bytes become an object through `linerate_conformance::decodable` (first byte: 0
//! a file as users have them, ELF or `llvm-objdump` text; 1 raw instruction slots; otherwise a
//! structured program with maps, functions, loops and calls); the checks are those of the
//! `linerate-cost` test `arbitrary_programs`, in `crates/cost/tests/it/common/commands.rs`.
#![no_main]

use std::sync::OnceLock;

use libfuzzer_sys::fuzz_target;
use linerate_conformance::decodable::object_from_bytes;
use linerate_cost::Model;

#[path = "../../crates/cost/tests/it/common/commands.rs"]
#[allow(dead_code)]
mod commands;

fn models() -> &'static [Model] {
    static MODELS: OnceLock<Vec<Model>> = OnceLock::new();
    MODELS.get_or_init(|| {
        linerate_cost::model::BUILTIN
            .iter()
            .map(|(target, _)| Model::builtin(target).expect("shipped models load"))
            .collect()
    })
}

fuzz_target!(|data: &[u8]| {
    if let Some(object) = object_from_bytes(data) {
        commands::check_object(&object, models());
    }
});
