//! Expressions (precedence climbing over [`BinaryOp::precedence`]) and keysets.
//!
//! `>>` arrives as two `>` tokens (see the lexer); two *adjacent* `>` make a right shift. A `(`
//! opens a cast when a type follows (`bit`, `int`, `bool` or a declared type name then `)`).
//! Every loop iteration that deepens the tree counts towards [`super::MAX_DEPTH`], so no input can
//! build a tree too deep for the recursive walks that follow.

use super::Parser;
use crate::ast::{BinaryOp, Expr, ExprKind, Keyset, TypeRef, UnaryOp};
use crate::error::{ErrorKind, P4Error, Span};
use crate::lexer::{decode_int, Tok};

impl Parser<'_> {
    /// A full expression, including `?:`.
    pub(super) fn expression(&mut self) -> Result<Expr, P4Error> {
        self.enter()?;
        let cond = self.binary(1)?;
        let result = if self.eat(Tok::Question) {
            let then = self.expression()?;
            self.expect(Tok::Colon, "':' of a conditional expression")?;
            let otherwise = self.expression()?;
            let span = cond.span.to(otherwise.span);
            Ok(self.make(
                ExprKind::Ternary(Box::new(cond), Box::new(then), Box::new(otherwise)),
                span,
            ))
        } else {
            Ok(cond)
        };
        self.leave(1);
        result
    }

    fn make(&mut self, kind: ExprKind, span: Span) -> Expr {
        Expr {
            id: self.new_expr_id(),
            kind,
            span,
        }
    }

    /// The binary operator at the cursor and how many tokens it spans.
    fn binary_op(&self) -> Option<(BinaryOp, usize)> {
        let op = match self.peek().kind {
            Tok::OrOr => BinaryOp::Or,
            Tok::AndAnd => BinaryOp::And,
            Tok::EqEq => BinaryOp::Eq,
            Tok::NotEq => BinaryOp::Ne,
            Tok::Le => BinaryOp::Le,
            Tok::Ge => BinaryOp::Ge,
            Tok::Lt => BinaryOp::Lt,
            Tok::Gt => {
                let first = self.peek();
                let second = self.peek_at(1);
                if second.kind == Tok::Gt && second.span.start == first.span.end {
                    return Some((BinaryOp::Shr, 2));
                }
                BinaryOp::Gt
            }
            Tok::Pipe => BinaryOp::BitOr,
            Tok::Caret => BinaryOp::BitXor,
            Tok::Amp => BinaryOp::BitAnd,
            Tok::Shl => BinaryOp::Shl,
            Tok::Plus => BinaryOp::Add,
            Tok::Minus => BinaryOp::Sub,
            Tok::SatPlus => BinaryOp::SatAdd,
            Tok::SatMinus => BinaryOp::SatSub,
            Tok::PlusPlus => BinaryOp::Concat,
            Tok::Star => BinaryOp::Mul,
            Tok::Slash => BinaryOp::Div,
            Tok::Percent => BinaryOp::Mod,
            _ => return None,
        };
        Some((op, 1))
    }

    /// Operators binding at least as tightly as `min`, left-associative.
    fn binary(&mut self, min: u8) -> Result<Expr, P4Error> {
        let mut lhs = self.prefix()?;
        let mut levels = 0usize;
        while let Some((op, width)) = self.binary_op() {
            if op.precedence() < min {
                break;
            }
            for _ in 0..width {
                self.bump();
            }
            self.enter()?;
            levels = levels.saturating_add(1);
            let rhs = self.binary(op.precedence().saturating_add(1))?;
            let span = lhs.span.to(rhs.span);
            lhs = self.make(ExprKind::Binary(op, Box::new(lhs), Box::new(rhs)), span);
        }
        self.leave(levels);
        Ok(lhs)
    }

    fn prefix(&mut self) -> Result<Expr, P4Error> {
        let token = self.peek();
        let op = match token.kind {
            Tok::Bang => Some(UnaryOp::Not),
            Tok::Tilde => Some(UnaryOp::Complement),
            Tok::Minus => Some(UnaryOp::Negate),
            Tok::Plus => None,
            _ => return self.postfix(),
        };
        self.bump();
        self.enter()?;
        let operand = self.prefix()?;
        self.leave(1);
        let span = token.span.to(operand.span);
        Ok(match op {
            Some(op) => self.make(ExprKind::Unary(op, Box::new(operand)), span),
            None => operand,
        })
    }

    fn postfix(&mut self) -> Result<Expr, P4Error> {
        let mut expr = self.primary()?;
        let mut levels = 0usize;
        loop {
            let kind = self.peek().kind;
            if !matches!(kind, Tok::Dot | Tok::LBracket | Tok::LParen | Tok::Lt) {
                break;
            }
            if kind == Tok::Lt && !self.type_arguments_follow(&expr) {
                break;
            }
            self.enter()?;
            levels = levels.saturating_add(1);
            expr = match kind {
                Tok::Dot => {
                    self.bump();
                    let member = self.member_name()?;
                    let span = expr.span.to(member.span);
                    self.make(ExprKind::Member(Box::new(expr), member), span)
                }
                Tok::LBracket => {
                    self.bump();
                    let index = self.expression()?;
                    if self.eat(Tok::Colon) {
                        let lo = self.expression()?;
                        let close = self.expect(Tok::RBracket, "']' closing the slice")?;
                        let span = expr.span.to(close.span);
                        self.make(
                            ExprKind::Slice {
                                base: Box::new(expr),
                                hi: Box::new(index),
                                lo: Box::new(lo),
                            },
                            span,
                        )
                    } else {
                        let close = self.expect(Tok::RBracket, "']' closing the index")?;
                        let span = expr.span.to(close.span);
                        self.make(ExprKind::Index(Box::new(expr), Box::new(index)), span)
                    }
                }
                _ => {
                    let type_args = if self.eat(Tok::Lt) {
                        self.type_argument_list()?
                    } else {
                        Vec::new()
                    };
                    self.expect(Tok::LParen, "'(' of a call")?;
                    let (args, close) = self.arguments()?;
                    let span = expr.span.to(close);
                    self.make(
                        ExprKind::Call {
                            callee: Box::new(expr),
                            type_args,
                            args,
                        },
                        span,
                    )
                }
            };
        }
        self.leave(levels);
        Ok(expr)
    }

    /// Whether `<` after `expr` opens type arguments of a generic call (`pkt.extract<h_t>(x)`)
    /// rather than a comparison: only a method name can take them, and only a type can follow.
    fn type_arguments_follow(&self, expr: &Expr) -> bool {
        if !matches!(expr.kind, ExprKind::Member(..)) {
            return false;
        }
        let next = self.peek_at(1);
        match next.kind {
            Tok::Bit | Tok::Int | Tok::Bool => true,
            Tok::Ident => self.is_type_name(self.text(next)),
            _ => false,
        }
    }

    /// Arguments after `(` up to and including `)`; returns them and the `)` span.
    pub(super) fn arguments(&mut self) -> Result<(Vec<Expr>, Span), P4Error> {
        let mut args = Vec::new();
        if !self.at(Tok::RParen) {
            loop {
                args.push(self.expression()?);
                if !self.eat(Tok::Comma) {
                    break;
                }
            }
        }
        let close = self.expect(Tok::RParen, "',' or ')' in an argument list")?;
        Ok((args, close.span))
    }

    fn primary(&mut self) -> Result<Expr, P4Error> {
        let token = self.peek();
        match token.kind {
            Tok::Number => {
                self.bump();
                let text = self.text(token).to_string();
                let decoded = decode_int(&text)
                    .map_err(|why| self.error(token.span, ErrorKind::BadLiteral(text, why)))?;
                Ok(self.make(
                    ExprKind::Int {
                        value: decoded.value,
                        width: decoded.width,
                    },
                    token.span,
                ))
            }
            Tok::True | Tok::False => {
                self.bump();
                Ok(self.make(ExprKind::Bool(token.kind == Tok::True), token.span))
            }
            Tok::Ident => {
                let name = self.ident("an expression")?;
                let span = name.span;
                Ok(self.make(ExprKind::Name(name), span))
            }
            Tok::Error => {
                self.bump();
                self.expect(Tok::Dot, "'.' after 'error'")?;
                let member = self.ident("an error name")?;
                let span = token.span.to(member.span);
                Ok(self.make(ExprKind::ErrorMember(member), span))
            }
            Tok::LParen => {
                self.bump();
                if self.cast_follows() {
                    let ty = self.type_ref()?;
                    self.expect(Tok::RParen, "')' closing the cast type")?;
                    self.enter()?;
                    let operand = self.prefix()?;
                    self.leave(1);
                    let span = token.span.to(operand.span);
                    Ok(self.make(ExprKind::Cast(ty, Box::new(operand)), span))
                } else {
                    let inner = self.expression()?;
                    self.expect(Tok::RParen, "')'")?;
                    Ok(inner)
                }
            }
            Tok::LBrace => {
                self.bump();
                let mut elements = Vec::new();
                if !self.at(Tok::RBrace) {
                    loop {
                        elements.push(self.expression()?);
                        if !self.eat(Tok::Comma) {
                            break;
                        }
                    }
                }
                let close = self.expect(Tok::RBrace, "',' or '}' in a list expression")?;
                Ok(self.make(ExprKind::List(elements), token.span.to(close.span)))
            }
            _ => Err(self.unexpected("an expression")),
        }
    }

    /// After `(`: whether a cast's type follows.
    fn cast_follows(&self) -> bool {
        let next = self.peek();
        match next.kind {
            Tok::Bit | Tok::Int | Tok::Bool => true,
            Tok::Ident => {
                self.is_type_name(self.text(next))
                    && matches!(self.peek_at(1).kind, Tok::RParen | Tok::Lt)
            }
            _ => false,
        }
    }

    /// One keyset element: `_`/`default`, `value`, `value &&& mask`, `lo .. hi`.
    pub(super) fn keyset_element(&mut self) -> Result<Keyset, P4Error> {
        let token = self.peek();
        if matches!(token.kind, Tok::DontCare | Tok::Default) {
            self.bump();
            return Ok(Keyset::Default(token.span));
        }
        let value = self.expression()?;
        if self.eat(Tok::Mask) {
            let mask = self.expression()?;
            Ok(Keyset::Mask(value, mask))
        } else if self.eat(Tok::Range) {
            let hi = self.expression()?;
            Ok(Keyset::Range(value, hi))
        } else {
            Ok(Keyset::Value(value))
        }
    }

    /// A keyset: one element, or a parenthesised tuple of elements. A parenthesised single
    /// expression (`(0x0800)`) is read as a tuple of one.
    pub(super) fn keyset(&mut self) -> Result<Vec<Keyset>, P4Error> {
        if self.at(Tok::LParen) && !self.cast_follows_after_paren() {
            self.bump();
            let mut elements = Vec::new();
            loop {
                elements.push(self.keyset_element()?);
                if !self.eat(Tok::Comma) {
                    break;
                }
            }
            self.expect(Tok::RParen, "',' or ')' in a keyset")?;
            Ok(elements)
        } else {
            Ok(vec![self.keyset_element()?])
        }
    }

    fn cast_follows_after_paren(&self) -> bool {
        let next = self.peek_at(1);
        match next.kind {
            Tok::Bit | Tok::Int | Tok::Bool => true,
            Tok::Ident => {
                self.is_type_name(self.text(next))
                    && matches!(self.peek_at(2).kind, Tok::RParen | Tok::Lt)
            }
            _ => false,
        }
    }

    /// Type arguments after `<`, through the closing `>`.
    pub(super) fn type_argument_list(&mut self) -> Result<Vec<TypeRef>, P4Error> {
        let mut args = Vec::new();
        loop {
            args.push(self.type_ref()?);
            if !self.eat(Tok::Comma) {
                break;
            }
        }
        self.expect(Tok::Gt, "',' or '>' in type arguments")?;
        Ok(args)
    }
}
