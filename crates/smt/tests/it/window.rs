//! Window equivalence (`linerate_smt::WindowChecker`): rewrites clang leaves in the examples are
//! proven equivalent, wrong ones are found different, and every verdict is checked by running
//! both windows concretely through `linerate_sem::step` with machine integers: a counterexample
//! must make a live output differ, and an equivalence must hold on random entry states.

use std::collections::{BTreeSet, HashMap};
use std::time::Instant;

use linerate_bpf::insn::build::{alu, alu64, alu64_reg, atomic, ldx, mov64_reg, st, stx};
use linerate_bpf::insn::{AluOp, AtomicOp, Endian, Instruction, Operand, Size, NUM_REGS};
use linerate_sem::exec::Frame;
use linerate_sem::helpers::Callback;
use linerate_sem::{Concrete, Flow, HelperOutcome, Machine, SemError};
use linerate_smt::{
    region_base, EntryValue, WindowChecker, WindowCounterexample, WindowQuery, WindowRegion,
    WindowVerdict, CONTEXT_POINTER_FIELDS, MAX_OFFSET, STACK_BYTES,
};
use proptest::prelude::*;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

// ---------------------------------------------------------------------------------------------
// The concrete window runner: machine integers, memory a byte map at absolute addresses.

#[derive(Debug)]
struct Stop(String);

impl From<SemError> for Stop {
    fn from(e: SemError) -> Stop {
        Stop(e.to_string())
    }
}

/// A window's concrete machine. Bytes not in `memory` come from `fill`.
struct Run<'a> {
    domain: Concrete,
    regs: [u64; NUM_REGS],
    frames: Vec<Frame<u64>>,
    memory: HashMap<u64, u8>,
    fill: &'a dyn Fn(u64) -> u8,
    written: BTreeSet<u64>,
    accessed: Vec<u64>,
}

impl Run<'_> {
    fn byte(&self, addr: u64) -> u8 {
        self.memory
            .get(&addr)
            .copied()
            .unwrap_or_else(|| (self.fill)(addr))
    }
}

impl Machine for Run<'_> {
    type D = Concrete;
    type Fault = Stop;

    fn domain(&mut self) -> &mut Concrete {
        &mut self.domain
    }
    fn regs(&mut self) -> &mut [u64; NUM_REGS] {
        &mut self.regs
    }
    fn frames(&mut self) -> &mut Vec<Frame<u64>> {
        &mut self.frames
    }
    fn push_stack_frame(&mut self, _depth: usize) -> Result<u64, Stop> {
        Err(Stop("call".into()))
    }
    fn pop_stack_frame(&mut self) {}
    fn load(&mut self, _pc: usize, addr: &u64, size: Size) -> Result<u64, Stop> {
        let mut v = 0u64;
        for i in 0..u64::from(size.bytes()) {
            let a = addr.wrapping_add(i);
            self.accessed.push(a);
            v |= u64::from(self.byte(a)) << (8 * i);
        }
        Ok(v)
    }
    fn store(&mut self, _pc: usize, addr: &u64, size: Size, value: &u64) -> Result<(), Stop> {
        for i in 0..u64::from(size.bytes()) {
            let a = addr.wrapping_add(i);
            self.accessed.push(a);
            self.written.insert(a);
            self.memory.insert(a, (value >> (8 * i)) as u8);
        }
        Ok(())
    }
    fn map_reference(&mut self, _: usize, _: &linerate_bpf::insn::Imm64) -> Result<u64, Stop> {
        Err(Stop("map reference".into()))
    }
    fn function_reference(&mut self, _: usize, _: usize) -> Result<u64, Stop> {
        Err(Stop("function reference".into()))
    }
    fn call_helper(&mut self, _: usize, _: u32) -> Result<HelperOutcome, Stop> {
        Err(Stop("helper".into()))
    }
    fn call_kfunc(&mut self, _: usize, _: i32) -> Result<(), Stop> {
        Err(Stop("kfunc".into()))
    }
    fn resume_helper(&mut self, _: Callback<u64>) -> Result<HelperOutcome, Stop> {
        Err(Stop("callback".into()))
    }
}

/// A window's end: registers, the bytes it wrote and every address it touched.
struct Outcome {
    regs: [u64; NUM_REGS],
    memory: HashMap<u64, u8>,
    written: BTreeSet<u64>,
    accessed: Vec<u64>,
}

fn run_concrete(
    window: &[Instruction],
    regs: [u64; NUM_REGS],
    memory: &HashMap<u64, u8>,
    fill: &dyn Fn(u64) -> u8,
) -> Outcome {
    let mut m = Run {
        domain: Concrete,
        regs,
        frames: Vec::new(),
        memory: memory.clone(),
        fill,
        written: BTreeSet::new(),
        accessed: Vec::new(),
    };
    for (pc, insn) in window.iter().enumerate() {
        match linerate_sem::step(&mut m, pc, insn) {
            Ok(Flow::Next(_)) => {}
            Ok(flow) => panic!("window insn {pc} did not fall through: {flow:?}"),
            Err(Stop(why)) => panic!("window insn {pc}: {why}"),
        }
    }
    Outcome {
        regs: m.regs,
        memory: m.memory,
        written: m.written,
        accessed: m.accessed,
    }
}

/// Whether `addr` is a stack byte code after the window never reads.
fn dead_stack(q: &WindowQuery, addr: u64) -> bool {
    let fp = region_base(WindowRegion::Stack);
    let low = fp - STACK_BYTES as u64;
    (low..fp).contains(&addr) && !q.live_stack[(addr - low) as usize]
}

/// The first live output on which the two ends differ.
fn live_difference(
    q: &WindowQuery,
    a: &Outcome,
    b: &Outcome,
    fill: &dyn Fn(u64) -> u8,
) -> Option<String> {
    for r in 0..NUM_REGS {
        if q.live_out & (1 << r) != 0 && a.regs[r] != b.regs[r] {
            return Some(format!("r{r}: {:#x} vs {:#x}", a.regs[r], b.regs[r]));
        }
    }
    for &addr in a.written.union(&b.written) {
        if dead_stack(q, addr) {
            continue;
        }
        let x = a.memory.get(&addr).copied().unwrap_or_else(|| fill(addr));
        let y = b.memory.get(&addr).copied().unwrap_or_else(|| fill(addr));
        if x != y {
            return Some(format!("byte {addr:#x}: {x:#x} vs {y:#x}"));
        }
    }
    None
}

fn zero(_: u64) -> u8 {
    0
}

/// Checks that a counterexample makes a live output differ when both windows run on it.
fn assert_valid(q: &WindowQuery, cex: &WindowCounterexample) {
    let memory: HashMap<u64, u8> = cex.memory.iter().copied().collect();
    let a = run_concrete(q.original, cex.regs, &memory, &zero);
    let b = run_concrete(q.candidate, cex.regs, &memory, &zero);
    assert!(
        live_difference(q, &a, &b, &zero).is_some(),
        "the counterexample {cex:?} gives the same live outputs"
    );
}

/// The regions whose addresses random states use.
const REGIONS: [WindowRegion; 6] = [
    WindowRegion::Stack,
    WindowRegion::Packet,
    WindowRegion::PacketMeta,
    WindowRegion::Ctx,
    WindowRegion::MapValue(0),
    WindowRegion::Other(0),
];

/// Whether `addr` lies within the verifier's offset bound of some region.
fn in_some_region(addr: u64) -> bool {
    REGIONS.iter().any(|r| {
        let d = addr.wrapping_sub(region_base(*r)) as i64;
        (-MAX_OFFSET..MAX_OFFSET).contains(&d)
    })
}

/// A random concrete entry state the precondition allows, and its memory's contents.
fn random_state(entry: &[EntryValue; NUM_REGS], rng: &mut StdRng) -> ([u64; NUM_REGS], u64) {
    let regs = std::array::from_fn(|i| match entry[i] {
        EntryValue::Uninit => rng.gen(),
        EntryValue::Scalar => match rng.gen_range(0..4) {
            0 => rng.gen_range(0..16),
            1 => rng.gen_range(0..=u64::from(u32::MAX)),
            2 => [0, 1, u64::MAX, 1 << 63, 1 << 31, u64::from(u32::MAX)][rng.gen_range(0..6)],
            _ => rng.gen(),
        },
        EntryValue::Constant(c) => c,
        EntryValue::Pointer { region, offset } => {
            let o = offset.unwrap_or_else(|| rng.gen_range(-64..64));
            region_base(region).wrapping_add(o as u64)
        }
    });
    (regs, rng.gen())
}

/// Memory contents of a random state: the context's pointer fields hold the packet's and the
/// metadata's bases (as the model assumes), other bytes are a hash of the address and `seed`.
fn random_byte(seed: u64, addr: u64) -> u8 {
    let ctx = region_base(WindowRegion::Ctx);
    for (field, region) in CONTEXT_POINTER_FIELDS {
        if (ctx + field..ctx + field + 4).contains(&addr) {
            return (region_base(region) as u32).to_le_bytes()[(addr - ctx - field) as usize];
        }
    }
    let mut x = addr ^ seed.rotate_left(17);
    x = (x ^ (x >> 33)).wrapping_mul(0xff51_afd7_ed55_8ccd);
    x = (x ^ (x >> 33)).wrapping_mul(0xc4ce_b9fe_1a85_ec53);
    (x ^ (x >> 33)) as u8
}

/// Runs both windows on `states` random entry states; the first on which a live output differs.
fn disagreement(q: &WindowQuery, states: usize, seed: u64) -> Option<String> {
    let mut rng = StdRng::seed_from_u64(seed);
    let empty = HashMap::new();
    for _ in 0..states {
        let (regs, memory_seed) = random_state(&q.entry, &mut rng);
        let fill = move |addr| random_byte(memory_seed, addr);
        let a = run_concrete(q.original, regs, &empty, &fill);
        let b = run_concrete(q.candidate, regs, &empty, &fill);
        // A state outside the precondition (an access beyond every region's bounds).
        if !a
            .accessed
            .iter()
            .chain(&b.accessed)
            .all(|&x| in_some_region(x))
        {
            continue;
        }
        if let Some(d) = live_difference(q, &a, &b, &fill) {
            return Some(format!("regs {regs:x?}: {d}"));
        }
    }
    None
}

// ---------------------------------------------------------------------------------------------
// Queries.

fn stack_pointer() -> EntryValue {
    EntryValue::Pointer {
        region: WindowRegion::Stack,
        offset: Some(0),
    }
}

fn packet(offset: Option<i64>) -> EntryValue {
    EntryValue::Pointer {
        region: WindowRegion::Packet,
        offset,
    }
}

/// An entry with r10 the frame pointer and the given registers, the others unreadable.
fn entry(regs: &[(usize, EntryValue)]) -> [EntryValue; NUM_REGS] {
    let mut e = [EntryValue::Uninit; NUM_REGS];
    e[10] = stack_pointer();
    for &(r, v) in regs {
        e[r] = v;
    }
    e
}

fn live(regs: &[usize]) -> u16 {
    regs.iter().fold(0, |m, r| m | 1 << r)
}

/// The live stack bytes `r10 + from .. r10 + to`.
fn live_stack(from: i64, to: i64) -> [bool; STACK_BYTES] {
    std::array::from_fn(|i| (from..to).contains(&(i as i64 - STACK_BYTES as i64)))
}

fn check(q: &WindowQuery) -> WindowVerdict {
    let verdict = WindowChecker::new(10_000).check(q).expect("check");
    match &verdict {
        WindowVerdict::Different(cex) => assert_valid(q, cex),
        WindowVerdict::Equivalent => {
            if let Some(d) = disagreement(q, 200, 1) {
                panic!("proven equivalent, but a random state tells them apart: {d}");
            }
        }
        WindowVerdict::Unknown(_) => {}
    }
    verdict
}

fn w32(op: AluOp, dst: u8, src: Operand) -> Instruction {
    alu(false, op, dst, src)
}

/// Slots 6–21 of `examples/xdp_reflector.o`: the destination MAC copied byte by byte into
/// `tmp` on the stack (bytes 4–5 to r10-4, 0–3 to r10-8).
fn reflector_6_21() -> Vec<Instruction> {
    vec![
        ldx(Size::B, 4, 3, 5),
        w32(AluOp::Lsh, 4, Operand::Imm(8)),
        ldx(Size::B, 5, 3, 4),
        w32(AluOp::Or, 4, Operand::Reg(5)),
        stx(Size::H, 10, -4, 4),
        ldx(Size::B, 4, 3, 1),
        w32(AluOp::Lsh, 4, Operand::Imm(8)),
        ldx(Size::B, 5, 3, 0),
        w32(AluOp::Or, 4, Operand::Reg(5)),
        ldx(Size::B, 5, 3, 2),
        w32(AluOp::Lsh, 5, Operand::Imm(16)),
        ldx(Size::B, 0, 3, 3),
        w32(AluOp::Lsh, 0, Operand::Imm(24)),
        w32(AluOp::Or, 0, Operand::Reg(5)),
        w32(AluOp::Or, 0, Operand::Reg(4)),
        stx(Size::W, 10, -8, 0),
    ]
}

/// The reflector's entry at slot 6: r1 = data + 14, r2 = data_end, r3 = data.
fn reflector_entry() -> [EntryValue; NUM_REGS] {
    entry(&[
        (0, EntryValue::Constant(1)),
        (1, packet(Some(14))),
        (2, EntryValue::Scalar),
        (3, packet(Some(0))),
    ])
}

#[test]
fn byte_wise_packet_copy_to_stack_is_two_wide_loads() {
    let original = reflector_6_21();
    let candidate = [
        ldx(Size::W, 4, 3, 0),
        stx(Size::W, 10, -8, 4),
        ldx(Size::H, 4, 3, 4),
        stx(Size::H, 10, -4, 4),
    ];
    // After slot 21 the program reads r1–r3 and the 8 bytes below r10; r0, r4 and r5 are
    // written again before they are read.
    let q = WindowQuery {
        original: &original,
        candidate: &candidate,
        entry: reflector_entry(),
        live_out: live(&[1, 2, 3, 10]),
        live_stack: live_stack(-8, 0),
    };
    assert_eq!(check(&q), WindowVerdict::Equivalent);

    // Big-endian halves are another value: different, with a valid counterexample.
    let swapped = [
        ldx(Size::W, 4, 3, 0),
        stx(Size::W, 10, -8, 4),
        ldx(Size::H, 4, 3, 4),
        Instruction::Endian {
            kind: Endian::ToBe,
            bits: 16,
            dst: 4,
        },
        stx(Size::H, 10, -4, 4),
    ];
    let q = WindowQuery {
        candidate: &swapped,
        ..q
    };
    assert!(matches!(check(&q), WindowVerdict::Different(_)));
}

#[test]
fn byte_wise_protocol_read_is_one_half_word_load() {
    // Slots 48–51 of xdp_reflector.o: eth->h_proto read byte by byte into w4.
    let original = [
        ldx(Size::B, 4, 3, 13),
        w32(AluOp::Lsh, 4, Operand::Imm(8)),
        ldx(Size::B, 5, 3, 12),
        w32(AluOp::Or, 4, Operand::Reg(5)),
    ];
    let candidate = [ldx(Size::H, 4, 3, 12)];
    let q = WindowQuery {
        original: &original,
        candidate: &candidate,
        entry: reflector_entry(),
        live_out: live(&[1, 2, 3, 4, 10]),
        live_stack: live_stack(-8, 0),
    };
    assert_eq!(check(&q), WindowVerdict::Equivalent);
    // r5 holds byte 12 after the original only (and its entry value after the candidate).
    let mut e = q.entry;
    e[5] = EntryValue::Scalar;
    let q = WindowQuery {
        entry: e,
        live_out: live(&[4, 5]),
        ..q
    };
    assert!(matches!(check(&q), WindowVerdict::Different(_)));
    // The wrong byte order.
    let wrong = [ldx(Size::H, 4, 3, 12), alu64(AluOp::And, 4, 0xffff)];
    let reversed = [
        ldx(Size::B, 4, 3, 12),
        w32(AluOp::Lsh, 4, Operand::Imm(8)),
        ldx(Size::B, 5, 3, 13),
        w32(AluOp::Or, 4, Operand::Reg(5)),
    ];
    let q = WindowQuery {
        original: &reversed,
        candidate: &wrong,
        live_out: live(&[4]),
        ..q
    };
    assert!(matches!(check(&q), WindowVerdict::Different(_)));
}

#[test]
fn multiplication_by_an_inferred_constant_is_a_shift() {
    let original = [alu64_reg(AluOp::Mul, 1, 3)];
    let candidate = [alu64(AluOp::Lsh, 1, 2)];
    let q = WindowQuery {
        original: &original,
        candidate: &candidate,
        entry: entry(&[(1, EntryValue::Scalar), (3, EntryValue::Constant(4))]),
        live_out: live(&[1]),
        live_stack: [false; STACK_BYTES],
    };
    assert_eq!(check(&q), WindowVerdict::Equivalent);
    // Without the inferred value it is not.
    let q = WindowQuery {
        entry: entry(&[(1, EntryValue::Scalar), (3, EntryValue::Scalar)]),
        ..q
    };
    assert!(matches!(check(&q), WindowVerdict::Different(_)));
}

#[test]
fn a_dead_stack_store_may_go() {
    let original = [stx(Size::Dw, 10, -8, 1), mov64_reg(0, 1)];
    let candidate = [mov64_reg(0, 1)];
    let q = WindowQuery {
        original: &original,
        candidate: &candidate,
        entry: entry(&[(1, EntryValue::Scalar)]),
        live_out: live(&[0, 10]),
        live_stack: live_stack(-16, -8),
    };
    assert_eq!(check(&q), WindowVerdict::Equivalent);
    // Once code after the window reads one of its bytes, it must stay.
    let q = WindowQuery {
        live_stack: live_stack(-2, -1),
        ..q
    };
    assert!(matches!(check(&q), WindowVerdict::Different(_)));
}

#[test]
fn a_pointer_increment_folds_into_the_load_offset() {
    let original = [
        mov64_reg(2, 1),
        alu64(AluOp::Add, 2, 4),
        ldx(Size::W, 3, 2, 0),
    ];
    let candidate = [ldx(Size::W, 3, 1, 4)];
    for offset in [Some(0), Some(14), None] {
        let q = WindowQuery {
            original: &original,
            candidate: &candidate,
            entry: entry(&[(1, packet(offset))]),
            live_out: live(&[1, 3]),
            live_stack: [false; STACK_BYTES],
        };
        assert_eq!(check(&q), WindowVerdict::Equivalent, "offset {offset:?}");
        // r2 live: the original leaves a pointer there, the candidate nothing readable.
        let q = WindowQuery {
            live_out: live(&[2, 3]),
            ..q
        };
        assert!(matches!(check(&q), WindowVerdict::Unknown(_)));
    }
}

#[test]
fn a_spilled_pointer_reads_back_whole() {
    let original = [
        stx(Size::Dw, 10, -8, 1),
        ldx(Size::Dw, 2, 10, -8),
        ldx(Size::B, 0, 2, 3),
    ];
    let candidate = [
        stx(Size::Dw, 10, -8, 1),
        ldx(Size::B, 0, 1, 3),
        mov64_reg(2, 1),
    ];
    let q = WindowQuery {
        original: &original,
        candidate: &candidate,
        entry: entry(&[(1, packet(None))]),
        live_out: live(&[0, 1, 2]),
        live_stack: live_stack(-8, 0),
    };
    assert_eq!(check(&q), WindowVerdict::Equivalent);
}

#[test]
fn stores_at_unknown_map_offsets_alias_as_they_may() {
    let map = EntryValue::Pointer {
        region: WindowRegion::MapValue(0),
        offset: None,
    };
    // *(r7) = r1; *(r6) = r2; r0 = *(r7): r6 and r7 may point at the same place.
    let original = [
        stx(Size::W, 7, 0, 1),
        stx(Size::W, 6, 0, 2),
        ldx(Size::W, 0, 7, 0),
    ];
    let forwarded = [
        stx(Size::W, 7, 0, 1),
        stx(Size::W, 6, 0, 2),
        mov64_reg(0, 1),
        w32(AluOp::Mov, 0, Operand::Reg(0)),
    ];
    let q = WindowQuery {
        original: &original,
        candidate: &forwarded,
        entry: entry(&[
            (1, EntryValue::Scalar),
            (2, EntryValue::Scalar),
            (6, map),
            (7, map),
        ]),
        live_out: live(&[0]),
        live_stack: [false; STACK_BYTES],
    };
    assert!(matches!(check(&q), WindowVerdict::Different(_)));
    // In different regions they cannot alias: forwarding the stored value is right.
    let mut e = q.entry;
    e[6] = packet(None);
    let q = WindowQuery { entry: e, ..q };
    assert_eq!(check(&q), WindowVerdict::Equivalent);
}

#[test]
fn what_the_model_cannot_decide_is_unknown() {
    let scalar = entry(&[(1, EntryValue::Scalar), (2, EntryValue::Scalar)]);
    let none = [false; STACK_BYTES];
    let unknown = |original: &[Instruction], candidate: &[Instruction], e| {
        let q = WindowQuery {
            original,
            candidate,
            entry: e,
            live_out: live(&[0]),
            live_stack: none,
        };
        matches!(check(&q), WindowVerdict::Unknown(_))
    };
    // A read of an unreadable register, even one whose value is not live.
    assert!(unknown(
        &[mov64_reg(0, 1)],
        &[mov64_reg(3, 4), mov64_reg(0, 1)],
        scalar
    ));
    // A store through a number.
    assert!(unknown(
        &[mov64_reg(0, 1)],
        &[stx(Size::B, 2, 0, 1), mov64_reg(0, 1)],
        scalar
    ));
    // A store into the context.
    let ctx = entry(&[
        (1, EntryValue::Scalar),
        (
            2,
            EntryValue::Pointer {
                region: WindowRegion::Ctx,
                offset: Some(0),
            },
        ),
    ]);
    assert!(unknown(
        &[mov64_reg(0, 1)],
        &[st(Size::W, 2, 12, 0), mov64_reg(0, 1)],
        ctx
    ));
    // Jumps, calls and exits are never part of a window.
    assert!(unknown(
        &[mov64_reg(0, 1)],
        &[linerate_bpf::insn::build::exit()],
        scalar
    ));
}

#[test]
fn context_pointer_fields_give_pointers() {
    let ctx = EntryValue::Pointer {
        region: WindowRegion::Ctx,
        offset: Some(0),
    };
    // r2 = ctx->data; r0 = *(u8 *)(r2 + 12), against a known data pointer in r3.
    let original = [ldx(Size::W, 2, 1, 0), ldx(Size::B, 0, 2, 12)];
    let candidate = [ldx(Size::B, 0, 3, 12)];
    let q = WindowQuery {
        original: &original,
        candidate: &candidate,
        entry: entry(&[(1, ctx), (3, packet(Some(0)))]),
        live_out: live(&[0]),
        live_stack: [false; STACK_BYTES],
    };
    assert_eq!(check(&q), WindowVerdict::Equivalent);
    let off_by_one = [ldx(Size::B, 0, 3, 13)];
    let q = WindowQuery {
        candidate: &off_by_one,
        ..q
    };
    assert!(matches!(check(&q), WindowVerdict::Different(_)));
    // The same through a context pointer past the field.
    let past = [ldx(Size::W, 2, 1, -4), ldx(Size::B, 0, 2, 12)];
    let mut e = q.entry;
    e[1] = EntryValue::Pointer {
        region: WindowRegion::Ctx,
        offset: Some(4),
    };
    let q = WindowQuery {
        original: &past,
        candidate: &candidate,
        entry: e,
        ..q
    };
    assert_eq!(check(&q), WindowVerdict::Equivalent);
}

// ---------------------------------------------------------------------------------------------
// Random windows.

/// The entry of random windows: r0–r3 numbers, r4 a known number, r5 unreadable, r6 the packet
/// at `data`, r7 a map value at an unknown offset, r8 the context, r9 the stack at an unknown
/// offset, r10 the frame.
fn random_entry(constant: u64) -> [EntryValue; NUM_REGS] {
    entry(&[
        (0, EntryValue::Scalar),
        (1, EntryValue::Scalar),
        (2, EntryValue::Scalar),
        (3, EntryValue::Scalar),
        (4, EntryValue::Constant(constant)),
        (6, packet(Some(0))),
        (
            7,
            EntryValue::Pointer {
                region: WindowRegion::MapValue(0),
                offset: None,
            },
        ),
        (
            8,
            EntryValue::Pointer {
                region: WindowRegion::Ctx,
                offset: Some(0),
            },
        ),
        (
            9,
            EntryValue::Pointer {
                region: WindowRegion::Stack,
                offset: None,
            },
        ),
    ])
}

const ALU_OPS: [AluOp; 14] = [
    AluOp::Add,
    AluOp::Sub,
    AluOp::Mul,
    AluOp::Div,
    AluOp::SDiv,
    AluOp::Mod,
    AluOp::SMod,
    AluOp::Or,
    AluOp::And,
    AluOp::Xor,
    AluOp::Lsh,
    AluOp::Rsh,
    AluOp::Arsh,
    AluOp::Mov,
];
const SIZES: [Size; 4] = [Size::B, Size::H, Size::W, Size::Dw];

/// One random window instruction from raw choices: ALU (both widths, register or immediate),
/// byte swaps, loads and stores through the packet, the map value, the context and the stack,
/// and pointer moves.
fn instruction(ops: &[AluOp], kind: u8, a: u8, b: u8, imm: i32, small: u8) -> Instruction {
    let dst = a % 5;
    let size = SIZES[usize::from(small % 4)];
    let base = [6u8, 7, 10, 8, 9][usize::from(b % 5)];
    let off = match base {
        9 | 10 => -i16::from(small % 24) - 1,
        8 => [0i16, 8, 12, 16, 20][usize::from(small % 5)],
        _ => i16::from(small % 24),
    };
    let off = if base == 8 && off != 12 && off != 16 && off != 20 {
        0
    } else {
        off
    };
    let size = if base == 8 && off == 0 { Size::W } else { size };
    // Now and then a read of the unreadable r5.
    let src = if b % 16 == 15 { 5 } else { b % 5 };
    match kind % 10 {
        0..=2 => alu(
            kind.is_multiple_of(2),
            ops[usize::from(small) % ops.len()],
            dst,
            Operand::Reg(src),
        ),
        3 | 4 => {
            let imm = match small % 3 {
                0 => imm % 64,
                1 => imm % 8,
                _ => imm,
            };
            alu(
                kind == 3,
                ops[usize::from(b) % ops.len()],
                dst,
                Operand::Imm(imm),
            )
        }
        5 => Instruction::Endian {
            kind: [Endian::ToBe, Endian::ToLe, Endian::Swap][usize::from(b % 3)],
            bits: [16, 32, 64][usize::from(small % 3)],
            dst,
        },
        6 | 7 => ldx(size, dst, base, off),
        8 if base == 8 => mov64_reg(dst, [6, 7, 10][usize::from(small % 3)]),
        8 => stx(size, base, off, src),
        _ if base == 8 => alu64(AluOp::Add, dst, imm % 16),
        _ if imm.rem_euclid(4) == 0 => {
            let op = [
                AtomicOp::Add,
                AtomicOp::Xor,
                AtomicOp::Xchg,
                AtomicOp::CmpXchg,
            ][usize::from(small % 4)];
            let fetch = matches!(op, AtomicOp::Xchg | AtomicOp::CmpXchg) || a.is_multiple_of(2);
            let size = if small.is_multiple_of(2) {
                Size::W
            } else {
                Size::Dw
            };
            atomic(size, op, fetch, base, off, src)
        }
        _ => st(size, base, off, imm),
    }
}

fn insn_strategy() -> impl Strategy<Value = Instruction> {
    (
        any::<u8>(),
        any::<u8>(),
        any::<u8>(),
        any::<i32>(),
        any::<u8>(),
    )
        .prop_map(|(k, a, b, imm, s)| instruction(&ALU_OPS, k, a, b, imm, s))
}

/// A candidate derived from `original`: unchanged, one instruction replaced, one deleted, or
/// two swapped.
fn mutate(
    original: &[Instruction],
    how: u8,
    at: usize,
    replacement: Instruction,
) -> Vec<Instruction> {
    let mut c = original.to_vec();
    let i = at % c.len();
    match how % 4 {
        0 => {}
        1 => c[i] = replacement,
        2 => {
            c.remove(i);
        }
        _ => {
            let j = (i + 1) % c.len();
            c.swap(i, j);
        }
    }
    c
}

fn stack_liveness(kind: u8, bits: u64) -> [bool; STACK_BYTES] {
    match kind % 3 {
        0 => [false; STACK_BYTES],
        1 => [true; STACK_BYTES],
        // 8-byte slots, the top 64 bytes by `bits`.
        _ => std::array::from_fn(|i| {
            let from_top = STACK_BYTES - 1 - i;
            from_top < 64 && bits >> (from_top / 8) & 1 == 1
        }),
    }
}

thread_local! {
    static CHECKER: std::cell::RefCell<WindowChecker> = std::cell::RefCell::new(WindowChecker::new(10_000));
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 400, ..ProptestConfig::default() })]

    /// Every counterexample makes a live output differ concretely; every proof holds on 200
    /// random entry states.
    #[test]
    fn verdicts_agree_with_concrete_runs(
        original in prop::collection::vec(insn_strategy(), 1..8),
        how in any::<u8>(),
        at in any::<usize>(),
        replacement in insn_strategy(),
        constant in prop_oneof![Just(4u64), Just(0), any::<u64>()],
        live_out in any::<u16>(),
        stack_kind in any::<u8>(),
        stack_bits in any::<u64>(),
    ) {
        let candidate = mutate(&original, how, at, replacement);
        let q = WindowQuery {
            original: &original,
            candidate: &candidate,
            entry: random_entry(constant),
            live_out: live_out & 0x7ff,
            live_stack: stack_liveness(stack_kind, stack_bits),
        };
        let verdict = CHECKER.with(|c| c.borrow_mut().check(&q)).expect("check");
        match verdict {
            WindowVerdict::Different(cex) => {
                let memory: HashMap<u64, u8> = cex.memory.iter().copied().collect();
                let a = run_concrete(&original, cex.regs, &memory, &zero);
                let b = run_concrete(&candidate, cex.regs, &memory, &zero);
                prop_assert!(
                    live_difference(&q, &a, &b, &zero).is_some(),
                    "invalid counterexample {:?}", cex
                );
            }
            WindowVerdict::Equivalent => {
                let d = disagreement(&q, 200, at as u64);
                prop_assert!(d.is_none(), "proven equivalent, yet {}", d.unwrap_or_default());
            }
            WindowVerdict::Unknown(_) => {}
        }
    }
}

/// Checks per second on `count` random 10-instruction windows with ALU operations from `ops`
/// and their mutations.
fn throughput_with(ops: &[AluOp], what: &str, count: usize) {
    let mut rng = StdRng::seed_from_u64(7);
    let mut checker = WindowChecker::new(1_000);
    let queries: Vec<(Vec<Instruction>, Vec<Instruction>, u16)> = (0..count)
        .map(|_| {
            let mut raw =
                || instruction(ops, rng.gen(), rng.gen(), rng.gen(), rng.gen(), rng.gen());
            let original: Vec<Instruction> = (0..10).map(|_| raw()).collect();
            let replacement = raw();
            let candidate = mutate(&original, rng.gen(), rng.gen(), replacement);
            (original, candidate, rng.gen::<u16>() & 0x7ff)
        })
        .collect();
    let start = Instant::now();
    let mut slowest = 0f64;
    for (original, candidate, live_out) in &queries {
        let q = WindowQuery {
            original,
            candidate,
            entry: random_entry(4),
            live_out: *live_out,
            live_stack: [true; STACK_BYTES],
        };
        let one = Instant::now();
        checker.check(&q).expect("check");
        slowest = slowest.max(one.elapsed().as_secs_f64());
    }
    let elapsed = start.elapsed().as_secs_f64();
    let stats = checker.stats();
    println!(
        "window checks {what}: {} in {elapsed:.2} s = {:.0} checks/s, slowest {slowest:.2} s \
         ({} solver calls; {} equivalent, {} different, {} unknown)",
        stats.checks,
        stats.checks as f64 / elapsed,
        stats.solver_calls,
        stats.equivalent,
        stats.different,
        stats.unknown
    );
    assert_eq!(stats.checks, count as u64);
}

/// Checks per second (printed, not asserted: run with `--nocapture`), on the operations clang
/// emits in packet code and on every operation, division included (whose 64-bit circuits make
/// the hardest proofs).
#[test]
fn throughput() {
    let common = ALU_OPS.map(|op| match op {
        AluOp::Div | AluOp::SDiv | AluOp::Mod | AluOp::SMod => AluOp::Mov,
        other => other,
    });
    throughput_with(&common, "without division", 300);
    throughput_with(&ALU_OPS, "with division", 100);
}

/// clang's byte-wise read of `n` bytes at `base + off` into r0 (r1 a temporary), most
/// significant byte first; `big_endian` assembles them the other way round.
fn byte_wise_read(base: u8, off: i16, n: i16, wide: bool, big_endian: bool) -> Vec<Instruction> {
    let at = |i: i16| if big_endian { off + i } else { off + n - 1 - i };
    let mut w = vec![ldx(Size::B, 0, base, at(0))];
    for i in 1..n {
        w.push(alu(wide, AluOp::Lsh, 0, Operand::Imm(8)));
        w.push(ldx(Size::B, 1, base, at(i)));
        w.push(alu(wide, AluOp::Or, 0, Operand::Reg(1)));
    }
    w
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    /// A byte-wise read is one wide load, in little-endian order only; the proof holds on
    /// random states and the counterexample to the wrong order is valid.
    #[test]
    fn byte_wise_reads_are_wide_loads(
        base in prop::sample::select(vec![6u8, 7, 9, 10]),
        off in 0i16..16,
        size in prop::sample::select(vec![Size::H, Size::W, Size::Dw]),
        wide in any::<bool>(),
        then_store in any::<bool>(),
        live_extra in any::<u16>(),
    ) {
        let n = size.bytes() as i16;
        // 32-bit assembly only holds 4 bytes.
        let wide = wide || n == 8;
        let off = if matches!(base, 9 | 10) { -off - n } else { off };
        let store = [stx(size, 10, -64, 0)];
        let with_store = |mut w: Vec<Instruction>| {
            if then_store {
                w.extend_from_slice(&store);
            }
            w
        };
        let original = with_store(byte_wise_read(base, off, n, wide, false));
        let candidate = with_store(vec![ldx(size, 0, base, off)]);
        let q = WindowQuery {
            original: &original,
            candidate: &candidate,
            entry: random_entry(4),
            live_out: (live_extra & 0x7fd) | 1,
            live_stack: [true; STACK_BYTES],
        };
        let mut checker = WindowChecker::new(10_000);
        let verdict = checker.check(&q).expect("check");
        prop_assert_eq!(&verdict, &WindowVerdict::Equivalent);
        let d = disagreement(&q, 200, off as u64);
        prop_assert!(d.is_none(), "proven equivalent, yet {}", d.unwrap_or_default());

        let reversed = with_store(byte_wise_read(base, off, n, wide, true));
        let q = WindowQuery { original: &reversed, ..q };
        let WindowVerdict::Different(cex) = checker.check(&q).expect("check") else {
            return Err(TestCaseError::fail("the big-endian read is not told apart"));
        };
        let memory: HashMap<u64, u8> = cex.memory.iter().copied().collect();
        let a = run_concrete(&reversed, cex.regs, &memory, &zero);
        let b = run_concrete(&candidate, cex.regs, &memory, &zero);
        prop_assert!(live_difference(&q, &a, &b, &zero).is_some(), "invalid counterexample {:?}", cex);
    }
}

/// Proofs per second: the rewrites of the tests above that need the solver, each checked 25
/// times (printed, not asserted).
#[test]
fn proof_throughput() {
    let original = reflector_6_21();
    let two_loads = [
        ldx(Size::W, 4, 3, 0),
        stx(Size::W, 10, -8, 4),
        ldx(Size::H, 4, 3, 4),
        stx(Size::H, 10, -4, 4),
    ];
    let eight = byte_wise_read(7, 3, 8, true, false);
    let wide = [ldx(Size::Dw, 0, 7, 3)];
    let mul = [alu64_reg(AluOp::Mul, 1, 4)];
    let shift = [alu64(AluOp::Lsh, 1, 2)];
    let queries = [
        WindowQuery {
            original: &original,
            candidate: &two_loads,
            entry: reflector_entry(),
            live_out: live(&[1, 2, 3, 10]),
            live_stack: live_stack(-8, 0),
        },
        WindowQuery {
            original: &eight,
            candidate: &wide,
            entry: random_entry(4),
            live_out: live(&[0]),
            live_stack: [true; STACK_BYTES],
        },
        WindowQuery {
            original: &mul,
            candidate: &shift,
            entry: random_entry(4),
            live_out: live(&[1]),
            live_stack: [true; STACK_BYTES],
        },
    ];
    let mut checker = WindowChecker::new(10_000);
    let start = Instant::now();
    for _ in 0..25 {
        for q in &queries {
            assert_eq!(checker.check(q).expect("check"), WindowVerdict::Equivalent);
        }
    }
    let elapsed = start.elapsed().as_secs_f64();
    let stats = checker.stats();
    println!(
        "window proofs: {} in {elapsed:.2} s = {:.0} checks/s ({} solver calls)",
        stats.checks,
        stats.checks as f64 / elapsed,
        stats.solver_calls
    );
}
