//! Paper 001's parameters of a checked program (§V): what its latency model reads.
//!
//! - **α, parsed headers**: headers extracted along each path of the parser from `start` to
//!   `accept` or `reject` (every `select` case is a way on). A state that extracts into a header
//!   stack's `next` may recur as many times as the stack has elements (one more extraction would
//!   reject); any other state already on the path ends it (`loop`). The model takes the worst
//!   path; every path is listed.
//! - **β, modified headers**: header instances the ingress control writes (a field assignment, or
//!   `setValid`/`setInvalid`). A modification is *explicit* when the control's `apply` does it,
//!   itself or through an action it calls directly, and *implicit* when it is in an action only
//!   a table runs (§V-C: the two cost differently). A header modified both ways counts as
//!   explicit; the program's actions are explicit if any modification is.
//! - **γ, added tables**: the tables the ingress control applies, less the one forwarding table
//!   every pipeline of the paper has.
//! - Operation counts (arithmetic, and binary i.e. bitwise) in the ingress control, which §V-A/B
//!   found not to matter, reported for completeness. A checksum (`update_checksum`) is neither:
//!   it counts no operation of its own (the paper's grid has none to calibrate one against),
//!   only the operators written inside its data list; the field it writes is a modification
//!   (β) like an assignment.
//!
//! Metadata (user and standard) is not a header: writing it modifies nothing here.

use std::collections::{BTreeMap, BTreeSet};

use serde::Serialize;

use crate::ast::{
    ActionDecl, Block, ControlDecl, Decl, Expr, ExprKind, OpClass, ParserDecl, Stmt, Transition,
    UnaryOp,
};
use crate::latency::{Actions, Params};
use crate::{Checked, Type};

/// Paths longer than this many are not enumerated further (α is then over the first ones).
const MAX_PATHS: usize = 4096;

/// One path of the parser.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct ParserPath {
    /// States in order, from `start`.
    pub states: Vec<String>,
    /// Header instances extracted, in order (`hdr.ipv4`).
    pub headers: Vec<String>,
    /// How it ends: `accept`, `reject`, or `loop` (a state already on the path).
    pub end: String,
}

/// A modified header instance and how.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct ModifiedHeader {
    pub header: String,
    pub actions: Actions,
}

/// Operations in the ingress control.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Operations {
    pub arithmetic: u32,
    pub binary: u32,
}

/// The parameters of a program and where they come from.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Analysis {
    pub alpha: u32,
    pub beta: u32,
    pub gamma: u32,
    pub actions: Actions,
    /// Every parser path (the first [`MAX_PATHS`]).
    pub paths: Vec<ParserPath>,
    pub modified: Vec<ModifiedHeader>,
    /// Tables the ingress control applies, in the order of their first `apply`.
    pub tables: Vec<String>,
    pub operations: Operations,
}

impl Analysis {
    /// What the latency model reads.
    pub fn params(&self) -> Params {
        Params {
            alpha: self.alpha,
            beta: self.beta,
            gamma: self.gamma,
            actions: self.actions,
        }
    }

    /// The path α comes from (the first with the most headers).
    pub fn worst_path(&self) -> Option<&ParserPath> {
        self.paths.iter().rev().max_by_key(|p| p.headers.len())
    }
}

/// The parameters of `checked`.
pub fn analyze(checked: &Checked) -> Analysis {
    let paths = checked
        .parser()
        .map_or_else(Vec::new, |p| parser_paths(checked, p));
    let alpha = paths
        .iter()
        .map(|p| p.headers.len() as u32)
        .max()
        .unwrap_or(0);
    let ingress = checked.ingress();
    let mut walk = Walk {
        checked,
        control: ingress,
        modified: BTreeMap::new(),
        tables: Vec::new(),
        visited_actions: BTreeSet::new(),
    };
    if let Some(control) = ingress {
        walk.block(&control.apply, Actions::Explicit);
    }
    let modified: Vec<ModifiedHeader> = walk
        .modified
        .into_iter()
        .map(|(header, actions)| ModifiedHeader { header, actions })
        .collect();
    let actions = if modified.iter().any(|m| m.actions == Actions::Explicit) {
        Actions::Explicit
    } else {
        Actions::Implicit
    };
    Analysis {
        alpha,
        beta: modified.len() as u32,
        gamma: (walk.tables.len() as u32).saturating_sub(1),
        actions,
        paths,
        modified,
        tables: walk.tables,
        operations: ingress.map_or_else(Operations::default, operations),
    }
}

/// The arithmetic and binary operations written in a control's `apply` and actions, each once.
fn operations(control: &ControlDecl) -> Operations {
    let mut ops = Operations::default();
    let mut exprs: Vec<&Expr> = Vec::new();
    let blocks = std::iter::once(&control.apply).chain(control.actions().map(|a| &a.body));
    for block in blocks {
        block_exprs(block, &mut exprs);
    }
    while let Some(e) = exprs.pop() {
        match &e.kind {
            ExprKind::Binary(op, ..) => match op.class() {
                OpClass::Arithmetic => ops.arithmetic += 1,
                OpClass::Bitwise => ops.binary += 1,
                OpClass::Comparison | OpClass::Logical => {}
            },
            ExprKind::Unary(UnaryOp::Complement, _) => ops.binary += 1,
            ExprKind::Unary(UnaryOp::Negate, _) => ops.arithmetic += 1,
            _ => {}
        }
        exprs.extend(operands(e));
    }
    ops
}

/// The direct subexpressions of `e` (a call's callee and arguments).
fn operands(e: &Expr) -> Vec<&Expr> {
    match &e.kind {
        ExprKind::Binary(_, a, b) | ExprKind::Index(a, b) => vec![a, b],
        ExprKind::Ternary(c, a, b) => vec![c, a, b],
        ExprKind::Unary(_, a) | ExprKind::Cast(_, a) | ExprKind::Member(a, _) => vec![a],
        ExprKind::Slice { base, .. } => vec![base],
        ExprKind::Call { callee, args, .. } => {
            std::iter::once(callee.as_ref()).chain(args).collect()
        }
        ExprKind::List(elements) => elements.iter().collect(),
        ExprKind::Int { .. } | ExprKind::Bool(_) | ExprKind::Name(_) | ExprKind::ErrorMember(_) => {
            Vec::new()
        }
    }
}

/// The expressions directly in a statement, and the blocks nested in it.
fn parts(stmt: &Stmt) -> (Vec<&Expr>, Vec<&Block>) {
    match stmt {
        Stmt::Assign { lhs, rhs } => (vec![lhs, rhs], Vec::new()),
        Stmt::Call(e) => (vec![e], Vec::new()),
        Stmt::If {
            cond,
            then,
            otherwise,
        } => (vec![cond], std::iter::once(then).chain(otherwise).collect()),
        Stmt::Switch { subject, cases } => (
            vec![subject],
            cases.iter().filter_map(|c| c.body.as_ref()).collect(),
        ),
        Stmt::Block(b) => (Vec::new(), vec![b]),
        Stmt::Var(v) => (v.init.iter().collect(), Vec::new()),
        Stmt::Const(_) | Stmt::Return(_) | Stmt::Exit(_) => (Vec::new(), Vec::new()),
    }
}

/// The expressions of a block's statements, nested blocks included.
fn block_exprs<'a>(block: &'a Block, out: &mut Vec<&'a Expr>) {
    for s in &block.stmts {
        let (exprs, blocks) = parts(s);
        out.extend(exprs);
        for b in blocks {
            block_exprs(b, out);
        }
    }
}

/// The text of an lvalue-like expression (`hdr.vlan[1]`), `?` for parts that are not names.
pub fn expr_text(checked: &Checked, e: &Expr) -> String {
    match &e.kind {
        ExprKind::Name(id) => id.name.clone(),
        ExprKind::Member(base, m) => format!("{}.{}", expr_text(checked, base), m.name),
        ExprKind::Index(base, i) => match checked.constant(i) {
            Some(k) => format!("{}[{k}]", expr_text(checked, base)),
            None => format!("{}[?]", expr_text(checked, base)),
        },
        _ => "?".to_string(),
    }
}

/// The header instance an lvalue writes into, if it writes into one: the longest prefix of the
/// member chain whose type is a header (a stack's `next`/`last` or index counts as its element).
fn header_of(checked: &Checked, e: &Expr) -> Option<String> {
    if matches!(checked.type_of(e), Some(Type::Header(_))) {
        return Some(expr_text(checked, e));
    }
    match &e.kind {
        ExprKind::Member(base, _) | ExprKind::Index(base, _) => header_of(checked, base),
        ExprKind::Slice { base, .. } => header_of(checked, base),
        _ => None,
    }
}

/// The method call `base.method(args)` an expression is, if it is one.
fn method_call(e: &Expr) -> Option<(&Expr, &str, &[Expr])> {
    let ExprKind::Call { callee, args, .. } = &e.kind else {
        return None;
    };
    let ExprKind::Member(base, method) = &callee.kind else {
        return None;
    };
    Some((base, method.name.as_str(), args))
}

/// How many times a parser state may appear on one path: the size of the largest header stack
/// it extracts the `next` element of, or once.
fn visits_allowed(checked: &Checked, state: &crate::ast::ParserState) -> usize {
    let mut allowed = 1;
    for stmt in &state.body {
        let Stmt::Call(call) = stmt else { continue };
        let Some((_, "extract", args)) = method_call(call) else {
            continue;
        };
        if let Some(ExprKind::Member(stack, m)) = args.first().map(|a| &a.kind) {
            if let (Some(Type::Stack(_, n)), "next") = (checked.type_of(stack), m.name.as_str()) {
                allowed = allowed.max(*n as usize);
            }
        }
    }
    allowed
}

/// Every path of the parser from `start`.
fn parser_paths(checked: &Checked, parser: &ParserDecl) -> Vec<ParserPath> {
    let mut out = Vec::new();
    let mut stack: Vec<(String, Vec<String>, Vec<String>)> =
        vec![("start".to_string(), Vec::new(), Vec::new())];
    while let Some((state, mut states, mut headers)) = stack.pop() {
        if out.len() >= MAX_PATHS {
            break;
        }
        if state == "accept" || state == "reject" {
            out.push(ParserPath {
                states,
                headers,
                end: state,
            });
            continue;
        }
        let Some(s) = parser.state(&state) else {
            continue;
        };
        if states.iter().filter(|&t| *t == state).count() >= visits_allowed(checked, s) {
            out.push(ParserPath {
                states,
                headers,
                end: "loop".to_string(),
            });
            continue;
        }
        states.push(state);
        for stmt in &s.body {
            if let Stmt::Call(call) = stmt {
                if let Some((_, "extract", args)) = method_call(call) {
                    if let Some(h) = args.first() {
                        headers.push(expr_text(checked, h));
                    }
                }
            }
        }
        let mut next: Vec<String> = match &s.transition {
            Transition::Direct(id) => vec![id.name.clone()],
            Transition::Select { cases, .. } => cases.iter().map(|c| c.next.name.clone()).collect(),
        };
        let mut seen = BTreeSet::new();
        next.retain(|n| seen.insert(n.clone()));
        // Reversed so that paths come out in case order.
        for n in next.into_iter().rev() {
            stack.push((n, states.clone(), headers.clone()));
        }
    }
    out
}

/// A walk over the ingress control's statements.
struct Walk<'a> {
    checked: &'a Checked,
    control: Option<&'a ControlDecl>,
    modified: BTreeMap<String, Actions>,
    tables: Vec<String>,
    /// Actions already walked, with how (an action run both ways is walked both ways).
    visited_actions: BTreeSet<(String, Actions)>,
}

impl<'a> Walk<'a> {
    fn modifies(&mut self, header: String, how: Actions) {
        let entry = self.modified.entry(header).or_insert(how);
        if how == Actions::Explicit {
            *entry = Actions::Explicit;
        }
    }

    fn block(&mut self, block: &'a Block, how: Actions) {
        for s in &block.stmts {
            self.stmt(s, how);
        }
    }

    fn stmt(&mut self, stmt: &'a Stmt, how: Actions) {
        if let Stmt::Assign { lhs, .. } = stmt {
            if let Some(h) = header_of(self.checked, lhs) {
                self.modifies(h, how);
            }
        }
        let (exprs, blocks) = parts(stmt);
        for e in exprs {
            self.expr(e, how);
        }
        for b in blocks {
            self.block(b, how);
        }
    }

    fn expr(&mut self, e: &'a Expr, how: Actions) {
        if let ExprKind::Call { callee, .. } = &e.kind {
            self.call(e, callee, how);
        }
        for o in operands(e) {
            self.expr(o, how);
        }
    }

    /// A call: a table's `apply`, a header's validity change, or an action called directly.
    fn call(&mut self, call: &'a Expr, callee: &'a Expr, how: Actions) {
        if let Some((base, method, _)) = method_call(call) {
            match method {
                "apply" if matches!(self.checked.type_of(base), Some(Type::Table(_))) => {
                    self.table(&expr_text(self.checked, base));
                }
                "setValid" | "setInvalid" => {
                    if let Some(h) = header_of(self.checked, base) {
                        self.modifies(h, how);
                    }
                }
                _ => {}
            }
            return;
        }
        if let ExprKind::Name(id) = &callee.kind {
            if let Some(action) = self.action(&id.name) {
                self.action_body(action, how);
            }
            // update_checksum writes its third argument: a field write like an assignment.
            if let (ExprKind::Call { args, .. }, "update_checksum") = (&call.kind, id.name.as_str())
            {
                if let Some(h) = args.get(2).and_then(|a| header_of(self.checked, a)) {
                    self.modifies(h, how);
                }
            }
        }
    }

    /// A table applied: its actions run implicitly.
    fn table(&mut self, name: &str) {
        if self.tables.iter().any(|t| t == name) {
            return;
        }
        self.tables.push(name.to_string());
        let Some(table) = self
            .control
            .and_then(|c| c.tables().find(|t| t.name.name == name))
        else {
            return;
        };
        let mut run: Vec<&str> = table.actions.iter().map(|a| a.name.name.as_str()).collect();
        if let Some(d) = &table.default_action {
            run.push(&d.call.name.name);
        }
        for name in run {
            if let Some(action) = self.action(name) {
                self.action_body(action, Actions::Implicit);
            }
        }
    }

    fn action_body(&mut self, action: &'a ActionDecl, how: Actions) {
        if self.visited_actions.insert((action.name.name.clone(), how)) {
            self.block(&action.body, how);
        }
    }

    /// The action named `name`: the control's own, else a top-level one.
    fn action(&self, name: &str) -> Option<&'a ActionDecl> {
        self.control
            .and_then(|c| c.actions().find(|a| a.name.name == name))
            .or_else(|| {
                self.checked.program.decls.iter().find_map(|d| match d {
                    Decl::Action(a) if a.name.name == name => Some(a),
                    _ => None,
                })
            })
    }
}
