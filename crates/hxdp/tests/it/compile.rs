//! The compiler's schedules on every example: each agrees with the interpreter on at least 200
//! packets in the Sephirot model and breaks no row rule, with every pass on, with every pass
//! off, and at other lane counts.

use crate::support;

use linerate_hxdp::check::{check, compare_with_vm};
use linerate_hxdp::compile::{compile, recognise, CompileOptions};
use linerate_hxdp::passes::PassOptions;
use linerate_hxdp::rom::{read_rom, write_rom, IMEM_ROWS};
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

#[test]
fn roms_read_back_run_the_same_and_are_recognised() {
    let mut checked = 0;
    for (name, object, seed, packets) in example_inputs() {
        let Ok(compiled) = compile(&object, 0, &CompileOptions::default()) else {
            continue;
        };
        let rom = write_rom(&compiled.schedule, IMEM_ROWS).unwrap();
        let read = read_rom(&rom).unwrap_or_else(|e| panic!("{name}: {e}"));
        // The ROM keeps every instruction and jump target; only the source slots are lost.
        assert_eq!(read.rows.len(), compiled.schedule.rows.len(), "{name}");
        for (a, b) in compiled.schedule.rows.iter().zip(&read.rows) {
            for (x, y) in a.slots.iter().zip(&b.slots) {
                let x = x.as_ref().map(|s| (s.insn, s.target));
                let y = y.as_ref().map(|s| (s.insn, s.target));
                assert_eq!(x, y, "{name}");
            }
        }
        let comparison =
            compare_with_vm(&read, &object, 0, &packets, &seed, &VmOptions::default()).unwrap();
        assert_eq!(comparison.mismatches, vec![], "{name}");
        let ours = recognise(&object, 0, &read).unwrap_or_else(|| panic!("{name} not recognised"));
        assert_eq!(ours.schedule, compiled.schedule, "{name}");
        checked += 1;
    }
    assert!(checked >= 25, "{checked}");
}
