//! What the compiler's differential tests share: the programs, packets crafted to reach every
//! parser state and table action plus random ones, and the reference interpreter's verdicts.

#![allow(dead_code)]

use linerate_p4::compile::{compile, Compiled};
use linerate_p4::entries::Entries;
use linerate_p4::interp::{self, Outcome, State, XdpAction};
use linerate_p4::Checked;
use std::path::Path;

/// A shipped program with its entries file, compiled.
pub struct Case {
    pub checked: Checked,
    pub entries: Entries,
    pub compiled: Compiled,
}

pub fn case(name: &str) -> Case {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/p4");
    let checked = linerate_p4::load(&root.join(format!("{name}.p4"))).expect("loads");
    let entries =
        Entries::load(&checked, &root.join(format!("{name}.entries.json"))).expect("entries");
    let compiled = compile(&checked, &entries, name).expect("compiles");
    Case {
        checked,
        entries,
        compiled,
    }
}

/// The programs of paper 001's grid (`examples/p4/grid`), compiled, and those the compiler refused.
pub struct Grid {
    /// By name.
    pub cases: Vec<(String, Case)>,
    /// By name, with the compiler's reason.
    pub refused: Vec<(String, String)>,
}

/// The programs of paper 001's grid, each with one forwarding entry for ingress port 1 (where
/// test runs receive; to port 2), compiled.
pub fn grid_cases() -> Grid {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/p4/grid");
    let mut paths: Vec<_> = std::fs::read_dir(&dir)
        .expect("examples/p4/grid")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|e| e == "p4"))
        .collect();
    paths.sort();
    let forwarding = r#"{"tables": {"forwarding": [
        {"match": {"std.ingress_port": 1}, "action": "forward",
         "args": {"port": 2}}]}}"#;
    let (mut cases, mut refused) = (Vec::new(), Vec::new());
    for path in paths {
        let name = path
            .file_stem()
            .unwrap_or_default()
            .to_string_lossy()
            .into_owned();
        let checked = linerate_p4::load(&path).expect("loads");
        let entries =
            Entries::from_json_str(&checked, &name, forwarding).expect("the forwarding entry");
        match compile(&checked, &entries, &name) {
            Ok(compiled) => cases.push((
                name,
                Case {
                    checked,
                    entries,
                    compiled,
                },
            )),
            Err(e) => refused.push((name, e.to_string())),
        }
    }
    Grid { cases, refused }
}

/// The XDP action code of an interpreter outcome.
pub fn action_code(action: XdpAction) -> u32 {
    match action {
        XdpAction::Drop => 1,
        XdpAction::Pass => 2,
        XdpAction::Tx => 3,
        XdpAction::Redirect(_) => 4,
    }
}

/// A small deterministic generator (xorshift64*).
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed | 1)
    }
    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    pub fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
    pub fn pick<T: Copy>(&mut self, items: &[T]) -> T {
        items[self.below(items.len() as u64) as usize]
    }
}

/// An Ethernet + IPv4 (+ UDP) frame. Each argument is one header field the tests vary, so
/// they stay positional rather than become a struct built at every call.
#[allow(clippy::too_many_arguments)]
pub fn frame(
    ether_type: u16,
    version_ihl: u8,
    frag: u16,
    ttl: u8,
    proto: u8,
    src: [u8; 4],
    dst: [u8; 4],
    ports: (u16, u16),
    len: usize,
) -> Vec<u8> {
    let mut p = vec![0u8; len.max(14)];
    p[0..6].copy_from_slice(&[0x02, 0, 0, 0, 0, 0x99]);
    p[6..12].copy_from_slice(&[0x02, 0, 0, 0, 0, 0x88]);
    p[12..14].copy_from_slice(&ether_type.to_be_bytes());
    let mut put = |at: usize, bytes: &[u8]| {
        for (i, b) in bytes.iter().enumerate() {
            if let Some(x) = p.get_mut(at + i) {
                *x = *b;
            }
        }
    };
    put(14, &[version_ihl, 0x10, 0, 46, 0x12, 0x34]);
    put(20, &frag.to_be_bytes());
    put(22, &[ttl, proto, 0xab, 0xcd]);
    put(26, &src);
    put(30, &dst);
    put(34, &ports.0.to_be_bytes());
    put(36, &ports.1.to_be_bytes());
    put(38, &[0, 26, 0xbe, 0xef]);
    p
}

/// Crafted frames (every parser state, every table action, short packets, TTL edges) and
/// random ones: at least `count` in all.
pub fn packets(count: usize, seed: u64) -> Vec<Vec<u8>> {
    let dsts: [[u8; 4]; 9] = [
        [10, 0, 0, 7],
        [10, 1, 9, 9],
        [10, 1, 2, 3],
        [192, 168, 1, 5],
        [192, 168, 2, 5],
        [172, 16, 4, 4],
        [172, 31, 255, 1],
        [8, 8, 8, 8],
        [10, 200, 1, 1],
    ];
    let srcs: [[u8; 4]; 4] = [
        [10, 9, 9, 9],
        [192, 168, 0, 1],
        [1, 2, 3, 4],
        [172, 16, 0, 1],
    ];
    let mut out = Vec::new();
    // Crafted: each destination × protocol × TTL edge × port.
    for dst in dsts {
        for (proto, ports) in [
            (17, (1000, 53)),
            (17, (53, 2000)),
            (6, (1000, 53)),
            (17, (7, 9)),
        ] {
            for ttl in [0, 1, 2, 64] {
                let src = srcs[(ttl as usize) % srcs.len()];
                out.push(frame(0x0800, 0x45, 0, ttl, proto, src, dst, ports, 60));
            }
        }
    }
    // Non-IPv4, wrong version, options, fragments, short packets at every boundary.
    out.push(frame(0x86dd, 0x60, 0, 64, 17, srcs[2], dsts[0], (1, 2), 60));
    out.push(frame(0x0806, 0x45, 0, 64, 17, srcs[2], dsts[0], (1, 2), 42));
    out.push(frame(
        0x0800,
        0x65,
        0,
        64,
        17,
        srcs[2],
        dsts[0],
        (1, 53),
        60,
    ));
    out.push(frame(
        0x0800,
        0x46,
        0,
        64,
        17,
        srcs[2],
        dsts[0],
        (1, 53),
        60,
    ));
    out.push(frame(
        0x0800,
        0x45,
        0x2000,
        64,
        17,
        srcs[2],
        dsts[0],
        (1, 53),
        60,
    ));
    out.push(frame(
        0x0800,
        0x45,
        0x0001,
        64,
        17,
        srcs[0],
        dsts[1],
        (1, 53),
        60,
    ));
    for len in [14, 20, 33, 34, 35, 41, 42, 43] {
        out.push(frame(
            0x0800,
            0x45,
            0,
            64,
            17,
            srcs[1],
            dsts[1],
            (9, 53),
            len,
        ));
        out.push(frame(0x0800, 0x45, 0, 64, 6, srcs[0], dsts[2], (9, 9), len));
    }
    let mut rng = Rng::new(seed);
    while out.len() < count {
        let len = 14 + rng.below(80) as usize;
        let (r16, r8) = (rng.below(0x10000) as u16, rng.below(256) as u8);
        let ether_type = rng.pick(&[0x0800, 0x0800, 0x0800, 0x86dd, r16]);
        let version_ihl = rng.pick(&[0x45, 0x45, 0x45, 0x46, r8]);
        let frag = rng.pick(&[0, 0, 0x4000, r16]);
        let ttl = rng.below(256) as u8;
        let proto = rng.pick(&[17, 17, 6, 1, r8]);
        let src = [
            rng.pick(&[10, 192, 172, 1]),
            rng.below(256) as u8,
            rng.below(256) as u8,
            rng.below(256) as u8,
        ];
        let dst = rng.pick(&dsts);
        let ports = (rng.pick(&[53, 1000, r16]), rng.pick(&[53, 80, r16]));
        let mut p = frame(
            ether_type,
            version_ihl,
            frag,
            ttl,
            proto,
            src,
            dst,
            ports,
            len,
        );
        if rng.below(8) == 0 {
            for b in p.iter_mut() {
                *b = rng.below(256) as u8;
            }
        }
        out.push(p);
    }
    out
}

/// The interpreter's outcomes (ingress port 1, what test runs use) and its final state.
pub fn expected(case: &Case, packets: &[Vec<u8>]) -> (Vec<Outcome>, State) {
    let mut state = State::default();
    let with_ports: Vec<(Vec<u8>, u32)> = packets.iter().map(|p| (p.clone(), 1)).collect();
    let outcomes = interp::run_packets(&case.checked, &case.entries, &with_ports, &mut state)
        .expect("interprets");
    (outcomes, state)
}

/// The counter map's expected non-zero cells: `(u32 index, {u64 packets, u64 bytes})`.
pub fn counter_entries(state: &State, instance: &str, size: u32) -> Vec<(Vec<u8>, Vec<u8>)> {
    (0..size)
        .filter_map(|i| {
            let cell = state.counter(instance, i);
            (cell.packets != 0).then(|| {
                let mut value = cell.packets.to_le_bytes().to_vec();
                value.extend_from_slice(&cell.bytes.to_le_bytes());
                (i.to_le_bytes().to_vec(), value)
            })
        })
        .collect()
}

/// Ethernet frames with 0 to 3 VLAN tags (`(tpid, pcp, vid)` each) for the VLAN switch.
pub fn vlan_frame(dst_last: u8, tags: &[(u16, u8, u16)], inner_type: u16, len: usize) -> Vec<u8> {
    let mut p = vec![0x02, 0, 0, 0, 0, dst_last, 0x02, 0, 0, 0, 0, 0x77];
    for (tpid, pcp, vid) in tags {
        p.extend_from_slice(&tpid.to_be_bytes());
        p.extend_from_slice(&((u16::from(*pcp) << 13) | (vid & 0x0fff)).to_be_bytes());
    }
    p.extend_from_slice(&inner_type.to_be_bytes());
    while p.len() < len {
        p.push(0x5a);
    }
    p
}

/// Crafted VLAN frames (untagged, one tag, Q-in-Q, three tags, each VLAN and MAC of the
/// tables, the ACL's priority) and random ones: at least `count`.
pub fn vlan_packets(count: usize, seed: u64) -> Vec<Vec<u8>> {
    let mut out = Vec::new();
    let vids = [1u16, 10, 100, 20, 0x0ff, 0x100, 0xfff];
    for dst in [0x02u8, 0x05, 0x09] {
        out.push(vlan_frame(dst, &[], 0x0800, 60));
        for vid in vids {
            for pcp in [0u8, 3, 7] {
                out.push(vlan_frame(dst, &[(0x8100, pcp, vid)], 0x0800, 60));
                out.push(vlan_frame(
                    dst,
                    &[(0x88a8, pcp, vid), (0x8100, 1, 10)],
                    0x0800,
                    64,
                ));
            }
        }
        out.push(vlan_frame(
            dst,
            &[(0x8100, 0, 1), (0x8100, 0, 2), (0x8100, 0, 3)],
            0x0800,
            64,
        ));
        out.push(vlan_frame(
            dst,
            &[(0x8100, 0, 1), (0x8100, 0, 2)],
            0x8100,
            20,
        ));
    }
    for len in [14, 15, 17, 18, 19, 21, 22] {
        out.push(vlan_frame(0x02, &[(0x8100, 7, 100), (0x8100, 0, 2)], 0x0800, 0)[..len].to_vec());
    }
    let mut rng = Rng::new(seed);
    while out.len() < count {
        let tags: Vec<(u16, u8, u16)> = (0..rng.below(4))
            .map(|_| {
                let tpid = rng.pick(&[0x8100, 0x8100, 0x88a8, 0x0800]);
                let vid = rng.pick(&vids);
                (tpid, rng.below(8) as u8, vid)
            })
            .collect();
        let dst = rng.pick(&[0x02, 0x05, 0x09]);
        let inner = rng.pick(&[0x0800, 0x8100, 0x86dd]);
        let len = 14 + rng.below(60) as usize;
        out.push(vlan_frame(dst, &tags, inner, len));
    }
    out
}

/// The register map's expected non-zero cells: `(u32 index, u64 value)`.
pub fn register_entries(state: &State, instance: &str, size: u32) -> Vec<(Vec<u8>, Vec<u8>)> {
    (0..size)
        .filter_map(|i| {
            let bits = state.register(instance, i) as u64;
            (bits != 0).then(|| (i.to_le_bytes().to_vec(), bits.to_le_bytes().to_vec()))
        })
        .collect()
}

/// Asserts that the counter maps (`(map, instance, size)` of `counters`) and register maps of a
/// compiled `object`, as `maps` lists them after a run, hold what the interpreter's `state`
/// counted.
pub fn assert_state_maps(
    name: &str,
    object: &linerate_bpf::Object,
    maps: &linerate_bpf::contents::MapContents,
    state: &State,
    counters: &[(&str, &str, u32)],
    registers: &[(&str, &str, u32)],
) {
    for (map, instance, size) in counters {
        let index = object.map_index(map).expect("counter map");
        assert_eq!(
            maps[index],
            counter_entries(state, instance, *size),
            "{name} {map}"
        );
    }
    for (map, instance, size) in registers {
        let index = object.map_index(map).expect("register map");
        assert_eq!(
            maps[index],
            register_entries(state, instance, *size),
            "{name} {map}"
        );
    }
}

/// RFC 1071 over bytes, word by word (independent of the crate's bit-list implementation).
pub fn bytes_checksum(bytes: &[u8]) -> u16 {
    let mut sum: u32 = bytes
        .chunks(2)
        .map(|w| u32::from(w[0]) << 8 | u32::from(*w.get(1).unwrap_or(&0)))
        .sum();
    while sum > 0xffff {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    !(sum as u16)
}

/// A 20-byte IPv4 header; its checksum correct unless `bad_checksum`.
pub fn ipv4_header(
    proto: u8,
    src: [u8; 4],
    dst: [u8; 4],
    total_len: u16,
    bad_checksum: bool,
) -> Vec<u8> {
    let mut h = vec![0x45, 0x08];
    h.extend_from_slice(&total_len.to_be_bytes());
    h.extend_from_slice(&[0x12, 0x34, 0x40, 0x00, 61, proto, 0, 0]);
    h.extend_from_slice(&src);
    h.extend_from_slice(&dst);
    let sum = bytes_checksum(&h) ^ u16::from(bad_checksum);
    h[10..12].copy_from_slice(&sum.to_be_bytes());
    h
}

/// An Ethernet frame of `ether_type` around `body`, padded with 0x5a to at least `len` bytes.
pub fn ethernet_frame(ether_type: u16, body: &[u8], len: usize) -> Vec<u8> {
    let mut p = vec![0x02, 0, 0, 0, 0, 0x99, 0x02, 0, 0, 0, 0, 0x88];
    p.extend_from_slice(&ether_type.to_be_bytes());
    p.extend_from_slice(body);
    while p.len() < len {
        p.push(0x5a);
    }
    p
}

/// Frames for `ipip_tunnel.p4`: plain IPv4 to each tunnelled destination and others, IP-in-IP
/// to our endpoint (each inner route, a miss) and to another, bad checksums, non-IPv4, packets
/// cut at every header boundary, and random ones (mostly with valid outer checksums): at least
/// `count`.
pub fn tunnel_packets(count: usize, seed: u64) -> Vec<Vec<u8>> {
    let endpoint = [192, 0, 2, 1];
    let plain_dsts: [[u8; 4]; 4] = [[10, 2, 0, 5], [10, 2, 0, 6], [10, 9, 9, 9], endpoint];
    let inner_dsts: [[u8; 4]; 4] = [[10, 3, 5, 5], [10, 3, 1, 9], [10, 4, 0, 1], [10, 2, 0, 5]];
    let outer_dsts: [[u8; 4]; 3] = [endpoint, [192, 0, 2, 2], [10, 2, 0, 5]];
    let src = [172, 16, 0, 9];
    let plain = |proto: u8, dst: [u8; 4], payload: usize, bad: bool| {
        let mut body = ipv4_header(proto, src, dst, (20 + payload) as u16, bad);
        body.extend((0..payload).map(|i| i as u8));
        ethernet_frame(0x0800, &body, 0)
    };
    let tunnelled = |outer: [u8; 4], inner: [u8; 4], payload: usize, bad: bool| {
        let mut body = ipv4_header(4, [198, 51, 100, 7], outer, (40 + payload) as u16, bad);
        body.extend(ipv4_header(17, src, inner, (20 + payload) as u16, false));
        body.extend((0..payload).map(|i| (i * 3) as u8));
        ethernet_frame(0x0800, &body, 0)
    };
    let mut out = Vec::new();
    for dst in plain_dsts {
        for proto in [17, 6, 4] {
            for (payload, bad) in [(0, false), (12, false), (26, false), (12, true)] {
                out.push(plain(proto, dst, payload, bad));
            }
        }
    }
    for outer in outer_dsts {
        for inner in inner_dsts {
            for (payload, bad) in [(0, false), (8, false), (30, false), (8, true)] {
                out.push(tunnelled(outer, inner, payload, bad));
            }
        }
    }
    out.push(ethernet_frame(0x86dd, &[0x60; 40], 0));
    out.push(ethernet_frame(0x0806, &[1; 28], 0));
    let full = tunnelled(endpoint, inner_dsts[0], 4, false);
    for len in [14, 20, 33, 34, 35, 53, 54, 55] {
        out.push(full[..len].to_vec());
    }
    let mut rng = Rng::new(seed);
    while out.len() < count {
        let payload = rng.below(40) as usize;
        let bad = rng.below(8) == 0;
        let mut p = match rng.below(3) {
            0 => plain(rng.pick(&[17, 6, 4]), rng.pick(&plain_dsts), payload, bad),
            1 => tunnelled(rng.pick(&outer_dsts), rng.pick(&inner_dsts), payload, bad),
            _ => {
                let mut p = tunnelled(rng.pick(&outer_dsts), rng.pick(&inner_dsts), payload, bad);
                let at = 14 + rng.below(40) as usize;
                if let Some(b) = p.get_mut(at) {
                    *b = rng.below(256) as u8;
                }
                p
            }
        };
        if rng.below(10) == 0 {
            let cut = 14 + rng.below(p.len() as u64 - 13) as usize;
            p.truncate(cut);
        }
        out.push(p);
    }
    out
}

/// A program that grows the packet by exactly XDP's headroom (216 bytes: EtherType 3), by more
/// (224: EtherType 1) and shrinks it by the Ethernet header (EtherType 2), for the limits of
/// `bpf_xdp_adjust_head`.
pub const RESIZE_PROGRAM: &str = "#include <xdp.p4>
header eth_t { bit<48> dst; bit<48> src; bit<16> ty; }
header edge_t {
    bit<64> f0; bit<64> f1; bit<64> f2; bit<64> f3; bit<64> f4; bit<64> f5; bit<64> f6;
    bit<64> f7; bit<64> f8; bit<64> f9; bit<64> f10; bit<64> f11; bit<64> f12; bit<64> f13;
    bit<64> f14; bit<64> f15; bit<64> f16; bit<64> f17; bit<64> f18; bit<64> f19; bit<64> f20;
    bit<64> f21; bit<64> f22; bit<64> f23; bit<64> f24; bit<64> f25; bit<64> f26;
}
header tag_t { bit<32> a; bit<32> b; }
struct headers_t { edge_t edge; tag_t tag; eth_t eth; }
struct meta_t { }
parser P(packet_in packet, out headers_t hdr, inout meta_t meta, inout standard_metadata_t std) {
    state start { packet.extract(hdr.eth); transition accept; }
}
control I(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t std) {
    apply {
        if (hdr.eth.ty == 1 || hdr.eth.ty == 3) {
            hdr.edge.setValid();
            hdr.edge.f0 = (bit<64>) hdr.eth.dst;
            hdr.edge.f26 = 64w0x0102030405060708;
        }
        if (hdr.eth.ty == 1) {
            hdr.tag.setValid();
            hdr.tag.b = 0xfeedf00d;
        }
        if (hdr.eth.ty == 2) {
            hdr.eth.setInvalid();
        }
    }
}
control D(packet_out packet, in headers_t hdr) {
    apply { packet.emit(hdr.tag); packet.emit(hdr.edge); packet.emit(hdr.eth); }
}
XdpPipeline(P(), I(), D()) main;
";

/// The program `source` (named `name`) with its own table contents, compiled.
pub fn source_case(name: &str, source: &str) -> Case {
    let checked = linerate_p4::load_str(&format!("{name}.p4"), source).expect("checks");
    let entries = Entries::from_program(&checked).expect("entries");
    let compiled = compile(&checked, &entries, name).expect("compiles");
    Case {
        checked,
        entries,
        compiled,
    }
}

/// [`RESIZE_PROGRAM`], compiled.
pub fn resize_case() -> Case {
    source_case("resize", RESIZE_PROGRAM)
}

/// Frames of each EtherType [`RESIZE_PROGRAM`] acts on, at lengths around the 14-byte minimum
/// left after removing Ethernet.
pub fn resize_packets() -> Vec<Vec<u8>> {
    let mut out = Vec::new();
    for ty in [1u16, 2, 3, 4] {
        for len in [14, 20, 27, 28, 29, 60, 200] {
            let body: Vec<u8> = (0..len).map(|i| (i * 7) as u8).collect();
            out.push(ethernet_frame(ty, &body, 0)[..len].to_vec());
        }
    }
    out
}

/// How many packets the interpreter grows and shrinks.
pub fn length_changes(packets: &[Vec<u8>], outcomes: &[Outcome]) -> (usize, usize) {
    let grown = packets
        .iter()
        .zip(outcomes)
        .filter(|(p, o)| o.packet.len() > p.len())
        .count();
    let shrunk = packets
        .iter()
        .zip(outcomes)
        .filter(|(p, o)| o.packet.len() < p.len())
        .count();
    (grown, shrunk)
}

/// A program whose checksums fold fields of odd widths at every alignment: the parser verifies
/// one list when `a >= 4`, the control updates the checksum over the fields in wire order
/// (plus an 8-bit slice: padding) when `a == 2` and in reverse order when `a == 1`.
pub const CHECKSUM_PROGRAM: &str = "#include <xdp.p4>
header eth_t { bit<48> dst; bit<48> src; bit<16> ty; }
header odd_t { bit<3> a; bit<12> b; bit<1> c; bit<7> d; bit<9> e; bit<33> f; bit<15> g; bit<16> sum; }
struct headers_t { eth_t eth; odd_t odd; }
struct meta_t { }
parser P(packet_in packet, out headers_t hdr, inout meta_t meta, inout standard_metadata_t std) {
    state start {
        packet.extract(hdr.eth);
        packet.extract(hdr.odd);
        verify_checksum(hdr.odd.a >= 4,
            { hdr.odd.a, hdr.odd.b, hdr.odd.c, hdr.odd.d, hdr.odd.e, hdr.odd.f, hdr.odd.g },
            hdr.odd.sum);
        transition accept;
    }
}
control I(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t std) {
    apply {
        if (hdr.odd.a == 1) {
            update_checksum(true,
                { hdr.odd.g, hdr.odd.f, hdr.odd.e, hdr.odd.d, hdr.odd.c, hdr.odd.b, hdr.odd.a },
                hdr.odd.sum);
        }
        update_checksum(hdr.odd.a == 2,
            { hdr.odd.a, hdr.odd.b, hdr.odd.c, hdr.odd.d, hdr.odd.e, hdr.odd.f, hdr.odd.g,
              hdr.eth.ty[7:0] },
            hdr.odd.sum);
    }
}
control D(packet_out packet, in headers_t hdr) {
    apply { packet.emit(hdr.eth); packet.emit(hdr.odd); }
}
XdpPipeline(P(), I(), D()) main;
";

/// [`CHECKSUM_PROGRAM`], compiled.
pub fn checksum_case() -> Case {
    source_case("checksum", CHECKSUM_PROGRAM)
}

/// Frames for [`CHECKSUM_PROGRAM`]: random fields, each `a` from 0 to 7, the checksum correct
/// for half of the verified ones, and a few cut short.
pub fn checksum_packets(count: usize, seed: u64) -> Vec<Vec<u8>> {
    use linerate_p4::interp::checksum::internet_checksum;
    let mut rng = Rng::new(seed);
    let mut out = Vec::new();
    while out.len() < count {
        let mut odd: Vec<u8> = (0..12).map(|_| rng.below(256) as u8).collect();
        let a = (out.len() % 8) as u8;
        odd[0] = (odd[0] & 0x1f) | (a << 5);
        if a >= 4 && rng.below(2) == 0 {
            // The fields as (width, bits), read from the bytes, then the right checksum.
            let bits = u128::from_be_bytes({
                let mut b = [0u8; 16];
                b[..10].copy_from_slice(&odd[..10]);
                b
            });
            let mut values = Vec::new();
            let mut at = 0u32;
            for width in [3u32, 12, 1, 7, 9, 33, 15] {
                values.push((width, (bits >> (128 - at - width)) & ((1u128 << width) - 1)));
                at += width;
            }
            odd[10..12].copy_from_slice(&internet_checksum(&values).to_be_bytes());
        }
        let mut p = ethernet_frame(0x0800 | rng.below(256) as u16, &odd, 0);
        if rng.below(16) == 0 {
            p.truncate(14 + rng.below(12) as usize);
        } else {
            p.extend((0..rng.below(20)).map(|i| i as u8));
        }
        out.push(p);
    }
    out
}

/// What the checksum program's packets must show, wherever they ran (`seen`: runs per XDP
/// action code): failed verifications (and cut packets) drop; the rest pass, some with a new
/// checksum; verified with the right checksum, accepted.
pub fn check_checksum_outcomes(case: &Case, packets: &[Vec<u8>], seen: &[usize]) {
    let (want, _) = expected(case, packets);
    let failed = want
        .iter()
        .filter(|o| o.parser_error == "ChecksumError")
        .count();
    let updated = packets
        .iter()
        .zip(&want)
        .filter(|(p, o)| o.action == XdpAction::Pass && o.packet != **p)
        .count();
    assert!(
        seen[1] > failed && failed > 10 && seen[2] > 100,
        "{seen:?} {failed}"
    );
    assert!(updated > 40, "{updated}");
    let verified = packets
        .iter()
        .zip(&want)
        .filter(|(p, o)| p.len() > 14 && p[14] >> 5 >= 4 && o.action == XdpAction::Pass)
        .count();
    assert!(verified > 20, "{verified}");
}
