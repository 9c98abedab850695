//! The -Os baselines (`examples/os/NAME.o`, `make -C examples os`), which the optimizer's
//! benchmark compares against beside the committed -O2 objects: there is one for every example,
//! each loads in the kernel, gets its example's crafted verdicts and agrees with the interpreter
//! on the example's packets, their mutations and random frames, like the examples themselves.

use linerate_conformance::differential::{check_example, check_verdicts};
use linerate_conformance::examples::{examples_dir, load_all, load_with_inputs};
use linerate_kernel::usable_or_skip;

#[test]
fn every_example_has_an_os_baseline_that_agrees_with_the_kernel() {
    if !usable_or_skip("-Os baseline differential test") {
        return;
    }
    let examples = load_all().expect("example corpus");
    let mut failures = Vec::new();
    for example in &examples {
        let name = example.name();
        let path = examples_dir().join("os").join(&name);
        let baseline = match load_with_inputs(&path, &example.path) {
            Ok(b) => b,
            Err(e) => {
                failures.push(format!("os/{name}: {e}"));
                continue;
            }
        };
        let (checked, wrong) = check_verdicts(&baseline, true);
        failures.extend(wrong.into_iter().map(|w| format!("os/{name}: {w}")));
        match check_example(&baseline) {
            Ok(n) => eprintln!("os/{name}: {checked} verdicts checked, {n} packet runs agree"),
            Err(e) => failures.push(format!("os/{name}: {e}")),
        }
    }
    assert!(
        failures.is_empty(),
        "{} failures over {} -Os baselines:\n{}",
        failures.len(),
        examples.len(),
        failures.join("\n")
    );
}
