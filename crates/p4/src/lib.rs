//! linerate's P4-16 front end: lexer, parser, type checker and the XDP architecture.
//!
//! [`load`] reads a `.p4` file (following `#include`s; `<xdp.p4>` is the architecture file shipped
//! in `crates/p4/arch/xdp.p4`, which also says how each outcome maps to an XDP action), parses it
//! into the [`ast`] and type checks it into a [`Checked`] program: the AST plus, for every
//! expression, its resolved type ([`Checked::type_of`]), what a name refers to
//! ([`Checked::name_ref`]) and its value if constant ([`Checked::constant`]), and the layout of
//! every header and struct. Later stages (paper 001's α/β/γ analysis, the reference interpreter,
//! the compiler to BPF) start from [`Checked`].
//!
//! The language covered: `typedef`, `const`, `enum` (plain and `enum bit<N>`), `header`, header
//! stacks, `struct`, `error` and `match_kind` declarations, externs and extern functions, parser,
//! control and package types with type parameters, parsers (states, `extract`, `select` with
//! masks, ranges, `default`/`_`), controls (actions, tables with exact/lpm/ternary keys, actions,
//! default action, const entries, size; extern instances; `if`/`else`, `switch` on
//! `action_run`, `.hit`/`.miss`), expressions with P4-16 precedence, slices, casts, `++`, and
//! annotations (skipped). Refused with an error naming the construct: `header_union`, `varbit`,
//! generic or constructor-parameterised parsers and controls, value sets, functions, tuples and
//! list expressions, `switch` on values, preprocessor directives other than `#include`.
//!
//! [`params`] extracts paper 001's parameters (α parsed headers, β modified headers, γ added
//! tables); [`latency`] is the paper's latency model: its Agilio CX figures, estimates and fits.
//!
//! Errors: every failure is one [`P4Error`] that displays as `file:line:col: message`; the front
//! end never panics, and input nested deeper than [`parser::MAX_DEPTH`] is refused.
//!
//! ```no_run
//! let checked = linerate_p4::load(std::path::Path::new("examples/p4/l3_fwd.p4"))?;
//! for header in checked.program.headers() {
//!     let width = checked.header(&header.name.name).map_or(0, |h| h.width_bits);
//!     println!("{} is {width} bits", header.name.name);
//! }
//! # Ok::<(), linerate_p4::P4Error>(())
//! ```

pub mod ast;
pub mod check;
pub mod compile;
pub mod entries;
pub mod error;
pub mod interp;
pub mod latency;
pub mod lexer;
pub mod params;
pub mod parser;

pub use check::types::{EnumInfo, FieldLayout, Layout, Type, TypeTable};
pub use check::{NameRef, Pipeline};
pub use error::{ErrorKind, P4Error, Position, SourceMap, Span};
pub use parser::XDP_ARCH;

use std::path::Path;

/// A parsed and type-checked program: what later stages start from.
#[derive(Debug, Clone)]
pub struct Checked {
    /// The AST, every included file's declarations in order.
    pub program: ast::Program,
    /// The files read, for positions of later diagnostics.
    pub sources: SourceMap,
    /// Headers, structs, enums, typedefs, errors and match kinds, resolved.
    pub types: TypeTable,
    /// The blocks bound by `main`.
    pub pipeline: Pipeline,
    expr_types: Vec<Option<Type>>,
    names: Vec<Option<NameRef>>,
    constants: Vec<Option<i128>>,
}

impl Checked {
    /// The resolved type of an expression of [`Checked::program`]. Unsized constants that met a
    /// sized type carry that type; `None` only for expressions the checker never reaches (none in
    /// a checked program's parsers, controls and declarations).
    pub fn type_of(&self, expr: &ast::Expr) -> Option<&Type> {
        self.expr_types
            .get(expr.id.0 as usize)
            .and_then(Option::as_ref)
    }

    /// What a [`ast::ExprKind::Name`] expression refers to (also the callee of an action call).
    pub fn name_ref(&self, expr: &ast::Expr) -> Option<NameRef> {
        self.names.get(expr.id.0 as usize).copied().flatten()
    }

    /// The value of a compile-time constant expression (literals, constants, serializable enum
    /// members and operators over them), before truncation to the expression's type; `None` for
    /// anything computed at run time.
    pub fn constant(&self, expr: &ast::Expr) -> Option<i128> {
        self.constants.get(expr.id.0 as usize).copied().flatten()
    }

    /// The layout of a header type.
    pub fn header(&self, name: &str) -> Option<&Layout> {
        self.types.headers.get(name)
    }

    /// The layout of a struct type.
    pub fn structure(&self, name: &str) -> Option<&Layout> {
        self.types.structs.get(name)
    }

    /// The parser bound by `main`.
    pub fn parser(&self) -> Option<&ast::ParserDecl> {
        self.program
            .parsers()
            .find(|p| p.name.name == self.pipeline.parser)
    }

    /// The ingress control bound by `main`.
    pub fn ingress(&self) -> Option<&ast::ControlDecl> {
        self.program
            .controls()
            .find(|c| c.name.name == self.pipeline.ingress)
    }

    /// The deparser bound by `main`.
    pub fn deparser(&self) -> Option<&ast::ControlDecl> {
        self.program
            .controls()
            .find(|c| c.name.name == self.pipeline.deparser)
    }
}

/// Reads, parses and checks the P4 program at `path`. Errors name the path as given.
pub fn load(path: &Path) -> Result<Checked, P4Error> {
    let name = path.display().to_string();
    let text = std::fs::read_to_string(path).map_err(|e| P4Error {
        position: Position {
            file: name.clone(),
            line: 0,
            column: 0,
        },
        kind: ErrorKind::Io {
            path: name.clone(),
            reason: e.to_string(),
        },
    })?;
    load_str(&name, &text)
}

/// Parses and checks `text` as file `name` (relative includes resolve from `name`'s directory).
pub fn load_str(name: &str, text: &str) -> Result<Checked, P4Error> {
    let (name, text) = (name.to_string(), text.to_string());
    on_front_end_stack(move || {
        let mut sources = SourceMap::default();
        let program = parser::parse_program(&mut sources, &name, text)?;
        let output = check::check(&program, &sources)?;
        Ok(Checked {
            program,
            sources,
            types: output.types,
            pipeline: output.pipeline,
            expr_types: output.expr_types,
            names: output.names,
            constants: output.constants,
        })
    })
}

/// Parses `text` as file `name` into an unchecked AST (and the files it read).
pub fn parse_str(name: &str, text: &str) -> Result<(ast::Program, SourceMap), P4Error> {
    let (name, text) = (name.to_string(), text.to_string());
    on_front_end_stack(move || {
        let mut sources = SourceMap::default();
        let program = parser::parse_program(&mut sources, &name, text)?;
        Ok((program, sources))
    })
}

/// Stack for the parser and checker. Both recurse once per nesting level (at most
/// [`parser::MAX_DEPTH`]), and unoptimised builds spend about 20 KiB of stack per expression
/// level, more than a test thread's 2 MiB holds at the limit; a thread of its own makes the depth
/// limit, not the caller's stack, decide.
const FRONT_END_STACK_BYTES: usize = 64 << 20;

fn on_front_end_stack<T: Send + 'static>(
    work: impl FnOnce() -> Result<T, P4Error> + Send + 'static,
) -> Result<T, P4Error> {
    let internal = |reason: &str| P4Error {
        position: Position {
            file: String::from("<linerate-p4>"),
            line: 0,
            column: 0,
        },
        kind: ErrorKind::Invalid(format!("internal error: {reason}")),
    };
    std::thread::Builder::new()
        .name(String::from("linerate-p4"))
        .stack_size(FRONT_END_STACK_BYTES)
        .spawn(work)
        .map_err(|e| internal(&format!("cannot start the front end's thread: {e}")))?
        .join()
        .map_err(|_| internal("the front end panicked"))?
}
