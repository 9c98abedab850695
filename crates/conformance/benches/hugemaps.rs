//! Runs with huge maps, in the kernel and in the interpreter, next to the old per-element
//! read-back measured in the same invocation.
//!
//! Part 1, whole runs: `examples/xdp_cms_huge.o` (2^25 counters) on its seed and 1,000 packets of
//! distinct flows, and `examples/xdp_flow_huge.o` (a 10-million-entry hash) seeded with 100,000
//! flows, on 1,000 packets of seeded and new flows. Per engine: loading and seeding, running the
//! packets, reading every map before and after (what `linerate run` does), the total, the
//! entries listed, and for the interpreter the bytes of value pages it allocated.
//!
//! Part 2, read-back alone: one kernel map read element by element (`LoadedObject::entries`, two
//! system calls per element, what `run --kernel` did before) against the bulk read
//! (`LoadedObject::contents`: a mapping for arrays, batch lookups for hashes). The per-element
//! read of a 2^25-element array takes minutes, so it is measured on 2^18 elements and
//! extrapolated linearly (it is one system-call pair per element), and said so.
//!
//! Run with `bench/hugemaps` or `cargo bench -p linerate-conformance --bench hugemaps`.

use std::time::Instant;

use linerate_bpf::contents::{normalize_entries, MapContents, MapMode, MapSeed};
use linerate_bpf::insn::build;
use linerate_bpf::{MapDef, MapType, Object};
use linerate_conformance::examples::{examples_dir, load, Example};
use linerate_conformance::flows::{flow_key, seeded_source, udp_frame};
use linerate_testkit::XorShift;
use linerate_vm::VmOptions;

const PACKETS: usize = 1000;
const SEEDED_FLOWS: u32 = 100_000;
/// Elements of the array whose per-element read-back is measured and extrapolated.
const BASELINE_ARRAY: u32 = 1 << 18;
const HUGE_ARRAY: u32 = 1 << 25;

fn secs(start: Instant) -> f64 {
    start.elapsed().as_secs_f64()
}

/// The flow table's seed: `SEEDED_FLOWS` flows to 10.9.9.9:53.
fn flow_seed(flows: usize) -> MapSeed {
    let mut seed = MapSeed::new();
    for i in 0..SEEDED_FLOWS {
        let (src, sport) = seeded_source(i);
        let key = flow_key(src, [10, 9, 9, 9], sport, 53, 17);
        let mut value = vec![0u8; 24];
        value[..8].copy_from_slice(&u64::from(i).to_le_bytes());
        seed.push(flows, key, value);
    }
    seed
}

struct Phases {
    load: f64,
    packets: f64,
    readback: f64,
    listed: usize,
    pages: Option<usize>,
}

fn listed(maps: &MapContents) -> usize {
    maps.iter().map(Vec::len).sum()
}

fn kernel_run(example: &Example, seed: &MapSeed, packets: &[Vec<u8>]) -> Phases {
    let start = Instant::now();
    let mut driver =
        linerate_kernel::drive::Driver::new(&example.object, seed, MapMode::Persist).expect("load");
    let load = secs(start);
    let start = Instant::now();
    let initial = driver.maps().expect("maps");
    let mut readback = secs(start);
    let start = Instant::now();
    for p in packets {
        driver.run(example.entry, p, &[], 1).expect("run");
    }
    let packets = secs(start);
    let start = Instant::now();
    let fin = driver.maps().expect("maps");
    readback += secs(start);
    assert!(listed(&initial) > 0);
    Phases {
        load,
        packets,
        readback,
        listed: listed(&fin),
        pages: None,
    }
}

fn vm_run(example: &Example, seed: &MapSeed, packets: &[Vec<u8>]) -> Phases {
    let start = Instant::now();
    let mut driver = linerate_vm::drive::Driver::new(
        &example.object,
        seed,
        VmOptions::default(),
        MapMode::Persist,
    )
    .expect("build");
    let load = secs(start);
    let start = Instant::now();
    let initial = driver.maps();
    let mut readback = secs(start);
    let start = Instant::now();
    for p in packets {
        driver.run(example.entry, p, &[]).expect("run");
    }
    let packets = secs(start);
    let start = Instant::now();
    let fin = driver.maps();
    readback += secs(start);
    assert!(listed(&initial) > 0);
    let pages = driver
        .vm()
        .maps
        .iter()
        .map(|m| m.slab.allocated_bytes())
        .sum();
    Phases {
        load,
        packets,
        readback,
        listed: listed(&fin),
        pages: Some(pages),
    }
}

fn print_run(name: &str, engine: &str, p: &Phases) {
    let pages = p.pages.map_or("-".to_string(), |b| {
        format!("{:.1} MiB", b as f64 / (1 << 20) as f64)
    });
    println!(
        "{name:<34} {engine:<7} {:>9.3} {:>9.3} {:>10.3} {:>8.3} {:>8} {:>12}",
        p.load,
        p.packets,
        p.readback,
        p.load + p.packets + p.readback,
        p.listed,
        pages
    );
}

/// A loaded object holding `def` (with a trivial program) and `fill` written into it.
fn loaded_map(def: MapDef, fill: &[(Vec<u8>, Vec<u8>)]) -> linerate_kernel::LoadedObject {
    let obj = Object::single("xdp_pass", &[build::mov64(0, 2), build::exit()], vec![def]);
    let loaded = linerate_kernel::load_object(&obj).expect("load");
    for (k, v) in fill {
        loaded.update(0, k, v).expect("update");
    }
    loaded
}

/// Seconds of the per-element and of the bulk read-back of map 0, checking they agree.
fn readbacks(loaded: &linerate_kernel::LoadedObject) -> (f64, f64) {
    let def = loaded.map_def(0).expect("map").clone();
    let start = Instant::now();
    let old = normalize_entries(&def, loaded.entries(0).expect("entries"));
    let per_element = secs(start);
    let start = Instant::now();
    let bulk = loaded.contents(0).expect("contents");
    let bulk_time = secs(start);
    assert_eq!(old, bulk, "per-element and bulk read-back agree");
    (per_element, bulk_time)
}

fn main() {
    if !linerate_kernel::usable_or_skip("bench/hugemaps") {
        return;
    }
    let dir = examples_dir();
    let cms = load(&dir.join("xdp_cms_huge.o")).expect("xdp_cms_huge");
    let flow = load(&dir.join("xdp_flow_huge.o")).expect("xdp_flow_huge");
    let mut rng = XorShift::new(0x6875_6765);
    let random_flows: Vec<Vec<u8>> = (0..PACKETS)
        .map(|_| {
            let r = rng.next_u64();
            udp_frame(
                [10, (r >> 8) as u8, (r >> 16) as u8, (r >> 24) as u8],
                [10, 0, 0, 1],
                (r >> 32) as u16,
                53,
            )
        })
        .collect();
    let mut cms_packets = cms.packet_bytes();
    cms_packets.extend(
        random_flows
            .iter()
            .take(PACKETS - cms_packets.len())
            .cloned(),
    );
    let flows = flow
        .object
        .maps
        .iter()
        .position(|m| m.name == "flows")
        .expect("flows map");
    let flow_seed = flow_seed(flows);
    let flow_packets: Vec<Vec<u8>> = (0..PACKETS as u32)
        .map(|i| {
            if i % 2 == 0 {
                let (src, sport) = seeded_source(i * 97 % SEEDED_FLOWS);
                udp_frame(src, [10, 9, 9, 9], sport, 53)
            } else {
                random_flows[i as usize].clone()
            }
        })
        .collect();

    println!("runs (seconds; read-back = every map before and after, as `linerate run` reads)");
    println!(
        "{:<34} {:<7} {:>9} {:>9} {:>10} {:>8} {:>8} {:>12}",
        "example", "engine", "load+seed", "packets", "read-back", "total", "listed", "vm pages"
    );
    let cms_name = format!("xdp_cms_huge (2^25, {PACKETS} pkts)");
    print_run(
        &cms_name,
        "kernel",
        &kernel_run(&cms, &cms.seed, &cms_packets),
    );
    print_run(&cms_name, "vm", &vm_run(&cms, &cms.seed, &cms_packets));
    let flow_name = "xdp_flow_huge (10M, 100k seeded)";
    print_run(
        flow_name,
        "kernel",
        &kernel_run(&flow, &flow_seed, &flow_packets),
    );
    print_run(flow_name, "vm", &vm_run(&flow, &flow_seed, &flow_packets));

    println!();
    println!("kernel read-back of one map (seconds): per element (baseline) vs bulk");
    println!(
        "{:<42} {:>12} {:>10} {:>9}",
        "map", "per-element", "bulk", "speed-up"
    );
    let fill: Vec<(Vec<u8>, Vec<u8>)> = (0..1000u32)
        .map(|i| {
            (
                (i * 251 % BASELINE_ARRAY).to_le_bytes().to_vec(),
                (i + 1).to_le_bytes().to_vec(),
            )
        })
        .collect();
    let small = loaded_map(
        MapDef::new("small", MapType::ARRAY, 4, 4, BASELINE_ARRAY),
        &fill,
    );
    let (old_small, new_small) = readbacks(&small);
    drop(small);
    println!(
        "{:<42} {old_small:>12.3} {new_small:>10.4} {:>8.0}x",
        "array 2^18 x u32, 1000 non-zero",
        old_small / new_small
    );
    let huge = loaded_map(MapDef::new("huge", MapType::ARRAY, 4, 4, HUGE_ARRAY), &fill);
    let start = Instant::now();
    let bulk = huge.contents(0).expect("contents");
    let new_huge = secs(start);
    assert_eq!(bulk.len(), fill.len());
    drop(huge);
    let old_huge = old_small * f64::from(HUGE_ARRAY / BASELINE_ARRAY);
    println!(
        "{:<42} {:>12} {new_huge:>10.4} {:>8.0}x",
        "array 2^25 x u32, 1000 non-zero",
        format!("~{old_huge:.0} (extr.)"),
        old_huge / new_huge
    );
    let flows_def = flow.object.maps[flows].clone();
    let flows_fill: Vec<(Vec<u8>, Vec<u8>)> = flow_seed
        .entries()
        .iter()
        .map(|e| (e.key.clone(), e.value.clone()))
        .collect();
    let table = loaded_map(flows_def, &flows_fill);
    let (old_hash, new_hash) = readbacks(&table);
    println!(
        "{:<42} {old_hash:>12.3} {new_hash:>10.4} {:>8.0}x",
        "hash 10M max, 100k entries",
        old_hash / new_hash
    );
}
