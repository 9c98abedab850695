//! Composition of per-resource throughput drops into an end-to-end throughput, by the NF's
//! execution pattern (paper 004 §4.2, Eqs. 3 and 4, gathered as Eq. 7 in Appendix C), the two
//! naive compositions it is compared with (§2.2: sum and min), and detection of the pattern from
//! co-runs against benchmark competitors (§4.2, "Detecting execution pattern").
//!
//! Every function takes `solo`, the NF's throughput alone, and `drops`, one throughput drop
//! `ΔT_k = T_solo − T_k` per contended resource, where `T_k` is the NF's throughput with only
//! resource `k` contended.

use crate::error::{non_negative, positive, ColocateError};
use serde::{Deserialize, Serialize};

/// How an NF moves a packet through the resources it uses (§4.2, Observations).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Pattern {
    /// Each packet leaves a stage when the next is free: throughput is the slowest stage's.
    Pipeline,
    /// Each packet goes through all stages before the next starts: times add up.
    RunToCompletion,
}

impl Pattern {
    pub const ALL: [Pattern; 2] = [Pattern::Pipeline, Pattern::RunToCompletion];

    pub fn name(self) -> &'static str {
        match self {
            Pattern::Pipeline => "pipeline",
            Pattern::RunToCompletion => "run-to-completion",
        }
    }
}

fn check(solo: f64, drops: &[f64]) -> Result<(), ColocateError> {
    positive("solo throughput", solo)?;
    for drop in drops {
        non_negative("throughput drop", *drop)?;
        if *drop >= solo {
            return Err(ColocateError::Invalid {
                what: "throughput drop".to_string(),
                value: *drop,
                reason: "a single resource cannot take all of the solo throughput",
            });
        }
    }
    Ok(())
}

/// Eq. 3: a pipeline NF loses what its most contended stage loses, `T = T_solo − max_k ΔT_k`.
pub fn pipeline(solo: f64, drops: &[f64]) -> Result<f64, ColocateError> {
    check(solo, drops)?;
    Ok(solo - drops.iter().copied().fold(0.0, f64::max))
}

/// Eq. 4: a run-to-completion NF's per-packet time is the sum of its stages' sojourn times, each
/// grown by its own contention, `T = 1 / (Σ_k 1/(T_solo − ΔT_k) − (r−1)/T_solo)`.
pub fn run_to_completion(solo: f64, drops: &[f64]) -> Result<f64, ColocateError> {
    check(solo, drops)?;
    if drops.is_empty() {
        return Ok(solo);
    }
    let stretched: f64 = drops.iter().map(|d| 1.0 / (solo - d)).sum();
    let shared = (drops.len() as f64 - 1.0) / solo;
    Ok(1.0 / (stretched - shared))
}

/// Eq. 7: the composition for a known pattern.
pub fn compose(pattern: Pattern, solo: f64, drops: &[f64]) -> Result<f64, ColocateError> {
    match pattern {
        Pattern::Pipeline => pipeline(solo, drops),
        Pattern::RunToCompletion => run_to_completion(solo, drops),
    }
}

/// §2.2's sum composition: the per-resource losses add up, `T = T_solo − Σ_k ΔT_k`, floored at
/// zero (a throughput cannot be negative; the floor only hides how wrong the sum is there).
pub fn sum_composition(solo: f64, drops: &[f64]) -> Result<f64, ColocateError> {
    check(solo, drops)?;
    Ok((solo - drops.iter().sum::<f64>()).max(0.0))
}

/// §2.2's min composition: the smallest of the per-resource predicted throughputs,
/// `T = min_k (T_solo − ΔT_k)`. §2.2 words it as "the minimal predicted throughput loss", but
/// §7.3 finds it "on par" with Tomur for pipeline NFs "consistent with Equation (7)", which holds
/// only for the minimal predicted throughput; for pipelines it therefore equals Eq. 3.
pub fn min_composition(solo: f64, drops: &[f64]) -> Result<f64, ColocateError> {
    check(solo, drops)?;
    Ok(drops.iter().map(|d| solo - d).fold(solo, f64::min))
}

/// One setting of benchmark competitors: the NF's throughput with each resource's benchmark
/// running alone, and with all of them running together.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct BenchmarkCoRun {
    /// `T_k` for each contended resource `k`, its benchmark alone.
    pub alone: Vec<f64>,
    /// The NF's throughput with every benchmark of `alone` running at once.
    pub together: f64,
}

/// The detected pattern and how well each equation explained the co-runs.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Detection {
    pub pattern: Pattern,
    /// Mean squared relative error of Eq. 3's prediction of `together`.
    pub pipeline_residual: f64,
    /// Mean squared relative error of Eq. 4's prediction of `together`.
    pub run_to_completion_residual: f64,
}

/// Chooses the pattern whose equation (3 or 4) better predicts the NF's throughput under all
/// benchmarks at once from its throughputs under each alone (§4.2). Settings where some single
/// benchmark leaves no drop tell the two apart only weakly (with one resource the two equations
/// agree), so the caller should include settings that contend every resource.
///
/// A measured `T_k` above `solo` (noise) counts as no drop; one at or below zero is refused.
pub fn detect_pattern(solo: f64, runs: &[BenchmarkCoRun]) -> Result<Detection, ColocateError> {
    positive("solo throughput", solo)?;
    if runs.is_empty() {
        return Err(ColocateError::Fit {
            what: "execution pattern".to_string(),
            reason: "needs at least one co-run".to_string(),
        });
    }
    let mut residual = [0.0f64; 2];
    for run in runs {
        positive("throughput with all benchmarks", run.together)?;
        let mut drops = Vec::with_capacity(run.alone.len());
        for &alone in &run.alone {
            positive("throughput with one benchmark", alone)?;
            drops.push((solo - alone).max(0.0));
        }
        for (slot, pattern) in Pattern::ALL.iter().enumerate() {
            let predicted = compose(*pattern, solo, &drops)?;
            residual[slot] += ((predicted - run.together) / run.together).powi(2);
        }
    }
    let count = runs.len() as f64;
    let (pipeline_residual, run_to_completion_residual) =
        (residual[0] / count, residual[1] / count);
    let pattern = if pipeline_residual <= run_to_completion_residual {
        Pattern::Pipeline
    } else {
        Pattern::RunToCompletion
    };
    Ok(Detection {
        pattern,
        pipeline_residual,
        run_to_completion_residual,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_resource_makes_every_composition_agree() {
        for f in [
            pipeline,
            run_to_completion,
            sum_composition,
            min_composition,
        ] {
            assert!((f(100.0, &[30.0]).unwrap() - 70.0).abs() < 1e-9);
        }
    }

    #[test]
    fn run_to_completion_adds_stage_times() {
        // Solo: stages 4 + 6 = 10 time units, T = 0.1. Contention adds 1 to the first stage
        // (T_1 = 1/11) and 4 to the second (T_2 = 1/14); together the packet takes 15.
        let solo = 0.1;
        let drops = [solo - 1.0 / 11.0, solo - 1.0 / 14.0];
        let t = run_to_completion(solo, &drops).unwrap();
        assert!((t - 1.0 / 15.0).abs() < 1e-12);
        assert!((pipeline(solo, &drops).unwrap() - 1.0 / 14.0).abs() < 1e-12);
    }

    /// Co-runs of a two-stage NF (stage times `a`, `b` solo; contention adds `da`, `db`).
    fn co_runs(pattern: Pattern) -> Vec<BenchmarkCoRun> {
        let throughput = |a: f64, b: f64| match pattern {
            Pattern::Pipeline => 1.0 / f64::max(a, b),
            Pattern::RunToCompletion => 1.0 / (a + b),
        };
        [(1.0, 0.5), (3.0, 2.0), (0.5, 4.0)]
            .iter()
            .map(|&(da, db)| BenchmarkCoRun {
                alone: vec![throughput(4.0 + da, 4.5), throughput(4.0, 4.5 + db)],
                together: throughput(4.0 + da, 4.5 + db),
            })
            .collect()
    }

    #[test]
    fn detection_tells_the_patterns_apart() {
        for pattern in Pattern::ALL {
            let solo = match pattern {
                Pattern::Pipeline => 1.0 / 4.5,
                Pattern::RunToCompletion => 1.0 / 8.5,
            };
            let detection = detect_pattern(solo, &co_runs(pattern)).unwrap();
            assert_eq!(detection.pattern, pattern, "{detection:?}");
            let (right, wrong) = match pattern {
                Pattern::Pipeline => (
                    detection.pipeline_residual,
                    detection.run_to_completion_residual,
                ),
                Pattern::RunToCompletion => (
                    detection.run_to_completion_residual,
                    detection.pipeline_residual,
                ),
            };
            assert!(right < 1e-20 && wrong > 1e-3, "{detection:?}");
        }
    }

    #[test]
    fn a_drop_as_large_as_solo_is_refused() {
        assert!(run_to_completion(10.0, &[10.0, 1.0]).is_err());
    }
}
