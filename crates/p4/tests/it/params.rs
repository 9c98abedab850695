//! Paper 001's parameters of the shipped P4 programs, and the latency the Agilio CX model gives
//! them: the paper's Table III validation functions.

use std::path::Path;

use linerate_p4::latency::{Actions, LatencyModel};
use linerate_p4::params::analyze;

fn program(name: &str) -> linerate_p4::Checked {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../examples/p4")
        .join(name);
    linerate_p4::load(&path).unwrap_or_else(|e| panic!("{e}"))
}

#[test]
fn l3_fwd_is_the_papers_first_validation_function() {
    let a = analyze(&program("l3_fwd.p4"));
    assert_eq!((a.alpha, a.beta, a.gamma), (2, 2, 0), "{a:#?}");
    assert_eq!(a.actions, Actions::Implicit);
    let headers: Vec<&str> = a.modified.iter().map(|m| m.header.as_str()).collect();
    assert_eq!(headers, ["hdr.ethernet", "hdr.ipv4"]);
    let worst = a.worst_path().expect("a path");
    assert_eq!(worst.headers, ["hdr.ethernet", "hdr.ipv4"]);
    let estimate = LatencyModel::agilio_cx().estimate(a.params()).unwrap();
    // Table III: estimated 8200 ns.
    assert_eq!(estimate.latency_ns, 8200.0);
}

#[test]
fn l3_fwd_firewall_is_the_papers_second() {
    let a = analyze(&program("l3_fwd_firewall.p4"));
    assert_eq!((a.alpha, a.beta, a.gamma), (3, 2, 1), "{a:#?}");
    assert_eq!(a.actions, Actions::Implicit);
    assert_eq!(a.tables, ["acl", "ipv4_lpm"]);
    // Three parser paths: not IPv4, IPv4 without UDP, and IPv4 with UDP.
    assert_eq!(a.paths.len(), 3, "{:#?}", a.paths);
    let worst = a.worst_path().expect("a path");
    assert_eq!(worst.states, ["start", "parse_ipv4", "parse_udp"]);
    // The paper prints 8957 ns; its own Table II and Eq. 1 give 8600 + 334.04.
    let estimate = LatencyModel::agilio_cx().estimate(a.params()).unwrap();
    assert!((estimate.latency_ns - 8934.04).abs() < 1e-6);
    assert_eq!(a.operations.arithmetic, 1, "the TTL decrement");
}

#[test]
fn an_assignment_in_apply_is_an_explicit_modification() {
    let text = r#"
#include <xdp.p4>
header eth_t { bit<48> dst; bit<48> src; bit<16> ether_type; }
header tag_t { bit<16> tci; bit<16> ether_type; }
struct headers_t { eth_t eth; tag_t tag; }
struct meta_t { bit<8> unused; }
parser P(packet_in packet, out headers_t hdr, inout meta_t meta, inout standard_metadata_t std) {
    state start {
        packet.extract(hdr.eth);
        transition select(hdr.eth.ether_type) {
            0x8100: tagged;
            default: accept;
        }
    }
    state tagged {
        packet.extract(hdr.tag);
        transition accept;
    }
}
control I(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t std) {
    action set_port(bit<32> port) { std.egress_port = port; }
    table fwd {
        key = { hdr.eth.dst: exact; }
        actions = { set_port; }
        default_action = set_port(1);
    }
    apply {
        hdr.eth.src = hdr.eth.dst ^ 48w1;
        if (hdr.tag.isValid()) {
            hdr.tag.setInvalid();
        }
        fwd.apply();
    }
}
control D(packet_out packet, in headers_t hdr) {
    apply { packet.emit(hdr.eth); packet.emit(hdr.tag); }
}
XdpPipeline(P(), I(), D()) main;
"#;
    let checked = linerate_p4::load_str("explicit.p4", text).unwrap_or_else(|e| panic!("{e}"));
    let a = analyze(&checked);
    assert_eq!((a.alpha, a.beta, a.gamma), (2, 2, 0), "{a:#?}");
    assert_eq!(a.actions, Actions::Explicit);
    assert_eq!(a.operations.binary, 1);
    // Table II: two parsed, two modified, explicit.
    let estimate = LatencyModel::agilio_cx().estimate(a.params()).unwrap();
    assert_eq!(estimate.latency_ns, 9900.0);
}

#[test]
fn a_vlan_stack_counts_as_often_as_it_has_elements() {
    // Ethernet and up to two VLAN tags (`vlan_t[2]`, extracted through `next` in a loop).
    let a = analyze(&program("vlan_acl_switch.p4"));
    assert_eq!(a.alpha, 3, "{a:#?}");
    let worst = a.worst_path().expect("a path");
    assert_eq!(worst.states, ["start", "parse_vlan", "parse_vlan"]);
    assert_eq!(a.tables, ["port_vlan", "acl", "mac_table"]);
    assert_eq!(a.gamma, 2);
    assert_eq!(a.actions, Actions::Explicit);
}

#[test]
fn the_ipip_tunnel_adds_and_removes_headers_in_table_actions() {
    let a = analyze(&program("ipip_tunnel.p4"));
    // Ethernet, IPv4 and the inner IPv4 of IP-in-IP; encap copies `ipv4` into `inner` and
    // rewrites it, decap removes `ipv4`; three tables less the forwarding one.
    assert_eq!((a.alpha, a.beta, a.gamma), (3, 2, 2), "{a:#?}");
    assert_eq!(a.actions, Actions::Implicit);
    let headers: Vec<&str> = a.modified.iter().map(|m| m.header.as_str()).collect();
    assert_eq!(headers, ["hdr.inner", "hdr.ipv4"]);
    assert_eq!(a.tables, ["tunnel_endpoints", "inner_routes", "tunnel_map"]);
    let worst = a.worst_path().expect("a path");
    assert_eq!(worst.states, ["start", "parse_ipv4", "parse_inner"]);
    // The outer total length is the one arithmetic operation; the checksum counts none.
    assert_eq!(a.operations.arithmetic, 1);
    assert_eq!(a.operations.binary, 0);
}
