//! How long the analyses take, per example, next to building the program's CFG in the same run.
//!
//! For every `examples/*.o` (its entry program): instructions, the time to build the CFG (the
//! baseline: what any analysis needs first), the time of `Analysis::run` (regions, packet lengths,
//! loop bounds), their ratio, the loops with their bounds, and the longest packet any edge needs.
//! Each time is the median of seven rounds. Run with `bench/analysis`.

use std::time::Instant;

use linerate_analysis::Analysis;
use linerate_cfg::Cfg;
use linerate_conformance::examples::load_all;

const ROUNDS: usize = 7;

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    v[v.len() / 2]
}

/// Median microseconds of `f` over [`ROUNDS`] rounds.
fn time_us(mut f: impl FnMut()) -> f64 {
    median(
        (0..ROUNDS)
            .map(|_| {
                let start = Instant::now();
                f();
                start.elapsed().as_secs_f64() * 1e6
            })
            .collect(),
    )
}

fn main() {
    println!(
        "{:<26} {:>6} {:>9} {:>12} {:>7} {:>8}  loops (max header runs)",
        "example", "insns", "cfg µs", "analysis µs", "ratio", "max len"
    );
    let mut ratios = Vec::new();
    for example in load_all().expect("example corpus") {
        let program = &example.object.programs[example.entry];
        let Ok(cfg) = Cfg::build(program) else {
            continue;
        };
        let cfg_us = time_us(|| {
            std::hint::black_box(Cfg::build(program).ok());
        });
        let analysis_us = time_us(|| {
            std::hint::black_box(Analysis::run(&example.object, &cfg));
        });
        let analysis = Analysis::run(&example.object, &cfg);
        let longest = (0..cfg.edges().len())
            .filter_map(|e| analysis.min_packet_len(e))
            .max()
            .unwrap_or(0);
        let loops: Vec<String> = analysis
            .loop_bounds()
            .iter()
            .map(|b| match b.max_header_runs {
                Some(n) => n.to_string(),
                None => "unbounded".into(),
            })
            .collect();
        ratios.push(analysis_us / cfg_us);
        println!(
            "{:<26} {:>6} {:>9.1} {:>12.1} {:>7.1} {:>8}  {}",
            example.name(),
            cfg.instructions().len(),
            cfg_us,
            analysis_us,
            analysis_us / cfg_us,
            longest,
            loops.join(", ")
        );
    }
    println!(
        "median analysis/cfg time ratio over {} examples: {:.1}",
        ratios.len(),
        median(ratios)
    );
}
