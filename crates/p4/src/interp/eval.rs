//! The interpreter's machine: scopes of variables, and the evaluation of expressions, lvalues,
//! statements, action calls and the architecture's externs, for parsers and controls alike.
//!
//! Parameters of parsers, controls and actions are copied in and out (P4-16's calling
//! convention), so a block's scope owns its values and a write goes to exactly one place.

use super::value::{self, Bits, HeaderValue, StackValue, Value};
use super::{find_action, resolve_type, InterpError, State};
use crate::ast::{
    ActionDecl, BinaryOp, Block, ControlDecl, Direction, Expr, ExprKind, Local, ParserDecl, Stmt,
    UnaryOp,
};
use crate::check::types::Type;
use crate::entries::Entries;
use crate::{Checked, NameRef, Span};
use std::collections::HashMap;

/// Why evaluation stopped early.
#[derive(Debug)]
pub(super) enum Halt {
    /// The parser rejects, with this error.
    Reject(String),
    /// `exit`: the current control ends.
    Exit,
    /// The program cannot be interpreted.
    Error(InterpError),
}

/// How a statement finished.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Flow {
    /// On to the next statement.
    Next,
    /// `return`: the enclosing action or control ends.
    Return,
}

/// The block being run: where its tables, actions and extern instances are declared.
#[derive(Clone, Copy)]
pub(super) enum BlockRef<'a> {
    Parser(&'a ParserDecl),
    Control(&'a ControlDecl),
}

impl<'a> BlockRef<'a> {
    fn name(self) -> &'a str {
        match self {
            BlockRef::Parser(p) => &p.name.name,
            BlockRef::Control(c) => &c.name.name,
        }
    }

    fn locals(self) -> &'a [Local] {
        match self {
            BlockRef::Parser(p) => &p.locals,
            BlockRef::Control(c) => &c.locals,
        }
    }
}

/// One step from a variable to the part of it an lvalue names.
#[derive(Debug, Clone)]
pub(super) enum Step {
    Field(String),
    Index(u128),
    /// `stack.next`: the element at the stack's next index.
    Next,
    /// `stack.last`: the element before it.
    Last,
    Slice(u32, u32),
}

/// An lvalue: a variable and the steps into it.
#[derive(Debug, Clone)]
pub(super) struct Place {
    pub root: String,
    pub steps: Vec<Step>,
}

pub(super) struct Machine<'a, 's> {
    pub checked: &'a Checked,
    pub entries: &'a Entries,
    pub state: &'s mut State,
    pub block: BlockRef<'a>,
    /// Innermost last. The first holds the block's parameters and locals.
    pub scopes: Vec<HashMap<String, Value>>,
    /// The packet as received.
    pub input: &'a [u8],
    /// How far the parser has read, in bits.
    pub cursor_bits: u64,
    /// What the deparser has emitted.
    pub output: Vec<u8>,
}

impl<'a> Machine<'a, '_> {
    pub fn unsupported(&self, span: Span, what: &str) -> Halt {
        Halt::Error(InterpError::Unsupported {
            at: self.checked.sources.position(span).to_string(),
            what: what.to_string(),
        })
    }

    fn ty(&self, e: &Expr) -> Type {
        self.checked.type_of(e).cloned().unwrap_or(Type::InfInt)
    }

    pub fn declare(&mut self, name: &str, value: Value) {
        if let Some(scope) = self.scopes.last_mut() {
            scope.insert(name.to_string(), value);
        }
    }

    fn lookup(&self, name: &str) -> Option<&Value> {
        self.scopes.iter().rev().find_map(|s| s.get(name))
    }

    fn lookup_mut(&mut self, name: &str) -> Option<&mut Value> {
        self.scopes.iter_mut().rev().find_map(|s| s.get_mut(name))
    }

    /// Declares the block's variables, constants and nothing else (actions, tables and instances
    /// are found in the AST when used).
    pub fn declare_locals(&mut self) -> Result<(), Halt> {
        for local in self.block.locals() {
            match local {
                Local::Var(v) => {
                    let value = match &v.init {
                        Some(init) => self.eval(init)?,
                        None => self.zero_of(&v.ty),
                    };
                    self.declare(&v.name.name, value);
                }
                Local::Const(c) => {
                    let value = self.eval(&c.value)?;
                    self.declare(&c.name.name, value);
                }
                Local::Action(_) | Local::Table(_) | Local::Instance(_) => {}
            }
        }
        Ok(())
    }

    fn zero_of(&self, ty: &crate::ast::TypeRef) -> Value {
        let types = &self.checked.types;
        resolve_type(types, ty).map_or(Value::Opaque, |t| Value::zero(types, &t))
    }

    // ---- expressions -------------------------------------------------------------------------

    pub fn eval(&mut self, e: &'a Expr) -> Result<Value, Halt> {
        let types = &self.checked.types;
        match &e.kind {
            ExprKind::Int { value, .. } => Ok(match self.ty(e) {
                Type::Bit(w) => Value::Bits(Bits::new(w, false, *value)),
                Type::Int(w) => Value::Bits(Bits::new(w, true, *value)),
                ty @ Type::Enum(_) => Value::constant(types, &ty, *value as i128),
                _ => Value::Unsized(i128::try_from(*value).unwrap_or(i128::MAX)),
            }),
            ExprKind::Bool(b) => Ok(Value::Bool(*b)),
            ExprKind::ErrorMember(m) => Ok(Value::Error(m.name.clone())),
            ExprKind::Name(n) => {
                if let Some(NameRef::Constant(v)) = self.checked.name_ref(e) {
                    return Ok(Value::constant(types, &self.ty(e), v));
                }
                Ok(self.lookup(&n.name).cloned().unwrap_or(Value::Opaque))
            }
            ExprKind::Member(base, member) => self.member(e, base, &member.name),
            ExprKind::Index(base, index) => {
                let stack = self.eval(base)?;
                let index = self.eval(index)?.as_bits().unwrap_or(u128::MAX);
                Ok(element(&stack, index)
                    .cloned()
                    .unwrap_or_else(|| self.invalid_element(base)))
            }
            ExprKind::Slice { base, hi, lo } => {
                let value = self.eval(base)?;
                let (hi, lo) = self.slice_bounds(e, hi, lo)?;
                value::slice(&value, hi, lo).ok_or_else(|| self.unsupported(e.span, "this slice"))
            }
            ExprKind::Call { callee, args, .. } => self.call(e, callee, args),
            ExprKind::Unary(op, inner) => {
                let v = self.eval(inner)?;
                let result = match op {
                    UnaryOp::Not => Some(Value::Bool(!v.truthy())),
                    UnaryOp::Complement => value::complement(v),
                    UnaryOp::Negate => value::negate(v),
                };
                result.ok_or_else(|| self.unsupported(e.span, "this operator's operand"))
            }
            ExprKind::Binary(BinaryOp::And, l, r) => Ok(Value::Bool(
                self.eval(l)?.truthy() && self.eval(r)?.truthy(),
            )),
            ExprKind::Binary(BinaryOp::Or, l, r) => Ok(Value::Bool(
                self.eval(l)?.truthy() || self.eval(r)?.truthy(),
            )),
            ExprKind::Binary(op, l, r) => {
                let (a, b) = (self.eval(l)?, self.eval(r)?);
                value::binary(*op, a, b).ok_or_else(|| {
                    self.unsupported(e.span, &format!("'{}' on these operands", op.symbol()))
                })
            }
            ExprKind::Ternary(cond, a, b) => {
                if self.eval(cond)?.truthy() {
                    self.eval(a)
                } else {
                    self.eval(b)
                }
            }
            ExprKind::Cast(to, inner) => {
                let v = self.eval(inner)?;
                let to = resolve_type(types, to).unwrap_or(Type::Void);
                value::cast(types, &to, v).ok_or_else(|| self.unsupported(e.span, "this cast"))
            }
            ExprKind::List(_) => Err(self.unsupported(e.span, "a list expression here")),
        }
    }

    /// The RFC 1071 checksum of a list expression's elements.
    fn list_checksum(&mut self, list: &'a Expr) -> Result<u16, Halt> {
        let ExprKind::List(elements) = &list.kind else {
            return Err(self.unsupported(list.span, "checksum data that is not a list { ... }"));
        };
        let mut values = Vec::new();
        for element in elements {
            let width = match self.ty(element) {
                Type::Enum(name) => self
                    .checked
                    .types
                    .enums
                    .get(&name)
                    .and_then(|i| i.underlying.as_ref())
                    .and_then(Type::scalar_width),
                ty => ty.scalar_width(),
            };
            let width =
                width.ok_or_else(|| self.unsupported(element.span, "a list element's width"))?;
            let bits = self.eval(element)?.as_bits().unwrap_or(0);
            values.push((width, bits));
        }
        Ok(super::checksum::internet_checksum(&values))
    }

    /// An invalid header of a stack's element type: what an out-of-range index reads.
    fn invalid_element(&self, stack: &Expr) -> Value {
        match self.ty(stack) {
            Type::Stack(element, _) => Value::zero(&self.checked.types, &element),
            _ => Value::Opaque,
        }
    }

    fn slice_bounds(&self, e: &Expr, hi: &Expr, lo: &Expr) -> Result<(u32, u32), Halt> {
        let bound = |x: &Expr| {
            self.checked
                .constant(x)
                .and_then(|v| u32::try_from(v).ok())
                .ok_or_else(|| self.unsupported(e.span, "a slice with non-constant bounds"))
        };
        Ok((bound(hi)?, bound(lo)?))
    }

    fn member(&mut self, e: &'a Expr, base: &'a Expr, member: &str) -> Result<Value, Halt> {
        let types = &self.checked.types;
        if let (Type::Enum(_), ExprKind::Name(_), None) =
            (self.ty(e), &base.kind, self.checked.name_ref(base))
        {
            return Ok(match self.checked.constant(e) {
                Some(v) => Value::constant(types, &self.ty(e), v),
                None => Value::Enum(member.to_string()),
            });
        }
        let value = self.eval(base)?;
        let read = match (&value, member) {
            (Value::ApplyResult { hit, .. }, "hit") => Some(Value::Bool(*hit)),
            (Value::ApplyResult { hit, .. }, "miss") => Some(Value::Bool(!*hit)),
            (Value::ApplyResult { action, .. }, "action_run") => {
                Some(Value::ActionRun(action.clone()))
            }
            (Value::Stack(s), "next") => Some(
                element(&value, u128::from(s.next_index))
                    .cloned()
                    .unwrap_or_else(|| self.invalid_element(base)),
            ),
            (Value::Stack(s), "last") => Some(
                s.next_index
                    .checked_sub(1)
                    .and_then(|i| element(&value, u128::from(i)))
                    .cloned()
                    .unwrap_or_else(|| self.invalid_element(base)),
            ),
            (Value::Stack(s), "size") => {
                Some(Value::Bits(Bits::new(32, false, s.elements.len() as u128)))
            }
            (Value::Stack(s), "lastIndex") => Some(Value::Bits(Bits::new(
                32,
                false,
                u128::from(s.next_index.wrapping_sub(1)),
            ))),
            _ => value.field(member).cloned(),
        };
        read.ok_or_else(|| self.unsupported(e.span, &format!("member '{member}'")))
    }

    // ---- lvalues -----------------------------------------------------------------------------

    pub fn place(&mut self, e: &'a Expr) -> Result<Place, Halt> {
        match &e.kind {
            ExprKind::Name(n) => Ok(Place {
                root: n.name.clone(),
                steps: Vec::new(),
            }),
            ExprKind::Member(base, member) => {
                let mut place = self.place(base)?;
                let step = match (self.ty(base), member.name.as_str()) {
                    (Type::Stack(..), "next") => Step::Next,
                    (Type::Stack(..), "last") => Step::Last,
                    _ => Step::Field(member.name.clone()),
                };
                place.steps.push(step);
                Ok(place)
            }
            ExprKind::Index(base, index) => {
                let mut place = self.place(base)?;
                let index = self.eval(index)?.as_bits().unwrap_or(u128::MAX);
                place.steps.push(Step::Index(index));
                Ok(place)
            }
            ExprKind::Slice { base, hi, lo } => {
                let mut place = self.place(base)?;
                let (hi, lo) = self.slice_bounds(e, hi, lo)?;
                place.steps.push(Step::Slice(hi, lo));
                Ok(place)
            }
            _ => Err(self.unsupported(e.span, "this expression as an lvalue")),
        }
    }

    /// The value a place names, to modify; `None` for an out-of-range stack element (writes to
    /// it are dropped). A slice step is not followed (see [`Machine::write`]).
    pub fn target_mut(&mut self, root: &str, steps: &[Step]) -> Option<&mut Value> {
        let mut current = self.lookup_mut(root)?;
        for step in steps {
            current = match step {
                Step::Field(f) => current.field_mut(f)?,
                Step::Index(i) => element_mut(current, *i)?,
                Step::Next => {
                    let next = stack_index(current, 0)?;
                    element_mut(current, next)?
                }
                Step::Last => {
                    let last = stack_index(current, 1)?;
                    element_mut(current, last)?
                }
                Step::Slice(..) => return None,
            };
        }
        Some(current)
    }

    pub fn write(&mut self, place: &Place, value: Value) {
        match place.steps.split_last() {
            Some((Step::Slice(hi, lo), rest)) => {
                let (hi, lo) = (*hi, *lo);
                if let Some(target) = self.target_mut(&place.root, rest) {
                    value::write_slice(target, hi, lo, &value);
                }
            }
            _ => {
                if let Some(target) = self.target_mut(&place.root, &place.steps) {
                    *target = value;
                }
            }
        }
    }

    // ---- statements --------------------------------------------------------------------------

    pub fn block(&mut self, block: &'a Block) -> Result<Flow, Halt> {
        self.scopes.push(HashMap::new());
        let mut flow = Flow::Next;
        for stmt in &block.stmts {
            flow = self.stmt(stmt)?;
            if flow == Flow::Return {
                break;
            }
        }
        self.scopes.pop();
        Ok(flow)
    }

    pub fn stmt(&mut self, stmt: &'a Stmt) -> Result<Flow, Halt> {
        match stmt {
            Stmt::Assign { lhs, rhs } => {
                let place = self.place(lhs)?;
                let value = self.eval(rhs)?;
                self.write(&place, value);
                Ok(Flow::Next)
            }
            Stmt::Call(e) => self.eval(e).map(|_| Flow::Next),
            Stmt::If {
                cond,
                then,
                otherwise,
            } => {
                if self.eval(cond)?.truthy() {
                    self.block(then)
                } else if let Some(b) = otherwise {
                    self.block(b)
                } else {
                    Ok(Flow::Next)
                }
            }
            Stmt::Switch { subject, cases } => {
                let action = match self.eval(subject)? {
                    Value::ActionRun(a) | Value::ApplyResult { action: a, .. } => a,
                    _ => return Err(self.unsupported(subject.span, "switch on this value")),
                };
                let chosen = cases
                    .iter()
                    .position(|c| c.label.as_ref().is_some_and(|l| l.name == action))
                    .or_else(|| cases.iter().position(|c| c.label.is_none()));
                // A case without a body falls through to the next case that has one.
                let body = chosen.and_then(|i| cases.iter().skip(i).find_map(|c| c.body.as_ref()));
                match body {
                    Some(b) => self.block(b),
                    None => Ok(Flow::Next),
                }
            }
            Stmt::Block(b) => self.block(b),
            Stmt::Var(v) => {
                let value = match &v.init {
                    Some(init) => self.eval(init)?,
                    None => self.zero_of(&v.ty),
                };
                self.declare(&v.name.name, value);
                Ok(Flow::Next)
            }
            Stmt::Const(c) => {
                let value = self.eval(&c.value)?;
                self.declare(&c.name.name, value);
                Ok(Flow::Next)
            }
            Stmt::Return(_) => Ok(Flow::Return),
            Stmt::Exit(_) => Err(Halt::Exit),
        }
    }

    // ---- calls -------------------------------------------------------------------------------

    fn call(&mut self, e: &'a Expr, callee: &'a Expr, args: &'a [Expr]) -> Result<Value, Halt> {
        match &callee.kind {
            ExprKind::Member(object, method) => self.method(e, object, &method.name, args),
            ExprKind::Name(name) => {
                if let BlockRef::Control(control) = self.block {
                    if let Some(action) = find_action(self.checked, control, &name.name) {
                        let none: &[(String, Value)] = &[];
                        self.call_action(action, args, none, true)?;
                        return Ok(Value::Opaque);
                    }
                }
                self.extern_function(e, &name.name, args)
            }
            _ => Err(self.unsupported(e.span, "this call")),
        }
    }

    fn extern_function(
        &mut self,
        e: &'a Expr,
        name: &str,
        args: &'a [Expr],
    ) -> Result<Value, Halt> {
        match (name, args) {
            ("mark_to_drop", [std]) => {
                let mut place = self.place(std)?;
                place.steps.push(Step::Field(String::from("drop")));
                self.write(&place, Value::Bool(true));
                Ok(Value::Opaque)
            }
            ("verify", [check, error]) => {
                if self.eval(check)?.truthy() {
                    return Ok(Value::Opaque);
                }
                match self.eval(error)? {
                    Value::Error(name) => Err(Halt::Reject(name)),
                    _ => Err(Halt::Reject(String::from("NoError"))),
                }
            }
            ("update_checksum", [condition, data, checksum]) => {
                if self.eval(condition)?.truthy() {
                    let sum = self.list_checksum(data)?;
                    let place = self.place(checksum)?;
                    self.write(&place, Value::Bits(Bits::new(16, false, u128::from(sum))));
                }
                Ok(Value::Opaque)
            }
            ("verify_checksum", [condition, data, checksum]) => {
                if !self.eval(condition)?.truthy() {
                    return Ok(Value::Opaque);
                }
                let sum = self.list_checksum(data)?;
                let given = self.eval(checksum)?.as_bits().unwrap_or(0);
                if given == u128::from(sum) {
                    Ok(Value::Opaque)
                } else {
                    Err(Halt::Reject(String::from("ChecksumError")))
                }
            }
            _ => Err(self.unsupported(e.span, &format!("a call of '{name}'"))),
        }
    }

    fn method(
        &mut self,
        e: &'a Expr,
        object: &'a Expr,
        method: &str,
        args: &'a [Expr],
    ) -> Result<Value, Halt> {
        match (self.ty(object), method) {
            (Type::Header(_), "isValid") => Ok(Value::Bool(matches!(
                self.eval(object)?,
                Value::Header(HeaderValue { valid: true, .. })
            ))),
            (Type::Header(_), "setValid" | "setInvalid") => {
                let place = self.place(object)?;
                if let Some(Value::Header(h)) = self.target_mut(&place.root, &place.steps) {
                    h.valid = method == "setValid";
                }
                Ok(Value::Opaque)
            }
            (Type::Stack(..), "push_front" | "pop_front") => {
                let count = args
                    .first()
                    .and_then(|a| self.checked.constant(a))
                    .and_then(|c| usize::try_from(c).ok())
                    .unwrap_or(0);
                let place = self.place(object)?;
                let zero = self.invalid_element(object);
                if let Some(Value::Stack(s)) = self.target_mut(&place.root, &place.steps) {
                    shift_stack(s, count, method == "push_front", zero);
                }
                Ok(Value::Opaque)
            }
            (Type::Table(table), "apply") => self.apply_table(e, &table),
            (Type::Extern(name, type_args), _) => match (name.as_str(), method) {
                ("packet_in", "extract") => self.extract(e, args),
                ("packet_in", "advance") => self.advance(args),
                ("packet_out", "emit") => self.emit(args),
                ("counter", "count") => self.count(object, args),
                ("register", "read" | "write") => {
                    self.register(object, method, type_args.first(), args)
                }
                _ => Err(self.unsupported(e.span, &format!("{name}.{method}"))),
            },
            (ty, _) => Err(self.unsupported(e.span, &format!("method '{method}' of {ty}"))),
        }
    }

    /// Calls an action: `args` bind parameters in order (all of them for a call in the code,
    /// only the directional ones for a table's action list, when `args_bind_all` is false);
    /// `data` gives the directionless ones from a table entry. Directional parameters are copied
    /// in and out; the body sees the control's scope, not the caller's local variables.
    pub fn call_action(
        &mut self,
        action: &'a ActionDecl,
        args: &'a [Expr],
        data: &[(String, Value)],
        args_bind_all: bool,
    ) -> Result<(), Halt> {
        let mut frame = HashMap::new();
        let mut copy_out = Vec::new();
        let mut args = args.iter();
        for param in &action.params {
            let name = param.name.name.clone();
            let bound = args_bind_all || param.direction.is_some();
            let arg = if bound { args.next() } else { None };
            let value = match (param.direction, arg) {
                (Some(Direction::Out), Some(arg)) => {
                    copy_out.push((name.clone(), self.place(arg)?));
                    self.zero_of(&param.ty)
                }
                (Some(Direction::InOut), Some(arg)) => {
                    copy_out.push((name.clone(), self.place(arg)?));
                    self.eval(arg)?
                }
                (_, Some(arg)) => self.eval(arg)?,
                (_, None) => data
                    .iter()
                    .find(|(n, _)| *n == name)
                    .map(|(_, v)| v.clone())
                    .unwrap_or_else(|| self.zero_of(&param.ty)),
            };
            frame.insert(name, value);
        }
        let callers = self.scopes.split_off(self.scopes.len().min(1));
        self.scopes.push(frame);
        let result = self.block(&action.body);
        let frame = self.scopes.pop().unwrap_or_default();
        self.scopes.truncate(1);
        self.scopes.extend(callers);
        result?;
        for (name, place) in copy_out {
            if let Some(value) = frame.get(&name) {
                self.write(&place, value.clone());
            }
        }
        Ok(())
    }

    // ---- stateful externs --------------------------------------------------------------------

    /// The state key and declared size of the extern instance an expression names.
    fn instance(&self, object: &Expr) -> Option<(String, u128, &'a crate::ast::Instance)> {
        let ExprKind::Name(name) = &object.kind else {
            return None;
        };
        let local = self.block.locals().iter().find_map(|l| match l {
            Local::Instance(i) if i.name.name == name.name => Some(i),
            _ => None,
        });
        let (key, instance) = match local {
            Some(i) => (format!("{}.{}", self.block.name(), name.name), i),
            None => {
                let global = self.checked.program.decls.iter().find_map(|d| match d {
                    crate::ast::Decl::Instance(i) if i.name.name == name.name => Some(i),
                    _ => None,
                })?;
                (name.name.clone(), global)
            }
        };
        let size = instance
            .args
            .first()
            .and_then(|a| self.checked.constant(a))
            .and_then(|s| u128::try_from(s).ok())
            .unwrap_or(0);
        Some((key, size, instance))
    }

    fn count(&mut self, object: &'a Expr, args: &'a [Expr]) -> Result<Value, Halt> {
        let index = match args.first() {
            Some(a) => self.eval(a)?.as_bits().unwrap_or(u128::MAX),
            None => u128::MAX,
        };
        if let Some((key, size, _)) = self.instance(object) {
            if index < size {
                let index = u32::try_from(index).unwrap_or(u32::MAX);
                let bytes = self.input.len() as u64;
                self.state.count(&key, index, bytes);
            }
        }
        Ok(Value::Opaque)
    }

    fn register(
        &mut self,
        object: &'a Expr,
        method: &str,
        element: Option<&Type>,
        args: &'a [Expr],
    ) -> Result<Value, Halt> {
        let Some((key, size, _)) = self.instance(object) else {
            return Err(self.unsupported(object.span, "this register"));
        };
        let element = element.cloned().unwrap_or(Type::Bit(32));
        match (method, args) {
            ("read", [result, index]) => {
                let index = self.eval(index)?.as_bits().unwrap_or(u128::MAX);
                let bits = match u32::try_from(index) {
                    Ok(i) if index < size => self.state.register(&key, i),
                    _ => 0,
                };
                let value = Value::constant(&self.checked.types, &element, bits as i128);
                let place = self.place(result)?;
                self.write(&place, value);
            }
            ("write", [index, value]) => {
                let index = self.eval(index)?.as_bits().unwrap_or(u128::MAX);
                let bits = self.eval(value)?.as_bits().unwrap_or(0);
                if let Ok(i) = u32::try_from(index) {
                    if index < size {
                        self.state.set_register(&key, i, bits);
                    }
                }
            }
            _ => return Err(self.unsupported(object.span, "this register call")),
        }
        Ok(Value::Opaque)
    }
}

/// Element `index` of a stack value.
fn element(stack: &Value, index: u128) -> Option<&Value> {
    match stack {
        Value::Stack(s) => s.elements.get(usize::try_from(index).ok()?),
        _ => None,
    }
}

fn element_mut(stack: &mut Value, index: u128) -> Option<&mut Value> {
    match stack {
        Value::Stack(s) => s.elements.get_mut(usize::try_from(index).ok()?),
        _ => None,
    }
}

/// The stack's next index minus `back` (`next` is back 0, `last` back 1).
fn stack_index(stack: &Value, back: u32) -> Option<u128> {
    match stack {
        Value::Stack(s) => s.next_index.checked_sub(back).map(u128::from),
        _ => None,
    }
}

/// `push_front(count)` / `pop_front(count)`: moves elements by `count`, filling with invalid
/// headers, and moves the next index with them.
fn shift_stack(stack: &mut StackValue, count: usize, push: bool, invalid: Value) {
    let size = stack.elements.len();
    let count = count.min(size);
    let moved = u32::try_from(count).unwrap_or(u32::MAX);
    if push {
        stack.elements.truncate(size - count);
        for _ in 0..count {
            stack.elements.insert(0, invalid.clone());
        }
        let limit = u32::try_from(size).unwrap_or(u32::MAX);
        stack.next_index = stack.next_index.saturating_add(moved).min(limit);
    } else {
        stack.elements.drain(..count);
        stack.elements.extend((0..count).map(|_| invalid.clone()));
        stack.next_index = stack.next_index.saturating_sub(moved);
    }
}
