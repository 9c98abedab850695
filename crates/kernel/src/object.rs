//! Loading a linked [`Object`] into the kernel: maps, programs, program-array slots, and the map
//! operations tests and the CLI need afterwards.
//!
//! Maps are created in [`Object::maps`] order and their file descriptors passed to every
//! `BPF_PROG_LOAD` as `fd_array`, so the linked instructions' `BPF_PSEUDO_MAP_IDX` /
//! `BPF_PSEUDO_MAP_IDX_VALUE` immediates (map indices) are resolved by the kernel itself (Linux
//! 5.14+). The object's BTF, when it has one the kernel accepts, goes with its maps and programs
//! (see [`crate::btf`]); objects without it (legacy `maps` sections, which libbpf 1.x refuses)
//! load from their plain definitions.

use std::ffi::CString;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, FromRawFd, OwnedFd};

use linerate_bpf::program::{MapOrigin, MapType};
use linerate_bpf::{MapDef, Object};

use crate::btf::ObjectBtfFd;
use crate::error::KernelError;
use crate::sys::{self, Cmd, Errno};

/// Initial verifier log buffer size when a program must be re-loaded to obtain its log.
const LOG_INITIAL: usize = 1 << 16;
/// Largest verifier log buffer tried.
const LOG_MAX: usize = 16 << 20;

/// The `(key, value)` pairs of a map, as [`LoadedObject::entries`] returns them.
pub type MapEntries = Vec<(Vec<u8>, Vec<u8>)>;

/// A map created in the kernel.
#[derive(Debug)]
struct LoadedMap {
    def: MapDef,
    fd: OwnedFd,
}

/// A program loaded into the kernel.
#[derive(Debug)]
struct LoadedProgram {
    name: String,
    fd: OwnedFd,
    id: u32,
}

/// An object whose maps and programs live in the kernel. Dropping it closes every file
/// descriptor, which frees the kernel objects (nothing is pinned or attached).
#[derive(Debug)]
pub struct LoadedObject {
    maps: Vec<LoadedMap>,
    programs: Vec<LoadedProgram>,
    possible_cpus: usize,
    btf_note: Option<String>,
}

/// Loads `obj` into the kernel (see the crate documentation for what that involves).
///
/// Fails with [`KernelError::MapCreate`] when a map cannot be created, with
/// [`KernelError::Rejected`] (carrying the verifier log) when a program is refused, and with
/// [`KernelError::Syscall`] when initialising global data or program arrays fails.
pub fn load_object(obj: &Object) -> Result<LoadedObject, KernelError> {
    let possible_cpus = crate::possible_cpus()?;
    let mut btf = ObjectBtfFd::load(obj);
    let mut maps = Vec::with_capacity(obj.maps.len());
    for def in &obj.maps {
        let fd = create_map(def, &mut btf)?;
        maps.push(LoadedMap {
            def: def.clone(),
            fd,
        });
        if let Some(map) = maps.last() {
            init_global_data(map)?;
        }
    }

    let fds: Vec<u32> = maps.iter().map(|m| m.fd.as_raw_fd() as u32).collect();
    let license = license_cstring(obj.license.as_deref());
    let mut programs = Vec::with_capacity(obj.programs.len());
    for prog in &obj.programs {
        let fd = load_program(prog, &license, &fds, &mut btf)?;
        let id = prog_id(&fd).map_err(|errno| {
            KernelError::syscall(
                format!("{} for program `{}`", Cmd::ObjGetInfoByFd, prog.name),
                errno,
            )
        })?;
        programs.push(LoadedProgram {
            name: prog.name.clone(),
            fd,
            id,
        });
    }

    let loaded = LoadedObject {
        maps,
        programs,
        possible_cpus,
        btf_note: btf.note,
    };
    for (index, def) in obj.maps.iter().enumerate() {
        for &(slot, prog) in &def.initial_programs {
            let prog = u32::try_from(prog).unwrap_or(u32::MAX);
            loaded.update(index, &slot.to_le_bytes(), &prog.to_le_bytes())?;
        }
    }
    Ok(loaded)
}

/// The flags a map is created with: the definition's, plus `BPF_F_NO_PREALLOC` for LPM tries (the
/// kernel requires it) and `BPF_F_RDONLY_PROG` for read-only global data (as libbpf does, so that
/// the verifier treats frozen `.rodata` contents as known constants).
fn effective_flags(def: &MapDef) -> u32 {
    let mut flags = def.flags;
    if def.map_type == MapType::LPM_TRIE {
        flags |= sys::F_NO_PREALLOC;
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

/// Creates a map, with its BTF key and value types when the object's BTF is loaded; a map the
/// kernel refuses with them is created without (as libbpf retries).
fn create_map(def: &MapDef, btf: &mut ObjectBtfFd<'_>) -> Result<OwnedFd, KernelError> {
    if let Some((btf_fd, btf_key_type_id, btf_value_type_id)) = btf.map_type_ids(def) {
        let mut attr = sys::MapCreateAttr {
            btf_fd,
            btf_key_type_id,
            btf_value_type_id,
            ..plain_map_attr(def)
        };
        // SAFETY: MAP_CREATE reads no pointers from these attributes.
        match unsafe { sys::sys_bpf(Cmd::MapCreate, &mut attr) } {
            Ok(fd) => return Ok(fd_from_ret(fd)),
            Err(errno) => add_note(
                btf,
                format!(
                    "linerate: map `{}` created without BTF: refused with it ({errno})",
                    def.name
                ),
            ),
        }
    }
    let mut attr = plain_map_attr(def);
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

/// Expected attach type and program flags for a program's ELF section, following libbpf's section
/// names (`xdp`, `xdp.frags`, `xdp/devmap`, `xdp.frags/cpumap`, ...).
fn attach_for_section(section: &str) -> (u32, u32) {
    let frags = section.starts_with("xdp.frags") || section.starts_with("xdp_frags");
    let flags = if frags { sys::F_XDP_HAS_FRAGS } else { 0 };
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
fn load_program(
    prog: &linerate_bpf::Program,
    license: &CString,
    map_fds: &[u32],
    btf: &mut ObjectBtfFd<'_>,
) -> Result<OwnedFd, KernelError> {
    let records = btf.records(prog);
    let insns: Vec<u8> = prog.insns.iter().flat_map(|i| i.to_bytes()).collect();
    let (attach, flags) = attach_for_section(&prog.section);
    let base = sys::ProgLoadAttr {
        prog_type: sys::PROG_TYPE_XDP,
        insn_cnt: u32::try_from(prog.insns.len()).unwrap_or(u32::MAX),
        insns: sys::ptr_u64(insns.as_ptr()),
        license: sys::ptr_u64(license.as_ptr()),
        prog_flags: flags,
        prog_name: sys::obj_name(&prog.name),
        expected_attach_type: attach,
        fd_array: if map_fds.is_empty() {
            0
        } else {
            sys::ptr_u64(map_fds.as_ptr())
        },
        ..Default::default()
    };

    // The kernel reads `fd_array[imm]` for every map reference before validating it, so indices
    // past the array must be refused here.
    check_map_indices(prog, map_fds.len())?;
    let plain = base;
    let mut base = base;
    if let Some(records) = &records {
        btf.prog_attr(records, &mut base);
    }
    let mut attr = base;
    // SAFETY: `insns` holds `insn_cnt` 8-byte instructions, `license` is NUL-terminated, and
    // `fd_array` points at `map_fds`, which covers every map index the instructions name (checked
    // above); the BTF records point into `records`. All outlive the call.
    let first = unsafe { sys::sys_bpf(Cmd::ProgLoad, &mut attr) };
    let first_errno = match first {
        Ok(fd) => return Ok(fd_from_ret(fd)),
        Err(e) => e,
    };
    if records.is_some() {
        let mut attr = plain;
        // SAFETY: as above, without BTF records.
        if let Ok(fd) = unsafe { sys::sys_bpf(Cmd::ProgLoad, &mut attr) } {
            add_note(
                btf,
                format!(
                    "linerate: program `{}` loaded without BTF: refused with it ({first_errno})",
                    prog.name
                ),
            );
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
                if let Some(note) = &btf.note {
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

/// Appends a line to what the BTF note says.
fn add_note(btf: &mut ObjectBtfFd<'_>, line: String) {
    btf.note = Some(match btf.note.take() {
        Some(note) => format!("{note}\n{line}"),
        None => line,
    });
}

/// Takes ownership of a file descriptor returned by a creating `bpf(2)` command.
pub(crate) fn fd_from_ret(ret: std::ffi::c_long) -> OwnedFd {
    // SAFETY: the kernel just returned this descriptor to us; nothing else owns it.
    unsafe { OwnedFd::from_raw_fd(ret as i32) }
}

fn map_op_error(cmd: Cmd, def: &MapDef, errno: Errno) -> KernelError {
    KernelError::syscall(format!("{cmd} on map `{}`", def.name), errno)
}

/// `BPF_MAP_UPDATE_ELEM` with `BPF_ANY`; `key` and `value` must have the sizes the kernel expects.
fn raw_update(fd: BorrowedFd<'_>, key: &[u8], value: &[u8]) -> Result<(), Errno> {
    let mut attr = sys::MapElemAttr {
        map_fd: fd.as_raw_fd() as u32,
        key: sys::ptr_u64(key.as_ptr()),
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
        key: sys::ptr_u64(key.as_ptr()),
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
    pub fn btf_note(&self) -> Option<&str> {
        self.btf_note.as_deref()
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
        self.programs.iter().position(|p| p.name == name)
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

    /// The file descriptor of program `index`.
    pub fn program_fd(&self, index: usize) -> Option<BorrowedFd<'_>> {
        self.programs.get(index).map(|p| p.fd.as_fd())
    }

    /// The kernel's id of program `index` (as shown by `bpftool prog`).
    pub fn program_id(&self, index: usize) -> Option<u32> {
        self.programs.get(index).map(|p| p.id)
    }

    /// The name of program `index`.
    pub fn program_name(&self, index: usize) -> Option<&str> {
        self.programs.get(index).map(|p| p.name.as_str())
    }

    /// Number of possible CPUs (the number of values a per-CPU map holds per key).
    pub fn possible_cpus(&self) -> usize {
        self.possible_cpus
    }

    pub(crate) fn program(&self, index: usize) -> Result<(&str, BorrowedFd<'_>), KernelError> {
        self.programs
            .get(index)
            .map(|p| (p.name.as_str(), p.fd.as_fd()))
            .ok_or_else(|| {
                KernelError::InvalidArgument(format!(
                    "no program with index {index} (the object has {})",
                    self.programs.len()
                ))
            })
    }

    fn map(&self, index: usize) -> Result<&LoadedMap, KernelError> {
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
        if def.map_type == MapType::PROG_ARRAY {
            // The kernel reports the program's id; translate ids of our programs to indices.
            if let Ok(raw) = <[u8; 4]>::try_from(&buf[..]) {
                let id = u32::from_le_bytes(raw);
                if let Some(index) = self.programs.iter().position(|p| p.id == id) {
                    return Ok(Some((index as u32).to_le_bytes().to_vec()));
                }
            }
        }
        Ok(Some(buf))
    }

    /// Every entry of map `map_index`, in the kernel's iteration order (`BPF_MAP_GET_NEXT_KEY`).
    ///
    /// * Array maps list every index `0..max_entries` (their elements always exist).
    /// * Per-CPU maps: the value is CPU 0's (test runs execute on CPU 0), `value_size` bytes.
    /// * `PROG_ARRAY`: only occupied slots; the value is the 4-byte little-endian program index
    ///   when the slot holds one of this object's programs, otherwise the raw kernel program id.
    /// * `DEVMAP`/`DEVMAP_HASH`/`CPUMAP`: only occupied slots, values as the kernel returns them.
    /// * `XSKMAP`: the kernel does not support lookups from user space; such entries are skipped,
    ///   so the result is empty.
    pub fn entries(&self, map_index: usize) -> Result<MapEntries, KernelError> {
        let map = self.map(map_index)?;
        let def = &map.def;
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
