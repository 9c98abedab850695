//! How well the shipped x86 model predicts this host's kernel, per example.
//!
//! For every `examples/*.o` (its entry program) and every crafted packet whose run stays in that
//! program (no tail call): the interpreter records the executed path, the x86 model prices it
//! (per-packet work plus the path's edges and last block, in ns at the model's clock), and the
//! kernel runs the same packet with the same seeded maps through `BPF_PROG_TEST_RUN` (average over
//! `repeat` runs, median of three). The table gives, per example, the median predicted and
//! measured ns per packet and the range of measured / predicted. Run with `bench/cost` or
//! `cargo bench -p linerate-cost --bench x86_vs_kernel`.

use linerate_bpf::contents::MapMode;
use linerate_cfg::Cfg;
use linerate_conformance::examples::load_all;
use linerate_cost::trace::entry_blocks;
use linerate_cost::{Model, ProgramCost};
use linerate_vm::drive::Driver;
use linerate_vm::VmOptions;

const KERNEL_REPEAT: u32 = 20_000;
const KERNEL_ROUNDS: usize = 3;

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    v[v.len() / 2]
}

fn main() {
    if !linerate_kernel::usable_or_skip("bench/cost kernel side") {
        return;
    }
    let model = Model::builtin("x86").expect("shipped x86 model");
    let hz = model.components()[0].capacity_per_s;
    println!(
        "x86 model: {} ({:.0} MHz)\n{:<18} {:>7} {:>12} {:>12} {:>10} {:>15}",
        model.file().device.cpu_model.as_deref().unwrap_or("?"),
        hz / 1e6,
        "example",
        "packets",
        "model ns",
        "kernel ns",
        "kern/model",
        "range"
    );
    let mut all = Vec::new();
    for example in load_all().expect("example corpus") {
        let program = &example.object.programs[example.entry];
        let cfg = Cfg::build(program).expect("cfg");
        let cost = ProgramCost::new(&example.object, &cfg, &model).expect("x86 prices examples");
        let options = VmOptions {
            record_steps: true,
            ..Default::default()
        };
        let mut vm = Driver::new(&example.object, &example.seed, options, MapMode::Fresh)
            .expect("interpreter");
        let mut loaded =
            linerate_kernel::drive::Driver::new(&example.object, &example.seed, MapMode::Fresh)
                .expect("kernel loads and seeds example");
        let (mut predicted, mut measured, mut ratios) = (Vec::new(), Vec::new(), Vec::new());
        for packet in &example.packets {
            let out = vm.run(example.entry, &packet.bytes, &[]).expect("runs");
            let Some(blocks) = entry_blocks(&cfg, out.steps.iter().map(|s| (s.program, s.slot)))
            else {
                continue;
            };
            let ns = cost.path_cost(&cfg, &model, &blocks).expect("path").0[0] / hz * 1e9;
            let kernel = median(
                (0..KERNEL_ROUNDS)
                    .map(|_| {
                        loaded
                            .run(example.entry, &packet.bytes, &[], KERNEL_REPEAT)
                            .expect("test run")
                            .duration_ns as f64
                    })
                    .collect(),
            );
            predicted.push(ns);
            measured.push(kernel);
            ratios.push(kernel / ns);
        }
        if ratios.is_empty() {
            continue;
        }
        let lo = ratios.iter().copied().fold(f64::INFINITY, f64::min);
        let hi = ratios.iter().copied().fold(0.0, f64::max);
        println!(
            "{:<18} {:>7} {:>12.1} {:>12.1} {:>10.2} {:>7.2}..{:<6.2}",
            example.name(),
            ratios.len(),
            median(predicted),
            median(measured),
            median(ratios.clone()),
            lo,
            hi
        );
        all.extend(ratios);
    }
    let n = all.len();
    let over = all.iter().filter(|r| **r > 1.0).count();
    println!(
        "\n{n} packets: kernel / model median {:.2}, range {:.2}..{:.2}; the kernel was slower than \
         the model on {over} ({:.0}%)",
        median(all.clone()),
        all.iter().copied().fold(f64::INFINITY, f64::min),
        all.iter().copied().fold(0.0, f64::max),
        100.0 * over as f64 / n.max(1) as f64
    );
}
