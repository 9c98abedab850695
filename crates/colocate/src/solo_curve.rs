//! An NF's solo throughput and solo memory counters as functions of the traffic profile: a grid
//! of measurements over the profiling space, read back by multilinear interpolation (on each
//! attribute's own scale, logarithmic for flow counts), clamped to the grid's range.
//!
//! Interpolation rather than a learnt regression: solo runs are the cheapest measurement there
//! is (one per grid point, no competitor), the curves are smooth except where the working set
//! crosses the cache, and an interpolant reproduces every measured point exactly.

use crate::error::ColocateError;
use crate::profile::{Attribute, Features, TrafficProfile};
use serde::{Deserialize, Serialize};

/// One attribute's grid values, ascending.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct GridAxis {
    pub attribute: Attribute,
    pub values: Vec<f64>,
    /// Interpolate in `ln(value)` (values must then be positive).
    pub log_scale: bool,
}

/// What was measured at one grid point.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct SoloPoint {
    /// Packets per second.
    pub solo: f64,
    /// The NF's own memory counters alone; `None` where the backend has no counters (the host:
    /// this VM has no perf events), and an NF without them cannot be predicted as a competitor.
    pub counters: Option<Features>,
}

/// The grid: `points` in row-major order over `axes` (the last axis varies fastest).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SoloCurve {
    pub axes: Vec<GridAxis>,
    pub points: Vec<SoloPoint>,
}

impl SoloCurve {
    /// Every traffic profile of the grid, in the order `points` must follow, starting from
    /// `base` for the attributes no axis covers.
    pub fn profiles(axes: &[GridAxis], base: TrafficProfile) -> Vec<TrafficProfile> {
        axes.iter().fold(vec![base], |profiles, axis| {
            profiles
                .iter()
                .flat_map(|p| axis.values.iter().map(move |v| p.with(axis.attribute, *v)))
                .collect()
        })
    }

    /// Checks that there is at most one axis per attribute, each ascending, non-empty and
    /// positive on a log scale, and one point per grid profile.
    pub fn validate(&self) -> Result<(), ColocateError> {
        let distinct = Attribute::ALL
            .iter()
            .filter(|a| self.axes.iter().any(|axis| axis.attribute == **a))
            .count();
        if distinct != self.axes.len() {
            return Err(ColocateError::Format {
                what: "solo curve".to_string(),
                reason: "at most one axis per traffic attribute".to_string(),
            });
        }
        let mut expected = 1usize;
        for axis in &self.axes {
            let ascending = axis.values.windows(2).all(|w| w[0] < w[1]);
            let positive = !axis.log_scale || axis.values.iter().all(|v| *v > 0.0);
            if axis.values.is_empty() || !ascending || !positive {
                return Err(ColocateError::Format {
                    what: format!("solo curve axis {}", axis.attribute.name()),
                    reason: "values must be non-empty, ascending, positive on a log scale"
                        .to_string(),
                });
            }
            expected = expected.saturating_mul(axis.values.len());
        }
        if self.points.len() != expected
            || self
                .points
                .iter()
                .any(|p| !p.solo.is_finite() || p.solo <= 0.0)
        {
            return Err(ColocateError::Format {
                what: "solo curve".to_string(),
                reason: format!(
                    "{} points with positive throughput expected, {} given",
                    expected,
                    self.points.len()
                ),
            });
        }
        Ok(())
    }

    /// The interpolated solo throughput and counters at `traffic`.
    pub fn at(&self, traffic: &TrafficProfile) -> SoloPoint {
        // Per axis: the lower bracketing index and the weight of the upper one.
        let brackets: Vec<(usize, f64)> = self
            .axes
            .iter()
            .map(|axis| bracket(axis, traffic.get(axis.attribute)))
            .collect();
        let mut log_solo = 0.0;
        let mut sums = [0.0f64; 4];
        let mut occupancy_known = true;
        let mut counters_known = true;
        // Validated curves have at most one axis per attribute; a longer list is cut there.
        let axes = self.axes.len().min(Attribute::ALL.len());
        for corner in 0..(1usize << axes) {
            let mut index = 0usize;
            let mut weight = 1.0;
            for (bit, (axis, &(low, upper))) in
                self.axes.iter().zip(&brackets).take(axes).enumerate()
            {
                let high = corner >> bit & 1 == 1;
                let position = if high && low + 1 < axis.values.len() {
                    low + 1
                } else {
                    low
                };
                weight *= if high { upper } else { 1.0 - upper };
                index = index
                    .saturating_mul(axis.values.len())
                    .saturating_add(position);
            }
            if weight == 0.0 {
                continue;
            }
            let Some(point) = self.points.get(index) else {
                continue;
            };
            log_solo += weight * point.solo.ln();
            let Some(counters) = point.counters else {
                counters_known = false;
                continue;
            };
            for (sum, value) in sums.iter_mut().zip(counters.values()) {
                *sum += weight * value;
            }
            occupancy_known &= counters.occupancy.is_some();
        }
        SoloPoint {
            solo: log_solo.exp(),
            counters: counters_known.then_some(Features {
                access_rate: sums[0],
                bandwidth: sums[1],
                working_set: sums[2],
                occupancy: occupancy_known.then_some(sums[3]),
            }),
        }
    }
}

/// The grid cell `value` falls in on `axis`: the lower index and the upper point's weight,
/// clamped to the axis's range.
fn bracket(axis: &GridAxis, value: f64) -> (usize, f64) {
    let scale = |v: f64| {
        if axis.log_scale {
            v.max(1e-300).ln()
        } else {
            v
        }
    };
    let values = &axis.values;
    let Some(last) = values.len().checked_sub(1) else {
        return (0, 0.0);
    };
    if last == 0 || value.is_nan() || value <= values[0] {
        return (0, 0.0);
    }
    if value >= values[last] {
        return (last, 0.0);
    }
    let upper = values.partition_point(|v| *v <= value).clamp(1, last);
    let (a, b) = (scale(values[upper - 1]), scale(values[upper]));
    let weight = if b > a {
        ((scale(value) - a) / (b - a)).clamp(0.0, 1.0)
    } else {
        0.0
    };
    (upper - 1, weight)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn point(solo: f64, access: f64) -> SoloPoint {
        SoloPoint {
            solo,
            counters: Some(Features {
                access_rate: access,
                bandwidth: 0.0,
                working_set: 0.0,
                occupancy: Some(0.0),
            }),
        }
    }

    #[test]
    fn interpolation_hits_grid_points_and_clamps_outside() {
        let curve = SoloCurve {
            axes: vec![
                GridAxis {
                    attribute: Attribute::Flows,
                    values: vec![1e3, 1e5],
                    log_scale: true,
                },
                GridAxis {
                    attribute: Attribute::PacketSize,
                    values: vec![64.0, 1500.0],
                    log_scale: false,
                },
            ],
            points: vec![
                point(4e6, 10.0),
                point(2e6, 20.0),
                point(1e6, 30.0),
                point(0.5e6, 40.0),
            ],
        };
        curve.validate().unwrap();
        let at = |flows: f64, size: f64| {
            curve.at(&TrafficProfile {
                flows,
                packet_size: size,
                mtbr: 0.0,
            })
        };
        assert!((at(1e5, 64.0).solo - 1e6).abs() < 1e-3);
        assert!((at(1e7, 9000.0).solo - 0.5e6).abs() < 1e-3);
        // Geometric midpoint of flows, packet size at its low end: geometric mean of 4e6, 1e6.
        let middle = at(1e4, 64.0);
        assert!((middle.solo - 2e6).abs() < 1e-3, "{middle:?}");
        assert!((middle.counters.unwrap().access_rate - 20.0).abs() < 1e-9);
        let mut bad = curve.clone();
        bad.points.pop();
        assert!(bad.validate().is_err());
    }
}
