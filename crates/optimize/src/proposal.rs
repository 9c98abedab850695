//! Proposals: the moves of the Markov chain over a window (paper 002 §3.1).
//!
//! A candidate is the window's slots, each an instruction or removed (`None`, K2's NOP). The six
//! rules are K2's: replace an instruction, replace an operand, replace by NOP, the two memory
//! exchanges (a new width with a new value operand, or a new width alone), and replace up to two
//! contiguous instructions. New instructions are drawn from what the window works with: its
//! registers (never writing r10), its constants and a few common ones, its memory operands'
//! base registers and offsets — which is where the useful rewrites live.

use linerate_bpf::insn::{
    AluOp, AtomicOp, Endian, Instruction, Operand, Reg, Size, FRAME_POINTER, NUM_REGS,
};
use rand::rngs::StdRng;
use rand::Rng;

use crate::window::{EntryFact, Window};

/// The rule a proposal used.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Rule {
    Instruction,
    Operand,
    Nop,
    MemoryExchange1,
    MemoryExchange2,
    Contiguous,
}

/// Probabilities of the six rules, in [`Rule`] order (paper 002 Table 8).
pub type RuleWeights = [f64; 6];

/// A window's candidate: one entry per slot, `None` where the slot was removed.
pub type Candidate = Vec<Option<Instruction>>;

/// What new instructions are drawn from.
#[derive(Clone, Debug)]
pub struct Vocabulary {
    /// Registers instructions may read.
    pub regs: Vec<Reg>,
    /// Registers instructions may write (no r10).
    pub dsts: Vec<Reg>,
    pub imms: Vec<i32>,
    /// `(base register, offset)` of the window's memory operands, and nearby offsets.
    pub addresses: Vec<(Reg, i16)>,
}

const ALU_OPS: [AluOp; 12] = [
    AluOp::Add,
    AluOp::Sub,
    AluOp::Mul,
    AluOp::Or,
    AluOp::And,
    AluOp::Lsh,
    AluOp::Rsh,
    AluOp::Arsh,
    AluOp::Xor,
    AluOp::Mov,
    AluOp::Neg,
    AluOp::Div,
];

const ATOMIC_OPS: [AtomicOp; 4] = [AtomicOp::Add, AtomicOp::Or, AtomicOp::And, AtomicOp::Xor];

const SIZES: [Size; 4] = [Size::B, Size::H, Size::W, Size::Dw];

impl Vocabulary {
    /// The vocabulary of a window.
    pub fn of(window: &Window) -> Vocabulary {
        let mut regs: Vec<Reg> = Vec::new();
        let mut imms: Vec<i32> = vec![0, 1, 2, 4, 8, 16, 24, 32, 0xff, 0xffff, -1];
        let mut addresses: Vec<(Reg, i16)> = Vec::new();
        for (r, fact) in window.entry.iter().enumerate() {
            if *fact != EntryFact::Uninit {
                regs.push(r as Reg);
            }
            if let EntryFact::Constant(c) = fact {
                imms.push(*c as i32);
            }
        }
        for insn in &window.original {
            match *insn {
                Instruction::Alu { dst, src, .. } => {
                    regs.push(dst);
                    match src {
                        Operand::Reg(r) => regs.push(r),
                        Operand::Imm(i) => imms.push(i),
                    }
                }
                Instruction::Endian { dst, .. } => regs.push(dst),
                Instruction::Load { dst, src, off, .. } => {
                    regs.push(dst);
                    addresses.push((src, off));
                }
                Instruction::Atomic { dst, off, src, .. } => {
                    addresses.push((dst, off));
                    regs.push(src);
                }
                Instruction::Store { dst, off, src, .. } => {
                    addresses.push((dst, off));
                    if let Operand::Reg(r) = src {
                        regs.push(r);
                    }
                    if let Operand::Imm(i) = src {
                        imms.push(i);
                    }
                }
                _ => {}
            }
        }
        let near: Vec<(Reg, i16)> = addresses
            .iter()
            .flat_map(|&(r, o)| {
                [-4i16, -2, -1, 1, 2, 4]
                    .into_iter()
                    .filter_map(move |d| o.checked_add(d).map(|o| (r, o)))
            })
            .collect();
        addresses.extend(near);
        Vocabulary::from_parts(regs, imms, addresses)
    }

    /// The vocabulary of these registers, constants and memory operands (repeats dropped); the
    /// destinations are the registers other than the frame pointer.
    pub fn from_parts(
        mut regs: Vec<Reg>,
        mut imms: Vec<i32>,
        mut addresses: Vec<(Reg, i16)>,
    ) -> Vocabulary {
        regs.retain(|&r| (r as usize) < NUM_REGS);
        regs.sort_unstable();
        regs.dedup();
        addresses.sort_unstable();
        addresses.dedup();
        imms.sort_unstable();
        imms.dedup();
        let dsts = regs
            .iter()
            .copied()
            .filter(|&r| r != FRAME_POINTER)
            .collect();
        Vocabulary {
            regs,
            dsts,
            imms,
            addresses,
        }
    }

    fn reg(&self, rng: &mut StdRng) -> Reg {
        pick(rng, &self.regs).unwrap_or(0)
    }

    fn dst(&self, rng: &mut StdRng) -> Reg {
        pick(rng, &self.dsts).unwrap_or(0)
    }

    fn imm(&self, rng: &mut StdRng) -> i32 {
        pick(rng, &self.imms).unwrap_or(0)
    }

    fn operand(&self, rng: &mut StdRng) -> Operand {
        if rng.gen_bool(0.5) {
            Operand::Reg(self.reg(rng))
        } else {
            Operand::Imm(self.imm(rng))
        }
    }

    /// A random instruction of the kinds windows hold.
    pub fn instruction(&self, rng: &mut StdRng) -> Instruction {
        let memory = !self.addresses.is_empty();
        match rng.gen_range(0..if memory { 11 } else { 7 }) {
            0..=5 => {
                let op = pick(rng, &ALU_OPS).unwrap_or(AluOp::Mov);
                Instruction::Alu {
                    wide: rng.gen_bool(0.6),
                    op,
                    dst: self.dst(rng),
                    src: if op == AluOp::Neg {
                        Operand::Imm(0)
                    } else {
                        self.operand(rng)
                    },
                }
            }
            6 => Instruction::Endian {
                kind: Endian::ToBe,
                bits: pick(rng, &[16u8, 32, 64]).unwrap_or(16),
                dst: self.dst(rng),
            },
            7 | 8 => {
                let (src, off) = pick(rng, &self.addresses).unwrap_or((FRAME_POINTER, -8));
                Instruction::Load {
                    size: pick(rng, &SIZES).unwrap_or(Size::W),
                    signed: false,
                    dst: self.dst(rng),
                    src,
                    off,
                }
            }
            10 => {
                let (dst, off) = pick(rng, &self.addresses).unwrap_or((FRAME_POINTER, -8));
                Instruction::Atomic {
                    size: if rng.gen_bool(0.5) { Size::W } else { Size::Dw },
                    op: pick(rng, &ATOMIC_OPS).unwrap_or(AtomicOp::Add),
                    fetch: false,
                    dst,
                    src: self.reg(rng),
                    off,
                }
            }
            _ => {
                let (dst, off) = pick(rng, &self.addresses).unwrap_or((FRAME_POINTER, -8));
                Instruction::Store {
                    size: pick(rng, &SIZES).unwrap_or(Size::W),
                    dst,
                    off,
                    src: self.operand(rng),
                }
            }
        }
    }
}

fn pick<T: Copy>(rng: &mut StdRng, items: &[T]) -> Option<T> {
    (!items.is_empty()).then(|| items[rng.gen_range(0..items.len())])
}

/// Draws a rule with the given weights.
pub fn draw_rule(rng: &mut StdRng, weights: &RuleWeights) -> Rule {
    const RULES: [Rule; 6] = [
        Rule::Instruction,
        Rule::Operand,
        Rule::Nop,
        Rule::MemoryExchange1,
        Rule::MemoryExchange2,
        Rule::Contiguous,
    ];
    let total: f64 = weights.iter().sum();
    let mut x = rng.gen_range(0.0..total.max(f64::MIN_POSITIVE));
    for (rule, w) in RULES.iter().zip(weights) {
        if x < *w {
            return *rule;
        }
        x -= w;
    }
    Rule::Instruction
}

/// Whether the kernel takes the instruction's encoding: it round-trips through the decoder, and
/// it is no division or remainder by an immediate zero, no shift by an immediate out of range
/// (the checker refuses those: `check_alu_op` in kernel/bpf/verifier.c).
pub fn encodable(insn: &Instruction) -> bool {
    if let Instruction::Alu {
        wide,
        op,
        src: Operand::Imm(imm),
        ..
    } = *insn
    {
        let width = if wide { 64 } else { 32 };
        let bad = match op {
            AluOp::Div | AluOp::SDiv | AluOp::Mod | AluOp::SMod => imm == 0,
            AluOp::Lsh | AluOp::Rsh | AluOp::Arsh => !(0..width).contains(&imm),
            AluOp::Neg => imm != 0,
            _ => false,
        };
        if bad {
            return false;
        }
    }
    let slots = linerate_bpf::insn::encode_all(std::slice::from_ref(insn));
    Instruction::decode(&slots, 0).ok() == Some(*insn)
}

/// A new candidate from `current` by `rule` (unchanged where the rule does not apply or gives an
/// instruction the kernel would not take).
pub fn propose(current: &Candidate, rule: Rule, vocab: &Vocabulary, rng: &mut StdRng) -> Candidate {
    let next = propose_any(current, rule, vocab, rng);
    if next.iter().flatten().all(encodable) {
        next
    } else {
        current.clone()
    }
}

fn propose_any(current: &Candidate, rule: Rule, vocab: &Vocabulary, rng: &mut StdRng) -> Candidate {
    let mut next = current.clone();
    if next.is_empty() {
        return next;
    }
    let at = rng.gen_range(0..next.len());
    match rule {
        Rule::Instruction => next[at] = Some(vocab.instruction(rng)),
        Rule::Nop => next[at] = None,
        Rule::Contiguous => {
            for slot in next.iter_mut().skip(at).take(2) {
                *slot = if rng.gen_bool(0.3) {
                    None
                } else {
                    Some(vocab.instruction(rng))
                };
            }
        }
        Rule::Operand => {
            if let Some(insn) = next[at] {
                next[at] = Some(replace_operand(insn, vocab, rng));
            }
        }
        Rule::MemoryExchange1 | Rule::MemoryExchange2 => {
            if let Some(insn) = next[at] {
                next[at] = Some(exchange_memory(
                    insn,
                    rule == Rule::MemoryExchange1,
                    vocab,
                    rng,
                ));
            }
        }
    }
    next
}

fn replace_operand(insn: Instruction, vocab: &Vocabulary, rng: &mut StdRng) -> Instruction {
    match insn {
        Instruction::Alu { wide, op, dst, src } => match rng.gen_range(0..4) {
            0 => Instruction::Alu {
                wide,
                op,
                dst: vocab.dst(rng),
                src,
            },
            1 => Instruction::Alu {
                wide,
                op,
                dst,
                src: vocab.operand(rng),
            },
            2 => Instruction::Alu {
                wide: !wide,
                op,
                dst,
                src,
            },
            _ => Instruction::Alu {
                wide,
                op: pick(rng, &ALU_OPS).unwrap_or(op),
                dst,
                src,
            },
        },
        Instruction::Endian { kind, dst, .. } => Instruction::Endian {
            kind,
            bits: pick(rng, &[16u8, 32, 64]).unwrap_or(16),
            dst,
        },
        Instruction::Load {
            size,
            signed,
            dst,
            src,
            off,
        } => {
            if rng.gen_bool(0.5) {
                Instruction::Load {
                    size,
                    signed,
                    dst: vocab.dst(rng),
                    src,
                    off,
                }
            } else {
                let (src, off) = pick(rng, &vocab.addresses).unwrap_or((src, off));
                Instruction::Load {
                    size,
                    signed,
                    dst,
                    src,
                    off,
                }
            }
        }
        Instruction::Store {
            size,
            dst,
            off,
            src,
        } => {
            if rng.gen_bool(0.5) {
                Instruction::Store {
                    size,
                    dst,
                    off,
                    src: vocab.operand(rng),
                }
            } else {
                let (dst, off) = pick(rng, &vocab.addresses).unwrap_or((dst, off));
                Instruction::Store {
                    size,
                    dst,
                    off,
                    src,
                }
            }
        }
        other => other,
    }
}

/// K2's memory exchange rules: a new width, and with `new_value` also a new value operand (the
/// loaded-into register, or the stored register or immediate); the address stays.
fn exchange_memory(
    insn: Instruction,
    new_value: bool,
    vocab: &Vocabulary,
    rng: &mut StdRng,
) -> Instruction {
    let size = pick(rng, &SIZES).unwrap_or(Size::W);
    match insn {
        Instruction::Load {
            signed,
            dst,
            src,
            off,
            ..
        } => Instruction::Load {
            size,
            signed,
            dst: if new_value { vocab.dst(rng) } else { dst },
            src,
            off,
        },
        Instruction::Store { dst, off, src, .. } => Instruction::Store {
            size,
            dst,
            off,
            src: if new_value { vocab.operand(rng) } else { src },
        },
        other => other,
    }
}
