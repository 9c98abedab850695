//! The two instantiations of the semantics agree: running a random program over expression trees
//! and evaluating the final trees under concrete inputs gives exactly what running it over machine
//! integers gives. Both run on one generic test machine (registers plus one stack frame of byte
//! cells), so only the domain differs.

use std::collections::HashMap;
use std::rc::Rc;

use linerate_bpf::insn::{AluOp, Imm64, Instruction, Operand, Size, NUM_REGS};
use linerate_conformance::random_program::{body, Harness};
use linerate_sem::exec::{step, Flow, Frame, HelperOutcome, Machine, SemError};
use linerate_sem::expr::{Expr, ExprDomain};
use linerate_sem::{BinOp, Concrete, Domain};
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
    fn call_helper(&mut self, pc: usize, _: u32) -> Result<HelperOutcome, SemError> {
        Err(SemError::Unsupported {
            pc,
            what: "helpers",
        })
    }
    fn branch(&mut self, _: usize, taken: &D::Bool) -> Result<bool, SemError> {
        Ok((self.decide)(taken))
    }

    fn may_goto(&mut self, _: usize) -> Result<bool, SemError> {
        Ok(false)
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
            Flow::Exit => break,
            Flow::TailCall => unreachable!("no helpers"),
        }
    }
    (m.regs[..10].to_vec(), m.stack)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    #[test]
    fn expression_trees_evaluate_to_the_interpreters_results(
        insns in body(Harness::Bare, 40).prop_map(|mut b| { b.push(Instruction::Exit); b }),
        inputs in proptest::array::uniform10(prop_oneof![any::<u64>(), Just(0u64), Just(u64::MAX), Just(1u64 << 63), 0..300u64]),
    ) {
        let mut concrete_regs = [0u64; NUM_REGS];
        concrete_regs[..10].copy_from_slice(&inputs);
        concrete_regs[10] = FRAME_POINTER;
        let concrete = StackMachine::<Concrete> {
            domain: Concrete,
            regs: concrete_regs,
            frames: Vec::new(),
            stack: vec![0; STACK],
            as_const: |v| Some(*v),
            decide: Box::new(|b| *b),
        };
        let (regs, stack) = run(concrete, &insns);

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

        for r in 0..10 {
            prop_assert_eq!(sym_regs[r].eval(&env), regs[r], "r{} differs; tree {:?}", r, sym_regs[r]);
        }
        for (i, (s, c)) in sym_stack.iter().zip(&stack).enumerate() {
            prop_assert_eq!(s.eval(&env), *c, "stack byte {} differs", i);
        }
    }
}

/// The symbolic run really is symbolic: a value computed from inputs stays a tree.
#[test]
fn inputs_stay_symbolic() {
    let insns = [
        Instruction::Alu {
            wide: true,
            op: AluOp::Add,
            dst: 1,
            src: Operand::Reg(2),
        },
        Instruction::Exit,
    ];
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
