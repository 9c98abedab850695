//! Lookups of one map under keys that may be equal, end to end: a sketch of 20 rows (the paper
//! artifact's deepest), or of 48 (more slots to choose among than memory names by their branches'
//! tests), each incrementing a counter at an index hashed from the packet, gets a witness whose
//! packet and map entries take its path in the interpreter. (Where each lookup's slot comes from
//! is pinned by `maps`' unit test: once a choice among 2^(n-1) constants, it sent memory to
//! comparisons of symbolic offsets from the sixth row on, and the solver ran out of its 10 s on
//! the artifact's sketches of depth 10 to 20.)

use linerate_bpf::facts::helper;
use linerate_bpf::insn::build::{
    add64, alu64, atomic, call_helper, exit, jmp, jmp_reg, ld_map, ldx, mov64, mov64_reg, stx,
};
use linerate_bpf::insn::{AluOp, AtomicOp, Cond, Instruction, Size};
use linerate_bpf::program::{MapDef, MapType};
use linerate_bpf::Object;
use linerate_smt::{Options, PathChecker, Verdict};
use linerate_vm::{Vm, VmOptions};

use crate::common;

/// A count-min sketch of `rows` rows over the packet's first word, mixed once: row `r` hashes it (shifts and
/// two multiplications, as the artifact's rows do) into one of 4,096 counters of its own (index
/// `r << 12 | hash`) of one array, and increments it atomically; `XDP_PASS` for a packet shorter than 4 bytes (or a failed lookup), else
/// `XDP_DROP`.
fn count_min(rows: i32) -> Object {
    let row_slots = 17; // the row below, in slots (the map load takes two)
    let rows_end = (rows * row_slots) as i16;
    let mut insns: Vec<Instruction> = vec![
        mov64_reg(6, 1),
        ldx(Size::W, 2, 6, 0),
        ldx(Size::W, 3, 6, 4),
        mov64_reg(4, 2),
        add64(4, 4),
        mov64(0, 2),
        jmp_reg(Cond::Gt, 4, 3, rows_end + 7),
        ldx(Size::W, 7, 2, 0),
        mov64_reg(1, 7),
        alu64(AluOp::Mul, 1, 0x2c1b_3c6d),
        alu64(AluOp::Rsh, 1, 15),
        alu64(AluOp::Xor, 7, 1),
    ];
    for row in 0..rows {
        let multiplier = 0x045d_9f3b_i32.wrapping_mul(2 * row + 1) | 1;
        let to_pass = (rows_end as i32 - (row + 1) * row_slots + 4) as i16;
        insns.extend([
            mov64_reg(1, 7),
            alu64(AluOp::Rsh, 1, 15),
            alu64(AluOp::Mul, 1, multiplier),
            alu64(AluOp::Rsh, 1, 12),
            alu64(AluOp::Mul, 1, 0x297a_2d39),
            alu64(AluOp::Rsh, 1, 16),
            alu64(AluOp::And, 1, 0xfff),
            add64(1, row << 12),
            stx(Size::W, 10, -4, 1),
            ld_map(1, 0),
            mov64_reg(2, 10),
            add64(2, -4),
            call_helper(helper::MAP_LOOKUP_ELEM),
            jmp(Cond::Eq, 0, 0, to_pass),
            mov64(1, 1),
            atomic(Size::W, AtomicOp::Add, false, 0, 0, 1),
        ]);
    }
    insns.extend([mov64(0, 1), exit(), mov64(0, 2), exit()]);
    let counters = MapDef::new("counters", MapType::ARRAY, 4, 4, (rows as u32) << 12);
    Object::single("count_min", &insns, vec![counters])
}

#[test]
fn a_deep_count_min_sketch_path_gets_a_witness_that_takes_it() {
    witness_takes_the_path(20);
}

#[test]
fn a_sketch_of_more_rows_than_named_branches_gets_a_witness_that_takes_it() {
    witness_takes_the_path(48);
}

/// The path of a packet through the sketch of `rows` rows, checked: its witness replays it.
fn witness_takes_the_path(rows: i32) {
    let object = count_min(rows);
    let options = VmOptions {
        record_steps: true,
        ..VmOptions::default()
    };
    let packet = [0x5au8; 14];
    let run = Vm::new(&object, options.clone())
        .unwrap()
        .run(0, &packet, &[])
        .unwrap();
    assert_eq!(linerate_vm::xdp_action_name(run.return_value), "XDP_DROP");
    let path = common::decisions(&object, &run.steps);
    assert_eq!(
        path.len(),
        1 + rows as usize,
        "the bounds check and each row's NULL check"
    );

    // Generous for what takes milliseconds: the solver's own time limit, not a timing test.
    let checker_options = Options {
        timeout: Some(std::time::Duration::from_secs(5)),
        ..Options::default()
    };
    let mut checker = PathChecker::new(&object, 0, checker_options).unwrap();
    let witness = match checker.check(&path).unwrap() {
        Verdict::Sat(w) => w,
        other => panic!("the sketch's path is {other:?}"),
    };
    assert_eq!(witness.action, "XDP_DROP");
    let mut vm = Vm::new(&object, options).unwrap();
    vm.seed(&witness.maps).unwrap();
    let replay = vm.run(0, &witness.packet, &witness.meta).unwrap();
    assert_eq!(common::decisions(&object, &replay.steps), path);
}
