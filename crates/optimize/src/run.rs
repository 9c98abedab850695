//! Concrete runs of one window: the search's test evaluator and its first safety check.
//!
//! A window (straight-line code inside a basic block) runs through `linerate_sem::step` with
//! machine integers that carry a provenance tag ([`Tag`]): a scalar, a pointer into a memory
//! place, or a pointer the kernel's checker would refuse to have computed (32-bit arithmetic on a
//! pointer, a pointer times anything, scalar minus pointer: §6 of paper 002, "pointer arithmetic
//! rules"). Memory is a byte map at absolute addresses, filled on first read from the test's own
//! pseudo-random bytes, so the original window and a candidate see the same initial memory.
//!
//! A run records every byte it accessed; [`safety_violation`] compares a candidate's accesses with
//! the original's on the same test: the candidate may only touch what the original touched
//! (which the kernel's checker proved in bounds and initialised) plus stack bytes it writes
//! itself, with the stack's alignment and exactly the original's context loads.

use std::collections::{BTreeMap, BTreeSet};

use linerate_bpf::facts::xdp_md;
use linerate_bpf::insn::{Imm64, Instruction, Size, NUM_REGS};
use linerate_sem::exec::{step, Flow, Frame, HelperOutcome, Machine};
use linerate_sem::helpers::Callback;
use linerate_sem::{BinOp, CmpOp, Concrete, Domain, SemError};

use crate::window::Place;

/// Where a value came from, as far as the kernel's checker cares.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Tag {
    Scalar,
    /// A pointer into a memory place.
    Pointer(Place),
    /// A pointer mangled by arithmetic the checker refuses.
    Mangled,
}

/// A 64-bit value with its provenance.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TVal {
    pub v: u64,
    pub tag: Tag,
}

impl TVal {
    pub fn scalar(v: u64) -> TVal {
        TVal {
            v,
            tag: Tag::Scalar,
        }
    }
}

/// Machine integers with provenance tags; records whether a pointer was mangled.
#[derive(Default)]
pub struct TagDomain {
    pub mangled: bool,
}

impl Domain for TagDomain {
    type Value = TVal;
    type Bool = bool;

    fn constant(&mut self, v: u64) -> TVal {
        TVal::scalar(v)
    }

    fn binary(&mut self, op: BinOp, a: &TVal, b: &TVal) -> TVal {
        let v = Concrete::eval_binary(op, a.v, b.v);
        let tag = match (op, a.tag, b.tag) {
            (_, Tag::Scalar, Tag::Scalar) => Tag::Scalar,
            // The checker allows no arithmetic on `data_end`.
            (_, Tag::Pointer(Place::PacketEnd), _) | (_, _, Tag::Pointer(Place::PacketEnd)) => {
                Tag::Mangled
            }
            (BinOp::Add, Tag::Pointer(p), Tag::Scalar)
            | (BinOp::Add, Tag::Scalar, Tag::Pointer(p)) => Tag::Pointer(p),
            (BinOp::Sub, Tag::Pointer(p), Tag::Scalar) => Tag::Pointer(p),
            // The difference of two pointers into one place is a number (allowed to root).
            (BinOp::Sub, Tag::Pointer(p), Tag::Pointer(q)) if p == q => Tag::Scalar,
            _ => Tag::Mangled,
        };
        if tag == Tag::Mangled {
            self.mangled = true;
        }
        TVal { v, tag }
    }

    fn compare(&mut self, op: CmpOp, a: &TVal, b: &TVal) -> bool {
        Concrete::eval_compare(op, a.v, b.v)
    }

    fn not(&mut self, c: &bool) -> bool {
        !*c
    }

    fn ite(&mut self, c: &bool, a: &TVal, b: &TVal) -> TVal {
        if *c {
            *a
        } else {
            *b
        }
    }
}

/// One test of a window: the registers at its entry and the memory it may read.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WindowTest {
    pub regs: [u64; NUM_REGS],
    /// Bytes given explicitly (a solver's counterexample); others come from `fill`.
    pub memory: BTreeMap<u64, u8>,
    /// Seed of the pseudo-random bytes of memory not given; 0 for zero bytes.
    pub fill: u64,
}

impl WindowTest {
    /// The initial byte at `addr`.
    pub fn byte(&self, addr: u64) -> u8 {
        if let Some(b) = self.memory.get(&addr) {
            return *b;
        }
        if self.fill == 0 {
            return 0;
        }
        // splitmix64 of (fill, addr): reproducible bytes without storing them.
        let mut z = self.fill ^ addr.wrapping_mul(0x9e37_79b9_7f4a_7c15);
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        (z ^ (z >> 31)) as u8
    }
}

/// One memory access of a run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Access {
    pub place: Place,
    pub addr: u64,
    pub size: u8,
    pub write: bool,
}

/// What a window did on one test.
#[derive(Clone, Debug, Default)]
pub struct Outcome {
    pub regs: Vec<TVal>,
    /// Final value of every byte written.
    pub written: BTreeMap<u64, u8>,
    pub accesses: Vec<Access>,
    /// Why the run stopped early (an access through a non-pointer, an instruction a window
    /// cannot hold), if it did.
    pub fault: Option<&'static str>,
    /// Whether a pointer was mangled.
    pub mangled: bool,
}

struct WindowMachine<'a> {
    domain: TagDomain,
    regs: [TVal; NUM_REGS],
    frames: Vec<Frame<TVal>>,
    test: &'a WindowTest,
    written: BTreeMap<u64, u8>,
    accesses: Vec<Access>,
    /// Whether the instruction being run is an atomic read-modify-write.
    atomic: bool,
}

/// Why a window run stops.
#[derive(Debug)]
pub struct Fault(&'static str);

impl From<SemError> for Fault {
    fn from(_: SemError) -> Fault {
        Fault("an instruction the semantics refuses")
    }
}

impl WindowMachine<'_> {
    fn place_of(&self, addr: &TVal, size: Size) -> Result<Place, Fault> {
        let place = match addr.tag {
            Tag::Pointer(p) => p,
            Tag::Scalar => return Err(Fault("memory access through a scalar")),
            Tag::Mangled => return Err(Fault("memory access through a mangled pointer")),
        };
        // The checker takes atomics on the stack and map values only, and aligned.
        if self.atomic {
            if !matches!(place, Place::Stack | Place::MapValue(_)) {
                return Err(Fault(
                    "an atomic operation outside the stack and map values",
                ));
            }
            if !addr.v.is_multiple_of(size.bytes() as u64) {
                return Err(Fault("a misaligned atomic operation"));
            }
        }
        Ok(place)
    }
}

impl Machine for WindowMachine<'_> {
    type D = TagDomain;
    type Fault = Fault;

    fn domain(&mut self) -> &mut TagDomain {
        &mut self.domain
    }

    fn regs(&mut self) -> &mut [TVal; NUM_REGS] {
        &mut self.regs
    }

    fn frames(&mut self) -> &mut Vec<Frame<TVal>> {
        &mut self.frames
    }

    fn push_stack_frame(&mut self, _depth: usize) -> Result<TVal, Fault> {
        Err(Fault("a call inside a window"))
    }

    fn pop_stack_frame(&mut self) {}

    fn load(&mut self, _pc: usize, addr: &TVal, size: Size) -> Result<TVal, Fault> {
        let place = self.place_of(addr, size)?;
        let n = size.bytes() as u64;
        self.accesses.push(Access {
            place,
            addr: addr.v,
            size: n as u8,
            write: false,
        });
        let mut v = 0u64;
        for i in (0..n).rev() {
            let a = addr.v.wrapping_add(i);
            let b = match self.written.get(&a) {
                Some(b) => *b,
                None => self.test.byte(a),
            };
            v = (v << 8) | b as u64;
        }
        // A 32-bit load of the context's `data`, `data_end` or `data_meta` gives the pointer the
        // kernel rewrites it to (its value: what the test's context holds there).
        if place == Place::Ctx && size == Size::W {
            let field = addr.v.wrapping_sub(crate::search::place_base(Place::Ctx));
            let pointer = match field {
                xdp_md::DATA => Some(Place::Packet),
                xdp_md::DATA_END => Some(Place::PacketEnd),
                xdp_md::DATA_META => Some(Place::PacketMeta),
                _ => None,
            };
            if let Some(p) = pointer {
                return Ok(TVal {
                    v,
                    tag: Tag::Pointer(p),
                });
            }
        }
        Ok(TVal::scalar(v))
    }

    fn store(&mut self, _pc: usize, addr: &TVal, size: Size, value: &TVal) -> Result<(), Fault> {
        let place = self.place_of(addr, size)?;
        if value.tag != Tag::Scalar && !(place == Place::Stack && size == Size::Dw) {
            return Err(Fault("a pointer stored outside an 8-byte stack slot"));
        }
        let n = size.bytes() as u64;
        self.accesses.push(Access {
            place,
            addr: addr.v,
            size: n as u8,
            write: true,
        });
        for i in 0..n {
            self.written
                .insert(addr.v.wrapping_add(i), (value.v >> (8 * i)) as u8);
        }
        Ok(())
    }

    fn map_reference(&mut self, _pc: usize, _imm: &Imm64) -> Result<TVal, Fault> {
        Err(Fault("a map reference inside a window"))
    }

    fn function_reference(&mut self, _pc: usize, _function: usize) -> Result<TVal, Fault> {
        Err(Fault("a function reference inside a window"))
    }

    fn call_helper(&mut self, _pc: usize, _id: u32) -> Result<HelperOutcome, Fault> {
        Err(Fault("a helper call inside a window"))
    }

    fn call_kfunc(&mut self, _pc: usize, _index: i32) -> Result<(), Fault> {
        Err(Fault("a kfunc call inside a window"))
    }

    fn resume_helper(&mut self, _callback: Callback<TVal>) -> Result<HelperOutcome, Fault> {
        Err(Fault("a callback inside a window"))
    }
}

/// Runs `insns` (a window; `None` is a removed slot) from the test's registers tagged `tags`.
pub fn run_window(
    insns: &[Option<Instruction>],
    tags: &[Tag; NUM_REGS],
    test: &WindowTest,
) -> Outcome {
    let mut regs = [TVal::scalar(0); NUM_REGS];
    for (r, reg) in regs.iter_mut().enumerate() {
        *reg = TVal {
            v: test.regs[r],
            tag: tags[r],
        };
    }
    let mut m = WindowMachine {
        domain: TagDomain::default(),
        regs,
        frames: Vec::new(),
        test,
        written: BTreeMap::new(),
        accesses: Vec::new(),
        atomic: false,
    };
    let mut fault = None;
    for (pc, insn) in insns.iter().enumerate() {
        let Some(insn) = insn else { continue };
        m.atomic = matches!(insn, Instruction::Atomic { .. });
        match step(&mut m, pc, insn) {
            Ok(Flow::Next(_)) => {}
            Ok(_) => {
                fault = Some("control flow inside a window");
                break;
            }
            Err(Fault(why)) => {
                fault = Some(why);
                break;
            }
        }
    }
    Outcome {
        regs: m.regs.to_vec(),
        written: m.written,
        accesses: m.accesses,
        fault,
        mangled: m.domain.mangled,
    }
}

/// Why a candidate's run on a test is unsafe next to the original's run on it, if it is.
pub fn safety_violation(original: &Outcome, candidate: &Outcome) -> Option<&'static str> {
    if let Some(f) = candidate.fault {
        return Some(f);
    }
    if candidate.mangled && !original.mangled {
        return Some("pointer arithmetic the kernel refuses");
    }
    let mut touched: BTreeSet<u64> = BTreeSet::new();
    for a in &original.accesses {
        touched.extend((0..a.size as u64).map(|i| a.addr.wrapping_add(i)));
    }
    let mut own: BTreeSet<u64> = BTreeSet::new();
    for a in &candidate.accesses {
        let bytes = || (0..a.size as u64).map(|i| a.addr.wrapping_add(i));
        match a.place {
            Place::Ctx => {
                let same = original.accesses.iter().any(|o| {
                    !o.write && o.place == Place::Ctx && o.addr == a.addr && o.size == a.size
                });
                if a.write || !same {
                    return Some("a context access the original does not make");
                }
            }
            Place::Stack => {
                if !a.addr.is_multiple_of(a.size as u64) {
                    return Some("a misaligned stack access");
                }
                if a.write {
                    if !bytes().all(|b| touched.contains(&b) || stack_frame_byte(original, b)) {
                        return Some("a stack write outside the frame");
                    }
                    own.extend(bytes());
                } else if !bytes().all(|b| touched.contains(&b) || own.contains(&b)) {
                    return Some("a stack read of bytes not known to be written");
                }
            }
            _ => {
                if !bytes().all(|b| touched.contains(&b) || (!a.write && own.contains(&b))) {
                    return Some("a memory access outside what the original accesses");
                }
            }
        }
    }
    None
}

/// Whether `addr` lies in the stack frame, judged by the original's frame pointer (a stack
/// address the original used, or the run's r10).
fn stack_frame_byte(original: &Outcome, addr: u64) -> bool {
    match original.regs.get(10) {
        Some(fp) => addr < fp.v && fp.v - addr <= linerate_sem::exec::STACK_FRAME_SIZE,
        None => false,
    }
}
