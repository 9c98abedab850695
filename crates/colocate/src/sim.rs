//! A simulated SoC SmartNIC (issue 13, item 6c): cores, a shared last-level cache, a memory
//! channel of fixed bandwidth and round-robin accelerators (regex, compression), hosting NFs and
//! benchmark competitors. Each workload's throughput comes from its per-packet stage timings and
//! the contention the others cause; the composition equations of [`crate::compose`] are not used
//! here, so testing them against this device means something.
//!
//! The models, each a documented simplification:
//!
//! - **Cores** are dedicated (§4.1: core-level isolation), so they only bound how many workloads
//!   fit. An NF's cores process packets in parallel.
//! - **Last-level cache**, shared under LRU, by Che's characteristic-time approximation (Che,
//!   Tung and Wang, IEEE JSAC 2002): accesses are uniform over each tenant's working set, so each
//!   of tenant `t`'s `L_t` lines is touched at rate `r_t = access rate / L_t`; a line stays cached
//!   for a characteristic time `τ` after its last touch, `τ` being where the expected occupancy
//!   fills the cache, `Σ_t L_t·(1 − e^{−r_t·τ}) = cache lines`; a tenant's miss ratio is
//!   `e^{−r_t·τ}`. A tenant with hotter lines keeps more of them, so an NF that another
//!   resource slows down also loses cache: contention on one resource leaks into the memory
//!   stage, one of the interactions the composition equations do not model. When all working
//!   sets fit together nothing misses (compulsory misses are ignored).
//! - **Memory bandwidth.** Misses move one line each; the channel's utilization is
//!   `ρ = Σ miss rate · line / bandwidth`, and a miss costs its unloaded latency plus the M/D/1
//!   (Pollaczek–Khinchine, deterministic line transfers) queueing wait
//!   `(line / bandwidth) · ρ / (2(1 − ρ))`. `ρ` is clamped at [`MAX_UTILIZATION`], where the
//!   queue would in reality throttle the open-loop memory benchmark; the clamp keeps latency
//!   finite instead.
//! - **Accelerators** serve request queues round-robin: each NF's accelerator capacity is the
//!   fluid equilibrium of [`crate::accel::equilibrium`] (checked against the request-level
//!   scheduler of [`crate::scheduler`]), with the NF backlogged and every other tenant at its
//!   current offered rate. A request takes `(t0 + a·MTBR) / service rate` (Eq. 5's form).
//! - **Execution patterns.** A pipeline NF runs its core stage (compute and memory) and each
//!   accelerator as separate stages with requests in flight: its throughput is that of its slowest
//!   stage. A run-to-completion NF's core waits for each request: its per-packet time on a core is
//!   compute + memory + the accelerator's sojourn time, a round of the scheduler `n / capacity`
//!   (Eq. 1), per request; an NF with more cores than queues is also capped by its accelerator
//!   capacity.
//!
//! The equilibrium is a fixed point: throughputs set access and request rates, which set miss
//! ratios, memory latency and accelerator shares, which set throughputs. It is found by damped
//! iteration (half a step at a time) from every NF's uncontended core rate. Most feedback is
//! negative (a faster NF makes memory and accelerators slower for everyone) and damping keeps it
//! from oscillating (where the feedback is steep enough to swing a half step back and forth, the
//! step is halved until it settles); the cache adds a positive loop (a slower NF touches its lines less often and
//! keeps fewer of them), so starting from above, the iteration settles on the highest fixed point
//! where there could be several. It reports [`ColocateError::NotConverged`] if it does not settle.

use crate::accel::{capacity_for, equilibrium, ServiceTime, Tenant};
use crate::compose::Pattern;
use crate::error::{non_negative, positive, ColocateError};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use serde::{Deserialize, Serialize};

/// The highest memory-channel utilization the latency model evaluates.
pub const MAX_UTILIZATION: f64 = 0.98;
const DAMPING: f64 = 0.5;
/// A residual that flips sign keeping at least this share of its size counts as a swing.
const SWING: f64 = 0.9;
/// The shortest step swings shorten the damping to.
const MIN_STEP: f64 = 1.0 / 1024.0;
/// Convergence: the largest relative residual, times [`DAMPING`] (what a half step would still
/// move), below this.
const TOLERANCE: f64 = 1e-11;
/// Convergence once swings have shortened the step. The rates are continuous but not smooth
/// (offered-rate limits, an accelerator's limited set, core caps): at a kink the residual
/// changes sign with the side the rates stand on and never vanishes, while the rates close in
/// on the fixed point. A residual of a millionth of a rate is far inside the device's noise.
const KINK_TOLERANCE: f64 = 1e-6;
const MAX_ITERATIONS: usize = 20_000;

/// The accelerators an SoC SmartNIC offers (paper 004 Table 1).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum AccelKind {
    Regex,
    Compression,
}

impl AccelKind {
    pub fn name(self) -> &'static str {
        match self {
            AccelKind::Regex => "regex",
            AccelKind::Compression => "compression",
        }
    }
}

/// The shared last-level cache.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Cache {
    /// Bytes.
    pub size: f64,
    /// Seconds per hit.
    pub hit_time: f64,
    /// Seconds per miss on an idle memory channel.
    pub miss_time: f64,
    /// Bytes moved per miss.
    pub line_size: f64,
}

/// One round-robin accelerator.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Accelerator {
    pub kind: AccelKind,
    /// Work units per second; a request of `w` units takes `w / service_rate` seconds.
    pub service_rate: f64,
}

/// A simulated SoC SmartNIC.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Device {
    pub cores: u32,
    pub cache: Cache,
    /// Bytes per second.
    pub memory_bandwidth: f64,
    pub accelerators: Vec<Accelerator>,
}

impl Device {
    /// A device shaped like a BlueField-2: a 6 MB last-level cache (paper 004 Appendix B), a
    /// regex and a compression accelerator. Latencies and bandwidth are illustrative, not
    /// measured; it gets 16 cores (a BlueField-3's count, a BlueField-2 has 8) so that a target,
    /// three competitors and a benchmark per resource fit at once.
    pub fn bluefield2_like() -> Device {
        Device {
            cores: 16,
            cache: Cache {
                size: 6.0 * 1024.0 * 1024.0,
                hit_time: 12e-9,
                miss_time: 90e-9,
                line_size: 64.0,
            },
            memory_bandwidth: 12.8e9,
            accelerators: vec![
                Accelerator {
                    kind: AccelKind::Regex,
                    service_rate: 1.0,
                },
                Accelerator {
                    kind: AccelKind::Compression,
                    service_rate: 1.0,
                },
            ],
        }
    }

    fn accelerator(&self, kind: AccelKind) -> Option<&Accelerator> {
        self.accelerators.iter().find(|a| a.kind == kind)
    }

    /// The request time of `work` at `mtbr` on this device's `kind` accelerator.
    pub fn request_time(
        &self,
        kind: AccelKind,
        work: ServiceTime,
        mtbr: f64,
    ) -> Result<f64, ColocateError> {
        let accelerator = self
            .accelerator(kind)
            .ok_or_else(|| ColocateError::Placement {
                workload: format!("{kind:?} requests"),
                reason: format!("the device has no {kind:?} accelerator"),
            })?;
        positive("accelerator service rate", accelerator.service_rate)?;
        positive("request work", work.at(mtbr)).map(|w| w / accelerator.service_rate)
    }
}

/// An NF's use of one accelerator.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct AccelDemand {
    pub kind: AccelKind,
    /// Request queues the NF holds on the accelerator.
    pub queues: u32,
    /// Requests per packet.
    pub requests_per_packet: f64,
    /// Work per request at the device's reference speed (Eq. 5's `t0`, `a`).
    pub work: ServiceTime,
    /// The traffic's match-to-byte ratio, matches per MB.
    pub mtbr: f64,
}

/// A network function: what one packet demands of the device, and how it moves through it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Nf {
    pub name: String,
    pub cores: u32,
    /// Seconds of computation per packet on one core, memory stalls excluded.
    pub compute_time: f64,
    /// Memory accesses per packet that reach the last-level cache.
    pub accesses_per_packet: f64,
    /// Bytes the NF's accesses spread over (its tables, grown by the traffic's flow count).
    pub working_set: f64,
    pub accels: Vec<AccelDemand>,
    pub pattern: Pattern,
    /// Packets per second arriving; `None` for a saturating arrival rate (the paper's setting).
    pub offered_rate: Option<f64>,
}

/// mem-bench: touches `working_set` bytes uniformly at `access_rate` accesses per second.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct MemBench {
    pub working_set: f64,
    pub access_rate: f64,
}

/// regex-bench or compression-bench: requests of known size on one accelerator.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct AccelBench {
    pub kind: AccelKind,
    pub queues: u32,
    pub work: ServiceTime,
    pub mtbr: f64,
    /// Requests per second; `None` keeps its queues full.
    pub offered: Option<f64>,
}

impl AccelBench {
    /// A benchmark whose queues are never empty, each request taking `work` units (seconds at
    /// the reference service rate of 1), matches not counted.
    pub fn backlogged(kind: AccelKind, queues: u32, work: f64) -> AccelBench {
        AccelBench {
            kind,
            queues,
            work: ServiceTime {
                base: work,
                per_match: 0.0,
            },
            mtbr: 0.0,
            offered: None,
        }
    }
}

/// Anything that runs on the device.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum Workload {
    Nf(Nf),
    MemBench(MemBench),
    AccelBench(AccelBench),
}

impl Workload {
    fn name(&self) -> String {
        match self {
            Workload::Nf(nf) => nf.name.clone(),
            Workload::MemBench(_) => "mem-bench".to_string(),
            Workload::AccelBench(b) => format!("{:?}-bench", b.kind).to_lowercase(),
        }
    }

    fn cores(&self) -> u32 {
        match self {
            Workload::Nf(nf) => nf.cores,
            Workload::MemBench(_) | Workload::AccelBench(_) => 1,
        }
    }
}

/// What one workload does to the memory subsystem at given rates: the contention features the
/// simulated device can report (the cache-level counters of paper 004 Table 13 that a cache
/// model has: access rate, memory traffic, what it holds of the last-level cache).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct MemoryUse {
    /// Last-level cache accesses per second.
    pub access_rate: f64,
    pub miss_ratio: f64,
    /// Bytes per second its misses move over the memory channel.
    pub bandwidth: f64,
    /// Bytes of the last-level cache its lines occupy.
    pub occupancy: f64,
}

/// One accelerator's tenants at one iteration: which workload each is, its requests per packet
/// (one for a benchmark) and its parameters.
struct AccelTenants {
    owners: Vec<(usize, f64)>,
    tenants: Vec<Tenant>,
}

/// What the memory subsystem costs each workload at the current rates.
struct MemoryState {
    miss_ratio: Vec<f64>,
    miss_latency: f64,
}

impl Device {
    /// Each workload's throughput at equilibrium, in its own unit: packets per second for an NF,
    /// accesses per second for mem-bench, requests per second for an accelerator benchmark.
    /// Deterministic; [`Testbed`] adds measurement noise.
    pub fn run(&self, workloads: &[Workload]) -> Result<Vec<f64>, ColocateError> {
        self.validate(workloads)?;
        let mut rates: Vec<f64> = workloads
            .iter()
            .map(|w| match w {
                Workload::Nf(nf) => {
                    let first = f64::from(nf.cores)
                        / (nf.compute_time + nf.accesses_per_packet * self.cache.hit_time);
                    nf.offered_rate.map_or(first, |r| r.min(first))
                }
                Workload::MemBench(b) => b.access_rate,
                Workload::AccelBench(b) => b.offered.unwrap_or(0.0),
            })
            .collect();
        let mut change = f64::INFINITY;
        let mut step = DAMPING;
        let mut last: Vec<f64> = vec![0.0; rates.len()];
        for _ in 0..MAX_ITERATIONS {
            let next = self.step(workloads, &rates)?;
            change = 0.0;
            let mut swinging = false;
            for ((rate, target), last) in rates.iter_mut().zip(&next).zip(last.iter_mut()) {
                let residual = target - *rate;
                let scale = rate.abs().max(target.abs()).max(f64::MIN_POSITIVE);
                change = f64::max(change, DAMPING * residual.abs() / scale);
                // A residual that changes sign without shrinking: the step overshoots a steep
                // negative feedback (a 2-cycle), which only a shorter step settles.
                swinging |= residual * *last < 0.0 && residual.abs() > SWING * last.abs();
                *last = residual;
                *rate += step * residual;
            }
            if change < TOLERANCE || (step < DAMPING && change < KINK_TOLERANCE) {
                return self.finish(workloads, &rates);
            }
            if swinging {
                step = (step / 2.0).max(MIN_STEP);
            }
        }
        Err(ColocateError::NotConverged {
            iterations: MAX_ITERATIONS,
            change,
        })
    }

    fn validate(&self, workloads: &[Workload]) -> Result<(), ColocateError> {
        let cores: u32 = workloads
            .iter()
            .map(Workload::cores)
            .fold(0, u32::saturating_add);
        if cores > self.cores {
            return Err(ColocateError::Placement {
                workload: workloads.last().map(Workload::name).unwrap_or_default(),
                reason: format!("{cores} cores needed, the device has {}", self.cores),
            });
        }
        positive("cache size", self.cache.size)?;
        positive("cache hit time", self.cache.hit_time)?;
        positive("cache miss time", self.cache.miss_time)?;
        positive("cache line size", self.cache.line_size)?;
        positive("memory bandwidth", self.memory_bandwidth)?;
        for workload in workloads {
            let name = workload.name();
            let accel = |kind: AccelKind, queues: u32, work: ServiceTime, mtbr: f64| {
                non_negative(&format!("MTBR of {name}"), mtbr)?;
                if queues == 0 {
                    return Err(ColocateError::Invalid {
                        what: format!("queue count of {name}"),
                        value: 0.0,
                        reason: "an accelerator user holds at least one queue",
                    });
                }
                self.request_time(kind, work, mtbr).map(|_| ())
            };
            match workload {
                Workload::Nf(nf) => {
                    if nf.cores == 0 {
                        return Err(ColocateError::Placement {
                            workload: name,
                            reason: "an NF needs at least one core".to_string(),
                        });
                    }
                    positive(&format!("compute time of {name}"), nf.compute_time)?;
                    non_negative(&format!("accesses of {name}"), nf.accesses_per_packet)?;
                    non_negative(&format!("working set of {name}"), nf.working_set)?;
                    if let Some(rate) = nf.offered_rate {
                        positive(&format!("offered rate of {name}"), rate)?;
                    }
                    for demand in &nf.accels {
                        positive(
                            &format!("requests per packet of {name}"),
                            demand.requests_per_packet,
                        )?;
                        accel(demand.kind, demand.queues, demand.work, demand.mtbr)?;
                    }
                }
                Workload::MemBench(b) => {
                    non_negative("mem-bench working set", b.working_set)?;
                    non_negative("mem-bench access rate", b.access_rate)?;
                }
                Workload::AccelBench(b) => {
                    if let Some(rate) = b.offered {
                        non_negative(&format!("offered rate of {name}"), rate)?;
                    }
                    accel(b.kind, b.queues, b.work, b.mtbr)?;
                }
            }
        }
        Ok(())
    }

    /// Memory accesses per second each workload makes at `rates`.
    fn access_rates(workloads: &[Workload], rates: &[f64]) -> Vec<f64> {
        workloads
            .iter()
            .zip(rates)
            .map(|(w, &rate)| match w {
                Workload::Nf(nf) => rate * nf.accesses_per_packet,
                Workload::MemBench(b) => b.access_rate,
                Workload::AccelBench(_) => 0.0,
            })
            .collect()
    }

    fn working_set(workload: &Workload) -> f64 {
        match workload {
            Workload::Nf(nf) => nf.working_set,
            Workload::MemBench(b) => b.working_set,
            Workload::AccelBench(_) => 0.0,
        }
    }

    /// Each tenant's miss ratio under Che's approximation (see the module comment).
    fn miss_ratios(&self, working_sets: &[f64], access: &[f64]) -> Vec<f64> {
        let line = self.cache.line_size;
        let capacity = self.cache.size / line;
        let lines: Vec<f64> = working_sets.iter().map(|w| w / line).collect();
        if lines.iter().sum::<f64>() <= capacity {
            return vec![0.0; lines.len()];
        }
        let per_line: Vec<f64> = lines
            .iter()
            .zip(access)
            .map(|(&l, &a)| if l > 0.0 { a / l } else { 0.0 })
            .collect();
        // Occupancy rises from 0 at τ = 0 towards the lines of the tenants that access at all;
        // if even those fit, the idle tenants' lines are the ones evicted and nobody active
        // misses.
        let active: f64 = lines
            .iter()
            .zip(&per_line)
            .filter(|(_, &r)| r > 0.0)
            .map(|(l, _)| l)
            .sum();
        if active <= capacity {
            return per_line
                .iter()
                .map(|&r| if r > 0.0 { 0.0 } else { 1.0 })
                .collect();
        }
        // Occupancy is increasing and concave in τ, so Newton's method from τ = 0 stays below
        // the root and climbs to it monotonically: a handful of steps (one exponential per
        // tenant each) where bisection to the same precision took some fifty.
        let mut tau = 0.0f64;
        for _ in 0..200 {
            let (mut occupied, mut slope) = (0.0, 0.0);
            for (l, r) in lines.iter().zip(&per_line) {
                let kept = (-r * tau).exp();
                occupied += l * (1.0 - kept);
                slope += l * r * kept;
            }
            let step = (capacity - occupied) / slope;
            if step.is_nan() || step <= 1e-15 * tau {
                break;
            }
            tau += step;
        }
        per_line.iter().map(|r| (-r * tau).exp()).collect()
    }

    fn memory(&self, workloads: &[Workload], rates: &[f64]) -> MemoryState {
        let access = Self::access_rates(workloads, rates);
        let working_sets: Vec<f64> = workloads.iter().map(Self::working_set).collect();
        let miss_ratio = self.miss_ratios(&working_sets, &access);
        let traffic: f64 = access
            .iter()
            .zip(&miss_ratio)
            .map(|(a, m)| a * m * self.cache.line_size)
            .sum();
        let utilization = (traffic / self.memory_bandwidth).min(MAX_UTILIZATION);
        let transfer = self.cache.line_size / self.memory_bandwidth;
        let wait = transfer * utilization / (2.0 * (1.0 - utilization));
        MemoryState {
            miss_ratio,
            miss_latency: self.cache.miss_time + wait,
        }
    }

    /// Each workload's use of the memory subsystem when the workloads run at `rates` (e.g. the
    /// rates [`Device::run`] returned).
    pub fn memory_use(&self, workloads: &[Workload], rates: &[f64]) -> Vec<MemoryUse> {
        let access = Self::access_rates(workloads, rates);
        let memory = self.memory(workloads, rates);
        workloads
            .iter()
            .zip(access)
            .zip(memory.miss_ratio)
            .map(|((workload, access_rate), miss_ratio)| MemoryUse {
                access_rate,
                miss_ratio,
                bandwidth: access_rate * miss_ratio * self.cache.line_size,
                occupancy: Self::working_set(workload) * (1.0 - miss_ratio),
            })
            .collect()
    }

    /// The tenants of every accelerator at `rates`, NFs offering their current request rate.
    fn accel_tenants(
        &self,
        workloads: &[Workload],
        rates: &[f64],
    ) -> Result<Vec<(AccelKind, AccelTenants)>, ColocateError> {
        let mut all = Vec::new();
        for accelerator in &self.accelerators {
            let mut group = AccelTenants {
                owners: Vec::new(),
                tenants: Vec::new(),
            };
            for (index, (workload, &rate)) in workloads.iter().zip(rates).enumerate() {
                match workload {
                    Workload::Nf(nf) => {
                        for demand in nf.accels.iter().filter(|d| d.kind == accelerator.kind) {
                            group.owners.push((index, demand.requests_per_packet));
                            group.tenants.push(Tenant {
                                queues: demand.queues,
                                request_time: self.request_time(
                                    demand.kind,
                                    demand.work,
                                    demand.mtbr,
                                )?,
                                offered: Some(rate * demand.requests_per_packet),
                            });
                        }
                    }
                    Workload::AccelBench(b) if b.kind == accelerator.kind => {
                        group.owners.push((index, 1.0));
                        group.tenants.push(Tenant {
                            queues: b.queues,
                            request_time: self.request_time(b.kind, b.work, b.mtbr)?,
                            offered: b.offered,
                        });
                    }
                    Workload::AccelBench(_) | Workload::MemBench(_) => {}
                }
            }
            all.push((accelerator.kind, group));
        }
        Ok(all)
    }

    /// One application of the fixed-point map: the throughputs the current rates allow.
    fn step(&self, workloads: &[Workload], rates: &[f64]) -> Result<Vec<f64>, ColocateError> {
        let memory = self.memory(workloads, rates);
        let accels = self.accel_tenants(workloads, rates)?;
        let mut next = rates.to_vec();
        for (index, workload) in workloads.iter().enumerate() {
            let Workload::Nf(nf) = workload else {
                continue;
            };
            let miss = memory.miss_ratio[index];
            let memory_time = nf.accesses_per_packet
                * ((1.0 - miss) * self.cache.hit_time + miss * memory.miss_latency);
            let core_time = nf.compute_time + memory_time;
            let cores = f64::from(nf.cores);
            // Per accelerator demand: the packet rate its capacity allows, and the sojourn a
            // request of this NF sees (one scheduler round, Eq. 1).
            let mut accel_bound = f64::INFINITY;
            let mut sojourn_per_packet = 0.0;
            for (_, group) in &accels {
                for (slot, &(owner, per_packet)) in group.owners.iter().enumerate() {
                    if owner != index {
                        continue;
                    }
                    let tenant = group.tenants[slot];
                    let capacity = capacity_for(&group.tenants, slot)?;
                    accel_bound = accel_bound.min(capacity / per_packet);
                    sojourn_per_packet += per_packet * f64::from(tenant.queues) / capacity;
                }
            }
            let throughput = match nf.pattern {
                Pattern::Pipeline => (cores / core_time).min(accel_bound),
                Pattern::RunToCompletion => {
                    (cores / (core_time + sojourn_per_packet)).min(accel_bound)
                }
            };
            next[index] = nf.offered_rate.map_or(throughput, |r| r.min(throughput));
        }
        Ok(next)
    }

    /// The reported rates: NFs at the fixed point, benchmarks at what it leaves them.
    fn finish(&self, workloads: &[Workload], rates: &[f64]) -> Result<Vec<f64>, ColocateError> {
        let mut out = rates.to_vec();
        for (_, group) in self.accel_tenants(workloads, rates)? {
            let served = equilibrium(&group.tenants)?;
            for (slot, &(owner, _)) in group.owners.iter().enumerate() {
                if let Workload::AccelBench(_) = workloads[owner] {
                    out[owner] = served[slot];
                }
            }
        }
        Ok(out)
    }
}

/// The device with measurement noise: each reported throughput is multiplied by
/// `1 + noise·z`, `z` standard normal from a seeded generator, so that fitting code meets
/// imperfect data reproducibly.
pub struct Testbed {
    pub device: Device,
    /// Relative standard deviation of a measurement.
    pub noise: f64,
    rng: StdRng,
}

impl Testbed {
    /// The default relative measurement noise, 1%.
    pub const DEFAULT_NOISE: f64 = 0.01;

    pub fn new(device: Device, noise: f64, seed: u64) -> Testbed {
        Testbed {
            device,
            noise,
            rng: StdRng::seed_from_u64(seed),
        }
    }

    /// [`Device::run`], each rate measured with noise.
    pub fn measure(&mut self, workloads: &[Workload]) -> Result<Vec<f64>, ColocateError> {
        non_negative("measurement noise", self.noise)?;
        let exact = self.device.run(workloads)?;
        Ok(exact.into_iter().map(|rate| self.perturb(rate)).collect())
    }

    /// `value` as measured: multiplied by `1 + noise·z`, the next draw of the generator.
    pub fn perturb(&mut self, value: f64) -> f64 {
        // Box–Muller; the factor is kept positive, a measured rate is never negative.
        let u1: f64 = self.rng.gen_range(f64::MIN_POSITIVE..1.0);
        let u2: f64 = self.rng.gen_range(0.0..1.0);
        let z = (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos();
        value * (1.0 + self.noise * z).max(0.5)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MB: f64 = 1024.0 * 1024.0;

    #[test]
    fn working_sets_that_fit_together_never_miss() {
        let device = Device::bluefield2_like();
        let misses = device.miss_ratios(&[2.0 * MB, 3.0 * MB], &[1e8, 1e6]);
        assert_eq!(misses, vec![0.0, 0.0]);
    }

    #[test]
    fn che_occupancy_fills_the_cache_and_hotter_lines_stay() {
        let device = Device::bluefield2_like();
        let (sets, access) = ([4.0 * MB, 8.0 * MB], [1e8, 1e8]);
        let misses = device.miss_ratios(&sets, &access);
        // Occupancy Σ L·(1 − miss) equals the cache's lines.
        let line = device.cache.line_size;
        let occupied: f64 = sets
            .iter()
            .zip(&misses)
            .map(|(w, m)| w / line * (1.0 - m))
            .sum();
        assert!((occupied - device.cache.size / line).abs() < 1e-6 * occupied);
        // The same access rate over half the lines: each line is hotter and misses less.
        assert!(misses[0] < misses[1]);
        assert!(misses.iter().all(|m| *m > 0.0 && *m < 1.0));
    }
}
