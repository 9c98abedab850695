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
    /// is longer than a 16-bit offset reaches. Unreachable code goes (the kernel refuses it), and
    /// jumps are tidied: a jump to a jump goes straight to the final target, a conditional jump
    /// over an unconditional one is inverted, and a jump to the next instruction goes.
    pub fn finish(&self) -> Option<Vec<Instruction>> {
        let mut items = self.items.clone();
        for _ in 0..MAX_TIDY_ROUNDS {
            let live = reachable(&items, self.labels)?;
            let mut kept = live.iter();
            items.retain(|item| kept.next() == Some(&true) || matches!(item, Item::Place(_)));
            if !tidy_jumps(&mut items, self.labels) {
                break;
            }
        }
        let live = reachable(&items, self.labels)?;
        let mut kept = live.iter();
        items.retain(|item| kept.next() == Some(&true) || matches!(item, Item::Place(_)));
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
        for item in &items {
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

/// Rounds of jump tidying at most (each removes or retargets something; the bound only guards
/// against a cycle of unconditional jumps, which the compiler never generates).
const MAX_TIDY_ROUNDS: usize = 32;

/// Where each label is placed among `items`.
fn placements(items: &[Item], labels: usize) -> Option<Vec<Option<usize>>> {
    let mut where_placed = vec![None; labels];
    for (index, item) in items.iter().enumerate() {
        if let Item::Place(Label(l)) = item {
            *where_placed.get_mut(*l)? = Some(index);
        }
    }
    Some(where_placed)
}

/// The first item at or after `index` that is not a label.
fn next_code(items: &[Item], index: usize) -> Option<&Item> {
    items[index.min(items.len())..]
        .iter()
        .find(|item| !matches!(item, Item::Place(_)))
}

/// The condition that holds exactly when `cond` does not.
fn negate(cond: Cond) -> Option<Cond> {
    Some(match cond {
        Cond::Eq => Cond::Ne,
        Cond::Ne => Cond::Eq,
        Cond::Gt => Cond::Le,
        Cond::Le => Cond::Gt,
        Cond::Ge => Cond::Lt,
        Cond::Lt => Cond::Ge,
        Cond::Sgt => Cond::Sle,
        Cond::Sle => Cond::Sgt,
        Cond::Sge => Cond::Slt,
        Cond::Slt => Cond::Sge,
        Cond::Set => return None,
    })
}

/// One round of jump tidying over `items`; whether anything changed.
fn tidy_jumps(items: &mut Vec<Item>, labels: usize) -> bool {
    let Some(where_placed) = placements(items, labels) else {
        return false;
    };
    let mut changed = false;
    // A jump to an unconditional jump goes to that jump's target.
    for index in 0..items.len() {
        let Item::Jump { target, .. } = items[index] else {
            continue;
        };
        let Some(at) = where_placed.get(target.0).copied().flatten() else {
            continue;
        };
        if let Some(&Item::Jump {
            test: None,
            target: next,
        }) = next_code(items, at)
        {
            if next != target {
                if let Item::Jump { target, .. } = &mut items[index] {
                    *target = next;
                }
                changed = true;
            }
        }
    }
    let lands_next = |items: &[Item], index: usize, target: Label| {
        items[index + 1..]
            .iter()
            .take_while(|item| matches!(item, Item::Place(_)))
            .any(|item| matches!(item, Item::Place(l) if *l == target))
    };
    let mut index = 0;
    while index < items.len() {
        match items[index] {
            // A jump to the label right after it (only labels between) does nothing.
            Item::Jump { target, .. } if lands_next(items, index, target) => {
                items.remove(index);
                changed = true;
                continue;
            }
            // `if c goto A; goto B; A:` is `if !c goto B; A:`.
            Item::Jump {
                test: Some((cond, reg, operand)),
                target,
            } if index + 1 < items.len() && lands_next(items, index + 1, target) => {
                if let (
                    Item::Jump {
                        test: None,
                        target: other,
                    },
                    Some(negated),
                ) = (items[index + 1].clone(), negate(cond))
                {
                    items[index] = Item::Jump {
                        test: Some((negated, reg, operand)),
                        target: other,
                    };
                    items.remove(index + 1);
                    changed = true;
                }
            }
            _ => {}
        }
        index += 1;
    }
    changed
}

/// Which of `items` run on some path from the first: the kernel refuses unreachable
/// instructions, and a `return` inside a branch leaves dead jumps behind. Jumps written as raw
/// instructions (short fixed skips inside one expression) are taken to fall through, which
/// keeps their whole sequence.
fn reachable(items: &[Item], labels: usize) -> Option<Vec<bool>> {
    let where_placed = placements(items, labels)?;
    let mut live = vec![false; items.len()];
    let mut work = vec![0usize];
    while let Some(index) = work.pop() {
        let Some(item) = items.get(index) else {
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
