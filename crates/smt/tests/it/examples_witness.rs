//! Every witness the engine gives for a path of an example, run in the interpreter with its map
//! entries, takes exactly that path (same decisions, same blocks) and returns the action the
//! engine names. The paths are those the interpreter took on the examples' crafted packets, so
//! they are feasible and the engine must find them satisfiable; one checker per example checks
//! them all in turn, so the prefix reuse between consecutive checks is exercised too.

use crate::common;

use linerate_smt::{Options, PathChecker, SmtError, Verdict};
use linerate_vm::{Vm, VmOptions};

/// Packets per example (the crafted packets come first; more add time, not coverage).
const PACKETS: usize = 6;

#[test]
fn witnesses_take_their_paths_in_the_interpreter() {
    let examples = linerate_conformance::examples::load_all().expect("examples load");
    let mut verified = 0;
    let mut examples_verified = 0;
    let mut skipped = Vec::new();
    for example in &examples {
        let object = &example.object;
        let program = example.entry;
        let mut checker = match PathChecker::new(object, program, Options::default()) {
            Ok(c) => c,
            Err(e) => {
                skipped.push(format!("{}: {e}", example.name()));
                continue;
            }
        };
        let mut ok_here = 0;
        // The engine's packets are single-buffer (at most `MAX_DATA` bytes), as the brief of
        // `linerate bound` sets them; longer packets take paths it does not consider.
        let single_buffer = example
            .packets
            .iter()
            .filter(|p| p.bytes.len() as u64 <= linerate_bpf::facts::test_run_buffer::MAX_DATA);
        for packet in single_buffer.take(PACKETS) {
            let options = VmOptions {
                record_steps: true,
                ..VmOptions::default()
            };
            let mut vm = Vm::new(object, options.clone()).expect("vm");
            vm.seed(&example.seed).expect("seed");
            let run = vm.run(program, &packet.bytes, &[]).expect("vm run");
            let path = common::decisions(object, &run.steps);
            let witness = match checker.check(&path) {
                Ok(Verdict::Sat(w)) => w,
                Ok(other) => panic!(
                    "{} line {}: a path the interpreter took is {other:?}",
                    example.name(),
                    packet.line
                ),
                Err(e @ (SmtError::Unsupported { .. } | SmtError::Sem(_))) => {
                    skipped.push(format!("{}: {e}", example.name()));
                    break;
                }
                Err(e) => panic!("{} line {}: {e}", example.name(), packet.line),
            };
            assert!(witness.packet.len() >= 14);
            assert!(
                !witness.minimal || witness.packet.len() <= packet.bytes.len(),
                "{}: the witness packet ({} bytes) is longer than one that takes the path ({})",
                example.name(),
                witness.packet.len(),
                packet.bytes.len()
            );
            if !witness.unrepeatable.is_empty() {
                // Time and random numbers: the interpreter's differ; nothing to replay.
                continue;
            }
            let mut vm = Vm::new(
                object,
                VmOptions {
                    ingress_ifindex: witness.ingress_ifindex,
                    rx_queue_index: witness.rx_queue_index,
                    ..options
                },
            )
            .expect("vm");
            // Through the `run --maps` JSON shape, as `bound --witness-maps` writes it.
            let json = linerate_io::encode_maps(object, &witness.map_contents(object.maps.len()));
            let seed = linerate_io::decode_maps(&json, object)
                .unwrap_or_else(|e| panic!("{}: witness maps JSON: {e}", example.name()));
            let sorted = |s: &linerate_bpf::contents::MapSeed| {
                let mut e: Vec<_> = s
                    .entries()
                    .iter()
                    .map(|e| (e.map, e.key.clone(), e.value.clone()))
                    .collect();
                e.sort();
                e
            };
            assert_eq!(sorted(&seed), sorted(&witness.maps));
            vm.seed(&seed)
                .unwrap_or_else(|e| panic!("{}: witness maps do not install: {e}", example.name()));
            let replay = vm
                .run(program, &witness.packet, &witness.meta)
                .unwrap_or_else(|e| panic!("{}: witness run: {e}", example.name()));
            assert_eq!(
                common::decisions(object, &replay.steps),
                path,
                "{} line {}: the witness takes another path",
                example.name(),
                packet.line
            );
            assert_eq!(common::blocks(object, &replay.steps), witness.blocks);
            assert_eq!(
                replay.return_value,
                witness.return_value,
                "{}",
                example.name()
            );
            assert_eq!(
                linerate_vm::xdp_action_name(replay.return_value),
                witness.action
            );
            assert_eq!(replay.packet, witness.output_packet, "{}", example.name());
            verified += 1;
            ok_here += 1;
        }
        if ok_here > 0 {
            examples_verified += 1;
        }
    }
    eprintln!(
        "{verified} witnesses replayed on {examples_verified} examples; skipped:\n  {}",
        skipped.join("\n  ")
    );
    assert!(
        examples_verified >= 30,
        "only {examples_verified} examples verified"
    );
}
