//! Pins the XDP `BPF_PROG_TEST_RUN` facts documented in the crate documentation (headroom,
//! tailroom, metadata limits, what `data_out` holds, context fields, large packets, repeat), which
//! the interpreter must reproduce. Each test prints `SKIPPED: ...` and returns when this process
//! cannot use BPF, or fails under `LINERATE_REQUIRE_BPF=1`.

use crate::common;

use common::*;
use linerate_bpf::insn::{AluOp, Cond, Size};
use linerate_bpf::{Instruction, Object};
use linerate_kernel::{load_entry, TestRunInput, TestRunOutput};

const EINVAL: i32 = 22;
const EACCES: i32 = 13;

/// `return helper(ctx, off)` — the helper's return value becomes the XDP return value.
fn helper_result(helper: u32, off: i32) -> Object {
    single(&[mov64(2, off), call_helper(helper), exit()], vec![])
}

fn run_obj(obj: &Object, input: &TestRunInput) -> TestRunOutput {
    load_entry(obj, 0).unwrap().test_run(0, input).unwrap()
}

fn run(helper: u32, off: i32, input: &TestRunInput) -> (i32, TestRunOutput) {
    let out = run_obj(&helper_result(helper, off), input);
    (out.retval as i32, out)
}

fn with_meta(len: usize, meta: &[u8]) -> TestRunInput {
    TestRunInput {
        packet: packet(len),
        meta: meta.to_vec(),
        ..Default::default()
    }
}

#[test]
fn adjust_head_headroom_is_216_minus_meta() {
    if !bpf_available() {
        return;
    }
    let input = TestRunInput::new(packet(64));
    let (ret, out) = run(XDP_ADJUST_HEAD, -14, &input);
    assert_eq!(ret, 0);
    assert_eq!(out.packet.len(), 78);
    assert_eq!(&out.packet[..14], &[0u8; 14]);
    assert_eq!(&out.packet[14..], &packet(64)[..]);

    assert_eq!(run(XDP_ADJUST_HEAD, -216, &input).1.packet.len(), 280);
    let (ret, out) = run(XDP_ADJUST_HEAD, -217, &input);
    assert_eq!((ret, out.packet), (-EINVAL, packet(64)));

    // Metadata takes its room from the headroom and moves with the packet.
    let meta = [0xaa, 0xbb, 0xcc, 0xdd];
    assert_eq!(run(XDP_ADJUST_HEAD, -212, &with_meta(64, &meta)).0, 0);
    assert_eq!(run(XDP_ADJUST_HEAD, -213, &with_meta(64, &meta)).0, -EINVAL);
    let (_, out) = run(XDP_ADJUST_HEAD, -14, &with_meta(64, &meta));
    assert_eq!(out.meta, meta);
    // Exposed front bytes are not cleared: the old metadata shows through.
    assert_eq!(
        &out.packet[..14],
        &[0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xaa, 0xbb, 0xcc, 0xdd]
    );

    // Shrinking must leave 14 bytes.
    assert_eq!(run(XDP_ADJUST_HEAD, 50, &input).1.packet, packet(64)[50..]);
    assert_eq!(run(XDP_ADJUST_HEAD, 51, &input).0, -EINVAL);
}

#[test]
fn adjust_head_does_not_clear_removed_bytes() {
    if !bpf_available() {
        return;
    }
    let obj = single(
        &[
            mov64_reg(6, 1),
            mov64(2, 20),
            call_helper(XDP_ADJUST_HEAD),
            mov64_reg(1, 6),
            mov64(2, -20),
            call_helper(XDP_ADJUST_HEAD),
            exit(),
        ],
        vec![],
    );
    let out = run_obj(&obj, &TestRunInput::new(packet(64)));
    assert_eq!(out.retval, 0);
    assert_eq!(out.packet, packet(64));
}

#[test]
fn adjust_tail_tailroom_ends_3520_bytes_after_data() {
    if !bpf_available() {
        return;
    }
    let input = TestRunInput::new(packet(64));
    let (ret, out) = run(XDP_ADJUST_TAIL, 10, &input);
    assert_eq!(ret, 0);
    assert_eq!(&out.packet[..64], &packet(64)[..]);
    assert_eq!(&out.packet[64..], &[0u8; 10]);

    assert_eq!(run(XDP_ADJUST_TAIL, 3456, &input).1.packet.len(), 3520);
    assert_eq!(run(XDP_ADJUST_TAIL, 3457, &input).0, -EINVAL);
    // Metadata does not reduce the tailroom.
    assert_eq!(
        run(XDP_ADJUST_TAIL, 3456, &with_meta(64, &[0; 32]))
            .1
            .packet
            .len(),
        3520
    );
    // Shrinking must leave 14 bytes.
    assert_eq!(run(XDP_ADJUST_TAIL, -50, &input).1.packet, packet(14));
    assert_eq!(run(XDP_ADJUST_TAIL, -51, &input).0, -EINVAL);
}

#[test]
fn adjust_meta_limits() {
    if !bpf_available() {
        return;
    }
    let input = TestRunInput::new(packet(64));
    for off in [-4, -32, -36, -216] {
        let (ret, out) = run(XDP_ADJUST_META, off, &input);
        assert_eq!(ret, 0, "offset {off}");
        assert_eq!(out.meta, vec![0; (-off) as usize], "offset {off}");
        assert_eq!(out.packet, packet(64));
        assert_eq!(out.data_size_out as i32, 64 - off);
    }
    assert_eq!(run(XDP_ADJUST_META, -220, &input).0, -EINVAL);
    assert_eq!(run(XDP_ADJUST_META, -2, &input).0, -EACCES);
    assert_eq!(run(XDP_ADJUST_META, 4, &input).0, -EINVAL);
    // Shrinking existing metadata.
    let (ret, out) = run(
        XDP_ADJUST_META,
        4,
        &with_meta(64, &[1, 2, 3, 4, 5, 6, 7, 8]),
    );
    assert_eq!(ret, 0);
    assert_eq!(out.meta, vec![5, 6, 7, 8]);
}

#[test]
fn metadata_written_by_program_comes_out_before_the_packet() {
    if !bpf_available() {
        return;
    }
    // adjust_meta(-8); r2 = data_meta; r3 = data; if r2 + 8 > r3 drop; *(u64*)r2 = 0x1122334455667788
    let insns: Vec<Instruction> = vec![
        mov64_reg(6, 1),
        mov64(2, -8),
        call_helper(XDP_ADJUST_META),
        jmp(Cond::Ne, 0, 0, 10),
        ldx(Size::W, 2, 6, MD_DATA_META),
        ldx(Size::W, 3, 6, MD_DATA),
        mov64_reg(4, 2),
        add64(4, 8),
        jmp_reg(Cond::Gt, 4, 3, 5),
        Instruction::LoadImm64 {
            dst: 5,
            imm: linerate_bpf::insn::Imm64::Const(0x1122_3344_5566_7788),
        },
        stx(Size::Dw, 2, 0, 5),
        mov64(0, XDP_PASS as i32),
        exit(),
        mov64(0, XDP_DROP as i32),
        exit(),
    ];
    let out = run_obj(&single(&insns, vec![]), &TestRunInput::new(packet(64)));
    assert_eq!(out.retval, XDP_PASS);
    assert_eq!(out.meta, 0x1122_3344_5566_7788u64.to_le_bytes().to_vec());
    assert_eq!(out.packet, packet(64));
    assert_eq!(out.data_size_out, 72);
}

#[test]
fn input_limits() {
    if !bpf_available() {
        return;
    }
    let loaded = load_entry(&single(&[mov64(0, 2), exit()], vec![]), 0).unwrap();
    let errno = |input: &TestRunInput| loaded.test_run(0, input).unwrap_err().errno().unwrap().0;
    assert_eq!(errno(&TestRunInput::new(packet(13))), EINVAL);
    assert!(loaded.test_run(0, &TestRunInput::new(packet(14))).is_ok());
    assert_eq!(errno(&with_meta(64, &[0; 2])), EINVAL);
    assert_eq!(errno(&with_meta(64, &[0; 220])), EINVAL);
    let out = loaded.test_run(0, &with_meta(64, &[7; 216])).unwrap();
    assert_eq!(out.meta, vec![7; 216]);
    assert_eq!(out.packet, packet(64));

    let err = loaded
        .test_run(
            0,
            &TestRunInput {
                packet: packet(64),
                ingress_ifindex: 1,
                rx_queue_index: 1,
                ..Default::default()
            },
        )
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "BPF_PROG_TEST_RUN of program `xdp_test` (packet 64 bytes, meta 0, ifindex 1, rx queue 1) \
         failed: Invalid argument (EINVAL)"
    );
}

#[test]
fn context_fields_default_to_loopback_queue_0() {
    if !bpf_available() {
        return;
    }
    let field = |off: i16, ifindex: u32| {
        let obj = single(&[ldx(Size::W, 0, 1, off), exit()], vec![]);
        let input = TestRunInput {
            packet: packet(64),
            ingress_ifindex: ifindex,
            ..Default::default()
        };
        run_obj(&obj, &input).retval
    };
    assert_eq!(field(MD_INGRESS_IFINDEX, 0), 1);
    assert_eq!(field(MD_RX_QUEUE_INDEX, 0), 0);
    assert_eq!(field(MD_INGRESS_IFINDEX, 1), 1);
}

#[test]
fn large_packets_are_multi_buffer() {
    if !bpf_available() {
        return;
    }
    // return data_end - data
    let obj = single(
        &[
            ldx(Size::W, 2, 1, MD_DATA),
            ldx(Size::W, 0, 1, MD_DATA_END),
            alu64_reg(AluOp::Sub, 0, 2),
            exit(),
        ],
        vec![],
    );
    let out = run_obj(&obj, &TestRunInput::new(packet(3520)));
    assert_eq!(out.retval, 3520);
    let out = run_obj(&obj, &TestRunInput::new(packet(5000)));
    assert_eq!(out.retval, 3520);
    assert_eq!(out.packet, packet(5000));
}

#[test]
fn repeated_runs_share_the_frame() {
    if !bpf_available() {
        return;
    }
    let input = TestRunInput {
        packet: packet(64),
        repeat: 3,
        ..Default::default()
    };
    let (ret, out) = run(XDP_ADJUST_HEAD, -4, &input);
    assert_eq!(ret, 0);
    assert_eq!(out.packet.len(), 76);
}
