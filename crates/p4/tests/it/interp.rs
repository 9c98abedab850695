//! The reference interpreter on the shipped programs with crafted packets (every parser path,
//! table hits and misses, every action, externs), entries files good and bad, and random packets.

use crate::common;

use common::bytes_checksum;
use linerate_p4::entries::{Entries, EntriesError, EntriesErrorKind};
use linerate_p4::interp::{self, Outcome, State, XdpAction};
use linerate_p4::{load, load_str, Checked};
use proptest::prelude::*;
use std::path::PathBuf;

fn example(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../examples/p4")
        .join(name)
}

/// A shipped program and its shipped entries file.
fn program(name: &str) -> (Checked, Entries) {
    let checked = match load(&example(&format!("{name}.p4"))) {
        Ok(c) => c,
        Err(e) => panic!("{name}: {e}"),
    };
    let entries = match Entries::load(&checked, &example(&format!("{name}.entries.json"))) {
        Ok(e) => e,
        Err(e) => panic!("{name}: {e}"),
    };
    (checked, entries)
}

fn run(p: &(Checked, Entries), packet: &[u8], port: u32, state: &mut State) -> Outcome {
    match interp::run(&p.0, &p.1, packet, port, state) {
        Ok(o) => o,
        Err(e) => panic!("interpreter error: {e}"),
    }
}

fn run_once(p: &(Checked, Entries), packet: &[u8], port: u32) -> Outcome {
    run(p, packet, port, &mut State::default())
}

const HOST_MAC: [u8; 6] = [0x02, 0, 0, 0, 0, 0x99];
const ROUTER_MAC: [u8; 6] = [0x02, 0, 0, 0, 0, 0x01];

fn ethernet(dst: [u8; 6], src: [u8; 6], ether_type: u16) -> Vec<u8> {
    let mut p = Vec::new();
    p.extend_from_slice(&dst);
    p.extend_from_slice(&src);
    p.extend_from_slice(&ether_type.to_be_bytes());
    p
}

fn vlan_tag(pcp: u8, vid: u16, ether_type: u16) -> Vec<u8> {
    let tci = (u16::from(pcp) << 13) | (vid & 0x0fff);
    let mut p = tci.to_be_bytes().to_vec();
    p.extend_from_slice(&ether_type.to_be_bytes());
    p
}

struct Ipv4 {
    version: u8,
    ihl: u8,
    ttl: u8,
    protocol: u8,
    src: [u8; 4],
    dst: [u8; 4],
}

impl Default for Ipv4 {
    fn default() -> Self {
        Ipv4 {
            version: 4,
            ihl: 5,
            ttl: 64,
            protocol: 17,
            src: [192, 0, 2, 1],
            dst: [10, 9, 9, 9],
        }
    }
}

fn ipv4(h: &Ipv4) -> Vec<u8> {
    let mut p = vec![
        (h.version << 4) | h.ihl,
        0,
        0,
        48,
        0x12,
        0x34,
        0,
        0,
        h.ttl,
        h.protocol,
    ];
    p.extend_from_slice(&[0xab, 0xcd]);
    p.extend_from_slice(&h.src);
    p.extend_from_slice(&h.dst);
    p
}

fn udp(src: u16, dst: u16) -> Vec<u8> {
    let mut p = Vec::new();
    for v in [src, dst, 8 + 4, 0] {
        p.extend_from_slice(&v.to_be_bytes());
    }
    p
}

const PAYLOAD: &[u8] = b"PAYL";

fn ipv4_packet(h: &Ipv4, l4: &[u8]) -> Vec<u8> {
    let mut p = ethernet(ROUTER_MAC, HOST_MAC, 0x0800);
    p.extend(ipv4(h));
    p.extend_from_slice(l4);
    p.extend_from_slice(PAYLOAD);
    p
}

/// The packet after l3 forwarding: MACs rewritten, TTL one less, the IPv4 header checksum
/// recomputed over the header's bytes, everything else the same.
fn forwarded(packet: &[u8], dst_mac: [u8; 6]) -> Vec<u8> {
    let mut p = packet.to_vec();
    p[0..6].copy_from_slice(&dst_mac);
    p[6..12].copy_from_slice(&ROUTER_MAC);
    p[14 + 8] -= 1;
    p[24..26].copy_from_slice(&[0, 0]);
    let sum = bytes_checksum(&p[14..34]);
    p[24..26].copy_from_slice(&sum.to_be_bytes());
    p
}

// ---- l3_fwd ------------------------------------------------------------------------------------

#[test]
fn l3_fwd_forwards_rewriting_macs_and_decrementing_ttl() {
    let p = program("l3_fwd");
    let packet = ipv4_packet(&Ipv4::default(), &udp(1000, 80));
    let out = run_once(&p, &packet, 1);
    assert_eq!(out.action, XdpAction::Redirect(2));
    assert_eq!(out.packet, forwarded(&packet, [2, 0, 0, 0, 0, 0x0a]));
    assert_eq!(out.packet[14 + 8], 63);
}

#[test]
fn l3_fwd_longest_prefix_wins_and_own_port_is_tx() {
    let p = program("l3_fwd");
    let to = |dst: [u8; 4]| {
        ipv4_packet(
            &Ipv4 {
                dst,
                ..Ipv4::default()
            },
            &[],
        )
    };
    let sixteen = to([10, 1, 5, 5]);
    let out = run_once(&p, &sixteen, 1);
    assert_eq!(out.action, XdpAction::Redirect(3));
    assert_eq!(out.packet, forwarded(&sixteen, [2, 0, 0, 0, 0, 0x0b]));
    let host = to([10, 1, 2, 3]);
    let out = run_once(&p, &host, 1);
    assert_eq!(out.action, XdpAction::Tx);
    assert_eq!(out.packet, forwarded(&host, [2, 0, 0, 0, 0, 0x0c]));
}

#[test]
fn l3_fwd_miss_runs_the_default_drop_and_a_drop_entry_drops() {
    let p = program("l3_fwd");
    for dst in [[8, 8, 8, 8], [192, 168, 1, 7]] {
        let packet = ipv4_packet(
            &Ipv4 {
                dst,
                ..Ipv4::default()
            },
            &[],
        );
        let out = run_once(&p, &packet, 1);
        assert_eq!(out.action, XdpAction::Drop, "{dst:?}");
        assert_eq!(out.packet, packet, "headers unchanged");
    }
}

#[test]
fn l3_fwd_passes_non_ipv4_and_expiring_ttl_unchanged() {
    let p = program("l3_fwd");
    let mut ipv6 = ethernet(ROUTER_MAC, HOST_MAC, 0x86dd);
    ipv6.extend_from_slice(&[0x60; 40]);
    let out = run_once(&p, &ipv6, 1);
    assert_eq!((out.action, out.packet), (XdpAction::Pass, ipv6));
    let expiring = ipv4_packet(
        &Ipv4 {
            ttl: 1,
            ..Ipv4::default()
        },
        &[],
    );
    let out = run_once(&p, &expiring, 1);
    assert_eq!((out.action, out.packet), (XdpAction::Pass, expiring));
}

#[test]
fn l3_fwd_rejects_packets_too_short_for_a_header() {
    let p = program("l3_fwd");
    let out = run_once(&p, &[0u8; 13], 1);
    assert_eq!(out.action, XdpAction::Drop);
    assert_eq!(out.parser_error, "PacketTooShort");
    let full = ipv4_packet(&Ipv4::default(), &[]);
    let truncated = &full[..14 + 19];
    let out = run_once(&p, truncated, 1);
    assert_eq!(
        (out.action, out.parser_error.as_str()),
        (XdpAction::Drop, "PacketTooShort")
    );
    assert_eq!(out.packet, truncated);
    let exact = &full[..14 + 20];
    assert_eq!(run_once(&p, exact, 1).action, XdpAction::Redirect(2));
}

#[test]
fn entries_file_default_action_replaces_the_programs() {
    let checked = load(&example("l3_fwd.p4")).unwrap_or_else(|e| panic!("{e}"));
    let text = r#"{"default_actions": {"ipv4_lpm": {"action": "ipv4_forward",
        "args": {"src_mac": "0x020000000001", "dst_mac": "02:00:00:00:00:77", "port": "7"}}}}"#;
    let entries =
        Entries::from_json_str(&checked, "d.json", text).unwrap_or_else(|e| panic!("{e}"));
    let p = (checked, entries);
    let packet = ipv4_packet(&Ipv4::default(), &[]);
    let out = run_once(&p, &packet, 1);
    assert_eq!(out.action, XdpAction::Redirect(7));
    assert_eq!(out.packet, forwarded(&packet, [2, 0, 0, 0, 0, 0x77]));
}

// ---- l3_fwd_firewall ---------------------------------------------------------------------------

#[test]
fn firewall_const_acl_denies_dns_and_counts_the_rule() {
    let p = program("l3_fwd_firewall");
    let mut state = State::default();
    let dns = ipv4_packet(&Ipv4::default(), &udp(5353, 53));
    let out = run(&p, &dns, 1, &mut state);
    assert_eq!(out.action, XdpAction::Drop);
    assert_eq!(out.packet, dns, "a denied packet is not rewritten");
    let cell = state.counter("FwIngress.acl_hits", 0);
    assert_eq!((cell.packets, cell.bytes), (1, dns.len() as u64));
    assert_eq!(state.counter("FwIngress.acl_hits", 1).packets, 0);
}

#[test]
fn firewall_denies_udp_from_ten_slash_eight_by_the_second_rule() {
    let p = program("l3_fwd_firewall");
    let mut state = State::default();
    let from_ten = ipv4_packet(
        &Ipv4 {
            src: [10, 7, 7, 7],
            ..Ipv4::default()
        },
        &udp(1000, 80),
    );
    assert_eq!(run(&p, &from_ten, 1, &mut state).action, XdpAction::Drop);
    assert_eq!(state.counter("FwIngress.acl_hits", 1).packets, 1);
    // DNS from 10/8 matches both rules: the first listed wins.
    let dns_from_ten = ipv4_packet(
        &Ipv4 {
            src: [10, 7, 7, 7],
            ..Ipv4::default()
        },
        &udp(1000, 53),
    );
    assert_eq!(
        run(&p, &dns_from_ten, 1, &mut state).action,
        XdpAction::Drop
    );
    assert_eq!(state.counter("FwIngress.acl_hits", 0).packets, 1);
    assert_eq!(state.counter("FwIngress.acl_hits", 1).packets, 1);
}

#[test]
fn firewall_allows_and_forwards_other_traffic() {
    let p = program("l3_fwd_firewall");
    let web = ipv4_packet(&Ipv4::default(), &udp(1000, 80));
    let out = run_once(&p, &web, 1);
    assert_eq!(out.action, XdpAction::Redirect(2));
    assert_eq!(out.packet, forwarded(&web, [2, 0, 0, 0, 0, 0x0a]));
    // TCP from 10/8 is not UDP: the ACL's exact protocol key misses it.
    let tcp = ipv4_packet(
        &Ipv4 {
            src: [10, 1, 1, 1],
            protocol: 6,
            dst: [172, 20, 0, 1],
            ..Ipv4::default()
        },
        &[0u8; 20],
    );
    let out = run_once(&p, &tcp, 1);
    assert_eq!(out.action, XdpAction::Redirect(3));
    assert_eq!(out.packet, forwarded(&tcp, [2, 0, 0, 0, 0, 0x0b]));
    let unrouted = ipv4_packet(
        &Ipv4 {
            dst: [8, 8, 4, 4],
            ..Ipv4::default()
        },
        &udp(1, 2),
    );
    assert_eq!(run_once(&p, &unrouted, 1).action, XdpAction::Drop);
    let blackholed = ipv4_packet(
        &Ipv4 {
            dst: [192, 168, 1, 1],
            ..Ipv4::default()
        },
        &udp(1, 2),
    );
    assert_eq!(run_once(&p, &blackholed, 1).action, XdpAction::Drop);
}

#[test]
fn firewall_parser_paths_verify_options_and_fragments() {
    let p = program("l3_fwd_firewall");
    let bad_version = ipv4_packet(
        &Ipv4 {
            version: 6,
            ..Ipv4::default()
        },
        &udp(1, 53),
    );
    let out = run_once(&p, &bad_version, 1);
    assert_eq!(
        (out.action, out.parser_error.as_str()),
        (XdpAction::Drop, "HeaderTooShort")
    );
    // ihl != 5: UDP is not parsed, so the DNS port is not seen and the packet is forwarded.
    let options = ipv4_packet(
        &Ipv4 {
            ihl: 6,
            ..Ipv4::default()
        },
        &udp(1, 53),
    );
    assert_eq!(run_once(&p, &options, 1).action, XdpAction::Redirect(2));
    // A UDP header cut short rejects.
    let short = &ipv4_packet(&Ipv4::default(), &[])[..14 + 20 + 3];
    let out = run_once(&p, short, 1);
    assert_eq!(out.parser_error, "PacketTooShort");
    let mut arp = ethernet(ROUTER_MAC, HOST_MAC, 0x0806);
    arp.extend_from_slice(&[0; 28]);
    assert_eq!(run_once(&p, &arp, 1).action, XdpAction::Pass);
    let expiring = ipv4_packet(
        &Ipv4 {
            ttl: 1,
            ..Ipv4::default()
        },
        &udp(1, 80),
    );
    assert_eq!(run_once(&p, &expiring, 1).action, XdpAction::Drop);
}

#[test]
fn const_entries_hold_without_an_entries_file() {
    let checked = load(&example("l3_fwd_firewall.p4")).unwrap_or_else(|e| panic!("{e}"));
    let entries = Entries::from_program(&checked).unwrap_or_else(|e| panic!("{e}"));
    let p = (checked, entries);
    let dns = ipv4_packet(&Ipv4::default(), &udp(5353, 53));
    assert_eq!(run_once(&p, &dns, 1).action, XdpAction::Drop);
    // Allowed, but with no routes the forwarding table's default drops too; the counter tells
    // which table dropped.
    let mut state = State::default();
    let web = ipv4_packet(&Ipv4::default(), &udp(5353, 80));
    assert_eq!(run(&p, &web, 1, &mut state).action, XdpAction::Drop);
    assert_eq!(state.counter("FwIngress.acl_hits", 0).packets, 0);
}

// ---- vlan_acl_switch ---------------------------------------------------------------------------

const KNOWN_MAC: [u8; 6] = [2, 0, 0, 0, 0, 2];
const VLAN100_MAC: [u8; 6] = [2, 0, 0, 0, 0, 5];

fn tagged(dst: [u8; 6], tags: &[(u8, u16)], outer_type: u16) -> Vec<u8> {
    let mut p = ethernet(
        dst,
        HOST_MAC,
        if tags.is_empty() { 0x0800 } else { outer_type },
    );
    for (i, (pcp, vid)) in tags.iter().enumerate() {
        let next = if i + 1 < tags.len() { 0x8100 } else { 0x0800 };
        p.extend(vlan_tag(*pcp, *vid, next));
    }
    p.extend_from_slice(PAYLOAD);
    p
}

#[test]
fn vlan_untagged_known_mac_is_forwarded_unchanged() {
    let p = program("vlan_acl_switch");
    let frame = tagged(KNOWN_MAC, &[], 0);
    let out = run_once(&p, &frame, 1);
    assert_eq!(out.action, XdpAction::Redirect(3));
    assert_eq!(out.packet, frame);
}

#[test]
fn vlan_unknown_mac_floods_back_out_with_broadcast_destination() {
    let p = program("vlan_acl_switch");
    let frame = tagged([2, 0, 0, 0, 0, 0x42], &[], 0);
    let out = run_once(&p, &frame, 1);
    assert_eq!(out.action, XdpAction::Tx);
    let mut expected = frame.clone();
    expected[0..6].copy_from_slice(&[0xff; 6]);
    assert_eq!(out.packet, expected);
}

#[test]
fn vlan_tagged_forward_rewrites_the_tag() {
    let p = program("vlan_acl_switch");
    let frame = tagged(VLAN100_MAC, &[(5, 100)], 0x8100);
    let out = run_once(&p, &frame, 1);
    assert_eq!(out.action, XdpAction::Redirect(4));
    let mut expected = frame.clone();
    // pcp 5 becomes (5 >> 1) = 2, the vid stays 100 (the forwarding VLAN of port 1, VLAN 100).
    expected[14..16].copy_from_slice(&((2u16 << 13) | 100).to_be_bytes());
    assert_eq!(out.packet, expected);
}

#[test]
fn vlan_acl_denies_priority_seven_and_unknown_ports_drop() {
    let p = program("vlan_acl_switch");
    let urgent = tagged(VLAN100_MAC, &[(7, 100)], 0x8100);
    assert_eq!(run_once(&p, &urgent, 1).action, XdpAction::Drop);
    let stranger = tagged(KNOWN_MAC, &[], 0);
    assert_eq!(run_once(&p, &stranger, 3).action, XdpAction::Drop);
    // Port 2's untagged frames map to VLAN 20, where the MAC is unknown: flood.
    assert_eq!(run_once(&p, &stranger, 2).action, XdpAction::Tx);
}

#[test]
fn vlan_stack_takes_two_tags_and_rejects_a_third() {
    let p = program("vlan_acl_switch");
    let qinq = tagged(VLAN100_MAC, &[(1, 100), (3, 7)], 0x88a8);
    let out = run_once(&p, &qinq, 1);
    assert_eq!(out.action, XdpAction::Redirect(4));
    let mut expected = qinq.clone();
    expected[14..16].copy_from_slice(&100u16.to_be_bytes());
    assert_eq!(
        out.packet, expected,
        "outer tag rewritten (pcp 1 >> 1 = 0), inner kept"
    );
    let three = tagged(VLAN100_MAC, &[(1, 100), (3, 7), (0, 9)], 0x8100);
    let out = run_once(&p, &three, 1);
    assert_eq!(
        (out.action, out.parser_error.as_str()),
        (XdpAction::Drop, "StackOutOfBounds")
    );
}

#[test]
fn vlan_register_counts_frames_per_port_across_packets() {
    let p = program("vlan_acl_switch");
    let frame = tagged(KNOWN_MAC, &[], 0);
    let packets = vec![
        (frame.clone(), 1),
        (frame.clone(), 1),
        (frame.clone(), 2),
        (frame.clone(), 65),
        (vec![0u8; 5], 1),
    ];
    let mut state = State::default();
    let outcomes =
        interp::run_packets(&p.0, &p.1, &packets, &mut state).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(outcomes.len(), 5);
    assert_eq!(outcomes[4].parser_error, "PacketTooShort");
    // Port 65 shares slot 1 (ports are masked with 63); the rejected frame never reaches ingress.
    assert_eq!(state.register("VlanIngress.port_frames", 1), 3);
    assert_eq!(state.register("VlanIngress.port_frames", 2), 1);
    let mut one_by_one = State::default();
    for ((bytes, port), outcome) in packets.iter().zip(&outcomes) {
        assert_eq!(&run(&p, bytes, *port, &mut one_by_one), outcome);
    }
    assert_eq!(one_by_one, state);
}

// ---- bad entries files -------------------------------------------------------------------------

fn entries_error(program: &str, text: &str) -> EntriesError {
    let checked = load(&example(program)).unwrap_or_else(|e| panic!("{e}"));
    match Entries::from_json_str(&checked, "bad.json", text) {
        Ok(_) => panic!("accepted: {text}"),
        Err(e) => e,
    }
}

const FORWARD_ARGS: &str = r#""args": {"src_mac": 1, "dst_mac": 2, "port": 3}"#;

#[test]
fn bad_entries_name_the_file_and_the_entry() {
    let text = format!(
        r#"{{"tables": {{"L3Ingress.ipv4_lpm": [
            {{"match": {{"dst_addr": {{"prefix": "10.0.0.0", "len": 8}}}}, "action": "drop"}},
            {{"match": {{"dst_addr": {{"prefix": "10.0.0.0", "len": 8}}}}, "action": "nope", {FORWARD_ARGS}}}
        ]}}}}"#
    );
    let e = entries_error("l3_fwd.p4", &text);
    assert_eq!(e.file, "bad.json");
    assert_eq!(e.location, r#"tables["L3Ingress.ipv4_lpm"][1]"#);
    assert!(
        matches!(*e.kind, EntriesErrorKind::UnknownAction { .. }),
        "{e}"
    );
    assert!(
        e.to_string()
            .starts_with(r#"bad.json: tables["L3Ingress.ipv4_lpm"][1]: "#),
        "{e}"
    );
}

/// Whether an error is of the expected class.
type IsClass = fn(&EntriesErrorKind) -> bool;

#[test]
fn bad_entries_each_class_is_reported() {
    let lpm = |m: &str, rest: &str| {
        format!(r#"{{"tables": {{"L3Ingress.ipv4_lpm": [{{"match": {m}, {rest}}}]}}}}"#)
    };
    let fwd = format!(r#""action": "ipv4_forward", {FORWARD_ARGS}"#);
    let cases: Vec<(&str, String, IsClass)> = vec![
        ("l3_fwd.p4", String::from("{"), |k| {
            matches!(k, EntriesErrorKind::Json(_))
        }),
        ("l3_fwd.p4", String::from(r#"{"table": {}}"#), |k| {
            matches!(k, EntriesErrorKind::Shape(_))
        }),
        (
            "l3_fwd.p4",
            String::from(r#"{"tables": {"Nope.t": []}}"#),
            |k| matches!(k, EntriesErrorKind::UnknownTable(_)),
        ),
        ("l3_fwd.p4", lpm(r#"{"hdr.ipv4.src_addr": 1}"#, &fwd), |k| {
            matches!(k, EntriesErrorKind::UnknownKey { .. })
        }),
        (
            "l3_fwd.p4",
            lpm(r#"{"dst_addr": {"value": 1, "mask": 2}}"#, &fwd),
            |k| matches!(k, EntriesErrorKind::MatchKind { .. }),
        ),
        (
            "l3_fwd.p4",
            lpm(r#"{"dst_addr": {"prefix": 1, "len": 33}}"#, &fwd),
            |k| matches!(k, EntriesErrorKind::Width { .. }),
        ),
        (
            "l3_fwd.p4",
            lpm(r#"{"dst_addr": "1.2.3.4.5"}"#, &fwd),
            |k| matches!(k, EntriesErrorKind::BadValue { .. }),
        ),
        (
            "l3_fwd.p4",
            lpm(
                r#"{"dst_addr": 1}"#,
                r#""action": "ipv4_forward", "args": {"src_mac": 1, "dst_mac": 2}"#,
            ),
            |k| matches!(k, EntriesErrorKind::MissingArgument { .. }),
        ),
        (
            "l3_fwd.p4",
            lpm(
                r#"{"dst_addr": 1}"#,
                r#""action": "drop", "args": {"port": 1}"#,
            ),
            |k| matches!(k, EntriesErrorKind::UnknownArgument { .. }),
        ),
        (
            "l3_fwd.p4",
            lpm(
                r#"{"dst_addr": 1}"#,
                r#""action": "ipv4_forward", "args": {"src_mac": "02:00:00:00:00:01:03", "dst_mac": 2, "port": 3}"#,
            ),
            |k| matches!(k, EntriesErrorKind::BadValue { .. }),
        ),
        (
            "l3_fwd.p4",
            lpm(
                r#"{"dst_addr": 1}"#,
                r#""action": "ipv4_forward", "args": {"src_mac": 1, "dst_mac": 2, "port": 4294967296}"#,
            ),
            |k| matches!(k, EntriesErrorKind::Width { .. }),
        ),
        (
            "vlan_acl_switch.p4",
            String::from(
                r#"{"tables": {"VlanIngress.mac_table": [{"match": {"meta.vid": 1}, "action": "flood"}]}}"#,
            ),
            |k| matches!(k, EntriesErrorKind::MissingKey(_)),
        ),
        (
            "vlan_acl_switch.p4",
            String::from(
                r#"{"tables": {"VlanIngress.mac_table": [{"match": {"meta.vid": 1, "dst_addr": 1}, "action": "set_vlan", "args": {"vid": 1}}]}}"#,
            ),
            |k| matches!(k, EntriesErrorKind::UnknownAction { .. }),
        ),
        (
            "vlan_acl_switch.p4",
            String::from(r#"{"tables": {"VlanIngress.acl": [{"match": {}, "action": "deny"}]}}"#),
            |k| matches!(k, EntriesErrorKind::ConstEntries(_)),
        ),
        (
            "vlan_acl_switch.p4",
            String::from(
                r#"{"tables": {"VlanIngress.port_vlan": [{"match": {"ingress_port": 1, "vid": 4096}, "action": "set_vlan", "args": {"vid": 1}}]}}"#,
            ),
            |k| matches!(k, EntriesErrorKind::Width { .. }),
        ),
    ];
    for (program, text, is_class) in cases {
        let e = entries_error(program, &text);
        assert!(is_class(&e.kind), "{text}\n  gave: {e}");
        assert_eq!(e.file, "bad.json");
    }
}

const SMALL_TABLE: &str = r#"
#include <xdp.p4>
header h_t { bit<8> k; }
struct hs_t { h_t h; }
struct m_t { }
parser P(packet_in packet, out hs_t hdr, inout m_t meta, inout standard_metadata_t std) {
    state start { packet.extract(hdr.h); transition accept; }
}
control I(inout hs_t hdr, inout m_t meta, inout standard_metadata_t std) {
    action set(bit<8> v) { hdr.h.k = v; }
    table t {
        key = { hdr.h.k: ternary; }
        actions = { set; }
        size = 2;
        const default_action = set(1);
    }
    apply { t.apply(); }
}
control D(packet_out packet, in hs_t hdr) { apply { packet.emit(hdr.h); } }
XdpPipeline(P(), I(), D()) main;
"#;

#[test]
fn bad_entries_size_and_const_default_and_ternary_priority() {
    let checked = load_str("small.p4", SMALL_TABLE).unwrap_or_else(|e| panic!("{e}"));
    let entry = |v: &str, m: &str, prio: i64, set: u8| {
        format!(
            r#"{{"match": {{"k": {{"value": {v}, "mask": {m}}}}}, "priority": {prio}, "action": "set", "args": {{"v": {set}}}}}"#
        )
    };
    let three = format!(
        r#"{{"tables": {{"t": [{}, {}, {}]}}}}"#,
        entry("0", "0", 0, 9),
        entry("0", "0", 0, 9),
        entry("0", "0", 0, 9)
    );
    let e = Entries::from_json_str(&checked, "bad.json", &three).err();
    assert!(matches!(
        e.map(|e| *e.kind),
        Some(EntriesErrorKind::TooManyEntries {
            size: 2,
            count: 3,
            ..
        })
    ));
    let default = r#"{"default_actions": {"I.t": {"action": "set", "args": {"v": 3}}}}"#;
    let e = Entries::from_json_str(&checked, "bad.json", default).err();
    assert!(matches!(
        e.map(|e| *e.kind),
        Some(EntriesErrorKind::ConstDefault(_))
    ));

    // Both entries match 0x0f; the later one has the higher priority and wins. 0xf0 matches
    // only the first; 0x00 matches neither and gets the const default.
    let two = format!(
        r#"{{"tables": {{"t": [{}, {}]}}}}"#,
        entry("\"0x00\"", "\"0x00\"", 1, 10),
        entry("15", "15", 5, 20)
    );
    let entries =
        Entries::from_json_str(&checked, "ok.json", &two).unwrap_or_else(|e| panic!("{e}"));
    let p = (checked, entries);
    for (input, output) in [(0x0f, 20), (0xf0, 10), (0x00, 10)] {
        assert_eq!(
            run_once(&p, &[input], 1).packet,
            vec![output],
            "key {input:#x}"
        );
    }
}

// ---- random packets ----------------------------------------------------------------------------

/// Packets that look like Ethernet (+ VLAN tags) (+ IPv4 (+ UDP)) with random fields and random
/// lengths, so every parser state is reached, and plain random bytes.
fn packets() -> impl Strategy<Value = Vec<u8>> {
    let ether_type = prop_oneof![
        Just(0x0800u16),
        Just(0x8100),
        Just(0x88a8),
        Just(0x86dd),
        any::<u16>()
    ];
    let structured = (
        ether_type,
        prop::collection::vec(any::<u8>(), 0..80),
        any::<u8>(),
        prop::sample::select(vec![17u8, 6, 1]),
    )
        .prop_map(|(ether_type, mut rest, ver_ihl, protocol)| {
            let mut p = ethernet(ROUTER_MAC, HOST_MAC, ether_type);
            if let Some(first) = rest.first_mut() {
                *first = if ver_ihl & 1 == 0 { 0x45 } else { ver_ihl };
            }
            if let Some(proto) = rest.get_mut(9) {
                *proto = protocol;
            }
            p.extend(rest);
            p
        });
    prop_oneof![structured, prop::collection::vec(any::<u8>(), 0..64)]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 300, ..ProptestConfig::default() })]

    #[test]
    fn random_packets_never_fail_and_runs_are_deterministic(
        packet in packets(),
        port in 1u32..70,
    ) {
        for name in ["l3_fwd", "l3_fwd_firewall", "vlan_acl_switch"] {
            let p = program(name);
            let first = interp::run(&p.0, &p.1, &packet, port, &mut State::default());
            let second = interp::run(&p.0, &p.1, &packet, port, &mut State::default());
            prop_assert!(first.is_ok(), "{name}: {first:?}");
            prop_assert_eq!(&first, &second);
            if let Ok(outcome) = first {
                if outcome.parser_error != "NoError" {
                    prop_assert_eq!(outcome.action, XdpAction::Drop);
                    prop_assert_eq!(&outcome.packet, &packet);
                }
            }
        }
    }
}

// ---- language features -------------------------------------------------------------------------

const FEATURES: &str = r#"
#include <xdp.p4>
header in_t { bit<8> a; bit<8> b; bit<16> c; }
header tag_t { bit<8> kind; }
header out_t { bit<8> sum; bit<8> diff; bit<16> cat; bit<8> sl; bit<8> sat; int<8> neg; bit<8> sel; }
struct hs_t { tag_t t; out_t o; in_t i; }
struct m_t { bit<8> path; }
parser P(packet_in packet, out hs_t hdr, inout m_t meta, inout standard_metadata_t std) {
    state start {
        packet.extract(hdr.i);
        transition select(hdr.i.a, hdr.i.b) {
            (0x10 &&& 0xf0, _): masked;
            (1 .. 5, _): ranged;
            (0xff, 0xff): reject;
            default: accept;
        }
    }
    state masked { meta.path = 1; packet.advance(8); transition accept; }
    state ranged { meta.path = 2; transition accept; }
}
control I(inout hs_t hdr, inout m_t meta, inout standard_metadata_t std) {
    action bump(inout bit<8> x, bit<8> by) {
        x = x + by;
        if (by != 0) { return; }
        x = 0;
    }
    action tag(bit<8> k) { hdr.t.setValid(); hdr.t.kind = k; }
    table kinds {
        key = { hdr.i.b: exact; }
        actions = { tag; bump(hdr.o.sel); }
    }
    apply {
        hdr.o.setValid();
        hdr.o.sum = hdr.i.a + hdr.i.b;
        hdr.o.diff = hdr.i.a - hdr.i.b;
        hdr.o.cat = hdr.i.a ++ hdr.i.b;
        hdr.o.sl = hdr.i.c[11:4];
        hdr.o.sl[7:6] = 2w3;
        hdr.o.sat = hdr.i.a |+| hdr.i.b;
        hdr.o.neg = -((int<8>) hdr.i.a) >> 1;
        hdr.o.sel = hdr.i.a > hdr.i.b ? 8w1 : 8w2;
        bump(hdr.o.sel, 4);
        switch (kinds.apply().action_run) {
            tag:
            bump: { meta.path = meta.path + 10; }
            default: { meta.path = 99; }
        }
        if (meta.path == 11) { hdr.i.setInvalid(); }
        if (meta.path == 99 && hdr.i.c == 0xdead) { exit; }
        hdr.o.sel = hdr.o.sel + meta.path;
        if (hdr.i.a == 0xf0) { mark_to_drop(std); }
    }
}
control D(packet_out packet, in hs_t hdr) { apply { packet.emit(hdr); } }
XdpPipeline(P(), I(), D()) main;
"#;

const FEATURE_ENTRIES: &str = r#"{"tables": {"kinds": [
    {"match": {"b": 7}, "action": "bump", "args": {"by": 3}},
    {"match": {"b": 8}, "action": "tag", "args": {"k": "0x42"}}
]}}"#;

#[test]
fn language_features_compute_what_p4_says() {
    let checked = load_str("features.p4", FEATURES).unwrap_or_else(|e| panic!("{e}"));
    let entries = Entries::from_json_str(&checked, "features.json", FEATURE_ENTRIES)
        .unwrap_or_else(|e| panic!("{e}"));
    let p = (checked, entries);
    // Masked select path, advance skips 0xaa; table hit runs bump with the listed inout binding
    // (sel 1 + 4 + 3 = 8), the switch adds 10 to the path, and path 11 removes the input header.
    // Inputs carry a payload of 0x5a bytes so that each output keeps XDP's 14-byte minimum.
    let pad = [0x5a; 8];
    let out = run_once(
        &p,
        &[&[0x12, 0x07, 0xab, 0xcd, 0xaa, 0xbb][..], &pad].concat(),
        1,
    );
    assert_eq!(out.action, XdpAction::Pass);
    assert_eq!(
        out.packet,
        [
            &[0x19, 0x0b, 0x12, 0x07, 0xfc, 0x19, 0xf7, 8 + 11, 0xbb][..],
            &pad
        ]
        .concat()
    );
    // Range path; tag's empty case falls through to bump's body; the tag header is added.
    let out = run_once(&p, &[0x03, 0x08, 0x00, 0x00, 0xaa], 1);
    assert_eq!(
        out.packet,
        [
            0x42,
            0x0b,
            0xfb,
            0x03,
            0x08,
            0xc0,
            0x0b,
            0xfe,
            6 + 12,
            0x03,
            0x08,
            0x00,
            0x00,
            0xaa
        ]
    );
    // Explicit reject.
    let out = run_once(&p, &[0xff, 0xff, 0, 0], 1);
    assert_eq!(
        (out.action, out.parser_error.as_str()),
        (XdpAction::Drop, "NoError")
    );
    // Default path, table miss (NoAction, the switch's default), then exit before the last add.
    let out = run_once(&p, &[&[0x30, 0x01, 0xde, 0xad][..], &pad].concat(), 1);
    assert_eq!(out.action, XdpAction::Pass);
    assert_eq!(
        out.packet,
        [
            &[0x31, 0x2f, 0x30, 0x01, 0xea, 0x31, 0xe8, 5, 0x30, 0x01, 0xde, 0xad][..],
            &pad
        ]
        .concat()
    );
    // Without the payload the output would be 12 bytes: bpf_xdp_adjust_head refuses to leave
    // fewer than 14, so the packet is dropped unchanged.
    let out = run_once(&p, &[0x30, 0x01, 0xde, 0xad], 1);
    assert_eq!(
        (out.action, out.packet.as_slice()),
        (XdpAction::Drop, &[0x30, 0x01, 0xde, 0xad][..])
    );
    // Saturating add, signed negation and shift, and mark_to_drop.
    let out = run_once(&p, &[&[0xf0, 0x20, 0x00, 0x00][..], &pad].concat(), 1);
    assert_eq!(out.action, XdpAction::Drop);
    assert_eq!(
        out.packet,
        [
            &[
                0x10,
                0xd0,
                0xf0,
                0x20,
                0xc0,
                0xff,
                0x08,
                5 + 99,
                0xf0,
                0x20,
                0x00,
                0x00
            ][..],
            &pad
        ]
        .concat()
    );
}

// ---- ipip_tunnel -------------------------------------------------------------------------------

/// An IPv4 header (TTL 64 unless `ttl`) with a correct checksum.
fn ipv4_with_checksum(proto: u8, src: [u8; 4], dst: [u8; 4], total_len: u16, ttl: u8) -> Vec<u8> {
    let mut h = vec![0x45, 0x08];
    h.extend_from_slice(&total_len.to_be_bytes());
    h.extend_from_slice(&[0x12, 0x34, 0x40, 0x00, ttl, proto, 0, 0]);
    h.extend_from_slice(&src);
    h.extend_from_slice(&dst);
    let sum = bytes_checksum(&h);
    h[10..12].copy_from_slice(&sum.to_be_bytes());
    h
}

#[test]
fn ipip_tunnel_encapsulates_with_a_valid_outer_header() {
    let p = program("ipip_tunnel");
    let inner = ipv4_with_checksum(17, [172, 16, 0, 9], [10, 2, 0, 5], 28, 61);
    let packet = [
        &ethernet(HOST_MAC, ROUTER_MAC, 0x0800)[..],
        &inner,
        PAYLOAD,
        PAYLOAD,
    ]
    .concat();
    let out = run_once(&p, &packet, 1);
    assert_eq!(out.action, XdpAction::Redirect(2));
    // The outer header: the inner's DSCP, length + 20, no fragment flags, TTL 64, protocol 4,
    // the entry's addresses, and a checksum that sums to 0xffff over the header.
    let mut outer = vec![0x45, 0x08, 0, 48, 0, 0, 0, 0, 64, 4, 0, 0];
    outer.extend_from_slice(&[192, 0, 2, 1, 198, 51, 100, 7]);
    let sum = bytes_checksum(&outer);
    outer[10..12].copy_from_slice(&sum.to_be_bytes());
    let want = [
        &ethernet(HOST_MAC, ROUTER_MAC, 0x0800)[..],
        &outer,
        &inner,
        PAYLOAD,
        PAYLOAD,
    ]
    .concat();
    assert_eq!(out.packet, want);
    assert_eq!(bytes_checksum(&out.packet[14..34]), 0);
}

#[test]
fn ipip_tunnel_decapsulates_for_its_endpoint_and_routes_the_inner_packet() {
    let p = program("ipip_tunnel");
    let eth = ethernet(HOST_MAC, ROUTER_MAC, 0x0800);
    let inner = ipv4_with_checksum(17, [172, 16, 0, 9], [10, 3, 5, 5], 24, 61);
    let outer = ipv4_with_checksum(4, [198, 51, 100, 7], [192, 0, 2, 1], 44, 60);
    let packet = [&eth[..], &outer, &inner, PAYLOAD].concat();
    let out = run_once(&p, &packet, 1);
    assert_eq!(out.action, XdpAction::Redirect(3));
    assert_eq!(out.packet, [&eth[..], &inner, PAYLOAD].concat());
    // Another endpoint's tunnel passes untouched; a bad outer checksum rejects.
    let elsewhere = ipv4_with_checksum(4, [198, 51, 100, 7], [192, 0, 2, 2], 44, 60);
    let packet = [&eth[..], &elsewhere, &inner, PAYLOAD].concat();
    let out = run_once(&p, &packet, 1);
    assert_eq!((out.action, &out.packet), (XdpAction::Pass, &packet));
    let mut bad = [&eth[..], &outer, &inner, PAYLOAD].concat();
    bad[24] ^= 1;
    let out = run_once(&p, &bad, 1);
    assert_eq!(
        (out.action, out.parser_error.as_str(), &out.packet),
        (XdpAction::Drop, "ChecksumError", &bad)
    );
}
