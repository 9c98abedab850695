//! The traffic driver in this kernel: each run feeds the NF the next packet of the set (a flow
//! table NF sees every flow once per pass), an NF's rewrite does not carry over to the next run,
//! and the NF's own time is the total less the driver's.

use linerate_contend::driver::{pass_object, Timing, TrafficDriver};
use linerate_kernel::{load_object, usable_or_skip, LoadedObject};
use std::path::Path;

fn example(name: &str) -> LoadedObject {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../examples")
        .join(name);
    let object = linerate_bpf::read_object_file(&path).expect("example reads");
    load_object(&object).expect("example loads")
}

/// A 64-byte UDP/IPv4 frame of flow `flow`.
fn udp_frame(flow: u32) -> Vec<u8> {
    linerate_contend::host::udp_frame(flow, 64)
}

fn flows_inserted(nf: &LoadedObject) -> u64 {
    let stats = nf.map_index("flow_stats").expect("flow_stats");
    let value = nf
        .lookup(stats, &0u32.to_le_bytes())
        .expect("lookup")
        .expect("array element");
    u64::from_le_bytes(value[..8].try_into().expect("8 bytes"))
}

#[test]
fn every_run_takes_the_next_packet_of_the_set() {
    if !usable_or_skip("contend driver_kernel") {
        return;
    }
    let set: Vec<Vec<u8>> = (0..1000).map(udp_frame).collect();
    let driver = TrafficDriver::new(&set).expect("driver loads");
    let nf = example("xdp_flow_huge.o");
    driver.attach(&nf, 0).expect("attaches");
    // 2.5 passes over the set: every flow inserted once, then found.
    let out = driver.run(2500).expect("runs");
    assert_eq!(out.retval, 2, "XDP_PASS for UDP flows");
    assert_eq!(flows_inserted(&nf), 1000);
}

#[test]
fn a_rewrite_does_not_carry_over_to_the_next_run() {
    if !usable_or_skip("contend driver_kernel") {
        return;
    }
    // The reflector swaps the MAC addresses and sends the frame back (XDP_TX): repeated on its
    // own output it would swap them back every other run; behind the driver every run starts
    // from the set's frame, so the last run's output is swapped.
    let frame = udp_frame(7);
    let driver = TrafficDriver::new(std::slice::from_ref(&frame)).expect("driver loads");
    let nf = example("xdp_reflector.o");
    driver.attach(&nf, 0).expect("attaches");
    for repeat in [1, 2, 3, 4] {
        let out = driver.run(repeat).expect("runs");
        assert_eq!(out.retval, 3, "XDP_TX");
        assert_eq!(&out.packet[0..6], &frame[6..12], "after {repeat} runs");
        assert_eq!(&out.packet[6..12], &frame[0..6], "after {repeat} runs");
    }
}

#[test]
fn the_nf_time_is_the_total_less_the_driver() {
    let _alone = crate::timing_alone();
    if !usable_or_skip("contend driver_kernel") {
        return;
    }
    let set: Vec<Vec<u8>> = (0..256).map(udp_frame).collect();
    let driver = TrafficDriver::new(&set).expect("driver loads");
    let nf = example("xdp_flow_huge.o");
    let pass = pass_object().expect("pass loads");
    // Slopes over 50,000 runs (a few ms each): over 5,000 a scheduling blip on this shared
    // machine once made the driver alone look dearer than driver and NF together.
    let timing = Timing {
        trials: 9,
        short: 1_000,
        long: 51_000,
    };
    let time = driver.nf_ns(&nf, 0, &pass, timing).expect("times");
    assert!(time.driver > 0.0 && time.total > time.driver, "{time:?}");
    // A hash lookup and an atomic add per packet: more than a nanosecond, less than a µs.
    assert!(time.nf() > 1.0 && time.nf() < 1000.0, "{time:?}");
    assert!((time.pps() - 1e9 / time.nf()).abs() < 1e-6 * time.pps());
}
