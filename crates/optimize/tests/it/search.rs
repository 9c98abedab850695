//! The search end to end on small programs: it finds K2's kinds of rewrites (a store of an
//! immediate instead of a register, byte-wise packet reads merged into one load, dead code
//! removed), each proven by Z3, and the rewritten program runs as the original in the
//! interpreter; rules learned from it apply to a renamed copy.

use linerate_bpf::contents::{MapMode, MapSeed};
use linerate_bpf::insn::build::{add64, exit, jmp_reg, ldx, mov32, mov64, mov64_reg, stx};
use linerate_bpf::insn::{AluOp, Cond, Instruction, Size};
use linerate_bpf::Object;
use linerate_optimize::goal::Size as SizeGoal;
use linerate_optimize::prove::Z3Prover;
use linerate_optimize::rules::Library;
use linerate_optimize::{apply, search, windows, Prover, Rewrite, SearchOptions};
use linerate_vm::drive::run_packets;
use linerate_vm::VmOptions;

/// r2 = data; r3 = data_end; if data + 14 > data_end: drop; r5 = be16(bytes 12..14) built
/// byte-wise; r6 = r5 (dead); stack[-4] = 7 through w1; return r5 == 0x0800 ? PASS : DROP.
fn program() -> Vec<Instruction> {
    vec![
        ldx(Size::W, 2, 1, 0),
        ldx(Size::W, 3, 1, 4),
        mov64_reg(4, 2),
        add64(4, 14),
        jmp_reg(Cond::Gt, 4, 3, 12),
        ldx(Size::B, 0, 2, 12),
        ldx(Size::B, 5, 2, 13),
        Instruction::Alu {
            wide: false,
            op: AluOp::Lsh,
            dst: 5,
            src: linerate_bpf::insn::Operand::Imm(8),
        },
        Instruction::Alu {
            wide: false,
            op: AluOp::Or,
            dst: 5,
            src: linerate_bpf::insn::Operand::Reg(0),
        },
        mov64_reg(6, 5),
        mov32(1, 7),
        stx(Size::W, 10, -4, 1),
        ldx(Size::W, 7, 10, -4),
        mov64(0, 1),
        jmp_reg(Cond::Eq, 5, 7, 1),
        mov64(0, 2),
        exit(),
        mov64(0, 1),
        exit(),
    ]
}

fn actions(object: &Object, packets: &[Vec<u8>]) -> Vec<u64> {
    run_packets(
        object,
        &MapSeed::new(),
        VmOptions::default(),
        MapMode::Persist,
        0,
        packets,
        &[],
    )
    .expect("runs")
    .outcomes
    .iter()
    .map(|o| o.return_value)
    .collect()
}

#[test]
fn the_search_finds_proven_rewrites_and_rules_carry_them() {
    let object = Object::single("t", &program(), Vec::new());
    let options = SearchOptions {
        max_rounds: Some(4),
        round_steps: 3_000,
        seed: 11,
        ..SearchOptions::default()
    };
    let found = windows(&object, 0, &options).expect("windows");
    let prover = || Box::new(Z3Prover::new(5_000)) as Box<dyn Prover>;
    let searched = search(found, &[], false, &options, &SizeGoal, &prover, &mut |_| {});
    assert!(searched.stats.proven > 0, "{:?}", searched.stats);
    let rewrites: Vec<Rewrite> = searched.rewrites.iter().map(|(r, _)| r.clone()).collect();
    let (optimized, _) = apply(&object, 0, &rewrites).expect("assembles");
    let before = object.programs[0].insns.len();
    let after = optimized.programs[0].insns.len();
    assert!(
        after + 3 <= before,
        "at least the merged read and the dead copy go: {before} -> {after}"
    );
    let mut packets: Vec<Vec<u8>> = (0..64u8)
        .map(|i| {
            let mut p = vec![i; 14 + i as usize];
            p[12] = if i % 2 == 0 { 0x08 } else { i };
            p[13] = if i % 3 == 0 { 0x00 } else { i };
            p
        })
        .collect();
    packets.push(vec![0x08; 14]);
    assert_eq!(actions(&optimized, &packets), actions(&object, &packets));

    // What was proven becomes rules, and the rules alone redo it on the same program.
    let mut library = Library::new();
    for (original, candidate) in &searched.proven {
        library.learn(original, candidate, "test");
    }
    assert!(!library.rules.is_empty());
    let rules = library.compile("test").expect("compiles");
    let again = search(
        windows(&object, 0, &options).expect("windows"),
        &rules,
        true,
        &options,
        &SizeGoal,
        &prover,
        &mut |_| {},
    );
    assert!(again.rules_applied > 0);
    assert_eq!(again.stats.candidates, 0, "no search ran");
    let rewrites: Vec<Rewrite> = again.rewrites.iter().map(|(r, _)| r.clone()).collect();
    let (by_rules, _) = apply(&object, 0, &rewrites).expect("assembles");
    assert!(by_rules.programs[0].insns.len() < before);
    assert_eq!(actions(&by_rules, &packets), actions(&object, &packets));
}
