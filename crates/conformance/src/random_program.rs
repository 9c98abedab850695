//! Random BPF programs that the kernel's verifier accepts, for differential testing.
//!
//! A generated program is a straight-line *body* of random instructions with forward branches,
//! wrapped in a fixed harness. The body uses every ALU/ALU64 operation (register and immediate
//! forms, 32 and 64 bits, signed division, sign-extending moves, byte swaps), conditional jumps of
//! both widths, unconditional jumps, 64-bit immediates, loads (plain and sign-extending) and
//! stores of every width, and atomics with and without fetch. Registers and memory are chosen so
//! the verifier can follow: scalars live in [`SCALARS`]; `r6` is the packet pointer and `r10` the
//! frame pointer, never overwritten; stack accesses are aligned inside the zeroed `STACK_BYTES`.
//!
//! With [`Harness::Xdp`] the prologue checks that the packet holds [`PACKET_LEN`] bytes, loads the
//! scalars from its first bytes and the epilogue writes every scalar back into the packet, so the
//! output packet exposes the whole final register state. [`Harness::Bare`] is the body alone with
//! every register an input, for machines without packets.
//!
//! [`objects`] builds on these bodies: whole objects of several programs sharing maps, with
//! helper calls, map lookups, tail calls, bounded loops and an epilogue that copies registers and
//! stack into a map — what the differential test against the kernel runs.
//!
//! [`paths`] is a second generator: loop-free programs written the way packet processing is
//! (length checks, branches on packet bytes and map values, lookups with their NULL checks, map
//! updates), with a controlled number of branches and paths and their map seeds, for the
//! soundness tests of `linerate bound` and a second differential test.

use linerate_bpf::insn::build::{add64, jmp_reg, ldx, mov32_reg, mov64, mov64_reg, st, stx};
use linerate_bpf::insn::{AluOp, AtomicOp, Cond, Endian, Imm64, Instruction, Operand, Reg, Size};
use linerate_bpf::Object;
use proptest::prelude::*;
use proptest::sample::select;

mod asm;
pub mod objects;
pub mod paths;

/// Registers the body computes with.
pub const SCALARS: [Reg; 9] = [0, 1, 2, 3, 4, 5, 7, 8, 9];
/// Register holding the packet data pointer in the XDP harness.
pub const PACKET_POINTER: Reg = 6;
/// Bytes of packet the harness requires; the body reads and writes `[0, BODY_PACKET_BYTES)`.
pub const PACKET_LEN: usize = 160;
/// Packet bytes the body may access; the registers are written back after them.
pub const BODY_PACKET_BYTES: i16 = 64;
/// Stack bytes below the frame pointer the body may access (zeroed by the prologue).
pub const STACK_BYTES: i16 = 64;

/// The frame a generated body runs in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Harness {
    /// An XDP program: scalars from the packet, results back into it.
    Xdp,
    /// The body only; registers are inputs, memory is the stack only.
    Bare,
}

/// One body item before jump offsets are known.
#[derive(Clone, Debug)]
enum Item {
    Plain(Instruction),
    /// A conditional jump over the next `skip` items.
    Branch {
        wide: bool,
        cond: Cond,
        dst: Reg,
        src: Operand,
        skip: usize,
    },
    /// An atomic on the stack, with what keeps it clear of two kernel bugs (see [`item`]).
    Atomic(Instruction),
    /// A conditional jump over an unconditional jump over the next `skip` items (so that both
    /// the jumped-over code and the jump target stay reachable, as the verifier demands).
    Goto {
        long: bool,
        skip: usize,
    },
    /// `may_goto` over the next `skip` items: the verifier walks both ways, a run falls through
    /// (the loop budget never runs out in loop-free code).
    MayGoto {
        skip: usize,
    },
}

fn scalar() -> impl Strategy<Value = Reg> {
    select(SCALARS.to_vec())
}

fn interesting_imm() -> impl Strategy<Value = i32> {
    prop_oneof![
        Just(0),
        Just(1),
        Just(-1),
        Just(i32::MIN),
        Just(i32::MAX),
        0..64i32,
        -300..300i32,
        any::<i32>()
    ]
}

fn operand() -> impl Strategy<Value = Operand> {
    prop_oneof![
        scalar().prop_map(Operand::Reg),
        interesting_imm().prop_map(Operand::Imm)
    ]
}

fn size() -> impl Strategy<Value = Size> {
    select(vec![Size::B, Size::H, Size::W, Size::Dw])
}

/// An ALU instruction the verifier accepts: no division by a zero immediate, immediate shifts
/// below the width, no `movsx` from 32 bits in 32-bit form.
fn alu() -> impl Strategy<Value = Instruction> {
    (
        any::<bool>(),
        select(AluOp::ALL.to_vec()),
        scalar(),
        operand(),
    )
        .prop_filter_map("form the verifier rejects", |(wide, op, dst, src)| {
            let bits = if wide { 64 } else { 32 };
            let src = match (op, src) {
                (AluOp::Neg, _) => Operand::Imm(0),
                (AluOp::Lsh | AluOp::Rsh | AluOp::Arsh, Operand::Imm(i)) => {
                    Operand::Imm(i.rem_euclid(bits))
                }
                (AluOp::Div | AluOp::SDiv | AluOp::Mod | AluOp::SMod, Operand::Imm(0)) => {
                    Operand::Imm(7)
                }
                (AluOp::MovSx(_), Operand::Imm(_)) => return None,
                (_, src) => src,
            };
            if op == AluOp::MovSx(32) && !wide {
                return None;
            }
            Some(Instruction::Alu { wide, op, dst, src })
        })
}

fn endian() -> impl Strategy<Value = Instruction> {
    (
        select(vec![Endian::ToLe, Endian::ToBe, Endian::Swap]),
        select(vec![16u8, 32, 64]),
        scalar(),
    )
        .prop_map(|(kind, bits, dst)| Instruction::Endian { kind, bits, dst })
}

/// An aligned offset for a `size` access below the frame pointer.
fn stack_offset(size: Size) -> impl Strategy<Value = i16> {
    let width = size.bytes() as i16;
    (1..=STACK_BYTES / width).prop_map(move |k| -k * width)
}

/// A memory access: `(base register, offset)` on the stack or, in the XDP harness, the packet.
fn place(harness: Harness, size: Size) -> BoxedStrategy<(Reg, i16)> {
    let stack = stack_offset(size).prop_map(|off| (10, off));
    match harness {
        Harness::Bare => stack.boxed(),
        Harness::Xdp => {
            let packet =
                (0..=BODY_PACKET_BYTES - size.bytes() as i16).prop_map(|off| (PACKET_POINTER, off));
            prop_oneof![stack, packet].boxed()
        }
    }
}

fn load(harness: Harness) -> impl Strategy<Value = Instruction> {
    (size(), any::<bool>(), scalar()).prop_flat_map(move |(size, signed, dst)| {
        place(harness, size).prop_map(move |(src, off)| Instruction::Load {
            size,
            signed: signed && size != Size::Dw,
            dst,
            src,
            off,
        })
    })
}

fn store(harness: Harness) -> impl Strategy<Value = Instruction> {
    (size(), operand()).prop_flat_map(move |(size, src)| {
        place(harness, size).prop_map(move |(dst, off)| Instruction::Store {
            size,
            dst,
            off,
            src,
        })
    })
}

/// Atomics on the stack (the verifier refuses them on packet memory).
fn atomic() -> impl Strategy<Value = Instruction> {
    (
        select(vec![Size::W, Size::Dw]),
        select(AtomicOp::ALL.to_vec()),
        any::<bool>(),
        scalar(),
    )
        .prop_flat_map(|(size, op, fetch, src)| {
            stack_offset(size).prop_map(move |off| Instruction::Atomic {
                size,
                op,
                fetch: fetch || matches!(op, AtomicOp::Xchg | AtomicOp::CmpXchg),
                dst: 10,
                src,
                off,
            })
        })
}

fn imm64() -> impl Strategy<Value = Instruction> {
    (scalar(), any::<u64>()).prop_map(|(dst, v)| Instruction::LoadImm64 {
        dst,
        imm: Imm64::Const(v),
    })
}

fn item(harness: Harness) -> impl Strategy<Value = Item> {
    let plain = prop_oneof![
        6 => alu(),
        1 => endian(),
        2 => load(harness),
        2 => store(harness),
        1 => imm64(),
    ]
    .prop_map(Item::Plain);
    let atomic = atomic().prop_map(Item::Atomic);
    let branch = (
        any::<bool>(),
        select(Cond::ALL.to_vec()),
        scalar(),
        operand(),
        0usize..6,
    )
        .prop_map(|(wide, cond, dst, src, skip)| Item::Branch {
            wide,
            cond,
            dst,
            src,
            skip,
        });
    let goto = (any::<bool>(), 0usize..4).prop_map(|(long, skip)| Item::Goto { long, skip });
    let may_goto = (0usize..4).prop_map(|skip| Item::MayGoto { skip });
    prop_oneof![10 => plain, 1 => atomic, 3 => branch, 1 => goto, 1 => may_goto]
}

/// What goes before a stack atomic to keep the generator clear of two bugs of this kernel (6.18);
/// the semantics follows the ISA.
///
/// - Fetching atomics: when the slot holds a spilled register, the verifier's precision
///   tracking does not follow the atomic's result back to the slot, prunes a path as equivalent
///   to one where the slot's value was known, and removes code that does run as dead (seen:
///   `if r0 != 90` after a fetch from a slot spilled on the `r0 == 90` side of a branch; the
///   jump target never runs). A byte store of a register first turns the slot into plain bytes.
/// - 32-bit compare-and-exchange whose comparison succeeds sometimes leaves r0's upper half set;
///   `w0 = w0` clears it first.
fn atomic_prelude(insn: &Instruction) -> Vec<Instruction> {
    let Instruction::Atomic {
        size,
        op,
        fetch,
        src,
        off,
        ..
    } = *insn
    else {
        return Vec::new();
    };
    let mut out = Vec::new();
    if fetch {
        out.push(stx(Size::B, 10, off & !7, src));
    }
    if size == Size::W && op == AtomicOp::CmpXchg {
        out.push(mov32_reg(0, 0));
    }
    out
}

/// A random body of up to `max_items` items.
pub fn body(harness: Harness, max_items: usize) -> impl Strategy<Value = Vec<Instruction>> {
    proptest::collection::vec(item(harness), 1..=max_items)
        .prop_map(|items| objects::lay_out(&items))
}

/// The XDP harness around a body (see the module documentation).
pub fn wrap_xdp(body: &[Instruction]) -> Vec<Instruction> {
    use Instruction::*;
    let mut out = vec![
        ldx(Size::W, PACKET_POINTER, 1, 0),
        ldx(Size::W, 3, 1, 4),
        mov64_reg(2, PACKET_POINTER),
        add64(2, PACKET_LEN as i32),
    ];
    // Filled in below: `if r2 > r3 goto too_short`.
    let check_at = out.len();
    out.push(Exit);
    for k in 1..=STACK_BYTES / 8 {
        out.push(st(Size::Dw, 10, -8 * k, 0));
    }
    for (i, &r) in SCALARS.iter().enumerate() {
        out.push(ldx(Size::Dw, r, PACKET_POINTER, 8 * i as i16));
    }
    out.extend_from_slice(body);
    for (i, &r) in SCALARS.iter().enumerate() {
        out.push(stx(
            Size::Dw,
            PACKET_POINTER,
            BODY_PACKET_BYTES + 8 * i as i16,
            r,
        ));
    }
    out.push(Exit);
    let slots: usize = out.iter().map(Instruction::slots).sum();
    let check_slot: usize = out[..check_at].iter().map(Instruction::slots).sum();
    out[check_at] = jmp_reg(Cond::Gt, 2, 3, (slots - check_slot - 1) as i16);
    out.push(mov64(0, 0));
    out.push(Exit);
    out
}

/// A one-program object holding `insns`, with no maps.
pub fn object(name: &str, insns: &[Instruction]) -> Object {
    Object::single(name, insns, Vec::new())
}

/// A random XDP program in the harness.
pub fn xdp_program(max_items: usize) -> impl Strategy<Value = Vec<Instruction>> {
    body(Harness::Xdp, max_items).prop_map(|b| wrap_xdp(&b))
}

/// A packet word rich in boundary values.
fn packet_word() -> impl Strategy<Value = u64> {
    prop_oneof![
        any::<u64>(),
        Just(0u64),
        Just(u64::MAX),
        Just(1u64 << 63),
        Just(0x8000_0000u64),
        Just(0xffff_ffffu64),
        0..300u64,
    ]
}

/// Random packets for the XDP harness, rich in boundary values.
pub fn packet() -> impl Strategy<Value = Vec<u8>> {
    proptest::collection::vec(packet_word(), PACKET_LEN / 8)
        .prop_map(|words| words.iter().flat_map(|w| w.to_le_bytes()).collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::strategy::ValueTree;
    use proptest::test_runner::TestRunner;

    /// Generated programs decode, and their CFG has no jump outside the program.
    #[test]
    fn generated_programs_are_well_formed() {
        let mut runner = TestRunner::deterministic();
        for _ in 0..200 {
            let insns = xdp_program(30).new_tree(&mut runner).unwrap().current();
            let slots = linerate_bpf::insn::encode_all(&insns);
            let decoded = linerate_bpf::insn::decode_all(&slots).unwrap();
            for (slot, insn) in decoded {
                if let Some(target) = insn.jump_target(slot) {
                    assert!(
                        (0..slots.len() as i64).contains(&target),
                        "{insn:?} at {slot}"
                    );
                }
            }
        }
    }
}
