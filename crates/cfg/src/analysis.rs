//! The analyses [`crate::Cfg::build`] runs on every function: depth-first search (reachability,
//! reverse postorder, retreating edges), dominators, back edges, natural loops and irreducible
//! flow; and the call-graph order the inter-procedural path bounds need.
//!
//! Dominators use the iterative algorithm of Cooper, Harvey and Kennedy ("A Simple, Fast
//! Dominance Algorithm", 2001) over reverse postorder; the dominator tree is then numbered in
//! pre/post order so that [`Dominators::dominates`] is two comparisons. Every traversal is
//! iterative: linked programs reach a million instructions and must not overflow the stack.

use std::collections::BTreeMap;

use crate::graph::{Block, BlockId, Cfg, Edge, EdgeId, FuncId, FunctionCfg, Loop};

/// Per-function results, stored in [`FunctionCfg`].
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct FunctionAnalysis {
    pub rpo: Vec<BlockId>,
    pub unreachable: Vec<BlockId>,
    pub retreating: Vec<EdgeId>,
    pub back_edges: Vec<EdgeId>,
    pub irreducible: Vec<EdgeId>,
    pub loops: Vec<Loop>,
}

/// Dominator trees of every function, indexed by block id.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Dominators {
    /// Immediate dominator; a function entry is its own, an unreachable block has none.
    idom: Vec<Option<BlockId>>,
    /// Preorder number in the dominator tree (numbers are unique across functions).
    pre: Vec<usize>,
    /// Postorder number in the dominator tree.
    post: Vec<usize>,
    /// Next number to hand out.
    counter: usize,
}

impl Dominators {
    pub fn new(blocks: usize) -> Dominators {
        Dominators {
            idom: vec![None; blocks],
            pre: vec![0; blocks],
            post: vec![0; blocks],
            counter: 0,
        }
    }

    pub fn idom(&self, b: BlockId) -> Option<BlockId> {
        self.idom.get(b).copied().flatten().filter(|&d| d != b)
    }

    pub fn dominates(&self, a: BlockId, b: BlockId) -> bool {
        let reachable = |x: BlockId| self.idom.get(x).is_some_and(Option::is_some);
        reachable(a) && reachable(b) && self.pre[a] <= self.pre[b] && self.post[b] <= self.post[a]
    }

    /// Computes the immediate dominators of the blocks in `rpo` (reverse postorder from
    /// `rpo[0]`, the entry) and numbers their tree.
    fn compute(&mut self, blocks: &[Block], edges: &[Edge], func: &FunctionCfg, rpo: &[BlockId]) {
        let Some(&entry) = rpo.first() else {
            return;
        };
        let base = func.blocks.start;
        let mut order = vec![usize::MAX; func.blocks.len()];
        for (i, &b) in rpo.iter().enumerate() {
            order[b - base] = i;
        }
        immediate_dominators(
            &mut self.idom,
            rpo,
            |x| order[x - base],
            |b| blocks[b].preds.iter().map(|&e| edges[e].from),
        );
        self.number_tree(entry, rpo);
    }

    /// Numbers the dominator tree rooted at `entry` in pre- and postorder.
    fn number_tree(&mut self, entry: BlockId, rpo: &[BlockId]) {
        let mut children: BTreeMap<BlockId, Vec<BlockId>> = BTreeMap::new();
        for &b in &rpo[1..] {
            if let Some(d) = self.idom[b] {
                children.entry(d).or_default().push(b);
            }
        }
        let mut stack = vec![(entry, 0usize)];
        self.pre[entry] = self.counter;
        self.counter += 1;
        while let Some((b, next)) = stack.last_mut() {
            let kids = children.get(b).map_or(&[][..], Vec::as_slice);
            if let Some(&c) = kids.get(*next) {
                *next += 1;
                self.pre[c] = self.counter;
                self.counter += 1;
                stack.push((c, 0));
            } else {
                self.post[*b] = self.counter;
                self.counter += 1;
                stack.pop();
            }
        }
    }
}

/// The immediate dominators of the nodes of `rpo` (reverse postorder from `rpo[0]`, the entry),
/// by the iteration of Cooper, Harvey and Kennedy, written into `idom` (indexed by node, `None`
/// for the nodes of `rpo` beforehand): the entry's is itself. `rank(n)` is `n`'s index in `rpo`,
/// `preds(n)` its predecessors; predecessors not yet reached are skipped. Any graph can use it:
/// the CFGs of this crate, and the hXDP compiler's lowered blocks.
pub fn immediate_dominators<I: IntoIterator<Item = usize>>(
    idom: &mut [Option<usize>],
    rpo: &[usize],
    rank: impl Fn(usize) -> usize,
    preds: impl Fn(usize) -> I,
) {
    let Some(&entry) = rpo.first() else {
        return;
    };
    idom[entry] = Some(entry);
    let mut changed = true;
    while changed {
        changed = false;
        for &b in &rpo[1..] {
            let mut new_idom: Option<usize> = None;
            for p in preds(b) {
                if idom[p].is_none() {
                    continue;
                }
                new_idom = Some(match new_idom {
                    None => p,
                    Some(d) => intersect(idom, p, d, &rank),
                });
            }
            if new_idom.is_some() && idom[b] != new_idom {
                idom[b] = new_idom;
                changed = true;
            }
        }
    }
}

/// The nearest common dominator of `a` and `b` in the tree `idom` holds so far.
fn intersect(
    idom: &[Option<usize>],
    mut a: usize,
    mut b: usize,
    rank: &impl Fn(usize) -> usize,
) -> usize {
    while a != b {
        while rank(a) > rank(b) {
            match idom[a] {
                Some(d) if d != a => a = d,
                _ => return a,
            }
        }
        while rank(b) > rank(a) {
            match idom[b] {
                Some(d) if d != b => b = d,
                _ => return b,
            }
        }
    }
    a
}

/// Depth-first search from the entry of `func`: reverse postorder and retreating edges (edges to
/// a block still on the search stack).
fn depth_first(
    blocks: &[Block],
    edges: &[Edge],
    func: &FunctionCfg,
) -> (Vec<BlockId>, Vec<EdgeId>) {
    const NEW: u8 = 0;
    const ON_STACK: u8 = 1;
    const DONE: u8 = 2;
    let base = func.blocks.start;
    let mut state = vec![NEW; func.blocks.len()];
    let mut postorder = Vec::with_capacity(func.blocks.len());
    let mut retreating = Vec::new();
    let mut stack = vec![(func.entry, 0usize)];
    state[func.entry - base] = ON_STACK;
    while let Some((b, next)) = stack.last_mut() {
        if let Some(&e) = blocks[*b].succs.get(*next) {
            *next += 1;
            let t = edges[e].to;
            match state[t - base] {
                NEW => {
                    state[t - base] = ON_STACK;
                    stack.push((t, 0));
                }
                ON_STACK => retreating.push(e),
                _ => {}
            }
        } else {
            state[*b - base] = DONE;
            postorder.push(*b);
            stack.pop();
        }
    }
    postorder.reverse();
    retreating.sort_unstable();
    (postorder, retreating)
}

/// Natural loops of the back edges, merged by header, outer loops first.
fn natural_loops(
    blocks: &[Block],
    edges: &[Edge],
    func: &FunctionCfg,
    back_edges: &[EdgeId],
    reachable: &[bool],
) -> Vec<Loop> {
    let base = func.blocks.start;
    let mut by_header: BTreeMap<BlockId, Vec<EdgeId>> = BTreeMap::new();
    for &e in back_edges {
        by_header.entry(edges[e].to).or_default().push(e);
    }
    // `mark[b]` holds the header of the last loop `b` was found in, so one vector serves every
    // loop without clearing.
    let mut mark: Vec<Option<BlockId>> = vec![None; func.blocks.len()];
    let mut loops: Vec<Loop> = by_header
        .into_iter()
        .map(|(header, back)| {
            mark[header - base] = Some(header);
            let mut body = vec![header];
            let mut work: Vec<BlockId> = back.iter().map(|&e| edges[e].from).collect();
            while let Some(b) = work.pop() {
                if mark[b - base] == Some(header) {
                    continue;
                }
                mark[b - base] = Some(header);
                body.push(b);
                work.extend(
                    blocks[b]
                        .preds
                        .iter()
                        .map(|&e| edges[e].from)
                        .filter(|&p| reachable[p - base] && mark[p - base] != Some(header)),
                );
            }
            body.sort_unstable();
            Loop {
                header,
                header_slot: blocks[header].first,
                insn_count: body.iter().map(|&b| blocks[b].insn_count).sum(),
                body,
                back_edges: back,
                depth: 0,
                parent: None,
            }
        })
        .collect();
    // Natural loops with distinct headers are disjoint or nested, so visiting them from the
    // largest down and recording the latest loop seen at each block finds every loop's parent:
    // the loop recorded at its header just before it.
    let mut by_size: Vec<usize> = (0..loops.len()).collect();
    by_size.sort_by_key(|&i| std::cmp::Reverse(loops[i].body.len()));
    let mut innermost: Vec<Option<usize>> = vec![None; func.blocks.len()];
    for &i in &by_size {
        let parent = innermost[loops[i].header - base];
        loops[i].parent = parent;
        loops[i].depth = parent.map_or(1, |p| loops[p].depth + 1);
        for &b in &loops[i].body {
            innermost[b - base] = Some(i);
        }
    }
    // Outer loops first; parents renumbered to the new positions.
    let mut order: Vec<usize> = (0..loops.len()).collect();
    order.sort_by_key(|&i| (loops[i].depth, loops[i].header));
    let mut position = vec![0; loops.len()];
    for (new, &old) in order.iter().enumerate() {
        position[old] = new;
    }
    let mut unplaced: Vec<Option<Loop>> = loops.into_iter().map(Some).collect();
    let mut sorted: Vec<Loop> = order.iter().filter_map(|&i| unplaced[i].take()).collect();
    for l in &mut sorted {
        l.parent = l.parent.map(|p| position[p]);
    }
    sorted
}

/// Runs every per-function analysis of `func`, filling its part of `doms`.
pub(crate) fn analyse(
    blocks: &[Block],
    edges: &[Edge],
    func: &FunctionCfg,
    doms: &mut Dominators,
) -> FunctionAnalysis {
    let base = func.blocks.start;
    let (rpo, retreating) = depth_first(blocks, edges, func);
    let mut reachable = vec![false; func.blocks.len()];
    for &b in &rpo {
        reachable[b - base] = true;
    }
    let unreachable = func
        .blocks
        .clone()
        .filter(|&b| !reachable[b - base])
        .collect();
    doms.compute(blocks, edges, func, &rpo);
    let (back_edges, irreducible): (Vec<EdgeId>, Vec<EdgeId>) = retreating
        .iter()
        .partition(|&&e| doms.dominates(edges[e].to, edges[e].from));
    let loops = natural_loops(blocks, edges, func, &back_edges, &reachable);
    FunctionAnalysis {
        rpo,
        unreachable,
        retreating,
        back_edges,
        irreducible,
        loops,
    }
}

/// Functions ordered callees before callers, or `None` if the call graph has a cycle.
pub(crate) fn call_graph_order(cfg: &Cfg) -> Option<Vec<FuncId>> {
    let n = cfg.functions().len();
    let callees: Vec<Vec<FuncId>> = (0..n).map(|f| cfg.callees(f)).collect();
    let mut pending: Vec<usize> = callees.iter().map(Vec::len).collect();
    let mut callers: Vec<Vec<FuncId>> = vec![Vec::new(); n];
    for (f, cs) in callees.iter().enumerate() {
        for &c in cs {
            callers[c].push(f);
        }
    }
    let mut ready: Vec<FuncId> = (0..n).filter(|&f| pending[f] == 0).collect();
    let mut order = Vec::with_capacity(n);
    while let Some(f) = ready.pop() {
        order.push(f);
        for &caller in &callers[f] {
            pending[caller] -= 1;
            if pending[caller] == 0 {
                ready.push(caller);
            }
        }
    }
    (order.len() == n).then_some(order)
}

#[cfg(test)]
mod tests {
    use linerate_bpf::insn::{encode_all, CallTarget, Instruction};
    use linerate_bpf::program::Function;
    use linerate_bpf::Program;

    use crate::Cfg;

    fn two_functions(main: &[Instruction], sub: &[Instruction]) -> Program {
        let mut insns = encode_all(main);
        let split = insns.len();
        insns.extend(encode_all(sub));
        Program {
            name: "main".into(),
            section: "xdp".into(),
            functions: vec![
                Function {
                    name: "main".into(),
                    start: 0,
                    len: split,
                },
                Function {
                    name: "sub".into(),
                    start: split,
                    len: insns.len() - split,
                },
            ],
            insns,
            func_info: Vec::new(),
            line_info: Vec::new(),
        }
    }

    #[test]
    fn recursion_is_a_cycle_of_the_call_graph() {
        let call = |off| Instruction::Call(CallTarget::Local(off));
        let cfg = Cfg::build(&two_functions(
            &[call(1), Instruction::Exit],
            &[call(-3), Instruction::Exit],
        ))
        .unwrap();
        assert!(cfg.functions().iter().all(|f| f.is_loop_free()));
        assert!(cfg.has_recursion() && !cfg.is_loop_free());
        assert_eq!(cfg.longest_path_with_calls(0), None);
        assert_eq!(cfg.longest_path(0).map(|p| p.insns), Some(2));
    }

    #[test]
    fn callees_come_first_in_call_graph_order() {
        let call = |off| Instruction::Call(CallTarget::Local(off));
        let cfg = Cfg::build(&two_functions(
            &[call(1), Instruction::Exit],
            &[Instruction::Exit],
        ))
        .unwrap();
        assert_eq!(super::call_graph_order(&cfg), Some(vec![1, 0]));
    }

    #[test]
    fn dominance_does_not_cross_functions() {
        let cfg = Cfg::build(&two_functions(&[Instruction::Exit], &[Instruction::Exit])).unwrap();
        assert!(cfg.dominates(0, 0) && cfg.dominates(1, 1));
        assert!(!cfg.dominates(0, 1) && !cfg.dominates(1, 0));
        assert!(!cfg.dominates(0, 7));
        assert_eq!(cfg.idom(7), None);
    }
}
