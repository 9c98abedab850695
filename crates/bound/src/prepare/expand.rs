//! Expanding a program's CFG into block copies: each node is a piece of a block in one context
//! (tail-call depth, program, inlined calls, loop iterations), discovered from the entry and
//! shared by every path reaching the same context. The context only moves forward — iterations
//! grow along back edges, calls nest (the call graph is acyclic), tail calls count up — so the
//! graph is acyclic by construction; [`super::finish`] orders and trims it.

use std::collections::HashMap;

use linerate_bpf::facts::helper;
use linerate_bpf::facts::limits::{MAX_LOOPS, MAX_TAIL_CALLS};
use linerate_bpf::insn::{CallTarget, Instruction};
use linerate_bpf::ProgramKind;
use linerate_cfg::{BlockId, CallKind, Cfg};
use linerate_cost::{Cost, Item};

use super::finish::{finish, Raw, RawEdge};
use super::{
    AssumedBound, Inputs, LoopSummary, Options, PrepareError, Prepared, Programs, Summary,
    DEFAULT_MAX_UNROLL,
};
use crate::dag::Step;

/// Where a piece of a block sits in the expansion.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub(super) struct Key {
    /// Tail calls made before the program was entered.
    pub tail: u32,
    pub program: usize,
    /// Inlined calls, outermost first: the call's slot and how many loop iterations of
    /// `iterations` belong to the callers.
    pub frames: Vec<(usize, usize)>,
    /// Iteration of each enclosing loop, outermost first: header block and iteration from 0.
    pub iterations: Vec<(BlockId, u32)>,
    pub block: BlockId,
    /// First slot of the piece.
    pub start: usize,
    /// Whether the node stands for the summarised middle iterations of the innermost loop of
    /// `iterations` (whose header is `block`): no instructions of its own, one
    /// [`Step::Loop`] edge out, to the loop's last iteration.
    pub middle: bool,
}

/// What following a CFG edge leads to, as far as loops go.
enum Next {
    /// The edge cannot be taken here.
    Drop,
    /// The block at these iterations.
    Go(Vec<(BlockId, u32)>),
    /// The summarised middle iterations of the loop it closes (at these iterations).
    Middle(Vec<(BlockId, u32)>),
    /// The end of one iteration of the loop a cycle graph measures: its sink.
    Sink,
}

/// How a loop is expanded.
#[derive(Clone, Copy)]
enum Plan {
    /// Every iteration a copy: the header runs at most this often per entry.
    Unroll(u64),
    /// A first and a last iteration, and a summary of the ones between; the header runs at most
    /// this often per entry.
    Summarise(u64),
}

struct Builder<'p, 'a> {
    programs: &'p mut Programs<'a>,
    options: &'p Options,
    keys: HashMap<Key, usize>,
    raw: Vec<Raw>,
    edges: Vec<RawEdge>,
    pending: Vec<usize>,
    summaries: Vec<Summary>,
    /// Summary index of each helper call already summarised, by (program, slot).
    summarised: HashMap<(usize, usize), usize>,
    assumed: Vec<AssumedBound>,
    loops: Vec<LoopSummary>,
    /// Summary index of each loop already summarised, by (program, header block); `None` for
    /// a loop whose body cannot complete an iteration.
    loops_summarised: HashMap<(usize, BlockId), Option<usize>>,
    impossible: usize,
    tail_calls: usize,
    /// When the graph is one iteration of a summarised loop: its header (the outermost loop of
    /// every node); back edges to it lead to the sink, edges leaving it and exits nowhere.
    cycle: Option<BlockId>,
    root: Root,
    /// Name of the program being prepared, for errors.
    name: String,
}

/// The smallest packet an edge is given (`ETH_HLEN`, the shortest `BPF_PROG_TEST_RUN` takes).
pub(super) const MIN_PACKET: u32 = linerate_bpf::facts::test_run_buffer::ETH_HLEN as u32;

/// What a graph is of.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Root {
    /// A program, from its entry.
    Program,
    /// A callback function, from its entry to its exits. A tail call in it is refused: a
    /// successful one would end the program from inside the helper's summary.
    Callback,
    /// One iteration of a summarised loop, from its header (the entry) back to it. Tail calls
    /// only fall through: a successful one ends the iteration, which the graph does not count.
    Iteration,
}

/// Builds the prepared graph of the code of `program` starting at block `entry.0` (slot
/// `entry.1`).
pub(super) fn build(
    programs: &mut Programs<'_>,
    options: &Options,
    program: usize,
    entry: (BlockId, usize),
    root: Root,
) -> Result<Prepared, PrepareError> {
    let name = programs.name(program);
    let cycle = (root == Root::Iteration).then_some(entry.0);
    let tail = if root == Root::Program {
        0
    } else {
        MAX_TAIL_CALLS
    };
    let mut b = Builder {
        programs,
        options,
        keys: HashMap::new(),
        raw: Vec::new(),
        edges: Vec::new(),
        pending: Vec::new(),
        summaries: Vec::new(),
        summarised: HashMap::new(),
        assumed: Vec::new(),
        loops: Vec::new(),
        loops_summarised: HashMap::new(),
        impossible: 0,
        tail_calls: 0,
        cycle,
        root,
        name,
    };
    // Raw node 0 is the sink; the source is the first key.
    b.raw.push(Raw::sink());
    let source = b.node(Key {
        tail,
        program,
        frames: Vec::new(),
        iterations: cycle.map(|h| (h, 0)).into_iter().collect(),
        block: entry.0,
        start: entry.1,
        middle: false,
    })?;
    while let Some(n) = b.pending.pop() {
        b.expand(n)?;
    }
    let stats = super::Stats {
        impossible_edges: b.impossible,
        dead_nodes: 0,
        tail_calls: b.tail_calls,
    };
    finish(
        b.programs,
        &b.name,
        b.raw,
        b.edges,
        source,
        b.summaries,
        b.loops,
        b.assumed,
        stats,
    )
}

/// Whether helper `id` moves the packet's start or end (what the analysis proved about the
/// length before it no longer holds after it).
fn moves_packet(id: u32) -> bool {
    matches!(id, helper::XDP_ADJUST_HEAD | helper::XDP_ADJUST_TAIL)
}

impl Builder<'_, '_> {
    /// The node of `key`, created (and queued for expansion) if new.
    fn node(&mut self, key: Key) -> Result<usize, PrepareError> {
        if let Some(&n) = self.keys.get(&key) {
            return Ok(n);
        }
        // The sink and the source are nodes too.
        if self.raw.len() > self.options.max_nodes {
            return Err(PrepareError::TooLarge {
                program: self.name.clone(),
                limit: self.options.max_nodes,
            });
        }
        let n = self.raw.len();
        self.raw.push(Raw::piece(key.clone()));
        self.keys.insert(key, n);
        self.pending.push(n);
        Ok(n)
    }

    fn edge(&mut self, from: usize, to: usize, step: Step, cost: Cost, min_packet: u32) {
        self.edges.push(RawEdge {
            from,
            to,
            step,
            cost,
            min_packet: min_packet.max(MIN_PACKET),
        });
    }

    fn inputs(&mut self, p: usize) -> Result<&Inputs, PrepareError> {
        self.programs.get(p)
    }

    /// Adds the edges leaving node `n` (and the nodes they lead to).
    fn expand(&mut self, n: usize) -> Result<(), PrepareError> {
        let key = self.raw[n].key.clone().expect("the sink is never expanded");
        if key.middle {
            return self.middle(n, &key);
        }
        let zero = Cost::zero(self.programs.model.components().len());
        let inputs = self.inputs(key.program)?;
        let block = &inputs.cfg.blocks()[key.block];
        let (block_end, block_last) = (block.end, block.last);
        // The cost of the whole block (for a tail call leaving it early): its costliest way out.
        let leave_cost = {
            let mut c = inputs.cost.blocks[key.block].cost.clone();
            for &e in &block.succs {
                c.max_with(&inputs.cost.edges[e].cost);
            }
            c
        };
        let insns: Vec<(usize, Instruction)> = inputs
            .cfg
            .block_instructions(key.block)
            .iter()
            .copied()
            .filter(|(slot, _)| *slot >= key.start)
            .collect();
        for (slot, insn) in insns {
            match insn {
                Instruction::Call(CallTarget::Helper(id)) if moves_packet(id) => {
                    self.raw[n].moves_packet = true;
                }
                Instruction::Call(CallTarget::Local(_)) => {
                    self.raw[n].end = slot + 1;
                    return self.call(n, &key, slot, zero);
                }
                Instruction::Call(CallTarget::Helper(helper::TAIL_CALL)) => {
                    self.raw[n].end = slot + 1;
                    return self.tail_call(n, &key, slot, leave_cost, zero);
                }
                Instruction::Call(CallTarget::Helper(
                    id @ (helper::LOOP | helper::FOR_EACH_MAP_ELEM),
                )) => {
                    self.raw[n].end = slot + 1;
                    return self.callbacks(n, &key, slot, id);
                }
                _ => {}
            }
        }
        self.raw[n].end = block_end;
        self.raw[n].branch_pc = match insns_last(self.inputs(key.program)?, key.block) {
            Some(Instruction::Jump { .. } | Instruction::MayGoto { .. }) => Some(block_last),
            _ => None,
        };
        self.leave_block(n, &key)
    }

    /// The edges out of the last piece of a block: its CFG edges, or a return or exit.
    fn leave_block(&mut self, n: usize, key: &Key) -> Result<(), PrepareError> {
        let inputs = self.programs.get(key.program)?;
        let block = &inputs.cfg.blocks()[key.block];
        let succs = block.succs.clone();
        let block_cost = inputs.cost.blocks[key.block].cost.clone();
        if succs.is_empty() {
            // An exit: out of the program, or back to the caller.
            let Some((&(call, caller_iterations), outer)) = key.frames.split_last() else {
                // Leaving the program ends no iteration of a measured loop.
                if self.cycle.is_none() {
                    self.edge(n, 0, Step::Exit, block_cost, 0);
                }
                return Ok(());
            };
            let caller = inputs
                .cfg
                .block_of(call)
                .expect("a call site's slot is in a block");
            let to = self.node(Key {
                tail: key.tail,
                program: key.program,
                frames: outer.to_vec(),
                iterations: key.iterations[..caller_iterations].to_vec(),
                block: caller,
                start: call + 1,
                middle: false,
            })?;
            self.edge(n, to, Step::Return { call }, block_cost, 0);
            return Ok(());
        }
        for e in succs {
            let inputs = self.programs.get(key.program)?;
            let Some(min) = inputs.analysis.min_packet_len(e) else {
                self.impossible += 1;
                continue;
            };
            let edge = inputs.cfg.edges()[e];
            let cost = inputs.cost.edges[e].cost.clone();
            let start = inputs.cfg.blocks()[edge.to].first;
            let min = u32::try_from(min).unwrap_or(u32::MAX);
            let (iterations, middle) = match self.loops_after(key, e)? {
                Next::Drop => continue,
                Next::Sink => {
                    self.edge(n, 0, Step::Flow(edge.kind), cost, min);
                    continue;
                }
                Next::Go(iterations) => (iterations, false),
                Next::Middle(iterations) => (iterations, true),
            };
            let to = self.node(Key {
                tail: key.tail,
                program: key.program,
                frames: key.frames.clone(),
                iterations,
                block: edge.to,
                start,
                middle,
            })?;
            self.edge(n, to, Step::Flow(edge.kind), cost, min);
        }
        Ok(())
    }

    /// Where CFG edge `e` from the block of `key` leads, as far as loops go: loops it leaves
    /// dropped, a loop it enters at iteration 0, a back edge's loop one iteration on (or, for a
    /// summarised loop, from the first iteration to the summary of the middle ones); nowhere for
    /// a back edge out of the last iteration a loop's bound allows, the entry of a loop that
    /// never runs, and, in a cycle graph, an edge leaving the measured loop.
    fn loops_after(&mut self, key: &Key, e: linerate_cfg::EdgeId) -> Result<Next, PrepareError> {
        let name = self.programs.name(key.program);
        let inputs = self.programs.get(key.program)?;
        let cfg = &inputs.cfg;
        let edge = cfg.edges()[e];
        let func = cfg
            .function_of(edge.from)
            .expect("an edge's block is in a function");
        let base = key.frames.last().map_or(0, |&(_, len)| len);
        let mut iterations = key.iterations.clone();
        let in_loop = |header: BlockId, b: BlockId| {
            func.loops()
                .iter()
                .find(|l| l.header == header)
                .is_some_and(|l| l.body.binary_search(&b).is_ok())
        };
        while iterations.len() > base {
            let (header, _) = *iterations.last().expect("longer than base");
            if in_loop(header, edge.to) {
                break;
            }
            iterations.pop();
        }
        if self.cycle.is_some() && iterations.is_empty() {
            return Ok(Next::Drop);
        }
        let Some(header) = func.loops().iter().find(|l| l.header == edge.to) else {
            return Ok(Next::Go(iterations));
        };
        let back = header.back_edges.contains(&e);
        let irreducible = PrepareError::Irreducible {
            program: name,
            function: func.name.clone(),
            slot: header.header_slot,
        };
        if !back && func.retreating_edges().contains(&e) {
            return Err(irreducible);
        }
        if back && iterations.len() == 1 && self.cycle == Some(edge.to) {
            return Ok(Next::Sink);
        }
        let plan = self.plan(key.program, edge.to)?;
        if !back {
            let runs = match plan {
                Plan::Unroll(runs) | Plan::Summarise(runs) => runs,
            };
            if runs == 0 {
                return Ok(Next::Drop);
            }
            iterations.push((edge.to, 0));
            return Ok(Next::Go(iterations));
        }
        let current = iterations.len() > base;
        let Some((h, i)) = iterations
            .last_mut()
            .filter(|(h, _)| current && *h == edge.to)
        else {
            return Err(irreducible);
        };
        debug_assert_eq!(*h, edge.to);
        match plan {
            Plan::Unroll(runs) => {
                let next = *i + 1;
                if u64::from(next) >= runs {
                    return Ok(Next::Drop);
                }
                *i = next;
                Ok(Next::Go(iterations))
            }
            // The first iteration's back edges lead to the middle, the last one's nowhere.
            Plan::Summarise(_) if *i == 0 => {
                *i = 1;
                Ok(Next::Middle(iterations))
            }
            Plan::Summarise(_) => Ok(Next::Drop),
        }
    }

    /// How the loop at `header` is expanded. Its bound: the analysis's; for a loop every
    /// iteration of which runs a `may_goto`, the kernel's loop budget; else the user's
    /// `--max-unroll`, by assumption. Loops bounded above `--max-unroll` (or
    /// [`DEFAULT_MAX_UNROLL`]) are summarised.
    fn plan(&mut self, program: usize, header: BlockId) -> Result<Plan, PrepareError> {
        let max_unroll = self.options.max_unroll;
        let name = self.programs.name(program);
        let inputs = self.programs.get(program)?;
        let slot = inputs.cfg.blocks()[header].first;
        let function = inputs
            .cfg
            .function_of(header)
            .map_or_else(String::new, |f| f.name.clone());
        let proven = inputs
            .bounds
            .get(&header)
            .copied()
            .flatten()
            .or_else(|| budgeted(&inputs.cfg, header).then_some(MAX_LOOPS + 1));
        let limit = u64::from(max_unroll.unwrap_or(DEFAULT_MAX_UNROLL)).max(2);
        match (proven, max_unroll) {
            (Some(runs), _) if runs > limit => Ok(Plan::Summarise(runs)),
            (Some(runs), _) => Ok(Plan::Unroll(runs)),
            (None, Some(max)) => {
                let assumed = AssumedBound {
                    program,
                    function,
                    header_slot: slot,
                    max_header_runs: max,
                };
                if !self.assumed.contains(&assumed) {
                    self.assumed.push(assumed);
                }
                Ok(Plan::Unroll(u64::from(max)))
            }
            (None, None) => Err(PrepareError::UnboundedLoop {
                program: name,
                function,
                slot,
            }),
        }
    }

    /// The edge out of a node standing for a summarised loop's middle iterations: the most of
    /// them a run makes (the bound less the first and the last) at one iteration's worst each,
    /// to the loop's last iteration.
    fn middle(&mut self, n: usize, key: &Key) -> Result<(), PrepareError> {
        let Plan::Summarise(runs) = self.plan(key.program, key.block)? else {
            unreachable!("only summarised loops have middle iterations");
        };
        let Some(summary) = self.summarise_loop(key.program, key.block)? else {
            // No iteration can complete: no run reaches the middle.
            return Ok(());
        };
        if self.loops[summary].graph.moves_packet() {
            self.raw[n].moves_packet = true;
        }
        let middle = runs.saturating_sub(2);
        let cost = Cost(
            self.loops[summary]
                .per_iteration
                .0
                .iter()
                .map(|c| c * middle as f64)
                .collect(),
        );
        let mut iterations = key.iterations.clone();
        if let Some((_, i)) = iterations.last_mut() {
            *i = u32::try_from(runs - 1).unwrap_or(u32::MAX);
        }
        let to = self.node(Key {
            iterations,
            middle: false,
            ..key.clone()
        })?;
        let header = self.loops[summary].header_slot;
        self.edge(n, to, Step::Loop { header, summary }, cost, 0);
        Ok(())
    }

    /// Prepares one iteration of the loop at `header` as a graph of its own and summarises it;
    /// `None` if no iteration can complete.
    fn summarise_loop(
        &mut self,
        program: usize,
        header: BlockId,
    ) -> Result<Option<usize>, PrepareError> {
        if let Some(&done) = self.loops_summarised.get(&(program, header)) {
            return Ok(done);
        }
        let Plan::Summarise(runs) = self.plan(program, header)? else {
            unreachable!("only summarised loops are measured");
        };
        let inputs = self.programs.get(program)?;
        let header_slot = inputs.cfg.blocks()[header].first;
        let function = inputs
            .cfg
            .function_of(header)
            .map_or_else(String::new, |f| f.name.clone());
        let graph = match build(
            self.programs,
            self.options,
            program,
            (header, header_slot),
            Root::Iteration,
        ) {
            Ok(graph) => graph,
            Err(PrepareError::NoPath { .. }) => {
                self.loops_summarised.insert((program, header), None);
                return Ok(None);
            }
            Err(e) => return Err(e),
        };
        let worst = super::finish::worst_paths(&graph.dag);
        let components = self.programs.model.components().len();
        let per_iteration = Cost(
            (0..components)
                .map(|c| graph.dag.path_cost(&worst[c]).0[c])
                .collect(),
        );
        let index = self.loops.len();
        self.loops.push(LoopSummary {
            program,
            header_slot,
            function,
            max_header_runs: runs,
            per_iteration,
            graph: Box::new(graph),
            worst,
        });
        self.loops_summarised.insert((program, header), Some(index));
        Ok(Some(index))
    }

    /// A BPF-to-BPF call at `slot`: into the callee's entry, in a new frame.
    fn call(&mut self, n: usize, key: &Key, slot: usize, zero: Cost) -> Result<(), PrepareError> {
        let inputs = self.programs.get(key.program)?;
        let cfg = &inputs.cfg;
        let callee = cfg
            .calls()
            .iter()
            .find(|c| c.slot == slot && c.kind == CallKind::Call)
            .map(|c| c.callee)
            .expect("every local call is a call site");
        let f = &cfg.functions()[callee];
        if inputs.analysis.block_state(f.entry).is_none() {
            self.impossible += 1;
            return Ok(());
        }
        let (entry, start) = (f.entry, f.start);
        let mut frames = key.frames.clone();
        frames.push((slot, key.iterations.len()));
        let to = self.node(Key {
            tail: key.tail,
            program: key.program,
            frames,
            iterations: key.iterations.clone(),
            block: entry,
            start,
            middle: false,
        })?;
        self.edge(n, to, Step::Call { call: slot }, zero, 0);
        Ok(())
    }

    /// A tail call at `slot`: into each program the array may hold (below the kernel's limit),
    /// and falling through.
    fn tail_call(
        &mut self,
        n: usize,
        key: &Key,
        slot: usize,
        leave_cost: Cost,
        zero: Cost,
    ) -> Result<(), PrepareError> {
        let object = self.programs.object;
        if self.root == Root::Callback {
            return Err(PrepareError::TailCallInCallback {
                program: self.programs.name(key.program),
                slot,
            });
        }
        if key.tail < MAX_TAIL_CALLS {
            let fact = self.programs.get(key.program)?.analysis.fact(slot);
            let declared: Vec<usize> = match fact {
                Some(linerate_analysis::Fact::MapCall(Some(m))) => object
                    .maps
                    .get(m)
                    .map(|d| d.initial_programs.iter().map(|&(_, p)| p).collect())
                    .unwrap_or_default(),
                _ => Vec::new(),
            };
            let mut targets: Vec<usize> = if declared.is_empty() {
                (0..object.programs.len())
                    .filter(|&p| object.programs[p].kind() == ProgramKind::Xdp)
                    .collect()
            } else {
                declared
            };
            targets.sort_unstable();
            targets.dedup();
            for q in targets {
                let (entry, start) = {
                    let f = &self.programs.get(q)?.cfg.functions()[0];
                    (f.entry, f.start)
                };
                let to = self.node(Key {
                    tail: key.tail + 1,
                    program: q,
                    frames: Vec::new(),
                    iterations: Vec::new(),
                    block: entry,
                    start,
                    middle: false,
                })?;
                self.tail_calls += 1;
                let step = Step::TailCall {
                    call: slot,
                    program: Some(q),
                };
                self.edge(n, to, step, leave_cost.clone(), 0);
            }
        }
        let to = self.node(Key {
            start: slot + 1,
            ..key.clone()
        })?;
        let step = Step::TailCall {
            call: slot,
            program: None,
        };
        self.edge(n, to, step, zero, 0);
        Ok(())
    }

    /// The helper `helper` calling a callback at `slot`: one edge priced by the callback's
    /// summary.
    fn callbacks(
        &mut self,
        n: usize,
        key: &Key,
        slot: usize,
        helper: u32,
    ) -> Result<(), PrepareError> {
        let summary = match self.summarised.get(&(key.program, slot)) {
            Some(&s) => Some(s),
            None => self.summarise(key.program, slot, helper)?,
        };
        let Some(summary) = summary else {
            // The analysis reaches no execution of the helper.
            self.impossible += 1;
            return Ok(());
        };
        let s = &self.summaries[summary];
        let cost = s.total.clone();
        if s.graph.moves_packet() {
            self.raw[n].moves_packet = true;
        }
        let to = self.node(Key {
            start: slot + 1,
            ..key.clone()
        })?;
        self.edge(
            n,
            to,
            Step::Callbacks {
                call: slot,
                summary,
            },
            cost,
            0,
        );
        Ok(())
    }

    /// Prepares the callback of the helper `helper` at `slot` and summarises it; `None` if the analysis
    /// never reaches the helper. Where the call site may pass several functions (clang merging
    /// the helper calls of a switch), each is prepared: the summary's per-call cost is their
    /// component-wise worst, and its graph and worst paths those of the dearest in the first
    /// component.
    fn summarise(
        &mut self,
        program: usize,
        slot: usize,
        helper: u32,
    ) -> Result<Option<usize>, PrepareError> {
        let name = self.programs.name(program);
        let inputs = self.programs.get(program)?;
        let ((lo, hi), max_calls) = match inputs.analysis.fact(slot) {
            Some(linerate_analysis::Fact::Callback {
                starts: Some(starts),
                max_calls,
            }) => (starts, max_calls),
            None => return Ok(None),
            Some(_) => {
                return Err(PrepareError::UnknownCallback {
                    program: name,
                    slot,
                })
            }
        };
        let candidates: Vec<(BlockId, usize, String)> = inputs
            .cfg
            .functions()
            .iter()
            .filter(|f| (lo..=hi).contains(&f.start))
            .map(|f| (f.entry, f.start, f.name.clone()))
            .collect();
        if candidates.is_empty() {
            return Err(PrepareError::UnknownCallback {
                program: name,
                slot,
            });
        }
        let model = self.programs.model;
        /// The callback dearest in the first component so far: per-call cost, start slot, name,
        /// graph and worst paths.
        struct Dearest(Cost, usize, String, Prepared, Vec<Vec<crate::dag::EdgeId>>);
        let mut dearest: Option<Dearest> = None;
        let mut per_call_worst: Option<Cost> = None;
        for (entry, start, function) in candidates {
            let call = Item::Callback(helper);
            let call_cost = model
                .price(&call)
                .map_err(|reason| PrepareError::Cost {
                    program: name.clone(),
                    source: Box::new(linerate_cost::CostError::Unsupported {
                        target: model.target().into(),
                        function: function.clone(),
                        slot,
                        item: call.to_string(),
                        reason,
                    }),
                })?
                .cost;
            let graph = build(
                self.programs,
                self.options,
                program,
                (entry, start),
                Root::Callback,
            )?;
            let worst = super::finish::worst_paths(&graph.dag);
            let mut per_call = call_cost;
            let components = per_call.0.len();
            for (c, path) in worst.iter().enumerate().take(components) {
                per_call.0[c] += graph.dag.path_cost(path).0[c];
            }
            match &mut per_call_worst {
                Some(w) => w.max_with(&per_call),
                None => per_call_worst = Some(per_call.clone()),
            }
            let dearer = dearest
                .as_ref()
                .is_none_or(|Dearest(cost, ..)| per_call.0.first() > cost.0.first());
            if dearer {
                dearest = Some(Dearest(per_call, start, function, graph, worst));
            }
        }
        let (Some(per_call), Some(Dearest(_, start, function, graph, worst))) =
            (per_call_worst, dearest)
        else {
            return Err(PrepareError::UnknownCallback {
                program: name,
                slot,
            });
        };
        let total = Cost(per_call.0.iter().map(|c| c * max_calls as f64).collect());
        let index = self.summaries.len();
        self.summaries.push(Summary {
            program,
            call: slot,
            callback: start,
            function,
            max_calls,
            per_call,
            total,
            graph: Box::new(graph),
            worst,
        });
        self.summarised.insert((program, slot), index);
        Ok(Some(index))
    }
}

/// Whether every iteration of the loop with header `header` runs a `may_goto`: a block of the
/// loop ending in one dominates every back edge, so the kernel's budget bounds the loop.
fn budgeted(cfg: &Cfg, header: BlockId) -> bool {
    let Some(l) = cfg
        .function_of(header)
        .and_then(|f| f.loops().iter().find(|l| l.header == header))
    else {
        return false;
    };
    l.body.iter().any(|&b| {
        matches!(
            cfg.block_instructions(b).last(),
            Some((_, Instruction::MayGoto { .. }))
        ) && l
            .back_edges
            .iter()
            .all(|&e| cfg.dominates(b, cfg.edges()[e].from))
    })
}

/// The last instruction of block `b`.
fn insns_last(inputs: &Inputs, b: BlockId) -> Option<Instruction> {
    inputs.cfg.block_instructions(b).last().map(|(_, i)| *i)
}
