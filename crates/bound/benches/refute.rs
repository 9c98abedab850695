//! The refutation attack's long run (issue 31, item 5): every example (and the objects
//! `REFUTE_OBJECTS` names, `:`-separated) searched on x86 (`REFUTE_TARGET` names another
//! model) for its slowest paths with every claim
//! recorded, then attacked by runs of the interpreter. Per program: the claims, the guides the
//! solver built (witnesses, inputs reaching refuted prefixes), the runs and the distinct paths
//! they took, how many refuted paths and core prefixes some run came within their last edge of
//! (with guides, and with random packets only: the baseline, same runs), and the findings.
//!
//! `REFUTE_RUNS` (default 20,000) runs per program and attack, `REFUTE_SEARCH_S` (default 10)
//! seconds of search, `REFUTE_SEED` (default 1), `--only NAME[,NAME...]`.

#[path = "common/user_objects.rs"]
mod user_objects;

use std::time::Duration;

use linerate_bound::attack::{self, campaign, Campaign};
use linerate_bound::prepare::{prepare, Options as PrepareOptions};
use linerate_bound::ssp;
use linerate_bpf::Object;
use linerate_conformance::examples::load_all;
use linerate_cost::Model;

/// Slowest paths the search looks for: many, so that it refutes what lies above them (it stops
/// at `REFUTE_SEARCH_S` anyway).
const PATHS: usize = 200;

fn env_u64(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// The device model (`REFUTE_TARGET`, default x86): the graph, and so the analysis's pruning,
/// is prepared for it.
fn target() -> String {
    std::env::var("REFUTE_TARGET").unwrap_or_else(|_| "x86".into())
}

fn plan() -> Campaign {
    Campaign {
        search: ssp::Options {
            paths: PATHS,
            timeout: Some(Duration::from_secs(env_u64("REFUTE_SEARCH_S", 10))),
            ..ssp::Options::default()
        },
        reach: attack::Reach {
            limit: 64,
            budget: Duration::from_secs(20),
            check_timeout: Duration::from_secs(10),
        },
        baseline: true,
        attack: attack::Options {
            runs: env_u64("REFUTE_RUNS", 20_000),
            seed: env_u64("REFUTE_SEED", 1),
            timeout: Some(Duration::from_secs(300)),
        },
    }
}

const HEADER: [&str; 13] = [
    "program",
    "claims",
    "prefix",
    "search s",
    "guides w/r",
    "runs",
    "failed",
    "paths",
    "approached",
    "random only",
    "random paths",
    "findings",
    "attack s",
];
const WIDTHS: [usize; 13] = [28, 8, 8, 9, 11, 8, 7, 7, 11, 12, 13, 9, 9];

fn print_row(cells: &[String]) {
    let line: Vec<String> = cells
        .iter()
        .zip(WIDTHS)
        .enumerate()
        .map(|(i, (c, w))| {
            if i == 0 {
                format!("{c:<w$}")
            } else {
                format!("{c:>w$}")
            }
        })
        .collect();
    println!("{}", line.join(" "));
}

/// Totals over the programs.
#[derive(Default)]
struct Totals {
    programs: usize,
    claims: usize,
    runs: u64,
    paths: usize,
    findings: usize,
}

fn row(name: &str, object: &Object, entry: usize, totals: &mut Totals, notes: &mut Vec<String>) {
    let model = Model::builtin(&target()).expect("a shipped model");
    let prepared = match prepare(object, entry, &model, &PrepareOptions::default()) {
        Ok(p) => p,
        Err(e) => {
            notes.push(format!("{name}: not prepared: {e}"));
            return;
        }
    };
    let done = campaign(object, entry, &prepared, &model, &plan());
    ssp::wait_for_workers(Duration::from_secs(120));
    let guided = match done {
        Ok(done) => done,
        Err(e) => {
            notes.push(format!("{name}: search failed: {e}"));
            return;
        }
    };
    let a = &guided.attack;
    let random = guided.random_only.clone().unwrap_or_default();
    let findings = a.findings.len() + random.findings.len();
    for f in a.findings.iter().chain(&random.findings) {
        let shown = &f.packet[..f.packet.len().min(64)];
        let ellipsis = if f.packet.len() > 64 { "…" } else { "" };
        let tail = &f.decisions[f.decisions.len().saturating_sub(3)..];
        notes.push(format!(
            "{name}: FINDING {} — a {}-byte packet {}{ellipsis} — {} decisions, the last {:?}",
            f.what,
            f.packet.len(),
            linerate_bpf::contents::hex(shown),
            f.decisions.len(),
            tail
        ));
    }
    if a.guides_refused > 0 {
        notes.push(format!(
            "{name}: {} guides' maps refused by the interpreter",
            a.guides_refused
        ));
    }
    if a.outside_assumptions > 0 {
        notes.push(format!(
            "{name}: {} runs beyond the assumed loop bounds",
            a.outside_assumptions
        ));
    }
    print_row(&[
        name.to_string(),
        a.claims.to_string(),
        a.prefix_claims.to_string(),
        format!("{:.1}", guided.search_time.as_secs_f64()),
        format!("{}/{}", guided.witness_guides, guided.reached_guides),
        a.runs.to_string(),
        (a.failed + random.failed).to_string(),
        a.distinct_paths.to_string(),
        a.approached.to_string(),
        random.approached.to_string(),
        random.distinct_paths.to_string(),
        findings.to_string(),
        format!(
            "{:.1}",
            (guided.guide_time + a.elapsed + random.elapsed).as_secs_f64()
        ),
    ]);
    totals.programs += 1;
    totals.claims += a.claims;
    totals.runs += a.runs + random.runs;
    totals.paths += a.distinct_paths;
    totals.findings += findings;
}

fn main() {
    let only: Option<Vec<String>> = std::env::args()
        .skip_while(|a| a != "--only")
        .nth(1)
        .map(|s| s.split(',').map(str::to_string).collect());
    println!(
        "{} · {} · search {} s for {PATHS} paths, {} runs per attack, seed {}",
        linerate_smt::solver_version(),
        target(),
        env_u64("REFUTE_SEARCH_S", 10),
        env_u64("REFUTE_RUNS", 20_000),
        env_u64("REFUTE_SEED", 1)
    );
    let header: Vec<String> = HEADER.iter().map(|s| s.to_string()).collect();
    print_row(&header);
    let mut notes = Vec::new();
    let mut totals = Totals::default();
    for example in load_all().expect("example corpus") {
        let name = example.name().trim_end_matches(".o").to_string();
        if only.as_ref().is_some_and(|o| !o.contains(&name)) {
            continue;
        }
        row(
            &name,
            &example.object,
            example.entry,
            &mut totals,
            &mut notes,
        );
    }
    for u in user_objects::user_objects("REFUTE_OBJECTS", &mut notes) {
        row(&u.name, &u.object, u.entry, &mut totals, &mut notes);
    }
    println!(
        "\n{} programs, {} claims attacked, {} runs, {} distinct paths, {} findings",
        totals.programs, totals.claims, totals.runs, totals.paths, totals.findings
    );
    for note in notes {
        println!("note: {note}");
    }
}
