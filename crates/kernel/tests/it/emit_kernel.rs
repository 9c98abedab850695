//! Objects written from scratch by `linerate_bpf::emit` load in this kernel through
//! `linerate-kernel` (the path of `linerate run --kernel`), with their BTF, `func_info` and
//! `line_info`, and run with `BPF_PROG_TEST_RUN` as written: a host filter over a hash map that
//! counts actions in an array map, and a router over an LPM trie. The examples written anew run
//! like the clang-compiled originals, and `bpftool prog loadall` (libbpf) loads what is written,
//! the examples written anew included.

use std::path::Path;
use std::process::Command;

use linerate_bpf::contents::MapMode;
use linerate_bpf::emit::{write_object, LineSpec, MapSpec, ObjectSpec, ProgramSpec};
use linerate_bpf::facts::xdp;
use linerate_bpf::helpers::id::MAP_LOOKUP_ELEM;
use linerate_bpf::insn::build::{
    add64, atomic, call_helper, exit, jmp, jmp_reg, ld_map, ldx, mov64, mov64_reg, st, stx,
};
use linerate_bpf::insn::{AtomicOp, Cond, Instruction, Size};
use linerate_bpf::{read_object, MapType, Object};
use linerate_conformance::examples::load_all;
use linerate_kernel::drive::Driver;
use linerate_kernel::{load_object, usable_or_skip, LoadedObject, TestRunInput};

const XDP_DROP: u32 = xdp::XDP_DROP as u32;
const XDP_PASS: u32 = xdp::XDP_PASS as u32;
const XDP_TX: u32 = xdp::XDP_TX as u32;
/// `BPF_F_NO_PREALLOC`, which LPM tries demand.
const NO_PREALLOC: u32 = 1;

/// Passes IPv4 packets whose source address is in `hosts`, drops the others (and packets too
/// short to hold an IPv4 header), and counts each action in `actions[action]`.
fn host_filter() -> ObjectSpec {
    let insns = vec![
        mov64_reg(6, 1),
        ldx(Size::W, 2, 6, 0),
        ldx(Size::W, 3, 6, 4),
        mov64_reg(4, 2),
        add64(4, 30),
        mov64(7, XDP_DROP as i32),
        jmp_reg(Cond::Gt, 4, 3, 9), // too short: count the drop
        ldx(Size::W, 5, 2, 26),
        stx(Size::W, 10, -4, 5),
        ld_map(1, 0),
        mov64_reg(2, 10),
        add64(2, -4),
        call_helper(MAP_LOOKUP_ELEM),
        jmp(Cond::Eq, 0, 0, 1), // unknown host: count the drop
        mov64(7, XDP_PASS as i32),
        stx(Size::W, 10, -8, 7),
        ld_map(1, 1),
        mov64_reg(2, 10),
        add64(2, -8),
        call_helper(MAP_LOOKUP_ELEM),
        jmp(Cond::Eq, 0, 0, 2),
        mov64(1, 1),
        atomic(Size::Dw, AtomicOp::Add, false, 0, 0, 1),
        mov64_reg(0, 7),
        exit(),
    ];
    let line = |insn: usize, line: u32, text: &str| LineSpec {
        insn,
        file: "host_filter.p4".into(),
        line,
        column: 5,
        text: text.into(),
    };
    let program = ProgramSpec {
        lines: vec![
            line(0, 1, "parser start"),
            line(7, 4, "hosts.apply();"),
            line(15, 9, "actions.count(action);"),
            line(23, 12, "return action;"),
        ],
        ..ProgramSpec::xdp("host_filter", insns)
    };
    ObjectSpec::new(
        vec![program],
        vec![
            MapSpec::new("hosts", MapType::HASH, 4, 8, 16),
            MapSpec::new("actions", MapType::ARRAY, 4, 8, 4),
        ],
    )
}

/// Looks the IPv4 destination up in `routes` (an LPM trie of `/prefix` → action) and returns the
/// action found, `XDP_DROP` without a route or an IPv4 header.
fn router() -> ObjectSpec {
    let insns = vec![
        mov64_reg(6, 1),
        ldx(Size::W, 2, 6, 0),
        ldx(Size::W, 3, 6, 4),
        mov64_reg(4, 2),
        add64(4, 34),
        mov64(7, XDP_DROP as i32),
        jmp_reg(Cond::Gt, 4, 3, 10),
        ldx(Size::W, 5, 2, 30),
        stx(Size::W, 10, -4, 5),
        st(Size::W, 10, -8, 32),
        ld_map(1, 0),
        mov64_reg(2, 10),
        add64(2, -8),
        call_helper(MAP_LOOKUP_ELEM),
        jmp(Cond::Eq, 0, 0, 1),
        ldx(Size::W, 7, 0, 0),
        mov64_reg(0, 7),
        exit(),
    ];
    ObjectSpec::new(
        vec![ProgramSpec::xdp("router", insns)],
        vec![
            MapSpec {
                flags: NO_PREALLOC,
                ..MapSpec::new("routes", MapType::LPM_TRIE, 8, 4, 64)
            },
            MapSpec::new("jumps", MapType::PROG_ARRAY, 4, 4, 8),
        ],
    )
}

/// An Ethernet + IPv4 header from `src` to `dst`, padded to 60 bytes.
fn ipv4_packet(src: [u8; 4], dst: [u8; 4]) -> Vec<u8> {
    let mut p = vec![0u8; 60];
    p[12..14].copy_from_slice(&[0x08, 0x00]);
    p[14] = 0x45;
    p[26..30].copy_from_slice(&src);
    p[30..34].copy_from_slice(&dst);
    p
}

/// The written object, read back and loaded, with its program loaded.
fn load(spec: &ObjectSpec) -> (Object, LoadedObject) {
    let bytes = write_object(spec).unwrap();
    let object = read_object(&bytes, "emitted").unwrap();
    let loaded = load_object(&object).unwrap();
    if let Err(e) = loaded.load_program(0) {
        panic!("refused: {e}\n{}", e.verifier_log().unwrap_or(""));
    }
    assert_eq!(loaded.btf_note(), None);
    (object, loaded)
}

fn action(loaded: &LoadedObject, packet: Vec<u8>) -> u32 {
    loaded
        .test_run(0, &TestRunInput::new(packet))
        .unwrap()
        .retval
}

#[test]
fn a_written_host_filter_runs_and_counts_in_the_kernel() {
    if !usable_or_skip("emit_kernel") {
        return;
    }
    let (_, loaded) = load(&host_filter());
    let info = loaded.program_btf_info(0).unwrap();
    assert!(info.btf_id != 0);
    assert_eq!((info.func_info, info.line_info), (1, 4));
    let (hosts, actions) = (
        loaded.map_index("hosts").unwrap(),
        loaded.map_index("actions").unwrap(),
    );
    loaded
        .update(hosts, &[10, 0, 0, 1], &7u64.to_le_bytes())
        .unwrap();
    let known = ipv4_packet([10, 0, 0, 1], [10, 0, 0, 9]);
    let unknown = ipv4_packet([10, 0, 0, 2], [10, 0, 0, 9]);
    assert_eq!(action(&loaded, known.clone()), XDP_PASS);
    assert_eq!(action(&loaded, unknown), XDP_DROP);
    assert_eq!(action(&loaded, vec![0u8; 20]), XDP_DROP);
    assert_eq!(action(&loaded, known), XDP_PASS);
    let count = |key: u32| {
        let value = loaded.lookup(actions, &key.to_le_bytes()).unwrap().unwrap();
        u64::from_le_bytes(value.try_into().unwrap())
    };
    assert_eq!(
        [count(0), count(XDP_DROP), count(XDP_PASS), count(XDP_TX)],
        [0, 2, 2, 0]
    );
    assert_eq!(
        loaded.entries(hosts).unwrap(),
        vec![(vec![10, 0, 0, 1], 7u64.to_le_bytes().to_vec())]
    );
}

#[test]
fn a_written_lpm_router_routes_by_longest_prefix_in_the_kernel() {
    if !usable_or_skip("emit_kernel") {
        return;
    }
    let (_, loaded) = load(&router());
    assert_eq!(loaded.program_btf_info(0).unwrap().func_info, 1);
    let routes = loaded.map_index("routes").unwrap();
    let route = |prefix: u32, addr: [u8; 4], action: u32| {
        let mut key = prefix.to_le_bytes().to_vec();
        key.extend_from_slice(&addr);
        loaded.update(routes, &key, &action.to_le_bytes()).unwrap();
    };
    route(8, [10, 0, 0, 0], XDP_PASS);
    route(16, [10, 1, 0, 0], XDP_TX);
    route(24, [192, 168, 1, 0], XDP_DROP);
    let to = |dst: [u8; 4]| action(&loaded, ipv4_packet([1, 2, 3, 4], dst));
    assert_eq!(to([10, 2, 3, 4]), XDP_PASS);
    assert_eq!(to([10, 1, 9, 9]), XDP_TX);
    assert_eq!(to([192, 168, 1, 5]), XDP_DROP);
    assert_eq!(to([192, 168, 2, 5]), XDP_DROP);
    assert_eq!(to([8, 8, 8, 8]), XDP_DROP);
    assert_eq!(action(&loaded, vec![0u8; 30]), XDP_DROP);
    assert_eq!(loaded.entries(routes).unwrap().len(), 3);
}

#[test]
fn examples_written_anew_run_like_their_originals() {
    if !usable_or_skip("emit_kernel") {
        return;
    }
    let mut compared = Vec::new();
    let mut failures = Vec::new();
    for example in load_all().unwrap() {
        let name = example.name();
        let Ok(mut spec) = ObjectSpec::from_object(&example.object) else {
            continue;
        };
        // Legacy section names (`prog`, `xdp_prog`, ...) become `xdp`, which the writer takes.
        for p in spec
            .programs
            .iter_mut()
            .filter(|p| !p.section.starts_with("xdp"))
        {
            p.section = "xdp".into();
        }
        let bytes = write_object(&spec).unwrap();
        let again = read_object(&bytes, &example.object.name).unwrap();
        let packets = example.packet_bytes();
        for program in example.runnable_programs() {
            let prog = &example.object.programs[program].name;
            let Some(written) = again.programs.iter().position(|p| &p.name == prog) else {
                failures.push(format!("{name}/{prog}: missing"));
                continue;
            };
            let run = |object: &Object, index: usize| {
                let mut driver = Driver::new(object, &example.seed, MapMode::Persist)
                    .map_err(|e| e.to_string())?;
                driver
                    .run_packets(index, &packets, &[], 1)
                    .map_err(|e| format!("{e}\n{}", e.verifier_log().unwrap_or("")))
            };
            let (a, b) = match (run(&example.object, program), run(&again, written)) {
                (Ok(a), Ok(b)) => (a, b),
                (Err(e), _) => {
                    eprintln!("{name}/{prog}: the original does not run: {e}");
                    continue;
                }
                (_, Err(e)) => {
                    failures.push(format!("{name}/{prog}: written anew: {e}"));
                    continue;
                }
            };
            let outcomes = |r: &linerate_kernel::drive::Runs| {
                r.outcomes
                    .iter()
                    .map(|o| (o.retval, o.packet.clone(), o.meta.clone()))
                    .collect::<Vec<_>>()
            };
            if outcomes(&a) != outcomes(&b) || a.final_maps != b.final_maps {
                failures.push(format!("{name}/{prog}: runs differ"));
            }
            compared.push(format!("{name}/{prog}"));
        }
    }
    eprintln!("ran alike: {}", compared.join(" "));
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    assert!(compared.len() >= 20, "{compared:?}");
}

/// Whether `bpftool prog loadall` (libbpf) accepts the object at `path`, with its output.
fn bpftool_loads(path: &Path, tag: &str) -> (bool, String) {
    let dir = format!("/sys/fs/bpf/linerate_emit_{}_{tag}", std::process::id());
    let output = Command::new("/usr/sbin/bpftool")
        .args(["-d", "prog", "loadall"])
        .arg(path)
        .arg(&dir)
        .output()
        .unwrap();
    let _ = std::fs::remove_dir_all(&dir);
    (
        output.status.success(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

#[test]
fn bpftool_loads_written_objects() {
    if !usable_or_skip("emit_kernel") {
        return;
    }
    if !Path::new("/usr/sbin/bpftool").exists() {
        linerate_kernel::skip_or_fail("emit_kernel: no /usr/sbin/bpftool");
        return;
    }
    let tmp = std::env::temp_dir().join(format!("linerate_emit_{}", std::process::id()));
    std::fs::create_dir_all(&tmp).unwrap();
    let mut failures = Vec::new();
    for (tag, spec) in [("filter", host_filter()), ("router", router())] {
        let path = tmp.join(format!("{tag}.o"));
        std::fs::write(&path, write_object(&spec).unwrap()).unwrap();
        let (ok, log) = bpftool_loads(&path, tag);
        if !ok {
            failures.push(format!("{tag}: {log}"));
        }
    }
    // Every example libbpf loads, and the writer takes, libbpf loads written anew.
    let mut accepted = Vec::new();
    for example in load_all().unwrap() {
        let name = example.name();
        let Ok(spec) = ObjectSpec::from_object(&example.object) else {
            continue;
        };
        if spec.programs.iter().any(|p| p.section != "xdp") || !bpftool_loads(&example.path, "in").0
        {
            continue;
        }
        let path = tmp.join(&name);
        std::fs::write(&path, write_object(&spec).unwrap()).unwrap();
        let (ok, log) = bpftool_loads(&path, "out");
        if !ok {
            failures.push(format!("{name}: {log}"));
        }
        accepted.push(name);
    }
    let _ = std::fs::remove_dir_all(&tmp);
    eprintln!("libbpf loads written anew: {}", accepted.join(" "));
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    assert!(accepted.len() >= 10, "{accepted:?}");
}

/// The instructions of the host filter are what the test above reasons about (jump offsets
/// count slots: each map load takes two).
#[test]
fn the_host_filter_jumps_where_its_comments_say() {
    let spec = host_filter();
    let insns = &spec.programs[0].insns;
    let slot_of = |index: usize| -> usize { insns[..index].iter().map(Instruction::slots).sum() };
    let target = |index: usize| insns[index].jump_target(slot_of(index)).unwrap();
    assert_eq!(target(6), slot_of(15) as i64);
    assert_eq!(target(13), slot_of(15) as i64);
    assert_eq!(target(20), slot_of(23) as i64);
}
