//! bench/p4: paper 001's method on this host (§V, carried out on the target every user has).
//!
//! 1. Every program of the experiment grid (`examples/p4/grid`) is compiled to XDP with one
//!    forwarding entry, loaded into this kernel, and timed with `BPF_PROG_TEST_RUN` on a 64-byte
//!    UDP/IPv4 frame that takes the forwarding entry, behind the traffic driver (see `TIMING`):
//!    ns per packet.
//! 2. The measurements are written as the CSV `linerate p4 fit` reads (`target/p4-host.csv`) and
//!    fitted into a host model, printed.
//! 3. The two validation functions are measured the same way and estimated with the host model,
//!    beside the paper's Table III (which is the Agilio CX's, in µs rather than ns: the shapes,
//!    not the magnitudes, compare).
//!
//! Baseline of the same run: the traffic driver with a program behind it that only returns
//! XDP_PASS (what each figure has had subtracted).

use std::path::{Path, PathBuf};

use linerate_bpf::contents::MapMode;
use linerate_bpf::read_object;
use linerate_contend::driver::{pass_object, Timing, TrafficDriver};
use linerate_kernel::drive::Driver;
use linerate_kernel::{usable_or_skip, LoadedObject};
use linerate_p4::compile::compile;
use linerate_p4::entries::Entries;
use linerate_p4::latency::{fit, read_measurements, LatencyModel, CSV_COLUMNS};
use linerate_p4::params::analyze;

/// How each program is timed: behind linerate's traffic driver (`linerate_contend::driver`),
/// which copies the frame's headers over the test packet before every run. `BPF_PROG_TEST_RUN`
/// alone would run each program on its own output: the validation functions decrement the TTL
/// and, once it reaches 1, stop forwarding (20 000 repeated runs from TTL 64 timed their drop
/// path 99.7% of the time). The driver's own cost, measured in the same way with a program that
/// only returns, is subtracted, and the slope between two repeat counts cancels what a call
/// costs once.
const TIMING: Timing = Timing {
    trials: 11,
    short: 2_000,
    long: 12_000,
};
/// Rounds over all programs; a program's figure is its median round.
const ROUNDS: usize = 7;

fn examples() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/p4")
}

/// A 64-byte UDP/IPv4 frame to `dst_mac`, from 192.0.2.1 to `dst_ip`, port 4000 to 5000.
fn frame(dst_mac: [u8; 6], dst_ip: [u8; 4]) -> Vec<u8> {
    let mut f = Vec::with_capacity(64);
    f.extend_from_slice(&dst_mac);
    f.extend_from_slice(&[0x02, 0, 0, 0, 0, 0x63]);
    f.extend_from_slice(&[0x08, 0x00]);
    let total_len: u16 = 64 - 14;
    f.extend_from_slice(&[0x45, 0, (total_len >> 8) as u8, total_len as u8, 0, 1, 0, 0]);
    f.extend_from_slice(&[64, 17, 0, 0, 192, 0, 2, 1]);
    f.extend_from_slice(&dst_ip);
    let udp_len: u16 = total_len - 20;
    f.extend_from_slice(&[
        0x0f,
        0xa0,
        0x13,
        0x88,
        (udp_len >> 8) as u8,
        udp_len as u8,
        0,
        0,
    ]);
    f.resize(64, 0xab);
    f
}

/// The ns per packet of program 0 of `object_bytes` on `packet` (maps seeded by `seed`) and
/// the action it returns.
fn time_object(
    name: &str,
    object_bytes: &[u8],
    seed: &linerate_bpf::contents::MapSeed,
    packet: &[u8],
    pass: &LoadedObject,
) -> Result<(f64, u32), String> {
    let object = read_object(object_bytes, name).map_err(|e| e.to_string())?;
    let nf = Driver::new(&object, seed, MapMode::Persist).map_err(|e| e.to_string())?;
    let traffic = TrafficDriver::new(&[packet.to_vec()]).map_err(|e| e.to_string())?;
    let time = traffic
        .nf_ns(nf.loaded(), 0, pass, TIMING)
        .map_err(|e| e.to_string())?;
    let action = traffic.run(1).map_err(|e| e.to_string())?.retval;
    Ok((time.nf(), action))
}

/// A compiled program and the frame it is timed on.
struct Timed {
    name: String,
    bytes: Vec<u8>,
    seed: linerate_bpf::contents::MapSeed,
    packet: Vec<u8>,
}

/// Compiles the P4 program at `path` with `entries` (JSON text).
fn compile_p4(path: &Path, entries: &str, packet: &[u8]) -> Result<Timed, String> {
    let checked = linerate_p4::load(path).map_err(|e| e.to_string())?;
    let entries = Entries::from_json_str(&checked, &path.display().to_string(), entries)
        .map_err(|e| e.to_string())?;
    let name = path
        .file_stem()
        .map_or("p4".into(), |s| s.to_string_lossy().into_owned());
    let compiled = compile(&checked, &entries, &name).map_err(|e| e.to_string())?;
    Ok(Timed {
        bytes: compiled.object_bytes().map_err(|e| e.to_string())?,
        seed: compiled.seed(),
        name,
        packet: packet.to_vec(),
    })
}

/// Every program's median ns per packet over `ROUNDS` rounds, each round timing every program
/// once (loaded afresh), so that a slow spell of this shared machine lands in one round of many
/// programs rather than in every trial of one; and the action of its last run.
fn time_all(programs: &[Timed], pass: &LoadedObject) -> Vec<Result<(f64, u32), String>> {
    let mut rounds: Vec<Vec<f64>> = vec![Vec::new(); programs.len()];
    let mut outcome: Vec<Result<u32, String>> = vec![Ok(0); programs.len()];
    for _ in 0..ROUNDS {
        for (i, p) in programs.iter().enumerate() {
            match time_object(&p.name, &p.bytes, &p.seed, &p.packet, pass) {
                Ok((ns, action)) => {
                    rounds[i].push(ns);
                    outcome[i] = Ok(action);
                }
                Err(e) => outcome[i] = Err(e),
            }
        }
    }
    rounds
        .into_iter()
        .zip(outcome)
        .map(|(mut ns, action)| {
            let action = action?;
            ns.sort_by(f64::total_cmp);
            let median = ns.get(ns.len() / 2).copied().ok_or("not timed")?;
            Ok((median, action))
        })
        .collect()
}

fn main() {
    if !usable_or_skip("bench/p4") {
        return;
    }
    println!(
        "## The grid on this host (BPF_PROG_TEST_RUN behind the traffic driver: median of {} \
         trials, each the slope between {} and {} runs)\n",
        TIMING.trials, TIMING.short, TIMING.long
    );
    let pass = pass_object().expect("a two-instruction program loads");
    let packet = frame([2, 0, 0, 0, 0, 2], [10, 1, 0, 5]);
    let baseline = TrafficDriver::new(std::slice::from_ref(&packet)).and_then(|driver| {
        driver.attach(&pass, 0)?;
        driver.ns_per_run(TIMING.trials, TIMING.short, TIMING.long)
    });
    match baseline {
        Ok(ns) => println!(
            "baseline: the driver with XDP_PASS behind it {ns:.1} ns per run (subtracted below)\n"
        ),
        Err(e) => println!("baseline: {e}\n"),
    }
    let forwarding = r#"{"tables": {"forwarding": [
        {"match": {"std.ingress_port": 1}, "action": "forward",
         "args": {"port": 2}}]}}"#;
    let mut paths: Vec<PathBuf> = std::fs::read_dir(examples().join("grid"))
        .expect("examples/p4/grid")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|e| e == "p4"))
        .collect();
    paths.sort();
    let mut csv = CSV_COLUMNS.join(",") + "\n";
    println!(
        "{:<26} {:>3} {:>3} {:>3} {:<9} {:>9}  action",
        "program", "α", "β", "γ", "actions", "ns/run"
    );
    let (mut grid, mut grid_params) = (Vec::new(), Vec::new());
    for path in &paths {
        let name = path.file_stem().unwrap_or_default().to_string_lossy();
        let params = match linerate_p4::load(path) {
            Ok(checked) => analyze(&checked).params(),
            Err(e) => {
                println!("{name:<26} {e}");
                continue;
            }
        };
        match compile_p4(path, forwarding, &packet) {
            Ok(timed) => {
                grid.push(timed);
                grid_params.push(params);
            }
            Err(e) => println!("{name:<26} not compiled: {e}"),
        }
    }
    let validation: Vec<(&str, f64)> = vec![("l3_fwd", 8387.0), ("l3_fwd_firewall", 9022.0)];
    let mut programs: Vec<Timed> = Vec::new();
    for (file, _) in &validation {
        let path = examples().join(format!("{file}.p4"));
        let entries = std::fs::read_to_string(examples().join(format!("{file}.entries.json")))
            .expect("the validation functions ship their entries");
        programs
            .push(compile_p4(&path, &entries, &packet).expect("the validation functions compile"));
    }
    let validation_times = time_all(&programs, &pass);
    let grid_times = time_all(&grid, &pass);
    for ((timed, p), time) in grid.iter().zip(&grid_params).zip(grid_times) {
        let name = &timed.name;
        match time {
            Ok((ns, action)) => {
                println!(
                    "{name:<26} {:>3} {:>3} {:>3} {:<9} {ns:>9.1}  {action}",
                    p.alpha, p.beta, p.gamma, p.actions
                );
                csv += &format!(
                    "{name},{},{},{},{},{ns}\n",
                    p.alpha, p.beta, p.gamma, p.actions
                );
            }
            Err(e) => println!("{name:<26} not measured: {e}"),
        }
    }
    let target = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target");
    let csv_path = target.canonicalize().unwrap_or(target).join("p4-host.csv");
    if let Err(e) = std::fs::write(&csv_path, &csv) {
        println!("cannot write {}: {e}", csv_path.display());
    }
    let measured = read_measurements(&csv, "grid").expect("the bench writes valid CSV");
    let model = match fit(&measured, "host", "bench/p4 on this host") {
        Ok(m) => m,
        Err(e) => {
            println!("\nno host model: {e}");
            return;
        }
    };
    println!(
        "\n## The host model (written as CSV to {})\n\ntables: f(γ) = {:.3}·γ² + {:.3}·γ ns for γ ≤ {}",
        csv_path.display(),
        model.tables.quadratic,
        model.tables.linear,
        model.tables.max_gamma
    );
    for c in &model.base {
        println!(
            "  α = {}, β = {}, {:<8}: {:.1} ns",
            c.alpha, c.beta, c.actions, c.ns
        );
    }
    println!("\n## Validation (paper Table III: measured and estimated on the Agilio CX, in ns)\n");
    println!(
        "{:<18} {:>12} {:>12} {:>8} {:>8}   {:>10} {:>10}",
        "function", "measured", "host est.", "error", "", "paper meas", "paper est"
    );
    let agilio = LatencyModel::agilio_cx();
    for ((file, paper_measured), time) in validation.iter().zip(validation_times) {
        let path = examples().join(format!("{file}.p4"));
        let Ok(checked) = linerate_p4::load(&path) else {
            println!("{file}: does not load");
            continue;
        };
        let params = analyze(&checked).params();
        let host = model.estimate(params).map(|e| e.latency_ns);
        let paper = agilio
            .estimate(params)
            .map(|e| e.latency_ns)
            .unwrap_or(f64::NAN);
        match (time, host) {
            (Ok((ns, _)), Ok(est)) => println!(
                "{file:<18} {ns:>12.1} {est:>12.1} {:>7.1}% {:>8}   {paper_measured:>10.0} {paper:>10.0}",
                (est - ns) / ns * 100.0,
                ""
            ),
            (Err(e), _) => println!("{file:<18} not measured: {e}"),
            (_, Err(e)) => println!("{file:<18} no estimate: {e}"),
        }
    }
}
