//! ROM images: writing, reading back, the artifacts' lines as facts, malformed input.

use std::path::Path;

use linerate_bpf::insn::{AluOp, Imm64, Instruction, Operand};
use linerate_hxdp::isa::HxInsn;
use linerate_hxdp::program::Lowered;
use linerate_hxdp::rom::{read_rom, write_rom, RomError, IMEM_ROWS};
use linerate_hxdp::schedule::{Row, Schedule, Slot};
use linerate_hxdp::sephirot::one_per_row;

fn mov_r0_1() -> HxInsn {
    HxInsn::Ebpf(Instruction::Alu {
        wide: true,
        op: AluOp::Mov,
        dst: 0,
        src: Operand::Imm(1),
    })
}

fn bare(insn: HxInsn, target: Option<usize>) -> Option<Slot> {
    Some(Slot {
        insn,
        from: Vec::new(),
        target,
        order: None,
    })
}

/// The schedule with its source slots and program order dropped and its jumps' own offsets set as the ROM holds
/// them: what reading a ROM gives back.
fn as_read(schedule: &Schedule) -> Schedule {
    let mut s = schedule.clone();
    for (r, row) in s.rows.iter_mut().enumerate() {
        for slot in row.slots.iter_mut().flatten() {
            slot.from.clear();
            slot.order = None;
            if let Some(t) = slot.target {
                slot.insn = linerate_hxdp::rom::aim_jump(&slot.insn, r, t).unwrap();
            }
        }
    }
    s
}

#[test]
fn the_issue_example_as_lanes() {
    let mut row = Row::empty(4);
    row.slots[0] = bare(HxInsn::Ebpf(Instruction::Exit), None);
    row.slots[1] = bare(mov_r0_1(), None);
    let s = Schedule {
        lanes: 4,
        rows: vec![row],
    };
    let text = write_rom(&s, IMEM_ROWS).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), IMEM_ROWS);
    assert!(text.ends_with('\n'));
    assert_eq!(
        lines[0],
        "0000000000000000000000000000000000000001000000b70000000000000095"
    );
    assert!(lines[0].ends_with("0000000000000095"));
    assert!(lines[1..].iter().all(|l| *l == "0".repeat(64)));
    assert_eq!(read_rom(&text).unwrap(), s);
}

#[test]
fn an_artifact_line_is_exit_drop_in_lane_0() {
    let text = "0000000000000000000000000000000000000000000000000000000100000096\n".to_string()
        + &format!("{}\n", "0".repeat(64)).repeat(255);
    let s = read_rom(&text).unwrap();
    assert_eq!((s.lanes, s.rows.len()), (4, 1));
    assert_eq!(
        s.rows[0].slots[0].as_ref().unwrap().insn,
        HxInsn::ExitWith(1)
    );
    assert!(s.rows[0].slots[1..].iter().all(Option::is_none));
    assert_eq!(
        s.rows[0].slots[0].as_ref().unwrap().insn.to_string(),
        "exit XDP_DROP"
    );
}

#[test]
fn an_artifact_row_with_two_loads() {
    // Row 0 of the artifacts' xdp1 ROM in lanes 0 and 1: `r2 = *(u32 *)(r1 + 4)` and
    // `r1 = *(u32 *)(r1 + 0)`.
    let line = format!(
        "{}{}{}\n",
        "0".repeat(32),
        "0000000000001161",
        "0000000000041261"
    );
    let s = read_rom(&line).unwrap();
    let text: Vec<String> = s.rows[0]
        .filled()
        .map(|(l, slot)| format!("{l}: {}", slot.insn))
        .collect();
    assert_eq!(
        text,
        vec!["0: r2 = *(u32 *)(r1 + 0x4)", "1: r1 = *(u32 *)(r1 + 0x0)"]
    );
}

#[test]
fn hand_schedules_round_trip() {
    let jump = HxInsn::Ebpf(Instruction::Jump {
        wide: true,
        cond: linerate_bpf::insn::Cond::Eq,
        dst: 2,
        src: Operand::Imm(0),
        off: 0,
    });
    let wide = HxInsn::Ebpf(Instruction::LoadImm64 {
        dst: 3,
        imm: Imm64::Const(0x1234_5678_9abc),
    });
    let high = HxInsn::ImmHigh(0x1234);
    let mut r0 = Row::empty(4);
    r0.slots[0] = bare(jump, Some(2));
    r0.slots[2] = bare(wide, None);
    r0.slots[3] = bare(high, None);
    let mut r1 = Row::empty(4);
    r1.slots[1] = bare(HxInsn::ExitWith(2), None);
    let mut r2 = Row::empty(4);
    r2.slots[0] = bare(
        HxInsn::Ebpf(Instruction::Ja {
            off: 0,
            long: false,
        }),
        Some(1),
    );
    let s = Schedule {
        lanes: 4,
        rows: vec![r0, r1, r2],
    };
    let text = write_rom(&s, IMEM_ROWS).unwrap();
    // The jump in row 0 to row 2 has offset 1, the one in row 2 to row 1 offset -2.
    let first = text.lines().next().unwrap();
    assert_eq!(&first[48..], "0000000000010215");
    assert_eq!(read_rom(&text).unwrap(), as_read(&s));
}

#[test]
fn example_programs_round_trip_one_per_row() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples");
    let mut checked = 0;
    for name in [
        "xdp_filter",
        "xdp_firewall",
        "xdp_cms_d2",
        "xdp_router",
        "xdp_dns",
    ] {
        let object = linerate_io::load_object(&dir.join(format!("{name}.o"))).unwrap();
        let Ok(lowered) = Lowered::new(&object, 0) else {
            continue;
        };
        let s = one_per_row(&lowered, 4);
        match write_rom(&s, IMEM_ROWS) {
            Ok(text) => {
                assert_eq!(read_rom(&text).unwrap(), as_read(&s), "{name}");
                checked += 1;
            }
            Err(e) => assert!(s.rows.len() > IMEM_ROWS, "{name}: {e}"),
        }
        // Any size fits a large enough memory.
        let text = write_rom(&s, s.rows.len()).unwrap();
        assert_eq!(read_rom(&text).unwrap(), as_read(&s), "{name}");
    }
    assert!(checked >= 1);
}

#[test]
fn too_long_names_both_numbers() {
    let mut row = Row::empty(4);
    row.slots[0] = bare(HxInsn::ExitWith(1), None);
    let s = Schedule {
        lanes: 4,
        rows: vec![row; 3],
    };
    let e = write_rom(&s, 2).unwrap_err();
    assert_eq!(
        e,
        RomError::TooLong {
            rows: 3,
            capacity: 2
        }
    );
    assert_eq!(
        e.to_string(),
        "the schedule has 3 rows, but the instruction memory holds 2"
    );
}

#[test]
fn malformed_roms_name_line_and_lane() {
    let zero = "0".repeat(64);
    let cases = [
        (
            format!("{zero}\n{}\n", "0".repeat(60)),
            "line 2: 60 hex digits, not a multiple of 16",
        ),
        (
            format!("{zero}\n{}\n", "0".repeat(32)),
            "line 2: 2 lanes, but the first line has 4",
        ),
        (
            format!("{}{}\n", "0".repeat(48), "00000000000000g5"),
            "line 1, lane 0: `00000000000000g5` is not 16 hex digits",
        ),
        (
            format!("{}{}\n", "00000000000000fe", "0".repeat(48)),
            "line 1, lane 3: word 00000000000000fe:",
        ),
    ];
    for (text, want) in cases {
        let e = read_rom(&text).unwrap_err().to_string();
        assert!(e.starts_with(want), "{e:?} should start with {want:?}");
    }
    // The jump's target lies outside the program's one row.
    let e = read_rom(&format!("{}{}\n", "0".repeat(48), "0000000000050005"))
        .unwrap_err()
        .to_string();
    assert!(e.contains("outside the program's 1 rows"), "{e}");
}
