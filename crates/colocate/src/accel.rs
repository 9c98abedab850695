//! The round-robin accelerator model of paper 004 (Tomur): how NFs sharing one hardware
//! accelerator (regex, compression) through request queues split its throughput (§4.1.1, Eqs. 1
//! and 2; Appendix E), how a request's processing time grows with the match-to-byte ratio (§5.1.1,
//! Eqs. 5 and 6), and how an unknown NF's queue count and solo rate are inferred from co-runs
//! against a benchmark whose parameters are known (§4.1.1, last paragraph).
//!
//! Units: times in seconds, rates in requests per second (one request per packet makes them
//! packets per second, as in the paper).
//!
//! A note on Eq. 2. Its first form, `T_i = n_i / Σ_j n_j·t_j`, follows from Eq. 1 (one round of
//! the scheduler serves one request from each of the `n_j` queues of every NF, so a round lasts
//! `Σ_j n_j·t_j`). Its last form, and Eq. 6, write `n_j²/T_j,solo`, which agrees with the first
//! only if `t_j = n_j / T_j,solo`; but Eq. 5 sets `t_j = 1/T_j,solo`, which is also what an NF
//! alone on the accelerator achieves (`n_j` requests per round of `n_j·t_j`). We use
//! `t_j = 1/T_j,solo` and the first form; the request-level round-robin scheduler of
//! [`crate::scheduler`] agrees with it (tests/it/accelerator.rs), so the `n_j²` form is a slip.

use crate::error::{non_negative, positive, ColocateError};
use crate::fit::weighted_line;
use serde::{Deserialize, Serialize};

/// An NF's average request processing time as a function of the match-to-byte ratio (MTBR) of its
/// payload, `t = t0 + a·m` (§5.1.1, Eq. 5).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct ServiceTime {
    /// `t_j,0`: seconds per request with no matches.
    pub base: f64,
    /// `a_j`: extra seconds per request per unit of MTBR (matches per MB).
    pub per_match: f64,
}

impl ServiceTime {
    /// The request processing time at match-to-byte ratio `mtbr` (Eq. 5).
    pub fn at(&self, mtbr: f64) -> f64 {
        self.base + self.per_match * mtbr
    }
}

/// One NF's use of an accelerator.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Tenant {
    /// `n_j`: request queues the NF holds on the accelerator.
    pub queues: u32,
    /// `t_j = 1/T_j,solo`: average processing time of one of its requests.
    pub request_time: f64,
    /// Requests per second the NF offers; `None` when its queues are never empty (backlogged).
    pub offered: Option<f64>,
}

impl Tenant {
    /// A backlogged tenant with `queues` queues whose throughput alone would be `solo_rate`.
    pub fn backlogged(queues: u32, solo_rate: f64) -> Tenant {
        Tenant {
            queues,
            request_time: 1.0 / solo_rate,
            offered: None,
        }
    }

    /// The same tenant, offering at most `rate` requests per second.
    pub fn offering(self, rate: f64) -> Tenant {
        Tenant {
            offered: Some(rate),
            ..self
        }
    }

    /// `T_j,solo`: its throughput alone on the accelerator.
    pub fn solo_rate(&self) -> f64 {
        1.0 / self.request_time
    }

    fn check(&self, index: usize) -> Result<(), ColocateError> {
        if self.queues == 0 {
            return Err(ColocateError::Invalid {
                what: format!("queue count of tenant {index}"),
                value: 0.0,
                reason: "an NF on an accelerator holds at least one queue",
            });
        }
        positive(
            &format!("request time of tenant {index}"),
            self.request_time,
        )?;
        if let Some(rate) = self.offered {
            non_negative(&format!("offered rate of tenant {index}"), rate)?;
        }
        Ok(())
    }
}

/// Each tenant's throughput (requests per second) at the round-robin equilibrium.
///
/// With every tenant backlogged this is Eq. 2: a round lasts `R = Σ_j n_j·t_j` (Eq. 1) and tenant
/// `i` completes `n_i` requests per round. A tenant whose offered rate `λ_i` is below its round
/// share `n_i/R` cannot take more than it offers: it gets `λ_i`, its queues are sometimes empty
/// and skipped, and the accelerator time it leaves is shared by the backlogged ones. With `L` the
/// rate-limited set and `B` the rest, the accelerator is busy all the time, so
/// `Σ_B (n_j/R)·t_j + Σ_L λ_j·t_j = 1`, i.e. the fixed point
///
/// `R = Σ_B n_j·t_j / (1 − Σ_L λ_j·t_j)`,   `L = { j : λ_j ≤ n_j/R }`.
///
/// We start from `L = ∅` and move every tenant that offers less than its share into `L`. Moving
/// `j` with `λ_j ≤ n_j/R` lowers `R` (it used `λ_j·t_j ≤ n_j·t_j/R` of the time its share
/// reserved), which only raises the others' shares, so `L` grows monotonically and the iteration
/// ends after at most one pass per tenant; `Σ_L λ_j·t_j < 1` holds throughout while `B` is not
/// empty. If every tenant ends in `L`, the accelerator is not saturated and each gets its offer
/// (Appendix E's linear regime, Eq. 8).
pub fn equilibrium(tenants: &[Tenant]) -> Result<Vec<f64>, ColocateError> {
    for (index, tenant) in tenants.iter().enumerate() {
        tenant.check(index)?;
    }
    let mut limited = vec![false; tenants.len()];
    loop {
        let limited_busy: f64 = tenants
            .iter()
            .zip(&limited)
            .filter(|(_, &l)| l)
            .map(|(t, _)| t.offered.unwrap_or(0.0) * t.request_time)
            .sum();
        let backlogged_round: f64 = tenants
            .iter()
            .zip(&limited)
            .filter(|(_, &l)| !l)
            .map(|(t, _)| f64::from(t.queues) * t.request_time)
            .sum();
        if backlogged_round <= 0.0 {
            return Ok(served(tenants, &limited, None));
        }
        let round = backlogged_round / (1.0 - limited_busy).max(f64::MIN_POSITIVE);
        let mut moved = false;
        for (tenant, l) in tenants.iter().zip(limited.iter_mut()) {
            if let (false, Some(offer)) = (*l, tenant.offered) {
                if offer <= f64::from(tenant.queues) / round {
                    *l = true;
                    moved = true;
                }
            }
        }
        if !moved {
            return Ok(served(tenants, &limited, Some(round)));
        }
    }
}

/// The rates at a settled split: rate-limited tenants get their offer, the others `n_j` requests
/// per round of length `round` (there is no round when every tenant is rate-limited).
fn served(tenants: &[Tenant], limited: &[bool], round: Option<f64>) -> Vec<f64> {
    tenants
        .iter()
        .zip(limited)
        .map(|(t, &l)| match (l, round) {
            (true, _) | (false, None) => t.offered.unwrap_or(0.0),
            (false, Some(round)) => f64::from(t.queues) / round,
        })
        .collect()
}

/// The throughput tenant `index` would get if it were backlogged while the others keep their
/// offers: the accelerator's capacity as seen by that NF (its per-resource throughput, §4.1).
pub fn capacity_for(tenants: &[Tenant], index: usize) -> Result<f64, ColocateError> {
    let mut probe = tenants.to_vec();
    let Some(tenant) = probe.get_mut(index) else {
        return Err(ColocateError::Invalid {
            what: "tenant index".to_string(),
            value: index as f64,
            reason: "no such tenant",
        });
    };
    tenant.offered = None;
    let rates = equilibrium(&probe)?;
    Ok(rates.get(index).copied().unwrap_or(0.0))
}

/// One co-run of the NF under study against a backlogged benchmark competitor with known
/// parameters, both on the same accelerator.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct CoRun {
    /// The benchmark's queue count `n_c`.
    pub competitor_queues: u32,
    /// The benchmark's request processing time `t_c`.
    pub competitor_request_time: f64,
    /// The NF's measured throughput in the co-run.
    pub observed_rate: f64,
}

/// An NF's accelerator parameters recovered from co-runs.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Inferred {
    /// `n_j` as fitted (a real number; queue counts are integers, see [`Inferred::queue_count`]).
    pub queues: f64,
    /// `T_j,solo`.
    pub solo_rate: f64,
    /// Weighted residual of the fit in `1/T`, relative (weights `T²`).
    pub residual: f64,
}

impl Inferred {
    /// The fitted queue count rounded to the nearest integer, at least one.
    pub fn queue_count(&self) -> u32 {
        let rounded = self.queues.round();
        if rounded >= 1.0 && rounded <= f64::from(u32::MAX) {
            rounded as u32
        } else {
            1
        }
    }
}

/// Recovers `n_j` and `T_j,solo` of an NF from co-runs against a backlogged benchmark (§4.1.1).
///
/// With both backlogged, Eq. 2 gives `T_j = n_j / (n_j·t_j + n_c·t_c)`, i.e.
/// `1/T_j = t_j + (n_c·t_c)/n_j`: a line in `x = n_c·t_c` with intercept `t_j = 1/T_j,solo` and
/// slope `1/n_j`. The paper solves it from two settings; with more we fit it by least squares,
/// weighting each sample by `T_j²` so that a relative measurement error weighs the same at every
/// setting. Needs at least two settings with different `n_c·t_c`. As in the paper, the benchmark
/// must be heavy enough that the NF's measured throughput is its accelerator throughput.
pub fn infer_tenant(runs: &[CoRun]) -> Result<Inferred, ColocateError> {
    let mut points = Vec::with_capacity(runs.len());
    for run in runs {
        positive("competitor request time", run.competitor_request_time)?;
        positive("observed rate", run.observed_rate)?;
        let x = f64::from(run.competitor_queues) * run.competitor_request_time;
        points.push((x, 1.0 / run.observed_rate, run.observed_rate.powi(2)));
    }
    let line = weighted_line(&points, "queue count and solo rate")?;
    let fail = |reason: &str| ColocateError::Fit {
        what: "queue count and solo rate".to_string(),
        reason: reason.to_string(),
    };
    if line.slope <= 0.0 {
        return Err(fail("throughput does not fall as the competitor grows"));
    }
    if line.intercept <= 0.0 {
        return Err(fail("the fitted solo request time is not positive"));
    }
    Ok(Inferred {
        queues: 1.0 / line.slope,
        solo_rate: 1.0 / line.intercept,
        residual: line.residual,
    })
}

/// Fits Eq. 5's `t_j,0` and `a_j` from solo throughputs measured at several match-to-byte ratios:
/// `1/T_solo(m) = t_j,0 + a_j·m`, least squares weighted by `T²` (relative errors). Each sample is
/// `(mtbr, solo_rate)`.
pub fn fit_service_time(samples: &[(f64, f64)]) -> Result<ServiceTime, ColocateError> {
    let mut points = Vec::with_capacity(samples.len());
    for &(mtbr, rate) in samples {
        non_negative("match-to-byte ratio", mtbr)?;
        positive("solo rate", rate)?;
        points.push((mtbr, 1.0 / rate, rate * rate));
    }
    let line = weighted_line(&points, "request time against MTBR")?;
    Ok(ServiceTime {
        base: line.intercept,
        per_match: line.slope,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn two_backlogged_one_queue_tenants_meet_at_appendix_e_equilibrium() {
        // Appendix E: T_E = 1 / (1/T_1,solo + 1/T_C,solo) for both.
        let rates =
            equilibrium(&[Tenant::backlogged(1, 2.0e6), Tenant::backlogged(1, 1.0e6)]).unwrap();
        let expected = 1.0 / (1.0 / 2.0e6 + 1.0 / 1.0e6);
        assert!((rates[0] - expected).abs() / expected < 1e-12);
        assert!((rates[1] - expected).abs() / expected < 1e-12);
    }

    #[test]
    fn light_tenant_gets_its_offer_and_leaves_the_rest_linearly() {
        // Appendix E, Eq. 8: T_1 = T_1,solo − (T_1,solo/T_C,solo)·T_C.
        let solo = 2.0e6;
        let bench_solo = 1.0e6;
        let offer = 0.2e6;
        let rates = equilibrium(&[
            Tenant::backlogged(1, solo),
            Tenant::backlogged(1, bench_solo).offering(offer),
        ])
        .unwrap();
        assert_eq!(rates[1], offer);
        let expected = solo - solo / bench_solo * offer;
        assert!((rates[0] - expected).abs() / expected < 1e-12);
    }

    #[test]
    fn unsaturated_accelerator_serves_every_offer() {
        let rates = equilibrium(&[
            Tenant::backlogged(2, 1.0e6).offering(0.3e6),
            Tenant::backlogged(1, 1.0e6).offering(0.4e6),
        ])
        .unwrap();
        assert_eq!(rates, vec![0.3e6, 0.4e6]);
    }

    #[test]
    fn two_settings_determine_queues_and_solo_rate() {
        // §4.1.1: two co-runs against a backlogged benchmark of known parameters suffice.
        let (queues, solo) = (3u32, 1.5e6);
        let runs: Vec<CoRun> = [(1u32, 2e-6), (2, 5e-6)]
            .iter()
            .map(|&(bench_queues, bench_time)| {
                let rates = equilibrium(&[
                    Tenant::backlogged(queues, solo),
                    Tenant::backlogged(bench_queues, 1.0 / bench_time),
                ])
                .unwrap();
                CoRun {
                    competitor_queues: bench_queues,
                    competitor_request_time: bench_time,
                    observed_rate: rates[0],
                }
            })
            .collect();
        let inferred = infer_tenant(&runs).unwrap();
        assert!((inferred.queues - 3.0).abs() < 1e-9);
        assert!((inferred.solo_rate - solo).abs() < 1e-6 * solo);
        assert!(infer_tenant(&runs[..1]).is_err());
    }

    #[test]
    fn zero_queues_is_refused() {
        let tenant = Tenant {
            queues: 0,
            request_time: 1e-6,
            offered: None,
        };
        assert!(equilibrium(&[tenant]).is_err());
    }
}
