//! The expression-tree instantiation of the semantics agrees with the interpreter: running a random
//! program body over expression trees (on a small test machine: registers plus one stack frame of
//! byte cells) and evaluating the final trees under concrete inputs gives exactly the registers and
//! stack bytes that `linerate_vm` computes when it runs the same body with those inputs.

use std::collections::HashMap;
use std::rc::Rc;

use linerate_bpf::insn::build::{add64, add64_reg, jmp_reg, ld64, ldx, mov64, mov64_reg, st, stx};
use linerate_bpf::insn::{Cond, Imm64, Instruction, Size, NUM_REGS};
use linerate_conformance::random_program::{body, object, Harness, SCALARS, STACK_BYTES};
use linerate_sem::exec::{step, Flow, Frame, HelperOutcome, Machine, SemError};
use linerate_sem::expr::{Expr, ExprDomain};
use linerate_sem::{BinOp, Domain};
use linerate_vm::{Vm, VmOptions};
use proptest::prelude::*;

const FRAME_POINTER: u64 = 0x1_0000_0000;
const STACK: usize = 512;

/// How a machine decides a branch condition.
type Decide<B> = Box<dyn Fn(&B) -> bool>;

/// A machine with registers and one stack frame of byte cells, generic over the domain.
struct StackMachine<D: Domain> {
    domain: D,
    regs: [D::Value; NUM_REGS],
    frames: Vec<Frame<D::Value>>,
    stack: Vec<D::Value>,
    as_const: fn(&D::Value) -> Option<u64>,
    decide: Decide<D::Bool>,
}

impl<D: Domain> StackMachine<D> {
    fn cell(&self, addr: &D::Value, size: Size) -> Result<usize, SemError> {
        let addr = (self.as_const)(addr).ok_or(SemError::Unsupported {
            pc: 0,
            what: "symbolic address",
        })?;
        let start = addr.wrapping_sub(FRAME_POINTER - STACK as u64) as usize;
        if start + size.bytes() as usize > STACK {
            return Err(SemError::Unsupported {
                pc: 0,
                what: "address outside the stack",
            });
        }
        Ok(start)
    }
}

impl<D: Domain> Machine for StackMachine<D> {
    type D = D;
    type Fault = SemError;

    fn domain(&mut self) -> &mut D {
        &mut self.domain
    }
    fn regs(&mut self) -> &mut [D::Value; NUM_REGS] {
        &mut self.regs
    }
    fn frames(&mut self) -> &mut Vec<Frame<D::Value>> {
        &mut self.frames
    }
    fn push_stack_frame(&mut self, _: usize) -> Result<D::Value, SemError> {
        Err(SemError::Unsupported {
            pc: 0,
            what: "calls",
        })
    }
    fn pop_stack_frame(&mut self) {}
    fn load(&mut self, _: usize, addr: &D::Value, size: Size) -> Result<D::Value, SemError> {
        let start = self.cell(addr, size)?;
        let mut v = self.domain.constant(0);
        for i in 0..size.bytes() as usize {
            let shift = self.domain.constant(8 * i as u64);
            let byte = self
                .domain
                .binary(BinOp::Shl, &self.stack[start + i], &shift);
            v = self.domain.binary(BinOp::Or, &v, &byte);
        }
        Ok(v)
    }
    fn store(
        &mut self,
        _: usize,
        addr: &D::Value,
        size: Size,
        value: &D::Value,
    ) -> Result<(), SemError> {
        let start = self.cell(addr, size)?;
        let mask = self.domain.constant(0xff);
        for i in 0..size.bytes() as usize {
            let shift = self.domain.constant(8 * i as u64);
            let shifted = self.domain.binary(BinOp::LShr, value, &shift);
            self.stack[start + i] = self.domain.binary(BinOp::And, &shifted, &mask);
        }
        Ok(())
    }
    fn map_reference(&mut self, pc: usize, _: &Imm64) -> Result<D::Value, SemError> {
        Err(SemError::Unsupported { pc, what: "maps" })
    }
    fn function_reference(&mut self, pc: usize, _: usize) -> Result<D::Value, SemError> {
        Err(SemError::Unsupported {
            pc,
            what: "functions",
        })
    }
    fn call_helper(&mut self, pc: usize, _: u32) -> Result<HelperOutcome, SemError> {
        Err(SemError::Unsupported {
            pc,
            what: "helpers",
        })
    }
    fn call_kfunc(&mut self, pc: usize, _: i32) -> Result<(), SemError> {
        Err(SemError::Unsupported { pc, what: "kfuncs" })
    }

    fn resume_helper(
        &mut self,
        callback: linerate_sem::helpers::Callback<D::Value>,
    ) -> Result<HelperOutcome, SemError> {
        Err(SemError::Unsupported {
            pc: callback.pc,
            what: "helpers",
        })
    }
}

/// Runs a loop-free program to its exit; returns registers r0–r9 and the stack bytes.
fn run<D: Domain>(mut m: StackMachine<D>, insns: &[Instruction]) -> (Vec<D::Value>, Vec<D::Value>) {
    let mut slots = Vec::new();
    for insn in insns {
        slots.push(Some(*insn));
        if insn.slots() == 2 {
            slots.push(None);
        }
    }
    let mut pc = 0;
    loop {
        let insn = slots[pc].expect("jump into the middle of an instruction");
        match step(&mut m, pc, &insn).expect("generated programs execute") {
            Flow::Next(next) => pc = next,
            Flow::Branch {
                cond,
                taken,
                fallthrough,
            } => {
                pc = if (m.decide)(&cond) {
                    taken
                } else {
                    fallthrough
                }
            }
            // Loop-free code never exhausts the loop budget.
            Flow::LoopBudget { next, .. } => pc = next,
            Flow::Exit => break,
            Flow::TailCall => unreachable!("no helpers"),
        }
    }
    (m.regs[..10].to_vec(), m.stack)
}

/// Runs `body` (ending in `exit`) in the interpreter with `inputs[r]` in each scalar register `r`
/// and a zeroed stack; returns the final scalar registers (in [`SCALARS`] order) and the
/// `STACK_BYTES` bytes below the frame pointer. An XDP wrapper sets the registers from constants
/// and copies the results into the output packet.
fn run_in_vm(body_with_exit: &[Instruction], inputs: &[u64; 10]) -> (Vec<u64>, Vec<u8>) {
    use Instruction::*;
    let body = &body_with_exit[..body_with_exit.len() - 1];
    let out_bytes = 8 * SCALARS.len() + STACK_BYTES as usize;
    let mut prologue = vec![
        ldx(Size::W, 6, 1, 0),
        ldx(Size::W, 3, 1, 4),
        mov64_reg(2, 6),
        add64(2, out_bytes as i32),
    ];
    let mut rest = Vec::new();
    for k in 1..=STACK_BYTES / 8 {
        rest.push(st(Size::Dw, 10, -8 * k, 0));
    }
    for &r in &SCALARS {
        rest.push(ld64(r, inputs[r as usize]));
    }
    rest.extend_from_slice(body);
    for (i, &r) in SCALARS.iter().enumerate() {
        rest.push(stx(Size::Dw, 6, 8 * i as i16, r));
    }
    for k in 0..STACK_BYTES / 8 {
        rest.push(ldx(Size::Dw, 1, 10, -STACK_BYTES + 8 * k));
        rest.push(stx(Size::Dw, 6, 8 * SCALARS.len() as i16 + 8 * k, 1));
    }
    rest.push(mov64(0, 2));
    rest.push(Exit);
    let too_short: usize = rest.iter().map(Instruction::slots).sum();
    prologue.push(jmp_reg(Cond::Gt, 2, 3, too_short as i16));
    prologue.extend(rest);
    prologue.push(mov64(0, 0));
    prologue.push(Exit);
    let object = object("expr", &prologue);
    let mut vm = Vm::new(&object, VmOptions::default()).expect("decodes");
    let out = vm.run(0, &vec![0u8; out_bytes], &[]).expect("runs");
    assert_eq!(out.return_value, 2, "the wrapper reached its end");
    let regs = (0..SCALARS.len())
        .map(|i| u64::from_le_bytes(out.packet[8 * i..8 * i + 8].try_into().expect("8 bytes")))
        .collect();
    (regs, out.packet[8 * SCALARS.len()..].to_vec())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    #[test]
    fn expression_trees_evaluate_to_the_interpreters_results(
        insns in body(Harness::Bare, 40).prop_map(|mut b| { b.push(Instruction::Exit); b }),
        inputs in proptest::array::uniform10(prop_oneof![any::<u64>(), Just(0u64), Just(u64::MAX), Just(1u64 << 63), 0..300u64]),
    ) {
        let (regs, stack) = run_in_vm(&insns, &inputs);

        let env: HashMap<u32, u64> = (0..10).map(|i| (i, inputs[i as usize])).collect();
        let env_for_branches = env.clone();
        let symbolic = StackMachine::<ExprDomain> {
            domain: ExprDomain,
            regs: std::array::from_fn(|r| Rc::new(if r == 10 { Expr::Const(FRAME_POINTER) } else { Expr::Var(r as u32) })),
            frames: Vec::new(),
            stack: (0..STACK).map(|_| Rc::new(Expr::Const(0))).collect(),
            as_const: |v| v.as_const(),
            decide: Box::new(move |c| c.eval(&env_for_branches)),
        };
        let (sym_regs, sym_stack) = run(symbolic, &insns);

        for (i, &r) in SCALARS.iter().enumerate() {
            let r = r as usize;
            prop_assert_eq!(sym_regs[r].eval(&env), regs[i], "r{} differs; tree {:?}", r, sym_regs[r]);
        }
        let used = &sym_stack[STACK - STACK_BYTES as usize..];
        for (i, (s, c)) in used.iter().zip(&stack).enumerate() {
            prop_assert_eq!(s.eval(&env), *c as u64, "stack byte r10-{} differs", STACK_BYTES as usize - i);
        }
    }
}

/// The symbolic run really is symbolic: a value computed from inputs stays a tree.
#[test]
fn inputs_stay_symbolic() {
    let insns = [add64_reg(1, 2), Instruction::Exit];
    let m = StackMachine::<ExprDomain> {
        domain: ExprDomain,
        regs: std::array::from_fn(|r| Rc::new(Expr::Var(r as u32))),
        frames: Vec::new(),
        stack: Vec::new(),
        as_const: |v| v.as_const(),
        decide: Box::new(|_| false),
    };
    let (regs, _) = run(m, &insns);
    assert_eq!(format!("{:?}", regs[1]), "(Add v1 v2)");
}
