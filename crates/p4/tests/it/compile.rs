//! The compiled P4 programs agree with the reference interpreter in linerate's VM: the same XDP
//! action (and redirect port), the same output packet and the same counters, packet by packet
//! over at least 200 crafted and random packets per program.

use crate::common;

use common::{
    action_code, assert_state_maps, case, check_checksum_outcomes, checksum_case, checksum_packets,
    expected, grid_cases, length_changes, packets, resize_case, resize_packets, tunnel_packets,
    vlan_packets, Case,
};
use linerate_bpf::contents::MapMode;
use linerate_bpf::read_object;
use linerate_p4::interp::XdpAction;
use linerate_vm::drive::Driver;
use linerate_vm::{Redirect, VmOptions};

/// Runs `name` through the VM and the interpreter; returns how many packets took each action.
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
    let mut driver = Driver::new(
        &object,
        &case.compiled.seed(),
        VmOptions::default(),
        MapMode::Persist,
    )
    .expect("seeds");
    let mut seen = [0usize; 5];
    for (i, (packet, want)) in packets.iter().zip(&want).enumerate() {
        let got = driver.run(0, packet, &[]).expect("runs");
        let code = action_code(want.action);
        assert_eq!(
            got.return_value as u32, code,
            "{name} packet {i}: {packet:02x?}"
        );
        if let XdpAction::Redirect(port) = want.action {
            assert_eq!(
                got.redirect,
                Some(Redirect::Ifindex(port)),
                "{name} packet {i}"
            );
        }
        assert_eq!(got.packet, want.packet, "{name} packet {i}: {packet:02x?}");
        seen[code as usize] += 1;
    }
    assert_state_maps(name, &object, &driver.maps(), &state, counters, registers);
    seen
}

#[test]
fn l3_fwd_agrees_with_the_interpreter_in_the_vm() {
    let seen = differential("l3_fwd", &packets(240, 0x9e37_79b9_7f4a_7c15), &[], &[]);
    // Every outcome the program has: drops (miss, 192.168.1/24, short), pass, TX, redirect.
    assert!(
        seen[1] > 0 && seen[2] > 0 && seen[3] > 0 && seen[4] > 0,
        "{seen:?}"
    );
}

#[test]
fn l3_fwd_firewall_agrees_with_the_interpreter_in_the_vm() {
    let seen = differential(
        "l3_fwd_firewall",
        &packets(240, 0x9e37_79b9_7f4a_7c15),
        &[("acl_hits", "FwIngress.acl_hits", 64)],
        &[],
    );
    assert!(seen[1] > 0 && seen[2] > 0 && seen[4] > 0, "{seen:?}");
}

#[test]
fn the_object_holds_one_xdp_program_and_the_table_maps() {
    let case = case("l3_fwd_firewall");
    let spec = &case.compiled.spec;
    assert_eq!(spec.programs.len(), 1);
    assert_eq!(spec.programs[0].section, "xdp");
    let names: Vec<_> = spec.maps.iter().map(|m| m.name.as_str()).collect();
    assert_eq!(names, ["acl_hits", "acl", "ipv4_lpm"]);
    // The ACL's two const entries and the three routes of the entries file.
    let rows: Vec<_> = case
        .compiled
        .contents
        .iter()
        .map(|c| (c.map.as_str(), c.entries.len()))
        .collect();
    assert_eq!(rows, [("acl", 2), ("ipv4_lpm", 3)]);
}

/// A program in the shape of l3_fwd with `body` as the ingress's apply block and `extra` among
/// the headers struct's members.
fn program(extra: &str, body: &str) -> String {
    format!(
        "#include <xdp.p4>
header eth_t {{ bit<48> dst; bit<48> src; bit<16> ty; }}
struct headers_t {{ eth_t eth; {extra} }}
struct meta_t {{ }}
parser P(packet_in packet, out headers_t hdr, inout meta_t meta, inout standard_metadata_t std) {{
    state start {{ packet.extract(hdr.eth); transition accept; }}
}}
control I(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t std) {{
    apply {{
{body}
    }}
}}
control D(packet_out packet, in headers_t hdr) {{ apply {{ packet.emit(hdr.eth); }} }}
XdpPipeline(P(), I(), D()) main;
"
    )
}

fn refusal(extra: &str, body: &str) -> String {
    let checked = linerate_p4::load_str("t.p4", &program(extra, body)).expect("checks");
    let entries = linerate_p4::entries::Entries::from_program(&checked).expect("entries");
    match linerate_p4::compile::compile(&checked, &entries, "t") {
        Ok(_) => panic!("compiled: {body}"),
        Err(e) => e.to_string(),
    }
}

#[test]
fn unsupported_constructs_are_refused_by_position_and_name() {
    let e = refusal("", "        hdr.eth.ty = 16w1 |+| hdr.eth.ty;");
    assert!(e.starts_with("t.p4:10:"), "{e}");
    let e = refusal("bit<128> wide;", "");
    assert!(e.starts_with("t.p4:3:"), "{e}");
    assert!(e.contains("bit<128>"), "{e}");
    let e = refusal("", "        bit<8> x = 8w1; int<8> y = 8s1; y = y + 8s1;");
    assert!(e.starts_with("t.p4:10:"), "{e}");
}

#[test]
fn arithmetic_wraps_at_the_field_width_like_the_interpreter() {
    // Every operator on widths below, at and above 32 bits, checked against the interpreter.
    let body = "
        hdr.eth.ty = hdr.eth.ty + 16w0xfff0;
        hdr.eth.src = (hdr.eth.src << 4) | (hdr.eth.dst >> 44);
        hdr.eth.dst = hdr.eth.dst * 48w3 - hdr.eth.src;
        if (hdr.eth.ty[3:0] == 4w2 || hdr.eth.ty > 16w0x8000) {
            hdr.eth.ty[15:8] = ~hdr.eth.ty[7:0];
        } else {
            hdr.eth.src = hdr.eth.src ^ (hdr.eth.src / 48w7) ^ (hdr.eth.src % 48w5);
        }
        hdr.eth.src = hdr.eth.ty ++ hdr.eth.dst[31:0];
        std.egress_port = hdr.eth.ty[0:0] == 1w0 ? 32w0 : (bit<32>) hdr.eth.dst[1:0] + 32w1;
    ";
    let checked = linerate_p4::load_str("t.p4", &program("", body)).expect("checks");
    let entries = linerate_p4::entries::Entries::from_program(&checked).expect("entries");
    let compiled = linerate_p4::compile::compile(&checked, &entries, "t").expect("compiles");
    let object = read_object(&compiled.object_bytes().expect("writes"), "t").expect("reads");
    let mut driver = Driver::new(
        &object,
        &compiled.seed(),
        VmOptions::default(),
        MapMode::Persist,
    )
    .expect("seeds");
    let mut rng = common::Rng::new(7);
    let mut actions = std::collections::BTreeSet::new();
    for _ in 0..300 {
        let packet: Vec<u8> = (0..20).map(|_| rng.below(256) as u8).collect();
        let mut state = linerate_p4::interp::State::default();
        let want =
            linerate_p4::interp::run(&checked, &entries, &packet, 1, &mut state).expect("runs");
        let got = driver.run(0, &packet, &[]).expect("runs");
        assert_eq!(got.packet, want.packet, "{packet:02x?}");
        assert_eq!(
            got.return_value as u32,
            action_code(want.action),
            "{packet:02x?}"
        );
        actions.insert(got.return_value);
    }
    assert!(actions.len() >= 3, "{actions:?}");
}

#[test]
fn vlan_acl_switch_agrees_with_the_interpreter_in_the_vm() {
    let seen = differential(
        "vlan_acl_switch",
        &vlan_packets(240, 0x9e37_79b9_7f4a_7c15),
        &[],
        &[("port_frames", "VlanIngress.port_frames", 64)],
    );
    // Drops (no VLAN binding, the ACL, short or over-tagged frames), flooding (TX) and
    // forwarding (redirect).
    assert!(seen[1] > 0 && seen[3] > 0 && seen[4] > 0, "{seen:?}");
}

#[test]
fn flow_counter_keeps_its_state_like_the_interpreter_in_the_vm() {
    let seen = differential(
        "flow_counter",
        &packets(240, 0x2545_f491_4f6c_dd1d),
        &[("dropped", "CounterIngress.dropped", 256)],
        &[("seen", "CounterIngress.seen", 256)],
    );
    // Buckets fill up: both forwarded (redirect) and dropped packets, and passed non-IPv4.
    assert!(seen[1] > 0 && seen[2] > 0 && seen[4] > 0, "{seen:?}");
}

#[test]
fn grid_programs_agree_with_the_interpreter_in_the_vm() {
    let grid = grid_cases();
    // Every grid program compiles, the one with 10 added tables too: a table applied as a
    // statement keeps no result on the 512-byte BPF stack.
    assert!(grid.refused.is_empty(), "{:?}", grid.refused);
    assert_eq!(grid.cases.len(), 51);
    for (name, case) in &grid.cases {
        let seen = differential_of(name, case, &packets(200, 0x5851_f42d_4c95_7f2d), &[], &[]);
        // Forwarded by the entry in the VM; a program parsing past Ethernet also rejects the
        // frames too short for its headers (XDP_DROP).
        let parses_ipv4 = !name.starts_with("case_A");
        assert!(
            seen[4] > 0 && (seen[1] > 0 || !parses_ipv4),
            "{name}: {seen:?}"
        );
    }
}

#[test]
fn ipip_tunnel_agrees_with_the_interpreter_in_the_vm() {
    let packets = tunnel_packets(240, 0x9e37_79b9_7f4a_7c15);
    let seen = differential("ipip_tunnel", &packets, &[], &[]);
    // Bad checksums and cut packets drop, the rest pass, go back out (TX) or are redirected.
    assert!(
        seen[1] > 0 && seen[2] > 0 && seen[3] > 0 && seen[4] > 0,
        "{seen:?}"
    );
    // Encapsulation grew packets and decapsulation shrank others.
    let (want, _) = expected(&case("ipip_tunnel"), &packets);
    let (grown, shrunk) = length_changes(&packets, &want);
    assert!(grown > 10 && shrunk > 10, "{grown} grown, {shrunk} shrunk");
}

#[test]
fn headroom_and_minimum_length_limit_resizing_like_the_interpreter_in_the_vm() {
    let case = resize_case();
    let packets = resize_packets();
    let seen = differential_of("resize", &case, &packets, &[], &[]);
    let (want, _) = expected(&case, &packets);
    // Growing by 224 bytes fails (dropped), by 216 succeeds; removing Ethernet fails below
    // 28 bytes (14 left) and succeeds from there.
    let dropped: Vec<(u8, usize)> = packets
        .iter()
        .zip(&want)
        .filter(|(_, o)| o.action == XdpAction::Drop)
        .map(|(p, _)| (p[13], p.len()))
        .collect();
    assert_eq!(
        dropped,
        [
            (1, 14),
            (1, 20),
            (1, 27),
            (1, 28),
            (1, 29),
            (1, 60),
            (1, 200),
            (2, 14),
            (2, 20),
            (2, 27)
        ]
    );
    assert_eq!(seen[1], 10);
    assert_eq!(length_changes(&packets, &want), (7, 4));
}

#[test]
fn checksums_of_odd_widths_agree_with_the_interpreter_in_the_vm() {
    let case = checksum_case();
    let packets = checksum_packets(240, 0x2545_f491_4f6c_dd1d);
    let seen = differential_of("checksum", &case, &packets, &[], &[]);
    check_checksum_outcomes(&case, &packets, &seen);
}
