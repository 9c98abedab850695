//! The BTF objects the running kernel holds, and among them the kernel modules' BTF, where the
//! kfuncs a module defines (nf_conntrack's `bpf_xdp_ct_lookup`, ...) are declared.
//!
//! The walk is libbpf's `load_module_btfs` (tools/lib/bpf/libbpf.c): `BPF_BTF_GET_NEXT_ID` from
//! id 0 lists every BTF object, `BPF_BTF_GET_FD_BY_ID` opens each (one that vanished in between
//! is skipped) and `BPF_OBJ_GET_INFO_BY_FD` reads its `struct bpf_btf_info`: the name and the
//! `kernel_btf` flag, set for the kernel's own BTF (`vmlinux` and one object per module with BTF,
//! named after the module) and clear for BTF that programs loaded. A module's raw BTF, read back
//! through the same call (it is also `/sys/kernel/btf/<module>`), is split BTF on top of vmlinux
//! ([`linerate_bpf::btf::split`]).
//!
//! The module table is read once per process, only when a program calls a kfunc vmlinux lacks,
//! and its file descriptors stay open for the rest of the process: a program names a module's
//! BTF by fd in `BPF_PROG_LOAD`'s `fd_array`, so the fd must be open when the program loads
//! ([`crate::kbtf`]).

use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd};
use std::sync::OnceLock;

use std::sync::Arc;

use linerate_bpf::btf::{Btf, BtfError};
use linerate_bpf::core_relo::running_kernel_btf_shared;

use crate::error::KernelError;
use crate::kbtf::KernelFuncs;
use crate::object::fd_from_ret;
use crate::sys::{self, Cmd};

/// The name the kernel gives its own BTF object.
pub const VMLINUX: &str = "vmlinux";
/// Room for a BTF object's name (`MODULE_NAME_LEN`, 56 on 64-bit kernels, with margin).
const NAME_LEN: usize = 64;

/// One BTF object the kernel holds, opened.
#[derive(Debug)]
pub struct BtfObject {
    /// The kernel's id of the object (as `bpftool btf` lists it).
    pub id: u32,
    /// `vmlinux`, a module's name, or (for BTF programs loaded) usually empty.
    pub name: String,
    /// Whether this is the kernel's own BTF (vmlinux or a module's).
    pub kernel_btf: bool,
    /// Size of the raw BTF in bytes.
    pub size: u32,
    fd: OwnedFd,
}

impl BtfObject {
    /// Whether this is a kernel module's BTF.
    pub fn is_module(&self) -> bool {
        self.kernel_btf && self.name != VMLINUX
    }

    /// The open file descriptor of the object.
    pub fn fd(&self) -> BorrowedFd<'_> {
        self.fd.as_fd()
    }

    /// The object's raw BTF (for a module: split BTF on top of vmlinux).
    pub fn raw(&self) -> Result<Vec<u8>, KernelError> {
        let mut data = vec![0u8; self.size as usize];
        let mut info = sys::BtfInfo {
            btf: sys::ptr_u64(data.as_mut_ptr()),
            btf_size: self.size,
            ..Default::default()
        };
        btf_info(self.fd.as_fd(), &mut info).map_err(|errno| {
            KernelError::syscall(
                format!(
                    "{} reading BTF object {} (`{}`)",
                    Cmd::ObjGetInfoByFd,
                    self.id,
                    self.name
                ),
                errno,
            )
        })?;
        // The kernel reports the whole size; an object does not change, but never trust a size.
        data.truncate(info.btf_size as usize);
        Ok(data)
    }
}

/// Every BTF object the kernel holds, in id order.
pub fn btf_objects() -> Result<Vec<BtfObject>, KernelError> {
    let mut out = Vec::new();
    let mut id = 0u32;
    loop {
        let mut next = sys::GetIdAttr {
            id,
            ..Default::default()
        };
        // SAFETY: BTF_GET_NEXT_ID reads no pointers.
        match unsafe { sys::sys_bpf(Cmd::BtfGetNextId, &mut next) } {
            Ok(_) => {}
            Err(errno) if errno.0 == libc::ENOENT => return Ok(out),
            Err(errno) => {
                return Err(KernelError::syscall(
                    format!("{} after BTF id {id}", Cmd::BtfGetNextId),
                    errno,
                ))
            }
        }
        if next.next_id <= id {
            return Err(KernelError::System(format!(
                "{} after BTF id {id} gave id {}, not a larger one",
                Cmd::BtfGetNextId,
                next.next_id
            )));
        }
        id = next.next_id;
        if let Some(object) = open(id)? {
            out.push(object);
        }
    }
}

/// The BTF object `id`, opened and described; `None` when it went away since it was listed.
fn open(id: u32) -> Result<Option<BtfObject>, KernelError> {
    let mut attr = sys::GetIdAttr {
        id,
        ..Default::default()
    };
    // SAFETY: BTF_GET_FD_BY_ID reads no pointers.
    let fd = match unsafe { sys::sys_bpf(Cmd::BtfGetFdById, &mut attr) } {
        Ok(fd) => fd_from_ret(fd),
        Err(errno) if errno.0 == libc::ENOENT => return Ok(None),
        Err(errno) => {
            return Err(KernelError::syscall(
                format!("{} for BTF id {id}", Cmd::BtfGetFdById),
                errno,
            ))
        }
    };
    let mut name = [0u8; NAME_LEN];
    let mut info = sys::BtfInfo {
        name: sys::ptr_u64(name.as_mut_ptr()),
        name_len: NAME_LEN as u32,
        ..Default::default()
    };
    btf_info(fd.as_fd(), &mut info).map_err(|errno| {
        KernelError::syscall(format!("{} for BTF id {id}", Cmd::ObjGetInfoByFd), errno)
    })?;
    let end = name.iter().position(|&b| b == 0).unwrap_or(NAME_LEN);
    Ok(Some(BtfObject {
        id,
        name: String::from_utf8_lossy(&name[..end]).into_owned(),
        kernel_btf: info.kernel_btf != 0,
        size: info.btf_size,
        fd,
    }))
}

/// `BPF_OBJ_GET_INFO_BY_FD` on a BTF fd into `info` (whose buffers, if any, must be valid).
fn btf_info(fd: BorrowedFd<'_>, info: &mut sys::BtfInfo) -> Result<(), sys::Errno> {
    let mut attr = sys::InfoAttr {
        bpf_fd: fd.as_raw_fd() as u32,
        info_len: std::mem::size_of::<sys::BtfInfo>() as u32,
        info: sys::ptr_u64(info as *mut sys::BtfInfo),
    };
    // SAFETY: `info` is writable for `info_len` bytes; its `btf` and `name` pointers are null or
    // point at buffers of `btf_size` and `name_len` bytes (the callers' contract), all alive for
    // the call.
    unsafe { sys::sys_bpf(Cmd::ObjGetInfoByFd, &mut attr) }?;
    Ok(())
}

/// A kernel module's BTF as kfunc resolution uses it: its name, its BTF object's open fd (what a
/// program load passes in `fd_array`) and the functions its BTF defines.
#[derive(Debug)]
pub struct ModuleBtf {
    name: String,
    fd: OwnedFd,
    funcs: KernelFuncs,
}

impl ModuleBtf {
    /// A module table entry (tests build entries with injected functions).
    pub(crate) fn new(name: &str, fd: OwnedFd, funcs: KernelFuncs) -> ModuleBtf {
        ModuleBtf {
            name: name.to_string(),
            fd,
            funcs,
        }
    }

    /// The module's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The open fd of the module's BTF object.
    pub fn fd(&self) -> BorrowedFd<'_> {
        self.fd.as_fd()
    }

    /// The functions the module's BTF defines (not vmlinux's).
    pub fn funcs(&self) -> &KernelFuncs {
        &self.funcs
    }
}

/// The running kernel's modules with BTF, in BTF id order, read once per process.
pub fn module_btfs() -> Result<&'static [ModuleBtf], KernelError> {
    static MODULES: OnceLock<Result<Vec<ModuleBtf>, KernelError>> = OnceLock::new();
    MODULES
        .get_or_init(read_module_btfs)
        .as_ref()
        .map(Vec::as_slice)
        .map_err(Clone::clone)
}

fn read_module_btfs() -> Result<Vec<ModuleBtf>, KernelError> {
    let objects: Vec<BtfObject> = btf_objects()?
        .into_iter()
        .filter(BtfObject::is_module)
        .collect();
    if objects.is_empty() {
        return Ok(Vec::new());
    }
    let vmlinux =
        running_kernel_btf_shared().map_err(|e| KernelError::System(format!("kernel BTF: {e}")))?;
    objects
        .into_iter()
        .map(|object| {
            let funcs = module_funcs(&object.raw()?, vmlinux).map_err(|e| {
                KernelError::System(format!(
                    "BTF of kernel module `{}` (BTF id {}): {e}",
                    object.name, object.id
                ))
            })?;
            Ok(ModuleBtf::new(&object.name, object.fd, funcs))
        })
        .collect()
}

/// The functions a module's raw split BTF defines on top of `vmlinux`.
fn module_funcs(raw: &[u8], vmlinux: &Arc<Btf>) -> Result<KernelFuncs, BtfError> {
    Btf::parse_split(raw, Arc::clone(vmlinux)).map(|btf| KernelFuncs::of(&btf))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A module-like split BTF on the running kernel's: `FUNC_PROTO void(void)`, then
    /// `FUNC fake_mod_kfunc` of it and a `FUNC` named with vmlinux's string for
    /// `bpf_iter_num_new`. Its functions are its own two, numbered after vmlinux's last type.
    #[test]
    fn a_module_btf_defines_its_own_functions_after_vmlinux() {
        let Ok(vmlinux) = running_kernel_btf_shared() else {
            panic!("this test needs {}", linerate_bpf::core_relo::VMLINUX_BTF);
        };
        let (_, iter_new) = vmlinux
            .types()
            .find(|(_, t)| vmlinux.name(t).is_ok_and(|n| n == "bpf_iter_num_new"))
            .expect("bpf_iter_num_new in vmlinux");
        let start_id = vmlinux.start_id() + vmlinux.len() as u32;
        let own_name = vmlinux_strings_len();
        let func = 12 << 24 | 1; // BTF_KIND_FUNC, global linkage
        let proto = 13 << 24; // BTF_KIND_FUNC_PROTO, no parameters
        let words = [
            0,
            proto,
            0,
            own_name,
            func,
            start_id,
            iter_new.name_off,
            func,
            start_id,
        ];
        let strings = b"fake_mod_kfunc\0";
        let mut raw = Vec::new();
        raw.extend_from_slice(&0xeb9fu16.to_le_bytes());
        raw.extend_from_slice(&[1, 0]);
        let type_len = (words.len() * 4) as u32;
        for w in [24, 0, type_len, type_len, strings.len() as u32] {
            raw.extend_from_slice(&w.to_le_bytes());
        }
        for w in words {
            raw.extend_from_slice(&w.to_le_bytes());
        }
        raw.extend_from_slice(strings);

        let funcs = module_funcs(&raw, vmlinux).unwrap();
        assert_eq!(funcs.id("fake_mod_kfunc"), Some(start_id + 1));
        assert_eq!(funcs.id("bpf_iter_num_new"), Some(start_id + 2));
        assert_eq!(funcs.id("bpf_iter_num_next"), None);
        // A truncated module BTF is an error, not a panic.
        assert!(module_funcs(&raw[..raw.len() - 20], vmlinux).is_err());
    }

    /// The length of vmlinux's string section, from its BTF header (`str_len`, bytes 20..24).
    fn vmlinux_strings_len() -> u32 {
        let raw = std::fs::read(linerate_bpf::core_relo::VMLINUX_BTF).unwrap();
        u32::from_le_bytes([raw[20], raw[21], raw[22], raw[23]])
    }

    /// This kernel's BTF objects include vmlinux, flagged as the kernel's, whose raw BTF is
    /// `/sys/kernel/btf/vmlinux`; modules with BTF are exactly the `/sys/kernel/btf` entries
    /// other than vmlinux (none on the development machine).
    #[test]
    fn the_walk_finds_vmlinux_and_the_modules_sysfs_lists() {
        if !crate::usable_or_skip("the_walk_finds_vmlinux_and_the_modules_sysfs_lists") {
            return;
        }
        let objects = btf_objects().unwrap();
        let vmlinux: Vec<&BtfObject> = objects.iter().filter(|o| o.name == VMLINUX).collect();
        assert_eq!(vmlinux.len(), 1, "{objects:?}");
        assert!(vmlinux[0].kernel_btf);
        assert!(!vmlinux[0].is_module());
        let sysfs = std::fs::read(linerate_bpf::core_relo::VMLINUX_BTF).unwrap();
        assert_eq!(vmlinux[0].raw().unwrap(), sysfs);
        let ids: Vec<u32> = objects.iter().map(|o| o.id).collect();
        assert!(ids.windows(2).all(|w| w[0] < w[1]), "{ids:?}");

        let mut in_sysfs: Vec<String> = std::fs::read_dir("/sys/kernel/btf")
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|n| n != VMLINUX)
            .collect();
        in_sysfs.sort();
        let mut walked: Vec<String> = module_btfs()
            .unwrap()
            .iter()
            .map(|m| m.name().to_string())
            .collect();
        walked.sort();
        assert_eq!(walked, in_sysfs);
    }
}
