//! The round-robin accelerator model (paper 004 §4.1.1, §5.1.1, Appendix E) against the
//! simulated device: the fluid equilibrium against the request-level scheduler, the inference of
//! an unknown NF's queue count and solo rate from noisy co-runs, and the Eq. 5 fit.

use crate::common;

use common::US;
use linerate_colocate::accel::{equilibrium, fit_service_time, infer_tenant, CoRun, Tenant};
use linerate_colocate::scheduler::simulate_round_robin;
use linerate_colocate::sim::{AccelBench, AccelDemand, AccelKind, Device, Nf, Testbed, Workload};
use linerate_colocate::{Pattern, ServiceTime};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

fn random_tenants(rng: &mut StdRng, count: usize) -> Vec<Tenant> {
    (0..count)
        .map(|_| Tenant {
            queues: rng.gen_range(1..=4),
            request_time: rng.gen_range(0.5..5.0) * US,
            offered: None,
        })
        .collect()
}

fn worst_relative_gap(model: &[f64], simulated: &[f64]) -> f64 {
    model
        .iter()
        .zip(simulated)
        .map(|(m, s)| ((m - s) / s).abs())
        .fold(0.0, f64::max)
}

#[test]
fn equilibrium_matches_the_scheduler_with_backlogged_tenants() {
    let mut rng = StdRng::seed_from_u64(13);
    let mut worst: f64 = 0.0;
    for case in 0..30 {
        let tenants = random_tenants(&mut rng, 2 + case % 3);
        let model = equilibrium(&tenants).unwrap();
        let simulated = simulate_round_robin(&tenants, 0.0, 0.05).unwrap();
        let gap = worst_relative_gap(&model, &simulated);
        assert!(
            gap < 0.01,
            "case {case}: {tenants:?}: model {model:?} vs scheduler {simulated:?}"
        );
        worst = worst.max(gap);
    }
    println!(
        "backlogged: worst gap model vs scheduler {:.3}%",
        100.0 * worst
    );
}

#[test]
fn equilibrium_matches_the_scheduler_with_rate_limited_tenants() {
    let mut rng = StdRng::seed_from_u64(14);
    let mut limited_seen = 0;
    let mut worst: f64 = 0.0;
    for case in 0..30 {
        let mut tenants = random_tenants(&mut rng, 2 + case % 3);
        let backlogged = equilibrium(&tenants).unwrap();
        // Rate-limit most tenants: some below their backlogged share (they get what they offer
        // and leave slack), some above it (they stay backlogged).
        for (tenant, share) in tenants.iter_mut().zip(&backlogged) {
            if rng.gen_bool(0.7) {
                tenant.offered = Some(share * rng.gen_range(0.3..1.6));
            }
        }
        let model = equilibrium(&tenants).unwrap();
        limited_seen += tenants
            .iter()
            .zip(&model)
            .filter(|(t, m)| t.offered.is_some_and(|o| (o - **m).abs() < 1e-9 * o))
            .count();
        let simulated = simulate_round_robin(&tenants, 0.01, 0.05).unwrap();
        let gap = worst_relative_gap(&model, &simulated);
        assert!(
            gap < 0.01,
            "case {case}: {tenants:?}: model {model:?} vs scheduler {simulated:?}"
        );
        worst = worst.max(gap);
        // The slack goes to the others: a tenant that does not get all it offers gets at least
        // its share with everyone backlogged.
        for ((tenant, m), b) in tenants.iter().zip(&model).zip(&backlogged) {
            if tenant.offered.is_none_or(|o| *m < o * (1.0 - 1e-9)) {
                assert!(*m >= b * (1.0 - 1e-9), "case {case}: {m} < {b}");
            }
        }
    }
    println!(
        "rate-limited: worst gap model vs scheduler {:.3}%, {limited_seen} tenants held to their offer",
        100.0 * worst
    );
    assert!(
        limited_seen > 20,
        "only {limited_seen} tenants were rate-limited"
    );
}

#[test]
fn the_n_squared_form_of_eq_2_disagrees_with_round_robin() {
    // Eq. 2's last form n_i / Σ n_j²/T_j,solo against the scheduler, with unequal queue counts.
    let tenants = [
        Tenant::backlogged(1, 1.0 / (2.0 * US)),
        Tenant::backlogged(3, 1.0 / (1.0 * US)),
    ];
    let simulated = simulate_round_robin(&tenants, 0.0, 0.05).unwrap();
    let squared_denominator: f64 = tenants
        .iter()
        .map(|t| f64::from(t.queues).powi(2) / t.solo_rate())
        .sum();
    let squared_form = f64::from(tenants[0].queues) / squared_denominator;
    let linear_form = equilibrium(&tenants).unwrap()[0];
    assert!(((linear_form - simulated[0]) / simulated[0]).abs() < 0.01);
    assert!(((squared_form - simulated[0]) / simulated[0]).abs() > 0.2);
}

/// An NF that spends almost nothing on its cores, so its throughput is its regex throughput.
fn regex_bound_nf(queues: u32, work: ServiceTime, mtbr: f64) -> Nf {
    Nf {
        name: "regex-nf".to_string(),
        cores: queues,
        compute_time: 0.01 * US,
        accesses_per_packet: 0.0,
        working_set: 0.0,
        accels: vec![AccelDemand {
            kind: AccelKind::Regex,
            queues,
            requests_per_packet: 1.0,
            work,
            mtbr,
        }],
        pattern: Pattern::Pipeline,
        offered_rate: None,
    }
}

#[test]
fn inference_recovers_queues_and_solo_rate_from_noisy_co_runs() {
    let device = Device::bluefield2_like();
    let mut bed = Testbed::new(device.clone(), Testbed::DEFAULT_NOISE, 41);
    let mut rng = StdRng::seed_from_u64(42);
    let (mut worst_queues, mut worst_solo): (f64, f64) = (0.0, 0.0);
    for case in 0..12 {
        let queues = rng.gen_range(1..=4);
        let request_time = rng.gen_range(0.5..3.0) * US;
        let nf = regex_bound_nf(
            queues,
            ServiceTime {
                base: request_time,
                per_match: 0.0,
            },
            0.0,
        );
        let true_solo = device.run(&[Workload::Nf(nf.clone())]).unwrap()[0];
        // Competitor settings from light (n_c·t_c a tenth of the NF's round) to heavy (four
        // rounds), as §4.1.1 varies regex-bench; each setting measured three times.
        let round = f64::from(queues) * request_time;
        let mut runs = Vec::new();
        for scale in [0.1, 0.25, 0.5, 1.0, 2.0, 4.0] {
            for bench_queues in [1u32, 2] {
                let bench_time = round * scale / f64::from(bench_queues);
                let bench = AccelBench::backlogged(AccelKind::Regex, bench_queues, bench_time);
                for _ in 0..3 {
                    let rates = bed
                        .measure(&[Workload::Nf(nf.clone()), Workload::AccelBench(bench)])
                        .unwrap();
                    runs.push(CoRun {
                        competitor_queues: bench_queues,
                        competitor_request_time: bench_time,
                        observed_rate: rates[0],
                    });
                }
            }
        }
        let inferred = infer_tenant(&runs).unwrap();
        let queue_error = (inferred.queues - f64::from(queues)).abs() / f64::from(queues);
        let solo_error = (inferred.solo_rate - true_solo).abs() / true_solo;
        assert!(
            queue_error < 0.02 && solo_error < 0.02,
            "case {case}: n = {queues}, T_solo = {true_solo}: inferred {inferred:?}"
        );
        assert_eq!(inferred.queue_count(), queues);
        worst_queues = worst_queues.max(queue_error);
        worst_solo = worst_solo.max(solo_error);
    }
    println!(
        "inference: worst error n_j {:.2}%, T_solo {:.2}%",
        100.0 * worst_queues,
        100.0 * worst_solo
    );
}

#[test]
fn eq_5_fit_recovers_base_time_and_per_match_cost() {
    let device = Device::bluefield2_like();
    let mut bed = Testbed::new(device, Testbed::DEFAULT_NOISE, 51);
    let mut rng = StdRng::seed_from_u64(52);
    let (mut worst_base, mut worst_slope): (f64, f64) = (0.0, 0.0);
    for case in 0..10 {
        let truth = ServiceTime {
            base: rng.gen_range(0.3..2.0) * US,
            per_match: rng.gen_range(0.5..3.0) * 1e-9,
        };
        let samples: Vec<(f64, f64)> = (0..12)
            .map(|k| {
                let mtbr = 150.0 * f64::from(k);
                let nf = regex_bound_nf(1, truth, mtbr);
                (mtbr, bed.measure(&[Workload::Nf(nf)]).unwrap()[0])
            })
            .collect();
        let fitted = fit_service_time(&samples).unwrap();
        let base_error = (fitted.base - truth.base).abs() / truth.base;
        let slope_error = (fitted.per_match - truth.per_match).abs() / truth.per_match;
        assert!(
            base_error < 0.03 && slope_error < 0.05,
            "case {case}: truth {truth:?}, fitted {fitted:?}"
        );
        worst_base = worst_base.max(base_error);
        worst_slope = worst_slope.max(slope_error);
    }
    println!(
        "Eq. 5 fit: worst error t0 {:.2}%, a {:.2}%",
        100.0 * worst_base,
        100.0 * worst_slope
    );
}
