//! Facts of the Linux kernel that BPF programs and linerate depend on, each named once: XDP
//! actions, the `struct xdp_md` context, the packet buffer `BPF_PROG_TEST_RUN` builds, the
//! verifier's and interpreter's limits, the errno values helpers return, and helper numbers
//! ([`helper`]). Every other crate uses these names instead of the numbers.

pub use crate::helpers::id as helper;

/// XDP actions: what an XDP program's return value tells the driver (`enum xdp_action`).
pub mod xdp {
    pub const XDP_ABORTED: u64 = 0;
    pub const XDP_DROP: u64 = 1;
    pub const XDP_PASS: u64 = 2;
    pub const XDP_TX: u64 = 3;
    pub const XDP_REDIRECT: u64 = 4;

    /// The name of an XDP action (`XDP_UNKNOWN` for any other return value).
    pub fn action_name(action: u64) -> &'static str {
        match action {
            XDP_ABORTED => "XDP_ABORTED",
            XDP_DROP => "XDP_DROP",
            XDP_PASS => "XDP_PASS",
            XDP_TX => "XDP_TX",
            XDP_REDIRECT => "XDP_REDIRECT",
            _ => "XDP_UNKNOWN",
        }
    }
}

/// Byte offsets of the fields of `struct xdp_md`, the XDP context (all `u32`).
pub mod xdp_md {
    /// Pointer to the first packet byte (the verifier rewrites the 32-bit load into a pointer).
    pub const DATA: u64 = 0;
    /// Pointer one past the last packet byte.
    pub const DATA_END: u64 = 4;
    /// Pointer to the start of the metadata area in front of the packet.
    pub const DATA_META: u64 = 8;
    pub const INGRESS_IFINDEX: u64 = 12;
    pub const RX_QUEUE_INDEX: u64 = 16;
    pub const EGRESS_IFINDEX: u64 = 20;
    /// Size of the structure.
    pub const SIZE: u64 = 24;
}

/// The packet buffer of `BPF_PROG_TEST_RUN` for XDP (net/bpf/test_run.c, include/net/xdp.h):
/// where `bpf_xdp_adjust_head/meta/tail` succeed and fail.
pub mod test_run_buffer {
    /// Bytes of one page, the size of the whole buffer (`frame_sz`).
    pub const FRAME_SIZE: u64 = 4096;
    /// `XDP_PACKET_HEADROOM`: bytes before the packet data.
    pub const HEADROOM: u64 = 256;
    /// `SKB_DATA_ALIGN(sizeof(struct skb_shared_info))`: bytes reserved at the end of the buffer.
    pub const SHARED_INFO: u64 = 320;
    /// `sizeof(struct xdp_frame)`: bytes at the start of the buffer the program may not reach.
    pub const XDP_FRAME: u64 = 40;
    /// `ETH_HLEN`: the smallest packet `adjust_head`/`adjust_tail` leave.
    pub const ETH_HLEN: u64 = 14;
    /// Largest metadata area: everything between the frame header and the data (this kernel has
    /// no separate cap; `xdp_metalen_invalid` only demands a multiple of 4).
    pub const MAX_META: u64 = HEADROOM - XDP_FRAME;
    /// Largest packet a single buffer holds.
    pub const MAX_DATA: u64 = FRAME_SIZE - HEADROOM - SHARED_INFO;
    /// Bytes of one fragment page: a longer packet's bytes past `MAX_DATA` go into fragments of
    /// this size, the last one partly filled (`bpf_prog_test_run_xdp` sets the loopback queue's
    /// `frag_size` to the page size; `bpf_xdp_frags_increase_tail` lets the last fragment grow
    /// up to it).
    pub const FRAG_SIZE: u64 = 4096;
    /// `MAX_SKB_FRAGS` (`CONFIG_MAX_SKB_FRAGS`, 17 on this kernel's x86-64 config): fragments one
    /// buffer holds; a longer packet makes `BPF_PROG_TEST_RUN` fail with `ENOMEM`.
    pub const MAX_FRAGS: u64 = 17;
    /// Largest packet `BPF_PROG_TEST_RUN` takes: the linear part and every fragment full.
    pub const MAX_PACKET: u64 = MAX_DATA + MAX_FRAGS * FRAG_SIZE;
}

/// Limits of the verifier and the BPF runtime.
pub mod limits {
    /// Depth of BPF-to-BPF calls (`MAX_CALL_FRAMES`).
    pub const MAX_CALL_FRAMES: usize = 8;
    /// Bytes of one function's stack frame (`MAX_BPF_STACK`).
    pub const STACK_FRAME_SIZE: u64 = 512;
    /// Tail calls one packet may make (`MAX_TAIL_CALL_CNT`).
    pub const MAX_TAIL_CALLS: u32 = 33;
    /// The `may_goto` budget of one program run (`BPF_MAX_LOOPS`; the x86-64 kernel since 6.14
    /// counts time instead, and budgets only matter to loops that exhaust them).
    pub const MAX_LOOPS: u64 = 8 * 1024 * 1024;
    /// Most iterations `bpf_loop` runs: more is refused with `-E2BIG` (`BPF_MAX_LOOPS` in
    /// kernel/bpf/bpf_iter.c).
    pub const MAX_BPF_LOOP_ITERATIONS: u64 = MAX_LOOPS;
    /// Instructions the verifier processes for one program before it gives up
    /// (`BPF_COMPLEXITY_LIMIT_INSNS`): a bounded loop it accepts, it walked through iteration
    /// by iteration within this budget.
    pub const COMPLEXITY_LIMIT_INSNS: u64 = 1_000_000;
    /// Longest metadata `bpf_xdp_adjust_meta` allows (`xdp_metalen_invalid`: it must fit
    /// `skb_shared_info.meta_len`, a `u8`); reachable once `adjust_head` moved `data` forward.
    pub const MAX_META_LEN: u64 = 255;
    /// Size of `struct bpf_fib_lookup`.
    pub const FIB_LOOKUP_PARAMS: u64 = 64;
}

/// The errno values helpers return, negated, in r0.
pub mod errno {
    pub const ENOENT: i64 = 2;
    pub const EAGAIN: i64 = 11;
    pub const E2BIG: i64 = 7;
    pub const ENOMEM: i64 = 12;
    pub const EACCES: i64 = 13;
    pub const EFAULT: i64 = 14;
    pub const EEXIST: i64 = 17;
    pub const ENODEV: i64 = 19;
    pub const EINVAL: i64 = 22;
    pub const ERANGE: i64 = 34;
    pub const EAFNOSUPPORT: i64 = 97;
}

/// What `bpf_probe_read_kernel(_str)` may read: the kernel's fault-tolerant copies
/// (`copy_from_kernel_nofault`, `strncpy_from_kernel_nofault` in mm/maccess.c) first ask
/// `copy_from_kernel_nofault_allowed` (arch/x86/mm/maccess.c), which refuses user-space addresses
/// (below `TASK_SIZE_MAX + PAGE_SIZE`), non-canonical ones and the vsyscall page with `-ERANGE`.
pub mod kernel_read {
    /// Every address below this one is refused on x86-64 whatever the page tables: it is
    /// user space or non-canonical with 4-level paging (the kernel half starts at
    /// `0xffff_8000_0000_0000`) and with 5-level paging (at `0xff00_0000_0000_0000`). Above it,
    /// whether an address is read, faults or is refused (non-canonical under the running
    /// kernel's paging level, the vsyscall page) is the running kernel's business.
    pub const LOWEST_READABLE: u64 = 0xff00_0000_0000_0000;
}

/// Names of the kernel functions (kfuncs) linerate gives a meaning to (`linerate_sem::kfuncs`).
pub mod kfunc {
    /// `int bpf_iter_num_new(struct bpf_iter_num *it, int start, int end)`
    /// (kernel/bpf/bpf_iter.c): opens the number iterator over `start..end`.
    pub const ITER_NUM_NEW: &str = "bpf_iter_num_new";
    /// `int *bpf_iter_num_next(struct bpf_iter_num *it)`: the next number, or NULL once done.
    pub const ITER_NUM_NEXT: &str = "bpf_iter_num_next";
    /// `void bpf_iter_num_destroy(struct bpf_iter_num *it)`: closes the iterator.
    pub const ITER_NUM_DESTROY: &str = "bpf_iter_num_destroy";
    /// Bytes of `struct bpf_iter_num` (`struct bpf_iter_num_kern { int cur; int end; }`).
    pub const ITER_NUM_SIZE: u64 = 8;
}

/// Flags of `bpf_map_update_elem` and `bpf_map_push_elem` (include/uapi/linux/bpf.h).
pub mod update {
    /// `BPF_ANY`: create or overwrite.
    pub const ANY: u64 = 0;
    /// `BPF_NOEXIST`: create only; an existing key fails with `-EEXIST`.
    pub const NOEXIST: u64 = 1;
    /// `BPF_F_LOCK`: update under the value's spin lock.
    pub const F_LOCK: u64 = 4;
    /// `BPF_EXIST`: for a full queue or stack, `bpf_map_push_elem` overwrites the oldest element
    /// instead of failing (kernel/bpf/queue_stack_maps.c `queue_stack_map_push_elem`).
    pub const EXIST: u64 = 2;
}

/// BPF ring buffers (`BPF_MAP_TYPE_RINGBUF`; include/uapi/linux/bpf.h, kernel/bpf/ringbuf.c).
pub mod ringbuf {
    /// `BPF_RINGBUF_HDR_SZ`: every record starts with `u32 len; u32 pg_off`.
    pub const HDR_SIZE: u64 = 8;
    /// `BPF_RINGBUF_BUSY_BIT`: set in `len` while the record is reserved, not yet committed.
    pub const BUSY_BIT: u32 = 1 << 31;
    /// `BPF_RINGBUF_DISCARD_BIT`: set in `len` of a record the program discarded.
    pub const DISCARD_BIT: u32 = 1 << 30;
    /// `RINGBUF_MAX_RECORD_SZ`: the largest record `__bpf_ringbuf_reserve` accepts.
    pub const MAX_RECORD_SIZE: u64 = (u32::MAX / 4) as u64;
    /// `BPF_RB_NO_WAKEUP | BPF_RB_FORCE_WAKEUP`: the only flags output, submit and discard take.
    pub const WAKEUP_FLAGS: u64 = 1 | 2;
    /// `bpf_ringbuf_query` flags: `BPF_RB_AVAIL_DATA`, `BPF_RB_RING_SIZE`, `BPF_RB_CONS_POS`,
    /// `BPF_RB_PROD_POS`.
    pub const AVAIL_DATA: u64 = 0;
    pub const RING_SIZE: u64 = 1;
    pub const CONS_POS: u64 = 2;
    pub const PROD_POS: u64 = 3;
}

/// `bpf_perf_event_output` from XDP (net/core/filter.c `bpf_xdp_event_output`,
/// kernel/trace/bpf_trace.c `__bpf_perf_event_output`, include/uapi/linux/bpf.h).
pub mod perf {
    /// `BPF_F_INDEX_MASK`: the low 32 bits of flags pick the map slot.
    pub const INDEX_MASK: u64 = 0xffff_ffff;
    /// `BPF_F_CURRENT_CPU`: the slot of the CPU the program runs on.
    pub const CURRENT_CPU: u64 = INDEX_MASK;
    /// `BPF_F_CTXLEN_MASK`: bits 32..52 of flags, the number of packet bytes appended.
    pub const CTXLEN_MASK: u64 = 0xfffff << 32;
    /// A sample's raw data (`PERF_SAMPLE_RAW`: `u32 size` then the data) is padded with zeros
    /// to a multiple of 8 bytes, size field included (kernel/events/core.c
    /// `perf_prepare_sample`); the reader sees the padding as part of the data.
    pub const RAW_ALIGN: u64 = 8;
    /// `sizeof(u32)`: the raw data's size field.
    pub const RAW_SIZE_FIELD: u64 = 4;
}

/// `bpf_check_mtu` (net/core/filter.c `bpf_xdp_check_mtu`) and the device a test run sees.
pub mod mtu {
    /// `BPF_MTU_CHK_RET_SUCCESS`.
    pub const SUCCESS: u64 = 0;
    /// `BPF_MTU_CHK_RET_FRAG_NEEDED`: the packet would exceed the device's MTU.
    pub const FRAG_NEEDED: u64 = 1;
    /// Ifindex of the loopback device, the device `BPF_PROG_TEST_RUN` runs XDP on
    /// (`ingress_ifindex` 0; net/bpf/test_run.c `xdp_convert_md_to_buff`).
    pub const LOOPBACK_IFINDEX: u64 = 1;
    /// The loopback device's MTU (drivers/net/loopback.c: `dev->mtu = 64 * 1024`).
    pub const LOOPBACK_MTU: u64 = 64 * 1024;
    /// The loopback device's `hard_header_len` (`ETH_HLEN`, drivers/net/loopback.c).
    pub const LOOPBACK_HARD_HEADER_LEN: u64 = 14;
}
