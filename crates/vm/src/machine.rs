//! The interpreter: runs XDP programs of an [`Object`] on concrete packets and maps.
//!
//! [`Vm`] owns the decoded programs and the maps (which persist across runs, as in the kernel);
//! [`Vm::run`] executes one packet. Instruction effects come from `linerate_sem::step`; this file
//! and `machine/environment.rs` (the `Machine` implementation) supply only what the semantics
//! leaves to a machine: memory ([`crate::memory`]), map references, helpers ([`crate::helpers`])
//! and concrete branch decisions.

use std::rc::Rc;

use linerate_bpf::facts::xdp_md;
use linerate_bpf::insn::{Instruction, Size, NUM_REGS};
use linerate_bpf::records::{push_record, Records};
use linerate_bpf::Object;
use linerate_sem::exec::{Flow, Frame, MAX_CALL_FRAMES};
use linerate_sem::{step_op, Concrete};

use crate::decoded::Decoded;
use crate::error::VmError;
use crate::helpers::FibRoute;
use crate::maps::MapState;
use crate::memory::{
    pointer, split, PacketBuffer, CALLBACK_KEY_REGION, CTX_REGION, FUNCTION_REGION,
    MAP_HANDLE_REGION, MAP_VALUE_REGION, PACKET_REGION, STACK_REGION,
};
use crate::slab::Loc;
use crate::trace::{Step, StepState};

mod environment;

/// The registers a program starts with: r1 the context, r10 the frame pointer, the rest zero.
pub(crate) fn entry_registers() -> [u64; NUM_REGS] {
    let mut regs = [0; NUM_REGS];
    regs[1] = pointer(CTX_REGION, 0);
    regs[10] = pointer(STACK_REGION, FRAME_BYTES as u64);
    regs
}

/// Bytes of one function's stack frame.
pub(crate) const FRAME_BYTES: usize = linerate_sem::exec::STACK_FRAME_SIZE as usize;

/// Settings of the environment a program runs in.
#[derive(Clone, Debug)]
pub struct VmOptions {
    /// `ctx->ingress_ifindex` (the kernel's test_run uses the loopback device, 1).
    pub ingress_ifindex: u32,
    /// `ctx->rx_queue_index`.
    pub rx_queue_index: u32,
    /// Seed of `bpf_get_prandom_u32`.
    pub prandom_seed: u64,
    /// First value `bpf_ktime_get_ns` returns; each call advances it by `ktime_step_ns`.
    pub ktime_start_ns: u64,
    pub ktime_step_ns: u64,
    /// Routes `bpf_fib_lookup` consults.
    pub fib: Vec<FibRoute>,
    /// Executed instructions after which a run is stopped.
    pub max_instructions: u64,
    /// Whether to record every executed instruction of each run ([`RunOutcome::steps`]).
    pub record_steps: bool,
    /// Whether to record the state before every executed instruction ([`RunOutcome::states`]).
    pub record_states: bool,
}

impl Default for VmOptions {
    fn default() -> Self {
        VmOptions {
            ingress_ifindex: 1,
            rx_queue_index: 0,
            prandom_seed: 0x5eed,
            ktime_start_ns: 1_000_000_000,
            ktime_step_ns: 1_000,
            fib: Vec::new(),
            max_instructions: 10_000_000,
            record_steps: false,
            record_states: false,
        }
    }
}

/// Where a redirect sends the packet.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Redirect {
    /// `bpf_redirect(ifindex, flags)`.
    Ifindex(u32),
    /// `bpf_redirect_map(map, key, flags)` with an existing entry.
    Map { map: usize, key: u32 },
}

/// The result of running one packet.
#[derive(Clone, Debug)]
pub struct RunOutcome {
    /// The low 32 bits of r0 at exit: the XDP action, as the kernel sees it (`bpf_prog_run_xdp`
    /// returns a `u32`).
    pub return_value: u64,
    /// The packet after the program's changes and adjustments.
    pub packet: Vec<u8>,
    /// The metadata area in front of the packet.
    pub meta: Vec<u8>,
    /// Instructions executed (over all tail-called programs).
    pub instructions: u64,
    /// The program that returned (differs from the entry after tail calls).
    pub final_program: usize,
    /// With [`VmOptions::record_steps`]: every executed instruction, in order, across tail calls.
    pub steps: Vec<Step>,
    /// With [`VmOptions::record_states`]: the state before each executed instruction, in order.
    pub states: Vec<StepState>,
    /// The redirect target set by the last redirect helper.
    pub redirect: Option<Redirect>,
    /// Lines written by `bpf_trace_printk`.
    pub trace: Vec<String>,
    /// Records sent to ring buffers and perf event arrays, per map.
    pub records: Records,
}

/// What [`Vm::run_in_place`] returns: the outcome of a run without the packet (left in the
/// interpreter) and without what the program sent to user space.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RunSummary {
    /// The low 32 bits of r0 at exit ([`RunOutcome::return_value`]).
    pub return_value: u64,
    /// Instructions executed (over all tail-called programs).
    pub instructions: u64,
    /// The program that returned.
    pub final_program: usize,
    /// The redirect target set by the last redirect helper.
    pub redirect: Option<Redirect>,
}

/// The name of an XDP action.
pub use linerate_bpf::facts::xdp::action_name as xdp_action_name;

/// The interpreter for one object.
#[derive(Clone, Debug)]
pub struct Vm {
    /// Shared by clones (a driver with fresh maps clones the interpreter per packet).
    object: Rc<Object>,
    programs: Vec<Decoded>,
    /// Map contents, in `Object::maps` order; they persist across runs.
    pub maps: Vec<MapState>,
    pub options: VmOptions,
    prandom_state: u64,
    ktime_ns: u64,
    pub(crate) scratch: Scratch,
}

impl Vm {
    /// Decodes every program and creates every map of `object`.
    pub fn new(object: &Object, options: VmOptions) -> Result<Vm, VmError> {
        let programs = object
            .programs
            .iter()
            .map(|p| Decoded::new(p, object.maps.len()))
            .collect::<Result<Vec<_>, VmError>>()?;
        let maps = object
            .maps
            .iter()
            .map(MapState::new)
            .collect::<Result<Vec<_>, _>>()?;
        Ok(Vm {
            object: Rc::new(object.clone()),
            programs,
            maps,
            prandom_state: options.prandom_seed,
            ktime_ns: options.ktime_start_ns,
            options,
            scratch: Scratch::new(),
        })
    }

    /// Whether program `program` is an XDP program.
    pub(crate) fn is_xdp(&self, program: usize) -> bool {
        self.programs.get(program).is_some_and(|p| p.xdp)
    }

    /// The object being run.
    pub fn object(&self) -> &Object {
        &self.object
    }

    /// Runs program `program` on `packet` with metadata `meta` (usually empty).
    pub fn run(
        &mut self,
        program: usize,
        packet: &[u8],
        meta: &[u8],
    ) -> Result<RunOutcome, VmError> {
        let mut records = Records::new();
        let mut trace = Vec::new();
        self.drop_records();
        let ran = self.execute(program, Some((packet, meta)), &mut trace, &mut records);
        self.take_ring_records(&mut records);
        let (exit, summary) = ran?;
        let packet = &self.scratch.packet;
        Ok(RunOutcome {
            return_value: summary.return_value,
            packet: packet.whole_packet(),
            meta: packet.meta().to_vec(),
            instructions: summary.instructions,
            final_program: summary.final_program,
            steps: exit.steps,
            states: exit.states,
            redirect: summary.redirect,
            trace,
            records,
        })
    }

    /// Runs program `program` on `packet` as [`Vm::run`] does, but leaves the resulting packet in
    /// the interpreter ([`Vm::packet_buffer`]) instead of copying it out, and drops what the
    /// program sent to user space (trace lines; ring buffer and perf event records stay in
    /// their rings for its reruns, [`Vm::rerun_in_place`], until the next packet): after the
    /// first run, a run allocates nothing unless the program writes such output. Steps and states
    /// are not recorded. For callers that run many packets and compare only some of the outcome
    /// (the optimizer's candidate evaluation).
    pub fn run_in_place(
        &mut self,
        program: usize,
        packet: &[u8],
        meta: &[u8],
    ) -> Result<RunSummary, VmError> {
        self.quietly(program, Some((packet, meta)))
    }

    /// Runs program `program` again on the packet as the last run left it (its bytes, its
    /// `data_meta`, `data` and `data_end`), otherwise as [`Vm::run_in_place`] does. This is what
    /// the kernel's `BPF_PROG_TEST_RUN` does with `repeat` above 1: it copies the packet in once
    /// and runs the program on the same buffer again and again, so that a program that changes
    /// the packet takes, from the second run on, the path the changed packet leads to. Before
    /// any run, the buffer holds an empty packet.
    pub fn rerun_in_place(&mut self, program: usize) -> Result<RunSummary, VmError> {
        self.quietly(program, None)
    }

    /// A run recording nothing and dropping what the program sent to user space, on `packet`
    /// (with its metadata) or, without one, on the packet the last run left.
    fn quietly(
        &mut self,
        program: usize,
        packet: Option<(&[u8], &[u8])>,
    ) -> Result<RunSummary, VmError> {
        let (record_steps, record_states) = (self.options.record_steps, self.options.record_states);
        self.options.record_steps = false;
        self.options.record_states = false;
        let mut trace = Vec::new();
        let mut records = Records::new();
        if packet.is_some() {
            self.drop_records();
        }
        let ran = self.execute(program, packet, &mut trace, &mut records);
        self.options.record_steps = record_steps;
        self.options.record_states = record_states;
        Ok(ran?.1)
    }

    /// Drops the records left in ring buffers and perf event arrays by runs in place: a run on
    /// a new packet stands for a new `BPF_PROG_TEST_RUN` call, before which the reader took
    /// every record of the last call (its first run and its reruns, which fill the rings
    /// together as the kernel's repeated runs do).
    pub(crate) fn drop_records(&mut self) {
        for state in &mut self.maps {
            if let Some(ring) = state.ring_mut() {
                ring.take_records();
            }
        }
    }

    /// The packet buffer as the last run left it.
    pub fn packet_buffer(&self) -> &PacketBuffer {
        &self.scratch.packet
    }

    /// Puts `insns` into program `program`'s slots from slot `start` on, in place of what was
    /// there (a 64-bit immediate load takes two slots); the other slots keep their instructions.
    /// Only the interpreter's decoded form changes: [`Vm::object`] still shows the object as
    /// loaded. A candidate that differs from the program in a few slots is set up in time
    /// proportional to those slots, with no allocation unless a clone of this interpreter shares
    /// the program.
    pub fn replace_instructions(
        &mut self,
        program: usize,
        start: usize,
        insns: &[Instruction],
    ) -> Result<(), VmError> {
        let maps = self.maps.len();
        let (Some(def), Some(decoded)) = (
            self.object.programs.get(program),
            self.programs.get_mut(program),
        ) else {
            return Err(VmError::NoSuchProgram(program));
        };
        decoded.replace(&def.name, start, insns, maps)
    }

    /// Runs `program` on `packet` and its metadata, loaded into the scratch buffer, or without
    /// them on the packet the scratch buffer holds: the part of a run [`Vm::run`],
    /// [`Vm::run_in_place`] and [`Vm::rerun_in_place`] share.
    fn execute(
        &mut self,
        program: usize,
        packet: Option<(&[u8], &[u8])>,
        trace: &mut Vec<String>,
        records: &mut Records,
    ) -> Result<(Exited, RunSummary), VmError> {
        self.prepare(program, packet)?;
        let mut exec = Execution::new(self, program, [0; NUM_REGS], None, trace, records);
        let result = exec.run_to_exit();
        let (final_program, redirect) = (exec.program, exec.redirect);
        let exit = result.map_err(|e| *e)?;
        let summary = RunSummary {
            return_value: exit.return_value,
            instructions: exit.instructions,
            final_program,
            redirect,
        };
        Ok((exit, summary))
    }

    /// Readies a run of program `program` (an XDP program) on `packet` and its metadata, or
    /// without them on the packet the buffer holds: the packet loaded, the stack zeroed.
    pub(crate) fn prepare(
        &mut self,
        program: usize,
        packet: Option<(&[u8], &[u8])>,
    ) -> Result<(), VmError> {
        let (Some(def), Some(decoded)) = (
            self.object.programs.get(program),
            self.programs.get(program),
        ) else {
            return Err(VmError::NoSuchProgram(program));
        };
        if !decoded.xdp {
            def.require_xdp("the interpreter", "executes XDP programs")?;
        }
        if let Some((packet, meta)) = packet {
            self.scratch.packet.refill(packet, meta)?;
        }
        self.scratch.stack[..FRAME_BYTES].fill(0);
        Ok(())
    }

    /// Moves every record the rings hold into `records`: what the reader takes after a run, as
    /// the kernel runner does.
    pub(crate) fn take_ring_records(&mut self, records: &mut Records) {
        for (map, state) in self.maps.iter_mut().enumerate() {
            if let Some(ring) = state.ring_mut() {
                for record in ring.take_records() {
                    push_record(records, map, record);
                }
            }
        }
    }

    /// The next `bpf_get_prandom_u32` value (xorshift64*, deterministic from the seed).
    pub(crate) fn next_prandom(&mut self) -> u32 {
        let mut x = self.prandom_state.max(1);
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.prandom_state = x;
        (x.wrapping_mul(0x2545_f491_4f6c_dd1d) >> 32) as u32
    }

    /// The next `bpf_ktime_get_ns` value.
    pub(crate) fn next_ktime(&mut self) -> u64 {
        let now = self.ktime_ns;
        self.ktime_ns = self.ktime_ns.wrapping_add(self.options.ktime_step_ns);
        now
    }
}

/// Memory a run works in, kept by the [`Vm`] between runs so that runs allocate nothing.
#[derive(Clone, Debug)]
pub(crate) struct Scratch {
    /// Stack frames of all call depths.
    pub(crate) stack: Vec<u8>,
    pub(crate) packet: PacketBuffer,
    /// The key passed to the callback at each call depth ([`CALLBACK_KEY_REGION`]).
    pub(crate) callback_keys: Vec<Vec<u8>>,
    /// Saved frames of the active BPF-to-BPF calls and callbacks, innermost last (kept between
    /// runs so that a program with calls does not allocate them per packet).
    pub(crate) frames: Vec<Frame<u64>>,
}

impl Scratch {
    fn new() -> Scratch {
        Scratch {
            stack: vec![0; FRAME_BYTES * MAX_CALL_FRAMES],
            packet: PacketBuffer::default(),
            callback_keys: vec![Vec::new(); MAX_CALL_FRAMES],
            frames: Vec::with_capacity(MAX_CALL_FRAMES),
        }
    }
}

/// The state of one run. The memory it works in stays in the [`Vm`] (`vm.scratch`), reached
/// through `vm`: moving it out and back per run cost a run three copies of it.
pub(crate) struct Execution<'v> {
    pub(crate) vm: &'v mut Vm,
    domain: Concrete,
    pub(crate) regs: [u64; NUM_REGS],
    pub(crate) program: usize,
    pub(crate) tail_calls: u32,
    pub(crate) redirect: Option<Redirect>,
    pub(crate) trace: &'v mut Vec<String>,
    pub(crate) records: &'v mut Records,
    /// What is left of the run's `may_goto` budget.
    loop_budget: u64,
}

/// How a run's last program exited: what [`Vm::run`] completes into a [`RunOutcome`].
struct Exited {
    return_value: u64,
    instructions: u64,
    steps: Vec<Step>,
    states: Vec<StepState>,
}

/// The `may_goto` budget of one program run.
const LOOP_BUDGET: u64 = linerate_bpf::facts::limits::MAX_LOOPS;

/// What a pointer points into, with the offset inside.
#[derive(Clone, Copy, Debug)]
enum Place {
    Packet(usize),
    Stack(usize),
    MapValue {
        map: usize,
        loc: Loc,
    },
    /// The key of a callback at this call depth.
    Key {
        depth: usize,
        offset: usize,
    },
}

/// A place in the stack or the packet buffer ([`Execution::fast_place`]).
#[derive(Clone, Copy)]
struct FastPlace {
    stack: bool,
    offset: usize,
}

impl<'v> Execution<'v> {
    /// An execution of `program` with registers `regs` (an instruction loop sets the entry
    /// registers itself; a stepping session, [`crate::session`], passes its own).
    pub(crate) fn new(
        vm: &'v mut Vm,
        program: usize,
        regs: [u64; NUM_REGS],
        redirect: Option<Redirect>,
        trace: &'v mut Vec<String>,
        records: &'v mut Records,
    ) -> Execution<'v> {
        Execution {
            vm,
            domain: Concrete,
            regs,
            program,
            tail_calls: 0,
            redirect,
            trace,
            records,
            loop_budget: LOOP_BUDGET,
        }
    }

    fn entry_registers(&mut self) {
        self.regs = entry_registers();
        self.vm.scratch.frames.clear();
        self.loop_budget = LOOP_BUDGET;
    }

    fn run_to_exit(&mut self) -> Result<Exited, Box<VmError>> {
        let options = &self.vm.options;
        if options.record_steps || options.record_states {
            self.run_loop::<true>()
        } else {
            self.run_loop::<false>()
        }
    }

    /// The instruction loop; `RECORD` says whether any recording is asked for, so that the loop
    /// of a plain run carries no recording checks.
    fn run_loop<const RECORD: bool>(&mut self) -> Result<Exited, Box<VmError>> {
        self.entry_registers();
        let record = RECORD && self.vm.options.record_steps;
        let record_states = RECORD && self.vm.options.record_states;
        let limit = self.vm.options.max_instructions;
        let mut steps = Vec::new();
        let mut states = Vec::new();
        let mut executed: u64 = 0;
        let mut pc = 0usize;
        let mut slots = Rc::clone(&self.vm.programs[self.program].slots);
        loop {
            // A slot inside an instruction is an `Op` too: its fault comes from `step_op`.
            let Some(insn) = slots.get(pc) else {
                return Err(Box::new(VmError::BadJump {
                    program: self.program_name(),
                    pc,
                }));
            };
            executed += 1;
            if executed > limit {
                return Err(Box::new(VmError::InstructionLimit { limit }));
            }
            let program = self.program;
            if record_states {
                let p = &self.vm.scratch.packet;
                states.push(StepState {
                    regs: self.regs,
                    data_meta: p.data_meta as u64,
                    data: p.data as u64,
                    data_end: p.data_end as u64,
                    depth: self.vm.scratch.frames.len(),
                });
            }
            let flow = step_op(self, pc, insn).map_err(|e| e.in_program(&self.program_name()))?;
            let (next, taken) = match flow {
                Flow::Next(next) => (next, None),
                Flow::Branch {
                    cond,
                    taken,
                    fallthrough,
                } => (
                    if cond { taken } else { fallthrough },
                    Some(cond && taken != fallthrough),
                ),
                Flow::LoopBudget { exhausted, next } => {
                    let out = self.loop_budget == 0;
                    if !out {
                        self.loop_budget -= 1;
                    }
                    (
                        if out { exhausted } else { next },
                        Some(out && exhausted != next),
                    )
                }
                Flow::Exit => {
                    if record {
                        steps.push(Step::new(program, pc, None));
                    }
                    return Ok(Exited {
                        return_value: self.regs[0] & 0xffff_ffff,
                        instructions: executed,
                        steps,
                        states,
                    });
                }
                Flow::TailCall => {
                    if record {
                        steps.push(Step::new(program, pc, None));
                    }
                    self.entry_registers();
                    pc = 0;
                    slots = Rc::clone(&self.vm.programs[self.program].slots);
                    continue;
                }
            };
            if record {
                steps.push(Step::new(program, pc, taken));
            }
            pc = next;
        }
    }

    pub(crate) fn program_name(&self) -> String {
        self.vm.object.programs[self.program].name.clone()
    }

    /// Resolves `len` bytes at `addr` to a place, checking bounds. Inlined into every load and
    /// store: the checks that pass are a few comparisons; [`Execution::fault`] says why one
    /// failed, out of the instruction loop.
    #[inline(always)]
    fn place(&self, pc: usize, addr: u64, len: usize, write: bool) -> Result<Place, Box<VmError>> {
        let (region, offset) = split(addr);
        let offset = offset as usize;
        let placed = match region {
            STACK_REGION if offset + len <= (self.vm.scratch.frames.len() + 1) * FRAME_BYTES => {
                Some(Place::Stack(offset))
            }
            PACKET_REGION
                if offset >= self.vm.scratch.packet.data_meta
                    && offset + len <= self.vm.scratch.packet.data_end =>
            {
                Some(Place::Packet(offset))
            }
            r if r.wrapping_sub(MAP_VALUE_REGION) < self.vm.maps.len() as u64 => {
                let map = (r - MAP_VALUE_REGION) as usize;
                let state = &self.vm.maps[map];
                state
                    .locate_value(offset, len)
                    .filter(|_| !(write && is_read_only(&state.def)))
                    .map(|loc| Place::MapValue { map, loc })
            }
            r if r.wrapping_sub(CALLBACK_KEY_REGION) < MAX_CALL_FRAMES as u64 => {
                let depth = (r - CALLBACK_KEY_REGION) as usize;
                (!write && offset + len <= self.vm.scratch.callback_keys[depth].len())
                    .then_some(Place::Key { depth, offset })
            }
            _ => None,
        };
        placed.ok_or_else(|| self.fault(pc, addr, len, write))
    }

    /// Whether all `len` bytes at `addr` lie in memory the interpreter holds, for a helper that
    /// reads from any kernel address (`bpf_probe_read_kernel`): within one stack frame (the
    /// kernel's are not side by side: the JIT keeps a return address and saved registers between
    /// a frame and its caller's), the packet between `data_meta` and `data_end`, or one live
    /// map value. Callback keys are left out: the kernel passes a copy on its own stack, whose
    /// surroundings the interpreter does not hold.
    pub(crate) fn holds(&self, addr: u64, len: usize) -> bool {
        let (region, offset) = split(addr);
        let offset = offset as usize;
        let end = offset + len;
        match region {
            STACK_REGION => {
                end <= (self.vm.scratch.frames.len() + 1) * FRAME_BYTES
                    && (len == 0 || offset / FRAME_BYTES == (end - 1) / FRAME_BYTES)
            }
            PACKET_REGION => {
                let p = &self.vm.scratch.packet;
                offset >= p.data_meta && end <= p.data_end
            }
            r if r.wrapping_sub(MAP_VALUE_REGION) < self.vm.maps.len() as u64 => self.vm.maps
                [(r - MAP_VALUE_REGION) as usize]
                .locate_value(offset, len)
                .is_some(),
            _ => false,
        }
    }

    /// Whether `addr` is a number rather than a pointer the interpreter handed out: its region
    /// is none the interpreter numbers ([`crate::memory`]).
    pub(crate) fn is_number(&self, addr: u64) -> bool {
        let (region, _) = split(addr);
        let maps = self.vm.maps.len() as u64;
        !(matches!(
            region,
            CTX_REGION | PACKET_REGION | STACK_REGION | FUNCTION_REGION
        ) || region.wrapping_sub(CALLBACK_KEY_REGION) < MAX_CALL_FRAMES as u64
            || region.wrapping_sub(MAP_VALUE_REGION) < maps
            || region.wrapping_sub(MAP_HANDLE_REGION) < maps)
    }

    /// Why [`Execution::place`] refused `len` bytes at `addr`.
    #[cold]
    #[inline(never)]
    fn fault(&self, pc: usize, addr: u64, len: usize, write: bool) -> Box<VmError> {
        let (region, offset) = split(addr);
        let offset = offset as usize;
        let what = match region {
            PACKET_REGION => {
                let p = &self.vm.scratch.packet;
                format!(
                    "{len}-byte {} at packet offset {} outside the packet (data_meta..data_end = {}..{})",
                    access(write),
                    offset as i64 - p.data as i64,
                    p.data_meta as i64 - p.data as i64,
                    p.data_end - p.data
                )
            }
            STACK_REGION => format!(
                "{len}-byte {} at stack offset {} outside the {} active stack bytes",
                access(write),
                offset,
                (self.vm.scratch.frames.len() + 1) * FRAME_BYTES
            ),
            r if (MAP_VALUE_REGION..MAP_VALUE_REGION + self.vm.maps.len() as u64).contains(&r) => {
                let state = &self.vm.maps[(r - MAP_VALUE_REGION) as usize];
                if state.locate_value(offset, len).is_some() {
                    format!("write to read-only map `{}`", state.def.name)
                } else {
                    format!(
                        "{len}-byte {} at offset {} of a value of map `{}` (value size {}) outside a live value",
                        access(write),
                        offset % state.stride,
                        state.def.name,
                        state.def.value_size
                    )
                }
            }
            r if (CALLBACK_KEY_REGION..CALLBACK_KEY_REGION + MAX_CALL_FRAMES as u64)
                .contains(&r) =>
            {
                let key_len =
                    self.vm.scratch.callback_keys[(r - CALLBACK_KEY_REGION) as usize].len();
                format!(
                    "{len}-byte {} at offset {offset} of a callback's {key_len}-byte key, \
                     which is read-only",
                    access(write)
                )
            }
            CTX_REGION => format!(
                "{len}-byte {} of the context at offset {offset} is not a context field access",
                access(write)
            ),
            r if r >= MAP_HANDLE_REGION => format!(
                "{} through a map handle (map index {})",
                access(write),
                r - MAP_HANDLE_REGION
            ),
            0 if offset < 4096 => format!(
                "{len}-byte {} at address {addr:#x}: null pointer dereference",
                access(write)
            ),
            _ => format!(
                "{len}-byte {} at address {addr:#x}, which is in no memory region",
                access(write)
            ),
        };
        Box::new(VmError::MemoryFault {
            program: self.program_name(),
            pc,
            what,
        })
    }

    /// Where `len` bytes at `addr` lie when they lie in the active stack frames or the packet
    /// (the same checks as [`Execution::place`]'s for those regions); `None` for anything else,
    /// including a faulting access, which [`Execution::place`] then explains.
    #[inline(always)]
    fn fast_place(&self, addr: u64, len: usize) -> Option<FastPlace> {
        let (region, offset) = split(addr);
        let offset = offset as usize;
        if region == STACK_REGION {
            (offset + len <= (self.vm.scratch.frames.len() + 1) * FRAME_BYTES).then_some(
                FastPlace {
                    stack: true,
                    offset,
                },
            )
        } else if region == PACKET_REGION {
            let p = &self.vm.scratch.packet;
            (offset >= p.data_meta && offset + len <= p.data_end).then_some(FastPlace {
                stack: false,
                offset,
            })
        } else {
            None
        }
    }

    /// The 4 bytes at `addr` when they lie in the active stack frames or the packet.
    #[inline]
    pub(crate) fn fast_word(&self, addr: u64) -> Option<[u8; 4]> {
        let o = self.fast_place(addr, 4)?;
        Some(if o.stack {
            first(&self.vm.scratch.stack[o.offset..])
        } else {
            first(&self.vm.scratch.packet.buf[o.offset..])
        })
    }

    /// A load [`Execution::fast_place`] did not place: the context, map values, callback keys,
    /// or a fault.
    #[inline(never)]
    fn load_elsewhere(&self, pc: usize, addr: u64, size: Size) -> Result<u64, Box<VmError>> {
        let (region, offset) = split(addr);
        let len = size.bytes() as usize;
        // Map values first, without the general placement: lookup tables and counters are read
        // on the hot path of many programs.
        if let Some(state) = region
            .checked_sub(MAP_VALUE_REGION)
            .and_then(|map| self.vm.maps.get(usize::try_from(map).ok()?))
        {
            if let Some(loc) = state.locate_value(offset as usize, len) {
                return Ok(read_word(state.slab.bytes(loc, len), size));
            }
        }
        if region == CTX_REGION {
            return self.load_ctx(pc, offset, size);
        }
        let bytes: &[u8] = match self.place(pc, addr, len, false)? {
            Place::Packet(o) => &self.vm.scratch.packet.buf[o..],
            Place::Stack(o) => &self.vm.scratch.stack[o..],
            Place::MapValue { map, loc } => self.vm.maps[map].slab.bytes(loc, len),
            Place::Key { depth, offset } => &self.vm.scratch.callback_keys[depth][offset..],
        };
        Ok(read_word(bytes, size))
    }

    /// A store [`Execution::fast_place`] did not place: map values or a fault.
    #[inline(never)]
    fn store_elsewhere(
        &mut self,
        pc: usize,
        addr: u64,
        size: Size,
        value: u64,
    ) -> Result<(), Box<VmError>> {
        let len = size.bytes() as usize;
        let bytes: &mut [u8] = match self.place(pc, addr, len, true)? {
            Place::Packet(o) => &mut self.vm.scratch.packet.buf[o..],
            Place::Stack(o) => &mut self.vm.scratch.stack[o..],
            Place::MapValue { map, loc } => self.vm.maps[map].slab.bytes_mut(loc, len),
            // `place` refuses writes to keys; the store would land in the key's copy.
            Place::Key { depth, offset } => &mut self.vm.scratch.callback_keys[depth][offset..],
        };
        write_word(bytes, size, value);
        Ok(())
    }

    /// Reads `len` bytes at `addr` (for helpers).
    pub(crate) fn read_memory(
        &self,
        pc: usize,
        addr: u64,
        len: usize,
    ) -> Result<&[u8], Box<VmError>> {
        Ok(match self.place(pc, addr, len, false)? {
            Place::Packet(o) => &self.vm.scratch.packet.buf[o..o + len],
            Place::Stack(o) => &self.vm.scratch.stack[o..o + len],
            Place::MapValue { map, loc } => self.vm.maps[map].slab.bytes(loc, len),
            Place::Key { depth, offset } => {
                &self.vm.scratch.callback_keys[depth][offset..offset + len]
            }
        })
    }

    /// Writes `bytes` at `addr` (for helpers).
    pub(crate) fn write_memory(
        &mut self,
        pc: usize,
        addr: u64,
        bytes: &[u8],
    ) -> Result<(), Box<VmError>> {
        let len = bytes.len();
        match self.place(pc, addr, len, true)? {
            Place::Packet(o) => self.vm.scratch.packet.buf[o..o + len].copy_from_slice(bytes),
            Place::Stack(o) => self.vm.scratch.stack[o..o + len].copy_from_slice(bytes),
            Place::MapValue { map, loc } => self.vm.maps[map]
                .slab
                .bytes_mut(loc, len)
                .copy_from_slice(bytes),
            // `place` refuses writes to keys; the store would land in the key's copy.
            Place::Key { depth, offset } => {
                self.vm.scratch.callback_keys[depth][offset..offset + len].copy_from_slice(bytes)
            }
        }
        Ok(())
    }

    /// Reads a context field.
    fn load_ctx(&self, pc: usize, offset: u64, size: Size) -> Result<u64, Box<VmError>> {
        let p = &self.vm.scratch.packet;
        let field = match (offset & !3, size) {
            (xdp_md::DATA, Size::W) => return Ok(pointer(PACKET_REGION, p.data as u64)),
            (xdp_md::DATA_END, Size::W) => return Ok(pointer(PACKET_REGION, p.data_end as u64)),
            (xdp_md::DATA_META, Size::W) => return Ok(pointer(PACKET_REGION, p.data_meta as u64)),
            (xdp_md::INGRESS_IFINDEX, _) => self.vm.options.ingress_ifindex,
            (xdp_md::RX_QUEUE_INDEX, _) => self.vm.options.rx_queue_index,
            (xdp_md::EGRESS_IFINDEX, _) => 0,
            _ => {
                return Err(Box::new(VmError::MemoryFault {
                    program: self.program_name(),
                    pc,
                    what: format!(
                        "{}-byte load of the context at offset {offset}: no such field of struct xdp_md",
                        size.bytes()
                    ),
                }))
            }
        };
        let within = offset % 4;
        if within + size.bytes() as u64 > 4 {
            return Err(Box::new(VmError::MemoryFault {
                program: self.program_name(),
                pc,
                what: format!(
                    "{}-byte load straddles context fields at offset {offset}",
                    size.bytes()
                ),
            }));
        }
        Ok((field as u64 >> (8 * within)) & mask(size))
    }

    /// Index of the map whose handle `value` is.
    pub(crate) fn map_of_handle(
        &self,
        pc: usize,
        helper: u32,
        value: u64,
    ) -> Result<usize, Box<VmError>> {
        let (region, offset) = split(value);
        let map = region.wrapping_sub(MAP_HANDLE_REGION) as usize;
        if region < MAP_HANDLE_REGION || offset != 0 || map >= self.vm.maps.len() {
            return Err(Box::new(VmError::BadHelperArgument {
                program: self.program_name(),
                pc,
                helper,
                reason: format!("{value:#x} is not a map"),
            }));
        }
        Ok(map)
    }

    /// A pointer to the value in `slot` of map `map`.
    pub(crate) fn value_pointer(&self, map: usize, slot: usize) -> u64 {
        pointer(
            MAP_VALUE_REGION + map as u64,
            (slot * self.vm.maps[map].stride) as u64,
        )
    }
}

fn access(write: bool) -> &'static str {
    if write {
        "store"
    } else {
        "load"
    }
}

/// The first `N` bytes of `bytes`, copied with a length known when compiling: a load or store
/// copies 1, 2, 4 or 8 bytes, and a copy of a length known only at run time calls `memcpy`.
#[inline(always)]
fn first<const N: usize>(bytes: &[u8]) -> [u8; N] {
    let mut out = [0u8; N];
    out.copy_from_slice(&bytes[..N]);
    out
}

/// The little-endian value of the first `size` bytes of `bytes`, zero-extended.
#[inline(always)]
fn read_word(bytes: &[u8], size: Size) -> u64 {
    match size {
        Size::B => u64::from(bytes[0]),
        Size::H => u64::from(u16::from_le_bytes(first(bytes))),
        Size::W => u64::from(u32::from_le_bytes(first(bytes))),
        Size::Dw => u64::from_le_bytes(first(bytes)),
    }
}

/// Writes the low `size` bytes of `value` little-endian at the start of `bytes`.
#[inline(always)]
fn write_word(bytes: &mut [u8], size: Size, value: u64) {
    match size {
        Size::B => bytes[0] = value as u8,
        Size::H => bytes[..2].copy_from_slice(&(value as u16).to_le_bytes()),
        Size::W => bytes[..4].copy_from_slice(&(value as u32).to_le_bytes()),
        Size::Dw => bytes[..8].copy_from_slice(&value.to_le_bytes()),
    }
}

fn mask(size: Size) -> u64 {
    if size == Size::Dw {
        u64::MAX
    } else {
        (1u64 << size.bits()) - 1
    }
}

fn is_read_only(def: &linerate_bpf::MapDef) -> bool {
    matches!(
        def.origin,
        linerate_bpf::program::MapOrigin::GlobalData {
            read_only: true,
            ..
        }
    )
}
