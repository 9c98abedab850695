//! The type checker: resolves names and types, and records the type of every expression.
//!
//! Declarations are checked in source order (P4 requires declaration before use), so the global
//! environment grows as the walk proceeds. Submodules: `types` (resolved types and layouts),
//! `expr` (expressions, literal adaptation, constants, calls), `body` (parsers, controls, tables,
//! statements). The result is a [`crate::Checked`].

mod body;
mod expr;
pub mod types;

use crate::ast::{
    ActionDecl, Aggregate, BlockType, ControlDecl, Decl, Direction, ExprKind, ExternDecl, Instance,
    MethodDecl, Param, ParserDecl, Program, TypeRef,
};
use crate::error::{ErrorKind, P4Error, SourceMap, Span};
use std::collections::HashMap;
use types::{EnumInfo, FieldLayout, Layout, Type, TypeTable};

/// The blocks the program's `main` package binds, with the user's header and metadata types.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pipeline {
    /// The package type (`XdpPipeline`).
    pub package: String,
    /// The parser implementation's name.
    pub parser: String,
    /// The ingress control's name.
    pub ingress: String,
    /// The deparser control's name.
    pub deparser: String,
    /// What each package type parameter is bound to (`H` → the headers struct, `M` → metadata).
    pub type_args: Vec<(String, Type)>,
}

/// What a name used as an expression refers to, as resolved by the checker.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NameRef {
    /// A parameter of the enclosing parser, control or action.
    Param {
        /// Its direction (`None`: directionless, i.e. action data).
        direction: Option<Direction>,
    },
    /// A local variable.
    Variable,
    /// A constant, with its value.
    Constant(i128),
    /// An extern instance (`counter`, `register`) or the package.
    Instance,
    /// A table.
    Table,
    /// An action.
    Action,
    /// A parser (in the package instantiation).
    Parser,
    /// A control (in the package instantiation).
    Control,
}

/// What the checker produces besides the AST.
pub(crate) struct CheckOutput {
    pub types: TypeTable,
    pub expr_types: Vec<Option<Type>>,
    pub names: Vec<Option<NameRef>>,
    pub constants: Vec<Option<i128>>,
    pub pipeline: Pipeline,
}

/// How a value binding came to be, for [`NameRef`].
#[derive(Debug, Clone, Copy)]
enum Role {
    Param(Option<Direction>),
    Variable,
    Constant,
    Instance,
}

/// What a name in scope stands for.
#[derive(Debug, Clone)]
enum Binding<'a> {
    /// A value: variable, parameter, constant or extern instance.
    Value {
        ty: Type,
        writable: bool,
        constant: Option<i128>,
        role: Role,
    },
    Table(&'a crate::ast::TableDecl),
    Action(&'a ActionDecl),
    Parser(&'a ParserDecl),
    Control(&'a ControlDecl),
}

pub(crate) struct Checker<'a> {
    sources: &'a SourceMap,
    types: TypeTable,
    externs: HashMap<String, &'a ExternDecl>,
    functions: HashMap<String, &'a MethodDecl>,
    parser_types: HashMap<String, &'a BlockType>,
    control_types: HashMap<String, &'a BlockType>,
    packages: HashMap<String, &'a BlockType>,
    /// Innermost last; the first holds the globals.
    scopes: Vec<HashMap<String, Binding<'a>>>,
    expr_types: Vec<Option<Type>>,
    names: Vec<Option<NameRef>>,
    constants: Vec<Option<i128>>,
    pipeline: Option<Pipeline>,
}

/// Checks `program`; `sources` turns spans into positions for errors.
pub(crate) fn check(program: &Program, sources: &SourceMap) -> Result<CheckOutput, P4Error> {
    let mut checker = Checker {
        sources,
        types: TypeTable::default(),
        externs: HashMap::new(),
        functions: HashMap::new(),
        parser_types: HashMap::new(),
        control_types: HashMap::new(),
        packages: HashMap::new(),
        scopes: vec![HashMap::new()],
        expr_types: vec![None; program.expr_count as usize],
        names: vec![None; program.expr_count as usize],
        constants: vec![None; program.expr_count as usize],
        pipeline: None,
    };
    for decl in &program.decls {
        checker.declaration(decl)?;
    }
    let start_of_program = Span::default();
    let pipeline = checker.pipeline.take().ok_or_else(|| {
        sources.error(
            start_of_program,
            ErrorKind::Invalid(String::from(
                "no package instance named 'main' (write e.g. `XdpPipeline(P(), I(), D()) main;`)",
            )),
        )
    })?;
    Ok(CheckOutput {
        types: checker.types,
        expr_types: checker.expr_types,
        names: checker.names,
        constants: checker.constants,
        pipeline,
    })
}

impl<'a> Checker<'a> {
    fn error(&self, span: Span, kind: ErrorKind) -> P4Error {
        self.sources.error(span, kind)
    }

    /// The source text of a span (for messages such as "in 'hdr.ipv4'").
    fn snippet(&self, span: Span) -> String {
        self.sources
            .file(span.file)
            .and_then(|f| f.text.get(span.start as usize..span.end as usize))
            .unwrap_or("")
            .to_string()
    }

    fn mismatch(&self, span: Span, message: String) -> P4Error {
        self.error(span, ErrorKind::TypeMismatch(message))
    }

    // ---- scopes ------------------------------------------------------------------------------

    fn declare(&mut self, name: &crate::ast::Ident, binding: Binding<'a>) -> Result<(), P4Error> {
        let scope = self.scopes.len().saturating_sub(1);
        let Some(scope) = self.scopes.get_mut(scope) else {
            return Ok(());
        };
        if scope.contains_key(&name.name) {
            return Err(self
                .sources
                .error(name.span, ErrorKind::Duplicate(name.name.clone())));
        }
        scope.insert(name.name.clone(), binding);
        Ok(())
    }

    fn lookup(&self, name: &str) -> Option<&Binding<'a>> {
        self.scopes.iter().rev().find_map(|scope| scope.get(name))
    }

    fn push_scope(&mut self) {
        self.scopes.push(HashMap::new());
    }

    fn pop_scope(&mut self) {
        if self.scopes.len() > 1 {
            self.scopes.pop();
        }
    }

    /// A global type or instance name must be new.
    fn claim_global(&self, name: &crate::ast::Ident) -> Result<(), P4Error> {
        let n = name.name.as_str();
        let taken = self.types.headers.contains_key(n)
            || self.types.structs.contains_key(n)
            || self.types.enums.contains_key(n)
            || self.types.typedefs.contains_key(n)
            || self.externs.contains_key(n)
            || self.functions.contains_key(n)
            || self.parser_types.contains_key(n)
            || self.control_types.contains_key(n)
            || self.packages.contains_key(n)
            || self.scopes.first().is_some_and(|g| g.contains_key(n));
        if taken {
            return Err(self.error(name.span, ErrorKind::Duplicate(name.name.clone())));
        }
        Ok(())
    }

    // ---- types -------------------------------------------------------------------------------

    /// Resolves a written type; `vars` are the type parameters in scope, `at` is where to report
    /// errors for types that carry no span of their own.
    fn resolve(&self, ty: &TypeRef, vars: &[String], at: Span) -> Result<Type, P4Error> {
        Ok(match ty {
            TypeRef::Bit(w) => Type::Bit(*w),
            TypeRef::Int(w) => Type::Int(*w),
            TypeRef::Bool => Type::Bool,
            TypeRef::Error => Type::Error,
            TypeRef::Void => Type::Void,
            TypeRef::InfInt => Type::InfInt,
            TypeRef::Named(name) => self.resolve_name(&name.name, vars, name.span)?,
            TypeRef::Specialized(name, args) => {
                let args = args
                    .iter()
                    .map(|a| self.resolve(a, vars, name.span))
                    .collect::<Result<Vec<_>, _>>()?;
                let declared = if let Some(decl) = self.externs.get(&name.name) {
                    Some((decl.type_params.len(), true))
                } else {
                    self.parser_types
                        .get(&name.name)
                        .or_else(|| self.control_types.get(&name.name))
                        .map(|b| (b.type_params.len(), false))
                };
                match declared {
                    Some((count, is_extern)) if count == args.len() => {
                        if is_extern {
                            Type::Extern(name.name.clone(), args)
                        } else {
                            Type::Block(name.name.clone(), args)
                        }
                    }
                    Some((count, _)) => {
                        return Err(self.error(
                            name.span,
                            ErrorKind::Arity(format!(
                                "'{}' takes {count} type arguments, found {}",
                                name.name,
                                args.len()
                            )),
                        ))
                    }
                    None => {
                        return Err(self.error(
                            name.span,
                            ErrorKind::Unknown {
                                what: "generic type",
                                name: name.name.clone(),
                            },
                        ))
                    }
                }
            }
            TypeRef::Stack(element, size) => {
                let inner_span = match element.as_ref() {
                    TypeRef::Named(n) => n.span,
                    _ => at,
                };
                match self.resolve(element, vars, at)? {
                    Type::Header(h) => Type::Stack(Box::new(Type::Header(h)), *size),
                    other => {
                        return Err(self.mismatch(
                            inner_span,
                            format!("a header stack's elements must be headers, not {other}"),
                        ))
                    }
                }
            }
        })
    }

    fn resolve_name(&self, name: &str, vars: &[String], span: Span) -> Result<Type, P4Error> {
        if vars.iter().any(|v| v == name) {
            return Ok(Type::Var(name.to_string()));
        }
        if let Some(t) = self.types.typedefs.get(name) {
            return Ok(t.clone());
        }
        if self.types.headers.contains_key(name) {
            return Ok(Type::Header(name.to_string()));
        }
        if self.types.structs.contains_key(name) {
            return Ok(Type::Struct(name.to_string()));
        }
        if self.types.enums.contains_key(name) {
            return Ok(Type::Enum(name.to_string()));
        }
        if let Some(decl) = self.externs.get(name) {
            if decl.type_params.is_empty() {
                return Ok(Type::Extern(name.to_string(), Vec::new()));
            }
        }
        if self.parser_types.contains_key(name) || self.control_types.contains_key(name) {
            return Ok(Type::Block(name.to_string(), Vec::new()));
        }
        Err(self.error(
            span,
            ErrorKind::Unknown {
                what: "type",
                name: name.to_string(),
            },
        ))
    }

    // ---- declarations ------------------------------------------------------------------------

    fn declaration(&mut self, decl: &'a Decl) -> Result<(), P4Error> {
        match decl {
            Decl::Const(c) => {
                self.claim_global(&c.name)?;
                self.const_decl(c)
            }
            Decl::Typedef(t) => {
                self.claim_global(&t.name)?;
                let ty = self.resolve(&t.ty, &[], t.name.span)?;
                self.types.typedefs.insert(t.name.name.clone(), ty);
                Ok(())
            }
            Decl::Header(h) => {
                self.claim_global(&h.name)?;
                let layout = self.layout(h, true)?;
                self.types.headers.insert(h.name.name.clone(), layout);
                Ok(())
            }
            Decl::Struct(s) => {
                self.claim_global(&s.name)?;
                let layout = self.layout(s, false)?;
                self.types.structs.insert(s.name.name.clone(), layout);
                Ok(())
            }
            Decl::Enum(e) => self.enum_decl(e),
            Decl::Error(list) => {
                for member in &list.members {
                    if self.types.errors.contains(&member.name) {
                        return Err(
                            self.error(member.span, ErrorKind::Duplicate(member.name.clone()))
                        );
                    }
                    self.types.errors.push(member.name.clone());
                }
                Ok(())
            }
            Decl::MatchKind(list) => {
                for member in &list.members {
                    if self.types.match_kinds.contains(&member.name) {
                        return Err(
                            self.error(member.span, ErrorKind::Duplicate(member.name.clone()))
                        );
                    }
                    self.types.match_kinds.push(member.name.clone());
                }
                Ok(())
            }
            Decl::Extern(e) => {
                self.claim_global(&e.name)?;
                self.externs.insert(e.name.name.clone(), e);
                let vars: Vec<String> = e.type_params.iter().map(|p| p.name.clone()).collect();
                for method in &e.methods {
                    self.signature(method, &vars)?;
                }
                Ok(())
            }
            Decl::ExternFunction(f) => {
                self.claim_global(&f.name)?;
                self.signature(f, &[])?;
                self.functions.insert(f.name.name.clone(), f);
                Ok(())
            }
            Decl::ParserType(b) => {
                self.claim_global(&b.name)?;
                self.block_signature(b)?;
                self.parser_types.insert(b.name.name.clone(), b);
                Ok(())
            }
            Decl::ControlType(b) => {
                self.claim_global(&b.name)?;
                self.block_signature(b)?;
                self.control_types.insert(b.name.name.clone(), b);
                Ok(())
            }
            Decl::Package(b) => {
                self.claim_global(&b.name)?;
                self.block_signature(b)?;
                self.packages.insert(b.name.name.clone(), b);
                Ok(())
            }
            Decl::Parser(p) => {
                self.claim_global(&p.name)?;
                self.parser(p)?;
                self.declare(&p.name, Binding::Parser(p))
            }
            Decl::Control(c) => {
                self.claim_global(&c.name)?;
                self.control(c)?;
                self.declare(&c.name, Binding::Control(c))
            }
            Decl::Action(a) => {
                self.claim_global(&a.name)?;
                self.action(a)?;
                self.declare(&a.name, Binding::Action(a))
            }
            Decl::Instance(i) => {
                self.claim_global(&i.name)?;
                if let TypeRef::Named(name) = &i.ty {
                    if self.packages.contains_key(&name.name) {
                        return self.package_instance(i, name);
                    }
                }
                self.instance(i)
            }
        }
    }

    /// Checks that a method signature's types resolve.
    fn signature(&self, method: &MethodDecl, outer: &[String]) -> Result<(), P4Error> {
        let mut vars = outer.to_vec();
        vars.extend(method.type_params.iter().map(|p| p.name.clone()));
        if let Some(result) = &method.result {
            self.resolve(result, &vars, method.name.span)?;
        }
        for param in &method.params {
            self.resolve(&param.ty, &vars, param.name.span)?;
        }
        Ok(())
    }

    fn block_signature(&self, block: &BlockType) -> Result<(), P4Error> {
        let vars: Vec<String> = block.type_params.iter().map(|p| p.name.clone()).collect();
        for param in &block.params {
            self.resolve(&param.ty, &vars, param.name.span)?;
        }
        Ok(())
    }

    fn layout(&self, aggregate: &Aggregate, is_header: bool) -> Result<Layout, P4Error> {
        let mut fields: Vec<FieldLayout> = Vec::new();
        let mut offset: u32 = 0;
        for field in &aggregate.fields {
            if fields.iter().any(|f| f.name == field.name.name) {
                return Err(self.error(
                    field.name.span,
                    ErrorKind::Duplicate(field.name.name.clone()),
                ));
            }
            let ty = self.resolve(&field.ty, &[], field.name.span)?;
            let offset_bits = if is_header { offset } else { 0 };
            if is_header {
                let width = match &ty {
                    Type::Bit(w) | Type::Int(w) => *w,
                    Type::Enum(e) => self
                        .types
                        .enums
                        .get(e)
                        .and_then(|info| info.underlying.as_ref())
                        .and_then(Type::scalar_width)
                        .ok_or_else(|| {
                            self.mismatch(
                                field.name.span,
                                format!("header field '{}' has a non-serializable enum type", field.name.name),
                            )
                        })?,
                    other => {
                        return Err(self.mismatch(
                            field.name.span,
                            format!(
                                "header field '{}' must be bit<N>, int<N> or a serializable enum, not {other}",
                                field.name.name
                            ),
                        ))
                    }
                };
                offset = offset.checked_add(width).ok_or_else(|| {
                    self.error(
                        field.name.span,
                        ErrorKind::Width(String::from("header too wide")),
                    )
                })?;
            } else if matches!(ty, Type::Extern(..) | Type::Block(..) | Type::Void) {
                return Err(self.mismatch(
                    field.name.span,
                    format!("struct field '{}' cannot have type {ty}", field.name.name),
                ));
            }
            fields.push(FieldLayout {
                name: field.name.name.clone(),
                ty,
                offset_bits,
            });
        }
        if is_header && !offset.is_multiple_of(8) {
            return Err(self.error(
                aggregate.name.span,
                ErrorKind::Width(format!(
                    "header '{}' is {offset} bits wide, not a whole number of bytes",
                    aggregate.name.name
                )),
            ));
        }
        Ok(Layout {
            name: aggregate.name.name.clone(),
            fields,
            width_bits: if is_header { offset } else { 0 },
        })
    }

    fn enum_decl(&mut self, e: &'a crate::ast::EnumDecl) -> Result<(), P4Error> {
        self.claim_global(&e.name)?;
        let underlying = match &e.underlying {
            Some(t) => Some(self.resolve(t, &[], e.name.span)?),
            None => None,
        };
        let mut members: Vec<(String, Option<i128>)> = Vec::new();
        for (member, value) in &e.members {
            if members.iter().any(|(m, _)| *m == member.name) {
                return Err(self.error(member.span, ErrorKind::Duplicate(member.name.clone())));
            }
            let value = match (&underlying, value) {
                (Some(t), Some(v)) => {
                    self.expr_expect(v, t)?;
                    Some(self.constant(v)?)
                }
                (None, Some(v)) => return Err(self.error(
                    v.span,
                    ErrorKind::Invalid(String::from(
                        "only an enum with an underlying type (enum bit<N> E) has member values",
                    )),
                )),
                (Some(_), None) => {
                    return Err(self.error(
                        member.span,
                        ErrorKind::Invalid(format!("member '{}' needs a value", member.name)),
                    ))
                }
                (None, None) => None,
            };
            members.push((member.name.clone(), value));
        }
        self.types.enums.insert(
            e.name.name.clone(),
            EnumInfo {
                underlying,
                members,
            },
        );
        Ok(())
    }

    fn const_decl(&mut self, c: &'a crate::ast::ConstDecl) -> Result<(), P4Error> {
        let ty = self.resolve(&c.ty, &[], c.name.span)?;
        self.expr_expect(&c.value, &ty)?;
        let value = if ty.is_integer() || ty == Type::Bool {
            Some(self.constant(&c.value)?)
        } else {
            None
        };
        self.declare(
            &c.name,
            Binding::Value {
                ty,
                writable: false,
                constant: value,
                role: Role::Constant,
            },
        )
    }

    /// An extern instance: the type must be an extern with a constructor taking these arguments.
    fn instance(&mut self, i: &'a Instance) -> Result<(), P4Error> {
        let ty = self.resolve(&i.ty, &[], i.name.span)?;
        let Type::Extern(name, type_args) = &ty else {
            return Err(self.mismatch(
                i.name.span,
                format!("only externs and packages can be instantiated, not {ty}"),
            ));
        };
        let Some(decl) = self.externs.get(name).copied() else {
            return Err(self.mismatch(i.name.span, format!("'{name}' is not an extern")));
        };
        let constructor = decl
            .methods
            .iter()
            .find(|m| m.result.is_none() && m.params.len() == i.args.len())
            .ok_or_else(|| {
                self.error(
                    i.name.span,
                    ErrorKind::Arity(format!(
                        "no constructor of '{name}' takes {} arguments",
                        i.args.len()
                    )),
                )
            })?;
        let mut bindings: HashMap<String, Type> = decl
            .type_params
            .iter()
            .map(|p| p.name.clone())
            .zip(type_args.iter().cloned())
            .collect();
        let vars = expr::type_param_names(&decl.type_params, &[]);
        self.arguments(
            &constructor.params,
            &vars,
            &mut bindings,
            &i.args,
            i.name.span,
            name,
        )?;
        self.declare(
            &i.name,
            Binding::Value {
                ty,
                writable: false,
                constant: None,
                role: Role::Instance,
            },
        )
    }

    /// `Package(P(), I(), D()) main;`: binds each block to the package parameter whose parser or
    /// control type it must implement, inferring the package's type parameters.
    fn package_instance(
        &mut self,
        i: &'a Instance,
        package_name: &crate::ast::Ident,
    ) -> Result<(), P4Error> {
        let Some(package) = self.packages.get(&package_name.name).copied() else {
            return Ok(());
        };
        if i.args.len() != package.params.len() {
            return Err(self.error(
                i.name.span,
                ErrorKind::Arity(format!(
                    "'{}' takes {} blocks, found {}",
                    package.name.name,
                    package.params.len(),
                    i.args.len()
                )),
            ));
        }
        let package_vars: Vec<String> =
            package.type_params.iter().map(|p| p.name.clone()).collect();
        let mut bound: HashMap<String, Type> = HashMap::new();
        let mut names = Vec::new();
        for (param, arg) in package.params.iter().zip(&i.args) {
            let ExprKind::Call { callee, args, .. } = &arg.kind else {
                return Err(self.mismatch(
                    arg.span,
                    String::from("a package argument must be `Block()`"),
                ));
            };
            let ExprKind::Name(block_name) = &callee.kind else {
                return Err(self.mismatch(
                    arg.span,
                    String::from("a package argument must be `Block()`"),
                ));
            };
            if !args.is_empty() {
                return Err(self.error(
                    arg.span,
                    ErrorKind::Unsupported(String::from(
                        "constructor arguments of parsers and controls",
                    )),
                ));
            }
            let want = self.resolve(&param.ty, &package_vars, param.name.span)?;
            let Type::Block(block_type_name, block_args) = want else {
                return Err(self.mismatch(
                    param.name.span,
                    format!("package parameter has type {want}"),
                ));
            };
            let (signature, implemented): (&BlockType, (&[Param], &str)) =
                match self.lookup(&block_name.name) {
                    Some(Binding::Parser(p)) => match self.parser_types.get(&block_type_name) {
                        Some(sig) => (*sig, (&p.params, "parser")),
                        None => {
                            return Err(self.mismatch(
                                arg.span,
                                format!(
                                    "'{}' is a parser, but '{}' needs a control",
                                    block_name.name, param.name.name
                                ),
                            ))
                        }
                    },
                    Some(Binding::Control(c)) => match self.control_types.get(&block_type_name) {
                        Some(sig) => (*sig, (&c.params, "control")),
                        None => {
                            return Err(self.mismatch(
                                arg.span,
                                format!(
                                    "'{}' is a control, but '{}' needs a parser",
                                    block_name.name, param.name.name
                                ),
                            ))
                        }
                    },
                    _ => {
                        return Err(self.error(
                            block_name.span,
                            ErrorKind::Unknown {
                                what: "parser or control",
                                name: block_name.name.clone(),
                            },
                        ))
                    }
                };
            let (params, kind) = implemented;
            if params.len() != signature.params.len() {
                return Err(self.error(
                    block_name.span,
                    ErrorKind::Arity(format!(
                        "{kind} '{}' has {} parameters, but {} has {}",
                        block_name.name,
                        params.len(),
                        signature.name.name,
                        signature.params.len()
                    )),
                ));
            }
            let sig_vars: Vec<String> = signature
                .type_params
                .iter()
                .map(|p| p.name.clone())
                .collect();
            // The signature's own parameters stand for the package's type arguments.
            let renaming: HashMap<String, Type> = sig_vars
                .iter()
                .cloned()
                .zip(block_args.iter().cloned())
                .collect();
            for (sig_param, user_param) in signature.params.iter().zip(params) {
                let expected = substitute(
                    &self.resolve(&sig_param.ty, &sig_vars, sig_param.name.span)?,
                    &renaming,
                );
                let actual = self.resolve(&user_param.ty, &[], user_param.name.span)?;
                let direction_ok = sig_param.direction == user_param.direction
                    || (sig_param.direction.is_none()
                        && user_param.direction == Some(Direction::In));
                if !direction_ok || !unify(&expected, &actual, &mut bound) {
                    return Err(self.mismatch(
                        user_param.name.span,
                        format!(
                            "parameter '{}' of {kind} '{}' is {}{actual}, but {} requires {}{}",
                            user_param.name.name,
                            block_name.name,
                            direction_word(user_param.direction),
                            signature.name.name,
                            direction_word(sig_param.direction),
                            substitute(&expected, &bound)
                        ),
                    ));
                }
            }
            names.push(block_name.name.clone());
        }
        self.declare(
            &i.name,
            Binding::Value {
                ty: Type::Extern(package.name.name.clone(), Vec::new()),
                writable: false,
                constant: None,
                role: Role::Instance,
            },
        )?;
        if i.name.name == "main" {
            let mut blocks = names.into_iter();
            self.pipeline = Some(Pipeline {
                package: package.name.name.clone(),
                parser: blocks.next().unwrap_or_default(),
                ingress: blocks.next().unwrap_or_default(),
                deparser: blocks.next().unwrap_or_default(),
                type_args: package_vars
                    .iter()
                    .filter_map(|v| bound.get(v).map(|t| (v.clone(), t.clone())))
                    .collect(),
            });
        }
        Ok(())
    }
}

fn direction_word(direction: Option<Direction>) -> &'static str {
    match direction {
        Some(Direction::In) => "in ",
        Some(Direction::Out) => "out ",
        Some(Direction::InOut) => "inout ",
        None => "",
    }
}

/// Replaces type variables bound in `bindings`.
pub(crate) fn substitute(ty: &Type, bindings: &HashMap<String, Type>) -> Type {
    match ty {
        Type::Var(v) => bindings.get(v).cloned().unwrap_or_else(|| ty.clone()),
        Type::Extern(n, args) => Type::Extern(
            n.clone(),
            args.iter().map(|a| substitute(a, bindings)).collect(),
        ),
        Type::Block(n, args) => Type::Block(
            n.clone(),
            args.iter().map(|a| substitute(a, bindings)).collect(),
        ),
        Type::Stack(t, n) => Type::Stack(Box::new(substitute(t, bindings)), *n),
        other => other.clone(),
    }
}

/// Matches `pattern` (which may hold type variables) against `actual`, binding variables.
pub(crate) fn unify(pattern: &Type, actual: &Type, bindings: &mut HashMap<String, Type>) -> bool {
    match pattern {
        Type::Var(v) => match bindings.get(v) {
            Some(bound) => bound == actual,
            None => {
                bindings.insert(v.clone(), actual.clone());
                true
            }
        },
        Type::Extern(n, args) | Type::Block(n, args) => match actual {
            Type::Extern(m, other) | Type::Block(m, other) => {
                n == m
                    && args.len() == other.len()
                    && args.iter().zip(other).all(|(a, b)| unify(a, b, bindings))
            }
            _ => false,
        },
        Type::Stack(t, n) => match actual {
            Type::Stack(u, m) => n == m && unify(t, u, bindings),
            _ => false,
        },
        _ => pattern == actual,
    }
}
