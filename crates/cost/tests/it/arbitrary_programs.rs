//! Whatever program an input file holds, `inspect`, `cost` under both shipped models and the
//! analyses (regions, packet lengths, loop bounds) answer without panicking, and in debug builds
//! without arithmetic overflow: arbitrary decodable programs
//! (`linerate_conformance::decodable`), verifier-valid random objects with helpers, maps and
//! loops, and every example object with bytes of it mutated. The checks are those of the
//! `commands` fuzz target (`common/commands.rs`, see `fuzz/README.md`), which runs far longer.

#[path = "common/commands.rs"]
mod commands;

use commands::{check_object, Outcome};
use linerate_conformance::decodable::object_from_bytes;
use linerate_conformance::random_program::objects::random_object;
use linerate_cost::model::BUILTIN;
use linerate_cost::Model;
use linerate_testkit::XorShift;
use proptest::prelude::*;
use proptest::test_runner::{Config, TestRunner};

fn models() -> Vec<Model> {
    BUILTIN
        .iter()
        .map(|(target, _)| Model::builtin(target).expect("shipped models load"))
        .collect()
}

fn runner(cases: u32) -> TestRunner {
    TestRunner::new(Config {
        cases,
        failure_persistence: None,
        ..Config::default()
    })
}

fn add(total: &mut Outcome, one: Outcome) {
    total.programs += one.programs;
    total.cfgs += one.cfgs;
    total.loop_bounds += one.loop_bounds;
    total.bounded_loops += one.bounded_loops;
    total.priced += one.priced;
    total.refused += one.refused;
}

#[test]
fn arbitrary_decodable_programs() {
    let models = models();
    let total = std::cell::RefCell::new(Outcome::default());
    // Mode 1 (raw slots) or 2 (structured); mode 0 (files) is `example_objects_mutated`.
    let input =
        (1u8..=2, proptest::collection::vec(any::<u8>(), 0..1200)).prop_map(|(mode, rest)| {
            let mut data = vec![mode];
            data.extend(rest);
            data
        });
    runner(400)
        .run(&input, |data| {
            if let Some(object) = object_from_bytes(&data) {
                add(&mut total.borrow_mut(), check_object(&object, &models));
            }
            Ok(())
        })
        .unwrap();
    let t = total.into_inner();
    println!("{t:?}");
    // The generator must reach the analyses and the pricing, not only the CFG builder's errors.
    assert!(t.cfgs * 4 > t.programs, "{t:?}");
    assert!(
        t.priced > 50 && t.loop_bounds > 20 && t.bounded_loops > 0,
        "{t:?}"
    );
}

#[test]
fn verifier_valid_random_objects() {
    let models = models();
    let total = std::cell::RefCell::new(Outcome::default());
    runner(60)
        .run(&random_object(12), |random| {
            add(
                &mut total.borrow_mut(),
                check_object(&random.object(), &models),
            );
            Ok(())
        })
        .unwrap();
    let t = total.into_inner();
    println!("{t:?}");
    assert_eq!(t.cfgs, t.programs, "{t:?}");
}

#[test]
fn example_objects_mutated() {
    let models = models();
    let dir = linerate_conformance::examples::examples_dir();
    let mut files: Vec<Vec<u8>> = std::fs::read_dir(&dir)
        .expect("examples/")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|e| e == "o"))
        .map(|p| std::fs::read(p).expect("readable example"))
        .collect();
    files.sort();
    assert!(files.len() > 10);
    let mut rng = XorShift::new(0x5eed_c0de);
    let mut total = Outcome::default();
    for (i, file) in files.iter().enumerate() {
        // The object as it is, then a few copies with bytes overwritten.
        for k in 0..4 {
            let mut bytes = file.clone();
            for _ in 0..k * 3 {
                let at = rng.below(bytes.len());
                bytes[at] = [0, 0xff, 0x80, 0x7f, rng.next_u64() as u8][rng.below(5)];
            }
            let mut data = vec![0u8];
            data.extend(bytes);
            if let Some(object) = object_from_bytes(&data) {
                add(&mut total, check_object(&object, &models));
            } else {
                assert!(k > 0, "example {i} does not read");
            }
        }
    }
    println!("{total:?}");
    assert!(total.priced > 0, "{total:?}");
}

/// Runs the checks on fuzzer inputs: `LINERATE_REPLAY=fuzz/artifacts/commands/crash-...
/// cargo test -p linerate-cost --test it arbitrary_programs::replay -- --ignored --nocapture`
/// (several files separated by `:`), printing each object's disassembly and the time taken.
#[test]
#[ignore = "replays the files LINERATE_REPLAY names"]
fn replay() {
    let models = models();
    let files = std::env::var("LINERATE_REPLAY").expect("LINERATE_REPLAY names the inputs");
    for file in files.split(':') {
        let data = std::fs::read(file).expect("readable input");
        let Some(object) = object_from_bytes(&data) else {
            println!("{file}: no object");
            continue;
        };
        for p in &object.programs {
            println!("{}", linerate_bpf::disasm::disassemble(p, &object.maps));
            if let Ok(cfg) = linerate_cfg::Cfg::build(p) {
                println!("{:?}", cfg.summary());
            }
        }
        let start = std::time::Instant::now();
        let outcome = check_object(&object, &models);
        println!("{file}: {outcome:?} in {:?}", start.elapsed());
    }
}
