//! The differential check of one corpus object against this host's kernel, shared by the
//! example and training-corpus tests: the object's crafted packets followed by mutations of
//! them and random frames run in the interpreter and in the kernel, and every observable
//! outcome (action, output packet, metadata, ring-buffer and perf records, map contents) must
//! agree, packet after packet. Maps persist between packets in both engines, so stateful
//! programs are compared on their state too. Also here: the crafted packets' written-down
//! verdicts, checked in both engines.

use linerate_bpf::contents::MapMode;
use linerate_bpf::facts::test_run_buffer::{FRAG_SIZE, MAX_PACKET};
use linerate_bpf::ProgramKind;
use linerate_io::to_hex as hex;
use linerate_testkit::XorShift;
use linerate_vm::drive::Driver;
use linerate_vm::{xdp_action_name, VmOptions};

use crate::examples::Example;

pub const MIN_PACKETS: usize = 200;

/// Crafted packets, then mutations of them (byte flips, truncations, extensions) and random
/// frames, up to at least [`MIN_PACKETS`].
pub fn packets_for(example: &Example) -> Vec<Vec<u8>> {
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

/// Runs every runnable program of `example` on [`packets_for`] in the interpreter and in the
/// kernel, maps persisting from packet to packet, and compares action, packet, metadata,
/// records and every map after each packet; returns the number of packet runs compared, or the
/// first disagreement.
pub fn check_example(example: &Example) -> Result<usize, String> {
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

/// Runs each crafted packet of `example` against freshly seeded maps (a new interpreter state
/// and, with `kernel`, a newly loaded kernel object per packet) and compares the action with the
/// one its `.packets` file expects; returns the number of packets checked and one line per
/// wrong verdict, naming the packet's file and line.
pub fn check_verdicts(example: &Example, kernel: bool) -> (usize, Vec<String>) {
    let obj = &example.object;
    let mut failures = Vec::new();
    let mut vm = match Driver::new(obj, &example.seed, VmOptions::default(), MapMode::Fresh) {
        Ok(vm) => vm,
        Err(e) => return (0, vec![format!("{}: interpreter: {e}", example.name())]),
    };
    let mut loaded = None;
    if kernel {
        match linerate_kernel::drive::Driver::new(obj, &example.seed, MapMode::Fresh) {
            Ok(k) => loaded = Some(k),
            Err(e) => {
                return (
                    0,
                    vec![format!("{}: kernel refused it: {e}", example.name())],
                )
            }
        }
    }
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
            match loaded.run(example.entry, &packet.bytes, &[], 1) {
                Ok(out) => {
                    let action = xdp_action_name(out.retval as u64);
                    if action != packet.expected_action {
                        failures.push(format!(
                            "{at}: kernel gave {action}, expected {}",
                            packet.expected_action
                        ));
                    }
                }
                Err(e) => failures.push(format!("{at}: test run failed: {e}")),
            }
        }
    }
    (example.packets.len(), failures)
}
