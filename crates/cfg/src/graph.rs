//! The graph itself: basic blocks, edges, call sites and [`Cfg::build`].
//!
//! Blocks are numbered once for the whole program, function after function in the order of
//! [`Program::functions`], each function's blocks in slot order; so a function's blocks are a
//! contiguous range of ids and the whole-program view is simply all blocks and all edges. Edges
//! never leave a function: calls stay inside their block and are listed separately as
//! [`CallSite`]s, which is what an inter-procedural analysis follows.

use std::ops::Range;

use linerate_bpf::insn::relative_target;
use linerate_bpf::insn::{CallTarget, Imm64, Instruction};
use linerate_bpf::Program;
use serde::{Deserialize, Serialize};

use crate::analysis::{self, FunctionAnalysis};
use crate::error::CfgError;

/// Index of a block in [`Cfg::blocks`].
pub type BlockId = usize;
/// Index of an edge in [`Cfg::edges`].
pub type EdgeId = usize;
/// Index of a function in [`Cfg::functions`] (the same as in [`Program::functions`]).
pub type FuncId = usize;

/// How control reaches the target of an edge.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum EdgeKind {
    /// The source block ends with a non-branching instruction and the next slot starts a block.
    Fallthrough,
    /// The condition of the conditional jump ending the source block holds.
    Taken,
    /// The condition of the conditional jump ending the source block does not hold.
    NotTaken,
    /// The source block ends with an unconditional jump (`ja`/`gotol`).
    Unconditional,
}

/// A control-flow edge between two blocks of the same function.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Edge {
    /// Source block.
    pub from: BlockId,
    /// Target block.
    pub to: BlockId,
    /// How the edge is taken.
    pub kind: EdgeKind,
}

/// A maximal straight-line sequence of instructions: entered only at its first slot, left only
/// after its last instruction.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Block {
    /// This block's id.
    pub id: BlockId,
    /// The function containing the block.
    pub function: FuncId,
    /// Slot of the first instruction.
    pub first: usize,
    /// Slot of the last instruction (its first slot if it is a 64-bit immediate load).
    pub last: usize,
    /// One past the last slot the block occupies (`last + 2` after a 64-bit immediate load).
    pub end: usize,
    /// Number of instructions (a 64-bit immediate load counts once).
    pub insn_count: usize,
    /// Outgoing edges, taken edge before not-taken edge.
    pub succs: Vec<EdgeId>,
    /// Incoming edges.
    pub preds: Vec<EdgeId>,
    /// Range of the block's instructions in [`Cfg::instructions`].
    pub insns: Range<usize>,
}

impl Block {
    /// The slots the block occupies.
    pub fn slots(&self) -> Range<usize> {
        self.first..self.end
    }
}

/// How a function is referenced from another instruction.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum CallKind {
    /// A BPF-to-BPF call instruction.
    Call,
    /// A 64-bit immediate load of the function's address (a callback passed to a helper such as
    /// `bpf_loop`); the callee runs only if the helper calls it.
    Callback,
}

/// An instruction that calls, or takes the address of, a BPF function of the program.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct CallSite {
    /// Slot of the instruction.
    pub slot: usize,
    /// Block containing it.
    pub block: BlockId,
    /// Function containing it.
    pub caller: FuncId,
    /// Function called.
    pub callee: FuncId,
    /// Call or address load.
    pub kind: CallKind,
}

/// A natural loop: a header block and every block that reaches one of its back edges without
/// passing through the header. Back edges sharing a header make one loop.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Loop {
    /// The header, which dominates every block of the loop.
    pub header: BlockId,
    /// First slot of the header.
    pub header_slot: usize,
    /// Blocks of the loop, header included, in increasing id order.
    pub body: Vec<BlockId>,
    /// Back edges to the header.
    pub back_edges: Vec<EdgeId>,
    /// Instructions in the body.
    pub insn_count: usize,
    /// Nesting depth: 1 for an outermost loop.
    pub depth: usize,
    /// Index (in [`FunctionCfg::loops`]) of the innermost loop strictly containing this one.
    pub parent: Option<usize>,
}

/// The control-flow graph of one function and the analyses computed on it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FunctionCfg {
    /// Index of the function.
    pub index: FuncId,
    /// Name of the function.
    pub name: String,
    /// First slot.
    pub start: usize,
    /// Number of slots.
    pub len: usize,
    /// Block at the first slot.
    pub entry: BlockId,
    /// The function's blocks.
    pub blocks: Range<BlockId>,
    /// Blocks ending with `exit`, in increasing id order (reachable or not).
    pub exits: Vec<BlockId>,
    /// Indices in [`Cfg::calls`] of the call sites inside this function.
    pub calls: Vec<usize>,
    pub(crate) analysis: FunctionAnalysis,
}

impl FunctionCfg {
    /// Blocks reachable from the entry in reverse postorder of a depth-first search: a
    /// topological order of the acyclic part of the graph (every edge but the retreating ones).
    pub fn topological_order(&self) -> &[BlockId] {
        &self.analysis.rpo
    }

    /// Blocks not reachable from the entry, in increasing id order.
    pub fn unreachable_blocks(&self) -> &[BlockId] {
        &self.analysis.unreachable
    }

    /// Edges whose target dominates their source, in increasing id order.
    pub fn back_edges(&self) -> &[EdgeId] {
        &self.analysis.back_edges
    }

    /// Edges that close a cycle in the depth-first search from the entry (back edges plus the
    /// edges that make the graph irreducible), in increasing id order.
    pub fn retreating_edges(&self) -> &[EdgeId] {
        &self.analysis.retreating
    }

    /// Retreating edges that are not back edges: they enter a cycle somewhere other than a block
    /// dominating it. Empty if and only if the function is reducible.
    pub fn irreducible_edges(&self) -> &[EdgeId] {
        &self.analysis.irreducible
    }

    /// Whether every cycle is a natural loop.
    pub fn is_reducible(&self) -> bool {
        self.analysis.irreducible.is_empty()
    }

    /// Whether no cycle is reachable from the entry.
    pub fn is_loop_free(&self) -> bool {
        self.analysis.retreating.is_empty()
    }

    /// Natural loops, outer loops before the loops nested in them.
    pub fn loops(&self) -> &[Loop] {
        &self.analysis.loops
    }

    /// Deepest loop nesting (0 without loops).
    pub fn max_loop_depth(&self) -> usize {
        self.analysis
            .loops
            .iter()
            .map(|l| l.depth)
            .max()
            .unwrap_or(0)
    }

    /// Whether block `b` belongs to this function.
    pub fn contains(&self, b: BlockId) -> bool {
        self.blocks.contains(&b)
    }
}

/// Control-flow graphs of every function of a linked program.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Cfg {
    name: String,
    insns: Vec<(usize, Instruction)>,
    blocks: Vec<Block>,
    edges: Vec<Edge>,
    functions: Vec<FunctionCfg>,
    calls: Vec<CallSite>,
    slot_block: Vec<BlockId>,
    doms: analysis::Dominators,
}

/// The disassembly of one instruction, for error messages.
fn describe(insn: &Instruction) -> String {
    linerate_bpf::disasm::format_instruction(insn, &linerate_bpf::disasm::NoNames)
}

/// The function extents of `program`, checked to partition its slots into whole instructions.
fn function_extents(
    program: &Program,
    starts_insn: &[bool],
) -> Result<Vec<(String, usize, usize)>, CfgError> {
    let slots = program.insns.len();
    let extents: Vec<(String, usize, usize)> = if program.functions.is_empty() {
        vec![(program.name.clone(), 0, slots)]
    } else {
        program
            .functions
            .iter()
            .map(|f| (f.name.clone(), f.start, f.len))
            .collect()
    };
    let invalid = |name: &str, reason: String| CfgError::InvalidFunction {
        function: name.to_string(),
        reason,
    };
    for (name, start, len) in &extents {
        let end = start
            .checked_add(*len)
            .filter(|&e| e <= slots)
            .ok_or_else(|| {
                invalid(
                    name,
                    format!("extent {start}+{len} exceeds the program's {slots} slots"),
                )
            })?;
        if *len == 0 {
            return Err(invalid(name, "has no instructions".into()));
        }
        if !starts_insn[*start] {
            return Err(invalid(
                name,
                format!("starts at insn {start}, inside a 64-bit immediate load"),
            ));
        }
        if end < slots && !starts_insn[end] {
            return Err(invalid(
                name,
                format!("ends at insn {end}, inside a 64-bit immediate load"),
            ));
        }
    }
    let mut order: Vec<usize> = (0..extents.len()).collect();
    order.sort_by_key(|&i| extents[i].1);
    let mut covered = 0;
    for &i in &order {
        let (name, start, len) = &extents[i];
        if *start != covered {
            let reason = if *start < covered {
                format!("starts at insn {start}, inside another function")
            } else {
                format!("starts at insn {start}, leaving insns {covered}..{start} in no function")
            };
            return Err(invalid(name, reason));
        }
        covered = start + len;
    }
    if covered != slots {
        return Err(CfgError::InvalidFunction {
            function: program.name.clone(),
            reason: format!("insns {covered}..{slots} belong to no function"),
        });
    }
    Ok(extents)
}

impl Cfg {
    /// Builds the control-flow graph of every function of `program` and analyses them.
    ///
    /// A program without a function table is taken as one function named after the program.
    pub fn build(program: &Program) -> Result<Cfg, CfgError> {
        let insns = program.decode()?;
        let slots = program.insns.len();
        if slots == 0 {
            return Err(CfgError::Empty);
        }
        let mut insn_index = vec![None; slots];
        for (k, (slot, _)) in insns.iter().enumerate() {
            insn_index[*slot] = Some(k);
        }
        let starts_insn: Vec<bool> = insn_index.iter().map(Option::is_some).collect();
        let extents = function_extents(program, &starts_insn)?;
        let function_start: Vec<Option<FuncId>> = {
            let mut v = vec![None; slots];
            for (f, (_, start, _)) in extents.iter().enumerate() {
                v[*start] = Some(f);
            }
            v
        };
        let callee_at = |what: &'static str, slot: usize, offset: i64| {
            let target = relative_target(slot, offset);
            usize::try_from(target)
                .ok()
                .and_then(|t| function_start.get(t).copied().flatten())
                .ok_or(CfgError::CallToNonFunction { what, slot, target })
        };

        let mut cfg = Cfg {
            name: program.name.clone(),
            insns: Vec::with_capacity(insns.len()),
            blocks: Vec::new(),
            edges: Vec::new(),
            functions: Vec::with_capacity(extents.len()),
            calls: Vec::new(),
            slot_block: vec![0; slots],
            doms: analysis::Dominators::default(),
        };
        for (f, (name, start, len)) in extents.into_iter().enumerate() {
            let end = start + len;
            let first_insn = insn_index[start].unwrap_or(0);
            let last_insn = insn_index[..end].iter().rev().flatten().next().copied();
            let body = &insns[first_insn..last_insn.map_or(first_insn, |k| k + 1)];

            // Leaders: the entry, every jump target, every slot after a jump or exit.
            let mut leader = vec![false; len];
            leader[0] = true;
            for &(slot, insn) in body {
                let next = slot + insn.slots();
                if let Some(offset) = insn.jump_offset() {
                    let target = relative_target(slot, offset);
                    let local = usize::try_from(target)
                        .ok()
                        .filter(|t| (start..end).contains(t))
                        .ok_or_else(|| CfgError::JumpOutOfFunction {
                            slot,
                            insn: describe(&insn),
                            target,
                            function: name.clone(),
                            start,
                            end,
                        })?;
                    if !starts_insn[local] {
                        return Err(CfgError::JumpIntoImm64 {
                            slot,
                            insn: describe(&insn),
                            target: local,
                        });
                    }
                    leader[local - start] = true;
                }
                let ends_block = insn.jump_offset().is_some() || insn == Instruction::Exit;
                if ends_block && next < end {
                    leader[next - start] = true;
                }
                if next >= end && !matches!(insn, Instruction::Exit | Instruction::Ja { .. }) {
                    return Err(CfgError::FallsOffEnd {
                        slot,
                        insn: describe(&insn),
                        function: name.clone(),
                    });
                }
            }

            let first_block = cfg.blocks.len();
            for &(slot, insn) in body {
                if leader[slot - start] {
                    let id = cfg.blocks.len();
                    cfg.blocks.push(Block {
                        id,
                        function: f,
                        first: slot,
                        last: slot,
                        end: slot,
                        insn_count: 0,
                        succs: Vec::new(),
                        preds: Vec::new(),
                        insns: cfg.insns.len()..cfg.insns.len(),
                    });
                }
                let id = cfg.blocks.len() - 1;
                let block = &mut cfg.blocks[id];
                block.last = slot;
                block.end = slot + insn.slots();
                block.insn_count += 1;
                block.insns.end += 1;
                cfg.insns.push((slot, insn));
                cfg.slot_block[slot..slot + insn.slots()].fill(id);

                let site = match insn {
                    Instruction::Call(CallTarget::Local(imm)) => {
                        Some((CallKind::Call, callee_at("call", slot, imm.into())?))
                    }
                    Instruction::LoadImm64 {
                        imm: Imm64::Pseudo { src, imm, .. },
                        ..
                    } if src == linerate_bpf::insn::pseudo::FUNC => Some((
                        CallKind::Callback,
                        callee_at("function address load", slot, imm.into())?,
                    )),
                    _ => None,
                };
                if let Some((kind, callee)) = site {
                    cfg.calls.push(CallSite {
                        slot,
                        block: id,
                        caller: f,
                        callee,
                        kind,
                    });
                }
            }
            let blocks = first_block..cfg.blocks.len();

            let mut exits = Vec::new();
            for b in blocks.clone() {
                let block = &cfg.blocks[b];
                let (slot, insn) = cfg.insns[block.insns.end - 1];
                let next = block.end;
                let successors: Vec<(usize, EdgeKind)> = match insn {
                    Instruction::Exit => {
                        exits.push(b);
                        Vec::new()
                    }
                    Instruction::Ja { off, .. } => {
                        vec![(
                            relative_target(slot, off.into()) as usize,
                            EdgeKind::Unconditional,
                        )]
                    }
                    Instruction::Jump { off, .. } | Instruction::MayGoto { off } => vec![
                        (relative_target(slot, off.into()) as usize, EdgeKind::Taken),
                        (next, EdgeKind::NotTaken),
                    ],
                    _ => vec![(next, EdgeKind::Fallthrough)],
                };
                for (target_slot, kind) in successors {
                    cfg.add_edge(b, cfg.slot_block[target_slot], kind);
                }
            }

            let calls = (0..cfg.calls.len())
                .filter(|&c| cfg.calls[c].caller == f)
                .collect();
            cfg.functions.push(FunctionCfg {
                index: f,
                name,
                start,
                len,
                entry: first_block,
                blocks,
                exits,
                calls,
                analysis: FunctionAnalysis::default(),
            });
        }

        cfg.doms = analysis::Dominators::new(cfg.blocks.len());
        for f in 0..cfg.functions.len() {
            let result =
                analysis::analyse(&cfg.blocks, &cfg.edges, &cfg.functions[f], &mut cfg.doms);
            cfg.functions[f].analysis = result;
        }
        Ok(cfg)
    }

    fn add_edge(&mut self, from: BlockId, to: BlockId, kind: EdgeKind) {
        let id = self.edges.len();
        self.edges.push(Edge { from, to, kind });
        self.blocks[from].succs.push(id);
        self.blocks[to].preds.push(id);
    }

    /// Name of the program (its entry function).
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Every decoded instruction as `(slot, instruction)`, in slot order.
    pub fn instructions(&self) -> &[(usize, Instruction)] {
        &self.insns
    }

    /// Every block of the program.
    pub fn blocks(&self) -> &[Block] {
        &self.blocks
    }

    /// The block with this id.
    pub fn block(&self, id: BlockId) -> Option<&Block> {
        self.blocks.get(id)
    }

    /// The instructions of block `id` as `(slot, instruction)` (empty for an unknown id).
    pub fn block_instructions(&self, id: BlockId) -> &[(usize, Instruction)] {
        self.blocks
            .get(id)
            .and_then(|b| self.insns.get(b.insns.clone()))
            .unwrap_or(&[])
    }

    /// The block occupying `slot` (either slot of a 64-bit immediate load).
    pub fn block_of(&self, slot: usize) -> Option<BlockId> {
        self.slot_block.get(slot).copied()
    }

    /// Every edge of the program.
    pub fn edges(&self) -> &[Edge] {
        &self.edges
    }

    /// The edge with this id.
    pub fn edge(&self, id: EdgeId) -> Option<&Edge> {
        self.edges.get(id)
    }

    /// Successor blocks of `b`, in the order of its outgoing edges.
    pub fn successors(&self, b: BlockId) -> impl Iterator<Item = BlockId> + '_ {
        self.blocks
            .get(b)
            .into_iter()
            .flat_map(|block| block.succs.iter().map(|&e| self.edges[e].to))
    }

    /// Predecessor blocks of `b`, in the order of its incoming edges.
    pub fn predecessors(&self, b: BlockId) -> impl Iterator<Item = BlockId> + '_ {
        self.blocks
            .get(b)
            .into_iter()
            .flat_map(|block| block.preds.iter().map(|&e| self.edges[e].from))
    }

    /// Every function, the entry function first.
    pub fn functions(&self) -> &[FunctionCfg] {
        &self.functions
    }

    /// The function with this index.
    pub fn function(&self, f: FuncId) -> Option<&FunctionCfg> {
        self.functions.get(f)
    }

    /// The function containing block `b`.
    pub fn function_of(&self, b: BlockId) -> Option<&FunctionCfg> {
        self.blocks
            .get(b)
            .map(|block| &self.functions[block.function])
    }

    /// Every call site and function address load, in slot order within each function.
    pub fn calls(&self) -> &[CallSite] {
        &self.calls
    }

    /// Functions `f` calls or takes the address of, without duplicates, in increasing order.
    pub fn callees(&self, f: FuncId) -> Vec<FuncId> {
        let mut out: Vec<FuncId> = self
            .calls
            .iter()
            .filter(|c| c.caller == f)
            .map(|c| c.callee)
            .collect();
        out.sort_unstable();
        out.dedup();
        out
    }

    /// Functions that call or take the address of `f`, without duplicates, in increasing order.
    pub fn callers(&self, f: FuncId) -> Vec<FuncId> {
        let mut out: Vec<FuncId> = self
            .calls
            .iter()
            .filter(|c| c.callee == f)
            .map(|c| c.caller)
            .collect();
        out.sort_unstable();
        out.dedup();
        out
    }

    /// The immediate dominator of `b`; `None` for a function entry, an unreachable block or an
    /// unknown id.
    pub fn idom(&self, b: BlockId) -> Option<BlockId> {
        self.doms.idom(b)
    }

    /// Whether `a` dominates `b` (every path from the entry to `b` passes through `a`; a block
    /// dominates itself). False whenever either block is unreachable.
    pub fn dominates(&self, a: BlockId, b: BlockId) -> bool {
        self.doms.dominates(a, b)
    }

    /// Whether edge `e` is a back edge (its target dominates its source).
    pub fn is_back_edge(&self, e: EdgeId) -> bool {
        self.edges
            .get(e)
            .is_some_and(|edge| self.dominates(edge.to, edge.from))
    }

    /// Whether every function is loop free and no function can reach itself through calls.
    pub fn is_loop_free(&self) -> bool {
        self.functions.iter().all(FunctionCfg::is_loop_free) && !self.has_recursion()
    }

    /// Whether the call graph has a cycle (the kernel rejects such programs).
    pub fn has_recursion(&self) -> bool {
        analysis::call_graph_order(self).is_none()
    }

    /// Deepest loop nesting over all functions (loops are not composed through calls).
    pub fn max_loop_depth(&self) -> usize {
        self.functions
            .iter()
            .map(FunctionCfg::max_loop_depth)
            .max()
            .unwrap_or(0)
    }

    /// Functions not reachable from the entry function through calls and address loads.
    pub fn unreachable_functions(&self) -> Vec<FuncId> {
        let mut seen = vec![false; self.functions.len()];
        let mut stack = vec![0];
        while let Some(f) = stack.pop() {
            if seen.get(f).copied().unwrap_or(true) {
                continue;
            }
            seen[f] = true;
            stack.extend(self.callees(f));
        }
        (0..seen.len()).filter(|&f| !seen[f]).collect()
    }
}
