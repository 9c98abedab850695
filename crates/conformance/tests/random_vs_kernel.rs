//! Differential test: random verifier-valid programs give the same return value, output packet and
//! metadata in the interpreter as in this host's kernel.
//!
//! 2,000 programs per run by default (`LINERATE_RANDOM_PROGRAMS` overrides), each on three random
//! packets. A disagreement (or a program the verifier refuses, which would be a generator bug) is
//! shrunk by proptest to a minimal program and printed as a disassembly with its packet.

use linerate_bpf::insn::Instruction;
use linerate_conformance::random_program::{object, packet, xdp_program};
use linerate_kernel::{load_object, usable_or_skip, TestRunInput};
use linerate_vm::{Vm, VmOptions};
use proptest::test_runner::{Config, TestCaseError, TestError, TestRunner};

fn listing(insns: &[Instruction]) -> String {
    insns
        .iter()
        .enumerate()
        .map(|(i, x)| format!("{i}: {x:?}\n"))
        .collect()
}

fn compare(insns: &[Instruction], packets: &[Vec<u8>]) -> Result<(), TestCaseError> {
    let obj = object("random", insns);
    let loaded = load_object(&obj).map_err(|e| {
        TestCaseError::fail(format!(
            "kernel rejected a generated program: {e}\n{}",
            e.verifier_log().unwrap_or("")
        ))
    })?;
    let mut vm =
        Vm::new(&obj, VmOptions::default()).map_err(|e| TestCaseError::fail(e.to_string()))?;
    for packet in packets {
        let kernel = loaded
            .test_run(0, &TestRunInput::new(packet.clone()))
            .map_err(|e| TestCaseError::fail(e.to_string()))?;
        let ours = vm.run(0, packet, &[]).map_err(|e| {
            TestCaseError::fail(format!("interpreter failed where the kernel ran: {e}"))
        })?;
        let same = ours.return_value == kernel.retval as u64
            && ours.packet == kernel.packet
            && ours.meta == kernel.meta;
        if !same {
            return Err(TestCaseError::fail(format!(
                "interpreter and kernel disagree on packet {}\n  return: vm {:#x}, kernel {:#x}\n  registers (vm):     {}\n  registers (kernel): {}",
                hex(packet),
                ours.return_value,
                kernel.retval,
                hex(&ours.packet[64..ours.packet.len().min(136)]),
                hex(&kernel.packet[64.min(kernel.packet.len())..kernel.packet.len().min(136)]),
            )));
        }
    }
    Ok(())
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[test]
fn interpreter_agrees_with_kernel_on_random_programs() {
    if !usable_or_skip("random differential test") {
        return;
    }
    let cases = std::env::var("LINERATE_RANDOM_PROGRAMS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(2000);
    let mut runner = TestRunner::new(Config {
        cases,
        failure_persistence: None,
        ..Config::default()
    });
    let strategy = (xdp_program(40), proptest::collection::vec(packet(), 3));
    let result = runner.run(&strategy, |(insns, packets)| compare(&insns, &packets));
    match result {
        Ok(()) => eprintln!("{cases} random programs: interpreter and kernel agree"),
        Err(TestError::Fail(reason, (insns, packets))) => panic!(
            "minimized reproducer ({} instructions, first packet {}):\n{}\n{reason}",
            insns.len(),
            hex(&packets[0]),
            listing(&insns)
        ),
        Err(TestError::Abort(reason)) => panic!("aborted: {reason}"),
    }
}
