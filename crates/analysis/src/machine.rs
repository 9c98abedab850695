//! The abstract machine: `linerate_sem`'s instructions and helpers over abstract values.
//!
//! [`State`] is what the analysis knows before an instruction: the registers, the spilled values of
//! the function's own stack frame, and the packet length. [`AbsMachine`] executes one instruction on
//! a state through `linerate_sem::step` (and `linerate_sem::helpers::call`), recording for every
//! memory access and map helper call what it touches. It supplies only what the semantics leaves to
//! a machine: memory (spills and fills of the own frame; the context's packet pointers; loads of
//! read-only global data), map values as pointers, and an environment whose unknowns are unknown.

use std::collections::{BTreeMap, HashMap};
use std::ops::RangeInclusive;

use linerate_bpf::facts::helper;
use linerate_bpf::facts::limits::MAX_BPF_LOOP_ITERATIONS;
use linerate_bpf::facts::test_run_buffer::{FRAG_SIZE, FRAME_SIZE, MAX_DATA, MAX_FRAGS};
use linerate_bpf::facts::xdp_md;
use linerate_bpf::insn::{Imm64, Size, NUM_REGS};
use linerate_bpf::program::{MapDef, MapOrigin, Object};
use linerate_sem::exec::{Frame, HelperOutcome, Machine, SemError};
use linerate_sem::helpers::{
    Callback, Device, FibAnswer, Frags, HelperMachine, PacketBounds, RedirectTo, Source,
    WalkPosition, WalkedElement, Whereabouts,
};
use linerate_sem::Domain;

use crate::value::{AbsBool, AbsDomain, AbsValue, Interval, Region, Shape};

/// What the analysis knows before an instruction.
#[derive(Clone, Debug)]
pub struct State {
    pub regs: [AbsValue; NUM_REGS],
    /// Values spilled to the function's own frame, by 8-byte-aligned offset from its frame
    /// pointer. A slot not listed holds scalar bytes, unless `wild`.
    pub slots: BTreeMap<i64, AbsValue>,
    /// Whether unlisted slots may hold anything (after a store the analysis could not place).
    pub wild: bool,
    /// The packet's length (`data_end - data`).
    pub packet_len: Interval,
    /// Frames of BPF-to-BPF calls in progress (only inside one call's step).
    pub frames: Vec<Frame<AbsValue>>,
}

/// The lengths a packet can have: up to what one buffer holds. No lower bound is assumed
/// (`BPF_PROG_TEST_RUN` refuses packets shorter than an Ethernet header, but a program's checks
/// for short packets stay reachable, as they are on a device that delivers runts).
pub const PACKET_LENGTHS: Interval = Interval {
    lo: 0,
    hi: MAX_DATA as i128,
};

impl State {
    /// The state at the entry of a function at call depth `depth` whose argument registers hold
    /// `args` (r1–r5).
    pub fn entry(d: &mut AbsDomain, depth: Option<u8>, args: [AbsValue; 5]) -> State {
        let mut regs: [AbsValue; NUM_REGS] = std::array::from_fn(|_| d.unknown());
        regs[1..=5].copy_from_slice(&args);
        regs[10] = d.pointer(Region::Stack { depth }, Interval::exactly(0));
        State {
            regs,
            slots: BTreeMap::new(),
            wild: false,
            packet_len: PACKET_LENGTHS,
            frames: Vec::new(),
        }
    }

    /// The state at the entry of a program: `r1` is the context.
    pub fn program_entry(d: &mut AbsDomain) -> State {
        let ctx = d.pointer(Region::Ctx, Interval::exactly(0));
        let rest = [d.unknown(), d.unknown(), d.unknown(), d.unknown()];
        State::entry(d, Some(0), [ctx, rest[0], rest[1], rest[2], rest[3]])
    }

    /// The least state holding both (`widen`: widened, at loop headers).
    pub fn join(&self, other: &State, d: &mut AbsDomain, widen: bool) -> State {
        let combine = |d: &mut AbsDomain, a: &AbsValue, b: &AbsValue| {
            let shape = if widen {
                AbsValue::widen_shape(a.shape, b.shape)
            } else {
                AbsValue::join_shape(a.shape, b.shape)
            };
            if shape == a.shape && a.id == b.id {
                *a
            } else {
                d.value(shape)
            }
        };
        let regs = std::array::from_fn(|r| combine(d, &self.regs[r], &other.regs[r]));
        let mut slots = BTreeMap::new();
        let keys: Vec<i64> = self
            .slots
            .keys()
            .chain(other.slots.keys())
            .copied()
            .collect();
        for k in keys {
            let a = self.slot(d, k);
            let b = other.slot(d, k);
            slots.insert(k, combine(d, &a, &b));
        }
        let packet_len = if widen {
            self.packet_len
                .widen(self.packet_len.join(other.packet_len), PACKET_LENGTHS)
        } else {
            self.packet_len.join(other.packet_len)
        };
        State {
            regs,
            slots,
            wild: self.wild || other.wild,
            packet_len,
            frames: Vec::new(),
        }
    }

    /// The same facts with identities handed out by `d`, for a state from another domain's
    /// run: values sharing an identity here share one there, and none shares one with a value `d`
    /// handed out before. (A state between instructions holds no call frames.)
    pub fn renamed(&self, d: &mut AbsDomain) -> State {
        let mut ids: HashMap<u64, AbsValue> = HashMap::new();
        let mut rename = |v: &AbsValue| *ids.entry(v.id).or_insert_with(|| d.value(v.shape));
        State {
            regs: std::array::from_fn(|r| rename(&self.regs[r])),
            slots: self.slots.iter().map(|(&k, v)| (k, rename(v))).collect(),
            wild: self.wild,
            packet_len: self.packet_len,
            frames: Vec::new(),
        }
    }

    /// Whether both states say the same (identities aside).
    pub fn same_facts(&self, other: &State) -> bool {
        self.regs == other.regs
            && self.slots == other.slots
            && self.wild == other.wild
            && self.packet_len == other.packet_len
    }

    /// The value of the slot at `offset` (listed or not).
    fn slot(&self, d: &mut AbsDomain, offset: i64) -> AbsValue {
        match self.slots.get(&offset) {
            Some(v) => *v,
            None if self.wild => d.unknown(),
            None => d.bits(64),
        }
    }

    /// Forgets what the own frame holds: every slot may now hold anything.
    fn make_wild(&mut self, d: &mut AbsDomain) {
        for v in self.slots.values_mut() {
            *v = d.unknown();
        }
        self.wild = true;
    }

    /// Every packet pointer loses its offset (after the packet's bounds moved) and the length is
    /// what an adjust helper leaves.
    fn packet_moved(&mut self, d: &mut AbsDomain) {
        let forget = |d: &mut AbsDomain, v: &mut AbsValue| {
            if let Shape::Pointer {
                region: region @ (Region::Packet | Region::PacketMeta | Region::PacketEnd),
                ..
            } = v.shape
            {
                *v = d.pointer(region, Interval::SIGNED);
            }
        };
        for v in self.regs.iter_mut().chain(self.slots.values_mut()) {
            forget(d, v);
        }
        self.packet_len = PACKET_LENGTHS;
    }
}

/// What one instruction touches, as the analysis found it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fact {
    /// A load, store or atomic: the region of its address, `None` where unknown.
    Memory(Option<Region>),
    /// A map helper call: the map, `None` where unknown.
    MapCall(Option<usize>),
    /// A helper calling a callback (`bpf_loop`, `bpf_for_each_map_elem`): the slots the callback
    /// may start at, `(lo, hi)` inclusive (one slot where the call site always passes the same
    /// function; every function starting in the range where it passes several; `None` where
    /// unknown), and the most calls one execution of the helper makes.
    Callback {
        starts: Option<(usize, usize)>,
        max_calls: u64,
    },
}

impl Fact {
    fn join(self, other: Fact) -> Fact {
        match (self, other) {
            (a, b) if a == b => a,
            (Fact::Memory(Some(a)), Fact::Memory(Some(b))) => Fact::Memory(a.join_region(b)),
            (Fact::MapCall(_), Fact::MapCall(_)) => Fact::MapCall(None),
            (
                Fact::Callback {
                    starts: f,
                    max_calls: a,
                },
                Fact::Callback {
                    starts: g,
                    max_calls: b,
                },
            ) => Fact::Callback {
                starts: f.zip(g).map(|((a, b), (c, d))| (a.min(c), b.max(d))),
                max_calls: a.max(b),
            },
            _ => Fact::Memory(None),
        }
    }
}

impl Region {
    /// The region of facts for either: as values join, except that the metadata is packet too.
    fn join_region(self, other: Region) -> Option<Region> {
        self.join(other).or(match (self, other) {
            (Region::Packet | Region::PacketMeta, Region::Packet | Region::PacketMeta) => {
                Some(Region::Packet)
            }
            _ => None,
        })
    }
}

/// Facts by instruction slot, joined over every way the analysis reached the instruction.
pub type Facts = HashMap<usize, Fact>;

/// Why the analysis stopped following a path: the semantics refused an instruction (as the
/// interpreter would).
#[derive(Debug)]
pub struct Stop(pub SemError);

impl From<SemError> for Stop {
    fn from(e: SemError) -> Stop {
        Stop(e)
    }
}

/// One state being executed.
pub struct AbsMachine<'a> {
    pub object: &'a Object,
    pub domain: &'a mut AbsDomain,
    pub state: State,
    /// Call depth of the function being analysed.
    pub depth: Option<u8>,
    pub facts: &'a mut Facts,
    /// Callbacks that helpers executed so far may call: the slots their first instruction may
    /// be at (one slot, or a range where the callback pointer joins several functions) and the
    /// state at the call (arguments in r1–r5, the callback's frame pointer in r10).
    pub callbacks: Vec<(RangeInclusive<usize>, State)>,
}

impl AbsMachine<'_> {
    fn record(&mut self, pc: usize, fact: Fact) {
        let joined = match self.facts.get(&pc) {
            Some(old) => old.join(fact),
            None => fact,
        };
        self.facts.insert(pc, joined);
    }

    fn record_access(&mut self, pc: usize, addr: &AbsValue) {
        let fact = Fact::Memory(addr.region());
        self.record(pc, fact);
    }

    /// The own-frame offset `addr` points to, where known exactly.
    fn own_offset(&self, addr: &AbsValue) -> Option<i64> {
        match addr.shape {
            Shape::Pointer {
                region: Region::Stack { depth },
                offset,
                ..
            } if depth.is_some() && depth == self.depth => offset.constant().map(|o| o as i64),
            _ => None,
        }
    }

    /// Whether `addr` may point into the own frame.
    fn may_be_own_frame(&self, addr: &AbsValue) -> bool {
        match addr.shape {
            Shape::Pointer {
                region: Region::Stack { depth },
                ..
            } => depth.is_none() || self.depth.is_none() || depth == self.depth,
            Shape::Pointer { .. } | Shape::Scalar(_) => false,
            Shape::Unknown => true,
        }
    }

    /// A store of `value` (`len` bytes) at `addr`.
    fn store_value(&mut self, addr: &AbsValue, len: u64, value: AbsValue) {
        if !self.may_be_own_frame(addr) {
            return;
        }
        let Some(offset) = self.own_offset(addr) else {
            self.state.make_wild(self.domain);
            return;
        };
        let first = offset.div_euclid(8) * 8;
        let last = (offset + len as i64 - 1).div_euclid(8) * 8;
        if len == 8 && offset == first {
            self.state.slots.insert(offset, value);
            return;
        }
        let scalar = matches!(value.shape, Shape::Scalar(_));
        let mut slot = first;
        while slot <= last {
            if scalar && !self.state.wild {
                // The slot now holds scalar bytes only if what it held was scalar too.
                match self.state.slots.get(&slot).map(|v| v.shape) {
                    None | Some(Shape::Scalar(_)) => {
                        self.state.slots.remove(&slot);
                    }
                    Some(_) => {
                        let unknown = self.domain.unknown();
                        self.state.slots.insert(slot, unknown);
                    }
                }
            } else {
                let unknown = self.domain.unknown();
                self.state.slots.insert(slot, unknown);
            }
            slot += 8;
        }
    }

    /// A load of `len` bytes at `addr` from the own frame.
    fn load_own_frame(&mut self, addr: &AbsValue, len: u64) -> AbsValue {
        let Some(offset) = self.own_offset(addr) else {
            return self.domain.unknown();
        };
        let first = offset.div_euclid(8) * 8;
        if len == 8 && offset == first {
            return self.state.slot(self.domain, offset);
        }
        let last = (offset + len as i64 - 1).div_euclid(8) * 8;
        let mut slot = first;
        while slot <= last {
            let scalar = match self.state.slots.get(&slot) {
                Some(v) => matches!(v.shape, Shape::Scalar(_)),
                None => !self.state.wild,
            };
            if !scalar {
                // Part of a pointer or of something unknown: a number, but not one we follow.
                return self.domain.bits(8 * len as u32);
            }
            slot += 8;
        }
        self.domain.bits(8 * len as u32)
    }

    /// A load from the context at `offset`.
    fn load_ctx(&mut self, offset: Interval, size: Size) -> AbsValue {
        let d = &mut *self.domain;
        match (offset.constant().map(|o| o as u64), size) {
            (Some(xdp_md::DATA), Size::W) => d.pointer(Region::Packet, Interval::exactly(0)),
            (Some(xdp_md::DATA_END), Size::W) => d.pointer(Region::PacketEnd, Interval::exactly(0)),
            (Some(xdp_md::DATA_META), Size::W) => {
                d.pointer(Region::PacketMeta, Interval::exactly(0))
            }
            _ => d.bits(size.bits()),
        }
    }

    /// A load from read-only global data at a known place: its initial bytes.
    fn load_constant(&mut self, map: usize, offset: Interval, size: Size) -> Option<AbsValue> {
        let def = self.object.maps.get(map)?;
        let MapOrigin::GlobalData {
            read_only: true, ..
        } = def.origin
        else {
            return None;
        };
        let start = usize::try_from(offset.constant()?).ok()?;
        let bytes = def
            .initial_value
            .as_ref()?
            .get(start..start + size.bytes() as usize)?;
        let mut word = [0u8; 8];
        word[..bytes.len()].copy_from_slice(bytes);
        Some(self.domain.constant(u64::from_le_bytes(word)))
    }

    /// A helper that calls a callback (`bpf_loop`, `bpf_for_each_map_elem`), summarised: the
    /// callback is entered with every argument any of its calls gets (recorded in
    /// [`AbsMachine::callbacks`] for its own analysis) and is not followed ([`Self::havoc_call`]);
    /// the helper returns at most the number of calls, or a negative errno where its arguments
    /// may be refused. The calls one by one are `linerate_sem::helpers`' (the interpreter's).
    fn call_callbacks(&mut self, pc: usize, id: u32) {
        let [r1, r2, r3, r4] = [1, 2, 3, 4].map(|r| self.state.regs[r]);
        let starts = match r2.shape {
            Shape::Pointer {
                region: Region::Function,
                offset,
                ..
            } => usize::try_from(offset.lo)
                .ok()
                .zip(usize::try_from(offset.hi).ok()),
            _ => None,
        };
        let flags_zero = r4.constant() == Some(0);
        let (args, max_calls, refusable) = if id == helper::LOOP {
            let count = match r1.shape {
                Shape::Scalar(i) => u64::try_from(i.hi.min(u32::MAX as i128)).unwrap_or(0),
                _ => u64::from(u32::MAX),
            };
            let max_calls = count.min(MAX_BPF_LOOP_ITERATIONS);
            let index = self.domain.scalar(Interval {
                lo: 0,
                hi: max_calls.saturating_sub(1) as i128,
            });
            let rest = [
                self.domain.unknown(),
                self.domain.unknown(),
                self.domain.unknown(),
            ];
            (
                [index, r3, rest[0], rest[1], rest[2]],
                max_calls,
                count > MAX_BPF_LOOP_ITERATIONS,
            )
        } else {
            let map = match r1.shape {
                Shape::Pointer {
                    region: Region::MapHandle { map },
                    ..
                } => map,
                _ => None,
            };
            let entries = map
                .and_then(|m| self.object.maps.get(m))
                .map_or(u64::from(u32::MAX), |d| u64::from(d.max_entries));
            let value = self.domain.value(Shape::Pointer {
                region: Region::MapValue { map },
                offset: Interval::exactly(0),
                maybe_null: false,
            });
            let (key, r5) = (self.domain.unknown(), self.domain.unknown());
            ([r1, key, value, r3, r5], entries, false)
        };
        self.record(pc, Fact::Callback { starts, max_calls });
        // A pointer joined from several functions (one helper call site reached with different
        // callbacks) may call each function starting in its range of slots.
        if let Some((lo, hi)) = starts {
            let depth = self.depth.and_then(|d| d.checked_add(1));
            let at_call = State::entry(self.domain, depth, args);
            self.callbacks.push((lo..=hi, at_call));
        }
        self.havoc_call();
        if flags_zero && !refusable {
            self.state.regs[0] = self.domain.scalar(Interval {
                lo: 0,
                hi: max_calls as i128,
            });
        }
    }

    /// A call the analysis does not follow (a BPF-to-BPF callee, a helper with an unknown map
    /// argument, an unsupported helper): it may leave anything in r0–r5 and write through any
    /// pointer argument into this frame.
    pub(crate) fn havoc_call(&mut self) {
        let escapes = self.state.regs[1..=5]
            .iter()
            .any(|v| self.may_be_own_frame(v) && !matches!(v.shape, Shape::Scalar(_)));
        if escapes {
            self.state.make_wild(self.domain);
        }
        for r in 0..=5 {
            self.state.regs[r] = self.domain.unknown();
        }
    }
}

impl Machine for AbsMachine<'_> {
    type D = AbsDomain;
    type Fault = Stop;

    fn domain(&mut self) -> &mut AbsDomain {
        self.domain
    }

    fn regs(&mut self) -> &mut [AbsValue; NUM_REGS] {
        &mut self.state.regs
    }

    fn frames(&mut self) -> &mut Vec<Frame<AbsValue>> {
        &mut self.state.frames
    }

    fn push_stack_frame(&mut self, _depth: usize) -> Result<AbsValue, Stop> {
        let depth = self.depth.and_then(|d| d.checked_add(1));
        Ok(self
            .domain
            .pointer(Region::Stack { depth }, Interval::exactly(0)))
    }

    fn pop_stack_frame(&mut self) {}

    fn load(&mut self, pc: usize, addr: &AbsValue, size: Size) -> Result<AbsValue, Stop> {
        self.record_access(pc, addr);
        Ok(match addr.shape {
            Shape::Pointer {
                region: Region::Ctx,
                offset,
                ..
            } => self.load_ctx(offset, size),
            Shape::Pointer {
                region: Region::Stack { .. },
                ..
            } => self.load_own_frame(addr, size.bytes() as u64),
            Shape::Pointer {
                region: Region::MapValue { map: Some(map) },
                offset,
                ..
            } => match self.load_constant(map, offset, size) {
                Some(v) => v,
                None => self.domain.bits(size.bits()),
            },
            Shape::Pointer { .. } => self.domain.bits(size.bits()),
            Shape::Scalar(_) | Shape::Unknown => self.domain.unknown(),
        })
    }

    fn store(
        &mut self,
        pc: usize,
        addr: &AbsValue,
        size: Size,
        value: &AbsValue,
    ) -> Result<(), Stop> {
        self.record_access(pc, addr);
        self.store_value(addr, size.bytes() as u64, *value);
        Ok(())
    }

    fn map_reference(&mut self, _pc: usize, imm: &Imm64) -> Result<AbsValue, Stop> {
        let known = |m: u32| ((m as usize) < self.object.maps.len()).then_some(m as usize);
        Ok(match *imm {
            Imm64::Map(m) => self
                .domain
                .pointer(Region::MapHandle { map: known(m) }, Interval::exactly(0)),
            Imm64::MapValue { map, offset } => self.domain.pointer(
                Region::MapValue { map: known(map) },
                Interval::exactly(offset as i128),
            ),
            _ => self.domain.unknown(),
        })
    }

    fn function_reference(&mut self, _pc: usize, function: usize) -> Result<AbsValue, Stop> {
        Ok(self
            .domain
            .pointer(Region::Function, Interval::exactly(function as i128)))
    }

    fn resume_helper(&mut self, callback: Callback<AbsValue>) -> Result<HelperOutcome, Stop> {
        linerate_sem::helpers::resume(self, callback)
    }

    fn call_helper(&mut self, pc: usize, id: u32) -> Result<HelperOutcome, Stop> {
        if matches!(id, helper::LOOP | helper::FOR_EACH_MAP_ELEM) {
            self.call_callbacks(pc, id);
            return Ok(HelperOutcome::Return);
        }
        if let Some(arg) = linerate_sem::helpers::map_argument(id) {
            let map = match self.state.regs[arg].shape {
                Shape::Pointer {
                    region: Region::MapHandle { map },
                    ..
                } => map,
                _ => None,
            };
            self.record(pc, Fact::MapCall(map));
            // The semantics reads a map's key (and an update's value) one abstract byte at a
            // time, and a map's sizes are whatever the object says (4 GiB in a fuzzed one):
            // calls reading more than any helper reads from a packet or the stack are havocked
            // instead, as calls on an unknown map are.
            let reads_too_much = map
                .and_then(|m| self.object.maps.get(m))
                .is_some_and(|def| {
                    let value = if matches!(
                        id,
                        helper::MAP_UPDATE_ELEM
                            | helper::MAP_PUSH_ELEM
                            | helper::MAP_POP_ELEM
                            | helper::MAP_PEEK_ELEM
                    ) {
                        def.value_size
                    } else {
                        0
                    };
                    u64::from(def.key_size.max(value)) > FRAME_SIZE
                });
            if map.is_none() || reads_too_much {
                self.havoc_call();
                return Ok(HelperOutcome::Return);
            }
        }
        if !linerate_sem::helpers::SUPPORTED.contains(&id) {
            self.havoc_call();
            return Ok(HelperOutcome::Return);
        }
        linerate_sem::helpers::call(self, pc, id)
    }

    fn call_kfunc(&mut self, pc: usize, index: i32) -> Result<(), Stop> {
        let name = self.object.kfunc(index).map(|k| k.name.clone());
        match name {
            Some(name) if linerate_sem::kfuncs::MODELLED.contains(&name.as_str()) => {
                linerate_sem::kfuncs::call(self, pc, &name)
            }
            // A kernel function without a model may return anything and write what it is given.
            _ => {
                self.havoc_call();
                Ok(())
            }
        }
    }
}

impl HelperMachine for AbsMachine<'_> {
    fn constant_of(&mut self, value: &AbsValue) -> Option<u64> {
        value.constant()
    }

    fn unknown(&mut self, _pc: usize) -> Result<AbsValue, Stop> {
        Ok(self.domain.unknown())
    }

    fn decide(&mut self, _pc: usize, cond: &AbsBool) -> Result<bool, Stop> {
        Ok(cond.known.unwrap_or(true))
    }

    fn byte_count(&mut self, _pc: usize, _h: u32, size: &AbsValue, max: u64) -> Result<u64, Stop> {
        Ok(match size.shape {
            Shape::Scalar(i) => u64::try_from(i.hi).unwrap_or(max).min(max),
            _ => max,
        })
    }

    fn read_bytes(
        &mut self,
        _pc: usize,
        _addr: &AbsValue,
        len: u64,
    ) -> Result<Vec<AbsValue>, Stop> {
        Ok((0..len).map(|_| self.domain.bits(8)).collect())
    }

    fn locate(
        &mut self,
        _pc: usize,
        addr: &AbsValue,
        _len: u64,
    ) -> Result<Whereabouts<AbsValue, AbsBool>, Stop> {
        let unknown = AbsBool {
            known: None,
            compare: None,
            negated: false,
        };
        let known = |b: bool| AbsBool {
            known: Some(b),
            ..unknown
        };
        // Pointers into memory the machines hold may reach past it (the bounds are not
        // tracked here); a pointer that may be NULL may be the number 0.
        Ok(match addr.shape {
            Shape::Unknown => Whereabouts {
                held: unknown,
                number: unknown,
                value: *addr,
            },
            Shape::Scalar(_) => Whereabouts {
                held: known(false),
                number: known(true),
                value: *addr,
            },
            Shape::Pointer {
                region, maybe_null, ..
            } => {
                let holdable = matches!(
                    region,
                    Region::Stack { .. }
                        | Region::Packet
                        | Region::PacketMeta
                        | Region::MapValue { .. }
                );
                Whereabouts {
                    held: if holdable { unknown } else { known(false) },
                    number: if maybe_null { unknown } else { known(false) },
                    value: self.domain.constant(0),
                }
            }
        })
    }

    fn write_bytes(&mut self, _pc: usize, addr: &AbsValue, bytes: &[AbsValue]) -> Result<(), Stop> {
        // Written as unknown: the write may or may not happen (see `decide`).
        let unknown = self.domain.unknown();
        self.store_value(addr, bytes.len() as u64, unknown);
        Ok(())
    }

    fn map_of(&mut self, pc: usize, _helper: u32, handle: &AbsValue) -> Result<usize, Stop> {
        match handle.shape {
            Shape::Pointer {
                region: Region::MapHandle { map: Some(map) },
                ..
            } => Ok(map),
            // `call_helper` havocs helpers whose map is unknown before they get here.
            _ => Err(Stop(SemError::Unsupported {
                pc,
                what: "map argument the analysis does not know",
            })),
        }
    }

    fn map_def(&self, map: usize) -> &MapDef {
        &self.object.maps[map]
    }

    fn map_lookup(&mut self, _pc: usize, map: usize, _key: &[AbsValue]) -> Result<AbsValue, Stop> {
        Ok(self.domain.value(Shape::Pointer {
            region: Region::MapValue { map: Some(map) },
            offset: Interval::exactly(0),
            maybe_null: true,
        }))
    }

    fn inner_map(&mut self, _pc: usize, _outer: usize, _slot: &AbsValue) -> Result<AbsValue, Stop> {
        // Any map fitting the outer map's template may sit in the slot: a handle of a map the
        // analysis does not know, so the calls that use it are havocked.
        Ok(self
            .domain
            .pointer(Region::MapHandle { map: None }, Interval::exactly(0)))
    }

    fn map_update(
        &mut self,
        _pc: usize,
        _map: usize,
        _key: &[AbsValue],
        _value: &[AbsValue],
        _flags: &AbsValue,
    ) -> Result<AbsValue, Stop> {
        Ok(self.domain.bits(64))
    }

    fn map_delete(&mut self, _pc: usize, _map: usize, _key: &[AbsValue]) -> Result<AbsValue, Stop> {
        Ok(self.domain.bits(64))
    }

    fn packet_bounds(&mut self) -> PacketBounds<AbsValue> {
        let d = &mut *self.domain;
        PacketBounds {
            data_meta: d.bits(64),
            data: d.bits(64),
            data_end: d.bits(64),
        }
    }

    fn set_packet_bounds(&mut self, _pc: usize, _b: PacketBounds<AbsValue>) -> Result<(), Stop> {
        self.state.packet_moved(self.domain);
        Ok(())
    }

    fn packet_frags(&mut self) -> Frags<AbsValue> {
        let d = &mut *self.domain;
        Frags {
            len: d.scalar(Interval {
                lo: 0,
                hi: i128::from(MAX_FRAGS * FRAG_SIZE),
            }),
            last: d.scalar(Interval {
                lo: 0,
                hi: i128::from(FRAG_SIZE),
            }),
        }
    }

    fn set_frags_len(&mut self, _pc: usize, _len: &AbsValue) -> Result<(), Stop> {
        Ok(())
    }

    fn read_packet(
        &mut self,
        _pc: usize,
        _offset: &AbsValue,
        len: u64,
    ) -> Result<Vec<AbsValue>, Stop> {
        Ok((0..len).map(|_| self.domain.bits(8)).collect())
    }

    fn write_packet(
        &mut self,
        _pc: usize,
        _offset: &AbsValue,
        _bytes: &[AbsValue],
    ) -> Result<(), Stop> {
        // Packet contents are not tracked.
        Ok(())
    }

    fn source(&mut self, _pc: usize, source: Source) -> Result<AbsValue, Stop> {
        Ok(match source {
            Source::Random32 | Source::ProcessorId | Source::SynCookie => self.domain.bits(32),
            Source::SynCookieMss | Source::KernelRead => self.domain.bits(2),
            Source::SynCookieValid => self.domain.bits(1),
            Source::KernelByte => self.domain.bits(8),
            Source::MonotonicNs | Source::BootNs => self.domain.bits(64),
        })
    }

    fn tail_calls_made(&mut self) -> u32 {
        0
    }

    fn tail_call(
        &mut self,
        _pc: usize,
        _go: &AbsBool,
        _map: usize,
        _program: &AbsValue,
    ) -> Result<HelperOutcome, Stop> {
        // A successful tail call ends this program; the analysis follows the path that falls
        // through.
        Ok(HelperOutcome::Return)
    }

    fn redirect(&mut self, _pc: usize, _to: RedirectTo<AbsValue>) -> Result<(), Stop> {
        Ok(())
    }

    fn fib_route(
        &mut self,
        _pc: usize,
        _ipv6: bool,
        _dst: &[AbsValue],
    ) -> Result<FibAnswer<AbsValue, AbsBool>, Stop> {
        let d = &mut *self.domain;
        Ok(FibAnswer {
            found: AbsBool {
                known: None,
                compare: None,
                negated: false,
            },
            ifindex: d.bits(32),
            smac: std::array::from_fn(|_| d.bits(8)),
            dmac: std::array::from_fn(|_| d.bits(8)),
        })
    }

    fn trace(&mut self, _pc: usize, _line: String) {}

    fn ring_positions(&mut self, _pc: usize, _map: usize) -> Result<(AbsValue, AbsValue), Stop> {
        Ok((self.domain.bits(64), self.domain.bits(64)))
    }

    fn emit_record(&mut self, _pc: usize, _map: usize, _record: Vec<AbsValue>) -> Result<(), Stop> {
        Ok(())
    }

    fn ring_reserve(&mut self, _pc: usize, map: usize, _size: u64) -> Result<AbsValue, Stop> {
        // The record lives in the ring's memory; the caller makes it NULL where the ring is full.
        Ok(self.domain.value(Shape::Pointer {
            region: Region::MapValue { map: Some(map) },
            offset: Interval::exactly(0),
            maybe_null: true,
        }))
    }

    fn ring_commit(&mut self, _pc: usize, _record: &AbsValue, _discard: bool) -> Result<(), Stop> {
        Ok(())
    }

    fn queue_len(&mut self, _pc: usize, _map: usize) -> Result<AbsValue, Stop> {
        Ok(self.domain.bits(32))
    }

    fn queue_push(
        &mut self,
        _pc: usize,
        _map: usize,
        _value: Vec<AbsValue>,
        _evict: &AbsBool,
    ) -> Result<(), Stop> {
        Ok(())
    }

    fn queue_take(&mut self, _pc: usize, map: usize, _remove: bool) -> Result<Vec<AbsValue>, Stop> {
        let size = self.object.maps[map].value_size;
        Ok((0..size).map(|_| self.domain.bits(8)).collect())
    }

    fn device(
        &mut self,
        _pc: usize,
        _ifindex: &AbsValue,
    ) -> Result<Device<AbsValue, AbsBool>, Stop> {
        Ok(Device {
            exists: AbsBool {
                known: None,
                compare: None,
                negated: false,
            },
            mtu: self.domain.bits(32),
            hard_header_len: self.domain.bits(16),
        })
    }

    fn function_of(&mut self, pc: usize, _helper: u32, value: &AbsValue) -> Result<usize, Stop> {
        match value.shape {
            Shape::Pointer {
                region: Region::Function,
                offset,
                ..
            } => offset.constant().and_then(|s| usize::try_from(s).ok()),
            _ => None,
        }
        .ok_or(Stop(SemError::Unsupported {
            pc,
            what: "callback the analysis does not know",
        }))
    }

    fn callback_key(&mut self, _pc: usize, _key: &[AbsValue]) -> Result<AbsValue, Stop> {
        Ok(self.domain.unknown())
    }

    fn map_next_element(
        &mut self,
        pc: usize,
        _map: usize,
        _after: Option<WalkPosition>,
    ) -> Result<Option<WalkedElement<AbsValue>>, Stop> {
        // Callbacks are summarised ([`Self::call_callbacks`]), never walked one by one.
        Err(Stop(SemError::Unsupported {
            pc,
            what: "walking a hash map element by element",
        }))
    }
}
