//! Executed paths: the instructions one run executed, as the interpreter records them with
//! [`crate::VmOptions::record_steps`] ([`crate::RunOutcome::steps`]), and the machine state before
//! each of them with [`crate::VmOptions::record_states`] ([`crate::RunOutcome::states`]), against
//! which the static analyses are checked.

/// One executed instruction.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Step {
    /// Index of the program in the object.
    pub program: usize,
    /// Slot of the instruction.
    pub slot: usize,
    /// For a conditional jump or `may_goto`, whether it jumped (a jump to the next slot counts as
    /// not taken).
    pub taken: Option<bool>,
}

impl Step {
    pub(crate) fn new(program: usize, slot: usize, taken: Option<bool>) -> Step {
        Step {
            program,
            slot,
            taken,
        }
    }
}

/// The machine state before one executed instruction.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StepState {
    /// Registers r0–r10 (pointers as [`crate::memory::pointer`] builds them).
    pub regs: [u64; linerate_bpf::insn::NUM_REGS],
    /// Offsets of `data_meta`, `data` and `data_end` in the packet buffer.
    pub data_meta: u64,
    pub data: u64,
    pub data_end: u64,
    /// Call depth: 0 in the entry function.
    pub depth: usize,
}

/// Reads the decisions of interpreter runs of one object as a path of the symbolic engine and
/// of `linerate-bound`'s path graph lists them ([`linerate_cfg::Decision`]): each conditional
/// jump's outcome and each tail call's target, in execution order. Branches inside the callbacks
/// of `bpf_loop` and `bpf_for_each_map_elem` are left out (a path does not fix them: the engine
/// chooses them itself, the graph prices them by a summary), from the helper call until the run
/// is back after it.
pub struct DecisionReader {
    /// For each program, the helper called at each slot that calls a helper of interest:
    /// callbacks or a tail call.
    calls: Vec<std::collections::HashMap<usize, u32>>,
}

impl DecisionReader {
    /// Decodes the programs of `object` once (a program that does not decode has no calls).
    pub fn new(object: &linerate_bpf::Object) -> DecisionReader {
        use linerate_bpf::facts::helper;
        use linerate_bpf::insn::{CallTarget, Instruction};
        let calls = object
            .programs
            .iter()
            .map(|p| {
                p.decode()
                    .unwrap_or_default()
                    .into_iter()
                    .filter_map(|(slot, insn)| match insn {
                        Instruction::Call(CallTarget::Helper(
                            h @ (helper::LOOP | helper::FOR_EACH_MAP_ELEM | helper::TAIL_CALL),
                        )) => Some((slot, h)),
                        _ => None,
                    })
                    .collect()
            })
            .collect();
        DecisionReader { calls }
    }

    /// The helper called at `slot` of program `program`, if it is one of interest.
    fn helper_at(&self, program: usize, slot: usize) -> Option<u32> {
        self.calls.get(program)?.get(&slot).copied()
    }

    /// Whether a run (steps recorded with [`crate::VmOptions::record_steps`]) called a helper
    /// that calls a callback.
    pub fn calls_back(&self, steps: &[Step]) -> bool {
        use linerate_bpf::facts::helper;
        steps.iter().any(|s| {
            matches!(
                self.helper_at(s.program, s.slot),
                Some(helper::LOOP | helper::FOR_EACH_MAP_ELEM)
            )
        })
    }

    /// The decisions of a run with steps `steps`.
    pub fn decisions(&self, steps: &[Step]) -> Vec<linerate_cfg::Decision> {
        use linerate_bpf::facts::helper;
        use linerate_cfg::Decision;
        let mut out = Vec::new();
        let mut resume_at: Option<(usize, usize)> = None;
        for (i, step) in steps.iter().enumerate() {
            if let Some(at) = resume_at {
                if (step.program, step.slot) != at {
                    continue;
                }
                resume_at = None;
            }
            let called = self.helper_at(step.program, step.slot);
            if matches!(called, Some(helper::LOOP | helper::FOR_EACH_MAP_ELEM)) {
                resume_at = Some((step.program, step.slot + 1));
            }
            if let Some(taken) = step.taken {
                out.push(Decision::Branch {
                    pc: step.slot,
                    taken,
                });
            } else if called == Some(helper::TAIL_CALL) {
                let Some(next) = steps.get(i + 1) else { break };
                let fell_through = next.program == step.program && next.slot == step.slot + 1;
                out.push(Decision::TailCall {
                    pc: step.slot,
                    program: (!fell_through).then_some(next.program),
                });
            }
        }
        out
    }
}
