//! Profiling strategies (paper 004 §5.2, §7.6): Tomur's adaptive profiling (Algorithm 1) under
//! a quota, and the two it is compared with, random profiling at the same quota and full
//! profiling over a grid of the same features. All run through a [`Backend`].
//!
//! Algorithm 1 as we read it:
//!
//! 1. **Pruning** (lines 7–11): for each traffic attribute, the NF's solo throughput at the
//!    attribute's minimum and maximum, the others at their defaults; an attribute whose two
//!    throughputs differ by less than `ε0` is dropped.
//! 2. **Range profiling** (lines 13–25) over the box between the kept attributes' minima and
//!    maxima (pruned ones at their defaults): solo throughput at the two corners; if they differ
//!    by at least `ε1`, `m` samples under random contention at the midpoint, then the same on
//!    the upper half and on the lower half, depth first. The listing indents the recursive
//!    calls inside the `for _ in m` loop; the text ("collect m data points at the center …
//!    Then the traffic attribute region is split in half") splits once, after the loop, and so
//!    do we. With several kept attributes the midpoint is the box's centre and the halves are
//!    the two sub-boxes along the diagonal, as the listing has it.
//!
//! Where we differ, and why:
//! - `ε0`, `ε1` are relative (a fraction of the larger throughput), so one setting serves NFs
//!   whose rates differ by orders of magnitude.
//! - An attribute may be split on a logarithmic scale (geometric midpoint): flow counts span
//!   three decades and the cache effect sits at one of them, an arithmetic midpoint would
//!   spend the quota on the top decade.
//! - Three options beyond the listing, all off in [`AdaptiveConfig::literal`]: the split signal
//!   may also compare the throughput next to a reference competitor ([`SplitSignal`]), regions
//!   may be taken breadth first ([`SplitOrder`]), and a region may be split into the `2^k`
//!   boxes around its centre instead of the two on its diagonal ([`SplitShape`]): with several
//!   kept attributes the diagonal halves only ever sample points where every attribute is low
//!   together or high together, and a model trained on them cannot tell the attributes apart.
//!   tests/it/profiling.rs reports the first two, tests/it/predict.rs the third.
//! - The quota is a hard cap: `profile_one` is not called once `Q` distinct points are taken
//!   (the listing checks only between splits, so it can overshoot by `m + 2`).
//! - As the paper's `profile_one` does, a point already profiled (a solo corner shared by two
//!   halves) is not run or counted again.

use crate::error::ColocateError;
use crate::profile::{
    AccessPattern, Attribute, Backend, ContentionSetting, MemoryCompetitor, Sample, TrafficProfile,
};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use serde::{Deserialize, Serialize};
use std::collections::HashMap;

/// The values one attribute takes while profiling.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct AttributeRange {
    pub attribute: Attribute,
    pub min: f64,
    pub max: f64,
    /// Where it sits while another attribute is varied, or once pruned.
    pub default: f64,
    /// Midpoints and random draws are geometric.
    pub log_scale: bool,
}

impl AttributeRange {
    fn midpoint(&self, low: f64, high: f64) -> f64 {
        if self.log_scale {
            (low * high).sqrt()
        } else {
            0.5 * (low + high)
        }
    }

    fn draw(&self, rng: &mut StdRng) -> f64 {
        draw(rng, self.min, self.max, self.log_scale)
    }

    /// `points` values from `min` to `max`, evenly spaced on the attribute's scale.
    pub fn grid(&self, points: usize) -> Vec<f64> {
        spaced(self.min, self.max, points, self.log_scale)
    }
}

fn check_range(what: &str, min: f64, max: f64, log_scale: bool) -> Result<(), ColocateError> {
    let fail = |value: f64, reason: &'static str| ColocateError::Invalid {
        what: format!("range of {what}"),
        value,
        reason,
    };
    if !(min.is_finite() && max.is_finite()) {
        return Err(fail(
            if min.is_finite() { max } else { min },
            "must be finite",
        ));
    }
    if max < min {
        return Err(fail(max, "the maximum is below the minimum"));
    }
    if log_scale && min <= 0.0 {
        return Err(fail(min, "a log-scale range must be positive"));
    }
    Ok(())
}

fn draw(rng: &mut StdRng, min: f64, max: f64, log_scale: bool) -> f64 {
    if max <= min {
        return min;
    }
    if log_scale {
        (rng.gen_range(min.ln()..max.ln())).exp()
    } else {
        rng.gen_range(min..max)
    }
}

fn spaced(min: f64, max: f64, points: usize, log_scale: bool) -> Vec<f64> {
    if points <= 1 {
        return vec![min];
    }
    let steps = (points - 1) as f64;
    (0..points)
        .map(|i| {
            let t = i as f64 / steps;
            if log_scale {
                (min.ln() + t * (max.ln() - min.ln())).exp()
            } else {
                min + t * (max - min)
            }
        })
        .collect()
}

/// The traffic space: a range per attribute. The default profile has every attribute at its
/// default.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TrafficSpace {
    pub ranges: Vec<AttributeRange>,
}

impl TrafficSpace {
    pub fn default_profile(&self) -> TrafficProfile {
        self.ranges.iter().fold(TrafficProfile::DEFAULT, |t, r| {
            t.with(r.attribute, r.default)
        })
    }

    /// A profile drawn uniformly on each attribute's scale.
    pub fn random(&self, rng: &mut StdRng) -> TrafficProfile {
        self.ranges.iter().fold(TrafficProfile::DEFAULT, |t, r| {
            t.with(r.attribute, r.draw(rng))
        })
    }

    /// Every range finite with `min ≤ max`, and positive where it is on a log scale.
    pub fn validate(&self) -> Result<(), ColocateError> {
        for range in &self.ranges {
            check_range(
                range.attribute.name(),
                range.min,
                range.max,
                range.log_scale,
            )?;
        }
        Ok(())
    }

    fn range(&self, attribute: Attribute) -> Option<&AttributeRange> {
        self.ranges.iter().find(|r| r.attribute == attribute)
    }
}

/// The memory competitor's settings random contention is drawn from and grids are laid over.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct ContentionSpace {
    /// Bytes, drawn on a log scale.
    pub working_set: (f64, f64),
    /// Accesses per second, drawn on a log scale.
    pub access_rate: (f64, f64),
    pub pattern: AccessPattern,
}

impl ContentionSpace {
    pub fn validate(&self) -> Result<(), ColocateError> {
        check_range(
            "competitor working set",
            self.working_set.0,
            self.working_set.1,
            true,
        )?;
        check_range(
            "competitor access rate",
            self.access_rate.0,
            self.access_rate.1,
            true,
        )
    }

    /// Algorithm 1's `random()` contention level.
    pub fn random(&self, rng: &mut StdRng) -> ContentionSetting {
        ContentionSetting::memory(MemoryCompetitor {
            working_set: draw(rng, self.working_set.0, self.working_set.1, true),
            access_rate: draw(rng, self.access_rate.0, self.access_rate.1, true),
            pattern: self.pattern,
        })
    }

    /// The heaviest competitor of the space: largest working set at the highest rate (the
    /// reference for [`SplitSignal::SoloAndContended`]).
    pub fn heaviest(&self) -> ContentionSetting {
        ContentionSetting::memory(MemoryCompetitor {
            working_set: self.working_set.1,
            access_rate: self.access_rate.1,
            pattern: self.pattern,
        })
    }

    /// A `working_sets × access_rates` grid, both on log scales.
    pub fn grid(&self, working_sets: usize, access_rates: usize) -> Vec<ContentionSetting> {
        let sets = spaced(self.working_set.0, self.working_set.1, working_sets, true);
        let rates = spaced(self.access_rate.0, self.access_rate.1, access_rates, true);
        sets.iter()
            .flat_map(|&working_set| {
                rates.iter().map(move |&access_rate| {
                    ContentionSetting::memory(MemoryCompetitor {
                        working_set,
                        access_rate,
                        pattern: self.pattern,
                    })
                })
            })
            .collect()
    }
}

/// What a region's corners are compared on to decide whether to split it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum SplitSignal {
    /// The NF's solo throughput (Algorithm 1, lines 14–18).
    Solo,
    /// The solo throughput, and the throughput next to a reference competitor: a split when
    /// either changes by `ε1`. Contention can start to bite where the NF's working set plus the
    /// competitor's crosses the cache while the NF alone still fits, a change the solo
    /// throughput does not show.
    SoloAndContended(ContentionSetting),
}

/// The order regions are profiled in.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum SplitOrder {
    /// The listing's recursion: the upper half is exhausted before the lower half starts, so
    /// under a quota the lower half may get nothing.
    DepthFirst,
    /// Level by level: the quota is spread over the whole range before any region is refined.
    BreadthFirst,
}

/// Which sub-regions a split region is profiled in next.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum SplitShape {
    /// The listing's halves: from the lower corner to the centre and from the centre to the
    /// upper corner, every kept attribute split at once.
    Diagonal,
    /// Every box between the centre and a corner (`2^k` for `k` kept attributes), so that
    /// attributes vary independently; the same as `Diagonal` with one kept attribute.
    Orthants,
}

/// Algorithm 1's hyperparameters.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct AdaptiveConfig {
    /// `Q`: the most profile points to take.
    pub quota: usize,
    /// `ε0`: relative solo-throughput change below which an attribute is pruned.
    pub prune_threshold: f64,
    /// `ε1`: relative throughput change across a region at or above which it is split.
    pub split_threshold: f64,
    /// `m`: random contention points at each split's midpoint.
    pub per_split: usize,
    pub signal: SplitSignal,
    pub order: SplitOrder,
    pub split: SplitShape,
    pub seed: u64,
}

impl AdaptiveConfig {
    /// Algorithm 1 as listed: solo signal, depth first.
    pub fn literal(
        quota: usize,
        prune_threshold: f64,
        split_threshold: f64,
        per_split: usize,
        seed: u64,
    ) -> AdaptiveConfig {
        AdaptiveConfig {
            quota,
            prune_threshold,
            split_threshold,
            per_split,
            signal: SplitSignal::Solo,
            order: SplitOrder::DepthFirst,
            split: SplitShape::Diagonal,
            seed,
        }
    }
}

/// What adaptive profiling took and decided.
#[derive(Clone, Debug, PartialEq)]
pub struct AdaptiveOutcome {
    pub samples: Vec<Sample>,
    /// The attributes the NF is sensitive to, in the space's order.
    pub kept: Vec<Attribute>,
    pub pruned: Vec<Attribute>,
}

/// A profiling run: the backend, the points taken, the quota.
struct Session<'a, B: Backend> {
    backend: &'a mut B,
    nf: &'a B::Nf,
    quota: usize,
    samples: Vec<Sample>,
    /// Throughputs at points profiled once and reused (region corners).
    known: HashMap<String, f64>,
}

impl<B: Backend> Session<'_, B> {
    fn full(&self) -> bool {
        self.samples.len() >= self.quota
    }

    /// The NF's throughput at `traffic` under `setting`, profiled once; `None` past the quota.
    fn once(
        &mut self,
        setting: &ContentionSetting,
        traffic: &TrafficProfile,
    ) -> Result<Option<f64>, ColocateError> {
        let key = format!("{setting:?}{traffic:?}");
        if let Some(&known) = self.known.get(&key) {
            return Ok(Some(known));
        }
        if self.full() {
            return Ok(None);
        }
        let sample = self.backend.profile_one(self.nf, setting, traffic)?;
        self.known.insert(key, sample.throughput);
        let throughput = sample.throughput;
        self.samples.push(sample);
        Ok(Some(throughput))
    }

    fn solo(&mut self, traffic: &TrafficProfile) -> Result<Option<f64>, ColocateError> {
        self.once(&ContentionSetting::solo(), traffic)
    }

    fn contended(
        &mut self,
        setting: &ContentionSetting,
        traffic: &TrafficProfile,
    ) -> Result<(), ColocateError> {
        if !self.full() {
            let sample = self.backend.profile_one(self.nf, setting, traffic)?;
            self.samples.push(sample);
        }
        Ok(())
    }

    /// Whether the signal changes by at least `threshold` from `low` to `high`; `None` once
    /// the quota is spent.
    fn changes(
        &mut self,
        signal: &SplitSignal,
        threshold: f64,
        low: &TrafficProfile,
        high: &TrafficProfile,
    ) -> Result<Option<bool>, ColocateError> {
        let (Some(at_low), Some(at_high)) = (self.solo(low)?, self.solo(high)?) else {
            return Ok(None);
        };
        if relative_change(at_low, at_high) >= threshold {
            return Ok(Some(true));
        }
        if let SplitSignal::SoloAndContended(reference) = signal {
            let (Some(at_low), Some(at_high)) =
                (self.once(reference, low)?, self.once(reference, high)?)
            else {
                return Ok(None);
            };
            return Ok(Some(relative_change(at_low, at_high) >= threshold));
        }
        Ok(Some(false))
    }
}

fn relative_change(a: f64, b: f64) -> f64 {
    (a - b).abs() / a.abs().max(b.abs()).max(f64::MIN_POSITIVE)
}

/// Algorithm 1: prunes the attributes the NF's solo throughput ignores, then samples random
/// contention where the split signal changes.
pub fn adaptive_profile<B: Backend>(
    backend: &mut B,
    nf: &B::Nf,
    traffic: &TrafficSpace,
    contention: &ContentionSpace,
    config: &AdaptiveConfig,
) -> Result<AdaptiveOutcome, ColocateError> {
    traffic.validate()?;
    contention.validate()?;
    let mut session = Session {
        backend,
        nf,
        quota: config.quota,
        samples: Vec::new(),
        known: HashMap::new(),
    };
    let mut rng = StdRng::seed_from_u64(config.seed);
    let default = traffic.default_profile();
    let (mut kept, mut pruned) = (Vec::new(), Vec::new());
    for range in &traffic.ranges {
        let low = session.solo(&default.with(range.attribute, range.min))?;
        let high = session.solo(&default.with(range.attribute, range.max))?;
        match (low, high) {
            (Some(low), Some(high)) if relative_change(low, high) < config.prune_threshold => {
                pruned.push(range.attribute)
            }
            _ => kept.push(range.attribute),
        }
    }
    let corner = |pick: fn(&AttributeRange) -> f64| {
        kept.iter().fold(default, |t, a| {
            traffic.range(*a).map_or(t, |r| t.with(*a, pick(r)))
        })
    };
    // Lines 13–25 with the recursion as a worklist: a stack pops the upper half first, as the
    // listing recurses; a queue goes level by level.
    let mut regions = std::collections::VecDeque::from([(corner(|r| r.min), corner(|r| r.max))]);
    loop {
        let next = match config.order {
            SplitOrder::DepthFirst => regions.pop_back(),
            SplitOrder::BreadthFirst => regions.pop_front(),
        };
        let Some((low, high)) = next else { break };
        let changes = session.changes(&config.signal, config.split_threshold, &low, &high)?;
        if session.full() {
            break;
        }
        if changes != Some(true) {
            continue;
        }
        let middle = kept.iter().fold(low, |t, a| match traffic.range(*a) {
            Some(range) => t.with(*a, range.midpoint(low.get(*a), high.get(*a))),
            None => t,
        });
        if middle == low || middle == high {
            continue;
        }
        for _ in 0..config.per_split {
            session.contended(&contention.random(&mut rng), &middle)?;
        }
        let halves = match config.split {
            SplitShape::Diagonal => vec![(middle, high), (low, middle)],
            SplitShape::Orthants => orthants(&kept, &low, &middle, &high),
        };
        // The upper region first, as the listing recurses: a stack takes it last pushed.
        match config.order {
            SplitOrder::DepthFirst => regions.extend(halves.into_iter().rev()),
            SplitOrder::BreadthFirst => regions.extend(halves),
        }
    }
    Ok(AdaptiveOutcome {
        samples: session.samples,
        kept,
        pruned,
    })
}

/// The boxes between `middle` and each corner of `low`–`high` over the `kept` attributes, the
/// upper corner's first and the lower corner's last.
fn orthants(
    kept: &[Attribute],
    low: &TrafficProfile,
    middle: &TrafficProfile,
    high: &TrafficProfile,
) -> Vec<(TrafficProfile, TrafficProfile)> {
    let corners = 1usize << kept.len().min(Attribute::ALL.len());
    (0..corners)
        .rev()
        .map(|mask| {
            kept.iter()
                .enumerate()
                .fold((*low, *middle), |(from, to), (bit, &a)| {
                    if mask >> bit & 1 == 1 {
                        (from.with(a, middle.get(a)), to.with(a, high.get(a)))
                    } else {
                        (from, to)
                    }
                })
        })
        .collect()
}

/// Random profiling at the same quota: random traffic profiles, each with its solo throughput
/// and `per_traffic` random contention points (the solo point is what turns a throughput into
/// a drop, adaptive profiling takes one at every midpoint too).
pub fn random_profile<B: Backend>(
    backend: &mut B,
    nf: &B::Nf,
    traffic: &TrafficSpace,
    contention: &ContentionSpace,
    quota: usize,
    per_traffic: usize,
    seed: u64,
) -> Result<Vec<Sample>, ColocateError> {
    traffic.validate()?;
    contention.validate()?;
    let mut rng = StdRng::seed_from_u64(seed);
    let mut samples = Vec::with_capacity(quota);
    while samples.len() < quota {
        let profile = traffic.random(&mut rng);
        samples.push(backend.profile_one(nf, &ContentionSetting::solo(), &profile)?);
        for _ in 0..per_traffic {
            if samples.len() >= quota {
                break;
            }
            samples.push(backend.profile_one(nf, &contention.random(&mut rng), &profile)?);
        }
    }
    Ok(samples)
}

/// Full profiling: every traffic profile of the grid (`points` values per attribute of the
/// space, crossed) solo and under every contention setting of `settings`.
pub fn full_profile<B: Backend>(
    backend: &mut B,
    nf: &B::Nf,
    traffic: &TrafficSpace,
    points: &[(Attribute, usize)],
    settings: &[ContentionSetting],
) -> Result<Vec<Sample>, ColocateError> {
    traffic.validate()?;
    let mut profiles = vec![traffic.default_profile()];
    for range in &traffic.ranges {
        let count = points
            .iter()
            .find(|(a, _)| *a == range.attribute)
            .map_or(1, |(_, n)| *n);
        let values = if count <= 1 {
            vec![range.default]
        } else {
            range.grid(count)
        };
        profiles = profiles
            .iter()
            .flat_map(|p| values.iter().map(move |v| p.with(range.attribute, *v)))
            .collect();
    }
    let mut samples = Vec::with_capacity(
        profiles
            .len()
            .saturating_mul(settings.len().saturating_add(1)),
    );
    for profile in &profiles {
        samples.push(backend.profile_one(nf, &ContentionSetting::solo(), profile)?);
        for setting in settings {
            samples.push(backend.profile_one(nf, setting, profile)?);
        }
    }
    Ok(samples)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn grids_are_spaced_on_their_scale_and_bad_ranges_are_refused() {
        let flows = AttributeRange {
            attribute: Attribute::Flows,
            min: 1e3,
            max: 1e6,
            default: 1e4,
            log_scale: true,
        };
        let grid = flows.grid(4);
        let expected = [1e3, 1e4, 1e5, 1e6];
        assert!(grid
            .iter()
            .zip(expected)
            .all(|(g, e)| (g - e).abs() < 1e-9 * e));
        assert!((flows.midpoint(1e3, 1e5) - 1e4).abs() < 1e-9);
        let space = TrafficSpace {
            ranges: vec![AttributeRange { min: 0.0, ..flows }],
        };
        assert!(space.validate().is_err());
        let contention = ContentionSpace {
            working_set: (1e6, f64::NAN),
            access_rate: (1e6, 1e7),
            pattern: AccessPattern::Stream,
        };
        assert!(contention.validate().is_err());
    }
}
