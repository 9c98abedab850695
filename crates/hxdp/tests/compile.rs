//! The compiler's schedules on every example: each agrees with the interpreter on at least 200
//! packets in the Sephirot model and breaks no row rule, with every pass on, with every pass
//! off, and at other lane counts.

mod support;

use linerate_hxdp::check::check;
use linerate_hxdp::compile::{compile, CompileOptions};
use linerate_hxdp::passes::PassOptions;
use linerate_hxdp::scheduler::ScheduleOptions;
use linerate_hxdp::HxdpError;
use linerate_vm::VmOptions;
use support::example_inputs;

/// Compiles every runnable example under `options` and checks each schedule; returns how many
/// programs were checked.
fn all_agree(options: &CompileOptions) -> usize {
    let mut checked = 0;
    for (name, object, seed, packets) in example_inputs() {
        for (program, def) in object.programs.iter().enumerate() {
            if def.kind() != linerate_bpf::ProgramKind::Xdp {
                continue;
            }
            let compiled = match compile(&object, program, options) {
                Ok(c) => c,
                Err(HxdpError::Unsupported { .. } | HxdpError::TooLong { .. }) => continue,
                Err(e) => panic!("{name} {}: {e}", def.name),
            };
            let report = check(
                &compiled.schedule,
                &object,
                program,
                &packets,
                &seed,
                &VmOptions::default(),
            )
            .unwrap_or_else(|e| panic!("{name} {}: {e}", def.name));
            assert!(report.packets_checked >= 200, "{name} {}", def.name);
            assert_eq!(
                report.violations,
                vec![],
                "{name} {}:\n{}",
                def.name,
                compiled.schedule
            );
            assert_eq!(
                report.mismatches,
                vec![],
                "{name} {}:\n{}",
                def.name,
                compiled.schedule
            );
            checked += 1;
        }
    }
    checked
}

#[test]
fn compiled_schedules_agree_with_the_interpreter() {
    let checked = all_agree(&CompileOptions::default());
    eprintln!("programs checked: {checked}");
    assert!(checked >= 25, "only {checked} programs compiled");
}

#[test]
fn schedules_without_passes_or_renaming_agree_too() {
    let options = CompileOptions {
        passes: PassOptions::none(),
        rename: false,
        schedule: ScheduleOptions {
            parallel_branching: false,
            ..ScheduleOptions::default()
        },
        ..CompileOptions::default()
    };
    assert!(all_agree(&options) >= 25);
}

#[test]
fn two_and_eight_lanes_agree_too() {
    for lanes in [2, 8] {
        let options = CompileOptions {
            schedule: ScheduleOptions {
                lanes,
                ..ScheduleOptions::default()
            },
            ..CompileOptions::default()
        };
        assert!(all_agree(&options) >= 25, "{lanes} lanes");
    }
}
