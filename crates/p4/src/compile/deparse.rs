//! The deparser: the headers `packet.emit` names, written in front of the unparsed payload.
//!
//! Two ways, chosen per program by [`uses_validity_changes`]:
//!
//! * **In place** (a program that never calls `setValid`/`setInvalid` nor assigns a whole
//!   header): the valid headers are the extracted ones, so emitting them rewrites the bytes they
//!   came from. Every extracted header must be emitted, in extraction order, and sit at one
//!   offset; of each valid one, the fields some statement may change (the plan's `changed`, see
//!   `liveness.rs`) are written back where they were read, in the windows `wide.rs` chooses; a
//!   header nothing changes costs nothing. No helper call, no length change: the cheapest code,
//!   which the grid and `bound` rely on.
//! * **Resizing** (a program that adds or removes headers): the parser records where the
//!   payload starts (`payload_at`, stored at each transition to `accept`); the deparser sums the
//!   sizes of the valid emitted headers, moves the packet's start by the difference with
//!   `bpf_xdp_adjust_head` (negative grows), reloads `data`/`data_end` (the helper invalidates
//!   every packet pointer) and writes each valid header after the previous one through a
//!   running pointer in `r9`, bounds-checked before each write as the verifier demands. A failed
//!   move (more than the headroom, or fewer than 14 bytes left) returns `XDP_DROP` with the
//!   packet untouched, as the interpreter says ([`crate::interp::MAX_GROWTH`]).

use super::asm::Label;
use super::expr::Place;
use super::storage::HeaderSlots;
use super::wide::store_windows;
use super::{CompileError, Gen};
use crate::ast::{Block, ExprKind, Stmt};
use linerate_bpf::facts::helper::XDP_ADJUST_HEAD;
use linerate_bpf::facts::xdp_md;
use linerate_bpf::insn::build::{add64, call_helper, jump, ldx, mov64_reg};
use linerate_bpf::insn::{Cond, Operand, Reg, Size};

/// The context register and the packet's bounds (as in `packet.rs`).
const CTX: Reg = 6;
const DATA: Reg = 7;
const DATA_END: Reg = 8;
/// The running output pointer of the resizing deparser (free: no expression runs there).
const CURSOR: Reg = 9;

/// Whether any parser state, action or apply block of the program calls `setValid` or
/// `setInvalid` or assigns a whole header (which copies validity): such a program may change
/// the packet's length and gets the resizing deparser.
pub(crate) fn uses_validity_changes(checked: &crate::Checked) -> bool {
    use crate::ast::{Decl, Local};
    let block = |b: &Block| stmts_change_validity(checked, &b.stmts);
    checked.program.decls.iter().any(|decl| match decl {
        Decl::Parser(p) => p
            .states
            .iter()
            .any(|s| stmts_change_validity(checked, &s.body)),
        Decl::Control(c) => {
            block(&c.apply)
                || c.locals.iter().any(|l| match l {
                    Local::Action(a) => block(&a.body),
                    _ => false,
                })
        }
        Decl::Action(a) => block(&a.body),
        _ => false,
    })
}

fn stmts_change_validity(checked: &crate::Checked, stmts: &[Stmt]) -> bool {
    let block = |b: &Block| stmts_change_validity(checked, &b.stmts);
    stmts.iter().any(|stmt| match stmt {
        Stmt::Call(e) => matches!(
            &e.kind,
            ExprKind::Call { callee, .. }
                if matches!(&callee.kind, ExprKind::Member(_, m) if m.name == "setValid" || m.name == "setInvalid")
        ),
        Stmt::Assign { lhs, .. } => {
            matches!(checked.type_of(lhs), Some(crate::check::types::Type::Header(_)))
        }
        Stmt::If {
            then, otherwise, ..
        } => block(then) || otherwise.as_ref().is_some_and(block),
        Stmt::Switch { cases, .. } => cases.iter().any(|c| c.body.as_ref().is_some_and(block)),
        Stmt::Block(b) => block(b),
        _ => false,
    })
}

impl<'a> Gen<'a> {
    /// The deparser; `drop` is where a failed `bpf_xdp_adjust_head` goes (`XDP_DROP`, packet
    /// untouched).
    pub(super) fn deparser(
        &mut self,
        deparser: &'a crate::ast::ControlDecl,
        drop: Label,
    ) -> Result<(), CompileError> {
        let emitted = self.emitted(deparser)?;
        match self.payload_at {
            Some(payload_at) => self.deparse_resizing(&emitted, payload_at, drop),
            None => self.deparse_in_place(&emitted),
        }
    }

    /// The header paths the deparser emits, in order.
    fn emitted(&self, deparser: &'a crate::ast::ControlDecl) -> Result<Vec<String>, CompileError> {
        let mut emitted: Vec<String> = Vec::new();
        for stmt in &deparser.apply.stmts {
            let Stmt::Call(call) = stmt else {
                return Err(self.deparser_refusal(stmt));
            };
            let ExprKind::Call { callee, args, .. } = &call.kind else {
                return Err(self.unsupported(call.span, "this deparser statement"));
            };
            let is_emit = matches!(&callee.kind, ExprKind::Member(_, m) if m.name == "emit");
            let [arg] = args.as_slice() else {
                return Err(self.unsupported(call.span, "this deparser call"));
            };
            if !is_emit {
                return Err(self.unsupported(call.span, "a deparser call other than emit"));
            }
            let path = match self.place(arg) {
                Ok(Place::Header(p)) => vec![p],
                _ => {
                    let prefix = match &arg.kind {
                        ExprKind::Name(n) => self.params.get(&n.name).cloned(),
                        _ => None,
                    }
                    .ok_or_else(|| self.unsupported(arg.span, "emit of this value"))?;
                    self.frame
                        .headers
                        .iter()
                        .filter(|h| h.path.starts_with(&format!("{prefix}.")))
                        .map(|h| h.path.clone())
                        .collect()
                }
            };
            emitted.extend(path);
        }
        Ok(emitted)
    }

    /// Each extracted header must be among the emitted ones, in extraction order, so that
    /// writing them back in place is what emitting them does.
    fn deparse_in_place(&mut self, emitted: &[String]) -> Result<(), CompileError> {
        let mut extracted: Vec<(u32, String)> = self
            .extracted_at
            .iter()
            .map(|(p, a)| (*a, p.clone()))
            .collect();
        extracted.sort();
        let mut position = 0usize;
        for (at, path) in &extracted {
            let Some(found) = emitted.iter().position(|p| p == path) else {
                return Err(CompileError::Program(format!(
                    "the deparser does not emit {path}, which the parser extracts (a program that removes headers calls setInvalid)"
                )));
            };
            if found < position {
                return Err(CompileError::Program(format!(
                    "the deparser emits {path} (extracted at byte {at}) out of the parser's order"
                )));
            }
            position = found;
        }
        for (at, path) in extracted {
            let Some(header) = self.frame.header(&path).cloned() else {
                continue;
            };
            // Only what the program may have changed: the other bytes still hold what the
            // parser read from them.
            let windows = store_windows(&header, self.plan.as_ref().map(|p| &p.changed));
            if windows.is_empty() {
                continue;
            }
            let skip = self.code.label();
            self.emit(ldx(Size::Dw, 1, 10, header.valid));
            self.code.branch_imm(Cond::Eq, 1, 0, skip);
            self.emit(mov64_reg(1, DATA));
            self.emit(add64(
                1,
                i32::try_from(at + header.bytes).unwrap_or(i32::MAX),
            ));
            self.code.branch_reg(Cond::Gt, 1, DATA_END, skip);
            self.store_fields(DATA, at, &header, &windows)?;
            self.code.place(skip);
        }
        Ok(())
    }

    /// Moves the packet's start so that the valid emitted headers fit exactly in front of the
    /// payload, then writes them one after another.
    fn deparse_resizing(
        &mut self,
        emitted: &[String],
        payload_at: i16,
        drop: Label,
    ) -> Result<(), CompileError> {
        let headers: Vec<HeaderSlots> = emitted
            .iter()
            .filter_map(|p| self.frame.header(p).cloned())
            .collect();
        // r2 = payload offset - bytes of the valid emitted headers: the move.
        self.emit(ldx(Size::Dw, 2, 10, payload_at));
        for header in &headers {
            self.emit(ldx(Size::Dw, 1, 10, header.valid));
            self.emit(jump(true, Cond::Eq, 1, Operand::Imm(0), 1));
            self.emit(add64(
                2,
                -i32::try_from(header.bytes)
                    .map_err(|_| CompileError::Program("a header beyond 2 GiB".into()))?,
            ));
        }
        let unmoved = self.code.label();
        self.code.branch_imm(Cond::Eq, 2, 0, unmoved);
        self.emit(mov64_reg(1, CTX));
        self.emit(call_helper(XDP_ADJUST_HEAD));
        self.code.branch_imm(Cond::Ne, 0, 0, drop);
        self.emit(ldx(Size::W, DATA, CTX, xdp_md::DATA as i16));
        self.emit(ldx(Size::W, DATA_END, CTX, xdp_md::DATA_END as i16));
        self.code.place(unmoved);
        self.emit(mov64_reg(CURSOR, DATA));
        for header in &headers {
            let skip = self.code.label();
            self.emit(ldx(Size::Dw, 1, 10, header.valid));
            self.code.branch_imm(Cond::Eq, 1, 0, skip);
            self.emit(mov64_reg(1, CURSOR));
            self.emit(add64(1, i32::try_from(header.bytes).unwrap_or(i32::MAX)));
            // Never taken (the move made room for exactly these bytes); the verifier needs it.
            self.code.branch_reg(Cond::Gt, 1, DATA_END, drop);
            self.store_fields(CURSOR, 0, header, &store_windows(header, None))?;
            self.emit(add64(
                CURSOR,
                i32::try_from(header.bytes).unwrap_or(i32::MAX),
            ));
            self.code.place(skip);
        }
        Ok(())
    }

    fn deparser_refusal(&self, stmt: &Stmt) -> CompileError {
        let span = match stmt {
            Stmt::Assign { lhs, .. } => lhs.span,
            Stmt::If { cond, .. } => cond.span,
            Stmt::Switch { subject, .. } => subject.span,
            Stmt::Block(b) => b.span,
            Stmt::Var(v) => v.name.span,
            Stmt::Const(c) => c.name.span,
            Stmt::Return(s) | Stmt::Exit(s) => *s,
            Stmt::Call(e) => e.span,
        };
        self.unsupported(span, "a deparser statement other than packet.emit()")
    }
}
