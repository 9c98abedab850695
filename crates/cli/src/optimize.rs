//! `linerate optimize`: a smaller or faster program that does the same, written as a drop-in
//! object. The search is `linerate_optimize`; the object writer `linerate_bpf::rewrite`; this
//! is the command line: choosing the goal, the final checks in the interpreter and the kernel
//! with fallback to fewer rewrites, the measurements before and after, and the report.

use std::collections::HashSet;
use std::fmt::Write as _;
use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::{anyhow, bail, Context, Result};
use clap::{Args, ValueEnum};
use linerate_bound::enumerate::Metric;
use linerate_bpf::contents::{MapMode, MapSeed};
use linerate_bpf::disasm::{format_instruction, NoNames};
use linerate_bpf::rewrite::{pinned_slots, rewrite_object, Replacement};
use linerate_bpf::Object;
use linerate_cfg::Cfg;
use linerate_cost::trace::run_cost;
use linerate_cost::{Model, ProgramCost};
use linerate_optimize::goal::{Latency, Size};
use linerate_optimize::pipeline::{checked, entry_len, Passed, Proof, TestInputs};
use linerate_optimize::prove::Z3Prover;
use linerate_optimize::rules::Library;
use linerate_optimize::verify::{in_kernel, in_vm};
use linerate_optimize::{
    packets, run_passes, timing, Executions, PassOptions, Performance, Prover, Rewrite,
};
use linerate_smt::EquivalenceOptions;
use linerate_vm::drive::run_packets;
use linerate_vm::VmOptions;
use serde_json::{json, Value};

use crate::output::emit;

/// What the search minimises.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Goal {
    /// Instruction count.
    Size,
    /// The cost model's per-instruction prices along the executed paths.
    Latency,
    /// The cost of the slowest satisfiable path (`linerate bound`) under --target.
    WorstCase,
}

impl Goal {
    /// The goal as `--goal` spells it.
    fn name(self) -> String {
        self.to_possible_value()
            .map_or_else(|| format!("{self:?}"), |v| v.get_name().to_string())
    }
}

#[derive(Args)]
pub struct OptimizeArgs {
    #[command(flatten)]
    pub input: crate::args::ObjectArgs,
    /// Where to write the optimized object (never the input).
    #[arg(short, long, value_name = "PATH")]
    pub output: PathBuf,
    /// Program to optimize (function or section name); default: the first XDP program.
    #[arg(long)]
    pub prog: Option<String>,
    #[arg(long, value_enum, default_value_t = Goal::Size)]
    pub goal: Goal,
    /// Seconds of search (the final checks and measurements come on top).
    #[arg(long, default_value = "60s", value_name = "SECONDS")]
    pub budget: String,
    /// Seed of the search's random choices. With --rounds, the same seed gives the same output
    /// whatever the machine's speed; with the budget alone, how far the search gets depends on it.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Rounds of search per pass (each chain takes 2,000 steps a round), instead of searching
    /// until the budget is spent (the budget still caps the time).
    #[arg(long, value_name = "N")]
    pub rounds: Option<u64>,
    /// Search passes, each cutting the program into windows at other places.
    #[arg(long, default_value_t = 3)]
    pub passes: usize,
    /// Apply the rule library only, no search.
    #[arg(long)]
    pub rules_only: bool,
    /// Search windows only, never the whole program (a small program is otherwise searched
    /// whole with the last third of the budget).
    #[arg(long)]
    pub no_whole: bool,
    /// A rule file instead of the shipped library.
    #[arg(long, value_name = "PATH", conflicts_with = "no_rules")]
    pub rules: Option<PathBuf>,
    /// Use no rule library.
    #[arg(long)]
    pub no_rules: bool,
    /// Packets (the `run --packets` format) to add to the differential test and to time.
    #[arg(long, value_name = "PATH")]
    pub packets: Option<PathBuf>,
    /// Map contents (the `run --maps` JSON) for the differential test and timing.
    #[arg(long, value_name = "PATH")]
    pub maps: Option<PathBuf>,
    /// Generated packets in the differential test (crafted frames and random bytes).
    #[arg(long, default_value_t = 10_000, value_name = "N")]
    pub differential_packets: usize,
    /// Witnesses of the N slowest satisfiable paths (`linerate bound`) in the differential test.
    #[arg(long, default_value_t = 10, value_name = "N")]
    pub witnesses: usize,
    /// Seconds `bound` may take for each worst-case figure.
    #[arg(long, default_value_t = 20.0, value_name = "SECONDS")]
    pub bound_timeout: f64,
    /// Trials of the latency measurement (each runs every timed packet `--repeat` times).
    #[arg(long, default_value_t = 21)]
    pub trials: usize,
    #[arg(long, default_value_t = 1000)]
    pub repeat: u32,
    /// Skip the measurements (latency and worst-case throughput before and after).
    #[arg(long)]
    pub no_measure: bool,
    /// Seconds the whole-program equivalence check of the result may take (Z3, every input);
    /// beyond it the result rests on the differential test alone.
    #[arg(long, default_value = "30s", value_name = "SECONDS")]
    pub prove_timeout: String,
    /// Skip the whole-program equivalence check of the result.
    #[arg(long)]
    pub no_prove: bool,
    #[command(flatten)]
    pub device: crate::args::ModelArgs,
    /// Show each rewrite as a diff of instructions.
    #[arg(long)]
    pub explain: bool,
    /// Machine-readable output.
    #[arg(long)]
    pub json: bool,
}

/// The whole-program equivalence verdict in `--json`.
fn proof_json(proof: &Proof) -> Value {
    let (pairs, reason, seconds) = match proof {
        Proof::Equivalent { pairs, seconds } => (Some(*pairs), None, Some(*seconds)),
        Proof::Unknown { reason, seconds } => (None, Some(reason.as_str()), Some(*seconds)),
        Proof::Unchanged | Proof::Skipped => (None, None, None),
    };
    json!({"verdict": proof.verdict(), "path_pairs": pairs, "reason": reason, "seconds": seconds})
}

/// The whole-program equivalence verdict in the text summary.
fn proof_text(proof: &Proof) -> String {
    match proof {
        Proof::Unchanged => "nothing to prove: the program is unchanged".into(),
        Proof::Skipped => "not asked for (--no-prove): the differential test stands alone".into(),
        Proof::Equivalent { pairs, seconds } => format!(
            "equivalent to the input on every input (Z3, {pairs} pairs of paths, {seconds:.1} s)"
        ),
        Proof::Unknown { reason, seconds } => {
            format!("undecided after {seconds:.1} s ({reason}): the differential test stands alone")
        }
    }
}

/// A duration given as `60`, `60s`, `2m` or `500ms`.
pub fn parse_duration(text: &str) -> Result<Duration> {
    let t = text.trim();
    let (number, scale) = if let Some(n) = t.strip_suffix("ms") {
        (n, 0.001)
    } else if let Some(n) = t.strip_suffix('s') {
        (n, 1.0)
    } else if let Some(n) = t.strip_suffix('m') {
        (n, 60.0)
    } else {
        (t, 1.0)
    };
    let v: f64 = number
        .trim()
        .parse()
        .map_err(|_| anyhow!("`{text}` is not a duration (60, 60s, 2m, 500ms)"))?;
    Duration::try_from_secs_f64(v * scale).map_err(|_| anyhow!("`{text}` is not a duration"))
}

fn timed_packets(inputs: &TestInputs, given: usize) -> Vec<Vec<u8>> {
    // The given packets when there are some, else a sample of the generated ones. Each timed
    // call costs the kernel a fixed ~16 ms here (a repeated XDP test run swaps the program into
    // the XDP dispatcher and out again: net/bpf/test_run.c, `bpf_prog_change_xdp`), so the
    // number of packets, not `--repeat`, sets the time a trial takes.
    let n = if given > 0 { given } else { 16 };
    inputs.packets.iter().take(n).cloned().collect()
}

/// What `bound` says of a program.
#[derive(Default)]
struct WorstCase {
    /// The SSP's rate, packets/s.
    rate: Option<f64>,
    complete: bool,
    /// Witnesses of the slowest paths with their maps (those a kernel run can repeat).
    witnesses: Vec<(Vec<u8>, MapSeed)>,
    /// First slots of the blocks of the slowest path.
    hot: HashSet<usize>,
    /// Why `bound` gave no answer (a loop it cannot bound, ...), if it did not.
    unavailable: Option<String>,
}

/// [`worst_case_of`], a refusal of `bound` kept as the reason the worst case is unknown.
fn worst_case(
    object: &Object,
    program: usize,
    model: &Model,
    paths: usize,
    timeout: f64,
) -> WorstCase {
    worst_case_of(object, program, model, paths, timeout).unwrap_or_else(|e| WorstCase {
        unavailable: Some(e.to_string()),
        ..WorstCase::default()
    })
}

/// The worst-case throughput of program `program`, its witnesses and its slowest path.
fn worst_case_of(
    object: &Object,
    program: usize,
    model: &Model,
    paths: usize,
    timeout: f64,
) -> Result<WorstCase> {
    let args = crate::args::SearchArgs::with_timeout(timeout);
    let (_, result) = args.search(
        Path::new(&object.name),
        object,
        program,
        model,
        None,
        Metric::PacketRate,
        paths.max(1),
        false,
        |_| {},
    )?;
    let found = &result.outcome.found;
    let rate = found.first().map(|f| f.path.rate);
    let witnesses = found
        .iter()
        .filter_map(|f| f.witness.as_ref().ok())
        .filter(|w| w.unrepeatable.is_empty())
        .map(|w| (w.packet.clone(), w.maps.clone()))
        .collect();
    let hot = found
        .first()
        .and_then(|f| f.witness.as_ref().ok())
        .map(|w| {
            w.blocks
                .iter()
                .filter(|b| b.program == program)
                .map(|b| b.slot)
                .collect()
        })
        .unwrap_or_default();
    Ok(WorstCase {
        rate,
        complete: result.outcome.complete,
        witnesses,
        hot,
        unavailable: None,
    })
}

/// The model's estimate in nanoseconds per packet, averaged over `packets` run in the
/// interpreter (runs priced as executed, as `linerate cost --packets` prices them).
fn estimated_ns(
    object: &Object,
    program: usize,
    model: &Model,
    seed: &MapSeed,
    packets: &[Vec<u8>],
) -> Result<f64> {
    let cfg = Cfg::build(&object.programs[program])?;
    let cost = ProgramCost::for_runs(object, &cfg, model)?;
    let options = VmOptions {
        record_steps: true,
        ..VmOptions::default()
    };
    let runs = run_packets(
        object,
        seed,
        options,
        MapMode::Persist,
        program,
        packets,
        &[],
    )?;
    let capacity = model.components().first().map_or(1.0, |c| c.capacity_per_s);
    let mut total = 0.0;
    let mut n = 0usize;
    for run in &runs.outcomes {
        let steps = run.steps.iter().map(|s| (s.program, s.slot));
        if let Some(Ok(c)) = run_cost(&cost, &cfg, model, steps) {
            total += c.0.first().copied().unwrap_or(0.0);
            n += 1;
        }
    }
    Ok(total / n.max(1) as f64 / capacity * 1e9)
}

/// One instruction as llvm-objdump prints it (windows hold no map references).
fn text(insn: &linerate_bpf::insn::Instruction) -> String {
    format_instruction(insn, &NoNames)
}

fn read_input_bytes(path: &Path) -> Result<Vec<u8>> {
    let bytes = std::fs::read(path).with_context(|| format!("cannot read {}", path.display()))?;
    if !bytes.starts_with(b"\x7fELF") {
        bail!(
            "{}: optimize writes ELF objects and needs one as input (this looks like objdump text)",
            path.display()
        );
    }
    Ok(bytes)
}

pub fn optimize(args: &OptimizeArgs) -> Result<()> {
    let started = Instant::now();
    let budget = parse_duration(&args.budget).context("--budget")?;
    let prove_with = (!args.no_prove)
        .then(|| -> Result<EquivalenceOptions> {
            Ok(EquivalenceOptions {
                total: Some(parse_duration(&args.prove_timeout).context("--prove-timeout")?),
                ..EquivalenceOptions::default()
            })
        })
        .transpose()?;
    let input_bytes = read_input_bytes(&args.input.object)?;
    if std::fs::canonicalize(&args.output).ok() == std::fs::canonicalize(&args.input.object).ok() {
        bail!(
            "{}: the output must not be the input",
            args.output.display()
        );
    }
    let object = args.input.load()?;
    let program = crate::select_program(&object, args.prog.as_deref())?;
    object.programs[program].require_xdp("optimize", "optimizes XDP programs")?;
    linerate_kernel::check_access().context("optimize checks every output in the kernel")?;
    let device = args.device.load(args.json)?;
    let model = &device.model;
    let name = object.programs[program].name.clone();
    let pinned = pinned_slots(&input_bytes, &name)
        .map_err(|e| anyhow!("{}: {e}", args.input.object.display()))?;
    let library = match (&args.rules, args.no_rules) {
        (_, true) => Library::new(),
        (Some(path), _) => {
            let text = std::fs::read_to_string(path)
                .with_context(|| format!("cannot read {}", path.display()))?;
            Library::parse(&text, &path.display().to_string())?
        }
        (None, _) => Library::shipped()?,
    };
    let rules = library.compile("rules")?;
    let seed = match &args.maps {
        Some(path) => linerate_io::read_maps_file(path, &object)?,
        None => MapSeed::new(),
    };
    let given = match &args.packets {
        Some(path) => linerate_io::read_packets_file(path)?,
        None => Vec::new(),
    };
    let show_progress = !args.json && std::io::stderr().is_terminal();
    let measure = !args.no_measure;
    let before = if measure || args.goal == Goal::WorstCase {
        if show_progress {
            eprint!("\roptimize: bounding the worst case of the input...");
        }
        worst_case(&object, program, model, args.witnesses, args.bound_timeout)
    } else {
        WorstCase::default()
    };
    let wc_unavailable = before.unavailable.clone();
    let (wc_before, wc_complete_before, hot) = (before.rate, before.complete, before.hot);
    // Witnesses the engines cannot run as they are (a path that needs a route table or a device
    // the interpreter is not given) are left out of the differential test.
    let witnesses: Vec<(Vec<u8>, MapSeed)> = before
        .witnesses
        .into_iter()
        .filter(|(p, s)| {
            let one = std::slice::from_ref(p);
            in_vm(&object, &object, program, s, one).is_ok()
                && in_kernel(&object, &object, program, s, one).is_ok()
        })
        .collect();
    let mut packets_all = given.clone();
    packets_all.extend(packets::generate(args.differential_packets, args.seed));
    let inputs = TestInputs {
        packets: packets_all,
        witnesses,
    };

    let latency = Latency {
        model: model.clone(),
    };
    let perf: &dyn Performance = match args.goal {
        Goal::Size => &Size,
        Goal::Latency | Goal::WorstCase => &latency,
    };
    let prover = || Box::new(Z3Prover::new(2_000)) as Box<dyn Prover>;
    // The worst case counts the slowest path's windows (the others a hundredth as much); latency
    // counts a window as often as the packets run it (paper 002 §3.2's latency along the executed
    // paths), a window they never reach a hundredth of once.
    let goal = args.goal;
    let weight = |w: &linerate_optimize::Window| match goal {
        Goal::Size => 1.0,
        Goal::WorstCase if hot.contains(&w.block_first) => 1.0,
        Goal::WorstCase => 0.01,
        Goal::Latency => w.per_packet.unwrap_or(1.0).max(0.01),
    };
    let executions = Executions {
        seed: &seed,
        packets: &inputs.packets,
        witnesses: &inputs.witnesses,
    };
    let pass_options = PassOptions {
        passes: args.passes,
        budget,
        seed: args.seed,
        rounds: args.rounds,
        rules_only: args.rules_only,
        pinned: pinned.clone(),
        whole: !args.no_whole,
    };
    let unit = if args.goal == Goal::Size {
        "insns"
    } else {
        "cycles"
    };
    let mut report_progress = |pass: usize, p: linerate_optimize::Progress| {
        if show_progress {
            eprint!(
                "\r\x1b[2Koptimize: pass {}, {:.0}s of {:.0}s, {} candidates, best gain {:.1} {unit} this pass",
                pass + 1,
                p.elapsed.as_secs_f64(),
                budget.as_secs_f64(),
                p.candidates,
                p.gain,
            );
        }
    };
    let passes = run_passes(
        &object,
        program,
        &pass_options,
        Some(&executions),
        &rules,
        perf,
        &prover,
        &weight,
        &mut report_progress,
    )?;
    let (totals, windows_total, rounds, rules_applied) = (
        passes.stats,
        passes.windows,
        passes.rounds,
        passes.rules_applied,
    );
    let observed_tests = passes.observed_tests;
    let whole = passes.whole;
    let stages = passes.stages;
    let search_seconds = passes.elapsed.as_secs_f64().max(1e-9);
    if show_progress {
        eprint!(
            "\r\x1b[2Koptimize: checking the result in the interpreter and the kernel, and proving it..."
        );
    }
    let mut discarded = Vec::new();
    let Passed {
        object: optimized,
        slot_map,
        rewrites: kept,
        proof,
    } = checked(
        &object,
        program,
        stages,
        &seed,
        &inputs,
        prove_with.as_ref(),
        &mut discarded,
    )?;
    // Pinned slots go to the writer as the input had them: it re-derives what their new
    // position changes (a call's offset to a sub-program), from the relocations and layout.
    let mut entry_insns =
        optimized.programs[program].insns[..entry_len(&optimized, program)].to_vec();
    for &old in &pinned {
        if let (Some(Some(new)), Some(raw)) =
            (slot_map.get(old), object.programs[program].insns.get(old))
        {
            if let Some(slot) = entry_insns.get_mut(*new) {
                *slot = *raw;
            }
        }
    }
    let out_bytes = rewrite_object(
        &input_bytes,
        &[Replacement {
            program: &name,
            insns: &entry_insns,
            slot_map: &slot_map,
        }],
    )
    .map_err(|e| {
        anyhow!(
            "{}: writing the optimized object: {e}",
            args.output.display()
        )
    })?;
    // What is written must read back as the program that was checked.
    let target = crate::target_btf(args.input.btf.as_deref())?;
    let reread = linerate_io::parse_object_with(&out_bytes, &object.name, target.as_ref())
        .map_err(|e| anyhow!("the written object does not read back: {e}"))?;
    if reread.programs.get(program).map(|p| &p.insns) != Some(&optimized.programs[program].insns) {
        bail!("the written object's program differs from the checked one (an object-writer bug)");
    }
    linerate_io::write_atomically(&args.output, &out_bytes)?;

    let timed = timed_packets(&inputs, given.len());
    let est_before = estimated_ns(&object, program, model, &seed, &timed)?;
    let est_after = estimated_ns(&optimized, program, model, &seed, &timed)?;
    let (latency_cmp, wc_after) = if measure {
        if show_progress {
            eprint!("\r\x1b[2Koptimize: measuring before and after...");
        }
        let cmp = timing::compare(
            &object,
            &optimized,
            program,
            &seed,
            &timed,
            args.trials,
            args.repeat,
        )?;
        let after = worst_case(&optimized, program, model, 1, args.bound_timeout);
        (Some(cmp), Some((after.rate, after.complete)))
    } else {
        (None, None)
    };
    if show_progress {
        eprint!("\r\x1b[2K");
    }
    let insns_before = object.programs[program].insns.len();
    let insns_after = optimized.programs[program].insns.len();
    let kept: Vec<Rewrite> = kept.into_iter().flatten().collect();
    let rewrites_json: Vec<Value> = kept
        .iter()
        .map(|r| {
            json!({
                "slot": r.start,
                "before": r.original.iter().map(text).collect::<Vec<_>>(),
                "after": r.replacement.iter().flatten().map(text).collect::<Vec<_>>(),
            })
        })
        .collect();
    let stats = &totals;
    let seconds = search_seconds;
    if args.json {
        let mut v = json!({
            "program": name,
            "goal": args.goal.name(),
            "insns_before": insns_before,
            "insns_after": insns_after,
            "est_ns_before": est_before,
            "est_ns_after": est_after,
            "measured_ns_before": latency_cmp.map(|c| c.before_ns),
            "measured_ns_after": latency_cmp.map(|c| c.after_ns),
            "measured_ns_difference_ci95": latency_cmp.map(|c| [c.difference_ci.0, c.difference_ci.1]),
            "worst_case_pps_before": wc_before,
            "worst_case_pps_after": wc_after.and_then(|w| w.0),
            "worst_case_complete": wc_after.map(|w| w.1 && wc_complete_before),
            "worst_case_unavailable": wc_unavailable,
            "verifier": "accepted",
            "differential_packets": inputs.packets.len() + inputs.witnesses.len(),
            "equivalence": proof_json(&proof),
            "discarded": discarded.iter().map(|d| json!({
                "rewrites": d.rewrites,
                "reason": d.reason,
                "dropped_slot": d.dropped.as_ref().map(|r| r.start),
            })).collect::<Vec<_>>(),
            "rules_applied": rules_applied,
            "rewrites": rewrites_json,
            "search": {
                "windows": windows_total,
                "observed_tests": observed_tests,
                "rounds": rounds,
                "passes": pass_options.passes,
                "seconds": seconds,
                "candidates": stats.candidates,
                "candidates_per_s": stats.candidates as f64 / seconds,
                "equivalence_checks": stats.proofs_asked,
                "equivalence_checks_per_s": stats.proofs_asked as f64 / seconds,
                "cache_hits": stats.cache_hits,
                "cache_hit_rate": stats.cache_hits as f64 / (stats.cache_hits + stats.proofs_asked).max(1) as f64,
                "counterexamples": stats.counterexamples,
                "unknown": stats.unknown,
                "whole_program": whole,
            },
            "seconds": started.elapsed().as_secs_f64(),
        });
        device.annotate_json(&mut v);
        return emit(&(serde_json::to_string_pretty(&v)? + "\n"));
    }
    let mut out = String::new();
    let pct = |a: f64, b: f64| if a > 0.0 { 100.0 * (a - b) / a } else { 0.0 };
    writeln!(
        out,
        "{}: program {name} optimized for {} → {}",
        args.input.object.display(),
        args.goal.name(),
        args.output.display()
    )?;
    writeln!(
        out,
        "  instructions   {insns_before} → {insns_after} ({:.1}% fewer)",
        pct(insns_before as f64, insns_after as f64)
    )?;
    writeln!(
        out,
        "  estimated      {est_before:.1} → {est_after:.1} ns/packet on {}",
        model.target()
    )?;
    if let Some(c) = latency_cmp {
        writeln!(
            out,
            "  measured       {:.1} → {:.1} ns/packet (difference {:+.1} .. {:+.1} ns, 95% CI over {} trials)",
            c.before_ns, c.after_ns, c.difference_ci.0, c.difference_ci.1, c.trials
        )?;
    }
    if let (Some(b), Some((Some(a), _))) = (wc_before, wc_after) {
        writeln!(out, "  worst case     {:.3} → {:.3} Mpps", b / 1e6, a / 1e6)?;
    }
    if let Some(why) = &wc_unavailable {
        writeln!(out, "  worst case     unknown: {why}")?;
    }
    writeln!(
        out,
        "  checked        verifier accepted; identical on {} packets and {} path witnesses (interpreter and kernel)",
        inputs.packets.len(),
        inputs.witnesses.len()
    )?;
    writeln!(
        out,
        "  search         {} windows ({} tests from executions), {} rules applied, {} candidates ({:.0}/s), {} equivalence checks ({:.0}/s), cache hit rate {:.0}%, {} counterexamples",
        windows_total,
        observed_tests,
        rules_applied,
        stats.candidates,
        stats.candidates as f64 / seconds,
        stats.proofs_asked,
        stats.proofs_asked as f64 / seconds,
        100.0 * stats.cache_hits as f64 / (stats.cache_hits + stats.proofs_asked).max(1) as f64,
        stats.counterexamples
    )?;
    if let Some(w) = &whole {
        match &w.why {
            Some(why) => writeln!(out, "  whole program  not searched: {why}")?,
            None => writeln!(
                out,
                "  whole program  {} candidates, {} kernel loads ({} refused), {} equivalence checks ({} proven, {} counterexamples, {} unknown), {} → {} insns",
                w.candidates,
                w.kernel_loads,
                w.kernel_refused,
                w.proofs,
                w.proven,
                w.counterexamples,
                w.unknown,
                w.slots_before,
                w.slots_after
            )?,
        }
    }
    writeln!(out, "  proof          {}", proof_text(&proof))?;
    for d in &discarded {
        writeln!(
            out,
            "  discarded      a candidate with {} rewrites: {}",
            d.rewrites, d.reason
        )?;
        if let (true, Some(r)) = (args.explain, &d.dropped) {
            writeln!(
                out,
                "                 dropped the rewrite at insn {} (of its pass's input):",
                r.start
            )?;
            for i in &r.original {
                writeln!(out, "                   - {}", text(i))?;
            }
            for i in r.replacement.iter().flatten() {
                writeln!(out, "                   + {}", text(i))?;
            }
        }
    }
    if args.explain {
        for r in &kept {
            writeln!(out, "\n  rewrite at insn {}:", r.start)?;
            for i in &r.original {
                writeln!(out, "    - {}", text(i))?;
            }
            for i in r.replacement.iter().flatten() {
                writeln!(out, "    + {}", text(i))?;
            }
        }
    }
    emit(&device.annotate_text(out))
}
