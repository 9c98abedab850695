//! Huge maps in both engines: the 2^25-counter count-min sketch (`examples/xdp_cms_huge.o`) and
//! the ten-million-entry flow table (`examples/xdp_flow_huge.o`) seeded with 100,000 flows give
//! the same actions and the same map contents in the interpreter as in the kernel, with the
//! kernel's maps read back in bulk (`LoadedObject::contents`) and the interpreter's arrays sparse.

use linerate_bpf::contents::{MapMode, MapSeed};
use linerate_conformance::examples::{examples_dir, load, Example};
use linerate_conformance::flows::{flow_key, seeded_source, udp_frame};
use linerate_kernel::usable_or_skip;
use linerate_vm::VmOptions;

const SEEDED_FLOWS: u32 = 100_000;

fn example(name: &str) -> Example {
    load(&examples_dir().join(format!("{name}.o"))).expect("example loads")
}

/// Runs `packets` in both engines with maps persisting; returns the final maps after checking
/// that every packet's action and output agree.
fn run_both(
    example: &Example,
    seed: &MapSeed,
    packets: &[Vec<u8>],
) -> (linerate_bpf::contents::MapContents, Vec<u64>) {
    let obj = &example.object;
    let kernel = linerate_kernel::drive::run_packets(
        obj,
        seed,
        MapMode::Persist,
        example.entry,
        packets,
        &[],
        1,
    )
    .expect("kernel runs the example");
    let vm = linerate_vm::drive::run_packets(
        obj,
        seed,
        VmOptions::default(),
        MapMode::Persist,
        example.entry,
        packets,
        &[],
    )
    .expect("interpreter runs the example");
    let actions: Vec<u64> = vm.outcomes.iter().map(|o| o.return_value).collect();
    let kernel_actions: Vec<u64> = kernel.outcomes.iter().map(|o| o.retval as u64).collect();
    assert_eq!(actions, kernel_actions, "actions");
    for (i, (ours, theirs)) in vm.outcomes.iter().zip(&kernel.outcomes).enumerate() {
        assert_eq!(ours.packet, theirs.packet, "packet {i} output");
    }
    assert_eq!(vm.initial_maps, kernel.initial_maps, "seeded maps");
    for (m, (ours, theirs)) in vm.final_maps.iter().zip(&kernel.final_maps).enumerate() {
        assert!(
            ours == theirs,
            "map `{}`: {} entries in the interpreter, {} in the kernel",
            obj.maps[m].name,
            ours.len(),
            theirs.len()
        );
    }
    (vm.final_maps, actions)
}

#[test]
fn sketch_of_2_pow_25_counters_agrees() {
    if !usable_or_skip("huge_maps::sketch_of_2_pow_25_counters_agrees") {
        return;
    }
    let example = example("xdp_cms_huge");
    assert_eq!(example.object.maps[0].max_entries, 1 << 25);
    // The crafted packets three times: the heavy flow is dropped every time, the warm flow
    // crosses the threshold on its second packet.
    let packets: Vec<Vec<u8>> = (0..3).flat_map(|_| example.packet_bytes()).collect();
    let (maps, actions) = run_both(&example, &example.seed, &packets);
    let crafted = example.packets.len();
    assert_eq!(actions[0], 1, "heavy flow dropped");
    assert_eq!(actions[2], 2, "warm flow passes once");
    assert_eq!(actions[crafted + 2], 1, "warm flow dropped the second time");
    // Every counter the packets touched and every seeded one is listed, the last index too.
    let last = ((1u32 << 25) - 1).to_le_bytes().to_vec();
    assert!(maps[0]
        .iter()
        .any(|(k, v)| *k == last && *v == [7, 0, 0, 0]));
    let seeded = example.seed.len();
    assert!(maps[0].len() > seeded, "{} counters", maps[0].len());
}

#[test]
fn flow_table_seeded_with_100k_flows_agrees() {
    if !usable_or_skip("huge_maps::flow_table_seeded_with_100k_flows_agrees") {
        return;
    }
    let example = example("xdp_flow_huge");
    let flows = example
        .object
        .maps
        .iter()
        .position(|m| m.name == "flows")
        .expect("flows map");
    assert_eq!(example.object.maps[flows].max_entries, 10_000_000);
    let server = [10, 9, 9, 9];
    let mut seed = MapSeed::new();
    for i in 0..SEEDED_FLOWS {
        let (src, sport) = seeded_source(i);
        let mut value = Vec::with_capacity(24);
        value.extend(u64::from(i).to_le_bytes());
        value.extend((u64::from(i) * 64).to_le_bytes());
        value.extend(u32::from(i % 1000 == 0).to_le_bytes());
        value.extend(0u32.to_le_bytes());
        seed.push(flows, flow_key(src, server, sport, 53, 17), value);
    }
    // Seeded flows (every 1000th blocked), then flows never seen.
    let mut packets: Vec<Vec<u8>> = (0..SEEDED_FLOWS)
        .step_by(997)
        .map(|i| {
            let (src, sport) = seeded_source(i);
            udp_frame(src, server, sport, 53)
        })
        .collect();
    let old = packets.len();
    packets.extend((0..50u16).map(|i| udp_frame([192, 0, 2, 1], server, 5000 + i, 53)));
    let (maps, actions) = run_both(&example, &seed, &packets);
    assert_eq!(actions[0], 1, "flow 0 is blocked");
    assert_eq!(actions[1], 2, "flow 997 passes");
    assert_eq!(maps[flows].len(), SEEDED_FLOWS as usize + 50);
    let (src, sport) = seeded_source(997);
    let key = flow_key(src, server, sport, 53, 17);
    let value = &maps[flows]
        .iter()
        .find(|(k, _)| *k == key)
        .expect("flow 997 listed")
        .1;
    assert_eq!(
        value[..8],
        998u64.to_le_bytes(),
        "its packet count grew by one"
    );
    assert!(old > 100);
}
