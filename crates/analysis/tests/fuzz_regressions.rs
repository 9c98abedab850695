//! Regressions found by the `commands` fuzz target (`fuzz/fuzz_targets/commands.rs`, see
//! `fuzz/README.md`) and the `linerate-cost` test `arbitrary_programs`.

use linerate_analysis::Analysis;
use linerate_bpf::disasm::NoNames;
use linerate_bpf::program::{Function, Object, Program};
use linerate_cfg::Cfg;

fn object(text: &str) -> Object {
    let program = linerate_bpf::asm::assemble_program(text, &NoNames).expect("assembles");
    Object {
        name: "t".into(),
        programs: vec![Program {
            functions: vec![Function {
                name: "t".into(),
                start: 0,
                len: program.insns.len(),
            }],
            ..program
        }],
        maps: Vec::new(),
        license: None,
    }
}

/// A counter in an irreducible cycle (entered at two blocks, so no natural loop): the fixpoint
/// widened only at natural loop headers and counted the interval up one step per round, 2^64
/// rounds (found as a libFuzzer timeout: a clang object's slots with the final jump retargeted).
#[test]
fn irreducible_cycles_are_widened() {
    let obj = object(
        "
        r2 = *(u32 *)(r1 + 0x0)
        r3 = 0x0
        if r2 == 0x0 goto +0x1
        r3 += 0x1
        r3 += 0x1
        if r3 != 0x0 goto -0x3
        r0 = r3
        exit
        ",
    );
    let cfg = Cfg::build(&obj.programs[0]).unwrap();
    assert!(!cfg.functions()[0].is_reducible());
    let analysis = Analysis::run(&obj, &cfg);
    // The exit is reached, with the counter anywhere.
    let exit = cfg.block_of(6).unwrap();
    assert!(analysis.block_state(exit).is_some());
}
