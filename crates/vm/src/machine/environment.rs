//! The interpreter as the environment `linerate_sem::step` runs in: registers and frames, memory
//! (the stack and the packet resolved inline, everything else out of line), map and function
//! references, helpers and kfuncs, each given its meaning by `linerate-sem`.

use std::rc::Rc;

use linerate_bpf::insn::{Imm64, Size, NUM_REGS};
use linerate_sem::exec::{Frame, HelperOutcome, Machine, SemError};
use linerate_sem::helpers::Callback;
use linerate_sem::Concrete;

use super::{read_word, write_word, Execution, FRAME_BYTES};
use crate::decoded::map_reference;
use crate::error::VmError;
use crate::memory::{pointer, FUNCTION_REGION, STACK_REGION};

impl Machine for Execution<'_> {
    type D = Concrete;
    type Fault = Box<VmError>;

    #[inline(always)]
    fn domain(&mut self) -> &mut Concrete {
        &mut self.domain
    }

    #[inline(always)]
    fn regs(&mut self) -> &mut [u64; NUM_REGS] {
        &mut self.regs
    }

    fn frames(&mut self) -> &mut Vec<Frame<u64>> {
        &mut self.vm.scratch.frames
    }

    fn push_stack_frame(&mut self, depth: usize) -> Result<u64, Box<VmError>> {
        self.vm.scratch.stack[depth * FRAME_BYTES..(depth + 1) * FRAME_BYTES].fill(0);
        Ok(pointer(STACK_REGION, ((depth + 1) * FRAME_BYTES) as u64))
    }

    fn pop_stack_frame(&mut self) {}

    /// The stack and the packet, where nearly every access goes, are resolved here, inline in
    /// the instruction loop; every other place out of line.
    #[inline(always)]
    fn load(&mut self, pc: usize, addr: &u64, size: Size) -> Result<u64, Box<VmError>> {
        let len = size.bytes() as usize;
        if let Some(o) = self.fast_place(*addr, len) {
            let bytes = if o.stack {
                &self.vm.scratch.stack[o.offset..]
            } else {
                &self.vm.scratch.packet.buf[o.offset..]
            };
            return Ok(read_word(bytes, size));
        }
        self.load_elsewhere(pc, *addr, size)
    }

    #[inline(always)]
    fn store(
        &mut self,
        pc: usize,
        addr: &u64,
        size: Size,
        value: &u64,
    ) -> Result<(), Box<VmError>> {
        let len = size.bytes() as usize;
        if let Some(o) = self.fast_place(*addr, len) {
            let bytes = if o.stack {
                &mut self.vm.scratch.stack[o.offset..]
            } else {
                &mut self.vm.scratch.packet.buf[o.offset..]
            };
            write_word(bytes, size, *value);
            return Ok(());
        }
        self.store_elsewhere(pc, *addr, size, *value)
    }

    fn map_reference(&mut self, pc: usize, imm: &Imm64) -> Result<u64, Box<VmError>> {
        let maps = self.vm.maps.len();
        if let Some(value) = map_reference(imm, maps) {
            return Ok(value);
        }
        match *imm {
            Imm64::Map(map) | Imm64::MapValue { map, .. } => Err(Box::new(VmError::MemoryFault {
                program: self.program_name(),
                pc,
                what: format!("reference to map {map}, but the object has {maps} maps"),
            })),
            _ => Err(SemError::Unsupported {
                pc,
                what: "64-bit immediate kind",
            }
            .into()),
        }
    }

    fn function_reference(&mut self, pc: usize, function: usize) -> Result<u64, Box<VmError>> {
        if !self.vm.object.programs[self.program]
            .functions
            .iter()
            .any(|f| f.start == function)
        {
            return Err(Box::new(VmError::MemoryFault {
                program: self.program_name(),
                pc,
                what: format!("function address of slot {function}, which starts no function"),
            }));
        }
        Ok(pointer(FUNCTION_REGION, function as u64))
    }

    fn resume_helper(&mut self, callback: Callback<u64>) -> Result<HelperOutcome, Box<VmError>> {
        linerate_sem::helpers::resume(self, callback)
    }

    // Kept out of the instruction loop: helpers are rare next to ALU and memory instructions.
    #[inline(never)]
    fn call_helper(&mut self, pc: usize, id: u32) -> Result<HelperOutcome, Box<VmError>> {
        linerate_sem::helpers::call(self, pc, id)
    }

    #[inline(never)]
    fn call_kfunc(&mut self, pc: usize, index: i32) -> Result<(), Box<VmError>> {
        // The object shared, not the kfunc's name copied: the call needs the machine, which
        // holds the object, mutably, and a copy of the name cost every kfunc call an allocation.
        let object = Rc::clone(&self.vm.object);
        let Some(kfunc) = object.kfunc(index) else {
            let count = object.kfuncs.len();
            return Err(SemError::NoSuchKfunc { pc, index, count }.into());
        };
        linerate_sem::kfuncs::call(self, pc, &kfunc.name)
    }
}
