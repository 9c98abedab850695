//! Expression trees: a second, symbolic instantiation of the semantics.
//!
//! [`ExprDomain`] builds a tree for every value instead of computing it, folding constants as it
//! goes. It is the shape the Z3 instantiation takes (a formula per register), small enough to test
//! the semantics' genericity here: running a program over trees and evaluating the resulting tree
//! under concrete inputs must give what the interpreter computes.

use std::collections::HashMap;
use std::fmt;
use std::rc::Rc;

use crate::domain::{BinOp, CmpOp, Concrete, Domain};

/// A 64-bit value expression.
#[derive(Clone, PartialEq, Eq, Hash)]
pub enum Expr {
    Const(u64),
    /// An input named by index.
    Var(u32),
    Bin(BinOp, Rc<Expr>, Rc<Expr>),
    Ite(Rc<Cond>, Rc<Expr>, Rc<Expr>),
}

/// A condition expression.
#[derive(Clone, PartialEq, Eq, Hash)]
pub enum Cond {
    Const(bool),
    Cmp(CmpOp, Rc<Expr>, Rc<Expr>),
    Not(Rc<Cond>),
}

impl Expr {
    /// The value of a constant expression.
    pub fn as_const(&self) -> Option<u64> {
        match self {
            Expr::Const(v) => Some(*v),
            _ => None,
        }
    }

    /// Evaluates the expression with `vars[i]` as the value of `Var(i)` (missing ones are 0).
    pub fn eval(&self, vars: &HashMap<u32, u64>) -> u64 {
        match self {
            Expr::Const(v) => *v,
            Expr::Var(i) => vars.get(i).copied().unwrap_or(0),
            Expr::Bin(op, a, b) => Concrete::eval_binary(*op, a.eval(vars), b.eval(vars)),
            Expr::Ite(c, a, b) => {
                if c.eval(vars) {
                    a.eval(vars)
                } else {
                    b.eval(vars)
                }
            }
        }
    }

    /// Number of nodes (shared subtrees counted each time).
    pub fn size(&self) -> usize {
        match self {
            Expr::Const(_) | Expr::Var(_) => 1,
            Expr::Bin(_, a, b) => 1 + a.size() + b.size(),
            Expr::Ite(c, a, b) => 1 + c.size() + a.size() + b.size(),
        }
    }
}

impl Cond {
    /// Evaluates the condition (see [`Expr::eval`]).
    pub fn eval(&self, vars: &HashMap<u32, u64>) -> bool {
        match self {
            Cond::Const(b) => *b,
            Cond::Cmp(op, a, b) => Concrete::eval_compare(*op, a.eval(vars), b.eval(vars)),
            Cond::Not(c) => !c.eval(vars),
        }
    }

    fn size(&self) -> usize {
        match self {
            Cond::Const(_) => 1,
            Cond::Cmp(_, a, b) => 1 + a.size() + b.size(),
            Cond::Not(c) => 1 + c.size(),
        }
    }
}

impl fmt::Debug for Expr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Expr::Const(v) => write!(f, "{v:#x}"),
            Expr::Var(i) => write!(f, "v{i}"),
            Expr::Bin(op, a, b) => write!(f, "({op:?} {a:?} {b:?})"),
            Expr::Ite(c, a, b) => write!(f, "(ite {c:?} {a:?} {b:?})"),
        }
    }
}

impl fmt::Debug for Cond {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Cond::Const(b) => write!(f, "{b}"),
            Cond::Cmp(op, a, b) => write!(f, "({op:?} {a:?} {b:?})"),
            Cond::Not(c) => write!(f, "(not {c:?})"),
        }
    }
}

/// The expression-tree domain. Operations on constants are folded, so concrete addresses (stack
/// offsets, map value pointers) stay constants.
#[derive(Clone, Copy, Debug, Default)]
pub struct ExprDomain;

impl Domain for ExprDomain {
    type Value = Rc<Expr>;
    type Bool = Rc<Cond>;

    fn constant(&mut self, v: u64) -> Rc<Expr> {
        Rc::new(Expr::Const(v))
    }

    fn binary(&mut self, op: BinOp, a: &Rc<Expr>, b: &Rc<Expr>) -> Rc<Expr> {
        match (a.as_const(), b.as_const()) {
            (Some(x), Some(y)) => Rc::new(Expr::Const(Concrete::eval_binary(op, x, y))),
            _ => Rc::new(Expr::Bin(op, a.clone(), b.clone())),
        }
    }

    fn compare(&mut self, op: CmpOp, a: &Rc<Expr>, b: &Rc<Expr>) -> Rc<Cond> {
        match (a.as_const(), b.as_const()) {
            (Some(x), Some(y)) => Rc::new(Cond::Const(Concrete::eval_compare(op, x, y))),
            _ => Rc::new(Cond::Cmp(op, a.clone(), b.clone())),
        }
    }

    fn not(&mut self, c: &Rc<Cond>) -> Rc<Cond> {
        match **c {
            Cond::Const(b) => Rc::new(Cond::Const(!b)),
            _ => Rc::new(Cond::Not(c.clone())),
        }
    }

    fn ite(&mut self, c: &Rc<Cond>, a: &Rc<Expr>, b: &Rc<Expr>) -> Rc<Expr> {
        match **c {
            Cond::Const(true) => a.clone(),
            Cond::Const(false) => b.clone(),
            _ => Rc::new(Expr::Ite(c.clone(), a.clone(), b.clone())),
        }
    }
}
