//! Errors of the co-location models and the simulated device, each one line naming the cause.

/// A model input or simulated scenario that cannot be evaluated.
#[derive(Debug, thiserror::Error, PartialEq)]
pub enum ColocateError {
    /// A parameter outside its domain (a negative rate, a zero queue count, a NaN).
    #[error("invalid {what}: {value} ({reason})")]
    Invalid {
        what: String,
        value: f64,
        reason: &'static str,
    },
    /// Too few or degenerate samples for a fit.
    #[error("cannot fit {what}: {reason}")]
    Fit { what: String, reason: String },
    /// A scenario the device cannot host (more cores than it has, an accelerator it lacks).
    #[error("cannot place workload `{workload}`: {reason}")]
    Placement { workload: String, reason: String },
    /// A profile or model file that cannot be read or written.
    #[error("{what}: {reason}")]
    Format { what: String, reason: String },
    /// A profiling backend could not run or measure a point (the host's kernel, its CPUs).
    #[error("{backend} backend: {reason}")]
    Backend { backend: String, reason: String },
    /// A question the models cannot answer (an NF without counters as a competitor).
    #[error("cannot predict {what}: {reason}")]
    Unpredictable { what: String, reason: String },
    /// The device's fixed-point iteration did not settle.
    #[error("the device did not reach equilibrium after {iterations} iterations (last relative change {change:e})")]
    NotConverged { iterations: usize, change: f64 },
}

/// Checks that `value` is finite and strictly positive.
pub(crate) fn positive(what: &str, value: f64) -> Result<f64, ColocateError> {
    if value.is_finite() && value > 0.0 {
        Ok(value)
    } else {
        Err(ColocateError::Invalid {
            what: what.to_string(),
            value,
            reason: "must be finite and positive",
        })
    }
}

/// Checks that `value` is finite and not negative.
pub(crate) fn non_negative(what: &str, value: f64) -> Result<f64, ColocateError> {
    if value.is_finite() && value >= 0.0 {
        Ok(value)
    } else {
        Err(ColocateError::Invalid {
            what: what.to_string(),
            value,
            reason: "must be finite and not negative",
        })
    }
}
