//! A serialisable digest of a [`Cfg`]: the counts `linerate inspect` prints and `--json` emits.

use serde::{Deserialize, Serialize};

use crate::graph::{BlockId, Cfg, FunctionCfg};

/// Counts describing the control flow of a whole program.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CfgSummary {
    /// Name of the program.
    pub program: String,
    /// Number of functions (the entry function and its sub-programs).
    pub functions: usize,
    /// Number of basic blocks.
    pub blocks: usize,
    /// Number of control-flow edges (calls excluded).
    pub edges: usize,
    /// Number of BPF-to-BPF calls and function address loads.
    pub call_sites: usize,
    /// Every natural loop of every function.
    pub loops: Vec<LoopSummary>,
    /// Deepest loop nesting inside one function.
    pub max_loop_depth: usize,
    /// Blocks not reachable from their function's entry.
    pub unreachable_blocks: usize,
    /// Functions not reachable from the entry function through calls.
    pub unreachable_functions: usize,
    /// Functions with irreducible control flow.
    pub irreducible_functions: usize,
    /// Whether no function has a reachable cycle and no call is recursive.
    pub is_loop_free: bool,
    /// The same counts for each function.
    pub per_function: Vec<FunctionSummary>,
}

/// One natural loop.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct LoopSummary {
    /// Function containing the loop.
    pub function: String,
    /// Header block.
    pub header_block: BlockId,
    /// First slot of the header.
    pub header_slot: usize,
    /// Blocks in the body, header included.
    pub blocks: usize,
    /// Instructions in the body.
    pub insns: usize,
    /// Nesting depth, 1 for an outermost loop.
    pub depth: usize,
}

/// Counts describing one function.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct FunctionSummary {
    /// Name of the function.
    pub name: String,
    /// First slot.
    pub start: usize,
    /// Number of slots.
    pub len: usize,
    /// Number of basic blocks.
    pub blocks: usize,
    /// Number of edges.
    pub edges: usize,
    /// Number of exit blocks.
    pub exits: usize,
    /// Number of natural loops.
    pub loops: usize,
    /// Deepest loop nesting.
    pub max_loop_depth: usize,
    /// Blocks not reachable from the entry.
    pub unreachable_blocks: usize,
    /// Whether every cycle is a natural loop.
    pub reducible: bool,
    /// Whether no cycle is reachable.
    pub loop_free: bool,
    /// Instructions on the longest entry-to-exit path, if loop free.
    pub longest_path: Option<u64>,
    /// Instructions on the shortest entry-to-exit path, if loop free.
    pub shortest_path: Option<u64>,
    /// Number of entry-to-exit paths, if loop free (see [`Cfg::path_count`]).
    pub paths: Option<f64>,
}

impl Cfg {
    /// Counts describing the program's control flow.
    pub fn summary(&self) -> CfgSummary {
        let per_function: Vec<FunctionSummary> = self
            .functions()
            .iter()
            .map(|f| self.function_summary(f))
            .collect();
        CfgSummary {
            program: self.name().to_string(),
            functions: self.functions().len(),
            blocks: self.blocks().len(),
            edges: self.edges().len(),
            call_sites: self.calls().len(),
            loops: self
                .functions()
                .iter()
                .flat_map(|f| {
                    f.loops().iter().map(|l| LoopSummary {
                        function: f.name.clone(),
                        header_block: l.header,
                        header_slot: l.header_slot,
                        blocks: l.body.len(),
                        insns: l.insn_count,
                        depth: l.depth,
                    })
                })
                .collect(),
            max_loop_depth: self.max_loop_depth(),
            unreachable_blocks: per_function.iter().map(|f| f.unreachable_blocks).sum(),
            unreachable_functions: self.unreachable_functions().len(),
            irreducible_functions: per_function.iter().filter(|f| !f.reducible).count(),
            is_loop_free: self.is_loop_free(),
            per_function,
        }
    }

    fn function_summary(&self, f: &FunctionCfg) -> FunctionSummary {
        FunctionSummary {
            name: f.name.clone(),
            start: f.start,
            len: f.len,
            blocks: f.blocks.len(),
            edges: f.blocks.clone().map(|b| self.blocks()[b].succs.len()).sum(),
            exits: f.exits.len(),
            loops: f.loops().len(),
            max_loop_depth: f.max_loop_depth(),
            unreachable_blocks: f.unreachable_blocks().len(),
            reducible: f.is_reducible(),
            loop_free: f.is_loop_free(),
            longest_path: self.longest_path(f.index).map(|p| p.insns),
            paths: self.path_count(f.index),
            shortest_path: self.shortest_path(f.index).map(|p| p.insns),
        }
    }
}
