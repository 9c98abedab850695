//! The formula and the interpreter agree: random programs of the conformance generator (every
//! ALU operation in both widths, loads, stores, atomics, forward branches; the harness writes
//! every register back into the packet) run in the interpreter on random packets, and the
//! engine, given the path the interpreter took and the same packet, finds it satisfiable and
//! computes the same output packet (so the same final registers) and the same return value.

use crate::common;

use linerate_conformance::random_program::{object, packet, xdp_program};
use linerate_smt::{Options, PathChecker, Verdict};
use linerate_vm::{Vm, VmOptions};
use proptest::prelude::*;

fn agree(insns: &[linerate_bpf::insn::Instruction], input: &[u8]) -> Result<(), TestCaseError> {
    let object = object("random", insns);
    let mut vm = Vm::new(
        &object,
        VmOptions {
            record_steps: true,
            ..VmOptions::default()
        },
    )
    .expect("vm");
    let run = vm.run(0, input, &[]).expect("the generator's programs run");
    let path = common::decisions(&object, &run.steps);
    let options = Options {
        packet: Some(input.to_vec()),
        ..Options::default()
    };
    let verdict = PathChecker::new(&object, 0, options)
        .and_then(|mut c| c.check(&path))
        .map_err(|e| TestCaseError::fail(e.to_string()))?;
    let Verdict::Sat(w) = verdict else {
        return Err(TestCaseError::fail(format!(
            "the interpreter's path with its packet is {verdict:?}"
        )));
    };
    prop_assert_eq!(&w.packet, &input.to_vec());
    prop_assert_eq!(&w.output_packet, &run.packet);
    prop_assert_eq!(w.return_value, run.return_value);
    prop_assert_eq!(w.blocks, common::blocks(&object, &run.steps));
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn formula_and_interpreter_agree(insns in xdp_program(24), input in packet()) {
        agree(&insns, &input)?;
    }
}
