//! Weighted least squares for a straight line, the one regression the accelerator model needs
//! (Eq. 5's `t = t0 + a·m` and the co-run inference of §4.1.1 are both lines in `1/T`).

use crate::error::ColocateError;

/// A fitted line `y = intercept + slope·x` and its weighted residual sum of squares.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Line {
    pub intercept: f64,
    pub slope: f64,
    pub residual: f64,
}

/// Fits `y = intercept + slope·x` minimizing `Σ w·(y − intercept − slope·x)²`.
///
/// Needs at least two distinct `x` with positive weight; all inputs finite, weights positive.
pub fn weighted_line(points: &[(f64, f64, f64)], what: &str) -> Result<Line, ColocateError> {
    let fail = |reason: &str| ColocateError::Fit {
        what: what.to_string(),
        reason: reason.to_string(),
    };
    if points
        .iter()
        .any(|&(x, y, w)| !(x.is_finite() && y.is_finite() && w.is_finite() && w > 0.0))
    {
        return Err(fail("a sample is not finite or has a non-positive weight"));
    }
    let total: f64 = points.iter().map(|p| p.2).sum();
    if points.len() < 2 || total <= 0.0 {
        return Err(fail("needs at least two samples"));
    }
    // Centering on the weighted means keeps the normal equations well conditioned when x spans
    // orders of magnitude smaller than its offset (request times in seconds).
    let mean_x = points.iter().map(|&(x, _, w)| w * x).sum::<f64>() / total;
    let mean_y = points.iter().map(|&(_, y, w)| w * y).sum::<f64>() / total;
    let sxx: f64 = points
        .iter()
        .map(|&(x, _, w)| w * (x - mean_x) * (x - mean_x))
        .sum();
    let sxy: f64 = points
        .iter()
        .map(|&(x, y, w)| w * (x - mean_x) * (y - mean_y))
        .sum();
    let spread = points.iter().map(|p| p.0.abs()).fold(0.0, f64::max);
    if sxx <= (spread * 1e-12).powi(2) * total {
        return Err(fail("needs at least two distinct x values"));
    }
    let slope = sxy / sxx;
    let intercept = mean_y - slope * mean_x;
    let residual = points
        .iter()
        .map(|&(x, y, w)| w * (y - intercept - slope * x).powi(2))
        .sum();
    Ok(Line {
        intercept,
        slope,
        residual,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exact_line_is_recovered() {
        let points: Vec<_> = (0..5)
            .map(|i| (f64::from(i), 3.0 + 0.5 * f64::from(i), 1.0))
            .collect();
        let line = weighted_line(&points, "test").unwrap();
        assert!((line.intercept - 3.0).abs() < 1e-12);
        assert!((line.slope - 0.5).abs() < 1e-12);
        assert!(line.residual < 1e-20);
    }

    #[test]
    fn one_distinct_x_is_refused() {
        let points = [(1.0, 2.0, 1.0), (1.0, 3.0, 1.0)];
        assert!(weighted_line(&points, "test").is_err());
    }
}
