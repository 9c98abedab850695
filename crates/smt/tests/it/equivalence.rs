//! Whole-program equivalence (`check_equivalence`): every example within the bounds equals itself;
//! hand-made equivalent rewrites and `linerate optimize`'s outputs are proven equivalent;
//! inequivalent mutations give a counterexample that, replayed in the interpreter, really makes
//! the two programs' outcomes differ; loops are followed (a loop against its result);
//! unmodelled features are unknown, named.

use std::time::{Duration, Instant};

use linerate_bpf::contents::MapMode;
use linerate_bpf::facts::helper;
use linerate_bpf::facts::test_run_buffer::MAX_DATA;
use linerate_bpf::facts::xdp::XDP_REDIRECT;
use linerate_bpf::insn::build::{
    add64, add64_reg, call_helper, exit, ja, jmp, jmp_reg, ld_map, ldx, mov64, mov64_reg, st, stx,
};
use linerate_bpf::insn::{AluOp, Cond, Instruction, Operand, Size};
use linerate_bpf::program::{MapDef, MapType};
use linerate_bpf::Object;
use linerate_smt::{check_equivalence, Equivalence, EquivalenceCounterexample, EquivalenceOptions};
use linerate_vm::drive::Driver;
use linerate_vm::{Redirect, RunOutcome, VmOptions};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

fn options() -> EquivalenceOptions {
    EquivalenceOptions {
        timeout: Some(Duration::from_secs(20)),
        max_paths: 2000,
        total: None,
    }
}

/// What the interpreter observes of one run: action, output packet and metadata, every map's
/// entries, and where an `XDP_REDIRECT` sends the packet.
type Observed = (
    u64,
    Vec<u8>,
    Vec<u8>,
    Vec<Vec<(Vec<u8>, Vec<u8>)>>,
    Option<Redirect>,
);

fn observed(run: RunOutcome, maps: Vec<Vec<(Vec<u8>, Vec<u8>)>>) -> Observed {
    let redirect = run.redirect.filter(|_| run.return_value == XDP_REDIRECT);
    (run.return_value, run.packet, run.meta, maps, redirect)
}

fn replay(object: &Object, program: usize, cex: &EquivalenceCounterexample) -> Observed {
    let vm_options = VmOptions {
        ingress_ifindex: cex.ingress_ifindex,
        rx_queue_index: cex.rx_queue_index,
        ..VmOptions::default()
    };
    let mut driver = Driver::new(object, &cex.maps, vm_options, MapMode::Fresh)
        .unwrap_or_else(|e| panic!("counterexample maps do not install: {e}"));
    let run = driver
        .run(program, &cex.packet, &[])
        .unwrap_or_else(|e| panic!("counterexample run: {e}"));
    observed(run, driver.maps())
}

/// Asserts `candidate` differs from `original` and that the counterexample, replayed in the
/// interpreter, gives different outcomes, the ones the formulas gave for the return values.
fn assert_different(original: &Object, candidate: &Object, program: usize, what: &str) {
    let verdict = check_equivalence(original, candidate, program, &options())
        .unwrap_or_else(|e| panic!("{what}: {e}"));
    let Equivalence::Different(cex) = verdict else {
        panic!("{what}: expected a counterexample, got {verdict:?}");
    };
    assert!(cex.unrepeatable.is_empty(), "{what}: {cex:?}");
    let a = replay(original, program, &cex);
    let b = replay(candidate, program, &cex);
    assert_ne!(
        a, b,
        "{what}: the counterexample {cex:?} gives equal outcomes"
    );
    assert_eq!(
        (a.0, b.0),
        (cex.original_return, cex.candidate_return),
        "{what}: the interpreter's actions are not the formulas'"
    );
    eprintln!("{what}: differs in {:?}", cex.differs);
}

fn assert_equivalent(original: &Object, candidate: &Object, program: usize, what: &str) -> usize {
    match check_equivalence(original, candidate, program, &options()) {
        Ok(Equivalence::Equivalent { paths }) => paths,
        other => panic!("{what}: expected equivalent, got {other:?}"),
    }
}

fn single(insns: &[Instruction], maps: Vec<MapDef>) -> Object {
    Object::single("prog", insns, maps)
}

/// `if (data + 14 > data_end) return XDP_DROP; packet[13] = packet[12] + 4; return XDP_PASS;`
/// with the instructions at 7 and 8 (`r6 = r5; r6 += 4`) and the check's constant replaceable.
fn base(check: i32, compute: [Instruction; 2], store_at: i16, drop: i32) -> Vec<Instruction> {
    vec![
        ldx(Size::W, 2, 1, 0),
        ldx(Size::W, 3, 1, 4),
        mov64_reg(4, 2),
        add64(4, check),
        mov64(0, drop),
        jmp_reg(Cond::Gt, 4, 3, 5),
        ldx(Size::B, 5, 2, 12),
        compute[0],
        compute[1],
        stx(Size::B, 2, store_at, 6),
        mov64(0, 2),
        exit(),
    ]
}

fn original() -> Object {
    single(&base(14, [mov64_reg(6, 5), add64(6, 4)], 13, 1), vec![])
}

#[test]
fn hand_made_rewrites_are_equivalent() {
    let original = original();
    // r6 = r5; r6 += 4  vs  r6 = 4; r6 += r5
    let commuted = single(&base(14, [mov64(6, 4), add64_reg(6, 5)], 13, 1), vec![]);
    assert_equivalent(&original, &commuted, 0, "commuted addition");

    // A dead stack store removed (the original with one more).
    let mut with_dead = base(14, [mov64_reg(6, 5), add64(6, 4)], 13, 1);
    with_dead.insert(6, st(Size::Dw, 10, -8, 7));
    with_dead[5] = jmp_reg(Cond::Gt, 4, 3, 6);
    assert_equivalent(
        &single(&with_dead, vec![]),
        &original,
        0,
        "dead store removed",
    );

    // The bounds check inverted, its two sides swapped.
    let inverted = single(
        &[
            ldx(Size::W, 2, 1, 0),
            ldx(Size::W, 3, 1, 4),
            mov64_reg(4, 2),
            add64(4, 14),
            jmp_reg(Cond::Le, 4, 3, 2),
            mov64(0, 1),
            exit(),
            ldx(Size::B, 5, 2, 12),
            mov64_reg(6, 5),
            add64(6, 4),
            stx(Size::B, 2, 13, 6),
            mov64(0, 2),
            exit(),
        ],
        vec![],
    );
    assert_equivalent(&original, &inverted, 0, "inverted branch");

    // A jump to the next instruction and an unconditional jump over nothing.
    let mut padded = base(14, [mov64_reg(6, 5), add64(6, 4)], 13, 1);
    padded.insert(6, ja(0));
    padded.insert(6, jmp(Cond::Eq, 5, 7, 0));
    padded[5] = jmp_reg(Cond::Gt, 4, 3, 7);
    assert_equivalent(
        &original,
        &single(&padded, vec![]),
        0,
        "jumps to the next slot",
    );
}

#[test]
fn mutations_are_different_and_replay_differently() {
    let original = original();
    let compute = [mov64_reg(6, 5), add64(6, 4)];
    assert_different(
        &original,
        &single(&base(15, compute, 13, 1), vec![]),
        0,
        "constant in the bounds check",
    );
    assert_different(
        &original,
        &single(&base(14, compute, 12, 1), vec![]),
        0,
        "store offset",
    );
    // (`BPF_PROG_TEST_RUN` takes packets of 14 bytes or more: check for 20.)
    assert_different(
        &single(&base(20, compute, 13, 1), vec![]),
        &single(&base(20, compute, 13, 2), vec![]),
        0,
        "return value on the short-packet path",
    );
    assert_equivalent(
        &original,
        &single(&base(14, compute, 13, 2), vec![]),
        0,
        "return value on a path no packet takes",
    );
    assert_different(
        &original,
        &single(&base(14, [mov64_reg(6, 5), add64(6, 5)], 13, 1), vec![]),
        0,
        "computed value",
    );
}

/// `value = packet[12]` (plus `extra`) stored under key `packet[13] & 3` of a hash map with
/// `bpf_map_update_elem`, then `XDP_PASS` (`XDP_DROP` for a packet shorter than 14 bytes).
fn map_program(extra: i32) -> Object {
    let counts = MapDef::new("counts", MapType::HASH, 4, 8, 16);
    single(
        &[
            mov64_reg(9, 1),
            ldx(Size::W, 2, 9, 0),
            ldx(Size::W, 3, 9, 4),
            mov64_reg(4, 2),
            add64(4, 14),
            mov64(0, 1),
            jmp_reg(Cond::Gt, 4, 3, 15),
            ldx(Size::B, 5, 2, 12),
            add64(5, extra),
            stx(Size::Dw, 10, -16, 5),
            ldx(Size::B, 6, 2, 13),
            linerate_bpf::insn::build::alu64(linerate_bpf::insn::AluOp::And, 6, 3),
            stx(Size::W, 10, -4, 6),
            ld_map(1, 0),
            mov64_reg(2, 10),
            add64(2, -4),
            mov64_reg(3, 10),
            add64(3, -16),
            mov64(4, 0),
            call_helper(helper::MAP_UPDATE_ELEM),
            mov64(0, 2),
            exit(),
        ],
        vec![counts],
    )
}

#[test]
fn map_writes_are_compared() {
    let slots_before = map_program(0).programs[0].insns.len();
    assert_eq!(slots_before, map_program(1).programs[0].insns.len());
    assert_equivalent(&map_program(0), &map_program(0), 0, "map program");
    assert_different(
        &map_program(0),
        &map_program(1),
        0,
        "map update with another value",
    );
}

/// `bpf_redirect(ifindex, 0)` with the ifindex `packet[12] + add`, returning its result.
fn redirect_program(add: i32) -> Object {
    single(
        &[
            ldx(Size::W, 2, 1, 0),
            ldx(Size::W, 3, 1, 4),
            mov64_reg(4, 2),
            add64(4, 14),
            mov64(0, 1),
            jmp_reg(Cond::Gt, 4, 3, 4),
            ldx(Size::B, 1, 2, 12),
            add64(1, add),
            mov64(2, 0),
            call_helper(helper::REDIRECT),
            exit(),
        ],
        vec![],
    )
}

#[test]
fn redirect_targets_are_compared() {
    assert_equivalent(&redirect_program(1), &redirect_program(1), 0, "redirect");
    assert_different(
        &redirect_program(1),
        &redirect_program(2),
        0,
        "redirect target",
    );
}

#[test]
fn loops_are_followed_and_unmodelled_features_are_unknown() {
    // r0 = 0; loop: r0 += 1; if r0 < 4 goto loop; exit  against  r0 = 4; exit.
    let looping = single(
        &[mov64(0, 0), add64(0, 1), jmp(Cond::Lt, 0, 4, -2), exit()],
        vec![],
    );
    let unrolled = single(&[mov64(0, 4), exit()], vec![]);
    assert_equivalent(&looping, &unrolled, 0, "a loop and its result");
    let longer = single(
        &[mov64(0, 0), add64(0, 1), jmp(Cond::Lt, 0, 3, -2), exit()],
        vec![],
    );
    assert_different(&looping, &longer, 0, "a loop with another bound");

    let budget = single(
        &[Instruction::MayGoto { off: 0 }, mov64(0, 2), exit()],
        vec![],
    );
    match check_equivalence(&budget, &budget, 0, &options()) {
        Ok(Equivalence::Unknown(why)) => {
            assert!(why.contains("insn 0") && why.contains("may_goto"), "{why}")
        }
        other => panic!("may_goto: {other:?}"),
    }
    let tracing = single(
        &[call_helper(helper::TRACE_PRINTK), mov64(0, 2), exit()],
        vec![],
    );
    match check_equivalence(&tracing, &tracing, 0, &options()) {
        Ok(Equivalence::Unknown(why)) => {
            assert!(why.contains("insn 0") && why.contains("trace"), "{why}")
        }
        other => panic!("trace output: {other:?}"),
    }

    let no_time = EquivalenceOptions {
        total: Some(Duration::ZERO),
        ..options()
    };
    match check_equivalence(&looping, &unrolled, 0, &no_time) {
        Ok(Equivalence::Unknown(why)) => assert!(why.contains("ran out"), "{why}"),
        other => panic!("a check without time: {other:?}"),
    }
}

#[test]
fn examples_are_equivalent_to_themselves() {
    let examples = linerate_conformance::examples::load_all().expect("examples");
    let programs = linerate_conformance::examples::runnable_programs(&examples);
    // Each program's proof may take its whole budget: two threads halve the wait.
    let verdicts = linerate_testkit::map_in_parallel(&programs, 2, |&(example, program)| {
        let object = &example.object;
        let name = format!("{}:{}", example.name(), object.programs[program].name);
        let started = Instant::now();
        // Each program gets 5 s in all: the suite's time is budgeted, and a program the checker
        // cannot decide in that time counts as unknown (the assertion below needs ten proofs;
        // bench/optimize times whole-program proofs).
        let options = EquivalenceOptions {
            timeout: Some(Duration::from_secs(5)),
            max_paths: 40,
            total: Some(Duration::from_secs(5)),
        };
        match check_equivalence(object, object, program, &options) {
            Ok(Equivalence::Equivalent { paths }) => {
                let secs = started.elapsed().as_secs_f64();
                eprintln!("{name}: equivalent, {paths} paths, {secs:.2} s");
                (name, true)
            }
            Ok(Equivalence::Different(cex)) => {
                panic!("{name}: differs from itself on {cex:?}")
            }
            Ok(Equivalence::Unknown(why)) => {
                eprintln!("{name}: unknown: {why}");
                (name, false)
            }
            Err(e) => panic!("{name}: {e}"),
        }
    });
    let (proven, unknown): (Vec<_>, Vec<_>) = verdicts.iter().partition(|(_, proven)| *proven);
    let proven: Vec<&str> = proven.iter().map(|(name, _)| name.as_str()).collect();
    eprintln!("{} proven, {} unknown", proven.len(), unknown.len());
    assert!(proven.len() >= 10, "only {proven:?} proven");
}

/// Single-slot mutations of a program: each conditional jump's immediate plus one, each
/// `r0 = imm` with another action.
fn mutations(object: &Object, program: usize) -> Vec<(usize, Object)> {
    let mut out = Vec::new();
    for (slot, insn) in object.programs[program].decode().expect("decode") {
        let mutated = match insn {
            Instruction::Jump {
                wide,
                cond,
                dst,
                src: Operand::Imm(imm),
                off,
            } => Instruction::Jump {
                wide,
                cond,
                dst,
                src: Operand::Imm(imm.wrapping_add(1)),
                off,
            },
            Instruction::Alu {
                wide,
                op: AluOp::Mov,
                dst: 0,
                src: Operand::Imm(imm),
            } => Instruction::Alu {
                wide,
                op: AluOp::Mov,
                dst: 0,
                src: Operand::Imm(if imm == 2 { 1 } else { 2 }),
            },
            _ => continue,
        };
        let raw = mutated.encode();
        if raw.len() != 1 {
            continue;
        }
        let mut candidate = object.clone();
        candidate.programs[program].insns[slot] = raw[0];
        out.push((slot, candidate));
    }
    out
}

/// Mutations of examples: where the interpreter sees a crafted packet's outcome change, the
/// check must find a counterexample; every counterexample found must replay differently.
#[test]
fn example_mutations_are_found_different() {
    let (mut found, mut tried, mut unknown, mut variants_checked) = (0, 0, 0, 0);
    for name in [
        "xdp_core.o",
        "xdp_filter.o",
        "xdp_ipip.o",
        "xdp_legacy_prog.o",
        "xdp_router.o",
        "xdp_redirect.o",
        "xdp_reflector.o",
        "xdp_v4_ops.o",
        "xdp_jumbo.o",
        "xdp_legacy_maps.o",
        "xdp_rodata_config.o",
        "xdp_global_funcs.o",
        "xdp_flow_huge.o",
    ] {
        let path = linerate_conformance::examples::examples_dir().join(name);
        let example = linerate_conformance::examples::load(&path).expect("example");
        let (object, program) = (&example.object, example.entry);
        // The crafted packets and, to test claims of equivalence beyond them, variants with one
        // byte changed (to a neighbouring or a random value).
        let crafted: Vec<Vec<u8>> = example
            .packet_bytes()
            .into_iter()
            .filter(|p| p.len() as u64 <= MAX_DATA)
            .collect();
        let mut rng = StdRng::seed_from_u64(7);
        let mut variants = Vec::new();
        for p in &crafted {
            for _ in 0..16 {
                let mut v = p.clone();
                let i = rng.gen_range(0..v.len());
                v[i] = match rng.gen_range(0..3) {
                    0 => v[i].wrapping_add(1),
                    1 => v[i].wrapping_sub(1),
                    _ => rng.gen(),
                };
                variants.push(v);
            }
        }
        // `None` where a run faults: a mutation the verifier would refuse (an access out of
        // bounds), which the check assumes away.
        let observe_on = |o: &Object, packets: &[Vec<u8>]| -> Option<Vec<Observed>> {
            let mut driver = Driver::new(o, &example.seed, VmOptions::default(), MapMode::Fresh)
                .expect("driver");
            packets
                .iter()
                .map(|p| {
                    let run = driver.run(program, p, &[]).ok()?;
                    Some(observed(run, driver.maps()))
                })
                .collect()
        };
        // The engine's packets are single-buffer, at most `MAX_DATA` bytes: longer ones
        // (multi-buffer) are outside what the proof covers.
        let observe = |o: &Object| observe_on(o, &crafted);
        let expected = observe(object).expect("the example runs");
        for (slot, candidate) in mutations(object, program) {
            let what = format!("{name} insn {slot} mutated");
            let Some(observed) = observe(&candidate) else {
                continue;
            };
            let visibly = observed != expected;
            tried += 1;
            match check_equivalence(object, &candidate, program, &options()) {
                Ok(Equivalence::Different(cex)) => {
                    let (a, b) = (
                        replay(object, program, &cex),
                        replay(&candidate, program, &cex),
                    );
                    assert!(
                        a != b,
                        "{what}: a counterexample ({} bytes, differs in {:?}) gives equal outcomes",
                        cex.packet.len(),
                        cex.differs
                    );
                    found += 1;
                }
                // A claim of equivalence must hold on the crafted packets; unknown claims
                // nothing (a mutation the verifier would refuse, say).
                Ok(verdict @ Equivalence::Equivalent { .. }) => {
                    assert!(
                        !visibly,
                        "{what}: crafted packets differ, check says {verdict:?}"
                    );
                    // Where the original faults on a variant, so may the candidate.
                    if let Some(before) = observe_on(object, &variants) {
                        assert_eq!(
                            Some(before),
                            observe_on(&candidate, &variants),
                            "{what}: proven equivalent, a variant packet differs"
                        );
                        variants_checked += variants.len();
                    }
                }
                Ok(Equivalence::Unknown(why)) => {
                    eprintln!("{what}: unknown: {why}");
                    unknown += 1
                }
                Err(e) => panic!("{what}: {e}"),
            }
        }
    }
    eprintln!(
        "{found} of {tried} mutations found different, {unknown} unknown; the others' \
         equivalence held on {variants_checked} variant packets"
    );
    assert!(found >= 60, "only {found} mutations found different");
}

/// Outputs of `linerate optimize` on examples (`tests/data/optimized/NAME.o`, written by
/// `target/release/linerate optimize examples/NAME.o -o crates/smt/tests/data/optimized/NAME.o
/// --budget 10 --seed 1`): each is proven equivalent to its input.
#[test]
fn optimizer_outputs_are_equivalent() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/optimized");
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .expect("tests/data/optimized")
        .map(|e| e.expect("entry").path())
        .filter(|p| p.extension().is_some_and(|x| x == "o"))
        .collect();
    files.sort();
    assert!(!files.is_empty());
    for path in files {
        let name = path
            .file_name()
            .unwrap_or_default()
            .to_string_lossy()
            .into_owned();
        let input = linerate_conformance::examples::examples_dir().join(&name);
        let example = linerate_conformance::examples::load(&input).expect("example");
        let optimized = linerate_bpf::read_object_file(&path).expect("optimized object");
        let program = example.entry;
        let (before, after) = (
            example.object.programs[program].insns.len(),
            optimized.programs[program].insns.len(),
        );
        let started = Instant::now();
        let paths = assert_equivalent(&example.object, &optimized, program, &name);
        let secs = started.elapsed().as_secs_f64();
        eprintln!("{name}: {before} -> {after} slots, equivalent, {paths} paths, {secs:.2} s");
    }
}

/// `EQUIV_EXAMPLE=NAME.o cargo test --release -p linerate-smt --test it equivalence:: -- --ignored
/// one_example --nocapture`: one example against itself (and against its optimized output in
/// `tests/data/optimized` where there is one), with the time taken.
#[test]
#[ignore]
fn one_example() {
    let Ok(name) = std::env::var("EQUIV_EXAMPLE") else {
        return;
    };
    let path = linerate_conformance::examples::examples_dir().join(&name);
    let example = linerate_conformance::examples::load(&path).expect("example");
    let optimized = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data/optimized")
        .join(&name);
    let optimized = linerate_bpf::read_object_file(&optimized).ok();
    let max_paths = std::env::var("EQUIV_MAX_PATHS")
        .ok()
        .and_then(|m| m.parse().ok())
        .unwrap_or(options().max_paths);
    let options = EquivalenceOptions {
        max_paths,
        ..options()
    };
    for program in example.runnable_programs() {
        for candidate in std::iter::once(&example.object).chain(optimized.as_ref()) {
            let started = Instant::now();
            let verdict = check_equivalence(&example.object, candidate, program, &options);
            let secs = started.elapsed().as_secs_f64();
            eprintln!("{name}:{program}: {verdict:?} in {secs:.2} s");
        }
    }
}
