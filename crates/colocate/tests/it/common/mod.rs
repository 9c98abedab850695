//! Shared by the integration tests: random NFs for the simulated device (seeded), and the
//! benchmark co-run protocol of §4.2 that both pattern detection and composition use.

#![allow(dead_code)]

use linerate_colocate::compose::BenchmarkCoRun;
use linerate_colocate::sim::{AccelBench, AccelDemand, AccelKind, MemBench, Nf, Testbed, Workload};
use linerate_colocate::{Pattern, ServiceTime};
use rand::rngs::StdRng;
use rand::Rng;

pub mod traffic;

pub const MB: f64 = 1024.0 * 1024.0;
pub const US: f64 = 1e-6;

/// An NF whose pattern and demands are drawn at random: memory and regex always, compression
/// with probability 0.4. Accelerator request times are drawn around the core stage's time per
/// packet so that no stage dwarfs the others (a pipeline whose accelerator is ten times faster
/// than its cores behaves like a single-resource NF, and there the two patterns coincide).
pub fn random_nf(rng: &mut StdRng, name: &str) -> Nf {
    let pattern = if rng.gen_bool(0.5) {
        Pattern::Pipeline
    } else {
        Pattern::RunToCompletion
    };
    let cores: u32 = rng.gen_range(1..=2);
    let compute_time = rng.gen_range(0.3..1.0) * US;
    let accesses_per_packet = rng.gen_range(10.0..40.0);
    let working_set = rng.gen_range(0.5..4.0) * MB;
    let core_time_per_packet = (compute_time + accesses_per_packet * 12e-9) / f64::from(cores);
    let demand = |kind: AccelKind, rng: &mut StdRng| {
        let mtbr = rng.gen_range(100.0..1000.0);
        let request_time = core_time_per_packet * rng.gen_range(0.3..1.2);
        AccelDemand {
            kind,
            queues: cores,
            requests_per_packet: 1.0,
            work: ServiceTime {
                base: 0.7 * request_time,
                per_match: 0.3 * request_time / mtbr,
            },
            mtbr,
        }
    };
    let mut accels = vec![demand(AccelKind::Regex, rng)];
    if rng.gen_bool(0.4) {
        accels.push(demand(AccelKind::Compression, rng));
    }
    Nf {
        name: name.to_string(),
        cores,
        compute_time,
        accesses_per_packet,
        working_set,
        accels,
        pattern,
        offered_rate: None,
    }
}

/// The contention settings of the detection protocol: a mem-bench level crossed with an
/// accelerator-bench level (the same level on every accelerator the NF uses).
pub fn benchmark_settings() -> Vec<(MemBench, (u32, f64))> {
    let mem = [
        MemBench {
            working_set: 8.0 * MB,
            access_rate: 60e6,
        },
        MemBench {
            working_set: 16.0 * MB,
            access_rate: 120e6,
        },
        MemBench {
            working_set: 32.0 * MB,
            access_rate: 180e6,
        },
    ];
    let accel = [(1, 1.0 * US), (2, 1.5 * US)];
    mem.iter()
        .flat_map(|m| accel.iter().map(move |a| (*m, *a)))
        .collect()
}

/// The NF's noisy solo throughput.
pub fn solo(bed: &mut Testbed, nf: &Nf) -> f64 {
    bed.measure(&[Workload::Nf(nf.clone())]).unwrap()[0]
}

/// The NF's noisy throughput next to `others`.
pub fn with(bed: &mut Testbed, nf: &Nf, others: &[Workload]) -> f64 {
    let mut all = vec![Workload::Nf(nf.clone())];
    all.extend_from_slice(others);
    bed.measure(&all).unwrap()[0]
}

/// §4.2's protocol: at each setting, the NF's throughput with the mem-bench alone, with each of
/// its accelerators' benchmarks alone, and with all of them at once. The detector sees only these
/// throughputs.
pub fn benchmark_co_runs(bed: &mut Testbed, nf: &Nf) -> Vec<BenchmarkCoRun> {
    let mut runs = Vec::new();
    for (mem, (queues, request_time)) in benchmark_settings() {
        let mut benches = vec![Workload::MemBench(mem)];
        for demand in &nf.accels {
            benches.push(Workload::AccelBench(AccelBench::backlogged(
                demand.kind,
                queues,
                request_time,
            )));
        }
        let alone = benches
            .iter()
            .map(|b| with(bed, nf, std::slice::from_ref(b)))
            .collect();
        let together = with(bed, nf, &benches);
        runs.push(BenchmarkCoRun { alone, together });
    }
    runs
}

/// mem-bench replaying each competitor's memory contention in a co-location: its working set at
/// its access rate when it runs at `rates[i]` packets per second.
pub fn memory_replay(competitors: &[Nf], rates: &[f64]) -> Vec<Workload> {
    competitors
        .iter()
        .zip(rates)
        .map(|(c, rate)| {
            Workload::MemBench(MemBench {
                working_set: c.working_set,
                access_rate: rate * c.accesses_per_packet,
            })
        })
        .collect()
}

/// Accelerator benchmarks replaying the competitors' requests to accelerators of `kind` at their
/// co-run `rates` (empty when none of them uses one).
pub fn accel_replay(competitors: &[Nf], rates: &[f64], kind: AccelKind) -> Vec<Workload> {
    competitors
        .iter()
        .zip(rates)
        .flat_map(|(c, rate)| {
            c.accels.iter().filter(|d| d.kind == kind).map(move |d| {
                Workload::AccelBench(AccelBench {
                    kind,
                    queues: d.queues,
                    work: d.work,
                    mtbr: d.mtbr,
                    offered: Some(rate * d.requests_per_packet),
                })
            })
        })
        .collect()
}
