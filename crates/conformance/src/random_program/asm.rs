//! A small assembler for the generators: instructions with jumps to labels, the offsets resolved
//! once the code is laid out ([`Asm::finish`]), and the names of the features the code uses.

use std::collections::BTreeSet;

use linerate_bpf::insn::Instruction;

/// A jump target, placed at most once.
pub(super) type Label = usize;

/// Instructions with jumps to labels, resolved to offsets by [`Asm::finish`].
pub(super) struct Asm {
    insns: Vec<Instruction>,
    fixups: Vec<(usize, Label)>,
    labels: Vec<Option<usize>>,
    /// Where the epilogue continues when a re-derived packet is too short (`objects` only).
    pub(super) early: Label,
    pub(super) features: BTreeSet<&'static str>,
}

impl Asm {
    pub(super) fn new() -> Asm {
        let mut asm = Asm {
            insns: Vec::new(),
            fixups: Vec::new(),
            labels: Vec::new(),
            early: 0,
            features: BTreeSet::new(),
        };
        asm.early = asm.label();
        asm
    }

    pub(super) fn label(&mut self) -> Label {
        self.labels.push(None);
        self.labels.len() - 1
    }

    pub(super) fn place(&mut self, label: Label) {
        self.labels[label] = Some(self.insns.len());
    }

    pub(super) fn emit(&mut self, insn: Instruction) {
        self.insns.push(insn);
    }

    pub(super) fn jump_to(&mut self, insn: Instruction, label: Label) {
        self.fixups.push((self.insns.len(), label));
        self.insns.push(insn);
    }

    /// The instructions with every jump's offset set, and the features used.
    pub(super) fn finish(mut self) -> (Vec<Instruction>, BTreeSet<&'static str>) {
        let mut start = Vec::with_capacity(self.insns.len() + 1);
        let mut slot = 0usize;
        for insn in &self.insns {
            start.push(slot);
            slot += insn.slots();
        }
        start.push(slot);
        for &(at, label) in &self.fixups {
            let target = self.labels[label].expect("every label is placed");
            let off = start[target] as i64 - start[at] as i64 - 1;
            match &mut self.insns[at] {
                Instruction::Jump { off: o, .. } | Instruction::MayGoto { off: o } => {
                    *o = off as i16
                }
                Instruction::Ja { off: o, .. } => *o = off as i32,
                other => unreachable!("fixup on {other:?}"),
            }
            if off < 0 {
                self.features.insert("backward jump");
            }
        }
        (self.insns, self.features)
    }
}
