//! The objects `linerate_bpf::rewrite` writes load and run in the kernel like their inputs: every
//! example with a `ja +0` inserted into the entry function of every program, after its first
//! instruction or before it (so every function after one moves, with its calls, relocations and
//! `.BTF.ext` records, and the entry's first line record stays first) is accepted by the
//! verifier and gives, on the example's crafted packets and mutations of them, the same action,
//! packet, metadata, records and maps as the input object, packet after packet. Every example
//! `bpftool prog loadall` (libbpf) accepts is accepted rewritten too.

#[path = "../../../bpf/tests/it/support/insert_ja.rs"]
#[allow(dead_code)] // The expected re-read program is the bpf test's concern.
mod insert_ja;

use std::path::Path;
use std::process::Command;

use insert_ja::insert_ja;
use linerate_bpf::contents::MapMode;
use linerate_bpf::read_object;
use linerate_bpf::rewrite::{pinned_slots, rewrite_object, Replacement};
use linerate_conformance::examples::{load_all, Example};
use linerate_kernel::drive::Driver;
use linerate_kernel::usable_or_skip;
use linerate_testkit::XorShift;

const MUTATIONS: usize = 60;

/// The example with `ja +0` inserted into every program it can be inserted into.
fn rewritten(example: &Example, bytes: &[u8], front: bool) -> Vec<u8> {
    let inserted: Vec<_> = example
        .object
        .programs
        .iter()
        .filter_map(|p| {
            let pinned = pinned_slots(bytes, &p.name).unwrap();
            Some((p.name.as_str(), insert_ja(p, &pinned, front)?))
        })
        .collect();
    let replacements: Vec<Replacement> = inserted
        .iter()
        .map(|(name, ins)| Replacement {
            program: name,
            insns: &ins.insns,
            slot_map: &ins.slot_map,
        })
        .collect();
    assert!(!replacements.is_empty(), "{}", example.name());
    rewrite_object(bytes, &replacements).unwrap_or_else(|e| panic!("{}: {e}", example.name()))
}

/// Crafted packets, then byte flips of them.
fn packets(example: &Example) -> Vec<Vec<u8>> {
    let crafted = example.packet_bytes();
    let mut out = crafted.clone();
    let mut rng = XorShift::new(0x5eed ^ crafted.len() as u64);
    for _ in 0..MUTATIONS {
        let Some(base) = crafted.get(rng.below(crafted.len().max(1))) else {
            break;
        };
        let mut p = base.clone();
        if !p.is_empty() {
            let at = rng.below(p.len());
            p[at] ^= 1 << rng.below(8);
        }
        out.push(p);
    }
    out
}

fn run_alike(example: &Example, bytes: &[u8], front: bool) -> Result<usize, String> {
    let name = format!("{} (front {front})", example.name());
    let out = rewritten(example, bytes, front);
    let again = read_object(&out, &example.object.name).map_err(|e| format!("{name}: {e}"))?;
    let packets = packets(example);
    let mut compared = 0;
    for program in example.runnable_programs() {
        let prog = &example.object.programs[program].name;
        let mut before = Driver::new(&example.object, &example.seed, MapMode::Persist)
            .map_err(|e| format!("{name}: input refused: {e}"))?;
        let mut after = Driver::new(&again, &example.seed, MapMode::Persist).map_err(|e| {
            format!(
                "{name}: rewritten object refused: {e}\n{}",
                e.verifier_log().unwrap_or("")
            )
        })?;
        let a = before
            .run_packets(program, &packets, &[], 1)
            .map_err(|e| format!("{name}/{prog}: input: {e}"))?;
        let b = after.run_packets(program, &packets, &[], 1).map_err(|e| {
            format!(
                "{name}/{prog}: rewritten: {e}\n{}",
                e.verifier_log().unwrap_or("")
            )
        })?;
        for (i, (x, y)) in a.outcomes.iter().zip(&b.outcomes).enumerate() {
            let same = (x.retval, &x.packet, &x.meta, &x.records)
                == (y.retval, &y.packet, &y.meta, &y.records);
            if !same {
                return Err(format!(
                    "{name}/{prog} packet {i}: action {} became {} (or the packet, metadata or \
                     records differ)",
                    x.retval, y.retval
                ));
            }
        }
        if a.initial_maps != b.initial_maps || a.final_maps != b.final_maps {
            return Err(format!("{name}/{prog}: maps differ"));
        }
        compared += a.outcomes.len();
    }
    Ok(compared)
}

#[test]
fn rewritten_examples_load_and_run_like_their_inputs() {
    if !usable_or_skip("rewritten_objects") {
        return;
    }
    let examples = load_all().unwrap();
    let mut failures = Vec::new();
    let mut packets = 0;
    for example in &examples {
        let bytes = std::fs::read(&example.path).unwrap();
        for front in [false, true] {
            match run_alike(example, &bytes, front) {
                Ok(n) => packets += n,
                Err(e) => failures.push(e),
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    assert!(
        examples.len() >= 40 && packets > 40 * MUTATIONS,
        "{packets} packets"
    );
}

/// Whether `bpftool prog loadall` accepts the object at `path`; the pins are removed after.
fn bpftool_loads(path: &Path, tag: &str) -> Result<bool, String> {
    let dir = format!("/sys/fs/bpf/linerate_rewrite_{}_{tag}", std::process::id());
    let status = Command::new("/usr/sbin/bpftool")
        .args(["prog", "loadall"])
        .arg(path)
        .arg(&dir)
        .output()
        .map_err(|e| format!("bpftool: {e}"))?;
    let _ = std::fs::remove_dir_all(&dir);
    Ok(status.status.success())
}

#[test]
fn what_libbpf_loads_it_loads_rewritten() {
    if !usable_or_skip("rewritten_objects") || !Path::new("/usr/sbin/bpftool").exists() {
        return;
    }
    let tmp = std::env::temp_dir().join(format!("linerate_rewrite_{}", std::process::id()));
    std::fs::create_dir_all(&tmp).unwrap();
    let (mut accepted, mut refused) = (Vec::new(), Vec::new());
    let mut failures = Vec::new();
    for example in load_all().unwrap() {
        let name = example.name();
        if !bpftool_loads(&example.path, "in").unwrap() {
            refused.push(name);
            continue;
        }
        let bytes = std::fs::read(&example.path).unwrap();
        for front in [false, true] {
            let out = tmp.join(&name);
            std::fs::write(&out, rewritten(&example, &bytes, front)).unwrap();
            if !bpftool_loads(&out, "out").unwrap() {
                failures.push(format!("{name} (front {front})"));
            }
        }
        accepted.push(name);
    }
    let _ = std::fs::remove_dir_all(&tmp);
    eprintln!("bpftool refuses as inputs: {}", refused.join(" "));
    eprintln!("bpftool accepts, rewritten too: {}", accepted.len());
    assert!(failures.is_empty(), "refused rewritten: {failures:?}");
    assert!(accepted.len() >= 20, "only {} accepted", accepted.len());
}
