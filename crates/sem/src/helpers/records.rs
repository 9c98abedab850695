//! The meaning of the helpers that move data between a program and user space outside the
//! packet: ring buffers (`bpf_ringbuf_output`, `bpf_ringbuf_query`), perf event arrays
//! (`bpf_perf_event_output`), queue and stack maps (`bpf_map_push/pop/peek_elem`), and
//! `bpf_check_mtu`, which asks about a device.
//!
//! The machine keeps the state these act on (ring positions, queue contents, records, devices)
//! behind [`HelperMachine`]'s `ring_positions`, `emit_record`, `queue_*` and `device`.

use linerate_bpf::facts::errno::{E2BIG, EAGAIN, EFAULT, EINVAL, ENODEV, ENOENT};
use linerate_bpf::facts::helper as id;
use linerate_bpf::facts::test_run_buffer::{FRAME_SIZE, MAX_PACKET};
use linerate_bpf::facts::{mtu, perf, ringbuf};
use linerate_bpf::program::MapType;

use super::{bad_argument, nonzero, signed, HelperMachine, Source};
use crate::domain::{BinOp, CmpOp, Domain};
use crate::exec::{Ops, Val};

/// `BPF_EXIST`: a push to a full queue or stack drops the oldest element instead of failing.
const BPF_EXIST: u64 = 2;

/// `bpf_ringbuf_output(map, data, size, flags)` (kernel/bpf/ringbuf.c): commits a record of
/// `size` bytes; `-EINVAL` for flags other than the wakeup ones, `-EAGAIN` where the ring has no
/// room. A record takes its size plus the 8-byte header, rounded up to 8, and the producer may
/// run at most the ring's size minus one ahead of the consumer.
pub(super) fn ringbuf_output<M: HelperMachine>(
    m: &mut M,
    pc: usize,
    map: usize,
    data: &Val<M>,
    size: &Val<M>,
    flags: &Val<M>,
) -> Result<Val<M>, M::Fault> {
    expect_type(m, pc, id::RINGBUF_OUTPUT, map, MapType::RINGBUF)?;
    let count = m.byte_count(pc, id::RINGBUF_OUTPUT, size, FRAME_SIZE)?;
    let unknown_flags = m.bin_c(BinOp::And, flags, !ringbuf::WAKEUP_FLAGS);
    let bad_flags = nonzero(m, &unknown_flags);
    let no_room = no_room(m, pc, map, size)?;
    let refused = m.domain().or(&bad_flags, &no_room);
    let ok = m.domain().not(&refused);
    if m.decide(pc, &ok)? {
        let record = m.read_bytes(pc, data, count)?;
        m.emit_record(pc, map, record)?;
    }
    let (zero, eagain, einval) = (m.c(0), signed(m, -EAGAIN), signed(m, -EINVAL));
    let room = m.ite(&no_room, &eagain, &zero);
    Ok(m.ite(&bad_flags, &einval, &room))
}

/// Whether ring buffer `map` has no room for a record of `size` bytes (`__bpf_ringbuf_reserve`):
/// the record takes `round_up(size + 8, 8)` bytes with its header, may not exceed the ring, and
/// the producer may run at most the ring's size minus one ahead of the consumer.
fn no_room<M: HelperMachine>(
    m: &mut M,
    pc: usize,
    map: usize,
    size: &Val<M>,
) -> Result<crate::exec::Bool<M>, M::Fault> {
    let ring_size = u64::from(m.map_def(map).max_entries);
    // len = round_up(size + HDR_SIZE, 8), computed in 64 bits: sizes above the largest record
    // fail before it matters.
    let padded = m.bin_c(BinOp::Add, size, ringbuf::HDR_SIZE + 7);
    let len = m.bin_c(BinOp::And, &padded, !7);
    let (consumer, producer) = m.ring_positions(pc, map)?;
    let new_producer = m.bin(BinOp::Add, &producer, &len);
    let ahead = m.bin(BinOp::Sub, &new_producer, &consumer);
    let (max_record, total, mask) = (
        m.c(ringbuf::MAX_RECORD_SIZE),
        m.c(ring_size),
        m.c(ring_size.saturating_sub(1)),
    );
    let too_big = m.cmp(CmpOp::Ult, &max_record, size);
    let too_long = m.cmp(CmpOp::Ult, &total, &len);
    let full = m.cmp(CmpOp::Ult, &mask, &ahead);
    let d = m.domain();
    let no_room = d.or(&too_big, &too_long);
    Ok(d.or(&no_room, &full))
}

/// `bpf_ringbuf_reserve(map, size, flags)`: a pointer to `size` bytes of the ring, taken in
/// order with the records before it, or NULL for any flag or where the ring has no room. The
/// memory is not cleared.
pub(super) fn ringbuf_reserve<M: HelperMachine>(
    m: &mut M,
    pc: usize,
    map: usize,
    size: &Val<M>,
    flags: &Val<M>,
) -> Result<Val<M>, M::Fault> {
    expect_type(m, pc, id::RINGBUF_RESERVE, map, MapType::RINGBUF)?;
    let count = m.byte_count(pc, id::RINGBUF_RESERVE, size, FRAME_SIZE)?;
    let bad_flags = nonzero(m, flags);
    let no_room = no_room(m, pc, map, size)?;
    let refused = m.domain().or(&bad_flags, &no_room);
    let ok = m.domain().not(&refused);
    let zero = m.c(0);
    let record = if m.decide(pc, &ok)? {
        m.ring_reserve(pc, map, count)?
    } else {
        zero.clone()
    };
    Ok(m.ite(&ok, &record, &zero))
}

/// `bpf_ringbuf_submit(record, flags)` and `bpf_ringbuf_discard`: commit a reserved record, or
/// mark it discarded (its reader skips it); flags only choose whether to wake the reader.
/// Return nothing (r0 = 0).
pub(super) fn ringbuf_commit<M: HelperMachine>(
    m: &mut M,
    pc: usize,
    helper: u32,
    record: &Val<M>,
) -> Result<Val<M>, M::Fault> {
    m.ring_commit(pc, record, helper == id::RINGBUF_DISCARD)?;
    Ok(m.c(0))
}

/// `bpf_ringbuf_query(map, flags)`: available data, ring size, consumer or producer position;
/// 0 for any other flag.
pub(super) fn ringbuf_query<M: HelperMachine>(
    m: &mut M,
    pc: usize,
    map: usize,
    flags: &Val<M>,
) -> Result<Val<M>, M::Fault> {
    expect_type(m, pc, id::RINGBUF_QUERY, map, MapType::RINGBUF)?;
    let ring_size = u64::from(m.map_def(map).max_entries);
    let (consumer, producer) = m.ring_positions(pc, map)?;
    let avail = m.bin(BinOp::Sub, &producer, &consumer);
    let size = m.c(ring_size);
    let mut result = m.c(0);
    for (flag, value) in [
        (ringbuf::AVAIL_DATA, avail),
        (ringbuf::RING_SIZE, size),
        (ringbuf::CONS_POS, consumer),
        (ringbuf::PROD_POS, producer),
    ] {
        let flag = m.c(flag);
        let is = m.cmp(CmpOp::Eq, flags, &flag);
        result = m.ite(&is, &value, &result);
    }
    Ok(result)
}

/// `bpf_perf_event_output(ctx, map, flags, data, size)` from XDP (`bpf_xdp_event_output`): a
/// sample whose raw data is the `size` bytes at `data` followed by the first
/// `(flags & BPF_F_CTXLEN_MASK) >> 32` packet bytes, zero-padded as the reader receives it, sent
/// to the event in slot `flags & BPF_F_INDEX_MASK` (`BPF_F_CURRENT_CPU`: the running CPU's).
/// `-EINVAL` for other flag bits, `-EFAULT` for more packet bytes than the packet has, `-E2BIG`
/// for a slot past the array, `-ENOENT` for a slot without an event. The runners open one event,
/// in the slot of the CPU the program runs on, so every other slot is empty (and the kernel's
/// `-EOPNOTSUPP` for an event of another CPU cannot happen).
pub(super) fn perf_event_output<M: HelperMachine>(
    m: &mut M,
    pc: usize,
    map: usize,
    flags: &Val<M>,
    data: &Val<M>,
    size: &Val<M>,
) -> Result<Val<M>, M::Fault> {
    expect_type(m, pc, id::PERF_EVENT_OUTPUT, map, MapType::PERF_EVENT_ARRAY)?;
    let max_entries = u64::from(m.map_def(map).max_entries);
    let count = m.byte_count(pc, id::PERF_EVENT_OUTPUT, size, FRAME_SIZE)?;
    let unknown = m.bin_c(BinOp::And, flags, !(perf::CTXLEN_MASK | perf::INDEX_MASK));
    let bad_flags = nonzero(m, &unknown);
    let ctxlen_bits = m.bin_c(BinOp::And, flags, perf::CTXLEN_MASK);
    let ctxlen = m.bin_c(BinOp::LShr, &ctxlen_bits, 32);
    // The appended bytes come from the whole packet, fragments included (`bpf_xdp_copy`).
    let packet_len = super::buff_len(m);
    let past_packet = m.cmp(CmpOp::Ult, &packet_len, &ctxlen);
    let cpu = m.source(pc, Source::ProcessorId)?;
    let slot = m.bin_c(BinOp::And, flags, perf::INDEX_MASK);
    let current = m.c(perf::CURRENT_CPU);
    let is_current = m.cmp(CmpOp::Eq, &slot, &current);
    let slot = m.ite(&is_current, &cpu, &slot);
    let entries = m.c(max_entries);
    let past_array = m.cmp(CmpOp::Ule, &entries, &slot);
    let has_event = m.cmp(CmpOp::Eq, &slot, &cpu);
    let d = m.domain();
    let no_event = d.not(&has_event);
    let fails = d.or(&bad_flags, &past_packet);
    let fails = d.or(&fails, &past_array);
    let fails = d.or(&fails, &no_event);
    let ok = d.not(&fails);
    if m.decide(pc, &ok)? {
        let ctx_count = m.byte_count(pc, id::PERF_EVENT_OUTPUT, &ctxlen, MAX_PACKET)?;
        let mut record = m.read_bytes(pc, data, count)?;
        let start = m.c(0);
        record.extend(m.read_packet(pc, &start, ctx_count)?);
        let raw = record.len() as u64 + perf::RAW_SIZE_FIELD;
        let padding = raw.next_multiple_of(perf::RAW_ALIGN) - raw;
        for _ in 0..padding {
            record.push(m.c(0));
        }
        m.emit_record(pc, map, record)?;
    }
    let (zero, einval, efault, e2big, enoent) = (
        m.c(0),
        signed(m, -EINVAL),
        signed(m, -EFAULT),
        signed(m, -E2BIG),
        signed(m, -ENOENT),
    );
    let r = m.ite(&no_event, &enoent, &zero);
    let r = m.ite(&past_array, &e2big, &r);
    let r = m.ite(&past_packet, &efault, &r);
    Ok(m.ite(&bad_flags, &einval, &r))
}

/// `bpf_map_push_elem(map, value, flags)` (kernel/bpf/queue_stack_maps.c): appends `value`;
/// with `BPF_EXIST` a full map first drops its oldest element, without it a full map answers
/// `-E2BIG`; any other flag `-EINVAL`.
pub(super) fn push<M: HelperMachine>(
    m: &mut M,
    pc: usize,
    map: usize,
    value: &Val<M>,
    flags: &Val<M>,
) -> Result<Val<M>, M::Fault> {
    expect_queue(m, pc, id::MAP_PUSH_ELEM, map)?;
    let def = m.map_def(map);
    let (value_size, capacity) = (u64::from(def.value_size), u64::from(def.max_entries));
    let exist = m.c(BPF_EXIST);
    let bad_flags = m.cmp(CmpOp::Ult, &exist, flags);
    let noexist = m.bin_c(BinOp::And, flags, 1);
    let noexist = nonzero(m, &noexist);
    let bad_flags = m.domain().or(&bad_flags, &noexist);
    let replace = m.bin_c(BinOp::And, flags, BPF_EXIST);
    let replace = nonzero(m, &replace);
    let len = m.queue_len(pc, map)?;
    let cap = m.c(capacity);
    let full = m.cmp(CmpOp::Ule, &cap, &len);
    let d = m.domain();
    let keep = d.not(&replace);
    let no_room = d.and(&full, &keep);
    let refused = d.or(&bad_flags, &no_room);
    let ok = d.not(&refused);
    if m.decide(pc, &ok)? {
        let bytes = m.read_bytes(pc, value, value_size)?;
        let evict = m.domain().and(&full, &ok);
        m.queue_push(pc, map, bytes, &evict)?;
    }
    let (zero, einval, e2big) = (m.c(0), signed(m, -EINVAL), signed(m, -E2BIG));
    let r = m.ite(&no_room, &e2big, &zero);
    Ok(m.ite(&bad_flags, &einval, &r))
}

/// `bpf_map_pop_elem(map, value)` and `bpf_map_peek_elem`: copies the oldest element of a queue
/// or the newest of a stack to `value` (pop also removes it); an empty map zeroes `value` and
/// answers `-ENOENT`.
pub(super) fn take<M: HelperMachine>(
    m: &mut M,
    pc: usize,
    helper: u32,
    map: usize,
    value: &Val<M>,
) -> Result<Val<M>, M::Fault> {
    expect_queue(m, pc, helper, map)?;
    let value_size = u64::from(m.map_def(map).value_size);
    let len = m.queue_len(pc, map)?;
    let empty = m.is_zero(&len);
    let has = m.domain().not(&empty);
    let bytes = if m.decide(pc, &has)? {
        m.queue_take(pc, map, helper == id::MAP_POP_ELEM)?
    } else {
        (0..value_size).map(|_| m.c(0)).collect()
    };
    // Where the machine does not know whether the map is empty, the value is either element.
    let zero = m.c(0);
    let bytes: Vec<Val<M>> = bytes.iter().map(|b| m.ite(&has, b, &zero)).collect();
    m.write_bytes(pc, value, &bytes)?;
    let (zero, enoent) = (m.c(0), signed(m, -ENOENT));
    Ok(m.ite(&empty, &enoent, &zero))
}

/// `bpf_check_mtu(ctx, ifindex, mtu_len, len_diff, flags)` from XDP (`bpf_xdp_check_mtu`): the
/// device is `ifindex`'s, or the packet's own for 0; the length checked is the packet's (or
/// `*mtu_len` plus the device's hard header length where `*mtu_len` is not 0) plus `len_diff`,
/// in 32-bit signed arithmetic, against the MTU plus the hard header length. Answers
/// `BPF_MTU_CHK_RET_FRAG_NEEDED` above it, else success, and writes the device's MTU to
/// `*mtu_len`; `-EINVAL` for any flag, `-ENODEV` for an unknown device (nothing written).
pub(super) fn check_mtu<M: HelperMachine>(
    m: &mut M,
    pc: usize,
    [ifindex, mtu_len, len_diff, flags]: [&Val<M>; 4],
) -> Result<Val<M>, M::Fault> {
    let bad_flags = nonzero(m, flags);
    let ifindex = m.zext(ifindex, 32);
    let device = m.device(pc, &ifindex)?;
    let b = m.packet_bounds();
    let packet_len = m.bin(BinOp::Sub, &b.data_end, &b.data);
    let given = m.read_bytes(pc, mtu_len, 4)?;
    let given = super::from_bytes(m, &given);
    let given_zero = m.is_zero(&given);
    let l3 = m.bin(BinOp::Add, &given, &device.hard_header_len);
    let len = m.ite(&given_zero, &packet_len, &l3);
    let len = m.bin(BinOp::Add, &len, len_diff);
    let len = m.sext(&len, 32);
    let dev_len = m.bin(BinOp::Add, &device.mtu, &device.hard_header_len);
    let frag = m.cmp(CmpOp::Slt, &dev_len, &len);
    let d = m.domain();
    let no_device = d.not(&device.exists);
    let refused = d.or(&bad_flags, &no_device);
    let ok = d.not(&refused);
    if m.decide(pc, &ok)? {
        let mtu_bytes = super::bytes_of(m, &device.mtu, 4);
        m.write_bytes(pc, mtu_len, &mtu_bytes)?;
    }
    let (success, frag_needed) = (m.c(mtu::SUCCESS), m.c(mtu::FRAG_NEEDED));
    let (einval, enodev) = (signed(m, -EINVAL), signed(m, -ENODEV));
    let r = m.ite(&frag, &frag_needed, &success);
    let r = m.ite(&no_device, &enodev, &r);
    Ok(m.ite(&bad_flags, &einval, &r))
}

/// A device `bpf_check_mtu` asks about.
#[derive(Clone, Debug)]
pub struct Device<V, B> {
    /// Whether the device exists; the other fields matter only where it does.
    pub exists: B,
    pub mtu: V,
    pub hard_header_len: V,
}

fn expect_type<M: HelperMachine>(
    m: &mut M,
    pc: usize,
    helper: u32,
    map: usize,
    want: MapType,
) -> Result<(), M::Fault> {
    if m.map_def(map).map_type != want {
        return Err(bad_argument(pc, helper, wrong_map(want)));
    }
    Ok(())
}

fn expect_queue<M: HelperMachine>(
    m: &mut M,
    pc: usize,
    helper: u32,
    map: usize,
) -> Result<(), M::Fault> {
    if !m.map_def(map).map_type.is_queue() {
        return Err(bad_argument(pc, helper, "map is not a queue or stack"));
    }
    Ok(())
}

fn wrong_map(want: MapType) -> &'static str {
    match want {
        MapType::RINGBUF => "map is not a ring buffer",
        MapType::PERF_EVENT_ARRAY => "map is not a perf event array",
        _ => "map has the wrong type",
    }
}
