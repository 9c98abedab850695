//! Graphviz rendering of a [`Cfg`]: one cluster per function, one box per block labelled with its
//! slot range, edges styled by kind, back edges bold, calls dotted to the callee's entry.

use std::fmt::Write;

use crate::graph::{CallKind, Cfg, EdgeKind};

/// A Graphviz double-quoted string.
fn quote(s: &str) -> String {
    format!("\"{}\"", s.replace('\\', "\\\\").replace('"', "\\\""))
}

impl Cfg {
    /// The program's control-flow graph in the Graphviz `dot` language. Blocks are `b<id>`
    /// labelled `first–last` (slots of their first and last instruction); taken edges are green,
    /// not-taken edges red, fall-throughs dashed, back edges bold, calls dotted.
    pub fn to_dot(&self) -> String {
        let mut out = String::new();
        // Writing to a String cannot fail, so the results of `writeln!` are ignored.
        let _ = writeln!(out, "digraph {} {{", quote(self.name()));
        let _ = writeln!(out, "  node [shape=box, fontname=\"monospace\"];");
        for f in self.functions() {
            let _ = writeln!(out, "  subgraph cluster_{} {{", f.index);
            let label = format!("{} (insns {}..{})", f.name, f.start, f.start + f.len);
            let _ = writeln!(out, "    label={};", quote(&label));
            for b in f.blocks.clone() {
                let block = &self.blocks()[b];
                let mut attrs = format!("label=\"b{b}: {}\u{2013}{}\"", block.first, block.last);
                if b == f.entry {
                    attrs.push_str(", penwidth=2");
                }
                if f.unreachable_blocks().binary_search(&b).is_ok() {
                    attrs.push_str(", style=dashed, fontcolor=gray");
                }
                let _ = writeln!(out, "    b{b} [{attrs}];");
            }
            let _ = writeln!(out, "  }}");
        }
        for (id, e) in self.edges().iter().enumerate() {
            let mut attrs = match e.kind {
                EdgeKind::Taken => String::from("color=darkgreen, label=\"T\""),
                EdgeKind::NotTaken => String::from("color=red, label=\"F\""),
                EdgeKind::Fallthrough => String::from("style=dashed"),
                EdgeKind::Unconditional => String::new(),
            };
            if self.is_back_edge(id) {
                attrs.push_str(if attrs.is_empty() { "" } else { ", " });
                attrs.push_str("penwidth=3");
            }
            let _ = writeln!(out, "  b{} -> b{} [{attrs}];", e.from, e.to);
        }
        for c in self.calls() {
            let what = match c.kind {
                CallKind::Call => "call",
                CallKind::Callback => "callback",
            };
            let _ = writeln!(
                out,
                "  b{} -> b{} [style=dotted, label=\"{what}\"];",
                c.block,
                self.functions()[c.callee].entry
            );
        }
        out.push_str("}\n");
        out
    }
}

#[cfg(test)]
mod tests {
    use super::quote;

    #[test]
    fn quotes_escape_quotes_and_backslashes() {
        assert_eq!(quote(r#"a"b\c"#), r#""a\"b\\c""#);
    }
}
