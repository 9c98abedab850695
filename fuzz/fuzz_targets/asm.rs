//! Assembler and objdump-listing reader on arbitrary text: errors are fine, panics are not.
#![no_main]

use libfuzzer_sys::fuzz_target;
use linerate_bpf::disasm::NoNames;
use linerate_bpf::{asm, objdump};

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let _ = asm::assemble(text, &NoNames);
    let names: &[&str] = &["counters", ".rodata", "map"];
    let _ = asm::assemble(text, names);
    let _ = asm::assemble_program(text, &NoNames);
    if let Ok(obj) = objdump::read_objdump_text(text, "fuzz") {
        for p in &obj.programs {
            let _ = p.decode();
            let _ = linerate_cfg::Cfg::build(p);
        }
    }
});
