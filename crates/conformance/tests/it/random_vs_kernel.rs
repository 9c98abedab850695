//! Differential test: random verifier-valid XDP objects give the same return value, output packet,
//! metadata and map contents in the interpreter as in this host's kernel, run after run.
//!
//! 2,000 objects per run by default (`LINERATE_RANDOM_PROGRAMS` overrides). Each object holds two
//! or three programs with helper calls, map lookups, tail calls and bounded loops, sharing an array,
//! a hash, a device map and a program array (see `random_program::objects`); it runs three times,
//! each time on a random packet and entering a random program, with the maps persisting from run
//! to run in both engines. After every run every map is compared in full, including the `out` map
//! into which every program's epilogue copies its registers and stack, so a wrong store nothing
//! reads shows too.
//!
//! Objects the verifier refuses are counted, not compared and not counted as agreements; the
//! acceptance rate is printed and must stay at or above [`MIN_ACCEPTANCE`]. A disagreement is shrunk
//! by proptest to a minimal object and printed as a disassembly with its map seeds and packets.
//!
//! The generator steers clear of the kernel's bugs (docs/kernel-issues.md). Three disagreements of
//! the interpreter it found (bpf_csum_diff's 16-bit fold and free sizes, load/store_bytes' errno
//! past the packet, BPF_F_LOCK's place among an array update's checks) are fixed in
//! `linerate_sem::helpers` and `linerate_vm::maps`.
//! `PROPTEST_RNG_SEED=n` makes a run reproducible.

use std::cell::RefCell;
use std::collections::BTreeMap;

use linerate_bpf::contents::normalize_entries;
use linerate_bpf::disasm::disassemble;
use linerate_bpf::{MapDef, Object};
use linerate_conformance::random_program::objects::{
    packet, random_object, reg_slot, RandomObject, DUMP_BYTES, MAX_PROGRAMS,
};
use linerate_kernel::{load_entry, usable_or_skip, TestRunInput};
use linerate_vm::{Vm, VmOptions};
use proptest::test_runner::{Config, TestCaseError, TestError, TestRunner};

/// Lowest share of generated objects the verifier must accept.
const MIN_ACCEPTANCE: f64 = 0.95;
/// Top-level items per program.
const MAX_ITEMS: usize = 30;

/// An object and its runs: `(entry program, packet)`, the entry taken modulo the program count.
type Case = (RandomObject, Vec<(usize, Vec<u8>)>);

#[derive(Default)]
struct Stats {
    accepted: usize,
    rejected: usize,
    /// Verifier refusals by their message (digits blanked).
    reasons: BTreeMap<String, usize>,
    programs: usize,
    features: BTreeMap<&'static str, usize>,
    /// Runs that ended in another program than they entered (a tail call succeeded).
    tail_called: usize,
    /// Instructions the interpreter executed, over all runs.
    instructions: u64,
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// The line of a verifier log that says why the program was refused, digits blanked.
fn refusal(log: &str) -> String {
    let line = log
        .lines()
        .rev()
        .map(str::trim)
        .find(|l| {
            !l.is_empty()
                && !l.starts_with("processed ")
                && !l.starts_with("verification time")
                && !l.starts_with("stack depth")
        })
        .unwrap_or("(empty log)");
    line.chars()
        .map(|c| if c.is_ascii_digit() { '#' } else { c })
        .collect()
}

/// What a byte offset of an `out` value holds.
fn out_word(offset: usize) -> String {
    let stack = -(DUMP_BYTES as i64) + offset as i64;
    match (0..10u8).find(|&r| reg_slot(r) as i64 == stack) {
        Some(r) => format!("r{r}"),
        None => format!("r10 - {:#x}", -stack),
    }
}

fn map_difference(
    def: &MapDef,
    ours: &[(Vec<u8>, Vec<u8>)],
    kernel: &[(Vec<u8>, Vec<u8>)],
) -> String {
    let mut out = format!("  map `{}` differs:\n", def.name);
    let ours: BTreeMap<_, _> = ours.iter().cloned().collect();
    let kernel: BTreeMap<_, _> = kernel.iter().cloned().collect();
    let keys: std::collections::BTreeSet<_> = ours.keys().chain(kernel.keys()).collect();
    for key in keys {
        match (ours.get(key), kernel.get(key)) {
            (Some(a), Some(b)) if a == b => {}
            (Some(a), Some(b)) if def.name == "out" => {
                out += &format!("    out[{}]:\n", hex(key));
                for (i, (x, y)) in a.chunks(8).zip(b.chunks(8)).enumerate() {
                    if x != y {
                        let word = |w: &[u8]| {
                            let mut bytes = [0u8; 8];
                            bytes[..w.len()].copy_from_slice(w);
                            u64::from_le_bytes(bytes)
                        };
                        out += &format!(
                            "      {:<10} vm {:#018x}  kernel {:#018x}\n",
                            out_word(8 * i),
                            word(x),
                            word(y)
                        );
                    }
                }
            }
            (a, b) => {
                let show = |v: Option<&Vec<u8>>| v.map_or("(absent)".to_string(), |v| hex(v));
                out += &format!("    key {}: vm {}  kernel {}\n", hex(key), show(a), show(b));
            }
        }
    }
    out
}

fn fail(message: String) -> TestCaseError {
    TestCaseError::fail(message)
}

fn compare(case: &Case, stats: &RefCell<Stats>) -> Result<(), TestCaseError> {
    let (random, runs) = case;
    let obj = random.object();
    let loaded = match load_entry(&obj, 0) {
        Ok(loaded) => loaded,
        Err(e) => {
            let Some(log) = e.verifier_log() else {
                return Err(fail(format!("loading a generated object failed: {e}")));
            };
            let mut stats = stats.borrow_mut();
            stats.rejected += 1;
            *stats.reasons.entry(refusal(log)).or_default() += 1;
            return Err(TestCaseError::reject(format!("verifier refused: {e}")));
        }
    };
    {
        let mut stats = stats.borrow_mut();
        stats.accepted += 1;
        stats.programs += random.programs.len();
        for feature in random.features.iter().flatten() {
            *stats.features.entry(feature).or_default() += 1;
        }
    }
    let mut vm = Vm::new(&obj, VmOptions::default()).map_err(|e| fail(e.to_string()))?;
    for (map, key, value) in &random.seeds {
        loaded
            .update(*map, key, value)
            .map_err(|e| fail(format!("seeding the kernel's map {map}: {e}")))?;
        let status = vm.maps[*map].update(key, value, 0);
        if status != 0 {
            return Err(fail(format!(
                "seeding the interpreter's map {map} failed: {status}"
            )));
        }
    }
    for (i, (entry, packet)) in runs.iter().enumerate() {
        let entry = entry % obj.programs.len();
        let kernel = loaded
            .test_run(entry, &TestRunInput::new(packet.clone()))
            .map_err(|e| fail(e.to_string()))?;
        let ours = vm.run(entry, packet, &[]).map_err(|e| {
            fail(format!(
                "run {i} (prog{entry}, packet {}): interpreter failed where the kernel ran: {e}",
                hex(packet)
            ))
        })?;
        {
            let mut stats = stats.borrow_mut();
            stats.tail_called += usize::from(ours.final_program != entry);
            stats.instructions += ours.instructions;
        }
        let mut differences = String::new();
        if ours.return_value != kernel.retval as u64 {
            differences += &format!(
                "  return: vm {:#x}, kernel {:#x}\n",
                ours.return_value, kernel.retval
            );
        }
        if ours.packet != kernel.packet || ours.meta != kernel.meta {
            differences += &format!(
                "  packet: vm     {} | meta {}\n          kernel {} | meta {}\n",
                hex(&ours.packet),
                hex(&ours.meta),
                hex(&kernel.packet),
                hex(&kernel.meta)
            );
        }
        for (m, def) in obj.maps.iter().enumerate() {
            let theirs = loaded
                .entries(m)
                .map_err(|e| fail(format!("reading the kernel's map `{}`: {e}", def.name)))?;
            let theirs = normalize_entries(def, theirs);
            let mine = vm.maps[m].entries();
            if mine != theirs {
                differences += &map_difference(def, &mine, &theirs);
            }
        }
        if !differences.is_empty() {
            return Err(fail(format!(
                "interpreter and kernel disagree after run {i} (prog{entry}, packet {}):\n{differences}",
                hex(packet)
            )));
        }
    }
    Ok(())
}

fn listing(obj: &Object, case: &Case) -> String {
    let (random, runs) = case;
    let mut out = String::new();
    for program in &obj.programs {
        out += &disassemble(program, &obj.maps);
    }
    out += "\nmap seeds:\n";
    for (map, key, value) in &random.seeds {
        out += &format!("  {}[{}] = {}\n", obj.maps[*map].name, hex(key), hex(value));
    }
    out += "runs:\n";
    for (entry, packet) in runs {
        out += &format!(
            "  prog{} on {} bytes {}\n",
            entry % obj.programs.len(),
            packet.len(),
            hex(packet)
        );
    }
    out
}

fn percent(part: usize, whole: usize) -> f64 {
    100.0 * part as f64 / whole.max(1) as f64
}

#[test]
fn interpreter_agrees_with_kernel_on_random_programs() {
    if !usable_or_skip("random differential test") {
        return;
    }
    let cases: u32 = std::env::var("LINERATE_RANDOM_PROGRAMS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(2000);
    let mut runner = TestRunner::new(Config {
        cases,
        failure_persistence: None,
        max_global_rejects: cases.max(100),
        max_shrink_iters: 20_000,
        ..Config::default()
    });
    let strategy = (
        random_object(MAX_ITEMS),
        proptest::collection::vec((0..MAX_PROGRAMS, packet()), 3),
    );
    let stats = RefCell::new(Stats::default());
    let result = runner.run(&strategy, |case| compare(&case, &stats));
    let stats = stats.into_inner();
    let generated = stats.accepted + stats.rejected;
    eprintln!(
        "the verifier accepted {} of {generated} generated random objects ({:.2}%): {} programs, \
         {} runs compared",
        stats.accepted,
        percent(stats.accepted, generated),
        stats.programs,
        3 * stats.accepted,
    );
    eprintln!(
        "  {:.1}% of the runs ended in another program after a tail call; {:.0} instructions \
         executed per run on average",
        percent(stats.tail_called, 3 * stats.accepted),
        stats.instructions as f64 / (3 * stats.accepted).max(1) as f64
    );
    for (reason, n) in &stats.reasons {
        eprintln!("  refused {n}x: {reason}");
    }
    eprintln!("share of accepted programs containing each feature:");
    for (feature, n) in &stats.features {
        eprintln!("  {feature:<26} {:5.1}%", percent(*n, stats.programs));
    }
    match result {
        Ok(()) => eprintln!("interpreter and kernel agree on every run"),
        Err(TestError::Fail(reason, case)) => panic!(
            "minimized reproducer ({} programs, {} instructions):\n{}\n{reason}",
            case.0.programs.len(),
            case.0.programs.iter().map(Vec::len).sum::<usize>(),
            listing(&case.0.object(), &case),
        ),
        Err(TestError::Abort(reason)) => panic!("aborted: {reason}"),
    }
    assert!(
        stats.accepted as f64 >= MIN_ACCEPTANCE * generated as f64,
        "the verifier refused {} of {generated} generated objects",
        stats.rejected
    );
}
