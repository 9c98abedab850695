//! Whether a calibrated x86 model still fits this host (`linerate calibrate --check`): a sample
//! of items, one or two of each family, is timed again as calibration times it, and each new
//! price is compared with the model's.
//!
//! A host drifts under a model without its fingerprint changing: a sibling tenant, a changed
//! governor, a firmware setting. Re-timing every item takes as long as calibrating, so the check
//! times a sample chosen to cover what moves prices differently (the core's issue rate, loads
//! and stores, branches, division, atomics, map lookups and updates, helpers, calls, the
//! per-packet harness).

use std::time::{Duration, Instant};

use linerate_cost::model::ModelFile;

use crate::{calibrate, resolve, CalibrateError, How, Options, Progress, COMPONENT};

/// The items a check re-times, by key.
pub const SAMPLE: &[&str] = &[
    "alu64.add.reg",
    "alu64.mul.reg",
    "alu64.div.reg",
    "load.packet.u32",
    "load.map_value.u64",
    "store.stack.u64",
    "jmp64.jeq.imm.taken",
    "jmp64.jeq.imm.not_taken",
    "atomic.map_value.add.u64",
    "map.lookup.array.k4",
    "map.lookup.hash.k8",
    "map.update.hash.k8",
    "map.lookup.lpm_trie.k8",
    "helper.csum_diff",
    "helper.xdp_adjust_head",
    "call.local",
];

/// How far a re-timed price may move from the model's before the model no longer fits: twice
/// the 95th-percentile difference of two full calibrations of one host (issue 30's
/// repeatability target, 5%): the check and the model's calibration each bring their noise.
pub const TOLERANCE: f64 = 0.10;

/// Prices under this many cycles are compared in absolute terms: a fraction of a cycle is below
/// what one timing resolves (an add issues at a quarter cycle).
pub const ABSOLUTE_CYCLES: f64 = 0.1;

/// One re-timed item.
#[derive(Clone, Debug)]
pub struct Compared {
    /// Item key, or `per_packet`.
    pub item: String,
    /// The model's price, cycles.
    pub model: f64,
    /// The price measured now, cycles.
    pub now: f64,
}

impl Compared {
    /// `now / model − 1` (0 for two zero prices).
    pub fn change(&self) -> f64 {
        if self.model > 0.0 {
            self.now / self.model - 1.0
        } else if self.now > 0.0 {
            f64::INFINITY
        } else {
            0.0
        }
    }

    /// Whether the item moved beyond [`TOLERANCE`] (and by more than [`ABSOLUTE_CYCLES`]).
    pub fn moved(&self) -> bool {
        (self.now - self.model).abs() > ABSOLUTE_CYCLES && self.change().abs() > TOLERANCE
    }
}

/// A finished check.
#[derive(Clone, Debug)]
pub struct Check {
    /// `per_packet`, then every re-timed item the model prices.
    pub compared: Vec<Compared>,
    /// Wall-clock time of the check.
    pub elapsed: Duration,
}

impl Check {
    /// Whether no re-timed item moved.
    pub fn fits(&self) -> bool {
        !self.compared.iter().any(Compared::moved)
    }
}

/// The options of a check: the sample only, in as many rounds as a full calibration (the
/// sample's programs take a few seconds).
pub fn options() -> Options {
    Options {
        only: SAMPLE.iter().map(|k| k.to_string()).collect(),
        ..Options::full()
    }
}

/// Re-times [`SAMPLE`] with `opts` and compares the prices (contention included: a host busier
/// than when it was calibrated no longer fits its model) with `model`'s.
pub fn check(
    model: &ModelFile,
    opts: &Options,
    progress: &mut dyn FnMut(&Progress),
) -> Result<Check, CalibrateError> {
    let started = Instant::now();
    let now = calibrate(opts, progress)?;
    let model_cycles = |file: &ModelFile| file.per_packet.get(COMPONENT).copied();
    let mut compared = Vec::new();

    if let (Some(model), Some(now)) = (model_cycles(model), model_cycles(&now.model)) {
        compared.push(Compared {
            item: "per_packet".into(),
            model,
            now,
        });
    }
    for item in &now.items {
        if !matches!(item.how, How::Measured | How::Derived) || !SAMPLE.contains(&&*item.item) {
            continue;
        }
        if let (Some(was), Some(is)) = (resolve(model, &item.item), item.cycles) {
            compared.push(Compared {
                item: item.item.clone(),
                model: was,
                now: is,
            });
        }
    }
    Ok(Check {
        compared,
        elapsed: started.elapsed(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn compared(model: f64, now: f64) -> Compared {
        Compared {
            item: "x".into(),
            model,
            now,
        }
    }

    #[test]
    fn moves_beyond_the_tolerance_count() {
        assert!(!compared(100.0, 109.0).moved());
        assert!(compared(100.0, 111.0).moved());
        assert!(compared(100.0, 85.0).moved());
        // A fifth of a cycle on a quarter-cycle add is below what a timing resolves.
        assert!(!compared(0.25, 0.32).moved());
        assert!(compared(0.25, 0.5).moved());
        assert_eq!(compared(0.0, 0.0).change(), 0.0);
    }

    #[test]
    fn every_sampled_item_is_a_model_item() {
        let shipped = linerate_cost::Model::builtin_file("x86").unwrap();
        for key in SAMPLE {
            assert!(resolve(&shipped, key).is_some(), "{key}");
        }
    }
}
