//! The hand-written recursive-descent parser: tokens to [`Program`], with `#include` resolution.
//!
//! P4-16 is not context free: `T(x) y;` is an instance only if `T` names a type, and `a < b`
//! is a comparison unless `a` is a type taking arguments. The parser therefore keeps the set of
//! names declared as types so far (`Parser::is_type_name`), with nested scopes for type
//! parameters, and consults it where the grammar forks. Includes are parsed in place, sharing that
//! set, so a program sees the architecture's types; each file is included once.
//!
//! Submodules: `decl` (declarations, types, tables), `stmt` (statements), `expr` (expressions and
//! keysets).

mod decl;
mod expr;
mod stmt;

use crate::ast::{Decl, ExprId, Ident, Program};
use crate::error::{ErrorKind, P4Error, SourceMap, Span};
use crate::lexer::{lex, Tok, Token};
use std::collections::HashSet;
use std::path::{Path, PathBuf};

/// The architecture file, embedded so that `#include <xdp.p4>` works wherever the program is.
pub const XDP_ARCH: &str = include_str!("../../arch/xdp.p4");

/// Largest `bit<N>`/`int<N>` accepted: values are held in 128 bits.
pub const MAX_WIDTH_BITS: u32 = 128;

/// Largest header stack accepted.
pub const MAX_STACK: u32 = 256;

/// Deepest nesting of expressions, statements and blocks accepted; deeper input is refused
/// rather than risking the stack of the parser, the checker or later tree walks.
pub const MAX_DEPTH: usize = 128;

/// Parses `text` as the file `name` (relative `#include "..."` resolve from its directory).
pub fn parse_program(
    sources: &mut SourceMap,
    name: &str,
    text: String,
) -> Result<Program, P4Error> {
    let mut parser = Parser {
        sources,
        tokens: Vec::new(),
        pos: 0,
        dir: Path::new(name).parent().map(Path::to_path_buf),
        type_scopes: vec![HashSet::new()],
        included: HashSet::new(),
        next_expr: 0,
        depth: 0,
    };
    parser.included.insert(canonical_key(Path::new(name)));
    let mut decls = Vec::new();
    parser.parse_file(name.to_string(), text, &mut decls)?;
    Ok(Program {
        decls,
        expr_count: parser.next_expr,
    })
}

fn canonical_key(path: &Path) -> String {
    std::fs::canonicalize(path)
        .unwrap_or_else(|_| path.to_path_buf())
        .display()
        .to_string()
}

/// Parser state: the current file's tokens and everything shared across includes.
pub(crate) struct Parser<'s> {
    sources: &'s mut SourceMap,
    tokens: Vec<Token>,
    pos: usize,
    /// Directory of the current file, for relative includes.
    dir: Option<PathBuf>,
    /// Names declared as types; the first scope is global, the others hold type parameters.
    type_scopes: Vec<HashSet<String>>,
    /// Files already included (canonical paths, or `<xdp.p4>`).
    included: HashSet<String>,
    next_expr: u32,
    depth: usize,
}

impl<'s> Parser<'s> {
    /// Lexes and parses one file, appending its declarations (and its includes') to `decls`.
    fn parse_file(
        &mut self,
        name: String,
        text: String,
        decls: &mut Vec<Decl>,
    ) -> Result<(), P4Error> {
        let file = self.sources.add(name, text);
        let text = self
            .sources
            .file(file)
            .map(|f| f.text.clone())
            .unwrap_or_default();
        self.tokens = lex(self.sources, file, &text)?;
        self.pos = 0;
        while !self.at(Tok::Eof) {
            if self.at(Tok::Include) {
                self.include(decls)?;
            } else if self.eat(Tok::Semi) {
                continue;
            } else {
                decls.push(self.declaration()?);
            }
        }
        Ok(())
    }

    /// Handles the `#include` at the cursor: parses the named file once, in place.
    fn include(&mut self, decls: &mut Vec<Decl>) -> Result<(), P4Error> {
        let token = self.bump();
        let directive = self.text(token).to_string();
        let start = directive.find(['<', '"']).unwrap_or(directive.len());
        let target = directive
            .get(start.saturating_add(1)..directive.len().saturating_sub(1))
            .unwrap_or("")
            .to_string();
        let system = directive.get(start..).is_some_and(|s| s.starts_with('<'));
        let (key, name, text) = if system {
            if target != "xdp.p4" {
                return Err(self.error(token.span, ErrorKind::UnknownSystemInclude(target)));
            }
            (
                String::from("<xdp.p4>"),
                String::from("xdp.p4"),
                XDP_ARCH.to_string(),
            )
        } else {
            let path = match &self.dir {
                Some(dir) => dir.join(&target),
                None => PathBuf::from(&target),
            };
            let key = canonical_key(&path);
            if self.included.contains(&key) {
                return Ok(());
            }
            let text = std::fs::read_to_string(&path).map_err(|e| {
                self.error(
                    token.span,
                    ErrorKind::Io {
                        path: path.display().to_string(),
                        reason: e.to_string(),
                    },
                )
            })?;
            (key, path.display().to_string(), text)
        };
        if !self.included.insert(key) {
            return Ok(());
        }
        let saved_tokens = std::mem::take(&mut self.tokens);
        let saved_pos = self.pos;
        let saved_dir = self.dir.clone();
        if !system {
            self.dir = Path::new(&name).parent().map(Path::to_path_buf);
        }
        self.parse_file(name, text, decls)?;
        self.tokens = saved_tokens;
        self.pos = saved_pos;
        self.dir = saved_dir;
        Ok(())
    }

    // ---- token helpers -------------------------------------------------------------------

    fn peek(&self) -> Token {
        self.peek_at(0)
    }

    fn peek_at(&self, ahead: usize) -> Token {
        let last = self.tokens.last().copied().unwrap_or(Token {
            kind: Tok::Eof,
            span: Span::default(),
        });
        self.pos
            .checked_add(ahead)
            .and_then(|i| self.tokens.get(i))
            .copied()
            .unwrap_or(last)
    }

    fn at(&self, kind: Tok) -> bool {
        self.peek().kind == kind
    }

    fn bump(&mut self) -> Token {
        let token = self.peek();
        if token.kind != Tok::Eof {
            self.pos = self.pos.saturating_add(1);
        }
        token
    }

    fn eat(&mut self, kind: Tok) -> bool {
        if self.at(kind) {
            self.bump();
            true
        } else {
            false
        }
    }

    fn expect(&mut self, kind: Tok, expected: &str) -> Result<Token, P4Error> {
        if self.at(kind) {
            Ok(self.bump())
        } else {
            Err(self.unexpected(expected))
        }
    }

    fn text(&self, token: Token) -> &str {
        self.sources
            .file(token.span.file)
            .and_then(|f| {
                f.text
                    .get(token.span.start as usize..token.span.end as usize)
            })
            .unwrap_or("")
    }

    fn error(&self, span: Span, kind: ErrorKind) -> P4Error {
        self.sources.error(span, kind)
    }

    /// A syntax error at the current token.
    fn unexpected(&self, expected: &str) -> P4Error {
        let token = self.peek();
        let found = if token.kind == Tok::Eof {
            String::from("end of file")
        } else {
            format!("'{}'", self.text(token))
        };
        self.error(
            token.span,
            ErrorKind::Syntax {
                expected: expected.to_string(),
                found,
            },
        )
    }

    /// An identifier (also `accept`/`reject`, which are ordinary names to the lexer).
    fn ident(&mut self, expected: &str) -> Result<Ident, P4Error> {
        let token = self.expect(Tok::Ident, expected)?;
        Ok(Ident {
            name: self.text(token).to_string(),
            span: token.span,
        })
    }

    /// A member name after `.`: identifiers and the keywords P4 allows there (`t.apply()`).
    fn member_name(&mut self) -> Result<Ident, P4Error> {
        let token = self.peek();
        match token.kind {
            Tok::Ident | Tok::Apply | Tok::Key | Tok::Actions | Tok::State | Tok::Entries => {
                self.bump();
                Ok(Ident {
                    name: self.text(token).to_string(),
                    span: token.span,
                })
            }
            _ => Err(self.unexpected("a member name")),
        }
    }

    fn new_expr_id(&mut self) -> ExprId {
        let id = ExprId(self.next_expr);
        self.next_expr = self.next_expr.saturating_add(1);
        id
    }

    /// Enters one level of nesting, refusing input nested deeper than [`MAX_DEPTH`].
    fn enter(&mut self) -> Result<(), P4Error> {
        self.depth = self.depth.saturating_add(1);
        if self.depth > MAX_DEPTH {
            return Err(self.error(self.peek().span, ErrorKind::TooDeep(MAX_DEPTH)));
        }
        Ok(())
    }

    fn leave(&mut self, levels: usize) {
        self.depth = self.depth.saturating_sub(levels);
    }

    // ---- type-name feedback --------------------------------------------------------------

    fn is_type_name(&self, name: &str) -> bool {
        self.type_scopes.iter().any(|scope| scope.contains(name))
    }

    fn declare_type(&mut self, name: &str) {
        if let Some(global) = self.type_scopes.first_mut() {
            global.insert(name.to_string());
        }
    }

    fn push_type_params(&mut self, params: &[Ident]) {
        self.type_scopes
            .push(params.iter().map(|p| p.name.clone()).collect());
    }

    fn pop_type_params(&mut self) {
        if self.type_scopes.len() > 1 {
            self.type_scopes.pop();
        }
    }

    /// Skips annotations (`@name`, `@name(...)`): they carry no meaning for linerate.
    fn skip_annotations(&mut self) -> Result<(), P4Error> {
        while self.eat(Tok::At) {
            self.member_name()?;
            if self.at(Tok::LParen) {
                let mut open = 0usize;
                loop {
                    let token = self.bump();
                    match token.kind {
                        Tok::LParen => open = open.saturating_add(1),
                        Tok::RParen => {
                            open = open.saturating_sub(1);
                            if open == 0 {
                                break;
                            }
                        }
                        Tok::Eof => return Err(self.unexpected("')' closing the annotation")),
                        _ => {}
                    }
                }
            }
        }
        Ok(())
    }
}
