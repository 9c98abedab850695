//! The JSON other tools rely on: `inspect --json` and `run --json` (interpreter and kernel), the
//! `--maps` round trip, and agreement of interpreter and kernel on example programs.

use crate::common;

use common::*;
use serde_json::Value;

fn inspect_json(name: &str) -> Value {
    run([
        "inspect".as_ref(),
        example(name).as_os_str(),
        "--json".as_ref(),
        "--no-disasm".as_ref(),
    ])
    .json()
}

fn str_of<'a>(v: &'a Value, field: &str) -> &'a str {
    v[field]
        .as_str()
        .unwrap_or_else(|| panic!("`{field}` is not a string in {v}"))
}

fn u64_of(v: &Value, field: &str) -> u64 {
    v[field]
        .as_u64()
        .unwrap_or_else(|| panic!("`{field}` is not an unsigned integer in {v}"))
}

/// The programs as (name, section, insns), checking the fields' types.
fn programs(j: &Value) -> Vec<(String, String, u64)> {
    j["programs"]
        .as_array()
        .expect("`programs` is an array")
        .iter()
        .map(|p| {
            (
                str_of(p, "name").to_string(),
                str_of(p, "section").to_string(),
                u64_of(p, "insns"),
            )
        })
        .collect()
}

/// The maps as (name, type, key_size, value_size, max_entries), checking the fields' types.
fn maps(j: &Value) -> Vec<(String, String, u64, u64, u64)> {
    let mut maps: Vec<_> = j["maps"]
        .as_array()
        .expect("`maps` is an array")
        .iter()
        .map(|m| {
            (
                str_of(m, "name").to_string(),
                str_of(m, "type").to_string(),
                u64_of(m, "key_size"),
                u64_of(m, "value_size"),
                u64_of(m, "max_entries"),
            )
        })
        .collect();
    maps.sort();
    maps
}

fn map(name: &str, ty: &str, k: u64, v: u64, n: u64) -> (String, String, u64, u64, u64) {
    (name.into(), ty.into(), k, v, n)
}

/// The instruction count of a whole ELF section, read independently of linerate.
fn section_insns(object: &str, section_name: &str) -> u64 {
    let bytes = std::fs::read(example(object)).unwrap();
    section(&bytes, section_name).size as u64 / 8
}

#[test]
fn inspect_json_router() {
    let j = inspect_json("xdp_router.o");
    assert_eq!(
        programs(&j),
        vec![(
            "xdp_router".to_string(),
            "xdp".to_string(),
            section_insns("xdp_router.o", "xdp")
        )]
    );
    assert_eq!(
        maps(&j),
        vec![
            map("router_stats", "array", 4, 8, 4),
            map("routes", "lpm_trie", 8, 12, 1024),
        ]
    );
}

#[test]
fn inspect_json_legacy_maps() {
    let j = inspect_json("xdp_legacy_maps.o");
    assert_eq!(
        programs(&j),
        vec![(
            "xdp_legacy_maps".to_string(),
            "xdp_prog".to_string(),
            section_insns("xdp_legacy_maps.o", "xdp_prog")
        )]
    );
    assert_eq!(
        maps(&j),
        vec![
            map("legacy_blocked", "hash", 8, 4, 128),
            map("legacy_stats", "array", 4, 8, 4),
        ]
    );
    for m in j["maps"].as_array().unwrap() {
        assert_eq!(m["origin"], "legacy", "{m}");
    }
}

#[test]
fn inspect_json_tailcall_two_programs() {
    let j = inspect_json("xdp_tailcall.o");
    let progs = programs(&j);
    let mut names: Vec<&str> = progs.iter().map(|p| p.0.as_str()).collect();
    names.sort();
    assert_eq!(names, ["xdp_tailcall_entry", "xdp_tailcall_ipv4"]);
    assert!(progs.iter().all(|p| p.1 == "xdp" && p.2 > 0), "{progs:?}");
    assert_eq!(
        progs.iter().map(|p| p.2).sum::<u64>(),
        section_insns("xdp_tailcall.o", "xdp"),
        "the two programs split section xdp"
    );
    assert_eq!(
        maps(&j),
        vec![
            map("tc_counts", "array", 4, 8, 257),
            map("tc_progs", "prog_array", 4, 4, 2),
        ]
    );
    // --prog selects one of them.
    let one = run([
        "inspect".as_ref(),
        example("xdp_tailcall.o").as_os_str(),
        "--json".as_ref(),
        "--prog".as_ref(),
        "xdp_tailcall_ipv4".as_ref(),
    ])
    .json();
    let progs = programs(&one);
    assert_eq!(progs.len(), 1);
    assert_eq!(progs[0].0, "xdp_tailcall_ipv4");
    assert_eq!(
        one["programs"][0]["disassembly"]
            .as_array()
            .map(|d| !d.is_empty()),
        Some(true),
        "without --no-disasm the JSON carries the disassembly"
    );
}

#[test]
fn inspect_json_global_data() {
    let j = inspect_json("xdp_rodata_config.o");
    assert_eq!(
        programs(&j),
        vec![(
            "xdp_rodata_config".to_string(),
            "xdp".to_string(),
            section_insns("xdp_rodata_config.o", "xdp")
        )]
    );
    let bytes = std::fs::read(example("xdp_rodata_config.o")).unwrap();
    let size = |s: &str| section(&bytes, s).size as u64;
    // libbpf names global data maps after the first 8 characters of the object name.
    assert_eq!(
        maps(&j),
        vec![
            map("xdp_roda.bss", "array", 4, size(".bss"), 1),
            map("xdp_roda.data", "array", 4, size(".data"), 1),
            map("xdp_roda.rodata", "array", 4, size(".rodata"), 1),
        ]
    );
}

const ACTIONS: [&str; 5] = [
    "XDP_ABORTED",
    "XDP_DROP",
    "XDP_PASS",
    "XDP_TX",
    "XDP_REDIRECT",
];

fn is_hex(s: &str) -> bool {
    s.len() % 2 != 1
        && s.chars()
            .all(|c| c.is_ascii_hexdigit() && !c.is_ascii_uppercase())
}

/// The queue and stack maps of the examples (`xdp_queue`): maps without keys, whose entries have
/// empty keys.
const KEYLESS_MAPS: [&str; 2] = ["fifo", "lifo"];

/// Checks one `run --json` result against the contract.
fn check_run_shape(r: &Value, kernel_repeat: bool) {
    let action = str_of(r, "action");
    let rv = u64_of(r, "return_value");
    assert!(
        (rv as usize) < ACTIONS.len() && ACTIONS[rv as usize] == action,
        "action {action} and return value {rv} disagree"
    );
    assert!(is_hex(str_of(r, "packet")), "{r}");
    let maps = r["maps"].as_object().expect("`maps` is an object");
    for (name, entries) in maps {
        for e in entries.as_array().unwrap_or_else(|| panic!("map {name}")) {
            let keyless = KEYLESS_MAPS.contains(&name.as_str());
            assert!(
                is_hex(str_of(e, "key")) && str_of(e, "key").is_empty() == keyless,
                "{e}"
            );
            // Either a hex value, or for a map of maps the name of a map listed beside it.
            match e.get("inner") {
                Some(inner) => {
                    let inner = inner.as_str().unwrap_or_else(|| panic!("{e}"));
                    assert!(maps.contains_key(inner) && e.get("value").is_none(), "{e}");
                }
                None => assert!(is_hex(str_of(e, "value")), "{e}"),
            }
        }
    }
    if kernel_repeat {
        u64_of(r, "ns_per_run");
    }
}

/// `run` args for an example: its packets file, its maps file if any and its program.
fn example_run_args(stem: &str) -> Vec<String> {
    let mut args = vec![
        "run".to_string(),
        example(&format!("{stem}.o")).display().to_string(),
        "--packets".into(),
        example(&format!("{stem}.packets")).display().to_string(),
        "--json".into(),
    ];
    let maps = example(&format!("{stem}.maps.json"));
    if maps.exists() {
        args.extend(["--maps".into(), maps.display().to_string()]);
    }
    if let Some(p) = example_packets(stem).program {
        args.extend(["--prog".into(), p]);
    }
    args
}

fn as_runs(v: Value) -> Vec<Value> {
    match v {
        Value::Array(a) => a,
        one => vec![one],
    }
}

#[test]
fn run_json_shape_and_expected_actions() {
    for stem in [
        "xdp_router",
        "xdp_filter",
        "xdp_tailcall",
        "xdp_redirect",
        "xdp_map_in_map",
    ] {
        let runs = as_runs(run(example_run_args(stem)).json());
        let expected = example_packets(stem).packets;
        assert_eq!(runs.len(), expected.len(), "{stem}");
        for (i, (r, (action, _))) in runs.iter().zip(&expected).enumerate() {
            check_run_shape(r, false);
            assert_eq!(str_of(r, "action"), action, "{stem} packet {i}");
        }
    }
    // One packet gives one object, not an array.
    let p = example_packets("xdp_reflector").packets;
    let one = run([
        "run".as_ref(),
        example("xdp_reflector.o").as_os_str(),
        "--json".as_ref(),
        "--packet".as_ref(),
        hex(&p[0].1).as_ref(),
    ])
    .json();
    assert!(one.is_object(), "{one}");
    check_run_shape(&one, false);
    assert_eq!(one["action"], p[0].0.as_str());
    assert_eq!(one["maps"], serde_json::json!({}));
}

/// A run's output maps fed back as `--maps`: lookup tables come back unchanged and counters,
/// which start from the counts of the first run, end at twice those counts.
#[test]
fn maps_round_trip() {
    let dir = TempDir::new("roundtrip");
    let first = as_runs(run(example_run_args("xdp_router")).json());
    let maps1 = first.last().unwrap()["maps"].clone();
    let file = dir.write("maps1.json", serde_json::to_string_pretty(&maps1).unwrap());
    let mut args = example_run_args("xdp_router");
    let at = args.iter().position(|a| a == "--maps").unwrap();
    args[at + 1] = file.display().to_string();
    let second = as_runs(run(&args).json());
    let maps2 = &second.last().unwrap()["maps"];
    assert_eq!(maps2["routes"], maps1["routes"]);
    let counters = |m: &Value| -> Vec<(String, u64)> {
        m["router_stats"]
            .as_array()
            .unwrap()
            .iter()
            .map(|e| {
                let v = str_of(e, "value");
                let bytes: Vec<u8> = (0..v.len())
                    .step_by(2)
                    .map(|i| u8::from_str_radix(&v[i..i + 2], 16).unwrap())
                    .collect();
                (
                    str_of(e, "key").to_string(),
                    u64::from_le_bytes(bytes.try_into().unwrap()),
                )
            })
            .collect()
    };
    let c1 = counters(&maps1);
    assert!(c1.iter().any(|(_, n)| *n > 0), "{maps1}");
    let doubled: Vec<(String, u64)> = c1.iter().map(|(k, n)| (k.clone(), 2 * n)).collect();
    assert_eq!(counters(maps2), doubled);
    // Per-packet results do not depend on the counters.
    for (a, b) in first.iter().zip(&second) {
        assert_eq!(a["action"], b["action"]);
        assert_eq!(a["packet"], b["packet"]);
    }
}

fn kernel_or_skip(test: &str) -> bool {
    match kernel_available() {
        Ok(()) => true,
        Err(reason) => {
            linerate_kernel::skip_or_fail(&format!("{test}: {reason}"));
            false
        }
    }
}

#[test]
fn kernel_json_with_repeat() {
    if !kernel_or_skip("kernel_json_with_repeat") {
        return;
    }
    // The router rewrites the packet (TTL) and counts: with --repeat the reported outcome is
    // still that of one run, the same as the interpreter's.
    let mut args = example_run_args("xdp_router");
    let vm = as_runs(run(&args).json());
    args.extend(["--kernel".into(), "--repeat".into(), "4".into()]);
    let runs = as_runs(run(&args).json());
    let expected = example_packets("xdp_router").packets;
    assert_eq!(runs.len(), expected.len());
    for (i, ((r, v), (action, _))) in runs.iter().zip(&vm).zip(&expected).enumerate() {
        check_run_shape(r, true);
        assert_eq!(str_of(r, "action"), action, "packet {i}");
        for field in ["return_value", "packet", "meta", "maps"] {
            assert_eq!(r[field], v[field], "packet {i}: `{field}`");
        }
    }
}

/// Interpreter and kernel give the same action, return value, packet, metadata and final maps.
#[test]
fn vm_and_kernel_agree() {
    if !kernel_or_skip("vm_and_kernel_agree") {
        return;
    }
    for stem in [
        "xdp_router",
        "xdp_dns",
        "xdp_firewall",
        "xdp_ipip",
        "xdp_filter",
        "xdp_tailcall",
        "xdp_legacy_maps",
        "xdp_map_in_map",
        "xdp_events",
        "xdp_queue",
    ] {
        let args = example_run_args(stem);
        let vm = as_runs(run(&args).json());
        let mut kargs = args.clone();
        kargs.push("--kernel".into());
        let kernel = as_runs(run(&kargs).json());
        assert_eq!(vm.len(), kernel.len(), "{stem}");
        assert!(!vm.is_empty());
        for (i, (v, k)) in vm.iter().zip(&kernel).enumerate() {
            check_run_shape(k, true);
            assert_eq!(v["engine"], "vm");
            assert_eq!(k["engine"], "kernel");
            for field in [
                "action",
                "return_value",
                "packet",
                "meta",
                "maps",
                "records",
            ] {
                assert_eq!(
                    v[field], k[field],
                    "{stem} packet {i}: `{field}` differs between interpreter and kernel"
                );
            }
        }
    }
}

/// A map of maps' `run --json` entries name inner maps; fed back as `--maps` they seed the same
/// placement (here: the seed's rearranged `vip_pools`), and `run` prints which map sits where.
#[test]
fn map_of_maps_json_round_trip_and_listing() {
    let dir = TempDir::new("map_in_map");
    let first = as_runs(run(example_run_args("xdp_map_in_map")).json());
    let maps1 = first.last().unwrap()["maps"].clone();
    assert_eq!(
        maps1["vip_pools"],
        serde_json::json!([
            {"key": "00000000", "inner": "pool_web"},
            {"key": "01000000", "inner": "pool_spare"},
            {"key": "03000000", "inner": "pool_dns"},
        ])
    );
    let file = dir.write("maps1.json", serde_json::to_string_pretty(&maps1).unwrap());
    let mut args = example_run_args("xdp_map_in_map");
    let at = args.iter().position(|a| a == "--maps").unwrap();
    args[at + 1] = file.display().to_string();
    let second = as_runs(run(&args).json());
    let maps2 = &second.last().unwrap()["maps"];
    for outer in ["vip_pools", "svc_pools"] {
        assert_eq!(maps2[outer], maps1[outer], "{outer}");
    }
    args.retain(|a| a != "--json");
    let out = run(&args);
    let text = out.ok();
    assert!(
        text.contains(
            "  vip_pools holds 00000000 => pool_web, 01000000 => pool_spare, 03000000 => pool_dns"
        ),
        "{text}"
    );
}

/// `records`: per map that received any, its name and its records in hex, in order.
#[test]
fn run_json_records_shape() {
    let runs = as_runs(run(example_run_args("xdp_events")).json());
    let first = &runs[0]["records"];
    assert_eq!(first[0]["map"], "events");
    assert_eq!(first[1]["map"], "samples");
    let ring = first[0]["records"].as_array().expect("records array");
    assert_eq!(ring.len(), 1);
    // struct event: 16 bytes; the sample: a 4-byte header and 32 frame bytes.
    assert_eq!(ring[0].as_str().map(str::len), Some(32));
    let sample = first[1]["records"][0].as_str().expect("hex record");
    assert_eq!(sample.len(), 72);
    assert!(sample.starts_with("feca"));
    // A frame that sends nothing (ring output with bad flags, aborted) has no `records`.
    assert!(runs
        .iter()
        .any(|r| r.get("records").is_none() && r["action"] == "XDP_ABORTED"));
}

/// The `--maps` round trip through the kernel: the kernel's output maps load back in.
#[test]
fn kernel_maps_round_trip() {
    if !kernel_or_skip("kernel_maps_round_trip") {
        return;
    }
    let dir = TempDir::new("kroundtrip");
    let mut args = example_run_args("xdp_firewall");
    args.push("--kernel".into());
    let first = as_runs(run(&args).json());
    let maps1 = &first.last().unwrap()["maps"];
    let file = dir.write("maps1.json", serde_json::to_string(maps1).unwrap());
    let at = args.iter().position(|a| a == "--maps").unwrap();
    args[at + 1] = file.display().to_string();
    let k = as_runs(run(&args).json());
    args.pop();
    let v = as_runs(run(&args).json());
    assert_eq!(k.len(), v.len());
    for (a, b) in k.iter().zip(&v) {
        for field in ["action", "packet", "maps"] {
            assert_eq!(a[field], b[field]);
        }
    }
}

/// `inspect --json` says which programs take multi-buffer packets and, for a map of maps, its
/// inner map template and the inner maps the object places statically.
#[test]
fn inspect_json_shows_frags_and_inner_map_templates() {
    let jumbo = inspect_json("xdp_jumbo.o");
    assert_eq!(jumbo["programs"][0]["frags"], true);
    assert_eq!(inspect_json("xdp_filter.o")["programs"][0]["frags"], false);
    let mim = inspect_json("xdp_map_in_map.o");
    let vip = mim["maps"]
        .as_array()
        .and_then(|maps| maps.iter().find(|m| m["name"] == "vip_pools"))
        .expect("vip_pools");
    assert_eq!(vip["inner"]["template"]["type"], "array");
    assert_eq!(
        vip["inner"]["initial"],
        serde_json::json!([{"key": 0, "inner": "pool_web"}, {"key": 1, "inner": "pool_dns"}])
    );
}
