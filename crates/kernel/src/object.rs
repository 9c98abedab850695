//! Loading a linked [`Object`] into the kernel: maps, programs, program-array slots, and the map
//! operations tests and the CLI need afterwards.
//!
//! Maps are created in [`Object::maps`] order and their file descriptors passed to every
//! `BPF_PROG_LOAD` as `fd_array`, so the linked instructions' `BPF_PSEUDO_MAP_IDX` /
//! `BPF_PSEUDO_MAP_IDX_VALUE` immediates (map indices) are resolved by the kernel itself (Linux
//! 5.14+). kfunc calls get their callee's kernel BTF id first ([`crate::kbtf`]), and the fds of
//! the module BTF that defines them go after the map fds in `fd_array`. The object's
//! BTF, when it has one the kernel accepts, goes with its maps and programs (see
//! [`crate::btf`]); objects without it (legacy `maps` sections, which libbpf 1.x refuses) load
//! from their plain definitions.

use std::ffi::CString;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, FromRawFd, OwnedFd};
use std::sync::{Mutex, OnceLock};

use linerate_bpf::program::{MapOrigin, MapType};
use linerate_bpf::{MapDef, Object, Program};

use crate::btf::ObjectBtfFd;
use crate::error::KernelError;
use crate::map_in_map;
use crate::readback::Mapping;
use crate::sys::{self, Cmd, Errno};

/// Initial verifier log buffer size when a program must be re-loaded to obtain its log.
const LOG_INITIAL: usize = 1 << 16;
/// Largest verifier log buffer tried.
const LOG_MAX: usize = 16 << 20;

/// The `(key, value)` pairs of a map, as [`LoadedObject::entries`] returns them.
pub type MapEntries = Vec<(Vec<u8>, Vec<u8>)>;

/// A map created in the kernel.
#[derive(Debug)]
pub(crate) struct LoadedMap {
    pub(crate) def: MapDef,
    pub(crate) fd: OwnedFd,
    /// The kernel's id of the map, by which maps of maps name their inner maps.
    pub(crate) id: u32,
    /// The values of a `BPF_F_MMAPABLE` array, mapped read-only for [`LoadedObject::contents`].
    pub(crate) mapping: Option<Mapping>,
}

/// A program loaded into the kernel.
#[derive(Debug)]
struct LoadedProgram {
    fd: OwnedFd,
    id: u32,
}

/// A program of the object, loaded on first use (see [`LoadedObject::load_program`]).
#[derive(Debug)]
struct ProgramSlot {
    def: Program,
    loaded: OnceLock<Result<LoadedProgram, KernelError>>,
}

/// An object whose maps and programs live in the kernel. Dropping it closes every file
/// descriptor, which frees the kernel objects (nothing is pinned or attached).
///
/// Programs are loaded on first use ([`LoadedObject::load_program`], or a test run, or placing
/// one in a program array), so an object holding tracepoint, fentry or TC programs beside its XDP
/// programs, or an XDP program the verifier refuses, costs nothing and fails nothing until that
/// program itself is asked for. The first load also writes the program arrays' declared slots,
/// loading the programs they name (a tail call may reach any of them).
#[derive(Debug)]
pub struct LoadedObject {
    maps: Vec<LoadedMap>,
    programs: Vec<ProgramSlot>,
    license: CString,
    /// Whether the program arrays' initial slots were written (see `fill_prog_arrays`).
    prog_arrays_filled: Mutex<Option<Result<(), KernelError>>>,
    possible_cpus: usize,
    /// The object's BTF in the kernel, for the programs loaded later.
    btf: ObjectBtfFd,
    /// The kfuncs the programs call, resolved to the running kernel's BTF ids at load.
    kfuncs: Vec<linerate_bpf::Kfunc>,
    /// Readers of the ring buffers and perf event arrays ([`crate::records`]).
    records: Vec<crate::records::Reader>,
}

/// Creates every map of `obj` in the kernel and writes global data; programs are loaded when
/// first used (see [`LoadedObject`]).
///
/// Fails with [`KernelError::MapCreate`] when a map cannot be created and with
/// [`KernelError::Syscall`] when initialising global data fails.
pub fn load_object(obj: &Object) -> Result<LoadedObject, KernelError> {
    load_object_sharing(obj, &[])
}

/// [`load_object`], except that each map `(index, fd)` of `shared` is not created: the object
/// uses that existing map (another object's, through a duplicate of its descriptor), as it is,
/// so that the object's programs read and write the other object's map. A shared map keeps its
/// contents (no global data is written); share plain maps only (a ring buffer would get a second
/// reader).
pub fn load_object_sharing(
    obj: &Object,
    shared: &[(usize, BorrowedFd<'_>)],
) -> Result<LoadedObject, KernelError> {
    let possible_cpus = crate::possible_cpus()?;
    let btf = ObjectBtfFd::load(obj);
    let mut maps = Vec::with_capacity(obj.maps.len());
    for (index, def) in obj.maps.iter().enumerate() {
        let existing = shared.iter().find(|(i, _)| *i == index).map(|(_, fd)| fd);
        let (fd, mmapable) = match existing {
            Some(fd) => (
                fd.try_clone_to_owned().map_err(|e| {
                    KernelError::syscall(
                        format!("dup of the shared map `{}`", def.name),
                        Errno(e.raw_os_error().unwrap_or(0)),
                    )
                })?,
                false,
            ),
            None => create_map(def, &btf)?,
        };
        let mapping = mmapable.then(|| Mapping::new(fd.as_fd(), def)).flatten();
        let id = map_in_map::map_id(&fd).map_err(|errno| {
            KernelError::syscall(
                format!("{} for map `{}`", Cmd::ObjGetInfoByFd, def.name),
                errno,
            )
        })?;
        maps.push(LoadedMap {
            def: def.clone(),
            fd,
            id,
            mapping,
        });
        if let Some(map) = maps.last().filter(|_| existing.is_none()) {
            init_global_data(map)?;
        }
    }
    let records = crate::records::attach(maps.iter().map(|m| (&m.def, &m.fd)))?;
    let programs = obj
        .programs
        .iter()
        .map(|def| ProgramSlot {
            def: def.clone(),
            loaded: OnceLock::new(),
        })
        .collect();
    let loaded = LoadedObject {
        prog_arrays_filled: Mutex::new(None),
        maps,
        programs,
        license: license_cstring(obj.license.as_deref()),
        possible_cpus,
        btf,
        kfuncs: obj.kfuncs.clone(),
        records,
    };
    // Maps of maps hold their declared inner maps from the start (no program needs loading).
    for (index, def) in obj.maps.iter().enumerate() {
        for &(slot, inner) in def.inner.iter().flat_map(|i| &i.initial) {
            let inner = u32::try_from(inner).unwrap_or(u32::MAX);
            loaded.update(index, &slot.to_le_bytes(), &inner.to_le_bytes())?;
        }
    }
    Ok(loaded)
}

/// [`load_object`], then [`LoadedObject::load_program`] of program `entry`: the XDP program to
/// run, and the programs its program arrays hold, loaded and nothing else.
pub fn load_entry(obj: &Object, entry: usize) -> Result<LoadedObject, KernelError> {
    let loaded = load_object(obj)?;
    loaded.load_program(entry)?;
    Ok(loaded)
}

/// The flags a map is created with: the definition's, plus `BPF_F_NO_PREALLOC` for LPM tries (the
/// kernel requires it), `BPF_F_RDONLY_PROG` for read-only global data (as libbpf does, so that
/// the verifier treats frozen `.rodata` contents as known constants) and `BPF_F_ZERO_SEED` for
/// hash maps: the order `bpf_for_each_map_elem` visits a hash map in follows its hash seed, which
/// is otherwise random per map; with seed 0 a run is reproducible and visits in the order the
/// interpreter models (`linerate_vm::hash_order`). Nothing else a program can observe depends on
/// the seed.
fn effective_flags(def: &MapDef) -> u32 {
    let mut flags = def.flags;
    if def.map_type == MapType::LPM_TRIE {
        flags |= sys::F_NO_PREALLOC;
    }
    if def.map_type.is_iterable_hash() {
        flags |= sys::F_ZERO_SEED;
    }
    if matches!(
        def.origin,
        MapOrigin::GlobalData {
            read_only: true,
            ..
        }
    ) {
        flags |= sys::F_RDONLY_PROG;
    }
    flags
}

/// Creates the map; the flag says whether it was created `BPF_F_MMAPABLE`.
///
/// Every `BPF_MAP_TYPE_ARRAY` is first tried with `BPF_F_MMAPABLE` added, so that its contents
/// can be read back through a mapping instead of one system call per element (a 2^25-element
/// sketch: milliseconds instead of minutes). The program cannot tell: the flag only makes the
/// kernel allocate the values page-aligned with `vmalloc` (`kernel/bpf/arraymap.c`,
/// `array_map_alloc`); element size (`round_up(value_size, 8)`), index masking, the inlined
/// lookup and every helper's behaviour are those of a plain array, and libbpf sets the same flag
/// on the `.data`/`.bss`/`.rodata` arrays of every object it loads. A kernel that refuses the
/// flag for a map (one whose value holds a spin lock or timer, say) gets the map without it.
fn create_map(def: &MapDef, btf: &ObjectBtfFd) -> Result<(OwnedFd, bool), KernelError> {
    let flags = effective_flags(def);
    if def.map_type == MapType::ARRAY && flags & sys::F_MMAPABLE == 0 {
        if let Ok(fd) = create_map_with(def, flags | sys::F_MMAPABLE, btf) {
            return Ok((fd, true));
        }
    }
    let mmapable = def.map_type == MapType::ARRAY && flags & sys::F_MMAPABLE != 0;
    create_map_with(def, flags, btf).map(|fd| (fd, mmapable))
}

/// Creates a map with `map_flags`, with its BTF key and value types when the object's BTF is
/// loaded; a map the kernel refuses with them is created without (as libbpf retries). A map of
/// maps gets its inner template created first, as `inner_map_fd`.
fn create_map_with(
    def: &MapDef,
    map_flags: u32,
    btf: &ObjectBtfFd,
) -> Result<OwnedFd, KernelError> {
    let template = if def.map_type.is_map_in_map() {
        Some(map_in_map::template_fd(def, |d| {
            create_map(d, btf).map(|(fd, _)| fd)
        })?)
    } else {
        None
    };
    let plain = sys::MapCreateAttr {
        inner_map_fd: template.as_ref().map_or(0, |fd| fd.as_raw_fd() as u32),
        map_flags,
        ..plain_map_attr(def)
    };
    if let Some((btf_fd, btf_key_type_id, btf_value_type_id)) = btf.map_type_ids(def) {
        let mut attr = sys::MapCreateAttr {
            btf_fd,
            btf_key_type_id,
            btf_value_type_id,
            ..plain
        };
        // SAFETY: MAP_CREATE reads no pointers from these attributes.
        match unsafe { sys::sys_bpf(Cmd::MapCreate, &mut attr) } {
            Ok(fd) => return Ok(fd_from_ret(fd)),
            Err(errno) => btf.add_note(format!(
                "linerate: map `{}` created without BTF: refused with it ({errno})",
                def.name
            )),
        }
    }
    let mut attr = plain;
    // SAFETY: MAP_CREATE reads no pointers from these attributes.
    let res = unsafe { sys::sys_bpf(Cmd::MapCreate, &mut attr) };
    res.map(fd_from_ret)
        .map_err(|errno| KernelError::MapCreate {
            map: def.name.clone(),
            map_type: def.map_type.name().to_string(),
            key_size: def.key_size,
            value_size: def.value_size,
            max_entries: def.max_entries,
            errno,
        })
}

/// The `BPF_MAP_CREATE` attributes of a map's plain definition.
fn plain_map_attr(def: &MapDef) -> sys::MapCreateAttr {
    sys::MapCreateAttr {
        map_type: def.map_type.0,
        key_size: def.key_size,
        value_size: def.value_size,
        max_entries: def.max_entries,
        map_flags: effective_flags(def),
        map_name: sys::obj_name(&def.name),
        ..Default::default()
    }
}

/// Writes a global-data map's initial value at key 0 and freezes read-only sections.
fn init_global_data(map: &LoadedMap) -> Result<(), KernelError> {
    let MapOrigin::GlobalData { read_only, .. } = map.def.origin else {
        return Ok(());
    };
    if let Some(init) = &map.def.initial_value {
        let mut value = init.clone();
        value.resize(map.def.value_size as usize, 0);
        raw_update(map.fd.as_fd(), &0u32.to_le_bytes(), &value)
            .map_err(|errno| map_op_error(Cmd::MapUpdateElem, &map.def, errno))?;
    }
    if read_only {
        let mut attr = sys::MapElemAttr {
            map_fd: map.fd.as_raw_fd() as u32,
            ..Default::default()
        };
        // SAFETY: MAP_FREEZE reads no pointers.
        unsafe { sys::sys_bpf(Cmd::MapFreeze, &mut attr) }
            .map_err(|errno| map_op_error(Cmd::MapFreeze, &map.def, errno))?;
    }
    Ok(())
}

/// The license string: the `license` section up to its first NUL, or `GPL`.
fn license_cstring(license: Option<&str>) -> CString {
    let text = license
        .map(|l| l.split('\0').next().unwrap_or(""))
        .filter(|l| !l.is_empty())
        .unwrap_or("GPL");
    CString::new(text).unwrap_or_else(|_| CString::from(c"GPL"))
}

/// Expected attach type and program flags for a program, following libbpf's section names
/// (`xdp`, `xdp.frags`, `xdp/devmap`, `xdp.frags/cpumap`, ...).
fn attach_and_flags(prog: &linerate_bpf::Program) -> (u32, u32) {
    let flags = if prog.has_frags() {
        sys::F_XDP_HAS_FRAGS
    } else {
        0
    };
    let section = &prog.section;
    let attach = if section.ends_with("/devmap") {
        sys::ATTACH_XDP_DEVMAP
    } else if section.ends_with("/cpumap") {
        sys::ATTACH_XDP_CPUMAP
    } else {
        sys::ATTACH_XDP
    };
    (attach, flags)
}

/// Loads one program. The first attempt is made without a verifier log (fast, and a log can never
/// make an otherwise accepted program fail with `ENOSPC`); a program refused with the object's BTF
/// is tried once more without it; only when that fails too is the program loaded again with BTF
/// and log level 1, growing the buffer on `ENOSPC` up to 16 MiB, to report the log (headed by
/// what happened to the BTF, if anything did).
///
/// `fd_array` holds the object's `maps` map fds at their indices, then the module BTF fds the
/// program's kfunc calls name ([`crate::kbtf::fd_array`]).
fn load_program(
    prog: &linerate_bpf::Program,
    license: &CString,
    fd_array: &[u32],
    maps: usize,
    btf: &ObjectBtfFd,
) -> Result<OwnedFd, KernelError> {
    let records = btf.records(prog);
    let insns: Vec<u8> = prog.insns.iter().flat_map(|i| i.to_bytes()).collect();
    let (attach, flags) = attach_and_flags(prog);
    let base = sys::ProgLoadAttr {
        prog_type: sys::PROG_TYPE_XDP,
        insn_cnt: u32::try_from(prog.insns.len()).unwrap_or(u32::MAX),
        insns: sys::ptr_u64(insns.as_ptr()),
        license: sys::ptr_u64(license.as_ptr()),
        prog_flags: flags,
        prog_name: sys::obj_name(&prog.name),
        expected_attach_type: attach,
        fd_array: if fd_array.is_empty() {
            0
        } else {
            sys::ptr_u64(fd_array.as_ptr())
        },
        ..Default::default()
    };

    // The kernel reads `fd_array[imm]` for every map reference before validating it, so indices
    // past the array must be refused here.
    check_map_indices(prog, maps)?;
    let plain = base;
    let mut base = base;
    if let Some(records) = &records {
        btf.prog_attr(records, &mut base);
    }
    let mut attr = base;
    // SAFETY: `insns` holds `insn_cnt` 8-byte instructions, `license` is NUL-terminated, and
    // `fd_array` covers every map index the instructions name (checked above) and every kfunc
    // call's BTF slot (placed there by `kbtf::resolve_kfuncs`); the BTF records point into
    // `records`. All outlive the call.
    let first = unsafe { sys::sys_bpf(Cmd::ProgLoad, &mut attr) };
    let first_errno = match first {
        Ok(fd) => return Ok(fd_from_ret(fd)),
        Err(e) => e,
    };
    if records.is_some() {
        let mut attr = plain;
        // SAFETY: as above, without BTF records.
        if let Ok(fd) = unsafe { sys::sys_bpf(Cmd::ProgLoad, &mut attr) } {
            btf.add_note(format!(
                "linerate: program `{}` loaded without BTF: refused with it ({first_errno})",
                prog.name
            ));
            return Ok(fd_from_ret(fd));
        }
    }

    let mut size = LOG_INITIAL;
    loop {
        let mut log = vec![0u8; size];
        let mut attr = base;
        attr.log_level = 1;
        attr.log_size = u32::try_from(log.len()).unwrap_or(u32::MAX);
        attr.log_buf = sys::ptr_u64(log.as_mut_ptr());
        // SAFETY: as above; additionally `log_buf` is writable for `log_size` bytes.
        let res = unsafe { sys::sys_bpf(Cmd::ProgLoad, &mut attr) };
        match res {
            // Accepted on the second attempt (should not happen): keep it.
            Ok(fd) => return Ok(fd_from_ret(fd)),
            Err(errno) if errno.0 == libc::ENOSPC && size < LOG_MAX => {
                let wanted = (attr.log_true_size as usize).max(size * 4);
                size = wanted.min(LOG_MAX);
            }
            Err(errno) => {
                let end = log.iter().position(|&b| b == 0).unwrap_or(log.len());
                let mut text = String::from_utf8_lossy(&log[..end]).into_owned();
                if let Some(note) = btf.note() {
                    text = format!("{note}\n{text}");
                }
                // With the log enabled, ENOSPC only says the log was cut; the real verdict is the
                // first attempt's.
                let errno = if errno.0 == libc::ENOSPC {
                    first_errno
                } else {
                    errno
                };
                return Err(KernelError::Rejected {
                    program: prog.name.clone(),
                    errno,
                    log: text,
                });
            }
        }
    }
}

/// Refuses programs whose map references name a map index outside `fd_array` (the kernel would read
/// past the array).
fn check_map_indices(prog: &linerate_bpf::Program, num_maps: usize) -> Result<(), KernelError> {
    use linerate_bpf::insn::pseudo;
    let mut i = 0;
    while i < prog.insns.len() {
        let insn = prog.insns[i];
        if insn.is_wide() {
            if (insn.src == pseudo::MAP_IDX || insn.src == pseudo::MAP_IDX_VALUE)
                && (insn.imm < 0 || insn.imm as usize >= num_maps)
            {
                return Err(KernelError::InvalidArgument(format!(
                    "program `{}` references map index {} at insn {i}, but the object has {num_maps} maps",
                    prog.name, insn.imm
                )));
            }
            i += 2;
        } else {
            i += 1;
        }
    }
    Ok(())
}

/// The kernel id of a loaded program.
fn prog_id(fd: &OwnedFd) -> Result<u32, Errno> {
    let mut info = sys::ProgInfoHead::default();
    let mut attr = sys::InfoAttr {
        bpf_fd: fd.as_raw_fd() as u32,
        info_len: std::mem::size_of::<sys::ProgInfoHead>() as u32,
        info: sys::ptr_u64(&mut info as *mut sys::ProgInfoHead),
    };
    // SAFETY: `info` is writable for `info_len` bytes for the duration of the call.
    unsafe { sys::sys_bpf(Cmd::ObjGetInfoByFd, &mut attr) }?;
    Ok(info.id)
}

/// Takes ownership of a file descriptor returned by a creating `bpf(2)` command.
pub(crate) fn fd_from_ret(ret: std::ffi::c_long) -> OwnedFd {
    // SAFETY: the kernel just returned this descriptor to us; nothing else owns it.
    unsafe { OwnedFd::from_raw_fd(ret as i32) }
}

pub(crate) fn map_op_error(cmd: Cmd, def: &MapDef, errno: Errno) -> KernelError {
    KernelError::syscall(format!("{cmd} on map `{}`", def.name), errno)
}

/// `BPF_MAP_UPDATE_ELEM` with `BPF_ANY`; `key` and `value` must have the sizes the kernel expects.
pub(crate) fn raw_update(fd: BorrowedFd<'_>, key: &[u8], value: &[u8]) -> Result<(), Errno> {
    let mut attr = sys::MapElemAttr {
        map_fd: fd.as_raw_fd() as u32,
        key: key_pointer(key),
        value: sys::ptr_u64(value.as_ptr()),
        flags: sys::UPDATE_ANY,
        ..Default::default()
    };
    // SAFETY: callers pass `key`/`value` of the map's key size and (per-CPU) value size, which is
    // what the kernel reads.
    unsafe { sys::sys_bpf(Cmd::MapUpdateElem, &mut attr) }.map(|_| ())
}

/// `BPF_MAP_LOOKUP_ELEM` into `value`; `Ok(false)` when the key is absent.
fn raw_lookup(fd: BorrowedFd<'_>, key: &[u8], value: &mut [u8]) -> Result<bool, Errno> {
    let mut attr = sys::MapElemAttr {
        map_fd: fd.as_raw_fd() as u32,
        key: key_pointer(key),
        value: sys::ptr_u64(value.as_mut_ptr()),
        ..Default::default()
    };
    // SAFETY: callers pass a key of the map's key size and a value buffer of the size the kernel
    // writes (per-CPU size for per-CPU maps).
    match unsafe { sys::sys_bpf(Cmd::MapLookupElem, &mut attr) } {
        Ok(_) => Ok(true),
        Err(e) if e.0 == libc::ENOENT => Ok(false),
        Err(e) => Err(e),
    }
}

/// The address of a key: NULL for the empty key of a queue or stack (the kernel refuses any
/// other pointer for a map without keys: kernel/bpf/syscall.c `___bpf_copy_key`).
pub(crate) fn key_pointer(key: &[u8]) -> u64 {
    if key.is_empty() {
        0
    } else {
        sys::ptr_u64(key.as_ptr())
    }
}

/// `BPF_MAP_GET_NEXT_KEY`: the key after `key` (the first key when `None`), `Ok(false)` at the end.
fn raw_next_key(fd: BorrowedFd<'_>, key: Option<&[u8]>, next: &mut [u8]) -> Result<bool, Errno> {
    let mut attr = sys::MapElemAttr {
        map_fd: fd.as_raw_fd() as u32,
        key: key.map_or(0, |k| sys::ptr_u64(k.as_ptr())),
        value: sys::ptr_u64(next.as_mut_ptr()),
        ..Default::default()
    };
    // SAFETY: `key` (if any) and `next` have the map's key size.
    match unsafe { sys::sys_bpf(Cmd::MapGetNextKey, &mut attr) } {
        Ok(_) => Ok(true),
        Err(e) if e.0 == libc::ENOENT => Ok(false),
        Err(e) => Err(e),
    }
}

impl LoadedObject {
    /// What happened to the object's BTF, when it was not handed to the kernel or a program
    /// loaded only without it (`None` when all went with BTF, or the object has none).
    pub fn btf_note(&self) -> Option<String> {
        self.btf.note()
    }

    /// Number of maps (same order as [`Object::maps`]).
    pub fn num_maps(&self) -> usize {
        self.maps.len()
    }

    /// Number of programs (same order as [`Object::programs`]).
    pub fn num_programs(&self) -> usize {
        self.programs.len()
    }

    /// The index of the program with this entry-function name.
    pub fn program_index(&self, name: &str) -> Option<usize> {
        self.programs.iter().position(|p| p.def.name == name)
    }

    /// The index of the map with this name.
    pub fn map_index(&self, name: &str) -> Option<usize> {
        self.maps.iter().position(|m| m.def.name == name)
    }

    /// The definition map `index` was created from.
    pub fn map_def(&self, index: usize) -> Option<&MapDef> {
        self.maps.get(index).map(|m| &m.def)
    }

    /// The file descriptor of map `index`.
    pub fn map_fd(&self, index: usize) -> Option<BorrowedFd<'_>> {
        self.maps.get(index).map(|m| m.fd.as_fd())
    }

    /// The file descriptor of program `index`, if it is loaded.
    pub fn program_fd(&self, index: usize) -> Option<BorrowedFd<'_>> {
        self.loaded(index).map(|p| p.fd.as_fd())
    }

    /// The kernel's id of program `index` (as shown by `bpftool prog`), if it is loaded.
    pub fn program_id(&self, index: usize) -> Option<u32> {
        self.loaded(index).map(|p| p.id)
    }

    /// Drops what the object's ring buffers and perf event arrays hold: after runs of its
    /// programs that went through another object's test runs (behind a driver, say), whose
    /// calls drain only that object's rings.
    pub fn discard_records(&self) -> Result<(), KernelError> {
        self.take_records(false).map(|_| ())
    }

    /// Takes the records the object's ring buffers and perf event arrays hold (dropped unless
    /// `keep`).
    pub(crate) fn take_records(
        &self,
        keep: bool,
    ) -> Result<linerate_bpf::records::Records, KernelError> {
        crate::records::take_all(&self.records, keep)
    }

    /// The definition of program `index`.
    pub fn program_def(&self, index: usize) -> Option<&Program> {
        self.programs.get(index).map(|p| &p.def)
    }

    /// The name of program `index`.
    pub fn program_name(&self, index: usize) -> Option<&str> {
        self.programs.get(index).map(|p| p.def.name.as_str())
    }

    fn loaded(&self, index: usize) -> Option<&LoadedProgram> {
        self.programs.get(index)?.loaded.get()?.as_ref().ok()
    }

    /// Loads program `index` unless it is loaded already, and (once) the programs the program
    /// arrays' declared slots name. Only XDP programs load: any
    /// other kind is refused with [`KernelError::NotXdp`]. A refusal is remembered: asking again
    /// gives the same error without another `BPF_PROG_LOAD`.
    pub fn load_program(&self, index: usize) -> Result<(), KernelError> {
        self.program(index).map(|_| ())
    }

    /// Number of possible CPUs (the number of values a per-CPU map holds per key).
    pub fn possible_cpus(&self) -> usize {
        self.possible_cpus
    }

    /// Program `index`, loaded (see [`LoadedObject::load_program`]).
    pub(crate) fn program(&self, index: usize) -> Result<(&str, BorrowedFd<'_>), KernelError> {
        let slot = self.programs.get(index).ok_or_else(|| {
            KernelError::InvalidArgument(format!(
                "no program with index {index} (the object has {})",
                self.programs.len()
            ))
        })?;
        let loaded = slot.loaded.get_or_init(|| {
            slot.def
                .require_xdp("the kernel runner", "loads XDP programs")
                .map_err(KernelError::NotXdp)?;
            let fds: Vec<u32> = self.maps.iter().map(|m| m.fd.as_raw_fd() as u32).collect();
            let resolved = crate::kbtf::resolve_kfuncs(&slot.def, &self.kfuncs, fds.len())?;
            let fd = load_program(
                &resolved.program,
                &self.license,
                &crate::kbtf::fd_array(&fds, &resolved.module_fds),
                fds.len(),
                &self.btf,
            )?;
            let id = prog_id(&fd).map_err(|errno| {
                KernelError::syscall(
                    format!("{} for program `{}`", Cmd::ObjGetInfoByFd, slot.def.name),
                    errno,
                )
            })?;
            Ok(LoadedProgram { fd, id })
        });
        let loaded = loaded.as_ref().map_err(Clone::clone)?;
        self.fill_prog_arrays()?;
        Ok((slot.def.name.as_str(), loaded.fd.as_fd()))
    }

    /// Writes the initial slots of every program array (`.values = {...}`), loading the programs
    /// they name, once: the first time any program is loaded, so that a run sees the arrays the
    /// object declares whichever program it starts in. The outcome is marked before the slots are
    /// written, so the loads this makes (which come back here) find it done; a failure is kept
    /// and reported again to every later caller.
    fn fill_prog_arrays(&self) -> Result<(), KernelError> {
        {
            let mut filled = self.lock_filled();
            if let Some(outcome) = filled.as_ref() {
                return outcome.clone();
            }
            *filled = Some(Ok(()));
        }
        let outcome = self.maps.iter().enumerate().try_for_each(|(map, m)| {
            m.def.initial_programs.iter().try_for_each(|&(slot, prog)| {
                let prog = u32::try_from(prog).unwrap_or(u32::MAX);
                self.update(map, &slot.to_le_bytes(), &prog.to_le_bytes())
            })
        });
        *self.lock_filled() = Some(outcome.clone());
        outcome
    }

    fn lock_filled(&self) -> std::sync::MutexGuard<'_, Option<Result<(), KernelError>>> {
        self.prog_arrays_filled
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    pub(crate) fn map(&self, index: usize) -> Result<&LoadedMap, KernelError> {
        self.maps.get(index).ok_or_else(|| {
            KernelError::InvalidArgument(format!(
                "no map with index {index} (the object has {})",
                self.maps.len()
            ))
        })
    }

    /// Bytes per CPU of a per-CPU value as the kernel lays it out in user buffers.
    fn percpu_stride(def: &MapDef) -> usize {
        (def.value_size as usize).div_ceil(8) * 8
    }

    fn check_key(def: &MapDef, key: &[u8]) -> Result<(), KernelError> {
        if key.len() != def.key_size as usize {
            return Err(KernelError::InvalidArgument(format!(
                "map `{}`: key is {} bytes, the map's key size is {}",
                def.name,
                key.len(),
                def.key_size
            )));
        }
        Ok(())
    }

    /// Sets `key` to `value` (`BPF_ANY`: creates or replaces).
    ///
    /// * `PROG_ARRAY`: `value` is a 4-byte little-endian *program index* of this object, translated
    ///   to that program's file descriptor.
    /// * `ARRAY_OF_MAPS`/`HASH_OF_MAPS`: `value` is a 4-byte little-endian *map index* of this
    ///   object, translated to that map's file descriptor.
    /// * Per-CPU maps: a `value_size`-byte value is stored for every possible CPU; a value of
    ///   `possible_cpus() * round_up(value_size, 8)` bytes is passed through as the per-CPU layout.
    /// * Everything else: `value` must be `value_size` bytes and is passed to the kernel as is
    ///   (`DEVMAP` takes an ifindex, `CPUMAP` a queue size, as the kernel defines).
    pub fn update(&self, map_index: usize, key: &[u8], value: &[u8]) -> Result<(), KernelError> {
        let map = self.map(map_index)?;
        let def = &map.def;
        Self::check_key(def, key)?;
        let value_size = def.value_size as usize;
        let bytes: Vec<u8> = if def.map_type == MapType::PROG_ARRAY {
            // The declared slots come first, so that this write replaces them.
            self.fill_prog_arrays()?;
            let index = <[u8; 4]>::try_from(value)
                .map(u32::from_le_bytes)
                .map_err(|_| {
                    KernelError::InvalidArgument(format!(
                        "map `{}` is a prog_array: the value must be a 4-byte program index, got {} bytes",
                        def.name,
                        value.len()
                    ))
                })?;
            let (_, fd) = self.program(index as usize)?;
            (fd.as_raw_fd() as u32).to_le_bytes().to_vec()
        } else if def.map_type.is_map_in_map() {
            map_in_map::slot_value(def, value, |i| self.maps.get(i).map(|m| m.fd.as_raw_fd()))?
        } else if def.map_type.is_percpu() {
            let stride = Self::percpu_stride(def);
            if value.len() == value_size {
                let mut all = vec![0u8; stride * self.possible_cpus];
                for chunk in all.chunks_mut(stride) {
                    chunk[..value_size].copy_from_slice(value);
                }
                all
            } else if value.len() == stride * self.possible_cpus {
                value.to_vec()
            } else {
                return Err(KernelError::InvalidArgument(format!(
                    "map `{}` is per-CPU: the value must be {value_size} bytes (stored on every CPU) \
                     or {} bytes ({} CPUs x {stride}), got {}",
                    def.name,
                    stride * self.possible_cpus,
                    self.possible_cpus,
                    value.len()
                )));
            }
        } else {
            if value.len() != value_size {
                return Err(KernelError::InvalidArgument(format!(
                    "map `{}`: value is {} bytes, the map's value size is {value_size}",
                    def.name,
                    value.len()
                )));
            }
            value.to_vec()
        };
        raw_update(map.fd.as_fd(), key, &bytes)
            .map_err(|errno| map_op_error(Cmd::MapUpdateElem, def, errno))
    }

    /// Puts a program of *another* loaded object into slot `slot` of this object's `PROG_ARRAY`
    /// map `map_index`, so that a tail call from here runs it unchanged (a traffic driver feeding
    /// an NF its packets). The kernel checks that the two programs are compatible (same type,
    /// both JIT-compiled).
    pub fn set_foreign_program(
        &self,
        map_index: usize,
        slot: u32,
        program: BorrowedFd<'_>,
    ) -> Result<(), KernelError> {
        let map = self.map(map_index)?;
        if map.def.map_type != MapType::PROG_ARRAY {
            return Err(KernelError::InvalidArgument(format!(
                "map `{}` is not a prog_array",
                map.def.name
            )));
        }
        self.fill_prog_arrays()?;
        let fd = (program.as_raw_fd() as u32).to_le_bytes();
        raw_update(map.fd.as_fd(), &slot.to_le_bytes(), &fd)
            .map_err(|errno| map_op_error(Cmd::MapUpdateElem, &map.def, errno))
    }

    /// Deletes `key`. Returns `Ok(false)` when the key was not present. Array maps do not support
    /// deletion (the kernel answers `EINVAL`), except program arrays and devmaps, whose slots
    /// become empty.
    pub fn delete(&self, map_index: usize, key: &[u8]) -> Result<bool, KernelError> {
        let map = self.map(map_index)?;
        Self::check_key(&map.def, key)?;
        let mut attr = sys::MapElemAttr {
            map_fd: map.fd.as_raw_fd() as u32,
            key: sys::ptr_u64(key.as_ptr()),
            ..Default::default()
        };
        // SAFETY: `key` has the map's key size.
        match unsafe { sys::sys_bpf(Cmd::MapDeleteElem, &mut attr) } {
            Ok(_) => Ok(true),
            Err(e) if e.0 == libc::ENOENT => Ok(false),
            Err(errno) => Err(map_op_error(Cmd::MapDeleteElem, &map.def, errno)),
        }
    }

    /// The value at `key`, in the form [`LoadedObject::entries`] returns, or `None` when absent
    /// (or, for `XSKMAP`, when the kernel does not support lookups from user space).
    pub fn lookup(&self, map_index: usize, key: &[u8]) -> Result<Option<Vec<u8>>, KernelError> {
        let map = self.map(map_index)?;
        Self::check_key(&map.def, key)?;
        self.lookup_in(map, key)
    }

    fn lookup_in(&self, map: &LoadedMap, key: &[u8]) -> Result<Option<Vec<u8>>, KernelError> {
        let def = &map.def;
        let value_size = def.value_size as usize;
        let buf_len = if def.map_type.is_percpu() {
            Self::percpu_stride(def) * self.possible_cpus
        } else {
            value_size
        };
        let mut buf = vec![0u8; buf_len];
        match raw_lookup(map.fd.as_fd(), key, &mut buf) {
            Ok(true) => {}
            Ok(false) => return Ok(None),
            Err(e) if e.0 == libc::EOPNOTSUPP || e.0 == sys::ENOTSUPP => return Ok(None),
            Err(errno) => return Err(map_op_error(Cmd::MapLookupElem, def, errno)),
        }
        buf.truncate(value_size);
        if def.map_type.is_map_in_map() {
            // The kernel reports the inner map's id.
            let index_of = |id| self.maps.iter().position(|m| m.id == id);
            return Ok(Some(map_in_map::slot_index(&buf, index_of)));
        }
        if def.map_type == MapType::PROG_ARRAY {
            // The kernel reports the program's id; translate ids of our programs to indices.
            if let Ok(raw) = <[u8; 4]>::try_from(&buf[..]) {
                let id = u32::from_le_bytes(raw);
                if let Some(index) =
                    (0..self.programs.len()).find(|&i| self.program_id(i) == Some(id))
                {
                    return Ok(Some((index as u32).to_le_bytes().to_vec()));
                }
            }
        }
        Ok(Some(buf))
    }

    /// Every entry of map `map_index`, in the kernel's iteration order (`BPF_MAP_GET_NEXT_KEY`),
    /// one element (two system calls) at a time: slow for big maps, which
    /// [`LoadedObject::contents`] reads in bulk.
    ///
    /// * Array maps list every index `0..max_entries` (their elements always exist).
    /// * Per-CPU maps: the value is CPU 0's (test runs execute on CPU 0), `value_size` bytes.
    /// * `PROG_ARRAY`: only occupied slots; the value is the 4-byte little-endian program index
    ///   when the slot holds one of this object's programs, otherwise the raw kernel program id.
    /// * `ARRAY_OF_MAPS`/`HASH_OF_MAPS`: only occupied slots; the value is the 4-byte
    ///   little-endian index of the inner map among this object's maps (the raw kernel map id
    ///   for a map that is not the object's).
    /// * `DEVMAP`/`DEVMAP_HASH`/`CPUMAP`: only occupied slots, values as the kernel returns them.
    /// * `XSKMAP`: the kernel does not support lookups from user space; such entries are skipped,
    ///   so the result is empty.
    /// * Ring buffers and perf event arrays have no entries (their records are output of a run:
    ///   [`crate::TestRunOutput::records`]).
    /// * `QUEUE`/`STACK`: the values in the order pops return them, with empty keys
    ///   ([`crate::queue`]).
    pub fn entries(&self, map_index: usize) -> Result<MapEntries, KernelError> {
        let map = self.map(map_index)?;
        let def = &map.def;
        if def.map_type.is_record_output() {
            return Ok(Vec::new());
        }
        if def.map_type.is_queue() {
            return crate::queue::entries(map.fd.as_fd(), def)
                .map_err(|(cmd, errno)| map_op_error(cmd, def, errno));
        }
        let key_size = def.key_size as usize;
        let mut out = Vec::new();
        let mut key: Option<Vec<u8>> = None;
        // Bounded so that a map changing under us cannot loop forever.
        let limit = def.max_entries as usize + 1;
        for _ in 0..limit {
            let mut next = vec![0u8; key_size];
            let more = raw_next_key(map.fd.as_fd(), key.as_deref(), &mut next)
                .map_err(|errno| map_op_error(Cmd::MapGetNextKey, def, errno))?;
            if !more {
                break;
            }
            if let Some(value) = self.lookup_in(map, &next)? {
                out.push((next.clone(), value));
            }
            key = Some(next);
        }
        Ok(out)
    }
}
