//! The passes on every example object the core can run: they run, keep every jump inside the
//! program, and remove what the report lists (run with `--nocapture` for the table).

use std::path::Path;

use linerate_bpf::object::read_object_file;
use linerate_hxdp::passes::{run_passes, PassOptions, PASS_NAMES};
use linerate_hxdp::program::Lowered;
use linerate_hxdp::source::SourceFacts;

#[test]
fn passes_run_on_every_runnable_example() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples");
    let mut paths: Vec<_> = std::fs::read_dir(&dir)
        .expect("examples directory")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|e| e == "o"))
        .collect();
    paths.sort();
    println!(
        "{:<28} {:>6} {:>6} {:>7} {:>8} {:>9} {:>13} {:>5}",
        "program", "insns", "after", "bounds", "zeroing", "six_byte", "three_operand", "exit"
    );
    let mut compiled = 0;
    let mut total_removed = 0;
    for path in &paths {
        let Ok(object) = read_object_file(path) else {
            continue;
        };
        for program in 0..object.programs.len() {
            let Ok(mut lowered) = Lowered::new(&object, program) else {
                continue;
            };
            let before = lowered.len();
            let facts = SourceFacts::compute(&object, program)
                .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
            let removed = run_passes(&mut lowered, &facts, &PassOptions::default());
            let sum: usize = removed.values().sum();
            assert_eq!(
                lowered.len() + sum,
                before,
                "{}: the counts add up to what went",
                path.display()
            );
            for (i, l) in lowered.insns.iter().enumerate() {
                if let Some(t) = l.target {
                    assert!(t < lowered.len(), "{}: insn {i} jumps out", path.display());
                }
            }
            assert!(
                lowered.insns.iter().any(|l| l.insn.is_exit()),
                "{}: an exit stays",
                path.display()
            );
            compiled += 1;
            total_removed += sum;
            let name = format!("{}/{}", object.name, object.programs[program].name);
            let counts: Vec<usize> = PASS_NAMES.iter().map(|n| removed[n]).collect();
            println!(
                "{:<28} {:>6} {:>6} {:>7} {:>8} {:>9} {:>13} {:>5}",
                name,
                before,
                lowered.len(),
                counts[0],
                counts[1],
                counts[2],
                counts[3],
                counts[4]
            );
        }
    }
    println!("{compiled} programs, {total_removed} instructions removed");
    assert!(compiled > 10, "most examples are runnable");
    assert!(total_removed > 0);
}

mod small {
    //! Each pass on small hand-written programs: what it removes, and what it must keep.

    use linerate_bpf::insn::build::{
        add64, alu64, call_helper, exit, jmp, jmp_reg, ldx, mov32_reg, mov64, mov64_reg, st, stx,
    };
    use linerate_bpf::insn::{AluOp, Cond, Instruction, Operand, Size};
    use linerate_bpf::Object;
    use linerate_hxdp::isa::HxInsn;
    use linerate_hxdp::passes::{run_passes, PassOptions, Removed};
    use linerate_hxdp::program::Lowered;

    fn run(insns: &[Instruction], options: PassOptions) -> (Lowered, Removed) {
        let object = Object::single("t", insns, Vec::new());
        let mut lowered = Lowered::new(&object, 0).expect("lowers");
        let facts =
            linerate_hxdp::source::SourceFacts::compute(&object, 0).expect("the analysis runs");
        let removed = run_passes(&mut lowered, &facts, &options);
        (lowered, removed)
    }

    fn only(pass: &str) -> PassOptions {
        let mut o = PassOptions::none();
        o.set(pass, true);
        o
    }

    fn ebpf(l: &Lowered) -> Vec<HxInsn> {
        l.insns.iter().map(|i| i.insn).collect()
    }

    /// `data + 34 > data_end` checked, then the pass side reads byte `read_at`; the fail side
    /// returns `fail_action`.
    fn checked_read(read_at: i16, fail_action: i32) -> Vec<Instruction> {
        checked_read_of(34, read_at, fail_action)
    }

    /// [`checked_read`] with the check for `needed` bytes.
    fn checked_read_of(needed: i32, read_at: i16, fail_action: i32) -> Vec<Instruction> {
        vec![
            ldx(Size::W, 2, 1, 0),
            ldx(Size::W, 3, 1, 4),
            mov64_reg(4, 2),
            add64(4, needed),
            jmp_reg(Cond::Gt, 4, 3, 2),
            ldx(Size::B, 0, 2, read_at),
            exit(),
            mov64(0, fail_action),
            exit(),
        ]
    }

    #[test]
    fn bounds_check_guarding_a_drop_goes_with_its_pointer() {
        let (l, removed) = run(&checked_read(33, 1), only("bounds"));
        // The jump, `r4 = r2; r4 += 34` and the load of data_end.
        assert_eq!(removed["bounds"], 4);
        assert_eq!(l.len(), 5);
        assert!(!ebpf(&l)
            .iter()
            .any(|i| matches!(i, HxInsn::Ebpf(Instruction::Jump { .. }))));
    }

    #[test]
    fn bounds_check_whose_failing_side_passes_stays() {
        let (l, removed) = run(&checked_read(33, 2), only("bounds"));
        assert_eq!(removed["bounds"], 0);
        assert_eq!(l.len(), 9);
    }

    #[test]
    fn bounds_check_for_an_ethernet_header_goes_whatever_its_sides() {
        // No frame shorter than 14 bytes reaches the program: the check never fails.
        let (_, removed) = run(&checked_read_of(14, 0, 2), only("bounds"));
        assert_eq!(removed["bounds"], 4);
        let (_, removed) = run(&checked_read_of(15, 0, 2), only("bounds"));
        assert_eq!(removed["bounds"], 0);
    }

    #[test]
    fn bounds_check_not_covered_by_an_access_stays() {
        // Byte 32 is inside a 33-byte packet the check would have dropped.
        let (_, removed) = run(&checked_read(32, 1), only("bounds"));
        assert_eq!(removed["bounds"], 0);
    }

    #[test]
    fn bounds_check_with_a_helper_call_before_the_access_stays() {
        let mut insns = checked_read(33, 1);
        insns.insert(
            5,
            Instruction::Call(linerate_bpf::insn::CallTarget::Helper(5)),
        );
        insns[4] = jmp_reg(Cond::Gt, 4, 3, 3);
        let (_, removed) = run(&insns, only("bounds"));
        assert_eq!(removed["bounds"], 0);
    }

    #[test]
    fn a_constant_goes_into_its_store() {
        let insns = [
            mov64(2, 5),
            stx(Size::W, 10, -4, 2),
            ldx(Size::W, 0, 10, -4),
            exit(),
        ];
        let (l, removed) = run(&insns, only("constant_store"));
        assert_eq!(removed["constant_store"], 1);
        assert_eq!(
            ebpf(&l)[0],
            HxInsn::Ebpf(st(Size::W, 10, -4, 5)),
            "the store holds the constant"
        );
    }

    #[test]
    fn a_constant_read_again_keeps_its_move() {
        let insns = [
            mov64(2, 5),
            stx(Size::W, 10, -4, 2),
            mov64_reg(0, 2),
            exit(),
        ];
        let (l, removed) = run(&insns, only("constant_store"));
        assert_eq!(removed["constant_store"], 0);
        assert_eq!(ebpf(&l)[1], HxInsn::Ebpf(st(Size::W, 10, -4, 5)));
        // A 32-bit move of -1 zero-extends; an 8-byte store of -1 would sign-extend.
        let minus_one = Instruction::Alu {
            wide: false,
            op: AluOp::Mov,
            dst: 2,
            src: linerate_bpf::insn::Operand::Imm(-1),
        };
        let insns = [minus_one, stx(Size::Dw, 10, -8, 2), mov64(0, 2), exit()];
        let (l, _) = run(&insns, only("constant_store"));
        assert_eq!(ebpf(&l)[1], HxInsn::Ebpf(stx(Size::Dw, 10, -8, 2)));
    }

    #[test]
    fn zero_store_to_a_fresh_slot_goes() {
        let insns = [st(Size::Dw, 10, -8, 0), ldx(Size::Dw, 0, 10, -8), exit()];
        let (l, removed) = run(&insns, only("zeroing"));
        assert_eq!(removed["zeroing"], 1);
        assert_eq!(l.len(), 2);
    }

    #[test]
    fn zero_store_after_a_write_on_one_path_stays() {
        let insns = [
            ldx(Size::W, 3, 1, 12),
            jmp(Cond::Eq, 3, 0, 1),
            st(Size::Dw, 10, -8, 7),
            st(Size::Dw, 10, -8, 0),
            ldx(Size::Dw, 0, 10, -8),
            exit(),
        ];
        let (l, removed) = run(&insns, only("zeroing"));
        assert_eq!(removed["zeroing"], 0);
        assert_eq!(l.len(), 6);
    }

    #[test]
    fn zero_moves_go_only_when_redundant() {
        // r6 was never written: it is zero already.
        let (_, removed) = run(&[mov64(6, 0), mov64_reg(0, 6), exit()], only("zeroing"));
        assert_eq!(removed["zeroing"], 1);
        // r0 = 2 then r0 = 0, read by the exit: the move is needed.
        let (_, removed) = run(&[mov64(0, 2), mov64(0, 0), exit()], only("zeroing"));
        assert_eq!(removed["zeroing"], 0);
    }

    /// Copies packet bytes 6..12 to the stack at -8 in a 4-byte and a 2-byte piece, after a
    /// bounds check; `tail` follows the copy.
    fn six_byte_copy(tail: &[Instruction]) -> Vec<Instruction> {
        let mut insns = vec![
            ldx(Size::W, 2, 1, 0),
            ldx(Size::W, 3, 1, 4),
            mov64_reg(4, 2),
            add64(4, 12),
            jmp_reg(Cond::Gt, 4, 3, (4 + tail.len()) as i16),
            ldx(Size::W, 5, 2, 6),
            stx(Size::W, 10, -8, 5),
            ldx(Size::H, 5, 2, 10),
            stx(Size::H, 10, -4, 5),
        ];
        insns.extend_from_slice(tail);
        insns.extend([mov64(0, 1), exit()]);
        insns
    }

    #[test]
    fn six_byte_copy_fuses() {
        let (l, removed) = run(&six_byte_copy(&[mov64(0, 2), exit()]), only("six_byte"));
        assert_eq!(removed["six_byte"], 2);
        let insns = ebpf(&l);
        assert_eq!(
            insns[5],
            HxInsn::Load48 {
                dst: 5,
                src: 2,
                off: 6
            }
        );
        assert_eq!(
            insns[6],
            HxInsn::Store48 {
                dst: 10,
                off: -8,
                src: 5
            }
        );
    }

    #[test]
    fn six_byte_copy_whose_register_is_read_later_stays() {
        let (_, removed) = run(&six_byte_copy(&[mov64_reg(0, 5), exit()]), only("six_byte"));
        assert_eq!(removed["six_byte"], 0);
    }

    #[test]
    fn three_operand_fuses_a_move_and_its_operation() {
        let (l, removed) = run(
            &[mov64_reg(2, 1), add64(2, 8), mov64_reg(0, 2), exit()],
            only("three_operand"),
        );
        assert_eq!(removed["three_operand"], 1);
        assert_eq!(
            ebpf(&l)[0],
            HxInsn::Alu3 {
                wide: true,
                op: AluOp::Add,
                dst: 2,
                src: 1,
                imm: 8
            }
        );
    }

    #[test]
    fn three_operand_keeps_a_move_read_in_between_or_without_an_encoding() {
        let read_between = [mov64_reg(2, 1), mov64_reg(0, 2), add64(2, 8), exit()];
        assert_eq!(
            run(&read_between, only("three_operand")).1["three_operand"],
            0
        );
        let multiply = [
            mov64_reg(2, 1),
            alu64(AluOp::Mul, 2, 3),
            mov64_reg(0, 2),
            exit(),
        ];
        assert_eq!(run(&multiply, only("three_operand")).1["three_operand"], 0);
    }

    #[test]
    fn three_operand_fuses_32_bit_forms_where_they_agree() {
        let alu32 = |op, dst, imm| Instruction::Alu {
            wide: false,
            op,
            dst,
            src: Operand::Imm(imm),
        };
        let fused = |insns: &[Instruction]| {
            let (l, removed) = run(insns, only("three_operand"));
            (removed["three_operand"], ebpf(&l)[0])
        };
        // A 32-bit move and a 32-bit shift: the 32-bit form. A 32-bit AND with a non-negative
        // mask: the 64-bit AND, which agrees.
        for (op, imm, wide_form) in [(AluOp::Rsh, 13, false), (AluOp::And, 0xf, true)] {
            let (n, first) = fused(&[mov32_reg(2, 1), alu32(op, 2, imm), mov64_reg(0, 2), exit()]);
            assert_eq!(n, 1);
            assert_eq!(
                first,
                HxInsn::Alu3 {
                    wide: wide_form,
                    op,
                    dst: 2,
                    src: 1,
                    imm
                }
            );
        }
        // A negative mask keeps the upper half in the 64-bit AND: not fused.
        let negative = [
            mov32_reg(2, 1),
            alu32(AluOp::And, 2, -16),
            mov64_reg(0, 2),
            exit(),
        ];
        assert_eq!(fused(&negative).0, 0);
        // A 32-bit move followed by a 64-bit operation: the operation sees the cleared half.
        let widened = [mov32_reg(2, 1), add64(2, 1), mov64_reg(0, 2), exit()];
        assert_eq!(fused(&widened).0, 0);
    }

    #[test]
    fn a_helper_reads_only_its_arguments() {
        // A MAC swap through r3 and r4 right before bpf_redirect(ifindex, flags): the helper
        // takes r1 and r2 only, so the swap's registers are dead and it fuses.
        let swap_then_redirect = [
            ldx(Size::W, 1, 1, 0),
            ldx(Size::W, 3, 1, 6),
            ldx(Size::H, 4, 1, 10),
            ldx(Size::W, 5, 1, 0),
            ldx(Size::H, 2, 1, 4),
            stx(Size::W, 1, 0, 3),
            stx(Size::H, 1, 4, 4),
            stx(Size::W, 1, 6, 5),
            stx(Size::H, 1, 10, 2),
            mov64(1, 1),
            mov64(2, 0),
            call_helper(linerate_bpf::helpers::id::REDIRECT),
            exit(),
        ];
        let (_, removed) = run(&swap_then_redirect, only("six_byte"));
        assert_eq!(removed["six_byte"], 4, "two copies of two pieces each fuse");
    }

    #[test]
    fn a_reload_of_a_spilled_register_reads_the_register() {
        // r2 (a byte: it fits any slot) spilled, a branch, reloaded into r3 and into r2.
        let spill = |reload_into: u8, between: Instruction| {
            vec![
                ldx(Size::W, 6, 1, 0),
                ldx(Size::B, 2, 6, 0),
                stx(Size::W, 10, -8, 2),
                jmp(Cond::Eq, 2, 17, 2),
                between,
                ldx(Size::W, reload_into, 10, -8),
                mov64_reg(0, reload_into),
                exit(),
            ]
        };
        let nothing = mov64(4, 1);
        let (l, removed) = run(&spill(3, nothing), only("reload"));
        assert_eq!(removed["reload"], 0);
        assert_eq!(ebpf(&l)[5], HxInsn::Ebpf(mov64_reg(3, 2)), "{:?}", ebpf(&l));
        // Into its own register, the reload is nothing at all.
        let (l, removed) = run(&spill(2, nothing), only("reload"));
        assert_eq!(removed["reload"], 1);
        assert_eq!(l.len(), 7);
        // A helper in between may write the slot through a pointer: the load stays.
        let helper = call_helper(linerate_bpf::helpers::id::KTIME_GET_NS);
        let (l, _) = run(&spill(3, helper), only("reload"));
        assert!(matches!(
            ebpf(&l)[5],
            HxInsn::Ebpf(Instruction::Load { .. })
        ));
        // So does one whose register changed since the store.
        let (l, _) = run(&spill(3, mov64(2, 9)), only("reload"));
        assert!(matches!(
            ebpf(&l)[5],
            HxInsn::Ebpf(Instruction::Load { .. })
        ));
    }

    #[test]
    fn exit_takes_its_action() {
        let (l, removed) = run(&[mov64(0, 2), exit()], only("exit"));
        assert_eq!(removed["exit"], 1);
        assert_eq!(ebpf(&l), vec![HxInsn::ExitWith(2)]);
    }

    #[test]
    fn exit_another_path_jumps_to_stays() {
        let insns = [
            ldx(Size::W, 3, 1, 12),
            jmp(Cond::Eq, 3, 0, 1),
            mov64(0, 2),
            exit(),
        ];
        let (l, removed) = run(&insns, only("exit"));
        assert_eq!(removed["exit"], 0);
        assert_eq!(ebpf(&l)[2], HxInsn::ExitWith(2));
        assert_eq!(ebpf(&l)[3], HxInsn::Ebpf(Instruction::Exit));
        assert_eq!(l.insns[1].target, Some(3));
    }
}
