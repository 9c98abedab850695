//! Header layouts that stress the compiler's wide loads and stores, checked against the reference
//! interpreter in the VM and in the kernel: fields straddling bytes at odd bit offsets, 48- and
//! 64-bit fields, headers at odd packet offsets, headers of 3 and 7 bytes (no 4- or 8-byte access
//! fits inside them), fields written only on some paths (beside unchanged neighbours that share
//! their bytes), a slice assignment, a header read while not extracted (zero), metadata read
//! without being written (zero), and table keys of 1 to 6 bytes at unaligned stack offsets.

use crate::common;

use common::{action_code, expected, Case, Rng};
use linerate_bpf::contents::MapMode;
use linerate_bpf::read_object;
use linerate_p4::compile::compile;
use linerate_p4::entries::Entries;
use linerate_p4::interp::XdpAction;

const LAYOUT_PROGRAM: &str = "#include <xdp.p4>
header eth_t { bit<48> dst; bit<48> src; bit<16> ty; }
header pad_t { bit<8> len; }
header odd_t {
    bit<3> a; bit<12> b; bit<1> c; bit<7> d; bit<9> e; bit<33> f; bit<15> g;
    bit<48> mac; bit<64> wide;
}
header tri_t { bit<5> x; bit<14> y; bit<5> z; }
header sev_t { bit<56> v; }
struct headers_t { eth_t eth; pad_t pad; odd_t odd; tri_t tri; sev_t sev; }
struct meta_t { bit<12> never_set; bit<9> m; }
parser P(packet_in packet, out headers_t hdr, inout meta_t meta, inout standard_metadata_t std) {
    state start {
        packet.extract(hdr.eth);
        transition select(hdr.eth.ty) {
            0x88b5: parse_pad;
            default: accept;
        }
    }
    state parse_pad {
        packet.extract(hdr.pad);
        packet.extract(hdr.odd);
        transition select(hdr.odd.a) {
            1: parse_tri;
            2: parse_sev;
            default: accept;
        }
    }
    state parse_tri { packet.extract(hdr.tri); transition accept; }
    state parse_sev { packet.extract(hdr.sev); transition accept; }
}
control I(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t std) {
    action set_d(bit<7> v) { hdr.odd.d = v; }
    action bump_f() { hdr.odd.f = hdr.odd.f + 1; hdr.tri.x = hdr.odd.g[4:0]; }
    action to_port(bit<32> port) { std.egress_port = port; }
    table by_mac {
        key = { hdr.odd.a: exact; hdr.odd.mac: exact; hdr.odd.b: exact; }
        actions = { set_d; bump_f; }
        size = 16;
    }
    table by_f {
        key = { hdr.odd.f: lpm; }
        actions = { to_port; bump_f; }
        size = 16;
    }
    apply {
        if (hdr.odd.isValid()) {
            by_mac.apply();
            if (hdr.odd.c == 1) {
                hdr.odd.e = hdr.odd.e ^ 9w0x155;
            }
            hdr.odd.b[3:0] = hdr.odd.g[3:0];
            by_f.apply();
            if (hdr.odd.a == 3) {
                hdr.odd.wide = hdr.odd.wide ^ 64w0xffff0000ffff0001;
            }
            hdr.pad.len = hdr.pad.len + (bit<8>) hdr.odd.a;
        }
        meta.m = hdr.sev.v[8:0];
        hdr.eth.src[47:40] = (bit<8>) meta.m;
        if (hdr.tri.isValid()) {
            hdr.tri.z = hdr.tri.x + 5w3;
        }
        if (hdr.sev.isValid() && hdr.sev.v[0:0] == 1) {
            hdr.sev.v = hdr.sev.v - 1;
        }
        if (meta.never_set != 0) {
            mark_to_drop(std);
        }
    }
}
control D(packet_out packet, in headers_t hdr) {
    apply {
        packet.emit(hdr.eth); packet.emit(hdr.pad); packet.emit(hdr.odd);
        packet.emit(hdr.sev); packet.emit(hdr.tri);
    }
}
XdpPipeline(P(), I(), D()) main;
";

const LAYOUT_ENTRIES: &str = r#"{"tables": {
    "I.by_mac": [
        {"match": {"hdr.odd.a": 1, "hdr.odd.mac": "02:00:00:00:00:aa", "hdr.odd.b": "0x5a5"},
         "action": "set_d", "args": {"v": 99}},
        {"match": {"hdr.odd.a": 2, "hdr.odd.mac": "02:00:00:00:00:bb", "hdr.odd.b": 7},
         "action": "bump_f", "args": {}},
        {"match": {"hdr.odd.a": 3, "hdr.odd.mac": "02:00:00:00:00:aa", "hdr.odd.b": "0x5a5"},
         "action": "bump_f", "args": {}}
    ],
    "I.by_f": [
        {"match": {"hdr.odd.f": {"prefix": "0x100000000", "len": 1}},
         "action": "to_port", "args": {"port": 2}},
        {"match": {"hdr.odd.f": {"prefix": "0x0f0000000", "len": 9}},
         "action": "bump_f", "args": {}}
    ]
}}"#;

fn layout_case() -> Case {
    let checked = linerate_p4::load_str("layout.p4", LAYOUT_PROGRAM).expect("checks");
    let entries = Entries::from_json_str(&checked, "layout.json", LAYOUT_ENTRIES).expect("entries");
    let compiled = compile(&checked, &entries, "layout").expect("compiles");
    Case {
        checked,
        entries,
        compiled,
    }
}

/// Frames for [`LAYOUT_PROGRAM`]: mostly the padded layout with `a` from 0 to 7, keys that hit
/// each table entry, random bits elsewhere, some cut at every header boundary.
fn layout_packets(count: usize, seed: u64) -> Vec<Vec<u8>> {
    let mut rng = Rng::new(seed);
    let mut out = Vec::new();
    let header_ends = [14, 15, 39, 42, 46];
    while out.len() < count {
        let mut p: Vec<u8> = (0..60).map(|_| rng.below(256) as u8).collect();
        let ty: u16 = rng.pick(&[0x88b5, 0x88b5, 0x88b5, 0x0800]);
        p[12..14].copy_from_slice(&ty.to_be_bytes());
        let a = (out.len() % 8) as u64;
        // odd_t starts at byte 15: a (3 bits), b (12), c (1), ...
        let (b, mac_last) = match rng.below(3) {
            0 => (0x5a5u64, 0xaa),
            1 => (7, 0xbb),
            _ => (rng.below(4096), rng.below(256) as u8),
        };
        let top = (a << 13) | (b << 1) | rng.below(2);
        p[15..17].copy_from_slice(&(top as u16).to_be_bytes());
        // f (33 bits from bit 32 of odd_t, byte 19) under either lpm entry's prefix.
        match rng.below(3) {
            0 => p[19] |= 0x80,
            1 => {
                p[19] = 0x78;
                p[20] &= 0x7f;
            }
            _ => {}
        }
        p[25..31].copy_from_slice(&[0x02, 0, 0, 0, 0, mac_last]);
        if rng.below(8) == 0 {
            p.truncate((rng.pick(&header_ends) - 1 + rng.below(2) as usize).max(14));
        }
        out.push(p);
    }
    out
}

/// The interpreter's outcomes hold a spread of actions and changed packets.
fn assert_coverage(packets: &[Vec<u8>], case: &Case) {
    let (want, _) = expected(case, packets);
    let changed = packets
        .iter()
        .zip(&want)
        .filter(|(p, o)| o.packet != **p)
        .count();
    let actions: std::collections::BTreeSet<u32> =
        want.iter().map(|o| action_code(o.action)).collect();
    let redirected = want
        .iter()
        .filter(|o| o.action == XdpAction::Redirect(2))
        .count();
    assert!(changed > 100, "{changed}");
    assert!(redirected > 5, "{redirected}");
    assert!(actions.len() >= 3, "{actions:?}");
}

#[test]
fn odd_layouts_agree_with_the_interpreter_in_the_vm() {
    use linerate_vm::drive::Driver;
    use linerate_vm::VmOptions;
    let case = layout_case();
    let packets = layout_packets(300, 0x9e37_79b9_7f4a_7c15);
    assert_coverage(&packets, &case);
    let object =
        read_object(&case.compiled.object_bytes().expect("writes"), "layout").expect("reads back");
    let mut driver = Driver::new(
        &object,
        &case.compiled.seed(),
        VmOptions::default(),
        MapMode::Persist,
    )
    .expect("seeds");
    let (want, _) = expected(&case, &packets);
    for (i, (packet, want)) in packets.iter().zip(&want).enumerate() {
        let got = driver.run(0, packet, &[]).expect("runs");
        assert_eq!(
            got.return_value as u32,
            action_code(want.action),
            "packet {i}: {packet:02x?}"
        );
        assert_eq!(got.packet, want.packet, "packet {i}: {packet:02x?}");
    }
}

#[test]
fn odd_layouts_agree_with_the_interpreter_in_the_kernel() {
    use linerate_kernel::drive::Driver;
    if !linerate_kernel::usable_or_skip("p4 compile_layout") {
        return;
    }
    let case = layout_case();
    let packets = layout_packets(300, 0x0123_4567_89ab_cdef);
    assert_coverage(&packets, &case);
    let object =
        read_object(&case.compiled.object_bytes().expect("writes"), "layout").expect("reads back");
    let seed = case.compiled.seed();
    let mut driver = Driver::new(&object, &seed, MapMode::Persist).expect("loads and seeds");
    let runs = match driver.run_packets(0, &packets, &[], 1) {
        Ok(runs) => runs,
        Err(e) => panic!("{e}\n{}", e.verifier_log().unwrap_or("")),
    };
    let (want, _) = expected(&case, &packets);
    for (i, ((packet, want), got)) in packets.iter().zip(&want).zip(&runs.outcomes).enumerate() {
        assert_eq!(
            got.retval,
            action_code(want.action),
            "packet {i}: {packet:02x?}"
        );
        assert_eq!(got.packet, want.packet, "packet {i}: {packet:02x?}");
    }
}

#[test]
fn only_what_the_program_changes_is_written_back() {
    // A program that changes nothing stores nothing into the packet; one that changes the TTL
    // stores one window around it.
    let stores = |body: &str| {
        let source = format!(
            "#include <xdp.p4>
header eth_t {{ bit<48> dst; bit<48> src; bit<16> ty; }}
header ipv4_t {{ bit<64> head; bit<8> ttl; bit<8> proto; bit<16> sum; bit<64> addrs; }}
struct headers_t {{ eth_t eth; ipv4_t ipv4; }}
struct meta_t {{ }}
parser P(packet_in packet, out headers_t hdr, inout meta_t meta, inout standard_metadata_t std) {{
    state start {{ packet.extract(hdr.eth); packet.extract(hdr.ipv4); transition accept; }}
}}
control I(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t std) {{
    apply {{ {body} }}
}}
control D(packet_out packet, in headers_t hdr) {{
    apply {{ packet.emit(hdr.eth); packet.emit(hdr.ipv4); }}
}}
XdpPipeline(P(), I(), D()) main;
"
        );
        let checked = linerate_p4::load_str("t.p4", &source).expect("checks");
        let entries = Entries::from_program(&checked).expect("entries");
        let compiled = compile(&checked, &entries, "t").expect("compiles");
        let insns = &compiled.spec.programs[0].insns;
        let packet_stores: Vec<_> = insns
            .iter()
            .filter(|i| matches!(i, linerate_bpf::insn::Instruction::Store { dst: 7, .. }))
            .collect();
        (packet_stores.len(), insns.len())
    };
    let (none, small) = stores("if (hdr.ipv4.ttl == 0) { std.egress_port = 1; }");
    assert_eq!(none, 0);
    let (one, _) = stores("hdr.ipv4.ttl = hdr.ipv4.ttl - 1; hdr.ipv4.sum = 0;");
    assert_eq!(one, 1);
    // Extracting only the TTL and checking the length once: a short program.
    assert!(small <= 30, "{small}");
}

#[test]
fn a_64_bit_field_off_a_byte_boundary_is_refused_at_its_extract() {
    let source = "#include <xdp.p4>
header eth_t { bit<48> dst; bit<48> src; bit<16> ty; }
header skew_t { bit<4> a; bit<64> b; bit<4> c; }
struct headers_t { eth_t eth; skew_t skew; }
struct meta_t { }
parser P(packet_in packet, out headers_t hdr, inout meta_t meta, inout standard_metadata_t std) {
    state start { packet.extract(hdr.eth); packet.extract(hdr.skew); transition accept; }
}
control I(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t std) {
    apply { }
}
control D(packet_out packet, in headers_t hdr) {
    apply { packet.emit(hdr.eth); packet.emit(hdr.skew); }
}
XdpPipeline(P(), I(), D()) main;
";
    let checked = linerate_p4::load_str("t.p4", source).expect("checks");
    let entries = Entries::from_program(&checked).expect("entries");
    let error = compile(&checked, &entries, "t")
        .expect_err("refused")
        .to_string();
    assert!(error.starts_with("t.p4:7:"), "{error}");
    assert!(
        error.contains("64-bit field not on a byte boundary"),
        "{error}"
    );
}
