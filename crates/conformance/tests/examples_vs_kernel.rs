//! Differential test: every example program gives the same action, output packet, metadata,
//! ring-buffer and perf records and map contents in the interpreter as in this host's kernel,
//! packet after packet.
//!
//! Each example runs on its crafted packets (`examples/NAME.packets`, written to reach every
//! branch) followed by mutations of them and random frames, at least 200 packets in all (frames
//! of frags-aware programs are also extended by up to two fragment pages), with the
//! maps seeded from `examples/NAME.maps.json` when present. Maps persist from packet to packet in
//! both engines, so stateful programs are compared on their state too.

use linerate_bpf::contents::MapMode;
use linerate_bpf::facts::test_run_buffer::{FRAG_SIZE, MAX_PACKET};
use linerate_bpf::ProgramKind;
use linerate_conformance::examples::{load_all, Example};
use linerate_io::to_hex as hex;
use linerate_kernel::usable_or_skip;
use linerate_testkit::XorShift;
use linerate_vm::drive::Driver;
use linerate_vm::VmOptions;

const MIN_PACKETS: usize = 200;

/// Crafted packets, then mutations of them (byte flips, truncations, extensions) and random
/// frames, up to at least [`MIN_PACKETS`].
fn packets_for(example: &Example) -> Vec<Vec<u8>> {
    let crafted = example.packet_bytes();
    // Programs written for multi-buffer packets get extensions across fragment boundaries.
    let extension = if example.object.programs.iter().any(|p| p.has_frags()) {
        2 * FRAG_SIZE as usize
    } else {
        64
    };
    let mut rng = XorShift::new(0x9e37_79b9_7f4a_7c15 ^ crafted.len() as u64);
    let mut packets = crafted.clone();
    while packets.len() < MIN_PACKETS {
        let mut p = if crafted.is_empty() || rng.below(5) == 0 {
            (0..14 + rng.below(186))
                .map(|_| rng.next_u64() as u8)
                .collect()
        } else {
            crafted[rng.below(crafted.len())].clone()
        };
        match rng.below(4) {
            0 => p.truncate(14 + rng.below(p.len().saturating_sub(13).max(1))),
            1 => p.extend((0..rng.below(extension)).map(|_| rng.next_u64() as u8)),
            _ => {
                for _ in 0..1 + rng.below(3) {
                    let at = rng.below(p.len());
                    p[at] ^= 1 << rng.below(8);
                }
            }
        }
        p.truncate(p.len().max(14).min(MAX_PACKET as usize));
        packets.push(p);
    }
    packets
}

fn check_example(example: &Example) -> Result<usize, String> {
    let name = example.name();
    let obj = &example.object;
    let packets = packets_for(example);
    let seed = &example.seed;
    let mut compared = 0;
    check_refusals(example)?;
    for program in example.runnable_programs() {
        let prog_name = &obj.programs[program].name;
        let mut loaded =
            linerate_kernel::drive::Driver::new(obj, seed, MapMode::Persist).map_err(|e| {
                format!(
                    "{name}: kernel refused it: {e}\n{}",
                    e.verifier_log().unwrap_or("")
                )
            })?;
        let mut vm = Driver::new(obj, seed, VmOptions::default(), MapMode::Persist)
            .map_err(|e| format!("{name}: {e}"))?;
        for (i, packet) in packets.iter().enumerate() {
            let kernel = loaded
                .run(program, packet, &[], 1)
                .map_err(|e| format!("{name}/{prog_name} packet {i}: {e}"))?;
            let ours = vm.run(program, packet, &[]).map_err(|e| {
                format!(
                    "{name}/{prog_name} packet {i} ({}): interpreter: {e}",
                    hex(packet)
                )
            })?;
            let where_ = || format!("{name}/{prog_name} packet {i} ({})", hex(packet));
            if ours.return_value != kernel.retval as u64 {
                return Err(format!(
                    "{}: action {} in the interpreter, {} in the kernel",
                    where_(),
                    ours.return_value,
                    kernel.retval
                ));
            }
            if ours.packet != kernel.packet || ours.meta != kernel.meta {
                return Err(format!(
                    "{}: output differs\n  vm:     {} | meta {}\n  kernel: {} | meta {}",
                    where_(),
                    hex(&ours.packet),
                    hex(&ours.meta),
                    hex(&kernel.packet),
                    hex(&kernel.meta)
                ));
            }
            if ours.records != kernel.records {
                let show = |r: &linerate_bpf::records::Records| {
                    r.iter()
                        .map(|m| {
                            let recs: Vec<String> = m.records.iter().map(|b| hex(b)).collect();
                            format!("{}: [{}]", obj.maps[m.map].name, recs.join(", "))
                        })
                        .collect::<Vec<_>>()
                        .join("; ")
                };
                return Err(format!(
                    "{}: records differ\n  vm:     {}\n  kernel: {}",
                    where_(),
                    show(&ours.records),
                    show(&kernel.records)
                ));
            }
            let ours_maps = vm.maps();
            let kernel_maps = loaded.maps().expect("kernel map readable");
            for (m, (a, b)) in ours_maps.iter().zip(&kernel_maps).enumerate() {
                if a != b {
                    return Err(format!(
                        "{}: map `{}` differs\n  vm:     {:?}\n  kernel: {:?}",
                        where_(),
                        obj.maps[m].name,
                        a.iter()
                            .map(|(k, v)| format!("{}={}", hex(k), hex(v)))
                            .collect::<Vec<_>>(),
                        b.iter()
                            .map(|(k, v)| format!("{}={}", hex(k), hex(v)))
                            .collect::<Vec<_>>()
                    ));
                }
            }
            compared += 1;
        }
    }
    Ok(compared)
}

/// An error and its sources, on one line.
fn chain(err: &dyn std::error::Error) -> String {
    let mut text = err.to_string();
    let mut source = err.source();
    while let Some(e) = source {
        text = format!("{text}: {e}");
        source = e.source();
    }
    text
}

/// Programs neither engine runs are refused, by both, for the stated reason: other program kinds
/// by name and kind, the programs the example expects the verifier to refuse by the verifier,
/// each without failing the object's other programs (which `check_example` runs afterwards).
fn check_refusals(example: &Example) -> Result<(), String> {
    let name = example.name();
    let obj = &example.object;
    let packet = example
        .packet_bytes()
        .into_iter()
        .next()
        .unwrap_or(vec![0; 60]);
    for (program, def) in obj.programs.iter().enumerate() {
        let kind = def.kind();
        let expected_refusal = example.refused.contains(&program);
        if kind == ProgramKind::Xdp && !expected_refusal {
            continue;
        }
        let mut kernel = linerate_kernel::drive::Driver::new(obj, &example.seed, MapMode::Persist)
            .map_err(|e| format!("{name}: {e}"))?;
        let mut vm = Driver::new(obj, &example.seed, VmOptions::default(), MapMode::Persist)
            .map_err(|e| format!("{name}: {e}"))?;
        let kernel_err = match kernel.run(program, &packet, &[], 1) {
            Ok(_) => return Err(format!("{name}/{}: the kernel ran it", def.name)),
            Err(e) => e,
        };
        if kind != ProgramKind::Xdp {
            let vm_err = vm.run(program, &packet, &[]).err().map(|e| chain(&e));
            let reason = format!("is a {} program (section {})", kind.name(), def.section);
            let both = [Some(chain(&kernel_err)), vm_err];
            if !both
                .iter()
                .all(|e| e.as_ref().is_some_and(|e| e.contains(&reason)))
            {
                return Err(format!(
                    "{name}/{}: not refused as non-XDP: {both:?}",
                    def.name
                ));
            }
        } else if kernel_err.verifier_log().is_none() {
            return Err(format!(
                "{name}/{}: expected a verifier refusal, got {kernel_err}",
                def.name
            ));
        }
    }
    Ok(())
}

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
