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
//! What this cannot follow: a walk over a hash map's elements, whose order is the kernel's
//! bucket order of every entry the map holds (`linerate_vm::hash_order`), which unknown map
//! contents leave open.

use linerate_bpf::helpers::helper_name;
use linerate_sem::exec::SemError;
use linerate_sem::helpers::{WalkPosition, WalkedElement};
use z3::ast::Bool;

use crate::error::SmtError;
use crate::machine::Exec;
use crate::memory::add;
use crate::value::{Bits, Region, SymValue};

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

    /// The outcome of a branch inside a callback, with condition `cond` (true: jump taken).
    pub(crate) fn callback_branch(&mut self, pc: usize, cond: &Bool) -> Result<bool, SmtError> {
        linerate_sem::helpers::HelperMachine::decide(self, pc, cond)
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
