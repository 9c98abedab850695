//! `linerate report`: one self-contained HTML page per program. It runs the commands that apply
//! (inspect, cost and bound per device model, measure where the kernel is available, optimize
//! with a short budget, hxdp and its studies) exactly as a user would with `--json`, and hands
//! their documents to `linerate-report` to draw; several objects make a folder of pages with an
//! index.

use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::{anyhow, bail, Context, Result};
use clap::{Args, Parser};
use linerate_report::index::{index_page, Entry};
use linerate_report::program::{headline, program_page, Part, ProgramRun, TargetRun};
use serde_json::Value;

use crate::output::{capture, ProgressBar};

#[derive(Args, Clone)]
pub struct ReportArgs {
    /// BPF objects (.o) or `llvm-objdump -d` text; one page each.
    #[arg(required = true)]
    pub objects: Vec<PathBuf>,
    /// The page to write (one object; default `<object name>.html` here), or the folder to
    /// write the pages and their index.html into (several objects).
    #[arg(short, long, value_name = "PATH")]
    pub output: Option<PathBuf>,
    /// Program to report on (function or section name); default: the first XDP program.
    #[arg(long)]
    pub prog: Option<String>,
    /// Device models to bound on, in order (repeat the flag); default x86 and nfp.
    #[arg(long = "target", value_name = "T", default_values_t = ["x86".to_string(), "nfp".to_string()])]
    pub targets: Vec<String>,
    /// Target BTF of CO-RE relocations (raw BTF); default: the running kernel's.
    #[arg(long, value_name = "PATH")]
    pub btf: Option<PathBuf>,
    /// Seconds each worst-case search may take before reporting its best bound so far.
    #[arg(long, default_value_t = 60.0, value_name = "SECONDS")]
    pub bound_timeout: f64,
    /// Seconds one solver check of `bound` and `measure` may take (their default otherwise).
    #[arg(long, value_name = "SECONDS")]
    pub check_timeout: Option<f64>,
    /// Skip the optimizer.
    #[arg(long)]
    pub no_optimize: bool,
    /// Seconds of optimizer search (its checks and measurements come on top).
    #[arg(long, default_value = "10s", value_name = "SECONDS")]
    pub optimize_budget: String,
    /// Skip the optimizer's latency and worst-case measurements before and after.
    #[arg(long)]
    pub optimize_no_measure: bool,
    /// The optimizer applies its rule library only, no search.
    #[arg(long)]
    pub optimize_rules_only: bool,
    /// Skip timing paths in this host's kernel.
    #[arg(long)]
    pub no_measure: bool,
    /// Slowest satisfiable paths timed in the kernel.
    #[arg(long, default_value_t = 5, value_name = "N")]
    pub measure_paths: usize,
    /// Runs per trial when timing a path (as `measure --repeat`).
    #[arg(long, value_name = "R")]
    pub measure_repeat: Option<u32>,
    /// Skip the hXDP compilation and studies.
    #[arg(long)]
    pub no_hxdp: bool,
    /// Compile for hXDP without its worst case (the search on the core's rows).
    #[arg(long)]
    pub hxdp_no_worst_case: bool,
    /// An overview in seconds per program, for folders of many: searches and solver checks stop
    /// after 2 s, two paths are timed at 1,000 runs, the optimizer applies its rules only (2 s
    /// proof, no measurement), hXDP without its worst case. Replaces the flags it names.
    #[arg(long)]
    pub quick: bool,
}

impl ReportArgs {
    /// The settings after `--quick`.
    fn resolved(&self) -> ReportArgs {
        let mut args = self.clone();
        if args.quick {
            args.bound_timeout = QUICK_SECONDS;
            args.check_timeout = Some(QUICK_SECONDS);
            args.measure_paths = 2;
            args.measure_repeat = Some(1000);
            args.optimize_rules_only = true;
            args.optimize_no_measure = true;
            args.optimize_budget = format!("{QUICK_SECONDS}s");
            // Its search has no check timeout of its own: its last checks would run on into
            // the next program's steps, and slow them (measured: a 0.3 s measurement took 75 s).
            args.hxdp_no_worst_case = true;
        }
        args
    }
}

/// Seconds each search and proof may take with `--quick`.
const QUICK_SECONDS: f64 = 2.0;

/// Wraps one command's arguments so that they parse from an argument list as a user types them.
#[derive(Parser)]
struct Invocation<A: Args> {
    #[command(flatten)]
    args: A,
}

/// Runs command `run` with arguments `argv` (after the command's name) and returns the JSON
/// document it prints.
fn json_of<A: Args>(argv: &[String], run: fn(&A) -> Result<()>) -> Result<Value> {
    let invocation = Invocation::<A>::try_parse_from(
        std::iter::once("linerate".to_string()).chain(argv.iter().cloned()),
    )
    .map_err(|e| {
        anyhow!(
            "{}",
            e.to_string().lines().next().unwrap_or("bad arguments")
        )
    })?;
    let text = capture(|| run(&invocation.args))?;
    serde_json::from_str(&text).context("the command's JSON does not parse")
}

/// A command's document, or its failure as a part of the page.
fn part(result: Result<Value>) -> Part {
    match result {
        Ok(v) => Part::Done(v),
        Err(e) => Part::Failed(crate::error_line(&e)),
    }
}

/// Steps of one page, for the progress bar.
fn steps(args: &ReportArgs) -> usize {
    1 + 2 * args.targets.len()
        + usize::from(!args.no_measure)
        + usize::from(!args.no_optimize)
        + 2 * usize::from(!args.no_hxdp)
}

pub fn report(args: &ReportArgs) -> Result<()> {
    linerate_report::cfg_graph::check_dot()?;
    let args = &args.resolved();
    if args.targets.is_empty() {
        bail!("--target needs at least one device model");
    }
    let several = args.objects.len() > 1;
    if several && args.output.is_none() {
        bail!("several objects need -o FOLDER for their pages and index");
    }
    // Whether this process may time programs in the kernel, asked once for every page.
    let kernel = linerate_kernel::check_access().map_err(|e| e.to_string());
    let started = Instant::now();
    let progress = ProgressBar::new(
        "report",
        steps(args) * args.objects.len(),
        std::io::stderr().is_terminal(),
    );
    let mut done = 0;
    if !several {
        let object = &args.objects[0];
        let output = match &args.output {
            Some(path) => path.clone(),
            None => PathBuf::from(format!("{}.html", stem(object))),
        };
        let run = run_all(args, object, &kernel, &progress, &mut done)?;
        let html = program_page(&run)?;
        progress.finish();
        write(&output, &html)?;
        println!(
            "wrote {} ({:.1} s)",
            output.display(),
            started.elapsed().as_secs_f64()
        );
        return Ok(());
    }
    let folder = args.output.as_deref().unwrap_or(Path::new("."));
    std::fs::create_dir_all(folder)
        .with_context(|| format!("cannot create the folder {}", folder.display()))?;
    let mut entries = Vec::new();
    let mut failed = 0;
    for object in &args.objects {
        let name = unique_page_name(object, &entries);
        let made = run_all(args, object, &kernel, &progress, &mut done).and_then(|run| {
            let html = program_page(&run)?;
            write(&folder.join(&name), &html)?;
            Ok(headline(&run))
        });
        entries.push(match made {
            Ok(h) => Entry {
                object: object.display().to_string(),
                page: Some(name),
                headline: Ok(h),
            },
            Err(e) => {
                failed += 1;
                Entry {
                    object: object.display().to_string(),
                    page: None,
                    headline: Err(crate::error_line(&e)),
                }
            }
        });
    }
    progress.finish();
    let index = folder.join("index.html");
    write(
        &index,
        &index_page(
            &entries,
            &args.targets,
            &generator(),
            started.elapsed().as_secs_f64(),
        ),
    )?;
    println!(
        "wrote {} pages and {} ({:.1} s)",
        entries.len() - failed,
        index.display(),
        started.elapsed().as_secs_f64()
    );
    if let Some(first) = entries.iter().find_map(|e| e.headline.as_ref().err()) {
        bail!(
            "{failed} of {} objects have no page; first: {first}",
            entries.len()
        );
    }
    Ok(())
}

fn generator() -> String {
    format!("linerate {}", env!("CARGO_PKG_VERSION"))
}

/// The object's file name without its extension.
fn stem(object: &Path) -> String {
    object
        .file_stem()
        .map_or("report".into(), |s| s.to_string_lossy().into_owned())
}

/// `<stem>.html`, numbered when another object of the same name already has it.
fn unique_page_name(object: &Path, entries: &[Entry]) -> String {
    let base = stem(object);
    let taken = |name: &str| entries.iter().any(|e| e.page.as_deref() == Some(name));
    let mut name = format!("{base}.html");
    let mut n = 2;
    while taken(&name) {
        name = format!("{base}-{n}.html");
        n += 1;
    }
    name
}

fn write(path: &Path, html: &str) -> Result<()> {
    linerate_io::write_atomically(path, html.as_bytes())
        .with_context(|| format!("cannot write {}", path.display()))
}

/// Runs every step for one object and gathers the documents its page shows.
fn run_all(
    args: &ReportArgs,
    object: &Path,
    kernel: &Result<(), String>,
    progress: &ProgressBar,
    done: &mut usize,
) -> Result<ProgramRun> {
    let mut stages: Vec<(String, f64)> = Vec::new();
    let path = object.display().to_string();
    let mut common = vec![path.clone()];
    if let Some(btf) = &args.btf {
        common.extend(["--btf".into(), btf.display().to_string()]);
    }
    let with = |extra: &[&str]| -> Vec<String> {
        let mut argv = common.clone();
        argv.extend(extra.iter().map(|s| s.to_string()));
        argv
    };
    // The object must read; everything else may fail on its own.
    let t = Instant::now();
    let inspect = json_of(&with(&["--json"]), crate::inspect::inspect)?;
    stages.push(("inspect".into(), t.elapsed().as_secs_f64()));
    *done += 1;
    progress.set(*done);
    let program = match &args.prog {
        Some(p) => p.clone(),
        None => {
            let loaded = crate::load_object(object, args.btf.as_deref())?;
            let index = crate::select_program(&loaded, None)?;
            loaded.programs[index].name.clone()
        }
    };
    let mut timed = |name: String, step: &mut dyn FnMut() -> Part| -> Part {
        let t = Instant::now();
        let result = step();
        stages.push((name, t.elapsed().as_secs_f64()));
        *done += 1;
        progress.set(*done);
        result
    };
    let prog = ["--prog", program.as_str()];
    let bound_timeout = args.bound_timeout.to_string();
    // A search's last checks go on after it stops (and `measure` waits for them before timing),
    // so the check timeout bounds what a step leaves behind.
    let check_timeout: Vec<String> = args
        .check_timeout
        .iter()
        .flat_map(|s| ["--check-timeout".to_string(), s.to_string()])
        .collect();
    let mut targets = Vec::new();
    for target in &args.targets {
        let tgt = ["--target", target.as_str()];
        let cost = timed(format!("cost {target}"), &mut || {
            part(json_of(
                &with(&[&prog[..], &tgt[..], &["--insns", "--json"]].concat()),
                crate::cost::cost,
            ))
        });
        let mut argv = with(
            &[
                &prog[..],
                &tgt[..],
                &["--json", "--timeout", &bound_timeout],
            ]
            .concat(),
        );
        argv.extend(check_timeout.iter().cloned());
        let bound = timed(format!("bound {target}"), &mut || {
            part(json_of(&argv, crate::bound::bound))
        });
        targets.push(TargetRun {
            target: target.clone(),
            cost,
            bound,
        });
    }
    let measure = if args.no_measure {
        Part::Skipped("--no-measure".into())
    } else if let Err(why) = kernel {
        Part::Skipped(why.clone())
    } else {
        let paths = args.measure_paths.to_string();
        let mut argv = with(
            &[
                &prog[..],
                &["--paths", &paths, "--json", "--timeout", &bound_timeout],
            ]
            .concat(),
        );
        argv.extend(check_timeout.iter().cloned());
        if let Some(repeat) = args.measure_repeat {
            argv.extend(["--repeat".to_string(), repeat.to_string()]);
        }
        timed("measure".into(), &mut || {
            part(json_of(&argv, crate::measure::measure))
        })
    };
    let optimize = if args.no_optimize {
        Part::Skipped("--no-optimize".into())
    } else {
        timed("optimize".into(), &mut || optimize_part(args, &with(&prog)))
    };
    let (hxdp, hxdp_study) = if args.no_hxdp {
        (
            Part::Skipped("--no-hxdp".into()),
            Part::Skipped("--no-hxdp".into()),
        )
    } else {
        let mut argv = with(&[&prog[..], &["--json", "--timeout", &bound_timeout]].concat());
        if args.hxdp_no_worst_case {
            argv.push("--no-worst-case".into());
        }
        let hxdp = timed("hxdp".into(), &mut || {
            part(json_of(&argv, crate::hxdp::hxdp))
        });
        let study = timed("hxdp study".into(), &mut || {
            part(json_of(
                &["study".to_string(), path.clone(), "--json".into()],
                crate::hxdp::hxdp,
            ))
        });
        (hxdp, study)
    };
    Ok(ProgramRun {
        object: path,
        program,
        inspect,
        targets,
        measure,
        optimize,
        hxdp,
        hxdp_study,
        stages,
        generator: generator(),
    })
}

/// `optimize` into a scratch object that is removed afterwards (the report shows the rewrites;
/// `linerate optimize -o` writes the object for deployment). The whole-program proof gets as
/// long as the search, so that the step stays short.
fn optimize_part(args: &ReportArgs, common: &[String]) -> Part {
    let scratch = std::env::temp_dir().join(format!(
        "linerate-report-{}-{}.o",
        std::process::id(),
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos())
    ));
    let mut argv = common.to_vec();
    argv.extend([
        "-o".into(),
        scratch.display().to_string(),
        "--budget".into(),
        args.optimize_budget.clone(),
        "--prove-timeout".into(),
        args.optimize_budget.clone(),
        "--bound-timeout".into(),
        args.bound_timeout.to_string(),
        "--json".into(),
    ]);
    if args.optimize_no_measure {
        argv.push("--no-measure".into());
    }
    if args.optimize_rules_only {
        argv.push("--rules-only".into());
    }
    let result = part(json_of(&argv, crate::optimize::optimize));
    let _ = std::fs::remove_file(&scratch);
    result
}
