//! Helpers shared by the kernel tests: the instruction builders of `linerate_bpf::insn::build`,
//! one-program objects and the "skip visibly when BPF is unavailable" gate.

#![allow(dead_code)]

pub use linerate_bpf::insn::build::*;
use linerate_bpf::insn::Size;
use linerate_bpf::{Instruction, MapDef, Object};

/// XDP actions.
pub const XDP_ABORTED: u32 = 0;
pub const XDP_DROP: u32 = 1;
pub const XDP_PASS: u32 = 2;
pub const XDP_TX: u32 = 3;

/// Helper numbers.
pub const MAP_LOOKUP_ELEM: u32 = 1;
pub const MAP_UPDATE_ELEM: u32 = 2;
pub const TAIL_CALL: u32 = 12;
pub const XDP_ADJUST_HEAD: u32 = 44;
pub const XDP_ADJUST_META: u32 = 54;
pub const XDP_ADJUST_TAIL: u32 = 65;

/// `xdp_md` field offsets.
pub const MD_DATA: i16 = 0;
pub const MD_DATA_END: i16 = 4;
pub const MD_DATA_META: i16 = 8;
pub const MD_INGRESS_IFINDEX: i16 = 12;
pub const MD_RX_QUEUE_INDEX: i16 = 16;

/// Returns `true` when BPF is usable; otherwise prints `SKIPPED: <test>: <reason>` and returns
/// `false`, or fails the test under `LINERATE_REQUIRE_BPF=1` ([`linerate_kernel::usable_or_skip`]).
pub fn bpf_available() -> bool {
    linerate_kernel::usable_or_skip(std::thread::current().name().unwrap_or("kernel test"))
}

/// A one-program object: the XDP program `xdp_test` holding `insns`, beside `maps`.
pub fn single(insns: &[Instruction], maps: Vec<MapDef>) -> Object {
    Object::single("xdp_test", insns, maps)
}

/// A packet of `len` bytes `0, 1, 2, ...`.
pub fn packet(len: usize) -> Vec<u8> {
    (0..len).map(|i| i as u8).collect()
}

/// `r2 = data; r3 = data_end` from the context in r1 (clobbers nothing else).
pub fn load_bounds() -> Vec<Instruction> {
    vec![ldx(Size::W, 2, 1, MD_DATA), ldx(Size::W, 3, 1, MD_DATA_END)]
}
