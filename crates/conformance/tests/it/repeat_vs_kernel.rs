//! The kernel's repeated test runs, reproduced: `BPF_PROG_TEST_RUN` with `repeat` above 1 copies
//! the packet in once and runs the program on the same buffer again and again (the packet as the
//! previous run left it, maps persisting). `Vm::rerun_in_place` is that second and later run;
//! bench/vm times the interpreter this way so that it compares with the kernel's figure on the
//! same work. On every example's crafted packets, a kernel run with `repeat` N and an interpreter
//! run in place followed by N - 1 reruns end with the same action, packet and metadata, and the
//! maps agree after all packets.

use linerate_bpf::contents::MapMode;
use linerate_conformance::examples::load_all;
use linerate_kernel::usable_or_skip;
use linerate_vm::drive::Driver;
use linerate_vm::VmOptions;

const REPEAT: u32 = 4;

#[test]
fn reruns_in_place_match_the_kernels_repeated_runs() {
    if !usable_or_skip("repeated runs against the kernel") {
        return;
    }
    let examples = load_all().expect("example corpus");
    assert!(examples.len() > 30);
    let mut changed_paths = 0;
    for example in &examples {
        let (name, obj, entry) = (example.name(), &example.object, example.entry);
        let mut kernel = linerate_kernel::drive::Driver::new(obj, &example.seed, MapMode::Persist)
            .expect("the kernel loads the example");
        let mut vm = Driver::new(obj, &example.seed, VmOptions::default(), MapMode::Persist)
            .expect("the interpreter takes the example");
        for (i, packet) in example.packet_bytes().iter().enumerate() {
            let theirs = kernel.run(entry, packet, &[], REPEAT);
            let first = vm.run_in_place(entry, packet, &[]);
            let mut ours = first.clone();
            for _ in 1..REPEAT {
                ours = vm.rerun_in_place(entry);
            }
            let (Ok(theirs), Ok(ours), Ok(first)) = (theirs, ours, first) else {
                // Packets the kernel refuses (and the interpreter with it) are compared by
                // examples_vs_kernel; a repeat does not change a refusal.
                continue;
            };
            if ours.instructions != first.instructions {
                changed_paths += 1;
            }
            let buffer = vm.vm().packet_buffer();
            assert_eq!(
                ours.return_value,
                u64::from(theirs.retval),
                "{name} [{i}]: action after {REPEAT} runs"
            );
            assert_eq!(
                buffer.whole_packet(),
                theirs.packet,
                "{name} [{i}]: packet after {REPEAT} runs"
            );
            assert_eq!(
                buffer.meta(),
                theirs.meta,
                "{name} [{i}]: metadata after {REPEAT} runs"
            );
        }
        assert_eq!(
            vm.maps(),
            kernel.maps().expect("the kernel's maps read back"),
            "{name}: maps after every packet ran {REPEAT} times"
        );
    }
    // The reason for rerunning: some examples rewrite the packet so that a repeat takes
    // another path (the transcoders turn PCMA into PCMU, which they then pass unchanged).
    assert!(changed_paths > 0, "no repeated run took another path");
}
