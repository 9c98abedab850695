//! Differential test: every example program gives the same action, output packet, metadata,
//! ring-buffer and perf records and map contents in the interpreter as in this host's kernel,
//! packet after packet.
//!
//! Each example runs on its crafted packets (`examples/NAME.packets`, written to reach every
//! branch) followed by mutations of them and random frames, at least 200 packets in all (frames
//! of frags-aware programs are also extended by up to two fragment pages), with the
//! maps seeded from `examples/NAME.maps.json` when present. Maps persist from packet to packet in
//! both engines, so stateful programs are compared on their state too.

use linerate_conformance::differential::check_example;
use linerate_conformance::examples::load_all;
use linerate_kernel::usable_or_skip;

#[test]
fn interpreter_agrees_with_kernel_on_every_example() {
    if !usable_or_skip("example differential test") {
        return;
    }
    let examples = load_all().expect("example corpus");
    assert!(
        examples.len() >= 12,
        "expected the example corpus, found {}",
        examples.len()
    );
    let mut failures = Vec::new();
    for example in &examples {
        match check_example(example) {
            Ok(n) => eprintln!("{}: {n} packet runs agree", example.name()),
            Err(e) => failures.push(e),
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} examples disagree:\n{}",
        failures.len(),
        examples.len(),
        failures.join("\n")
    );
}
