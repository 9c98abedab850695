//! Checking of parsers (states, transitions, select keysets), controls (actions, tables, extern
//! instances, apply blocks) and statements.

use super::{Binding, Checker, Role};
use crate::ast::{
    ActionCall, ActionDecl, Block, ControlDecl, Direction, Expr, Keyset, Local, Param, ParserDecl,
    Stmt, TableDecl, Transition, VarDecl,
};
use crate::check::types::Type;
use crate::error::{ErrorKind, P4Error, Span};
use std::collections::HashMap;

impl<'a> Checker<'a> {
    /// Declares parameters in the current scope: `in` and directionless ones are read-only.
    fn params(&mut self, params: &'a [Param]) -> Result<(), P4Error> {
        for param in params {
            let ty = self.resolve(&param.ty, &[], param.name.span)?;
            let writable = matches!(param.direction, Some(Direction::Out | Direction::InOut));
            self.declare(
                &param.name,
                Binding::Value {
                    ty,
                    writable,
                    constant: None,
                    role: Role::Param(param.direction),
                },
            )?;
        }
        Ok(())
    }

    pub(super) fn parser(&mut self, parser: &'a ParserDecl) -> Result<(), P4Error> {
        self.push_scope();
        let result = self.parser_body(parser);
        self.pop_scope();
        result
    }

    fn parser_body(&mut self, parser: &'a ParserDecl) -> Result<(), P4Error> {
        self.params(&parser.params)?;
        for local in &parser.locals {
            self.local(local)?;
        }
        let mut names: Vec<&str> = Vec::new();
        for state in &parser.states {
            if matches!(state.name.name.as_str(), "accept" | "reject")
                || names.contains(&state.name.name.as_str())
            {
                return Err(self.error(
                    state.name.span,
                    ErrorKind::Duplicate(state.name.name.clone()),
                ));
            }
            names.push(&state.name.name);
        }
        if !names.contains(&"start") {
            return Err(self.error(
                parser.name.span,
                ErrorKind::Unknown {
                    what: "state",
                    name: String::from("start"),
                },
            ));
        }
        let known = |target: &crate::ast::Ident| {
            matches!(target.name.as_str(), "accept" | "reject")
                || names.contains(&target.name.as_str())
        };
        for state in &parser.states {
            self.push_scope();
            let result = self.state_body(state, &known);
            self.pop_scope();
            result?;
        }
        Ok(())
    }

    fn state_body(
        &mut self,
        state: &'a crate::ast::ParserState,
        known: &dyn Fn(&crate::ast::Ident) -> bool,
    ) -> Result<(), P4Error> {
        for stmt in &state.body {
            self.statement(stmt)?;
        }
        let unknown_state = |this: &Self, target: &crate::ast::Ident| {
            this.error(
                target.span,
                ErrorKind::Unknown {
                    what: "state",
                    name: target.name.clone(),
                },
            )
        };
        match &state.transition {
            Transition::Direct(target) => {
                if !known(target) {
                    return Err(unknown_state(self, target));
                }
            }
            Transition::Select { exprs, cases, span } => {
                let mut selector_types = Vec::new();
                for e in exprs {
                    let ty = self.expr(e)?;
                    if !matches!(
                        ty,
                        Type::Bit(_) | Type::Int(_) | Type::Bool | Type::Enum(_) | Type::Error
                    ) {
                        return Err(self.mismatch(e.span, format!("cannot select on {ty}")));
                    }
                    selector_types.push(ty);
                }
                if selector_types.is_empty() {
                    return Err(self.error(
                        *span,
                        ErrorKind::Arity(String::from("select needs at least one expression")),
                    ));
                }
                for case in cases {
                    self.keysets(&case.keysets, &selector_types, case.span, "select")?;
                    if !known(&case.next) {
                        return Err(unknown_state(self, &case.next));
                    }
                }
            }
        }
        Ok(())
    }

    /// Checks keysets against the types they match (select expressions or table keys).
    fn keysets(
        &mut self,
        keysets: &[Keyset],
        types: &[Type],
        at: Span,
        what: &str,
    ) -> Result<(), P4Error> {
        if let [Keyset::Default(_)] = keysets {
            return Ok(());
        }
        if keysets.len() != types.len() {
            return Err(self.error(
                at,
                ErrorKind::Arity(format!(
                    "{what} has {} key{} but this case has {} keyset{}",
                    types.len(),
                    if types.len() == 1 { "" } else { "s" },
                    keysets.len(),
                    if keysets.len() == 1 { "" } else { "s" },
                )),
            ));
        }
        for (keyset, ty) in keysets.iter().zip(types) {
            match keyset {
                Keyset::Default(_) => {}
                Keyset::Value(v) => self.expr_expect(v, ty)?,
                Keyset::Mask(v, m) | Keyset::Range(v, m) => {
                    if !matches!(ty, Type::Bit(_) | Type::Int(_)) {
                        return Err(self.mismatch(
                            v.span,
                            format!("masks and ranges need an integer key, not {ty}"),
                        ));
                    }
                    self.expr_expect(v, ty)?;
                    self.expr_expect(m, ty)?;
                }
            }
        }
        Ok(())
    }

    pub(super) fn control(&mut self, control: &'a ControlDecl) -> Result<(), P4Error> {
        self.push_scope();
        let result = self.control_body(control);
        self.pop_scope();
        result
    }

    fn control_body(&mut self, control: &'a ControlDecl) -> Result<(), P4Error> {
        self.params(&control.params)?;
        for local in &control.locals {
            self.local(local)?;
        }
        self.block(&control.apply)
    }

    fn local(&mut self, local: &'a Local) -> Result<(), P4Error> {
        match local {
            Local::Action(a) => {
                self.action(a)?;
                self.declare(&a.name, Binding::Action(a))
            }
            Local::Table(t) => {
                self.table(t)?;
                self.declare(&t.name, Binding::Table(t))
            }
            Local::Instance(i) => self.instance(i),
            Local::Var(v) => self.var(v),
            Local::Const(c) => self.const_decl(c),
        }
    }

    pub(super) fn action(&mut self, action: &'a ActionDecl) -> Result<(), P4Error> {
        self.push_scope();
        let result = self
            .params(&action.params)
            .and_then(|()| self.block(&action.body));
        self.pop_scope();
        result
    }

    fn action_named(&self, name: &crate::ast::Ident) -> Result<&'a ActionDecl, P4Error> {
        match self.lookup(&name.name) {
            Some(Binding::Action(a)) => Ok(*a),
            _ => Err(self.error(
                name.span,
                ErrorKind::Unknown {
                    what: "action",
                    name: name.name.clone(),
                },
            )),
        }
    }

    /// Checks an action named with arguments: `bound_only` for the `actions` list, where only the
    /// directional parameters are given (the rest come from the control plane).
    fn action_call(&mut self, call: &ActionCall, bound_only: bool) -> Result<(), P4Error> {
        let action = self.action_named(&call.name)?;
        let params: Vec<Param> = action
            .params
            .iter()
            .filter(|p| !bound_only || p.direction.is_some())
            .cloned()
            .collect();
        let mut none = HashMap::new();
        self.arguments(
            &params,
            &[],
            &mut none,
            &call.args,
            call.name.span,
            &call.name.name,
        )
    }

    fn table(&mut self, table: &'a TableDecl) -> Result<(), P4Error> {
        let mut key_types = Vec::new();
        let mut lpm_keys = 0usize;
        for key in &table.keys {
            let ty = self.expr(&key.expr)?;
            if !matches!(
                ty,
                Type::Bit(_) | Type::Int(_) | Type::Bool | Type::Enum(_) | Type::Error
            ) {
                return Err(self.mismatch(
                    key.expr.span,
                    format!("a table key must be a scalar, not {ty}"),
                ));
            }
            if !self.types.match_kinds.contains(&key.match_kind.name) {
                return Err(self.error(
                    key.match_kind.span,
                    ErrorKind::Unknown {
                        what: "match kind",
                        name: key.match_kind.name.clone(),
                    },
                ));
            }
            if key.match_kind.name == "lpm" {
                lpm_keys = lpm_keys.saturating_add(1);
                if lpm_keys > 1 {
                    return Err(self.error(
                        key.match_kind.span,
                        ErrorKind::Invalid(format!(
                            "table '{}' has more than one lpm key",
                            table.name.name
                        )),
                    ));
                }
            }
            key_types.push(ty);
        }
        if table.actions.is_empty() {
            return Err(self.error(
                table.name.span,
                ErrorKind::Invalid(format!("table '{}' lists no actions", table.name.name)),
            ));
        }
        let mut listed: Vec<&str> = Vec::new();
        for call in &table.actions {
            if listed.contains(&call.name.name.as_str()) {
                return Err(
                    self.error(call.name.span, ErrorKind::Duplicate(call.name.name.clone()))
                );
            }
            self.action_call(call, true)?;
            listed.push(&call.name.name);
        }
        let in_list = |this: &Self, call: &ActionCall| {
            if listed.contains(&call.name.name.as_str()) {
                Ok(())
            } else {
                Err(this.error(
                    call.name.span,
                    ErrorKind::Invalid(format!(
                        "action '{}' is not in the actions of table '{}'",
                        call.name.name, table.name.name
                    )),
                ))
            }
        };
        if let Some(default) = &table.default_action {
            in_list(self, &default.call)?;
            self.action_call(&default.call, false)?;
        }
        if !table.entries.is_empty() && table.keys.is_empty() {
            return Err(self.error(
                table.name.span,
                ErrorKind::Invalid(format!(
                    "table '{}' has entries but no key",
                    table.name.name
                )),
            ));
        }
        for entry in &table.entries {
            self.keysets(&entry.keysets, &key_types, entry.span, "the table")?;
            in_list(self, &entry.action)?;
            self.action_call(&entry.action, false)?;
        }
        if let Some(size) = &table.size {
            self.expr(size)?;
            let n = self.constant(size)?;
            if n < 1 || n > i128::from(u32::MAX) {
                return Err(self.error(
                    size.span,
                    ErrorKind::Width(format!("table size {n} is outside 1..=2^32-1")),
                ));
            }
        }
        Ok(())
    }

    fn var(&mut self, v: &'a VarDecl) -> Result<(), P4Error> {
        let ty = self.resolve(&v.ty, &[], v.name.span)?;
        if let Some(init) = &v.init {
            self.expr_expect(init, &ty)?;
        }
        self.declare(
            &v.name,
            Binding::Value {
                ty,
                writable: true,
                constant: None,
                role: Role::Variable,
            },
        )
    }

    pub(super) fn block(&mut self, block: &'a Block) -> Result<(), P4Error> {
        self.push_scope();
        let result = block.stmts.iter().try_for_each(|s| self.statement(s));
        self.pop_scope();
        result
    }

    fn statement(&mut self, stmt: &'a Stmt) -> Result<(), P4Error> {
        match stmt {
            Stmt::Assign { lhs, rhs } => {
                let ty = self.expr(lhs)?;
                self.lvalue(lhs)?;
                self.expr_expect(rhs, &ty)
            }
            Stmt::Call(e) => self.expr(e).map(|_| ()),
            Stmt::If {
                cond,
                then,
                otherwise,
            } => {
                self.expr_expect(cond, &Type::Bool)?;
                self.block(then)?;
                match otherwise {
                    Some(b) => self.block(b),
                    None => Ok(()),
                }
            }
            Stmt::Switch { subject, cases } => self.switch(subject, cases),
            Stmt::Block(b) => self.block(b),
            Stmt::Var(v) => self.var(v),
            Stmt::Const(c) => self.const_decl(c),
            Stmt::Return(_) | Stmt::Exit(_) => Ok(()),
        }
    }

    fn switch(
        &mut self,
        subject: &Expr,
        cases: &'a [crate::ast::SwitchCase],
    ) -> Result<(), P4Error> {
        let ty = self.expr(subject)?;
        let Type::ActionRun(table_name) = ty else {
            return Err(self.error(
                subject.span,
                ErrorKind::Unsupported(format!("switch on {ty} (only on t.apply().action_run)")),
            ));
        };
        let table = match self.lookup(&table_name) {
            Some(Binding::Table(t)) => *t,
            _ => return Ok(()),
        };
        let mut seen: Vec<Option<&str>> = Vec::new();
        for case in cases {
            let label = case.label.as_ref().map(|l| l.name.as_str());
            if seen.contains(&label) {
                return Err(self.error(
                    case.span,
                    ErrorKind::Duplicate(label.unwrap_or("default").to_string()),
                ));
            }
            if let Some(l) = &case.label {
                if !table.actions.iter().any(|a| a.name.name == l.name) {
                    return Err(self.error(
                        l.span,
                        ErrorKind::Invalid(format!(
                            "action '{}' is not in the actions of table '{table_name}'",
                            l.name
                        )),
                    ));
                }
            }
            seen.push(label);
            if let Some(body) = &case.body {
                self.block(body)?;
            }
        }
        Ok(())
    }
}
