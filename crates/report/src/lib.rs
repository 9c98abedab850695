//! linerate's HTML reports: one self-contained page per program, per P4 latency estimate, per
//! co-location study, and an index over many pages.
//!
//! Pages are rendered from the JSON documents linerate's commands print with `--json` (the same
//! contracts a script would read), so that what a page shows is by construction what the command
//! says. Plots are SVG drawn with `plotters`; the control-flow graph is laid out by Graphviz's
//! `dot`. Every asset is inline: a page opens offline, from a file, in light and dark mode, and
//! prints. This crate renders; it runs no analysis and writes no file (the binary writes pages
//! atomically).

pub mod cfg_graph;
pub mod chart;
pub mod colocate;
pub mod html;
pub mod index;
pub mod p4;
pub mod program;

/// Why a page could not be rendered.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// Graphviz's `dot` is not on `PATH`.
    #[error("Graphviz `dot` not found on PATH (install the graphviz package), needed to draw the control-flow graph")]
    DotMissing,
    /// `dot` ran and failed.
    #[error("Graphviz `dot` failed: {0}")]
    Dot(String),
    /// A plot could not be drawn.
    #[error("cannot draw the plot `{title}`: {cause}")]
    Plot { title: String, cause: String },
    /// A command's JSON lacks what the page needs.
    #[error("{document}: {what}")]
    Input { document: String, what: String },
}
