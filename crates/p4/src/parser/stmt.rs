//! Statements: blocks, assignments, calls, `if`/`else`, `switch`, local declarations.
//!
//! A statement starting with a declared type name followed by a name is a variable declaration
//! (`ip4_t a = ...;`); any other name starts an expression, which becomes an assignment if `=`
//! follows and must otherwise be a call.

use super::Parser;
use crate::ast::{Block, ExprKind, Stmt, SwitchCase};
use crate::error::{ErrorKind, P4Error};
use crate::lexer::Tok;

impl Parser<'_> {
    /// `{ statements }`.
    pub(super) fn block(&mut self) -> Result<Block, P4Error> {
        self.enter()?;
        let open = self.expect(Tok::LBrace, "'{' opening a block")?;
        let mut stmts = Vec::new();
        while !self.at(Tok::RBrace) {
            if self.at(Tok::Eof) {
                return Err(self.unexpected("'}' closing the block"));
            }
            stmts.push(self.statement()?);
        }
        let close = self.bump();
        self.leave(1);
        Ok(Block {
            stmts,
            span: open.span.to(close.span),
        })
    }

    /// One statement.
    pub(super) fn statement(&mut self) -> Result<Stmt, P4Error> {
        self.skip_annotations()?;
        let token = self.peek();
        match token.kind {
            Tok::LBrace => Ok(Stmt::Block(self.block()?)),
            Tok::If => self.if_statement(),
            Tok::Switch => self.switch_statement(),
            Tok::Const => Ok(Stmt::Const(self.const_decl()?)),
            Tok::Return => {
                self.bump();
                self.expect(Tok::Semi, "';' after 'return'")?;
                Ok(Stmt::Return(token.span))
            }
            Tok::Exit => {
                self.bump();
                self.expect(Tok::Semi, "';' after 'exit'")?;
                Ok(Stmt::Exit(token.span))
            }
            Tok::Semi => {
                self.bump();
                Ok(Stmt::Block(crate::ast::Block {
                    stmts: Vec::new(),
                    span: token.span,
                }))
            }
            Tok::Bit | Tok::Int | Tok::Bool => {
                let ty = self.type_ref()?;
                Ok(Stmt::Var(self.var_rest(ty)?))
            }
            Tok::Ident
                if self.is_type_name(self.text(token))
                    && matches!(self.peek_at(1).kind, Tok::Ident | Tok::Lt | Tok::LBracket) =>
            {
                let ty = self.type_ref()?;
                Ok(Stmt::Var(self.var_rest(ty)?))
            }
            _ => self.expression_statement(),
        }
    }

    fn expression_statement(&mut self) -> Result<Stmt, P4Error> {
        let lhs = self.expression()?;
        if self.eat(Tok::Assign) {
            let rhs = self.expression()?;
            self.expect(Tok::Semi, "';' after the assignment")?;
            return Ok(Stmt::Assign { lhs, rhs });
        }
        if !matches!(lhs.kind, ExprKind::Call { .. }) {
            return Err(self.error(
                lhs.span,
                ErrorKind::Invalid(String::from(
                    "an expression statement must be a call or an assignment",
                )),
            ));
        }
        self.expect(Tok::Semi, "';' after the call")?;
        Ok(Stmt::Call(lhs))
    }

    fn if_statement(&mut self) -> Result<Stmt, P4Error> {
        self.expect(Tok::If, "'if'")?;
        self.expect(Tok::LParen, "'(' after 'if'")?;
        let cond = self.expression()?;
        self.expect(Tok::RParen, "')' closing the condition")?;
        let then = self.branch()?;
        let otherwise = if self.eat(Tok::Else) {
            Some(self.branch()?)
        } else {
            None
        };
        Ok(Stmt::If {
            cond,
            then,
            otherwise,
        })
    }

    /// The body of an `if` or `else`: a block, or one statement wrapped in a block.
    fn branch(&mut self) -> Result<Block, P4Error> {
        if self.at(Tok::LBrace) {
            return self.block();
        }
        self.enter()?;
        let span = self.peek().span;
        let stmt = self.statement()?;
        self.leave(1);
        Ok(Block {
            stmts: vec![stmt],
            span,
        })
    }

    fn switch_statement(&mut self) -> Result<Stmt, P4Error> {
        self.expect(Tok::Switch, "'switch'")?;
        self.expect(Tok::LParen, "'(' after 'switch'")?;
        let subject = self.expression()?;
        self.expect(Tok::RParen, "')' closing the switch subject")?;
        self.expect(Tok::LBrace, "'{' opening the switch cases")?;
        let mut cases = Vec::new();
        while !self.eat(Tok::RBrace) {
            let token = self.peek();
            let label = if self.eat(Tok::Default) {
                None
            } else {
                Some(self.ident("an action name or 'default'")?)
            };
            self.expect(Tok::Colon, "':' after the switch label")?;
            let body = if self.at(Tok::LBrace) {
                Some(self.block()?)
            } else {
                None
            };
            cases.push(SwitchCase {
                label,
                body,
                span: token.span,
            });
        }
        Ok(Stmt::Switch { subject, cases })
    }
}
