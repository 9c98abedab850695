//! Worst-case throughput guarantees (paper 000, "Worst-case throughput guarantees for
//! packet-processing programs", §5): the slowest satisfiable path of a program on a device model.
//!
//! - [`dag`]: the prepared path graph — loop-free, calls inlined, one source and one sink, a cost
//!   vector and a minimum packet size on every edge (§5.2). What enumeration walks and what a
//!   path is made of.
//! - [`prepare`]: builds the path graph of a program from its CFG, linerate's own analysis and a
//!   device model's block and edge costs (§5.2).
//! - [`enumerate`]: paths of the graph in order of throughput, slowest first, each once at its
//!   bottleneck component and its own minimum packet size (§5.1, §5.3, §5.4).
//! - [`implied`]: a learned edge set reduced to the one edge it comes down to.
//! - [`invariant`]: which branch edges test the same formula over the inputs on every path to
//!   them, so that a conflict between their conditions prunes by edge set.
//! - [`ssp`]: the slowest satisfiable paths: enumerated paths checked in parallel, in order,
//!   with an anytime bound and pruning by unsatisfiable cores (§5.5 and its §7 future work).
//! - [`solve`]: that search with the Z3 engine of `linerate-smt` checking the paths.
//! - [`measure`]: the reported paths' witnesses timed in this host's kernel against their
//!   estimates, each checked to take its path (§6.1).
//! - [`dfs`]: the baseline the search is measured against: depth-first symbolic execution with
//!   a solver check at every branch, visiting every satisfiable path.

pub mod attack;
pub mod dag;
pub mod dfs;
pub mod enumerate;
pub mod implied;
pub mod invariant;
pub mod measure;
pub mod prepare;
pub mod solve;
pub mod ssp;
