//! Pages for `linerate p4` (paper 001, P4 latency on a SmartNIC): the latency estimate of one
//! program broken into the model's parts (`p4 latency --html`), and a fitted target model against
//! the measurements it was fitted to (`p4 fit --html`).

mod fit;
mod latency;

pub use fit::fit_page;
pub use latency::latency_page;

use serde_json::Value;

use crate::Error;

/// A number the page cannot do without, from the command's document `document`.
fn required(document: &str, value: &Value, key: &str) -> Result<f64, Error> {
    value
        .get(key)
        .and_then(Value::as_f64)
        .ok_or_else(|| Error::Input {
            document: document.to_string(),
            what: format!("no number `{key}`"),
        })
}

/// Nanoseconds for people: whole ones when the value is whole (Table II's cells), else two
/// decimals (Eq. 1's f(1) = 334.04).
fn ns(value: f64) -> String {
    if value.fract() == 0.0 {
        format!("{value:.0} ns")
    } else {
        format!("{value:.2} ns")
    }
}
