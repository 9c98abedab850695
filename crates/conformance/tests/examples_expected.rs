//! Every crafted packet of every example gets the verdict its author wrote down, in the
//! interpreter and in the kernel.
//!
//! Expectations hold for freshly seeded maps, so each packet runs against a new interpreter and a
//! newly loaded kernel object.

use linerate_bpf::contents::MapMode;
use linerate_conformance::examples::load_all;
use linerate_kernel::usable_or_skip;
use linerate_vm::drive::Driver;
use linerate_vm::{xdp_action_name, VmOptions};

#[test]
fn crafted_packets_get_their_expected_verdicts() {
    let kernel = usable_or_skip("crafted_packets_get_their_expected_verdicts, kernel half");
    let mut failures = Vec::new();
    let mut checked = 0;
    for example in load_all().expect("example corpus") {
        let obj = &example.object;
        let mut vm = Driver::new(obj, &example.seed, VmOptions::default(), MapMode::Fresh)
            .expect("interpreter accepts example");
        let mut loaded = kernel.then(|| {
            linerate_kernel::drive::Driver::new(obj, &example.seed, MapMode::Fresh)
                .expect("kernel loads example")
        });
        for packet in &example.packets {
            let at = format!(
                "{}:{}",
                example.path.with_extension("packets").display(),
                packet.line
            );
            match vm.run(example.entry, &packet.bytes, &[]) {
                Ok(out) if xdp_action_name(out.return_value) == packet.expected_action => {}
                Ok(out) => failures.push(format!(
                    "{at}: interpreter gave {}, expected {}",
                    xdp_action_name(out.return_value),
                    packet.expected_action
                )),
                Err(err) => failures.push(format!("{at}: interpreter failed: {err}")),
            }
            if let Some(loaded) = &mut loaded {
                let out = loaded
                    .run(example.entry, &packet.bytes, &[], 1)
                    .expect("test run");
                let action = xdp_action_name(out.retval as u64);
                if action != packet.expected_action {
                    failures.push(format!(
                        "{at}: kernel gave {action}, expected {}",
                        packet.expected_action
                    ));
                }
            }
            checked += 1;
        }
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
