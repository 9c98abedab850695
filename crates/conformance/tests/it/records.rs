//! Records and queues against the kernel, on the `xdp_events` and `xdp_queue` examples: the
//! bytes a reader receives from the ring buffer and the perf event array, built here from the
//! packet, are what both engines report; a queue read between packets keeps its contents.

use linerate_bpf::contents::{MapMode, MapSeed};
use linerate_bpf::records::{MapRecords, Records};
use linerate_bpf::Object;
use linerate_conformance::examples::{examples_dir, load, Example};
use linerate_kernel::usable_or_skip;
use linerate_vm::drive::Driver;
use linerate_vm::VmOptions;

fn example(name: &str) -> Example {
    load(&examples_dir().join(format!("{name}.o"))).expect("example loads")
}

fn map_index(obj: &Object, name: &str) -> usize {
    obj.maps
        .iter()
        .position(|m| m.name == name)
        .expect("map exists")
}

/// The records of running `packets` in order in both engines (maps persisting), checked equal.
fn run_both(obj: &Object, seed: &MapSeed, packets: &[Vec<u8>]) -> Vec<Records> {
    let mut kernel =
        linerate_kernel::drive::Driver::new(obj, seed, MapMode::Persist).expect("kernel loads");
    let mut vm = Driver::new(obj, seed, VmOptions::default(), MapMode::Persist).expect("vm");
    packets
        .iter()
        .map(|p| {
            let k = kernel.run(0, p, &[], 1).expect("kernel run").records;
            let v = vm.run(0, p, &[]).expect("vm run").records;
            assert_eq!(v, k, "records of packet {}", linerate_io::to_hex(p));
            k
        })
        .collect()
}

/// A perf sample's raw data as the reader gets it: padded so that it and its 4-byte size field
/// fill a multiple of 8 bytes.
fn perf_raw(mut data: Vec<u8>) -> Vec<u8> {
    while !(data.len() + 4).is_multiple_of(8) {
        data.push(0);
    }
    data
}

#[test]
fn ring_and_perf_records_are_what_the_reader_receives() {
    if !usable_or_skip("ring_and_perf_records_are_what_the_reader_receives") {
        return;
    }
    let ex = example("xdp_events");
    let obj = &ex.object;
    let (events, samples) = (map_index(obj, "events"), map_index(obj, "samples"));
    let crafted = ex.packet_bytes();
    // [0]: IPv4 UDP "hello"; [3]: a 14-byte frame; [4]: the burst that overflows the ring.
    // [9]/[10]: reserve a copy of the event, output the sample header, submit/discard the copy.
    let (udp, short, burst) = (&crafted[0], &crafted[3], &crafted[4]);
    let (reserve, discard) = (&crafted[9], &crafted[10]);
    let records = run_both(
        obj,
        &ex.seed,
        &[
            udp.clone(),
            short.clone(),
            burst.clone(),
            reserve.clone(),
            discard.clone(),
        ],
    );

    let sample_of = |p: &[u8]| {
        let mut raw = vec![0xfe, 0xca];
        raw.extend((p.len() as u16).to_le_bytes());
        raw.extend(&p[..p.len().min(32)]);
        perf_raw(raw)
    };
    let event_of = |p: &[u8]| {
        let mut event = Vec::new();
        event.extend(&p[26..34]); // saddr, daddr
        event.extend(&p[34..38]); // sport, dport
        event.extend((p.len() as u16).to_le_bytes());
        event.push(p[42]); // first payload byte
        event.push(p[22]); // ttl
        event
    };
    let event = event_of(udp);
    assert_eq!(
        records[0],
        vec![
            MapRecords {
                map: events,
                records: vec![event]
            },
            MapRecords {
                map: samples,
                records: vec![sample_of(udp)]
            },
        ]
    );
    // 4 + 14 bytes of raw data are padded to 20 (24 with the size field) for the reader.
    assert_eq!(sample_of(short).len(), 20);
    assert_eq!(
        records[1],
        vec![MapRecords {
            map: samples,
            records: vec![sample_of(short)]
        }]
    );
    // The burst: the event, then 8 records of 448 bytes before the ring is full; no sample
    // (the program drops the frame first).
    let ring = &records[2][0];
    assert_eq!(ring.map, events);
    assert_eq!(ring.records.len(), 9);
    for (i, r) in ring.records[1..].iter().enumerate() {
        assert_eq!(r.len(), 448);
        assert_eq!(r[0] as usize, i);
        assert!(r[1..].iter().all(|b| *b == b'B'));
    }
    assert_eq!(records[2].len(), 1);
    // Reservation order: the copy (first byte + 1) before the header output while it was
    // reserved; a discarded copy is skipped.
    let header = |p: &[u8]| {
        let mut h = vec![0xfe, 0xca];
        h.extend((p.len() as u16).to_le_bytes());
        h
    };
    let mut copy = event_of(reserve);
    copy[14] += 1;
    assert_eq!(
        records[3][0].records,
        vec![event_of(reserve), copy, header(reserve)]
    );
    assert_eq!(
        records[4][0].records,
        vec![event_of(discard), header(discard)]
    );
}

#[test]
fn queue_reads_keep_contents_and_order() {
    if !usable_or_skip("queue_reads_keep_contents_and_order") {
        return;
    }
    let ex = example("xdp_queue");
    let obj = &ex.object;
    let (fifo, lifo) = (map_index(obj, "fifo"), map_index(obj, "lifo"));
    let crafted = ex.packet_bytes();
    // [1]: push 0xab with BPF_EXIST into the full queue; [4]: push 0xcd to the stack; [5]:
    // push 0xce to the stack.
    let packets = [crafted[1].clone(), crafted[4].clone(), crafted[5].clone()];
    let mut kernel =
        linerate_kernel::drive::Driver::new(obj, &ex.seed, MapMode::Persist).expect("kernel");
    let mut vm = Driver::new(obj, &ex.seed, VmOptions::default(), MapMode::Persist).expect("vm");
    for p in &packets {
        kernel.run(0, p, &[], 1).expect("kernel run");
        vm.run(0, p, &[]).expect("vm run");
        assert_eq!(kernel.maps().expect("maps"), vm.maps());
    }
    let value = |v: u32| (Vec::new(), v.to_le_bytes().to_vec());
    let first = kernel.maps().expect("maps");
    let again = kernel.maps().expect("maps");
    assert_eq!(first, again, "reading a queue changes it");
    assert_eq!(
        first[fifo],
        vec![
            value(0x2222_2222),
            value(0x3333_3333),
            value(0x4444_4444),
            value(0xab)
        ]
    );
    assert_eq!(first[lifo], vec![value(0xce), value(0xcd)]);
}
