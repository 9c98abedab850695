//! Stepping a program one instruction at a time under the caller's control: a [`Session`].
//!
//! [`Vm::run`] owns its instruction loop (and must stay fast); a machine model with its own notion
//! of time and order (the hXDP core's cycle model in `linerate-hxdp`) needs instead to run single
//! instructions on register values it chooses, read and write memory by address, and decide
//! itself where control goes. A session gives it exactly that over the interpreter's memory, maps
//! and helpers, so that every instruction still means what `linerate_sem::step` says: nothing
//! here interprets an opcode. A session runs one packet; [`Session::finish`] turns it into the
//! [`RunOutcome`] a [`Vm::run`] would give.

use linerate_bpf::insn::{Instruction, NUM_REGS};
use linerate_bpf::records::Records;
use linerate_sem::{step, Flow};

use crate::machine::{entry_registers, Execution};
use crate::memory::{split, PACKET_REGION};
use crate::{Redirect, RunOutcome, Vm, VmError};

/// One packet's run of a program, stepped by the caller.
pub struct Session<'v> {
    vm: &'v mut Vm,
    program: usize,
    regs: [u64; NUM_REGS],
    redirect: Option<Redirect>,
    trace: Vec<String>,
    records: Records,
    instructions: u64,
}

/// Where control goes after a stepped instruction.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stepped {
    /// Not a jump or exit (or a jump whose condition is false): on to the next instruction.
    Next,
    /// A jump that is taken (`ja` always is).
    Taken,
    /// The program returned; r0 holds its return value.
    Exit,
}

impl Vm {
    /// Starts a session of program `program` on `packet` with metadata `meta`: the packet loaded,
    /// the stack zeroed, and the entry registers set as [`Vm::run`] sets them (r1 the context,
    /// r10 the frame pointer, the rest zero).
    pub fn session(
        &mut self,
        program: usize,
        packet: &[u8],
        meta: &[u8],
    ) -> Result<Session<'_>, VmError> {
        self.drop_records();
        self.prepare(program, Some((packet, meta)))?;
        self.scratch.frames.clear();
        Ok(Session {
            vm: self,
            program,
            regs: entry_registers(),
            redirect: None,
            trace: Vec::new(),
            records: Records::new(),
            instructions: 0,
        })
    }
}

impl Session<'_> {
    /// The registers the next [`Session::step`] runs on.
    pub fn regs(&self) -> &[u64; NUM_REGS] {
        &self.regs
    }

    /// The registers, to set before a step.
    pub fn regs_mut(&mut self) -> &mut [u64; NUM_REGS] {
        &mut self.regs
    }

    /// Runs `insn` as if at slot `pc` (used in error messages and for a jump's own offset, which
    /// the caller ignores: [`Stepped::Taken`] only says the jump is taken). Tail calls and
    /// BPF-to-BPF calls are refused: a session runs one function.
    pub fn step(&mut self, pc: usize, insn: &Instruction) -> Result<Stepped, VmError> {
        if matches!(
            insn,
            Instruction::Call(linerate_bpf::insn::CallTarget::Local(_))
        ) {
            return Err(self.unsupported(pc, "a BPF-to-BPF call in a stepping session"));
        }
        self.instructions = self.instructions.saturating_add(1);
        let mut exec = Execution::new(
            self.vm,
            self.program,
            self.regs,
            self.redirect.take(),
            &mut self.trace,
            &mut self.records,
        );
        let flow = step(&mut exec, pc, insn);
        self.regs = exec.regs;
        self.redirect = exec.redirect.take();
        let name = exec.program_name();
        let flow = flow.map_err(|e| e.in_program(&name))?;
        Ok(match flow {
            Flow::Next(_) if matches!(insn, Instruction::Ja { .. }) => Stepped::Taken,
            Flow::Next(_) => Stepped::Next,
            Flow::Branch { cond, .. } => {
                if cond {
                    Stepped::Taken
                } else {
                    Stepped::Next
                }
            }
            Flow::Exit => Stepped::Exit,
            Flow::LoopBudget { .. } => {
                return Err(self.unsupported(pc, "may_goto in a stepping session"))
            }
            Flow::TailCall => return Err(self.unsupported(pc, "a tail call in a stepping session")),
        })
    }

    /// The `len` bytes at `addr`, checked as a load of them would be.
    pub fn read(&mut self, pc: usize, addr: u64, len: usize) -> Result<Vec<u8>, VmError> {
        let exec = self.execution();
        exec.read_memory(pc, addr, len)
            .map(|b| b.to_vec())
            .map_err(|e| *e)
    }

    /// Writes `bytes` at `addr`, checked as a store of them would be.
    pub fn write(&mut self, pc: usize, addr: u64, bytes: &[u8]) -> Result<(), VmError> {
        let mut exec = self.execution();
        exec.write_memory(pc, addr, bytes).map_err(|e| *e)
    }

    /// Whether `addr` points into the packet region but `len` bytes there are not all inside the
    /// packet (metadata included): the access the hXDP packet buffer answers by dropping.
    pub fn outside_packet(&self, addr: u64, len: usize) -> bool {
        let (region, offset) = split(addr);
        if region != PACKET_REGION {
            return false;
        }
        let p = &self.vm.scratch.packet;
        let end = offset.checked_add(len as u64);
        !(offset >= p.data_meta as u64 && end.is_some_and(|e| e <= p.data_end as u64))
    }

    /// Instructions stepped so far.
    pub fn instructions(&self) -> u64 {
        self.instructions
    }

    /// The packet as it is now, metadata excluded.
    pub fn packet(&self) -> &[u8] {
        self.vm.scratch.packet.packet()
    }

    /// Ends the run with `return_value` (the low 32 bits are kept, as [`Vm::run`] keeps them):
    /// the outcome [`Vm::run`] would report, with no steps or states recorded.
    pub fn finish(self, return_value: u64) -> RunOutcome {
        let mut records = self.records;
        self.vm.take_ring_records(&mut records);
        let packet = &self.vm.scratch.packet;
        RunOutcome {
            return_value: return_value & 0xffff_ffff,
            packet: packet.whole_packet(),
            meta: packet.meta().to_vec(),
            instructions: self.instructions,
            final_program: self.program,
            steps: Vec::new(),
            states: Vec::new(),
            redirect: self.redirect,
            trace: self.trace,
            records,
        }
    }

    fn execution(&mut self) -> Execution<'_> {
        Execution::new(
            self.vm,
            self.program,
            self.regs,
            self.redirect.clone(),
            &mut self.trace,
            &mut self.records,
        )
    }

    fn unsupported(&self, pc: usize, what: &'static str) -> VmError {
        VmError::from(linerate_sem::SemError::Unsupported { pc, what })
            .in_program(&self.program_name())
    }

    fn program_name(&self) -> String {
        self.vm
            .object()
            .programs
            .get(self.program)
            .map(|p| p.name.clone())
            .unwrap_or_default()
    }
}
