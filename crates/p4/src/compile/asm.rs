//! A label assembler for the generated program: code is a list of instructions, labels and
//! jumps to labels; [`Assembly::finish`] places the labels and turns each jump into a relative
//! BPF jump (offsets count slots, an `ld_imm64` takes two).

use linerate_bpf::insn::build::{ja, jump};
use linerate_bpf::insn::{Cond, Instruction, Operand, Reg};

/// A place in the code that jumps go to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Label(usize);

#[derive(Debug, Clone)]
enum Item {
    Insn(Instruction),
    /// `goto target`, or `if reg cond operand goto target`.
    Jump {
        test: Option<(Cond, Reg, Operand)>,
        target: Label,
    },
    Place(Label),
}

/// Code being generated.
#[derive(Debug, Default, Clone)]
pub(crate) struct Assembly {
    items: Vec<Item>,
    labels: usize,
}

impl Assembly {
    pub fn label(&mut self) -> Label {
        self.labels += 1;
        Label(self.labels - 1)
    }

    pub fn emit(&mut self, insn: Instruction) {
        self.items.push(Item::Insn(insn));
    }

    pub fn place(&mut self, label: Label) {
        self.items.push(Item::Place(label));
    }

    pub fn goto(&mut self, target: Label) {
        self.items.push(Item::Jump { test: None, target });
    }

    /// `if reg cond imm goto target` (64-bit compare).
    pub fn branch_imm(&mut self, cond: Cond, reg: Reg, imm: i32, target: Label) {
        self.items.push(Item::Jump {
            test: Some((cond, reg, Operand::Imm(imm))),
            target,
        });
    }

    /// `if reg cond other goto target` (64-bit compare).
    pub fn branch_reg(&mut self, cond: Cond, reg: Reg, other: Reg, target: Label) {
        self.items.push(Item::Jump {
            test: Some((cond, reg, Operand::Reg(other))),
            target,
        });
    }

    /// How many items (instructions, jumps, labels) the code has so far: a position for
    /// [`Assembly::insns`].
    pub fn len(&self) -> usize {
        self.items.len()
    }

    /// Drops the plain instructions `keep` refuses (labels and jumps stay where they are).
    pub fn retain_insns(&mut self, keep: impl Fn(&Instruction) -> bool) {
        self.items.retain(|item| match item {
            Item::Insn(insn) => keep(insn),
            _ => true,
        });
    }

    /// The plain instructions (not the jumps to labels) with their item positions.
    pub fn insns(&self) -> impl Iterator<Item = (usize, &Instruction)> {
        self.items
            .iter()
            .enumerate()
            .filter_map(|(i, item)| match item {
                Item::Insn(insn) => Some((i, insn)),
                _ => None,
            })
    }

    /// Appends another assembly's code (its labels renumbered).
    pub fn append(&mut self, other: Assembly) {
        let base = self.labels;
        self.labels += other.labels;
        let shift = |Label(l): Label| Label(l + base);
        self.items
            .extend(other.items.into_iter().map(|item| match item {
                Item::Jump { test, target } => Item::Jump {
                    test,
                    target: shift(target),
                },
                Item::Place(l) => Item::Place(shift(l)),
                insn => insn,
            }));
    }

    /// The instructions with every jump resolved; `None` when a label is never placed or a jump
    /// is longer than a 16-bit offset reaches.
    pub fn finish(&self) -> Option<Vec<Instruction>> {
        let live = self.reachable()?;
        let mut items: Vec<&Item> = self
            .items
            .iter()
            .zip(&live)
            .filter(|(item, live)| **live || matches!(item, Item::Place(_)))
            .map(|(item, _)| item)
            .collect();
        // A jump to the label right after it (only labels between) does nothing.
        let mut index = 0;
        while index < items.len() {
            let to_next = match items[index] {
                Item::Jump { target, .. } => items[index + 1..]
                    .iter()
                    .take_while(|item| matches!(item, Item::Place(_)))
                    .any(|item| matches!(item, Item::Place(l) if l == target)),
                _ => false,
            };
            if to_next {
                items.remove(index);
                // The jump before may now lead to the next instruction too.
                index = index.saturating_sub(1);
            } else {
                index += 1;
            }
        }
        let mut at = vec![None; self.labels];
        let mut slot = 0usize;
        for item in &items {
            match item {
                Item::Insn(i) => slot += i.slots(),
                Item::Jump { .. } => slot += 1,
                Item::Place(Label(l)) => *at.get_mut(*l)? = Some(slot),
            }
        }
        let mut out = Vec::with_capacity(items.len());
        let mut slot = 0usize;
        for item in items {
            match item {
                Item::Insn(i) => {
                    slot += i.slots();
                    out.push(*i);
                }
                Item::Jump { test, target } => {
                    slot += 1;
                    let to = (*at.get(target.0)?)?;
                    let test = test.as_ref();
                    let off = i16::try_from(to as i64 - slot as i64).ok()?;
                    out.push(match test {
                        None => ja(off),
                        Some(&(cond, reg, operand)) => jump(true, cond, reg, operand, off),
                    });
                }
                Item::Place(_) => {}
            }
        }
        Some(out)
    }
}

impl Assembly {
    /// Which items run on some path from the first: the kernel refuses unreachable
    /// instructions, and a `return` inside a branch leaves dead jumps behind. Jumps written as
    /// raw instructions (short fixed skips inside one expression) are taken to fall through,
    /// which keeps their whole sequence.
    fn reachable(&self) -> Option<Vec<bool>> {
        let mut where_placed = vec![None; self.labels];
        for (index, item) in self.items.iter().enumerate() {
            if let Item::Place(Label(l)) = item {
                *where_placed.get_mut(*l)? = Some(index);
            }
        }
        let mut live = vec![false; self.items.len()];
        let mut work = vec![0usize];
        while let Some(index) = work.pop() {
            let Some(item) = self.items.get(index) else {
                continue;
            };
            if live[index] {
                continue;
            }
            live[index] = true;
            match item {
                Item::Insn(Instruction::Exit) => {}
                Item::Insn(_) | Item::Place(_) => work.push(index + 1),
                Item::Jump { test, target } => {
                    work.push((*where_placed.get(target.0)?)?);
                    if test.is_some() {
                        work.push(index + 1);
                    }
                }
            }
        }
        Some(live)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use linerate_bpf::insn::build::{exit, ld64, mov64};

    #[test]
    fn jumps_count_slots_forward_and_back() {
        let mut a = Assembly::default();
        let (top, end) = (a.label(), a.label());
        a.place(top);
        a.branch_imm(Cond::Eq, 1, 0, end);
        a.emit(ld64(2, 1 << 40));
        a.goto(top);
        a.place(end);
        a.emit(mov64(0, 2));
        a.emit(exit());
        let insns = a.finish().expect("resolves");
        assert_eq!(insns[0], jump(true, Cond::Eq, 1, Operand::Imm(0), 3));
        assert_eq!(insns[2], ja(-4));
    }

    #[test]
    fn unreachable_code_and_jumps_to_the_next_instruction_are_left_out() {
        let mut a = Assembly::default();
        let (end, other) = (a.label(), a.label());
        a.branch_imm(Cond::Eq, 1, 0, other);
        a.goto(end);
        a.emit(mov64(0, 1));
        a.goto(end);
        a.place(other);
        a.place(end);
        a.emit(exit());
        assert_eq!(a.finish().expect("resolves"), [exit()]);
    }

    #[test]
    fn an_unplaced_label_is_refused() {
        let mut a = Assembly::default();
        let nowhere = a.label();
        a.goto(nowhere);
        assert!(a.finish().is_none());
    }
}
