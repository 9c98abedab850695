//! Contention-aware performance of network functions co-located on a SmartNIC (paper 004,
//! Tomur; issue 13): the white-box accelerator model, the black-box memory model, composition,
//! profiling, and a simulated device to test them against:
//!
//! - [`accel`]: the round-robin accelerator model (Eqs. 1, 2, 5, 6), its equilibrium with
//!   backlogged and rate-limited NFs, and the inference of an NF's queue count and solo rate.
//! - [`compose`]: composition of per-resource drops by execution pattern (Eqs. 3, 4, 7), the sum
//!   and min baselines, and detection of the pattern from benchmark co-runs.
//! - [`sim`]: a simulated SoC SmartNIC (cores, a shared last-level cache, memory bandwidth,
//!   round-robin accelerators) whose throughputs emerge from per-stage timings, not from the
//!   composition equations.
//! - [`scheduler`]: the simulated accelerator request by request, the check on [`accel`].
//! - [`forest`]: a trained booster compiled for fast one-row prediction.
//! - [`fit`]: the weighted least-squares line both inferences use.
//! - [`profile`]: the profiling interface: traffic profiles, contention settings, samples, the
//!   [`profile::Backend`] trait and the versioned profile file.
//! - [`sim_backend`]: the simulated device as a backend, with NFs whose demands follow traffic.
//! - [`memory`]: the traffic-aware memory model (gradient-boosted regression), the SLOMO-style
//!   and solo-rate baselines.
//! - [`adaptive`]: adaptive profiling (Algorithm 1), random and full profiling.
//! - [`record`]: profile files: a profiling run's measurements recorded, replayed by training.
//! - [`import`]: profiles measured elsewhere, read from CSV, as a backend.
//! - [`catalogue`]: simulated NFs after paper 004's, their profiling spaces and training plan.
//! - [`counters`]: a workload's memory counters alone (the contention features prediction sums)
//!   and a benchmark's own rate in a co-run (an NF's busy time on an accelerator).
//! - [`solo_curve`]: an NF's solo throughput and counters over the traffic space.
//! - [`predict`]: the model bundle, prediction and diagnosis of co-located NFs, the baselines.
//! - [`train`]: training a bundle from a backend in one call.
//! - [`place`]: placement of arriving NFs on NICs: monopolization, greedy, contention-aware.
//! - [`optimum`]: the exact fewest-NIC placement of a short sequence, by branch and bound.

pub mod accel;
pub mod adaptive;
pub mod catalogue;
pub mod compose;
pub mod counters;
pub mod error;
pub mod fit;
pub mod forest;
pub mod import;
pub mod memory;
pub mod optimum;
pub mod place;
pub mod predict;
pub mod profile;
pub mod record;
pub mod scheduler;
pub mod sim;
pub mod sim_backend;
pub mod solo_curve;
pub mod train;

pub use accel::{equilibrium, CoRun, Inferred, ServiceTime, Tenant};
pub use compose::{BenchmarkCoRun, Detection, Pattern};
pub use error::ColocateError;
pub use sim::{AccelBench, AccelDemand, AccelKind, Device, MemBench, Nf, Testbed, Workload};
