//! A small program builder over [`Instruction`] values: forward and backward jumps and local calls
//! name [`Label`]s, resolved to slot offsets when the program is finished.

use linerate_bpf::insn::build::ldx;
use linerate_bpf::insn::{CallTarget, Cond, Imm64, Instruction, Operand, RawInsn, Reg, Size};

pub(crate) const R0: Reg = 0;
pub(crate) const R1: Reg = 1;
pub(crate) const R2: Reg = 2;
pub(crate) const R3: Reg = 3;
pub(crate) const R4: Reg = 4;
pub(crate) const R5: Reg = 5;
pub(crate) const R6: Reg = 6;
pub(crate) const R7: Reg = 7;
pub(crate) const R8: Reg = 8;
pub(crate) const R9: Reg = 9;
pub(crate) const R10: Reg = 10;

/// A position in a program under construction.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Label(usize);

#[derive(Clone, Copy, Debug)]
enum Item {
    Insn(Instruction),
    /// A conditional or unconditional jump whose offset is resolved from the label.
    Jump(Instruction, Label),
    /// A BPF-to-BPF call of the function at the label.
    Call(Label),
    /// `dst = ` the address of the function at the label (`BPF_PSEUDO_FUNC`), a callback.
    FuncAddr(Reg, Label),
}

/// `src_reg` of a 64-bit immediate load holding a function's address (include/uapi/linux/bpf.h).
const BPF_PSEUDO_FUNC: u8 = 4;

/// A program under construction.
#[derive(Debug, Default)]
pub(crate) struct Asm {
    items: Vec<Item>,
    /// Item index each label is bound to.
    labels: Vec<Option<usize>>,
}

/// A finished program: instruction slots and the slot each label was bound to.
pub(crate) struct Finished {
    pub insns: Vec<RawInsn>,
    label_slots: Vec<Option<usize>>,
}

impl Finished {
    /// The slot a label was bound to.
    pub fn slot(&self, label: Label) -> usize {
        self.label_slots[label.0].expect("label bound")
    }
}

impl Asm {
    pub fn new() -> Asm {
        Asm::default()
    }

    /// A new, unbound label.
    pub fn label(&mut self) -> Label {
        self.labels.push(None);
        Label(self.labels.len() - 1)
    }

    /// Binds `label` to the next instruction.
    pub fn bind(&mut self, label: Label) {
        assert!(self.labels[label.0].is_none(), "label bound twice");
        self.labels[label.0] = Some(self.items.len());
    }

    /// A new label bound to the next instruction.
    #[cfg(test)]
    pub fn here(&mut self) -> Label {
        let l = self.label();
        self.bind(l);
        l
    }

    pub fn push(&mut self, insn: Instruction) {
        self.items.push(Item::Insn(insn));
    }

    pub fn extend(&mut self, insns: impl IntoIterator<Item = Instruction>) {
        for i in insns {
            self.push(i);
        }
    }

    /// `if dst <cond> src goto target`.
    pub fn jcc(&mut self, wide: bool, cond: Cond, dst: Reg, src: Operand, target: Label) {
        self.items.push(Item::Jump(
            Instruction::Jump {
                wide,
                cond,
                dst,
                src,
                off: 0,
            },
            target,
        ));
    }

    /// `goto target`.
    pub fn ja(&mut self, target: Label) {
        self.items.push(Item::Jump(
            Instruction::Ja {
                off: 0,
                long: false,
            },
            target,
        ));
    }

    /// `may_goto target` (Linux 6.9+): jumps once the verifier-inserted loop budget is
    /// exhausted, which lets the verifier accept a loop without unrolling it.
    pub fn may_goto(&mut self, target: Label) {
        self.items
            .push(Item::Jump(Instruction::MayGoto { off: 0 }, target));
    }

    /// A call of the local function at `target`.
    pub fn call_local(&mut self, target: Label) {
        self.items.push(Item::Call(target));
    }

    /// `dst = &function at target`, for a helper taking a callback.
    pub fn ld_func(&mut self, dst: Reg, target: Label) {
        self.items.push(Item::FuncAddr(dst, target));
    }

    /// Whether a jump or call targets `label`.
    pub fn is_used(&self, label: Label) -> bool {
        self.items.iter().any(|i| match i {
            Item::Jump(_, l) | Item::Call(l) | Item::FuncAddr(_, l) => *l == label,
            Item::Insn(_) => false,
        })
    }

    /// Binds `label` and emits `code` there if anything jumps to it (the verifier refuses
    /// unreachable instructions).
    pub fn tail_block(&mut self, label: Label, code: impl IntoIterator<Item = Instruction>) {
        if self.is_used(label) {
            self.bind(label);
            self.extend(code);
        }
    }

    /// Resolves labels.
    pub fn finish(self) -> Finished {
        let mut slot_of = Vec::with_capacity(self.items.len() + 1);
        let mut slot = 0usize;
        for item in &self.items {
            slot_of.push(slot);
            slot += match item {
                Item::Insn(i) => i.slots(),
                Item::FuncAddr(..) => 2,
                _ => 1,
            };
        }
        slot_of.push(slot);
        let label_slots: Vec<Option<usize>> =
            self.labels.iter().map(|l| l.map(|i| slot_of[i])).collect();
        let target = |label: Label| -> i64 {
            label_slots[label.0].expect("jump to an unbound label") as i64
        };
        let mut insns = Vec::with_capacity(slot);
        for (i, item) in self.items.iter().enumerate() {
            let rel = |label| target(label) - (slot_of[i] as i64 + 1);
            let off16 = |label| i16::try_from(rel(label)).expect("jump offset fits 16 bits");
            let insn = match *item {
                Item::Insn(insn) => insn,
                Item::Jump(Instruction::MayGoto { .. }, label) => {
                    Instruction::MayGoto { off: off16(label) }
                }
                Item::Jump(
                    Instruction::Jump {
                        wide,
                        cond,
                        dst,
                        src,
                        ..
                    },
                    label,
                ) => Instruction::Jump {
                    wide,
                    cond,
                    dst,
                    src,
                    off: off16(label),
                },
                Item::Jump(_, label) => Instruction::Ja {
                    off: off16(label) as i32,
                    long: false,
                },
                Item::Call(label) => Instruction::Call(CallTarget::Local(rel(label) as i32)),
                Item::FuncAddr(dst, label) => Instruction::LoadImm64 {
                    dst,
                    imm: Imm64::Pseudo {
                        src: BPF_PSEUDO_FUNC,
                        imm: rel(label) as i32,
                        next_imm: 0,
                    },
                },
            };
            insns.extend(insn.encode());
        }
        Finished { insns, label_slots }
    }
}

/// `dst = *(u32 *)(ctx + field)`: a field of `struct xdp_md` (an offset of
/// [`linerate_bpf::facts::xdp_md`]).
pub(crate) fn ldx_ctx(dst: Reg, ctx: Reg, field: u64) -> Instruction {
    ldx(
        Size::W,
        dst,
        ctx,
        i16::try_from(field).expect("xdp_md offsets are small"),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use linerate_bpf::insn::build::{exit, ld64};

    #[test]
    fn labels_resolve_to_slot_offsets() {
        let mut a = Asm::new();
        let end = a.label();
        let top = a.here();
        a.push(ld64(R1, 1)); // two slots
        a.jcc(true, Cond::Eq, R1, Operand::Imm(0), end);
        a.ja(top);
        a.bind(end);
        a.push(exit());
        a.may_goto(top);
        let f = a.finish();
        assert_eq!(f.slot(top), 0);
        assert_eq!(f.slot(end), 4);
        let decoded = linerate_bpf::insn::decode_all(&f.insns[..5]).expect("decodes");
        match decoded[1].1 {
            Instruction::Jump { off, .. } => assert_eq!(off, 1), // slot 2 -> slot 4
            other => panic!("{other:?}"),
        }
        match decoded[2].1 {
            Instruction::Ja { off, .. } => assert_eq!(off, -4), // slot 3 -> slot 0
            other => panic!("{other:?}"),
        }
        assert_eq!(
            linerate_bpf::insn::decode_all(&f.insns).expect("decodes")[4],
            (5, Instruction::MayGoto { off: -6 }) // slot 5 -> slot 0
        );
    }
}
