//! A label assembler for the generated program: code is a list of instructions, labels and
//! jumps to labels; [`Assembly::finish`] places the labels and turns each jump into a relative
//! BPF jump (offsets count slots, an `ld_imm64` takes two). Before that, the code is tidied where
//! labels make it easy: unreachable code and jumps to the next instruction go, jumps to jumps go
//! straight to the end, a conditional jump over a `goto` is inverted ([`Assembly::tidy`]), and a
//! stack load right after the store of the same slot becomes a move
//! ([`Assembly::forward_stack_loads`]).

use linerate_bpf::insn::build::{ja, jump, mov64, mov64_reg};
use linerate_bpf::insn::regs::RegSet;
use linerate_bpf::insn::{Cond, Instruction, Operand, Reg, Size};

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

    /// Replaces a load of an 8-byte stack slot by a move of what a store shortly before (same
    /// straight-line stretch, nothing in between writing the register or the slot, no call)
    /// put there, or drops it when the register holds it already.
    pub fn forward_stack_loads(&mut self) {
        let mut index = 0;
        while index < self.items.len() {
            let Item::Insn(Instruction::Load {
                size: Size::Dw,
                src: 10,
                off,
                dst,
                ..
            }) = self.items[index]
            else {
                index += 1;
                continue;
            };
            let mut written: RegSet = 0;
            let mut replacement = None;
            for back in (index.saturating_sub(FORWARD_WINDOW)..index).rev() {
                let Item::Insn(insn) = self.items[back] else {
                    break;
                };
                match insn {
                    Instruction::Store {
                        size: Size::Dw,
                        dst: 10,
                        off: at,
                        src,
                    } if at == off => {
                        replacement = match src {
                            Operand::Reg(r) if written & (1 << r) == 0 => Some(if r == dst {
                                None
                            } else {
                                Some(mov64_reg(dst, r))
                            }),
                            Operand::Imm(v) => Some(Some(mov64(dst, v))),
                            Operand::Reg(_) => None,
                        };
                        break;
                    }
                    Instruction::Store {
                        dst: 10,
                        off: at,
                        size,
                        ..
                    }
                    | Instruction::Atomic {
                        dst: 10,
                        off: at,
                        size,
                        ..
                    } if i32::from(at) < i32::from(off) + 8
                        && i32::from(off) < i32::from(at) + size_bytes(size) =>
                    {
                        break
                    }
                    Instruction::Call(_) | Instruction::Jump { .. } | Instruction::Ja { .. } => {
                        break
                    }
                    _ => written |= insn.writes(),
                }
            }
            match replacement {
                Some(Some(insn)) => {
                    self.items[index] = Item::Insn(insn);
                    index += 1;
                }
                Some(None) => {
                    self.items.remove(index);
                }
                None => index += 1,
            }
        }
    }

    /// Drops unreachable code, tidies jumps (see [`Assembly::finish`]) and drops the labels no
    /// jump goes to; `None` when a label a jump needs is never placed.
    pub fn tidy(&mut self) -> Option<()> {
        for _ in 0..MAX_TIDY_ROUNDS {
            let live = reachable(&self.items, self.labels)?;
            let mut kept = live.iter();
            self.items
                .retain(|item| kept.next() == Some(&true) || matches!(item, Item::Place(_)));
            if !tidy_jumps(&mut self.items, self.labels) {
                break;
            }
        }
        let live = reachable(&self.items, self.labels)?;
        let mut kept = live.iter();
        self.items
            .retain(|item| kept.next() == Some(&true) || matches!(item, Item::Place(_)));
        let mut used = vec![false; self.labels];
        for item in &self.items {
            if let Item::Jump { target, .. } = item {
                *used.get_mut(target.0)? = true;
            }
        }
        self.items.retain(|item| match item {
            Item::Place(Label(l)) => used.get(*l).copied().unwrap_or(true),
            _ => true,
        });
        Some(())
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
        let mut tidied = self.clone();
        tidied.tidy()?;
        let items = tidied.items;
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

/// How far back a load looks for the store it can take its value from.
const FORWARD_WINDOW: usize = 12;

fn size_bytes(size: Size) -> i32 {
    match size {
        Size::B => 1,
        Size::H => 2,
        Size::W => 4,
        Size::Dw => 8,
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
    use linerate_bpf::insn::build::{exit, ld64, ldx, st, stx};

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
    fn jumps_to_jumps_go_to_the_end_and_jumps_over_gotos_are_inverted() {
        let mut a = Assembly::default();
        let (then, other, end) = (a.label(), a.label(), a.label());
        // if r1 == 0 goto then; goto other; then: goto end; other: r0 = 1; end: exit
        a.branch_imm(Cond::Eq, 1, 0, then);
        a.goto(other);
        a.place(then);
        a.goto(end);
        a.place(other);
        a.emit(mov64(0, 1));
        a.place(end);
        a.emit(exit());
        let insns = a.finish().expect("resolves");
        assert_eq!(
            insns,
            [
                jump(true, Cond::Eq, 1, Operand::Imm(0), 1),
                mov64(0, 1),
                exit()
            ]
        );
    }

    #[test]
    fn a_load_right_after_a_store_takes_the_stored_register() {
        let mut a = Assembly::default();
        a.emit(stx(Size::Dw, 10, -8, 1));
        a.emit(st(Size::Dw, 10, -16, 7));
        a.emit(ldx(Size::Dw, 2, 10, -8));
        a.emit(ldx(Size::Dw, 3, 10, -16));
        a.emit(mov64(1, 0));
        a.emit(ldx(Size::Dw, 4, 10, -8));
        a.emit(exit());
        let insns = a.finish().expect("resolves");
        // r1 changed before the last load: that one stays a load.
        assert_eq!(
            insns,
            [
                stx(Size::Dw, 10, -8, 1),
                st(Size::Dw, 10, -16, 7),
                ldx(Size::Dw, 2, 10, -8),
                ldx(Size::Dw, 3, 10, -16),
                mov64(1, 0),
                ldx(Size::Dw, 4, 10, -8),
                exit()
            ]
        );
        a.forward_stack_loads();
        assert_eq!(
            a.finish().expect("resolves")[2..5],
            [mov64_reg(2, 1), mov64(3, 7), mov64(1, 0)]
        );
    }

    #[test]
    fn an_unplaced_label_is_refused() {
        let mut a = Assembly::default();
        let nowhere = a.label();
        a.goto(nowhere);
        assert!(a.finish().is_none());
    }
}
