//! `linerate rules`: the rewrite-rule library of `optimize`. `grow` searches every program of a
//! corpus of objects and adds each proven window rewrite, generalized, to a rule file; `show`
//! prints a rule file.

use std::fmt::Write as _;
use std::io::IsTerminal;
use std::path::PathBuf;

use anyhow::{anyhow, Context, Result};
use clap::{Args, Subcommand};
use linerate_bpf::disasm::{format_instruction, NoNames};
use linerate_bpf::ProgramKind;
use linerate_optimize::goal::Size;
use linerate_optimize::prove::Z3Prover;
use linerate_optimize::rules::Library;
use linerate_optimize::{search, Prover, SearchOptions};

use crate::output::emit;

#[derive(Args)]
pub struct RulesArgs {
    #[command(subcommand)]
    pub command: RulesCommand,
}

#[derive(Subcommand)]
pub enum RulesCommand {
    /// Search every XDP program of the objects and add the proven rewrites to a rule file.
    Grow(GrowArgs),
    /// Print the rules of a rule file (default: the shipped library).
    Show {
        /// Rule file.
        file: Option<PathBuf>,
    },
}

#[derive(Args)]
pub struct GrowArgs {
    /// Objects of the training corpus (never the programs the library will be scored on).
    #[arg(required = true)]
    pub objects: Vec<PathBuf>,
    /// The rule file to grow (created if missing; written atomically).
    #[arg(short, long, value_name = "PATH")]
    pub output: PathBuf,
    /// Seconds of search per program.
    #[arg(long, default_value = "30s", value_name = "SECONDS")]
    pub budget: String,
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
}

pub fn rules(args: &RulesArgs) -> Result<()> {
    match &args.command {
        RulesCommand::Grow(g) => grow(g),
        RulesCommand::Show { file } => show(file.as_ref()),
    }
}

fn grow(args: &GrowArgs) -> Result<()> {
    let budget = crate::optimize::parse_duration(&args.budget).context("--budget")?;
    let mut library = if args.output.exists() {
        let text = std::fs::read_to_string(&args.output)
            .with_context(|| format!("cannot read {}", args.output.display()))?;
        Library::parse(&text, &args.output.display().to_string())?
    } else {
        Library::new()
    };
    let before = library.rules.len();
    let show_progress = std::io::stderr().is_terminal();
    let prover = || Box::new(Z3Prover::new(2_000)) as Box<dyn Prover>;
    let mut out = String::new();
    for path in &args.objects {
        let object = crate::load_object(path, None)?;
        for (p, program) in object.programs.iter().enumerate() {
            if program.kind() != ProgramKind::Xdp {
                continue;
            }
            let options = SearchOptions {
                budget,
                seed: args.seed,
                ..SearchOptions::default()
            };
            let windows = linerate_optimize::windows(&object, p, &options)
                .map_err(|e| anyhow!("{}: {e}", path.display()))?;
            let origin = format!(
                "{}:{}",
                path.file_name()
                    .map_or_else(String::new, |n| n.to_string_lossy().into_owned()),
                program.name
            );
            let searched = search(windows, &[], false, &options, &Size, &prover, &mut |pr| {
                if show_progress {
                    eprint!(
                        "\r\x1b[2Krules grow: {origin}: {:.0}s, gain {}",
                        pr.elapsed.as_secs_f64(),
                        pr.gain
                    );
                }
            });
            let learned = searched
                .proven
                .iter()
                .filter(|(original, candidate)| library.learn(original, candidate, &origin))
                .count();
            writeln!(
                out,
                "{origin}: {} proven rewrites, {learned} new rules",
                searched.proven.len()
            )?;
        }
    }
    if show_progress {
        eprint!("\r\x1b[2K");
    }
    let text = serde_json::to_string_pretty(&library)? + "\n";
    linerate_io::write_atomically(&args.output, text.as_bytes())?;
    writeln!(
        out,
        "{}: {} rules ({} new)",
        args.output.display(),
        library.rules.len(),
        library.rules.len() - before
    )?;
    emit(&out)
}

fn show(file: Option<&PathBuf>) -> Result<()> {
    let library = match file {
        Some(path) => {
            let text = std::fs::read_to_string(path)
                .with_context(|| format!("cannot read {}", path.display()))?;
            Library::parse(&text, &path.display().to_string())?
        }
        None => Library::shipped()?,
    };
    let compiled = library.compile("rules")?;
    let mut out = String::new();
    for (k, (rule, c)) in library.rules.iter().zip(&compiled).enumerate() {
        writeln!(out, "rule {k} (from {}):", rule.origin)?;
        for i in &c.pattern {
            writeln!(out, "  - {}", format_instruction(i, &NoNames))?;
        }
        for i in &c.replacement {
            writeln!(out, "  + {}", format_instruction(i, &NoNames))?;
        }
    }
    writeln!(out, "{} rules", library.rules.len())?;
    emit(&out)
}
