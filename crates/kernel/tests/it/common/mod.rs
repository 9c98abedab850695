//! Helpers shared by the kernel tests: the instruction builders of `linerate_bpf::insn::build`,
//! one-program objects and the "skip visibly when BPF is unavailable" gate.

#![allow(dead_code)]

pub use linerate_bpf::insn::build::*;
use linerate_bpf::insn::{Cond, Size};
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

/// `r0 = lookup(map 0, &key 0); if r0: *(u64*)r0 += 1; return XDP_PASS`.
pub fn counter_program() -> Vec<Instruction> {
    vec![
        st(Size::W, 10, -4, 0),
        mov64_reg(2, 10),
        add64(2, -4),
        ld_map(1, 0),
        call_helper(MAP_LOOKUP_ELEM),
        jmp(Cond::Eq, 0, 0, 3),
        ldx(Size::Dw, 1, 0, 0),
        add64(1, 1),
        stx(Size::Dw, 0, 0, 1),
        mov64(0, XDP_PASS as i32),
        exit(),
    ]
}

/// A packet of `len` bytes `0, 1, 2, ...`.
pub fn packet(len: usize) -> Vec<u8> {
    (0..len).map(|i| i as u8).collect()
}

/// `r2 = data; r3 = data_end` from the context in r1 (clobbers nothing else).
pub fn load_bounds() -> Vec<Instruction> {
    vec![ldx(Size::W, 2, 1, MD_DATA), ldx(Size::W, 3, 1, MD_DATA_END)]
}
