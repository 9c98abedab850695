//! The traffic driver: an XDP program, written by linerate, that makes `BPF_PROG_TEST_RUN`
//! run an NF over a packet set instead of one packet repeated, or run it in steady state on one
//! packet it would otherwise change.
//!
//! Each run the driver
//! 1. takes the index `i` of the next packet from its `cursor` array (and advances it, wrapping
//!    at the set's size),
//! 2. puts back what the previous run changed ([`Restore`]): for a packet set, the first
//!    bytes of packet `i` (its headers; held in the `packets` array) over the test packet, whose
//!    length is the set's packet length; for one packet, whatever an NF's run changes: the
//!    bytes it rewrote, its head, length and metadata, and the entries of its maps it wrote,
//!    added or removed, and
//! 3. tail-calls slot 0 of its `nf` program array, where the NF program sits unchanged.
//!
//! So consecutive runs see different flows (the NF's map state is touched as real traffic would
//! touch it), an NF that rewrites its packet sees fresh headers next run (no TTL counting
//! down across repeats), and an NF that counts, inserts a flow or moves its packet's head runs
//! the same path every run. What the driver itself costs is measured by attaching a program
//! that only returns XDP_PASS behind the same driver (which then does the same work: the
//! restoring helpers are called whatever the run changed); [`TrafficDriver::nf_ns`] subtracts
//! it.
//!
//! Timings take the slope between two repeat counts, which cancels what a test-run call costs
//! once (the first run is cold: several µs here).
//!
//! An *alternating* driver ([`TrafficDriver::alternating`]) times an NF against the empty
//! program within one call instead: its runs tail-call the NF and a program that only returns
//! by turns, and each run adds the time since the previous run began (`bpf_ktime_get_ns`) to
//! the previous run's side. Both sides see the same moments of this host, whose speed can
//! change between two calls (each call with `repeat > 1` waits about 55 ms for the kernel to
//! add the driver to the XDP dispatcher and remove it); their difference is the NF's time over
//! the empty program ([`TrafficDriver::run_alternating`]).

use std::ops::Range;
use std::os::fd::BorrowedFd;

use linerate_bpf::emit::{write_object, MapSpec, ObjectSpec, ProgramSpec};
use linerate_bpf::facts::xdp::XDP_PASS;
use linerate_bpf::facts::xdp_md;
use linerate_bpf::helpers::id::{
    KTIME_GET_NS, MAP_DELETE_ELEM, MAP_LOOKUP_ELEM, MAP_UPDATE_ELEM, TAIL_CALL, XDP_ADJUST_HEAD,
    XDP_ADJUST_META, XDP_ADJUST_TAIL,
};
use linerate_bpf::insn::build::{
    add64, alu64, alu64_reg, call_helper, exit, ja, jmp, jump, ld_map, ldx, mov64, mov64_reg, st,
    stx,
};
use linerate_bpf::insn::{AluOp, Cond, Instruction, Operand, Size};
use linerate_bpf::{MapType, Object, Program};
use linerate_kernel::{
    load_object, load_object_sharing, KernelError, LoadedObject, TestRunInput, TestRunOutput,
};

/// Header bytes copied per run at most: enough for Ethernet, a VLAN tag, IPv6 and TCP with
/// options.
pub const MAX_COPY: usize = 128;

/// Why a driver cannot be built or run.
#[derive(Debug, thiserror::Error)]
pub enum DriverError {
    #[error("the packet set is empty")]
    EmptySet,
    #[error("packet {index} is {len} bytes, the set's packets are {expected}")]
    UnevenSet {
        index: usize,
        len: usize,
        expected: usize,
    },
    #[error("packets of {0} bytes are shorter than an Ethernet header")]
    TooShort(usize),
    #[error("the driver program: {0}")]
    Emit(#[from] linerate_bpf::emit::EmitError),
    #[error("the driver object: {0}")]
    Object(#[from] linerate_bpf::ObjectError),
    #[error(transparent)]
    Kernel(#[from] KernelError),
    #[error("the NF's program {0} has no file descriptor after loading")]
    NoProgram(usize),
    #[error("the NF has no map {0} to restore entries of")]
    NoMap(usize),
}

/// Map indices in the driver object; the NF's maps it restores entries of follow `SHARED`.
const CURSOR: u32 = 0;
const PACKETS: u32 = 1;
const NF: u32 = 2;
/// The head position the call's first run found (see [`Restore::geometry`]).
const STATE: u32 = 3;
/// The metadata bytes and the map entries the driver writes back, in one value.
const SAVED: u32 = 4;
/// An alternating driver's clock (see [`CLOCK`]).
const CLOCK: u32 = 5;
const SHARED: u32 = 6;

/// Bytes of [`CLOCK`]'s value, u64 words: when the previous run began (0: no run yet in this
/// call), the slot it tail-called, the ns summed on each slot's side, the runs summed on each
/// side, and the runs left out (a gap longer than the driver's limit: the test run yielded the
/// CPU, or the host took it away).
const CLOCK_SIZE: usize = 56;

/// The slots of an alternating driver's program array.
const NF_SLOT: u32 = 0;
const EMPTY_SLOT: u32 = 1;

/// Bytes of [`STATE`]'s value: whether the call's first run was seen, the head it found, and
/// the head now (a packet pointer becomes a number by a round trip through a map value).
const STATE_SIZE: usize = 24;

/// A loaded driver over one packet set.
pub struct TrafficDriver {
    loaded: LoadedObject,
    /// What every call runs: the set's first packet, and the context and metadata.
    input: TestRunInput,
    packets: usize,
    copy: usize,
    /// Whether every call must start with [`STATE`] cleared (see [`Restore::geometry`]).
    geometry: bool,
    /// The driver program's section, which programs behind it must match in whether they take
    /// multi-buffer packets.
    section: String,
    /// An alternating driver's empty program, in its [`EMPTY_SLOT`].
    empty: Option<LoadedObject>,
}

/// The section of a driver and of programs behind it that take multi-buffer packets.
const FRAGS_SECTION: &str = "xdp.frags";

/// What the driver writes back before every run, so that every run starts where the first did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Restore {
    /// Packet bytes `start..end`, from the set's packet of the run.
    pub bytes: Range<usize>,
    /// Whether to put back what `bpf_xdp_adjust_head`, `_tail` and `_meta` move: the head where
    /// the call's first run found it, the packet's length and the metadata's length and bytes
    /// as the input has them.
    pub geometry: bool,
    /// Entries of the NF's maps to put back.
    pub entries: Vec<RestoredEntry>,
}

/// An entry of one of the NF's maps that the driver puts back before every run.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RestoredEntry {
    /// The map, an index into the NF object's maps.
    pub map: usize,
    pub key: Vec<u8>,
    /// The value to write back; for a key the run added, the value it added.
    pub value: Vec<u8>,
    pub change: Change,
}

/// What a run did to a map entry, which decides how the driver puts it back. Each way costs
/// the driver the same whether the NF or a program that changes nothing ran before: it writes
/// or deletes an entry that is there either way, or inserts one that is missing either way, up
/// to the difference between inserting an element and replacing one.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Change {
    /// The run changed the value: written back.
    Changed,
    /// The run removed the entry: written back twice (the second write replaces, as the
    /// first does when nothing was removed).
    Removed,
    /// The run added the entry: written (replacing the run's, or inserting it when nothing
    /// ran), then deleted.
    Added,
}

impl Restore {
    /// Only the headers: the first [`restored_bytes`] of packets of `len` bytes.
    pub fn headers(len: usize) -> Restore {
        Restore {
            bytes: 0..restored_bytes(len),
            ..Restore::default()
        }
    }

    /// The NF maps the entries name, each once, in the order of their first entry.
    fn maps(&self) -> Vec<usize> {
        let mut maps: Vec<usize> = Vec::new();
        for entry in &self.entries {
            if !maps.contains(&entry.map) {
                maps.push(entry.map);
            }
        }
        maps
    }
}

/// [`SAVED`]'s value: the metadata (when the geometry is restored), then each entry's key and
/// value, every part starting at a multiple of 8; and where each entry's parts start.
fn saved_value(restore: &Restore, meta: &[u8]) -> (Vec<u8>, Vec<(usize, usize)>) {
    let mut bytes = Vec::new();
    let mut append = |part: &[u8]| {
        let at = bytes.len();
        bytes.extend_from_slice(part);
        bytes.resize(bytes.len().next_multiple_of(8), 0);
        at
    };
    if restore.geometry {
        append(meta);
    }
    let offsets = restore
        .entries
        .iter()
        .map(|e| (append(&e.key), append(&e.value)))
        .collect();
    bytes.resize(bytes.len().max(8), 0);
    (bytes, offsets)
}

/// An instruction of the driver, or a jump to its `fail` exit (placed once the code is laid out).
enum Step {
    Insn(Instruction),
    Fail(Cond, u8, Operand),
}

/// Steps that copy `len` bytes from `src + from` to `dst + to`, in the widest loads that fit.
fn copy_steps(dst: u8, to: usize, src: u8, from: usize, len: usize) -> Vec<Step> {
    let mut steps = Vec::new();
    let mut done = 0;
    while done < len {
        let (size, width) = [(Size::Dw, 8), (Size::W, 4), (Size::H, 2), (Size::B, 1)]
            .into_iter()
            .find(|(_, w)| done + w <= len)
            .unwrap_or((Size::B, 1));
        let at = |base: usize| i16::try_from(base + done).unwrap_or(i16::MAX);
        steps.push(Step::Insn(ldx(size, 5, src, at(from))));
        steps.push(Step::Insn(stx(size, dst, at(to), 5)));
        done += width;
    }
    steps
}

/// `r0 = &map[0]` of a one-element array, or the `fail` exit.
fn lookup_first(map: u32) -> [Step; 6] {
    lookup(map, st(Size::W, 10, -4, 0))
}

/// `r0 = &map[key]`, the key a 4-byte word that `store_key` writes at `r10 - 4`, or the `fail`
/// exit.
fn lookup(map: u32, store_key: Instruction) -> [Step; 6] {
    use Step::{Fail, Insn};
    [
        Insn(store_key),
        Insn(ld_map(1, map)),
        Insn(mov64_reg(2, 10)),
        Insn(add64(2, -4)),
        Insn(call_helper(MAP_LOOKUP_ELEM)),
        Fail(Cond::Eq, 0, Operand::Imm(0)),
    ]
}

/// `n` as an instruction's immediate (saturating: sizes here are far below `i32::MAX`).
fn imm(n: usize) -> i32 {
    i32::try_from(n).unwrap_or(i32::MAX)
}

/// Offsets of `struct xdp_md`'s packet pointers, as load offsets.
const CTX_DATA: i16 = xdp_md::DATA as i16;
const CTX_DATA_END: i16 = xdp_md::DATA_END as i16;
const CTX_DATA_META: i16 = xdp_md::DATA_META as i16;

/// `r2 = ctx->start`, `r3 = ctx->end` (the context in r6), then the `fail` exit unless `n`
/// bytes from `r2` lie below `r3`.
fn room(start: i16, end: i16, n: usize) -> [Step; 5] {
    use Step::{Fail, Insn};
    [
        Insn(ldx(Size::W, 2, 6, start)),
        Insn(ldx(Size::W, 3, 6, end)),
        Insn(mov64_reg(4, 2)),
        Insn(add64(4, imm(n))),
        Fail(Cond::Gt, 4, Operand::Reg(3)),
    ]
}

/// `helper(ctx, r2)` with the context in r6, then the `fail` exit if it did not return 0.
fn adjust(helper: u32) -> [Step; 3] {
    use Step::{Fail, Insn};
    [
        Insn(mov64_reg(1, 6)),
        Insn(call_helper(helper)),
        Fail(Cond::Ne, 0, Operand::Imm(0)),
    ]
}

/// The steps that put the head, metadata and length back (see [`Restore::geometry`]). The
/// helpers are called whether or not anything moved, so that the driver costs the same with
/// any program behind it.
fn geometry_steps(len: usize, meta_len: usize) -> Vec<Step> {
    use Step::Insn;
    let mut steps: Vec<Step> = lookup_first(STATE).into();
    steps.extend([
        Insn(mov64_reg(8, 0)),
        // state = {seen, first head, head now}; the first run of a call records its head.
        Insn(ldx(Size::W, 2, 6, CTX_DATA)),
        Insn(stx(Size::Dw, 8, 16, 2)),
        Insn(ldx(Size::Dw, 3, 8, 0)),
        Insn(jmp(Cond::Ne, 3, 0, 2)),
        Insn(st(Size::Dw, 8, 0, 1)),
        Insn(stx(Size::Dw, 8, 8, 2)),
        // The head back where the call's first run found it.
        Insn(ldx(Size::Dw, 2, 8, 8)),
        Insn(ldx(Size::Dw, 3, 8, 16)),
        Insn(alu64_reg(AluOp::Sub, 2, 3)),
    ]);
    steps.extend(adjust(XDP_ADJUST_HEAD));
    // The metadata's length back: meta += (data - meta) - meta_len.
    steps.extend([
        Insn(ldx(Size::W, 2, 6, CTX_DATA)),
        Insn(ldx(Size::W, 3, 6, CTX_DATA_META)),
        Insn(alu64_reg(AluOp::Sub, 2, 3)),
        Insn(add64(2, -imm(meta_len))),
    ]);
    steps.extend(adjust(XDP_ADJUST_META));
    // The length back: tail += len - (data_end - data).
    steps.extend([
        Insn(ldx(Size::W, 3, 6, CTX_DATA_END)),
        Insn(ldx(Size::W, 4, 6, CTX_DATA)),
        Insn(alu64_reg(AluOp::Sub, 3, 4)),
        Insn(mov64(2, imm(len))),
        Insn(alu64_reg(AluOp::Sub, 2, 3)),
    ]);
    steps.extend(adjust(XDP_ADJUST_TAIL));
    steps
}

/// The steps of an alternating driver before its tail call (see [`CLOCK`]): the time since the
/// previous run began goes to that run's side, unless it exceeds `limit_ns`; then `r3` is the
/// slot to call, the other one.
fn clock_steps(limit_ns: u32) -> Vec<Step> {
    use Step::Insn;
    let limit = i32::try_from(limit_ns).unwrap_or(i32::MAX);
    let mut steps: Vec<Step> = lookup_first(CLOCK).into();
    steps.extend([
        Insn(mov64_reg(9, 0)),
        Insn(call_helper(KTIME_GET_NS)),
        Insn(ldx(Size::Dw, 1, 9, 0)),
        // The call's first run has no previous run to account for.
        Insn(jmp(Cond::Eq, 1, 0, 18)),
        Insn(mov64_reg(2, 0)),
        Insn(alu64_reg(AluOp::Sub, 2, 1)),
        Insn(jmp(Cond::Gt, 2, limit, 12)),
        // sum[slot] += now - previous; runs[slot] += 1
        Insn(ldx(Size::Dw, 3, 9, 8)),
        Insn(alu64(AluOp::And, 3, 1)),
        Insn(alu64(AluOp::Lsh, 3, 3)),
        Insn(mov64_reg(4, 9)),
        Insn(alu64_reg(AluOp::Add, 4, 3)),
        Insn(ldx(Size::Dw, 5, 4, 16)),
        Insn(alu64_reg(AluOp::Add, 5, 2)),
        Insn(stx(Size::Dw, 4, 16, 5)),
        Insn(ldx(Size::Dw, 5, 4, 32)),
        Insn(add64(5, 1)),
        Insn(stx(Size::Dw, 4, 32, 5)),
        Insn(ja(3)),
        // A gap beyond the limit: left out, counted.
        Insn(ldx(Size::Dw, 5, 9, 48)),
        Insn(add64(5, 1)),
        Insn(stx(Size::Dw, 9, 48, 5)),
        // previous = now; slot ^= 1
        Insn(stx(Size::Dw, 9, 0, 0)),
        Insn(ldx(Size::Dw, 3, 9, 8)),
        Insn(alu64(AluOp::Xor, 3, 1)),
        Insn(alu64(AluOp::And, 3, 1)),
        Insn(stx(Size::Dw, 9, 8, 3)),
    ]);
    steps
}

/// The driver's instructions for a set of `packets` packets of `len` bytes with `meta_len`
/// bytes of metadata, restoring `restore` before it tail-calls the NF (alternating with the
/// empty program and timing both when `alternate` gives a limit, see [`clock_steps`]).
/// `offsets` are where [`saved_value`] put the metadata and each entry's key and value.
fn driver_program(
    packets: u32,
    len: usize,
    meta_len: usize,
    restore: &Restore,
    offsets: &[(usize, usize)],
    alternate: Option<u32>,
) -> Vec<Instruction> {
    use Step::Insn;
    let mut steps = vec![Insn(mov64_reg(6, 1))];
    // r7 = cursor[0], the index of this run's packet; cursor[0] = (r7 + 1) mod packets.
    steps.extend(lookup_first(CURSOR));
    steps.extend([
        Insn(ldx(Size::Dw, 7, 0, 0)),
        Insn(mov64_reg(8, 7)),
        Insn(add64(8, 1)),
        Insn(jmp(Cond::Lt, 8, imm(packets as usize), 1)),
        Insn(mov64(8, 0)),
        Insn(stx(Size::Dw, 0, 0, 8)),
    ]);
    if restore.geometry {
        steps.extend(geometry_steps(len, meta_len));
    }
    let bytes = &restore.bytes;
    if !bytes.is_empty() {
        // r0 = &packets[r7]
        steps.extend(lookup(PACKETS, stx(Size::W, 10, -4, 7)));
        // The test packet must hold the bytes (the verifier wants the check too).
        steps.extend(room(CTX_DATA, CTX_DATA_END, bytes.end));
        steps.extend(copy_steps(2, bytes.start, 0, 0, bytes.len()));
    }
    let meta_copied = restore.geometry && meta_len > 0;
    if meta_copied || !restore.entries.is_empty() {
        steps.extend(lookup_first(SAVED));
        steps.push(Insn(mov64_reg(9, 0)));
    }
    if meta_copied {
        steps.extend(room(CTX_DATA_META, CTX_DATA, meta_len));
        steps.extend(copy_steps(2, 0, 9, 0, meta_len));
    }
    let maps = restore.maps();
    for (entry, (key_at, value_at)) in restore.entries.iter().zip(offsets) {
        let shared = maps.iter().position(|m| *m == entry.map).unwrap_or(0);
        let map = SHARED + u32::try_from(shared).unwrap_or(0);
        // What the helpers return is not looked at (see `Change`).
        let call = |helper: u32| {
            let mut call = vec![
                Insn(ld_map(1, map)),
                Insn(mov64_reg(2, 9)),
                Insn(add64(2, imm(*key_at))),
            ];
            if helper == MAP_UPDATE_ELEM {
                call.extend([
                    Insn(mov64_reg(3, 9)),
                    Insn(add64(3, imm(*value_at))),
                    Insn(mov64(4, 0)),
                ]);
            }
            call.push(Insn(call_helper(helper)));
            call
        };
        steps.extend(call(MAP_UPDATE_ELEM));
        match entry.change {
            Change::Changed => {}
            Change::Removed => steps.extend(call(MAP_UPDATE_ELEM)),
            Change::Added => steps.extend(call(MAP_DELETE_ELEM)),
        }
    }
    match alternate {
        Some(limit) => steps.extend(clock_steps(limit)),
        None => steps.push(Insn(mov64(3, NF_SLOT as i32))),
    }
    steps.extend([
        Insn(mov64_reg(1, 6)),
        Insn(ld_map(2, NF)),
        Insn(call_helper(TAIL_CALL)),
    ]);
    lay_out(&steps)
}

/// The steps' instructions, every `fail` jump pointed at the `XDP_ABORTED` exit after them.
fn lay_out(steps: &[Step]) -> Vec<Instruction> {
    use Step::{Fail, Insn};
    let slots = |step: &Step| match step {
        Insn(i) => i.slots(),
        Fail(..) => 1,
    };
    let fail_slot: usize = steps.iter().map(slots).sum();
    let mut code = Vec::with_capacity(steps.len() + 2);
    let mut at = 0;
    for step in steps {
        at += slots(step);
        code.push(match step {
            Insn(i) => *i,
            // The jump's offset counts from the slot after it.
            Fail(cond, dst, src) => jump(
                true,
                *cond,
                *dst,
                *src,
                i16::try_from(fail_slot - at).unwrap_or(i16::MAX),
            ),
        });
    }
    // fail: the NF did not run (or the tail call failed): XDP_ABORTED.
    code.extend([mov64(0, 0), exit()]);
    code
}

/// Bytes of a packet of `len` bytes the driver writes before each run: `len`, at most
/// [`MAX_COPY`], rounded down to whole 8-byte words.
pub fn restored_bytes(len: usize) -> usize {
    len.min(MAX_COPY) / 8 * 8
}

/// A program that only returns XDP_PASS, loaded: what the driver costs with no NF behind it
/// (and, timed alone, what a test run costs with no program work).
pub fn pass_object() -> Result<LoadedObject, KernelError> {
    pass_object_in("xdp")
}

/// [`pass_object`] in ELF section `section` (`xdp.frags` makes it take multi-buffer packets).
fn pass_object_in(section: &str) -> Result<LoadedObject, KernelError> {
    let program = Program::from_instructions("pass", section, &[mov64(0, XDP_PASS as i32), exit()]);
    let loaded = load_object(&Object::with_programs("pass", vec![program], Vec::new()))?;
    loaded.load_program(0)?;
    Ok(loaded)
}

impl TrafficDriver {
    /// Builds and loads a driver over `set` (packets of one length, at least 14 bytes) that
    /// writes each run's headers ([`Restore::headers`]).
    pub fn new(set: &[Vec<u8>]) -> Result<TrafficDriver, DriverError> {
        let len = set.first().ok_or(DriverError::EmptySet)?.len();
        TrafficDriver::build(set, &[], &Restore::headers(len), None, None)
    }

    /// Builds and loads a driver for program `program` of `nf` over the one packet of `input`
    /// (with its metadata and receiving queue) that puts back `restore` before every run; the
    /// entries it restores are those of `nf`'s maps, which the driver uses as they are.
    pub fn restoring(
        input: &TestRunInput,
        restore: &Restore,
        nf: &LoadedObject,
        program: usize,
    ) -> Result<TrafficDriver, DriverError> {
        let set = std::slice::from_ref(&input.packet);
        let driver = TrafficDriver::build(set, &input.meta, restore, Some((nf, program)), None)?;
        Ok(driver.with_context(
            input.meta.clone(),
            input.ingress_ifindex,
            input.rx_queue_index,
        ))
    }

    /// [`TrafficDriver::restoring`], alternating: its runs tail-call program `program` of `nf`
    /// and a program that only returns by turns, timing each side ([`CLOCK`]); a gap between
    /// two runs' beginnings longer than `limit_ns` (the CPU was taken away) is left out. Time it
    /// with [`TrafficDriver::run_alternating`]; both programs are in place.
    pub fn alternating(
        input: &TestRunInput,
        restore: &Restore,
        nf: &LoadedObject,
        program: usize,
        limit_ns: u32,
    ) -> Result<TrafficDriver, DriverError> {
        let set = std::slice::from_ref(&input.packet);
        let mut driver = TrafficDriver::build(
            set,
            &input.meta,
            restore,
            Some((nf, program)),
            Some(limit_ns),
        )?
        .with_context(
            input.meta.clone(),
            input.ingress_ifindex,
            input.rx_queue_index,
        );
        let empty = driver.pass_object()?;
        driver.attach_at(EMPTY_SLOT, &empty, 0)?;
        driver.empty = Some(empty);
        driver.attach(nf, program)?;
        Ok(driver)
    }

    fn build(
        set: &[Vec<u8>],
        meta: &[u8],
        restore: &Restore,
        nf: Option<(&LoadedObject, usize)>,
        alternate: Option<u32>,
    ) -> Result<TrafficDriver, DriverError> {
        let first = set.first().ok_or(DriverError::EmptySet)?;
        let len = first.len();
        if len < 14 {
            return Err(DriverError::TooShort(len));
        }
        if let Some((index, p)) = set.iter().enumerate().find(|(_, p)| p.len() != len) {
            return Err(DriverError::UnevenSet {
                index,
                len: p.len(),
                expected: len,
            });
        }
        let bytes = restore.bytes.start.min(len)..restore.bytes.end.min(len);
        let copy = bytes.len();
        let packets = u32::try_from(set.len()).unwrap_or(u32::MAX);
        let (saved, offsets) = saved_value(restore, meta);
        let mut maps = vec![
            MapSpec::new("cursor", MapType::ARRAY, 4, 8, 1),
            MapSpec::new("packets", MapType::ARRAY, 4, copy.max(8) as u32, packets),
            MapSpec::new("nf", MapType::PROG_ARRAY, 4, 4, EMPTY_SLOT + 1),
            MapSpec::new("state", MapType::ARRAY, 4, STATE_SIZE as u32, 1),
            MapSpec::new("saved", MapType::ARRAY, 4, saved.len() as u32, 1),
            MapSpec::new("clock", MapType::ARRAY, 4, CLOCK_SIZE as u32, 1),
        ];
        let mut shared = Vec::new();
        for (k, map) in restore.maps().into_iter().enumerate() {
            let (nf, _) = nf.ok_or(DriverError::NoMap(map))?;
            let def = nf.map_def(map).ok_or(DriverError::NoMap(map))?;
            let fd = nf.map_fd(map).ok_or(DriverError::NoMap(map))?;
            maps.push(MapSpec::new(
                &format!("nf_map_{k}"),
                def.map_type,
                def.key_size,
                def.value_size,
                def.max_entries,
            ));
            shared.push((maps.len() - 1, fd));
        }
        let restore = Restore {
            bytes: bytes.clone(),
            ..restore.clone()
        };
        let mut program = ProgramSpec::xdp(
            "driver",
            driver_program(packets, len, meta.len(), &restore, &offsets, alternate),
        );
        // A tail call needs caller and callee alike in whether they take multi-buffer packets.
        if nf
            .and_then(|(nf, p)| nf.program_def(p))
            .is_some_and(|p| p.has_frags())
        {
            program.section = FRAGS_SECTION.into();
        }
        let section = program.section.clone();
        let object_bytes = write_object(&ObjectSpec::new(vec![program], maps))?;
        let object = linerate_bpf::read_object(&object_bytes, "driver")?;
        let loaded = load_object_sharing(&object, &shared)?;
        for (i, p) in set.iter().enumerate() {
            let mut part = p[bytes.clone()].to_vec();
            part.resize(copy.max(8), 0);
            loaded.update(PACKETS as usize, &(i as u32).to_le_bytes(), &part)?;
        }
        loaded.update(SAVED as usize, &0u32.to_le_bytes(), &saved)?;
        Ok(TrafficDriver {
            loaded,
            input: TestRunInput {
                packet: first.clone(),
                discard_records: true,
                ..Default::default()
            },
            packets: set.len(),
            copy,
            geometry: restore.geometry,
            section,
            empty: None,
        })
    }

    /// Runs with this context: metadata before the packet, the receiving device and queue (as
    /// [`TestRunInput`] documents them). The driver leaves metadata as the NF left it.
    pub fn with_context(
        mut self,
        meta: Vec<u8>,
        ingress_ifindex: u32,
        rx_queue_index: u32,
    ) -> Self {
        self.input.meta = meta;
        self.input.ingress_ifindex = ingress_ifindex;
        self.input.rx_queue_index = rx_queue_index;
        self
    }

    /// [`pass_object`] as a program this driver can tail-call (one that takes multi-buffer
    /// packets if the NF does).
    pub fn pass_object(&self) -> Result<LoadedObject, KernelError> {
        pass_object_in(&self.section)
    }

    /// Packets in the set.
    pub fn packets(&self) -> usize {
        self.packets
    }

    /// Bytes of its packet the driver writes before each run (the rest stays as the NF left
    /// it): [`restored_bytes`] of the packet length.
    pub fn restored_len(&self) -> usize {
        self.copy
    }

    /// Puts program `program` of `nf` behind the driver (loading it if needed).
    pub fn attach(&self, nf: &LoadedObject, program: usize) -> Result<(), DriverError> {
        self.attach_at(NF_SLOT, nf, program)
    }

    fn attach_at(&self, slot: u32, nf: &LoadedObject, program: usize) -> Result<(), DriverError> {
        nf.load_program(program)?;
        let fd: BorrowedFd<'_> = nf
            .program_fd(program)
            .ok_or(DriverError::NoProgram(program))?;
        self.loaded.set_foreign_program(NF as usize, slot, fd)?;
        Ok(())
    }

    /// One test-run call of an alternating driver ([`TrafficDriver::alternating`]): `repeat`
    /// runs (rounded up to even, so that the last is the NF's and the call returns its
    /// action), half of them the NF's.
    pub fn run_alternating(&self, repeat: u32) -> Result<Alternated, DriverError> {
        self.loaded
            .update(CLOCK as usize, &0u32.to_le_bytes(), &[0; CLOCK_SIZE])?;
        let run = self.run(repeat.max(2).saturating_add(repeat % 2))?;
        let clock = self.loaded.lookup(CLOCK as usize, &0u32.to_le_bytes())?;
        let word = |i: usize| {
            clock
                .as_deref()
                .and_then(|c| c.get(8 * i..8 * i + 8))
                .map_or(0, |b| u64::from_le_bytes(b.try_into().unwrap_or([0; 8])))
        };
        let mean = |slot: usize| {
            let runs = word(4 + slot);
            (runs > 0).then(|| word(2 + slot) as f64 / runs as f64)
        };
        Ok(Alternated {
            nf_ns: mean(NF_SLOT as usize),
            empty_ns: mean(EMPTY_SLOT as usize),
            left_out: word(6),
            retval: run.retval,
        })
    }

    /// One test-run call of `repeat` runs (each on the next packet of the set).
    pub fn run(&self, repeat: u32) -> Result<TestRunOutput, DriverError> {
        if self.geometry {
            // The call's first run records where its head is.
            self.loaded
                .update(STATE as usize, &0u32.to_le_bytes(), &[0; STATE_SIZE])?;
        }
        let input = TestRunInput {
            repeat,
            ..self.input.clone()
        };
        Ok(self.loaded.test_run(0, &input)?)
    }

    /// The cost of one more run in ns: the slope between calls of `short` and `long` runs.
    fn slope(&self, short: u32, long: u32) -> Result<f64, DriverError> {
        let long = long.max(short + 1);
        let total = |repeat: u32| -> Result<f64, DriverError> {
            Ok(f64::from(self.run(repeat)?.duration_ns) * f64::from(repeat))
        };
        let (t_short, t_long) = (total(short)?, total(long)?);
        Ok((t_long - t_short) / f64::from(long - short))
    }

    /// The cost of one more run in ns: the median over `trials` of the slope between calls of
    /// `short` and `long` runs.
    pub fn ns_per_run(&self, trials: usize, short: u32, long: u32) -> Result<f64, DriverError> {
        let slopes = (0..trials.max(1))
            .map(|_| self.slope(short, long))
            .collect::<Result<Vec<f64>, DriverError>>()?;
        Ok(median(slopes))
    }

    /// What program `program` of `nf` costs per packet of the set, in ns: the driver's runs with
    /// the NF behind it, minus its runs with `pass` behind it (the driver's own cost). Each
    /// trial times both, one right after the other, so that a slow spell of this shared machine
    /// (or a competitor's phase) lands on both sides of a difference rather than on one whole
    /// series; the NF's time is the median of the trials' differences. The NF stays attached
    /// afterwards.
    pub fn nf_ns(
        &self,
        nf: &LoadedObject,
        program: usize,
        pass: &LoadedObject,
        timing: Timing,
    ) -> Result<NfTime, DriverError> {
        let (mut drivers, mut differences) = (Vec::new(), Vec::new());
        for _ in 0..timing.trials.max(1) {
            let (driver, difference) = self.trial(nf, program, pass, timing)?;
            drivers.push(driver);
            differences.push(difference);
        }
        Ok(NfTime::of(drivers, differences))
    }

    /// [`TrafficDriver::nf_ns`] under two conditions that `set(true)` and `set(false)` put in
    /// place (a competitor running and paused), alternating within every trial (the order
    /// flips from trial to trial): the machine's drift over seconds lands on both, so their
    /// ratio is measured far closer than two separate timings would give it. `set(false)` is
    /// in place afterwards.
    pub fn nf_ns_paired(
        &self,
        nf: &LoadedObject,
        program: usize,
        pass: &LoadedObject,
        timing: Timing,
        mut set: impl FnMut(bool),
    ) -> Result<Paired, DriverError> {
        let mut series = [(Vec::new(), Vec::new()), (Vec::new(), Vec::new())];
        for trial in 0..timing.trials.max(1) {
            let order = if trial % 2 == 0 {
                [true, false]
            } else {
                [false, true]
            };
            for condition in order {
                set(condition);
                let (driver, difference) = self.trial(nf, program, pass, timing)?;
                let (drivers, differences) = &mut series[usize::from(condition)];
                drivers.push(driver);
                differences.push(difference);
            }
        }
        set(false);
        let [(off_drivers, off), (on_drivers, on)] = series;
        Ok(Paired {
            on: NfTime::of(on_drivers, on),
            off: NfTime::of(off_drivers, off),
        })
    }

    /// One trial: the driver's cost with `pass` behind it, and the NF's cost over it.
    fn trial(
        &self,
        nf: &LoadedObject,
        program: usize,
        pass: &LoadedObject,
        timing: Timing,
    ) -> Result<(f64, f64), DriverError> {
        self.attach(pass, 0)?;
        let driver = self.slope(timing.short, timing.long)?;
        self.attach(nf, program)?;
        let total = self.slope(timing.short, timing.long)?;
        Ok((driver, total - driver))
    }
}

/// The median of a non-empty series (the upper one of an even count).
fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    values.get(values.len() / 2).copied().unwrap_or(f64::NAN)
}

/// One call of an alternating driver: ns per run on each side, driver and harness included
/// (`None` for a side no run was counted on).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Alternated {
    /// Runs that tail-called the NF.
    pub nf_ns: Option<f64>,
    /// Runs that tail-called the program that only returns.
    pub empty_ns: Option<f64>,
    /// Gaps between runs longer than the driver's limit, left out.
    pub left_out: u64,
    /// The action of the call's last run, the NF's.
    pub retval: u32,
}

impl Alternated {
    /// The NF's time over the empty program's, ns per run.
    pub fn nf_over_empty(&self) -> Option<f64> {
        Some(self.nf_ns? - self.empty_ns?)
    }
}

/// How to time: trials, and the two repeat counts whose slope is the cost of a run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Timing {
    pub trials: usize,
    pub short: u32,
    pub long: u32,
}

impl Default for Timing {
    fn default() -> Timing {
        Timing {
            trials: 21,
            short: 1_000,
            long: 11_000,
        }
    }
}

/// An NF's time per packet with the driver's share.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct NfTime {
    /// Driver and NF, ns per run (the driver's median plus the NF's median difference).
    pub total: f64,
    /// The driver alone (with an NF that only returns), ns per run.
    pub driver: f64,
}

/// An NF timed under two alternating conditions ([`TrafficDriver::nf_ns_paired`]).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Paired {
    /// With `set(true)` in place.
    pub on: NfTime,
    /// With `set(false)` in place.
    pub off: NfTime,
}

impl NfTime {
    /// From each trial's driver time and NF-minus-driver difference: their medians.
    fn of(drivers: Vec<f64>, differences: Vec<f64>) -> NfTime {
        let driver = median(drivers);
        NfTime {
            total: driver + median(differences),
            driver,
        }
    }

    /// The NF's own ns per packet.
    pub fn nf(&self) -> f64 {
        (self.total - self.driver).max(0.0)
    }

    /// The NF's packet rate on one core, packets per second.
    pub fn pps(&self) -> f64 {
        1e9 / self.nf().max(f64::MIN_POSITIVE)
    }
}
