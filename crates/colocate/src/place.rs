//! Placement of arriving NFs on SmartNICs (paper 004 §7.5.1, Table 6; issue 13, item 5): NFs
//! arrive one by one, each with an SLA (the largest throughput drop against its solo rate it
//! accepts), and a strategy puts each on an open NIC or opens a new one. The ground truth is the
//! simulated device: after all arrivals every NIC's NFs run together there and each NF whose
//! throughput falls below `(1 − SLA)·solo` is a violation.
//!
//! Strategies:
//! - **Monopolization**: one NF per NIC.
//! - **Greedy** ([41, 53] of the paper): the open NIC with the most available resources among
//!   those the newcomer fits, judged from the placed NFs' solo demands only (see
//!   [`Demand`]). A NIC fits when its cores suffice and, with the newcomer, the summed solo
//!   memory bandwidth and each accelerator's summed solo busy share stay at most 1 (the cache
//!   may be oversubscribed: it is a cache). Available resources: the mean over cores, memory
//!   bandwidth, cache and each accelerator of `1 − utilization` (clamped to [0, 1]).
//! - **Contention-aware** with a [`Predictor`]: the first open NIC (in opening order) with the
//!   cores where no placed NF and not the newcomer is predicted to exceed its SLA, all of them
//!   predicted together.
//!
//! Every strategy opens a new NIC when no open one takes the newcomer. Cores are a hard limit
//! for all.

use crate::adaptive::TrafficSpace;
use crate::error::ColocateError;
use crate::predict::{predict_all_from, NfModel, Placed, Predictor};
use crate::profile::TrafficProfile;
use crate::sim::{AccelKind, Device, Workload};
use crate::sim_backend::TrafficNf;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use serde::{Deserialize, Serialize};

/// One arriving NF.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Arrival {
    /// Index into the fleet's catalogue (and its models).
    pub nf: usize,
    pub traffic: TrafficProfile,
    /// The largest relative drop against its solo throughput it accepts.
    pub sla: f64,
}

/// A seeded arrival sequence: NF types uniform over the catalogue's `types`, traffic profiles
/// drawn from `space` (each attribute uniform on its own scale), SLAs uniform in `sla`.
pub fn arrivals(
    count: usize,
    types: usize,
    space: &TrafficSpace,
    sla: (f64, f64),
    seed: u64,
) -> Result<Vec<Arrival>, ColocateError> {
    space.validate()?;
    if types == 0 || !(sla.0 > 0.0 && sla.0 <= sla.1 && sla.1 < 1.0) {
        return Err(ColocateError::Invalid {
            what: "arrival generator".to_string(),
            value: sla.0,
            reason: "needs NF types and SLAs with 0 < low <= high < 1",
        });
    }
    let mut rng = StdRng::seed_from_u64(seed);
    Ok((0..count)
        .map(|_| Arrival {
            nf: rng.gen_range(0..types),
            traffic: space.random(&mut rng),
            sla: if sla.1 > sla.0 {
                rng.gen_range(sla.0..sla.1)
            } else {
                sla.0
            },
        })
        .collect())
}

/// The NICs, the NF types they may host, and what is known of each type.
pub struct Fleet<'a> {
    pub device: &'a Device,
    /// The ground truth's NFs.
    pub catalogue: &'a [TrafficNf],
    /// The trained bundles, in the catalogue's order.
    pub models: &'a [NfModel],
}

/// A placement strategy.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Strategy {
    Monopolization,
    Greedy,
    ContentionAware(Predictor),
}

impl Strategy {
    pub fn name(self) -> String {
        match self {
            Strategy::Monopolization => "monopolization".to_string(),
            Strategy::Greedy => "greedy".to_string(),
            Strategy::ContentionAware(predictor) => format!("{}-aware", predictor.name()),
        }
    }
}

/// What an NF takes of a NIC alone, from its bundle: the shares greedy adds up.
#[derive(Clone, Debug, PartialEq)]
pub struct Demand {
    pub cores: u32,
    /// Share of the memory channel's bandwidth.
    pub bandwidth: f64,
    /// Share of the last-level cache (its working set over the cache's size).
    pub cache: f64,
    /// Busy share of each accelerator: solo rate × busy time per packet.
    pub accelerators: Vec<(AccelKind, f64)>,
}

impl Fleet<'_> {
    fn model(&self, arrival: &Arrival) -> Result<(&TrafficNf, &NfModel), ColocateError> {
        match (self.catalogue.get(arrival.nf), self.models.get(arrival.nf)) {
            (Some(nf), Some(model)) => Ok((nf, model)),
            _ => Err(ColocateError::Invalid {
                what: "arrival's NF type".to_string(),
                value: arrival.nf as f64,
                reason: "not in the catalogue",
            }),
        }
    }

    /// The arrival's solo demands as its bundle predicts them.
    pub fn demand(&self, arrival: &Arrival) -> Result<Demand, ColocateError> {
        let (nf, model) = self.model(arrival)?;
        let solo = model.solo.at(&arrival.traffic);
        let counters = crate::predict::solo_counters(model, &solo)?;
        Ok(Demand {
            cores: nf.cores,
            bandwidth: counters.bandwidth / self.device.memory_bandwidth,
            cache: counters.working_set / self.device.cache.size,
            accelerators: model
                .accelerators
                .iter()
                .map(|a| {
                    (
                        a.kind,
                        solo.solo * a.busy_time.at(arrival.traffic.mtbr).max(0.0),
                    )
                })
                .collect(),
        })
    }

    /// Each arrival's true solo throughput on the device.
    pub fn true_solo(&self, arrivals: &[Arrival]) -> Result<Vec<f64>, ColocateError> {
        arrivals
            .iter()
            .map(|arrival| {
                let (nf, _) = self.model(arrival)?;
                let rates = self.device.run(&[Workload::Nf(nf.at(&arrival.traffic)?)])?;
                Ok(rates.first().copied().unwrap_or(0.0))
            })
            .collect()
    }

    /// Whether every NF of `members` (indices into `arrivals`) meets its SLA running together
    /// on one NIC, on the ground truth; `false` if their cores exceed the NIC's.
    pub fn feasible(
        &self,
        arrivals: &[Arrival],
        solo: &[f64],
        members: &[usize],
    ) -> Result<bool, ColocateError> {
        Ok(self
            .violators(arrivals, solo, members)?
            .is_some_and(|v| v == 0))
    }

    /// How many of `members` miss their SLA together, `None` if they do not fit the cores.
    fn violators(
        &self,
        arrivals: &[Arrival],
        solo: &[f64],
        members: &[usize],
    ) -> Result<Option<usize>, ColocateError> {
        let mut workloads = Vec::with_capacity(members.len());
        let mut cores = 0u32;
        for &member in members {
            let arrival = arrival_at(arrivals, member)?;
            let (nf, _) = self.model(arrival)?;
            cores = cores.saturating_add(nf.cores);
            workloads.push(Workload::Nf(nf.at(&arrival.traffic)?));
        }
        if cores > self.device.cores {
            return Ok(None);
        }
        let rates = self.device.run(&workloads)?;
        let mut missed = 0;
        for (&member, rate) in members.iter().zip(rates) {
            let arrival = arrival_at(arrivals, member)?;
            let alone = solo.get(member).copied().unwrap_or(0.0);
            if rate < (1.0 - arrival.sla) * alone {
                missed += 1;
            }
        }
        Ok(Some(missed))
    }

    /// NFs of `plan` that miss their SLA on the ground truth.
    pub fn violations(
        &self,
        arrivals: &[Arrival],
        solo: &[f64],
        plan: &[Vec<usize>],
    ) -> Result<usize, ColocateError> {
        let mut total = 0usize;
        for nic in plan {
            // A NIC over its cores cannot be run: count all its NFs as violated.
            total += self.violators(arrivals, solo, nic)?.unwrap_or(nic.len());
        }
        Ok(total)
    }

    fn cores(&self, arrivals: &[Arrival], members: &[usize]) -> Result<u32, ColocateError> {
        members.iter().try_fold(0u32, |sum, &member| {
            let (nf, _) = self.model(arrival_at(arrivals, member)?)?;
            Ok(sum.saturating_add(nf.cores))
        })
    }

    /// Places `arrivals` in order; returns each NIC's arrivals (indices into `arrivals`).
    pub fn place(
        &self,
        strategy: Strategy,
        arrivals: &[Arrival],
    ) -> Result<Vec<Vec<usize>>, ColocateError> {
        let demands: Vec<Demand> = arrivals
            .iter()
            .map(|a| self.demand(a))
            .collect::<Result<_, _>>()?;
        let mut nics: Vec<Vec<usize>> = Vec::new();
        // The contention-aware strategies' last predicted rates of each NIC's NFs.
        let mut predicted: Vec<Vec<f64>> = Vec::new();
        for (index, demand) in demands.iter().enumerate() {
            let chosen = match strategy {
                Strategy::Monopolization => None,
                Strategy::Greedy => self
                    .greedy(&demands, &nics, demand)?
                    .map(|n| (n, Vec::new())),
                Strategy::ContentionAware(predictor) => {
                    self.first_predicted_fit(predictor, arrivals, &nics, &predicted, index)?
                }
            };
            match chosen {
                Some((slot, rates)) if slot < nics.len() => {
                    nics[slot].push(index);
                    predicted[slot] = rates;
                }
                _ => {
                    nics.push(vec![index]);
                    predicted.push(Vec::new());
                }
            }
        }
        Ok(nics)
    }

    fn greedy(
        &self,
        demands: &[Demand],
        nics: &[Vec<usize>],
        newcomer: &Demand,
    ) -> Result<Option<usize>, ColocateError> {
        let kinds: Vec<AccelKind> = self.device.accelerators.iter().map(|a| a.kind).collect();
        let mut best: Option<(usize, f64)> = None;
        for (slot, nic) in nics.iter().enumerate() {
            let placed: Vec<&Demand> = nic.iter().filter_map(|&i| demands.get(i)).collect();
            let with = |extra: Option<&Demand>| {
                let all = placed.iter().copied().chain(extra);
                let mut cores = 0u32;
                let (mut bandwidth, mut cache) = (0.0, 0.0);
                let mut accel = vec![0.0; kinds.len()];
                for demand in all {
                    cores = cores.saturating_add(demand.cores);
                    bandwidth += demand.bandwidth;
                    cache += demand.cache;
                    for (kind, share) in &demand.accelerators {
                        if let Some(k) = kinds.iter().position(|x| x == kind) {
                            accel[k] += share;
                        }
                    }
                }
                (cores, bandwidth, cache, accel)
            };
            let (cores, bandwidth, _, accel) = with(Some(newcomer));
            if cores > self.device.cores || bandwidth > 1.0 || accel.iter().any(|u| *u > 1.0) {
                continue;
            }
            let (cores, bandwidth, cache, accel) = with(None);
            let utilizations = [
                f64::from(cores) / f64::from(self.device.cores),
                bandwidth,
                cache,
            ];
            let free: f64 = utilizations
                .iter()
                .chain(&accel)
                .map(|u| 1.0 - u.clamp(0.0, 1.0))
                .sum::<f64>()
                / (utilizations.len() + accel.len()) as f64;
            if best.is_none_or(|(_, most)| free > most) {
                best = Some((slot, free));
            }
        }
        Ok(best.map(|(slot, _)| slot))
    }

    fn first_predicted_fit(
        &self,
        predictor: Predictor,
        arrivals: &[Arrival],
        nics: &[Vec<usize>],
        predicted: &[Vec<f64>],
        newcomer: usize,
    ) -> Result<Option<(usize, Vec<f64>)>, ColocateError> {
        let own_cores = self.cores(arrivals, &[newcomer])?;
        for (slot, nic) in nics.iter().enumerate() {
            if self.cores(arrivals, nic)?.saturating_add(own_cores) > self.device.cores {
                continue;
            }
            let members: Vec<usize> = nic.iter().copied().chain([newcomer]).collect();
            let placed: Vec<Placed> = members
                .iter()
                .map(|&m| {
                    let arrival = arrival_at(arrivals, m)?;
                    let (_, model) = self.model(arrival)?;
                    Ok(Placed {
                        model,
                        traffic: arrival.traffic,
                    })
                })
                .collect::<Result<_, ColocateError>>()?;
            let start = predicted.get(slot).map_or(&[][..], |r| &r[..]);
            let predictions = predict_all_from(predictor, &placed, start)?;
            let meets = members
                .iter()
                .zip(&predictions)
                .all(|(&m, p)| arrivals.get(m).is_some_and(|a| p.drop <= a.sla));
            if meets {
                let rates = predictions.iter().map(|p| p.predicted_pps).collect();
                return Ok(Some((slot, rates)));
            }
        }
        Ok(None)
    }
}

fn arrival_at(arrivals: &[Arrival], index: usize) -> Result<&Arrival, ColocateError> {
    arrivals.get(index).ok_or_else(|| ColocateError::Invalid {
        what: "arrival index".to_string(),
        value: index as f64,
        reason: "past the sequence",
    })
}

/// One strategy's outcome on one sequence (the `colocate place --json` contract's fields).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct StrategyReport {
    pub name: String,
    pub nics: usize,
    /// `nics / reference − 1` against the optimum (or another reference plan), when known.
    pub waste: Option<f64>,
    /// NFs missing their SLA on the ground truth.
    pub sla_violations: usize,
}

/// Every strategy's outcome on one sequence (`colocate place --json`:
/// `{"strategies":[{"name","nics","waste","sla_violations"}]}`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PlacementReport {
    pub strategies: Vec<StrategyReport>,
}

/// Places `arrivals` with each of `strategies` and judges each plan on the ground truth; waste
/// is against `reference` NICs (the optimum, where it was computed) when given.
pub fn report(
    fleet: &Fleet<'_>,
    arrivals: &[Arrival],
    strategies: &[Strategy],
    reference: Option<usize>,
) -> Result<PlacementReport, ColocateError> {
    let solo = fleet.true_solo(arrivals)?;
    let mut reports = Vec::with_capacity(strategies.len());
    for &strategy in strategies {
        let plan = fleet.place(strategy, arrivals)?;
        reports.push(StrategyReport {
            name: strategy.name(),
            nics: plan.len(),
            waste: reference
                .filter(|r| *r > 0)
                .map(|r| plan.len() as f64 / r as f64 - 1.0),
            sla_violations: fleet.violations(arrivals, &solo, &plan)?,
        });
    }
    Ok(PlacementReport {
        strategies: reports,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::adaptive::AttributeRange;
    use crate::profile::Attribute;

    fn space() -> TrafficSpace {
        TrafficSpace {
            ranges: vec![AttributeRange {
                attribute: Attribute::Flows,
                min: 1e3,
                max: 1e6,
                default: 1.6e4,
                log_scale: true,
            }],
        }
    }

    #[test]
    fn arrivals_are_seeded_and_within_their_ranges() {
        let first = arrivals(200, 5, &space(), (0.05, 0.2), 9).unwrap();
        assert_eq!(first, arrivals(200, 5, &space(), (0.05, 0.2), 9).unwrap());
        assert_ne!(first, arrivals(200, 5, &space(), (0.05, 0.2), 10).unwrap());
        assert!(first.iter().all(|a| a.nf < 5
            && (0.05..0.2).contains(&a.sla)
            && (1e3..=1e6).contains(&a.traffic.flows)));
        // Every type shows up in 200 draws of 5.
        assert!((0..5).all(|t| first.iter().any(|a| a.nf == t)));
        assert!(arrivals(10, 0, &space(), (0.05, 0.2), 9).is_err());
        assert!(arrivals(10, 5, &space(), (0.2, 0.05), 9).is_err());
    }
}
