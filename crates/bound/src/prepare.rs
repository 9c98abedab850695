//! Building the [`crate::dag::PathDag`] of a program (paper 000 §5.2).
//!
//! The graph is the program's CFG ([`linerate_cfg::Cfg`]) expanded until it is loop-free, with
//! what linerate's own analysis ([`linerate_analysis::Analysis`]) proved and the device model's
//! prices ([`linerate_cost::ProgramCost`], callees apart) on its edges:
//!
//! - **Calls** are inlined: a node per block per call context (the chain of call sites), the
//!   callee's exits returning to the rest of the calling block.
//! - **Loops** are unrolled: a node per block per iteration of every enclosing loop, as many
//!   iterations as the loop's trip bound allows; the back edge out of the last allowed iteration
//!   is not in the graph. The bound is the analysis's ([`linerate_analysis::LoopBound`]), or, for
//!   a loop every iteration of which runs a `may_goto`, the kernel's loop budget
//!   (`BPF_MAX_LOOPS`, [`linerate_bpf::facts::limits::MAX_LOOPS`]). A loop without either is an
//!   error naming its header, unless [`Options::max_unroll`] gives `N`: the loop is then unrolled
//!   `N` times, and the graph covers only the runs in which it runs at most `N` times
//!   ([`Prepared::assumed`] lists such loops, so a report can say what the guarantee assumes).
//! - **Loops too long to unroll** — bounded above `--max-unroll` ([`DEFAULT_MAX_UNROLL`] without
//!   it), `may_goto` loops with their budget of millions — are summarised: the first iteration
//!   is unrolled, its back edges lead to a node standing for the middle iterations, whose one
//!   [`Step::Loop`] edge costs the most of them a run makes (the bound less two) times one
//!   iteration's worst, and leads to a copy of the last iteration, whose back edges go nowhere.
//!   Every run is covered: one iteration exits from the first copy, more go through the middle
//!   (priced for the most) and exit from the last. One iteration's worst is, per component, the
//!   largest cost of a path from the header back to it on the loop's own prepared graph (edges
//!   leaving the loop cut), kept in [`Prepared::loops`] with its worst paths for a witness.
//! - **Callbacks** of `bpf_loop` and `bpf_for_each_map_elem` are not unrolled: the edge through
//!   the helper costs the most calls one execution makes (the analysis's
//!   [`linerate_analysis::Fact::Callback`]: the helper's count argument, or the map's
//!   `max_entries`) times one call's worst (`callback.<helper>` plus the component-wise maximum over the
//!   callback's own prepared graph), and that graph is kept in [`Prepared::summaries`] with its
//!   worst path per component, for a witness to follow.
//! - **Tail calls** lead into every program the program array may hold, and fall through (a
//!   missing entry). What the array may hold: the programs its declaration places in it
//!   (`initial_programs`), or, where the analysis does not know the array or the array declares no
//!   programs (user space fills it at run time), every XDP program of the object. A chain is at
//!   most the kernel's 33 tail calls long (`MAX_TAIL_CALL_CNT`): the 34th program in a run only
//!   falls through. Copies of a program entered at the same tail-call depth are shared. A tail
//!   call inside a callback is refused ([`PrepareError::TailCallInCallback`]): the summary has no
//!   way to end the program from inside the helper.
//! - **Impossible edges** — those the analysis finds no state for — are left out, and so is
//!   everything only they lead to. The analysis then runs again over the graph's block copies,
//!   one state per copy (`contexts`): what it proves impossible there is removed too, and the
//!   pairs of edges no run takes both of are kept in [`Prepared::conflicts`].
//!
//! Edge costs: a CFG edge costs its source block and branch outcome (stalls of blocking
//! operations over-approximated per edge by the cost crate); the model's per-packet work is left
//! to the rate function (see [`crate::dag`]).
//!
//! Minimum packet sizes: an edge of the CFG has the shortest packet length the analysis proved
//! along it (`Analysis::min_packet_len`), never below 14 bytes (`ETH_HLEN`, the shortest packet
//! `BPF_PROG_TEST_RUN` accepts); every edge then also has at least the least of the edges into its
//! source node, since each execution through it came through one of them (the graph's contexts
//! tell apart what the analysis, one state per CFG edge, joins). A path's minimum packet size is
//! the largest of its edges' ([`PathDag::path_min_packet`]). The analysis's
//! lengths are those of the packet as it is at that point; once `bpf_xdp_adjust_head` or
//! `bpf_xdp_adjust_tail` may have run on a path to an edge, what it proves there says nothing
//! about the packet that arrived, so such an edge takes only what held before.

mod contexts;
mod expand;
mod finish;
mod follow;

use std::collections::HashMap;

use linerate_analysis::Analysis;
use linerate_bpf::program::Object;
use linerate_bpf::ProgramKind;
use linerate_cfg::{Cfg, CfgError, Decision, EdgeKind};
use linerate_cost::{Callees, Cost, CostError, Model, PriceOverride, ProgramCost};

use crate::dag::{EdgeId, NodeId, PathDag, Step};

/// Iterations a loop with a proven bound is unrolled to without `--max-unroll`; a loop bounded
/// above is summarised.
pub const DEFAULT_MAX_UNROLL: u32 = 1024;

/// How the graph is prepared.
#[derive(Clone, Debug, PartialEq)]
pub struct Options {
    /// `--max-unroll N`: loops bounded above `N` iterations are summarised, and a loop without a
    /// bound is assumed to run at most `N` times (listed in [`Prepared::assumed`]). `None`: the
    /// limit is [`DEFAULT_MAX_UNROLL`], and a loop without a bound is an error.
    pub max_unroll: Option<u32>,
    /// Most nodes the graph may have (of the program and of each callback's own graph); a larger
    /// graph is refused rather than built.
    pub max_nodes: usize,
    /// Prices replacing the model's for one program (by index): a device whose edges cost what a
    /// compiled schedule executes (the hXDP core, `linerate-hxdp`).
    pub prices: Option<(usize, PriceOverride)>,
}

impl Default for Options {
    fn default() -> Options {
        Options {
            max_unroll: None,
            max_nodes: 1 << 20,
            prices: None,
        }
    }
}

/// Why a program's path graph cannot be built.
#[derive(Debug, thiserror::Error)]
pub enum PrepareError {
    #[error("the object has no program {0}")]
    NoProgram(usize),
    #[error("program `{program}` is a {kind:?} program: bounds are for XDP programs")]
    NotXdp { program: String, kind: ProgramKind },
    #[error("program `{program}`: the prices given for it do not fit: {reason}")]
    Prices { program: String, reason: String },
    #[error("program `{program}`: {source}")]
    Cfg {
        program: String,
        #[source]
        source: Box<CfgError>,
    },
    #[error("program `{program}`: {source}")]
    Cost {
        program: String,
        #[source]
        source: Box<CostError>,
    },
    #[error(
        "program `{program}`, function `{function}`: the loop with header at slot {slot} has no \
         bound linerate's analysis can establish; `--max-unroll N` unrolls it N times, assuming \
         it never runs more often"
    )]
    UnboundedLoop {
        program: String,
        function: String,
        slot: usize,
    },
    #[error(
        "program `{program}`, function `{function}`: control flow entering a cycle at slot {slot} \
         is not a loop (irreducible): it cannot be unrolled"
    )]
    Irreducible {
        program: String,
        function: String,
        slot: usize,
    },
    #[error(
        "program `{program}`, slot {slot}: the analysis does not know which callback the helper \
         calls"
    )]
    UnknownCallback { program: String, slot: usize },
    #[error(
        "program `{program}`: the path graph needs more than {limit} nodes (loops unrolled, calls \
         inlined, tail calls followed); `--max-unroll N` refuses long loops early"
    )]
    TooLarge { program: String, limit: usize },
    #[error(
        "program `{program}`, slot {slot}: a tail call inside a callback (bpf_loop, \
         bpf_for_each_map_elem) is not supported by the path graph"
    )]
    TailCallInCallback { program: String, slot: usize },
    #[error("program `{program}`: no path through it can exit (every path is impossible)")]
    NoPath { program: String },
}

/// A loop the analysis could not bound, unrolled the `--max-unroll` number of times.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AssumedBound {
    pub program: usize,
    pub function: String,
    pub header_slot: usize,
    /// The header runs at most this often each time the loop is entered, by assumption.
    pub max_header_runs: u32,
}

/// The summary of a helper calling a callback: what [`Step::Callbacks`] edges refer to.
#[derive(Clone, Debug)]
pub struct Summary {
    /// Program and slot of the helper call.
    pub program: usize,
    pub call: usize,
    /// First slot of the callback function, and its name.
    pub callback: usize,
    pub function: String,
    /// Most calls of the callback one execution of the helper makes.
    pub max_calls: u64,
    /// Cost of one call at its worst: `callback.<helper>` plus, per component, the largest cost of a
    /// path through the callback's graph.
    pub per_call: Cost,
    /// Cost on the edge: `max_calls × per_call`.
    pub total: Cost,
    /// The callback's own prepared graph (its exits lead to its sink).
    pub graph: Box<Prepared>,
    /// Per component, a path of `graph` with the largest cost in that component.
    pub worst: Vec<Vec<EdgeId>>,
}

/// The summary of a loop too long to unroll: what [`Step::Loop`] edges refer to.
#[derive(Clone, Debug)]
pub struct LoopSummary {
    pub program: usize,
    /// First slot of the loop's header, and the function holding it.
    pub header_slot: usize,
    pub function: String,
    /// The most times the header runs per entry of the loop.
    pub max_header_runs: u64,
    /// Cost of one iteration at its worst: per component, the largest cost of a path of `graph`.
    pub per_iteration: Cost,
    /// One iteration as a graph of its own: from the header to the sink, which the loop's back
    /// edges lead to.
    pub graph: Box<Prepared>,
    /// Per component, a path of `graph` with the largest cost in that component.
    pub worst: Vec<Vec<EdgeId>>,
}

/// Sizes and work of a preparation, for reports.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Stats {
    /// Edges of the expanded graph left out because the analysis found them impossible.
    pub impossible_edges: usize,
    /// Nodes and edges removed because no path through them reaches the sink.
    pub dead_nodes: usize,
    /// Tail-call edges into another program (successful tail calls).
    pub tail_calls: usize,
}

/// A program's prepared path graph and what interprets it.
#[derive(Clone, Debug)]
pub struct Prepared {
    pub dag: PathDag,
    /// For each node, one past the last slot of its piece of the block (its instructions are
    /// `node.slot..ends[node]`; the sink's is 0).
    pub ends: Vec<usize>,
    /// Summaries of callbacks, as [`Step::Callbacks`] edges refer to them.
    pub summaries: Vec<Summary>,
    /// Summaries of loops too long to unroll, as [`Step::Loop`] edges refer to them.
    pub loops: Vec<LoopSummary>,
    /// Loops unrolled by assumption (`--max-unroll`), not by a proven bound.
    pub assumed: Vec<AssumedBound>,
    pub stats: Stats,
    /// For each node, the slot of the conditional jump (or `may_goto`) ending it, if any.
    branch_pc: Vec<Option<usize>>,
    /// Whether some path may run `bpf_xdp_adjust_head` or `bpf_xdp_adjust_tail`.
    moves_packet: bool,
    /// Sets of edges no run takes all of, proven by the analysis per context (`contexts`): the
    /// search forbids them before its first path.
    pub conflicts: Vec<Vec<EdgeId>>,
}

impl Prepared {
    /// Whether some path of the graph may move the packet's start or end
    /// (`bpf_xdp_adjust_head`, `bpf_xdp_adjust_tail`), in a summarised callback too.
    pub fn moves_packet(&self) -> bool {
        self.moves_packet
    }

    /// The slot of the conditional jump (or `may_goto`) ending node `node`, if any.
    pub fn branch_pc(&self, node: NodeId) -> Option<usize> {
        self.branch_pc.get(node).copied().flatten()
    }

    /// The choices along `path` (edges from the source, in order) that the instructions do not
    /// fix: each conditional jump's outcome and each tail call's target, in execution order
    /// (branches inside summarised callbacks and a summarised loop's middle iterations are not
    /// among them: the path does not fix them).
    pub fn decisions(&self, path: &[EdgeId]) -> Vec<Decision> {
        self.decision_edges(path)
            .into_iter()
            .map(|(d, _)| d)
            .collect()
    }

    /// The header slot of the first summarised loop whose middle iterations `edges` cross
    /// ([`Step::Loop`]), if any. The checker gets no decisions for them and runs the last
    /// iteration's right after the first: it checks such a path as a run of two iterations, so
    /// a refutation of what comes after the summary proves nothing.
    pub fn summarised_loop_in(&self, edges: &[EdgeId]) -> Option<usize> {
        edges.iter().find_map(|&e| match self.dag.edges[e].step {
            Step::Loop { header, .. } => Some(header),
            _ => None,
        })
    }

    /// Whether a run that entered `blocks` did the work `path`'s summaries price: at every
    /// callback summary it crosses, the summary's most calls (its callback's first block entered
    /// `max_calls` times per crossing, and no more often). False where `path` crosses a loop's
    /// summary (its middle iterations are not told apart in the blocks), or a callback that
    /// itself crosses a summary.
    pub fn makes_summarised_calls(
        &self,
        path: &[EdgeId],
        blocks: &[linerate_smt::BlockRef],
    ) -> bool {
        let mut expected: HashMap<(usize, usize), u64> = HashMap::new();
        for &e in path {
            match self.dag.edges[e].step {
                Step::Loop { .. } => return false,
                Step::Callbacks { summary, .. } => {
                    let s = &self.summaries[summary];
                    if !s.graph.summaries.is_empty() || !s.graph.loops.is_empty() {
                        return false;
                    }
                    *expected.entry((s.program, s.callback)).or_default() += s.max_calls;
                }
                _ => {}
            }
        }
        expected.iter().all(|(&(program, slot), &calls)| {
            let entered = blocks
                .iter()
                .filter(|b| b.program == program && b.slot == slot)
                .count() as u64;
            entered == calls
        })
    }

    /// [`Prepared::decisions`], each with the edge of `path` that makes it.
    pub fn decision_edges(&self, path: &[EdgeId]) -> Vec<(Decision, EdgeId)> {
        let mut out = Vec::new();
        for &e in path {
            let edge = &self.dag.edges[e];
            match edge.step {
                Step::Flow(kind @ (EdgeKind::Taken | EdgeKind::NotTaken)) => {
                    if let Some(pc) = self.branch_pc[edge.from] {
                        let taken = kind == EdgeKind::Taken;
                        out.push((Decision::Branch { pc, taken }, e));
                    }
                }
                Step::TailCall { call, program } => {
                    out.push((Decision::TailCall { pc: call, program }, e))
                }
                _ => {}
            }
        }
        out
    }
}

/// What preparing needs of each program: its CFG, its analysis and its costs (callees apart).
pub(crate) struct Inputs {
    pub cfg: Cfg,
    pub analysis: Analysis,
    pub cost: ProgramCost,
    /// Trip bound of each loop, by header block: `None` where the analysis found none.
    pub bounds: HashMap<usize, Option<u64>>,
}

/// The inputs of the programs met so far, built on first use.
pub(crate) struct Programs<'a> {
    pub object: &'a Object,
    pub model: &'a Model,
    prices: Option<&'a (usize, PriceOverride)>,
    inputs: Vec<Option<Inputs>>,
}

impl<'a> Programs<'a> {
    fn new(
        object: &'a Object,
        model: &'a Model,
        prices: Option<&'a (usize, PriceOverride)>,
    ) -> Programs<'a> {
        Programs {
            object,
            model,
            prices,
            inputs: (0..object.programs.len()).map(|_| None).collect(),
        }
    }

    pub fn name(&self, p: usize) -> String {
        self.object
            .programs
            .get(p)
            .map_or_else(|| format!("#{p}"), |prog| prog.name.clone())
    }

    /// Program `p`'s inputs if they were built.
    pub fn get_built(&self, p: usize) -> Option<&Inputs> {
        self.inputs.get(p).and_then(Option::as_ref)
    }

    /// Program `p`'s inputs, built if this is the first time.
    pub fn get(&mut self, p: usize) -> Result<&Inputs, PrepareError> {
        let program = self
            .object
            .programs
            .get(p)
            .ok_or(PrepareError::NoProgram(p))?;
        if self.inputs[p].is_none() {
            let kind = program.kind();
            if kind != ProgramKind::Xdp {
                return Err(PrepareError::NotXdp {
                    program: program.name.clone(),
                    kind,
                });
            }
            let cfg = Cfg::build(program).map_err(|source| PrepareError::Cfg {
                program: program.name.clone(),
                source: Box::new(source),
            })?;
            let analysis = Analysis::run(self.object, &cfg);
            let mut cost =
                ProgramCost::with_callees(self.object, &cfg, &analysis, self.model, Callees::Apart)
                    .map_err(|source| PrepareError::Cost {
                        program: program.name.clone(),
                        source: Box::new(source),
                    })?;
            if let Some((_, prices)) = self.prices.filter(|(q, _)| *q == p) {
                cost.replace_prices(prices, self.model)
                    .map_err(|reason| PrepareError::Prices {
                        program: program.name.clone(),
                        reason,
                    })?;
            }
            let bounds = analysis
                .loop_bounds()
                .iter()
                .map(|b| (b.header, b.max_header_runs))
                .collect();
            self.inputs[p] = Some(Inputs {
                cfg,
                analysis,
                cost,
                bounds,
            });
        }
        Ok(self.inputs[p].as_ref().expect("built above"))
    }
}

/// Prepares the path graph of program `program` of `object` under `model`.
pub fn prepare(
    object: &Object,
    program: usize,
    model: &Model,
    options: &Options,
) -> Result<Prepared, PrepareError> {
    let mut programs = Programs::new(object, model, options.prices.as_ref());
    let entry = {
        let inputs = programs.get(program)?;
        let f = &inputs.cfg.functions()[0];
        (f.entry, f.start)
    };
    let mut prepared = expand::build(
        &mut programs,
        options,
        program,
        entry,
        expand::Root::Program,
    )?;
    if prepared.dag.nodes.len() <= contexts::MAX_NODES {
        let proven = contexts::prove(&programs, &prepared);
        let name = programs.name(program);
        let edge_id = finish::remove_edges(&mut prepared, &proven.impossible, &name)?;
        prepared.conflicts = proven
            .conflicts
            .iter()
            .filter_map(|pair| pair.iter().map(|&e| edge_id[e]).collect())
            .collect();
    }
    Ok(prepared)
}
