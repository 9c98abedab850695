//! The restoring driver in this kernel: an NF that moves its packet's head, counts in an array
//! and inserts a key into a hash map takes another path from its second repeated run on; behind
//! a driver that puts back the head, the length, the bytes and those entries, every run takes
//! the first run's path.

use linerate_bpf::asm::assemble;
use linerate_bpf::emit::{write_object, MapSpec, ObjectSpec, ProgramSpec};
use linerate_bpf::facts::xdp::{XDP_DROP, XDP_TX};
use linerate_bpf::insn::Instruction;
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
    let text = format!(
        "
        r6 = r1
        r1 = r6
        r2 = -{GROW}
        call bpf_xdp_adjust_head
        if r0 != 0 goto drop
        r2 = *(u32 *)(r6 + 0)
        r3 = *(u32 *)(r6 + 4)
        r4 = r2
        r4 += 1
        ; the verifier wants the write checked against the end
        if r4 > r3 goto drop
        *(u8 *)(r2 + 0) = 0x5a
        r3 -= r2
        if r3 != {grown} goto drop
        *(u32 *)(r10 - 4) = 0
        r1 = count ll
        r2 = r10
        r2 += -4
        call bpf_map_lookup_elem
        if r0 == 0 goto drop
        r1 = *(u64 *)(r0 + 0)
        r1 += 1
        *(u64 *)(r0 + 0) = r1
        if r1 != 1 goto drop
        *(u64 *)(r10 - 16) = 7
        r1 = seen ll
        r2 = r10
        r2 += -4
        r3 = r10
        r3 += -16
        ; BPF_NOEXIST
        r4 = 1
        call bpf_map_update_elem
        if r0 != 0 goto drop
        r0 = {XDP_TX}
        exit
        drop:
        r0 = {XDP_DROP}
        exit
        ",
        grown = LEN as i32 + GROW
    );
    let maps: &[&str] = &["count", "seen"];
    assemble(&text, maps).expect("the NF assembles")
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

#[test]
fn the_alternating_driver_times_both_sides_in_one_call() {
    let _alone = crate::timing_alone();
    if !usable_or_skip("contend restoring_driver") {
        return;
    }
    let nf = nf();
    let driver = TrafficDriver::alternating(&input(), &everything(), &nf, 0, 1_000_000)
        .expect("driver loads");
    // An odd repeat is rounded up, so the call's last run is the NF's and returns its action.
    let timed = driver.run_alternating(10_001).expect("runs");
    assert_eq!(u64::from(timed.retval), XDP_TX, "{timed:?}");
    let (nf_ns, empty_ns) = (
        timed.nf_ns.expect("NF side"),
        timed.empty_ns.expect("empty side"),
    );
    // Every run restores the same entries whichever program ran before, so the two sides
    // differ by the NF's own work: a helper call, a lookup and an insert, tens of ns at least.
    assert!(nf_ns > empty_ns + 5.0, "{timed:?}");
    assert!(empty_ns > 0.0 && empty_ns < 5_000.0, "{timed:?}");
    // The NF ran on every other run, each from the restored state: one count.
    let count = nf.lookup(0, &0u32.to_le_bytes()).expect("lookup");
    assert_eq!(count, Some(1u64.to_le_bytes().to_vec()));
    // With a limit below any run, every gap is left out and neither side is timed.
    let strict = TrafficDriver::alternating(&input(), &everything(), &nf, 0, 1).expect("loads");
    let none = strict.run_alternating(100).expect("runs");
    assert_eq!((none.nf_ns, none.empty_ns, none.left_out), (None, None, 99));
}
