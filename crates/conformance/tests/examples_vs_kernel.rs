//! Differential test: every example program gives the same action, output packet, metadata,
//! ring-buffer and perf records and map contents in the interpreter as in this host's kernel,
//! packet after packet.
//!
//! Each example runs on its crafted packets (`examples/NAME.packets`, written to reach every
//! branch) followed by mutations of them and random frames, at least 200 packets in all, with the
//! maps seeded from `examples/NAME.maps.json` when present. Maps persist from packet to packet in
//! both engines, so stateful programs are compared on their state too.

use linerate_bpf::contents::MapMode;
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
            1 => p.extend((0..rng.below(64)).map(|_| rng.next_u64() as u8)),
            _ => {
                for _ in 0..1 + rng.below(3) {
                    let at = rng.below(p.len());
                    p[at] ^= 1 << rng.below(8);
                }
            }
        }
        p.truncate(p.len().max(14));
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
    for program in 0..obj.programs.len() {
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
