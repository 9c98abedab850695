//! Rows per edge: along the path a packet takes through the source program, the prices of
//! `perf::prices` add up to the cycles the Sephirot model spends executing the compiled program on
//! that packet — on every example and packet the model runs to an exit.

use crate::support;

use linerate_cfg::Cfg;
use linerate_cost::trace::entry_blocks;
use linerate_cost::Model;
use linerate_hxdp::compile::{compile, CompileOptions};
use linerate_hxdp::perf::prices;
use linerate_hxdp::sephirot::{simulate, Timing};
use linerate_hxdp::HxdpError;
use linerate_vm::{Vm, VmOptions};
use support::example_inputs;

#[test]
fn prices_add_up_to_the_model_cycles_along_each_path() {
    let model = Model::builtin("hxdp").unwrap();
    let mut packets_compared = 0;
    for timing in [
        Timing::default(),
        Timing {
            early_exit: false,
            ..Timing::default()
        },
    ] {
        for (name, object, seed, packets) in example_inputs() {
            for (program, def) in object.programs.iter().enumerate() {
                if def.kind() != linerate_bpf::ProgramKind::Xdp {
                    continue;
                }
                let compiled = match compile(&object, program, &CompileOptions::default()) {
                    Ok(c) => c,
                    Err(HxdpError::Unsupported { .. } | HxdpError::TooLong { .. }) => continue,
                    Err(e) => panic!("{name}: {e}"),
                };
                let priced = prices(&object, program, &compiled, &timing, &model).unwrap();
                let cfg = Cfg::build(def).unwrap();
                let simulation = simulate(
                    &compiled.schedule,
                    &object,
                    program,
                    &packets,
                    &seed,
                    VmOptions::default(),
                    &timing,
                )
                .unwrap();
                let mut vm = Vm::new(
                    &object,
                    VmOptions {
                        record_steps: true,
                        ..VmOptions::default()
                    },
                )
                .unwrap();
                vm.seed(&seed).unwrap();
                for (i, (packet, run)) in packets.iter().zip(&simulation.packets).enumerate() {
                    let Ok(outcome) = vm.run(program, packet, &[]) else {
                        continue;
                    };
                    if run.out_of_bounds {
                        continue;
                    }
                    let blocks =
                        entry_blocks(&cfg, outcome.steps.iter().map(|s| (s.program, s.slot)))
                            .unwrap();
                    let mut cycles = 0.0;
                    for pair in blocks.windows(2) {
                        let e = cfg
                            .edges()
                            .iter()
                            .position(|e| e.from == pair[0] && e.to == pair[1])
                            .unwrap();
                        cycles += priced.edges[e].0[0];
                    }
                    cycles += priced.blocks[*blocks.last().unwrap()].0[0];
                    assert_eq!(
                        cycles, run.exec_cycles as f64,
                        "{name} packet {i}: priced {cycles}, model {}",
                        run.exec_cycles
                    );
                    packets_compared += 1;
                }
            }
        }
    }
    assert!(packets_compared > 5000, "{packets_compared}");
}

#[test]
fn the_shipped_model_charges_the_fitted_io_of_a_leaving_packet() {
    let model = Model::builtin("hxdp").unwrap();
    let timing = Timing::default();
    let io = timing.io_in_cycles + timing.io_out_cycles;
    assert!(
        (model.per_packet().0[0] - io).abs() < 1e-9,
        "hxdp.json per_packet {} but the model's fitted I/O is {io}",
        model.per_packet().0[0]
    );
}
