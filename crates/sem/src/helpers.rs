//! The meaning of every helper linerate supports, written once.
//!
//! [`call`] gives each helper's effect — which arguments it reads, which checks it makes, what it
//! returns in r0, which memory it reads and writes, which map operations it performs — generic
//! over a machine that implements [`HelperMachine`]. The machine supplies only the environment:
//! the contents of maps (a lookup returns a value pointer or zero; a map of maps names the inner
//! map whose handle a lookup returns), the packet buffer's bounds,
//! time and randomness, the routing table, and what to do with a condition a helper's effect
//! depends on ([`HelperMachine::decide`]). The interpreter instantiates it with machine integers,
//! the abstract analyses with abstract values, and the symbolic engine with formulas.
//!
//! Return conventions follow the kernel: a negative errno on failure, XDP actions from the
//! redirect helpers. A helper not listed in [`SUPPORTED`] is refused with
//! [`SemError::UnsupportedHelper`], never silently ignored.

use linerate_bpf::facts::errno::{E2BIG, EACCES, EAFNOSUPPORT, EFAULT, EINVAL};
use linerate_bpf::facts::helper as id;
use linerate_bpf::facts::limits::{
    FIB_LOOKUP_PARAMS, MAX_BPF_LOOP_ITERATIONS, MAX_META_LEN, MAX_TAIL_CALLS,
};
use linerate_bpf::facts::test_run_buffer::{
    ETH_HLEN, FRAG_SIZE, FRAME_SIZE, SHARED_INFO, XDP_FRAME,
};
use linerate_bpf::facts::xdp::{XDP_ABORTED, XDP_REDIRECT};
use linerate_bpf::program::{MapDef, MapType};

use crate::domain::{BinOp, CmpOp, Domain};
use crate::exec::{enter_function, Bool, HelperOutcome, Machine, Ops, SemError, Val};

mod kernel_read;
mod records;
mod syncookies;
pub use records::Device;

/// Helpers [`call`] gives a meaning to, by number.
pub const SUPPORTED: &[u32] = &[
    id::MAP_LOOKUP_ELEM,
    id::MAP_UPDATE_ELEM,
    id::MAP_DELETE_ELEM,
    id::KTIME_GET_NS,
    id::TRACE_PRINTK,
    id::GET_PRANDOM_U32,
    id::GET_SMP_PROCESSOR_ID,
    id::TAIL_CALL,
    id::REDIRECT,
    id::CSUM_DIFF,
    id::XDP_ADJUST_HEAD,
    id::REDIRECT_MAP,
    id::XDP_ADJUST_META,
    id::XDP_ADJUST_TAIL,
    id::FIB_LOOKUP,
    id::KTIME_GET_BOOT_NS,
    id::XDP_GET_BUFF_LEN,
    id::XDP_LOAD_BYTES,
    id::XDP_STORE_BYTES,
    id::RINGBUF_OUTPUT,
    id::RINGBUF_QUERY,
    id::RINGBUF_RESERVE,
    id::RINGBUF_SUBMIT,
    id::RINGBUF_DISCARD,
    id::PERF_EVENT_OUTPUT,
    id::MAP_PUSH_ELEM,
    id::MAP_POP_ELEM,
    id::MAP_PEEK_ELEM,
    id::CHECK_MTU,
    id::SPIN_LOCK,
    id::SPIN_UNLOCK,
    id::FOR_EACH_MAP_ELEM,
    id::LOOP,
    id::TCP_RAW_GEN_SYNCOOKIE_IPV4,
    id::TCP_RAW_GEN_SYNCOOKIE_IPV6,
    id::TCP_RAW_CHECK_SYNCOOKIE_IPV4,
    id::TCP_RAW_CHECK_SYNCOOKIE_IPV6,
    id::PROBE_READ_KERNEL,
    id::PROBE_READ_KERNEL_STR,
];

/// Where a helper takes its map argument: r1 for the map helpers, r2 for `bpf_tail_call` and
/// `bpf_perf_event_output`.
pub fn map_argument(helper: u32) -> Option<usize> {
    match helper {
        id::MAP_LOOKUP_ELEM
        | id::MAP_UPDATE_ELEM
        | id::MAP_DELETE_ELEM
        | id::REDIRECT_MAP
        | id::FOR_EACH_MAP_ELEM
        | id::RINGBUF_OUTPUT
        | id::RINGBUF_RESERVE
        | id::RINGBUF_QUERY
        | id::MAP_PUSH_ELEM
        | id::MAP_POP_ELEM
        | id::MAP_PEEK_ELEM => Some(1),
        id::TAIL_CALL | id::PERF_EVENT_OUTPUT => Some(2),
        _ => None,
    }
}

/// Values a machine provides from outside the program.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Source {
    /// `bpf_ktime_get_ns`.
    MonotonicNs,
    /// `bpf_ktime_get_boot_ns`.
    BootNs,
    /// `bpf_get_prandom_u32` (a 32-bit value).
    Random32,
    /// `bpf_get_smp_processor_id`.
    ProcessorId,
    /// The 32-bit SYN cookie of `bpf_tcp_raw_gen_syncookie_*`: a hash of the addresses, ports
    /// and sequence number under the kernel's secret and the minute, which no machine knows.
    SynCookie,
    /// Which of the 4 MSS values of the kernel's table (0..=3) the cookie encodes: the largest
    /// not above the MSS option of the SYN (536 without one).
    SynCookieMss,
    /// Whether `bpf_tcp_raw_check_syncookie_*` accepts the ACK's cookie (1) or not (0).
    SynCookieValid,
    /// How `bpf_probe_read_kernel(_str)` ends on kernel memory no machine holds (see
    /// [`Whereabouts`]): 0 it reads it, 1 it faults (an unmapped address: `-EFAULT`), 2 or 3 the
    /// running kernel refuses the address (non-canonical under its paging level, or the
    /// vsyscall page: `-ERANGE`).
    KernelRead,
    /// One byte of kernel memory no machine holds, as `bpf_probe_read_kernel(_str)` reads it.
    KernelByte,
}

/// Where the bytes a helper reads from any kernel address lie, as far as a machine knows
/// ([`HelperMachine::locate`]).
#[derive(Clone, Debug)]
pub struct Whereabouts<V, B> {
    /// Every byte lies in memory the machine holds, which [`HelperMachine::read_bytes`] reads:
    /// within one stack frame, the packet between `data_meta` and `data_end`, or one map value.
    pub held: B,
    /// The address is a number the program made, not a pointer the machine handed it (a NULL
    /// pointer is the number 0): an address in the kernel's own terms, which the kernel refuses
    /// to read below [`linerate_bpf::facts::kernel_read::LOWEST_READABLE`].
    pub number: B,
    /// That number, where `number` holds.
    pub value: V,
}

/// The packet buffer's bounds: byte offsets into the buffer of `BPF_PROG_TEST_RUN`'s frame (see
/// [`linerate_bpf::facts::test_run_buffer`]).
#[derive(Clone, Debug)]
pub struct PacketBounds<V> {
    pub data_meta: V,
    pub data: V,
    pub data_end: V,
}

/// The fragments of a multi-buffer packet, after its linear part (`data..data_end`): both zero
/// for a single-buffer packet.
#[derive(Clone, Debug)]
pub struct Frags<V> {
    /// Bytes in all fragments (`skb_shared_info.xdp_frags_size`).
    pub len: V,
    /// Bytes in the last fragment, which `bpf_xdp_adjust_tail` grows within its page.
    pub last: V,
}

/// Where a redirect helper sends the packet.
#[derive(Clone, Debug)]
pub enum RedirectTo<V> {
    /// `bpf_redirect(ifindex, flags)`.
    Ifindex(V),
    /// `bpf_redirect_map(map, key, flags)`.
    Map { map: usize, key: V },
}

/// The answer of the routing table to `bpf_fib_lookup`.
#[derive(Clone, Debug)]
pub struct FibAnswer<V, B> {
    /// Whether the table has a route; the other fields matter only where it has.
    pub found: B,
    /// `ifindex` of the egress device.
    pub ifindex: V,
    /// Source and destination MAC addresses, one value per byte.
    pub smac: [V; 6],
    pub dmac: [V; 6],
}

/// The environment helpers act on, beyond what [`Machine`] gives the instructions.
pub trait HelperMachine: Machine {
    /// The constant a value is, where the machine knows it.
    fn constant_of(&mut self, value: &Val<Self>) -> Option<u64>;
    /// A value the machine cannot compute exactly (the interpreter never needs one).
    fn unknown(&mut self, pc: usize) -> Result<Val<Self>, Self::Fault>;
    /// Whether to carry out a side effect (a write, a recorded redirect, new packet bounds) that
    /// happens where `cond` holds. The interpreter answers whether `cond` holds. A machine that
    /// does not know must answer `true` and carry the effect out as one that may or may not
    /// happen (weak updates). Helpers compute their results with [`Domain::ite`], never from
    /// this answer, so results stay exact in every machine.
    fn decide(&mut self, pc: usize, cond: &Bool<Self>) -> Result<bool, Self::Fault>;
    /// The number of bytes a size argument stands for, at most `max` (the verifier bounds it).
    fn byte_count(
        &mut self,
        pc: usize,
        helper: u32,
        size: &Val<Self>,
        max: u64,
    ) -> Result<u64, Self::Fault>;
    /// Reads `len` bytes at `addr`, one value per byte.
    fn read_bytes(
        &mut self,
        pc: usize,
        addr: &Val<Self>,
        len: u64,
    ) -> Result<Vec<Val<Self>>, Self::Fault>;
    /// Where the `len` bytes at `addr` lie, for a helper that reads from any kernel address
    /// (`bpf_probe_read_kernel`: the verifier lets any value through as the address, so it need
    /// not be a pointer, nor stay within what the pointer reaches).
    fn locate(
        &mut self,
        pc: usize,
        addr: &Val<Self>,
        len: u64,
    ) -> Result<Whereabouts<Val<Self>, Bool<Self>>, Self::Fault>;
    /// Writes one byte per value at `addr`.
    fn write_bytes(
        &mut self,
        pc: usize,
        addr: &Val<Self>,
        bytes: &[Val<Self>],
    ) -> Result<(), Self::Fault>;

    /// The map a map argument refers to, as an index into the object's maps.
    fn map_of(&mut self, pc: usize, helper: u32, handle: &Val<Self>) -> Result<usize, Self::Fault>;
    /// The definition of map `map`.
    fn map_def(&self, map: usize) -> &MapDef;
    /// A pointer to the value stored under `key`, or zero.
    fn map_lookup(
        &mut self,
        pc: usize,
        map: usize,
        key: &[Val<Self>],
    ) -> Result<Val<Self>, Self::Fault>;
    /// [`HelperMachine::map_lookup`] of the key at `key_addr` (the map's key size in bytes, read
    /// with [`HelperMachine::read_bytes`]): what `bpf_map_lookup_elem` does with its arguments.
    /// A machine may do both in one step when it can read the key without building one value
    /// per byte (the interpreter, on its hot path); the answer must be the same.
    fn map_lookup_at(
        &mut self,
        pc: usize,
        map: usize,
        key_addr: &Val<Self>,
    ) -> Result<Val<Self>, Self::Fault> {
        let key = read_key(self, pc, map, key_addr)?;
        self.map_lookup(pc, map, &key)
    }
    /// Stores `value` under `key` as `BPF_MAP_UPDATE_ELEM` with `flags`: 0 or a negative errno.
    fn map_update(
        &mut self,
        pc: usize,
        map: usize,
        key: &[Val<Self>],
        value: &[Val<Self>],
        flags: &Val<Self>,
    ) -> Result<Val<Self>, Self::Fault>;
    /// The handle of the inner map a slot of map of maps `outer` holds (`slot`: the slot's
    /// contents, the inner map's index in the object's maps as map contents write it; see
    /// `linerate_bpf::program::InnerMaps`), usable as the map argument of a map helper.
    fn inner_map(
        &mut self,
        pc: usize,
        outer: usize,
        slot: &Val<Self>,
    ) -> Result<Val<Self>, Self::Fault>;
    /// Removes `key`: 0 or a negative errno.
    fn map_delete(
        &mut self,
        pc: usize,
        map: usize,
        key: &[Val<Self>],
    ) -> Result<Val<Self>, Self::Fault>;

    /// The packet buffer's current bounds.
    fn packet_bounds(&mut self) -> PacketBounds<Val<Self>>;
    /// Moves the packet buffer's bounds, as the adjust helpers do once their checks passed: the
    /// metadata moves along with `data` where only `data` changes, and bytes that `data_end`
    /// grows over read as zero.
    fn set_packet_bounds(
        &mut self,
        pc: usize,
        bounds: PacketBounds<Val<Self>>,
    ) -> Result<(), Self::Fault>;
    /// The packet's fragments.
    fn packet_frags(&mut self) -> Frags<Val<Self>>;
    /// Makes the fragments hold `len` bytes in all, as `bpf_xdp_adjust_tail` does once its checks
    /// passed: a shorter total comes off the end, dropping the fragments it empties; a longer one
    /// grows the last fragment with zero bytes.
    fn set_frags_len(&mut self, pc: usize, len: &Val<Self>) -> Result<(), Self::Fault>;
    /// Reads `len` packet bytes from `offset` after `data`, through the linear part into the
    /// fragments (the semantics checked that they lie within the packet).
    fn read_packet(
        &mut self,
        pc: usize,
        offset: &Val<Self>,
        len: u64,
    ) -> Result<Vec<Val<Self>>, Self::Fault>;
    /// Writes one packet byte per value from `offset` after `data`, as [`Self::read_packet`]
    /// reads.
    fn write_packet(
        &mut self,
        pc: usize,
        offset: &Val<Self>,
        bytes: &[Val<Self>],
    ) -> Result<(), Self::Fault>;

    /// A value from outside the program.
    fn source(&mut self, pc: usize, source: Source) -> Result<Val<Self>, Self::Fault>;
    /// Tail calls made so far by this packet.
    fn tail_calls_made(&mut self) -> u32;
    /// Starts the program at `index` of program array `map`, if `go` holds and the array holds a
    /// program there: [`HelperOutcome::TailCall`] if it did, else [`HelperOutcome::Return`]
    /// (the call falls through).
    fn tail_call(
        &mut self,
        pc: usize,
        go: &Bool<Self>,
        map: usize,
        program: &Val<Self>,
    ) -> Result<HelperOutcome, Self::Fault>;
    /// Records where the packet is redirected.
    fn redirect(&mut self, pc: usize, to: RedirectTo<Val<Self>>) -> Result<(), Self::Fault>;
    /// The routing table's answer for destination `dst` (4 or 16 bytes).
    fn fib_route(
        &mut self,
        pc: usize,
        ipv6: bool,
        dst: &[Val<Self>],
    ) -> Result<FibAnswer<Val<Self>, Bool<Self>>, Self::Fault>;
    /// Records a line `bpf_trace_printk` wrote.
    fn trace(&mut self, pc: usize, line: String);

    /// The consumer and producer positions of ring buffer `map`: bytes consumed by its reader
    /// and bytes produced since the map was created (kernel/bpf/ringbuf.c).
    fn ring_positions(
        &mut self,
        pc: usize,
        map: usize,
    ) -> Result<(Val<Self>, Val<Self>), Self::Fault>;
    /// Commits `record` to ring buffer or perf event array `map`, as the bytes its reader
    /// receives; a ring buffer's producer position advances by the record's length plus its
    /// header, rounded up to 8 bytes.
    fn emit_record(
        &mut self,
        pc: usize,
        map: usize,
        record: Vec<Val<Self>>,
    ) -> Result<(), Self::Fault>;
    /// Reserves `size` bytes for a record in ring buffer `map` (the producer position advances
    /// as for a committed record) and returns a pointer to them.
    fn ring_reserve(&mut self, pc: usize, map: usize, size: u64) -> Result<Val<Self>, Self::Fault>;
    /// Submits (or, with `discard`, discards) the record reserved at `record`.
    fn ring_commit(
        &mut self,
        pc: usize,
        record: &Val<Self>,
        discard: bool,
    ) -> Result<(), Self::Fault>;
    /// The number of elements in queue or stack `map`.
    fn queue_len(&mut self, pc: usize, map: usize) -> Result<Val<Self>, Self::Fault>;
    /// Adds `value` to queue or stack `map`, first dropping its oldest element where `evict`
    /// holds.
    fn queue_push(
        &mut self,
        pc: usize,
        map: usize,
        value: Vec<Val<Self>>,
        evict: &Bool<Self>,
    ) -> Result<(), Self::Fault>;
    /// The element a pop of queue or stack `map` returns (the oldest of a queue, the newest of
    /// a stack), removed where `remove`; called only where the map is not empty.
    fn queue_take(
        &mut self,
        pc: usize,
        map: usize,
        remove: bool,
    ) -> Result<Vec<Val<Self>>, Self::Fault>;
    /// The device `bpf_check_mtu` sees for `ifindex` (0: the packet's own device).
    fn device(
        &mut self,
        pc: usize,
        ifindex: &Val<Self>,
    ) -> Result<Device<Val<Self>, Bool<Self>>, Self::Fault>;
    /// The function a callback argument refers to, as the slot it starts at.
    fn function_of(
        &mut self,
        pc: usize,
        helper: u32,
        value: &Val<Self>,
    ) -> Result<usize, Self::Fault>;
    /// Puts `key` where the callback about to be called (at the next call depth) can read it
    /// and returns a pointer to it: `bpf_for_each_map_elem` passes a pointer to a copy of an
    /// array's index on the kernel's stack, which the callback may read but not write.
    fn callback_key(&mut self, pc: usize, key: &[Val<Self>]) -> Result<Val<Self>, Self::Fault>;
    /// The element of hash map `map` (`MapType::is_iterable_hash`) that `bpf_for_each_map_elem`
    /// visits after the one at `after` (the first where `None`), in the kernel's order as the map
    /// is now; `None` at the end of the walk.
    fn map_next_element(
        &mut self,
        pc: usize,
        map: usize,
        after: Option<WalkPosition>,
    ) -> Result<Option<WalkedElement<Val<Self>>>, Self::Fault>;
}

/// Where `bpf_for_each_map_elem` is in a hash map: a machine's own encoding of the element last
/// visited, which stays meaningful when that element is deleted or replaced during the walk.
pub type WalkPosition = (u64, u64);

/// An element of a hash map as `bpf_for_each_map_elem` hands it to its callback.
#[derive(Clone, Debug)]
pub struct WalkedElement<V> {
    /// The key's bytes.
    pub key: Vec<V>,
    /// A pointer to the value.
    pub value: V,
    /// Where the walk is once this element is visited.
    pub position: WalkPosition,
}

/// A helper part-way through calling its callback once per iteration or map element: what it
/// needs when the callback returns ([`resume`]). It travels in the callback's frame.
#[derive(Clone, Debug)]
pub struct Callback<V> {
    /// `bpf_loop` or `bpf_for_each_map_elem`.
    pub helper: u32,
    /// Slot of the helper call.
    pub pc: usize,
    /// Slot of the callback's first instruction.
    pub function: usize,
    /// The context pointer passed through to every call.
    pub ctx: V,
    /// The map iterated over and its handle (`bpf_for_each_map_elem`).
    pub map: Option<(usize, V)>,
    /// The iteration (element index) of the call in progress.
    pub index: V,
    /// Iterations to run unless the callback stops early (a hash map's walk ends with its
    /// elements instead).
    pub count: V,
    /// In a hash map, the element of the call in progress; `None` before the first.
    pub visited: Option<WalkPosition>,
}

/// Calls helper `helper` for the instruction at `pc`: arguments in r1–r5, result in r0.
pub fn call<M: HelperMachine>(
    m: &mut M,
    pc: usize,
    helper: u32,
) -> Result<HelperOutcome, M::Fault> {
    let [_, r1, r2, r3, r4, r5] = std::array::from_fn(|i| m.regs()[i].clone());
    let ret = match helper {
        id::MAP_LOOKUP_ELEM => {
            let map = m.map_of(pc, helper, &r1)?;
            let entry = m.map_lookup_at(pc, map, &r2)?;
            if m.map_def(map).map_type.is_map_in_map() {
                inner_map(m, pc, map, &entry)?
            } else {
                entry
            }
        }
        id::MAP_UPDATE_ELEM => {
            let map = changeable_map(m, pc, helper, &r1)?;
            let key = read_key(m, pc, map, &r2)?;
            let value_size = m.map_def(map).value_size as u64;
            let value = m.read_bytes(pc, &r3, value_size)?;
            m.map_update(pc, map, &key, &value, &r4)?
        }
        id::MAP_DELETE_ELEM => {
            let map = changeable_map(m, pc, helper, &r1)?;
            let key = read_key(m, pc, map, &r2)?;
            m.map_delete(pc, map, &key)?
        }
        id::KTIME_GET_NS => m.source(pc, Source::MonotonicNs)?,
        id::KTIME_GET_BOOT_NS => m.source(pc, Source::BootNs)?,
        id::GET_PRANDOM_U32 => m.source(pc, Source::Random32)?,
        id::GET_SMP_PROCESSOR_ID => m.source(pc, Source::ProcessorId)?,
        id::TRACE_PRINTK => trace_printk(m, pc, &r1, &r2, [r3, r4, r5])?,
        id::TAIL_CALL => {
            let map = m.map_of(pc, helper, &r2)?;
            if m.map_def(map).map_type != MapType::PROG_ARRAY {
                return Err(bad_argument(pc, helper, "map is not a program array"));
            }
            let index = m.zext(&r3, 32);
            let outcome = if m.tail_calls_made() < MAX_TAIL_CALLS {
                let key = key_bytes(m, &index);
                let entry = m.map_lookup(pc, map, &key)?;
                let zero = m.domain().constant(0);
                let missing = m.domain().compare(CmpOp::Eq, &entry, &zero);
                let exists = m.domain().not(&missing);
                // Read the slot only where it exists: a missing entry has no value to read.
                let program = if m.decide(pc, &exists)? {
                    let word = m.read_bytes(pc, &entry, 4)?;
                    from_bytes(m, &word)
                } else {
                    zero
                };
                m.tail_call(pc, &exists, map, &program)?
            } else {
                HelperOutcome::Return
            };
            if outcome == HelperOutcome::TailCall {
                return Ok(outcome);
            }
            // A failed tail call falls through to the next instruction.
            m.domain().constant(0)
        }
        id::REDIRECT => {
            let flags_set = nonzero(m, &r2);
            let ok = m.domain().not(&flags_set);
            if m.decide(pc, &ok)? {
                let ifindex = m.zext(&r1, 32);
                m.redirect(pc, RedirectTo::Ifindex(ifindex))?;
            }
            let (aborted, redirect) = (
                m.domain().constant(XDP_ABORTED),
                m.domain().constant(XDP_REDIRECT),
            );
            m.domain().ite(&ok, &redirect, &aborted)
        }
        id::REDIRECT_MAP => {
            let map = m.map_of(pc, helper, &r1)?;
            redirect_map(m, pc, map, &r2, &r3)?
        }
        id::CSUM_DIFF => csum_diff(m, pc, [&r1, &r2, &r3, &r4, &r5])?,
        id::XDP_ADJUST_HEAD => adjust(m, pc, Adjust::Head, &r2)?,
        id::XDP_ADJUST_META => adjust(m, pc, Adjust::Meta, &r2)?,
        id::XDP_ADJUST_TAIL => adjust_tail(m, pc, &r2)?,
        id::FIB_LOOKUP => fib_lookup(m, pc, &r2, &r3)?,
        id::XDP_GET_BUFF_LEN => buff_len(m),
        id::XDP_LOAD_BYTES | id::XDP_STORE_BYTES => packet_bytes(m, pc, helper, &r2, &r3, &r4)?,
        id::RINGBUF_OUTPUT => {
            let map = m.map_of(pc, helper, &r1)?;
            records::ringbuf_output(m, pc, map, &r2, &r3, &r4)?
        }
        id::RINGBUF_QUERY => {
            let map = m.map_of(pc, helper, &r1)?;
            records::ringbuf_query(m, pc, map, &r2)?
        }
        id::RINGBUF_RESERVE => {
            let map = m.map_of(pc, helper, &r1)?;
            records::ringbuf_reserve(m, pc, map, &r2, &r3)?
        }
        id::RINGBUF_SUBMIT | id::RINGBUF_DISCARD => records::ringbuf_commit(m, pc, helper, &r1)?,
        id::PERF_EVENT_OUTPUT => {
            let map = m.map_of(pc, helper, &r2)?;
            records::perf_event_output(m, pc, map, &r3, &r4, &r5)?
        }
        id::MAP_PUSH_ELEM => {
            let map = m.map_of(pc, helper, &r1)?;
            records::push(m, pc, map, &r2, &r3)?
        }
        id::MAP_POP_ELEM | id::MAP_PEEK_ELEM => {
            let map = m.map_of(pc, helper, &r1)?;
            records::take(m, pc, helper, map, &r2)?
        }
        id::CHECK_MTU => records::check_mtu(m, pc, [&r2, &r3, &r4, &r5])?,
        id::TCP_RAW_GEN_SYNCOOKIE_IPV4 | id::TCP_RAW_GEN_SYNCOOKIE_IPV6 => {
            let ipv6 = helper == id::TCP_RAW_GEN_SYNCOOKIE_IPV6;
            syncookies::generate(m, pc, ipv6, &r1, &r2, &r3)?
        }
        id::TCP_RAW_CHECK_SYNCOOKIE_IPV4 | id::TCP_RAW_CHECK_SYNCOOKIE_IPV6 => {
            let ipv6 = helper == id::TCP_RAW_CHECK_SYNCOOKIE_IPV6;
            syncookies::check(m, pc, ipv6, &r1, &r2)?
        }
        id::PROBE_READ_KERNEL => kernel_read::copy(m, pc, &r1, &r2, &r3)?,
        id::PROBE_READ_KERNEL_STR => kernel_read::copy_string(m, pc, &r1, &r2, &r3)?,
        // A program runs alone (one packet at a time on one CPU) and the verifier keeps it from
        // touching the lock word, holding two locks, or exiting with one held: taking and
        // releasing the lock has no effect the program or its maps can show. Both return 0.
        id::SPIN_LOCK | id::SPIN_UNLOCK => m.domain().constant(0),
        id::LOOP => {
            // `u32 nr_loops`; flags are checked first, then the count (kernel/bpf/bpf_iter.c).
            let count = m.zext(&r1, 32);
            let max = m.domain().constant(MAX_BPF_LOOP_ITERATIONS);
            let too_many = m.domain().compare(CmpOp::Ult, &max, &count);
            let callback = Callback {
                helper,
                pc,
                function: m.function_of(pc, helper, &r2)?,
                ctx: r3,
                map: None,
                index: m.domain().constant(0),
                count,
                visited: None,
            };
            return start_callbacks(m, callback, &r4, too_many, E2BIG);
        }
        id::FOR_EACH_MAP_ELEM => {
            let map = m.map_of(pc, helper, &r1)?;
            let (map_type, entries) = (m.map_def(map).map_type, m.map_def(map).max_entries);
            // Arrays visit every index, `max_entries` of them (kernel/bpf/arraymap.c); hash maps
            // their elements, as many as there are (kernel/bpf/hashtab.c).
            let calls = if map_type.is_iterable_hash() {
                let empty = m.map_next_element(pc, map, None)?.is_none();
                if empty {
                    0
                } else {
                    entries
                }
            } else if matches!(map_type, MapType::ARRAY | MapType::PERCPU_ARRAY) {
                entries
            } else {
                return Err(bad_argument(
                    pc,
                    helper,
                    "only array and hash maps are iterated",
                ));
            };
            let count = m.domain().constant(u64::from(calls));
            let callback = Callback {
                helper,
                pc,
                function: m.function_of(pc, helper, &r2)?,
                ctx: r3,
                map: Some((map, r1)),
                index: m.domain().constant(0),
                count,
                visited: None,
            };
            let never = m.domain().truth(false);
            return start_callbacks(m, callback, &r4, never, 0);
        }
        _ => return Err(SemError::UnsupportedHelper { pc, id: helper }.into()),
    };
    m.regs()[0] = ret;
    Ok(HelperOutcome::Return)
}

/// Starts a helper that calls `callback.function` up to `callback.count` times: `-EINVAL` for
/// nonzero `flags`, else `-errno` where `refused` holds, else 0 for a count of 0, else the first
/// call.
fn start_callbacks<M: HelperMachine>(
    m: &mut M,
    callback: Callback<Val<M>>,
    flags: &Val<M>,
    refused: Bool<M>,
    errno: i64,
) -> Result<HelperOutcome, M::Fault> {
    let bad_flags = nonzero(m, flags);
    let none = m.is_zero(&callback.count);
    let (einval, other, zero) = (
        signed(m, -EINVAL),
        signed(m, -errno),
        m.domain().constant(0),
    );
    let d = m.domain();
    let refused = d.or(&bad_flags, &refused);
    let skipped = d.or(&refused, &none);
    let refusal = d.ite(&bad_flags, &einval, &other);
    let result = d.ite(&refused, &refusal, &zero);
    if m.decide(callback.pc, &skipped)? {
        m.regs()[0] = result;
        return Ok(HelperOutcome::Return);
    }
    call_back(m, callback)
}

/// Calls the callback for iteration `callback.index`: `(index, ctx, 0, 0, 0)` for `bpf_loop`,
/// `(map, &key, &value, ctx, 0)` for `bpf_for_each_map_elem`.
fn call_back<M: HelperMachine>(
    m: &mut M,
    mut callback: Callback<Val<M>>,
) -> Result<HelperOutcome, M::Fault> {
    let pc = callback.pc;
    let zero = m.domain().constant(0);
    let args = match &callback.map {
        None => [
            callback.index.clone(),
            callback.ctx.clone(),
            zero.clone(),
            zero.clone(),
            zero,
        ],
        Some((map, handle)) if m.map_def(*map).map_type.is_iterable_hash() => {
            let element = m
                .map_next_element(pc, *map, callback.visited)?
                .ok_or_else(|| bad_argument(pc, callback.helper, "the map has no next element"))?;
            callback.visited = Some(element.position);
            let key = m.callback_key(pc, &element.key)?;
            [
                handle.clone(),
                key,
                element.value,
                callback.ctx.clone(),
                zero,
            ]
        }
        Some((map, handle)) => {
            let key = key_bytes(m, &callback.index);
            let value = m.map_lookup(pc, *map, &key)?;
            let key = m.callback_key(pc, &key)?;
            [handle.clone(), key, value, callback.ctx.clone(), zero]
        }
    };
    let function = callback.function;
    enter_function(m, pc, Some(callback))?;
    for (r, v) in args.into_iter().enumerate() {
        m.regs()[r + 1] = v;
    }
    Ok(HelperOutcome::Callback(function))
}

/// Continues a helper whose callback returned with r0: a nonzero result stops the iteration, as
/// does the last one; the helper then returns the number of calls made. Otherwise the callback
/// is called for the next iteration.
pub fn resume<M: HelperMachine>(
    m: &mut M,
    mut callback: Callback<Val<M>>,
) -> Result<HelperOutcome, M::Fault> {
    let ret = m.regs()[0].clone();
    let calls = m.bin_c(BinOp::Add, &callback.index, 1);
    let stop = nonzero(m, &ret);
    let walked_hash = match callback.map {
        Some((map, _)) if m.map_def(map).map_type.is_iterable_hash() => Some(
            m.map_next_element(callback.pc, map, callback.visited)?
                .is_some(),
        ),
        _ => None,
    };
    let d = m.domain();
    let more = match walked_hash {
        Some(more) => d.truth(more),
        None => d.compare(CmpOp::Ult, &calls, &callback.count),
    };
    let last = d.not(&more);
    let done = d.or(&stop, &last);
    if m.decide(callback.pc, &done)? {
        m.regs()[0] = calls;
        return Ok(HelperOutcome::Return);
    }
    callback.index = calls;
    call_back(m, callback)
}

fn bad_argument<F: From<SemError>>(pc: usize, helper: u32, reason: &'static str) -> F {
    SemError::BadHelperArgument { pc, helper, reason }.into()
}

/// The key a map helper's key pointer points to.
fn read_key<M: HelperMachine + ?Sized>(
    m: &mut M,
    pc: usize,
    map: usize,
    addr: &Val<M>,
) -> Result<Vec<Val<M>>, M::Fault> {
    let key_size = m.map_def(map).key_size as u64;
    m.read_bytes(pc, addr, key_size)
}

/// The map a map-changing helper's handle refers to; a map of maps is refused, as the verifier
/// refuses it (`check_map_func_compatibility`, kernel/bpf/verifier.c): programs only look maps
/// of maps up, user space changes them.
fn changeable_map<M: HelperMachine>(
    m: &mut M,
    pc: usize,
    helper: u32,
    handle: &Val<M>,
) -> Result<usize, M::Fault> {
    let map = m.map_of(pc, helper, handle)?;
    if m.map_def(map).map_type.is_map_in_map() {
        return Err(bad_argument(
            pc,
            helper,
            "a program can only look up a map of maps, not change it",
        ));
    }
    Ok(map)
}

/// `bpf_map_lookup_elem` on map of maps `outer`, whose own lookup found `entry` (a pointer to
/// the slot, or zero): the inner map the slot holds, as a map handle for the next map helper
/// call, or zero (NULL) for an empty slot.
fn inner_map<M: HelperMachine>(
    m: &mut M,
    pc: usize,
    outer: usize,
    entry: &Val<M>,
) -> Result<Val<M>, M::Fault> {
    let zero = m.domain().constant(0);
    let exists = nonzero(m, entry);
    // Read the slot only where it exists: an empty slot has nothing to read.
    if !m.decide(pc, &exists)? {
        return Ok(zero);
    }
    let word = m.read_bytes(pc, entry, 4)?;
    let slot = from_bytes(m, &word);
    let handle = m.inner_map(pc, outer, &slot)?;
    Ok(m.domain().ite(&exists, &handle, &zero))
}

/// Whether `v != 0`.
fn nonzero<M: HelperMachine>(m: &mut M, v: &Val<M>) -> Bool<M> {
    let zero = m.domain().constant(0);
    let eq = m.domain().compare(CmpOp::Eq, v, &zero);
    m.domain().not(&eq)
}

/// A constant as a 64-bit two's-complement value (for negative errnos).
fn signed<M: HelperMachine>(m: &mut M, v: i64) -> Val<M> {
    m.domain().constant(v as u64)
}

/// The `n` little-endian bytes of `v`.
pub(crate) fn bytes_of<M: HelperMachine>(m: &mut M, v: &Val<M>, n: u64) -> Vec<Val<M>> {
    let mut out = Vec::with_capacity(n as usize);
    push_bytes_of(m, v, n, &mut out);
    out
}

/// [`bytes_of`] appended to `out` (one allocation for a record of several values).
pub(crate) fn push_bytes_of<M: HelperMachine>(
    m: &mut M,
    v: &Val<M>,
    n: u64,
    out: &mut Vec<Val<M>>,
) {
    for i in 0..n {
        out.push(byte_of(m, v, i));
    }
}

/// The 4 little-endian bytes of `v` ([`bytes_of`] with 4), in an array: the key of the
/// program-array and redirect-map lookups, built on every tail call and redirect, without an
/// allocation.
pub(crate) fn key_bytes<M: HelperMachine>(m: &mut M, v: &Val<M>) -> [Val<M>; 4] {
    std::array::from_fn(|i| byte_of(m, v, i as u64))
}

/// Byte `i` (little-endian) of `v`.
fn byte_of<M: HelperMachine>(m: &mut M, v: &Val<M>, i: u64) -> Val<M> {
    let shift = m.domain().constant(8 * i);
    let shifted = m.domain().binary(BinOp::LShr, v, &shift);
    m.zext(&shifted, 8)
}

/// The little-endian value of up to 8 bytes.
pub(crate) fn from_bytes<M: HelperMachine>(m: &mut M, bytes: &[Val<M>]) -> Val<M> {
    let mut v = m.domain().constant(0);
    for (i, b) in bytes.iter().enumerate().take(8) {
        let shift = m.domain().constant(8 * i as u64);
        let placed = m.domain().binary(BinOp::Shl, b, &shift);
        v = m.domain().binary(BinOp::Or, &v, &placed);
    }
    v
}

/// `bpf_redirect_map`: `XDP_REDIRECT` if the entry exists (or with `BPF_F_BROADCAST`), else the
/// action in the low flag bits; unknown flags abort.
fn redirect_map<M: HelperMachine>(
    m: &mut M,
    pc: usize,
    map: usize,
    key: &Val<M>,
    flags: &Val<M>,
) -> Result<Val<M>, M::Fault> {
    const ACTION_MASK: u64 = 3;
    const BROADCAST: u64 = 1 << 3;
    const EXCLUDE_INGRESS: u64 = 1 << 4;
    let map_type = m.map_def(map).map_type;
    let flag_mask = if matches!(map_type, MapType::DEVMAP | MapType::DEVMAP_HASH) {
        BROADCAST | EXCLUDE_INGRESS
    } else {
        0
    };
    let d = m.domain();
    let unknown_flags_mask = d.constant(!(ACTION_MASK | flag_mask));
    let unknown_flags = d.binary(BinOp::And, flags, &unknown_flags_mask);
    let bad_flags = nonzero(m, &unknown_flags);
    let key = m.zext(key, 32);
    let key_bytes = key_bytes(m, &key);
    let entry = m.map_lookup(pc, map, &key_bytes)?;
    let broadcast_bit = m.domain().constant(BROADCAST);
    let broadcast = m.domain().binary(BinOp::And, flags, &broadcast_bit);
    let broadcast = nonzero(m, &broadcast);
    let exists = nonzero(m, &entry);
    let d = m.domain();
    let flags_ok = d.not(&bad_flags);
    let found = d.or(&broadcast, &exists);
    let redirects = d.and(&flags_ok, &found);
    if m.decide(pc, &redirects)? {
        m.redirect(pc, RedirectTo::Map { map, key })?;
    }
    let d = m.domain();
    let action_mask = d.constant(ACTION_MASK);
    let fallback = d.binary(BinOp::And, flags, &action_mask);
    let redirect = d.constant(XDP_REDIRECT);
    let aborted = d.constant(XDP_ABORTED);
    let found_or_fallback = d.ite(&found, &redirect, &fallback);
    Ok(d.ite(&bad_flags, &aborted, &found_or_fallback))
}

/// `bpf_csum_diff(from, from_size, to, to_size, seed)` as Linux 6.13 and later compute it on x86-64:
/// with both buffers, the checksum of `to` (seeded) minus that of `from`; with one, that buffer's
/// checksum added to (`to`) or taken from (`from`) the seed; folded to 16 bits. Any sizes are
/// accepted (the verifier checks the buffers).
fn csum_diff<M: HelperMachine>(
    m: &mut M,
    pc: usize,
    [from, from_size, to, to_size, seed]: [&Val<M>; 5],
) -> Result<Val<M>, M::Fault> {
    let from_size = m.zext(from_size, 32);
    let to_size = m.zext(to_size, 32);
    let from_len = m.byte_count(pc, id::CSUM_DIFF, &from_size, FRAME_SIZE)?;
    let to_len = m.byte_count(pc, id::CSUM_DIFF, &to_size, FRAME_SIZE)?;
    let seed = m.zext(seed, 32);
    let zero = m.domain().constant(0);
    let not_seed = complement32(m, &seed);
    let to_seeded = csum_partial(m, pc, to, to_len, &seed)?;
    let from_plain = csum_partial(m, pc, from, from_len, &zero)?;
    let from_unseeded = csum_partial(m, pc, from, from_len, &not_seed)?;
    let diff = csum_sub(m, &to_seeded, &from_plain);
    let pulled = complement32(m, &from_unseeded);
    let has_from = nonzero(m, &from_size);
    let has_to = nonzero(m, &to_size);
    let d = m.domain();
    let both = d.and(&has_from, &has_to);
    let from_only = d.ite(&has_from, &pulled, &seed);
    let one = d.ite(&has_to, &to_seeded, &from_only);
    let sum = d.ite(&both, &diff, &one);
    Ok(csum_from32to16(m, &sum))
}

/// `~v` in 32 bits.
fn complement32<M: HelperMachine>(m: &mut M, v: &Val<M>) -> Val<M> {
    let ones = m.domain().constant(0xffff_ffff);
    m.domain().binary(BinOp::Xor, v, &ones)
}

/// `a + b` with the carry out of 64 bits added back in (one's-complement addition).
fn add_with_carry<M: HelperMachine>(m: &mut M, a: &Val<M>, b: &Val<M>) -> Val<M> {
    let d = m.domain();
    let sum = d.binary(BinOp::Add, a, b);
    let wrapped = d.compare(CmpOp::Ult, &sum, a);
    let (one, zero) = (d.constant(1), d.constant(0));
    let carry = d.ite(&wrapped, &one, &zero);
    d.binary(BinOp::Add, &sum, &carry)
}

/// x86-64's `csum_partial(buf, len, sum)`: the one's-complement sum of the buffer's little-endian
/// 64-bit words (the last one zero-padded) and `sum`, folded to 32 bits.
fn csum_partial<M: HelperMachine>(
    m: &mut M,
    pc: usize,
    buf: &Val<M>,
    len: u64,
    sum: &Val<M>,
) -> Result<Val<M>, M::Fault> {
    let mut total = sum.clone();
    if len > 0 {
        let bytes = m.read_bytes(pc, buf, len)?;
        for word in bytes.chunks(8) {
            let w = from_bytes(m, word);
            total = add_with_carry(m, &total, &w);
        }
    }
    // (t + ror64(t, 32)) >> 32: the two halves added, with the low half's carry.
    let d = m.domain();
    let k32 = d.constant(32);
    let high = d.binary(BinOp::LShr, &total, &k32);
    let low = d.binary(BinOp::Shl, &total, &k32);
    let rotated = d.binary(BinOp::Or, &high, &low);
    let folded = d.binary(BinOp::Add, &total, &rotated);
    Ok(d.binary(BinOp::LShr, &folded, &k32))
}

/// `csum_sub(a, b)` on 32-bit checksums: `a + ~b` with the carry added back.
fn csum_sub<M: HelperMachine>(m: &mut M, a: &Val<M>, b: &Val<M>) -> Val<M> {
    let not_b = complement32(m, b);
    let d = m.domain();
    let sum = d.binary(BinOp::Add, a, &not_b);
    let mask = d.constant(0xffff_ffff);
    let sum = d.binary(BinOp::And, &sum, &mask);
    let wrapped = d.compare(CmpOp::Ult, &sum, &not_b);
    let (one, zero) = (d.constant(1), d.constant(0));
    let carry = d.ite(&wrapped, &one, &zero);
    d.binary(BinOp::Add, &sum, &carry)
}

/// `csum_from32to16`: a 32-bit checksum folded to 16 bits, the halves added with the carry.
fn csum_from32to16<M: HelperMachine>(m: &mut M, sum: &Val<M>) -> Val<M> {
    let d = m.domain();
    let (k16, mask) = (d.constant(16), d.constant(0xffff_ffff));
    let up = d.binary(BinOp::Shl, sum, &k16);
    let down = d.binary(BinOp::LShr, sum, &k16);
    let rotated = d.binary(BinOp::Or, &up, &down);
    let rotated = d.binary(BinOp::And, &rotated, &mask);
    let added = d.binary(BinOp::Add, sum, &rotated);
    let added = d.binary(BinOp::And, &added, &mask);
    d.binary(BinOp::LShr, &added, &k16)
}

/// Which bound an adjust helper moves.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Adjust {
    Head,
    Meta,
}

/// `bpf_xdp_adjust_head/meta(ctx, delta)`: moves `data` (with the metadata) or `data_meta` by
/// `delta` where the result stays inside the frame with an Ethernet header's worth of packet (and
/// metadata a multiple of 4 bytes, at most `MAX_META_LEN`); else `-EINVAL` (`-EACCES` for a
/// metadata size that is misaligned or too long) and nothing changes.
fn adjust<M: HelperMachine>(
    m: &mut M,
    pc: usize,
    which: Adjust,
    delta: &Val<M>,
) -> Result<Val<M>, M::Fault> {
    let delta = m.sext(delta, 32);
    let b = m.packet_bounds();
    let c = |m: &mut M, v: u64| m.domain().constant(v);
    let (frame, eth) = (c(m, XDP_FRAME), c(m, ETH_HLEN));
    let d = m.domain();
    // All bounds are offsets below 4096, so signed comparisons of their sums with `delta` are
    // exact.
    let (new, low, high, misaligned) = match which {
        Adjust::Head => {
            let meta_len = d.binary(BinOp::Sub, &b.data, &b.data_meta);
            let new_data = d.binary(BinOp::Add, &b.data, &delta);
            let low = d.binary(BinOp::Add, &frame, &meta_len);
            let high = d.binary(BinOp::Sub, &b.data_end, &eth);
            let new_meta = d.binary(BinOp::Sub, &new_data, &meta_len);
            let new = PacketBounds {
                data_meta: new_meta,
                data: new_data.clone(),
                data_end: b.data_end.clone(),
            };
            (new, (new_data.clone(), low), (new_data, high), None)
        }
        Adjust::Meta => {
            let new_meta = d.binary(BinOp::Add, &b.data_meta, &delta);
            let len = d.binary(BinOp::Sub, &b.data, &new_meta);
            let (three, zero, max) = (d.constant(3), d.constant(0), d.constant(MAX_META_LEN));
            let low_bits = d.binary(BinOp::And, &len, &three);
            let aligned = d.compare(CmpOp::Eq, &low_bits, &zero);
            let misaligned = d.not(&aligned);
            let too_long = d.compare(CmpOp::Ult, &max, &len);
            let bad_len = d.or(&misaligned, &too_long);
            let new = PacketBounds {
                data_meta: new_meta.clone(),
                data: b.data.clone(),
                data_end: b.data_end.clone(),
            };
            (
                new,
                (new_meta.clone(), frame),
                (new_meta, b.data.clone()),
                Some(bad_len),
            )
        }
    };
    let d = m.domain();
    let below = d.compare(CmpOp::Slt, &low.0, &low.1);
    let above = d.compare(CmpOp::Slt, &high.1, &high.0);
    let out_of_frame = d.or(&below, &above);
    let misaligned = match misaligned {
        Some(bad_len) => bad_len,
        None => m.domain().truth(false),
    };
    let d = m.domain();
    let in_frame = d.not(&out_of_frame);
    let aligned = d.not(&misaligned);
    let ok = d.and(&in_frame, &aligned);
    if m.decide(pc, &ok)? {
        m.set_packet_bounds(pc, new)?;
    }
    let (zero, einval, eacces) = (c(m, 0), signed(m, -EINVAL), signed(m, -EACCES));
    let d = m.domain();
    let aligned_or_not = d.ite(&misaligned, &eacces, &zero);
    Ok(d.ite(&out_of_frame, &einval, &aligned_or_not))
}

/// `bpf_xdp_adjust_tail(ctx, delta)`. A single-buffer packet's `data_end` moves by `delta` where
/// it stays within the frame's tailroom with an Ethernet header's worth of packet. A multi-buffer
/// packet (`bpf_xdp_frags_increase_tail` / `_shrink_tail`) grows its last fragment by `delta`
/// within that fragment's page, or shrinks by `-delta` leaving at least an Ethernet header's worth
/// of bytes in all: the bytes come off the fragments from the last one, emptied fragments are
/// dropped, and once none is left the rest comes off `data_end`. Otherwise `-EINVAL` and nothing
/// changes.
fn adjust_tail<M: HelperMachine>(m: &mut M, pc: usize, delta: &Val<M>) -> Result<Val<M>, M::Fault> {
    let delta = m.sext(delta, 32);
    let b = m.packet_bounds();
    let f = m.packet_frags();
    let has_frags = nonzero(m, &f.len);
    let c = |m: &mut M, v: u64| m.domain().constant(v);
    let (zero, eth, frag_size) = (c(m, 0), c(m, ETH_HLEN), c(m, FRAG_SIZE));
    let (high, int_min) = (c(m, FRAME_SIZE - SHARED_INFO), signed(m, i32::MIN.into()));
    let d = m.domain();
    // Single buffer. The bounds are offsets below 4096, so signed comparisons of their sums with
    // `delta` are exact.
    let new_end = d.binary(BinOp::Add, &b.data_end, &delta);
    let low = d.binary(BinOp::Add, &b.data, &eth);
    let below = d.compare(CmpOp::Slt, &new_end, &low);
    let above = d.compare(CmpOp::Slt, &high, &new_end);
    let linear_bad = d.or(&below, &above);
    // Fragments, growing: the last one's page has `FRAG_SIZE - last` bytes of room.
    let grows = d.compare(CmpOp::Sle, &zero, &delta);
    let room = d.binary(BinOp::Sub, &frag_size, &f.last);
    let grow_bad = d.compare(CmpOp::Ult, &room, &delta);
    // Fragments, shrinking by `-delta`, an `int` in the kernel: `-INT_MIN` is `INT_MIN` again,
    // which passes the length check and removes nothing.
    let shrink = d.binary(BinOp::Sub, &zero, &delta);
    let linear_len = d.binary(BinOp::Sub, &b.data_end, &b.data);
    let total = d.binary(BinOp::Add, &linear_len, &f.len);
    let most = d.binary(BinOp::Sub, &total, &eth);
    let too_much = d.compare(CmpOp::Slt, &most, &shrink);
    let is_int_min = d.compare(CmpOp::Eq, &delta, &int_min);
    let not_int_min = d.not(&is_int_min);
    let shrink_bad = d.and(&too_much, &not_int_min);
    let (grow_ok, shrink_ok) = (d.not(&grow_bad), d.not(&shrink_bad));
    let shrinks = d.not(&grows);
    let grow_ok = d.and(&grows, &grow_ok);
    let shrink_ok = d.and(&shrinks, &shrink_ok);
    let frags_ok = d.or(&grow_ok, &shrink_ok);
    let no_frags = d.not(&has_frags);
    let linear_ok = d.not(&linear_bad);
    let linear_moves = d.and(&no_frags, &linear_ok);
    let frags_move = d.and(&has_frags, &frags_ok);
    let ok = d.or(&linear_moves, &frags_move);
    if m.decide(pc, &linear_moves)? {
        let new = PacketBounds {
            data_meta: b.data_meta.clone(),
            data: b.data.clone(),
            data_end: new_end,
        };
        m.set_packet_bounds(pc, new)?;
    }
    let d = m.domain();
    let frags_grow = d.and(&has_frags, &grow_ok);
    if m.decide(pc, &frags_grow)? {
        let len = m.domain().binary(BinOp::Add, &f.len, &delta);
        m.set_frags_len(pc, &len)?;
    }
    let d = m.domain();
    let removes = d.and(&shrink_ok, &not_int_min);
    let frags_shrink = d.and(&has_frags, &removes);
    if m.decide(pc, &frags_shrink)? {
        let d = m.domain();
        let within = d.compare(CmpOp::Ult, &shrink, &f.len);
        let from_frags = d.ite(&within, &shrink, &f.len);
        let len = d.binary(BinOp::Sub, &f.len, &from_frags);
        let rest = d.binary(BinOp::Sub, &shrink, &from_frags);
        m.set_frags_len(pc, &len)?;
        let from_linear = nonzero(m, &rest);
        if m.decide(pc, &from_linear)? {
            let end = m.domain().binary(BinOp::Sub, &b.data_end, &rest);
            let new = PacketBounds {
                data_meta: b.data_meta.clone(),
                data: b.data.clone(),
                data_end: end,
            };
            m.set_packet_bounds(pc, new)?;
        }
    }
    let einval = signed(m, -EINVAL);
    Ok(m.domain().ite(&ok, &zero, &einval))
}

/// `bpf_xdp_get_buff_len(ctx)`: the linear part and the fragments.
fn buff_len<M: HelperMachine>(m: &mut M) -> Val<M> {
    let b = m.packet_bounds();
    let f = m.packet_frags();
    let d = m.domain();
    let linear = d.binary(BinOp::Sub, &b.data_end, &b.data);
    d.binary(BinOp::Add, &linear, &f.len)
}

/// `bpf_xdp_load_bytes(ctx, offset, buf, len)` and `bpf_xdp_store_bytes`: copy `len` bytes between
/// the packet at `offset` from `data` (through the linear part into the fragments) and `buf`;
/// `-EFAULT` for an offset or length above 0xffff, `-EINVAL` where the range leaves the packet.
fn packet_bytes<M: HelperMachine>(
    m: &mut M,
    pc: usize,
    helper: u32,
    offset: &Val<M>,
    buf: &Val<M>,
    len: &Val<M>,
) -> Result<Val<M>, M::Fault> {
    const LIMIT: u64 = 0xffff;
    let offset = m.zext(offset, 32);
    let len = m.zext(len, 32);
    let count = m.byte_count(pc, helper, &len, LIMIT)?;
    let total = buff_len(m);
    let d = m.domain();
    let limit = d.constant(LIMIT);
    let offset_too_big = d.compare(CmpOp::Ult, &limit, &offset);
    let len_too_big = d.compare(CmpOp::Ult, &limit, &len);
    let fault = d.or(&offset_too_big, &len_too_big);
    let end = d.binary(BinOp::Add, &offset, &len);
    let past_end = d.compare(CmpOp::Ult, &total, &end);
    let refused = d.or(&fault, &past_end);
    let ok = d.not(&refused);
    if m.decide(pc, &ok)? {
        if helper == id::XDP_LOAD_BYTES {
            let bytes = m.read_packet(pc, &offset, count)?;
            m.write_bytes(pc, buf, &bytes)?;
        } else {
            let bytes = m.read_bytes(pc, buf, count)?;
            m.write_packet(pc, &offset, &bytes)?;
        }
    }
    let (zero, efault, einval) = (
        m.domain().constant(0),
        signed(m, -EFAULT),
        signed(m, -EINVAL),
    );
    let d = m.domain();
    let past = d.ite(&past_end, &einval, &zero);
    Ok(d.ite(&fault, &efault, &past))
}

/// `struct bpf_fib_lookup` fields the helper reads and writes (byte offsets).
mod fib {
    pub const FAMILY: u64 = 0;
    pub const IFINDEX: u64 = 8;
    pub const DST: u64 = 32;
    pub const SMAC: u64 = 52;
    pub const DMAC: u64 = 58;
    pub const AF_INET: u64 = 2;
    pub const AF_INET6: u64 = 10;
    /// `BPF_FIB_LKUP_RET_NOT_FWDED`.
    pub const NOT_FORWARDED: u64 = 4;
}

/// `bpf_fib_lookup(ctx, params, plen, flags)` against the machine's routing table: on a route,
/// writes the egress ifindex and MAC addresses into `params` and returns 0; without one, returns
/// `BPF_FIB_LKUP_RET_NOT_FWDED`; `-EINVAL` for a short `plen`, `-EAFNOSUPPORT` for a family other
/// than IPv4 and IPv6.
fn fib_lookup<M: HelperMachine>(
    m: &mut M,
    pc: usize,
    params: &Val<M>,
    plen: &Val<M>,
) -> Result<Val<M>, M::Fault> {
    let plen = m.zext(plen, 32);
    let size = m.domain().constant(FIB_LOOKUP_PARAMS);
    let short = m.domain().compare(CmpOp::Ult, &plen, &size);
    let long_enough = m.domain().not(&short);
    let einval = signed(m, -EINVAL);
    if !m.decide(pc, &long_enough)? {
        return Ok(einval);
    }
    let p = m.read_bytes(pc, params, FIB_LOOKUP_PARAMS)?;
    let mut result = signed(m, -EAFNOSUPPORT);
    for (family, addr_len) in [(fib::AF_INET, 4), (fib::AF_INET6, 16)] {
        let family_value = m.domain().constant(family);
        let is_family = m
            .domain()
            .compare(CmpOp::Eq, &p[fib::FAMILY as usize], &family_value);
        if !m.decide(pc, &is_family)? {
            continue;
        }
        let dst = &p[fib::DST as usize..fib::DST as usize + addr_len];
        let route = m.fib_route(pc, family == fib::AF_INET6, dst)?;
        let writes = m.domain().and(&is_family, &route.found);
        if m.decide(pc, &writes)? {
            let mut out = p.clone();
            let ifindex = bytes_of(m, &route.ifindex, 4);
            for (field, bytes) in [
                (fib::IFINDEX, &ifindex[..]),
                (fib::SMAC, &route.smac[..]),
                (fib::DMAC, &route.dmac[..]),
            ] {
                out[field as usize..field as usize + bytes.len()].clone_from_slice(bytes);
            }
            m.write_bytes(pc, params, &out)?;
        }
        let (zero, not_forwarded) = (
            m.domain().constant(0),
            m.domain().constant(fib::NOT_FORWARDED),
        );
        let answer = m.domain().ite(&route.found, &zero, &not_forwarded);
        result = m.domain().ite(&is_family, &answer, &result);
    }
    Ok(m.domain().ite(&short, &einval, &result))
}

/// `bpf_trace_printk(fmt, fmt_size, a, b, c)`: formats with up to three arguments, records the
/// line and returns the number of bytes written; `-EINVAL` without a terminating NUL. Where the
/// machine does not know the text exactly, the length is unknown.
fn trace_printk<M: HelperMachine>(
    m: &mut M,
    pc: usize,
    fmt: &Val<M>,
    fmt_size: &Val<M>,
    args: [Val<M>; 3],
) -> Result<Val<M>, M::Fault> {
    let fmt_size = m.zext(fmt_size, 32);
    let len = m.byte_count(pc, id::TRACE_PRINTK, &fmt_size, FRAME_SIZE)?;
    let bytes = m.read_bytes(pc, fmt, len)?;
    let known: Option<Vec<u8>> = bytes
        .iter()
        .map(|b| m.constant_of(b).map(|v| v as u8))
        .collect();
    let args: Option<Vec<u64>> = args.iter().map(|a| m.constant_of(a)).collect();
    let (Some(bytes), Some(args)) = (known, args) else {
        return m.unknown(pc);
    };
    let Some(end) = bytes.iter().position(|b| *b == 0) else {
        return Ok(signed(m, -EINVAL));
    };
    let fmt = String::from_utf8_lossy(&bytes[..end]).into_owned();
    let text = format_printk(&fmt, &args);
    let written = text.len() as u64;
    m.trace(pc, text.trim_end_matches('\n').to_string());
    Ok(m.domain().constant(written))
}

/// A small printf for the conversions BPF programs use: `%d %i %u %x %X %c %p %%` with `l`/`ll`
/// and `h` modifiers.
pub fn format_printk(fmt: &str, args: &[u64]) -> String {
    let mut out = String::new();
    let mut next_arg = args.iter();
    let mut chars = fmt.chars().peekable();
    while let Some(c) = chars.next() {
        if c != '%' {
            out.push(c);
            continue;
        }
        let mut longs = 0;
        while let Some(&modifier) = chars.peek() {
            match modifier {
                'l' => longs += 1,
                'h' | 'z' => {}
                _ => break,
            }
            chars.next();
        }
        let Some(conv) = chars.next() else { break };
        if conv == '%' {
            out.push('%');
            continue;
        }
        let v = next_arg.next().copied().unwrap_or(0);
        let v = if longs == 0 { v as u32 as u64 } else { v };
        match conv {
            'd' | 'i' if longs == 0 => out.push_str(&(v as u32 as i32).to_string()),
            'd' | 'i' => out.push_str(&(v as i64).to_string()),
            'u' => out.push_str(&v.to_string()),
            'x' => out.push_str(&format!("{v:x}")),
            'X' => out.push_str(&format!("{v:X}")),
            'c' => out.push(char::from(v as u8)),
            'p' => out.push_str(&format!("{v:#x}")),
            other => {
                out.push('%');
                out.push(other);
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn printk_formats_common_conversions() {
        assert_eq!(
            format_printk("a=%d b=%llu c=%x %%\n", &[(-5i64) as u64, 7, 255]),
            "a=-5 b=7 c=ff %\n"
        );
    }

    #[test]
    fn every_supported_helper_has_a_name() {
        for &h in SUPPORTED {
            assert_ne!(
                linerate_bpf::helpers::helper_name(h),
                "unknown",
                "helper {h}"
            );
        }
    }
}
