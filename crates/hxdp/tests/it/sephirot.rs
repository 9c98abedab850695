//! The Sephirot model against the interpreter, `check`'s static rules, and the model's timing.

use linerate_bpf::contents::MapSeed;
use linerate_bpf::insn::{AluOp, Instruction, Operand, Size};
use linerate_hxdp::check::{check, compare_with_vm, packet_variants, static_violations};
use linerate_hxdp::isa::HxInsn;
use linerate_hxdp::program::Lowered;
use linerate_hxdp::schedule::{Row, Schedule, Slot};
use linerate_hxdp::sephirot::{one_per_row, simulate, Timing};
use linerate_vm::VmOptions;

use crate::support;
use linerate_conformance::examples::examples_dir as examples;
use support::example_inputs;

#[test]
fn one_per_row_schedules_agree_with_the_interpreter_on_every_runnable_example() {
    let mut runnable = 0;
    for (name, object, seed, packets) in example_inputs() {
        for (program, def) in object.programs.iter().enumerate() {
            if def.kind() != linerate_bpf::ProgramKind::Xdp {
                continue;
            }
            let Ok(lowered) = Lowered::new(&object, program) else {
                continue;
            };
            let schedule = one_per_row(&lowered, 4);
            let comparison = compare_with_vm(
                &schedule,
                &object,
                program,
                &packets,
                &seed,
                &VmOptions::default(),
            )
            .unwrap_or_else(|e| panic!("{name} {}: {e}", def.name));
            assert!(comparison.packets_checked >= 200);
            assert_eq!(comparison.mismatches, vec![], "{name} program {}", def.name);
            let violations = static_violations(&schedule, None);
            assert_eq!(violations, vec![], "{name} program {}", def.name);
            runnable += 1;
        }
    }
    eprintln!("runnable programs: {runnable}");
    assert!(runnable >= 20, "only {runnable} runnable programs");
}

fn slot(insn: HxInsn, from: usize) -> Option<Slot> {
    Some(Slot {
        insn,
        from: vec![from],
        target: None,
        order: Some(from),
    })
}

fn mov_imm(dst: u8, imm: i32) -> HxInsn {
    HxInsn::Ebpf(Instruction::Alu {
        wide: true,
        op: AluOp::Mov,
        dst,
        src: Operand::Imm(imm),
    })
}

/// The first example with a program whose one-per-row schedule has an ALU result consumed in
/// the next row: moving the consumer to lane 1 breaks the schedule.
#[test]
fn a_consumer_moved_to_another_lane_is_caught_statically_and_by_a_mismatch() {
    let path = examples().join("xdp_filter.o");
    let object = linerate_io::load_object(&path).unwrap();
    let packets = packet_variants(
        &linerate_io::read_packets_file(&path.with_extension("packets")).unwrap(),
        200,
        7,
    );
    let lowered = Lowered::new(&object, 0).unwrap();
    let good = one_per_row(&lowered, 4);
    let options = VmOptions::default();
    let seed = MapSeed::new();
    // Try each producer/consumer pair in consecutive rows until one breaks the outcome.
    let mut caught = false;
    for r in 0..good.rows.len().saturating_sub(1) {
        let (Some(p), Some(c)) = (&good.rows[r].slots[0], &good.rows[r + 1].slots[0]) else {
            continue;
        };
        if p.insn.writes() & c.insn.reads() == 0 || p.insn.is_control() || p.insn.is_call() {
            continue;
        }
        let mut bad = good.clone();
        let consumer = bad.rows[r + 1].slots[0].take();
        bad.rows[r + 1].slots[1] = consumer;
        let report = check(&bad, &object, 0, &packets, &seed, &options).unwrap();
        let forwarding = report
            .violations
            .iter()
            .any(|v| v.kind == "forwarding" && v.row == r + 1 && v.lanes == vec![0, 1]);
        assert!(forwarding, "row {}: {:?}", r + 1, report.violations);
        if !report.mismatches.is_empty() {
            caught = true;
            break;
        }
    }
    assert!(caught, "no broken schedule gave a mismatch");
}

#[test]
fn a_hand_broken_schedule_reads_the_stale_value() {
    // r0 = 1 ; then r0 = r0 + 1 in another lane one row later sees the stale r0 = 0, so the
    // packet gets action 1 (DROP) instead of 2 (PASS).
    let path = examples().join("xdp_filter.o");
    let object = linerate_io::load_object(&path).unwrap();
    let add = HxInsn::Ebpf(Instruction::Alu {
        wide: true,
        op: AluOp::Add,
        dst: 0,
        src: Operand::Imm(1),
    });
    let exit = HxInsn::Ebpf(Instruction::Exit);
    let rows = |lane_of_add: usize| {
        let mut r1 = Row::empty(4);
        r1.slots[lane_of_add] = slot(add, 1);
        let mut r0 = Row::empty(4);
        r0.slots[0] = slot(mov_imm(0, 1), 0);
        let mut r2 = Row::empty(4);
        r2.slots[lane_of_add] = slot(exit, 2);
        Schedule {
            lanes: 4,
            rows: vec![r0, r1, Row::empty(4), r2],
        }
    };
    let packets = vec![vec![0u8; 64]];
    let run = |s: &Schedule| {
        simulate(
            s,
            &object,
            0,
            &packets,
            &MapSeed::new(),
            VmOptions::default(),
            &Timing::default(),
        )
        .unwrap()
        .packets[0]
            .action
    };
    assert_eq!(run(&rows(0)), 2);
    assert_eq!(run(&rows(1)), 1);
    let v = static_violations(&rows(1), None);
    assert_eq!(v.len(), 1, "{v:?}");
    assert_eq!((v[0].row, v[0].kind.as_str()), (1, "forwarding"));
}

#[test]
fn early_exit_timing() {
    let object = linerate_io::load_object(&examples().join("xdp_filter.o")).unwrap();
    let packets = vec![vec![0u8; 64]];
    let one = |insn: HxInsn| {
        let mut row = Row::empty(4);
        row.slots[0] = slot(insn, 0);
        row
    };
    let alone = Schedule {
        lanes: 4,
        rows: vec![one(HxInsn::ExitWith(1))],
    };
    let two = Schedule {
        lanes: 4,
        rows: vec![one(mov_imm(0, 1)), one(HxInsn::Ebpf(Instruction::Exit))],
    };
    let timing = Timing::default();
    let late = Timing {
        early_exit: false,
        ..Timing::default()
    };
    let sim = |s: &Schedule, t: &Timing| {
        simulate(
            s,
            &object,
            0,
            &packets,
            &MapSeed::new(),
            VmOptions::default(),
            t,
        )
        .unwrap()
        .packets[0]
            .clone()
    };
    let a = sim(&alone, &timing);
    assert_eq!((a.action, a.rows, a.exec_cycles), (1, 1, 1));
    // 64 bytes are 2 frames of 32; 1 cycle plus a dropped packet's I/O is more.
    assert_eq!(a.packet_cycles, 1.0 + timing.io_in_cycles);
    assert_eq!(a.pps, 156.25e6 / (1.0 + timing.io_in_cycles));
    let b = sim(&two, &late);
    assert_eq!((b.action, b.rows, b.exec_cycles), (1, 2, 5));
    let c = sim(&two, &timing);
    assert_eq!(c.exec_cycles, 2);
}

#[test]
fn a_taken_jump_costs_its_penalty_and_a_large_packet_its_frames() {
    let object = linerate_io::load_object(&examples().join("xdp_filter.o")).unwrap();
    let mut r0 = Row::empty(2);
    r0.slots[0] = Some(Slot {
        insn: HxInsn::Ebpf(Instruction::Ja {
            off: 0,
            long: false,
        }),
        from: vec![0],
        target: Some(2),
        order: Some(0),
    });
    let mut r1 = Row::empty(2);
    r1.slots[0] = slot(HxInsn::ExitWith(1), 1);
    let mut r2 = Row::empty(2);
    r2.slots[0] = slot(HxInsn::ExitWith(2), 2);
    let s = Schedule {
        lanes: 2,
        rows: vec![r0, r1, r2],
    };
    let sim = simulate(
        &s,
        &object,
        0,
        &[vec![0u8; 64], vec![0u8; 1500]],
        &MapSeed::new(),
        VmOptions::default(),
        &Timing::default(),
    )
    .unwrap();
    let p = &sim.packets[0];
    assert_eq!(
        (p.action, p.rows, p.taken_jumps, p.exec_cycles),
        (2, 2, 1, 4)
    );
    // 1500 bytes take 47 frames of 32, more than 4 + 2 cycles.
    assert_eq!(sim.packets[1].packet_cycles, 47.0);
}

#[test]
fn stores_become_visible_two_rows_later() {
    let object = linerate_io::load_object(&examples().join("xdp_filter.o")).unwrap();
    let store = HxInsn::Ebpf(Instruction::Store {
        size: Size::W,
        dst: 10,
        off: -4,
        src: Operand::Imm(2),
    });
    let load = HxInsn::Ebpf(Instruction::Load {
        size: Size::W,
        signed: false,
        dst: 0,
        src: 10,
        off: -4,
    });
    let schedule = |gap: usize| {
        let mut rows = vec![Row::empty(2)];
        rows[0].slots[0] = slot(store, 0);
        rows.extend((0..gap).map(|_| Row::empty(2)));
        let mut l = Row::empty(2);
        l.slots[0] = slot(load, 1);
        rows.push(l);
        rows.push(Row::empty(2));
        let mut e = Row::empty(2);
        e.slots[0] = slot(HxInsn::Ebpf(Instruction::Exit), 2);
        rows.push(e);
        Schedule { lanes: 2, rows }
    };
    let action = |s: &Schedule| {
        simulate(
            s,
            &object,
            0,
            &[vec![0u8; 64]],
            &MapSeed::new(),
            VmOptions::default(),
            &Timing::default(),
        )
        .unwrap()
        .packets[0]
            .action
    };
    assert_eq!(action(&schedule(0)), 0);
    assert_eq!(action(&schedule(1)), 2);
    assert!(static_violations(&schedule(0), None)
        .iter()
        .any(|v| v.kind == "memory" && v.row == 1));
    assert_eq!(static_violations(&schedule(1), None), vec![]);
}

#[test]
fn an_access_beyond_the_packet_drops_it() {
    let object = linerate_io::load_object(&examples().join("xdp_filter.o")).unwrap();
    // r2 = ctx->data; r0 = *(u8 *)(r2 + 100); exit — on a 64-byte packet.
    let mut rows = Vec::new();
    for (i, insn) in [
        HxInsn::Ebpf(Instruction::Load {
            size: Size::W,
            signed: false,
            dst: 2,
            src: 1,
            off: 0,
        }),
        HxInsn::Ebpf(Instruction::Load {
            size: Size::B,
            signed: false,
            dst: 0,
            src: 2,
            off: 100,
        }),
        HxInsn::ExitWith(2),
    ]
    .into_iter()
    .enumerate()
    {
        let mut row = Row::empty(2);
        row.slots[0] = slot(insn, i);
        rows.push(row);
    }
    let s = Schedule { lanes: 2, rows };
    let sim = simulate(
        &s,
        &object,
        0,
        &[vec![0u8; 64], vec![7u8; 128]],
        &MapSeed::new(),
        VmOptions::default(),
        &Timing::default(),
    )
    .unwrap();
    assert!(sim.packets[0].out_of_bounds);
    assert_eq!((sim.packets[0].action, sim.packets[0].rows), (1, 2));
    assert!(!sim.packets[1].out_of_bounds);
    assert_eq!(sim.packets[1].action, 2);
}

#[test]
fn static_rules_write_write_helpers_and_targets() {
    let call = HxInsn::Ebpf(Instruction::Call(linerate_bpf::insn::CallTarget::Helper(7)));
    let mut row = Row::empty(4);
    row.slots[0] = slot(mov_imm(3, 1), 0);
    row.slots[1] = slot(mov_imm(3, 2), 1);
    row.slots[2] = slot(call, 2);
    row.slots[3] = slot(call, 3);
    let mut jump = Row::empty(4);
    jump.slots[0] = Some(Slot {
        insn: HxInsn::Ebpf(Instruction::Ja {
            off: 0,
            long: false,
        }),
        from: vec![4],
        target: Some(9),
        order: Some(4),
    });
    let s = Schedule {
        lanes: 4,
        rows: vec![row, jump],
    };
    let kinds: Vec<(usize, String)> = static_violations(&s, None)
        .into_iter()
        .map(|v| (v.row, v.kind))
        .collect();
    assert!(kinds.contains(&(0, "write-write".into())), "{kinds:?}");
    assert!(kinds.contains(&(0, "helpers".into())), "{kinds:?}");
    assert!(kinds.contains(&(1, "target".into())), "{kinds:?}");
}

#[test]
fn read_after_write_in_one_row_is_named() {
    // Source: r3 = 1 (slot 0); r4 = r3 (slot 1): packed into one row, r4 reads the old r3.
    let mut row = Row::empty(2);
    row.slots[0] = slot(mov_imm(3, 1), 0);
    row.slots[1] = slot(
        HxInsn::Ebpf(Instruction::Alu {
            wide: true,
            op: AluOp::Mov,
            dst: 4,
            src: Operand::Reg(3),
        }),
        1,
    );
    let s = Schedule {
        lanes: 2,
        rows: vec![row],
    };
    let v = static_violations(&s, None);
    assert_eq!(v.len(), 1, "{v:?}");
    assert_eq!(
        (v[0].kind.as_str(), v[0].lanes.clone()),
        ("read-after-write", vec![0, 1])
    );
}

#[test]
fn the_report_serializes_to_the_issue_contract() {
    let object = linerate_io::load_object(&examples().join("xdp_filter.o")).unwrap();
    let lowered = Lowered::new(&object, 0).unwrap();
    let s = one_per_row(&lowered, 4);
    let report = check(
        &s,
        &object,
        0,
        &[vec![0u8; 64]],
        &MapSeed::new(),
        &VmOptions::default(),
    )
    .unwrap();
    let json = serde_json::to_value(&report).unwrap();
    let keys: Vec<&str> = json
        .as_object()
        .unwrap()
        .keys()
        .map(|k| k.as_str())
        .collect();
    assert_eq!(keys.len(), 4);
    for k in ["rows", "violations", "packets_checked", "mismatches"] {
        assert!(keys.contains(&k), "{keys:?}");
    }
    assert_eq!(json["rows"], s.rows.len());
    assert_eq!(json["packets_checked"], 1);
}
