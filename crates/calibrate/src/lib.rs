//! Calibration: measures this host's XDP costs through `BPF_PROG_TEST_RUN` and builds an x86
//! cost model (`linerate calibrate`). It generates the microbenchmark programs, runs them in the
//! kernel and fits one price per cost item. It is not the cost model: the items, the model file
//! format and pricing a program under a model are `linerate-cost`'s, and the result is a
//! [`linerate_cost::ModelFile`] that any model file could be. It never runs on the interpreter:
//! every figure is a kernel measurement.
//!
//! # Method
//!
//! * **Benches.** For every item, a generated XDP program runs a loop whose body is a *setup* and
//!   `N` copies of a *unit* containing the item; a *baseline* program of the same group has the
//!   same loop and setup but no units. The item's price is `(t(bench) − t(baseline)) / N / k −
//!   Σ glue`, with `t` the time of one loop iteration, `k` the times a unit executes the item, and
//!   the glue what else the unit executes (argument setup of helpers, the `and`/`add` linking a
//!   load chain, the `or` keeping a dividend large, ...), subtracted at the glue items' own prices
//!   so that costing the same instructions adds up to what was measured. `N` is 20–4000 per item
//!   so that an iteration takes hundreds of ns to several µs; code stays within the 32 KiB
//!   instruction cache.
//! * **Loops.** A test run with `repeat > 1` makes the kernel add the program to the XDP
//!   dispatcher and remove it again, two RCU grace periods (~16 ms) per run. So benches run once
//!   (`repeat = 1`) and loop instead: the iteration count comes from the packet's last 4 bytes,
//!   and the loop is bounded for the verifier by `may_goto` (Linux 6.9+), so it is verified once,
//!   not unrolled. The loop overhead is the same in a bench and its baseline. Only the empty
//!   program (`per_packet`) and the tail-call benches, which cannot loop, use repeated runs.
//! * **Throughput, not latency.** An x86 core runs a program out of order and overlaps its
//!   instructions. On this host (Zen 4) an executed example path of 500 ALU operations, loads and
//!   predicted branches takes about 0.2 cycles per instruction beyond the empty program, while
//!   the sum of their latencies is over a cycle each; the longest dependency chain of each
//!   executed example path, priced at latencies, is a small share of its issue time (the 20
//!   independent rows of count-min d=20: 67 cycles of chain in 1,250 instructions). So ALU
//!   operations, byte swaps, register moves, loads and context loads are timed as independent
//!   operations (six destination registers, loads cycling over eight offsets): what the core
//!   issues per operation. A program whose time is one long dependency chain (a hash computed
//!   step by step with nothing beside it) runs slower than this prices it; the examples have none.
//!   Division and modulo stay latency chains that keep the dividend near the top of the signed
//!   range with divisor 3 (the most quotient bits, the slowest case of data-dependent dividers,
//!   which are barely pipelined, so latency is also their issue cost). Atomics run back to back
//!   over eight locations (a locked operation waits for the store buffer to drain, so they
//!   serialize anyway). Stores, moves of immediates, `ld_imm64` and jumps are timed back to back.
//!   Conditional jumps compare values from the packet
//!   (unknown to the verifier, which therefore keeps both outcomes and does not rewrite the
//!   jumps) and always go the same way, i.e. correctly predicted; taken jumps (and `ja`) skip 64
//!   bytes of code so that every target starts a new fetch block; not-taken jumps target the
//!   failure exit. Jump throughput also depends on where the JIT places the program (at a random
//!   offset), so each jump bench is loaded 4 times and priced at the upper median of the copies.
//! * **Regions.** Packet (after a bounds check), stack, map value (an array element after a
//!   lookup and null check), global data (`.data` through a map-value `ld_imm64`), context. Every
//!   `xdp_md` field XDP may read is timed as the verifier rewrites it and `load.ctx.u32` is the
//!   slowest; narrower, wider and sign-extending context loads are refused by the verifier and
//!   priced `same_as` the u32 load.
//! * **Callbacks.** `callback.loop` and `callback.for_each_map_elem`: one call of a callback `r0
//!   = 0; exit` by a helper making 64 calls (the programs carry BTF `func_info`, which a program
//!   passing a callback needs); the helper's own item is a call making one callback call less
//!   that call. `bpf_for_each_map_elem` calls through a function pointer from kernel code (13 ns
//!   a call on this host, against 7.7 for a local call); the verifier inlines `bpf_loop` into the
//!   program.
//! * **Helpers.** Every other helper of [`linerate_cost::item::costed_helpers`], called back to
//!   back with its argument setup subtracted: `csum_diff` of 20 bytes removed and 20 added, `xdp_load_bytes`
//!   and `xdp_store_bytes` of 64 bytes, the adjust helpers in pairs that move a bound by 4 bytes
//!   and back (per call), `redirect_map` on an occupied devmap slot (lo), `fib_lookup` of an IPv4
//!   destination through the host's default route (the helper returns early unless the ingress
//!   device forwards, so IPv4 forwarding on `lo` is switched on for exactly those runs and restored
//!   afterwards, unless [`Options::enable_forwarding`] is off; the note records the helper's result
//!   code), `trace_printk` of a 3-character line (it really writes to the trace buffer), the
//!   SYN cookie helpers on stack headers (generation over a 60-byte TCP header of NOP options, the
//!   longest walk for an MSS option; checks of an ACK the kernel did not answer),
//!   `probe_read_kernel` and `probe_read_kernel_str` from the stack at 8 and 64 bytes (a string
//!   as long as the size), priced at the dearer (a longer read costs more). Ring
//!   buffers, perf event output, queues and `check_mtu` have a group of their own
//!   (`programs/records.rs`): `ringbuf_output` of 8 bytes into a 4 MiB ring the kernel crate
//!   drains after every run; `ringbuf_reserve` timed with its `submit` or `discard` (the dearer
//!   pair, charged at the reserve; the ends are priced 0, since the verifier makes every
//!   reservation end in exactly one); `perf_event_output` into the perf event the kernel crate
//!   attaches at load; queue helpers on a full queue and a full stack (the dearer), the pop timed
//!   with a push putting the element back, minus the push. `spin_lock` is timed with its
//!   `spin_unlock` on an uncontended lock in an array value whose map carries a minimal BTF
//!   (`programs/btf.rs`), the pair charged at the lock. A probe program checks each
//!   helper's result before timing.
//! * **Maps.** Every type of [`linerate_cost::item::COSTED_MAP_TYPES`], value size 16; hash types
//!   at key sizes 4, 8, 16, 32, 64 and LPM tries at 8 and 20 (IPv4 and IPv6 keys), populated with
//!   1024 entries (prefixes for tries); units cycle over 16 keys held in global data. Lookups hit
//!   (tries: full-length addresses inside stored prefixes). Updates are priced as the larger of an
//!   overwrite of an existing key (measured) and an insert of a new key, bounded by an
//!   insert+delete pair of a fresh key minus a lookup; deletes are that pair minus a lookup (the
//!   insert and the delete each do at least a lookup's work, so both bounds are from above). The
//!   pair is timed in the populated map and in an empty twin, and the dearer taken: an empty LRU
//!   map's pair costs over twice a populated one's. Arrays
//!   refuse deletes with `-EINVAL`, which is what their delete price measures. Probes check that
//!   every lookup hits and every update and delete succeeds. Device maps
//!   ([`linerate_cost::item::LOOKUP_ONLY_MAP_TYPES`]: devmap, devmap_hash, xskmap) are only
//!   looked up (the verifier allows programs nothing else but `redirect_map` on them), key size
//!   4, 1024 entries holding ifindex 1 (lo); an AF_XDP socket map stays empty (its slots hold
//!   sockets, which calibration does not open), which its lookup does not notice: the verifier
//!   inlines it as a bounds check and one load of the slot.
//! * **Calls.** `call.local` is a call of `r0 = 0; exit` including its return; `exit` is priced 0
//!   (a callee's return is in `call.local`, the program's own in `per_packet`). `tail_call` is the
//!   slower of a direct (constant slot) and an indirect (slot from `ctx->rx_queue_index`) tail
//!   call, each timed as a program tail-calling itself 33 times per packet against the same
//!   program with an empty slot.
//! * **Per packet.** `per_packet` is the test-run time of `r0 = XDP_PASS; exit` (through the XDP
//!   dispatcher, as drivers call programs): the fixed cost of running a program in this harness,
//!   a lower bound of a driver's per-packet work. Being an absolute figure, not a difference
//!   against a baseline timed alongside, it bears contention in full; the contention factor
//!   covers it as it covers every other price.
//! * **Noise and contention.** All programs are loaded and checked first; then every program
//!   runs [`Options::runs_per_sample`] times in each of [`Options::rounds`] rounds (groups in
//!   rotating order, baselines before and after their group), each run taking about
//!   [`Options::call_ns`]. Runs execute on CPU 0 (the kernel crate pins them). On a shared host
//!   the same program runs at different speeds from moment to moment: front-end-bound code
//!   (jumps, stores, loop overhead) up to 2.5 times slower while another tenant keeps the sibling
//!   hyperthread busy, and everything with the clock boost (on the 2-core EPYC guest an empty
//!   program's run took 29–39 ns over 40 s). Which speeds a calibration window catches moves
//!   from window to window, its fastest runs do not: the 5th percentile of all runs of the bench
//!   and of its baseline ([`FAST_QUANTILE`]) is the item's uncontended figure, kept as its `ns`
//!   (two first-use calibrations there: median item 0.7% apart, 95th percentile 2.6%). A
//!   guarantee must hold in the slow moments too, so the price is that figure times the
//!   *contention factor* of the item's family ([`contention_family`]: jumps by outcome, map
//!   operations by operation, ALU, loads, stores, helpers, ...), kept as its `contention`: the
//!   median over the family's benches of their 90th-percentile run ([`SLOW_QUANTILE`]) over
//!   their 5th-percentile one (1.2–1.4 for most families there, 1.2–2.6 for jumps, whose front
//!   end the sibling hyperthread shares). On the examples' measured paths there, uncontended
//!   prices over-estimated 80 of 199 paths by more than 3% (up to 22.5%); one factor for all
//!   items none, the median path 27% under; family factors none, the median 16.5% under, which
//!   is what ships. `per_packet`, an absolute figure, carries its own factor. `spread` is
//!   `(max − min) / median` of the per-round figures (each round's fastest run; relative to
//!   0.1 ns for items cheaper than that), so it shows how much contention there was.
//! * **Units.** One component `cycles`: cycles of one core (XDP processes a receive queue on one
//!   core, and the model is per core), with capacity the clock implied by a chain of dependent
//!   1-cycle 64-bit adds in the same run (the guest's `/proc/cpuinfo` shows the nominal clock, not
//!   the boost clock the core runs at; both are recorded). Each item's price is its uncontended
//!   ns × its contention factor × that clock. Cycles are what repeats between calibrations: the
//!   boost clock moves by a few percent from run to run and moves every ns figure with it.
//!
//! With [`Options::only`], only items whose keys start with one of the prefixes are measured (with
//! what they subtract); the others are copied from the built-in x86 model so the result is still a
//! complete model.

mod asm;
pub mod cache;
pub mod check;
pub mod fingerprint;
mod fit;
mod measure;
mod programs;

use std::collections::BTreeMap;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use linerate_cost::model::{
    Component, CostMap, Device, ItemPrice, Limits, ModelFile, FORMAT, VERSION,
};
use linerate_cost::{Model, ModelError};

pub use fit::{contention_family, FAST_QUANTILE, SLOW_QUANTILE, SPREAD_FLOOR_NS};

/// The cost component calibrated models use.
pub const COMPONENT: &str = "cycles";

/// How thoroughly to calibrate.
#[derive(Clone, Debug)]
pub struct Options {
    /// Rounds; every program runs [`Options::runs_per_sample`] times per round.
    pub rounds: usize,
    /// Test runs per program and round (half as many for plain programs, whose runs wait for the
    /// XDP dispatcher).
    pub runs_per_sample: usize,
    /// Target duration of one test run, ns.
    pub call_ns: u64,
    /// Measure only items whose keys start with one of these prefixes (empty: all); the rest is
    /// copied from the built-in x86 model.
    pub only: Vec<String>,
    /// Switch on IPv4 forwarding on `lo` while `bpf_fib_lookup` is timed (and restore it), so the
    /// helper does a full lookup instead of returning early.
    pub enable_forwarding: bool,
}

impl Options {
    /// The full calibration (under a minute on a 2-CPU EPYC guest).
    pub fn full() -> Options {
        Options {
            rounds: 40,
            runs_per_sample: 4,
            call_ns: 250_000,
            only: Vec::new(),
            enable_forwarding: true,
        }
    }

    /// The calibration a command runs when this host has no cached model: half the full rounds,
    /// about 25 s here.
    pub fn first_use() -> Options {
        Options {
            rounds: 20,
            ..Options::full()
        }
    }

    /// A fast, rougher calibration for tests.
    pub fn quick() -> Options {
        Options {
            rounds: 3,
            runs_per_sample: 2,
            call_ns: 300_000,
            ..Options::full()
        }
    }
}

impl Default for Options {
    fn default() -> Options {
        Options::full()
    }
}

/// What a calibration reports while it runs.
pub enum Progress<'a> {
    /// Something the user should know (a sysctl switched for some runs, a wait).
    Note(&'a str),
    /// Step `done` of about `total` finished (loading a group of programs, a round of timing).
    Step {
        done: usize,
        total: usize,
        what: &'a str,
    },
}

impl std::fmt::Display for Progress<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Progress::Note(line) => write!(f, "note: {line}"),
            Progress::Step { what, .. } => f.write_str(what),
        }
    }
}

/// Why calibration failed.
#[derive(Debug, thiserror::Error)]
pub enum CalibrateError {
    /// This process cannot use BPF.
    #[error("{0}")]
    Unavailable(String),
    /// A kernel operation failed.
    #[error("{context}: {source}")]
    Kernel {
        context: String,
        source: linerate_kernel::KernelError,
    },
    /// A benchmark does not behave as designed on this kernel.
    #[error("{what}: {message}")]
    Check { what: String, message: String },
    /// `--only` selected nothing.
    #[error("no item key starts with `{0}` (see `cargo run -p linerate-cost --example items`)")]
    NoMatch(String),
    /// The result (or the built-in model completing a partial run) is not a valid model.
    #[error(transparent)]
    Model(#[from] ModelError),
}

impl CalibrateError {
    /// The verifier log when a benchmark program was refused.
    pub fn verifier_log(&self) -> Option<&str> {
        match self {
            CalibrateError::Kernel { source, .. } => source.verifier_log(),
            _ => None,
        }
    }
}

/// The machine the figures belong to.
#[derive(Clone, Debug, PartialEq)]
pub struct Host {
    /// `model name` of CPU 0 in `/proc/cpuinfo`.
    pub cpu_model: Option<String>,
    /// `cpu MHz` of CPU 0 in `/proc/cpuinfo`, in Hz.
    pub frequency_hz: Option<f64>,
    /// `/proc/sys/kernel/osrelease`.
    pub kernel: Option<String>,
    /// Online CPUs.
    pub cpus: usize,
    /// When calibration ran, `YYYY-MM-DD HH:MM UTC`.
    pub date: String,
}

impl Host {
    /// Reads this host's description.
    pub fn current() -> Host {
        let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
        let field = |name: &str| fingerprint::cpu0_field(&cpuinfo, name);
        Host {
            cpu_model: field("model name"),
            frequency_hz: field("cpu MHz")
                .and_then(|m| m.parse::<f64>().ok())
                .map(|mhz| mhz * 1e6),
            kernel: std::fs::read_to_string("/proc/sys/kernel/osrelease")
                .ok()
                .map(|s| s.trim().to_string()),
            cpus: std::thread::available_parallelism().map_or(1, |n| n.get()),
            date: utc_now(),
        }
    }
}

/// Seconds since the Unix epoch now.
pub fn unix_now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

fn utc_now() -> String {
    utc_date(unix_now())
}

/// `secs` since the Unix epoch as `YYYY-MM-DD HH:MM UTC`.
pub fn utc_date(secs: u64) -> String {
    let secs = secs as i64;
    let (days, rem) = (secs.div_euclid(86_400), secs.rem_euclid(86_400));
    // Civil date from days since 1970-01-01 (H. Hinnant's algorithm).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02} {:02}:{:02} UTC",
        rem / 3600,
        rem % 3600 / 60
    )
}

/// How an item's price was obtained in this run.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum How {
    /// Measured by its own benchmark.
    Measured,
    /// Computed from several benchmarks (maximum, pair minus lookup, ...), or zero by
    /// construction.
    Derived,
    /// Shares another item's price.
    SameAs(String),
    /// Not selected by `only`: copied from the built-in model.
    Copied,
}

/// One item of the result.
#[derive(Clone, Debug)]
pub struct ItemResult {
    /// Item key.
    pub item: String,
    /// Price in ns (resolved through `same_as`); `None` for items the model marks unsupported.
    pub ns: Option<f64>,
    /// Price in core cycles.
    pub cycles: Option<f64>,
    /// Relative spread of the per-round figures.
    pub spread: Option<f64>,
    pub how: How,
}

/// A finished calibration.
#[derive(Clone, Debug)]
pub struct Calibration {
    /// The model (valid: [`Model::new`] accepts it).
    pub model: ModelFile,
    /// Every item of the model, by key.
    pub items: Vec<ItemResult>,
    /// `per_packet`, ns.
    pub per_packet_ns: f64,
    /// The contention factor of `per_packet`.
    pub per_packet_contention: f64,
    /// The contention factor of each family of benches ([`contention_family`]): how much
    /// slower than uncontended this host ran the median bench of the family a tenth of the time.
    pub contention: BTreeMap<String, f64>,
    /// Spread of `per_packet`.
    pub per_packet_spread: f64,
    pub host: Host,
    /// Programs loaded and run.
    pub programs: usize,
    /// Wall-clock time of the calibration.
    pub elapsed: Duration,
    /// Items measured (including derived ones) in this run.
    pub measured: usize,
}

fn round_to(x: f64, decimals: i32) -> f64 {
    let f = 10f64.powi(decimals);
    (x * f).round() / f
}

/// Runs a calibration, telling `progress` how far it is.
pub fn calibrate(
    opts: &Options,
    progress: &mut dyn FnMut(&Progress),
) -> Result<Calibration, CalibrateError> {
    let started = Instant::now();
    let plan = fit::plan();
    for prefix in &opts.only {
        if !plan.iter().any(|(k, _)| k.starts_with(prefix.as_str())) {
            return Err(CalibrateError::NoMatch(prefix.clone()));
        }
    }
    linerate_kernel::check_access().map_err(|e| CalibrateError::Unavailable(e.to_string()))?;
    let selected: Vec<&(String, fit::Pricing)> = plan
        .iter()
        .filter(|(k, _)| {
            opts.only.is_empty() || opts.only.iter().any(|p| k.starts_with(p.as_str()))
        })
        .collect();
    let base = if opts.only.is_empty() {
        None
    } else {
        Some(Model::builtin_file("x86")?)
    };

    let suite = programs::suite();
    let needed = fit::needed_benches(&suite, &selected);
    let samples = measure::measure(&suite, &needed, opts, progress)?;
    let fits = fit::fit_benches(&suite, &needed, &samples)?;
    let contention = fit::contention_factors(&suite, &samples);
    let factor = |key: &str| {
        contention
            .get(&fit::contention_family(key))
            .or_else(|| contention.get(""))
            .copied()
            .unwrap_or(1.0)
    };
    let host = Host::current();
    // Cycles are counted at the clock the 1-cycle add chain ran at (the guest's cpuinfo figure is
    // the nominal clock, not the boost clock the core actually runs); cpuinfo when unmeasured.
    let add = fits
        .get(fit::CLOCK_BENCH)
        .map(|f| f.fitted.ns)
        .filter(|a| *a > 0.0);
    let frequency_hz = add
        .map(|a| (1e3 / a).round() * 1e6)
        .or(host.frequency_hz)
        .ok_or_else(|| CalibrateError::Check {
            what: "clock".into(),
            message: "neither the add chain nor /proc/cpuinfo gives the CPU clock".into(),
        })?;
    let ghz = frequency_hz / 1e9;

    let mut items: BTreeMap<String, ItemPrice> =
        base.as_ref().map(|b| b.items.clone()).unwrap_or_default();
    let mut how: BTreeMap<String, How> = items.keys().map(|k| (k.clone(), How::Copied)).collect();
    for (key, pricing) in &selected {
        let priced = fit::price(pricing, &fits)?;
        let entry = match priced {
            fit::Priced::Cost { fitted, mut note } => {
                if key == "helper.fib_lookup" {
                    note.push_str(&fib_note(&samples));
                }
                let ns = round_to(fitted.ns, 3);
                how.insert(
                    key.clone(),
                    if pricing.is_direct() {
                        How::Measured
                    } else {
                        How::Derived
                    },
                );
                let contended = round_to(factor(key), 4);
                ItemPrice {
                    cost: Some(CostMap::from([(
                        COMPONENT.to_string(),
                        round_to(fitted.ns * contended * ghz, 3),
                    )])),
                    ns: Some(ns),
                    contention: Some(contended),
                    spread: (!fitted.rounds.is_empty()).then(|| round_to(fitted.spread, 4)),
                    note: Some(note),
                    ..Default::default()
                }
            }
            fit::Priced::SameAs { target, note } => {
                how.insert(key.clone(), How::SameAs(target.clone()));
                ItemPrice {
                    same_as: Some(target),
                    note: Some(note),
                    ..Default::default()
                }
            }
        };
        items.insert(key.clone(), entry);
    }
    let per_packet = &fits
        .get("per_packet")
        .ok_or_else(|| CalibrateError::Check {
            what: "per_packet".into(),
            message: "not measured".into(),
        })?
        .fitted;

    let mut source = format!(
        "Measured on this host by `linerate calibrate` on {}: Linux {}, {} ({} MHz nominal per \
         /proc/cpuinfo), {} CPUs, runs pinned to CPU 0. Method: per item an XDP program looping \
         over N copies of a unit containing the item, timed with BPF_PROG_TEST_RUN against a \
         baseline with the same loop and setup; (t - t_baseline) / N minus the unit's other \
         instructions at their own fitted prices; independent operations for ALU ops and loads, back to \
         back for the rest (see each note and crates/calibrate/src/lib.rs). {} rounds of {} \
         runs of ~{:.2} ms per program; price = the 5th percentile of all runs (the uncontended \
         figure, kept as `ns`) times the contention factor of the item's family (kept as \
         `contention`: the median over the family's benches of their 90th-percentile run over \
         their 5th-percentile run, how much slower this shared host runs them a tenth of the \
         time; {:.3} over all benches), spread = (max - min) / median of the per-round \
         figures.",
        host.date,
        host.kernel.as_deref().unwrap_or("(unknown release)"),
        host.cpu_model.as_deref().unwrap_or("unknown CPU"),
        host.frequency_hz
            .map_or("unknown".to_string(), |f| format!("{:.0}", f / 1e6)),
        host.cpus,
        opts.rounds,
        opts.runs_per_sample,
        opts.call_ns as f64 / 1e6,
        contention.get("").copied().unwrap_or(1.0),
    );
    source.push_str(&format!(
        " Costs are in cycles, ns x {:.0} MHz: {}; cycles do not change with the boost clock \
         between runs.",
        frequency_hz / 1e6,
        match add {
            Some(add) => format!(
                "the clock implied by a chain of dependent 1-cycle 64-bit adds ({add:.4} ns per add)"
            ),
            None => "the /proc/cpuinfo clock (the add chain was not measured)".into(),
        }
    ));
    if let Some(b) = &base {
        source.push_str(&format!(
            " Only items starting with {} were measured; the others are copied from the built-in \
             model ({}).",
            opts.only
                .iter()
                .map(|p| format!("`{p}`"))
                .collect::<Vec<_>>()
                .join(", "),
            b.source
        ));
    }
    let model = ModelFile {
        format: FORMAT.into(),
        version: VERSION,
        target: "x86".into(),
        description: "This host's XDP program costs (x86-64, Linux BPF JIT), one core, measured \
                      through BPF_PROG_TEST_RUN by `linerate calibrate`"
            .into(),
        source,
        device: Device {
            name: "this host (x86-64 XDP, BPF JIT)".into(),
            cpu_model: host.cpu_model.clone(),
            frequency_hz: Some(frequency_hz),
            cores: 1,
            kernel: host.kernel.clone(),
            fingerprint: Some(fingerprint::current()),
            calibrated_unix: Some(unix_now()),
        },
        components: vec![Component {
            name: COMPONENT.into(),
            unit: "cycles".into(),
            capacity_per_s: frequency_hz,
            note: Some(
                "cycles of one core at the measured clock: XDP runs each receive queue's packets \
                 on one core, so the model's rate is per core (queue); multiply by the cores \
                 serving queues for a whole-host figure"
                    .into(),
            ),
        }],
        limits: Limits {
            max_packet_rate_pps: None,
            line_rate_bps: None,
            min_frame_bytes: 60,
            wire_overhead_bytes: 24,
            note: Some(
                "no NIC was measured: no line-rate or MAC packet-rate limit; Ethernet minimum \
                 frame 60 bytes without CRC, 24 bytes of CRC, preamble and gap per frame"
                    .into(),
            ),
        },
        per_packet: CostMap::from([(
            COMPONENT.to_string(),
            round_to(per_packet.ns * factor("per_packet") * ghz, 3),
        )]),
        gaps: Vec::new(),
        items,
    };
    Model::new(model.clone(), "the calibration result")?;

    let results = model
        .items
        .iter()
        .map(|(key, price)| {
            let cycles = resolve(&model, key);
            ItemResult {
                item: key.clone(),
                ns: cycles.map(|c| round_to(c / ghz, 3)),
                cycles,
                spread: price.spread,
                how: how.get(key).cloned().unwrap_or(How::Copied),
            }
        })
        .collect();
    Ok(Calibration {
        per_packet_ns: round_to(per_packet.ns, 3),
        per_packet_contention: round_to(factor("per_packet"), 4),
        contention: contention
            .iter()
            .filter(|(family, _)| !family.is_empty())
            .map(|(family, f)| (family.clone(), round_to(*f, 4)))
            .collect(),
        per_packet_spread: round_to(per_packet.spread, 4),
        items: results,
        host,
        programs: samples.programs,
        elapsed: started.elapsed(),
        measured: selected.len(),
        model,
    })
}

/// The resolved price of `key` in cycles, `None` when unsupported.
pub(crate) fn resolve(file: &ModelFile, key: &str) -> Option<f64> {
    let mut entry = file.items.get(key)?;
    for _ in 0..file.items.len() {
        if let Some(cost) = &entry.cost {
            return Some(cost.get(COMPONENT).copied().unwrap_or(0.0));
        }
        entry = file.items.get(entry.same_as.as_deref()?)?;
    }
    None
}

fn fib_note(samples: &measure::Samples) -> String {
    let code = samples.probes.get("helper.fib_lookup").copied();
    let name = match code {
        Some(0) => "BPF_FIB_LKUP_RET_SUCCESS: route, neighbour and MACs found",
        Some(4) => "BPF_FIB_LKUP_RET_NOT_FWDED",
        Some(5) => "BPF_FIB_LKUP_RET_FWD_DISABLED: returned before the lookup",
        Some(7) => "BPF_FIB_LKUP_RET_NO_NEIGH: no neighbour entry for the gateway",
        Some(_) => "see BPF_FIB_LKUP_RET_*",
        None => "not probed",
    };
    let mut note = format!(
        "; destination {}, result code {} ({name})",
        programs::FIB_DST.map(|b| b.to_string()).join("."),
        code.map_or("?".into(), |c| (c as i32).to_string())
    );
    if let Err(why) = &samples.forwarding {
        note.push_str(&format!("; IPv4 forwarding on lo: {why}"));
    } else {
        note.push_str("; IPv4 forwarding on lo was on for these runs");
    }
    note
}
