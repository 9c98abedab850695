//! Expressions: each is computed into the register of its nesting depth as its low `w` bits,
//! masked after every operation that can carry above them (P4-16's modulo-2^w arithmetic). Only
//! unsigned `bit<w>` (w ≤ 64), `bool` and serializable enums are compiled; division and modulo
//! by zero give BPF's answers, as the interpreter does.

use super::storage::{scalar_width, Slot};
use super::{CompileError, Gen};
use crate::ast::{BinaryOp, Expr, ExprKind, UnaryOp};
use crate::check::types::Type;
use crate::interp::resolve_type;
use linerate_bpf::insn::build::{alu64, alu64_reg, ja, jump, ld64, ldx, mov32_reg, mov64};
use linerate_bpf::insn::{AluOp, Cond, Operand, Reg, Size};

/// Registers by expression depth (`r6`–`r8` hold the context and packet bounds).
const REGS: [Reg; 7] = [1, 2, 3, 4, 5, 9, 0];

/// What an lvalue or a header expression names.
#[derive(Debug, Clone)]
pub(crate) enum Place {
    /// A scalar.
    Scalar(Slot),
    /// A header instance, by path.
    Header(String),
}

/// The low `width` bits.
pub(crate) fn mask(width: u32) -> u64 {
    if width >= 64 {
        u64::MAX
    } else {
        (1u64 << width) - 1
    }
}

impl Gen<'_> {
    pub fn reg(&self, depth: usize, at: &Expr) -> Result<Reg, CompileError> {
        REGS.get(depth)
            .copied()
            .ok_or_else(|| self.unsupported(at.span, "an expression nested this deep"))
    }

    /// The width of an expression's value (64 for unsized constants).
    pub fn width(&self, e: &Expr) -> Result<u32, CompileError> {
        match self.checked.type_of(e) {
            Some(Type::InfInt) => Ok(64),
            Some(ty) => scalar_width(&self.checked.types, ty)
                .ok_or_else(|| self.unsupported(e.span, &format!("a value of type {ty}"))),
            None => Err(self.unsupported(e.span, "an expression without a type")),
        }
    }

    /// `reg = value`.
    pub fn load_const(&mut self, reg: Reg, value: u64) {
        match i32::try_from(value) {
            Ok(small) if small >= 0 => self.emit(mov64(reg, small)),
            _ => self.emit(ld64(reg, value)),
        }
    }

    /// Clears the bits of `reg` above `width`, using `scratch` for wide masks.
    pub fn mask_reg(&mut self, reg: Reg, width: u32, scratch: Reg) {
        match width {
            64.. => {}
            32 => self.emit(mov32_reg(reg, reg)),
            0..=31 => self.emit(alu64(AluOp::And, reg, mask(width) as i32)),
            _ => {
                self.emit(ld64(scratch, mask(width)));
                self.emit(alu64_reg(AluOp::And, reg, scratch));
            }
        }
    }

    /// The path of a member chain rooted at a block parameter (`hdr.ipv4.ttl`).
    /// Stack elements are `path[i]`: a constant index, or in the parser `next`/`last`, whose
    /// index the parser knows on each (state, offset) it generates.
    pub fn path(&self, e: &Expr) -> Option<String> {
        match &e.kind {
            ExprKind::Name(n) => self.params.get(&n.name).cloned(),
            ExprKind::Member(base, member) => {
                let base = self.path(base)?;
                let size = self.frame.stacks.get(&base);
                let in_parser = self.reject.is_some();
                match (size, member.name.as_str()) {
                    (Some(size), "next") if in_parser => {
                        let next = *self.stack_next.get(&base).unwrap_or(&0);
                        (next < *size).then(|| format!("{base}[{next}]"))
                    }
                    (Some(_), "last") if in_parser => {
                        let last = self.stack_next.get(&base)?.checked_sub(1)?;
                        Some(format!("{base}[{last}]"))
                    }
                    (Some(_), _) => None,
                    _ => Some(format!("{base}.{}", member.name)),
                }
            }
            ExprKind::Index(base, index) => {
                let base = self.path(base)?;
                let size = *self.frame.stacks.get(&base)?;
                let index = u32::try_from(self.checked.constant(index)?).ok()?;
                (index < size).then(|| format!("{base}[{index}]"))
            }
            _ => None,
        }
    }

    /// What an expression names as an lvalue.
    pub fn place(&self, e: &Expr) -> Result<Place, CompileError> {
        if let ExprKind::Name(n) = &e.kind {
            if let Some(slot) = self.scopes.iter().rev().find_map(|s| s.get(&n.name)) {
                return Ok(Place::Scalar(*slot));
            }
        }
        let path = self
            .path(e)
            .ok_or_else(|| self.unsupported(e.span, "this expression as a location"))?;
        if let Some(slot) = self.frame.slots.get(&path) {
            return Ok(Place::Scalar(*slot));
        }
        if self.frame.header(&path).is_some() {
            return Ok(Place::Header(path));
        }
        Err(self.unsupported(e.span, &format!("'{path}' (not a scalar or header)")))
    }

    /// Computes `e` into the register of `depth`.
    pub fn expr(&mut self, e: &Expr, depth: usize) -> Result<(), CompileError> {
        let r = self.reg(depth, e)?;
        if let Some(value) = self.checked.constant(e) {
            let width = self.width(e)?;
            self.load_const(r, (value as u64) & mask(width));
            return Ok(());
        }
        match &e.kind {
            ExprKind::Bool(b) => self.emit(mov64(r, i32::from(*b))),
            ExprKind::Name(_) | ExprKind::Member(..) => {
                if let Some(slot) = self.apply_result(e)? {
                    self.emit(ldx(Size::Dw, r, 10, slot));
                    return Ok(());
                }
                match self.place(e)? {
                    Place::Scalar(slot) => self.emit(ldx(Size::Dw, r, 10, slot.off)),
                    Place::Header(_) => {
                        return Err(self.unsupported(e.span, "a whole header as a value"))
                    }
                }
            }
            ExprKind::Call { callee, args, .. } => match (&callee.kind, args.as_slice()) {
                (ExprKind::Member(object, method), []) if method.name == "isValid" => {
                    let valid = self.header_valid(object)?;
                    self.emit(ldx(Size::Dw, r, 10, valid));
                }
                _ => return Err(self.unsupported(e.span, "this call in an expression")),
            },
            ExprKind::Unary(op, inner) => {
                self.expr(inner, depth)?;
                let width = self.width(e)?;
                let scratch = self.reg(depth + 1, e)?;
                match op {
                    UnaryOp::Not => self.emit(alu64(AluOp::Xor, r, 1)),
                    UnaryOp::Complement => {
                        self.emit(alu64(AluOp::Xor, r, -1));
                        self.mask_reg(r, width, scratch);
                    }
                    UnaryOp::Negate => {
                        self.emit(alu64(AluOp::Neg, r, 0));
                        self.mask_reg(r, width, scratch);
                    }
                }
            }
            ExprKind::Binary(op, left, right) => self.binary(e, *op, left, right, depth)?,
            ExprKind::Ternary(cond, a, b) => {
                let (otherwise, end) = (self.code.label(), self.code.label());
                self.branch_if(cond, false, otherwise, depth)?;
                self.expr(a, depth)?;
                self.code.goto(end);
                self.code.place(otherwise);
                self.expr(b, depth)?;
                self.code.place(end);
            }
            ExprKind::Cast(to, inner) => {
                self.expr(inner, depth)?;
                let to = resolve_type(&self.checked.types, to)
                    .ok_or_else(|| self.unsupported(e.span, "a cast to an unknown type"))?;
                if to == Type::Bool {
                    self.emit(jump(true, Cond::Eq, r, Operand::Imm(0), 1));
                    self.emit(mov64(r, 1));
                } else {
                    let width = scalar_width(&self.checked.types, &to)
                        .ok_or_else(|| self.unsupported(e.span, &format!("a cast to {to}")))?;
                    let scratch = self.reg(depth + 1, e)?;
                    self.mask_reg(r, width, scratch);
                }
            }
            ExprKind::Slice { base, lo, .. } => {
                let lo = self
                    .checked
                    .constant(lo)
                    .and_then(|l| i32::try_from(l).ok())
                    .ok_or_else(|| self.unsupported(e.span, "a slice with non-constant bounds"))?;
                self.expr(base, depth)?;
                self.emit(alu64(AluOp::Rsh, r, lo));
                let width = self.width(e)?;
                let scratch = self.reg(depth + 1, e)?;
                self.mask_reg(r, width, scratch);
            }
            ExprKind::Int { .. }
            | ExprKind::ErrorMember(_)
            | ExprKind::Index(..)
            | ExprKind::List(_) => return Err(self.unsupported(e.span, "this expression")),
        }
        Ok(())
    }

    /// Jumps to `target` when the boolean `e` is `when`, else falls through: comparisons,
    /// `!`, `&&` and `||` become branches instead of 0/1 values tested afterwards.
    pub fn branch_if(
        &mut self,
        e: &Expr,
        when: bool,
        target: super::asm::Label,
        depth: usize,
    ) -> Result<(), CompileError> {
        if let Some(value) = self.checked.constant(e) {
            if (value != 0) == when {
                self.code.goto(target);
            }
            return Ok(());
        }
        match &e.kind {
            ExprKind::Bool(b) => {
                if *b == when {
                    self.code.goto(target);
                }
                return Ok(());
            }
            ExprKind::Unary(UnaryOp::Not, inner) => {
                return self.branch_if(inner, !when, target, depth)
            }
            ExprKind::Binary(op @ (BinaryOp::And | BinaryOp::Or), left, right) => {
                // `a && b` is false when either is; `a || b` true when either is.
                let short = (*op == BinaryOp::Or) == when;
                if short {
                    self.branch_if(left, when, target, depth)?;
                    self.branch_if(right, when, target, depth)?;
                } else {
                    let done = self.code.label();
                    self.branch_if(left, !when, done, depth)?;
                    self.branch_if(right, when, target, depth)?;
                    self.code.place(done);
                }
                return Ok(());
            }
            ExprKind::Binary(op, left, right) => {
                let cond = match op {
                    BinaryOp::Eq => Some((Cond::Eq, Cond::Ne)),
                    BinaryOp::Ne => Some((Cond::Ne, Cond::Eq)),
                    BinaryOp::Lt => Some((Cond::Lt, Cond::Ge)),
                    BinaryOp::Le => Some((Cond::Le, Cond::Gt)),
                    BinaryOp::Gt => Some((Cond::Gt, Cond::Le)),
                    BinaryOp::Ge => Some((Cond::Ge, Cond::Lt)),
                    _ => None,
                };
                if let Some((yes, no)) = cond {
                    let cond = if when { yes } else { no };
                    let r = self.reg(depth, e)?;
                    self.expr(left, depth)?;
                    let small = match self.checked.constant(right) {
                        Some(c) => i32::try_from(c as u64 & mask(self.width(right)?)).ok(),
                        None => None,
                    };
                    match small {
                        Some(imm) => self.code.branch_imm(cond, r, imm, target),
                        None => {
                            let s = self.reg(depth + 1, e)?;
                            self.expr(right, depth + 1)?;
                            self.code.branch_reg(cond, r, s, target);
                        }
                    }
                    return Ok(());
                }
            }
            _ => {}
        }
        let r = self.reg(depth, e)?;
        self.expr(e, depth)?;
        let cond = if when { Cond::Ne } else { Cond::Eq };
        self.code.branch_imm(cond, r, 0, target);
        Ok(())
    }

    /// The validity slot of a header expression.
    pub fn header_valid(&self, e: &Expr) -> Result<i16, CompileError> {
        match self.place(e)? {
            Place::Header(path) => self
                .frame
                .header(&path)
                .map(|h| h.valid)
                .ok_or_else(|| self.unsupported(e.span, "this header")),
            Place::Scalar(_) => Err(self.unsupported(e.span, "isValid of a non-header")),
        }
    }

    fn binary(
        &mut self,
        e: &Expr,
        op: BinaryOp,
        left: &Expr,
        right: &Expr,
        depth: usize,
    ) -> Result<(), CompileError> {
        let (r, s) = (self.reg(depth, e)?, self.reg(depth + 1, e)?);
        self.expr(left, depth)?;
        let width = self.width(e)?;
        // A constant right operand that fits an immediate needs no register (BPF refuses a
        // division by an immediate zero, so those keep the register and BPF's answer).
        let imm = match self.checked.constant(right) {
            Some(c) => i32::try_from(c as u64 & mask(self.width(right)?)).ok(),
            None => None,
        };
        let imm_op = match (op, imm) {
            (BinaryOp::Div | BinaryOp::Mod, Some(0)) => None,
            (BinaryOp::Add, Some(i)) => Some((AluOp::Add, i)),
            (BinaryOp::Sub, Some(i)) => Some((AluOp::Sub, i)),
            (BinaryOp::Mul, Some(i)) => Some((AluOp::Mul, i)),
            (BinaryOp::Div, Some(i)) => Some((AluOp::Div, i)),
            (BinaryOp::Mod, Some(i)) => Some((AluOp::Mod, i)),
            (BinaryOp::BitAnd | BinaryOp::And, Some(i)) => Some((AluOp::And, i)),
            (BinaryOp::BitOr | BinaryOp::Or, Some(i)) => Some((AluOp::Or, i)),
            (BinaryOp::BitXor, Some(i)) => Some((AluOp::Xor, i)),
            (BinaryOp::Shl, Some(i)) if i < 64 => Some((AluOp::Lsh, i)),
            (BinaryOp::Shr, Some(i)) if i < 64 => Some((AluOp::Rsh, i)),
            _ => None,
        };
        if let Some((alu, imm)) = imm_op {
            self.emit(alu64(alu, r, imm));
            // Operands within the width keep these results within it.
            if !matches!(
                alu,
                AluOp::And | AluOp::Or | AluOp::Xor | AluOp::Rsh | AluOp::Div | AluOp::Mod
            ) {
                let scratch = self.reg(depth + 1, e)?;
                self.mask_reg(r, width, scratch);
            }
            return Ok(());
        }
        self.expr(right, depth + 1)?;
        let arithmetic = |op| Some(alu64_reg(op, r, s));
        let insn = match op {
            BinaryOp::Add => arithmetic(AluOp::Add),
            BinaryOp::Sub => arithmetic(AluOp::Sub),
            BinaryOp::Mul => arithmetic(AluOp::Mul),
            BinaryOp::Div => arithmetic(AluOp::Div),
            BinaryOp::Mod => arithmetic(AluOp::Mod),
            BinaryOp::BitAnd | BinaryOp::And => arithmetic(AluOp::And),
            BinaryOp::BitOr | BinaryOp::Or => arithmetic(AluOp::Or),
            BinaryOp::BitXor => arithmetic(AluOp::Xor),
            _ => None,
        };
        if let Some(insn) = insn {
            self.emit(insn);
            let scratch = self.reg(depth + 2, e)?;
            self.mask_reg(r, width, scratch);
            return Ok(());
        }
        let cond = match op {
            BinaryOp::Eq => Some(Cond::Eq),
            BinaryOp::Ne => Some(Cond::Ne),
            BinaryOp::Lt => Some(Cond::Lt),
            BinaryOp::Le => Some(Cond::Le),
            BinaryOp::Gt => Some(Cond::Gt),
            BinaryOp::Ge => Some(Cond::Ge),
            _ => None,
        };
        if let Some(cond) = cond {
            self.emit(jump(true, cond, r, Operand::Reg(s), 2));
            self.emit(mov64(r, 0));
            self.emit(ja(1));
            self.emit(mov64(r, 1));
            return Ok(());
        }
        match op {
            BinaryOp::Shl | BinaryOp::Shr => {
                // A shift by 64 or more leaves nothing of a 64-bit value; BPF would mask it.
                let alu = if op == BinaryOp::Shl {
                    AluOp::Lsh
                } else {
                    AluOp::Rsh
                };
                self.emit(jump(true, Cond::Gt, s, Operand::Imm(63), 2));
                self.emit(alu64_reg(alu, r, s));
                self.emit(ja(1));
                self.emit(mov64(r, 0));
                let scratch = self.reg(depth + 2, e)?;
                self.mask_reg(r, width, scratch);
            }
            BinaryOp::Concat => {
                let low = i32::try_from(self.width(right)?).unwrap_or(64);
                self.emit(alu64(AluOp::Lsh, r, low));
                self.emit(alu64_reg(AluOp::Or, r, s));
            }
            _ => return Err(self.unsupported(e.span, &format!("the operator '{}'", op.symbol()))),
        }
        Ok(())
    }
}
