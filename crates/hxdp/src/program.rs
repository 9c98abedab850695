//! The compiler's working form ([`Lowered`]): a program's instructions as a list of extended
//! instructions with explicit jump targets, each remembering the source slots it came from. The
//! passes of §3.1–§3.2 rewrite it; the scheduler packs it into rows.
//!
//! Sephirot runs one function with no call stack, no program arrays and no callbacks (§4.1), so a
//! program with BPF-to-BPF calls, tail calls, helpers that call back, kfuncs or `may_goto` is
//! refused here, by name and slot.

use linerate_bpf::helpers::id;
use linerate_bpf::insn::{CallTarget, Instruction};
use linerate_bpf::Object;

use crate::isa::HxInsn;
use crate::HxdpError;

/// Helpers the core cannot run: they need program arrays or call back into the program.
const UNRUNNABLE_HELPERS: [(u32, &str); 3] = [
    (
        id::TAIL_CALL,
        "bpf_tail_call (the core has no program arrays)",
    ),
    (
        id::FOR_EACH_MAP_ELEM,
        "bpf_for_each_map_elem (the core cannot call back into the program)",
    ),
    (
        id::LOOP,
        "bpf_loop (the core cannot call back into the program)",
    ),
];

/// One instruction of a [`Lowered`] program.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LInsn {
    /// The instruction; a jump's own offset is meaningless here, [`LInsn::target`] says where
    /// it goes.
    pub insn: HxInsn,
    /// The source slots it stands for.
    pub from: Vec<usize>,
    /// For a jump, the index in [`Lowered::insns`] it jumps to.
    pub target: Option<usize>,
}

/// A program as the compiler works on it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Lowered {
    pub insns: Vec<LInsn>,
    /// Instructions (not slots) of the source program, for reductions relative to it.
    pub source_instructions: usize,
}

impl Lowered {
    /// The entry program `program` of `object`, refused where the core cannot run it.
    pub fn new(object: &Object, program: usize) -> Result<Lowered, HxdpError> {
        let def = object
            .programs
            .get(program)
            .ok_or(HxdpError::NoSuchProgram(program))?;
        let name = def.name.clone();
        let decoded = def.decode().map_err(|e| HxdpError::Decode {
            program: name.clone(),
            reason: e.to_string(),
        })?;
        let index_of_slot = |slot: i64| decoded.iter().position(|&(s, _)| s as i64 == slot);
        let unsupported = |slot: usize, what: String| HxdpError::Unsupported {
            program: name.clone(),
            slot,
            what,
        };
        let mut insns = Vec::with_capacity(decoded.len());
        for &(slot, insn) in &decoded {
            match insn {
                Instruction::Call(CallTarget::Local(_)) => {
                    return Err(unsupported(
                        slot,
                        "a BPF-to-BPF call (the core has no call stack)".into(),
                    ))
                }
                Instruction::Call(CallTarget::Kfunc(_)) => {
                    return Err(unsupported(slot, "a kfunc call".into()))
                }
                Instruction::Call(CallTarget::Helper(id)) => {
                    if let Some((_, why)) = UNRUNNABLE_HELPERS.iter().find(|(h, _)| *h == id) {
                        return Err(unsupported(slot, format!("helper {id}, {why}")));
                    }
                }
                Instruction::MayGoto { .. } => return Err(unsupported(slot, "may_goto".into())),
                Instruction::LegacyPacketLoad { .. } => {
                    return Err(unsupported(slot, "an LD_ABS/LD_IND packet load".into()))
                }
                // The extended ISA predates `-mcpu=v4`: its three-operand subtraction took the
                // opcode v4 later gave the unconditional byte swap (0xd7).
                Instruction::Endian {
                    kind: linerate_bpf::insn::Endian::Swap,
                    ..
                } => {
                    return Err(unsupported(
                        slot,
                        "a -mcpu=v4 byte swap (the hXDP ISA uses its opcode 0xd7 for \
                         three-operand subtraction)"
                            .into(),
                    ))
                }
                _ => {}
            }
            let target = match insn.jump_target(slot) {
                Some(t) => Some(index_of_slot(t).ok_or_else(|| {
                    unsupported(
                        slot,
                        format!("a jump to slot {t}, which starts no instruction"),
                    )
                })?),
                None => None,
            };
            insns.push(LInsn {
                insn: HxInsn::Ebpf(insn),
                from: vec![slot],
                target,
            });
        }
        let source_instructions = insns.len();
        Ok(Lowered {
            insns,
            source_instructions,
        })
    }

    /// Whether control can fall from instruction `i` to `i + 1`.
    pub fn falls_through(&self, i: usize) -> bool {
        !matches!(
            self.insns[i].insn,
            HxInsn::Ebpf(Instruction::Ja { .. } | Instruction::Exit) | HxInsn::ExitWith(_)
        )
    }

    /// The indices control can go to after instruction `i`.
    pub fn successors(&self, i: usize) -> Vec<usize> {
        let mut out = Vec::with_capacity(2);
        if self.falls_through(i) && i + 1 < self.insns.len() {
            out.push(i + 1);
        }
        if let Some(t) = self.insns[i].target {
            if !out.contains(&t) {
                out.push(t);
            }
        }
        out
    }

    /// Which instructions start a basic block: the first, jump targets, and those after a jump
    /// or an exit.
    pub fn leaders(&self) -> Vec<bool> {
        let n = self.insns.len();
        let mut leader = vec![false; n];
        if n > 0 {
            leader[0] = true;
        }
        for (i, l) in self.insns.iter().enumerate() {
            if let Some(t) = l.target {
                leader[t] = true;
            }
            if l.insn.is_control() && i + 1 < n {
                leader[i + 1] = true;
            }
        }
        leader
    }

    /// The basic blocks as `[first, end)` instruction ranges, in order.
    pub fn blocks(&self) -> Vec<(usize, usize)> {
        let leaders = self.leaders();
        let starts: Vec<usize> = (0..leaders.len()).filter(|&i| leaders[i]).collect();
        starts
            .iter()
            .enumerate()
            .map(|(k, &first)| (first, starts.get(k + 1).copied().unwrap_or(leaders.len())))
            .collect()
    }

    /// The index in [`Lowered::blocks`] of the block each instruction is in.
    pub fn block_ids(&self) -> Vec<usize> {
        let mut ids = vec![0; self.len()];
        for (b, (first, end)) in self.blocks().into_iter().enumerate() {
            ids[first..end].fill(b);
        }
        ids
    }

    /// Removes the instructions `remove` marks. A jump to a removed instruction goes to the next
    /// one kept, which is where control went after the removed instruction (removal is only for
    /// instructions with no effect on the path, so they never are jumps or exits).
    pub fn remove(&mut self, remove: &[bool]) {
        let n = self.insns.len();
        let mut new_index = vec![0usize; n + 1];
        let mut kept = 0;
        for i in 0..n {
            new_index[i] = kept;
            if !remove[i] {
                kept += 1;
            }
        }
        new_index[n] = kept;
        let old = std::mem::take(&mut self.insns);
        for (i, mut l) in old.into_iter().enumerate() {
            if remove[i] {
                continue;
            }
            l.target = l.target.map(|t| new_index[t]);
            self.insns.push(l);
        }
    }

    /// Removes the instructions no path from the entry reaches (what a removed check guarded
    /// against, once nothing else jumps there); returns how many.
    pub fn remove_unreachable(&mut self) -> usize {
        let n = self.insns.len();
        let mut reached = vec![false; n];
        let mut work = if n > 0 { vec![0] } else { Vec::new() };
        while let Some(i) = work.pop() {
            if std::mem::replace(&mut reached[i], true) {
                continue;
            }
            work.extend(self.successors(i).into_iter().filter(|&s| !reached[s]));
        }
        let dead: Vec<bool> = reached.iter().map(|r| !r).collect();
        let count = dead.iter().filter(|&&d| d).count();
        if count > 0 {
            self.remove(&dead);
        }
        count
    }

    /// Removes every `ja` to the instruction right after it (what a bounds check whose passing
    /// side is its target becomes once its failing side is gone); returns how many.
    pub fn remove_trivial_jumps(&mut self) -> usize {
        let trivial: Vec<bool> = self
            .insns
            .iter()
            .enumerate()
            .map(|(i, l)| {
                matches!(l.insn, HxInsn::Ebpf(Instruction::Ja { .. })) && l.target == Some(i + 1)
            })
            .collect();
        let count = trivial.iter().filter(|&&t| t).count();
        if count > 0 {
            self.remove(&trivial);
        }
        count
    }

    /// Moves code a `ja` jumps over to the end of the program, so that the jump goes to the next
    /// instruction (and [`Lowered::remove_trivial_jumps`] removes it): what a removed bounds
    /// check leaves when its failing side is shared. The code moved is whole: it is entered only
    /// by jumps (a `ja` precedes it) and does not fall out of its end, and the program's last
    /// instruction does not fall through either, so every fall-through stays as it was. Returns
    /// how many jumps were straightened.
    pub fn straighten_jumps(&mut self) -> usize {
        let mut straightened = 0;
        loop {
            let n = self.insns.len();
            let candidate = (0..n).find_map(|i| {
                let l = &self.insns[i];
                let t = l.target?;
                let jumps_over = matches!(l.insn, HxInsn::Ebpf(Instruction::Ja { .. }))
                    && t > i + 1
                    && !self.falls_through(t - 1)
                    && !self.falls_through(n - 1);
                jumps_over.then_some((i + 1, t))
            });
            let Some((from, to)) = candidate else {
                return straightened;
            };
            let order: Vec<usize> = (0..from).chain(to..n).chain(from..to).collect();
            self.permute(&order);
            straightened += 1;
        }
    }

    /// Moves instructions `moving` (in order; neither jumps nor exits) to just before instruction
    /// `at`, or to the end of the program where `at` is its length. A jump to a moved instruction
    /// goes on to the first instruction after it that stays; a jump to `at` enters the moved
    /// instructions if `enters` (they move into the block `at` starts), and still goes to `at`
    /// otherwise.
    pub fn relocate(&mut self, moving: &[usize], at: usize, enters: bool) {
        let n = self.insns.len();
        let mut moved = vec![false; n];
        for &x in moving {
            moved[x] = true;
        }
        let mut order: Vec<usize> = Vec::with_capacity(n);
        for (i, &gone) in moved.iter().enumerate() {
            if i == at {
                order.extend_from_slice(moving);
            }
            if !gone {
                order.push(i);
            }
        }
        if at == n {
            order.extend_from_slice(moving);
        }
        let stays_from = |mut t: usize| {
            while t < n && moved[t] {
                t += 1;
            }
            t
        };
        let entry = moving.first().copied();
        for l in &mut self.insns {
            l.target = l.target.map(|t| match entry {
                Some(first) if t == at && enters => first,
                _ => stays_from(t),
            });
        }
        self.permute(&order);
    }

    /// Puts the instructions in the order `order` gives (old indices), jump targets following.
    fn permute(&mut self, order: &[usize]) {
        let mut new_index = vec![0usize; order.len()];
        for (new, &old) in order.iter().enumerate() {
            new_index[old] = new;
        }
        let old = std::mem::take(&mut self.insns);
        let mut slots: Vec<Option<LInsn>> = old.into_iter().map(Some).collect();
        self.insns = order
            .iter()
            .filter_map(|&o| slots[o].take())
            .map(|mut l| {
                l.target = l.target.map(|t| new_index[t]);
                l
            })
            .collect();
    }

    /// Removes the instructions that only compute registers no path reads afterwards (a load is
    /// kept: it may be the access a removed bounds check relies on); returns how many.
    pub fn remove_dead(&mut self) -> usize {
        let mut total = 0;
        loop {
            let live = crate::liveness::live_out(self, &[]);
            let dead: Vec<bool> = self
                .insns
                .iter()
                .zip(&live)
                .map(|(l, &out)| {
                    let registers_only = l.insn.memory().is_none()
                        && !l.insn.is_call()
                        && !l.insn.is_control()
                        && !matches!(l.insn, HxInsn::ImmHigh(_));
                    registers_only && l.insn.writes() != 0 && l.insn.writes() & out == 0
                })
                .collect();
            let count = dead.iter().filter(|&&d| d).count();
            if count == 0 {
                return total;
            }
            self.remove(&dead);
            total += count;
        }
    }

    /// Instructions in the lowered program.
    pub fn len(&self) -> usize {
        self.insns.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.insns.is_empty()
    }
}
