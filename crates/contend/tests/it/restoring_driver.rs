//! The restoring driver in this kernel: an NF that moves its packet's head, counts in an array
//! and inserts a key into a hash map takes another path from its second repeated run on; behind
//! a driver that puts back the head, the length, the bytes and those entries, every run takes
//! the first run's path.

use linerate_bpf::emit::{write_object, MapSpec, ObjectSpec, ProgramSpec};
use linerate_bpf::facts::xdp::{XDP_DROP, XDP_TX};
use linerate_bpf::helpers::id::{MAP_LOOKUP_ELEM, MAP_UPDATE_ELEM, XDP_ADJUST_HEAD};
use linerate_bpf::insn::build::{
    add64, alu64_reg, call_helper, exit, jmp, jmp_reg, ld_map, ldx, mov64, mov64_reg, st, stx,
};
use linerate_bpf::insn::{AluOp, Cond, Instruction, Size};
use linerate_bpf::MapType;
use linerate_contend::driver::{
    pass_object, Change, Restore, RestoredEntry, Timing, TrafficDriver,
};
use linerate_kernel::{load_object, usable_or_skip, LoadedObject, TestRunInput};

const LEN: usize = 64;
/// Bytes the NF moves its head by.
const GROW: i32 = 8;

/// Moves the head `GROW` bytes out, writes a byte there, counts in `count[0]` and inserts key 0
/// into `seen` (which must not hold it); XDP_TX if the packet is `LEN + GROW` bytes, the
/// count 1 and the key new, else XDP_DROP.
fn nf_program() -> Vec<Instruction> {
    let drop = |insns: &mut Vec<Instruction>, cond: Cond, reg: u8, imm: i32| {
        // Skips to the final XDP_DROP; patched once the length is known.
        insns.push(jmp(cond, reg, imm, i16::MAX));
    };
    let mut insns = vec![
        mov64_reg(6, 1),
        mov64_reg(1, 6),
        mov64(2, -GROW),
        call_helper(XDP_ADJUST_HEAD),
    ];
    drop(&mut insns, Cond::Ne, 0, 0);
    insns.extend([
        ldx(Size::W, 2, 6, 0),
        ldx(Size::W, 3, 6, 4),
        mov64_reg(4, 2),
        add64(4, 1),
        // The verifier wants the write checked against the end.
        jmp_reg(Cond::Gt, 4, 3, i16::MAX),
    ]);
    insns.extend([st(Size::B, 2, 0, 0x5a), alu64_reg(AluOp::Sub, 3, 2)]);
    drop(&mut insns, Cond::Ne, 3, (LEN as i32) + GROW);
    insns.extend([
        st(Size::W, 10, -4, 0),
        ld_map(1, 0),
        mov64_reg(2, 10),
        add64(2, -4),
        call_helper(MAP_LOOKUP_ELEM),
    ]);
    drop(&mut insns, Cond::Eq, 0, 0);
    insns.extend([ldx(Size::Dw, 1, 0, 0), add64(1, 1), stx(Size::Dw, 0, 0, 1)]);
    drop(&mut insns, Cond::Ne, 1, 1);
    insns.extend([
        st(Size::Dw, 10, -16, 7),
        ld_map(1, 1),
        mov64_reg(2, 10),
        add64(2, -4),
        mov64_reg(3, 10),
        add64(3, -16),
        mov64(4, 1), // BPF_NOEXIST
        call_helper(MAP_UPDATE_ELEM),
    ]);
    drop(&mut insns, Cond::Ne, 0, 0);
    insns.extend([mov64(0, XDP_TX as i32), exit()]);
    let drop_at = insns.len();
    insns.extend([mov64(0, XDP_DROP as i32), exit()]);
    // Point every placeholder jump at the drop (offsets count slots; ld_map takes two).
    let slot_of: Vec<usize> = insns
        .iter()
        .scan(0, |at, i| {
            let here = *at;
            *at += i.slots();
            Some(here)
        })
        .collect();
    for (index, insn) in insns.iter_mut().enumerate() {
        if let Instruction::Jump { off, .. } = insn {
            if *off == i16::MAX {
                *off = (slot_of[drop_at] - slot_of[index] - 1) as i16;
            }
        }
    }
    insns
}

fn nf() -> LoadedObject {
    let spec = ObjectSpec::new(
        vec![ProgramSpec::xdp("nf", nf_program())],
        vec![
            MapSpec::new("count", MapType::ARRAY, 4, 8, 1),
            MapSpec::new("seen", MapType::HASH, 4, 8, 16),
        ],
    );
    let bytes = write_object(&spec).expect("the NF writes");
    let object = linerate_bpf::read_object(&bytes, "nf").expect("the NF reads");
    let loaded = load_object(&object).expect("the NF loads");
    loaded.load_program(0).expect("the verifier takes the NF");
    loaded
}

fn everything() -> Restore {
    Restore {
        bytes: 0..LEN,
        geometry: true,
        entries: vec![
            RestoredEntry {
                map: 0,
                key: 0u32.to_le_bytes().to_vec(),
                value: vec![0; 8],
                change: Change::Changed,
            },
            RestoredEntry {
                map: 1,
                key: 0u32.to_le_bytes().to_vec(),
                value: 7u64.to_le_bytes().to_vec(),
                change: Change::Added,
            },
        ],
    }
}

fn input() -> TestRunInput {
    TestRunInput {
        packet: (0..LEN as u8).collect(),
        ..TestRunInput::default()
    }
}

#[test]
fn repeated_runs_stray_and_restored_runs_do_not() {
    if !usable_or_skip("contend restoring_driver") {
        return;
    }
    let nf = nf();
    let once = nf.test_run(0, &input()).expect("runs");
    assert_eq!(u64::from(once.retval), XDP_TX, "the first run's path");
    let nf = self::nf();
    let repeated = TestRunInput {
        repeat: 3,
        ..input()
    };
    let out = nf.test_run(0, &repeated).expect("runs");
    assert_eq!(u64::from(out.retval), XDP_DROP, "repeated runs stray");

    let nf = self::nf();
    let driver = TrafficDriver::restoring(&input(), &everything(), &nf, 0).expect("driver loads");
    driver.attach(&nf, 0).expect("attaches");
    for repeat in [1, 2, 1000] {
        let out = driver.run(repeat).expect("runs");
        assert_eq!(u64::from(out.retval), XDP_TX, "after {repeat} driven runs");
        assert_eq!(out.packet.len(), LEN + GROW as usize);
        assert_eq!(out.packet[0], 0x5a);
        assert_eq!(&out.packet[GROW as usize..], &input().packet[..]);
    }
    let count = nf.lookup(0, &0u32.to_le_bytes()).expect("lookup");
    assert_eq!(
        count,
        Some(1u64.to_le_bytes().to_vec()),
        "one count per run"
    );
}

#[test]
fn leaving_out_an_entry_lets_the_runs_stray() {
    if !usable_or_skip("contend restoring_driver") {
        return;
    }
    // Without the hash entry put back the second run finds its key and drops: the restoring
    // is what keeps the path, not the driver's being there.
    let nf = nf();
    let mut partial = everything();
    partial.entries.pop();
    let driver = TrafficDriver::restoring(&input(), &partial, &nf, 0).expect("driver loads");
    driver.attach(&nf, 0).expect("attaches");
    assert_eq!(u64::from(driver.run(1).expect("runs").retval), XDP_TX);
    assert_eq!(u64::from(driver.run(2).expect("runs").retval), XDP_DROP);
}

#[test]
fn the_nf_time_behind_the_restoring_driver_is_its_own() {
    let _alone = crate::timing_alone();
    if !usable_or_skip("contend restoring_driver") {
        return;
    }
    // The NF's time over the driver is positive, and the driver's own (a few helper calls) far
    // from the microseconds a test-run call costs once.
    let nf = nf();
    let driver = TrafficDriver::restoring(&input(), &everything(), &nf, 0).expect("driver loads");
    let pass = pass_object().expect("pass loads");
    let time = driver
        .nf_ns(
            &nf,
            0,
            &pass,
            Timing {
                trials: 5,
                short: 1_000,
                long: 21_000,
            },
        )
        .expect("times");
    assert!(time.nf() > 0.0, "{time:?}");
    assert!(time.driver > 0.0 && time.driver < 2_000.0, "{time:?}");
}
