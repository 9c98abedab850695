//! Every crafted packet of every example gets the verdict its author wrote down, in the
//! interpreter and in the kernel.
//!
//! Expectations hold for freshly seeded maps, so each packet runs against a new interpreter and a
//! newly loaded kernel object.

use linerate_conformance::differential::check_verdicts;
use linerate_conformance::examples::load_all;
use linerate_kernel::usable_or_skip;

#[test]
fn crafted_packets_get_their_expected_verdicts() {
    let kernel = usable_or_skip("crafted_packets_get_their_expected_verdicts, kernel half");
    let mut failures = Vec::new();
    let mut checked = 0;
    for example in load_all().expect("example corpus") {
        let (n, wrong) = check_verdicts(&example, kernel);
        checked += n;
        failures.extend(wrong);
    }
    assert!(checked >= 300, "only {checked} annotated packets found");
    assert!(
        failures.is_empty(),
        "{} of {checked} verdicts wrong:\n{}",
        failures.len(),
        failures.join("\n")
    );
    eprintln!("{checked} crafted packets got their expected verdicts");
}
