//! Attacking the search's refutations with concrete runs (issue 31, item 5): every set of edges
//! the search concluded no run takes all of ([`crate::ssp::Claim`]: the analysis's conflicts,
//! refuted paths, the prefixes their cores prune, learned conflicts) is checked against runs of
//! the interpreter, and a run that takes one is a finding: the program, the claim, the run's
//! decisions and its input. A graph without an edge some run takes is one too (the analysis that
//! built it left out something possible), and so is a run whose packet is shorter than the
//! minimum packet size its path's edges claim (what the rates are computed at).
//!
//! The runs' inputs ([`inputs`]) are random packets shaped like traffic, and mutations of
//! *guides*: inputs the solver built, either the witnesses of satisfiable paths or inputs that
//! take a refuted path's decisions up to its core's last one ([`guides`]), so that a mutation
//! needs to flip only the decision the search says cannot be flipped. An input whose run takes a
//! path not seen before joins its guide's corpus and is mutated in turn. Each guide's map
//! contents are also mutated now and then (a byte of a plain-data value), each packet running on
//! freshly seeded maps.
//!
//! A run follows the graph by the instructions it executed ([`Prepared::follow`]).

mod inputs;

use std::collections::{HashMap, HashSet};
use std::time::{Duration, Instant};

use linerate_bpf::contents::{MapMode, MapSeed};
use linerate_bpf::Object;
use linerate_cfg::Decision;
use linerate_smt::{ReplayInput, Witness};
use linerate_vm::drive::Driver;
use linerate_vm::trace::DecisionReader;
use linerate_vm::{FibRoute, VmOptions};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

use crate::dag::EdgeId;
use crate::prepare::Prepared;
use crate::ssp::{Claim, ClaimReason, Outcome};

use inputs::Dictionary;

/// An input to start mutating from.
#[derive(Clone, Debug)]
pub struct Guide {
    pub input: ReplayInput,
    /// The routing table the runs see (a witness's routes).
    pub fib: Vec<FibRoute>,
}

impl Guide {
    /// The input of a satisfiable path's witness.
    pub fn from_witness(witness: &Witness) -> Guide {
        Guide {
            input: ReplayInput {
                packet: witness.packet.clone(),
                maps: witness.maps.clone(),
                ingress_ifindex: witness.ingress_ifindex,
                rx_queue_index: witness.rx_queue_index,
            },
            fib: crate::measure::witness_fib(witness),
        }
    }

    /// No input yet: random packets on maps as the object declares them.
    fn random() -> Guide {
        Guide {
            input: ReplayInput {
                packet: Vec::new(),
                maps: MapSeed::new(),
                ingress_ifindex: 1,
                rx_queue_index: 0,
            },
            fib: Vec::new(),
        }
    }
}

/// How many inputs reaching refuted prefixes to ask the solver for ([`guides`]).
#[derive(Clone, Copy, Debug)]
pub struct Reach {
    /// At most this many.
    pub limit: usize,
    /// Within this long.
    pub budget: Duration,
    /// Time one solver check may take (the search's too: its workers get twice this to end).
    pub check_timeout: Duration,
}

/// The guides a search's `outcome` gives (its claims recorded): the witnesses of its paths, then
/// inputs that take the decisions of its refuted paths up to their cores' last one (for the
/// claims the checker concluded from a path's core: [`ClaimReason::CorePrefix`]), each built by
/// the solver ([`linerate_smt::PathChecker::reach`]) on program `program` of `object`.
///
/// A search stopped by its time limit leaves its workers in the checks they are in: they end
/// first (each within a check's time), so that the solver here and the runs after have the
/// cores, and no solver thread outlives the caller's process teardown.
pub fn guides(
    object: &Object,
    program: usize,
    prepared: &Prepared,
    outcome: &Outcome<Box<Witness>>,
    reach: &Reach,
) -> Vec<Guide> {
    crate::ssp::wait_for_workers(2 * reach.check_timeout);
    let mut out: Vec<Guide> = outcome
        .found
        .iter()
        .filter_map(|f| f.witness.as_ref().ok())
        .map(|w| Guide::from_witness(w))
        .collect();
    let started = Instant::now();
    let options = linerate_smt::Options {
        timeout: Some(reach.check_timeout),
        ..linerate_smt::Options::default()
    };
    let Ok(mut checker) = linerate_smt::PathChecker::new(object, program, options) else {
        return out;
    };
    let mut asked = HashSet::new();
    let mut reached = 0;
    for claim in outcome
        .claims
        .iter()
        .filter(|c| c.why == ClaimReason::CorePrefix)
    {
        if reached >= reach.limit || started.elapsed() >= reach.budget {
            break;
        }
        // The claim's prefix ends at its last decision: reach the one before it.
        let decided = prepared.decisions(&claim.edges).len();
        let before = &claim.path[..decided.saturating_sub(1).min(claim.path.len())];
        if !asked.insert(before.to_vec()) {
            continue;
        }
        if let Ok(Some(input)) = checker.reach(before) {
            reached += 1;
            out.push(Guide {
                input,
                fib: Vec::new(),
            });
        }
    }
    out
}

/// How long to attack.
#[derive(Clone, Debug)]
pub struct Options {
    /// Runs in all, shared among the guides and random packets.
    pub runs: u64,
    /// Seed of the random choices: the same seed makes the same runs.
    pub seed: u64,
    /// Stop after this long.
    pub timeout: Option<Duration>,
}

impl Default for Options {
    fn default() -> Options {
        Options {
            runs: 10_000,
            seed: 1,
            timeout: None,
        }
    }
}

/// A run that takes what the search or the graph says no run takes.
#[derive(Clone, Debug)]
pub struct Finding {
    /// The claim broken; `None` where the run leaves the graph (the graph has no edge for
    /// something it did) or its packet is shorter than its path's minimum packet size.
    pub claim: Option<Claim>,
    /// What is wrong, in a sentence.
    pub what: String,
    pub packet: Vec<u8>,
    pub maps: MapSeed,
    pub ingress_ifindex: u32,
    pub rx_queue_index: u32,
    /// The run's decisions ([`DecisionReader`]).
    pub decisions: Vec<Decision>,
}

/// What an attack did and found.
#[derive(Clone, Debug, Default)]
pub struct Report {
    pub claims: usize,
    /// Guides given, and those whose maps the interpreter refused to seed.
    pub guides: usize,
    pub guides_refused: usize,
    pub runs: u64,
    /// Runs the interpreter stopped with an error (the instruction limit, say).
    pub failed: u64,
    /// Runs that leave a graph built on assumed loop bounds (`--max-unroll`): possibly runs
    /// outside the assumption, so not findings.
    pub outside_assumptions: u64,
    /// Different paths the runs took.
    pub distinct_paths: usize,
    /// Refuted paths and core prefixes some run came within their last edge of: it took every
    /// edge before it.
    pub approached: usize,
    /// Claims of those kinds.
    pub prefix_claims: usize,
    pub findings: Vec<Finding>,
    pub elapsed: Duration,
}

/// Claims indexed for checking runs against them.
struct Index<'c> {
    claims: &'c [Claim],
    /// Each claim under its largest edge: a run can hold the claim only if it holds that edge.
    by_edge: HashMap<EdgeId, Vec<usize>>,
    /// Each refuted path and core prefix of two edges or more under its last edge but one.
    by_before_last: HashMap<EdgeId, Vec<usize>>,
    approached: Vec<bool>,
    broken: Vec<bool>,
}

impl<'c> Index<'c> {
    fn new(claims: &'c [Claim]) -> Index<'c> {
        let mut by_edge: HashMap<EdgeId, Vec<usize>> = HashMap::new();
        let mut by_before_last: HashMap<EdgeId, Vec<usize>> = HashMap::new();
        let mut approached = vec![false; claims.len()];
        for (i, c) in claims.iter().enumerate() {
            if let Some(&max) = c.edges.iter().max() {
                by_edge.entry(max).or_default().push(i);
            }
            if prefix_claim(c) {
                match c.edges.len() {
                    0 | 1 => approached[i] = true,
                    n => by_before_last.entry(c.edges[n - 2]).or_default().push(i),
                }
            }
        }
        Index {
            claims,
            by_edge,
            by_before_last,
            approached,
            broken: vec![false; claims.len()],
        }
    }

    /// The claims `edges` (a run's path or prefix) breaks that no run broke before; marks the
    /// prefix claims it approaches.
    fn check(&mut self, edges: &[EdgeId]) -> Vec<usize> {
        let held: HashSet<EdgeId> = edges.iter().copied().collect();
        let mut broken = Vec::new();
        for e in edges {
            for &i in self.by_edge.get(e).into_iter().flatten() {
                if !self.broken[i] && self.claims[i].edges.iter().all(|x| held.contains(x)) {
                    self.broken[i] = true;
                    broken.push(i);
                }
            }
            for &i in self.by_before_last.get(e).into_iter().flatten() {
                let c = &self.claims[i].edges;
                if !self.approached[i] && c[..c.len() - 1].iter().all(|x| held.contains(x)) {
                    self.approached[i] = true;
                }
            }
        }
        broken
    }
}

/// Whether a claim is a path's prefix (the edges in order from the source).
fn prefix_claim(claim: &Claim) -> bool {
    matches!(claim.why, ClaimReason::Refuted | ClaimReason::CorePrefix)
}

/// Runs of each guide between mutations of its maps.
const RUNS_PER_MAPS: u64 = 32;

/// Attacks `claims` about program `program` of `object` (prepared as `prepared`) with runs of the
/// interpreter on inputs from `guides` and random packets.
pub fn attack(
    object: &Object,
    program: usize,
    prepared: &Prepared,
    claims: &[Claim],
    guides: &[Guide],
    options: &Options,
) -> Report {
    let started = Instant::now();
    let mut rng = StdRng::seed_from_u64(options.seed);
    let dict = Dictionary::of(object);
    let reader = DecisionReader::new(object);
    let mut index = Index::new(claims);
    let mut report = Report {
        claims: claims.len(),
        guides: guides.len(),
        prefix_claims: claims.iter().filter(|c| prefix_claim(c)).count(),
        ..Report::default()
    };
    let mut seen: HashSet<Vec<EdgeId>> = HashSet::new();
    let mut all: Vec<Guide> = vec![Guide::random()];
    all.extend(guides.iter().cloned());
    // Each guide's corpus: its packet, then the mutations that took new paths.
    let mut corpora: Vec<Vec<Vec<u8>>> = all.iter().map(|g| vec![g.input.packet.clone()]).collect();
    // The runs shared out evenly, the first guides taking one more where they do not divide.
    let guides_count = all.len() as u64;
    let quota = |g: usize| {
        options.runs / guides_count + u64::from((g as u64) < options.runs % guides_count)
    };
    'guides: for (g, guide) in all.iter().enumerate() {
        let mut done = 0u64;
        let per_guide = quota(g);
        while done < per_guide {
            let maps = if done == 0 {
                guide.input.maps.clone()
            } else {
                inputs::mutate_maps(&mut rng, &dict, object, &guide.input.maps)
            };
            let vm_options = VmOptions {
                ingress_ifindex: guide.input.ingress_ifindex,
                rx_queue_index: guide.input.rx_queue_index,
                fib: guide.fib.clone(),
                record_steps: true,
                ..VmOptions::default()
            };
            let Ok(mut driver) = Driver::new(object, &maps, vm_options, MapMode::Fresh) else {
                // The random guide seeds nothing: only a given guide's maps can be refused.
                report.guides_refused += 1;
                break;
            };
            for _ in 0..RUNS_PER_MAPS.min(per_guide - done) {
                if options.timeout.is_some_and(|t| started.elapsed() >= t) {
                    break 'guides;
                }
                done += 1;
                let packet = if g == 0 && (corpora[g].len() == 1 || rng.gen_bool(0.5)) {
                    inputs::random_packet(&mut rng, &dict)
                } else if done == 1 {
                    guide.input.packet.clone()
                } else {
                    let from = &corpora[g][rng.gen_range(0..corpora[g].len())];
                    inputs::mutate_packet(&mut rng, &dict, from)
                };
                report.runs += 1;
                let Ok(run) = driver.run(program, &packet, &[]) else {
                    report.failed += 1;
                    continue;
                };
                let edges = match prepared.follow(&run.steps) {
                    Ok(edges) => edges,
                    Err(_) if !prepared.assumed.is_empty() => {
                        report.outside_assumptions += 1;
                        continue;
                    }
                    Err(why) => {
                        report.add_once(why, |what| {
                            finding(None, what, &packet, &maps, guide, &reader, &run)
                        });
                        continue;
                    }
                };
                let least = prepared.dag.path_min_packet(&edges);
                if (packet.len() as u32) < least {
                    let what = format!(
                        "a run of a {}-byte packet takes a path whose edges say every run has at \
                         least {least} bytes",
                        packet.len()
                    );
                    report.add_once(what, |what| {
                        finding(None, what, &packet, &maps, guide, &reader, &run)
                    });
                }
                if seen.contains(&edges) {
                    continue;
                }
                for i in index.check(&edges) {
                    let claim = &claims[i];
                    let what = format!(
                        "a run takes every edge of a {} ({} edges)",
                        claim.why.name(),
                        claim.edges.len()
                    );
                    let claim = Some(claim.clone());
                    report
                        .findings
                        .push(finding(claim, what, &packet, &maps, guide, &reader, &run));
                }
                seen.insert(edges);
                corpora[g].push(packet);
            }
        }
    }
    report.distinct_paths = seen.len();
    report.approached = index.approached.iter().filter(|&&a| a).count();
    report.elapsed = started.elapsed();
    report
}

impl Report {
    /// Adds the finding `found` makes of `what` unless one says `what` already: a run leaving
    /// the graph, or too short for its path, is said once per cause (a claim is broken once
    /// anyway, as [`Index::check`] keeps).
    fn add_once(&mut self, what: String, found: impl FnOnce(String) -> Finding) {
        if !self.findings.iter().any(|f| f.what == what) {
            self.findings.push(found(what));
        }
    }
}

/// The finding `what` about `run`, a run of `packet` on `maps` with `guide`'s context.
fn finding(
    claim: Option<Claim>,
    what: String,
    packet: &[u8],
    maps: &MapSeed,
    guide: &Guide,
    reader: &DecisionReader,
    run: &linerate_vm::RunOutcome,
) -> Finding {
    Finding {
        claim,
        what,
        packet: packet.to_vec(),
        maps: maps.clone(),
        ingress_ifindex: guide.input.ingress_ifindex,
        rx_queue_index: guide.input.rx_queue_index,
        decisions: reader.decisions(&run.steps),
    }
}

/// A whole attack on one program: a search that records its claims, then guides from its
/// witnesses and from its refuted paths' prefixes, then the runs.
#[derive(Clone, Debug)]
pub struct Campaign {
    /// The search (its claims are recorded whatever these say).
    pub search: crate::ssp::Options,
    /// Inputs reaching refuted prefixes to ask the solver for; its check timeout is the
    /// search's too.
    pub reach: Reach,
    /// Also attack the same claims with random packets only, as many runs (the baseline the
    /// guides are measured against).
    pub baseline: bool,
    pub attack: Options,
}

/// What a campaign did: the search's paths and claims, the guides, and the attack's report.
#[derive(Clone, Debug)]
pub struct CampaignReport {
    pub paths_checked: u64,
    pub search_complete: bool,
    pub search_time: Duration,
    /// Guides from witnesses, and from refuted prefixes.
    pub witness_guides: usize,
    pub reached_guides: usize,
    pub guide_time: Duration,
    pub attack: Report,
    /// With [`Campaign::baseline`]: the attack with random packets only.
    pub random_only: Option<Report>,
}

/// Runs `campaign` on program `program` of `object`, prepared as `prepared`, ordering paths by
/// `model`.
pub fn campaign(
    object: &Object,
    program: usize,
    prepared: &Prepared,
    model: &linerate_cost::Model,
    campaign: &Campaign,
) -> Result<CampaignReport, crate::enumerate::EnumerateError> {
    let options = crate::solve::GuaranteeOptions {
        search: crate::ssp::Options {
            record_claims: true,
            ..campaign.search.clone()
        },
        exhaustive: false,
        check_timeout: Some(campaign.reach.check_timeout),
        learn: true,
    };
    let searched = Instant::now();
    let found = crate::solve::guarantee(object, program, prepared, model, &options, |_| {})?;
    let search_time = searched.elapsed();
    let outcome = found.outcome;
    let guided = Instant::now();
    let all = guides(object, program, prepared, &outcome, &campaign.reach);
    let witness_guides = outcome.found.iter().filter(|f| f.witness.is_ok()).count();
    let reached_guides = all.len() - witness_guides;
    let guide_time = guided.elapsed();
    let report = attack(
        object,
        program,
        prepared,
        &outcome.claims,
        &all,
        &campaign.attack,
    );
    let random_only = campaign.baseline.then(|| {
        attack(
            object,
            program,
            prepared,
            &outcome.claims,
            &[],
            &campaign.attack,
        )
    });
    Ok(CampaignReport {
        paths_checked: outcome.paths_checked,
        search_complete: outcome.complete,
        search_time,
        witness_guides,
        reached_guides,
        guide_time,
        attack: report,
        random_only,
    })
}
