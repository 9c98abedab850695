//! Estimate against measurement on every example (paper 000 §6.1, Table 2's accuracy figures):
//! for each example's entry program that `linerate bound` handles on this host's x86 model (the
//! cached one, calibrated first if there is none, as `--target x86` does), the
//! `PATHS` slowest satisfiable paths, each witness timed through `BPF_PROG_TEST_RUN` and checked
//! to take its path ([`linerate_bound::measure`]). One row per example, then the overall figures
//! against the targets: no estimate more than 3% above its measurement, median
//! under-estimate at most 15%, the estimated SSP the measured slowest (within 3%) on at least 85%
//! of the examples (issue 30). Run with `bench/measure` or `cargo bench -p linerate-bound --bench measure`.
//! Environment: `MEASURE_PATHS` (default 10), `MEASURE_REPEAT`, `MEASURE_TRIALS`,
//! `MEASURE_SINGLE_RUNS`, `MEASURE_ONLY` (a substring of the example names to keep),
//! `MEASURE_MODEL` (a model file instead of this host's, e.g. crates/cost/models/x86.json),
//! `MEASURE_OBJECTS` (more objects, `:`-separated, measured after the examples on their first XDP
//! program: the public programs a user brings), `MEASURE_JSON` (a file to write every measured
//! path to, one JSON object a line: program, rank, estimate, trials, driver and reference
//! figures, for analyses the table does not make), `MEASURE_COMPARE` (such a file from an
//! earlier run: how far apart the two runs measured the same paths, which says whether this
//! host repeats its measurements closely enough to judge the 3% target).

#[path = "common/user_objects.rs"]
mod user_objects;

use std::io::Write as _;
use std::time::{Duration, Instant};

use linerate_bound::enumerate::Metric;
use linerate_bound::measure::{self, Check, PathMeasurement};
use linerate_bound::prepare::{prepare, Options as PrepareOptions};
use linerate_bound::solve::{guarantee, GuaranteeOptions};
use linerate_bound::ssp;
use linerate_conformance::examples::load_all;
use linerate_cost::Model;
use user_objects::user_objects;

/// Time the search for one example's paths may take.
const SEARCH_TIMEOUT: Duration = Duration::from_secs(20);

fn env_or<T: std::str::FromStr>(name: &str, default: T) -> T {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn pct(x: f64) -> String {
    format!("{:.1}%", x * 100.0)
}

/// `MEASURE_MODEL`'s file, or this host's model from the cache (calibrated now if missing).
fn model() -> Model {
    let fingerprint = linerate_calibrate::fingerprint::current();
    if let Some(path) = std::env::var_os("MEASURE_MODEL") {
        let model = Model::read(std::path::Path::new(&path)).expect("MEASURE_MODEL is a model");
        println!(
            "model: {} (this host: {})",
            path.to_string_lossy(),
            fingerprint.key()
        );
        return model;
    }
    let dir = linerate_calibrate::cache::directory().expect("a cache directory (HOME)");
    let mut progress = |p: &linerate_calibrate::Progress| eprintln!("calibrate: {p}");
    let options = linerate_calibrate::Options::first_use();
    match linerate_calibrate::cache::host_model(&dir, &fingerprint, &options, &mut progress) {
        Ok(linerate_calibrate::cache::HostModel::Cached { path, model })
        | Ok(linerate_calibrate::cache::HostModel::Calibrated { path, model, .. }) => {
            println!(
                "model: this host's, {} ({})",
                path.display(),
                fingerprint.summary()
            );
            model
        }
        Ok(linerate_calibrate::cache::HostModel::Unavailable(why)) => panic!("no BPF: {why}"),
        Err(e) => panic!("{e}"),
    }
}

/// A program to measure: an example's entry, or the first XDP program of an object the user
/// names.
struct Target {
    name: String,
    object: linerate_bpf::Object,
    entry: usize,
    /// The verifier is known to refuse it.
    refused: bool,
}

fn main() {
    if !linerate_kernel::usable_or_skip("bench/measure") {
        return;
    }
    let paths = env_or("MEASURE_PATHS", 10usize);
    let defaults = measure::Options::default();
    let options = measure::Options {
        repeat: env_or("MEASURE_REPEAT", defaults.repeat),
        trials: env_or("MEASURE_TRIALS", defaults.trials),
        single_runs: env_or("MEASURE_SINGLE_RUNS", defaults.single_runs),
        always_fresh: false,
        ..defaults
    };
    let only = std::env::var("MEASURE_ONLY").unwrap_or_default();
    let earlier = std::env::var_os("MEASURE_COMPARE").map(|path| earlier_run(path.as_ref()));
    let mut this_run: Vec<RunPath> = Vec::new();
    let mut paths_json = std::env::var_os("MEASURE_JSON")
        .map(|path| std::fs::File::create(path).expect("MEASURE_JSON can be created"));
    let model = model();
    println!(
        "x86 model against BPF_PROG_TEST_RUN: {paths} slowest satisfiable paths per example, \
         {} runs x {} trials per path (median)\n",
        options.repeat, options.trials
    );
    println!(
        "{:<24} {:>5} {:>5} {:>6} {:>6} {:>8} {:>8} {:>8} {:>8}  not counted",
        "example", "paths", "count", "under", "over", "max over", "med und", "max und", "SSP slow"
    );
    let started = Instant::now();
    let mut skipped = Vec::new();
    let mut all: Vec<PathMeasurement> = Vec::new();
    let mut adjusted: Vec<PathMeasurement> = Vec::new();
    // Per program: the empty program's slow-moment time over the model's per-packet work.
    let mut drifts: Vec<f64> = Vec::new();
    let (mut ssp_examples, mut ssp_slowest, mut ssp_slowest_resolution) = (0, 0, 0);
    let mut targets: Vec<Target> = load_all()
        .expect("example corpus")
        .into_iter()
        .map(|e| Target {
            name: e.name().to_string(),
            refused: e.refused.contains(&e.entry),
            entry: e.entry,
            object: e.object,
        })
        .collect();
    targets.extend(
        user_objects("MEASURE_OBJECTS", &mut skipped)
            .into_iter()
            .map(|u| Target {
                name: u.name,
                object: u.object,
                entry: u.entry,
                refused: false,
            }),
    );
    for target in &targets {
        let name = &target.name;
        if !name.contains(&only) {
            continue;
        }
        let object = &target.object;
        let program = target.entry;
        if target.refused {
            skipped.push(format!("{name}: the verifier refuses it"));
            continue;
        }
        let prepared = match prepare(object, program, &model, &PrepareOptions::default()) {
            Ok(p) => p,
            Err(e) => {
                skipped.push(format!("{name}: {e}"));
                continue;
            }
        };
        let search = GuaranteeOptions {
            learn: true,
            search: ssp::Options {
                metric: Metric::PacketRate,
                paths,
                timeout: Some(SEARCH_TIMEOUT),
                max_memory: 1 << 30,
                threads: std::thread::available_parallelism().map_or(1, |n| n.get()),
                record_claims: false,
            },
            exhaustive: false,
            check_timeout: Some(Duration::from_secs(10)),
        };
        let found = match guarantee(object, program, &prepared, &model, &search, |_| {}) {
            Ok(g) => g.outcome.found,
            Err(e) => {
                skipped.push(format!("{name}: {e}"));
                continue;
            }
        };
        if found.is_empty() {
            skipped.push(format!("{name}: no satisfiable path found"));
            continue;
        }
        let measured = match measure::measure(object, program, &prepared, &model, &found, &options)
        {
            Ok(m) => m,
            Err(e) => {
                skipped.push(format!("{name}: {e}"));
                continue;
            }
        };
        let s = measure::summarize(&measured);
        let mut why: Vec<String> = Vec::new();
        for p in measured.iter().filter(|p| !p.counts()) {
            why.push(match &p.check {
                Check::Unrepeatable(_) => format!("{}:unrepeatable", p.rank),
                Check::NoWitness(_) => format!("{}:no witness", p.rank),
                Check::Differs(d) => format!("{}:differs ({d})", p.rank),
                Check::Drifts(d) => format!("{}:drifts ({d})", p.rank),
                Check::Confirmed if p.summarised => format!("{}:summary", p.rank),
                Check::Confirmed => match p.ratio() {
                    Some(r) => format!("{}:fresh {r:.2}", p.rank),
                    None => format!("{}:not timed", p.rank),
                },
            });
        }
        if let Some(slowest) = s.ssp_is_slowest {
            ssp_examples += 1;
            ssp_slowest += usize::from(slowest);
            ssp_slowest_resolution += usize::from(s.ssp_is_slowest_within_resolution == Some(true));
        }
        println!(
            "{:<24} {:>5} {:>5} {:>6} {:>6} {:>8} {:>8} {:>8} {:>8}  {}",
            name,
            s.paths,
            s.counted,
            pct(s.under_share),
            pct(s.over_share),
            pct(s.largest_over),
            pct(s.median_under),
            pct(s.largest_under),
            match (s.ssp_is_slowest, s.slowest_rank) {
                (Some(true), _) => "yes".to_string(),
                (Some(false), Some(r)) if s.ssp_is_slowest_within_resolution == Some(true) => {
                    format!("~ ({r})")
                }
                (Some(false), Some(r)) => format!("no ({r})"),
                _ => "-".to_string(),
            },
            why.join(", ")
        );
        this_run.extend(measured.iter().filter(|p| p.counts()).filter_map(|p| {
            Some(RunPath {
                program: name.to_string(),
                rank: p.rank,
                estimate_ns: 1e9 / p.estimate_pps,
                slow_ns: p.slow_ns()?,
                fastest_ns: p.trials_ns.iter().copied().reduce(f64::min)?,
            })
        }));
        if let Some(file) = &mut paths_json {
            for p in &measured {
                let line = serde_json::json!({
                    "program": name,
                    "rank": p.rank,
                    "counted": p.counts(),
                    "method": p.method.map(|m| format!("{m:?}")),
                    "estimate_ns": 1e9 / p.estimate_pps,
                    "slow_ns": p.slow_ns(),
                    "median_ns": p.median_ns(),
                    "trials_ns": p.trials_ns,
                    "driver_ns": p.driver_ns,
                    "reference_ns": p.reference_ns,
                    "model_per_packet_ns": 1e9 / model.packet_rate(model.per_packet(), 0).pps,
                });
                writeln!(file, "{line}").expect("MEASURE_JSON is writable");
            }
        }
        // The same paths with the model's per-packet work replaced by the empty program's time
        // in the rounds that timed them: what the per-instruction prices account for, this
        // host's drift since calibration aside.
        if let Some(host) = measure::host_now(&model, &measured) {
            drifts.push(host.reference_slow_ns / host.model_per_packet_ns);
            adjusted.extend(measured.iter().map(|p| {
                let estimate_ns =
                    1e9 / p.estimate_pps - host.model_per_packet_ns + host.reference_slow_ns;
                PathMeasurement {
                    estimate_pps: 1e9 / estimate_ns,
                    ..p.clone()
                }
            }));
        }
        all.extend(measured);
    }
    // Over all examples: the per-path figures pooled.
    let total = measure::summarize(&all);
    let counted: Vec<f64> = all
        .iter()
        .filter(|p| p.counts())
        .filter_map(PathMeasurement::ratio)
        .collect();
    let above_3 = counted.iter().filter(|r| **r > 1.03).count();
    // Over by more than 3% even if the path took the least its rounded-down measurement allows.
    let above_3_beyond_resolution = all
        .iter()
        .filter(|p| p.counts())
        .filter_map(|p| Some((1e9 / p.estimate_pps, 1e9 / p.measured_pps()?)))
        .filter(|(estimate, measured)| {
            estimate * (1.0 + measure::SLOWEST_TOLERANCE) < measured - measure::RESOLUTION_NS / 2.0
        })
        .count();
    println!(
        "\n{} paths measured ({} counted) in {:.0} s; under-estimated {}, over-estimated {}",
        total.paths,
        total.counted,
        started.elapsed().as_secs_f64(),
        pct(total.under_share),
        pct(total.over_share)
    );
    println!(
        "target: no estimate more than 3% above its measurement: largest over-estimate {} \
         ({above_3} paths above 3%) -> {}",
        pct(total.largest_over),
        if above_3 == 0 { "met" } else { "MISSED" }
    );
    println!(
        "  of them beyond the kernel's {} ns resolution (above 3% even at the least time the \
         rounded-down figure allows): {above_3_beyond_resolution}",
        measure::RESOLUTION_NS
    );
    println!(
        "target: median under-estimate at most 15%: {} (largest {}) -> {}",
        pct(total.median_under),
        pct(total.largest_under),
        if total.median_under <= 0.15 {
            "met"
        } else {
            "MISSED"
        }
    );
    let share = if ssp_examples == 0 {
        0.0
    } else {
        ssp_slowest as f64 / ssp_examples as f64
    };
    println!(
        "target: estimated SSP measured slowest (within 3%) on at least 85% of examples: \
         {ssp_slowest} of {ssp_examples} ({}) -> {}",
        pct(share),
        if share >= 0.85 { "met" } else { "MISSED" }
    );
    let share = if ssp_examples == 0 {
        0.0
    } else {
        ssp_slowest_resolution as f64 / ssp_examples as f64
    };
    println!(
        "  the same within the kernel's {} ns resolution as well (\"~\" in the table): \
         {ssp_slowest_resolution} of {ssp_examples} ({})",
        measure::RESOLUTION_NS,
        pct(share),
    );
    drifts.sort_by(f64::total_cmp);
    if let (Some(lo), Some(hi)) = (drifts.first(), drifts.last()) {
        let adjusted_total = measure::summarize(&adjusted);
        let adjusted_above_3 = adjusted
            .iter()
            .filter(|p| p.counts())
            .filter_map(PathMeasurement::ratio)
            .filter(|r| *r > 1.03)
            .count();
        println!(
            "\nthis host meanwhile: the empty program's p90 over the model's per-packet work \
             {lo:.2}..{hi:.2} (median {:.2}) across the programs' rounds",
            drifts[drifts.len() / 2]
        );
        println!(
            "with the per-packet work taken from those rounds (the per-instruction prices alone, \
             drift aside): over-estimated {}, largest {} ({adjusted_above_3} paths above 3%); \
             median under-estimate {}",
            pct(adjusted_total.over_share),
            pct(adjusted_total.largest_over),
            pct(adjusted_total.median_under)
        );
    }
    let fresh: Vec<f64> = all
        .iter()
        .filter(|p| p.check == Check::Confirmed && p.method == Some(measure::Method::Fresh))
        .filter_map(PathMeasurement::ratio)
        .collect();
    if !fresh.is_empty() {
        println!(
            "paths timed in single runs (not counted: colder caches): {}, estimate/measurement \
             {:.2}..{:.2}",
            fresh.len(),
            fresh.iter().copied().fold(f64::INFINITY, f64::min),
            fresh.iter().copied().fold(0.0, f64::max)
        );
    }
    if let Some(earlier) = earlier {
        print_run_to_run(&earlier, &this_run);
    }
    if !skipped.is_empty() {
        println!("\nnot measured:\n  {}", skipped.join("\n  "));
    }
}

/// A counted path's figures, as this run measured them or as `MEASURE_JSON` kept them.
struct RunPath {
    program: String,
    rank: usize,
    estimate_ns: f64,
    slow_ns: f64,
    fastest_ns: f64,
}

/// The counted paths of an earlier run's `MEASURE_JSON`.
fn earlier_run(path: &std::path::Path) -> Vec<RunPath> {
    let text = std::fs::read_to_string(path).expect("MEASURE_COMPARE is readable");
    text.lines()
        .filter_map(|line| {
            let v: serde_json::Value = serde_json::from_str(line).ok()?;
            if v["counted"] != true {
                return None;
            }
            let trials = v["trials_ns"].as_array()?.iter().filter_map(|t| t.as_f64());
            Some(RunPath {
                program: v["program"].as_str()?.to_string(),
                rank: usize::try_from(v["rank"].as_u64()?).ok()?,
                estimate_ns: v["estimate_ns"].as_f64()?,
                slow_ns: v["slow_ns"].as_f64()?,
                fastest_ns: trials.reduce(f64::min)?,
            })
        })
        .collect()
}

/// How far apart two runs measured the paths both counted (the same program, rank and estimate
/// within 1%, so the same path): the measurement's 90th percentile and its fastest trial.
fn print_run_to_run(earlier: &[RunPath], now: &[RunPath]) {
    let pairs: Vec<(&RunPath, &RunPath)> = now
        .iter()
        .filter_map(|n| {
            let e = earlier.iter().find(|e| {
                e.program == n.program
                    && e.rank == n.rank
                    && (e.estimate_ns / n.estimate_ns - 1.0).abs() < 0.01
            })?;
            Some((e, n))
        })
        .collect();
    if pairs.is_empty() {
        println!("\nrun to run: no path of this run was counted in the earlier one");
        return;
    }
    let apart = |figure: fn(&RunPath) -> f64| {
        let mut gaps: Vec<f64> = pairs
            .iter()
            .map(|(e, n)| (figure(n) / figure(e) - 1.0).abs())
            .collect();
        gaps.sort_by(f64::total_cmp);
        let over_3 = gaps.iter().filter(|g| **g > 0.03).count();
        format!(
            "median {} apart, 90th percentile {}, {} of {} paths more than 3%",
            pct(gaps[gaps.len() / 2]),
            pct(gaps[gaps.len() * 9 / 10]),
            over_3,
            gaps.len()
        )
    };
    println!(
        "\nrun to run, the paths both runs counted: measurement (90th percentile) {}; fastest \
         trial {}",
        apart(|p| p.slow_ns),
        apart(|p| p.fastest_ns)
    );
}
