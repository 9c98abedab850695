//! The path machine: executes one program of an object along a given path with symbolic inputs.
//!
//! Instruction and helper effects come from `linerate_sem` ([`step`], `helpers::call`); this file
//! supplies what the semantics leaves to a machine — memory per region ([`crate::memory`]), the
//! symbolic maps ([`crate::maps`]), the symbolic packet and context, values from outside the
//! program (helpers: [`crate::helpers`]) — and follows the path's [`Decision`]s at conditional jumps and tail calls, handing
//! each one's condition to the [`Session`] as an assumption literal.

use std::rc::Rc;

use linerate_bpf::facts::test_run_buffer::{HEADROOM, MAX_DATA};
use linerate_bpf::facts::xdp_md;
use linerate_bpf::insn::{Imm64, Instruction, Size, NUM_REGS};
use linerate_bpf::Object;
use linerate_cfg::{Cfg, Decision};
use linerate_sem::exec::{step, Flow, Frame, HelperOutcome, Machine, STACK_FRAME_SIZE};
use linerate_sem::helpers::{Callback, PacketBounds, RedirectTo};
use z3::ast::{Ast, Bool, BV};

use crate::error::SmtError;
use crate::maps::{value_offset, SymMap};
use crate::memory::Memory;
use crate::session::Session;
use crate::value::{Bits, Region, SymDomain, SymValue, Tag};

/// Instructions one path may execute before the machine gives up on it (a path is finite, so
/// only a decision list that keeps a loop going forever reaches this).
const MAX_STEPS: u64 = 1_000_000;

/// What does not change between paths: the object, its decoded programs and their CFGs.
pub(crate) struct Env {
    pub object: Object,
    pub slots: Vec<Rc<[Option<Instruction>]>>,
    pub cfgs: Vec<Result<Cfg, String>>,
    /// `(ifindex, rx queues)` of every device `BPF_PROG_TEST_RUN` may be given.
    pub devices: Vec<(u32, u32)>,
    /// CPUs a program may run on.
    pub cpus: u64,
    /// Whether callbacks of `bpf_loop` and `bpf_for_each_map_elem` are left unfollowed, their
    /// effects over-approximated ([`crate::callbacks`]: refuting a path for every way its
    /// callbacks may go).
    pub abstract_callbacks: bool,
}

impl Env {
    /// The environment of `object`: its programs decoded, their CFGs, this host's devices.
    pub fn new(object: &Object) -> Result<Env, SmtError> {
        let mut slots = Vec::new();
        let mut cfgs = Vec::new();
        for p in &object.programs {
            let mut decoded = vec![None; p.insns.len()];
            for (i, insn) in p.decode().map_err(|e| SmtError::Decode {
                program: p.name.clone(),
                reason: e.to_string(),
            })? {
                decoded[i] = Some(insn);
            }
            slots.push(Rc::from(decoded));
            cfgs.push(Cfg::build(p).map_err(|e| format!("program `{}`: {e}", p.name)));
        }
        Ok(Env {
            object: object.clone(),
            slots,
            cfgs,
            devices: crate::host::devices(),
            cpus: crate::host::cpus(),
            abstract_callbacks: false,
        })
    }
}

/// A value the program read from outside (time, random numbers, routes), for the witness.
#[derive(Clone, Debug)]
pub(crate) struct SourceVar {
    pub pc: usize,
    pub what: &'static str,
    pub bv: BV,
}

/// One `bpf_fib_lookup` along the path: the destination it asked about and the answer the path
/// needs, for the routes a witness comes with ([`crate::replay::routes`]).
#[derive(Clone, Debug)]
pub(crate) struct FibLookup {
    pub pc: usize,
    pub ipv6: bool,
    /// The destination address's bytes (4 or 16).
    pub dst: Vec<BV>,
    pub found: BV,
    pub ifindex: BV,
    pub smac: Vec<BV>,
    pub dmac: Vec<BV>,
}

/// The inputs of the formula (the packet's bytes are the initial contents of
/// [`State::packet`]).
#[derive(Clone, Debug)]
pub(crate) struct Inputs {
    pub packet_len: BV,
    pub ingress_ifindex: BV,
    pub rx_queue_index: BV,
}

/// Everything that changes along a path; cloned as a snapshot after every decision.
#[derive(Clone, Debug)]
pub(crate) struct State {
    pub domain: SymDomain,
    pub regs: [SymValue; NUM_REGS],
    pub frames: Vec<Frame<SymValue>>,
    pub program: usize,
    pub pc: usize,
    /// Index of the next decision to consume.
    pub next: usize,
    pub steps: u64,
    pub stack: Memory,
    /// Keys handed to callbacks ([`Region::CallbackKey`]).
    pub callback_keys: Memory,
    pub packet: Memory,
    pub bounds: PacketBounds<SymValue>,
    pub maps: Vec<SymMap>,
    pub tail_calls: u32,
    /// `(program, slot)` of every block entered, in order.
    pub blocks: Vec<(usize, usize)>,
    pub sources: Vec<SourceVar>,
    /// The routing lookups the path made, in order.
    pub fib_lookups: Vec<FibLookup>,
    /// Assumption literals of outcomes chosen inside helpers ([`HelperMachine::decide`]).
    pub choices: Vec<Bool>,
    /// For each choice, its outcome and the number of decisions taken before it.
    pub chosen: Vec<(bool, usize)>,
    /// Indices of the choices a core after them may rest on without naming them: those that
    /// steer control flow (made inside callbacks or about another call of one:
    /// [`crate::callbacks`]), and those whose other outcome the path up to them allowed (both
    /// were possible when chosen, or the checker forced the outcome). A helper's outcome is baked
    /// into the state (`bpf_xdp_load_bytes` fills its buffer only when it succeeds), so a later
    /// condition may be a constant of it.
    pub implicit: Vec<usize>,
    /// Whether the path called a helper that calls a callback ([`crate::callbacks`]).
    pub called_back: bool,
    /// Choices made so far of whether a callback helper calls (again).
    pub callback_calls: u64,
    /// Where each packet access ends (buffer offsets), for a first guess at the shortest packet.
    pub packet_ends: Vec<BV>,
    /// Lowest buffer offset the packet (or its metadata) has started at: the buffer in front of
    /// it has never been uncovered.
    pub headroom_clean: u64,
    pub last_time: [Option<BV>; 2],
    pub fresh: u64,
    /// A tail call's decision, taken inside the helper and handed to the session after the
    /// instruction.
    pub pending: Option<(usize, Bool)>,
    /// Where redirect helpers sent the packet, in call order (the last one counts).
    pub redirects: Vec<RedirectTo<SymValue>>,
    pub inputs: Inputs,
}

/// Result of running a path to its end.
pub(crate) struct Finished {
    pub r0: SymValue,
}

/// Bytes of one stack frame.
const FRAME: u64 = STACK_FRAME_SIZE;

impl State {
    /// The state at the entry of program `program`, with its inputs constrained in `session`.
    pub fn entry(env: &Env, program: usize, session: &mut Session) -> State {
        let packet_len = BV::new_const("packet_len", 64);
        let ingress_ifindex = BV::new_const("ingress_ifindex", 64);
        let rx_queue_index = BV::new_const("rx_queue_index", 64);
        let c = |v: u64| BV::from_u64(v, 64);
        let eth = linerate_bpf::facts::test_run_buffer::ETH_HLEN;
        session.assert(&packet_len.bvuge(c(eth)));
        session.assert(&packet_len.bvule(c(MAX_DATA)));
        let devices: Vec<Bool> = env
            .devices
            .iter()
            .map(|&(ifindex, queues)| {
                Bool::and(&[
                    &ingress_ifindex.eq(c(u64::from(ifindex))),
                    &rx_queue_index.bvult(c(u64::from(queues))),
                ])
            })
            .collect();
        session.assert(&Bool::or(&devices));
        // The packet's bytes are the input; the buffer around them reads as zero, which the
        // bounds moves make visible ([`HelperMachine::set_packet_bounds`]).
        let packet = Memory::input("packet").naming_offsets();
        let end = c(HEADROOM).bvadd(&packet_len);
        let inputs = Inputs {
            packet_len: packet_len.clone(),
            ingress_ifindex,
            rx_queue_index,
        };
        let mut state = State {
            domain: SymDomain::default(),
            regs: std::array::from_fn(|_| SymValue::constant(0)),
            frames: Vec::new(),
            program,
            pc: 0,
            next: 0,
            steps: 0,
            stack: Memory::zeroed().naming_offsets(),
            callback_keys: Memory::zeroed(),
            packet,
            bounds: PacketBounds {
                data_meta: SymValue::constant(HEADROOM),
                data: SymValue::constant(HEADROOM),
                data_end: SymValue::symbolic(end),
            },
            maps: env
                .object
                .maps
                .iter()
                .enumerate()
                .map(|(i, def)| SymMap::new(i, def))
                .collect(),
            tail_calls: 0,
            blocks: Vec::new(),
            sources: Vec::new(),
            fib_lookups: Vec::new(),
            choices: Vec::new(),
            chosen: Vec::new(),
            implicit: Vec::new(),
            called_back: false,
            callback_calls: 0,
            packet_ends: Vec::new(),
            headroom_clean: HEADROOM,
            last_time: [None, None],
            fresh: 0,
            pending: None,
            redirects: Vec::new(),
            inputs,
        };
        state.entry_registers();
        state
    }

    /// Constrains the packet to be `packet`.
    pub fn fix_packet(&mut self, session: &mut Session, packet: &[u8]) {
        let c = |v: u64| BV::from_u64(v, 64);
        session.assert(&self.inputs.packet_len.eq(c(packet.len() as u64)));
        for (i, b) in packet.iter().enumerate() {
            let byte = self.packet.initial_byte(HEADROOM + i as u64);
            session.assert(&byte.eq(BV::from_u64(u64::from(*b), 8)));
        }
    }

    fn entry_registers(&mut self) {
        self.regs = std::array::from_fn(|_| SymValue::constant(0));
        self.regs[1] = SymValue::pointer(Region::Ctx, Bits::Const(0));
        self.regs[10] = SymValue::pointer(Region::Stack, Bits::Const(FRAME));
        self.frames.clear();
        self.pc = 0;
    }
}

/// One execution: the environment, the session and the path's decisions around a state.
pub(crate) struct Exec<'a> {
    pub env: &'a Env,
    pub session: &'a mut Session,
    pub decisions: &'a [Decision],
    /// Outcomes imposed on the first choices inside helpers (the checker's backtracking).
    pub forced: &'a [bool],
    /// Whether choices about callbacks first try another call, through the longest body
    /// ([`crate::callbacks`]); otherwise the first outcome the path allows.
    pub prefer_calls: bool,
    pub s: State,
}

impl Exec<'_> {
    /// The instruction at `pc` of the executing program, if there is one there.
    pub(crate) fn insn_at(&self, pc: usize) -> Option<linerate_bpf::insn::Instruction> {
        self.env
            .slots
            .get(self.s.program)
            .and_then(|p| p.get(pc))
            .copied()
            .flatten()
    }

    pub(crate) fn program_name(&self) -> String {
        self.env
            .object
            .programs
            .get(self.s.program)
            .map_or_else(|| format!("#{}", self.s.program), |p| p.name.clone())
    }

    pub(crate) fn unsupported(&self, pc: usize, what: impl Into<String>) -> SmtError {
        SmtError::Unsupported {
            program: self.program_name(),
            pc,
            what: what.into(),
        }
    }

    pub(crate) fn fault(&self, pc: usize, what: impl Into<String>) -> SmtError {
        SmtError::Memory {
            program: self.program_name(),
            pc,
            what: what.into(),
        }
    }

    /// Runs from the current state to the program's exit, taking a snapshot after every
    /// decision.
    pub fn run(&mut self) -> Result<Finished, SmtError> {
        loop {
            self.s.steps += 1;
            self.session.executed += 1;
            if self.s.steps > MAX_STEPS {
                return Err(SmtError::TooLong { steps: MAX_STEPS });
            }
            let (program, pc) = (self.s.program, self.s.pc);
            let insn = match self.env.slots.get(program).and_then(|p| p.get(pc)) {
                Some(Some(insn)) => *insn,
                _ => {
                    return Err(self.fault(pc, "jump to a slot that starts no instruction"));
                }
            };
            self.record_block(program, pc)?;
            let flow = step(self, pc, &insn)?;
            self.assert_definitions();
            if let Some(why) = self.s.domain.fault.take() {
                return Err(self.unsupported(pc, why));
            }
            let tail_decision = self.s.pending.take();
            if let Some((index, cond)) = &tail_decision {
                self.session.decide(*index, cond);
                self.s.next = index + 1;
            }
            match flow {
                Flow::Next(next) => self.s.pc = next,
                Flow::Branch {
                    cond,
                    taken,
                    fallthrough,
                } => {
                    if self.in_callback() {
                        // Not a decision of the path: the solver's ([`crate::callbacks`]).
                        let go = taken == fallthrough
                            || self.callback_branch(pc, &cond, taken, fallthrough)?;
                        self.s.pc = if go { taken } else { fallthrough };
                        continue;
                    }
                    let index = self.s.next;
                    let decision = self.decision(pc)?;
                    let Decision::Branch { taken: go, .. } = decision else {
                        return Err(self.mismatch(index, pc, "a conditional jump"));
                    };
                    // A jump to the next slot goes there either way: its condition does not
                    // constrain the path (the interpreter records it as not taken).
                    let holds = if taken == fallthrough {
                        Bool::from_bool(true)
                    } else if go {
                        cond
                    } else {
                        cond.not()
                    };
                    self.session.decide(index, &holds);
                    self.s.next = index + 1;
                    self.s.pc = if go { taken } else { fallthrough };
                    self.session.snapshot(&self.s);
                }
                Flow::LoopBudget { exhausted, next } => {
                    // The budget (millions of iterations) outlasts any path given as a list of
                    // decisions; a path that says it ran out is impossible.
                    match self.decisions.get(self.s.next) {
                        Some(&Decision::Branch { pc: at, taken }) if at == pc => {
                            let index = self.s.next;
                            self.session.decide(index, &Bool::from_bool(!taken));
                            self.s.next = index + 1;
                            self.s.pc = if taken { exhausted } else { next };
                            self.session.snapshot(&self.s);
                        }
                        _ => self.s.pc = next,
                    }
                }
                Flow::Exit => {
                    return Ok(Finished {
                        r0: self.s.regs[0].clone(),
                    })
                }
                Flow::TailCall => self.s.entry_registers(),
            }
            if tail_decision.is_some() {
                self.session.snapshot(&self.s);
            }
        }
    }

    fn record_block(&mut self, program: usize, pc: usize) -> Result<(), SmtError> {
        let cfg = match self.env.cfgs.get(program) {
            Some(Ok(cfg)) => cfg,
            Some(Err(e)) => return Err(SmtError::Cfg(e.clone())),
            None => return Err(SmtError::NoSuchProgram(program)),
        };
        let starts = cfg
            .block_of(pc)
            .and_then(|b| cfg.block(b))
            .is_some_and(|b| b.slots().start == pc);
        if starts {
            self.s.blocks.push((program, pc));
        }
        Ok(())
    }

    /// The next decision, which must be made at `pc`.
    pub(crate) fn decision(&self, pc: usize) -> Result<Decision, SmtError> {
        let index = self.s.next;
        match self.decisions.get(index) {
            None => Err(SmtError::PathEnds {
                program: self.program_name(),
                pc,
                given: self.decisions.len(),
            }),
            Some(d) if d.pc() != pc => Err(self.mismatch(index, pc, "a decision at this slot")),
            Some(d) => Ok(*d),
        }
    }

    pub(crate) fn mismatch(&self, index: usize, pc: usize, reached: &'static str) -> SmtError {
        SmtError::Mismatch {
            index,
            decision: self.decisions.get(index).copied(),
            program: self.program_name(),
            pc,
            reached,
        }
    }

    /// Where `len` bytes at `addr` are, after checking the access stays inside its region; the
    /// checks that depend on inputs become constraints (the verifier proved them).
    pub(crate) fn place(
        &mut self,
        pc: usize,
        addr: &SymValue,
        len: u64,
        write: bool,
    ) -> Result<(Region, Bits), SmtError> {
        let region = match &addr.tag {
            Tag::Ptr { region, .. } => *region,
            Tag::Scalar | Tag::Low32 => {
                return Err(self.fault(pc, format!("{len}-byte access through a scalar")))
            }
            Tag::Invalid(why) => return Err(self.unsupported(pc, *why)),
        };
        let off = addr.bits.clone();
        let c = |v: u64| BV::from_u64(v, 64);
        match region {
            Region::Packet => {
                let lo = self.s.bounds.data_meta.bits.bv();
                let hi = self.s.bounds.data_end.bits.bv();
                let o = off.bv();
                let end = o.bvadd(c(len));
                self.s.packet_ends.push(end.clone());
                self.session.assert(&Bool::and(&[
                    &lo.bvule(&o),
                    &end.bvule(&hi),
                    &o.bvule(&end),
                ]));
            }
            Region::Stack => {
                let top = (self.s.frames.len() as u64 + 1) * FRAME;
                match off {
                    Bits::Const(o) if o.checked_add(len).is_some_and(|e| e <= top) => {}
                    Bits::Const(o) => {
                        return Err(self.fault(
                            pc,
                            format!("{len}-byte access at stack offset {o} outside {top} bytes"),
                        ))
                    }
                    Bits::Sym(ref o) => {
                        let end = o.bvadd(c(len));
                        self.session
                            .assert(&Bool::and(&[&end.bvule(c(top)), &o.bvule(&end)]));
                    }
                }
            }
            Region::MapValue(map) => {
                let def = &self.env.object.maps[map];
                if write && self.s.maps[map].is_frozen() {
                    return Err(self.fault(pc, format!("store to read-only map `{}`", def.name)));
                }
                let size = self.s.maps[map].value_size(def, &off);
                match off {
                    Bits::Const(o) if (o & 0xffff_ffff) + len <= size => {}
                    Bits::Const(o) => {
                        return Err(self.fault(
                            pc,
                            format!(
                            "{len}-byte access at offset {} of a value of map `{}` ({size} bytes)",
                            o & 0xffff_ffff,
                            def.name
                        ),
                        ))
                    }
                    Bits::Sym(ref o) => {
                        let low = o.extract(31, 0).zero_ext(32);
                        self.session.assert(&low.bvadd(c(len)).bvule(c(size)));
                    }
                }
            }
            Region::Ctx => {}
            Region::CallbackKey if !write => {}
            Region::CallbackKey | Region::Function | Region::MapHandle(_) => {
                return Err(self.fault(pc, "access through a function address or a map handle"))
            }
        }
        Ok((region, off))
    }

    /// Asserts on the path what the memories defined the offsets they named as (helpers read
    /// memory too: the run asserts after every instruction).
    fn assert_definitions(&mut self) {
        let mut definitions = self.s.stack.take_definitions();
        definitions.extend(self.s.packet.take_definitions());
        for map in &mut self.s.maps {
            definitions.extend(map.memory.take_definitions());
        }
        for d in &definitions {
            self.session.assert(d);
        }
    }

    pub(crate) fn memory(&mut self, pc: usize, region: Region) -> Result<&mut Memory, SmtError> {
        match region {
            Region::Packet => Ok(&mut self.s.packet),
            Region::Stack => Ok(&mut self.s.stack),
            Region::MapValue(map) => Ok(&mut self.s.maps[map].memory),
            Region::CallbackKey => Ok(&mut self.s.callback_keys),
            _ => Err(self.fault(pc, "access to a region without memory")),
        }
    }

    fn load_ctx(&mut self, pc: usize, offset: &Bits, size: Size) -> Result<SymValue, SmtError> {
        let Some(offset) = offset.as_const() else {
            return Err(self.fault(pc, "context access at a variable offset"));
        };
        let b = &self.s.bounds;
        let field = match (offset & !3, size) {
            (xdp_md::DATA, Size::W) => {
                return Ok(SymValue::pointer(Region::Packet, b.data.bits.clone()))
            }
            (xdp_md::DATA_END, Size::W) => {
                return Ok(SymValue::pointer(Region::Packet, b.data_end.bits.clone()))
            }
            (xdp_md::DATA_META, Size::W) => {
                return Ok(SymValue::pointer(Region::Packet, b.data_meta.bits.clone()))
            }
            (xdp_md::INGRESS_IFINDEX, _) => self.s.inputs.ingress_ifindex.clone(),
            (xdp_md::RX_QUEUE_INDEX, _) => self.s.inputs.rx_queue_index.clone(),
            (xdp_md::EGRESS_IFINDEX, _) => BV::from_u64(0, 64),
            _ => {
                return Err(self.fault(
                    pc,
                    format!("{}-byte context load at offset {offset}", size.bytes()),
                ))
            }
        };
        let within = offset % 4;
        if within + size.bytes() as u64 > 4 {
            return Err(self.fault(pc, "load straddling context fields"));
        }
        let bits = size.bits();
        let v = field.bvlshr(BV::from_u64(8 * within, 64));
        let v = if bits >= 64 {
            v
        } else {
            v.bvand(BV::from_u64((1u64 << bits) - 1, 64))
        };
        Ok(SymValue::symbolic(v.simplify()))
    }

    pub(crate) fn fresh(&mut self, pc: usize, what: &'static str, bits: u32) -> BV {
        let n = self.s.fresh;
        self.s.fresh += 1;
        let bv = BV::new_const(format!("source{n}"), 64);
        if bits < 64 {
            self.session
                .assert(&bv.bvult(BV::from_u64(1u64 << bits, 64)));
        }
        self.s.sources.push(SourceVar {
            pc,
            what,
            bv: bv.clone(),
        });
        bv
    }
}

impl Machine for Exec<'_> {
    type D = SymDomain;
    type Fault = SmtError;

    fn domain(&mut self) -> &mut SymDomain {
        &mut self.s.domain
    }

    fn regs(&mut self) -> &mut [SymValue; NUM_REGS] {
        &mut self.s.regs
    }

    fn frames(&mut self) -> &mut Vec<Frame<SymValue>> {
        &mut self.s.frames
    }

    fn push_stack_frame(&mut self, depth: usize) -> Result<SymValue, SmtError> {
        let start = depth as u64 * FRAME;
        self.s.stack.fill(start, &[0; FRAME as usize]);
        Ok(SymValue::pointer(Region::Stack, Bits::Const(start + FRAME)))
    }

    fn pop_stack_frame(&mut self) {}

    fn load(&mut self, pc: usize, addr: &SymValue, size: Size) -> Result<SymValue, SmtError> {
        let len = size.bytes() as u64;
        let (region, off) = self.place(pc, addr, len, false)?;
        if region == Region::Ctx {
            return self.load_ctx(pc, &off, size);
        }
        let memory = self.memory(pc, region)?;
        match memory.load(&off, len as u32) {
            Ok(v) => Ok(v),
            Err(why) => Err(self.unsupported(pc, why)),
        }
    }

    fn store(
        &mut self,
        pc: usize,
        addr: &SymValue,
        size: Size,
        value: &SymValue,
    ) -> Result<(), SmtError> {
        let len = size.bytes() as u64;
        let (region, off) = self.place(pc, addr, len, true)?;
        if region == Region::Ctx {
            return Err(self.fault(pc, "store to the context"));
        }
        let memory = self.memory(pc, region)?;
        match memory.store(&off, len as u32, value) {
            Ok(()) => Ok(()),
            Err(why) => Err(self.unsupported(pc, why)),
        }
    }

    fn map_reference(&mut self, pc: usize, imm: &Imm64) -> Result<SymValue, SmtError> {
        let maps = self.env.object.maps.len();
        match *imm {
            Imm64::Map(map) if (map as usize) < maps => Ok(SymValue::pointer(
                Region::MapHandle(map as usize),
                Bits::Const(0),
            )),
            Imm64::MapValue { map, offset } if (map as usize) < maps => {
                let def = &self.env.object.maps[map as usize];
                let slot = self.s.maps[map as usize].global_slot(def);
                Ok(SymValue::pointer(
                    Region::MapValue(map as usize),
                    value_offset(&slot, u64::from(offset)),
                ))
            }
            _ => Err(self.fault(
                pc,
                format!("reference to a map the object (of {maps}) lacks"),
            )),
        }
    }

    fn function_reference(&mut self, _pc: usize, function: usize) -> Result<SymValue, SmtError> {
        Ok(SymValue::pointer(
            Region::Function,
            Bits::Const(function as u64),
        ))
    }

    fn call_helper(&mut self, pc: usize, id: u32) -> Result<HelperOutcome, SmtError> {
        // Past the tail call limit the helper falls through without asking the machine: the
        // path's decision there must say so.
        if id == linerate_bpf::facts::helper::TAIL_CALL
            && self.s.tail_calls >= linerate_bpf::facts::limits::MAX_TAIL_CALLS
        {
            let index = self.s.next;
            if self.decision(pc)? != (Decision::TailCall { pc, program: None }) {
                return Err(self.mismatch(index, pc, "a tail call past the limit, which fails"));
            }
            self.s.pending = Some((index, Bool::from_bool(true)));
        }
        if crate::callbacks::calls_back(id) {
            if self.env.abstract_callbacks {
                return self.havoc_callbacks(pc, id);
            }
            self.s.called_back = true;
        }
        linerate_sem::helpers::call(self, pc, id)
    }

    fn call_kfunc(&mut self, pc: usize, _index: i32) -> Result<(), SmtError> {
        Err(self.unsupported(pc, "kfunc calls"))
    }

    fn resume_helper(&mut self, callback: Callback<SymValue>) -> Result<HelperOutcome, SmtError> {
        linerate_sem::helpers::resume(self, callback)
    }
}
