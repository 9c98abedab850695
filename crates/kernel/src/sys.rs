//! The raw `bpf(2)` system call: command numbers, the attribute structs of exactly the commands
//! linerate uses, and errno values.
//!
//! Every attribute struct mirrors one member of the kernel's `union bpf_attr`
//! (`/usr/include/linux/bpf.h`) field for field, with explicit padding fields so that the struct has
//! no implicit padding bytes. [`sys_bpf`] copies the struct into a zeroed buffer the size of the
//! whole union and passes that buffer, so every field linerate does not set is zero, as the kernel
//! requires (`CHECK_ATTR`). Output fields the kernel writes are copied back into the struct.

use linerate_bpf::facts::xdp_md;
use std::ffi::c_long;
use std::fmt;

/// `enum bpf_cmd` values used by this crate.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u32)]
pub(crate) enum Cmd {
    MapCreate = 0,
    MapLookupElem = 1,
    MapUpdateElem = 2,
    MapDeleteElem = 3,
    MapGetNextKey = 4,
    ProgLoad = 5,
    ProgTestRun = 10,
    ObjGetInfoByFd = 15,
    BtfLoad = 18,
    BtfGetFdById = 19,
    MapLookupAndDeleteElem = 21,
    MapFreeze = 22,
    BtfGetNextId = 23,
    MapLookupBatch = 24,
    MapUpdateBatch = 26,
}

impl Cmd {
    /// The UAPI name of the command, for error messages.
    pub(crate) fn name(self) -> &'static str {
        match self {
            Cmd::MapCreate => "BPF_MAP_CREATE",
            Cmd::MapLookupElem => "BPF_MAP_LOOKUP_ELEM",
            Cmd::MapUpdateElem => "BPF_MAP_UPDATE_ELEM",
            Cmd::MapDeleteElem => "BPF_MAP_DELETE_ELEM",
            Cmd::MapGetNextKey => "BPF_MAP_GET_NEXT_KEY",
            Cmd::ProgLoad => "BPF_PROG_LOAD",
            Cmd::ProgTestRun => "BPF_PROG_TEST_RUN",
            Cmd::ObjGetInfoByFd => "BPF_OBJ_GET_INFO_BY_FD",
            Cmd::BtfLoad => "BPF_BTF_LOAD",
            Cmd::BtfGetFdById => "BPF_BTF_GET_FD_BY_ID",
            Cmd::BtfGetNextId => "BPF_BTF_GET_NEXT_ID",
            Cmd::MapLookupAndDeleteElem => "BPF_MAP_LOOKUP_AND_DELETE_ELEM",
            Cmd::MapFreeze => "BPF_MAP_FREEZE",
            Cmd::MapLookupBatch => "BPF_MAP_LOOKUP_BATCH",
            Cmd::MapUpdateBatch => "BPF_MAP_UPDATE_BATCH",
        }
    }
}

impl fmt::Display for Cmd {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// `BPF_OBJ_NAME_LEN`: map and program names are at most 15 bytes plus a NUL.
pub(crate) const OBJ_NAME_LEN: usize = 16;

/// `BPF_PROG_TYPE_XDP`.
pub(crate) const PROG_TYPE_XDP: u32 = 6;
/// `BPF_XDP_DEVMAP` (expected attach type of `xdp/devmap` programs).
pub(crate) const ATTACH_XDP_DEVMAP: u32 = 33;
/// `BPF_XDP_CPUMAP` (expected attach type of `xdp/cpumap` programs).
pub(crate) const ATTACH_XDP_CPUMAP: u32 = 35;
/// `BPF_XDP` (expected attach type of ordinary XDP programs).
pub(crate) const ATTACH_XDP: u32 = 37;
/// `BPF_F_XDP_HAS_FRAGS` program flag (`xdp.frags` sections).
pub(crate) const F_XDP_HAS_FRAGS: u32 = 1 << 5;

/// `BPF_F_NO_PREALLOC` map flag (required by `LPM_TRIE`).
pub(crate) const F_NO_PREALLOC: u32 = 1 << 0;
/// `BPF_F_ZERO_SEED` map flag: a hash map hashes with seed 0 instead of a random one
/// (`kernel/bpf/hashtab.c`, `htab_map_alloc`; needs CAP_SYS_ADMIN).
pub(crate) const F_ZERO_SEED: u32 = 1 << 6;
/// `BPF_F_RDONLY_PROG` map flag (programs may only read the map).
pub(crate) const F_RDONLY_PROG: u32 = 1 << 7;
/// `BPF_F_MMAPABLE` map flag: an array whose values user space may `mmap` (Linux 5.5+;
/// `kernel/bpf/arraymap.c`, `array_map_mmap`: the values start at offset 0 of the mapping, one
/// `round_up(value_size, 8)`-byte element per index).
pub(crate) const F_MMAPABLE: u32 = 1 << 10;

/// `BPF_ANY` update flag: create or replace.
pub(crate) const UPDATE_ANY: u64 = 0;

/// Size of `union bpf_attr` in the UAPI header this crate was written against. Passing a larger
/// size than the running kernel knows is fine as long as the extra bytes are zero; a smaller one is
/// zero-extended by the kernel.
pub(crate) const ATTR_SIZE: usize = 144;

/// Attribute structs that may be passed to [`sys_bpf`].
///
/// # Safety
///
/// Implementors must be `#[repr(C)]`, consist only of integer fields and integer arrays (so every
/// byte pattern is a valid value), have no implicit padding bytes, and be at most [`ATTR_SIZE`]
/// bytes long.
pub(crate) unsafe trait Attr: Copy + Default {}

/// `BPF_MAP_CREATE` attributes.
#[repr(C)]
#[derive(Clone, Copy, Default, Debug)]
pub(crate) struct MapCreateAttr {
    pub map_type: u32,
    pub key_size: u32,
    pub value_size: u32,
    pub max_entries: u32,
    pub map_flags: u32,
    pub inner_map_fd: u32,
    pub numa_node: u32,
    pub map_name: [u8; OBJ_NAME_LEN],
    pub map_ifindex: u32,
    pub btf_fd: u32,
    pub btf_key_type_id: u32,
    pub btf_value_type_id: u32,
    pub btf_vmlinux_value_type_id: u32,
    pub map_extra: u64,
}

// SAFETY: repr(C), integers only, 72 bytes with no implicit padding (checked below).
unsafe impl Attr for MapCreateAttr {}

/// `BPF_MAP_*_ELEM`, `BPF_MAP_GET_NEXT_KEY` and `BPF_MAP_FREEZE` attributes (`value` doubles as
/// `next_key`).
#[repr(C)]
#[derive(Clone, Copy, Default, Debug)]
pub(crate) struct MapElemAttr {
    pub map_fd: u32,
    pub _pad: u32,
    pub key: u64,
    pub value: u64,
    pub flags: u64,
}

// SAFETY: repr(C), integers only, 32 bytes with no implicit padding (checked below).
unsafe impl Attr for MapElemAttr {}

/// `BPF_MAP_*_BATCH` attributes (`in_batch`/`out_batch` point at an opaque position the kernel
/// writes and reads back: a bucket index for hash maps, a key for arrays).
#[repr(C)]
#[derive(Clone, Copy, Default, Debug)]
pub(crate) struct MapBatchAttr {
    pub in_batch: u64,
    pub out_batch: u64,
    pub keys: u64,
    pub values: u64,
    /// In: elements `keys`/`values` have room for; out: elements written.
    pub count: u32,
    pub map_fd: u32,
    pub elem_flags: u64,
    pub flags: u64,
}

// SAFETY: repr(C), integers only, 56 bytes with no implicit padding (checked below).
unsafe impl Attr for MapBatchAttr {}

/// `BPF_PROG_LOAD` attributes.
#[repr(C)]
#[derive(Clone, Copy, Default, Debug)]
pub(crate) struct ProgLoadAttr {
    pub prog_type: u32,
    pub insn_cnt: u32,
    pub insns: u64,
    pub license: u64,
    pub log_level: u32,
    pub log_size: u32,
    pub log_buf: u64,
    pub kern_version: u32,
    pub prog_flags: u32,
    pub prog_name: [u8; OBJ_NAME_LEN],
    pub prog_ifindex: u32,
    pub expected_attach_type: u32,
    pub prog_btf_fd: u32,
    pub func_info_rec_size: u32,
    pub func_info: u64,
    pub func_info_cnt: u32,
    pub line_info_rec_size: u32,
    pub line_info: u64,
    pub line_info_cnt: u32,
    pub attach_btf_id: u32,
    pub attach_prog_fd: u32,
    pub core_relo_cnt: u32,
    pub fd_array: u64,
    pub core_relos: u64,
    pub core_relo_rec_size: u32,
    /// Output (Linux 6.4+): the log size the verifier needed; stays 0 on older kernels.
    pub log_true_size: u32,
}

// SAFETY: repr(C), integers only, 144 bytes with no implicit padding (checked below).
unsafe impl Attr for ProgLoadAttr {}

/// `BPF_PROG_TEST_RUN` attributes.
#[repr(C)]
#[derive(Clone, Copy, Default, Debug)]
pub(crate) struct TestRunAttr {
    pub prog_fd: u32,
    pub retval: u32,
    pub data_size_in: u32,
    pub data_size_out: u32,
    pub data_in: u64,
    pub data_out: u64,
    pub repeat: u32,
    pub duration: u32,
    pub ctx_size_in: u32,
    pub ctx_size_out: u32,
    pub ctx_in: u64,
    pub ctx_out: u64,
    pub flags: u32,
    pub cpu: u32,
    pub batch_size: u32,
    pub _pad: u32,
}

// SAFETY: repr(C), integers only, 80 bytes with no implicit padding (checked below).
unsafe impl Attr for TestRunAttr {}

/// `BPF_BTF_LOAD` attributes (up to `btf_log_true_size`; `btf_flags` and `btf_token_fd` stay 0).
#[repr(C)]
#[derive(Clone, Copy, Default, Debug)]
pub(crate) struct BtfLoadAttr {
    pub btf: u64,
    pub btf_log_buf: u64,
    pub btf_size: u32,
    pub btf_log_size: u32,
    pub btf_log_level: u32,
    /// Output: the log size the kernel needed.
    pub btf_log_true_size: u32,
}

// SAFETY: repr(C), integers only, 32 bytes with no implicit padding (checked below).
unsafe impl Attr for BtfLoadAttr {}

/// `BPF_BTF_GET_NEXT_ID` (`id` is `start_id`, `next_id` the output) and `BPF_BTF_GET_FD_BY_ID`
/// (`id` is `btf_id`) attributes.
#[repr(C)]
#[derive(Clone, Copy, Default, Debug)]
pub(crate) struct GetIdAttr {
    pub id: u32,
    pub next_id: u32,
    pub open_flags: u32,
}

// SAFETY: repr(C), integers only, 12 bytes with no implicit padding (checked below).
unsafe impl Attr for GetIdAttr {}

/// `struct bpf_btf_info` (include/uapi/linux/bpf.h), filled by `BPF_OBJ_GET_INFO_BY_FD` on a BTF
/// fd: `btf`/`btf_size` a buffer for the raw BTF (the kernel sets `btf_size` to the whole size),
/// `name`/`name_len` one for the name (vmlinux or the module's), `kernel_btf` non-zero for the
/// kernel's own BTF objects (vmlinux and modules) as opposed to BTF loaded by programs.
#[repr(C)]
#[derive(Clone, Copy, Default, Debug)]
pub(crate) struct BtfInfo {
    pub btf: u64,
    pub btf_size: u32,
    pub id: u32,
    pub name: u64,
    pub name_len: u32,
    pub kernel_btf: u32,
}

/// `struct bpf_func_info` as `BPF_PROG_LOAD` reads it: `insn_off` in instructions.
#[repr(C)]
#[derive(Clone, Copy, Default, Debug, PartialEq, Eq)]
pub(crate) struct FuncInfoRec {
    pub insn_off: u32,
    pub type_id: u32,
}

/// `struct bpf_line_info` as `BPF_PROG_LOAD` reads it: `insn_off` in instructions, the strings as
/// offsets into the BTF's string section, `line_col` = line << 10 | column.
#[repr(C)]
#[derive(Clone, Copy, Default, Debug, PartialEq, Eq)]
pub(crate) struct LineInfoRec {
    pub insn_off: u32,
    pub file_name_off: u32,
    pub line_off: u32,
    pub line_col: u32,
}

/// `BPF_OBJ_GET_INFO_BY_FD` attributes.
#[repr(C)]
#[derive(Clone, Copy, Default, Debug)]
pub(crate) struct InfoAttr {
    pub bpf_fd: u32,
    pub info_len: u32,
    pub info: u64,
}

// SAFETY: repr(C), integers only, 16 bytes with no implicit padding (checked below).
unsafe impl Attr for InfoAttr {}

/// The leading fields of `struct bpf_prog_info` (the kernel fills at most `info_len` bytes).
#[repr(C)]
#[derive(Clone, Copy, Default, Debug)]
pub(crate) struct ProgInfoHead {
    pub prog_type: u32,
    pub id: u32,
}

/// The leading fields of `struct bpf_map_info` (include/uapi/linux/bpf.h; the kernel fills at
/// most `info_len` bytes).
#[repr(C)]
#[derive(Clone, Copy, Default, Debug)]
pub(crate) struct MapInfoHead {
    pub map_type: u32,
    pub id: u32,
}

/// `struct xdp_md`, the XDP context as passed to `BPF_PROG_TEST_RUN` in `ctx_in`/`ctx_out`.
#[repr(C)]
#[derive(Clone, Copy, Default, Debug, PartialEq, Eq)]
pub(crate) struct XdpMd {
    pub data: u32,
    pub data_end: u32,
    pub data_meta: u32,
    pub ingress_ifindex: u32,
    pub rx_queue_index: u32,
    pub egress_ifindex: u32,
}

const _: () = {
    assert!(std::mem::size_of::<MapCreateAttr>() == 72);
    assert!(std::mem::size_of::<MapElemAttr>() == 32);
    assert!(std::mem::size_of::<MapBatchAttr>() == 56);
    assert!(std::mem::size_of::<ProgLoadAttr>() == ATTR_SIZE);
    assert!(std::mem::size_of::<TestRunAttr>() == 80);
    assert!(std::mem::size_of::<InfoAttr>() == 16);
    assert!(std::mem::size_of::<BtfLoadAttr>() == 32);
    assert!(std::mem::size_of::<GetIdAttr>() == 12);
    assert!(std::mem::size_of::<BtfInfo>() == 32);
    assert!(std::mem::size_of::<FuncInfoRec>() == 8);
    assert!(std::mem::size_of::<LineInfoRec>() == 16);
    assert!(std::mem::size_of::<ProgInfoHead>() == 8);
    assert!(std::mem::size_of::<XdpMd>() == xdp_md::SIZE as usize);
    // The layout is the one `linerate_bpf::facts::xdp_md` names.
    assert!(std::mem::offset_of!(XdpMd, data) == xdp_md::DATA as usize);
    assert!(std::mem::offset_of!(XdpMd, data_end) == xdp_md::DATA_END as usize);
    assert!(std::mem::offset_of!(XdpMd, data_meta) == xdp_md::DATA_META as usize);
    assert!(std::mem::offset_of!(XdpMd, ingress_ifindex) == xdp_md::INGRESS_IFINDEX as usize);
    assert!(std::mem::offset_of!(XdpMd, rx_queue_index) == xdp_md::RX_QUEUE_INDEX as usize);
    assert!(std::mem::offset_of!(XdpMd, egress_ifindex) == xdp_md::EGRESS_IFINDEX as usize);
};

/// A buffer the size and alignment of `union bpf_attr`.
#[repr(C, align(8))]
struct AttrBuf([u8; ATTR_SIZE]);

/// How often a command is issued while it fails because a signal was pending for the calling
/// thread, which is transient: the verifier then gives up with `EAGAIN` (kernel/bpf/verifier.c
/// `do_check`; libbpf retries the same way, tools/lib/bpf/bpf.c `PROG_LOAD_ATTEMPTS`), and a
/// repeated test run stops between runs with `EINTR` (net/bpf/test_run.c
/// `bpf_test_timer_continue`; seen in CI on a 3-run call). Every attempt starts from the caller's
/// attribute buffer, so a retried test run starts again from its input packet.
const SIGNAL_ATTEMPTS: u32 = 5;

/// The errno with which `cmd` reports that a pending signal interrupted it, if it is retried.
fn interrupted_errno(cmd: Cmd) -> Option<i32> {
    match cmd {
        Cmd::ProgLoad => Some(libc::EAGAIN),
        Cmd::ProgTestRun => Some(libc::EINTR),
        _ => None,
    }
}

/// Issues `bpf(cmd, attr, ATTR_SIZE)` with `attr` copied into a zeroed union-sized buffer, and
/// copies the buffer back into `attr` afterwards (output fields); a command a pending signal
/// interrupted is issued again, up to [`SIGNAL_ATTEMPTS`] times. Returns the non-negative result
/// (a new file descriptor for creating commands) or the errno.
///
/// # Safety
///
/// Every pointer stored in `attr` (as a `u64`) must be null or valid for the reads and writes the
/// command performs through it, with the lengths given in `attr` (or implied by the map's key and
/// value sizes for element commands), for the duration of the call.
pub(crate) unsafe fn sys_bpf<T: Attr>(cmd: Cmd, attr: &mut T) -> Result<c_long, Errno> {
    let n = std::mem::size_of::<T>().min(ATTR_SIZE);
    let mut buf = AttrBuf([0; ATTR_SIZE]);
    let interrupted = interrupted_errno(cmd);
    let mut attempts_left = if interrupted.is_some() {
        SIGNAL_ATTEMPTS
    } else {
        1
    };
    let (ret, errno) = loop {
        // SAFETY: `T: Attr` has no padding bytes, so its first `n` bytes are initialised; `buf`
        // holds `ATTR_SIZE >= n` bytes and does not overlap `attr`.
        unsafe {
            std::ptr::copy_nonoverlapping((attr as *const T).cast::<u8>(), buf.0.as_mut_ptr(), n)
        };
        // SAFETY: `buf` is a valid, writable `ATTR_SIZE`-byte attribute buffer; the pointers
        // inside it are valid per this function's contract.
        let ret = unsafe {
            libc::syscall(
                libc::SYS_bpf,
                cmd as u32 as c_long,
                buf.0.as_mut_ptr(),
                ATTR_SIZE as c_long,
            )
        };
        let errno = Errno::last();
        attempts_left -= 1;
        if ret >= 0 || Some(errno.0) != interrupted || attempts_left == 0 {
            break (ret, errno);
        }
    };
    // SAFETY: every byte pattern is a valid `T` (`T: Attr`), `attr` is writable for `n` bytes and
    // does not overlap `buf`.
    unsafe {
        std::ptr::copy_nonoverlapping(buf.0.as_ptr(), (attr as *mut T).cast::<u8>(), n);
    }
    if ret < 0 {
        Err(errno)
    } else {
        Ok(ret)
    }
}

/// A raw pointer as the `u64` the kernel expects in attribute structs.
pub(crate) fn ptr_u64<T>(p: *const T) -> u64 {
    p as usize as u64
}

/// An object name (`map_name`, `prog_name`): at most 15 bytes of `[A-Za-z0-9_.]` (other bytes
/// become `_`), NUL-terminated.
pub(crate) fn obj_name(name: &str) -> [u8; OBJ_NAME_LEN] {
    let mut out = [0u8; OBJ_NAME_LEN];
    for (slot, b) in out.iter_mut().zip(name.bytes().take(OBJ_NAME_LEN - 1)) {
        *slot = if b.is_ascii_alphanumeric() || b == b'_' || b == b'.' {
            b
        } else {
            b'_'
        };
    }
    out
}

/// An `errno` value returned by a system call.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Errno(pub i32);

/// The kernel-internal `ENOTSUPP` (524), which leaks to user space from some BPF paths.
pub const ENOTSUPP: i32 = 524;

impl Errno {
    /// The calling thread's current `errno`.
    pub fn last() -> Errno {
        Errno(std::io::Error::last_os_error().raw_os_error().unwrap_or(0))
    }

    /// The symbolic name (`EINVAL`), or `errno N` when unknown.
    pub fn name(self) -> String {
        let known = match self.0 {
            libc::EPERM => "EPERM",
            libc::ENOENT => "ENOENT",
            libc::ESRCH => "ESRCH",
            libc::EINTR => "EINTR",
            libc::EIO => "EIO",
            libc::ENXIO => "ENXIO",
            libc::E2BIG => "E2BIG",
            libc::EBADF => "EBADF",
            libc::EAGAIN => "EAGAIN",
            libc::ENOMEM => "ENOMEM",
            libc::EACCES => "EACCES",
            libc::EFAULT => "EFAULT",
            libc::EBUSY => "EBUSY",
            libc::EEXIST => "EEXIST",
            libc::ENODEV => "ENODEV",
            libc::EINVAL => "EINVAL",
            libc::ENFILE => "ENFILE",
            libc::EMFILE => "EMFILE",
            libc::EFBIG => "EFBIG",
            libc::ENOSPC => "ENOSPC",
            libc::ERANGE => "ERANGE",
            libc::ENOSYS => "ENOSYS",
            libc::ELOOP => "ELOOP",
            libc::EMSGSIZE => "EMSGSIZE",
            libc::EPROTO => "EPROTO",
            libc::EOPNOTSUPP => "EOPNOTSUPP",
            ENOTSUPP => "ENOTSUPP",
            _ => "",
        };
        if known.is_empty() {
            format!("errno {}", self.0)
        } else {
            known.to_string()
        }
    }

    /// The C library's message for this errno (`Invalid argument`), without the `(os error N)`
    /// suffix Rust appends.
    pub fn message(self) -> String {
        if self.0 == ENOTSUPP {
            return "Operation not supported by the kernel".to_string();
        }
        let text = std::io::Error::from_raw_os_error(self.0).to_string();
        match text.rfind(" (os error") {
            Some(i) => text[..i].to_string(),
            None => text,
        }
    }
}

impl fmt::Display for Errno {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} ({})", self.message(), self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_sanitised_and_truncated() {
        assert_eq!(&obj_name("flows")[..6], b"flows\0");
        assert_eq!(&obj_name("a-b c.d")[..8], b"a_b_c.d\0");
        let long = obj_name("a_very_long_map_name_indeed");
        assert_eq!(&long[..15], b"a_very_long_map");
        assert_eq!(long[15], 0);
    }

    #[test]
    fn errno_display() {
        assert_eq!(Errno(libc::EINVAL).to_string(), "Invalid argument (EINVAL)");
        assert_eq!(
            Errno(libc::EACCES).to_string(),
            "Permission denied (EACCES)"
        );
        assert_eq!(Errno(ENOTSUPP).name(), "ENOTSUPP");
    }
}
