//! The exact optimal placement of a short arrival sequence (paper 004 §7.5.1's reference for
//! resource waste): the fewest NICs such that every NIC's NFs meet all their SLAs together on
//! the ground truth ([`Fleet::feasible`], the simulated device), found by branch and bound over
//! set partitions.
//!
//! The search assigns NFs one at a time (most cores first, the hardest to fit) to an open NIC
//! or to one new NIC (opening "a new NIC" once per node removes the NICs' symmetry). Every pair
//! is checked first: pairs that cannot share a NIC form a conflict graph. The search starts from
//! the plan of first fit with the ground truth as its check (an upper bound), stops as soon as a
//! plan meets the lower bound (the larger of `⌈Σ cores / cores per NIC⌉` and the conflict
//! graph's largest clique), and cuts a branch when the open NICs plus a clique of the arrivals
//! that conflict with every open NIC cannot beat the best plan found. Arrivals are assigned
//! most conflicted first. Feasibility of each set is computed once (memoized by the
//! set as a bit mask, so at most 64 arrivals).
//!
//! **Monotonicity.** A NIC that violates an SLA is never extended: we assume adding an NF to a
//! NIC never raises anyone's throughput, so an infeasible set has no feasible superset. It holds
//! for the accelerators (another tenant only lengthens the round) and for memory bandwidth. It
//! may fail through the shared cache: a newcomer that slows a memory-heavy NF lowers that NF's
//! access rate and thus its hold on the cache, which can speed up a third NF, in principle
//! enough to lift it back over its SLA. Where that happens the search can miss a plan, so the
//! result is exact under the monotonicity assumption; `monotonicity_exceptions` counts the sets
//! the search met that were feasible although one of their subsets with one NF fewer was not
//! (each checked set is compared with its checked subsets).

use crate::error::ColocateError;
use crate::place::{Arrival, Fleet};
use std::collections::HashMap;

/// The optimum found.
#[derive(Clone, Debug, PartialEq)]
pub struct Optimum {
    /// Each NIC's arrivals (indices into the sequence).
    pub plan: Vec<Vec<usize>>,
    /// `false` when the node budget ran out first: then `plan` is the best found, not proven.
    pub proven: bool,
    /// Search nodes visited.
    pub nodes: usize,
    /// Sets whose feasibility was computed on the device.
    pub checks: usize,
    /// Checked sets seen to break monotonicity (see the module comment).
    pub monotonicity_exceptions: usize,
}

struct Search<'a> {
    fleet: &'a Fleet<'a>,
    arrivals: &'a [Arrival],
    solo: &'a [f64],
    order: Vec<usize>,
    cores: Vec<u32>,
    /// Per arrival, the arrivals it cannot share a NIC with (as a pair: SLAs or cores).
    conflicts: Vec<u64>,
    known: HashMap<u64, bool>,
    best: Vec<Vec<usize>>,
    lower: usize,
    nodes: usize,
    budget: usize,
    exhausted: bool,
    exceptions: usize,
}

impl Search<'_> {
    fn feasible(&mut self, members: &[usize]) -> Result<bool, ColocateError> {
        let mask = members.iter().fold(0u64, |m, &i| m | (1u64 << i));
        if let Some(&known) = self.known.get(&mask) {
            return Ok(known);
        }
        let feasible = self.fleet.feasible(self.arrivals, self.solo, members)?;
        if feasible {
            let broken = members
                .iter()
                .any(|&i| self.known.get(&(mask & !(1u64 << i))) == Some(&false));
            self.exceptions += usize::from(broken);
        }
        self.known.insert(mask, feasible);
        Ok(feasible)
    }

    /// Assigns `order[depth..]` to `nics` and beyond.
    fn branch(&mut self, depth: usize, nics: &mut Vec<Vec<usize>>) -> Result<(), ColocateError> {
        if self.best.len() <= self.lower || self.exhausted {
            return Ok(());
        }
        self.nodes += 1;
        if self.nodes > self.budget {
            self.exhausted = true;
            return Ok(());
        }
        let Some(&item) = self.order.get(depth) else {
            if nics.len() < self.best.len() {
                self.best = nics.clone();
            }
            return Ok(());
        };
        if nics.len() + self.homeless_clique(depth, nics) >= self.best.len() {
            return Ok(());
        }
        for slot in 0..nics.len() {
            let used = nics[slot].iter().fold(self.cores[item], |sum, &i| {
                sum.saturating_add(self.cores[i])
            });
            if used > self.fleet.device.cores {
                continue;
            }
            nics[slot].push(item);
            let members = nics[slot].clone();
            if self.feasible(&members)? {
                self.branch(depth + 1, nics)?;
            }
            nics[slot].pop();
        }
        if nics.len() + 1 < self.best.len() {
            nics.push(vec![item]);
            self.branch(depth + 1, nics)?;
            nics.pop();
        }
        Ok(())
    }
}

impl Search<'_> {
    /// A lower bound on the new NICs the unassigned arrivals need: those that conflict with
    /// some member of every open NIC can only go to new NICs, and those of them that conflict
    /// pairwise each need their own (a clique, found greedily).
    fn homeless_clique(&self, depth: usize, nics: &[Vec<usize>]) -> usize {
        let masks: Vec<u64> = nics
            .iter()
            .map(|nic| nic.iter().fold(0u64, |m, &i| m | (1u64 << i)))
            .collect();
        let homeless: Vec<usize> = self
            .order
            .iter()
            .skip(depth)
            .copied()
            .filter(|&r| masks.iter().all(|m| self.conflicts[r] & m != 0))
            .collect();
        greedy_clique(&homeless, &self.conflicts)
    }
}

/// A clique of the conflict graph among `candidates`, grown greedily from the most conflicted.
fn greedy_clique(candidates: &[usize], conflicts: &[u64]) -> usize {
    let mut sorted = candidates.to_vec();
    sorted.sort_by_key(|&i| std::cmp::Reverse(conflicts[i].count_ones()));
    let mut clique: Vec<usize> = Vec::new();
    for item in sorted {
        if clique.iter().all(|&c| conflicts[item] & (1u64 << c) != 0) {
            clique.push(item);
        }
    }
    clique.len()
}

/// The largest clique of the conflict graph over `0..n`, by exhaustive branch and bound (the
/// graphs here have at most 64 nodes and are sparse enough).
fn max_clique(n: usize, conflicts: &[u64]) -> usize {
    fn grow(candidates: u64, size: usize, best: &mut usize, conflicts: &[u64]) {
        if candidates == 0 {
            *best = (*best).max(size);
            return;
        }
        if size + candidates.count_ones() as usize <= *best {
            return;
        }
        let mut rest = candidates;
        while rest != 0 {
            if size + rest.count_ones() as usize <= *best {
                return;
            }
            let item = rest.trailing_zeros() as usize;
            rest &= !(1u64 << item);
            grow(rest & conflicts[item], size + 1, best, conflicts);
        }
    }
    let all = if n >= 64 { u64::MAX } else { (1u64 << n) - 1 };
    let mut best = 0;
    grow(all, 0, &mut best, conflicts);
    best
}

/// The fewest-NIC plan for `arrivals` (at most 64), visiting at most `budget` search nodes.
pub fn optimum(
    fleet: &Fleet<'_>,
    arrivals: &[Arrival],
    solo: &[f64],
    budget: usize,
) -> Result<Optimum, ColocateError> {
    if arrivals.len() > 64 {
        return Err(ColocateError::Invalid {
            what: "arrivals for the exact optimum".to_string(),
            value: arrivals.len() as f64,
            reason: "at most 64 (sets are bit masks)",
        });
    }
    let cores: Vec<u32> = arrivals
        .iter()
        .map(|a| fleet.catalogue.get(a.nf).map_or(0, |nf| nf.cores))
        .collect();
    let mut known = HashMap::new();
    let mut conflicts = vec![0u64; arrivals.len()];
    for a in 0..arrivals.len() {
        for b in a + 1..arrivals.len() {
            let feasible = fleet.feasible(arrivals, solo, &[a, b])?;
            known.insert((1u64 << a) | (1u64 << b), feasible);
            if !feasible {
                conflicts[a] |= 1u64 << b;
                conflicts[b] |= 1u64 << a;
            }
        }
    }
    // Most conflicted first (they decide the NIC count), then most cores.
    let mut order: Vec<usize> = (0..arrivals.len()).collect();
    order.sort_by_key(|&i| std::cmp::Reverse((conflicts[i].count_ones(), cores[i])));
    let total = cores.iter().fold(0u32, |sum, c| sum.saturating_add(*c));
    let per_nic = fleet.device.cores.max(1);
    let lower = (total.div_ceil(per_nic) as usize).max(max_clique(arrivals.len(), &conflicts));
    let mut search = Search {
        fleet,
        arrivals,
        solo,
        order: order.clone(),
        cores,
        conflicts,
        known,
        best: Vec::new(),
        lower,
        nodes: 0,
        budget,
        exhausted: false,
        exceptions: 0,
    };
    // First fit with the ground truth as its check: the first upper bound.
    let first = first_fit(&order, |members| search.feasible(members))?;
    search.best = first;
    search.branch(0, &mut Vec::new())?;
    Ok(Optimum {
        plan: search.best,
        proven: !search.exhausted,
        nodes: search.nodes,
        checks: search.known.len(),
        monotonicity_exceptions: search.exceptions,
    })
}

/// Puts each item of `order` on the first NIC where `fits` accepts it with the NIC's others.
fn first_fit(
    order: &[usize],
    mut fits: impl FnMut(&[usize]) -> Result<bool, ColocateError>,
) -> Result<Vec<Vec<usize>>, ColocateError> {
    let mut nics: Vec<Vec<usize>> = Vec::new();
    for &item in order {
        let mut placed = false;
        for nic in nics.iter_mut() {
            nic.push(item);
            if fits(nic)? {
                placed = true;
                break;
            }
            nic.pop();
        }
        if !placed {
            nics.push(vec![item]);
        }
    }
    Ok(nics)
}

/// First fit with the ground truth as its check, in arrival order: the reference plan for
/// sequences too long for [`optimum`] (an upper bound on the optimum's NIC count).
pub fn oracle_first_fit(
    fleet: &Fleet<'_>,
    arrivals: &[Arrival],
    solo: &[f64],
) -> Result<Vec<Vec<usize>>, ColocateError> {
    let order: Vec<usize> = (0..arrivals.len()).collect();
    first_fit(&order, |members| fleet.feasible(arrivals, solo, members))
}
