//! Callbacks of `bpf_loop` and `bpf_for_each_map_elem`, followed per call.
//!
//! The path graph prices a helper that calls a callback by a summary (the most calls times one
//! call's worst path: `linerate_bound::prepare`), so a path's decisions stop at the helper and
//! resume after it: they say nothing about the branches inside the calls or how many calls
//! there are. The machine executes the calls anyway, as the shared semantics makes them
//! (`linerate_sem::helpers`), and leaves each branch inside a callback — and each "another
//! call?" of the helper — to the solver, as an outcome chosen inside a helper
//! ([`linerate_sem::helpers::HelperMachine::decide`]): an outcome the path so far allows, the
//! other one tried by the checker where the rest of the path conflicts with it. The witness
//! then follows real calls, so it replays exactly; the estimate stays the summary's (at least
//! what these calls cost, so the bound stays valid).
//!
//! Where the path is impossible, the calls the machine chose are one way among many, and a
//! conflict found along them says nothing of the others: trying every combination is hopeless
//! (`bpf_loop` may call its callback millions of times). So a checker first asks a second
//! machine, which does not follow the calls ([`crate::machine::Env::abstract_callbacks`]): the
//! helper's result and everything its callbacks may write — the stack, the map values and the
//! packet's bytes where a callback stores anything — become unknown ([`Exec::havoc_callbacks`]).
//! That machine's executions include every real one, so a path it finds impossible is
//! impossible however the callbacks go, and its unsatisfiable core prunes as any other. Spilled
//! pointers survive the forgetting: a callback that overwrote one in its caller's frame would
//! leave the caller a scalar where it uses a pointer, which the verifier refuses. Callbacks that
//! call helpers with other effects (map updates, records, packet moves) or kfuncs are not
//! over-approximated: the check then falls back to trying outcomes.
//!
//! What this cannot follow: a walk over a hash map's elements, whose order is the kernel's
//! bucket order of every entry the map holds (`linerate_vm::hash_order`), which unknown map
//! contents leave open.

use linerate_bpf::helpers::helper_name;
use linerate_bpf::insn::{relative_target, CallTarget, Instruction};
use linerate_sem::exec::{HelperOutcome, SemError};
use linerate_sem::helpers::{WalkPosition, WalkedElement};
use std::collections::HashMap;

use z3::ast::Bool;

use crate::error::SmtError;
use crate::machine::Exec;
use crate::memory::add;
use crate::value::{Bits, Region, SymValue};

/// Calls of callbacks in one path after which a check no longer tries another call first (a
/// `bpf_loop` whose count the packet gives may allow millions, each a solver check).
const MAX_PREFERRED_CALLS: u64 = 64;

/// Whether helper `id` calls a callback (`bpf_loop`, `bpf_for_each_map_elem`).
pub(crate) fn calls_back(id: u32) -> bool {
    use linerate_bpf::facts::helper::{FOR_EACH_MAP_ELEM, LOOP};
    matches!(id, LOOP | FOR_EACH_MAP_ELEM)
}

/// Helpers a callback may call and still be over-approximated by forgetting memory: their only
/// effects are their results and writes through pointers (or none: a trace line, a lock).
const FORGETTABLE_HELPERS: [u32; 12] = {
    use linerate_bpf::facts::helper::*;
    [
        MAP_LOOKUP_ELEM,
        KTIME_GET_NS,
        KTIME_GET_BOOT_NS,
        GET_PRANDOM_U32,
        GET_SMP_PROCESSOR_ID,
        TRACE_PRINTK,
        SPIN_LOCK,
        SPIN_UNLOCK,
        CSUM_DIFF,
        XDP_LOAD_BYTES,
        PROBE_READ_KERNEL,
        PROBE_READ_KERNEL_STR,
    ]
};

/// Forgettable helpers whose destination may be a map value or the packet, not only the stack:
/// a callback calling one stores to memory.
const STORING_HELPERS: [u32; 2] = {
    use linerate_bpf::facts::helper::*;
    [PROBE_READ_KERNEL, PROBE_READ_KERNEL_STR]
};

impl Exec<'_> {
    /// Whether the instruction being executed belongs to a callback (called by a helper at some
    /// depth of the call stack).
    pub(crate) fn in_callback(&self) -> bool {
        self.s.frames.iter().any(|f| f.resume.is_some())
    }

    /// Whether an outcome chosen at `pc` steers what the execution computes beyond the helper's
    /// own result: one inside a callback, the helper's choice whether to call its callback
    /// (again), or which inner map a lookup in a map of maps gives.
    pub(crate) fn steers(&self, pc: usize) -> bool {
        use linerate_bpf::facts::helper::{FOR_EACH_MAP_ELEM, LOOP, MAP_LOOKUP_ELEM};
        use linerate_bpf::insn::{CallTarget, Instruction};
        let insn = self.insn_at(pc);
        let map_of_maps = || match self.s.regs[1].region() {
            Some(Region::MapHandle(map)) => self
                .env
                .object
                .maps
                .get(map)
                .is_some_and(|d| d.map_type.is_map_in_map()),
            _ => false,
        };
        self.in_callback()
            || match insn {
                Some(Instruction::Call(CallTarget::Helper(LOOP | FOR_EACH_MAP_ELEM))) => true,
                Some(Instruction::Call(CallTarget::Helper(MAP_LOOKUP_ELEM))) => map_of_maps(),
                _ => false,
            }
    }

    /// The outcome of a branch inside a callback, with condition `cond` (true: jump taken to
    /// slot `taken`, else on to `fallthrough`): tried first, the side from which the callback
    /// goes on to ask for another call, along the most instructions ([`Self::continuing_side`]).
    pub(crate) fn callback_branch(
        &mut self,
        pc: usize,
        cond: &Bool,
        taken: usize,
        fallthrough: usize,
    ) -> Result<bool, SmtError> {
        let prefer = self.continuing_side(taken, fallthrough);
        self.choose(pc, cond, prefer)
    }

    /// The outcome first tried for a choice the helper at `pc` makes: for the choice of a
    /// callback helper whether to call (again), another call, up to [`MAX_PREFERRED_CALLS`].
    pub(crate) fn preferred_outcome(&mut self, pc: usize) -> Option<bool> {
        if !self.prefer_calls {
            return None;
        }
        use linerate_bpf::facts::helper::{FOR_EACH_MAP_ELEM, LOOP};
        match self.insn_at(pc) {
            Some(Instruction::Call(CallTarget::Helper(LOOP | FOR_EACH_MAP_ELEM))) => {
                // The choice is "skip the calls" or "stop calling": false goes on.
                self.s.callback_calls += 1;
                Some(self.s.callback_calls > MAX_PREFERRED_CALLS)
            }
            _ => None,
        }
    }

    /// Which side of a branch inside a callback to try first (true: the jump to `taken`): the
    /// one from which the callback can return 0, asking its helper for another call, along the
    /// most instructions — the worst case keeps going, through the longest body. `None` where
    /// the branch is not in the callback's own function, or neither side can return 0.
    fn continuing_side(&self, taken: usize, fallthrough: usize) -> Option<bool> {
        if !self.prefer_calls || self.s.frames.last().is_none_or(|f| f.resume.is_none()) {
            return None;
        }
        let r0 = match (self.s.regs[0].is_scalar(), self.s.regs[0].bits.as_const()) {
            (true, Some(v)) => Some(v == 0),
            _ => None,
        };
        let mut memo = HashMap::new();
        let t = self.zero_return_length(taken, r0, &mut memo);
        let f = self.zero_return_length(fallthrough, r0, &mut memo);
        match (t, f) {
            (Some(a), Some(b)) => Some(a > b),
            (Some(_), None) => Some(true),
            (None, Some(_)) => Some(false),
            (None, None) => None,
        }
    }

    /// The most instructions from `pc` to an `exit` of the function that may return 0, going
    /// forward only (a loop's back edge is not followed); `r0`: whether r0 is known to be zero.
    fn zero_return_length(
        &self,
        pc: usize,
        r0: Option<bool>,
        memo: &mut HashMap<(usize, Option<bool>), Option<usize>>,
    ) -> Option<usize> {
        if let Some(&known) = memo.get(&(pc, r0)) {
            return known;
        }
        let insn = self.insn_at(pc)?;
        let next = pc + insn.slots();
        let forward = |off: i64| {
            let t = relative_target(pc, off);
            (t > pc as i64).then_some(t as usize)
        };
        let writes_r0 = |dst: u8| dst == 0;
        let length = match insn {
            Instruction::Exit => (r0 != Some(false)).then_some(0),
            Instruction::Jump { off, .. } => {
                let jump =
                    forward(i64::from(off)).and_then(|t| self.zero_return_length(t, r0, memo));
                let on = self.zero_return_length(next, r0, memo);
                jump.max(on)
            }
            Instruction::MayGoto { off } => {
                let jump =
                    forward(i64::from(off)).and_then(|t| self.zero_return_length(t, r0, memo));
                jump.max(self.zero_return_length(next, r0, memo))
            }
            Instruction::Ja { off, long } => {
                let off = if long {
                    i64::from(off)
                } else {
                    i64::from(off as i16)
                };
                forward(off).and_then(|t| self.zero_return_length(t, r0, memo))
            }
            Instruction::Alu {
                op: linerate_bpf::insn::AluOp::Mov,
                dst: 0,
                src: linerate_bpf::insn::Operand::Imm(v),
                ..
            } => self.zero_return_length(next, Some(v == 0), memo),
            Instruction::Alu { dst, .. }
            | Instruction::Endian { dst, .. }
            | Instruction::LoadImm64 { dst, .. }
            | Instruction::Load { dst, .. }
                if writes_r0(dst) =>
            {
                self.zero_return_length(next, None, memo)
            }
            Instruction::Call(_)
            | Instruction::Atomic { .. }
            | Instruction::LegacyPacketLoad { .. } => self.zero_return_length(next, None, memo),
            _ => self.zero_return_length(next, r0, memo),
        }
        .map(|n| n + 1);
        memo.insert((pc, r0), length);
        length
    }

    /// The slot of the function a callback argument of `helper` points to.
    pub(crate) fn callback_function(
        &mut self,
        pc: usize,
        helper: u32,
        value: &SymValue,
    ) -> Result<usize, SmtError> {
        match (value.region(), value.bits.as_const()) {
            (Some(Region::Function), Some(slot)) => Ok(slot as usize),
            _ => Err(SmtError::Sem(SemError::BadHelperArgument {
                pc,
                helper,
                reason: "the callback argument is not a function",
            })),
        }
    }

    /// Copies `key` where the callback about to be called (one frame deeper) reads it.
    pub(crate) fn place_callback_key(
        &mut self,
        pc: usize,
        key: &[SymValue],
    ) -> Result<SymValue, SmtError> {
        let depth = self.s.frames.len() as u64 + 1;
        let start = Bits::Const(depth << 32);
        for (i, b) in key.iter().enumerate() {
            if let Err(why) = self.s.callback_keys.store(&add(&start, i as u64), 1, b) {
                return Err(self.unsupported(pc, why));
            }
        }
        Ok(SymValue::pointer(Region::CallbackKey, start))
    }

    /// Where `bpf_for_each_map_elem` goes next in a hash map: not modelled (module comment).
    pub(crate) fn walk_hash(
        &mut self,
        pc: usize,
        map: usize,
        _after: Option<WalkPosition>,
    ) -> Result<Option<WalkedElement<SymValue>>, SmtError> {
        Err(self.unsupported(
            pc,
            format!(
                "{} over hash map `{}` (the order of its walk depends on every entry the map \
                 holds, which the path leaves unknown)",
                helper_name(linerate_bpf::facts::helper::FOR_EACH_MAP_ELEM),
                self.env.object.maps[map].name
            ),
        ))
    }
}

impl Exec<'_> {
    /// `bpf_loop` or `bpf_for_each_map_elem` at `pc` without following its calls: r0 is
    /// unknown, and so is every byte the callbacks may have written (module comment).
    pub(crate) fn havoc_callbacks(
        &mut self,
        pc: usize,
        helper: u32,
    ) -> Result<HelperOutcome, SmtError> {
        let function = self.callback_function(pc, helper, &self.s.regs[2].clone())?;
        let stores = self.callback_stores(pc, function)?;
        self.s.stack.havoc("stack");
        if stores {
            self.s.packet.havoc("packet");
            for (i, map) in self.s.maps.iter_mut().enumerate() {
                if !map.is_frozen() {
                    map.memory.havoc(&format!("map{i}"));
                }
            }
        }
        for r in 0..=5 {
            let value = self.fresh(pc, "a callback helper's result (not followed)", 64);
            self.s.regs[r] = SymValue::symbolic(value);
        }
        Ok(HelperOutcome::Return)
    }

    /// Whether the callback starting at slot `function` (or a function it calls) may store to
    /// memory; an error where it does what forgetting memory does not cover.
    fn callback_stores(&self, pc: usize, function: usize) -> Result<bool, SmtError> {
        let program = self.s.program;
        let cfg = match self.env.cfgs.get(program) {
            Some(Ok(cfg)) => cfg,
            Some(Err(e)) => return Err(SmtError::Cfg(e.clone())),
            None => return Err(SmtError::NoSuchProgram(program)),
        };
        let slots = &self.env.slots[program];
        let (mut todo, mut seen, mut stores) = (vec![function], Vec::new(), false);
        while let Some(start) = todo.pop() {
            if seen.contains(&start) {
                continue;
            }
            seen.push(start);
            let Some(f) = cfg.functions().iter().find(|f| f.start == start) else {
                return Err(self.unsupported(pc, "a callback that starts no function"));
            };
            for slot in f.start..f.start + f.len {
                match slots.get(slot).copied().flatten() {
                    Some(Instruction::Store { .. } | Instruction::Atomic { .. }) => stores = true,
                    Some(Instruction::Call(CallTarget::Local(off))) => {
                        todo.push(relative_target(slot, i64::from(off)) as usize)
                    }
                    Some(Instruction::Call(CallTarget::Helper(id)))
                        if FORGETTABLE_HELPERS.contains(&id) =>
                    {
                        stores |= STORING_HELPERS.contains(&id)
                    }
                    Some(Instruction::Call(CallTarget::Helper(id))) => {
                        return Err(
                            self.unsupported(pc, format!("a callback calling {}", helper_name(id)))
                        )
                    }
                    Some(Instruction::Call(CallTarget::Kfunc(_))) => {
                        return Err(self.unsupported(pc, "a callback calling a kfunc"))
                    }
                    _ => {}
                }
            }
        }
        Ok(stores)
    }
}
