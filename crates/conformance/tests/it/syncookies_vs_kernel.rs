//! The raw SYN cookie helpers (`bpf_tcp_raw_gen/check_syncookie_ipv4/6`) against the kernel on
//! headers held on the stack: what they check of their arguments (`-EINVAL` for a length that is
//! short or disagrees with `doff`), the MSS a cookie encodes for a SYN without an MSS option
//! (536 over IPv4, 1220 over IPv6: the tables' first entries), and the refusal of an ACK whose
//! cookie the kernel did not issue (`-EACCES`). The cookie itself hashes under the kernel's
//! secret: no engine but the kernel knows it, so the programs return everything but it.

use linerate_bpf::facts::helper::{
    TCP_RAW_CHECK_SYNCOOKIE_IPV4, TCP_RAW_CHECK_SYNCOOKIE_IPV6, TCP_RAW_GEN_SYNCOOKIE_IPV4,
    TCP_RAW_GEN_SYNCOOKIE_IPV6,
};
use linerate_bpf::insn::build::*;
use linerate_bpf::insn::{AluOp, Instruction, Size};
use linerate_bpf::{Object, Program};
use linerate_kernel::{load_entry, usable_or_skip, TestRunInput};
use linerate_vm::{Vm, VmOptions};

/// Stack offsets of the IP header (40 zero bytes) and the TCP header (60 bytes, zero but `doff`).
const IP: i16 = -40;
const TCP: i16 = -104;

/// A program calling `helper` on a TCP header with `doff` and (for the generating helpers)
/// length `th_len`; it returns the result shifted right by `shift` bits (the MSS of a cookie is
/// in the high 32 bits, an error in the low ones).
fn program(helper: u32, doff: u8, th_len: i32, shift: i32) -> Object {
    let mut insns: Vec<Instruction> = vec![mov64(7, 0)];
    for off in (TCP..0).step_by(8) {
        insns.push(stx(Size::Dw, 10, off, 7));
    }
    insns.extend([
        st(Size::B, 10, TCP + 12, i32::from(doff) << 4),
        mov64_reg(1, 10),
        add64(1, i32::from(IP)),
        mov64_reg(2, 10),
        add64(2, i32::from(TCP)),
        mov64(3, th_len),
        call_helper(helper),
        alu64(AluOp::Rsh, 0, shift),
        exit(),
    ]);
    Object::with_programs(
        "syncookies",
        vec![Program::from_instructions("syncookies", "xdp", &insns)],
        Vec::new(),
    )
}

#[test]
fn syncookie_helpers_agree_with_the_kernel_on_everything_but_the_cookie() {
    let einval = (-22i64) as u32;
    let eacces = (-13i64) as u32;
    let cases = [
        (TCP_RAW_GEN_SYNCOOKIE_IPV4, 5, 20, 32, 536),
        (TCP_RAW_GEN_SYNCOOKIE_IPV6, 5, 20, 32, 1220),
        (TCP_RAW_GEN_SYNCOOKIE_IPV4, 6, 20, 0, einval),
        (TCP_RAW_GEN_SYNCOOKIE_IPV6, 5, 12, 0, einval),
        (TCP_RAW_GEN_SYNCOOKIE_IPV4, 15, 60, 32, 536),
        (TCP_RAW_CHECK_SYNCOOKIE_IPV4, 5, 0, 0, eacces),
        (TCP_RAW_CHECK_SYNCOOKIE_IPV6, 5, 0, 0, eacces),
    ];
    let kernel = usable_or_skip("syncookie helpers in the kernel");
    let packet = vec![0u8; 64];
    for (helper, doff, th_len, shift, want) in cases {
        let object = program(helper, doff, th_len, shift);
        let what = format!("helper {helper}, doff {doff}, th_len {th_len}");
        let mut vm = Vm::new(&object, VmOptions::default()).unwrap();
        let got = vm.run(0, &packet, &[]).unwrap().return_value as u32;
        assert_eq!(got, want, "interpreter, {what}");
        if kernel {
            let loaded = load_entry(&object, 0).unwrap_or_else(|e| {
                panic!("{what}: {e}\n{}", e.verifier_log().unwrap_or_default())
            });
            let out = loaded
                .test_run(0, &TestRunInput::new(packet.clone()))
                .unwrap();
            assert_eq!(out.retval, want, "kernel, {what}");
        }
    }
}
