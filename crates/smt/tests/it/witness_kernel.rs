//! Witnesses replayed in the kernel: for the paths the interpreter takes on the examples'
//! crafted packets, the engine's witness (packet, context, map entries) run through
//! `BPF_PROG_TEST_RUN` returns the action and the packet the engine names.

use crate::common;

use linerate_kernel::{load_object, usable_or_skip, TestRunInput};
use linerate_smt::{Options, PathChecker, SmtError, Verdict};
use linerate_vm::{Vm, VmOptions};

/// Packets per example.
const PACKETS: usize = 3;

#[test]
fn witnesses_give_the_named_action_in_the_kernel() {
    if !usable_or_skip("witness replay in the kernel") {
        return;
    }
    let examples = linerate_conformance::examples::load_all().expect("examples load");
    let mut replayed = 0;
    for example in &examples {
        let object = &example.object;
        let program = example.entry;
        if example.refused.contains(&program) {
            continue;
        }
        let Ok(mut checker) = PathChecker::new(object, program, Options::default()) else {
            continue;
        };
        let single_buffer = example
            .packets
            .iter()
            .filter(|p| p.bytes.len() as u64 <= linerate_bpf::facts::test_run_buffer::MAX_DATA);
        for packet in single_buffer.take(PACKETS) {
            let mut vm = Vm::new(
                object,
                VmOptions {
                    record_steps: true,
                    ..VmOptions::default()
                },
            )
            .expect("vm");
            vm.seed(&example.seed).expect("seed");
            let run = vm.run(program, &packet.bytes, &[]).expect("vm run");
            let path = common::decisions(object, &run.steps);
            let witness = match checker.check(&path) {
                Ok(Verdict::Sat(w)) => w,
                Err(SmtError::Unsupported { .. } | SmtError::Sem(_)) => break,
                other => panic!("{} line {}: {other:?}", example.name(), packet.line),
            };
            // The path is the crafted packet's: so are its blocks, except inside callbacks,
            // whose branches the engine chooses itself (tests/it/examples_witness.rs replays those).
            if !common::calls_back(object, &run.steps) {
                assert_eq!(witness.blocks, common::blocks(object, &run.steps));
            }
            if !witness.unrepeatable.is_empty() {
                continue;
            }
            let loaded = load_object(object).expect("load");
            loaded.load_program(program).expect("load program");
            loaded
                .seed(&witness.maps)
                .unwrap_or_else(|e| panic!("{}: witness maps: {e}", example.name()));
            let input = TestRunInput {
                packet: witness.packet.clone(),
                meta: witness.meta.clone(),
                ingress_ifindex: witness.ingress_ifindex,
                rx_queue_index: witness.rx_queue_index,
                repeat: 1,
                discard_records: false,
            };
            let out = loaded.test_run(program, &input).unwrap_or_else(|e| {
                panic!("{} line {}: test_run: {e}", example.name(), packet.line)
            });
            assert_eq!(
                u64::from(out.retval),
                witness.return_value,
                "{} line {}",
                example.name(),
                packet.line
            );
            assert_eq!(out.packet, witness.output_packet, "{}", example.name());
            replayed += 1;
        }
    }
    eprintln!("{replayed} witnesses replayed in the kernel");
    assert!(replayed >= 60, "only {replayed} witnesses replayed");
}
