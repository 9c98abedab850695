//! Pages for `linerate colocate` (paper 004, Tomur): one NF's predicted throughput next to its
//! competitors, every predictor's answer and the measured rate where the command has one
//! (`colocate predict --html`), and placement outcomes per strategy (`colocate place --html`).

mod place;
mod predict;

pub use place::place_page;
pub use predict::predict_page;

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

/// A share as a signed or plain percentage with one decimal.
fn percent(share: f64) -> String {
    format!("{:.1}%", 100.0 * share)
}
