//! `linerate cost`: the JSON contract, consistency between blocks, edges, paths and packet rates,
//! every example on every shipped target, and one-line errors on bad input.

use crate::common;

use common::*;
use serde_json::Value;

fn cost_json(args: &[&str]) -> Value {
    run(["cost"].iter().chain(args)).json()
}

fn amounts(v: &Value) -> Vec<(String, f64)> {
    v.as_object()
        .expect("cost vector is an object")
        .iter()
        .map(|(k, v)| (k.clone(), v.as_f64().expect("numeric cost")))
        .collect()
}

#[test]
fn json_contract() {
    // The NFP cannot offload the router's LPM trie; the reflector runs on both.
    for (target, name) in [("x86", "xdp_router.o"), ("nfp", "xdp_reflector.o")] {
        let router = example(name);
        let router = router.to_str().unwrap();
        let j = cost_json(&[router, "--target", target, "--json"]);
        assert_eq!(j["target"], target);
        let components: Vec<String> = j["components"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| {
                assert!(c["capacity_per_s"].as_f64().unwrap() > 0.0);
                c["name"].as_str().unwrap().to_string()
            })
            .collect();
        assert!(!components.is_empty());
        assert!(j["limits"]["min_frame_bytes"].as_u64().unwrap() >= 60);
        let blocks = j["blocks"].as_array().unwrap();
        let inspect = run(["inspect", router, "--json"]).json();
        assert_eq!(
            blocks.len() as u64,
            inspect["programs"][0]["cfg"]["blocks"].as_u64().unwrap()
        );
        let mut insns = 0;
        for (i, b) in blocks.iter().enumerate() {
            assert_eq!(b["id"].as_u64().unwrap(), i as u64);
            assert!(b["first_insn"].is_u64());
            insns += b["insns"].as_u64().unwrap();
            let names: Vec<String> = amounts(&b["cost"]).into_iter().map(|(k, _)| k).collect();
            let mut sorted = components.clone();
            sorted.sort();
            assert_eq!(names, sorted, "every component in every cost vector");
        }
        // Blocks partition the program's slots (a 64-bit immediate load is one instruction in
        // two slots).
        let slots = inspect["programs"][0]["insns"].as_u64().unwrap();
        assert!(
            insns <= slots && insns * 2 >= slots,
            "{insns} insns in {slots} slots"
        );
        let firsts: Vec<u64> = blocks
            .iter()
            .map(|b| b["first_insn"].as_u64().unwrap())
            .collect();
        assert!(firsts.windows(2).all(|w| w[0] < w[1]));
        // An edge costs at least its source block; a taken and a not-taken edge of one block
        // differ only by the jump's price.
        for e in j["edges"].as_array().unwrap() {
            assert!(e["taken"].is_boolean());
            let from = &blocks[e["from"].as_u64().unwrap() as usize];
            for ((name, edge), (_, block)) in amounts(&e["cost"]).iter().zip(amounts(&from["cost"]))
            {
                assert!(edge >= &block, "{target}: edge {e} {name} below its block");
            }
        }
    }
}

#[test]
fn path_cost_and_rate_follow_the_model() {
    let router = example("xdp_legacy_maps.o");
    let router = router.to_str().unwrap();
    let j = cost_json(&[router, "--target", "nfp", "--json"]);
    // Follow not-taken/fallthrough edges from block 0 to an exit.
    let edges = j["edges"].as_array().unwrap();
    let mut path = vec![0u64];
    loop {
        let here = *path.last().unwrap();
        let Some(next) = edges
            .iter()
            .filter(|e| e["from"] == here)
            .find(|e| !e["taken"].as_bool().unwrap())
            .or_else(|| edges.iter().find(|e| e["from"] == here))
        else {
            break;
        };
        path.push(next["to"].as_u64().unwrap());
    }
    let arg = path
        .iter()
        .map(|b| b.to_string())
        .collect::<Vec<_>>()
        .join(",");
    let p = cost_json(&[router, "--target", "nfp", "--json", "--path", &arg]);
    let cost = amounts(&p["path"]["cost"]);
    // The path's cost is per-packet work + its edges + its last block.
    for (name, total) in &cost {
        let mut expect = p["per_packet"][name].as_f64().unwrap_or(0.0);
        for pair in path.windows(2) {
            expect += edges
                .iter()
                .filter(|e| e["from"] == pair[0] && e["to"] == pair[1])
                .map(|e| e["cost"][name].as_f64().unwrap())
                .fold(0.0, f64::max);
        }
        expect += p["blocks"][*path.last().unwrap() as usize]["cost"][name]
            .as_f64()
            .unwrap();
        assert!((total - expect).abs() < 1e-6, "{name}: {total} != {expect}");
    }
    // pps = min over components of capacity / cost, capped by the limits.
    let mut pps = f64::INFINITY;
    for c in p["components"].as_array().unwrap() {
        let amount = p["path"]["cost"][c["name"].as_str().unwrap()]
            .as_f64()
            .unwrap();
        if amount > 0.0 {
            pps = pps.min(c["capacity_per_s"].as_f64().unwrap() / amount);
        }
    }
    pps = pps.min(p["limits"]["max_packet_rate_pps"].as_f64().unwrap());
    assert!((p["path"]["pps"].as_f64().unwrap() - pps).abs() < 1.0);

    let human = run(["cost", router, "--target", "nfp", "--path", &arg])
        .ok()
        .to_string();
    assert!(human.contains(&format!("path {arg}:")), "{human}");
    assert!(human.contains("Mpps"), "{human}");
}

#[test]
fn every_example_costs_on_x86() {
    let mut costed = 0;
    for entry in std::fs::read_dir(examples()).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_none_or(|e| e != "o") {
            continue;
        }
        let j = cost_json(&[path.to_str().unwrap(), "--target", "x86", "--json"]);
        let programs = match j.get("programs") {
            Some(list) => list.as_array().unwrap().clone(),
            None => vec![j.clone()],
        };
        for p in programs {
            assert!(!p["blocks"].as_array().unwrap().is_empty());
            // Edges carry their block and its jump; x86 prices a lone `exit` block at 0 (the
            // return is part of the per-packet cost), so look at edges.
            for e in p["edges"].as_array().unwrap() {
                let total: f64 = amounts(&e["cost"]).iter().map(|(_, v)| v).sum();
                assert!(total > 0.0, "{}: edge {e} costs nothing", path.display());
            }
            assert!(p["worst_path"].is_null() || p["worst_path"]["pps"].as_f64().unwrap() > 0.0);
        }
        costed += 1;
    }
    assert!(costed >= 20, "only {costed} examples");
}

#[test]
fn bad_input_gets_one_line() {
    let router = example("xdp_router.o");
    let router = router.to_str().unwrap();
    expect_error(
        &run(["cost", router, "--target", "gpu"]),
        &["unknown target `gpu`", "x86", "nfp"],
    );
    expect_error(
        &run(["cost", router, "--path", "0,999"]),
        &["--path", "no block 999"],
    );
    expect_error(
        &run(["cost", router, "--path", "0,0"]),
        &["--path", "no edge from block 0 to block 0"],
    );
    expect_error(
        &run(["cost", router, "--model", "/nonexistent/model.json"]),
        &["cannot read model /nonexistent/model.json"],
    );
    let dir = TempDir::new("cost-model");
    dir.write(
        "m.json",
        b"{\"format\": \"linerate-cost-model\", \"version\": 1}",
    );
    expect_error_in(
        &dir,
        &["cost", router, "--model", "m.json"],
        &["invalid model m.json", "missing field"],
    );
    expect_error(
        &run(["cost", router, "--target", "nfp"]),
        &[
            "insn 68 of `xdp_router` (map.lookup.lpm_trie.k8) cannot run on target nfp",
            "BPF_MAP_TYPE_ARRAY and BPF_MAP_TYPE_HASH",
        ],
    );
    let tailcall = example("xdp_tailcall.o");
    expect_error(
        &run(["cost", tailcall.to_str().unwrap(), "--path", "0"]),
        &["--path needs one program", "--prog"],
    );
}

#[test]
fn insns_listing_adds_up_to_blocks() {
    // x86 has no stalls and the router no local calls: a block costs the sum of its instructions
    // except a final conditional jump, whose two prices its edges carry.
    let router = example("xdp_router.o");
    let j = cost_json(&[router.to_str().unwrap(), "--insns", "--json"]);
    let insns = j["insns"].as_array().unwrap();
    assert!(insns
        .iter()
        .all(|i| !i["items"].as_array().unwrap().is_empty()));
    for block in j["blocks"].as_array().unwrap() {
        let id = block["id"].as_u64().unwrap();
        let mut sum = 0.0;
        for i in insns.iter().filter(|i| i["block"].as_u64() == Some(id)) {
            if i.get("taken_cost").is_none() {
                sum += i["cost"]["cycles"].as_f64().unwrap();
            }
        }
        let cost = block["cost"]["cycles"].as_f64().unwrap();
        assert!((sum - cost).abs() < 1e-6, "block {id}: {sum} vs {cost}");
    }
    let jumps: Vec<&Value> = insns
        .iter()
        .filter(|i| i.get("taken_cost").is_some())
        .collect();
    assert!(!jumps.is_empty());
    for e in j["edges"].as_array().unwrap() {
        let from = e["from"].as_u64().unwrap();
        if let Some(jump) = jumps.iter().find(|i| i["block"].as_u64() == Some(from)) {
            let key = if e["taken"].as_bool().unwrap() {
                "taken_cost"
            } else {
                "cost"
            };
            let block = j["blocks"][from as usize]["cost"]["cycles"]
                .as_f64()
                .unwrap();
            let expect = block + jump[key]["cycles"].as_f64().unwrap();
            assert!(
                (e["cost"]["cycles"].as_f64().unwrap() - expect).abs() < 1e-6,
                "{e}"
            );
        }
    }
    let human = run(["cost", router.to_str().unwrap(), "--insns"])
        .ok()
        .to_string();
    assert!(
        human.contains("priced as") && human.contains("map.lookup.lpm_trie.k8"),
        "{human}"
    );
}

/// The blocks `run` reports for a packet form a path `cost --path` accepts: every consecutive pair
/// is an edge (blocks entered by falling through included).
#[test]
fn run_paths_are_cost_paths() {
    for name in [
        "xdp_redirect",
        "xdp_router",
        "xdp_dns",
        "xdp_quic_lb_v4",
        "xdp_filter",
    ] {
        let object = example(&format!("{name}.o"));
        let object = object.to_str().unwrap();
        let packets = example(&format!("{name}.packets"));
        let maps = example(&format!("{name}.maps.json"));
        let mut args = vec![
            "run",
            object,
            "--packets",
            packets.to_str().unwrap(),
            "--json",
        ];
        if maps.exists() {
            args.extend(["--maps", maps.to_str().unwrap()]);
        }
        let runs = run(&args).json();
        for r in runs.as_array().unwrap() {
            let blocks: Vec<String> = r["blocks"]
                .as_array()
                .unwrap()
                .iter()
                .map(|b| b.to_string())
                .collect();
            let path = blocks.join(",");
            let out = run(["cost", object, "--path", &path, "--json"]);
            assert_eq!(out.code, Some(0), "{name}: path {path}: {}", out.stderr);
        }
    }
}

/// `--packets` prices the path each packet takes: the same cost `--path` gives its blocks, and
/// the slowest packet is the one with the lowest rate.
#[test]
fn packets_price_their_paths() {
    let object = example("xdp_cms_nfp_d5.o");
    let object = object.to_str().unwrap();
    let packets = example("xdp_cms_nfp_d5.packets");
    let maps = example("xdp_cms_nfp_d5.maps.json");
    let j = cost_json(&[
        object,
        "--target",
        "nfp",
        "--packets",
        packets.to_str().unwrap(),
        "--maps",
        maps.to_str().unwrap(),
        "--json",
    ]);
    assert!(j["worst_path"].is_null(), "the sketch loops over its rows");
    let priced = j["packets"].as_array().unwrap();
    assert_eq!(priced.len(), 12);
    let mut slowest = (f64::INFINITY, 0);
    for (i, p) in priced.iter().enumerate() {
        let blocks: Vec<String> = p["blocks"]
            .as_array()
            .unwrap()
            .iter()
            .map(|b| b.to_string())
            .collect();
        let path = cost_json(&[
            object,
            "--target",
            "nfp",
            "--path",
            &blocks.join(","),
            "--json",
        ]);
        assert_eq!(path["path"]["cost"], p["cost"], "packet {i}");
        let pps = p["pps"].as_f64().unwrap();
        if pps < slowest.0 {
            slowest = (pps, i);
        }
    }
    assert_eq!(
        j["slowest_packet"]["index"].as_u64().unwrap() as usize,
        slowest.1
    );
    // Counting packets walk the row loop five times, so they cost more than the ones that
    // return before it.
    let cycles = |i: usize| priced[i]["cost"]["cycles"].as_f64().unwrap();
    assert!(
        cycles(0) > 4.0 * cycles(7),
        "{} vs {}",
        cycles(0),
        cycles(7)
    );

    let tailcall = example("xdp_tailcall.o");
    expect_error(
        &run([
            "cost",
            tailcall.to_str().unwrap(),
            "--packets",
            packets.to_str().unwrap(),
        ]),
        &["--packets needs one program", "--prog"],
    );
}
