//! Bounds-check removal (§3.1, Fig. 3).
//!
//! **Assumption** (linerate's; the paper does not say what the hardware does): an access beyond
//! the packet's end drops the packet. The program stops at once with `XDP_DROP`, and nothing
//! after the access happens; what the program did before it to the packet and the stack is lost
//! with the packet, what it did to maps stays.
//!
//! Under it, a conditional jump comparing `data + N` (an exact offset, from the analysis) with
//! `data_end` is redundant when both hold:
//! - (a) its failing side (the packet is shorter than `N`) drops: every path from it reaches an
//!   exit with `r0 = XDP_DROP` without doing anything a dropped packet would not hide (no helper
//!   call but pure ones, no store but to the stack or the packet, no loop);
//! - (b) its passing side touches byte `N - 1` first: every path from it performs a packet access
//!   reaching at least `N` bytes into the packet before anything observable (a helper call, a
//!   store outside the stack and the packet, an exit), without a loop.
//!
//! A packet shorter than `N` then takes the passing side and is dropped by the hardware at that
//! access, before anything is seen: exactly what the failing side did. A check with `N` at most
//! 14 is redundant whatever its sides do: no shorter frame reaches the program (the MAC delivers
//! whole Ethernet frames, and the kernel's test runs refuse shorter ones). The jump is removed (or
//! becomes a `ja` when its passing side is its target), and the instructions that only computed
//! its operands are removed once dead.

use std::collections::HashMap;

use linerate_analysis::Region;
use linerate_bpf::facts::xdp::XDP_DROP;
use linerate_bpf::helpers::id;
use linerate_bpf::insn::regs::RegSet;
use linerate_bpf::insn::{CallTarget, Cond, Instruction, Operand};

use crate::isa::HxInsn;
use crate::program::{LInsn, Lowered};

use super::{live_out, SourceFacts};

/// Helpers with no effect a dropped packet would not hide: they only read, or return values.
const PURE_HELPERS: [u32; 5] = [
    id::MAP_LOOKUP_ELEM,
    id::KTIME_GET_NS,
    id::GET_SMP_PROCESSOR_ID,
    id::CSUM_DIFF,
    id::KTIME_GET_BOOT_NS,
];

/// The shortest frame a program sees: an Ethernet header. The NIC's MAC delivers whole Ethernet
/// frames (runts never reach the program), and the kernel's `BPF_PROG_TEST_RUN`, the ground
/// truth, refuses shorter packets too.
const MIN_FRAME: i128 = 14;

/// Instructions one proof may walk through before giving up.
const WALK_BUDGET: usize = 20_000;

/// A recognised bounds check: the packet passes iff it has at least `needed` bytes, and the
/// failing side is the jump's target (`fail_is_target`) or the next instruction.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Check {
    needed: i128,
    fail_is_target: bool,
}

/// The bounds check `insn` is, if it compares a packet pointer at an exact offset with
/// `data_end`.
fn recognise(insn: &LInsn, facts: &SourceFacts) -> Option<Check> {
    let HxInsn::Ebpf(Instruction::Jump {
        wide: true,
        cond,
        dst,
        src: Operand::Reg(src),
        ..
    }) = insn.insn
    else {
        return None;
    };
    let packet_at = |r| match facts.pointer(insn, r) {
        Some((Region::Packet, offset)) => offset.constant(),
        _ => None,
    };
    let is_end = |r| matches!(facts.pointer(insn, r), Some((Region::PacketEnd, offset)) if offset.constant() == Some(0));
    // Normalise to `data + n <cond> data_end`.
    let (n, cond) = if is_end(src) {
        (packet_at(dst)?, cond)
    } else if is_end(dst) {
        let swapped = match cond {
            Cond::Gt => Cond::Lt,
            Cond::Ge => Cond::Le,
            Cond::Lt => Cond::Gt,
            Cond::Le => Cond::Ge,
            _ => return None,
        };
        (packet_at(src)?, swapped)
    } else {
        return None;
    };
    if n <= 0 {
        return None;
    }
    // data + n > end: taken when len < n.  data + n >= end: taken when len < n + 1.
    // data + n <= end: taken when len >= n. data + n < end: taken when len >= n + 1.
    let (needed, fail_is_target) = match cond {
        Cond::Gt => (n, true),
        Cond::Ge => (n.checked_add(1)?, true),
        Cond::Le => (n, false),
        Cond::Lt => (n.checked_add(1)?, false),
        _ => return None,
    };
    Some(Check {
        needed,
        fail_is_target,
    })
}

/// Where control goes after `i`, instructions marked `gone` being skipped over.
fn successors(lowered: &Lowered, gone: &[bool], i: usize) -> Vec<usize> {
    if gone[i] {
        return if i + 1 < lowered.len() {
            vec![i + 1]
        } else {
            Vec::new()
        };
    }
    lowered.successors(i)
}

/// Whether a store `insn` makes through `base` lands where a dropped packet hides it.
fn store_hidden_by_drop(insn: &LInsn, facts: &SourceFacts, base: u8) -> bool {
    matches!(
        facts.pointer(insn, base),
        Some((Region::Stack { .. } | Region::Packet, _))
    )
}

/// Proof (a): every path from `start` drops without an effect a drop would not hide.
struct DropsQuietly<'a> {
    lowered: &'a Lowered,
    gone: &'a [bool],
    facts: &'a SourceFacts,
    /// Results by (instruction, known `r0`).
    memo: HashMap<(usize, Option<i64>), bool>,
    on_path: Vec<bool>,
    budget: usize,
}

impl DropsQuietly<'_> {
    fn from(&mut self, i: usize, r0: Option<i64>) -> bool {
        if i >= self.lowered.len() || self.on_path[i] || self.budget == 0 {
            return false;
        }
        if let Some(&known) = self.memo.get(&(i, r0)) {
            return known;
        }
        self.budget -= 1;
        self.on_path[i] = true;
        let result = self.step(i, r0);
        self.on_path[i] = false;
        self.memo.insert((i, r0), result);
        result
    }

    fn step(&mut self, i: usize, r0: Option<i64>) -> bool {
        let l = &self.lowered.insns[i];
        if self.gone[i] {
            return self.from(i + 1, r0);
        }
        let r0_after = match l.insn {
            HxInsn::ExitWith(action) => return action as i64 == XDP_DROP as i64,
            HxInsn::Ebpf(Instruction::Exit) => {
                let value = r0.or_else(|| self.facts.constant(l, 0).map(|v| v as i64));
                return value == Some(XDP_DROP as i64);
            }
            HxInsn::Ebpf(Instruction::Call(CallTarget::Helper(h))) if PURE_HELPERS.contains(&h) => {
                None
            }
            HxInsn::Ebpf(Instruction::Call(_)) => return false,
            HxInsn::Ebpf(Instruction::Alu {
                wide: true,
                op: linerate_bpf::insn::AluOp::Mov,
                dst: 0,
                src: Operand::Imm(k),
            }) => Some(k as i64),
            insn if insn.writes() & 1 != 0 => None,
            _ => r0,
        };
        if let Some(access) = l.insn.memory() {
            if access.writes && !store_hidden_by_drop(l, self.facts, access.base) {
                return false;
            }
        }
        let next = successors(self.lowered, self.gone, i);
        !next.is_empty() && next.into_iter().all(|s| self.from(s, r0_after))
    }
}

/// Proof (b): every path from `start` reaches a packet access covering `needed` bytes before
/// anything observable.
struct CoveredFirst<'a> {
    lowered: &'a Lowered,
    gone: &'a [bool],
    facts: &'a SourceFacts,
    needed: i128,
    memo: HashMap<usize, bool>,
    on_path: Vec<bool>,
    budget: usize,
}

impl CoveredFirst<'_> {
    fn from(&mut self, i: usize) -> bool {
        if i >= self.lowered.len() || self.on_path[i] || self.budget == 0 {
            return false;
        }
        if let Some(&known) = self.memo.get(&i) {
            return known;
        }
        self.budget -= 1;
        self.on_path[i] = true;
        let result = self.step(i);
        self.on_path[i] = false;
        self.memo.insert(i, result);
        result
    }

    fn step(&mut self, i: usize) -> bool {
        let l = &self.lowered.insns[i];
        if !self.gone[i] {
            if l.insn.is_exit() || l.insn.is_call() {
                return false;
            }
            if let Some(access) = l.insn.memory() {
                // An exact offset: after the check is gone, short packets reach this access in
                // states the analysis never saw, and only a constant offset (data plus fixed
                // steps) is sure to hold for them as well.
                let exact = self
                    .facts
                    .pointer(l, access.base)
                    .and_then(|(region, offset)| {
                        (region == Region::Packet)
                            .then_some(offset.constant())
                            .flatten()
                    });
                if let Some(offset) = exact {
                    let reach = offset
                        .checked_add(access.off as i128)
                        .and_then(|v| v.checked_add(access.len as i128));
                    if reach.is_some_and(|r| r >= self.needed) {
                        return true;
                    }
                }
                if access.writes && !store_hidden_by_drop(l, self.facts, access.base) {
                    return false;
                }
            }
        }
        let next = successors(self.lowered, self.gone, i);
        !next.is_empty() && next.into_iter().all(|s| self.from(s))
    }
}

/// Pure instructions in `j`'s block that computed the registers jump `j` compares (directly or
/// through one another): candidates for removal once the jump is gone.
fn operand_producers(
    lowered: &Lowered,
    facts: &SourceFacts,
    blocks: &[usize],
    j: usize,
) -> Vec<usize> {
    let mut wanted: RegSet = lowered.insns[j].insn.reads();
    let mut found = Vec::new();
    for k in (0..j).rev() {
        if blocks[k] != blocks[j] || wanted == 0 {
            break;
        }
        let l = &lowered.insns[k];
        let writes = l.insn.writes();
        if writes & wanted == 0 {
            continue;
        }
        wanted &= !writes;
        if is_pure(l, facts) {
            found.push(k);
            wanted |= l.insn.reads();
        }
    }
    found
}

/// Whether `l` only computes a register: no memory effect, no fault, no control.
fn is_pure(l: &LInsn, facts: &SourceFacts) -> bool {
    match l.insn {
        HxInsn::Ebpf(
            Instruction::Alu { .. } | Instruction::Endian { .. } | Instruction::LoadImm64 { .. },
        )
        | HxInsn::Alu3 { .. } => true,
        // Context fields are always readable.
        HxInsn::Ebpf(Instruction::Load { src, .. }) => {
            matches!(facts.pointer(l, src), Some((Region::Ctx, _)))
        }
        _ => false,
    }
}

pub(super) fn run(lowered: &mut Lowered, facts: &SourceFacts) -> usize {
    let n = lowered.len();
    let blocks = lowered.block_ids();
    let mut gone = vec![false; n];
    let mut producers = Vec::new();
    let mut removed = 0;
    for j in 0..n {
        let Some(check) = recognise(&lowered.insns[j], facts) else {
            continue;
        };
        let Some(target) = lowered.insns[j].target else {
            continue;
        };
        let (fail, pass) = if check.fail_is_target {
            (target, j + 1)
        } else {
            (j + 1, target)
        };
        let mut drops = DropsQuietly {
            lowered,
            gone: &gone,
            facts,
            memo: HashMap::new(),
            on_path: vec![false; n],
            budget: WALK_BUDGET,
        };
        let r0 = facts.constant(&lowered.insns[j], 0).map(|v| v as i64);
        let mut covered = CoveredFirst {
            lowered,
            gone: &gone,
            facts,
            needed: check.needed,
            memo: HashMap::new(),
            on_path: vec![false; n],
            budget: WALK_BUDGET,
        };
        let never_fails = check.needed <= MIN_FRAME;
        let redundant = never_fails || (drops.from(fail, r0) && covered.from(pass));
        if !redundant {
            continue;
        }
        producers.extend(operand_producers(lowered, facts, &blocks, j));
        if pass == j + 1 {
            gone[j] = true;
            removed += 1;
        } else {
            lowered.insns[j].insn = HxInsn::Ebpf(Instruction::Ja {
                off: 0,
                long: false,
            });
        }
    }
    // Operand computations die with their checks; removing one may kill the next.
    loop {
        let live = live_out(lowered, &gone);
        let dead: Vec<usize> = producers
            .iter()
            .copied()
            .filter(|&k| !gone[k] && lowered.insns[k].insn.writes() & live[k] == 0)
            .collect();
        if dead.is_empty() {
            break;
        }
        for k in dead {
            gone[k] = true;
            removed += 1;
        }
    }
    lowered.remove(&gone);
    removed
}
