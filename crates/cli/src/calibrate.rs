//! `linerate calibrate`: measure this host's XDP costs through the kernel (`BPF_PROG_TEST_RUN`)
//! and write an x86 cost model: into this host's cache, where `--target x86` finds it, or with
//! `-o` into a file. `--check` re-times a sample of items and says whether a model still fits.
//! The method is documented in `linerate_calibrate`.
//!
//! The model file is written atomically (a temporary file in the same directory, then a rename),
//! so a failed or interrupted calibration never leaves a partial file. Progress goes to stderr;
//! stdout gets the table of items (or `--json`).

use std::path::{Path, PathBuf};

use anyhow::{anyhow, bail, Context, Result};
use clap::Args;
use linerate_calibrate::{self as calibrate, cache, Calibration, How, Options};
use serde_json::{json, Value};

use crate::output::{emit, table};

#[derive(Args)]
pub struct CalibrateArgs {
    /// Target to calibrate: only `x86` (this host) can be measured.
    #[arg(long, default_value = "x86")]
    pub target: String,
    /// Where to write the model file (default: this host's cache, used by `--target x86`).
    #[arg(short = 'o', long = "output")]
    pub output: Option<PathBuf>,
    /// Re-time a sample of items and say whether the model (this host's cached one, or
    /// `--model`) still fits; exit status 2 when it does not.
    #[arg(long, conflicts_with_all = ["output", "quick", "rounds", "only"])]
    pub check: bool,
    /// With --check: the model file to check instead of this host's cached one.
    #[arg(long, requires = "check")]
    pub model: Option<PathBuf>,
    /// Fewer rounds and shorter runs: a rougher model in a fraction of the time.
    #[arg(long)]
    pub quick: bool,
    /// Rounds of timing (default 40, or 3 with --quick); every program runs 4 times per round
    /// (2 with --quick) and prices come from the fastest 5% of its runs.
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..=101))]
    pub rounds: Option<u32>,
    /// Measure only items whose keys start with PREFIX (repeatable); the other items are copied
    /// from the built-in x86 model.
    #[arg(long, value_name = "PREFIX")]
    pub only: Vec<String>,
    /// Leave IPv4 forwarding on `lo` as it is while timing bpf_fib_lookup (when off, the helper
    /// returns before looking anything up and its price is too low).
    #[arg(long)]
    pub no_sysctl: bool,
    /// Machine-readable output.
    #[arg(long)]
    pub json: bool,
}

pub fn calibrate(args: &CalibrateArgs) -> Result<()> {
    if args.target != "x86" {
        bail!(
            "cannot calibrate target `{}`: calibration measures this host, so only `--target x86` \
             is possible",
            args.target
        );
    }
    if args.check {
        return check(args);
    }
    let output = match &args.output {
        Some(path) => path.clone(),
        None => {
            let (dir, path) = cache::host_file(&calibrate::fingerprint::current())?;
            std::fs::create_dir_all(&dir)
                .with_context(|| format!("cannot create the model cache {}", dir.display()))?;
            path
        }
    };
    // Refuse an unwritable destination before spending a minute measuring.
    let dir = match output.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
        _ => PathBuf::from("."),
    };
    if !dir.is_dir() {
        bail!(
            "cannot write {}: directory {} does not exist",
            output.display(),
            dir.display()
        );
    }
    let mut opts = if args.quick {
        Options::quick()
    } else {
        Options::full()
    };
    if let Some(r) = args.rounds {
        opts.rounds = r as usize;
    }
    opts.only = args.only.clone();
    opts.enable_forwarding = !args.no_sysctl;

    let mut progress = |p: &calibrate::Progress| eprintln!("calibrate: {p}");
    let result = calibrate::calibrate(&opts, &mut progress).map_err(calibrate_error)?;

    let text =
        serde_json::to_string_pretty(&result.model).context("cannot encode the model")? + "\n";
    linerate_io::write_atomically(&output, text.as_bytes())?;
    linerate_cost::Model::read(&output)
        .map_err(|e| anyhow!("the written model does not load back: {e}"))?;
    eprintln!(
        "calibrate: wrote {} ({} items, {:.0} s)",
        output.display(),
        result.items.len(),
        result.elapsed.as_secs_f64()
    );

    if args.json {
        emit(&(serde_json::to_string_pretty(&json_report(&result, &output))? + "\n"))
    } else {
        emit(&human_report(&result, &output))
    }
}

/// A calibration error as the command reports it: one line, the verifier log after it.
fn calibrate_error(e: calibrate::CalibrateError) -> anyhow::Error {
    let log = e
        .verifier_log()
        .map(|l| crate::Detail(format!("verifier log:\n{l}")));
    match log {
        Some(detail) => anyhow::Error::new(detail).context(e.to_string()),
        None => anyhow!("{e}"),
    }
}

/// `calibrate --check`: the sample re-timed against the model, a table of what moved, and exit
/// status 2 when the model no longer fits.
fn check(args: &CalibrateArgs) -> Result<()> {
    let (path, model) = match &args.model {
        Some(path) => (path.clone(), linerate_cost::Model::read(path)?),
        None => {
            let fingerprint = calibrate::fingerprint::current();
            let (_, path) = cache::host_file(&fingerprint)?;
            match cache::read_cached(&path, &fingerprint) {
                Some(Ok(model)) => (path, model),
                Some(Err(why)) => bail!("cannot check {}: {why}", path.display()),
                None => bail!(
                    "no cached model of this host to check ({} does not exist): any x86 \
                     command or `linerate calibrate` makes one",
                    path.display()
                ),
            }
        }
    };
    let mut progress = |p: &calibrate::Progress| eprintln!("calibrate --check: {p}");
    let result = calibrate::check::check(model.file(), &calibrate::check::options(), &mut progress)
        .map_err(calibrate_error)?;
    let moved: Vec<&calibrate::check::Compared> =
        result.compared.iter().filter(|c| c.moved()).collect();
    let tolerance = calibrate::check::TOLERANCE * 100.0;
    if args.json {
        let items: Vec<Value> = result
            .compared
            .iter()
            .map(|c| {
                json!({
                    "item": c.item,
                    "model": c.model,
                    "now": c.now,
                    "change": c.change(),
                    "moved": c.moved(),
                })
            })
            .collect();
        emit(
            &(serde_json::to_string_pretty(&json!({
                "model_file": path.display().to_string(),
                "fits": result.fits(),
                "tolerance": calibrate::check::TOLERANCE,
                "items": items,
                "elapsed_s": result.elapsed.as_secs_f64(),
            }))? + "\n"),
        )?;
    } else {
        let rows: Vec<Vec<String>> = result
            .compared
            .iter()
            .map(|c| {
                vec![
                    c.item.clone(),
                    format!("{:.2}", c.model),
                    format!("{:.2}", c.now),
                    format!("{:+.1}%", c.change() * 100.0),
                    if c.moved() { "moved" } else { "" }.to_string(),
                ]
            })
            .collect();
        let mut out = format!("checking {} (cycles)\n", path.display());
        out.push_str(&table(&["item", "model", "now", "change", ""], &rows));
        out.push_str(&format!(
            "{} of {} re-timed items moved more than {tolerance:.0}% ({:.0} s)\n",
            moved.len(),
            result.compared.len(),
            result.elapsed.as_secs_f64()
        ));
        emit(&out)?;
    }
    if moved.is_empty() {
        return Ok(());
    }
    let named: Vec<String> = moved
        .iter()
        .map(|c| format!("{} {:+.0}%", c.item, c.change() * 100.0))
        .collect();
    Err(anyhow::Error::new(crate::CheckFailed).context(format!(
        "the model no longer fits this host: {} moved more than {tolerance:.0}%; recalibrate \
         with `{}`",
        named.join(", "),
        if args.model.is_some() {
            "linerate calibrate -o FILE"
        } else {
            "linerate calibrate"
        }
    )))
}

fn how_name(how: &How) -> &'static str {
    match how {
        How::Measured => "measured",
        How::Derived => "derived",
        How::SameAs(_) => "same_as",
        How::Copied => "copied",
    }
}

fn json_report(c: &Calibration, path: &Path) -> Value {
    let items: Vec<Value> = c
        .items
        .iter()
        .map(|i| {
            let mut v = json!({
                "item": i.item,
                "ns": i.ns,
                "cycles": i.cycles,
                "spread": i.spread,
                "how": how_name(&i.how),
            });
            if let How::SameAs(target) = &i.how {
                v["same_as"] = json!(target);
            }
            v
        })
        .collect();
    let d = &c.model.device;
    json!({
        "target": c.model.target,
        "model_file": path.display().to_string(),
        "device": {
            "name": d.name,
            "cpu_model": d.cpu_model,
            "frequency_hz": d.frequency_hz,
            "cores": d.cores,
            "kernel": d.kernel,
        },
        "contention": c.contention,
        "per_packet_contention": c.per_packet_contention,
        "per_packet": {
            "ns": c.per_packet_ns,
            "cycles": d.frequency_hz.map(|f| c.per_packet_ns * f / 1e9),
            "spread": c.per_packet_spread,
        },
        "items": items,
        "summary": summary_json(c),
        "programs": c.programs,
        "elapsed_s": c.elapsed.as_secs_f64(),
        "source": c.model.source,
    })
}

/// Spreads of the items measured in this run: (median, max, item of the max).
fn spreads(c: &Calibration) -> Option<(f64, f64, String)> {
    let mut s: Vec<(f64, &str)> = c
        .items
        .iter()
        .filter(|i| matches!(i.how, How::Measured | How::Derived))
        .filter_map(|i| Some((i.spread?, i.item.as_str())))
        .collect();
    if s.is_empty() {
        return None;
    }
    s.sort_by(|a, b| a.0.total_cmp(&b.0));
    let median = s[s.len() / 2].0;
    let (max, item) = s[s.len() - 1];
    Some((median, max, item.to_string()))
}

fn summary_json(c: &Calibration) -> Value {
    let count = |f: fn(&How) -> bool| c.items.iter().filter(|i| f(&i.how)).count();
    let (median, max, max_item) = match spreads(c) {
        Some((m, x, i)) => (Some(m), Some(x), Some(i)),
        None => (None, None, None),
    };
    json!({
        "items": c.items.len(),
        "measured": count(|h| *h == How::Measured),
        "derived": count(|h| *h == How::Derived),
        "same_as": count(|h| matches!(h, How::SameAs(_))),
        "copied": count(|h| *h == How::Copied),
        "spread_median": median,
        "spread_max": max,
        "spread_max_item": max_item,
    })
}

fn human_report(c: &Calibration, path: &Path) -> String {
    let rows: Vec<Vec<String>> = c
        .items
        .iter()
        .map(|i| {
            vec![
                i.item.clone(),
                i.ns.map_or("unsupported".into(), |n| format!("{n:.3}")),
                i.cycles.map_or("-".into(), |n| format!("{n:.2}")),
                i.spread
                    .map_or("-".into(), |s| format!("{:.1}%", s * 100.0)),
                match &i.how {
                    How::SameAs(t) => format!("same as {t}"),
                    h => how_name(h).to_string(),
                },
            ]
        })
        .collect();
    let mut out = table(&["item", "ns", "cycles", "spread", "how"], &rows);
    let d = &c.model.device;
    out.push('\n');
    out.push_str(&format!(
        "per_packet: {:.3} ns (spread {:.1}%)\n",
        c.per_packet_ns,
        c.per_packet_spread * 100.0
    ));
    let factors: Vec<String> = c
        .contention
        .iter()
        .map(|(family, f)| format!("{family} {f:.2}"))
        .collect();
    out.push_str(&format!(
        "contention (a price is its uncontended figure times its family's factor: how much \
         slower than uncontended this host ran the family a tenth of the time): {}\n",
        factors.join(", ")
    ));
    let s = summary_json(c);
    out.push_str(&format!(
        "{} items: {} measured, {} derived, {} same_as, {} copied from the built-in model\n",
        s["items"], s["measured"], s["derived"], s["same_as"], s["copied"]
    ));
    if let Some((median, max, item)) = spreads(c) {
        out.push_str(&format!(
            "spread: median {:.1}%, max {:.1}% ({item})\n",
            median * 100.0,
            max * 100.0
        ));
    }
    out.push_str(&format!(
        "device: {}, {}, {} MHz, Linux {}\n",
        d.name,
        d.cpu_model.as_deref().unwrap_or("unknown CPU"),
        d.frequency_hz
            .map_or("unknown".into(), |f| format!("{:.0}", f / 1e6)),
        d.kernel.as_deref().unwrap_or("?")
    ));
    out.push_str(&format!(
        "{} programs, {:.0} s; model written to {}\n",
        c.programs,
        c.elapsed.as_secs_f64(),
        path.display()
    ));
    out
}
