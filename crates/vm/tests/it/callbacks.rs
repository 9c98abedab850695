//! Helpers that call callbacks, pinned by small programs with hand-computed results:
//! `bpf_loop` (count, early stop, refusals, a count of zero, the callback's own frame, nesting,
//! the call depth limit) and `bpf_for_each_map_elem` over an array (visit order, key and value
//! pointers, early stop, writes through the value, a read-only key). Each program writes what it
//! observed into the packet, which the test reads back.

use linerate_bpf::facts::helper::{FOR_EACH_MAP_ELEM, LOOP};
use linerate_bpf::insn::build::*;
use linerate_bpf::insn::{encode_all, AluOp, Cond, Imm64, Instruction, Size};
use linerate_bpf::program::{Function, MapDef, MapType};
use linerate_bpf::{Object, Program};
use linerate_vm::{Vm, VmError, VmOptions};

/// An object whose program is `functions` laid out in order (the first is the entry). In every
/// function, `ld_func(dst, k)` stands for the address of function `k` and is linked here.
fn object(functions: Vec<Vec<Instruction>>, maps: Vec<MapDef>) -> Object {
    let starts: Vec<usize> = functions
        .iter()
        .scan(0, |at, f| {
            let start = *at;
            *at += encode_all(f).len();
            Some(start)
        })
        .collect();
    let mut insns = Vec::new();
    let mut table = Vec::new();
    for (i, body) in functions.iter().enumerate() {
        let mut slot = starts[i];
        let linked: Vec<Instruction> = body
            .iter()
            .map(|insn| {
                let out = match *insn {
                    Instruction::LoadImm64 {
                        dst,
                        imm: Imm64::Pseudo { src, imm, .. },
                    } if src == linerate_bpf::insn::pseudo::FUNC => {
                        ld_func(dst, (starts[imm as usize] as i64 - slot as i64 - 1) as i32)
                    }
                    other => other,
                };
                slot += insn.slots();
                out
            })
            .collect();
        let slots = encode_all(&linked);
        table.push(Function {
            name: format!("f{i}"),
            start: insns.len(),
            len: slots.len(),
        });
        insns.extend(slots);
    }
    let program = Program {
        name: "f0".into(),
        section: "xdp".into(),
        insns,
        functions: table,
        func_info: Vec::new(),
        line_info: Vec::new(),
    };
    Object::with_programs("callbacks", vec![program], maps)
}

/// The little-endian u64 at `at` of `packet`.
fn word(packet: &[u8], at: usize) -> u64 {
    let mut w = [0u8; 8];
    w.copy_from_slice(&packet[at..at + 8]);
    u64::from_le_bytes(w)
}

/// Stores r0 at packet offset 0, the u64 at `fp-8` at 8, and r6 at 16; returns `XDP_PASS`.
fn report() -> Vec<Instruction> {
    vec![
        ldx(Size::W, 7, 9, 0),
        stx(Size::Dw, 7, 0, 0),
        ldx(Size::Dw, 1, 10, -8),
        stx(Size::Dw, 7, 8, 1),
        stx(Size::Dw, 7, 16, 6),
        mov64(0, 2),
        exit(),
    ]
}

/// `bpf_loop(count, add_index, &{limit, sum}, flags)`; the callback adds its index to the sum
/// and stops once the sum exceeds the limit. Returns (bpf_loop's result, sum, caller's r6).
fn run_loop(count: u64, limit: u64, flags: u64) -> (i64, u64, u64) {
    let mut main = vec![
        mov64_reg(9, 1),
        mov64(6, 77),
        st(Size::Dw, 10, -8, 0),
        ld64(1, limit),
        stx(Size::Dw, 10, -16, 1),
        ld64(1, count),
        ld_func(2, 1),
        mov64_reg(3, 10),
        add64(3, -16),
        ld64(4, flags),
        call_helper(LOOP),
    ];
    main.extend(report());
    let add_index = vec![
        // The callback's own frame, and registers the caller keeps.
        st(Size::Dw, 10, -8, 5),
        mov64(6, 1000),
        ldx(Size::Dw, 3, 2, 8),
        add64_reg(3, 1),
        stx(Size::Dw, 2, 8, 3),
        ldx(Size::Dw, 4, 2, 0),
        mov64(0, 0),
        jmp_reg(Cond::Le, 3, 4, 1),
        mov64(0, 1),
        exit(),
    ];
    let mut vm = Vm::new(
        &object(vec![main, add_index], Vec::new()),
        VmOptions::default(),
    )
    .expect("decodes");
    let out = vm.run(0, &[0; 64], &[]).expect("runs");
    assert_eq!(out.return_value, 2);
    (
        word(&out.packet, 0) as i64,
        word(&out.packet, 8),
        word(&out.packet, 16),
    )
}

#[test]
fn bpf_loop_calls_its_callback_count_times() {
    assert_eq!(run_loop(5, u64::MAX, 0), (5, 10, 77));
    assert_eq!(run_loop(1, u64::MAX, 0), (1, 0, 77));
}

#[test]
fn bpf_loop_stops_when_the_callback_returns_1() {
    // Sums 0, 1, 3, 6, 10, 15, 21: index 6 passes 20, the seventh call.
    assert_eq!(run_loop(100, 20, 0), (7, 21, 77));
}

#[test]
fn bpf_loop_of_zero_calls_nothing() {
    assert_eq!(run_loop(0, 0, 0), (0, 0, 77));
}

#[test]
fn bpf_loop_refuses_flags_and_counts_above_2_pow_23() {
    assert_eq!(run_loop(5, u64::MAX, 1), (-22, 0, 77));
    assert_eq!(run_loop((1 << 23) + 1, 0, 0), (-7, 0, 77));
    // Flags are checked first.
    assert_eq!(run_loop((1 << 23) + 1, 0, 2), (-22, 0, 77));
    // 2^23 itself is allowed: index 1 makes the sum exceed 0.
    assert_eq!(run_loop(1 << 23, 0, 0), (2, 1, 77));
}

#[test]
fn bpf_loop_count_is_32_bits() {
    assert_eq!(run_loop((1 << 32) + 3, u64::MAX, 0), (3, 3, 77));
}

#[test]
fn nested_bpf_loops_run_every_inner_callback() {
    let mut main = vec![
        mov64_reg(9, 1),
        st(Size::Dw, 10, -8, 0),
        mov64(1, 4),
        ld_func(2, 1),
        mov64_reg(3, 10),
        add64(3, -8),
        mov64(4, 0),
        call_helper(LOOP),
    ];
    main.extend(report());
    let outer = vec![
        mov64_reg(3, 2),
        mov64(1, 3),
        ld_func(2, 2),
        mov64(4, 0),
        call_helper(LOOP),
        mov64(0, 0),
        exit(),
    ];
    let inner = vec![
        ldx(Size::Dw, 3, 2, 0),
        add64(3, 1),
        stx(Size::Dw, 2, 0, 3),
        mov64(0, 0),
        exit(),
    ];
    let mut vm = Vm::new(
        &object(vec![main, outer, inner], Vec::new()),
        VmOptions::default(),
    )
    .expect("decodes");
    let out = vm.run(0, &[0; 64], &[]).expect("runs");
    assert_eq!((word(&out.packet, 0), word(&out.packet, 8)), (4, 12));
}

#[test]
fn a_callback_calling_itself_hits_the_call_depth_limit() {
    let main = vec![
        mov64(1, 1),
        ld_func(2, 1),
        mov64(3, 0),
        mov64(4, 0),
        call_helper(LOOP),
        exit(),
    ];
    let again = vec![
        mov64(1, 1),
        ld_func(2, 1),
        mov64(3, 0),
        mov64(4, 0),
        call_helper(LOOP),
        mov64(0, 0),
        exit(),
    ];
    let mut vm =
        Vm::new(&object(vec![main, again], Vec::new()), VmOptions::default()).expect("decodes");
    let err = vm.run(0, &[0; 64], &[]).expect_err("too deep");
    assert!(
        err.to_string().contains("call stack deeper than 8 frames"),
        "{err}"
    );
}

#[test]
fn a_callback_argument_that_is_no_function_is_refused() {
    let main = vec![
        mov64(1, 1),
        mov64(2, 3),
        mov64(3, 0),
        mov64(4, 0),
        call_helper(LOOP),
        exit(),
    ];
    let mut vm = Vm::new(&object(vec![main], Vec::new()), VmOptions::default()).expect("decodes");
    let err = vm.run(0, &[0; 64], &[]).expect_err("no callback");
    assert!(matches!(err, VmError::BadHelperArgument { .. }), "{err}");
}

/// `bpf_for_each_map_elem(array, visit, &acc, flags)` over an array holding 10, 20, 30, 40; the
/// callback adds 1 to each value it visits, adds the new value plus 1000 × key to `acc`, and
/// stops at `stop_key`. Returns (the helper's result, acc, the array afterwards).
fn run_for_each(stop_key: i32, flags: i32) -> (i64, u64, Vec<u64>) {
    let array = MapDef::new("values", MapType::ARRAY, 4, 8, 4);
    let mut main = vec![
        mov64_reg(9, 1),
        st(Size::Dw, 10, -8, 0),
        ld_map(1, 0),
        ld_func(2, 1),
        mov64_reg(3, 10),
        add64(3, -8),
        mov64(4, flags),
        call_helper(FOR_EACH_MAP_ELEM),
    ];
    main.extend(report());
    let visit = vec![
        ldx(Size::W, 5, 2, 0),
        ldx(Size::Dw, 6, 3, 0),
        add64(6, 1),
        stx(Size::Dw, 3, 0, 6),
        ldx(Size::Dw, 7, 4, 0),
        add64_reg(7, 6),
        mov64_reg(8, 5),
        alu64(AluOp::Mul, 8, 1000),
        add64_reg(7, 8),
        stx(Size::Dw, 4, 0, 7),
        mov64(0, 0),
        jmp(Cond::Ne, 5, stop_key, 1),
        mov64(0, 1),
        exit(),
    ];
    let mut vm = Vm::new(
        &object(vec![main, visit], vec![array]),
        VmOptions::default(),
    )
    .expect("decodes");
    for (key, value) in [10u64, 20, 30, 40].iter().enumerate() {
        assert_eq!(
            vm.maps[0].update(&(key as u32).to_le_bytes(), &value.to_le_bytes(), 0),
            0
        );
    }
    let out = vm.run(0, &[0; 64], &[]).expect("runs");
    let values = (0..4).map(|slot| word(vm.maps[0].value(slot), 0)).collect();
    (word(&out.packet, 0) as i64, word(&out.packet, 8), values)
}

#[test]
fn for_each_visits_array_elements_in_order_until_stopped() {
    assert_eq!(
        run_for_each(2, 0),
        (3, 11 + 21 + 1000 + 31 + 2000, vec![11, 21, 31, 40])
    );
    assert_eq!(
        run_for_each(-1, 0),
        (4, 11 + 21 + 31 + 41 + 6000, vec![11, 21, 31, 41])
    );
}

#[test]
fn for_each_refuses_flags() {
    assert_eq!(run_for_each(2, 1), (-22, 0, vec![10, 20, 30, 40]));
}

#[test]
fn for_each_keys_are_read_only_and_maps_without_a_walk_are_refused() {
    let array = MapDef::new("values", MapType::ARRAY, 4, 8, 4);
    let main = |map_type: MapType| {
        (
            vec![
                ld_map(1, 0),
                ld_func(2, 1),
                mov64(3, 0),
                mov64(4, 0),
                call_helper(FOR_EACH_MAP_ELEM),
                exit(),
            ],
            MapDef::new("values", map_type, 4, 8, 4),
        )
    };
    let write_key = vec![st(Size::W, 2, 0, 9), mov64(0, 0), exit()];
    let (insns, _) = main(MapType::ARRAY);
    let mut vm = Vm::new(
        &object(vec![insns, write_key.clone()], vec![array]),
        VmOptions::default(),
    )
    .expect("decodes");
    let err = vm.run(0, &[0; 64], &[]).expect_err("read-only key");
    assert!(err.to_string().contains("read-only"), "{err}");
    // An empty hash map is walked: no call, 0 visited.
    let (insns, hash) = main(MapType::HASH);
    let mut vm = Vm::new(
        &object(vec![insns, write_key.clone()], vec![hash]),
        VmOptions::default(),
    )
    .expect("decodes");
    assert_eq!(vm.run(0, &[0; 64], &[]).expect("walks").return_value, 0);
    // A device hash map has no walk in the kernel (no `map_for_each_callback`).
    let (insns, devices) = main(MapType::DEVMAP_HASH);
    let mut vm = Vm::new(
        &object(vec![insns, write_key], vec![devices]),
        VmOptions::default(),
    )
    .expect("decodes");
    let err = vm.run(0, &[0; 64], &[]).expect_err("device map");
    assert!(
        err.to_string().contains("only array and hash maps"),
        "{err}"
    );
}
