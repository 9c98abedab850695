//! The training corpus (`corpus/train/`, the programs the rewrite-rule library is grown from)
//! against this host's kernel: every program loads, its crafted packets get the verdicts written
//! in `NAME.packets` in both engines, and the interpreter agrees with the kernel on the crafted
//! packets, their mutations and random frames (action, packet, metadata, records, maps), as the
//! examples do in `examples_vs_kernel.rs`.

use linerate_conformance::differential::{check_example, check_verdicts};
use linerate_conformance::examples::{corpus_dir, load_dir};
use linerate_kernel::usable_or_skip;

/// The corpus the brief asks for: at least this many programs.
const MIN_PROGRAMS: usize = 16;

#[test]
fn interpreter_agrees_with_kernel_on_every_corpus_program() {
    if !usable_or_skip("training corpus differential test") {
        return;
    }
    let corpus = load_dir(&corpus_dir()).expect("training corpus");
    assert!(
        corpus.len() >= MIN_PROGRAMS,
        "expected at least {MIN_PROGRAMS} corpus programs, found {}",
        corpus.len()
    );
    let mut failures = Vec::new();
    for program in &corpus {
        assert!(
            !program.packets.is_empty(),
            "{} has no crafted packets",
            program.name()
        );
        let (checked, wrong) = check_verdicts(program, true);
        failures.extend(wrong);
        match check_example(program) {
            Ok(n) => eprintln!(
                "{}: {checked} verdicts checked, {n} packet runs agree",
                program.name()
            ),
            Err(e) => failures.push(e),
        }
    }
    assert!(
        failures.is_empty(),
        "{} failures over {} corpus programs:\n{}",
        failures.len(),
        corpus.len(),
        failures.join("\n")
    );
}
