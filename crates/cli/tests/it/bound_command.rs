//! `linerate bound`: the JSON contract, the witness files, soundness of the reported paths (each
//! witness, installed as `run --maps` and run in the interpreter and in the kernel, returns the
//! action `bound` reported), and one-line errors for what it refuses.

use crate::common;

use common::{example, expect_error, run, TempDir};
use serde_json::Value;

fn bound_json(args: &[&str]) -> Value {
    let mut all = vec!["bound"];
    all.extend_from_slice(args);
    all.push("--json");
    run(all).json()
}

/// Checks the `bound --json` fields of one reported path.
fn check_path_shape(p: &Value) {
    for key in [
        "pps",
        "bps",
        "bottleneck",
        "min_packet_size",
        "blocks",
        "witness",
    ] {
        assert!(p.get(key).is_some(), "path lacks {key}: {p}");
    }
    let w = &p["witness"];
    for key in ["packet", "meta", "ctx", "maps", "action"] {
        assert!(w.get(key).is_some(), "witness lacks {key}: {w}");
    }
    assert!(p["pps"].as_f64().unwrap() > 0.0);
    assert!(
        w["packet"].as_str().unwrap().len() >= 28,
        "shorter than 14 bytes"
    );
}

#[test]
fn json_contract_and_witness_files() {
    let dir = TempDir::new("bound-files");
    let pcap = dir.path().join("w.pcap");
    let maps = dir.path().join("w.json");
    let firewall = example("xdp_firewall.o");
    let j = bound_json(&[
        firewall.to_str().unwrap(),
        "--paths",
        "3",
        "--witness",
        pcap.to_str().unwrap(),
        "--witness-maps",
        maps.to_str().unwrap(),
    ]);
    for key in [
        "target",
        "metric",
        "complete",
        "elapsed_s",
        "paths_checked",
        "solver_checks",
        "conflicts_learned",
        "naive",
        "ssp",
        "improvements",
        "paths",
    ] {
        assert!(j.get(key).is_some(), "bound --json lacks {key}");
    }
    assert_eq!(j["target"], "x86");
    assert_eq!(j["metric"], "pps");
    assert_eq!(j["complete"], true);
    let naive = &j["naive"];
    assert!(naive["pps"].as_f64().unwrap() > 0.0 && naive["bps"].as_f64().unwrap() > 0.0);
    assert!(!naive["blocks"].as_array().unwrap().is_empty());
    check_path_shape(&j["ssp"]);
    let paths = j["paths"].as_array().unwrap();
    assert_eq!(paths.len(), 3);
    paths.iter().for_each(check_path_shape);
    // Slowest first, and never slower than the naive bound.
    let rates: Vec<f64> = paths.iter().map(|p| p["pps"].as_f64().unwrap()).collect();
    assert!(rates.windows(2).all(|w| w[0] <= w[1]), "{rates:?}");
    assert!(rates[0] >= naive["pps"].as_f64().unwrap());
    assert_eq!(j["ssp"], paths[0]);
    // The files hold one packet and one map set per path, in order.
    let packets = linerate_io::pcap::read_pcap(&pcap).expect("pcap");
    assert_eq!(packets.len(), 3);
    for (packet, path) in packets.iter().zip(paths) {
        let hex: String = packet.iter().map(|b| format!("{b:02x}")).collect();
        assert_eq!(hex, path["witness"]["packet"].as_str().unwrap());
    }
    let maps: Value = serde_json::from_str(&std::fs::read_to_string(&maps).unwrap()).unwrap();
    assert_eq!(maps.as_array().unwrap().len(), 3);
    assert_eq!(maps[0], paths[0]["witness"]["maps"]);
}

/// Every reported path's witness, installed with `run --maps`, returns the reported action in
/// the interpreter and (where BPF is usable) in the kernel.
#[test]
fn witnesses_take_their_action_in_both_engines() {
    let kernel = linerate_kernel::usable_or_skip("witnesses_take_their_action_in_both_engines");
    let dir = TempDir::new("bound-witness");
    let mut checked = 0;
    for (name, target) in [
        ("xdp_filter.o", "x86"),
        ("xdp_firewall.o", "x86"),
        ("xdp_cms_d5.o", "x86"),
        ("xdp_quic_lb_v4.o", "x86"),
        ("xdp_tailcall.o", "x86"),
        ("xdp_cms_nfp_d5.o", "nfp"),
        ("xdp_reflector.o", "nfp"),
    ] {
        let object = example(name);
        let object = object.to_str().unwrap();
        let j = bound_json(&[object, "--target", target, "--paths", "4"]);
        let paths = j
            .get("paths")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_else(|| vec![j["ssp"].clone()]);
        for (i, p) in paths.iter().enumerate() {
            let w = &p["witness"];
            let maps = dir.write(&format!("{name}-{i}.json"), w["maps"].to_string());
            let packet = w["packet"].as_str().unwrap();
            let mut engines = vec![false];
            if kernel && w["unrepeatable"].as_array().is_none_or(|u| u.is_empty()) {
                engines.push(true);
            }
            for in_kernel in engines {
                let mut args = vec!["run", object, "--packet", packet, "--maps"];
                args.push(maps.to_str().unwrap());
                args.push("--json");
                if in_kernel {
                    args.push("--kernel");
                }
                let out = run(&args).json();
                let out = if out.is_array() { out[0].clone() } else { out };
                assert_eq!(
                    out["action"], w["action"],
                    "{name} path {i} (kernel: {in_kernel}): {p}"
                );
                checked += 1;
            }
        }
    }
    assert!(checked >= 7, "{checked}");
}

#[test]
fn bit_rate_mode() {
    let cms = example("xdp_cms_d2.o");
    let j = bound_json(&[cms.to_str().unwrap(), "--bit-rate"]);
    assert_eq!(j["metric"], "bps");
    let ssp = &j["ssp"];
    let bytes = ssp["witness"]["packet"].as_str().unwrap().len() / 2;
    assert!(ssp["min_packet_size"].as_u64().unwrap() as usize <= bytes.max(14));
}

#[test]
fn refusals_get_one_line() {
    let kfunc = example("xdp_kfunc.o");
    expect_error(
        &run(["bound", kfunc.to_str().unwrap()]),
        &["loop with header at slot", "--max-unroll"],
    );
    expect_error(&run(["bound", "/nonexistent/x.o"]), &["/nonexistent/x.o"]);
    let filter = example("xdp_filter.o");
    expect_error(
        &run(["bound", filter.to_str().unwrap(), "--target", "nfp"]),
        &["cannot run on target nfp"],
    );
    expect_error(
        &run(["bound", filter.to_str().unwrap(), "--paths", "0"]),
        &["--paths"],
    );
    let mixed = example("xdp_mixed.o");
    expect_error(
        &run(["bound", mixed.to_str().unwrap(), "--prog", "mixed_on_write"]),
        &["mixed_on_write", "tracepoint"],
    );
}

/// Path explosion's impossible slow arms are learned as conflicts and its SSP found.
#[test]
fn path_explosion_learns_its_conflicts() {
    let explosion = example("xdp_path_explosion.o");
    let j = bound_json(&[explosion.to_str().unwrap(), "--timeout", "120"]);
    assert_eq!(j["complete"], true);
    assert!(
        j["conflicts_learned"].as_u64().unwrap() >= 48,
        "{}",
        j["conflicts_learned"]
    );
    assert!(j["ssp"]["pps"].as_f64().unwrap() > j["naive"]["pps"].as_f64().unwrap());
}

/// A search cut short keeps a valid bound and says it is incomplete.
#[test]
fn timeout_gives_an_incomplete_bound() {
    // The NFP DNS example's first path takes the solver far longer than this.
    let dns = example("xdp_dns_nfp.o");
    let j = bound_json(&[dns.to_str().unwrap(), "--timeout", "0.3"]);
    assert_eq!(j["complete"], false);
    assert_eq!(j["stop"], "timeout");
    let elapsed = j["elapsed_s"].as_f64().unwrap();
    assert!(elapsed < 10.0, "the time limit was not kept: {elapsed} s");
    let naive = j["naive"]["pps"].as_f64().unwrap();
    if let Some(bound) = j["bound"]["pps"].as_f64() {
        assert!(bound >= naive);
    }
}

/// The DNS responder's label walk reads at offsets that are sums of earlier packet bytes; its
/// search still reaches the SSP with a witness (about 3 s on an idle 2-core host; the limit
/// leaves room for a busy one), and the witness, installed with `run --maps`, returns the
/// reported action in the interpreter and the kernel. The witness is marked unrepeatable for
/// bpf_printk's result, which the program ignores (its path returns XDP_PASS whatever the
/// helper returned), so the kernel runs it too.
#[test]
fn dns_reaches_its_ssp() {
    let kernel = linerate_kernel::usable_or_skip("dns_reaches_its_ssp");
    let dir = TempDir::new("bound-dns");
    let dns = example("xdp_dns.o");
    let object = dns.to_str().unwrap();
    let j = bound_json(&[object, "--timeout", "120", "--check-timeout", "60"]);
    assert_eq!(j["complete"], true, "{}", j["elapsed_s"]);
    let ssp = &j["ssp"];
    check_path_shape(ssp);
    assert_eq!(
        ssp["pps"], j["naive"]["pps"],
        "the slowest path is possible"
    );
    replays_in_both_engines(&dir, object, &ssp["witness"], kernel);
}

/// The NFP variant walks the labels over the packet: after 32 labels the walk cannot land on
/// the root label, which the preparation proves (the position is at least twice the labels)
/// rather than the solver path by path, so the search confirms an SSP faster than the naive
/// bound's impossible path, whose witness answers the query (XDP_TX) in the interpreter and
/// the kernel. On both models (each search takes about 3 s on the 2-core Xeon of 2026-12-07,
/// with the analysis's wrapping sums and interval-keeping masks; 5 minutes without them).
fn dns_nfp_reaches_its_ssp_on(target: &str) {
    let kernel = linerate_kernel::usable_or_skip("dns_nfp_reaches_its_ssp");
    let dir = TempDir::new("bound-dns-nfp");
    let dns = example("xdp_dns_nfp.o");
    let object = dns.to_str().unwrap();
    let j = bound_json(&[
        object,
        "--target",
        target,
        "--timeout",
        "600",
        "--check-timeout",
        "120",
    ]);
    assert_eq!(j["complete"], true, "{target}: {}", j["elapsed_s"]);
    let ssp = &j["ssp"];
    check_path_shape(ssp);
    assert!(
        ssp["pps"].as_f64().unwrap() > j["naive"]["pps"].as_f64().unwrap(),
        "{target}: the naive bound's path is impossible"
    );
    assert_eq!(ssp["witness"]["action"], "XDP_TX", "{target}");
    replays_in_both_engines(&dir, object, &ssp["witness"], kernel);
}

#[test]
fn dns_nfp_reaches_its_ssp() {
    dns_nfp_reaches_its_ssp_on("nfp");
}

#[test]
fn dns_nfp_reaches_its_ssp_on_x86() {
    dns_nfp_reaches_its_ssp_on("x86");
}

/// The QUIC load balancer's slowest path on the NFP is possible (its witness replays in both
/// engines), so the search confirms it first: a preparation that wrongly took it for impossible
/// (an analysis whose wrapping sums made a possible edge impossible) sent the search through
/// hundreds of impossible paths instead.
#[test]
fn quic_nfp_v6_confirms_its_naive_path() {
    let kernel = linerate_kernel::usable_or_skip("quic_nfp_v6_confirms_its_naive_path");
    let dir = TempDir::new("bound-quic-nfp");
    let quic = example("xdp_quic_lb_nfp_v6.o");
    let object = quic.to_str().unwrap();
    let j = bound_json(&[object, "--target", "nfp", "--timeout", "120"]);
    assert_eq!(j["complete"], true, "{}", j["elapsed_s"]);
    let ssp = &j["ssp"];
    check_path_shape(ssp);
    assert_eq!(ssp["pps"], j["naive"]["pps"]);
    replays_in_both_engines(&dir, object, &ssp["witness"], kernel);
}

/// Runs witness `w` of `object` with its map entries (`run --maps`) in the interpreter and,
/// where `kernel`, in the kernel: each returns the witness's action.
fn replays_in_both_engines(dir: &TempDir, object: &str, w: &Value, kernel: bool) {
    let maps = dir.write("dns-maps.json", w["maps"].to_string());
    let packet = w["packet"].as_str().unwrap();
    let mut engines = vec![false];
    if kernel {
        engines.push(true);
    }
    for in_kernel in engines {
        let mut args = vec!["run", object, "--packet", packet, "--maps"];
        args.push(maps.to_str().unwrap());
        args.push("--json");
        if in_kernel {
            args.push("--kernel");
        }
        let out = run(&args).json();
        let out = if out.is_array() { out[0].clone() } else { out };
        assert_eq!(out["action"], w["action"], "kernel: {in_kernel}");
    }
}

/// An AF_XDP steering program (`tests/fixtures/xdp_socket_steering.c`): its socket map lookup is
/// priced, its slowest path redirects to a socket the witness puts in the map, which the
/// interpreter replays and the kernel cannot be given (said in the witness and, one line, by
/// `run --kernel`).
#[test]
fn socket_steering_is_bounded_and_its_witness_says_what_the_kernel_lacks() {
    let object = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/xdp_socket_steering.o");
    let object = object.to_str().unwrap();
    let model = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../cost/models/x86.json");
    let j = bound_json(&[object, "--model", model.to_str().unwrap()]);
    assert_eq!(j["complete"], true, "{j}");
    let w = &j["ssp"]["witness"];
    assert_eq!(w["action"], "XDP_REDIRECT", "{j}");
    let unrepeatable = w["unrepeatable"].to_string();
    assert!(
        unrepeatable.contains("AF_XDP socket in slot 0 of map `sockets`"),
        "{unrepeatable}"
    );
    let dir = TempDir::new("bound-socket-steering");
    let maps = dir.write("maps.json", w["maps"].to_string());
    let packet = w["packet"].as_str().unwrap();
    let args = [
        "run",
        object,
        "--packet",
        packet,
        "--maps",
        maps.to_str().unwrap(),
    ];
    let out = run(args.iter().chain(&["--json"]).copied().collect::<Vec<_>>()).json();
    assert_eq!(out["action"], "XDP_REDIRECT", "{out}");
    if linerate_kernel::usable_or_skip("the steering witness in the kernel") {
        let out = run(args
            .iter()
            .chain(&["--kernel"])
            .copied()
            .collect::<Vec<_>>());
        expect_error(&out, &["map `sockets`", "AF_XDP socket map holds sockets"]);
    }
}

/// A router (`tests/fixtures/xdp_fib_forward.c`): its slowest path needs a route, which its
/// witness comes with (`--witness-fib` and the JSON's `routes`, the `run --fib` shape). The
/// interpreter takes the path with those routes and leaves it without them.
#[test]
fn a_witness_needing_a_route_comes_with_it() {
    let fixture =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/xdp_fib_forward.o");
    let object = fixture.to_str().unwrap();
    let model = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../cost/models/x86.json");
    let dir = TempDir::new("bound-fib");
    let fib = dir.path().join("fib.json");
    let j = bound_json(&[
        object,
        "--model",
        model.to_str().unwrap(),
        "--witness-fib",
        fib.to_str().unwrap(),
    ]);
    let w = &j["ssp"]["witness"];
    assert_eq!(w["action"], "XDP_REDIRECT", "{j}");
    let written: Value = serde_json::from_str(&std::fs::read_to_string(&fib).unwrap()).unwrap();
    assert_eq!(written[0], w["routes"], "{written}");
    assert_eq!(w["routes"].as_array().map(Vec::len), Some(1), "{j}");
    let routes = dir.write("routes.json", w["routes"].to_string());
    let maps = dir.write("maps.json", w["maps"].to_string());
    let packet = w["packet"].as_str().unwrap();
    let action = |with_routes: bool| {
        let mut args = vec!["run", object, "--packet", packet, "--maps"];
        args.push(maps.to_str().unwrap());
        if with_routes {
            args.extend(["--fib", routes.to_str().unwrap()]);
        }
        args.push("--json");
        run(args).json()["action"].clone()
    };
    assert_eq!(action(true), "XDP_REDIRECT");
    assert_eq!(action(false), "XDP_PASS");
}

/// `--attack RUNS` attacks the search's claims with interpreter runs: the report counts the
/// runs, the claims and the paths the runs took, and finds nothing on an example.
#[test]
fn attack_checks_the_claims_with_runs() {
    let firewall = example("xdp_firewall.o");
    let j = bound_json(&[firewall.to_str().unwrap(), "--attack", "800"]);
    let attack = &j["attack"];
    assert_eq!(attack["runs"], 800, "{attack}");
    assert!(attack["claims"].as_u64().unwrap() > 10, "{attack}");
    assert!(attack["distinct_paths"].as_u64().unwrap() > 3, "{attack}");
    assert!(attack["guides"].as_u64().unwrap() >= 1, "{attack}");
    assert_eq!(attack["findings"], serde_json::json!([]), "{attack}");
    let text = run(vec!["bound", firewall.to_str().unwrap(), "--attack", "100"]).stdout;
    assert!(
        text.contains("no run takes what the search called impossible"),
        "{text}"
    );
    let refused = run(vec!["bound", firewall.to_str().unwrap(), "--attack", "0"]);
    expect_error(&refused, &["--attack must be at least 1"]);
}
