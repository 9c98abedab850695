//! Random XDP *objects* for the differential test: two or three programs sharing maps, with
//! helper calls, map lookups, updates and deletions, tail calls and bounded loops, and an epilogue
//! that copies the registers and the stack into a map so that every store, read or not, is
//! compared.
//!
//! # The harness of every program
//!
//! * **Prologue.** Checks that the packet holds [`MIN_PACKET`] bytes (else returns 0), spills the
//!   context pointer, zeroes the body stack area and the register area, and loads the scalars
//!   ([`SCALARS`]) from the packet's first bytes. `r6` is the packet pointer, `r10` the frame
//!   pointer; neither is ever a scalar.
//! * **Body.** The items of [`super`] (every ALU, load, store, atomic and jump form), helper calls
//!   and bounded loops whose bodies are again random items.
//! * **Epilogue.** Stores r0–r9 into the register area (r6, a pointer, stays 0), looks up entry
//!   *program index* of the `out` map and copies the register area and the body stack area into
//!   it (see [`DUMP_BYTES`]), then returns r0.
//!
//! # Stack layout (offsets from r10)
//!
//! | bytes            | what                                                            |
//! |------------------|-----------------------------------------------------------------|
//! | `-64 .. 0`       | the body's stack area ([`STACK_BYTES`]), zeroed by the prologue |
//! | `-144 .. -64`    | the register area: r*k* at `-72 - 8k`                           |
//! | `-160 .. -144`   | loop counters, one per nesting depth                            |
//! | `-168`           | the spilled context pointer                                     |
//! | `-176`           | the key of the `out` lookup                                     |
//!
//! # Helper calls
//!
//! A call saves r0–r5 in the register area, sets up the arguments (a scalar argument is an
//! immediate or a copy of a scalar register, read back from the register area for r0–r5), calls
//! the helper and restores r1–r5, so that to the body a call is just `r0 = helper(...)`. After a
//! helper that may move the packet (the `adjust` helpers, `store_bytes`, a tail call that falls
//! through) `r6` is derived again from the context; when fewer than [`BODY_PACKET_BYTES`] remain,
//! the program goes straight to the epilogue. A lookup null-checks the value pointer, moves it to
//! a scalar register, runs random loads, stores, atomics and ALU operations on the value through
//! it, and ends with a load through it, so that no pointer outlives the block.
//! `bpf_ktime_get_ns` and `bpf_get_prandom_u32` are called too, but r0 is restored after them:
//! their values differ between the engines by design.
//!
//! # Loops
//!
//! A loop keeps its counter in a stack slot (so that every scalar register stays usable in its
//! body): `*(u64 *)(r10 - slot) = 0; top: body; rC = counter + 1; store; if rC < N goto top` (or
//! `if rC >= N goto out; goto top; out:`), which the verifier follows iteration by iteration.
//! Loops nest two deep.

use std::collections::BTreeSet;

use linerate_bpf::facts::helper as id;
use linerate_bpf::insn::build::{
    add64, call_helper, ja, jmp, jmp_reg, jump, ld_map, ldx, mov32_reg, mov64, mov64_reg, st, stx,
};
use linerate_bpf::insn::{AtomicOp, Cond, Instruction, Operand, Reg, Size};
use linerate_bpf::{MapDef, MapType, Object, Program};
use proptest::prelude::*;
use proptest::sample::select;
use proptest::strategy::Union;

use super::asm::{Asm, Label};
use super::{
    alu, atomic_prelude, interesting_imm, item, operand, scalar, size, Harness, Item,
    BODY_PACKET_BYTES, PACKET_POINTER, SCALARS, STACK_BYTES,
};

/// Index of the `out` map: an array with one entry per program, which the epilogue fills with
/// the register area and the body stack area.
pub const OUT_MAP: u32 = 0;
/// Index of the array map the body looks up and updates.
pub const ARRAY_MAP: u32 = 1;
/// Index of the hash map the body looks up, updates and deletes from.
pub const HASH_MAP: u32 = 2;
/// Index of the device map `bpf_redirect_map` uses.
pub const DEV_MAP: u32 = 3;
/// Index of the program array for tail calls: slot *i* holds program *i*, the last slot is empty.
pub const PROG_MAP: u32 = 4;

/// Value bytes of the array and hash maps.
pub const VALUE_BYTES: i16 = 24;
/// Entries of the array map.
pub const ARRAY_ENTRIES: u32 = 4;
/// Entries of the hash map (small, so that it fills up).
pub const HASH_ENTRIES: u32 = 4;
/// Key bytes of the hash map.
pub const HASH_KEY_BYTES: i16 = 8;
/// Entries of the device map; the ones in [`DEV_SLOTS`] hold the loopback device.
pub const DEV_ENTRIES: u32 = 4;
/// Device-map slots seeded with the loopback device (ifindex 1).
pub const DEV_SLOTS: [u32; 2] = [0, 2];
/// Most programs in one object.
pub const MAX_PROGRAMS: usize = 3;
/// Bytes the prologue requires and loads the scalars from.
pub const MIN_PACKET: i32 = 8 * SCALARS.len() as i32;
/// Bytes of an `out` value: the register area (r9 first, r0 last) followed by the body stack
/// area (`r10 - 64` first).
pub const DUMP_BYTES: i16 = REGS_BYTES + STACK_BYTES;

const REGS_BYTES: i16 = 80;
/// Lowest stack offset the epilogue copies.
const DUMP_START: i16 = -DUMP_BYTES;
const CTX_SLOT: i16 = -168;
const OUT_KEY_SLOT: i16 = -176;
/// Deepest loop nesting.
const MAX_LOOP_DEPTH: usize = 2;

/// The register area slot of `r`.
pub fn reg_slot(r: Reg) -> i16 {
    -STACK_BYTES - 8 * (r as i16 + 1)
}

fn loop_slot(depth: usize) -> i16 {
    -STACK_BYTES - REGS_BYTES - 8 * (depth as i16 + 1)
}

/// A generated object: the programs' instructions, what each program uses, and the map entries
/// both engines must be seeded with before the first run.
#[derive(Clone, Debug)]
pub struct RandomObject {
    pub programs: Vec<Vec<Instruction>>,
    /// Per program, the names of the features it contains (helpers, loops, ...).
    pub features: Vec<BTreeSet<&'static str>>,
    /// `(map index, key, value)` to insert before the first run.
    pub seeds: Vec<(usize, Vec<u8>, Vec<u8>)>,
}

impl RandomObject {
    /// The object: the programs `prog0`, `prog1`, ... and the maps of this module.
    pub fn object(&self) -> Object {
        let programs = self
            .programs
            .iter()
            .enumerate()
            .map(|(i, insns)| Program::from_instructions(&format!("prog{i}"), "xdp", insns))
            .collect();
        Object::with_programs("random", programs, maps(self.programs.len()))
    }
}

/// The maps of an object of `programs` programs, in index order.
fn maps(programs: usize) -> Vec<MapDef> {
    let mut progs = MapDef::new("progs", MapType::PROG_ARRAY, 4, 4, programs as u32 + 1);
    progs.initial_programs = (0..programs).map(|i| (i as u32, i)).collect();
    vec![
        MapDef::new(
            "out",
            MapType::ARRAY,
            4,
            DUMP_BYTES as u32,
            MAX_PROGRAMS as u32,
        ),
        MapDef::new("arr", MapType::ARRAY, 4, VALUE_BYTES as u32, ARRAY_ENTRIES),
        MapDef::new(
            "hash",
            MapType::HASH,
            HASH_KEY_BYTES as u32,
            VALUE_BYTES as u32,
            HASH_ENTRIES,
        ),
        MapDef::new("dev", MapType::DEVMAP, 4, 4, DEV_ENTRIES),
        progs,
    ]
}

/// One element of a body.
#[derive(Clone, Debug)]
enum Node {
    Basic(Item),
    Call(Helper),
    Loop(Loop),
}

#[derive(Clone, Debug)]
struct Loop {
    /// Iterations (the body runs at least once).
    count: i32,
    /// The register the latch loads the counter into.
    counter: Reg,
    /// 64-bit (or 32-bit) latch comparison.
    wide: bool,
    /// `if c >= N goto out; goto top` instead of `if c < N goto top`.
    latch_goto: bool,
    body: Vec<Node>,
}

/// Where a helper's memory argument points: `r10 + off` or `r6 + off`.
#[derive(Clone, Copy, Debug)]
enum Mem {
    Stack(i16),
    Packet(i16),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum DataMap {
    Array,
    Hash,
}

impl DataMap {
    fn index(self) -> u32 {
        match self {
            DataMap::Array => ARRAY_MAP,
            DataMap::Hash => HASH_MAP,
        }
    }
    fn key_size(self) -> Size {
        match self {
            DataMap::Array => Size::W,
            DataMap::Hash => Size::Dw,
        }
    }
}

/// A map key: where it lies and, for a stack key, what is stored there first (if anything).
#[derive(Clone, Debug)]
struct Key {
    map: DataMap,
    at: Mem,
    set: Option<Operand>,
}

/// An operation on a looked-up map value (offsets into the value).
#[derive(Clone, Copy, Debug)]
enum ValueOp {
    Load {
        size: Size,
        signed: bool,
        dst: Reg,
        off: i16,
    },
    Store {
        size: Size,
        off: i16,
        src: Operand,
    },
    Atomic {
        size: Size,
        op: AtomicOp,
        fetch: bool,
        src: Reg,
        off: i16,
    },
    Alu(Instruction),
}

#[derive(Clone, Debug)]
enum Helper {
    Lookup {
        key: Key,
        /// The register holding the value pointer inside the block.
        base: Reg,
        ops: Vec<ValueOp>,
        /// The closing load `base = *(size *)(base + off)`.
        last: (Size, i16),
    },
    Update {
        key: Key,
        value: Mem,
        flags: Operand,
    },
    Delete {
        key: Key,
    },
    CsumDiff {
        from: Option<(Mem, i32)>,
        to: Option<(Mem, i32)>,
        seed: Operand,
    },
    AdjustHead(Operand),
    AdjustTail(Operand),
    AdjustMeta(Operand),
    LoadBytes {
        offset: Operand,
        buf: i16,
        len: i32,
    },
    StoreBytes {
        offset: Operand,
        buf: i16,
        len: i32,
    },
    BuffLen,
    ProcessorId,
    /// `bpf_ktime_get_ns` or `bpf_get_prandom_u32`, whose result is dropped: their values differ
    /// between the engines by design.
    Unobserved(u32),
    Redirect {
        ifindex: Operand,
        flags: Operand,
    },
    RedirectMap {
        key: Operand,
        flags: Operand,
    },
    TailCall {
        index: Operand,
    },
}

impl Helper {
    fn feature(&self) -> &'static str {
        match self {
            Helper::Lookup {
                key:
                    Key {
                        map: DataMap::Array,
                        ..
                    },
                ..
            } => "map_lookup_elem (array)",
            Helper::Lookup { .. } => "map_lookup_elem (hash)",
            Helper::Update { .. } => "map_update_elem",
            Helper::Delete { .. } => "map_delete_elem",
            Helper::CsumDiff { .. } => "csum_diff",
            Helper::AdjustHead(_) => "xdp_adjust_head",
            Helper::AdjustTail(_) => "xdp_adjust_tail",
            Helper::AdjustMeta(_) => "xdp_adjust_meta",
            Helper::LoadBytes { .. } => "xdp_load_bytes",
            Helper::StoreBytes { .. } => "xdp_store_bytes",
            Helper::BuffLen => "xdp_get_buff_len",
            Helper::ProcessorId => "get_smp_processor_id",
            Helper::Unobserved(_) => "ktime/prandom (unobserved)",
            Helper::Redirect { .. } => "redirect",
            Helper::RedirectMap { .. } => "redirect_map",
            Helper::TailCall { .. } => "tail_call",
        }
    }

    fn helper(&self) -> u32 {
        match self {
            Helper::Lookup { .. } => id::MAP_LOOKUP_ELEM,
            Helper::Update { .. } => id::MAP_UPDATE_ELEM,
            Helper::Delete { .. } => id::MAP_DELETE_ELEM,
            Helper::CsumDiff { .. } => id::CSUM_DIFF,
            Helper::AdjustHead(_) => id::XDP_ADJUST_HEAD,
            Helper::AdjustTail(_) => id::XDP_ADJUST_TAIL,
            Helper::AdjustMeta(_) => id::XDP_ADJUST_META,
            Helper::LoadBytes { .. } => id::XDP_LOAD_BYTES,
            Helper::StoreBytes { .. } => id::XDP_STORE_BYTES,
            Helper::BuffLen => id::XDP_GET_BUFF_LEN,
            Helper::ProcessorId => id::GET_SMP_PROCESSOR_ID,
            Helper::Unobserved(helper) => *helper,
            Helper::Redirect { .. } => id::REDIRECT,
            Helper::RedirectMap { .. } => id::REDIRECT_MAP,
            Helper::TailCall { .. } => id::TAIL_CALL,
        }
    }

    /// Whether packet pointers must be derived again after the call.
    fn moves_packet(&self) -> bool {
        matches!(
            self,
            Helper::AdjustHead(_)
                | Helper::AdjustTail(_)
                | Helper::AdjustMeta(_)
                | Helper::StoreBytes { .. }
                | Helper::TailCall { .. }
        )
    }
}

// ---------------------------------------------------------------------------------------------
// Strategies

/// A scalar helper argument: mostly one of `imms`, sometimes a register or any immediate.
fn arg(imms: &'static [i32]) -> BoxedStrategy<Operand> {
    prop_oneof![
        4 => select(imms).prop_map(Operand::Imm),
        2 => scalar().prop_map(Operand::Reg),
        1 => interesting_imm().prop_map(Operand::Imm),
    ]
    .boxed()
}

/// `len` readable bytes on the stack or in the packet.
fn mem(len: i16) -> BoxedStrategy<Mem> {
    prop_oneof![
        2 => (-STACK_BYTES..=-len.max(1)).prop_map(Mem::Stack),
        1 => (0..=BODY_PACKET_BYTES - len).prop_map(Mem::Packet),
    ]
    .boxed()
}

fn key() -> BoxedStrategy<Key> {
    let set = prop_oneof![
        1 => Just(None),
        3 => select(vec![0, 1, 2, 3, 4, 5, 7]).prop_map(|i| Some(Operand::Imm(i))),
        1 => scalar().prop_map(|r| Some(Operand::Reg(r))),
    ];
    // Mostly 8-byte aligned on the stack, where a preset value can be stored (the verifier wants
    // aligned stack stores).
    let at = prop_oneof![
        3 => (1..=STACK_BYTES / 8).prop_map(|k| Mem::Stack(-8 * k)),
        2 => mem(HASH_KEY_BYTES),
    ];
    (select(vec![DataMap::Array, DataMap::Hash]), at, set)
        .prop_map(|(map, at, set)| Key {
            map,
            at,
            set: match at {
                Mem::Stack(off) if off % 8 == 0 => set,
                _ => None,
            },
        })
        .boxed()
}

/// An offset for a `width`-byte access into a map value: mostly aligned.
fn value_offset(width: i16, aligned_only: bool) -> BoxedStrategy<i16> {
    let aligned = (0..=(VALUE_BYTES - width) / width).prop_map(move |k| k * width);
    if aligned_only {
        aligned.boxed()
    } else {
        prop_oneof![3 => aligned, 1 => 0..=VALUE_BYTES - width].boxed()
    }
}

fn value_op() -> BoxedStrategy<ValueOp> {
    let load = (size(), any::<bool>(), scalar()).prop_flat_map(|(size, signed, dst)| {
        value_offset(size.bytes() as i16, false).prop_map(move |off| ValueOp::Load {
            size,
            signed,
            dst,
            off,
        })
    });
    let store = (size(), operand()).prop_flat_map(|(size, src)| {
        value_offset(size.bytes() as i16, false).prop_map(move |off| ValueOp::Store {
            size,
            off,
            src,
        })
    });
    let atomic = (
        select(vec![Size::W, Size::Dw]),
        select(AtomicOp::ALL.to_vec()),
        any::<bool>(),
        scalar(),
    )
        .prop_flat_map(|(size, op, fetch, src)| {
            value_offset(size.bytes() as i16, true).prop_map(move |off| ValueOp::Atomic {
                size,
                op,
                fetch: fetch || matches!(op, AtomicOp::Xchg | AtomicOp::CmpXchg),
                src,
                off,
            })
        });
    prop_oneof![
        2 => load,
        2 => store,
        2 => atomic,
        1 => alu().prop_map(ValueOp::Alu),
    ]
    .boxed()
}

fn lookup() -> BoxedStrategy<Helper> {
    let base = select(
        SCALARS
            .iter()
            .copied()
            .filter(|&r| r != 0)
            .collect::<Vec<_>>(),
    );
    let last =
        size().prop_flat_map(|s| value_offset(s.bytes() as i16, false).prop_map(move |o| (s, o)));
    (
        key(),
        base,
        proptest::collection::vec(value_op(), 0..6),
        last,
    )
        .prop_map(|(key, base, ops, last)| Helper::Lookup {
            key,
            base,
            ops,
            last,
        })
        .boxed()
}

/// A `csum_diff` buffer: NULL with size 0, or `size` bytes (mostly a multiple of 4).
fn csum_buffer() -> BoxedStrategy<Option<(Mem, i32)>> {
    let sized = select(vec![0, 4, 4, 8, 8, 12, 16, 20, 24, 32, 40, 64, 2, 6, 13])
        .prop_flat_map(|len: i32| mem(len as i16).prop_map(move |m| Some((m, len))));
    prop_oneof![1 => Just(None), 5 => sized].boxed()
}

/// A stack buffer `(offset, len)` for `xdp_load_bytes`/`xdp_store_bytes`, `len >= 1`.
fn byte_buffer() -> BoxedStrategy<(i16, i32)> {
    (1..=32i16)
        .prop_flat_map(|len| (-STACK_BYTES..=-len).prop_map(move |off| (off, len as i32)))
        .boxed()
}

const PACKET_OFFSETS: &[i32] = &[0, 1, 4, 14, 20, 40, 60, 63, 64, 71, 72, 100, 150, 200, 250];

fn call() -> BoxedStrategy<Helper> {
    let update = (key(), mem(VALUE_BYTES), arg(&[0, 0, 1, 2, 3, 4, 5]))
        .prop_map(|(key, value, flags)| Helper::Update { key, value, flags });
    let delete = key().prop_map(|key| Helper::Delete { key });
    let csum = (csum_buffer(), csum_buffer(), arg(&[0, 1, -1, 0xffff]))
        .prop_map(|(from, to, seed)| Helper::CsumDiff { from, to, seed });
    let head = arg(&[-64, -20, -14, -4, -1, 0, 1, 4, 8, 14, 40, -216, -300, 300]);
    let tail = arg(&[-64, -20, -4, -1, 0, 1, 4, 20, 100, 3000, 4000, -200]);
    let meta = arg(&[-4, -8, -16, -32, -6, 4, 0, -216, -220]);
    let load = (arg(PACKET_OFFSETS), byte_buffer())
        .prop_map(|(offset, (buf, len))| Helper::LoadBytes { offset, buf, len });
    let store = (arg(PACKET_OFFSETS), byte_buffer())
        .prop_map(|(offset, (buf, len))| Helper::StoreBytes { offset, buf, len });
    let redirect = (arg(&[0, 1, 2, 3]), arg(&[0, 0, 0, 1, 8]))
        .prop_map(|(ifindex, flags)| Helper::Redirect { ifindex, flags });
    let redirect_map = (arg(&[0, 1, 2, 3, 4, 100]), arg(&[0, 1, 2, 3, 4, 8, 16, 24]))
        .prop_map(|(key, flags)| Helper::RedirectMap { key, flags });
    let tail_call = arg(&[0, 1, 2, 3, 4]).prop_map(|index| Helper::TailCall { index });
    Union::new_weighted(vec![
        (4, lookup()),
        (2, update.boxed()),
        (1, delete.boxed()),
        (1, csum.boxed()),
        (1, head.prop_map(Helper::AdjustHead).boxed()),
        (1, tail.prop_map(Helper::AdjustTail).boxed()),
        (1, meta.prop_map(Helper::AdjustMeta).boxed()),
        (1, load.boxed()),
        (1, store.boxed()),
        (1, Just(Helper::BuffLen).boxed()),
        (1, Just(Helper::ProcessorId).boxed()),
        (
            1,
            select(vec![id::KTIME_GET_NS, id::GET_PRANDOM_U32])
                .prop_map(Helper::Unobserved)
                .boxed(),
        ),
        (1, redirect.boxed()),
        (1, redirect_map.boxed()),
        (2, tail_call.boxed()),
    ])
    .boxed()
}

fn leaf() -> BoxedStrategy<Node> {
    prop_oneof![
        5 => item(Harness::Xdp).prop_map(Node::Basic),
        1 => call().prop_map(Node::Call),
    ]
    .boxed()
}

/// A loop of up to `max_count` iterations around `inner` nodes.
fn looped(inner: BoxedStrategy<Node>, max_count: i32) -> BoxedStrategy<Node> {
    (
        select(
            [1, 2, 3, 4, 5, 8]
                .into_iter()
                .filter(|&n| n <= max_count)
                .collect::<Vec<_>>(),
        ),
        scalar(),
        any::<bool>(),
        any::<bool>(),
        proptest::collection::vec(inner, 1..8),
    )
        .prop_map(|(count, counter, wide, latch_goto, body)| {
            Node::Loop(Loop {
                count,
                counter,
                wide,
                latch_goto,
                body,
            })
        })
        .boxed()
}

fn node() -> BoxedStrategy<Node> {
    // Inner loops stay short: the verifier walks every iteration of both.
    let inner = prop_oneof![12 => leaf(), 1 => looped(leaf(), 3)].boxed();
    prop_oneof![20 => leaf(), 1 => looped(inner, 8)].boxed()
}

fn value_bytes() -> impl Strategy<Value = Vec<u8>> {
    proptest::collection::vec(
        prop_oneof![3 => Just(0u8), 1 => Just(0xff), 2 => any::<u8>()],
        VALUE_BYTES as usize,
    )
}

/// Initial entries of the array and hash maps.
fn data_seeds() -> impl Strategy<Value = Vec<(usize, Vec<u8>, Vec<u8>)>> {
    let array = (0..ARRAY_ENTRIES, value_bytes())
        .prop_map(|(k, v)| (ARRAY_MAP as usize, k.to_le_bytes().to_vec(), v));
    let hash = (0..8u64, value_bytes())
        .prop_map(|(k, v)| (HASH_MAP as usize, k.to_le_bytes().to_vec(), v));
    proptest::collection::vec(prop_oneof![array, hash], 0..4).prop_map(|mut seeds| {
        // One entry per key (a later one would replace an earlier one anyway) and at most
        // `HASH_ENTRIES` hash keys: both always hold.
        let mut seen = BTreeSet::new();
        seeds.retain(|(m, k, _)| seen.insert((*m, k.clone())));
        seeds
    })
}

/// A random object of two or three programs of up to `max_items` top-level items each; the
/// programs keep clear of the kernel's bugs (docs/kernel-issues.md).
pub fn random_object(max_items: usize) -> impl Strategy<Value = RandomObject> {
    (
        proptest::collection::vec(
            proptest::collection::vec(node(), 1..=max_items),
            2..=MAX_PROGRAMS,
        ),
        data_seeds(),
    )
        .prop_map(move |(bodies, mut seeds)| {
            let (programs, features) = bodies
                .iter()
                .enumerate()
                .map(|(i, body)| assemble(body, i))
                .unzip();
            for slot in DEV_SLOTS {
                seeds.push((
                    DEV_MAP as usize,
                    slot.to_le_bytes().to_vec(),
                    1u32.to_le_bytes().to_vec(),
                ));
            }
            RandomObject {
                programs,
                features,
                seeds,
            }
        })
}

/// Packets of [`MIN_PACKET`] to `MIN_PACKET + 128` bytes, rich in boundary values.
pub fn packet() -> impl Strategy<Value = Vec<u8>> {
    let byte = prop_oneof![3 => any::<u8>(), 1 => Just(0u8), 1 => Just(0xff), 1 => 0..8u8];
    let len = MIN_PACKET as usize;
    (
        proptest::collection::vec(byte, len..=len + 128),
        proptest::collection::vec((0..len / 8, super::packet_word()), 0..6),
    )
        .prop_map(|(mut bytes, words)| {
            for (i, w) in words {
                bytes[8 * i..8 * i + 8].copy_from_slice(&w.to_le_bytes());
            }
            bytes
        })
}

// ---------------------------------------------------------------------------------------------
// Assembly

impl Asm {
    /// Lays out `nodes`; a jump past the last node lands on `end`.
    fn seq(&mut self, nodes: &[Node], end: Label, depth: usize) {
        let starts: Vec<Label> = nodes.iter().map(|_| self.label()).collect();
        let target = |i: usize, skip: usize| starts.get(i + 1 + skip).copied().unwrap_or(end);
        for (i, node) in nodes.iter().enumerate() {
            self.place(starts[i]);
            match node {
                Node::Basic(item) => self.basic(item, |skip| target(i, skip)),
                Node::Call(call) => self.call(call),
                Node::Loop(lp) => self.looped(lp, depth),
            }
        }
    }

    fn basic(&mut self, item: &Item, target: impl Fn(usize) -> Label) {
        match *item {
            Item::Plain(insn) => self.emit(insn),
            Item::Atomic(insn) => {
                self.features.insert("atomic on the stack");
                for i in atomic_prelude(&insn) {
                    self.emit(i);
                }
                self.emit(insn);
            }
            Item::Branch {
                wide,
                cond,
                dst,
                src,
                skip,
            } => self.jump_to(jump(wide, cond, dst, src, 0), target(skip)),
            Item::MayGoto { skip } => {
                self.features.insert("may_goto");
                self.jump_to(Instruction::MayGoto { off: 0 }, target(skip))
            }
            Item::Goto { long, skip } => {
                // `if r0 != 0x5a goto +1` keeps the code after the unconditional jump reachable.
                self.emit(jmp(Cond::Ne, 0, 0x5a, 1));
                self.jump_to(Instruction::Ja { off: 0, long }, target(skip));
            }
        }
    }

    fn looped(&mut self, lp: &Loop, depth: usize) {
        self.features.insert("bounded loop");
        if depth > 0 {
            self.features.insert("nested loop");
        }
        let slot = loop_slot(depth.min(MAX_LOOP_DEPTH - 1));
        self.emit(st(Size::Dw, 10, slot, 0));
        let (top, latch) = (self.label(), self.label());
        self.place(top);
        self.seq(&lp.body, latch, depth + 1);
        self.place(latch);
        let c = lp.counter;
        self.emit(ldx(Size::Dw, c, 10, slot));
        self.emit(add64(c, 1));
        self.emit(stx(Size::Dw, 10, slot, c));
        let compare = |cond| jump(lp.wide, cond, c, Operand::Imm(lp.count), 0);
        if lp.latch_goto {
            let out = self.label();
            self.jump_to(compare(Cond::Ge), out);
            self.jump_to(ja(0), top);
            self.place(out);
        } else {
            self.jump_to(compare(Cond::Lt), top);
        }
    }

    /// `dst = src` for a scalar helper argument, reading r0–r5 back from the register area.
    fn scalar_arg(&mut self, dst: Reg, src: Operand) {
        match src {
            Operand::Reg(r) if r <= 5 => self.emit(ldx(Size::Dw, dst, 10, reg_slot(r))),
            Operand::Reg(r) => self.emit(mov64_reg(dst, r)),
            Operand::Imm(imm) => self.emit(mov64(dst, imm)),
        }
    }

    fn pointer_arg(&mut self, dst: Reg, mem: Mem) {
        let (base, off) = match mem {
            Mem::Stack(off) => (10, off),
            Mem::Packet(off) => (PACKET_POINTER, off),
        };
        self.emit(mov64_reg(dst, base));
        self.emit(add64(dst, off as i32));
    }

    fn map_arg(&mut self, dst: Reg, map: u32) {
        self.emit(ld_map(dst, map));
    }

    fn ctx_arg(&mut self, dst: Reg) {
        self.emit(ldx(Size::Dw, dst, 10, CTX_SLOT));
    }

    /// Stores a key's preset value (the registers still hold the body's values).
    fn key_setup(&mut self, key: &Key) {
        if let (Mem::Stack(off), Some(set)) = (key.at, key.set) {
            let size = key.map.key_size();
            self.emit(match set {
                Operand::Imm(imm) => st(size, 10, off, imm),
                Operand::Reg(r) => stx(size, 10, off, r),
            });
        }
    }

    fn key_args(&mut self, key: &Key) {
        self.map_arg(1, key.map.index());
        self.pointer_arg(2, key.at);
    }

    fn call(&mut self, call: &Helper) {
        self.features.insert(call.feature());
        if let Helper::Lookup { key, .. } | Helper::Update { key, .. } | Helper::Delete { key } =
            call
        {
            self.key_setup(key);
        }
        for r in 0..=5 {
            self.emit(stx(Size::Dw, 10, reg_slot(r), r));
        }
        match call {
            Helper::Lookup { key, .. } | Helper::Delete { key } => self.key_args(key),
            Helper::Update { key, value, flags } => {
                self.key_args(key);
                self.pointer_arg(3, *value);
                self.scalar_arg(4, *flags);
            }
            Helper::CsumDiff { from, to, seed } => {
                for (ptr, size, buffer) in [(1, 2, from), (3, 4, to)] {
                    match buffer {
                        Some((mem, len)) => {
                            let len = *len;
                            self.pointer_arg(ptr, *mem);
                            self.emit(mov64(size, len));
                        }
                        None => {
                            self.emit(mov64(ptr, 0));
                            self.emit(mov64(size, 0));
                        }
                    }
                }
                self.scalar_arg(5, *seed);
            }
            Helper::AdjustHead(delta) | Helper::AdjustTail(delta) | Helper::AdjustMeta(delta) => {
                self.ctx_arg(1);
                self.scalar_arg(2, *delta);
            }
            Helper::LoadBytes { offset, buf, len } | Helper::StoreBytes { offset, buf, len } => {
                self.ctx_arg(1);
                self.scalar_arg(2, *offset);
                self.pointer_arg(3, Mem::Stack(*buf));
                self.emit(mov64(4, *len));
            }
            Helper::BuffLen => self.ctx_arg(1),
            Helper::ProcessorId | Helper::Unobserved(_) => {}
            Helper::Redirect { ifindex, flags } => {
                self.scalar_arg(1, *ifindex);
                self.scalar_arg(2, *flags);
            }
            Helper::RedirectMap { key, flags } => {
                self.map_arg(1, DEV_MAP);
                self.scalar_arg(2, *key);
                self.scalar_arg(3, *flags);
            }
            Helper::TailCall { index } => {
                self.ctx_arg(1);
                self.map_arg(2, PROG_MAP);
                self.scalar_arg(3, *index);
            }
        }
        self.emit(call_helper(call.helper()));
        if matches!(call, Helper::TailCall { .. } | Helper::Unobserved(_)) {
            // A tail call that falls through leaves r0 undefined; the clock and the random
            // numbers are not the kernel's.
            self.emit(ldx(Size::Dw, 0, 10, reg_slot(0)));
        }
        if call.moves_packet() {
            self.ctx_arg(1);
            self.emit(ldx(Size::W, PACKET_POINTER, 1, 0));
            self.emit(ldx(Size::W, 2, 1, 4));
            self.emit(mov64_reg(3, PACKET_POINTER));
            self.emit(add64(3, BODY_PACKET_BYTES as i32));
            let early = self.early;
            self.jump_to(jmp_reg(Cond::Gt, 3, 2, 0), early);
        }
        for r in 1..=5 {
            self.emit(ldx(Size::Dw, r, 10, reg_slot(r)));
        }
        if let Helper::Lookup {
            base, ops, last, ..
        } = call
        {
            self.value_block(*base, ops, *last);
        }
    }

    /// `if r0 == 0 goto miss; base = r0; r0 = saved r0; ops; base = *(base + off); miss:`.
    fn value_block(&mut self, base: Reg, ops: &[ValueOp], last: (Size, i16)) {
        let miss = self.label();
        self.jump_to(jmp(Cond::Eq, 0, 0, 0), miss);
        self.emit(mov64_reg(base, 0));
        self.emit(ldx(Size::Dw, 0, 10, reg_slot(0)));
        // Registers other than the base; r0 stands in for it.
        let other = |r: Reg| if r == base { 0 } else { r };
        let other_operand = |o: Operand| match o {
            Operand::Reg(r) => Operand::Reg(other(r)),
            imm => imm,
        };
        for op in ops {
            match *op {
                ValueOp::Load {
                    size,
                    signed,
                    dst,
                    off,
                } => self.emit(Instruction::Load {
                    size,
                    signed: signed && size != Size::Dw,
                    dst: other(dst),
                    src: base,
                    off,
                }),
                ValueOp::Store { size, off, src } => self.emit(Instruction::Store {
                    size,
                    dst: base,
                    off,
                    src: other_operand(src),
                }),
                ValueOp::Atomic {
                    size,
                    op,
                    fetch,
                    src,
                    off,
                } => {
                    self.features.insert("atomic on a map value");
                    let insn = Instruction::Atomic {
                        size,
                        op,
                        fetch,
                        dst: base,
                        src: other(src),
                        off,
                    };
                    // Only the 32-bit cmpxchg precaution applies: a map value is no stack slot.
                    if size == Size::W && op == AtomicOp::CmpXchg {
                        self.emit(mov32_reg(0, 0));
                    }
                    self.emit(insn);
                }
                ValueOp::Alu(Instruction::Alu { wide, op, dst, src }) => {
                    self.emit(Instruction::Alu {
                        wide,
                        op,
                        dst: other(dst),
                        src: other_operand(src),
                    })
                }
                ValueOp::Alu(insn) => self.emit(insn),
            }
        }
        let (size, off) = last;
        self.emit(ldx(size, base, base, off));
        self.place(miss);
    }
}

/// Lays out a flat body of items (see [`super::body`]), each skip resolved to a slot offset; a
/// skip past the last item lands just after it.
pub(super) fn lay_out(items: &[Item]) -> Vec<Instruction> {
    let nodes: Vec<Node> = items.iter().cloned().map(Node::Basic).collect();
    let mut a = Asm::new();
    let end = a.label();
    a.seq(&nodes, end, 0);
    a.place(end);
    a.finish().0
}

/// Program `index` of an object: the harness around `body`, and the features it uses.
fn assemble(body: &[Node], index: usize) -> (Vec<Instruction>, BTreeSet<&'static str>) {
    let mut a = Asm::new();
    let (short, end, ret) = (a.label(), a.label(), a.label());
    // Prologue.
    a.emit(ldx(Size::W, PACKET_POINTER, 1, 0));
    a.emit(ldx(Size::W, 3, 1, 4));
    a.emit(mov64_reg(2, PACKET_POINTER));
    a.emit(add64(2, MIN_PACKET));
    a.jump_to(jmp_reg(Cond::Gt, 2, 3, 0), short);
    a.emit(stx(Size::Dw, 10, CTX_SLOT, 1));
    for off in (DUMP_START..0).step_by(8) {
        a.emit(st(Size::Dw, 10, off, 0));
    }
    for (i, &r) in SCALARS.iter().enumerate() {
        a.emit(ldx(Size::Dw, r, PACKET_POINTER, 8 * i as i16));
    }
    a.seq(body, end, 0);
    // Epilogue: registers into the register area, then everything into `out[index]`.
    a.place(end);
    for r in 1..=5 {
        a.emit(stx(Size::Dw, 10, reg_slot(r), r));
    }
    let early = a.early;
    a.place(early);
    for r in [0, 7, 8, 9] {
        a.emit(stx(Size::Dw, 10, reg_slot(r), r));
    }
    a.emit(st(Size::W, 10, OUT_KEY_SLOT, index as i32));
    a.map_arg(1, OUT_MAP);
    a.pointer_arg(2, Mem::Stack(OUT_KEY_SLOT));
    a.emit(call_helper(id::MAP_LOOKUP_ELEM));
    a.jump_to(jmp(Cond::Eq, 0, 0, 0), ret);
    for k in 0..DUMP_BYTES / 8 {
        a.emit(ldx(Size::Dw, 1, 10, DUMP_START + 8 * k));
        a.emit(stx(Size::Dw, 0, 8 * k, 1));
    }
    a.place(ret);
    a.emit(ldx(Size::Dw, 0, 10, reg_slot(0)));
    a.emit(Instruction::Exit);
    a.place(short);
    a.emit(mov64(0, 0));
    a.emit(Instruction::Exit);
    a.finish()
}

#[cfg(test)]
mod tests {
    use super::*;
    use linerate_bpf::insn::Imm64;
    use proptest::strategy::ValueTree;
    use proptest::test_runner::TestRunner;

    /// Generated objects decode, every jump stays inside its program, every map reference names
    /// one of the object's maps, and the features show up.
    #[test]
    fn generated_objects_are_well_formed() {
        let mut runner = TestRunner::deterministic();
        let mut seen = BTreeSet::new();
        for _ in 0..200 {
            let random = random_object(30).new_tree(&mut runner).unwrap().current();
            let object = random.object();
            assert!((2..=MAX_PROGRAMS).contains(&object.programs.len()));
            for program in &object.programs {
                let slots = program.insns.len();
                for (slot, insn) in program.decode().unwrap() {
                    if let Some(target) = insn.jump_target(slot) {
                        assert!((0..slots as i64).contains(&target), "{insn:?} at {slot}");
                    }
                    if let Instruction::LoadImm64 {
                        imm: Imm64::Map(map),
                        ..
                    } = insn
                    {
                        assert!((map as usize) < object.maps.len());
                    }
                }
            }
            seen.extend(random.features.iter().flatten().copied());
        }
        for feature in [
            "bounded loop",
            "nested loop",
            "backward jump",
            "tail_call",
            "map_lookup_elem (array)",
            "map_lookup_elem (hash)",
            "atomic on a map value",
            "xdp_adjust_head",
        ] {
            assert!(seen.contains(feature), "no program with {feature}");
        }
    }
}
