//! bench/contend: does a memory competitor on the other core slow an XDP NF on this one?
//!
//! `xdp_flow_huge` (a per-flow hash table) is fed packet sets of growing flow counts by the
//! traffic driver, alone and beside `membench` settings on CPU 1; each cell is the NF's own ns
//! per packet (driver subtracted) and its drop against running alone in the same run.

use linerate_contend::driver::{pass_object, Timing, TrafficDriver};
use linerate_contend::host::udp_frame;
use linerate_contend::membench::{MemBench, Pattern};
use linerate_contend::pin::available_cpus;
use linerate_kernel::{load_object, usable_or_skip};
use std::path::Path;

fn main() {
    if !usable_or_skip("bench/contend") {
        return;
    }
    if available_cpus() < 2 {
        println!("bench/contend: needs two CPUs, this machine offers one");
        return;
    }
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/xdp_flow_huge.o");
    let object = linerate_bpf::read_object_file(&path).expect("example reads");
    let pass = pass_object().expect("pass loads");
    let competitors = [
        (
            "stream 256 MiB",
            MemBench {
                working_set: 256 << 20,
                pattern: Pattern::Stream,
                rate: 0.0,
                cpu: 1,
            },
        ),
        (
            "stream 2 GiB",
            MemBench {
                working_set: 2 << 30,
                pattern: Pattern::Stream,
                rate: 0.0,
                cpu: 1,
            },
        ),
        (
            "chase 256 MiB",
            MemBench {
                working_set: 256 << 20,
                pattern: Pattern::Chase,
                rate: 0.0,
                cpu: 1,
            },
        ),
        (
            "chase 2 MiB",
            MemBench {
                working_set: 2 << 20,
                pattern: Pattern::Chase,
                rate: 0.0,
                cpu: 1,
            },
        ),
    ];
    let timing = Timing {
        trials: 11,
        short: 2_000,
        long: 22_000,
    };
    println!(
        "{:>9} {:>12} {:>10} {:>8} {:>14}",
        "flows", "competitor", "ns/packet", "drop", "competitor GB/s"
    );
    for flows in [1_000u32, 30_000, 1_000_000, 4_000_000] {
        let set: Vec<Vec<u8>> = (0..flows).map(|flow| udp_frame(flow, 64)).collect();
        let driver = TrafficDriver::new(&set).expect("driver loads");
        let nf = load_object(&object).expect("NF loads");
        driver.attach(&nf, 0).expect("attaches");
        // One pass inserts every flow; timings then see a table of `flows` entries.
        driver.run(flows).expect("warm-up pass");
        let solo = driver.nf_ns(&nf, 0, &pass, timing).expect("times").nf();
        println!(
            "{flows:>9} {:>12} {solo:>10.1} {:>8} {:>14}",
            "none", "", ""
        );
        for (name, bench) in competitors {
            let running = bench.start().expect("competitor starts");
            let ns = driver.nf_ns(&nf, 0, &pass, timing).expect("times").nf();
            let achieved = running.stop().expect("competitor stops");
            println!(
                "{flows:>9} {name:>12} {ns:>10.1} {:>7.1}% {:>14.2}",
                (ns - solo) / ns * 100.0,
                achieved.bandwidth() / 1e9
            );
        }
    }
}
