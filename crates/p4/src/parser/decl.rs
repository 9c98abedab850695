//! Declarations: types, constants, externs, architecture block types, parsers, controls, actions,
//! tables and instances. Every declaration that names a type registers it for type-name feedback.

use super::{Parser, MAX_STACK, MAX_WIDTH_BITS};
use crate::ast::{
    ActionCall, ActionDecl, Aggregate, BlockType, ConstDecl, ControlDecl, Decl, DefaultAction,
    Direction, Entry, EnumDecl, ExternDecl, Field, Ident, Instance, Local, MemberList, MethodDecl,
    Param, ParserDecl, ParserState, SelectCase, TableDecl, TableKey, Transition, TypeRef,
    TypedefDecl, VarDecl,
};
use crate::error::{ErrorKind, P4Error};
use crate::lexer::{decode_int, Tok};

impl Parser<'_> {
    /// One top-level declaration.
    pub(super) fn declaration(&mut self) -> Result<Decl, P4Error> {
        self.skip_annotations()?;
        let token = self.peek();
        match token.kind {
            Tok::Const => Ok(Decl::Const(self.const_decl()?)),
            Tok::Typedef => {
                self.bump();
                let ty = self.type_ref()?;
                let name = self.ident("the typedef's name")?;
                self.expect(Tok::Semi, "';' after the typedef")?;
                self.declare_type(&name.name);
                Ok(Decl::Typedef(TypedefDecl { ty, name }))
            }
            Tok::Header => {
                self.bump();
                Ok(Decl::Header(self.aggregate()?))
            }
            Tok::Struct => {
                self.bump();
                Ok(Decl::Struct(self.aggregate()?))
            }
            Tok::HeaderUnion => Err(self.error(
                token.span,
                ErrorKind::Unsupported(String::from("header_union")),
            )),
            Tok::Enum => self.enum_decl(),
            Tok::Error => {
                self.bump();
                Ok(Decl::Error(self.member_list()?))
            }
            Tok::MatchKind => {
                self.bump();
                Ok(Decl::MatchKind(self.member_list()?))
            }
            Tok::Extern => self.extern_decl(),
            Tok::Parser => self.parser_decl(),
            Tok::Control => self.control_decl(),
            Tok::Package => {
                self.bump();
                let block = self.block_type()?;
                self.expect(Tok::Semi, "';' after the package type")?;
                Ok(Decl::Package(block))
            }
            Tok::Action => Ok(Decl::Action(self.action_decl()?)),
            Tok::Directive => Err(self.error(
                token.span,
                ErrorKind::Unsupported(format!(
                    "preprocessor directive '{}' (only #include is supported)",
                    self.text(token)
                )),
            )),
            Tok::Ident if self.is_type_name(self.text(token)) => {
                let ty = self.type_ref()?;
                Ok(Decl::Instance(self.instance_rest(ty)?))
            }
            _ => Err(self.unexpected("a declaration")),
        }
    }

    // ---- types ---------------------------------------------------------------------------

    /// A type: `bit<N>`, `int<N>`, `int`, `bool`, `error`, `void`, a type name with optional type
    /// arguments, followed by optional `[N]` for a header stack.
    pub(super) fn type_ref(&mut self) -> Result<TypeRef, P4Error> {
        let token = self.peek();
        let base = match token.kind {
            Tok::Bit => {
                self.bump();
                if self.at(Tok::Lt) {
                    TypeRef::Bit(self.width()?)
                } else {
                    TypeRef::Bit(1)
                }
            }
            Tok::Int => {
                self.bump();
                if self.at(Tok::Lt) {
                    TypeRef::Int(self.width()?)
                } else {
                    TypeRef::InfInt
                }
            }
            Tok::Bool => {
                self.bump();
                TypeRef::Bool
            }
            Tok::Error => {
                self.bump();
                TypeRef::Error
            }
            Tok::Void => {
                self.bump();
                TypeRef::Void
            }
            Tok::Varbit => {
                return Err(self.error(token.span, ErrorKind::Unsupported(String::from("varbit"))))
            }
            Tok::Ident if self.is_type_name(self.text(token)) => {
                let name = self.ident("a type")?;
                if self.eat(Tok::Lt) {
                    TypeRef::Specialized(name, self.type_argument_list()?)
                } else {
                    TypeRef::Named(name)
                }
            }
            Tok::Ident => {
                let name = self.text(token).to_string();
                return Err(self.error(token.span, ErrorKind::Unknown { what: "type", name }));
            }
            _ => return Err(self.unexpected("a type")),
        };
        if self.at(Tok::LBracket) {
            self.bump();
            let size = self.small_number("the header stack size", 1, MAX_STACK)?;
            self.expect(Tok::RBracket, "']' after the stack size")?;
            return Ok(TypeRef::Stack(Box::new(base), size));
        }
        Ok(base)
    }

    /// `<N>` of `bit<N>` / `int<N>`.
    fn width(&mut self) -> Result<u32, P4Error> {
        self.expect(Tok::Lt, "'<'")?;
        let width = self.small_number("a width", 1, MAX_WIDTH_BITS)?;
        self.expect(Tok::Gt, "'>' closing the width")?;
        Ok(width)
    }

    /// An integer literal in `lo..=hi`, for widths and sizes.
    fn small_number(&mut self, what: &str, lo: u32, hi: u32) -> Result<u32, P4Error> {
        let token = self.peek();
        if token.kind != Tok::Number {
            return Err(self.unexpected(&format!("{what} (an integer literal)")));
        }
        self.bump();
        let text = self.text(token).to_string();
        let value = decode_int(&text)
            .map_err(|why| self.error(token.span, ErrorKind::BadLiteral(text.clone(), why)))?
            .value;
        match u32::try_from(value) {
            Ok(v) if (lo..=hi).contains(&v) => Ok(v),
            _ => Err(self.error(
                token.span,
                ErrorKind::Width(format!("{what} {text} is outside {lo}..={hi}")),
            )),
        }
    }

    /// `<T, U>` after a declared name, if present.
    fn type_params(&mut self) -> Result<Vec<Ident>, P4Error> {
        let mut params = Vec::new();
        if self.eat(Tok::Lt) {
            loop {
                params.push(self.ident("a type parameter")?);
                if !self.eat(Tok::Comma) {
                    break;
                }
            }
            self.expect(Tok::Gt, "',' or '>' in type parameters")?;
        }
        Ok(params)
    }

    /// `(params)`.
    pub(super) fn params(&mut self) -> Result<Vec<Param>, P4Error> {
        self.expect(Tok::LParen, "'(' of a parameter list")?;
        let mut params = Vec::new();
        if !self.at(Tok::RParen) {
            loop {
                self.skip_annotations()?;
                let direction = match self.peek().kind {
                    Tok::In => Some(Direction::In),
                    Tok::Out => Some(Direction::Out),
                    Tok::Inout => Some(Direction::InOut),
                    _ => None,
                };
                if direction.is_some() {
                    self.bump();
                }
                let ty = self.type_ref()?;
                let name = self.ident("a parameter name")?;
                params.push(Param {
                    direction,
                    ty,
                    name,
                });
                if !self.eat(Tok::Comma) {
                    break;
                }
            }
        }
        self.expect(Tok::RParen, "',' or ')' in a parameter list")?;
        Ok(params)
    }

    // ---- simple declarations -------------------------------------------------------------

    pub(super) fn const_decl(&mut self) -> Result<ConstDecl, P4Error> {
        self.expect(Tok::Const, "'const'")?;
        let ty = self.type_ref()?;
        let name = self.ident("the constant's name")?;
        self.expect(Tok::Assign, "'=' in a constant declaration")?;
        let value = self.expression()?;
        self.expect(Tok::Semi, "';' after the constant")?;
        Ok(ConstDecl { ty, name, value })
    }

    fn aggregate(&mut self) -> Result<Aggregate, P4Error> {
        let name = self.ident("the type's name")?;
        // Declared before the fields so that a struct can be mentioned in its own scope's errors.
        self.declare_type(&name.name);
        self.expect(Tok::LBrace, "'{' opening the fields")?;
        let mut fields = Vec::new();
        while !self.eat(Tok::RBrace) {
            self.skip_annotations()?;
            let ty = self.type_ref()?;
            let field = self.ident("a field name")?;
            self.expect(Tok::Semi, "';' after the field")?;
            fields.push(Field { ty, name: field });
        }
        Ok(Aggregate { name, fields })
    }

    fn enum_decl(&mut self) -> Result<Decl, P4Error> {
        self.expect(Tok::Enum, "'enum'")?;
        let underlying = if matches!(self.peek().kind, Tok::Bit | Tok::Int) {
            Some(self.type_ref()?)
        } else {
            None
        };
        let name = self.ident("the enum's name")?;
        self.declare_type(&name.name);
        self.expect(Tok::LBrace, "'{' opening the enum members")?;
        let mut members = Vec::new();
        loop {
            let member = self.ident("an enum member")?;
            let value = if self.eat(Tok::Assign) {
                Some(self.expression()?)
            } else {
                None
            };
            members.push((member, value));
            if !self.eat(Tok::Comma) || self.at(Tok::RBrace) {
                break;
            }
        }
        self.expect(Tok::RBrace, "',' or '}' in the enum")?;
        Ok(Decl::Enum(EnumDecl {
            underlying,
            name,
            members,
        }))
    }

    fn member_list(&mut self) -> Result<MemberList, P4Error> {
        self.expect(Tok::LBrace, "'{'")?;
        let mut members = Vec::new();
        loop {
            members.push(self.ident("a member name")?);
            if !self.eat(Tok::Comma) || self.at(Tok::RBrace) {
                break;
            }
        }
        self.expect(Tok::RBrace, "',' or '}'")?;
        Ok(MemberList { members })
    }

    // ---- externs and architecture types --------------------------------------------------

    fn extern_decl(&mut self) -> Result<Decl, P4Error> {
        self.expect(Tok::Extern, "'extern'")?;
        let object = self.at(Tok::Ident)
            && !self.is_type_name(self.text(self.peek()))
            && matches!(self.peek_at(1).kind, Tok::LBrace | Tok::Lt);
        if !object {
            let method = self.method_decl(None)?;
            return Ok(Decl::ExternFunction(method));
        }
        let name = self.ident("the extern's name")?;
        self.declare_type(&name.name);
        let type_params = self.type_params()?;
        self.push_type_params(&type_params);
        let result = self.extern_body(&name);
        self.pop_type_params();
        Ok(Decl::Extern(ExternDecl {
            name,
            type_params,
            methods: result?,
        }))
    }

    fn extern_body(&mut self, name: &Ident) -> Result<Vec<MethodDecl>, P4Error> {
        self.expect(Tok::LBrace, "'{' opening the extern's methods")?;
        let mut methods = Vec::new();
        while !self.eat(Tok::RBrace) {
            self.skip_annotations()?;
            let constructor = self.at(Tok::Ident)
                && self.text(self.peek()) == name.name
                && self.peek_at(1).kind == Tok::LParen;
            methods.push(self.method_decl(constructor.then_some(()))?);
        }
        Ok(methods)
    }

    /// `R name<T>(params);`, or `name(params);` for a constructor (`Some(())`).
    fn method_decl(&mut self, constructor: Option<()>) -> Result<MethodDecl, P4Error> {
        if constructor.is_some() {
            let name = self.ident("the constructor")?;
            let params = self.params()?;
            self.expect(Tok::Semi, "';' after the constructor")?;
            return Ok(MethodDecl {
                result: None,
                name,
                type_params: Vec::new(),
                params,
            });
        }
        // The result type may mention the method's own type parameters (`T f<T>()`), which are
        // not known yet; such results are not supported.
        let result = self.type_ref()?;
        let name = self.ident("a method name")?;
        let type_params = self.type_params()?;
        self.push_type_params(&type_params);
        let params = self.params();
        self.pop_type_params();
        let params = params?;
        self.expect(Tok::Semi, "';' after the method")?;
        Ok(MethodDecl {
            result: Some(result),
            name,
            type_params,
            params,
        })
    }

    /// `Name<T>(params)` of a parser, control or package type.
    fn block_type(&mut self) -> Result<BlockType, P4Error> {
        let name = self.ident("a name")?;
        self.declare_type(&name.name);
        let type_params = self.type_params()?;
        self.push_type_params(&type_params);
        let params = self.params();
        self.pop_type_params();
        Ok(BlockType {
            name,
            type_params,
            params: params?,
        })
    }

    // ---- parsers -------------------------------------------------------------------------

    fn parser_decl(&mut self) -> Result<Decl, P4Error> {
        self.expect(Tok::Parser, "'parser'")?;
        let block = self.block_type()?;
        if self.eat(Tok::Semi) {
            return Ok(Decl::ParserType(block));
        }
        if !block.type_params.is_empty() {
            return Err(self.error(
                block.name.span,
                ErrorKind::Unsupported(String::from("a generic parser implementation")),
            ));
        }
        self.expect(Tok::LBrace, "'{' or ';' after the parser's parameters")?;
        let mut locals = Vec::new();
        let mut states = Vec::new();
        while !self.eat(Tok::RBrace) {
            self.skip_annotations()?;
            if self.at(Tok::State) {
                states.push(self.parser_state()?);
            } else {
                locals.push(self.local()?);
            }
        }
        Ok(Decl::Parser(ParserDecl {
            name: block.name,
            params: block.params,
            locals,
            states,
        }))
    }

    fn parser_state(&mut self) -> Result<ParserState, P4Error> {
        self.expect(Tok::State, "'state'")?;
        let name = self.ident("the state's name")?;
        self.expect(Tok::LBrace, "'{' opening the state")?;
        let mut body = Vec::new();
        while !self.at(Tok::Transition) {
            if self.at(Tok::RBrace) {
                return Err(self.unexpected("a statement or 'transition'"));
            }
            body.push(self.statement()?);
        }
        let transition = self.transition()?;
        self.expect(Tok::RBrace, "'}' closing the state after its transition")?;
        Ok(ParserState {
            name,
            body,
            transition,
        })
    }

    fn transition(&mut self) -> Result<Transition, P4Error> {
        self.expect(Tok::Transition, "'transition'")?;
        if !self.at(Tok::Select) {
            let next = self.ident("a state name or 'select'")?;
            self.expect(Tok::Semi, "';' after the transition")?;
            return Ok(Transition::Direct(next));
        }
        let select = self.bump();
        self.expect(Tok::LParen, "'(' after 'select'")?;
        let (exprs, _) = self.arguments()?;
        self.expect(Tok::LBrace, "'{' opening the select cases")?;
        let mut cases = Vec::new();
        while !self.eat(Tok::RBrace) {
            let start = self.peek().span;
            let keysets = self.keyset()?;
            self.expect(Tok::Colon, "':' after a keyset")?;
            let next = self.ident("a state name")?;
            self.expect(Tok::Semi, "';' after the select case")?;
            cases.push(SelectCase {
                keysets,
                next,
                span: start,
            });
        }
        Ok(Transition::Select {
            exprs,
            cases,
            span: select.span,
        })
    }

    // ---- controls, actions, tables -------------------------------------------------------

    fn control_decl(&mut self) -> Result<Decl, P4Error> {
        self.expect(Tok::Control, "'control'")?;
        let block = self.block_type()?;
        if self.eat(Tok::Semi) {
            return Ok(Decl::ControlType(block));
        }
        if !block.type_params.is_empty() {
            return Err(self.error(
                block.name.span,
                ErrorKind::Unsupported(String::from("a generic control implementation")),
            ));
        }
        self.expect(Tok::LBrace, "'{' or ';' after the control's parameters")?;
        let mut locals = Vec::new();
        loop {
            self.skip_annotations()?;
            if self.at(Tok::Apply) {
                break;
            }
            if self.at(Tok::RBrace) || self.at(Tok::Eof) {
                return Err(self.unexpected("a declaration or 'apply'"));
            }
            locals.push(self.local()?);
        }
        self.expect(Tok::Apply, "'apply'")?;
        let apply = self.block()?;
        self.expect(Tok::RBrace, "'}' closing the control after its apply block")?;
        Ok(Decl::Control(ControlDecl {
            name: block.name,
            params: block.params,
            locals,
            apply,
        }))
    }

    /// A declaration inside a parser or control.
    fn local(&mut self) -> Result<Local, P4Error> {
        match self.peek().kind {
            Tok::Action => Ok(Local::Action(self.action_decl()?)),
            Tok::Table => Ok(Local::Table(self.table_decl()?)),
            Tok::Const => Ok(Local::Const(self.const_decl()?)),
            _ => {
                let ty = self.type_ref()?;
                if self.at(Tok::LParen) {
                    Ok(Local::Instance(self.instance_rest(ty)?))
                } else {
                    Ok(Local::Var(self.var_rest(ty)?))
                }
            }
        }
    }

    /// After a type: `(args) name;`.
    fn instance_rest(&mut self, ty: TypeRef) -> Result<Instance, P4Error> {
        self.expect(Tok::LParen, "'(' of constructor arguments")?;
        let (args, _) = self.arguments()?;
        let name = self.ident("the instance's name")?;
        self.expect(Tok::Semi, "';' after the instance")?;
        Ok(Instance { ty, args, name })
    }

    /// After a type: `name [= init];`.
    pub(super) fn var_rest(&mut self, ty: TypeRef) -> Result<VarDecl, P4Error> {
        let name = self.ident("a variable name")?;
        let init = if self.eat(Tok::Assign) {
            Some(self.expression()?)
        } else {
            None
        };
        self.expect(Tok::Semi, "';' after the variable")?;
        Ok(VarDecl { ty, name, init })
    }

    fn action_decl(&mut self) -> Result<ActionDecl, P4Error> {
        self.expect(Tok::Action, "'action'")?;
        let name = self.ident("the action's name")?;
        let params = self.params()?;
        let body = self.block()?;
        Ok(ActionDecl { name, params, body })
    }

    fn table_decl(&mut self) -> Result<TableDecl, P4Error> {
        let start = self.expect(Tok::Table, "'table'")?;
        let name = self.ident("the table's name")?;
        self.expect(Tok::LBrace, "'{' opening the table")?;
        let mut table = TableDecl {
            name,
            keys: Vec::new(),
            actions: Vec::new(),
            default_action: None,
            entries: Vec::new(),
            size: None,
            span: start.span,
        };
        while !self.eat(Tok::RBrace) {
            self.skip_annotations()?;
            self.table_property(&mut table)?;
        }
        Ok(table)
    }

    fn table_property(&mut self, table: &mut TableDecl) -> Result<(), P4Error> {
        let is_const = self.eat(Tok::Const);
        let token = self.peek();
        match token.kind {
            Tok::Key => {
                self.bump();
                self.expect(Tok::Assign, "'=' after 'key'")?;
                self.expect(Tok::LBrace, "'{' opening the keys")?;
                while !self.eat(Tok::RBrace) {
                    let expr = self.expression()?;
                    self.expect(Tok::Colon, "':' before the match kind")?;
                    let match_kind = self.ident("a match kind")?;
                    self.skip_annotations()?;
                    self.expect(Tok::Semi, "';' after the key")?;
                    table.keys.push(TableKey { expr, match_kind });
                }
            }
            Tok::Actions => {
                self.bump();
                self.expect(Tok::Assign, "'=' after 'actions'")?;
                self.expect(Tok::LBrace, "'{' opening the actions")?;
                while !self.eat(Tok::RBrace) {
                    self.skip_annotations()?;
                    let call = self.action_call()?;
                    self.expect(Tok::Semi, "';' after the action")?;
                    table.actions.push(call);
                }
            }
            Tok::Entries => {
                self.bump();
                self.expect(Tok::Assign, "'=' after 'entries'")?;
                self.expect(Tok::LBrace, "'{' opening the entries")?;
                while !self.eat(Tok::RBrace) {
                    let span = self.peek().span;
                    let keysets = self.keyset()?;
                    self.expect(Tok::Colon, "':' after the entry's keys")?;
                    let action = self.action_call()?;
                    self.expect(Tok::Semi, "';' after the entry")?;
                    table.entries.push(Entry {
                        keysets,
                        action,
                        span,
                    });
                }
            }
            Tok::Ident if self.text(token) == "default_action" => {
                self.bump();
                self.expect(Tok::Assign, "'=' after 'default_action'")?;
                let call = self.action_call()?;
                self.expect(Tok::Semi, "';' after the default action")?;
                table.default_action = Some(DefaultAction { call, is_const });
            }
            Tok::Ident if self.text(token) == "size" => {
                self.bump();
                self.expect(Tok::Assign, "'=' after 'size'")?;
                table.size = Some(self.expression()?);
                self.expect(Tok::Semi, "';' after the size")?;
            }
            Tok::Ident => {
                let name = self.text(token).to_string();
                return Err(self.error(
                    token.span,
                    ErrorKind::Unknown {
                        what: "table property",
                        name,
                    },
                ));
            }
            _ => return Err(self.unexpected("a table property")),
        }
        Ok(())
    }

    /// `name` or `name(args)`.
    fn action_call(&mut self) -> Result<ActionCall, P4Error> {
        let name = self.ident("an action name")?;
        let args = if self.eat(Tok::LParen) {
            self.arguments()?.0
        } else {
            Vec::new()
        };
        Ok(ActionCall { name, args })
    }
}
