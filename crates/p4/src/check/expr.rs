//! Expression typing: names, fields, slices, operators with P4-16's width rules, calls of
//! methods, actions and extern functions, and the adaptation of unsized literals.
//!
//! An unsized constant (`1`, `X` for `const int X`) is first typed `int` ([`Type::InfInt`]); when
//! it meets a sized operand, a sized lvalue or a parameter, [`Checker::expr_expect`] re-records it
//! (and its unsized sub-expressions) at that type after checking the value fits. So every
//! expression a later stage evaluates has a concrete width, except operands of casts.

use super::{substitute, unify, Binding, Checker, NameRef, Role};
use crate::ast::{BinaryOp, Direction, Expr, ExprKind, OpClass, Param, UnaryOp};
use crate::check::types::Type;
use crate::error::{ErrorKind, P4Error, Span};
use std::collections::HashMap;

impl<'a> Checker<'a> {
    fn record(&mut self, e: &Expr, ty: &Type) {
        if let Some(slot) = self.expr_types.get_mut(e.id.0 as usize) {
            *slot = Some(ty.clone());
        }
    }

    fn recorded(&self, e: &Expr) -> Option<&Type> {
        self.expr_types
            .get(e.id.0 as usize)
            .and_then(Option::as_ref)
    }

    /// Types `e` and requires it to fit `want`, adapting an unsized literal to it.
    pub(super) fn expr_expect(&mut self, e: &Expr, want: &Type) -> Result<(), P4Error> {
        let got = self.expr(e)?;
        self.adapt(e, &got, want)
    }

    fn adapt(&mut self, e: &Expr, got: &Type, want: &Type) -> Result<(), P4Error> {
        if got == want {
            return Ok(());
        }
        if *got == Type::InfInt {
            if let Type::Bit(w) | Type::Int(w) = want {
                if let Ok(value) = self.constant(e) {
                    if !fits(value, *w) {
                        return Err(self.error(
                            e.span,
                            ErrorKind::Width(format!("value {value} does not fit in {want}")),
                        ));
                    }
                }
                self.retype(e, want);
                return Ok(());
            }
        }
        Err(self.mismatch(e.span, format!("expected {want}, found {got}")))
    }

    /// Re-records an unsized expression and its unsized operands at `ty`.
    fn retype(&mut self, e: &Expr, ty: &Type) {
        if self.recorded(e) != Some(&Type::InfInt) {
            return;
        }
        self.record(e, ty);
        match &e.kind {
            ExprKind::Unary(_, inner) => self.retype(inner, ty),
            ExprKind::Binary(op, l, r)
                if matches!(op.class(), OpClass::Arithmetic | OpClass::Bitwise) =>
            {
                self.retype(l, ty);
                if !matches!(op, BinaryOp::Shl | BinaryOp::Shr) {
                    self.retype(r, ty);
                }
            }
            ExprKind::Ternary(_, a, b) => {
                self.retype(a, ty);
                self.retype(b, ty);
            }
            _ => {}
        }
    }

    /// The value of a compile-time constant expression.
    pub(super) fn constant(&self, e: &Expr) -> Result<i128, P4Error> {
        let not_constant = || {
            self.error(
                e.span,
                ErrorKind::Invalid(String::from("expected a compile-time constant")),
            )
        };
        let overflow = || {
            self.error(
                e.span,
                ErrorKind::Invalid(String::from("constant overflows 128 bits")),
            )
        };
        match &e.kind {
            ExprKind::Int { value, .. } => i128::try_from(*value).map_err(|_| overflow()),
            ExprKind::Bool(b) => Ok(i128::from(*b)),
            ExprKind::Name(n) => match self.lookup(&n.name) {
                Some(Binding::Value {
                    constant: Some(v), ..
                }) => Ok(*v),
                _ => Err(not_constant()),
            },
            ExprKind::Member(base, member) => {
                let ExprKind::Name(enum_name) = &base.kind else {
                    return Err(not_constant());
                };
                self.types
                    .enums
                    .get(&enum_name.name)
                    .and_then(|info| info.members.iter().find(|(m, _)| *m == member.name))
                    .and_then(|(_, v)| *v)
                    .ok_or_else(not_constant)
            }
            ExprKind::Unary(UnaryOp::Negate, inner) => {
                self.constant(inner)?.checked_neg().ok_or_else(overflow)
            }
            ExprKind::Cast(_, inner) => self.constant(inner),
            ExprKind::Binary(op, l, r) => {
                let (a, b) = (self.constant(l)?, self.constant(r)?);
                let value = match op {
                    BinaryOp::Add => a.checked_add(b),
                    BinaryOp::Sub => a.checked_sub(b),
                    BinaryOp::Mul => a.checked_mul(b),
                    BinaryOp::Div => a.checked_div(b),
                    BinaryOp::Mod => a.checked_rem(b),
                    BinaryOp::BitAnd => Some(a & b),
                    BinaryOp::BitOr => Some(a | b),
                    BinaryOp::BitXor => Some(a ^ b),
                    BinaryOp::Shl => u32::try_from(b).ok().and_then(|s| a.checked_shl(s)),
                    BinaryOp::Shr => u32::try_from(b).ok().and_then(|s| a.checked_shr(s)),
                    _ => return Err(not_constant()),
                };
                value.ok_or_else(overflow)
            }
            _ => Err(not_constant()),
        }
    }

    /// Types an expression and records its type, what a name refers to, and its value if it
    /// is a compile-time constant.
    pub(super) fn expr(&mut self, e: &Expr) -> Result<Type, P4Error> {
        let ty = self.expr_inner(e)?;
        self.record(e, &ty);
        if let ExprKind::Name(n) = &e.kind {
            let name = self.lookup(&n.name).map(|b| match b {
                Binding::Value { role, constant, .. } => match (role, constant) {
                    (Role::Param(direction), _) => NameRef::Param {
                        direction: *direction,
                    },
                    (Role::Variable, _) => NameRef::Variable,
                    (Role::Constant, Some(v)) => NameRef::Constant(*v),
                    (Role::Constant, None) | (Role::Instance, _) => NameRef::Instance,
                },
                Binding::Table(_) => NameRef::Table,
                Binding::Action(_) => NameRef::Action,
                Binding::Parser(_) => NameRef::Parser,
                Binding::Control(_) => NameRef::Control,
            });
            if let Some(slot) = self.names.get_mut(e.id.0 as usize) {
                *slot = name;
            }
        }
        let value = self.constant(e).ok();
        if let Some(slot) = self.constants.get_mut(e.id.0 as usize) {
            *slot = value;
        }
        Ok(ty)
    }

    fn expr_inner(&mut self, e: &Expr) -> Result<Type, P4Error> {
        match &e.kind {
            ExprKind::Int { value, width } => match width {
                None => Ok(Type::InfInt),
                Some((w, signed)) => {
                    let ty = if *signed {
                        Type::Int(*w)
                    } else {
                        Type::Bit(*w)
                    };
                    let fits = i128::try_from(*value).is_ok_and(|v| fits(v, *w));
                    if !fits {
                        return Err(self.error(
                            e.span,
                            ErrorKind::Width(format!("value {value} does not fit in {ty}")),
                        ));
                    }
                    Ok(ty)
                }
            },
            ExprKind::Bool(_) => Ok(Type::Bool),
            ExprKind::ErrorMember(member) => {
                if self.types.errors.contains(&member.name) {
                    Ok(Type::Error)
                } else {
                    Err(self.error(
                        member.span,
                        ErrorKind::Unknown {
                            what: "error",
                            name: member.name.clone(),
                        },
                    ))
                }
            }
            ExprKind::Name(n) => match self.lookup(&n.name) {
                Some(Binding::Value { ty, .. }) => Ok(ty.clone()),
                Some(Binding::Table(t)) => Ok(Type::Table(t.name.name.clone())),
                Some(Binding::Parser(p)) => Ok(Type::Parser(p.name.name.clone())),
                Some(Binding::Control(c)) => Ok(Type::Control(c.name.name.clone())),
                Some(Binding::Action(_)) => {
                    Err(self.mismatch(e.span, format!("action '{}' must be called", n.name)))
                }
                None => Err(self.error(
                    n.span,
                    ErrorKind::Unknown {
                        what: "name",
                        name: n.name.clone(),
                    },
                )),
            },
            ExprKind::Member(base, member) => self.member(e, base, member),
            ExprKind::Index(base, index) => {
                let base_ty = self.expr(base)?;
                let Type::Stack(element, size) = base_ty else {
                    return Err(self.mismatch(base.span, format!("cannot index {base_ty}")));
                };
                self.expr_expect(index, &Type::Bit(32))?;
                if let Ok(i) = self.constant(index) {
                    if i < 0 || i >= i128::from(size) {
                        return Err(self.error(
                            index.span,
                            ErrorKind::Width(format!("index {i} is outside the stack of {size}")),
                        ));
                    }
                }
                Ok(*element)
            }
            ExprKind::Slice { base, hi, lo } => {
                let base_ty = self.expr(base)?;
                let (Type::Bit(w) | Type::Int(w)) = base_ty else {
                    return Err(self.mismatch(base.span, format!("cannot slice {base_ty}")));
                };
                self.expr(hi)?;
                self.expr(lo)?;
                let (h, l) = (self.constant(hi)?, self.constant(lo)?);
                if !(0 <= l && l <= h && h < i128::from(w)) {
                    return Err(self.error(
                        e.span,
                        ErrorKind::Width(format!(
                            "slice [{h}:{l}] is outside bit<{w}> (needs {w} > hi >= lo >= 0)"
                        )),
                    ));
                }
                let width = u32::try_from(h.saturating_sub(l).saturating_add(1)).unwrap_or(1);
                Ok(Type::Bit(width))
            }
            ExprKind::Call { callee, args, .. } => self.call(e, callee, args),
            ExprKind::Unary(op, inner) => {
                let ty = self.expr(inner)?;
                match (op, &ty) {
                    (UnaryOp::Not, Type::Bool) => Ok(Type::Bool),
                    (UnaryOp::Complement, Type::Bit(_) | Type::Int(_)) => Ok(ty),
                    (UnaryOp::Negate, Type::Bit(_) | Type::Int(_) | Type::InfInt) => Ok(ty),
                    _ => {
                        Err(self.mismatch(e.span, format!("operator {op:?} cannot apply to {ty}")))
                    }
                }
            }
            ExprKind::Binary(op, l, r) => self.binary(e, *op, l, r),
            ExprKind::Ternary(cond, a, b) => {
                self.expr_expect(cond, &Type::Bool)?;
                let ta = self.expr(a)?;
                let tb = self.expr(b)?;
                self.join(e.span, "?:", a, &ta, b, &tb)
            }
            ExprKind::Cast(target, inner) => {
                let to = self.resolve(target, &[], e.span)?;
                let from = self.expr(inner)?;
                let serializable = |t: &Type| match t {
                    Type::Enum(n) => self.types.enums.get(n).and_then(|i| i.underlying.clone()),
                    _ => None,
                };
                let ok = match (&from, &to) {
                    (Type::InfInt | Type::Bit(_) | Type::Int(_), Type::Bit(_) | Type::Int(_)) => {
                        true
                    }
                    (Type::Bool, Type::Bit(1)) | (Type::Bit(1), Type::Bool) => true,
                    (a, b) if a == b => true,
                    (Type::Enum(_), t) => serializable(&from).as_ref() == Some(t),
                    (t, Type::Enum(_)) => {
                        serializable(&to).as_ref() == Some(t) || *t == Type::InfInt
                    }
                    _ => false,
                };
                if !ok {
                    return Err(self.mismatch(e.span, format!("cannot cast {from} to {to}")));
                }
                Ok(to)
            }
            ExprKind::List(_) => Err(self.error(
                e.span,
                ErrorKind::Invalid(String::from(
                    "a list expression is allowed only as an extern's argument of generic type (the data of update_checksum or verify_checksum)",
                )),
            )),
        }
    }

    /// Types a list expression given where a parameter of generic type is: each element a
    /// fixed-width scalar (its bits are what the list concatenates).
    fn list(&mut self, e: &Expr, elements: &[Expr]) -> Result<Type, P4Error> {
        let mut types = Vec::new();
        for element in elements {
            let ty = self.expr(element)?;
            let fixed = match &ty {
                Type::Enum(n) => self.types.enums.get(n).and_then(|i| i.underlying.clone()),
                other => other.scalar_width().map(|_| other.clone()),
            };
            if fixed.is_none() {
                return Err(self.mismatch(
                    element.span,
                    format!("a list element must be bit<N>, int<N>, bool or a serializable enum, not {ty}"),
                ));
            }
            types.push(ty);
        }
        let ty = Type::List(types);
        self.record(e, &ty);
        Ok(ty)
    }

    /// The common type of two operands, adapting an unsized one to the other.
    fn join(
        &mut self,
        span: Span,
        op: &str,
        l: &Expr,
        tl: &Type,
        r: &Expr,
        tr: &Type,
    ) -> Result<Type, P4Error> {
        if tl == tr {
            return Ok(tl.clone());
        }
        if *tl == Type::InfInt {
            self.adapt(l, tl, tr)?;
            return Ok(tr.clone());
        }
        if *tr == Type::InfInt {
            self.adapt(r, tr, tl)?;
            return Ok(tl.clone());
        }
        Err(self.mismatch(span, format!("'{op}' operands have types {tl} and {tr}")))
    }

    fn binary(&mut self, e: &Expr, op: BinaryOp, l: &Expr, r: &Expr) -> Result<Type, P4Error> {
        let tl = self.expr(l)?;
        let tr = self.expr(r)?;
        let sym = op.symbol();
        match op.class() {
            OpClass::Logical => {
                self.adapt(l, &tl, &Type::Bool)?;
                self.adapt(r, &tr, &Type::Bool)?;
                Ok(Type::Bool)
            }
            OpClass::Comparison => {
                let joined = self.join(e.span, sym, l, &tl, r, &tr)?;
                let equality = matches!(op, BinaryOp::Eq | BinaryOp::Ne);
                let ok = joined.is_integer()
                    || (equality && matches!(joined, Type::Bool | Type::Error | Type::Enum(_)));
                if !ok {
                    return Err(self.mismatch(e.span, format!("'{sym}' cannot compare {joined}")));
                }
                Ok(Type::Bool)
            }
            _ if matches!(op, BinaryOp::Shl | BinaryOp::Shr) => {
                if !tl.is_integer() || !matches!(tr, Type::Bit(_) | Type::InfInt) {
                    return Err(self.mismatch(e.span, format!("'{sym}' cannot shift {tl} by {tr}")));
                }
                if tr == Type::InfInt && self.constant(r).is_ok_and(|v| v < 0) {
                    return Err(self.mismatch(r.span, String::from("negative shift amount")));
                }
                Ok(tl)
            }
            _ if op == BinaryOp::Concat => match (&tl, &tr) {
                (Type::Bit(a) | Type::Int(a), Type::Bit(b) | Type::Int(b)) => {
                    let width = a
                        .checked_add(*b)
                        .filter(|w| *w <= crate::parser::MAX_WIDTH_BITS);
                    let width = width.ok_or_else(|| {
                        self.error(
                            e.span,
                            ErrorKind::Width(format!("{tl} ++ {tr} is wider than 128 bits")),
                        )
                    })?;
                    Ok(if matches!(tl, Type::Int(_)) {
                        Type::Int(width)
                    } else {
                        Type::Bit(width)
                    })
                }
                _ => Err(self.mismatch(
                    e.span,
                    format!("'++' needs sized operands, found {tl} and {tr}"),
                )),
            },
            _ => {
                let joined = self.join(e.span, sym, l, &tl, r, &tr)?;
                if !joined.is_integer() {
                    return Err(self.mismatch(e.span, format!("'{sym}' cannot apply to {joined}")));
                }
                if matches!(op, BinaryOp::Div | BinaryOp::Mod) && matches!(joined, Type::Int(_)) {
                    return Err(
                        self.mismatch(e.span, format!("'{sym}' is not defined on signed {joined}"))
                    );
                }
                Ok(joined)
            }
        }
    }

    fn member(
        &mut self,
        e: &Expr,
        base: &Expr,
        member: &crate::ast::Ident,
    ) -> Result<Type, P4Error> {
        if let ExprKind::Name(n) = &base.kind {
            if self.lookup(&n.name).is_none() {
                if let Some(info) = self.types.enums.get(&n.name) {
                    if info.members.iter().any(|(m, _)| *m == member.name) {
                        return Ok(Type::Enum(n.name.clone()));
                    }
                    return Err(self.error(
                        member.span,
                        ErrorKind::Unknown {
                            what: "enum member",
                            name: format!("{}.{}", n.name, member.name),
                        },
                    ));
                }
            }
        }
        let base_ty = self.expr(base)?;
        let field = |layout: Option<&crate::check::types::Layout>| {
            layout
                .and_then(|l| l.field(&member.name))
                .map(|f| f.ty.clone())
        };
        let unknown = |kind: &'static str| ErrorKind::UnknownField {
            kind,
            field: member.name.clone(),
            base: self.snippet(base.span),
        };
        match &base_ty {
            Type::Header(h) => field(self.types.headers.get(h))
                .ok_or_else(|| self.error(member.span, unknown("header"))),
            Type::Struct(s) => field(self.types.structs.get(s))
                .ok_or_else(|| self.error(member.span, unknown("struct"))),
            Type::Stack(element, _) => match member.name.as_str() {
                "next" | "last" => Ok((**element).clone()),
                "size" | "lastIndex" => Ok(Type::Bit(32)),
                _ => Err(self.error(member.span, unknown("header stack"))),
            },
            Type::ApplyResult(t) => match member.name.as_str() {
                "hit" | "miss" => Ok(Type::Bool),
                "action_run" => Ok(Type::ActionRun(t.clone())),
                _ => Err(self.error(member.span, unknown("table apply result"))),
            },
            _ => Err(self.mismatch(
                e.span,
                format!(
                    "'{}' of type {base_ty} has no member '{}'",
                    self.snippet(base.span),
                    member.name
                ),
            )),
        }
    }

    fn call(&mut self, e: &Expr, callee: &Expr, args: &[Expr]) -> Result<Type, P4Error> {
        match &callee.kind {
            ExprKind::Member(object, method) => self.method_call(e, object, method, args),
            ExprKind::Name(name) => match self.lookup(&name.name) {
                Some(Binding::Action(action)) => {
                    let action = *action;
                    if let Some(slot) = self.names.get_mut(callee.id.0 as usize) {
                        *slot = Some(NameRef::Action);
                    }
                    let mut none = HashMap::new();
                    self.arguments(&action.params, &[], &mut none, args, e.span, &name.name)?;
                    Ok(Type::Void)
                }
                Some(Binding::Parser(p)) if args.is_empty() => {
                    Ok(Type::Parser(p.name.name.clone()))
                }
                Some(Binding::Control(c)) if args.is_empty() => {
                    Ok(Type::Control(c.name.name.clone()))
                }
                _ => {
                    let Some(function) = self.functions.get(&name.name).copied() else {
                        return Err(self.error(
                            name.span,
                            ErrorKind::Unknown {
                                what: "action or function",
                                name: name.name.clone(),
                            },
                        ));
                    };
                    let mut bindings = HashMap::new();
                    let vars = type_param_names(&[], &function.type_params);
                    self.arguments(
                        &function.params,
                        &vars,
                        &mut bindings,
                        args,
                        e.span,
                        &name.name,
                    )?;
                    self.result_type(function, &bindings, e.span)
                }
            },
            _ => Err(self.mismatch(
                callee.span,
                String::from("this expression cannot be called"),
            )),
        }
    }

    fn result_type(
        &self,
        method: &crate::ast::MethodDecl,
        bindings: &HashMap<String, Type>,
        at: Span,
    ) -> Result<Type, P4Error> {
        let vars: Vec<String> = bindings.keys().cloned().collect();
        match &method.result {
            Some(r) => Ok(substitute(&self.resolve(r, &vars, at)?, bindings)),
            None => Ok(Type::Void),
        }
    }

    fn no_args(&self, e: &Expr, args: &[Expr], what: &str) -> Result<(), P4Error> {
        if args.is_empty() {
            Ok(())
        } else {
            Err(self.error(
                e.span,
                ErrorKind::Arity(format!("'{what}' takes no arguments, found {}", args.len())),
            ))
        }
    }

    fn method_call(
        &mut self,
        e: &Expr,
        object: &Expr,
        method: &crate::ast::Ident,
        args: &[Expr],
    ) -> Result<Type, P4Error> {
        let object_ty = self.expr(object)?;
        let name = method.name.as_str();
        match (&object_ty, name) {
            (Type::Header(_), "isValid") => self.no_args(e, args, name).map(|()| Type::Bool),
            (Type::Header(_), "setValid" | "setInvalid") => {
                self.no_args(e, args, name)?;
                self.lvalue(object)?;
                Ok(Type::Void)
            }
            (Type::Stack(..), "push_front" | "pop_front") => {
                let [count] = args else {
                    return Err(self.error(
                        e.span,
                        ErrorKind::Arity(format!("'{name}' takes 1 argument")),
                    ));
                };
                self.expr_expect(count, &Type::InfInt)?;
                self.constant(count)?;
                self.lvalue(object)?;
                Ok(Type::Void)
            }
            (Type::Table(t), "apply") => self
                .no_args(e, args, name)
                .map(|()| Type::ApplyResult(t.clone())),
            (Type::Extern(extern_name, type_args), _) => {
                let Some(decl) = self.externs.get(extern_name).copied() else {
                    return Err(self.mismatch(e.span, format!("{object_ty} has no methods")));
                };
                let Some(signature) = decl
                    .methods
                    .iter()
                    .find(|m| m.result.is_some() && m.name.name == name)
                else {
                    return Err(self.error(
                        method.span,
                        ErrorKind::Unknown {
                            what: "method",
                            name: format!("{extern_name}.{name}"),
                        },
                    ));
                };
                let mut bindings: HashMap<String, Type> = decl
                    .type_params
                    .iter()
                    .map(|p| p.name.clone())
                    .zip(type_args.iter().cloned())
                    .collect();
                let vars = type_param_names(&decl.type_params, &signature.type_params);
                self.arguments(&signature.params, &vars, &mut bindings, args, e.span, name)?;
                self.packet_argument(extern_name, name, args)?;
                self.result_type(signature, &bindings, e.span)
            }
            _ => Err(self.error(
                method.span,
                ErrorKind::Unknown {
                    what: "method",
                    name: format!("{object_ty}.{name}"),
                },
            )),
        }
    }

    /// The architecture's rule for the packet externs: `extract` takes a header, `emit` a header,
    /// a header stack or a struct of those.
    fn packet_argument(
        &self,
        extern_name: &str,
        method: &str,
        args: &[Expr],
    ) -> Result<(), P4Error> {
        let Some(arg) = args.first() else {
            return Ok(());
        };
        let ty = self.recorded(arg).cloned().unwrap_or(Type::Void);
        match (extern_name, method) {
            ("packet_in", "extract") if !matches!(ty, Type::Header(_)) => {
                Err(self.mismatch(arg.span, format!("extract takes a header, not {ty}")))
            }
            ("packet_out", "emit") if !self.emittable(&ty) => Err(self.mismatch(
                arg.span,
                format!("emit takes a header, header stack or struct of headers, not {ty}"),
            )),
            _ => Ok(()),
        }
    }

    fn emittable(&self, ty: &Type) -> bool {
        match ty {
            Type::Header(_) | Type::Stack(..) => true,
            Type::Struct(s) => self
                .types
                .structs
                .get(s)
                .is_some_and(|l| l.fields.iter().all(|f| self.emittable(&f.ty))),
            _ => false,
        }
    }

    /// Checks call arguments against parameters: count, types (binding type variables), and
    /// that `out`/`inout` arguments are writable lvalues.
    pub(super) fn arguments(
        &mut self,
        params: &[Param],
        vars: &[String],
        bindings: &mut HashMap<String, Type>,
        args: &[Expr],
        at: Span,
        what: &str,
    ) -> Result<(), P4Error> {
        if params.len() != args.len() {
            return Err(self.error(
                at,
                ErrorKind::Arity(format!(
                    "'{what}' takes {} arguments, found {}",
                    params.len(),
                    args.len()
                )),
            ));
        }
        for (param, arg) in params.iter().zip(args) {
            let want = substitute(&self.resolve(&param.ty, vars, param.name.span)?, bindings);
            if let Type::Var(_) = want {
                let got = match &arg.kind {
                    ExprKind::List(elements) => self.list(arg, elements)?,
                    _ => self.expr(arg)?,
                };
                if got == Type::InfInt {
                    return Err(self.mismatch(
                        arg.span,
                        format!(
                            "cannot infer the type of '{}' from an unsized constant",
                            param.name.name
                        ),
                    ));
                }
                unify(&want, &got, bindings);
            } else {
                self.expr_expect(arg, &want)?;
            }
            if matches!(param.direction, Some(Direction::Out | Direction::InOut)) {
                self.lvalue(arg)?;
            }
        }
        Ok(())
    }

    /// Requires `e` to be a writable lvalue.
    pub(super) fn lvalue(&self, e: &Expr) -> Result<(), P4Error> {
        match &e.kind {
            ExprKind::Name(n) => match self.lookup(&n.name) {
                Some(Binding::Value { writable: true, .. }) => Ok(()),
                _ => Err(self.error(
                    e.span,
                    ErrorKind::Invalid(format!(
                        "cannot write to '{}' (read-only or not a variable)",
                        n.name
                    )),
                )),
            },
            ExprKind::Member(base, _) | ExprKind::Index(base, _) => self.lvalue(base),
            ExprKind::Slice { base, .. } => self.lvalue(base),
            _ => Err(self.error(
                e.span,
                ErrorKind::Invalid(format!("'{}' is not an lvalue", self.snippet(e.span))),
            )),
        }
    }
}

/// The type parameters in scope in a method: the extern's, then the method's own.
pub(super) fn type_param_names(
    outer: &[crate::ast::Ident],
    own: &[crate::ast::Ident],
) -> Vec<String> {
    outer.iter().chain(own).map(|p| p.name.clone()).collect()
}

/// Whether `value` is representable in `width` bits (as unsigned, or as negative two's complement).
fn fits(value: i128, width: u32) -> bool {
    if width >= 127 {
        return true;
    }
    let limit = 1i128 << width;
    value < limit && value > -limit
}
