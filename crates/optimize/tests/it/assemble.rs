//! Putting rewritten windows back: removed slots dropped and every jump re-aimed, checked by
//! running the rewritten program in the interpreter against the original.

use linerate_bpf::contents::{MapMode, MapSeed};
use linerate_bpf::insn::build::{add64, exit, jmp, jmp_reg, ldx, mov64, mov64_reg};
use linerate_bpf::insn::{Cond, Size};
use linerate_bpf::Object;
use linerate_optimize::{apply, Rewrite};
use linerate_vm::drive::run_packets;
use linerate_vm::VmOptions;

#[test]
fn removed_slots_keep_jumps_on_their_targets() {
    // r2 = data; r3 = data_end; r4 = r2 + 14; if r4 > r3 goto drop;
    // r0 = 1; r0 = 1 (redundant); r0 = r0; r5 = byte 12; if r5 == 8 goto pass; drop: r0 = 1; exit; pass: r0 = 2; exit
    let insns = [
        ldx(Size::W, 2, 1, 0),
        ldx(Size::W, 3, 1, 4),
        mov64_reg(4, 2),
        add64(4, 14),
        jmp_reg(Cond::Gt, 4, 3, 5),
        mov64(0, 1),
        mov64(0, 1),
        mov64_reg(0, 0),
        ldx(Size::B, 5, 2, 12),
        jmp(Cond::Eq, 5, 8, 2),
        mov64(0, 1),
        exit(),
        mov64(0, 2),
        exit(),
    ];
    let object = Object::single("t", &insns, Vec::new());
    let rewrite = Rewrite {
        start: 5,
        original: insns[5..9].to_vec(),
        replacement: vec![None, None, Some(mov64(0, 1)), Some(ldx(Size::B, 5, 2, 12))],
    };
    let (rewritten, assembled) = apply(&object, 0, &[rewrite]).expect("assembles");
    assert_eq!(rewritten.programs[0].insns.len(), insns.len() - 2);
    assert_eq!(assembled.slot_map[5], None);
    assert_eq!(assembled.slot_map[7], Some(5));
    assert_eq!(assembled.slot_map[13], Some(11));
    let packets: Vec<Vec<u8>> = vec![
        vec![0; 14],
        [vec![0; 12], vec![8, 0]].concat(),
        [vec![0; 12], vec![6, 0, 1]].concat(),
    ];
    let run = |o: &Object| {
        run_packets(
            o,
            &MapSeed::new(),
            VmOptions::default(),
            MapMode::Persist,
            0,
            &packets,
            &[],
        )
        .expect("runs")
        .outcomes
        .iter()
        .map(|r| r.return_value)
        .collect::<Vec<_>>()
    };
    assert_eq!(run(&object), vec![1, 2, 1]);
    assert_eq!(run(&rewritten), run(&object));
}

#[test]
fn a_rewrite_that_does_not_match_the_program_is_refused() {
    let insns = [mov64(0, 1), mov64(0, 2), exit()];
    let object = Object::single("t", &insns, Vec::new());
    let rewrite = Rewrite {
        start: 0,
        original: vec![mov64(0, 3)],
        replacement: vec![None],
    };
    assert!(apply(&object, 0, &[rewrite]).is_err());
}
