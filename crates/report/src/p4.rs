//! Pages for `linerate p4` (paper 001, P4 latency on a SmartNIC): the latency estimate of one
//! program broken into the model's parts (`p4 latency --html`), and a fitted target model against
//! the measurements it was fitted to (`p4 fit --html`).

mod fit;
mod latency;

pub use fit::fit_page;
pub use latency::latency_page;

/// Nanoseconds for people: whole ones when the value is whole (Table II's cells), else two
/// decimals (Eq. 1's f(1) = 334.04).
fn ns(value: f64) -> String {
    if value.fract() == 0.0 {
        format!("{value:.0} ns")
    } else {
        format!("{value:.2} ns")
    }
}
