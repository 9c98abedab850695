//! The packet side: the prologue, the parser (states generated per offset, extracts at constant
//! offsets after bounds checks), the ingress control's frame and the outcome → XDP action rule
//! of `crates/p4/arch/xdp.p4` (the deparser is `deparse.rs`).

use super::asm::{Assembly, Label};
use super::expr::{mask, Place};
use super::{CompileError, Gen, MAX_PARSER_INSTANCES};
use crate::ast::{Expr, ExprKind, Keyset, Local, ParserDecl, Stmt, Transition};
use linerate_bpf::facts::helper::REDIRECT;
use linerate_bpf::facts::{xdp, xdp_md};
use linerate_bpf::insn::build::{
    add64, alu64_reg, call_helper, exit, ldx, mov64, mov64_reg, st, stx,
};
use linerate_bpf::insn::{AluOp, Cond, Size};
use std::collections::{HashMap, HashSet};

/// The context register and the packet's bounds (callee-saved, so helpers keep them).
const CTX: u8 = 6;
pub(crate) const DATA: u8 = 7;
const DATA_END: u8 = 8;

fn offset(value: i64) -> Result<i16, CompileError> {
    i16::try_from(value).map_err(|_| CompileError::Program("a packet offset beyond 32 KiB".into()))
}

impl<'a> Gen<'a> {
    /// Saves the context and reads the packet bounds and ingress port (the slots that must
    /// start at zero are zeroed in front of it: see `liveness.rs`).
    pub fn prologue(&self, loaded: &HashSet<i16>) -> Assembly {
        let mut code = Assembly::default();
        code.emit(mov64_reg(CTX, 1));
        code.emit(ldx(Size::W, DATA, CTX, xdp_md::DATA as i16));
        code.emit(ldx(Size::W, DATA_END, CTX, xdp_md::DATA_END as i16));
        if loaded.contains(&self.frame.packet_len) {
            code.emit(mov64_reg(1, DATA_END));
            code.emit(alu64_reg(AluOp::Sub, 1, DATA));
            code.emit(stx(Size::Dw, 10, self.frame.packet_len, 1));
        }
        let port = self.frame.slots.get("std.ingress_port");
        if let Some(port) = port.filter(|p| loaded.contains(&p.off)) {
            code.emit(ldx(Size::W, 1, CTX, xdp_md::INGRESS_IFINDEX as i16));
            code.emit(stx(Size::Dw, 10, port.off, 1));
        }
        code
    }

    /// The whole pipeline after the prologue.
    pub fn program(&mut self) -> Result<Assembly, CompileError> {
        let checked = self.checked;
        let parser = checked
            .parser()
            .ok_or_else(|| CompileError::Program("the pipeline has no parser".into()))?;
        let ingress = checked
            .ingress()
            .ok_or_else(|| CompileError::Program("the pipeline has no ingress control".into()))?;
        let deparser = checked
            .deparser()
            .ok_or_else(|| CompileError::Program("the pipeline has no deparser".into()))?;

        let reject = self.code.label();
        self.parser(parser, reject)?;

        // Ingress: parameters (hdr, meta, std), the control's locals, its maps, its apply block.
        self.bind_params(&ingress.params, &[(0, "hdr"), (1, "meta"), (2, "std")]);
        self.control = Some(ingress);
        self.scopes = vec![HashMap::new()];
        self.declare_maps(ingress)?;
        for local in &ingress.locals {
            match local {
                Local::Var(v) => self.stmt_owned(Stmt::Var(v.clone()))?,
                Local::Const(c) => self.stmt_owned(Stmt::Const(c.clone()))?,
                _ => {}
            }
        }
        let end = self.code.label();
        self.exit = Some(end);
        self.returns = vec![end];
        self.block(&ingress.apply)?;
        self.code.place(end);
        self.control = None;

        self.bind_params(&deparser.params, &[(1, "hdr")]);
        self.deparser_start = self.code.len();
        self.deparser(deparser, reject)?;
        self.outcome(reject);

        self.code.place(reject);
        self.emit(mov64(0, xdp::XDP_DROP as i32));
        self.emit(exit());
        Ok(std::mem::take(&mut self.code))
    }

    /// Declares a block-level variable or constant (of a parser or control); its initialiser
    /// must be a constant.
    fn stmt_owned(&mut self, stmt: Stmt) -> Result<(), CompileError> {
        let (name, ty, init) = match &stmt {
            Stmt::Var(v) => (v.name.clone(), v.ty.clone(), v.init.clone()),
            Stmt::Const(c) => (c.name.clone(), c.ty.clone(), Some(c.value.clone())),
            _ => return Ok(()),
        };
        let width = crate::interp::resolve_type(&self.checked.types, &ty)
            .and_then(|t| super::storage::scalar_width(&self.checked.types, &t))
            .ok_or_else(|| self.unsupported(name.span, "a variable of this type"))?;
        let off = self.frame.alloc(8)?;
        if let Some(init) = init {
            if self.checked.constant(&init).is_none() {
                return Err(
                    self.unsupported(init.span, "a control variable initialised at run time")
                );
            }
            let value = self.checked.constant(&init).unwrap_or(0) as u64 & mask(width);
            self.load_const(1, value);
            self.emit(stx(Size::Dw, 10, off, 1));
        }
        if let Some(scope) = self.scopes.first_mut() {
            scope.insert(name.name, super::storage::Slot { off, width });
        }
        Ok(())
    }

    fn bind_params(&mut self, params: &[crate::ast::Param], roots: &[(usize, &str)]) {
        self.params.clear();
        for (index, root) in roots {
            if let Some(p) = params.get(*index) {
                self.params.insert(p.name.name.clone(), root.to_string());
            }
        }
    }

    fn parser(&mut self, parser: &'a ParserDecl, reject: Label) -> Result<(), CompileError> {
        self.bind_params(&parser.params, &[(1, "hdr"), (2, "meta"), (3, "std")]);
        self.scopes = vec![HashMap::new()];
        self.reject = Some(reject);
        for local in &parser.locals {
            match local {
                Local::Var(v) => self.stmt_owned(Stmt::Var(v.clone()))?,
                Local::Const(c) => self.stmt_owned(Stmt::Const(c.clone()))?,
                Local::Instance(i) => {
                    return Err(self.unsupported(i.name.span, "an extern instance in a parser"))
                }
                _ => {}
            }
        }
        let accept = self.code.label();
        let mut labels: HashMap<InstanceKey, Label> = HashMap::new();
        let mut work: Vec<InstanceKey> = Vec::new();
        let start = instance(self, &mut labels, &mut work, (accept, reject), "start", 0)?;
        self.code.goto(start);
        while let Some(key) = work.pop() {
            let Some(label) = labels.get(&key).copied() else {
                continue;
            };
            let (name, at, stacks) = key;
            self.stack_next = stacks.into_iter().collect();
            self.rejected = false;
            self.code.place(label);
            if let (true, Some(payload_at)) = (name == "accept", self.payload_at) {
                // The payload starts where this path accepted: the resizing deparser's input.
                self.emit(st(
                    Size::Dw,
                    10,
                    payload_at,
                    i32::from(offset(i64::from(at))?),
                ));
                self.code.goto(accept);
                continue;
            }
            let Some(state) = parser.state(&name) else {
                // An unknown state rejects (the interpreter's NoMatch).
                self.code.goto(reject);
                continue;
            };
            self.cursor = at;
            self.scopes.truncate(1);
            self.scopes.push(HashMap::new());
            self.check_state_length(&state.body, reject);
            for stmt in &state.body {
                self.stmt(stmt)?;
            }
            let after = self.cursor;
            if self.rejected {
                continue;
            }
            match &state.transition {
                Transition::Direct(next) => {
                    let target = instance(
                        self,
                        &mut labels,
                        &mut work,
                        (accept, reject),
                        &next.name,
                        after,
                    )?;
                    self.code.goto(target);
                }
                Transition::Select { exprs, cases, .. } => {
                    for case in cases {
                        let next_case = self.code.label();
                        let lone_default = matches!(case.keysets.as_slice(), [Keyset::Default(_)]);
                        if !lone_default {
                            for (keyset, selector) in case.keysets.iter().zip(exprs) {
                                self.keyset(keyset, selector, next_case)?;
                            }
                        }
                        let target = instance(
                            self,
                            &mut labels,
                            &mut work,
                            (accept, reject),
                            &case.next.name,
                            after,
                        )?;
                        self.code.goto(target);
                        self.code.place(next_case);
                    }
                    self.code.goto(reject);
                }
            }
        }
        self.code.place(accept);
        self.reject = None;
        self.stack_next.clear();
        Ok(())
    }

    /// Jumps to `mismatch` unless the selector is in the keyset.
    fn keyset(
        &mut self,
        keyset: &'a Keyset,
        selector: &'a Expr,
        mismatch: Label,
    ) -> Result<(), CompileError> {
        match keyset {
            Keyset::Default(_) => {}
            Keyset::Value(v) => {
                self.expr(selector, 0)?;
                let width = self.width(selector)?;
                let small = self
                    .checked
                    .constant(v)
                    .and_then(|c| i32::try_from(c as u64 & mask(width)).ok());
                if let Some(value) = small {
                    self.code.branch_imm(Cond::Ne, 1, value, mismatch);
                    return Ok(());
                }
                self.expr(v, 1)?;
                let width = self.width(selector)?;
                self.mask_reg(2, width, 3);
                self.code.branch_reg(Cond::Ne, 1, 2, mismatch);
            }
            Keyset::Mask(v, m) => {
                self.expr(selector, 0)?;
                self.expr(v, 1)?;
                self.expr(m, 2)?;
                self.emit(alu64_reg(AluOp::And, 1, 3));
                self.emit(alu64_reg(AluOp::And, 2, 3));
                self.code.branch_reg(Cond::Ne, 1, 2, mismatch);
            }
            Keyset::Range(lo, hi) => {
                self.expr(selector, 0)?;
                self.expr(lo, 1)?;
                self.expr(hi, 2)?;
                self.code.branch_reg(Cond::Lt, 1, 2, mismatch);
                self.code.branch_reg(Cond::Gt, 1, 3, mismatch);
            }
        }
        Ok(())
    }

    /// `packet.extract(h)` at the parser's constant offset.
    pub fn extract(&mut self, e: &Expr, args: &'a [Expr]) -> Result<(), CompileError> {
        let reject = self
            .reject
            .ok_or_else(|| self.unsupported(e.span, "extract outside the parser"))?;
        let [target] = args else {
            return Err(self.unsupported(e.span, "extract with other than one argument"));
        };
        let stack = match &target.kind {
            ExprKind::Member(base, m) if m.name == "next" => self
                .path(base)
                .filter(|p| self.frame.stacks.contains_key(p)),
            _ => None,
        };
        if let Some(stack) = &stack {
            let next = *self.stack_next.get(stack).unwrap_or(&0);
            if next >= *self.frame.stacks.get(stack).unwrap_or(&0) {
                // StackOutOfBounds: the interpreter rejects.
                self.code.goto(reject);
                self.rejected = true;
                return Ok(());
            }
        }
        let Place::Header(path) = self.place(target)? else {
            return Err(self.unsupported(target.span, "extract into a non-header"));
        };
        let header = self
            .frame
            .header(&path)
            .cloned()
            .ok_or_else(|| self.unsupported(target.span, "this header"))?;
        let at = self.cursor;
        match self.extracted_at.get(&path) {
            // Only writing back in place needs one offset per header.
            Some(other) if *other != at && self.payload_at.is_none() => {
                return Err(self.unsupported(
                    target.span,
                    &format!("{path} extracted at byte {at} and at byte {other} (each header must sit at one offset)"),
                ))
            }
            _ => {
                self.extracted_at.insert(path.clone(), at);
            }
        }
        let end = at.saturating_add(header.bytes);
        if end > self.checked_to {
            self.length_check(end, reject);
        }
        // A field no 8-byte load covers (64 bits not on a byte boundary) is refused.
        if header.fields.iter().any(|(start, slot)| {
            let (a, b) = super::wide::field_bytes(*start, slot.width);
            b - a > 8
        }) {
            return Err(self.unsupported(target.span, "a 64-bit field not on a byte boundary"));
        }
        let from = self.code.len();
        let live = self.plan.as_ref().map(|p| p.live.clone());
        self.extract_fields(at, &header, |slot| {
            live.as_ref().is_none_or(|l| l.contains(&slot))
        })?;
        self.emit(st(Size::Dw, 10, header.valid, 1));
        self.extract_stores.push(from..self.code.len());
        self.cursor = end;
        if let Some(stack) = stack {
            *self.stack_next.entry(stack).or_insert(0) += 1;
        }
        Ok(())
    }

    /// `data + end > data_end` → reject.
    fn length_check(&mut self, end: u32, reject: Label) {
        self.emit(mov64_reg(1, DATA));
        self.emit(add64(1, i32::try_from(end).unwrap_or(i32::MAX)));
        self.code.branch_reg(Cond::Gt, 1, DATA_END, reject);
    }

    /// One length check for every header a state's body extracts: a short packet rejects
    /// whichever extract finds it short, and a rejected packet leaves the parser unchanged
    /// (nothing a state does before rejecting is seen), so the first check can cover them all.
    fn check_state_length(&mut self, body: &'a [Stmt], reject: Label) {
        let mut end = self.cursor;
        for stmt in body {
            let Stmt::Call(call) = stmt else { continue };
            let ExprKind::Call { callee, args, .. } = &call.kind else {
                continue;
            };
            let is_extract = matches!(&callee.kind, ExprKind::Member(_, m) if m.name == "extract");
            let bytes = match (is_extract, args.as_slice()) {
                (true, [target]) => match self.checked.type_of(target) {
                    Some(crate::check::types::Type::Header(name)) => self
                        .checked
                        .types
                        .headers
                        .get(name)
                        .map_or(0, |h| h.width_bits / 8),
                    _ => 0,
                },
                _ => 0,
            };
            end = end.saturating_add(bytes);
        }
        self.checked_to = self.cursor;
        if end > self.cursor {
            self.length_check(end, reject);
            self.checked_to = end;
        }
    }

    /// `drop` → DROP (the code at `dropped` returns it); no egress port → PASS; the ingress
    /// port → TX; else redirect.
    fn outcome(&mut self, dropped: Label) {
        let (Some(drop), Some(egress)) = (
            self.frame.slots.get("std.drop").copied(),
            self.frame.slots.get("std.egress_port").copied(),
        ) else {
            return;
        };
        let (pass, tx) = (self.code.label(), self.code.label());
        self.emit(ldx(Size::Dw, 1, 10, drop.off));
        self.code.branch_imm(Cond::Ne, 1, 0, dropped);
        self.emit(ldx(Size::Dw, 1, 10, egress.off));
        self.code.branch_imm(Cond::Eq, 1, 0, pass);
        self.emit(ldx(Size::W, 2, CTX, xdp_md::INGRESS_IFINDEX as i16));
        self.code.branch_reg(Cond::Eq, 1, 2, tx);
        self.emit(mov64(2, 0));
        self.emit(call_helper(REDIRECT));
        self.emit(exit());
        for (label, action) in [(pass, xdp::XDP_PASS), (tx, xdp::XDP_TX)] {
            self.code.place(label);
            self.emit(mov64(0, action as i32));
            self.emit(exit());
        }
    }
}

/// A parser state as generated: its name, the byte it starts at and how many elements of each
/// header stack the path to it extracted.
type InstanceKey = (String, u32, Vec<(String, u32)>);

/// The label of state `name` entered at byte `at` (with the current stack counts), queued for generation the first time.
fn instance(
    gen: &mut Gen,
    labels: &mut HashMap<InstanceKey, Label>,
    work: &mut Vec<InstanceKey>,
    (accept, reject): (Label, Label),
    name: &str,
    at: u32,
) -> Result<Label, CompileError> {
    match name {
        "accept" if gen.payload_at.is_none() => return Ok(accept),
        "reject" => return Ok(reject),
        _ => {}
    }
    let mut stacks: Vec<(String, u32)> = gen
        .stack_next
        .iter()
        .map(|(k, v)| (k.clone(), *v))
        .collect();
    stacks.sort();
    let key = (name.to_string(), at, stacks);
    if let Some(l) = labels.get(&key) {
        return Ok(*l);
    }
    if labels.len() >= MAX_PARSER_INSTANCES {
        return Err(CompileError::Program(format!(
            "the parser reaches more than {MAX_PARSER_INSTANCES} (state, offset) pairs: parser loops are not compiled"
        )));
    }
    let l = gen.code.label();
    labels.insert(key.clone(), l);
    work.push(key);
    Ok(l)
}
