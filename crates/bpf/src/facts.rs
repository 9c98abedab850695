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
    pub const E2BIG: i64 = 7;
    pub const ENOMEM: i64 = 12;
    pub const EACCES: i64 = 13;
    pub const EFAULT: i64 = 14;
    pub const EEXIST: i64 = 17;
    pub const EINVAL: i64 = 22;
    pub const EAFNOSUPPORT: i64 = 97;
}
