//! The machine one window runs on: registers of [`WinValue`]s, the memory of `super::memory`,
//! and no calls. `linerate_sem::step` gives every instruction its meaning; this supplies only
//! where loads and stores go. What it cannot model soundly stops the run with a reason, which
//! the checker answers as unknown.

use linerate_bpf::facts::xdp_md;
use linerate_bpf::insn::{Imm64, Size, NUM_REGS};
use linerate_sem::helpers::Callback;
use linerate_sem::{Frame, HelperOutcome, Machine, SemError};
use z3::ast::BV;

use super::memory::{assemble, offset_plus, Byte, Inputs, Writes};
use super::value::{WinDomain, WinValue};
use super::{WindowRegion, MAX_OFFSET};
use crate::value::Bits;

/// Why a window's run has no sound meaning here.
#[derive(Debug)]
pub struct Unmodelled(pub String);

impl From<SemError> for Unmodelled {
    fn from(e: SemError) -> Unmodelled {
        Unmodelled(e.to_string())
    }
}

/// The context's fields that the kernel rewrites into loads of a whole pointer, and the region
/// each points at. A 32-bit load of one gives a pointer to offset 0 of its region; a concrete
/// window runner holds the low half of `region_base(region)` there (the bases lie below 2^32),
/// so the same load gives the same address. Other context fields are plain bytes.
pub const CTX_POINTERS: [(u64, WindowRegion); 2] = [
    (xdp_md::DATA, WindowRegion::Packet),
    (xdp_md::DATA_META, WindowRegion::PacketMeta),
];

/// One window's execution state.
pub struct WindowMachine<'a> {
    pub domain: WinDomain,
    pub regs: [WinValue; NUM_REGS],
    frames: Vec<Frame<WinValue>>,
    pub inputs: &'a mut Inputs,
    pub writes: Writes,
}

impl<'a> WindowMachine<'a> {
    pub fn new(regs: [WinValue; NUM_REGS], inputs: &'a mut Inputs) -> Self {
        WindowMachine {
            domain: WinDomain::default(),
            regs,
            frames: Vec::new(),
            inputs,
            writes: Writes::default(),
        }
    }

    /// The region and offset an access at `addr` of `size` bytes goes to, its offset bounded as
    /// the precondition assumes.
    fn target(
        &mut self,
        pc: usize,
        addr: &WinValue,
        size: Size,
    ) -> Result<(WindowRegion, Bits), Unmodelled> {
        let (region, offset) = match addr {
            WinValue::Ptr { region, offset } => (*region, offset.clone()),
            WinValue::Scalar(_) => {
                return Err(Unmodelled(format!(
                    "insn {pc}: a memory access through a value not known to point into a region"
                )))
            }
            WinValue::Invalid(why) => {
                return Err(Unmodelled(format!(
                    "insn {pc}: a memory access through {why}"
                )))
            }
        };
        let bytes = i64::from(size.bytes());
        match &offset {
            Bits::Const(o) => {
                let o = *o as i64;
                if o < -MAX_OFFSET || o > MAX_OFFSET - bytes {
                    return Err(Unmodelled(format!(
                        "insn {pc}: an access at offset {o} of {region:?}, beyond any the verifier allows"
                    )));
                }
            }
            Bits::Sym(o) => {
                let low = BV::from_i64(-MAX_OFFSET, 64);
                let high = BV::from_i64(MAX_OFFSET - bytes, 64);
                self.inputs.constraints.push(low.bvsle(o));
                self.inputs.constraints.push(o.bvsle(&high));
            }
        }
        Ok((region, offset))
    }

    /// A load from the context: its pointer fields give pointers, the others their bytes.
    fn context_load(
        &mut self,
        pc: usize,
        offset: &Bits,
        size: Size,
    ) -> Result<WinValue, Unmodelled> {
        let Bits::Const(o) = *offset else {
            return Err(Unmodelled(format!(
                "insn {pc}: a context access at a symbolic offset"
            )));
        };
        // `target` bounded the offset: these sums cannot overflow.
        let start = o as i64;
        let end = start + i64::from(size.bytes());
        for (field, region) in CTX_POINTERS {
            let field_start = field as i64;
            if start == field_start && size == Size::W {
                self.inputs.context_pointers = true;
                return Ok(WinValue::Ptr {
                    region,
                    offset: Bits::Const(0),
                });
            }
            if start < field_start + 4 && field_start < end {
                return Err(Unmodelled(format!(
                    "insn {pc}: a load of part of the context's pointer field at offset {field}"
                )));
            }
        }
        let bytes: Vec<Byte> = (0..u64::from(size.bytes()))
            .map(|i| {
                let at = Bits::Const(o.wrapping_add(i));
                Byte::Sym(self.inputs.initial(WindowRegion::Ctx, &at))
            })
            .collect();
        Ok(assemble(&bytes))
    }
}

impl Machine for WindowMachine<'_> {
    type D = WinDomain;
    type Fault = Unmodelled;

    fn domain(&mut self) -> &mut WinDomain {
        &mut self.domain
    }

    fn regs(&mut self) -> &mut [WinValue; NUM_REGS] {
        &mut self.regs
    }

    fn frames(&mut self) -> &mut Vec<Frame<WinValue>> {
        &mut self.frames
    }

    fn push_stack_frame(&mut self, _depth: usize) -> Result<WinValue, Unmodelled> {
        Err(Unmodelled("a call inside a window".into()))
    }

    fn pop_stack_frame(&mut self) {}

    fn load(&mut self, pc: usize, addr: &WinValue, size: Size) -> Result<WinValue, Unmodelled> {
        let (region, offset) = self.target(pc, addr, size)?;
        if region == WindowRegion::Ctx {
            return self.context_load(pc, &offset, size);
        }
        let mut bytes = Vec::with_capacity(size.bytes() as usize);
        for i in 0..u64::from(size.bytes()) {
            let at = offset_plus(&offset, i);
            bytes.push(self.writes.read(self.inputs, region, &at));
        }
        Ok(assemble(&bytes))
    }

    fn store(
        &mut self,
        pc: usize,
        addr: &WinValue,
        size: Size,
        value: &WinValue,
    ) -> Result<(), Unmodelled> {
        let (region, offset) = self.target(pc, addr, size)?;
        if region == WindowRegion::Ctx {
            return Err(Unmodelled(format!("insn {pc}: a store into the context")));
        }
        let n = size.bytes();
        for i in 0..n {
            let byte = match value {
                WinValue::Scalar(bits) => Byte::of_scalar(bits, i),
                WinValue::Ptr { region, offset } if n == 8 => Byte::Ptr {
                    region: *region,
                    offset: offset.clone(),
                    index: i as u8,
                },
                WinValue::Ptr { .. } => Byte::Invalid("a partial store of a pointer"),
                WinValue::Invalid(why) => Byte::Invalid(why),
            };
            self.writes
                .bytes
                .push((region, offset_plus(&offset, u64::from(i)), byte));
        }
        Ok(())
    }

    fn map_reference(&mut self, pc: usize, _imm: &Imm64) -> Result<WinValue, Unmodelled> {
        Err(Unmodelled(format!(
            "insn {pc}: a map reference inside a window"
        )))
    }

    fn function_reference(&mut self, pc: usize, _function: usize) -> Result<WinValue, Unmodelled> {
        Err(Unmodelled(format!(
            "insn {pc}: a function reference inside a window"
        )))
    }

    fn call_helper(&mut self, pc: usize, _id: u32) -> Result<HelperOutcome, Unmodelled> {
        Err(Unmodelled(format!(
            "insn {pc}: a helper call inside a window"
        )))
    }

    fn call_kfunc(&mut self, pc: usize, _index: i32) -> Result<(), Unmodelled> {
        Err(Unmodelled(format!(
            "insn {pc}: a kfunc call inside a window"
        )))
    }

    fn resume_helper(
        &mut self,
        _callback: Callback<WinValue>,
    ) -> Result<HelperOutcome, Unmodelled> {
        Err(Unmodelled("a callback inside a window".into()))
    }
}
