//! Longest and shortest entry-to-exit paths of loop-free functions, counted in instructions.
//!
//! A dynamic program over the topological order: each block's best distance is its own
//! instruction count plus the best distance of a predecessor. Functions with a reachable cycle
//! have no longest path and get `None`. The `_with_calls` variants charge each BPF-to-BPF call the
//! callee's own bound (callees first, in call-graph order); function address loads are not
//! charged, since a helper decides whether and how often the callback runs.

use serde::{Deserialize, Serialize};

use crate::analysis::call_graph_order;
use crate::graph::{BlockId, CallKind, Cfg, FuncId};

/// An entry-to-exit path of a function.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PathLength {
    /// Instructions executed along the path (a 64-bit immediate load counts once).
    pub insns: u64,
    /// The blocks of the path, entry first, ending in an exit block.
    pub blocks: Vec<BlockId>,
}

/// Which extreme a path search looks for.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Extreme {
    Longest,
    Shortest,
}

impl Extreme {
    fn better(self, candidate: u64, current: u64) -> bool {
        match self {
            Extreme::Longest => candidate > current,
            Extreme::Shortest => candidate < current,
        }
    }
}

impl Cfg {
    /// The entry-to-exit path of function `f` executing the most instructions; `None` if `f`
    /// does not exist or has a reachable cycle. Ties go to the path found first in topological
    /// order.
    pub fn longest_path(&self, f: FuncId) -> Option<PathLength> {
        self.extreme_path(f, Extreme::Longest, |b| self.blocks()[b].insn_count as u64)
    }

    /// The entry-to-exit path of function `f` executing the fewest instructions; `None` if `f`
    /// does not exist or has a reachable cycle.
    pub fn shortest_path(&self, f: FuncId) -> Option<PathLength> {
        self.extreme_path(f, Extreme::Shortest, |b| self.blocks()[b].insn_count as u64)
    }

    /// Most instructions one run of function `f` executes, the callees' instructions included;
    /// `None` if `f` or a function it calls has a reachable cycle, or calls are recursive.
    pub fn longest_path_with_calls(&self, f: FuncId) -> Option<u64> {
        self.path_with_calls(f, Extreme::Longest)
    }

    /// Fewest instructions one run of function `f` executes, the callees' instructions included;
    /// `None` under the same conditions as [`Cfg::longest_path_with_calls`].
    pub fn shortest_path_with_calls(&self, f: FuncId) -> Option<u64> {
        self.path_with_calls(f, Extreme::Shortest)
    }

    fn path_with_calls(&self, f: FuncId, extreme: Extreme) -> Option<u64> {
        self.function(f)?;
        let order = call_graph_order(self)?;
        let mut cost: Vec<Option<u64>> = vec![None; self.functions().len()];
        for g in order {
            let mut call_cost = vec![Some(0u64); self.functions()[g].blocks.len()];
            let base = self.functions()[g].blocks.start;
            for &c in &self.functions()[g].calls {
                let site = &self.calls()[c];
                if site.kind == CallKind::Call {
                    let slot = &mut call_cost[site.block - base];
                    *slot = slot
                        .zip(cost[site.callee])
                        .map(|(a, b)| a.saturating_add(b));
                }
            }
            if call_cost.iter().any(Option::is_none) {
                continue;
            }
            cost[g] = self
                .extreme_path(g, extreme, |b| {
                    (self.blocks()[b].insn_count as u64)
                        .saturating_add(call_cost[b - base].unwrap_or(0))
                })
                .map(|p| p.insns);
            if g == f {
                break;
            }
        }
        cost[f]
    }

    /// Number of entry-to-exit paths of function `f` (each conditional jump doubling, calls
    /// counted as single instructions), as a float since it grows exponentially (exact up to
    /// 2^53); `None` if `f` does not exist or has a reachable cycle.
    pub fn path_count(&self, f: FuncId) -> Option<f64> {
        let func = self.function(f)?;
        if !func.is_loop_free() {
            return None;
        }
        let base = func.blocks.start;
        let mut count = vec![0f64; func.blocks.len()];
        count[func.entry - base] = 1.0;
        for &b in func.topological_order() {
            let here = count[b - base];
            for s in self.successors(b) {
                count[s - base] += here;
            }
        }
        Some(func.exits.iter().map(|&x| count[x - base]).sum())
    }

    fn extreme_path(
        &self,
        f: FuncId,
        extreme: Extreme,
        weight: impl Fn(BlockId) -> u64,
    ) -> Option<PathLength> {
        let func = self.function(f)?;
        if !func.is_loop_free() {
            return None;
        }
        let base = func.blocks.start;
        let mut best: Vec<Option<u64>> = vec![None; func.blocks.len()];
        let mut prev: Vec<Option<BlockId>> = vec![None; func.blocks.len()];
        best[func.entry - base] = Some(weight(func.entry));
        for &b in func.topological_order() {
            let Some(d) = best[b - base] else {
                continue;
            };
            for s in self.successors(b) {
                let candidate = d.saturating_add(weight(s));
                if best[s - base].is_none_or(|cur| extreme.better(candidate, cur)) {
                    best[s - base] = Some(candidate);
                    prev[s - base] = Some(b);
                }
            }
        }
        let mut end: Option<(BlockId, u64)> = None;
        for &x in &func.exits {
            if let Some(d) = best[x - base] {
                if end.is_none_or(|(_, cur)| extreme.better(d, cur)) {
                    end = Some((x, d));
                }
            }
        }
        let (last, insns) = end?;
        let mut blocks = vec![last];
        while let Some(p) = prev[blocks[blocks.len() - 1] - base] {
            blocks.push(p);
        }
        blocks.reverse();
        Some(PathLength { insns, blocks })
    }
}
