//! Estimate against measurement on this host (paper 000 §6.1; `linerate measure`).
//!
//! The paper measured each path it reported by sending its packet at line rate through the NIC.
//! Here the host's kernel is the device: each path's witness (packet, context, map entries) is
//! installed and run through `BPF_PROG_TEST_RUN`, timed over `repeat` runs per trial. This
//! host's speed moves from moment to moment (a shared 2-core guest ran the empty program in 6 ns
//! for tens of milliseconds, then in 15 ns for hundreds), so the trials of all paths of a program
//! are taken in rounds spread over [`Options::span`], beside the empty program as a reference,
//! and the measurement is the trials' [`SLOW_QUANTILE`]: the host's slow moments, which a
//! calibrated x86 price holds in ([`linerate_cost::model::SLOW_QUANTILE`]); the median is kept
//! beside it. What is measured must mean what the x86 model prices: the model's per-packet work is the test-run time of the empty program (`r0 =
//! XDP_PASS; exit`, see `linerate_calibrate`), and a path's estimate is that plus the path's
//! cost, so `measured_pps = 1e9 / (ns per run)` and the estimate compare directly.
//!
//! A measurement counts only if the kernel ran the reported path. The kernel gives no trace, so
//! the interpreter (the one semantics, which the conformance tests hold equal to the kernel)
//! replays the witness and must enter exactly the witness's blocks and return its action, and
//! the kernel must return that action too. Repeated runs share one buffer and the maps, so a
//! path may drift under repetition (a program that rewrites the packet or counts in a map):
//! the interpreter replays the repeated runs ([`MAX_REPLAYED_RUNS`] at most), each of which must
//! take the witness's blocks, and the last repeated kernel run
//! must still return the action; a path that drifts is timed in steady state behind a driver
//! that puts back what a run changes, or failing that in single runs from restored maps
//! ([`timing`]). Witnesses that rely on values a run cannot repeat (time, random
//! numbers, routes) are replayed in the interpreter only and not timed.

mod timing;

use linerate_bpf::contents::MapMode;
use linerate_bpf::Object;
use linerate_cfg::Cfg;
use linerate_contend::driver::TrafficDriver;
use linerate_cost::model::SLOW_QUANTILE;
use linerate_cost::Model;
use linerate_kernel::drive::{DriveError, Driver};
use linerate_kernel::{KernelError, TestRunInput};
use linerate_smt::{BlockRef, Witness};
use linerate_vm::trace::Step;
use linerate_vm::{xdp_action_name, FibRoute, Vm, VmError, VmOptions};

use crate::dag::Step as PathStep;
use crate::ssp::Found;

/// How to time a path.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Options {
    /// Runs per trial (`BPF_PROG_TEST_RUN`'s `repeat`); the kernel reports their average.
    pub repeat: u32,
    /// Trials per path, taken in rounds over the paths of a program; the measurement is their
    /// [`SLOW_QUANTILE`] (the moments a calibrated x86 price holds in), the median is shown
    /// beside it. A call with `repeat > 1` takes about 55 ms whatever the repeat (the kernel
    /// adds the program to the XDP dispatcher and removes it, waiting for RCU grace periods), so
    /// a round of ten paths takes over half a second.
    pub trials: usize,
    /// The rounds are spread over at least this long: this host's speed moves from moment to
    /// moment (on a shared 2-core guest, an empty program's run takes 6 ns for tens of ms, then
    /// 15 ns for the next hundreds), and a quantile over trials taken within a few ms describes
    /// one moment.
    pub span: std::time::Duration,
    /// Single runs per trial of a path timed [`Method::Fresh`]; the trial's figure is their
    /// median.
    pub single_runs: usize,
    /// Time every path [`Method::Fresh`], not only those repeated runs do not repeat (to compare
    /// the two methods).
    pub always_fresh: bool,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            repeat: 10_000,
            trials: 10,
            span: std::time::Duration::from_secs(1),
            single_runs: 100,
            always_fresh: false,
        }
    }
}

/// Estimates above or below their measurement by at most this share count as the measured
/// slowest path when comparing the SSP with the slowest measurement (the 3%).
pub const SLOWEST_TOLERANCE: f64 = 0.03;

/// The resolution of a repeated-run measurement, ns: the kernel reports the average run rounded
/// down to whole ns. Two paths of 25 ns whose measurements differ by this are 4% apart on paper
/// but may differ by nothing.
pub const RESOLUTION_NS: f64 = 1.0;

/// Why measuring failed as a whole (a path's own problems are in its [`Check`]).
#[derive(Debug, thiserror::Error)]
pub enum MeasureError {
    #[error("the program has no CFG: {0}")]
    Cfg(String),
    #[error("kernel: {0}")]
    Kernel(#[from] DriveError),
    #[error("kernel: {0}")]
    TestRun(#[from] KernelError),
    #[error("interpreter: {0}")]
    Vm(#[from] VmError),
    #[error("path {rank}: the witness's map entries do not install in the interpreter: {reason}")]
    Seed { rank: usize, reason: String },
    #[error("repeat, trials and single runs must each be at least 1")]
    Options,
    #[error("traffic driver: {0}")]
    Driver(String),
}

/// Whether the kernel ran the reported path, as far as the interpreter and the action tell.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Check {
    /// The interpreter entered the witness's blocks and returned its action; so did the kernel
    /// (action), also on the last of the repeated runs.
    Confirmed,
    /// The path relies on values a run cannot repeat; replayed in the interpreter only, not
    /// timed.
    Unrepeatable(Vec<String>),
    /// The checker gave no witness (why).
    NoWitness(String),
    /// The interpreter or the kernel took another path (what differed); timed but not counted.
    Differs(String),
    /// Repeated runs (which share the buffer and the maps) do not all take the path, and
    /// neither the restoring driver nor single runs from restored maps could time it (why);
    /// not counted.
    Drifts(String),
}

/// How a path was timed ([`timing`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Method {
    /// Average of `repeat` runs sharing buffer and maps, as the model was calibrated.
    Repeated,
    /// Single runs, each on the witness's packet and maps, less the single-run overhead.
    Fresh,
    /// Repeated runs behind the traffic driver, which puts back what a run changed (bytes,
    /// head, length, metadata, map entries) before each run, less the driver.
    Driven,
}

/// One reported path, estimated and measured.
#[derive(Clone, Debug)]
pub struct PathMeasurement {
    /// Position in the bound's order: 0 is the estimated slowest satisfiable path.
    pub rank: usize,
    /// The blocks the witness executes (first slots, across tail calls); empty without a witness.
    pub blocks: Vec<BlockRef>,
    /// The witness's action (`XDP_DROP`, ...).
    pub action: Option<&'static str>,
    /// The model's throughput of the path (its cost plus the per-packet work), packets/s.
    pub estimate_pps: f64,
    /// The component that limits the estimate.
    pub bottleneck: String,
    /// The blocks the interpreter entered replaying the witness, and its action.
    pub vm_blocks: Vec<BlockRef>,
    pub vm_action: Option<&'static str>,
    /// The kernel's action on a single run.
    pub kernel_action: Option<&'static str>,
    /// ns per run of each trial (the kernel's average, rounded down, plus 0.5 ns; for a driven
    /// path its side of the alternating driver less the empty side, plus the round's
    /// reference); empty when not timed.
    pub trials_ns: Vec<f64>,
    /// For a driven path, ns per run of the alternating driver's empty side (driver and
    /// harness) in each trial; empty otherwise.
    pub driver_ns: Vec<f64>,
    /// ns per run of the empty program `r0 = XDP_PASS; exit` in the same rounds as
    /// [`PathMeasurement::trials_ns`], one per trial (empty for paths not timed in rounds): the
    /// model's per-packet work as this host ran it at the moments the path was timed.
    pub reference_ns: Vec<f64>,
    /// How it was timed (`None`: not timed).
    pub method: Option<Method>,
    /// Why repeated runs could not time it (the reason for [`Method::Fresh`]).
    pub drift: Option<String>,
    /// For [`Method::Fresh`]: the single-run overhead subtracted from every run, ns.
    pub single_run_offset_ns: Option<f64>,
    /// The path crosses a summary (a callback helper's calls or a long loop's middle iterations,
    /// priced as the most of them a run makes times the worst one): its estimate is of the most
    /// calls or iterations, while the witness makes what its inputs ask for, so estimate and
    /// measurement are not of the same work and the path does not count — unless the witness
    /// makes every call the estimate prices ([`crate::prepare::Prepared::makes_summarised_calls`]).
    pub summarised: bool,
    pub check: Check,
}

impl PathMeasurement {
    /// ns per run of the path at quantile `q` of its trials.
    pub fn ns_at(&self, q: f64) -> Option<f64> {
        quantile(&self.trials_ns, q)
    }

    /// Median ns per run: the path's time in this host's typical moments.
    pub fn median_ns(&self) -> Option<f64> {
        self.ns_at(0.5)
    }

    /// ns per run at [`SLOW_QUANTILE`]: the path's time in this host's slow moments, which a
    /// calibrated x86 estimate promises to hold in.
    pub fn slow_ns(&self) -> Option<f64> {
        self.ns_at(SLOW_QUANTILE)
    }

    /// Packets per second the kernel sustained on this path in this host's slow moments: 1e9 /
    /// [`PathMeasurement::slow_ns`].
    pub fn measured_pps(&self) -> Option<f64> {
        self.slow_ns().map(|ns| 1e9 / ns)
    }

    /// Estimate over measurement: above 1 the model promises more than the kernel delivered.
    pub fn ratio(&self) -> Option<f64> {
        self.measured_pps().map(|m| self.estimate_pps / m)
    }

    /// Whether the measurement counts in the summary: confirmed, not through a summary, and
    /// timed in repeated runs (plain or driven), as the model was calibrated. Fresh figures carry the single runs' colder caches (tens of ns
    /// slower than repeated runs of the same path on this host), which would hide
    /// over-estimates; they are reported but not counted.
    pub fn counts(&self) -> bool {
        self.not_comparable().is_none()
    }

    /// Why the path's estimate and measurement cannot be compared, if they cannot: every path
    /// reported either counts in the summary or has this reason.
    pub fn not_comparable(&self) -> Option<String> {
        match &self.check {
            Check::Confirmed => {}
            Check::Unrepeatable(values) => {
                return Some(format!(
                    "not timed: the witness relies on values a run cannot repeat ({})",
                    values.join(", ")
                ))
            }
            Check::NoWitness(why) => return Some(format!("no witness to run: {why}")),
            Check::Differs(why) => return Some(format!("the runs take another path: {why}")),
            Check::Drifts(why) => {
                return Some(format!(
                    "repeated runs stray from the path and single runs could not time it: {why}"
                ))
            }
        }
        if self.summarised {
            return Some(
                "priced by a summary (the most callback calls or loop iterations a run makes), \
                 and the witness makes fewer"
                    .into(),
            );
        }
        match self.method {
            None => Some("not timed".into()),
            _ if self.trials_ns.is_empty() => Some("not timed".into()),
            Some(Method::Fresh) => {
                Some(format!(
                "timed in single runs from restored maps ({}), whose caches are colder than the \
                 repeated runs the model is calibrated on{}",
                self.drift.as_deref().unwrap_or("repeated runs stray from the path"),
                self.ratio()
                    .map_or(String::new(), |r| format!("; estimate/measurement {r:.2}"))
            ))
            }
            Some(Method::Repeated | Method::Driven) => None,
        }
    }
}

/// The paper's summary figures over the counted paths (§6.1). Shares and amounts are fractions
/// (0.05 = 5%); an over-estimate is `ratio - 1`, an under-estimate `1 - ratio`.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Summary {
    /// Paths reported, and those whose measurement counts.
    pub paths: usize,
    pub counted: usize,
    /// Share of counted paths whose estimate is below / above the measurement.
    pub under_share: f64,
    pub over_share: f64,
    /// Largest over-estimate (0 when none is over).
    pub largest_over: f64,
    /// Median and largest under-estimate of the under-estimated paths (0 when none).
    pub median_under: f64,
    pub largest_under: f64,
    /// Whether the estimated SSP (rank 0) is the measured slowest within
    /// [`SLOWEST_TOLERANCE`]; `None` when rank 0 does not count.
    pub ssp_is_slowest: Option<bool>,
    /// The same, allowing the measurements' [`RESOLUTION_NS`] as well: whether the SSP may be
    /// within [`SLOWEST_TOLERANCE`] of the slowest given that each figure may be off by up to
    /// half of it.
    pub ssp_is_slowest_within_resolution: Option<bool>,
    /// Rank of the measured slowest counted path.
    pub slowest_rank: Option<usize>,
    /// The paths that do not count, by rank, with the reason
    /// ([`PathMeasurement::not_comparable`]).
    pub not_comparable: Vec<(usize, String)>,
}

/// This host while the paths were timed: the empty program `r0 = XDP_PASS; exit` timed in every
/// round beside them, against the model's per-packet work (which is that program's time in the
/// host's slow moments when the model was calibrated).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct HostNow {
    /// The empty program's median and [`SLOW_QUANTILE`] ns per run over the rounds.
    pub reference_median_ns: f64,
    pub reference_slow_ns: f64,
    /// The model's per-packet work, ns.
    pub model_per_packet_ns: f64,
}

/// A host running the empty program this much slower than its model's per-packet work is
/// reported as slower than calibrated (`linerate calibrate --check`'s tolerance).
pub const HOST_DRIFT_TOLERANCE: f64 = 0.10;

impl HostNow {
    /// How much slower than the model's per-packet work the host ran the empty program in its
    /// slow moments (0.25: 25% slower), when beyond [`HOST_DRIFT_TOLERANCE`].
    pub fn slower_than_model(&self) -> Option<f64> {
        let slower = self.reference_slow_ns / self.model_per_packet_ns - 1.0;
        (slower > HOST_DRIFT_TOLERANCE).then_some(slower)
    }
}

/// The host's state over the rounds that timed `paths` (`None` if no path was timed in rounds).
pub fn host_now(model: &Model, paths: &[PathMeasurement]) -> Option<HostNow> {
    // The paths timed in the same rounds share their reference figures: each round counts once.
    let mut rounds: Vec<&[f64]> = Vec::new();
    for p in paths.iter().filter(|p| !p.reference_ns.is_empty()) {
        if !rounds.contains(&p.reference_ns.as_slice()) {
            rounds.push(&p.reference_ns);
        }
    }
    let reference: Vec<f64> = rounds.concat();
    let per_packet = model.packet_rate(model.per_packet(), 0).pps;
    if !(per_packet.is_finite() && per_packet > 0.0) {
        return None;
    }
    Some(HostNow {
        reference_median_ns: quantile(&reference, 0.5)?,
        reference_slow_ns: quantile(&reference, SLOW_QUANTILE)?,
        model_per_packet_ns: 1e9 / per_packet,
    })
}

/// The model's throughput of a found path: its cost plus the per-packet work, at its minimum
/// packet size (as `linerate bound` reports it), and the limiting component.
pub fn estimate(model: &Model, found: &Found<Box<Witness>>) -> (f64, String) {
    let (pps, _, bottleneck) = crate::enumerate::model_rates(model, &found.path);
    (pps, bottleneck)
}

/// The interpreter's options for replaying `witness`: its device and queue, steps recorded.
pub fn replay_options(witness: &Witness) -> VmOptions {
    VmOptions {
        ingress_ifindex: witness.ingress_ifindex,
        rx_queue_index: witness.rx_queue_index,
        record_steps: true,
        fib: witness_fib(witness),
        ..VmOptions::default()
    }
}

/// The routes the witness needs, as the interpreter's routing table (`run --fib`): host routes.
pub fn witness_fib(witness: &Witness) -> Vec<FibRoute> {
    witness
        .routes
        .iter()
        .map(|r| {
            let mut prefix = [0u8; 16];
            let (ipv6, prefix_len) = match r.destination {
                std::net::IpAddr::V4(v4) => {
                    prefix[..4].copy_from_slice(&v4.octets());
                    (false, 32)
                }
                std::net::IpAddr::V6(v6) => {
                    prefix = v6.octets();
                    (true, 128)
                }
            };
            FibRoute {
                ipv6,
                prefix,
                prefix_len,
                ifindex: r.ifindex,
                smac: r.smac,
                dmac: r.dmac,
            }
        })
        .collect()
}

/// One `BPF_PROG_TEST_RUN` of `witness`: its packet, metadata, device and queue.
pub fn run_input(witness: &Witness) -> TestRunInput {
    TestRunInput {
        packet: witness.packet.clone(),
        meta: witness.meta.clone(),
        ingress_ifindex: witness.ingress_ifindex,
        rx_queue_index: witness.rx_queue_index,
        repeat: 1,
        discard_records: false,
    }
}

/// How long timing waits for a search's remaining checks to end (each is bounded by the
/// checker's timeout).
const WORKERS_LIMIT: std::time::Duration = std::time::Duration::from_secs(300);

/// Replays, checks and times every path of `found` (program `program` of `object`, paths of
/// `dag`, estimated under `model`), in order. Needs BPF (see `linerate_kernel::check_access`).
pub fn measure(
    object: &Object,
    program: usize,
    prepared: &crate::prepare::Prepared,
    model: &Model,
    found: &[Found<Box<Witness>>],
    options: &Options,
) -> Result<Vec<PathMeasurement>, MeasureError> {
    if options.repeat == 0 || options.trials == 0 || options.single_runs == 0 {
        return Err(MeasureError::Options);
    }
    if found.is_empty() {
        // Nothing to time: no reason to wait for the search's last checks.
        return Ok(Vec::new());
    }
    // The search that found the paths may still have checks running on other threads; timed
    // beside them, the kernel's runs would share the core with the solver.
    crate::ssp::wait_for_workers(WORKERS_LIMIT);
    let cfgs: Vec<Option<Cfg>> = object.programs.iter().map(|p| Cfg::build(p).ok()).collect();
    if cfgs.get(program).is_none_or(|c| c.is_none()) {
        return Err(MeasureError::Cfg(format!("program {program}")));
    }
    let mut offset = None;
    let mut out = Vec::with_capacity(found.len());
    for (first_rank, group) in found
        .chunks(interleaved_paths(object))
        .enumerate()
        .map(|(i, g)| (i * interleaved_paths(object), g))
    {
        let mut staged = Vec::with_capacity(group.len());
        for (i, f) in group.iter().enumerate() {
            // A witness that makes every summarised call the estimate prices does its work.
            let summarised = f.path.edges.iter().any(|&e| {
                matches!(
                    prepared.dag.edges[e].step,
                    PathStep::Callbacks { .. } | PathStep::Loop { .. }
                )
            }) && f.witness.as_ref().map_or(true, |w| {
                !prepared.makes_summarised_calls(&f.path.edges, &w.blocks)
            });
            staged.push(stage_one(
                object,
                program,
                model,
                &cfgs,
                first_rank + i,
                f,
                summarised,
                options,
                &mut offset,
            )?);
        }
        time_in_rounds(&mut staged, options)?;
        out.extend(staged.into_iter().map(|(m, _)| m));
    }
    Ok(out)
}

/// Declared map memory of one loaded copy of `object` that the paths of one round may hold
/// together (each path is a loaded copy with its witness's maps).
const INTERLEAVED_MAP_BYTES: u64 = 1 << 30;

/// How many paths of `object` are timed in one set of rounds: as many as
/// [`INTERLEAVED_MAP_BYTES`] of their maps allows (a map's declared size: a ring's bytes, or
/// its entries at key plus value size and a 64-byte element header, values per CPU for per-CPU
/// maps), at least one.
fn interleaved_paths(object: &Object) -> usize {
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get()) as u64;
    let bytes: u64 = object
        .maps
        .iter()
        .map(|m| {
            let entries = u64::from(m.max_entries);
            if m.map_type.is_record_output() {
                return entries;
            }
            let per_cpu = if m.map_type.is_percpu() { cpus } else { 1 };
            entries * (u64::from(m.key_size) + u64::from(m.value_size) * per_cpu + 64)
        })
        .sum();
    usize::try_from(INTERLEAVED_MAP_BYTES / bytes.max(1))
        .unwrap_or(usize::MAX)
        .max(1)
}

/// Times every staged path that has a timer, one trial of each per round, the rounds spread
/// over [`Options::span`]: this host's speed moves from moment to moment, and paths timed in
/// the same rounds are compared at the same moments. A trial whose last run returns another
/// action than the path's makes the path drift (not counted).
fn time_in_rounds(
    staged: &mut [(PathMeasurement, Option<timing::Timer<'_>>)],
    options: &Options,
) -> Result<(), MeasureError> {
    if staged.iter().all(|(_, t)| t.is_none()) {
        return Ok(());
    }
    let reference = timing::Reference::new()?;
    let start = std::time::Instant::now();
    for round in 0..options.trials {
        let reference_ns = reference.trial(options.repeat)?;
        for (out, timer) in staged.iter_mut() {
            let Some(timer) = timer else { continue };
            let trial = timer.trial(options.repeat, reference_ns)?;
            out.trials_ns.push(trial.ns);
            out.driver_ns.extend(trial.driver_ns);
            out.reference_ns.push(reference_ns);
            if trial.retval != timer.expect() && out.check == Check::Confirmed {
                out.check = Check::Drifts(format!(
                    "the last run of trial {} ({}) returns {}",
                    round + 1,
                    match timer.method() {
                        Method::Driven => "behind the restoring driver",
                        _ => "repeated runs",
                    },
                    xdp_action_name(u64::from(trial.retval))
                ));
            }
        }
        let due = options
            .span
            .mul_f64((round + 1) as f64 / options.trials as f64);
        if let Some(wait) = due.checked_sub(start.elapsed()) {
            std::thread::sleep(wait);
        }
    }
    Ok(())
}

/// Checks path `rank` and sets it up to be timed in rounds (a path timed in single runs is timed
/// now, one that cannot be timed is returned without a timer); `offset` is the single-run
/// overhead, measured when first needed.
#[allow(clippy::too_many_arguments)]
fn stage_one<'a>(
    object: &'a Object,
    program: usize,
    model: &Model,
    cfgs: &[Option<Cfg>],
    rank: usize,
    found: &'a Found<Box<Witness>>,
    summarised: bool,
    options: &Options,
    offset: &mut Option<f64>,
) -> Result<(PathMeasurement, Option<timing::Timer<'a>>), MeasureError> {
    let (estimate_pps, bottleneck) = estimate(model, found);
    let mut out = PathMeasurement {
        rank,
        blocks: Vec::new(),
        action: None,
        estimate_pps,
        bottleneck,
        vm_blocks: Vec::new(),
        vm_action: None,
        kernel_action: None,
        trials_ns: Vec::new(),
        driver_ns: Vec::new(),
        reference_ns: Vec::new(),
        method: None,
        drift: None,
        single_run_offset_ns: None,
        summarised,
        check: Check::Confirmed,
    };
    let witness = match &found.witness {
        Ok(w) => w,
        Err(why) => {
            out.check = Check::NoWitness(why.clone());
            return Ok((out, None));
        }
    };
    out.blocks = witness.blocks.clone();
    out.action = Some(witness.action);

    // The interpreter: the witness's blocks and action, then the repeated runs as the kernel's
    // timed calls make them.
    let mut vm = Vm::new(object, replay_options(witness))?;
    vm.seed(&witness.maps).map_err(|e| MeasureError::Seed {
        rank,
        reason: e.to_string(),
    })?;
    let first = vm.run(program, &witness.packet, &witness.meta)?;
    out.vm_blocks = blocks(cfgs, &first.steps);
    out.vm_action = Some(xdp_action_name(first.return_value));
    if !witness.unrepeatable.is_empty() {
        out.check = Check::Unrepeatable(witness.unrepeatable.clone());
        return Ok((out, None));
    }
    let mut differs = Vec::new();
    if out.vm_blocks != witness.blocks {
        differs.push(format!(
            "the interpreter enters other blocks ({} instead of {}, first difference at block {})",
            out.vm_blocks.len(),
            witness.blocks.len(),
            first_difference(&out.vm_blocks, &witness.blocks)
        ));
    }
    if first.return_value != witness.return_value {
        differs.push(format!(
            "the interpreter returns {} instead of {}",
            xdp_action_name(first.return_value),
            witness.action
        ));
    }
    let drift = replay_drift(
        &mut vm,
        program,
        cfgs,
        witness,
        &first,
        &out.vm_blocks,
        options,
    )?;

    // The kernel: one run for the action, then the timed trials.
    let driver = Driver::new(object, &witness.maps, MapMode::Persist)?;
    let loaded = driver.loaded();
    loaded.load_program(program)?;
    let initial = driver.maps()?;
    // Measuring compares actions and times; what the runs send to user space is not looked at,
    // and the timed repeated runs may overflow a perf ring, which the next single run reports.
    let input = TestRunInput {
        discard_records: true,
        ..run_input(witness)
    };
    let single = loaded.test_run(program, &input)?;
    let kernel_action = xdp_action_name(u64::from(single.retval));
    out.kernel_action = Some(kernel_action);
    if u64::from(single.retval) != first.return_value {
        differs.push(format!(
            "the kernel returns {kernel_action}, the interpreter {}",
            xdp_action_name(first.return_value)
        ));
    }
    if !differs.is_empty() {
        out.check = Check::Differs(differs.join("; "));
        return Ok((out, None));
    }
    if drift.is_none() && !options.always_fresh {
        // One probe trial shows whether repeated runs end on the action; the rounds time it.
        let timer = timing::Timer::repeated(driver, program, &input, single.retval);
        let probe = timer.trial(options.repeat, 0.0)?;
        if probe.retval == single.retval {
            out.method = Some(Method::Repeated);
            return Ok((out, Some(timer)));
        }
        let drift = Some(format!(
            "the last of {} repeated runs returns {}",
            options.repeat,
            xdp_action_name(u64::from(probe.retval))
        ));
        return stage_unrepeated(
            object,
            program,
            timer.into_driver(),
            &input,
            &single,
            &initial,
            out,
            drift,
            options,
            offset,
        );
    }
    stage_unrepeated(
        object, program, driver, &input, &single, &initial, out, drift, options, offset,
    )
}

/// Sets up path `out`, whose repeated runs stray (`drift` says how), behind the restoring
/// driver; failing that, times it in single runs from restored maps now (`offset` is the
/// single-run overhead, measured when first needed).
#[allow(clippy::too_many_arguments)]
fn stage_unrepeated<'a>(
    object: &Object,
    program: usize,
    driver: Driver<'a>,
    input: &TestRunInput,
    single: &linerate_kernel::TestRunOutput,
    initial: &linerate_bpf::contents::MapContents,
    mut out: PathMeasurement,
    mut drift: Option<String>,
    options: &Options,
    offset: &mut Option<f64>,
) -> Result<(PathMeasurement, Option<timing::Timer<'a>>), MeasureError> {
    let plan = match options.always_fresh {
        true => Err(None),
        false => {
            timing::restore_plan(object, driver.loaded(), input, single, initial).map_err(Some)
        }
    };
    let driver = match plan {
        Ok(restore) => {
            // A gap between two runs longer than a hundred single runs (at least 100 µs) is the
            // CPU taken away, not a run.
            let limit_ns = single.duration_ns.saturating_mul(100).max(100_000);
            let traffic =
                TrafficDriver::alternating(input, &restore, driver.loaded(), program, limit_ns)
                    .map_err(|e| MeasureError::Driver(e.to_string()))?;
            let timer = timing::Timer::driven(driver, program, traffic, single.retval);
            let probe = timer.trial(options.repeat, 0.0)?;
            if probe.retval == single.retval {
                out.method = Some(Method::Driven);
                out.drift = drift;
                return Ok((out, Some(timer)));
            }
            drift = drift.map(|d| {
                format!(
                    "{d}; behind the restoring driver a run returns {}",
                    xdp_action_name(u64::from(probe.retval))
                )
            });
            timer.into_driver()
        }
        Err(why) => {
            if let Some(why) = why {
                drift = drift.map(|d| format!("{d}; {why}"));
            }
            driver
        }
    };
    fresh_now(
        program,
        driver.loaded(),
        input,
        single,
        initial,
        out,
        drift,
        options,
        offset,
    )
}

/// Times path `out` in single runs from restored maps (the last resort, not interleaved).
#[allow(clippy::too_many_arguments)]
fn fresh_now<'a>(
    program: usize,
    loaded: &linerate_kernel::LoadedObject,
    input: &TestRunInput,
    single: &linerate_kernel::TestRunOutput,
    initial: &linerate_bpf::contents::MapContents,
    mut out: PathMeasurement,
    drift: Option<String>,
    options: &Options,
    offset: &mut Option<f64>,
) -> Result<(PathMeasurement, Option<timing::Timer<'a>>), MeasureError> {
    out.drift = drift;
    let offset = match offset {
        Some(o) => *o,
        None => *offset.insert(timing::single_run_offset(
            options.single_runs,
            options.trials,
            options.repeat,
        )?),
    };
    match timing::fresh(
        loaded,
        program,
        input,
        initial,
        options.single_runs,
        options.trials,
        single.retval,
        offset,
    )? {
        timing::Fresh::Timed(trials) => {
            out.trials_ns = trials;
            out.method = Some(Method::Fresh);
            out.single_run_offset_ns = Some(offset);
        }
        timing::Fresh::Failed(why) => out.check = Check::Drifts(why),
    }
    Ok((out, None))
}

/// Runs the kernel's timed calls make after its single run, replayed in the interpreter: every
/// trial's call starts from the witness's packet and runs `repeat` times on one buffer, and the
/// maps carry over from the single run through every call. A count-min sketch crosses its
/// threshold after some thousands of runs, a flow table has its flow after the first: each
/// repeated run must take the witness's blocks for the average to be the path's time. At most
/// this many runs are replayed (the rest are assumed to repeat).
pub const MAX_REPLAYED_RUNS: u64 = 100_000;

/// Why replayed runs would not all take the path (`None`: they do), from the interpreter
/// `vm`, which has run the single run `first`.
#[allow(clippy::too_many_arguments)]
fn replay_drift(
    vm: &mut Vm,
    program: usize,
    cfgs: &[Option<Cfg>],
    witness: &Witness,
    first: &linerate_vm::RunOutcome,
    path: &[BlockRef],
    options: &Options,
) -> Result<Option<String>, MeasureError> {
    let mut replayed = 0u64;
    for trial in 0..options.trials {
        let (mut packet, mut meta) = (witness.packet.clone(), witness.meta.clone());
        for run in 0..options.repeat {
            if replayed == MAX_REPLAYED_RUNS {
                return Ok(None);
            }
            replayed += 1;
            let (run, trial) = (run + 1, trial + 1);
            let next = match vm.run(program, &packet, &meta) {
                Ok(next) => next,
                Err(e) => {
                    return Ok(Some(format!(
                        "repeated run {run} of trial {trial} fails in the interpreter ({e})"
                    )))
                }
            };
            if blocks(cfgs, &next.steps) != path || next.return_value != first.return_value {
                return Ok(Some(format!(
                    "repeated run {run} of trial {trial} takes other blocks"
                )));
            }
            // Repeated runs share one buffer: a head, tail or metadata a run moves stays moved,
            // and the headroom a pushed header used is gone for the next run (the interpreter
            // gives every run a fresh buffer, so it cannot replay that).
            if next.packet.len() != packet.len() || next.meta.len() != meta.len() {
                return Ok(Some(format!(
                    "repeated run {run} of trial {trial} moves the packet's head, tail or \
                     metadata, which stays moved for the next run"
                )));
            }
            (packet, meta) = (next.packet, next.meta);
        }
    }
    Ok(None)
}

/// The blocks a run entered, in order.
fn blocks(cfgs: &[Option<Cfg>], steps: &[Step]) -> Vec<BlockRef> {
    linerate_cfg::block_starts(cfgs, steps.iter().map(|s| (s.program, s.slot)))
        .into_iter()
        .map(|(program, slot)| BlockRef { program, slot })
        .collect()
}

fn first_difference(a: &[BlockRef], b: &[BlockRef]) -> usize {
    a.iter().zip(b).take_while(|(x, y)| x == y).count()
}

/// The `q` quantile of `values`, interpolated between the two nearest ranks (rank `q × (n − 1)`
/// counting from 0): with ten trials the 90th percentile lies between the two slowest.
fn quantile(values: &[f64], q: f64) -> Option<f64> {
    let mut v = values.to_vec();
    v.sort_by(f64::total_cmp);
    let last = v.len().checked_sub(1)?;
    let rank = q.clamp(0.0, 1.0) * last as f64;
    let below = rank.floor() as usize;
    let above = (below + 1).min(last);
    Some(v[below] + (v[above] - v[below]) * (rank - below as f64))
}

fn median(values: &[f64]) -> Option<f64> {
    quantile(values, 0.5)
}

/// The summary figures over `paths` (in rank order).
pub fn summarize(paths: &[PathMeasurement]) -> Summary {
    let counted: Vec<(usize, f64, f64)> = paths
        .iter()
        .filter(|p| p.counts())
        .filter_map(|p| Some((p.rank, p.ratio()?, p.measured_pps()?)))
        .collect();
    let n = counted.len();
    let share = |k: usize| if n == 0 { 0.0 } else { k as f64 / n as f64 };
    let overs: Vec<f64> = counted
        .iter()
        .filter(|c| c.1 > 1.0)
        .map(|c| c.1 - 1.0)
        .collect();
    let unders: Vec<f64> = counted
        .iter()
        .filter(|c| c.1 < 1.0)
        .map(|c| 1.0 - c.1)
        .collect();
    let slowest = counted
        .iter()
        .min_by(|a, b| a.2.total_cmp(&b.2))
        .map(|c| (c.0, c.2));
    let ssp_and_slowest = counted.iter().find(|c| c.0 == 0).zip(slowest);
    let ssp_is_slowest = ssp_and_slowest
        .map(|(ssp, (_, slowest_pps))| ssp.2 <= slowest_pps * (1.0 + SLOWEST_TOLERANCE));
    let ssp_is_slowest_within_resolution = ssp_and_slowest.map(|(ssp, (_, slowest_pps))| {
        1e9 / ssp.2 + RESOLUTION_NS >= 1e9 / slowest_pps / (1.0 + SLOWEST_TOLERANCE)
    });
    Summary {
        paths: paths.len(),
        counted: n,
        under_share: share(unders.len()),
        over_share: share(overs.len()),
        largest_over: overs.iter().copied().fold(0.0, f64::max),
        median_under: median(&unders).unwrap_or(0.0),
        largest_under: unders.iter().copied().fold(0.0, f64::max),
        ssp_is_slowest,
        ssp_is_slowest_within_resolution,
        slowest_rank: slowest.map(|s| s.0),
        not_comparable: paths
            .iter()
            .filter_map(|p| Some((p.rank, p.not_comparable()?)))
            .collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn timed(rank: usize, estimate_ns: f64, measured_ns: f64) -> PathMeasurement {
        PathMeasurement {
            rank,
            blocks: Vec::new(),
            action: Some("XDP_PASS"),
            estimate_pps: 1e9 / estimate_ns,
            bottleneck: "cycles".into(),
            vm_blocks: Vec::new(),
            vm_action: Some("XDP_PASS"),
            kernel_action: Some("XDP_PASS"),
            trials_ns: vec![measured_ns],
            driver_ns: Vec::new(),
            reference_ns: Vec::new(),
            method: Some(Method::Repeated),
            drift: None,
            single_run_offset_ns: None,
            summarised: false,
            check: Check::Confirmed,
        }
    }

    #[test]
    fn the_slowest_comparison_allows_the_tolerance_and_separately_the_resolution() {
        // 25.5 against 24.5 ns: 4% apart, more than 3%, but within the 1 ns resolution.
        let s = summarize(&[timed(0, 30.0, 24.5), timed(1, 29.0, 25.5)]);
        assert_eq!(s.ssp_is_slowest, Some(false));
        assert_eq!(s.ssp_is_slowest_within_resolution, Some(true));
        assert_eq!(s.slowest_rank, Some(1));
        // 2 ns apart is beyond both.
        let s = summarize(&[timed(0, 30.0, 24.5), timed(1, 29.0, 26.5)]);
        assert_eq!(s.ssp_is_slowest_within_resolution, Some(false));
        // Within 3%.
        let s = summarize(&[timed(0, 30.0, 99.5), timed(1, 29.0, 101.5)]);
        assert_eq!(s.ssp_is_slowest, Some(true));
        // The ratio (estimate over measurement, in packets/s) is measured ns over estimated ns:
        // 25/20 is an over-estimate of 25%, 25/50 an under-estimate of 50%.
        let s = summarize(&[timed(0, 20.0, 25.0), timed(1, 50.0, 25.0)]);
        assert_eq!((s.over_share, s.under_share), (0.5, 0.5));
        assert!((s.largest_over - 0.25).abs() < 1e-9);
        assert!((s.median_under - 0.5).abs() < 1e-9);
    }

    #[test]
    fn the_measurement_is_the_slow_quantile_of_the_trials() {
        let mut p = timed(0, 30.0, 0.0);
        p.trials_ns = (1..=20).rev().map(f64::from).collect();
        // The 90th percentile of 1..=20 lies at rank 17.1 from 0: between 18 and 19; the median
        // between 10 and 11.
        let close = |a: Option<f64>, b: f64| a.is_some_and(|a| (a - b).abs() < 1e-9);
        assert!(close(p.slow_ns(), 18.1));
        assert!(close(p.median_ns(), 10.5));
        assert!(close(p.measured_pps(), 1e9 / 18.1));
        assert!(close(p.ratio(), 18.1 / 30.0));
        p.trials_ns.clear();
        assert_eq!(p.slow_ns(), None);
    }

    #[test]
    fn a_host_slower_than_its_model_is_named_beyond_the_tolerance() {
        let host = |slow| HostNow {
            reference_median_ns: 9.0,
            reference_slow_ns: slow,
            model_per_packet_ns: 10.0,
        };
        assert_eq!(host(10.9).slower_than_model(), None);
        assert!(host(12.5)
            .slower_than_model()
            .is_some_and(|s| (s - 0.25).abs() < 1e-9));
        // Faster than the model is no warning: the estimate holds with room.
        assert_eq!(host(6.0).slower_than_model(), None);
    }

    #[test]
    fn every_path_counts_or_says_why_not() {
        let mut fresh = timed(1, 30.0, 40.0);
        fresh.method = Some(Method::Fresh);
        fresh.drift = Some("repeated run 2 of trial 1 takes other blocks".into());
        let mut unrepeatable = timed(2, 30.0, 0.0);
        unrepeatable.trials_ns.clear();
        unrepeatable.method = None;
        unrepeatable.check = Check::Unrepeatable(vec!["bpf_ktime_get_ns".into()]);
        let s = summarize(&[timed(0, 30.0, 31.0), fresh, unrepeatable]);
        assert_eq!(s.counted, 1);
        let ranks: Vec<usize> = s.not_comparable.iter().map(|(r, _)| *r).collect();
        assert_eq!(ranks, [1, 2]);
        assert!(
            s.not_comparable[0].1.contains("single runs"),
            "{:?}",
            s.not_comparable
        );
        assert!(s.not_comparable[0].1.contains("estimate/measurement 1.33"));
        assert!(s.not_comparable[1].1.contains("bpf_ktime_get_ns"));
    }
}
