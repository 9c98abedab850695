//! The compiled P4 programs load in this kernel (BTF and verifier) and agree with the reference
//! interpreter under `BPF_PROG_TEST_RUN`: the same XDP action, the same output packet and the same
//! counters, over at least 200 crafted and random packets per program, maps seeded from the
//! compiler's table contents.

use crate::common;

use common::{
    action_code, assert_state_maps, case, check_checksum_outcomes, checksum_case, checksum_packets,
    expected, grid_cases, length_changes, packets, resize_case, resize_packets, tunnel_packets,
    vlan_packets, Case,
};
use linerate_bpf::contents::MapMode;
use linerate_bpf::read_object;
use linerate_kernel::drive::Driver;
use linerate_kernel::usable_or_skip;
use linerate_p4::interp::XdpAction;

fn differential(
    name: &str,
    packets: &[Vec<u8>],
    counters: &[(&str, &str, u32)],
    registers: &[(&str, &str, u32)],
) -> [usize; 5] {
    differential_of(name, &case(name), packets, counters, registers)
}

/// [`differential`] on a case already compiled.
fn differential_of(
    name: &str,
    case: &Case,
    packets: &[Vec<u8>],
    counters: &[(&str, &str, u32)],
    registers: &[(&str, &str, u32)],
) -> [usize; 5] {
    let bytes = case.compiled.object_bytes().expect("writes");
    let object = read_object(&bytes, name).expect("reads back");
    let (want, state) = expected(case, packets);
    let seed = case.compiled.seed();
    let mut driver = Driver::new(&object, &seed, MapMode::Persist).expect("loads and seeds");
    let runs = match driver.run_packets(0, packets, &[], 1) {
        Ok(runs) => runs,
        Err(e) => panic!("{name}: {e}\n{}", e.verifier_log().unwrap_or("")),
    };
    let mut seen = [0usize; 5];
    for (i, ((packet, want), got)) in packets.iter().zip(&want).zip(&runs.outcomes).enumerate() {
        let code = action_code(want.action);
        assert_eq!(got.retval, code, "{name} packet {i}: {packet:02x?}");
        assert_eq!(got.packet, want.packet, "{name} packet {i}: {packet:02x?}");
        seen[code as usize] += 1;
    }
    assert_state_maps(name, &object, &runs.final_maps, &state, counters, registers);
    seen
}

#[test]
fn l3_fwd_agrees_with_the_interpreter_in_the_kernel() {
    if !usable_or_skip("p4 compile_kernel") {
        return;
    }
    let seen = differential("l3_fwd", &packets(240, 0x0123_4567_89ab_cdef), &[], &[]);
    assert!(
        seen[1] > 0 && seen[2] > 0 && seen[3] > 0 && seen[4] > 0,
        "{seen:?}"
    );
}

#[test]
fn l3_fwd_firewall_agrees_with_the_interpreter_in_the_kernel() {
    if !usable_or_skip("p4 compile_kernel") {
        return;
    }
    let seen = differential(
        "l3_fwd_firewall",
        &packets(240, 0x0123_4567_89ab_cdef),
        &[("acl_hits", "FwIngress.acl_hits", 64)],
        &[],
    );
    assert!(seen[1] > 0 && seen[2] > 0 && seen[4] > 0, "{seen:?}");
}

#[test]
fn vlan_acl_switch_agrees_with_the_interpreter_in_the_kernel() {
    if !usable_or_skip("p4 compile_kernel") {
        return;
    }
    let seen = differential(
        "vlan_acl_switch",
        &vlan_packets(240, 0x0123_4567_89ab_cdef),
        &[],
        &[("port_frames", "VlanIngress.port_frames", 64)],
    );
    // Drops (no VLAN binding, the ACL, short or over-tagged frames), flooding (TX) and
    // forwarding (redirect).
    assert!(seen[1] > 0 && seen[3] > 0 && seen[4] > 0, "{seen:?}");
}

#[test]
fn flow_counter_keeps_its_state_like_the_interpreter_in_the_kernel() {
    if !usable_or_skip("p4 compile_kernel") {
        return;
    }
    let seen = differential(
        "flow_counter",
        &packets(240, 0x2545_f491_4f6c_dd1d),
        &[("dropped", "CounterIngress.dropped", 256)],
        &[("seen", "CounterIngress.seen", 256)],
    );
    assert!(seen[1] > 0 && seen[2] > 0 && seen[4] > 0, "{seen:?}");
}

#[test]
fn grid_programs_agree_with_the_interpreter_in_the_kernel() {
    if !usable_or_skip("p4 compile_kernel") {
        return;
    }
    let grid = grid_cases();
    // Every grid program compiles, the one with 10 added tables too: a table applied as a
    // statement keeps no result on the 512-byte BPF stack.
    assert!(grid.refused.is_empty(), "{:?}", grid.refused);
    assert_eq!(grid.cases.len(), 51);
    for (name, case) in &grid.cases {
        let seen = differential_of(name, case, &packets(200, 0x5851_f42d_4c95_7f2d), &[], &[]);
        // Forwarded by the entry in the kernel; a program parsing past Ethernet also rejects the
        // frames too short for its headers (XDP_DROP).
        let parses_ipv4 = !name.starts_with("case_A");
        assert!(
            seen[4] > 0 && (seen[1] > 0 || !parses_ipv4),
            "{name}: {seen:?}"
        );
    }
}

#[test]
fn ipip_tunnel_agrees_with_the_interpreter_in_the_kernel() {
    if !usable_or_skip("p4 compile_kernel") {
        return;
    }
    let packets = tunnel_packets(240, 0x0123_4567_89ab_cdef);
    let seen = differential("ipip_tunnel", &packets, &[], &[]);
    assert!(
        seen[1] > 0 && seen[2] > 0 && seen[3] > 0 && seen[4] > 0,
        "{seen:?}"
    );
    let (want, _) = expected(&case("ipip_tunnel"), &packets);
    let (grown, shrunk) = length_changes(&packets, &want);
    assert!(grown > 10 && shrunk > 10, "{grown} grown, {shrunk} shrunk");
}

#[test]
fn headroom_and_minimum_length_limit_resizing_like_the_interpreter_in_the_kernel() {
    if !usable_or_skip("p4 compile_kernel") {
        return;
    }
    let case = resize_case();
    let packets = resize_packets();
    let seen = differential_of("resize", &case, &packets, &[], &[]);
    let (want, _) = expected(&case, &packets);
    let dropped = want.iter().filter(|o| o.action == XdpAction::Drop).count();
    // Every growth by 224 bytes (7) and removals leaving fewer than 14 bytes (3).
    assert_eq!((seen[1], dropped), (10, 10));
}

#[test]
fn checksums_of_odd_widths_agree_with_the_interpreter_in_the_kernel() {
    if !usable_or_skip("p4 compile_kernel") {
        return;
    }
    let case = checksum_case();
    let packets = checksum_packets(240, 0x2545_f491_4f6c_dd1d);
    let seen = differential_of("checksum", &case, &packets, &[], &[]);
    check_checksum_outcomes(&case, &packets, &seen);
}
