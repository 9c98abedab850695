//! Handing an object's BTF to the kernel, as libbpf does: `BPF_BTF_LOAD` of the fixed-up `.BTF`
//! ([`linerate_bpf::program::ObjectBtf::kernel_bytes`]), then its file descriptor with each
//! program's `func_info` and `line_info` at `BPF_PROG_LOAD` (global functions, `bpf_loop`
//! callbacks and kfunc calls need them; verifier logs then show source lines) and with each BTF
//! map's key and value type ids at `BPF_MAP_CREATE` (`bpf_spin_lock` values need them).
//!
//! BTF is best effort: an object without BTF, or whose BTF the kernel refuses, loads without it
//! where its programs allow, and [`ObjectBtfFd::note`] says what happened; it is shown only in the
//! verifier log of a program that is refused, and by [`crate::LoadedObject::btf_note`].

use std::os::fd::{AsRawFd, OwnedFd};

use linerate_bpf::program::ObjectBtf;
use linerate_bpf::{MapDef, Object, Program};

use crate::sys::{self, Cmd};

/// Verifier log buffer for a refused `BPF_BTF_LOAD`.
const BTF_LOG_SIZE: usize = 1 << 16;
/// `line_info` packs the line above the low 10 bits of the column (`BPF_LINE_INFO_LINE_NUM`).
const LINE_SHIFT: u32 = 10;
/// Largest column `line_col` can hold.
const COLUMN_MAX: u32 = (1 << LINE_SHIFT) - 1;

/// The object's BTF as loaded into the kernel, or why it is not.
#[derive(Debug, Default)]
pub(crate) struct ObjectBtfFd<'o> {
    fd: Option<OwnedFd>,
    btf: Option<&'o ObjectBtf>,
    /// What happened to the object's BTF when it was not loaded or not used.
    pub(crate) note: Option<String>,
}

/// One program's `func_info` and `line_info` as `BPF_PROG_LOAD` reads them.
#[derive(Debug, Default)]
pub(crate) struct ProgramRecords {
    func_info: Vec<sys::FuncInfoRec>,
    line_info: Vec<sys::LineInfoRec>,
}

impl<'o> ObjectBtfFd<'o> {
    /// Loads `obj`'s BTF, or records why it cannot be.
    pub(crate) fn load(obj: &'o Object) -> ObjectBtfFd<'o> {
        let Some(btf) = obj.btf.as_ref() else {
            return ObjectBtfFd::default();
        };
        let refused = |why: String| ObjectBtfFd {
            note: Some(format!("linerate: loaded without BTF: {why}")),
            ..ObjectBtfFd::default()
        };
        let bytes = match &btf.kernel_bytes {
            Ok(bytes) => bytes,
            Err(why) => return refused(format!("the object's BTF cannot be fixed up: {why}")),
        };
        match btf_load(bytes) {
            Ok(fd) => ObjectBtfFd {
                fd: Some(fd),
                btf: Some(btf),
                note: btf
                    .ext_error
                    .as_ref()
                    .map(|e| format!("linerate: no func_info/line_info: {e}")),
            },
            Err(why) => refused(why),
        }
    }

    /// `(btf_fd, btf_key_type_id, btf_value_type_id)` of a map, when it has BTF types.
    pub(crate) fn map_type_ids(&self, def: &MapDef) -> Option<(u32, u32, u32)> {
        let (key, value) = self.btf?.map_type_ids(def)?;
        Some((self.fd.as_ref()?.as_raw_fd() as u32, key, value))
    }

    /// The records of `prog`, `None` without BTF.
    pub(crate) fn records(&self, prog: &Program) -> Option<ProgramRecords> {
        self.fd.as_ref()?;
        let slot = |s: usize| u32::try_from(s).unwrap_or(u32::MAX);
        Some(ProgramRecords {
            func_info: prog
                .func_info
                .iter()
                .map(|f| sys::FuncInfoRec {
                    insn_off: slot(f.slot),
                    type_id: f.type_id,
                })
                .collect(),
            line_info: prog
                .line_info
                .iter()
                .map(|l| sys::LineInfoRec {
                    insn_off: slot(l.slot),
                    file_name_off: l.source.file_name_off,
                    line_off: l.source.line_off,
                    line_col: l.source.line << LINE_SHIFT | l.source.column.min(COLUMN_MAX),
                })
                .collect(),
        })
    }

    /// Sets `prog_btf_fd` and the records in `attr`. The records must outlive every use of
    /// `attr`.
    pub(crate) fn prog_attr(&self, records: &ProgramRecords, attr: &mut sys::ProgLoadAttr) {
        let Some(fd) = &self.fd else {
            return;
        };
        attr.prog_btf_fd = fd.as_raw_fd() as u32;
        if !records.func_info.is_empty() {
            attr.func_info_rec_size = std::mem::size_of::<sys::FuncInfoRec>() as u32;
            attr.func_info = sys::ptr_u64(records.func_info.as_ptr());
            attr.func_info_cnt = u32::try_from(records.func_info.len()).unwrap_or(u32::MAX);
        }
        if !records.line_info.is_empty() {
            attr.line_info_rec_size = std::mem::size_of::<sys::LineInfoRec>() as u32;
            attr.line_info = sys::ptr_u64(records.line_info.as_ptr());
            attr.line_info_cnt = u32::try_from(records.line_info.len()).unwrap_or(u32::MAX);
        }
    }
}

/// `BPF_BTF_LOAD`; on refusal, the errno and the kernel's BTF log.
fn btf_load(bytes: &[u8]) -> Result<OwnedFd, String> {
    let mut log = vec![0u8; BTF_LOG_SIZE];
    let mut attr = sys::BtfLoadAttr {
        btf: sys::ptr_u64(bytes.as_ptr()),
        btf_size: u32::try_from(bytes.len()).unwrap_or(u32::MAX),
        btf_log_buf: sys::ptr_u64(log.as_mut_ptr()),
        btf_log_size: BTF_LOG_SIZE as u32,
        btf_log_level: 1,
        ..Default::default()
    };
    // SAFETY: `btf` points at `btf_size` readable bytes and `btf_log_buf` at `btf_log_size`
    // writable bytes, both alive for the call.
    match unsafe { sys::sys_bpf(Cmd::BtfLoad, &mut attr) } {
        Ok(fd) => Ok(crate::object::fd_from_ret(fd)),
        Err(errno) => {
            let end = log.iter().position(|&b| b == 0).unwrap_or(log.len());
            let text = String::from_utf8_lossy(&log[..end]);
            let last = text
                .lines()
                .rev()
                .find(|l| !l.trim().is_empty())
                .unwrap_or("");
            Err(format!(
                "the kernel refused the object's BTF ({} {errno}): {last}",
                Cmd::BtfLoad
            ))
        }
    }
}

/// What the kernel kept of a loaded program's BTF (from `struct bpf_prog_info`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ProgramBtfInfo {
    /// Id of the program's BTF object (0 without BTF).
    pub btf_id: u32,
    /// Number of `func_info` records the kernel accepted.
    pub func_info: u32,
    /// Number of `line_info` records the kernel accepted.
    pub line_info: u32,
}

/// Byte offsets in `struct bpf_prog_info` (include/uapi/linux/bpf.h) of `btf_id`, `nr_func_info`
/// and `nr_line_info`, and the length read up to them.
const INFO_BTF_ID: usize = 128;
const INFO_NR_FUNC_INFO: usize = 144;
const INFO_NR_LINE_INFO: usize = 148;
const INFO_LEN: usize = 152;

impl crate::LoadedObject {
    /// The BTF the kernel holds for program `index`.
    pub fn program_btf_info(
        &self,
        index: usize,
    ) -> Result<ProgramBtfInfo, crate::error::KernelError> {
        let (name, fd) = self.program(index)?;
        let mut info = [0u64; INFO_LEN / 8];
        let mut attr = sys::InfoAttr {
            bpf_fd: fd.as_raw_fd() as u32,
            info_len: INFO_LEN as u32,
            info: sys::ptr_u64(info.as_mut_ptr()),
        };
        // SAFETY: `info` is writable for `info_len` bytes; with every count 0 the kernel writes
        // through no other pointer.
        unsafe { sys::sys_bpf(Cmd::ObjGetInfoByFd, &mut attr) }.map_err(|errno| {
            crate::error::KernelError::syscall(
                format!("{} for program `{name}`", Cmd::ObjGetInfoByFd),
                errno,
            )
        })?;
        let bytes: Vec<u8> = info.iter().flat_map(|w| w.to_le_bytes()).collect();
        let word = |at: usize| {
            u32::from_le_bytes([bytes[at], bytes[at + 1], bytes[at + 2], bytes[at + 3]])
        };
        Ok(ProgramBtfInfo {
            btf_id: word(INFO_BTF_ID),
            func_info: word(INFO_NR_FUNC_INFO),
            line_info: word(INFO_NR_LINE_INFO),
        })
    }
}
