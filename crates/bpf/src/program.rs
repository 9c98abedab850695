//! The program model: what an object file contains once read and linked.
//!
//! An [`Object`] holds loadable [`Program`]s and the [`MapDef`]s they reference. A program's
//! instructions are *linked*: the entry function first, then every BPF function it calls (directly
//! or transitively) appended after it with call offsets fixed up, and every map reference turned
//! into a 64-bit immediate load with `src_reg = BPF_PSEUDO_MAP_IDX` (map handle) or
//! `BPF_PSEUDO_MAP_IDX_VALUE` (address inside a global-data map) whose immediate is the index of the
//! map in [`Object::maps`]. This is exactly the form the kernel accepts together with an `fd_array`,
//! so the interpreter, the symbolic engine and the kernel loader all consume the same slots.
//!
//! Kernel function (kfunc) calls stay symbolic: a call slot with `src_reg =
//! BPF_PSEUDO_KFUNC_CALL` has `off = 0` and, as its immediate, the index of the called function in
//! [`Object::kfuncs`] (a [`Kfunc`]: its name, its `FUNC` in the object's BTF, whether it is
//! `__weak`). The kernel wants the function's BTF id in the running kernel instead, and in `off`
//! the `fd_array` slot of the module BTF that holds it; the kernel loader resolves names to ids
//! when it loads, so reading an object never depends on the kernel it runs on. Extern `__kconfig`
//! variables, by contrast, become ordinary loads from the read-only `.kconfig` global-data map
//! ([`MapOrigin::GlobalData`]), whose initial value reading computed from the running kernel (see
//! [`crate::kconfig`]), so every engine sees the same values.

use crate::btf::{Btf, Kind, TypeId};
use crate::btf_ext::{BtfExt, SourceLine};
use crate::insn::{decode_all, encode_all, DecodeError, Instruction, RawInsn};

/// A kernel map type (`enum bpf_map_type`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct MapType(pub u32);

impl MapType {
    pub const HASH: MapType = MapType(1);
    pub const ARRAY: MapType = MapType(2);
    pub const PROG_ARRAY: MapType = MapType(3);
    pub const PERF_EVENT_ARRAY: MapType = MapType(4);
    pub const PERCPU_HASH: MapType = MapType(5);
    pub const PERCPU_ARRAY: MapType = MapType(6);
    pub const LRU_HASH: MapType = MapType(9);
    pub const LRU_PERCPU_HASH: MapType = MapType(10);
    pub const LPM_TRIE: MapType = MapType(11);
    pub const ARRAY_OF_MAPS: MapType = MapType(12);
    pub const HASH_OF_MAPS: MapType = MapType(13);
    pub const DEVMAP: MapType = MapType(14);
    pub const CPUMAP: MapType = MapType(16);
    pub const XSKMAP: MapType = MapType(17);
    pub const QUEUE: MapType = MapType(22);
    pub const STACK: MapType = MapType(23);
    pub const DEVMAP_HASH: MapType = MapType(25);
    pub const RINGBUF: MapType = MapType(27);

    const NAMES: &'static [&'static str] = &[
        "unspec",
        "hash",
        "array",
        "prog_array",
        "perf_event_array",
        "percpu_hash",
        "percpu_array",
        "stack_trace",
        "cgroup_array",
        "lru_hash",
        "lru_percpu_hash",
        "lpm_trie",
        "array_of_maps",
        "hash_of_maps",
        "devmap",
        "sockmap",
        "cpumap",
        "xskmap",
        "sockhash",
        "cgroup_storage",
        "reuseport_sockarray",
        "percpu_cgroup_storage",
        "queue",
        "stack",
        "sk_storage",
        "devmap_hash",
        "struct_ops",
        "ringbuf",
        "inode_storage",
        "task_storage",
        "bloom_filter",
        "user_ringbuf",
        "cgrp_storage",
    ];

    /// The kernel's name for this type, lower case without the `BPF_MAP_TYPE_` prefix.
    pub fn name(self) -> &'static str {
        Self::NAMES
            .get(self.0 as usize)
            .copied()
            .unwrap_or("unknown")
    }

    /// The type with this name (as printed by [`MapType::name`]).
    pub fn from_name(name: &str) -> Option<MapType> {
        Self::NAMES
            .iter()
            .position(|n| *n == name)
            .map(|i| MapType(i as u32))
    }

    /// Whether values are per CPU.
    pub fn is_percpu(self) -> bool {
        matches!(
            self,
            MapType::PERCPU_HASH | MapType::PERCPU_ARRAY | MapType::LRU_PERCPU_HASH
        )
    }

    /// Whether values are maps (`ARRAY_OF_MAPS`, `HASH_OF_MAPS`): see [`InnerMaps`].
    pub fn is_map_in_map(self) -> bool {
        matches!(self, MapType::ARRAY_OF_MAPS | MapType::HASH_OF_MAPS)
    }

    /// Whether the map carries records from programs to user space (ring buffers, perf event
    /// arrays): it has no entries to list or seed, and a run's output includes its records.
    pub fn is_record_output(self) -> bool {
        matches!(self, MapType::RINGBUF | MapType::PERF_EVENT_ARRAY)
    }

    /// Whether the map is keyless, reached through `bpf_map_push/pop/peek_elem`.
    pub fn is_queue(self) -> bool {
        matches!(self, MapType::QUEUE | MapType::STACK)
    }

    /// Whether the map is one of the kernel's hash tables (`kernel/bpf/hashtab.c`) that
    /// `bpf_for_each_map_elem` walks bucket by bucket: plain, per-CPU and LRU hash maps.
    pub fn is_iterable_hash(self) -> bool {
        matches!(
            self,
            MapType::HASH | MapType::PERCPU_HASH | MapType::LRU_HASH | MapType::LRU_PERCPU_HASH
        )
    }

    /// Whether updating an existing key rewrites its value in place rather than linking a new
    /// element at the head of its bucket and unlinking the old one: the per-CPU hash maps
    /// (`kernel/bpf/hashtab.c`, `__htab_percpu_map_update_elem`,
    /// `__htab_lru_percpu_map_update_elem`). Visible as the order `bpf_for_each_map_elem` visits.
    pub fn updates_in_place(self) -> bool {
        matches!(self, MapType::PERCPU_HASH | MapType::LRU_PERCPU_HASH)
    }

    /// Whether keys are indices `0..max_entries` (array-like maps).
    pub fn is_array_like(self) -> bool {
        matches!(
            self,
            MapType::ARRAY
                | MapType::PERCPU_ARRAY
                | MapType::PROG_ARRAY
                | MapType::ARRAY_OF_MAPS
                | MapType::DEVMAP
                | MapType::CPUMAP
                | MapType::XSKMAP
        )
    }
}

/// Where a map definition came from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum MapOrigin {
    /// A BTF-defined map in the `.maps` section.
    Btf,
    /// A legacy `struct bpf_map_def` in a `maps` section.
    Legacy,
    /// A global data section (`.rodata`, `.data`, `.bss` and their suffixed variants), which is an
    /// array map with one element holding the whole section.
    GlobalData { section: String, read_only: bool },
}

/// A map the object defines.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MapDef {
    /// The symbol name (for global data, the section name).
    pub name: String,
    pub map_type: MapType,
    pub key_size: u32,
    pub value_size: u32,
    pub max_entries: u32,
    pub flags: u32,
    pub origin: MapOrigin,
    /// Initial value of the single element of a global data map (`.bss` is all zeros).
    pub initial_value: Option<Vec<u8>>,
    /// Initial program-array slots declared with `.values = { [slot] = &prog }`: `(slot, index of
    /// the program in `Object::programs`)`.
    pub initial_programs: Vec<(u32, usize)>,
    /// For a map-in-map (`ARRAY_OF_MAPS`, `HASH_OF_MAPS`) with its inner template declared in
    /// BTF: the template and the statically placed inner maps.
    pub inner: Option<Box<InnerMaps>>,
    /// Byte offset in the value of its `struct bpf_spin_lock`, where the value's BTF type has
    /// one ([`ObjectBtf::spin_lock_offset`]). The kernel never copies the lock's 4 bytes in or
    /// out of the map (`copy_map_value` skips them, user-space reads see zeros) and accepts
    /// `BPF_F_LOCK` updates only on such maps.
    pub spin_lock: Option<u32>,
}

/// The inner side of a map-in-map (`BPF_MAP_TYPE_ARRAY_OF_MAPS` / `HASH_OF_MAPS`).
///
/// The model: every inner map is an ordinary [`MapDef`] of [`Object::maps`] (so every engine
/// creates, seeds and reads it like any map); an outer map's value is *which* inner map sits at a
/// key, written as the little-endian `u32` index of that map in [`Object::maps`] wherever map
/// contents are data (seeds, read-back contents; the kernel stores a map there, which user space
/// writes as a file descriptor and reads back as a map id). A program's lookup in an outer map
/// yields the inner map itself, usable as the map argument of the next map helper call.
///
/// Declared as libbpf reads it:
/// ```c
/// struct inner { __uint(type, BPF_MAP_TYPE_ARRAY); __uint(max_entries, 4); ... };
/// struct inner pool_a SEC(".maps");
/// struct {
///     __uint(type, BPF_MAP_TYPE_ARRAY_OF_MAPS);
///     __uint(max_entries, 8);
///     __type(key, __u32);
///     __array(values, struct inner);
/// } outer SEC(".maps") = { .values = { [3] = &pool_a } };
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct InnerMaps {
    /// The inner map template (`__array(values, struct inner)`), named `OUTER.inner` as libbpf
    /// names it. It is not a map of the object: the kernel needs one map like it when creating
    /// the outer map (`inner_map_fd`) to learn the type, sizes and flags every inner map must
    /// have.
    pub template: MapDef,
    /// Slots initialised with `.values = { [key] = &inner }`: `(key, index of the inner map in
    /// Object::maps)`, sorted. The key is the slot number as a `u32`, for hash maps of maps too
    /// (as libbpf writes them).
    pub initial: Vec<(u32, usize)>,
}

impl MapDef {
    /// A BTF-defined map (`SEC(".maps")`) with no flags and no initial contents, as a test or a
    /// generated object declares one.
    pub fn new(
        name: &str,
        map_type: MapType,
        key_size: u32,
        value_size: u32,
        max_entries: u32,
    ) -> MapDef {
        MapDef {
            name: name.into(),
            map_type,
            key_size,
            value_size,
            max_entries,
            flags: 0,
            origin: MapOrigin::Btf,
            initial_value: None,
            initial_programs: Vec::new(),
            inner: None,
            spin_lock: None,
        }
    }
}

impl InnerMaps {
    /// Why the kernel would refuse `inner` as an inner map of an outer map with this template,
    /// or `None` where it accepts it: type, key and value sizes and flags must equal the
    /// template's (`bpf_map_meta_equal`, kernel/bpf/map_in_map.c), and for arrays the number of
    /// entries too unless the template has `BPF_F_INNER_MAP` (`array_map_meta_equal`,
    /// kernel/bpf/arraymap.c); a map-in-map is never an inner map (`bpf_map_meta_alloc`).
    pub fn mismatch(&self, inner: &MapDef) -> Option<String> {
        let t = &self.template;
        let differs = |what: &str, want: String, got: String| {
            Some(format!(
                "`{}` has {what} {got}, but the inner map template `{}` has {want}",
                inner.name, t.name
            ))
        };
        if inner.map_type.is_map_in_map() {
            return Some(format!(
                "`{}` is a {} itself (one level of maps in maps only)",
                inner.name,
                inner.map_type.name()
            ));
        }
        if inner.map_type != t.map_type {
            return differs(
                "type",
                t.map_type.name().into(),
                inner.map_type.name().into(),
            );
        }
        if inner.key_size != t.key_size {
            return differs(
                "key size",
                t.key_size.to_string(),
                inner.key_size.to_string(),
            );
        }
        if inner.value_size != t.value_size {
            return differs(
                "value size",
                t.value_size.to_string(),
                inner.value_size.to_string(),
            );
        }
        if inner.flags != t.flags {
            return differs(
                "flags",
                format!("{:#x}", t.flags),
                format!("{:#x}", inner.flags),
            );
        }
        let array = matches!(t.map_type, MapType::ARRAY | MapType::PERCPU_ARRAY);
        if array && t.flags & F_INNER_MAP == 0 && inner.max_entries != t.max_entries {
            return differs(
                "max_entries",
                t.max_entries.to_string(),
                inner.max_entries.to_string(),
            );
        }
        None
    }
}

/// `BPF_F_INNER_MAP` (include/uapi/linux/bpf.h): an inner array template whose maps may have any
/// number of entries.
pub const F_INNER_MAP: u32 = 1 << 12;

/// A BPF function inside a linked program.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Function {
    pub name: String,
    /// First slot of the function in [`Program::insns`].
    pub start: usize,
    /// Number of slots.
    pub len: usize,
}

/// The BTF `FUNC` type of the function starting at a linked slot (the kernel's
/// `struct bpf_func_info`, its `insn_off` counted in slots).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FuncInfo {
    /// First slot of the function in [`Program::insns`].
    pub slot: usize,
    /// The function's `FUNC` type in the object's BTF ([`Object::btf`]).
    pub type_id: TypeId,
}

/// The source line of the instructions from a linked slot on (the kernel's
/// `struct bpf_line_info`, its `insn_off` counted in slots).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LineInfo {
    /// The slot in [`Program::insns`] where the line starts.
    pub slot: usize,
    /// File, line, column and source text.
    pub source: SourceLine,
}

/// A loadable program, linked (see the module documentation).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Program {
    /// Name of the entry function.
    pub name: String,
    /// ELF section the entry function lives in (`xdp`, `xdp_prog`, `.text`, ...).
    pub section: String,
    /// Linked instruction slots.
    pub insns: Vec<RawInsn>,
    /// The entry function first, then the sub-programs appended by linking.
    pub functions: Vec<Function>,
    /// One record per function, in slot order, from the object's `.BTF.ext`; empty when the
    /// object has none or it does not cover every function (the kernel wants all or none).
    pub func_info: Vec<FuncInfo>,
    /// Source lines in slot order, from the object's `.BTF.ext` (empty without one).
    pub line_info: Vec<LineInfo>,
}

impl Program {
    /// A linked program of one function `name` (no sub-programs) in ELF section `section`, its
    /// slots the encoding of `insns`: how hand-written and generated programs become loadable.
    pub fn from_instructions(name: &str, section: &str, insns: &[Instruction]) -> Program {
        let insns = encode_all(insns);
        Program {
            name: name.into(),
            section: section.into(),
            functions: vec![Function {
                name: name.into(),
                start: 0,
                len: insns.len(),
            }],
            insns,
            func_info: Vec::new(),
            line_info: Vec::new(),
        }
    }

    /// Whether the program is frags-aware (multi-buffer XDP): its section is `xdp.frags` or
    /// `xdp.frags/...` (libbpf's `SEC_XDP_FRAGS` sections in `tools/lib/bpf/libbpf.c`, plus the
    /// older `xdp_frags` spelling), for which a loader sets `BPF_F_XDP_HAS_FRAGS`. The flag
    /// decides whether the program may be attached where packets arrive in fragments;
    /// `BPF_PROG_TEST_RUN` builds fragments for a long packet either way.
    pub fn has_frags(&self) -> bool {
        ["xdp.frags", "xdp_frags"].iter().any(|prefix| {
            self.section
                .strip_prefix(prefix)
                .is_some_and(|rest| rest.is_empty() || rest.starts_with('/'))
        })
    }

    /// Decodes the linked slots, yielding `(slot index, instruction)` pairs.
    pub fn decode(&self) -> Result<Vec<(usize, Instruction)>, DecodeError> {
        decode_all(&self.insns)
    }

    /// Names of the sub-programs (every function but the entry).
    pub fn subprograms(&self) -> impl Iterator<Item = &str> {
        self.functions.iter().skip(1).map(|f| f.name.as_str())
    }

    /// The source line that slot `index` was compiled from: the last `line_info` record at or
    /// before it within its function. `None` also where that record says line 0, which compilers
    /// give code of no one line (merged tails, spills).
    pub fn line_at(&self, index: usize) -> Option<&SourceLine> {
        let start = self.function_at(index).map_or(0, |f| f.start);
        let pos = self.line_info.partition_point(|l| l.slot <= index);
        let line = self.line_info.get(pos.checked_sub(1)?)?;
        (line.slot >= start && line.source.line != 0).then_some(&line.source)
    }

    /// The function containing slot `index`.
    pub fn function_at(&self, index: usize) -> Option<&Function> {
        self.functions
            .iter()
            .find(|f| (f.start..f.start + f.len).contains(&index))
    }
}

/// A kernel function the object calls (an `extern ... __ksym` function).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Kfunc {
    /// The function's name, as the kernel's BTF names it.
    pub name: String,
    /// The extern `FUNC` declaring it in the object's `.BTF`, where the object has one.
    pub btf_func: Option<u32>,
    /// Declared `__weak`: an object may load on a kernel that lacks it, as long as the calls
    /// are unreachable (libbpf turns them into calls the verifier rejects only if reached).
    pub weak: bool,
}

impl Kfunc {
    /// A non-weak kfunc named `name` without BTF, as a test or a generated object declares one.
    pub fn new(name: &str) -> Kfunc {
        Kfunc {
            name: name.into(),
            btf_func: None,
            weak: false,
        }
    }
}

/// A read and linked object file.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct Object {
    /// File name without directory and extension.
    pub name: String,
    pub programs: Vec<Program>,
    pub maps: Vec<MapDef>,
    /// Content of the `license` section, if any.
    pub license: Option<String>,
    /// The kernel functions kfunc call slots refer to by index (see the module documentation).
    pub kfuncs: Vec<Kfunc>,
    /// The object's BTF and `.BTF.ext` records, when it has a `.BTF` section that parses.
    pub btf: Option<ObjectBtf>,
}

/// An object's type information: its `.BTF` and what `.BTF.ext` says of its sections.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ObjectBtf {
    /// The `.BTF` section as read.
    pub btf: Btf,
    /// Every `.BTF.ext` record, section-relative (programs carry theirs remapped to linked slots
    /// in [`Program::func_info`] and [`Program::line_info`]); empty without `.BTF.ext`.
    pub ext: BtfExt,
    /// Why `.BTF.ext` could not be read, when it could not (the records are then empty).
    pub ext_error: Option<String>,
    /// `.BTF` fixed up for `BPF_BTF_LOAD` ([`Btf::fixed_for_kernel`]), or why it cannot be; the
    /// kernel loader loads without BTF then.
    pub kernel_bytes: Result<Vec<u8>, String>,
}

impl Default for ObjectBtf {
    fn default() -> ObjectBtf {
        ObjectBtf {
            btf: Btf::default(),
            ext: BtfExt::default(),
            ext_error: None,
            kernel_bytes: Err("no BTF".into()),
        }
    }
}

impl ObjectBtf {
    /// `BPF_MAP_TYPE_` perf_event_array, stack_trace, cgroup_array, array_of_maps, hash_of_maps,
    /// devmap, sockmap, cpumap, xskmap, sockhash, queue, stack and devmap_hash
    /// (include/uapi/linux/bpf.h), which refuse BTF key and value types (`ENOTSUPP`).
    pub(crate) const UNTYPED_MAPS: [u32; 13] = [4, 7, 8, 12, 13, 14, 15, 16, 17, 18, 22, 23, 25];

    /// The key and value type ids of BTF-defined map `name` (the pointees of its `key` and
    /// `value` members in `.maps`), for `BPF_MAP_CREATE`'s `btf_key_type_id` and
    /// `btf_value_type_id`; for a global-data section, `(0, its DATASEC)` as libbpf gives them.
    /// `None` for map types whose keys and values the kernel types itself (file descriptors,
    /// stack traces, queues: libbpf's `bpf_object__create_map` gives them no BTF either).
    pub fn map_type_ids(&self, map: &MapDef) -> Option<(TypeId, TypeId)> {
        if Self::UNTYPED_MAPS.contains(&map.map_type.0) {
            return None;
        }
        let btf = &self.btf;
        if let MapOrigin::GlobalData { section, .. } = &map.origin {
            return btf.find_datasec(section).map(|(id, _)| (0, id));
        }
        if map.origin != MapOrigin::Btf {
            return None;
        }
        let (_, maps) = btf.find_datasec(".maps")?;
        let Kind::Datasec { vars, .. } = &maps.kind else {
            return None;
        };
        let def = vars.iter().find_map(|v| {
            let var = btf.get(v.type_id)?;
            let Kind::Var { type_id, .. } = var.kind else {
                return None;
            };
            (btf.name(var).ok()? == map.name).then_some(type_id)
        })?;
        let (_, def) = btf.skip_mods_and_typedefs(def).ok()?;
        let member = |wanted: &str| {
            let m = def?
                .members()
                .iter()
                .find(|m| btf.str_at(m.name_off).is_ok_and(|n| n == wanted))?;
            match btf.skip_mods_and_typedefs(m.type_id).ok()?.1?.kind {
                Kind::Ptr(target) => Some(target),
                _ => None,
            }
        };
        Some((member("key")?, member("value")?))
    }

    /// Byte offset of the `struct bpf_spin_lock` in map `map`'s value type: a member of that
    /// struct type, at the top level or inside nested structs (the kernel's `btf_find_field`,
    /// kernel/bpf/btf.c, looks for special fields by their struct names). `None` where the value
    /// has no BTF type or no lock.
    pub fn spin_lock_offset(&self, map: &MapDef) -> Option<u32> {
        let (_, value) = self.map_type_ids(map)?;
        if value == 0 || matches!(map.origin, MapOrigin::GlobalData { .. }) {
            return None;
        }
        self.find_spin_lock(value, 0, 0)
    }

    fn find_spin_lock(&self, id: TypeId, base_bits: u32, depth: u32) -> Option<u32> {
        // Nesting deeper than this is no value type a program declares.
        const MAX_DEPTH: u32 = 8;
        let btf = &self.btf;
        let (_, ty) = btf.skip_mods_and_typedefs(id).ok()?;
        let ty = ty?;
        if !matches!(ty.kind, Kind::Struct { .. }) || depth > MAX_DEPTH {
            return None;
        }
        if depth > 0 && btf.name(ty).is_ok_and(|n| n == "bpf_spin_lock") {
            return Some(base_bits / 8);
        }
        ty.members().iter().find_map(|m| {
            let bits = base_bits.checked_add(m.bit_offset)?;
            self.find_spin_lock(m.type_id, bits, depth + 1)
        })
    }
}

impl Object {
    /// An object named `name` holding `programs` and `maps`, under the `GPL` license (which the
    /// kernel demands of programs that call GPL-only helpers).
    pub fn with_programs(name: &str, programs: Vec<Program>, maps: Vec<MapDef>) -> Object {
        Object {
            name: name.into(),
            programs,
            maps,
            license: Some("GPL".into()),
            kfuncs: Vec::new(),
            btf: None,
        }
    }

    /// An object named `name` holding one XDP program, also named `name`, of `insns` (see
    /// [`Program::from_instructions`] and [`Object::with_programs`]), beside `maps`.
    pub fn single(name: &str, insns: &[Instruction], maps: Vec<MapDef>) -> Object {
        let program = Program::from_instructions(name, "xdp", insns);
        Object::with_programs(name, vec![program], maps)
    }

    /// The program with this entry-function name, or with this section name.
    pub fn program(&self, name: &str) -> Option<&Program> {
        self.programs
            .iter()
            .find(|p| p.name == name)
            .or_else(|| self.programs.iter().find(|p| p.section == name))
    }

    /// The index of the map with this name.
    pub fn map_index(&self, name: &str) -> Option<usize> {
        self.maps.iter().position(|m| m.name == name)
    }

    /// The kfunc a kfunc call slot with immediate `imm` calls.
    pub fn kfunc(&self, imm: i32) -> Option<&Kfunc> {
        usize::try_from(imm).ok().and_then(|i| self.kfuncs.get(i))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::insn::build::{exit, ld_map, mov64};

    #[test]
    fn builders_make_a_loadable_one_function_object() {
        let insns = [ld_map(1, 0), mov64(0, 2), exit()];
        let program = Program::from_instructions("pass", "xdp", &insns);
        assert_eq!(program.insns, encode_all(&insns));
        assert_eq!(
            program.functions,
            vec![Function {
                name: "pass".into(),
                start: 0,
                len: 4,
            }]
        );
        assert_eq!(program.subprograms().count(), 0);
        let map = MapDef::new("counts", MapType::ARRAY, 4, 8, 16);
        assert_eq!(
            (map.key_size, map.value_size, map.max_entries, map.flags),
            (4, 8, 16, 0)
        );
        assert_eq!(map.origin, MapOrigin::Btf);
        assert!(map.initial_value.is_none() && map.initial_programs.is_empty());
        let object = Object::with_programs("t", vec![program.clone()], vec![map.clone()]);
        assert_eq!(object.program("xdp"), Some(&program));
        assert_eq!(object.map_index("counts"), Some(0));
        assert_eq!(object.license.as_deref(), Some("GPL"));
        let single = Object::single("pass", &insns, vec![map]);
        assert_eq!(
            single,
            Object {
                name: "pass".into(),
                ..object
            }
        );
    }

    #[test]
    fn line_zero_is_no_source_line() {
        let mut program = Program::from_instructions("pass", "xdp", &[mov64(0, 2), exit()]);
        let at = |slot, line| LineInfo {
            slot,
            source: SourceLine {
                file_name_off: 0,
                line_off: 0,
                file: "pass.c".into(),
                text: String::new(),
                line,
                column: 0,
            },
        };
        program.line_info = vec![at(0, 7), at(1, 0)];
        assert_eq!(program.line_at(0).map(|l| l.line), Some(7));
        assert_eq!(program.line_at(1), None);
    }
}
