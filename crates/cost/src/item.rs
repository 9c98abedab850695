//! The cost items: the vocabulary shared by every model file, the calibrator and the classifier.
//!
//! An item is a class of instruction executions that a device performs at one cost: `alu64.add.imm`,
//! a conditional jump taken or not, a 4-byte load from the packet, a hash-map lookup with an 8-byte
//! key, a helper. Its key (the [`Display`](std::fmt::Display) form) is how model files name it.
//! [`universe`] lists every item a complete model must price, so that no instruction the
//! interpreter runs can be costed as a silent zero.

use linerate_bpf::facts::helper;
use std::fmt;

use linerate_bpf::insn::{AluOp, AtomicOp, Cond, Endian, Instruction, Operand, Size};
use linerate_bpf::program::MapType;

/// The memory region a load, store or atomic touches (the verifier keeps pointers in their region).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Region {
    /// Packet data between `data` and `data_end` (and the metadata before it).
    Packet,
    /// The program's stack (`r10` based).
    Stack,
    /// A value of a map, reached through a lookup's result.
    MapValue,
    /// The `xdp_md` context.
    Ctx,
    /// Global data (`.data`, `.rodata`, `.bss`): a map value reached through a 64-bit immediate.
    Global,
}

impl Region {
    /// Every region.
    pub const ALL: [Region; 5] = [
        Region::Packet,
        Region::Stack,
        Region::MapValue,
        Region::Ctx,
        Region::Global,
    ];

    /// The name used in item keys.
    pub fn name(self) -> &'static str {
        match self {
            Region::Packet => "packet",
            Region::Stack => "stack",
            Region::MapValue => "map_value",
            Region::Ctx => "ctx",
            Region::Global => "global",
        }
    }

    /// Whether programs may store to and run atomics on the region (the context is read-only for
    /// XDP, and the verifier refuses atomics on packet memory).
    fn writable(self) -> bool {
        self != Region::Ctx
    }

    fn atomics(self) -> bool {
        matches!(self, Region::Stack | Region::MapValue | Region::Global)
    }
}

/// Width and signedness of a memory access.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Access {
    /// Access size.
    pub bytes: u8,
    /// Sign-extending load (`ldsx`, `-mcpu=v4`).
    pub signed: bool,
}

impl Access {
    /// An access of `size`, sign-extending when `signed`.
    pub fn new(size: Size, signed: bool) -> Access {
        Access {
            bytes: size.bytes() as u8,
            signed,
        }
    }

    fn unsigned_all() -> impl Iterator<Item = Access> {
        [1, 2, 4, 8].into_iter().map(|bytes| Access {
            bytes,
            signed: false,
        })
    }

    fn signed_all() -> impl Iterator<Item = Access> {
        [1, 2, 4].into_iter().map(|bytes| Access {
            bytes,
            signed: true,
        })
    }
}

impl fmt::Display for Access {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let sign = if self.signed { 's' } else { 'u' };
        write!(f, "{sign}{}", self.bytes as u32 * 8)
    }
}

/// Map operations through helpers 1–3.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum MapOp {
    Lookup,
    Update,
    Delete,
}

impl MapOp {
    /// The helper number implementing the operation.
    pub fn helper(self) -> u32 {
        match self {
            MapOp::Lookup => 1,
            MapOp::Update => 2,
            MapOp::Delete => 3,
        }
    }

    /// The operation of a helper number.
    pub fn of_helper(id: u32) -> Option<MapOp> {
        match id {
            helper::MAP_LOOKUP_ELEM => Some(MapOp::Lookup),
            helper::MAP_UPDATE_ELEM => Some(MapOp::Update),
            helper::MAP_DELETE_ELEM => Some(MapOp::Delete),
            _ => None,
        }
    }

    fn name(self) -> &'static str {
        match self {
            MapOp::Lookup => "lookup",
            MapOp::Update => "update",
            MapOp::Delete => "delete",
        }
    }

    /// Whether the operation succeeded, from its return value compared with 0: a lookup returns
    /// a pointer (NULL when the key is absent), an update or delete 0 or an error.
    pub fn succeeds_when_zero(self) -> bool {
        self != MapOp::Lookup
    }
}

/// Map types whose failing operations a model may price apart ([`Item::MapFailed`]): the hash
/// tables and the LPM trie, where a lookup that finds nothing, or an update or delete that is
/// refused, stops after hashing or walking, at a fraction of a success's cost. Array lookups are
/// inlined index checks, equally cheap either way.
pub const FAILURE_PRICED_MAP_TYPES: [MapType; 5] = [
    MapType::HASH,
    MapType::PERCPU_HASH,
    MapType::LRU_HASH,
    MapType::LRU_PERCPU_HASH,
    MapType::LPM_TRIE,
];

/// Map types whose operations models price. Programs using others get a clear error.
pub const COSTED_MAP_TYPES: [MapType; 7] = [
    MapType::ARRAY,
    MapType::PERCPU_ARRAY,
    MapType::HASH,
    MapType::PERCPU_HASH,
    MapType::LRU_HASH,
    MapType::LRU_PERCPU_HASH,
    MapType::LPM_TRIE,
];

/// Map types programs may only look up (and redirect to), whose lookups models price: the
/// verifier (`check_map_func_compatibility` in kernel/bpf/verifier.c) allows no helper but
/// `map_lookup_elem` and `redirect_map` on device maps and AF_XDP socket maps. CPU maps are
/// absent: the verifier allows only `redirect_map` on them ("Restrict bpf side of cpumap"), so a
/// program cannot look them up.
pub const LOOKUP_ONLY_MAP_TYPES: [MapType; 3] =
    [MapType::DEVMAP, MapType::DEVMAP_HASH, MapType::XSKMAP];

/// The map type whose prices operations on a map of `map_type` take: a map of maps is priced as
/// its storage, because a program can only look it up (the verifier refuses the other map
/// helpers on it) and the verifier inlines that lookup as its storage's lookup followed by one
/// load of the inner map's pointer (`array_of_map_gen_lookup` in kernel/bpf/arraymap.c,
/// `htab_of_map_gen_lookup` in kernel/bpf/hashtab.c). Every other type is priced as itself. A
/// model refuses maps of maps by marking their family ([`MAP_IN_MAP_FAMILIES`]) unsupported.
pub fn priced_as(map_type: MapType) -> MapType {
    match map_type {
        MapType::ARRAY_OF_MAPS => MapType::ARRAY,
        MapType::HASH_OF_MAPS => MapType::HASH,
        other => other,
    }
}

/// The lookup families of maps of maps, which a model may mark unsupported (a device that cannot
/// run them); without such an entry they take their storage's prices ([`priced_as`]).
pub const MAP_IN_MAP_FAMILIES: [(MapOp, MapType); 2] = [
    (MapOp::Lookup, MapType::ARRAY_OF_MAPS),
    (MapOp::Lookup, MapType::HASH_OF_MAPS),
];

/// Helpers with items of their own: the map operations (`map.<op>.<type>.k<size>`) and the tail
/// call (`tail_call`).
const OWN_ITEM_HELPERS: [u32; 4] = [
    helper::MAP_LOOKUP_ELEM,
    helper::MAP_UPDATE_ELEM,
    helper::MAP_DELETE_ELEM,
    helper::TAIL_CALL,
];

/// Helpers that call a callback, priced per call as `callback.<name>` besides their own item.
pub const CALLBACK_HELPERS: [u32; 2] = [helper::LOOP, helper::FOR_EACH_MAP_ELEM];

/// Helpers priced as `helper.<name>`: every helper the semantics gives a meaning to
/// ([`linerate_sem::helpers::SUPPORTED`]) but those with items of their own.
pub fn costed_helpers() -> impl Iterator<Item = u32> {
    linerate_sem::helpers::SUPPORTED
        .iter()
        .copied()
        .filter(|id| !OWN_ITEM_HELPERS.contains(id))
}

/// A class of instruction executions with one cost on a device.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Item {
    /// `alu32`/`alu64` operation; `imm` when the source is an immediate.
    Alu { wide: bool, op: AluOp, imm: bool },
    /// Byte swap of `bits` bits.
    Endian { kind: Endian, bits: u8 },
    /// 64-bit immediate load (constants, map and global-data addresses).
    LoadImm64,
    /// Load from a region.
    Load { region: Region, access: Access },
    /// Store (register or immediate source) to a region.
    Store { region: Region, bytes: u8 },
    /// Atomic read-modify-write on a region.
    Atomic {
        region: Region,
        op: AtomicOp,
        fetch: bool,
        bytes: u8,
    },
    /// Unconditional jump.
    Ja,
    /// Conditional jump, `taken` or falling through.
    Jump {
        wide: bool,
        cond: Cond,
        imm: bool,
        taken: bool,
    },
    /// `may_goto`, jumping (the loop budget is exhausted) or falling through.
    MayGoto { taken: bool },
    /// BPF-to-BPF call of a local function (the callee's instructions are costed separately).
    CallLocal,
    /// One call of a callback by the helper that takes it (`bpf_loop`, `bpf_for_each_map_elem`):
    /// the helper's work per call and the call and return (the callback's instructions are
    /// costed separately). By helper.
    Callback(u32),
    /// Return from a function.
    Exit,
    /// A helper call other than map operations and tail calls.
    Helper(u32),
    /// `bpf_map_{lookup,update,delete}_elem` on a map type with a key size.
    Map {
        op: MapOp,
        map_type: MapType,
        key_size: u32,
    },
    /// A map operation that fails: a lookup returning NULL, an update or delete returning an
    /// error. Optional in a model (only [`FAILURE_PRICED_MAP_TYPES`]); where the program tests
    /// the result, the call is charged this and the edge taken on success the rest
    /// (`crate::outcome`).
    MapFailed {
        op: MapOp,
        map_type: MapType,
        key_size: u32,
    },
    /// `bpf_tail_call` that jumps (the target program's cost is not included).
    TailCall,
    /// What a map helper call costs beyond its map operation where the verifier cannot bind the
    /// call site to one map (several maps reach it): the kernel then runs the generic helper,
    /// which dispatches through the map's operations table (an indirect call), instead of a
    /// direct call of the map type's operation or an inlined lookup. By helper.
    MapDispatch(u32),
}

fn alu_name(op: AluOp) -> String {
    match op {
        AluOp::Add => "add".into(),
        AluOp::Sub => "sub".into(),
        AluOp::Mul => "mul".into(),
        AluOp::Div => "div".into(),
        AluOp::SDiv => "sdiv".into(),
        AluOp::Or => "or".into(),
        AluOp::And => "and".into(),
        AluOp::Lsh => "lsh".into(),
        AluOp::Rsh => "rsh".into(),
        AluOp::Neg => "neg".into(),
        AluOp::Mod => "mod".into(),
        AluOp::SMod => "smod".into(),
        AluOp::Xor => "xor".into(),
        AluOp::Mov => "mov".into(),
        AluOp::MovSx(bits) => format!("movsx{bits}"),
        AluOp::Arsh => "arsh".into(),
    }
}

fn cond_name(cond: Cond) -> &'static str {
    match cond {
        Cond::Eq => "jeq",
        Cond::Gt => "jgt",
        Cond::Ge => "jge",
        Cond::Set => "jset",
        Cond::Ne => "jne",
        Cond::Sgt => "jsgt",
        Cond::Sge => "jsge",
        Cond::Lt => "jlt",
        Cond::Le => "jle",
        Cond::Slt => "jslt",
        Cond::Sle => "jsle",
    }
}

fn atomic_name(op: AtomicOp, fetch: bool) -> String {
    let base = match op {
        AtomicOp::Add => "add",
        AtomicOp::Or => "or",
        AtomicOp::And => "and",
        AtomicOp::Xor => "xor",
        AtomicOp::Xchg => return "xchg".into(),
        AtomicOp::CmpXchg => return "cmpxchg".into(),
    };
    if fetch {
        format!("fetch_{base}")
    } else {
        base.into()
    }
}

impl fmt::Display for Item {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            Item::Alu { wide, op, imm } => {
                let class = if wide { "alu64" } else { "alu32" };
                match op {
                    AluOp::Neg => write!(f, "{class}.neg"),
                    AluOp::MovSx(_) => write!(f, "{class}.{}", alu_name(op)),
                    _ => write!(
                        f,
                        "{class}.{}.{}",
                        alu_name(op),
                        if imm { "imm" } else { "reg" }
                    ),
                }
            }
            Item::Endian { kind, bits } => {
                let kind = match kind {
                    Endian::ToLe => "le",
                    Endian::ToBe => "be",
                    Endian::Swap => "swap",
                };
                write!(f, "endian.{kind}{bits}")
            }
            Item::LoadImm64 => f.write_str("ld_imm64"),
            Item::Load { region, access } => write!(f, "load.{}.{access}", region.name()),
            Item::Store { region, bytes } => {
                write!(f, "store.{}.u{}", region.name(), bytes as u32 * 8)
            }
            Item::Atomic {
                region,
                op,
                fetch,
                bytes,
            } => write!(
                f,
                "atomic.{}.{}.u{}",
                region.name(),
                atomic_name(op, fetch),
                bytes as u32 * 8
            ),
            Item::Ja => f.write_str("ja"),
            Item::Jump {
                wide,
                cond,
                imm,
                taken,
            } => write!(
                f,
                "{}.{}.{}.{}",
                if wide { "jmp64" } else { "jmp32" },
                cond_name(cond),
                if imm { "imm" } else { "reg" },
                if taken { "taken" } else { "not_taken" }
            ),
            Item::MayGoto { taken } => {
                write!(f, "may_goto.{}", if taken { "taken" } else { "not_taken" })
            }
            Item::CallLocal => f.write_str("call.local"),
            Item::Callback(id) => {
                write!(f, "callback.{}", linerate_bpf::helpers::helper_name(id))
            }
            Item::Exit => f.write_str("exit"),
            Item::Helper(id) => write!(f, "helper.{}", linerate_bpf::helpers::helper_name(id)),
            Item::Map {
                op,
                map_type,
                key_size,
            } => write!(f, "map.{}.{}.k{key_size}", op.name(), map_type.name()),
            Item::MapFailed {
                op,
                map_type,
                key_size,
            } => write!(f, "{}.k{key_size}", failed_family_key(op, map_type)),
            Item::TailCall => f.write_str("tail_call"),
            Item::MapDispatch(id) => {
                write!(f, "map.dispatch.{}", linerate_bpf::helpers::helper_name(id))
            }
        }
    }
}

impl Item {
    /// The item of an instruction that is priced on its own, the memory region of a load, store
    /// or atomic given: `None` for those without a region, and for jumps and calls (priced per
    /// edge or by what they call).
    pub fn of_instruction(insn: &Instruction, region: Option<Region>) -> Option<Item> {
        Some(match *insn {
            Instruction::Alu { wide, op, src, .. } => Item::Alu {
                wide,
                op,
                imm: matches!(src, Operand::Imm(_)) || op == AluOp::Neg,
            },
            Instruction::Endian { kind, bits, .. } => Item::Endian { kind, bits },
            Instruction::LoadImm64 { .. } => Item::LoadImm64,
            Instruction::Load { size, signed, .. } => Item::Load {
                region: region?,
                access: Access::new(size, signed),
            },
            Instruction::Store { size, .. } => Item::Store {
                region: region?,
                bytes: size.bytes() as u8,
            },
            Instruction::Atomic {
                size, op, fetch, ..
            } => Item::Atomic {
                region: region?,
                op,
                fetch,
                bytes: size.bytes() as u8,
            },
            Instruction::Ja { .. } => Item::Ja,
            Instruction::Exit => Item::Exit,
            _ => return None,
        })
    }

    /// A map operation's item on another map type (a map of maps is priced as its storage);
    /// other items unchanged.
    pub fn on_map_type(self, map_type: MapType) -> Item {
        match self {
            Item::Map { op, key_size, .. } => Item::Map {
                op,
                map_type,
                key_size,
            },
            Item::MapFailed { op, key_size, .. } => Item::MapFailed {
                op,
                map_type,
                key_size,
            },
            other => other,
        }
    }

    /// For map operations, the key without the key size (`map.lookup.hash`): a model prices a
    /// family at a few key sizes and [`crate::Model`] interpolates between them.
    pub fn family(&self) -> Option<String> {
        match *self {
            Item::Map { op, map_type, .. } => Some(family_key(op, map_type)),
            Item::MapFailed { op, map_type, .. } => Some(failed_family_key(op, map_type)),
            _ => None,
        }
    }
}

/// Every ALU operation valid for a width, with its operand kinds.
fn alu_items() -> Vec<Item> {
    let mut out = Vec::new();
    for wide in [false, true] {
        for op in AluOp::ALL {
            match op {
                AluOp::Neg => out.push(Item::Alu {
                    wide,
                    op,
                    imm: true,
                }),
                AluOp::MovSx(32) if !wide => {}
                AluOp::MovSx(_) => out.push(Item::Alu {
                    wide,
                    op,
                    imm: false,
                }),
                _ => {
                    for imm in [true, false] {
                        out.push(Item::Alu { wide, op, imm });
                    }
                }
            }
        }
    }
    out
}

/// Every item a complete model prices, except map operations, which are priced per family
/// ([`map_families`]) at key sizes of the model's choosing.
pub fn universe() -> Vec<Item> {
    let mut out = alu_items();
    for kind in [Endian::ToLe, Endian::ToBe, Endian::Swap] {
        for bits in [16, 32, 64] {
            out.push(Item::Endian { kind, bits });
        }
    }
    out.push(Item::LoadImm64);
    for region in Region::ALL {
        for access in Access::unsigned_all().chain(Access::signed_all()) {
            out.push(Item::Load { region, access });
        }
        if region.writable() {
            for bytes in [1, 2, 4, 8] {
                out.push(Item::Store { region, bytes });
            }
        }
        if region.atomics() {
            for bytes in [4, 8] {
                for op in AtomicOp::ALL {
                    let fetches: &[bool] = match op {
                        AtomicOp::Xchg | AtomicOp::CmpXchg => &[true],
                        _ => &[false, true],
                    };
                    for &fetch in fetches {
                        out.push(Item::Atomic {
                            region,
                            op,
                            fetch,
                            bytes,
                        });
                    }
                }
            }
        }
    }
    out.push(Item::Ja);
    for wide in [true, false] {
        for cond in Cond::ALL {
            for imm in [true, false] {
                for taken in [true, false] {
                    out.push(Item::Jump {
                        wide,
                        cond,
                        imm,
                        taken,
                    });
                }
            }
        }
    }
    out.push(Item::MayGoto { taken: true });
    out.push(Item::MayGoto { taken: false });
    out.push(Item::CallLocal);
    out.extend(CALLBACK_HELPERS.map(Item::Callback));
    out.push(Item::Exit);
    out.extend(costed_helpers().map(Item::Helper));
    out.push(Item::TailCall);
    out.extend(
        linerate_bpf::helpers::BOUND_TO_MAP_OPS
            .into_iter()
            .map(Item::MapDispatch),
    );
    out
}

/// The map-operation families (`map.lookup.hash`, ...) a complete model prices.
pub fn map_families() -> Vec<(MapOp, MapType)> {
    let mut out = Vec::new();
    for map_type in COSTED_MAP_TYPES {
        for op in [MapOp::Lookup, MapOp::Update, MapOp::Delete] {
            out.push((op, map_type));
        }
    }
    for map_type in LOOKUP_ONLY_MAP_TYPES {
        out.push((MapOp::Lookup, map_type));
    }
    out
}

/// The key of a map-operation family.
pub fn family_key(op: MapOp, map_type: MapType) -> String {
    format!("map.{}.{}", op.name(), map_type.name())
}

/// The failing map-operation families (`map.lookup_failed.hash`, ...) a model may price.
pub fn failed_families() -> Vec<(MapOp, MapType)> {
    FAILURE_PRICED_MAP_TYPES
        .into_iter()
        .flat_map(|t| [MapOp::Lookup, MapOp::Update, MapOp::Delete].map(|op| (op, t)))
        .collect()
}

/// The key of a failing map-operation family.
pub fn failed_family_key(op: MapOp, map_type: MapType) -> String {
    format!("map.{}_failed.{}", op.name(), map_type.name())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    #[test]
    fn keys_are_unique_and_readable() {
        let items = universe();
        let keys: HashSet<String> = items.iter().map(|i| i.to_string()).collect();
        assert_eq!(keys.len(), items.len(), "two items share a key");
        for key in [
            "alu64.add.imm",
            "alu32.movsx16",
            "alu64.neg",
            "endian.be16",
            "load.packet.u32",
            "load.map_value.s16",
            "store.stack.u64",
            "atomic.map_value.fetch_add.u64",
            "atomic.global.cmpxchg.u32",
            "jmp32.jsle.reg.not_taken",
            "helper.xdp_adjust_head",
            "tail_call",
        ] {
            assert!(keys.contains(key), "{key} missing");
        }
        assert!(!keys.contains("store.ctx.u32"));
        assert!(!keys.contains("atomic.packet.add.u32"));
        assert!(!keys.contains("alu32.movsx32"));
        let map = Item::Map {
            op: MapOp::Lookup,
            map_type: MapType::LPM_TRIE,
            key_size: 8,
        };
        assert_eq!(map.to_string(), "map.lookup.lpm_trie.k8");
        assert_eq!(map.family().as_deref(), Some("map.lookup.lpm_trie"));
    }
}
