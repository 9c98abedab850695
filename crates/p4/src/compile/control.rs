//! Statements, action calls and the architecture's externs (`mark_to_drop`, `verify`,
//! `counter.count`, `register.read/write`, `setValid`/`setInvalid`; the checksums are
//! `checksum.rs`), for the parser's state bodies and the ingress control alike.

use super::expr::{mask, Place};
use super::storage::Slot;
use super::{CompileError, Gen};
use crate::ast::{ActionDecl, BinaryOp, Block, Direction, Expr, ExprKind, Stmt};
use crate::check::types::Type;
use crate::interp::find_action;
use linerate_bpf::facts::helper::MAP_LOOKUP_ELEM;
use linerate_bpf::insn::build::{
    add64, alu64, alu64_reg, atomic, call_helper, ld64, ld_map, ldx, mov64, mov64_reg, st, stx,
};
use linerate_bpf::insn::{AluOp, AtomicOp, Cond, Size};
use std::collections::HashMap;

impl<'a> Gen<'a> {
    pub fn block(&mut self, block: &'a Block) -> Result<(), CompileError> {
        self.scopes.push(HashMap::new());
        for stmt in &block.stmts {
            self.stmt(stmt)?;
        }
        self.scopes.pop();
        Ok(())
    }

    /// A fresh slot holding `init` (zero without one), named in the innermost scope.
    fn declare(
        &mut self,
        name: &str,
        width: u32,
        init: Option<&'a Expr>,
    ) -> Result<(), CompileError> {
        let off = self.frame.alloc(8)?;
        match init {
            Some(init) => {
                self.hoist(init, true)?;
                self.expr(init, 0)?;
                self.emit(stx(Size::Dw, 10, off, 1));
            }
            None => self.emit(st(Size::Dw, 10, off, 0)),
        }
        if let Some(scope) = self.scopes.last_mut() {
            scope.insert(name.to_string(), Slot { off, width });
        }
        Ok(())
    }

    pub fn stmt(&mut self, stmt: &'a Stmt) -> Result<(), CompileError> {
        match stmt {
            Stmt::Assign { lhs, rhs } => {
                self.hoist(rhs, true)?;
                self.assign(lhs, rhs)
            }
            Stmt::Call(e) => self.call_stmt(e),
            Stmt::If {
                cond,
                then,
                otherwise,
            } => {
                self.hoist(cond, true)?;
                let (other, end) = (self.code.label(), self.code.label());
                self.branch_if(cond, false, other, 0)?;
                self.block(then)?;
                self.code.goto(end);
                self.code.place(other);
                if let Some(b) = otherwise {
                    self.block(b)?;
                }
                self.code.place(end);
                Ok(())
            }
            Stmt::Switch { subject, cases } => self.switch(subject, cases),
            Stmt::Block(b) => self.block(b),
            Stmt::Var(v) => {
                let width = self.var_width(&v.ty, v.name.span)?;
                self.declare(&v.name.name, width, v.init.as_ref())
            }
            Stmt::Const(c) => {
                let width = self.var_width(&c.ty, c.name.span)?;
                self.declare(&c.name.name, width, Some(&c.value))
            }
            Stmt::Return(span) => {
                let target = self
                    .returns
                    .last()
                    .copied()
                    .ok_or_else(|| self.unsupported(*span, "return outside a control"))?;
                self.code.goto(target);
                Ok(())
            }
            Stmt::Exit(span) => {
                let target = self
                    .exit
                    .ok_or_else(|| self.unsupported(*span, "exit outside a control"))?;
                self.code.goto(target);
                Ok(())
            }
        }
    }

    fn var_width(&self, ty: &crate::ast::TypeRef, span: crate::Span) -> Result<u32, CompileError> {
        crate::interp::resolve_type(&self.checked.types, ty)
            .and_then(|t| super::storage::scalar_width(&self.checked.types, &t))
            .ok_or_else(|| self.unsupported(span, "a variable of this type"))
    }

    fn assign(&mut self, lhs: &'a Expr, rhs: &'a Expr) -> Result<(), CompileError> {
        if let ExprKind::Slice { base, hi, lo } = &lhs.kind {
            let bound = |x: &Expr| self.checked.constant(x).and_then(|v| u32::try_from(v).ok());
            let (Some(hi), Some(lo)) = (bound(hi), bound(lo)) else {
                return Err(self.unsupported(lhs.span, "a slice with non-constant bounds"));
            };
            let Place::Scalar(slot) = self.place(base)? else {
                return Err(self.unsupported(lhs.span, "a slice of a header"));
            };
            let field = super::expr::mask(hi.saturating_sub(lo).saturating_add(1)) << lo.min(63);
            let keep = !field & super::expr::mask(slot.width);
            self.expr(rhs, 0)?;
            self.emit(alu64(AluOp::Lsh, 1, i32::try_from(lo).unwrap_or(0)));
            self.emit(ld64(3, field));
            self.emit(alu64_reg(AluOp::And, 1, 3));
            self.emit(ldx(Size::Dw, 2, 10, slot.off));
            self.emit(ld64(3, keep));
            self.emit(alu64_reg(AluOp::And, 2, 3));
            self.emit(alu64_reg(AluOp::Or, 1, 2));
            self.emit(stx(Size::Dw, 10, slot.off, 1));
            return Ok(());
        }
        match self.place(lhs)? {
            Place::Scalar(slot) => {
                if let Some(value) = self.checked.constant(rhs) {
                    let value = value as u64 & mask(self.width(rhs)?) & mask(slot.width);
                    if let Ok(small) = i32::try_from(value) {
                        self.emit(st(Size::Dw, 10, slot.off, small));
                        return Ok(());
                    }
                }
                self.expr(rhs, 0)?;
                // Every value holds only its low `w` bits: a narrower one needs no mask.
                if self.width(rhs)? > slot.width {
                    self.mask_reg(1, slot.width, 2);
                }
                self.emit(stx(Size::Dw, 10, slot.off, 1));
                Ok(())
            }
            Place::Header(to) => {
                // `h = g` (same header type, the checker says): every field and the validity.
                let Ok(Place::Header(from)) = self.place(rhs) else {
                    return Err(self.unsupported(rhs.span, "a header value other than a header"));
                };
                let (Some(to), Some(from)) = (
                    self.frame.header(&to).cloned(),
                    self.frame.header(&from).cloned(),
                ) else {
                    return Err(self.unsupported(lhs.span, "this header"));
                };
                let slots = |h: &super::storage::HeaderSlots| {
                    std::iter::once(h.valid)
                        .chain(h.fields.iter().map(|(_, s)| s.off))
                        .collect::<Vec<_>>()
                };
                for (to, from) in slots(&to).into_iter().zip(slots(&from)) {
                    self.emit(ldx(Size::Dw, 1, 10, from));
                    self.emit(stx(Size::Dw, 10, to, 1));
                }
                Ok(())
            }
        }
    }

    /// Applies the tables an expression applies, before the expression is computed (which reads
    /// their results). Only where the interpreter would apply them first: not right of `&&`,
    /// `||` or inside `?:`.
    pub fn hoist(&mut self, e: &'a Expr, first: bool) -> Result<(), CompileError> {
        match &e.kind {
            ExprKind::Call { callee, args, .. } => {
                if let Some(table) = self.applied_table(callee) {
                    if !first {
                        return Err(self.unsupported(
                            e.span,
                            "a table applied conditionally inside an expression",
                        ));
                    }
                    return self.apply_table(&table, e.span, true);
                }
                for a in args {
                    self.hoist(a, first)?;
                }
                Ok(())
            }
            ExprKind::Binary(BinaryOp::And | BinaryOp::Or, l, r) => {
                self.hoist(l, first)?;
                self.hoist(r, false)
            }
            ExprKind::Ternary(c, a, b) => {
                self.hoist(c, first)?;
                self.hoist(a, false)?;
                self.hoist(b, false)
            }
            ExprKind::Binary(_, l, r) => {
                self.hoist(l, first)?;
                self.hoist(r, first)
            }
            ExprKind::Member(b, _) | ExprKind::Unary(_, b) | ExprKind::Cast(_, b) => {
                self.hoist(b, first)
            }
            ExprKind::Slice { base, .. } => self.hoist(base, first),
            ExprKind::Index(b, i) => {
                self.hoist(b, first)?;
                self.hoist(i, first)
            }
            ExprKind::List(elements) => {
                for element in elements {
                    self.hoist(element, first)?;
                }
                Ok(())
            }
            ExprKind::Int { .. }
            | ExprKind::Bool(_)
            | ExprKind::Name(_)
            | ExprKind::ErrorMember(_) => Ok(()),
        }
    }

    /// The table `callee` applies, when it is `t.apply`.
    fn applied_table(&self, callee: &Expr) -> Option<String> {
        match &callee.kind {
            ExprKind::Member(object, method) if method.name == "apply" => {
                match self.checked.type_of(object) {
                    Some(Type::Table(t)) => Some(t.clone()),
                    _ => None,
                }
            }
            _ => None,
        }
    }

    /// The slot holding `t.apply().hit`, `.miss` or `.action_run` (the table applied already).
    pub fn apply_result(&self, e: &Expr) -> Result<Option<i16>, CompileError> {
        let ExprKind::Member(base, member) = &e.kind else {
            return Ok(None);
        };
        let ExprKind::Call { callee, .. } = &base.kind else {
            return Ok(None);
        };
        let Some(table) = self.applied_table(callee) else {
            return Ok(None);
        };
        let result = self.table_results.get(&table).ok_or_else(|| {
            self.unsupported(e.span, "a table result before the table is applied")
        })?;
        match member.name.as_str() {
            "hit" => Ok(Some(result.hit)),
            "miss" => Ok(Some(result.miss)),
            "action_run" => Ok(Some(result.action)),
            other => Err(self.unsupported(e.span, &format!("'.{other}' of a table result"))),
        }
    }

    fn switch(
        &mut self,
        subject: &'a Expr,
        cases: &'a [crate::ast::SwitchCase],
    ) -> Result<(), CompileError> {
        self.hoist(subject, true)?;
        let (table, slot) = match &subject.kind {
            ExprKind::Member(base, m) if m.name == "action_run" => match &base.kind {
                ExprKind::Call { callee, .. } => {
                    (self.applied_table(callee), self.apply_result(subject)?)
                }
                _ => (None, None),
            },
            _ => (None, None),
        };
        let (Some(table), Some(slot)) = (table, slot) else {
            return Err(self.unsupported(
                subject.span,
                "a switch on anything but t.apply().action_run",
            ));
        };
        let end = self.code.label();
        let bodies: Vec<_> = cases.iter().map(|_| self.code.label()).collect();
        // A case without a body falls through to the next case that has one.
        let body_of = |i: usize| (i..cases.len()).find(|&j| cases[j].body.is_some());
        self.emit(ldx(Size::Dw, 1, 10, slot));
        let mut default = None;
        for (i, case) in cases.iter().enumerate() {
            let target = body_of(i).map_or(end, |j| bodies[j]);
            match &case.label {
                Some(label) => {
                    let id = self.action_id(&table, &label.name).ok_or_else(|| {
                        self.unsupported(
                            label.span,
                            &format!("action '{}' of no table here", label.name),
                        )
                    })?;
                    self.code.branch_imm(Cond::Eq, 1, id, target);
                }
                None => default = Some(target),
            }
        }
        self.code.goto(default.unwrap_or(end));
        for (case, label) in cases.iter().zip(bodies) {
            if let Some(body) = &case.body {
                self.code.place(label);
                self.block(body)?;
                self.code.goto(end);
            }
        }
        self.code.place(end);
        Ok(())
    }

    fn call_stmt(&mut self, e: &'a Expr) -> Result<(), CompileError> {
        let ExprKind::Call { callee, args, .. } = &e.kind else {
            return Err(self.unsupported(e.span, "this expression as a statement"));
        };
        if let Some(table) = self.applied_table(callee) {
            return self.apply_table(&table, e.span, false);
        }
        match &callee.kind {
            ExprKind::Member(object, method) => {
                let ty = self.checked.type_of(object).cloned();
                match (ty, method.name.as_str()) {
                    (Some(Type::Header(_)), "isValid") => Ok(()),
                    (Some(Type::Header(_)), m @ ("setValid" | "setInvalid")) => {
                        // The fields keep what their slots hold (the interpreter's choice).
                        let valid = self.header_valid(object)?;
                        self.emit(st(Size::Dw, 10, valid, i32::from(m == "setValid")));
                        Ok(())
                    }
                    (Some(Type::Extern(name, _)), m) => match (name.as_str(), m) {
                        ("packet_in", "extract") => self.extract(e, args),
                        ("counter", "count") => self.count(object, args, e),
                        ("register", "read" | "write") => self.register(object, m, args, e),
                        _ => Err(self.unsupported(e.span, &format!("{name}.{m}()"))),
                    },
                    (_, m) => Err(self.unsupported(e.span, &format!("the method '{m}'"))),
                }
            }
            ExprKind::Name(name) => {
                if let Some(control) = self.control {
                    if let Some(action) = find_action(self.checked, control, &name.name) {
                        return self.call_action(action, args, e);
                    }
                }
                match (name.name.as_str(), args.as_slice()) {
                    ("mark_to_drop", [_]) => {
                        let slot = self.std_slot("drop")?;
                        self.emit(st(Size::Dw, 10, slot.off, 1));
                        Ok(())
                    }
                    ("verify", [check, _]) => {
                        let reject = self
                            .reject
                            .ok_or_else(|| self.unsupported(e.span, "verify outside the parser"))?;
                        self.hoist(check, true)?;
                        self.branch_if(check, false, reject, 0)?;
                        Ok(())
                    }
                    ("update_checksum", [condition, data, checksum]) => {
                        self.update_checksum(condition, data, checksum)
                    }
                    ("verify_checksum", [condition, data, checksum]) => {
                        let reject = self.reject.ok_or_else(|| {
                            self.unsupported(e.span, "verify_checksum outside the parser")
                        })?;
                        self.verify_checksum(condition, data, checksum, reject)
                    }
                    (other, _) => Err(self.unsupported(e.span, &format!("a call of '{other}'"))),
                }
            }
            _ => Err(self.unsupported(e.span, "this call")),
        }
    }

    pub fn std_slot(&self, field: &str) -> Result<Slot, CompileError> {
        self.frame
            .slots
            .get(&format!("std.{field}"))
            .copied()
            .ok_or_else(|| CompileError::Program(format!("no standard metadata field {field}")))
    }

    /// A call of an action from code: each argument computed into a fresh parameter slot.
    fn call_action(
        &mut self,
        action: &'a ActionDecl,
        args: &'a [Expr],
        e: &Expr,
    ) -> Result<(), CompileError> {
        let mut params = HashMap::new();
        for (param, arg) in action.params.iter().zip(args) {
            if matches!(param.direction, Some(Direction::Out | Direction::InOut)) {
                return Err(self.unsupported(param.name.span, "an out or inout action parameter"));
            }
            let width = self.var_width(&param.ty, param.name.span)?;
            let off = self.frame.alloc(8)?;
            self.hoist(arg, true)?;
            self.expr(arg, 0)?;
            self.emit(stx(Size::Dw, 10, off, 1));
            params.insert(param.name.name.clone(), Slot { off, width });
        }
        if params.len() != action.params.len() {
            return Err(self.unsupported(e.span, "an action call without all its arguments"));
        }
        self.inline_action(action, params)
    }

    /// The action's body with its parameters in `params`: it sees the control's state and
    /// locals, not the caller's; `return` leaves it.
    pub fn inline_action(
        &mut self,
        action: &'a ActionDecl,
        params: HashMap<String, Slot>,
    ) -> Result<(), CompileError> {
        self.depth += 1;
        if self.depth > 8 {
            return Err(self.unsupported(action.name.span, "actions calling actions this deep"));
        }
        let callers = self.scopes.split_off(self.scopes.len().min(1));
        self.scopes.push(params);
        let end = self.code.label();
        self.returns.push(end);
        let result = self.block(&action.body);
        self.returns.pop();
        self.code.place(end);
        self.scopes.truncate(1);
        self.scopes.extend(callers);
        self.depth -= 1;
        result
    }

    /// `r0 = &map[index]` or null, the index a `bit<32>` expression: `r1`/`r2` clobbered.
    fn lookup_index(
        &mut self,
        map: u32,
        index: &'a Expr,
        scratch: i16,
    ) -> Result<(), CompileError> {
        self.expr(index, 0)?;
        // An index of 2^32 or more is outside every array: keep it outside after truncation.
        self.emit(ld64(2, u64::from(u32::MAX)));
        self.emit(linerate_bpf::insn::build::jmp_reg(Cond::Le, 1, 2, 1));
        self.emit(mov64_reg(1, 2));
        self.emit(stx(Size::W, 10, scratch, 1));
        self.emit(ld_map(1, map));
        self.emit(mov64_reg(2, 10));
        self.emit(add64(2, i32::from(scratch)));
        self.emit(call_helper(MAP_LOOKUP_ELEM));
        Ok(())
    }

    fn count(&mut self, object: &Expr, args: &'a [Expr], e: &Expr) -> Result<(), CompileError> {
        let map = self.instance_map(object)?;
        let [index] = args else {
            return Err(self.unsupported(e.span, "count without one index"));
        };
        let scratch = self.scratch(8)?;
        self.lookup_index(map, index, scratch)?;
        let skip = self.code.label();
        self.code.branch_imm(Cond::Eq, 0, 0, skip);
        self.emit(mov64(1, 1));
        self.emit(atomic(Size::Dw, AtomicOp::Add, false, 0, 0, 1));
        self.emit(ldx(Size::Dw, 1, 10, self.frame.packet_len));
        self.emit(atomic(Size::Dw, AtomicOp::Add, false, 0, 8, 1));
        self.code.place(skip);
        Ok(())
    }

    fn register(
        &mut self,
        object: &Expr,
        method: &str,
        args: &'a [Expr],
        e: &Expr,
    ) -> Result<(), CompileError> {
        let map = self.instance_map(object)?;
        let scratch = self.scratch(8)?;
        let done = self.code.label();
        match (method, args) {
            ("read", [result, index]) => {
                let Place::Scalar(slot) = self.place(result)? else {
                    return Err(self.unsupported(result.span, "a register read into a header"));
                };
                self.lookup_index(map, index, scratch)?;
                self.emit(mov64(1, 0));
                let null = self.code.label();
                self.code.branch_imm(Cond::Eq, 0, 0, null);
                self.emit(ldx(Size::Dw, 1, 0, 0));
                self.code.place(null);
                self.mask_reg(1, slot.width, 2);
                self.emit(stx(Size::Dw, 10, slot.off, 1));
            }
            ("write", [index, value]) => {
                let value_slot = self.frame.alloc(8)?;
                self.expr(value, 0)?;
                self.emit(stx(Size::Dw, 10, value_slot, 1));
                self.lookup_index(map, index, scratch)?;
                self.code.branch_imm(Cond::Eq, 0, 0, done);
                self.emit(ldx(Size::Dw, 1, 10, value_slot));
                self.emit(stx(Size::Dw, 0, 0, 1));
            }
            _ => return Err(self.unsupported(e.span, "this register call")),
        }
        self.code.place(done);
        Ok(())
    }
}
