//! Programs shared by the interpreter's tests.

use linerate_bpf::insn::build::*;
use linerate_bpf::insn::{AtomicOp, Cond, Instruction, Size};

/// `r0 = lookup(map 0, &key 1); if r0: atomically *(u64*)r0 += 1; return XDP_PASS`.
pub fn counter_program() -> Vec<Instruction> {
    vec![
        st(Size::W, 10, -4, 1),
        mov64_reg(2, 10),
        add64(2, -4),
        ld_map(1, 0),
        call_helper(1),
        jmp(Cond::Eq, 0, 0, 2),
        mov64(1, 1),
        atomic(Size::Dw, AtomicOp::Add, false, 0, 0, 1),
        mov64(0, 2),
        exit(),
    ]
}
