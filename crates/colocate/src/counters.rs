//! What a backend can read besides the NF's throughput: a workload's memory counters while it
//! runs alone, its "contentiousness" (paper 004 §4.1.2, after SLOMO), which prediction sums over
//! a target's competitors; and an accelerator benchmark's own throughput in a co-run, which
//! tells how much of the accelerator the NF occupies.
//!
//! The memory model is trained against mem-bench settings and applied to NF competitors, so both
//! must be described by the same numbers. A competitor's counters measured next to the target
//! depend on the target (the thing being predicted); its counters measured alone do not, and can
//! be taken once per NF and traffic profile. So training relabels every sample with the
//! mem-bench's solo counters, and prediction feeds the sum of the competitors' solo counters
//! (each competitor's rates scaled by how much it is predicted to slow down).
//!
//! The accelerator's occupancy: next to a backlogged benchmark the accelerator is never idle, so
//! the NF's busy share and the benchmark's add up to one, `λ·t + b·t_c = 1`, whether the NF keeps
//! its queues full (a pipeline bound by the accelerator) or not (a run-to-completion NF whose
//! core works between requests). The benchmark's measured rate `b` gives the NF's time per
//! packet on the accelerator `t = (1 − b·t_c)/λ`, which the co-run inference of §4.1.1 cannot
//! give for a run-to-completion NF (it measures the whole per-packet time there).

use crate::error::ColocateError;
use crate::profile::{Backend, ContentionSetting, Features, TrafficProfile};
use crate::sim::{AccelBench, MemBench, Workload};
use crate::sim_backend::{SimBackend, TrafficNf};

/// A backend that can also read memory counters of a workload alone and a benchmark's rate.
pub trait SoloCounters: Backend {
    /// The NF's own counters alone at `traffic` (`None` on a backend without counters), and
    /// its solo throughput measured in the same run (packets per second).
    fn nf_counters(
        &mut self,
        nf: &Self::Nf,
        traffic: &TrafficProfile,
    ) -> Result<(Option<Features>, f64), ColocateError>;

    /// The memory competitor of `setting` alone (zero for a setting without one).
    fn competitor_counters(
        &mut self,
        setting: &ContentionSetting,
    ) -> Result<Features, ColocateError>;

    /// The NF's throughput next to `setting`'s competitors, and each accelerator benchmark's
    /// throughput (requests per second) in the same run, in `setting.accelerators`' order.
    fn accel_co_run(
        &mut self,
        nf: &Self::Nf,
        setting: &ContentionSetting,
        traffic: &TrafficProfile,
    ) -> Result<(f64, Vec<f64>), ColocateError>;
}

impl SoloCounters for SimBackend {
    fn nf_counters(
        &mut self,
        nf: &TrafficNf,
        traffic: &TrafficProfile,
    ) -> Result<(Option<Features>, f64), ColocateError> {
        let nf = nf.at(traffic)?;
        let working_set = nf.working_set;
        let workloads = [Workload::Nf(nf)];
        let rates = self.testbed.device.run(&workloads)?;
        let used = self.testbed.device.memory_use(&workloads, &rates);
        let (Some(&rate), Some(used)) = (rates.first(), used.first()) else {
            return Ok((Some(Features::default()), 0.0));
        };
        let features = Features {
            access_rate: self.testbed.perturb(used.access_rate),
            bandwidth: self.testbed.perturb(used.bandwidth),
            working_set,
            occupancy: Some(self.testbed.perturb(used.occupancy)),
        };
        Ok((Some(features), self.testbed.perturb(rate)))
    }

    fn competitor_counters(
        &mut self,
        setting: &ContentionSetting,
    ) -> Result<Features, ColocateError> {
        let Some(competitor) = setting.memory else {
            return Ok(Features::default());
        };
        let workloads = [Workload::MemBench(MemBench {
            working_set: competitor.working_set,
            access_rate: competitor.access_rate,
        })];
        let rates = self.testbed.device.run(&workloads)?;
        let Some(used) = self.testbed.device.memory_use(&workloads, &rates).pop() else {
            return Ok(Features::default());
        };
        Ok(Features {
            access_rate: self.testbed.perturb(used.access_rate),
            bandwidth: self.testbed.perturb(used.bandwidth),
            working_set: competitor.working_set,
            occupancy: Some(self.testbed.perturb(used.occupancy)),
        })
    }

    fn accel_co_run(
        &mut self,
        nf: &TrafficNf,
        setting: &ContentionSetting,
        traffic: &TrafficProfile,
    ) -> Result<(f64, Vec<f64>), ColocateError> {
        let mut workloads = vec![Workload::Nf(nf.at(traffic)?)];
        if let Some(memory) = setting.memory {
            workloads.push(Workload::MemBench(MemBench {
                working_set: memory.working_set,
                access_rate: memory.access_rate,
            }));
        }
        let first_bench = workloads.len();
        for accel in &setting.accelerators {
            workloads.push(Workload::AccelBench(AccelBench::backlogged(
                accel.kind,
                accel.queues,
                accel.request_time,
            )));
        }
        let rates = self.testbed.device.run(&workloads)?;
        self.count_sample();
        let nf_rate = rates.first().copied().unwrap_or(0.0);
        let benches = rates
            .get(first_bench..)
            .unwrap_or_default()
            .iter()
            .map(|rate| self.testbed.perturb(*rate))
            .collect();
        Ok((self.testbed.perturb(nf_rate), benches))
    }
}
