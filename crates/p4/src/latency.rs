//! Paper 001's latency model (§V-E) and its fit from measurements.
//!
//! A P4 pipeline's average packet latency on a target is the sum of two parts:
//! - a measured latency read from a table by the number of parsed headers α, the number of
//!   modified headers β, and whether headers are modified by explicit actions (in control blocks)
//!   or implicit ones (by a table match) — the paper's Table II;
//! - the cost of the tables beyond the one forwarding table, γ of them: a second-order polynomial
//!   through the origin, `f(γ) = q·γ² + l·γ` — the paper's Eq. 1 (`q` = 22.44, `l` = 311.6 ns on
//!   the Agilio CX, for γ = 0..10).
//!
//! A model is data ([`LatencyModel`], JSON): the Agilio CX one carries the paper's figures
//! ([`LatencyModel::agilio_cx`]); [`fit`] builds one for any target from measurements in the CSV
//! shape of [`read_measurements`] (the paper's method, run on this host by `linerate p4 fit`).
//! A cell the model has no figure for is an error naming what the model covers, never a guess.

use std::collections::BTreeMap;
use std::fmt;

use serde::{Deserialize, Serialize};

/// How a pipeline modifies headers (§V-C): the paper measured both, and they differ.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Actions {
    /// Assignments in a control block's apply.
    Explicit,
    /// Actions a table match runs.
    Implicit,
}

impl fmt::Display for Actions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Actions::Explicit => "explicit",
            Actions::Implicit => "implicit",
        })
    }
}

impl std::str::FromStr for Actions {
    type Err = String;
    fn from_str(s: &str) -> Result<Actions, String> {
        match s.trim() {
            "explicit" => Ok(Actions::Explicit),
            "implicit" => Ok(Actions::Implicit),
            other => Err(format!(
                "actions must be `explicit` or `implicit`, not `{other}`"
            )),
        }
    }
}

/// The parameters of §V-E that a program's latency depends on.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct Params {
    /// Parsed headers (on the program's longest parser path).
    pub alpha: u32,
    /// Modified headers.
    pub beta: u32,
    /// Tables beyond the forwarding table.
    pub gamma: u32,
    pub actions: Actions,
}

/// One measured cell: the latency of a pipeline with `alpha` parsed and `beta` modified headers.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct BaseCell {
    pub alpha: u32,
    pub beta: u32,
    pub actions: Actions,
    pub ns: f64,
}

/// The cost of added tables: `quadratic·γ² + linear·γ` ns, for γ up to `max_gamma`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TableCurve {
    pub quadratic: f64,
    pub linear: f64,
    /// The largest γ the curve was fitted on: beyond it the model does not speak.
    pub max_gamma: u32,
}

impl TableCurve {
    /// `f(γ)` in ns.
    pub fn at(&self, gamma: u32) -> f64 {
        let g = f64::from(gamma);
        self.quadratic * g * g + self.linear * g
    }
}

/// A target's latency model.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct LatencyModel {
    pub name: String,
    /// Where the figures come from.
    pub source: String,
    pub base: Vec<BaseCell>,
    pub tables: TableCurve,
}

/// What a model estimates for a program, with its parts (`p4 latency --json`).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Estimate {
    pub model: String,
    pub alpha: u32,
    pub beta: u32,
    pub gamma: u32,
    pub actions: Actions,
    pub latency_ns: f64,
    pub breakdown: Breakdown,
}

/// The two parts of an estimate.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Breakdown {
    /// Parsing and header modification: the model's cell for (α, β, actions).
    pub parse_and_modify_ns: f64,
    /// The added tables: `f(γ)`.
    pub tables_ns: f64,
}

/// Why a model cannot be read, asked, or fitted.
#[derive(Debug, thiserror::Error)]
pub enum LatencyError {
    #[error("{origin}: not a latency model: {reason}")]
    Model { origin: String, reason: String },
    #[error(
        "the {model} model has no latency for {alpha} parsed and {beta} modified headers with \
         {actions} actions (it covers {covered})"
    )]
    NoCell {
        model: String,
        alpha: u32,
        beta: u32,
        actions: Actions,
        covered: String,
    },
    #[error(
        "the {model} model's table curve stops at {max} added tables; the program has {gamma}"
    )]
    TooManyTables { model: String, max: u32, gamma: u32 },
    #[error("{origin}:{line}: {reason}")]
    Csv {
        origin: String,
        line: usize,
        reason: String,
    },
    #[error("cannot fit a model: {0}")]
    Fit(String),
}

/// The Agilio CX model: the paper's Table II and Eq. 1.
const AGILIO_CX: &str = include_str!("../models/agilio-cx.json");

impl LatencyModel {
    /// Reads a model from its JSON text; `origin` names it in errors.
    pub fn parse(text: &str, origin: &str) -> Result<LatencyModel, LatencyError> {
        let model: LatencyModel = serde_json::from_str(text).map_err(|e| LatencyError::Model {
            origin: origin.to_string(),
            reason: e.to_string(),
        })?;
        let bad = |reason: String| LatencyError::Model {
            origin: origin.to_string(),
            reason,
        };
        if let Some(c) = model.base.iter().find(|c| !c.ns.is_finite() || c.ns < 0.0) {
            return Err(bad(format!(
                "cell α = {}, β = {} ({}) has latency {}",
                c.alpha, c.beta, c.actions, c.ns
            )));
        }
        if !model.tables.quadratic.is_finite() || !model.tables.linear.is_finite() {
            return Err(bad("the table curve's coefficients must be numbers".into()));
        }
        Ok(model)
    }

    /// The model shipped with linerate under `name` (`agilio-cx`).
    pub fn builtin(name: &str) -> Option<LatencyModel> {
        match name {
            "agilio-cx" => LatencyModel::parse(AGILIO_CX, "agilio-cx").ok(),
            _ => None,
        }
    }

    /// The Agilio CX model (paper 001, Table II and Eq. 1).
    pub fn agilio_cx() -> LatencyModel {
        LatencyModel::parse(AGILIO_CX, "agilio-cx")
            .expect("the shipped agilio-cx model is valid JSON (tested)")
    }

    /// The cells the model has, as a phrase for errors: `α = 1: β = 1; α = 2: β = 1, 2 (explicit)`.
    fn covered(&self, actions: Actions) -> String {
        let mut by_alpha: BTreeMap<u32, Vec<u32>> = BTreeMap::new();
        for c in self.base.iter().filter(|c| c.actions == actions) {
            by_alpha.entry(c.alpha).or_default().push(c.beta);
        }
        if by_alpha.is_empty() {
            return format!("no {actions} cells");
        }
        by_alpha
            .into_iter()
            .map(|(a, mut betas)| {
                betas.sort_unstable();
                let list: Vec<String> = betas.iter().map(u32::to_string).collect();
                format!("α = {a}: β = {}", list.join(", "))
            })
            .collect::<Vec<_>>()
            .join("; ")
    }

    /// §V-E: the cell for (α, β, actions) plus `f(γ)`.
    pub fn estimate(&self, params: Params) -> Result<Estimate, LatencyError> {
        let cell = self
            .base
            .iter()
            .find(|c| {
                c.alpha == params.alpha && c.beta == params.beta && c.actions == params.actions
            })
            .ok_or_else(|| LatencyError::NoCell {
                model: self.name.clone(),
                alpha: params.alpha,
                beta: params.beta,
                actions: params.actions,
                covered: self.covered(params.actions),
            })?;
        if params.gamma > self.tables.max_gamma {
            return Err(LatencyError::TooManyTables {
                model: self.name.clone(),
                max: self.tables.max_gamma,
                gamma: params.gamma,
            });
        }
        let tables_ns = self.tables.at(params.gamma);
        Ok(Estimate {
            model: self.name.clone(),
            alpha: params.alpha,
            beta: params.beta,
            gamma: params.gamma,
            actions: params.actions,
            latency_ns: cell.ns + tables_ns,
            breakdown: Breakdown {
                parse_and_modify_ns: cell.ns,
                tables_ns,
            },
        })
    }
}

/// One measurement of a pipeline's latency.
#[derive(Clone, Debug, PartialEq)]
pub struct Measurement {
    /// The program's name (the paper's case id, such as `C4`, or a file name).
    pub case: String,
    pub params: Params,
    pub latency_ns: f64,
}

/// The CSV columns, in order.
pub const CSV_COLUMNS: [&str; 6] = ["case", "alpha", "beta", "gamma", "actions", "latency_ns"];

/// Reads measurements: a header line naming [`CSV_COLUMNS`] in that order, then one measurement
/// per line (`C4,3,2,0,implicit,8612.5`); blank lines and lines starting with `#` are skipped.
pub fn read_measurements(text: &str, origin: &str) -> Result<Vec<Measurement>, LatencyError> {
    let err = |line: usize, reason: String| LatencyError::Csv {
        origin: origin.to_string(),
        line,
        reason,
    };
    let mut lines = text
        .lines()
        .enumerate()
        .map(|(i, l)| (i + 1, l.trim()))
        .filter(|(_, l)| !l.is_empty() && !l.starts_with('#'));
    let Some((n, header)) = lines.next() else {
        return Err(err(1, "no header line".into()));
    };
    let names: Vec<&str> = header.split(',').map(str::trim).collect();
    if names != CSV_COLUMNS {
        return Err(err(
            n,
            format!(
                "the header must be `{}`, not `{header}`",
                CSV_COLUMNS.join(",")
            ),
        ));
    }
    lines
        .map(|(n, line)| {
            let fields: Vec<&str> = line.split(',').map(str::trim).collect();
            if fields.len() != CSV_COLUMNS.len() {
                return Err(err(
                    n,
                    format!(
                        "{} fields, the header has {}",
                        fields.len(),
                        CSV_COLUMNS.len()
                    ),
                ));
            }
            let count = |k: usize| {
                fields[k].parse::<u32>().map_err(|_| {
                    err(
                        n,
                        format!("{} must be a count, not `{}`", CSV_COLUMNS[k], fields[k]),
                    )
                })
            };
            let latency_ns: f64 = fields[5]
                .parse()
                .ok()
                .filter(|v: &f64| v.is_finite() && *v >= 0.0)
                .ok_or_else(|| {
                    err(
                        n,
                        format!("latency_ns must be a number of ns, not `{}`", fields[5]),
                    )
                })?;
            Ok(Measurement {
                case: fields[0].to_string(),
                params: Params {
                    alpha: count(1)?,
                    beta: count(2)?,
                    gamma: count(3)?,
                    actions: fields[4].parse().map_err(|e| err(n, e))?,
                },
                latency_ns,
            })
        })
        .collect()
}

/// The median of `values` (not empty).
fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    let mid = values.len() / 2;
    if values.len() % 2 == 1 {
        values[mid]
    } else {
        (values[mid - 1] + values[mid]) / 2.0
    }
}

/// Fits a model to `measurements`, the paper's method: each cell is the median latency of the
/// programs with no added table and that (α, β, actions); the table curve is the least-squares
/// fit through the origin of what programs with added tables take beyond their cell.
pub fn fit(
    measurements: &[Measurement],
    name: &str,
    source: &str,
) -> Result<LatencyModel, LatencyError> {
    let mut cells: BTreeMap<(u32, u32, Actions), Vec<f64>> = BTreeMap::new();
    for m in measurements.iter().filter(|m| m.params.gamma == 0) {
        cells
            .entry((m.params.alpha, m.params.beta, m.params.actions))
            .or_default()
            .push(m.latency_ns);
    }
    if cells.is_empty() {
        return Err(LatencyError::Fit(
            "no measurement without added tables (γ = 0) to fill a cell".into(),
        ));
    }
    let base: Vec<BaseCell> = cells
        .into_iter()
        .map(|((alpha, beta, actions), values)| BaseCell {
            alpha,
            beta,
            actions,
            ns: median(values),
        })
        .collect();
    // Normal equations of extra = q·γ² + l·γ.
    let (mut s4, mut s3, mut s2, mut t2, mut t1) = (0.0, 0.0, 0.0, 0.0, 0.0);
    let mut max_gamma = 0;
    for m in measurements.iter().filter(|m| m.params.gamma > 0) {
        let p = m.params;
        let cell = base
            .iter()
            .find(|c| c.alpha == p.alpha && c.beta == p.beta && c.actions == p.actions)
            .ok_or_else(|| {
                LatencyError::Fit(format!(
                    "{} has {} added tables but no measurement of its pipeline without them \
                     (α = {}, β = {}, {})",
                    m.case, p.gamma, p.alpha, p.beta, p.actions
                ))
            })?;
        let g = f64::from(p.gamma);
        let extra = m.latency_ns - cell.ns;
        s4 += g.powi(4);
        s3 += g.powi(3);
        s2 += g * g;
        t2 += extra * g * g;
        t1 += extra * g;
        max_gamma = max_gamma.max(p.gamma);
    }
    let det = s4 * s2 - s3 * s3;
    let (quadratic, linear) = if s2 == 0.0 {
        (0.0, 0.0)
    } else if det.abs() < 1e-9 * s4 * s2 {
        // One γ measured: a straight line is all the data says.
        (0.0, t1 / s2)
    } else {
        ((t2 * s2 - s3 * t1) / det, (s4 * t1 - s3 * t2) / det)
    };
    Ok(LatencyModel {
        name: name.to_string(),
        source: source.to_string(),
        base,
        tables: TableCurve {
            quadratic,
            linear,
            max_gamma,
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn params(alpha: u32, beta: u32, gamma: u32, actions: Actions) -> Params {
        Params {
            alpha,
            beta,
            gamma,
            actions,
        }
    }

    #[test]
    fn the_papers_validation_functions() {
        let model = LatencyModel::agilio_cx();
        // L3_fwd (§V-E): α = 2, β = 2, γ = 0, implicit.
        let l3 = model.estimate(params(2, 2, 0, Actions::Implicit)).unwrap();
        assert_eq!(l3.latency_ns, 8200.0);
        // L3_fwd + Firewall: α = 3, β = 2, γ = 1. The paper prints 8957 ns, but its own Table II
        // (8600) and Eq. 1 (f(1) = 334.04) add up to 8934.04.
        let fw = model.estimate(params(3, 2, 1, Actions::Implicit)).unwrap();
        assert!((fw.latency_ns - 8934.04).abs() < 1e-6, "{}", fw.latency_ns);
        assert!((fw.breakdown.tables_ns - 334.04).abs() < 1e-6);
        assert_eq!(fw.breakdown.parse_and_modify_ns, 8600.0);
    }

    #[test]
    fn a_cell_the_table_lacks_is_an_error_naming_what_it_covers() {
        let model = LatencyModel::agilio_cx();
        let e = model
            .estimate(params(2, 0, 0, Actions::Explicit))
            .unwrap_err()
            .to_string();
        assert!(e.contains("no latency for 2 parsed and 0 modified"), "{e}");
        assert!(e.contains("α = 2: β = 1, 2"), "{e}");
        let e = model
            .estimate(params(4, 1, 0, Actions::Implicit))
            .unwrap_err();
        assert!(matches!(e, LatencyError::NoCell { alpha: 4, .. }));
        let e = model
            .estimate(params(1, 1, 11, Actions::Implicit))
            .unwrap_err();
        assert!(
            matches!(e, LatencyError::TooManyTables { max: 10, .. }),
            "{e}"
        );
    }

    #[test]
    fn a_fit_recovers_a_known_model() {
        // Synthetic measurements of a known model, three trials each with ±5 ns of noise.
        let truth = LatencyModel::agilio_cx();
        let mut text = String::from("case,alpha,beta,gamma,actions,latency_ns\n");
        for cell in &truth.base {
            for gamma in 0..=10u32 {
                for noise in [-5.0, 0.0, 5.0] {
                    let ns = cell.ns + truth.tables.at(gamma) + noise;
                    text += &format!(
                        "x,{},{},{gamma},{},{ns}\n",
                        cell.alpha, cell.beta, cell.actions
                    );
                }
            }
        }
        let measured = read_measurements(&text, "synthetic.csv").unwrap();
        let fitted = fit(&measured, "synthetic", "test").unwrap();
        assert_eq!(fitted.base.len(), truth.base.len());
        for cell in &truth.base {
            let p = params(cell.alpha, cell.beta, 0, cell.actions);
            let e = fitted.estimate(p).unwrap();
            assert!((e.latency_ns - cell.ns).abs() < 1e-6, "{cell:?}");
        }
        assert!(
            (fitted.tables.quadratic - 22.44).abs() < 1e-6,
            "{:?}",
            fitted.tables
        );
        assert!(
            (fitted.tables.linear - 311.6).abs() < 1e-6,
            "{:?}",
            fitted.tables
        );
        assert_eq!(fitted.tables.max_gamma, 10);
    }

    #[test]
    fn malformed_measurements_name_their_line() {
        let e = read_measurements("case,alpha\n", "m.csv")
            .unwrap_err()
            .to_string();
        assert!(e.starts_with("m.csv:1: the header must be"), "{e}");
        let text = "case,alpha,beta,gamma,actions,latency_ns\nA0,1,0,0,sideways,7000\n";
        let e = read_measurements(text, "m.csv").unwrap_err().to_string();
        assert_eq!(
            e,
            "m.csv:2: actions must be `explicit` or `implicit`, not `sideways`"
        );
        let text =
            "case,alpha,beta,gamma,actions,latency_ns\n# a comment\n\nA0,x,0,0,explicit,7000\n";
        let e = read_measurements(text, "m.csv").unwrap_err().to_string();
        assert_eq!(e, "m.csv:4: alpha must be a count, not `x`");
        let only_tables = "case,alpha,beta,gamma,actions,latency_ns\nT1,1,1,1,explicit,8000\n";
        let m = read_measurements(only_tables, "m.csv").unwrap();
        assert!(matches!(fit(&m, "x", "y"), Err(LatencyError::Fit(_))));
    }

    #[test]
    fn models_round_trip_through_json() {
        let model = LatencyModel::agilio_cx();
        let text = serde_json::to_string(&model).unwrap();
        assert_eq!(LatencyModel::parse(&text, "m.json").unwrap(), model);
        let e = LatencyModel::parse("{\"name\": 1}", "m.json")
            .unwrap_err()
            .to_string();
        assert!(e.starts_with("m.json: not a latency model"), "{e}");
        assert_eq!(LatencyModel::builtin("agilio-cx"), Some(model));
        assert_eq!(LatencyModel::builtin("tofino"), None);
    }
}
