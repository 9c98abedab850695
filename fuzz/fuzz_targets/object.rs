//! ELF object reader: `read_object` must never panic; every program it returns that decodes must
//! survive disassemble → assemble with identical slots, and building its CFG must not panic.
//!
//! The round trip is only asserted for objects whose names the llvm-objdump syntax can carry
//! (see `printable_names`): a fuzzed ELF can name a function `` (empty), `a;b` or `x<y>`, which no
//! listing can express. clang objects always pass this filter (C identifiers, `SEC()` strings).
#![no_main]

use libfuzzer_sys::fuzz_target;
use linerate_bpf::{asm, disasm, object, Object};

fuzz_target!(|data: &[u8]| {
    let Ok(obj) = object::read_object(data, "fuzz") else {
        return;
    };
    let names_ok = printable_names(&obj);
    for p in &obj.programs {
        if p.decode().is_ok() {
            // (Undecodable slots print as `<unknown>`, which the assembler rightly rejects.)
            let text = disasm::disassemble(p, &obj.maps);
            match asm::assemble_program(&text, &obj.maps) {
                Ok(back) => assert!(
                    back.insns == p.insns || !names_ok,
                    "slots differ after disassemble/assemble\n{text}"
                ),
                Err(e) => assert!(!names_ok, "assemble(disassemble(p)) failed: {e}\n{text}"),
            }
        }
        let _ = linerate_cfg::Cfg::build(p);
    }
});

/// Whether every section and function name can be written in a listing: section names on one
/// line without surrounding blanks; function names inside `<...>:` (non-empty, no `<`, `>`, tab
/// or comment starter, no surrounding blanks). Map names need no filter: the disassembler prints
/// the ones it cannot write as `map[index]`.
fn printable_names(obj: &Object) -> bool {
    let line = |s: &str| !s.contains(['\n', '\r']) && s.trim() == s;
    let sections = obj.programs.iter().all(|p| line(&p.section));
    let functions = obj.programs.iter().flat_map(|p| &p.functions).all(|f| {
        !f.name.is_empty()
            && line(&f.name)
            && !f.name.contains(['<', '>', '\t', ';', '#'])
            && !f.name.contains("//")
    });
    sections && functions
}
