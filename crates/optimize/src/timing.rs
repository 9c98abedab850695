//! Measured latency of an optimized program against its original: both loaded in this host's
//! kernel with the same maps, timed with `BPF_PROG_TEST_RUN` on the same packets in alternating
//! trials (so that drift of a shared host touches both alike), each trial with both programs
//! loaded afresh (so that where the JIT puts them averages out); the figure is the median of the
//! trials' mean nanoseconds per packet, and the difference comes with a 95% confidence interval
//! over the per-trial differences.

use linerate_bpf::contents::{MapMode, MapSeed};
use linerate_bpf::Object;
use linerate_kernel::drive::{DriveError, Driver};

/// Latency before and after.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Comparison {
    pub before_ns: f64,
    pub after_ns: f64,
    /// 95% confidence interval of `after - before` (ns per packet) over the trials.
    pub difference_ci: (f64, f64),
    pub trials: usize,
}

impl Comparison {
    /// Worse beyond the confidence interval: the whole interval above zero.
    pub fn worse(&self) -> bool {
        self.difference_ci.0 > 0.0
    }

    /// Better beyond the confidence interval: the whole interval below zero.
    pub fn better(&self) -> bool {
        self.difference_ci.1 < 0.0
    }
}

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    match v.len() {
        0 => 0.0,
        n if n % 2 == 1 => v[n / 2],
        n => (v[n / 2 - 1] + v[n / 2]) / 2.0,
    }
}

/// Student's t for a two-sided 95% interval with `df` degrees of freedom: the table's values up
/// to 30, then `1.96 + 2.5 / df` (within 0.01 of the table at 40, 60 and 120).
fn student_t95(df: usize) -> f64 {
    const TABLE: [f64; 30] = [
        12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179, 2.160,
        2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064, 2.060, 2.056,
        2.052, 2.048, 2.045, 2.042,
    ];
    match df {
        0 => TABLE[0],
        1..=30 => TABLE[df - 1],
        _ => 1.96 + 2.5 / df as f64,
    }
}

/// Times program `program` of both objects on `packets` (each run `repeat` times per trial).
pub fn compare(
    original: &Object,
    candidate: &Object,
    program: usize,
    seed: &MapSeed,
    packets: &[Vec<u8>],
    trials: usize,
    repeat: u32,
) -> Result<Comparison, DriveError> {
    let mean = |d: &mut Driver| -> Result<f64, DriveError> {
        let mut total = 0.0;
        for p in packets {
            total += d.run(program, p, &[], repeat)?.duration_ns as f64;
        }
        Ok(total / packets.len().max(1) as f64)
    };
    let (mut before, mut after, mut diffs) = (Vec::new(), Vec::new(), Vec::new());
    for t in 0..trials {
        // Both programs are loaded afresh for every trial: where the JIT places a program's
        // image (its alignment, the cache sets it falls in) changes its time by as much as a
        // few instructions do, and differs from load to load, as it will where it is deployed.
        // Which one is loaded and run first alternates.
        let (x, y) = if t % 2 == 0 {
            let mut a = Driver::new(original, seed, MapMode::Persist)?;
            let mut b = Driver::new(candidate, seed, MapMode::Persist)?;
            let x = mean(&mut a)?;
            (x, mean(&mut b)?)
        } else {
            let mut b = Driver::new(candidate, seed, MapMode::Persist)?;
            let mut a = Driver::new(original, seed, MapMode::Persist)?;
            let y = mean(&mut b)?;
            (mean(&mut a)?, y)
        };
        before.push(x);
        after.push(y);
        diffs.push(y - x);
    }
    let n = diffs.len().max(1) as f64;
    let m = diffs.iter().sum::<f64>() / n;
    let var = diffs.iter().map(|d| (d - m) * (d - m)).sum::<f64>() / (n - 1.0).max(1.0);
    let t = student_t95(diffs.len().saturating_sub(1));
    let half = t * (var / n).sqrt();
    Ok(Comparison {
        before_ns: median(&mut before),
        after_ns: median(&mut after),
        difference_ci: (m - half, m + half),
        trials,
    })
}

#[cfg(test)]
mod tests {
    use super::student_t95;

    #[test]
    fn t_values_follow_the_table_and_join_its_tail() {
        assert_eq!(student_t95(10), 2.228);
        assert_eq!(student_t95(30), 2.042);
        // Past the table the approximation continues it downwards towards 1.96.
        let (at31, at120) = (student_t95(31), student_t95(120));
        assert!(at31 < 2.042 && (at31 - 2.040).abs() < 0.005, "{at31}");
        assert!((at120 - 1.980).abs() < 0.005, "{at120}");
    }
}
