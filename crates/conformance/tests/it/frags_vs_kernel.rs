//! Differential test of multi-buffer packets: packets above the 3,520 bytes of the linear part,
//! which `BPF_PROG_TEST_RUN` puts into page fragments, give the same return value and output
//! packet in the interpreter as in this host's kernel under `bpf_xdp_adjust_tail` (pairs of
//! deltas, so that a fragment-less packet left by a shrink is grown again),
//! `bpf_xdp_load_bytes` / `store_bytes` windows around every boundary, and
//! `bpf_xdp_get_buff_len`; the kernel refuses packets above the largest it takes
//! (`MAX_PACKET`) and the interpreter says why.

use linerate_bpf::facts::helper as id;
use linerate_bpf::facts::test_run_buffer::{FRAG_SIZE, MAX_DATA, MAX_PACKET};
use linerate_bpf::insn::build::*;
use linerate_bpf::insn::{AluOp, Cond, Size};
use linerate_bpf::{Instruction, Object, Program};
use linerate_kernel::{load_object, usable_or_skip, TestRunInput};
use linerate_vm::{Vm, VmOptions};

/// A packet of `len` bytes whose every 4-byte word differs from its neighbours.
fn packet(len: usize) -> Vec<u8> {
    (0..len).map(|i| (i * 7 + i / 251) as u8).collect()
}

/// A frags-aware (section `xdp.frags`) one-program object.
fn frags_object(insns: &[Instruction]) -> Object {
    Object::with_programs(
        "frags",
        vec![Program::from_instructions("frags", "xdp.frags", insns)],
        vec![],
    )
}

/// Runs `object` on `packet` in both engines; the differences, if any, as one message.
fn compare(object: &Object, packet: &[u8], what: &str) -> Result<(), String> {
    compare_with_meta(object, packet, &[], what)
}

/// [`compare`] with metadata in front of the packet (it takes room from the headroom, not
/// from the linear part's 3,520 packet bytes).
fn compare_with_meta(
    object: &Object,
    packet: &[u8],
    meta: &[u8],
    what: &str,
) -> Result<(), String> {
    let loaded = load_object(object).map_err(|e| {
        format!(
            "{what}: kernel refused it: {e}\n{}",
            e.verifier_log().unwrap_or("")
        )
    })?;
    let kernel = loaded
        .test_run(
            0,
            &TestRunInput {
                packet: packet.to_vec(),
                meta: meta.to_vec(),
                ..Default::default()
            },
        )
        .map_err(|e| format!("{what}: kernel: {e}"))?;
    let mut vm = Vm::new(object, VmOptions::default()).map_err(|e| format!("{what}: {e}"))?;
    let ours = vm
        .run(0, packet, meta)
        .map_err(|e| format!("{what}: interpreter: {e}"))?;
    if ours.return_value != u64::from(kernel.retval) {
        return Err(format!(
            "{what}: returned {:#x} in the interpreter, {:#x} in the kernel",
            ours.return_value, kernel.retval
        ));
    }
    if ours.meta != kernel.meta {
        return Err(format!("{what}: metadata differs"));
    }
    if ours.packet != kernel.packet {
        let first = ours
            .packet
            .iter()
            .zip(&kernel.packet)
            .position(|(a, b)| a != b);
        return Err(format!(
            "{what}: output differs: {} bytes in the interpreter, {} in the kernel, first \
             difference at {first:?}",
            ours.packet.len(),
            kernel.packet.len()
        ));
    }
    Ok(())
}

/// `a = adjust_tail(first); b = adjust_tail(second); return (a & 0xffff) << 16 | b & 0xffff`.
fn two_adjusts(first: i32, second: i32) -> Vec<Instruction> {
    vec![
        mov64_reg(6, 1),
        mov64(2, first),
        call_helper(id::XDP_ADJUST_TAIL),
        mov64_reg(7, 0),
        mov64_reg(1, 6),
        mov64(2, second),
        call_helper(id::XDP_ADJUST_TAIL),
        alu64(AluOp::And, 0, 0xffff),
        alu64(AluOp::And, 7, 0xffff),
        alu64(AluOp::Lsh, 7, 16),
        alu64_reg(AluOp::Or, 0, 7),
        exit(),
    ]
}

/// `ENOMEM`: the kernel's answer to a packet needing more than `MAX_SKB_FRAGS` fragments.
const ENOMEM: i32 = 12;

const SIZES: &[usize] = &[60, 3520, 3521, 3534, 5000, 7616, 7617, 9000, 20000];

#[test]
fn adjust_tail_agrees_on_multi_buffer_packets() {
    if !usable_or_skip("frags adjust_tail differential test") {
        return;
    }
    let frag = FRAG_SIZE as i32;
    let mut failures = Vec::new();
    let mut runs = 0;
    for &len in SIZES {
        let total = len as i32;
        let frags = (len as i32 - MAX_DATA as i32).max(0);
        let deltas = [
            0,
            1,
            8,
            frag - 1480,
            frag - 1479,
            frag,
            i32::MAX,
            -1,
            -4,
            -frags,
            -frags - 1,
            1 - frags,
            -frags - 100,
            -(total - 14),
            -(total - 13),
            -frag,
            -frag - 1,
            i32::MIN,
            i32::MIN + 1,
        ];
        for first in deltas {
            for second in [0, 1, 256, 4096, -1, -3000, i32::MIN] {
                let what = format!("{len}-byte packet, adjust_tail({first}) then ({second})");
                runs += 1;
                if let Err(e) = compare(
                    &frags_object(&two_adjusts(first, second)),
                    &packet(len),
                    &what,
                ) {
                    failures.push(e);
                }
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {runs} runs disagree:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

/// Loads `len` packet bytes at `offset` into the stack and stores them at offset 14; then stores
/// `len` bytes of a stack pattern at `offset`. Returns the load's and the last store's results
/// (low 16 bits each) as `load << 16 | store`; what they moved shows in the output packet.
fn load_store(offset: i32, len: i32) -> Vec<Instruction> {
    let mut insns = vec![mov64_reg(6, 1)];
    for slot in 0..8 {
        insns.push(st(Size::Dw, 10, -128 + 8 * slot, 0x5a5a_0000 + slot as i32));
    }
    insns.extend([
        mov64_reg(1, 6),
        mov64(2, offset),
        mov64_reg(3, 10),
        add64(3, -64),
        mov64(4, len),
        call_helper(id::XDP_LOAD_BYTES),
        mov64_reg(7, 0),
        jmp(Cond::Ne, 7, 0, 6),
        mov64_reg(1, 6),
        mov64(2, 14),
        mov64_reg(3, 10),
        add64(3, -64),
        mov64(4, len),
        call_helper(id::XDP_STORE_BYTES),
        mov64_reg(1, 6),
        mov64(2, offset),
        mov64_reg(3, 10),
        add64(3, -128),
        mov64(4, len),
        call_helper(id::XDP_STORE_BYTES),
        alu64(AluOp::And, 0, 0xffff),
        alu64(AluOp::And, 7, 0xffff),
        alu64(AluOp::Lsh, 7, 16),
        alu64_reg(AluOp::Or, 0, 7),
        exit(),
    ]);
    insns
}

#[test]
fn load_and_store_bytes_agree_across_fragment_boundaries() {
    if !usable_or_skip("frags load/store differential test") {
        return;
    }
    let (linear, frag) = (MAX_DATA as i32, FRAG_SIZE as i32);
    let mut failures = Vec::new();
    let mut runs = 0;
    for len in [3520usize, 3600, 9000, 70000] {
        let total = len as i32;
        for size in [1, 4, 8, 64] {
            let offsets = [
                0,
                linear - size,
                linear - size / 2 - 1,
                linear,
                4000,
                linear + frag - size / 2,
                linear + frag,
                total - size,
                total - size + 1,
                0xffff,
                0x10000,
            ];
            for (offset, meta) in offsets.iter().flat_map(|o| [(*o, 0), (*o, 8)]) {
                let what = format!(
                    "{len}-byte packet, {meta} bytes of metadata, {size} bytes at {offset}"
                );
                runs += 1;
                if let Err(e) = compare_with_meta(
                    &frags_object(&load_store(offset, size)),
                    &packet(len),
                    &vec![0xa5; meta],
                    &what,
                ) {
                    failures.push(e);
                }
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {runs} runs disagree:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

/// `adjust_head` and `adjust_meta` move only the linear part's bounds of a multi-buffer packet;
/// `get_buff_len` (returned) counts the fragments after them.
#[test]
fn adjust_head_and_meta_keep_the_fragments() {
    if !usable_or_skip("frags adjust_head differential test") {
        return;
    }
    let mut failures = Vec::new();
    for helper in [id::XDP_ADJUST_HEAD, id::XDP_ADJUST_META] {
        for delta in [-217, -216, -8, -1, 0, 4, 14, 3506, 3507] {
            let insns = [
                mov64_reg(6, 1),
                mov64(2, delta),
                call_helper(helper),
                jmp(Cond::Ne, 0, 0, 2),
                mov64_reg(1, 6),
                call_helper(id::XDP_GET_BUFF_LEN),
                exit(),
            ];
            for len in [3521, 5000] {
                let what = format!("{len}-byte packet, helper {helper}({delta})");
                if let Err(e) = compare(&frags_object(&insns), &packet(len), &what) {
                    failures.push(e);
                }
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// `return bpf_xdp_get_buff_len(ctx)`, loaded without and with `BPF_F_XDP_HAS_FRAGS`: the kernel
/// builds fragments for a long packet either way.
#[test]
fn buff_len_counts_fragments_with_or_without_the_frags_flag() {
    if !usable_or_skip("frags get_buff_len differential test") {
        return;
    }
    let insns = [call_helper(id::XDP_GET_BUFF_LEN), exit()];
    for section in ["xdp", "xdp.frags"] {
        let object = Object::with_programs(
            "len",
            vec![Program::from_instructions("len", section, &insns)],
            vec![],
        );
        for len in [14, 3520, 3521, 9000, MAX_PACKET as usize] {
            let what = format!("section {section}, {len}-byte packet");
            compare(&object, &packet(len), &what).unwrap();
            let kernel = load_object(&object)
                .unwrap()
                .test_run(0, &TestRunInput::new(packet(len)))
                .unwrap();
            assert_eq!(kernel.retval as usize, len, "{what}");
        }
    }
}

#[test]
fn packets_above_the_largest_are_refused_by_both() {
    if !usable_or_skip("frags size limit test") {
        return;
    }
    let object = frags_object(&[mov64(0, 2), exit()]);
    let too_long = packet(MAX_PACKET as usize + 1);
    let kernel = load_object(&object)
        .unwrap()
        .test_run(0, &TestRunInput::new(too_long.clone()))
        .unwrap_err();
    assert_eq!(kernel.errno().map(|e| e.0), Some(ENOMEM), "{kernel}");
    assert!(
        kernel.to_string().contains("more than the 73152 bytes"),
        "{kernel}"
    );
    let ours = Vm::new(&object, VmOptions::default())
        .unwrap()
        .run(0, &too_long, &[])
        .unwrap_err();
    assert_eq!(
        ours.to_string(),
        "packet of 73153 bytes is larger than the 73152 bytes BPF_PROG_TEST_RUN takes (3520 in \
         the buffer, then at most 17 fragments of 4096 bytes)",
    );
}
