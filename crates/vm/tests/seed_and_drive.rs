//! Seeding the interpreter's maps and driving packets with persistent or fresh maps.

use linerate_bpf::contents::{MapMode, MapSeed, SeedError};
use linerate_bpf::insn::{encode_all, AluOp, AtomicOp, CallTarget, Cond, Imm64, Instruction};
use linerate_bpf::insn::{Operand, Size};
use linerate_bpf::program::{Function, MapOrigin};
use linerate_bpf::{MapDef, MapType, Object, Program};
use linerate_vm::drive::{run_packets, DriveError, Driver};
use linerate_vm::{Vm, VmOptions};

use Instruction::*;

fn map(name: &str, map_type: MapType, key_size: u32, value_size: u32, max_entries: u32) -> MapDef {
    MapDef {
        name: name.into(),
        map_type,
        key_size,
        value_size,
        max_entries,
        flags: 0,
        origin: MapOrigin::Btf,
        initial_value: None,
        initial_programs: Vec::new(),
    }
}

/// `counts[1] += 1; return XDP_PASS`, with a one-entry hash map `one` beside it.
fn counter() -> Object {
    let mov = |dst: u8, src: Operand| Alu {
        wide: true,
        op: AluOp::Mov,
        dst,
        src,
    };
    let insns = [
        Store {
            size: Size::W,
            dst: 10,
            off: -4,
            src: Operand::Imm(1),
        },
        mov(2, Operand::Reg(10)),
        Alu {
            wide: true,
            op: AluOp::Add,
            dst: 2,
            src: Operand::Imm(-4),
        },
        LoadImm64 {
            dst: 1,
            imm: Imm64::Map(0),
        },
        Call(CallTarget::Helper(1)),
        Jump {
            wide: true,
            cond: Cond::Eq,
            dst: 0,
            src: Operand::Imm(0),
            off: 2,
        },
        mov(1, Operand::Imm(1)),
        Atomic {
            size: Size::Dw,
            op: AtomicOp::Add,
            fetch: false,
            dst: 0,
            src: 1,
            off: 0,
        },
        mov(0, Operand::Imm(2)),
        Exit,
    ];
    let insns = encode_all(&insns);
    Object {
        name: "t".into(),
        programs: vec![Program {
            name: "count".into(),
            section: "xdp".into(),
            functions: vec![Function {
                name: "count".into(),
                start: 0,
                len: insns.len(),
            }],
            insns,
        }],
        maps: vec![
            map("counts", MapType::ARRAY, 4, 8, 4),
            map("one", MapType::HASH, 2, 1, 1),
        ],
        license: Some("GPL".into()),
    }
}

const PACKET: [u8; 20] = [0; 20];

fn counts(n: u64) -> Vec<(Vec<u8>, Vec<u8>)> {
    vec![(1u32.to_le_bytes().to_vec(), n.to_le_bytes().to_vec())]
}

#[test]
fn persistent_maps_accumulate_and_fresh_maps_start_over() {
    let obj = counter();
    let seed: MapSeed = [(0, 1u32.to_le_bytes().to_vec(), 10u64.to_le_bytes().to_vec())]
        .into_iter()
        .collect();
    let packets = vec![PACKET.to_vec(); 3];
    let options = VmOptions {
        record_steps: true,
        ..VmOptions::default()
    };
    let persist = run_packets(
        &obj,
        &seed,
        options.clone(),
        MapMode::Persist,
        0,
        &packets,
        &[],
    )
    .unwrap();
    assert_eq!(persist.initial_maps[0], counts(10));
    assert_eq!(persist.final_maps[0], counts(13));
    let fresh = run_packets(&obj, &seed, options, MapMode::Fresh, 0, &packets, &[]).unwrap();
    assert_eq!(fresh.final_maps[0], counts(11));
    for (p, f) in persist.outcomes.iter().zip(&fresh.outcomes) {
        assert_eq!(p.return_value, 2);
        assert_eq!(p.steps.len(), 10, "every instruction recorded");
        assert_eq!(p.steps, f.steps);
    }
}

#[test]
fn a_refused_entry_names_map_entry_and_errno_and_a_bad_seed_writes_nothing() {
    let obj = counter();
    let mut seed = MapSeed::new();
    seed.push(1, vec![1, 0], vec![7]);
    seed.push(1, vec![2, 0], vec![8]);
    let err = Driver::new(&obj, &seed, VmOptions::default(), MapMode::Persist).unwrap_err();
    assert_eq!(
        err.to_string(),
        "cannot seed map `one` with key 0200 (entry 1): error -7"
    );
    assert!(matches!(
        err,
        DriveError::Seed(SeedError::Refused { errno: -7, .. })
    ));

    let mut past_end = MapSeed::new();
    past_end.push(0, 9u32.to_le_bytes().to_vec(), vec![0; 8]);
    let mut vm = Vm::new(&obj, VmOptions::default()).unwrap();
    assert_eq!(
        vm.seed(&past_end).unwrap_err().to_string(),
        "cannot seed map `counts` with key 09000000 (entry 0): error -7"
    );

    let mut bad_size = MapSeed::new();
    bad_size.push(1, vec![3, 0], vec![1]);
    bad_size.push(1, vec![3], vec![1]);
    assert_eq!(
        vm.seed(&bad_size).unwrap_err().to_string(),
        "map `one` entry 1: key has 1 bytes, the map's keys have 2"
    );
    assert!(vm.maps[1].entries().is_empty(), "nothing written");
}

#[test]
fn a_failing_packet_is_named() {
    let obj = counter();
    let mut driver =
        Driver::new(&obj, &MapSeed::new(), VmOptions::default(), MapMode::Fresh).unwrap();
    driver.run(0, &PACKET, &[]).unwrap();
    let err = driver.run(1, &PACKET, &[]).unwrap_err();
    assert!(
        matches!(err, DriveError::Packet { index: 1, .. }),
        "{err:?}"
    );
    assert_eq!(err.to_string(), "packet 1");
}
