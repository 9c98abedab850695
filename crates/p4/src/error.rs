//! Source positions and the front end's one error type.
//!
//! Every token and AST node carries a byte [`Span`] into one file of a [`SourceMap`]; line and
//! column are computed from the span only when an error is reported, so the lexer and parser never
//! track them. A [`P4Error`] already holds its resolved position, so it can outlive the source map.

use std::fmt;

/// Index of a file in a [`SourceMap`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct FileId(pub u32);

/// A byte range `start..end` in one file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct Span {
    /// The file the range is in.
    pub file: FileId,
    /// First byte.
    pub start: u32,
    /// One past the last byte.
    pub end: u32,
}

impl Span {
    /// The smallest span covering both `self` and `other` (same file assumed).
    pub fn to(self, other: Span) -> Span {
        Span {
            file: self.file,
            start: self.start.min(other.start),
            end: self.end.max(other.end),
        }
    }
}

/// One loaded source file.
#[derive(Debug, Clone)]
pub struct SourceFile {
    /// The name printed in error messages (the path as given, or `xdp.p4` for the architecture).
    pub name: String,
    /// The whole text.
    pub text: String,
}

/// Every file read while loading one program, in the order they were read.
#[derive(Debug, Clone, Default)]
pub struct SourceMap {
    /// The files; a [`FileId`] indexes this vector.
    pub files: Vec<SourceFile>,
}

impl SourceMap {
    /// Adds a file and returns its id.
    pub fn add(&mut self, name: String, text: String) -> FileId {
        let id = FileId(u32::try_from(self.files.len()).unwrap_or(u32::MAX));
        self.files.push(SourceFile { name, text });
        id
    }

    /// The file with this id, if any.
    pub fn file(&self, id: FileId) -> Option<&SourceFile> {
        self.files.get(id.0 as usize)
    }

    /// Resolves a span to `(file name, line, column)`, both 1-based; the column counts characters.
    pub fn position(&self, span: Span) -> Position {
        let Some(file) = self.file(span.file) else {
            return Position {
                file: String::from("<unknown>"),
                line: 0,
                column: 0,
            };
        };
        let offset = (span.start as usize).min(file.text.len());
        let before = file.text.get(..offset).unwrap_or("");
        let line_start = before.rfind('\n').map_or(0, |i| i + 1);
        let line = before.matches('\n').count() + 1;
        let column = before.get(line_start..).map_or(0, |s| s.chars().count()) + 1;
        Position {
            file: file.name.clone(),
            line: u32::try_from(line).unwrap_or(u32::MAX),
            column: u32::try_from(column).unwrap_or(u32::MAX),
        }
    }

    /// Builds an error at `span`.
    pub fn error(&self, span: Span, kind: ErrorKind) -> P4Error {
        P4Error {
            position: self.position(span),
            kind,
        }
    }
}

/// A resolved source position.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Position {
    /// File name as printed.
    pub file: String,
    /// 1-based line.
    pub line: u32,
    /// 1-based column, in characters.
    pub column: u32,
}

impl fmt::Display for Position {
    /// `file:line:col`, or just `file` for a position before any line (a file that could not be
    /// read).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.line == 0 {
            write!(f, "{}", self.file)
        } else {
            write!(f, "{}:{}:{}", self.file, self.line, self.column)
        }
    }
}

/// The one error the front end returns: where, and what. Displays as `file:line:col: message`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{position}: {kind}")]
pub struct P4Error {
    /// Where the offending construct starts.
    pub position: Position,
    /// What is wrong.
    pub kind: ErrorKind,
}

/// What went wrong; one variant per class of error, so callers and tests can match on the class.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ErrorKind {
    /// A file could not be read.
    #[error("cannot read '{path}': {reason}")]
    Io {
        /// The path tried.
        path: String,
        /// The operating system's reason.
        reason: String,
    },
    /// A `#include <...>` naming no file linerate ships.
    #[error("unknown system include <{0}> (linerate ships only <xdp.p4>)")]
    UnknownSystemInclude(String),
    /// Bytes that form no token.
    #[error("unexpected character '{0}'")]
    BadCharacter(String),
    /// A malformed or out-of-range integer literal.
    #[error("bad integer literal '{0}': {1}")]
    BadLiteral(String, String),
    /// The parser expected something else here.
    #[error("expected {expected}, found {found}")]
    Syntax {
        /// What the grammar allows here.
        expected: String,
        /// The token seen.
        found: String,
    },
    /// A P4-16 construct this front end does not implement.
    #[error("unsupported construct: {0}")]
    Unsupported(String),
    /// Expressions or blocks nested deeper than the front end accepts.
    #[error("nesting deeper than {0} levels")]
    TooDeep(usize),
    /// A name declared twice in one scope.
    #[error("'{0}' is already declared in this scope")]
    Duplicate(String),
    /// A name that resolves to nothing.
    #[error("unknown {what} '{name}'")]
    Unknown {
        /// What kind of thing was looked for (name, type, action, table, state, ...).
        what: &'static str,
        /// The name.
        name: String,
    },
    /// A field that the header or struct type does not have.
    #[error("unknown {kind} field '{field}' in '{base}'")]
    UnknownField {
        /// `header` or `struct`.
        kind: &'static str,
        /// The field name.
        field: String,
        /// The expression whose type lacks it, as written.
        base: String,
    },
    /// Operand or argument types that do not fit together.
    #[error("type mismatch: {0}")]
    TypeMismatch(String),
    /// A bad width (zero, too large, slice bounds out of range, header not byte-aligned).
    #[error("bad width: {0}")]
    Width(String),
    /// A wrong number of arguments, select keys or entry keys.
    #[error("arity mismatch: {0}")]
    Arity(String),
    /// Anything else the checker rejects, with its reason.
    #[error("{0}")]
    Invalid(String),
}
