//! The interpreter's fast path for many runs (`Vm::run_in_place`, `Vm::replace_instructions`),
//! the one the optimizer evaluates candidates with, on every example: a run in place gives what a
//! full run gives, and a program changed by slot runs as the changed object decoded afresh.

use linerate_bpf::insn::{Instruction, Operand};
use linerate_bpf::Object;
use linerate_conformance::examples::{load_all, Example};
use linerate_vm::{RunSummary, Vm, VmOptions};

/// A bound that stops programs a changed constant made loop long.
const MAX_INSTRUCTIONS: u64 = 200_000;

fn options() -> VmOptions {
    VmOptions {
        max_instructions: MAX_INSTRUCTIONS,
        ..VmOptions::default()
    }
}

fn seeded(example: &Example, object: &Object) -> Vm {
    let mut vm = Vm::new(object, options()).expect("the interpreter takes the example");
    vm.seed(&example.seed).expect("the example's seed fits");
    vm
}

/// What a run in place leaves to compare: the summary (or error message), the packet and its
/// metadata.
type Observed = (Result<RunSummary, String>, Vec<u8>, Vec<u8>);

fn run_in_place(vm: &mut Vm, entry: usize, packet: &[u8]) -> Observed {
    let summary = vm
        .run_in_place(entry, packet, &[])
        .map_err(|e| e.to_string());
    let buffer = vm.packet_buffer();
    (summary, buffer.whole_packet(), buffer.meta().to_vec())
}

fn maps(vm: &Vm) -> Vec<Vec<(Vec<u8>, Vec<u8>)>> {
    vm.maps.iter().map(|m| m.entries()).collect()
}

#[test]
fn runs_in_place_match_full_runs() {
    let examples = load_all().expect("example corpus");
    assert!(examples.len() > 30);
    for example in &examples {
        let name = example.name();
        let (mut full, mut in_place) = (
            seeded(example, &example.object),
            seeded(example, &example.object),
        );
        for (i, packet) in example.packet_bytes().iter().enumerate() {
            let outcome = full.run(example.entry, packet, &[]);
            let (summary, packet_out, meta_out) =
                run_in_place(&mut in_place, example.entry, packet);
            match (outcome, summary) {
                (Ok(outcome), Ok(summary)) => {
                    assert_eq!(summary.return_value, outcome.return_value, "{name} [{i}]");
                    assert_eq!(summary.instructions, outcome.instructions, "{name} [{i}]");
                    assert_eq!(summary.final_program, outcome.final_program, "{name} [{i}]");
                    assert_eq!(summary.redirect, outcome.redirect, "{name} [{i}]");
                    assert_eq!(packet_out, outcome.packet, "{name} [{i}]");
                    assert_eq!(meta_out, outcome.meta, "{name} [{i}]");
                }
                (Err(a), Err(b)) => assert_eq!(a.to_string(), b, "{name} [{i}]"),
                (a, b) => panic!("{name} [{i}]: full run {a:?}, in place {b:?}"),
            }
        }
        assert_eq!(
            maps(&full),
            maps(&in_place),
            "{name}: maps after the packets"
        );
    }
}

/// Up to `count` slots of `object`'s program `entry` holding an ALU or jump instruction with an
/// immediate operand, spread over the program, each with its immediate changed.
fn changes(object: &Object, entry: usize, count: usize) -> Vec<(usize, Instruction)> {
    let insns = object.programs[entry].decode().expect("examples decode");
    let candidates: Vec<(usize, Instruction)> = insns
        .into_iter()
        .filter_map(|(slot, insn)| {
            let changed = match insn {
                Instruction::Alu {
                    wide,
                    op,
                    dst,
                    src: Operand::Imm(k),
                } => Instruction::Alu {
                    wide,
                    op,
                    dst,
                    src: Operand::Imm(k.wrapping_add(1)),
                },
                Instruction::Jump {
                    wide,
                    cond,
                    dst,
                    src: Operand::Imm(k),
                    off,
                } => Instruction::Jump {
                    wide,
                    cond,
                    dst,
                    src: Operand::Imm(k.wrapping_add(1)),
                    off,
                },
                _ => return None,
            };
            Some((slot, changed))
        })
        .collect();
    let step = candidates.len().div_ceil(count).max(1);
    candidates.into_iter().step_by(step).collect()
}

#[test]
fn replaced_instructions_run_as_the_changed_object_decoded_afresh() {
    let examples = load_all().expect("example corpus");
    let mut changed_examples = 0;
    for example in &examples {
        let name = example.name();
        let entry = example.entry;
        let changes = changes(&example.object, entry, 4);
        if changes.is_empty() {
            continue;
        }
        changed_examples += 1;
        let mut changed_object = example.object.clone();
        for (slot, insn) in &changes {
            let raw = insn.encode();
            changed_object.programs[entry].insns[*slot..*slot + raw.len()].copy_from_slice(&raw);
        }
        let mut fresh = seeded(example, &changed_object);
        let mut replaced = seeded(example, &example.object);
        for (slot, insn) in &changes {
            replaced
                .replace_instructions(entry, *slot, std::slice::from_ref(insn))
                .expect("the change fits the program");
        }
        for (i, packet) in example.packet_bytes().iter().enumerate() {
            assert_eq!(
                run_in_place(&mut replaced, entry, packet),
                run_in_place(&mut fresh, entry, packet),
                "{name} [{i}] with {changes:?}"
            );
        }
        assert_eq!(
            maps(&replaced),
            maps(&fresh),
            "{name}: maps after the packets"
        );
        // Putting the original instructions back gives the original program.
        let original = example.object.programs[entry]
            .decode()
            .expect("examples decode");
        let mut restored = seeded(example, &example.object);
        for (slot, insn) in &changes {
            restored
                .replace_instructions(entry, *slot, std::slice::from_ref(insn))
                .expect("the change fits the program");
        }
        for (slot, _) in &changes {
            let insn = original
                .iter()
                .find(|(s, _)| s == slot)
                .map(|(_, insn)| *insn)
                .expect("the changed slot starts an instruction");
            restored
                .replace_instructions(entry, *slot, &[insn])
                .expect("the original fits");
        }
        let mut pristine = seeded(example, &example.object);
        for (i, packet) in example.packet_bytes().iter().enumerate() {
            assert_eq!(
                run_in_place(&mut restored, entry, packet),
                run_in_place(&mut pristine, entry, packet),
                "{name} [{i}] restored"
            );
        }
    }
    assert!(changed_examples > 30, "{changed_examples} examples changed");
}

#[test]
fn a_replacement_past_the_end_is_refused() {
    let examples = load_all().expect("example corpus");
    let example = &examples[0];
    let mut vm = seeded(example, &example.object);
    let len = example.object.programs[example.entry].insns.len();
    let err = vm
        .replace_instructions(example.entry, len, &[Instruction::Exit])
        .expect_err("no slot past the end");
    assert!(err.to_string().contains("do not fit"), "{err}");
    let err = vm
        .replace_instructions(usize::MAX, 0, &[Instruction::Exit])
        .expect_err("no such program");
    assert!(err.to_string().contains("no program"), "{err}");
}
