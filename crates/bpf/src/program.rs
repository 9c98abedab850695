//! The program model: what an object file contains once read and linked.
//!
//! An [`Object`] holds loadable [`Program`]s and the [`MapDef`]s they reference. A program's
//! instructions are *linked*: the entry function first, then every BPF function it calls (directly
//! or transitively) appended after it with call offsets fixed up, and every map reference turned
//! into a 64-bit immediate load with `src_reg = BPF_PSEUDO_MAP_IDX` (map handle) or
//! `BPF_PSEUDO_MAP_IDX_VALUE` (address inside a global-data map) whose immediate is the index of the
//! map in [`Object::maps`]. This is exactly the form the kernel accepts together with an `fd_array`,
//! so the interpreter, the symbolic engine and the kernel loader all consume the same slots.

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
    pub const PERCPU_HASH: MapType = MapType(5);
    pub const PERCPU_ARRAY: MapType = MapType(6);
    pub const LRU_HASH: MapType = MapType(9);
    pub const LRU_PERCPU_HASH: MapType = MapType(10);
    pub const LPM_TRIE: MapType = MapType(11);
    pub const DEVMAP: MapType = MapType(14);
    pub const CPUMAP: MapType = MapType(16);
    pub const XSKMAP: MapType = MapType(17);
    pub const DEVMAP_HASH: MapType = MapType(25);

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

    /// Whether keys are indices `0..max_entries` (array-like maps).
    pub fn is_array_like(self) -> bool {
        matches!(
            self,
            MapType::ARRAY
                | MapType::PERCPU_ARRAY
                | MapType::PROG_ARRAY
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
        }
    }
}

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

    /// Decodes the linked slots, yielding `(slot index, instruction)` pairs.
    pub fn decode(&self) -> Result<Vec<(usize, Instruction)>, DecodeError> {
        decode_all(&self.insns)
    }

    /// Names of the sub-programs (every function but the entry).
    pub fn subprograms(&self) -> impl Iterator<Item = &str> {
        self.functions.iter().skip(1).map(|f| f.name.as_str())
    }

    /// The source line that slot `index` was compiled from: the last `line_info` record at or
    /// before it within its function.
    pub fn line_at(&self, index: usize) -> Option<&SourceLine> {
        let start = self.function_at(index).map_or(0, |f| f.start);
        let pos = self.line_info.partition_point(|l| l.slot <= index);
        let line = self.line_info.get(pos.checked_sub(1)?)?;
        (line.slot >= start).then_some(&line.source)
    }

    /// The function containing slot `index`.
    pub fn function_at(&self, index: usize) -> Option<&Function> {
        self.functions
            .iter()
            .find(|f| (f.start..f.start + f.len).contains(&index))
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
    /// The key and value type ids of BTF-defined map `name` (the pointees of its `key` and
    /// `value` members in `.maps`), for `BPF_MAP_CREATE`'s `btf_key_type_id` and
    /// `btf_value_type_id`; for a global-data section, `(0, its DATASEC)` as libbpf gives them.
    pub fn map_type_ids(&self, map: &MapDef) -> Option<(TypeId, TypeId)> {
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
}
