//! Pages for `linerate colocate` (paper 004, Tomur): one NF's predicted throughput next to its
//! competitors, every predictor's answer and the measured rate where the command has one
//! (`colocate predict --html`), and placement outcomes per strategy (`colocate place --html`).

mod place;
mod predict;

pub use place::place_page;
pub use predict::predict_page;

/// A share as a signed or plain percentage with one decimal.
fn percent(share: f64) -> String {
    format!("{:.1}%", 100.0 * share)
}
