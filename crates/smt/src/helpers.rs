//! The environment the path machine gives helpers: what `linerate_sem::helpers` leaves to a
//! machine. Each helper's effect is defined there; here are the symbolic maps' operations, the
//! packet bounds and bytes, values from outside the program as fresh variables within their
//! documented ranges, tail calls following the path's decisions, and conditions inside helpers
//! decided by the solver ([`HelperMachine::decide`]: an outcome the path allows, the other
//! tried by the checker if that one conflicts with the path).

use linerate_bpf::facts::limits::STACK_FRAME_SIZE;
use linerate_bpf::program::{MapDef, MapType};
use linerate_cfg::Decision;
use linerate_sem::exec::{HelperOutcome, SemError};
use linerate_sem::helpers::{
    Device, FibAnswer, Frags, HelperMachine, PacketBounds, RedirectTo, Source, WalkPosition,
    WalkedElement, Whereabouts,
};
use z3::ast::{Ast, Bool, BV};

use crate::error::SmtError;
use crate::machine::Exec;
use crate::maps::{value_offset, SymMap};
use crate::memory::{add, Byte};
use crate::streams::{Queue, Ring, MAX_QUEUE};
use crate::value::{Bits, Region, SymValue, Tag};

impl Exec<'_> {
    /// The packet pointer `offset` bytes past `data` (helpers that take packet offsets).
    fn packet_address(&mut self, offset: &SymValue) -> SymValue {
        let data = self.s.bounds.data.clone();
        let sum = linerate_sem::Domain::binary(
            &mut self.s.domain,
            linerate_sem::BinOp::Add,
            &data,
            offset,
        );
        SymValue::pointer(Region::Packet, sum.bits)
    }

    /// Whether the `len` bytes at offset `off` of `region` lie in memory the machine holds, as
    /// the interpreter's `Execution::holds` says: within one stack frame, the packet between
    /// `data_meta` and `data_end`, or one map value.
    fn holds(&self, region: Region, off: &Bits, len: u64) -> Bool {
        let c = |v: u64| BV::from_u64(v, 64);
        let o = off.bv();
        let end = o.bvadd(c(len));
        let no_wrap = o.bvule(&end);
        match region {
            Region::Stack => {
                let top = (self.s.frames.len() as u64 + 1) * STACK_FRAME_SIZE;
                let mut within = vec![no_wrap, end.bvule(c(top))];
                if len > 0 {
                    // Frames are 512 bytes: the first and last byte share a frame number.
                    let frame = |b: &BV| b.bvudiv(c(STACK_FRAME_SIZE));
                    within.push(frame(&o).eq(frame(&end.bvsub(c(1)))));
                }
                Bool::and(&within).simplify()
            }
            Region::Packet => {
                let lo = self.s.bounds.data_meta.bits.bv();
                let hi = self.s.bounds.data_end.bits.bv();
                Bool::and(&[&no_wrap, &lo.bvule(&o), &end.bvule(&hi)]).simplify()
            }
            Region::MapValue(map) => {
                let size = self.s.maps[map].value_size(&self.env.object.maps[map], off);
                let low = o.extract(31, 0).zero_ext(32);
                low.bvadd(c(len)).bvule(c(size)).simplify()
            }
            Region::Ctx | Region::Function | Region::MapHandle(_) | Region::CallbackKey => {
                Bool::from_bool(false)
            }
        }
    }

    /// Constrains the initial entries map `map`'s last operation introduced to what user space
    /// can install in a map of its type: a device map's value is the ifindex of a device of
    /// this host (bpf_devmap_val, kernel/bpf/devmap.c; ifindex 0 leaves the slot empty), a CPU
    /// map's key a possible CPU and its value a queue size of 1 to 16384
    /// (bpf_cpumap_val, kernel/bpf/cpumap.c), a program array's value a program of the object.
    fn constrain_fresh(&mut self, map: usize) {
        let def = &self.env.object.maps[map];
        let c = |v: u64, bits: u32| BV::from_u64(v, bits);
        let word = |bytes: &[BV]| -> BV {
            bytes[..4]
                .iter()
                .rev()
                .cloned()
                .reduce(|w, b| w.concat(&b))
                .unwrap_or_else(|| c(0, 32))
        };
        let mut constraints = Vec::new();
        let mut placement = Vec::new();
        for fresh in self.s.maps[map].take_fresh() {
            if fresh.value.len() < 4 {
                continue;
            }
            let value = word(&fresh.value);
            let valid = match def.map_type {
                MapType::DEVMAP | MapType::DEVMAP_HASH => {
                    let devices: Vec<Bool> = self
                        .env
                        .devices
                        .iter()
                        .map(|&(ifindex, _)| value.eq(c(u64::from(ifindex), 32)))
                        .collect();
                    Bool::or(&devices)
                }
                MapType::CPUMAP => Bool::and(&[
                    &value.bvuge(c(1, 32)),
                    &value.bvule(c(16384, 32)),
                    &fresh.key.bvult(c(self.env.cpus, fresh.key.get_size())),
                ]),
                MapType::PROG_ARRAY => {
                    for &(slot, program) in &def.initial_programs {
                        let here = fresh
                            .key
                            .eq(BV::from_u64(u64::from(slot), fresh.key.get_size()));
                        let placed = Bool::and(&[&fresh.present, &value.eq(c(program as u64, 32))]);
                        let name = self
                            .env
                            .object
                            .programs
                            .get(program)
                            .map_or("?", |p| p.name.as_str());
                        let why = format!(
                            "program array `{}` slot {slot} not holding program `{name}`, which \
                             the object places there (a witness cannot remove it)",
                            def.name
                        );
                        placement.push((Bool::and(&[&here, &placed.not()]), why));
                    }
                    value.bvult(c(self.env.object.programs.len() as u64, 32))
                }
                t if t.is_map_in_map() => {
                    // The inner maps user space may place: the object's maps that fit the
                    // template (`SeedEntry::check_inner` refuses the others, as the kernel).
                    let fitting: Vec<Bool> = inner_candidates(&self.env.object, map)
                        .into_iter()
                        .map(|i| value.eq(c(i as u64, 32)))
                        .collect();
                    for &(slot, inner) in def.inner.iter().flat_map(|i| &i.initial) {
                        let here = fresh
                            .key
                            .eq(BV::from_u64(u64::from(slot), fresh.key.get_size()));
                        let placed = Bool::and(&[&fresh.present, &value.eq(c(inner as u64, 32))]);
                        let why = format!(
                            "map `{}` slot {slot} not holding map `{}`, which the object places \
                             there (a witness cannot remove it)",
                            def.name, self.env.object.maps[inner].name
                        );
                        placement.push((Bool::and(&[&here, &placed.not()]), why));
                    }
                    Bool::or(&fitting)
                }
                _ => continue,
            };
            // The rest of the value (a program to run on the device or CPU) stays empty.
            let rest: Vec<Bool> = fresh.value[4..].iter().map(|b| b.eq(c(0, 8))).collect();
            constraints.push(
                fresh
                    .present
                    .implies(Bool::and(&[&valid, &Bool::and(&rest)])),
            );
        }
        for constraint in constraints {
            self.session.assert(&constraint);
        }
        self.s.maps[map].placement.extend(placement);
    }

    /// A lookup in LPM trie `map` ([`crate::lpm`]): an access of its contents under the
    /// normalised key, consistent with the path's other lookups in it.
    fn lpm_lookup(&mut self, map: usize, key: &[SymValue]) -> SymValue {
        let def = &self.env.object.maps[map];
        let (normal, prefix, data) = crate::lpm::normalise(key);
        let pointer = self.s.maps[map].lookup(def, &normal);
        let found = match &pointer.tag {
            crate::value::Tag::Ptr {
                null: Some(null), ..
            } => null.not(),
            _ => Bool::from_bool(true),
        };
        let access = crate::lpm::Access::new(prefix, data, found);
        let constraints: Vec<Bool> = self.s.maps[map]
            .lpm
            .iter()
            .map(|earlier| access.consistent_with(earlier))
            .collect();
        for c in constraints {
            self.session.assert(&c);
        }
        self.s.maps[map].lpm.push(access);
        pointer
    }

    /// The handle of the inner map a slot of map of maps `outer` holds: one of those that fit
    /// its template, as the slot's contents say (each tried in turn as an outcome of the path,
    /// since which map a pointer refers to is not a formula).
    fn choose_inner(
        &mut self,
        pc: usize,
        outer: usize,
        slot: &SymValue,
    ) -> Result<usize, SmtError> {
        let candidates = inner_candidates(&self.env.object, outer);
        let Some((&last, rest)) = candidates.split_last() else {
            return Err(self.fault(
                pc,
                format!(
                    "map `{}` has no inner map template, or no map fits it",
                    self.env.object.maps[outer].name
                ),
            ));
        };
        let slot = slot.bits.bv().extract(31, 0);
        for &inner in rest {
            let is = slot.eq(BV::from_u64(inner as u64, 32));
            if self.decide(pc, &is)? {
                return Ok(inner);
            }
        }
        let is = slot.eq(BV::from_u64(last as u64, 32));
        self.decide(pc, &is)?;
        Ok(last)
    }
}

/// The maps of `object` that fit the inner map template of map of maps `outer`, by index.
fn inner_candidates(object: &linerate_bpf::Object, outer: usize) -> Vec<usize> {
    let Some(template) = object.maps.get(outer).and_then(|d| d.inner.as_deref()) else {
        return Vec::new();
    };
    (0..object.maps.len())
        .filter(|&i| template.mismatch(&object.maps[i]).is_none())
        .collect()
}

/// The low byte of a value as an 8-bit formula.
fn byte_of(v: &SymValue) -> BV {
    match Byte::of_scalar(&v.bits, 0) {
        Byte::Const(c) => BV::from_u64(u64::from(c), 8),
        Byte::Sym(bv) => bv,
        Byte::Pointer { .. } => BV::from_u64(0, 8),
    }
}

impl Exec<'_> {
    /// Ring buffer `map`'s state, its initial positions constrained on first use.
    fn ring(&mut self, pc: usize, map: usize) -> Result<&mut Ring, SmtError> {
        let def = &self.env.object.maps[map];
        if def.map_type != MapType::RINGBUF {
            return Err(self.fault(pc, format!("map `{}` is not a ring buffer", def.name)));
        }
        if self.s.maps[map].ring.is_none() {
            let (ring, axioms) = Ring::new(map, def.max_entries);
            self.session.assert(&axioms);
            self.s.maps[map].ring = Some(ring);
        }
        Ok(self.s.maps[map].ring.as_mut().expect("made above"))
    }

    /// Whether the condition `cond` the helper at `pc` asks about guards only a record sent to
    /// user space (`bpf_ringbuf_output`, `bpf_ringbuf_reserve`, `bpf_perf_event_output`): the
    /// record is then produced as a weak update — a ring buffer's producer advances where `cond`
    /// holds — instead of as an outcome chosen for the path, since the helper computes its
    /// result from `cond` itself. (Each such choice would be one more outcome to try both ways
    /// before refuting a path: nine ring outputs in a row, 512 tries.)
    fn weak_record(&mut self, pc: usize, cond: &Bool) -> bool {
        use linerate_bpf::facts::helper::{PERF_EVENT_OUTPUT, RINGBUF_OUTPUT, RINGBUF_RESERVE};
        use linerate_bpf::insn::{CallTarget, Instruction};
        let insn = self.insn_at(pc);
        let Some(Instruction::Call(CallTarget::Helper(helper))) = insn else {
            return false;
        };
        match helper {
            PERF_EVENT_OUTPUT => true,
            RINGBUF_OUTPUT | RINGBUF_RESERVE => match self.s.regs[1].region() {
                Some(Region::MapHandle(map)) => match self.s.maps[map].ring.as_mut() {
                    Some(ring) => {
                        ring.guard = Some(cond.clone());
                        true
                    }
                    None => false,
                },
                _ => false,
            },
            _ => false,
        }
    }

    /// Queue or stack `map`'s elements, its initial length constrained on first use.
    fn queue(&mut self, pc: usize, map: usize) -> Result<&mut Queue, SmtError> {
        let def = &self.env.object.maps[map];
        if !def.map_type.is_queue() {
            return Err(self.fault(pc, format!("map `{}` is not a queue or stack", def.name)));
        }
        if def.max_entries > MAX_QUEUE {
            return Err(self.unsupported(
                pc,
                format!(
                    "{} `{}` of {} elements (at most {MAX_QUEUE} are modelled)",
                    def.map_type.name(),
                    def.name,
                    def.max_entries
                ),
            ));
        }
        if self.s.maps[map].queue.is_none() {
            let lifo = def.map_type == MapType::STACK;
            let (queue, axiom) = Queue::new(map, lifo, def.max_entries, def.value_size);
            self.session.assert(&axiom);
            self.s.maps[map].queue = Some(queue);
        }
        Ok(self.s.maps[map].queue.as_mut().expect("made above"))
    }
}

impl Exec<'_> {
    /// An outcome of `cond` chosen for the path (a choice the checker may flip): `prefer` where
    /// the path allows it (true where no preference is given), else the other.
    pub(crate) fn choose(
        &mut self,
        pc: usize,
        cond: &Bool,
        prefer: Option<bool>,
    ) -> Result<bool, SmtError> {
        let index = self.s.choices.len();
        let prefer = prefer.unwrap_or(true);
        let steers = self.steers(pc);
        // Whether a later core may rest on the choice without naming it (`State::implicit`):
        // one that steers does; another where its other outcome was possible too, or the
        // checker forced it.
        let (holds, implicit) = match self.forced.get(index) {
            Some(&forced) => (forced, true),
            None => {
                let preferred = if prefer { cond.clone() } else { cond.not() };
                let other = if prefer { cond.not() } else { cond.clone() };
                if self.session.possible(&preferred, &self.s.choices) {
                    (
                        prefer,
                        steers || self.session.possible(&other, &self.s.choices),
                    )
                } else {
                    (!prefer, steers)
                }
            }
        };
        let chosen = if holds { cond.clone() } else { cond.not() };
        // A name of its own: a choice literal asserted on an abandoned path (or by the other
        // program of an equivalence check, `crate::equivalence`) never constrains this one.
        let literal = self.session.literal("choice");
        self.session.assert(&literal.implies(&chosen));
        self.s.choices.push(literal);
        if implicit {
            self.s.implicit.push(self.s.chosen.len());
        }
        self.s.chosen.push((holds, self.s.next));
        Ok(holds)
    }
}

impl HelperMachine for Exec<'_> {
    fn constant_of(&mut self, value: &SymValue) -> Option<u64> {
        if value.is_scalar() {
            value.bits.as_const()
        } else {
            None
        }
    }

    fn unknown(&mut self, pc: usize) -> Result<SymValue, SmtError> {
        Ok(SymValue::symbolic(self.fresh(pc, "a helper result", 64)))
    }

    fn decide(&mut self, pc: usize, cond: &Bool) -> Result<bool, SmtError> {
        if let Some(b) = cond.as_bool() {
            return Ok(b);
        }
        if self.weak_record(pc, cond) {
            return Ok(true);
        }
        let prefer = self.preferred_outcome(pc);
        self.choose(pc, cond, prefer)
    }

    fn byte_count(
        &mut self,
        pc: usize,
        helper: u32,
        size: &SymValue,
        max: u64,
    ) -> Result<u64, SmtError> {
        // A perf event sample's bytes reach only its reader, and nothing of the program's
        // depends on them beyond what the helper computes from `size` itself (its checks): the
        // sample is left without them, so it is sent as a weak update ([`Self::weak_record`]).
        if helper == linerate_bpf::facts::helper::PERF_EVENT_OUTPUT {
            return Ok(0);
        }
        match self.constant_of(size) {
            Some(n) => Ok(n.min(max)),
            None => Err(self.unsupported(
                pc,
                format!(
                    "a size argument of {} that is not a constant",
                    linerate_bpf::helpers::helper_name(helper)
                ),
            )),
        }
    }

    fn read_bytes(
        &mut self,
        pc: usize,
        addr: &SymValue,
        len: u64,
    ) -> Result<Vec<SymValue>, SmtError> {
        let (region, off) = self.place(pc, addr, len, false)?;
        if region == Region::Ctx {
            return Err(self.fault(pc, "a helper reading the context as memory"));
        }
        let memory = self.memory(pc, region)?;
        let mut out = Vec::with_capacity(len as usize);
        for i in 0..len {
            match memory.byte(&add(&off, i)).to_value() {
                Some(v) => out.push(v),
                None => return Err(self.unsupported(pc, "a helper reading a spilled pointer")),
            }
        }
        Ok(out)
    }

    fn locate(
        &mut self,
        pc: usize,
        addr: &SymValue,
        len: u64,
    ) -> Result<Whereabouts<SymValue, Bool>, SmtError> {
        let (yes, no) = (Bool::from_bool(true), Bool::from_bool(false));
        // A pointer is a number only where it is NULL, the number 0.
        let zero = SymValue::constant(0);
        Ok(match &addr.tag {
            Tag::Scalar => Whereabouts {
                held: no,
                number: yes,
                value: addr.clone(),
            },
            // Its high half is a kernel pointer's, in the kernel half: no number the kernel
            // refuses, nor memory the machine holds.
            Tag::Low32 => Whereabouts {
                held: no.clone(),
                number: no,
                value: zero,
            },
            Tag::Invalid(why) => return Err(self.unsupported(pc, *why)),
            Tag::Ptr { region, null } => {
                let inside = self.holds(*region, &addr.bits, len);
                match null {
                    Some(null) => Whereabouts {
                        held: Bool::and(&[&null.not(), &inside]),
                        number: null.clone(),
                        value: zero,
                    },
                    None => Whereabouts {
                        held: inside,
                        number: no,
                        value: zero,
                    },
                }
            }
        })
    }

    fn write_bytes(
        &mut self,
        pc: usize,
        addr: &SymValue,
        bytes: &[SymValue],
    ) -> Result<(), SmtError> {
        let (region, off) = self.place(pc, addr, bytes.len() as u64, true)?;
        let memory = self.memory(pc, region)?;
        for (i, b) in bytes.iter().enumerate() {
            if let Err(why) = memory.store(&add(&off, i as u64), 1, b) {
                return Err(self.unsupported(pc, why));
            }
        }
        Ok(())
    }

    fn map_of(&mut self, pc: usize, helper: u32, handle: &SymValue) -> Result<usize, SmtError> {
        match (handle.region(), handle.bits.as_const()) {
            (Some(Region::MapHandle(map)), Some(0)) => Ok(map),
            _ => Err(SmtError::Sem(SemError::BadHelperArgument {
                pc,
                helper,
                reason: "the map argument is not a map",
            })),
        }
    }

    fn map_def(&self, map: usize) -> &MapDef {
        &self.env.object.maps[map]
    }

    fn map_lookup(
        &mut self,
        pc: usize,
        map: usize,
        key: &[SymValue],
    ) -> Result<SymValue, SmtError> {
        let def = &self.env.object.maps[map];
        SymMap::check_modelled(def).map_err(|e| self.unsupported(pc, e.0))?;
        if def.map_type == MapType::LPM_TRIE {
            return Ok(self.lpm_lookup(map, key));
        }
        let pointer = self.s.maps[map].lookup(def, key);
        self.constrain_fresh(map);
        Ok(pointer)
    }

    fn map_update(
        &mut self,
        pc: usize,
        map: usize,
        key: &[SymValue],
        value: &[SymValue],
        flags: &SymValue,
    ) -> Result<SymValue, SmtError> {
        let def = &self.env.object.maps[map];
        SymMap::check_changes(def).map_err(|e| self.unsupported(pc, e.0))?;
        let result = self.s.maps[map]
            .update(def, key, value, flags)
            .map_err(|e| self.unsupported(pc, e.0));
        self.constrain_fresh(map);
        result
    }

    fn inner_map(
        &mut self,
        pc: usize,
        outer: usize,
        slot: &SymValue,
    ) -> Result<SymValue, SmtError> {
        let inner = self.choose_inner(pc, outer, slot)?;
        Ok(SymValue::pointer(Region::MapHandle(inner), Bits::Const(0)))
    }

    fn map_delete(
        &mut self,
        pc: usize,
        map: usize,
        key: &[SymValue],
    ) -> Result<SymValue, SmtError> {
        let def = &self.env.object.maps[map];
        SymMap::check_changes(def).map_err(|e| self.unsupported(pc, e.0))?;
        let result = self.s.maps[map]
            .delete(def, key)
            .map_err(|e| self.unsupported(pc, e.0));
        self.constrain_fresh(map);
        result
    }

    fn packet_bounds(&mut self) -> PacketBounds<SymValue> {
        self.s.bounds.clone()
    }

    fn set_packet_bounds(
        &mut self,
        pc: usize,
        bounds: PacketBounds<SymValue>,
    ) -> Result<(), SmtError> {
        // Bytes `data_end` grows over read as zero.
        let (old, new) = (self.s.bounds.data_end.bits.bv(), bounds.data_end.bits.bv());
        self.s.packet.zero_range(&old, &new);
        // So does the headroom in front of the packet the first time it is uncovered.
        let Some(start) = bounds.data_meta.bits.as_const() else {
            return Err(self.unsupported(pc, "moving the packet's start by a symbolic amount"));
        };
        if start < self.s.headroom_clean {
            let n = (self.s.headroom_clean - start) as usize;
            self.s.packet.fill(start, &vec![0; n]);
            self.s.headroom_clean = start;
        }
        self.s.bounds = bounds;
        Ok(())
    }

    fn packet_frags(&mut self) -> Frags<SymValue> {
        // Packets of at most `MAX_DATA` bytes are single-buffer.
        Frags {
            len: SymValue::constant(0),
            last: SymValue::constant(0),
        }
    }

    fn set_frags_len(&mut self, pc: usize, _len: &SymValue) -> Result<(), SmtError> {
        Err(self.unsupported(pc, "multi-buffer packets"))
    }

    fn read_packet(
        &mut self,
        pc: usize,
        offset: &SymValue,
        len: u64,
    ) -> Result<Vec<SymValue>, SmtError> {
        let addr = self.packet_address(offset);
        self.read_bytes(pc, &addr, len)
    }

    fn write_packet(
        &mut self,
        pc: usize,
        offset: &SymValue,
        bytes: &[SymValue],
    ) -> Result<(), SmtError> {
        let addr = self.packet_address(offset);
        self.write_bytes(pc, &addr, bytes)
    }

    fn source(&mut self, pc: usize, source: Source) -> Result<SymValue, SmtError> {
        let v = match source {
            Source::MonotonicNs | Source::BootNs => {
                let which = usize::from(source == Source::BootNs);
                let name = if which == 0 {
                    "bpf_ktime_get_ns"
                } else {
                    "bpf_ktime_get_boot_ns"
                };
                let v = self.fresh(pc, name, 64);
                // Clocks do not go back within a run.
                if let Some(last) = self.s.last_time[which].clone() {
                    self.session.assert(&last.bvule(&v));
                }
                self.s.last_time[which] = Some(v.clone());
                v
            }
            Source::Random32 => self.fresh(pc, "bpf_get_prandom_u32", 32),
            Source::SynCookie => self.fresh(pc, "a SYN cookie", 32),
            Source::SynCookieMss => self.fresh(pc, "the MSS table index of a SYN cookie", 2),
            Source::SynCookieValid => self.fresh(pc, "a SYN cookie check's verdict", 1),
            Source::KernelRead => {
                self.fresh(pc, "how bpf_probe_read_kernel ends on kernel memory", 2)
            }
            Source::KernelByte => self.fresh(pc, "a byte of kernel memory", 8),
            Source::ProcessorId => {
                let v = self.fresh(pc, crate::replay::PROCESSOR_ID, 64);
                let cpus = self.env.cpus;
                self.session.assert(&v.bvult(BV::from_u64(cpus, 64)));
                v
            }
        };
        Ok(SymValue::symbolic(v))
    }

    fn tail_calls_made(&mut self) -> u32 {
        self.s.tail_calls
    }

    fn tail_call(
        &mut self,
        pc: usize,
        go: &Bool,
        _map: usize,
        program: &SymValue,
    ) -> Result<HelperOutcome, SmtError> {
        let index = self.s.next;
        let Decision::TailCall {
            program: target, ..
        } = self.decision(pc)?
        else {
            return Err(self.mismatch(index, pc, "a tail call"));
        };
        let programs = self.env.object.programs.len() as u64;
        let number = program.bits.bv();
        match target {
            Some(t) => {
                if t as u64 >= programs {
                    return Err(self.mismatch(index, pc, "a tail call into a program that exists"));
                }
                let cond = Bool::and(&[go, &number.eq(BV::from_u64(t as u64, 64))]);
                self.s.pending = Some((index, cond));
                self.s.program = t;
                self.s.tail_calls += 1;
                Ok(HelperOutcome::TailCall)
            }
            None => {
                // A program array holds programs of the object only (the kernel checks what
                // user space puts there): the call falls through where the slot is empty.
                self.s.pending = Some((index, go.not()));
                Ok(HelperOutcome::Return)
            }
        }
    }

    fn redirect(&mut self, _pc: usize, to: RedirectTo<SymValue>) -> Result<(), SmtError> {
        self.s.redirects.push(to);
        Ok(())
    }

    fn fib_route(
        &mut self,
        pc: usize,
        ipv6: bool,
        dst: &[SymValue],
    ) -> Result<FibAnswer<SymValue, Bool>, SmtError> {
        let found = self.fresh(pc, "bpf_fib_lookup (route found)", 1);
        let ifindex = self.fresh(pc, "bpf_fib_lookup (egress ifindex)", 32);
        let mac = |m: &mut Self| -> [SymValue; 6] {
            std::array::from_fn(|_| SymValue::symbolic(m.fresh(pc, "bpf_fib_lookup (MAC)", 8)))
        };
        let smac = mac(self);
        let dmac = mac(self);
        let bvs = |values: &[SymValue]| values.iter().map(|v| v.bits.bv()).collect();
        self.s.fib_lookups.push(crate::machine::FibLookup {
            pc,
            ipv6,
            dst: bvs(dst),
            found: found.clone(),
            ifindex: ifindex.clone(),
            smac: bvs(&smac),
            dmac: bvs(&dmac),
        });
        Ok(FibAnswer {
            found: found.eq(BV::from_u64(1, 64)),
            ifindex: SymValue::symbolic(ifindex),
            smac,
            dmac,
        })
    }

    fn trace(&mut self, _pc: usize, _line: String) {}

    fn ring_positions(&mut self, pc: usize, map: usize) -> Result<(SymValue, SymValue), SmtError> {
        let ring = self.ring(pc, map)?;
        Ok((
            SymValue::symbolic(ring.consumer0.clone()),
            SymValue::symbolic(ring.producer.clone()),
        ))
    }

    fn emit_record(
        &mut self,
        pc: usize,
        map: usize,
        record: Vec<SymValue>,
    ) -> Result<(), SmtError> {
        // What a record holds reaches only its reader; a perf event array keeps no position.
        if self.env.object.maps[map].map_type == MapType::RINGBUF {
            self.ring(pc, map)?.produce(record.len() as u64);
        }
        Ok(())
    }

    fn ring_reserve(&mut self, pc: usize, map: usize, size: u64) -> Result<SymValue, SmtError> {
        let ring = self.ring(pc, map)?;
        ring.produce(size);
        let slot = ring.reserved.len() as u64;
        ring.reserved.push(size);
        // The record's bytes are whatever the ring held there: the map's unknown contents.
        Ok(SymValue::pointer(
            Region::MapValue(map),
            value_offset(&Bits::Const(slot), 0),
        ))
    }

    fn ring_commit(
        &mut self,
        pc: usize,
        record: &SymValue,
        _discard: bool,
    ) -> Result<(), SmtError> {
        // Committing or discarding changes what the reader gets, not what the program sees.
        match record.region() {
            Some(Region::MapValue(map)) if self.s.maps[map].ring.is_some() => Ok(()),
            _ => Err(SmtError::Sem(SemError::BadHelperArgument {
                pc,
                helper: linerate_bpf::facts::helper::RINGBUF_SUBMIT,
                reason: "the record is not one reserved in a ring buffer",
            })),
        }
    }

    fn queue_len(&mut self, pc: usize, map: usize) -> Result<SymValue, SmtError> {
        Ok(SymValue::symbolic(self.queue(pc, map)?.len()))
    }

    fn queue_push(
        &mut self,
        pc: usize,
        map: usize,
        value: Vec<SymValue>,
        evict: &Bool,
    ) -> Result<(), SmtError> {
        let bytes = value.iter().map(byte_of).collect();
        self.queue(pc, map)?.push(bytes, evict);
        Ok(())
    }

    fn queue_take(
        &mut self,
        pc: usize,
        map: usize,
        remove: bool,
    ) -> Result<Vec<SymValue>, SmtError> {
        let value_size = self.env.object.maps[map].value_size;
        let bytes = self.queue(pc, map)?.take(remove, value_size);
        Ok(bytes
            .into_iter()
            .map(|b| SymValue::symbolic(b.zero_ext(56)))
            .collect())
    }

    fn device(
        &mut self,
        pc: usize,
        ifindex: &SymValue,
    ) -> Result<Device<SymValue, Bool>, SmtError> {
        use linerate_bpf::facts::mtu::{LOOPBACK_HARD_HEADER_LEN, LOOPBACK_IFINDEX, LOOPBACK_MTU};
        // Where the program runs, any device may be asked about: whether it exists, its MTU
        // and its hard header length are unknown.
        let exists = self.fresh(pc, "bpf_check_mtu (device exists)", 1);
        let mtu = self.fresh(pc, "bpf_check_mtu (device MTU)", 32);
        let header = self.fresh(pc, "bpf_check_mtu (device header length)", 16);
        let c = |v: u64| BV::from_u64(v, 64);
        let exists = exists.eq(c(1));
        // The interpreter knows the loopback device alone (ifindex 0 is the packet's own,
        // loopback): a replay repeats the path where it asks about that one, or about an
        // ifindex no device of this host has (which the kernel does not find either).
        let ifindex = ifindex.bits.bv();
        let loopback = Bool::or(&[&ifindex.eq(c(0)), &ifindex.eq(c(LOOPBACK_IFINDEX))]);
        let other_devices: Vec<Bool> = self
            .env
            .devices
            .iter()
            .map(|&(i, _)| ifindex.eq(c(u64::from(i))))
            .collect();
        let as_replayed = Bool::and(&[
            &exists.eq(&loopback),
            &Bool::or(&[&loopback, &Bool::or(&other_devices).not()]),
            &loopback.implies(Bool::and(&[
                &mtu.eq(c(LOOPBACK_MTU)),
                &header.eq(c(LOOPBACK_HARD_HEADER_LEN)),
            ])),
        ]);
        self.s.sources.push(crate::machine::SourceVar {
            pc,
            what: crate::replay::DEVICE_AS_REPLAYED,
            bv: as_replayed.ite(&c(1), &c(0)),
        });
        Ok(Device {
            exists,
            mtu: SymValue::symbolic(mtu),
            hard_header_len: SymValue::symbolic(header),
        })
    }

    fn function_of(&mut self, pc: usize, helper: u32, value: &SymValue) -> Result<usize, SmtError> {
        self.callback_function(pc, helper, value)
    }

    fn callback_key(&mut self, pc: usize, key: &[SymValue]) -> Result<SymValue, SmtError> {
        self.place_callback_key(pc, key)
    }

    fn map_next_element(
        &mut self,
        pc: usize,
        map: usize,
        after: Option<WalkPosition>,
    ) -> Result<Option<WalkedElement<SymValue>>, SmtError> {
        self.walk_hash(pc, map, after)
    }
}
