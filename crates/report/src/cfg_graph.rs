//! The control-flow graph of a program as SVG, laid out by Graphviz's `dot`: one box per block
//! with its instructions and cost on the device model, the slowest satisfiable path drawn bold
//! in red, the naive bound's path (slower, and impossible) dashed and faded where it leaves the
//! satisfiable one, unreachable blocks faded.
//!
//! The graph comes from `linerate cost --json` (blocks, edges, costs); the paths from `linerate
//! bound --json`, whose blocks are nodes of the unrolled graph named by their first slot. A path
//! is mapped back onto the CFG by the blocks holding those slots; where two consecutive nodes are
//! not joined by one edge (the search's graph skips straight-line chains), the shortest chain of
//! edges between them is drawn.

use std::collections::{BTreeSet, HashMap, VecDeque};
use std::io::Write;
use std::process::{Command, Stdio};

use serde_json::Value;

use crate::html::f64_at;
use crate::Error;

/// Colour of the slowest satisfiable path.
const SSP_COLOR: &str = "#d62728";
/// Colour of the naive bound's path where it is not the satisfiable one.
const NAIVE_COLOR: &str = "#8c8c8c";
/// Longest chain of edges searched between two consecutive nodes of a path.
const MAX_CHAIN: usize = 64;

/// A block of the graph as `cost --json` lists it.
struct Block {
    id: usize,
    first: usize,
    insns: usize,
    reachable: bool,
    cost: String,
    function: String,
}

/// The blocks and edges of one program's graph.
pub struct Graph {
    blocks: Vec<Block>,
    edges: Vec<(usize, usize, String)>,
}

impl Graph {
    /// The graph in a `cost --json` document of one program.
    pub fn from_cost(cost: &Value) -> Result<Graph, Error> {
        let input = |what: &str| Error::Input {
            document: "cost --json".into(),
            what: what.into(),
        };
        let blocks = cost
            .get("blocks")
            .and_then(Value::as_array)
            .ok_or_else(|| input("no `blocks`"))?
            .iter()
            .map(|b| {
                Some(Block {
                    id: b.get("id")?.as_u64()? as usize,
                    first: b.get("first_insn")?.as_u64()? as usize,
                    insns: b.get("insns")?.as_u64()? as usize,
                    reachable: b.get("reachable").and_then(Value::as_bool).unwrap_or(true),
                    cost: cost_text(b.get("cost")),
                    function: b
                        .get("function")
                        .and_then(Value::as_str)
                        .unwrap_or_default()
                        .to_string(),
                })
            })
            .collect::<Option<Vec<Block>>>()
            .ok_or_else(|| input("a block lacks id, first_insn or insns"))?;
        let edges = cost
            .get("edges")
            .and_then(Value::as_array)
            .ok_or_else(|| input("no `edges`"))?
            .iter()
            .map(|e| {
                Some((
                    e.get("from")?.as_u64()? as usize,
                    e.get("to")?.as_u64()? as usize,
                    e.get("kind")
                        .and_then(Value::as_str)
                        .unwrap_or_default()
                        .to_string(),
                ))
            })
            .collect::<Option<Vec<_>>>()
            .ok_or_else(|| input("an edge lacks from or to"))?;
        Ok(Graph { blocks, edges })
    }

    /// The block holding instruction `slot`.
    pub fn block_of(&self, slot: usize) -> Option<usize> {
        self.blocks
            .iter()
            .find(|b| b.first <= slot && slot < b.first + b.insns.max(1))
            .map(|b| b.id)
    }

    /// The slots block `id` holds.
    pub fn slots_of(&self, id: usize) -> std::ops::Range<usize> {
        self.blocks
            .iter()
            .find(|b| b.id == id)
            .map_or(0..0, |b| b.first..b.first + b.insns)
    }

    /// The blocks and edges a path through nodes starting at `slots` crosses.
    pub fn path(&self, slots: &[usize]) -> (BTreeSet<usize>, BTreeSet<(usize, usize)>) {
        let mut blocks: Vec<usize> = slots.iter().filter_map(|&s| self.block_of(s)).collect();
        blocks.dedup();
        let mut on_blocks: BTreeSet<usize> = blocks.iter().copied().collect();
        let mut on_edges = BTreeSet::new();
        for pair in blocks.windows(2) {
            if let Some(chain) = self.chain(pair[0], pair[1]) {
                for edge in chain {
                    on_blocks.insert(edge.1);
                    on_edges.insert(edge);
                }
            }
        }
        (on_blocks, on_edges)
    }

    /// The shortest chain of edges from block `from` to block `to` (breadth first, bounded).
    fn chain(&self, from: usize, to: usize) -> Option<Vec<(usize, usize)>> {
        let mut parent: HashMap<usize, usize> = HashMap::new();
        let mut queue = VecDeque::from([(from, 0usize)]);
        while let Some((at, depth)) = queue.pop_front() {
            if depth >= MAX_CHAIN {
                continue;
            }
            for &(a, b, _) in &self.edges {
                if a != at || b == from || parent.contains_key(&b) {
                    continue;
                }
                parent.insert(b, a);
                if b == to {
                    let mut chain = vec![(a, b)];
                    let mut node = a;
                    while node != from {
                        let up = parent[&node];
                        chain.push((up, node));
                        node = up;
                    }
                    chain.reverse();
                    return Some(chain);
                }
                queue.push_back((b, depth + 1));
            }
        }
        None
    }

    /// The graph in Graphviz's language, the satisfiable path (`ssp`) and the naive bound's
    /// (`naive`) marked, both as node slots from `bound --json`.
    pub fn dot(&self, ssp: &[usize], naive: &[usize]) -> String {
        let (ssp_blocks, ssp_edges) = self.path(ssp);
        let (naive_blocks, naive_edges) = self.path(naive);
        let mut out = String::from(
            "digraph cfg {\n  graph [rankdir=TB, nodesep=0.25, ranksep=0.3, bgcolor=\"transparent\"];\n  \
             node [shape=box, style=rounded, fontname=\"Helvetica\", fontsize=10, margin=\"0.08,0.03\"];\n  \
             edge [arrowsize=0.6, fontname=\"Helvetica\", fontsize=8];\n",
        );
        for b in &self.blocks {
            let last = (b.first + b.insns).saturating_sub(1);
            let label = format!(
                "B{} · {}–{}\\n{} insns · {}",
                b.id, b.first, last, b.insns, b.cost
            );
            let attrs = if ssp_blocks.contains(&b.id) {
                format!("class=\"block ssp\", color=\"{SSP_COLOR}\", penwidth=2.4")
            } else if naive_blocks.contains(&b.id) {
                format!(
                    "class=\"block naive\", color=\"{NAIVE_COLOR}\", fontcolor=\"{NAIVE_COLOR}\", style=\"rounded,dashed\""
                )
            } else if !b.reachable {
                format!(
                    "class=\"block unreachable\", color=\"{NAIVE_COLOR}\", fontcolor=\"{NAIVE_COLOR}\", style=\"rounded,dotted\""
                )
            } else {
                "class=\"block\"".to_string()
            };
            out.push_str(&format!(
                "  b{} [label=\"{}\", tooltip=\"{} in {}\", {attrs}];\n",
                b.id,
                dot_escape(&label),
                dot_escape(&format!("block {} ({})", b.id, b.cost)),
                dot_escape(&b.function)
            ));
        }
        for (from, to, kind) in &self.edges {
            let key = (*from, *to);
            let attrs = if ssp_edges.contains(&key) {
                format!("class=\"ssp\", color=\"{SSP_COLOR}\", penwidth=2.4")
            } else if naive_edges.contains(&key) {
                format!("class=\"naive\", color=\"{NAIVE_COLOR}\", style=dashed")
            } else {
                "class=\"plain\"".to_string()
            };
            out.push_str(&format!(
                "  b{from} -> b{to} [tooltip=\"{}\", {attrs}];\n",
                dot_escape(kind)
            ));
        }
        out.push_str("}\n");
        out
    }
}

/// A cost vector `{"cycles": 2.67, "dram": 1}` as `2.67 cycles, 1 dram` (zero parts left out).
fn cost_text(cost: Option<&Value>) -> String {
    let Some(Value::Object(parts)) = cost else {
        return String::new();
    };
    let texts: Vec<String> = parts
        .iter()
        .filter_map(|(name, _)| {
            let v = f64_at(cost?, name)?;
            (v != 0.0).then(|| {
                if v == v.trunc() {
                    format!("{v:.0} {name}")
                } else {
                    format!("{v:.2} {name}")
                }
            })
        })
        .collect();
    if texts.is_empty() {
        "free".into()
    } else {
        texts.join(", ")
    }
}

fn dot_escape(text: &str) -> String {
    text.replace('"', "\\\"")
}

/// Whether Graphviz's `dot` can be run.
pub fn check_dot() -> Result<(), Error> {
    match Command::new("dot")
        .arg("-V")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
    {
        Ok(status) if status.success() => Ok(()),
        Ok(status) => Err(Error::Dot(format!("`dot -V` exited with {status}"))),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Err(Error::DotMissing),
        Err(e) => Err(Error::Dot(e.to_string())),
    }
}

/// `dot`'s SVG of a graph, from the `<svg` element on (no XML prologue, so it can be inlined).
pub fn render(dot: &str) -> Result<String, Error> {
    let mut child = Command::new("dot")
        .arg("-Tsvg")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| {
            if e.kind() == std::io::ErrorKind::NotFound {
                Error::DotMissing
            } else {
                Error::Dot(e.to_string())
            }
        })?;
    let mut stdin = child
        .stdin
        .take()
        .ok_or_else(|| Error::Dot("no standard input".into()))?;
    // dot reads all of its input before writing, but a writer thread keeps a large graph from
    // ever deadlocking on full pipes.
    let input = dot.to_string();
    let writer = std::thread::spawn(move || stdin.write_all(input.as_bytes()));
    let output = child
        .wait_with_output()
        .map_err(|e| Error::Dot(e.to_string()))?;
    writer
        .join()
        .map_err(|_| Error::Dot("writer thread failed".into()))?
        .map_err(|e| Error::Dot(e.to_string()))?;
    if !output.status.success() {
        let stderr = String::from_utf8_lossy(&output.stderr);
        return Err(Error::Dot(
            stderr.lines().next().unwrap_or("no message").to_string(),
        ));
    }
    let svg = String::from_utf8_lossy(&output.stdout);
    let start = svg
        .find("<svg")
        .ok_or_else(|| Error::Dot("no <svg> in its output".into()))?;
    Ok(svg[start..].to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// 0 -> 1 -> 3, 0 -> 2 -> 3; block 4 unreachable.
    fn diamond() -> Graph {
        Graph::from_cost(&json!({
            "blocks": [
                {"id": 0, "first_insn": 0, "insns": 2, "reachable": true, "cost": {"cycles": 2.5}},
                {"id": 1, "first_insn": 2, "insns": 1, "reachable": true, "cost": {"cycles": 1.0}},
                {"id": 2, "first_insn": 3, "insns": 3, "reachable": true, "cost": {"cycles": 3.0}},
                {"id": 3, "first_insn": 6, "insns": 1, "reachable": true, "cost": {"cycles": 1.0, "dram": 0.0}},
                {"id": 4, "first_insn": 7, "insns": 1, "reachable": false, "cost": {"cycles": 1.0}},
            ],
            "edges": [
                {"from": 0, "to": 1, "kind": "fallthrough"},
                {"from": 0, "to": 2, "kind": "taken"},
                {"from": 1, "to": 3, "kind": "unconditional"},
                {"from": 2, "to": 3, "kind": "fallthrough"},
            ]
        }))
        .unwrap()
    }

    #[test]
    fn slots_map_to_their_blocks() {
        let g = diamond();
        assert_eq!(g.block_of(0), Some(0));
        assert_eq!(g.block_of(1), Some(0));
        assert_eq!(g.block_of(5), Some(2));
        assert_eq!(g.block_of(9), None);
        assert_eq!(g.slots_of(2), 3..6);
    }

    #[test]
    fn a_path_skipping_a_chain_is_drawn_through_it() {
        let g = diamond();
        // The search's graph names nodes 0 and 6 only: the chain through block 1 or 2 is
        // the shortest one found first (block 1).
        let (blocks, edges) = g.path(&[0, 3, 6]);
        assert_eq!(blocks, BTreeSet::from([0, 2, 3]));
        assert_eq!(edges, BTreeSet::from([(0, 2), (2, 3)]));
        let (_, edges) = g.path(&[0, 6]);
        assert_eq!(edges.len(), 2, "{edges:?}");
    }

    #[test]
    fn the_dot_text_marks_each_path_and_the_unreachable_block() {
        let g = diamond();
        let dot = g.dot(&[0, 3, 6], &[0, 2, 6]);
        assert!(
            dot.contains("b2 [label=\"B2 · 3–5\\n3 insns · 3 cycles\""),
            "{dot}"
        );
        assert!(
            dot.contains("b0 -> b2 [tooltip=\"taken\", class=\"ssp\""),
            "{dot}"
        );
        assert!(
            dot.contains("b0 -> b1 [tooltip=\"fallthrough\", class=\"naive\""),
            "{dot}"
        );
        assert!(dot.contains("class=\"block unreachable\""), "{dot}");
        assert!(dot.contains("1 cycles\""), "a zero part is left out: {dot}");
    }

    #[test]
    fn a_cost_document_without_blocks_is_refused() {
        assert!(Graph::from_cost(&json!({"edges": []})).is_err());
    }
}
