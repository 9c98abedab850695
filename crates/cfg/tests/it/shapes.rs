//! Hand-written programs of known shape, with their blocks, edges and analyses pinned.

use crate::common;

use common::*;
use linerate_bpf::insn::Cond;
use linerate_cfg::{CallKind, CallSite, Cfg, Edge, EdgeKind};

fn edges(cfg: &Cfg) -> Vec<(usize, usize, EdgeKind)> {
    cfg.edges().iter().map(|e| (e.from, e.to, e.kind)).collect()
}

fn extents(cfg: &Cfg) -> Vec<(usize, usize, usize)> {
    cfg.blocks()
        .iter()
        .map(|b| (b.first, b.last, b.insn_count))
        .collect()
}

#[test]
fn straight_line_is_one_block() {
    let cfg = Cfg::build(&single(vec![mov64(0, 0), add64(0, 1), exit()])).unwrap();
    assert_eq!(extents(&cfg), [(0, 2, 3)]);
    assert!(cfg.edges().is_empty());
    let f = &cfg.functions()[0];
    assert_eq!((f.entry, f.exits.clone()), (0, vec![0]));
    assert_eq!(f.topological_order(), [0]);
    assert!(cfg.is_loop_free());
    let longest = cfg.longest_path(0).unwrap();
    assert_eq!((longest.insns, longest.blocks), (3, vec![0]));
    assert_eq!(cfg.shortest_path(0).unwrap().insns, 3);
    assert_eq!(cfg.idom(0), None);
    assert!(cfg.dominates(0, 0));
}

#[test]
fn if_else_diamond() {
    let cfg = Cfg::build(&single(vec![
        jmp(Cond::Eq, 1, 0, 2),
        mov64(0, 2),
        ja(1),
        mov64(0, 1),
        exit(),
    ]))
    .unwrap();
    assert_eq!(extents(&cfg), [(0, 0, 1), (1, 2, 2), (3, 3, 1), (4, 4, 1)]);
    assert_eq!(
        edges(&cfg),
        [
            (0, 2, EdgeKind::Taken),
            (0, 1, EdgeKind::NotTaken),
            (1, 3, EdgeKind::Unconditional),
            (2, 3, EdgeKind::Fallthrough),
        ]
    );
    let f = &cfg.functions()[0];
    assert_eq!(f.exits, [3]);
    assert_eq!(f.topological_order(), [0, 1, 2, 3]);
    assert_eq!([cfg.idom(1), cfg.idom(2), cfg.idom(3)], [Some(0); 3]);
    assert!(!cfg.dominates(1, 3) && !cfg.dominates(2, 3));
    assert!(f.back_edges().is_empty() && f.loops().is_empty());
    let longest = cfg.longest_path(0).unwrap();
    assert_eq!((longest.insns, longest.blocks), (4, vec![0, 1, 3]));
    let shortest = cfg.shortest_path(0).unwrap();
    assert_eq!((shortest.insns, shortest.blocks), (3, vec![0, 2, 3]));
    assert_eq!(cfg.successors(0).collect::<Vec<_>>(), [2, 1]);
    assert_eq!(cfg.predecessors(3).collect::<Vec<_>>(), [1, 2]);
}

/// `for (r1 = 0; r1 < 10; r1++) r0 += 2;`
fn counted_loop() -> Cfg {
    Cfg::build(&single(vec![
        mov64(0, 0),
        mov64(1, 0),
        jmp(Cond::Ge, 1, 10, 3),
        add64(0, 2),
        add64(1, 1),
        ja(-4),
        exit(),
    ]))
    .unwrap()
}

#[test]
fn counted_loop_has_one_natural_loop() {
    let cfg = counted_loop();
    assert_eq!(extents(&cfg), [(0, 1, 2), (2, 2, 1), (3, 5, 3), (6, 6, 1)]);
    assert_eq!(
        edges(&cfg),
        [
            (0, 1, EdgeKind::Fallthrough),
            (1, 3, EdgeKind::Taken),
            (1, 2, EdgeKind::NotTaken),
            (2, 1, EdgeKind::Unconditional),
        ]
    );
    let f = &cfg.functions()[0];
    assert_eq!(f.back_edges(), [3]);
    assert!(cfg.is_back_edge(3) && !cfg.is_back_edge(2));
    assert_eq!(f.retreating_edges(), [3]);
    assert!(f.is_reducible() && !f.is_loop_free() && !cfg.is_loop_free());
    let [l] = f.loops() else {
        panic!("one loop expected, got {:?}", f.loops())
    };
    assert_eq!((l.header, l.header_slot), (1, 2));
    assert_eq!(l.body, [1, 2]);
    assert_eq!(l.back_edges, [3]);
    assert_eq!((l.insn_count, l.depth, l.parent), (4, 1, None));
    assert_eq!(f.max_loop_depth(), 1);
    assert_eq!(cfg.longest_path(0), None);
    assert_eq!(cfg.shortest_path(0), None);
    // The acyclic part (without the back edge) is still ordered.
    assert_eq!(f.topological_order(), [0, 1, 2, 3]);
}

#[test]
fn nested_loops_have_depth_two() {
    let cfg = Cfg::build(&single(vec![
        mov64(1, 0),
        jmp(Cond::Ge, 1, 4, 7),
        mov64(2, 0),
        jmp(Cond::Ge, 2, 8, 3),
        add64(0, 1),
        add64(2, 1),
        ja(-4),
        add64(1, 1),
        ja(-8),
        exit(),
    ]))
    .unwrap();
    assert_eq!(
        cfg.blocks().iter().map(|b| b.first).collect::<Vec<_>>(),
        [0, 1, 2, 3, 4, 7, 9]
    );
    assert_eq!(
        edges(&cfg),
        [
            (0, 1, EdgeKind::Fallthrough),
            (1, 6, EdgeKind::Taken),
            (1, 2, EdgeKind::NotTaken),
            (2, 3, EdgeKind::Fallthrough),
            (3, 5, EdgeKind::Taken),
            (3, 4, EdgeKind::NotTaken),
            (4, 3, EdgeKind::Unconditional),
            (5, 1, EdgeKind::Unconditional),
        ]
    );
    let f = &cfg.functions()[0];
    assert_eq!(f.back_edges(), [6, 7]);
    let loops = f.loops();
    assert_eq!(loops.len(), 2);
    assert_eq!((loops[0].header, loops[0].header_slot), (1, 1));
    assert_eq!(loops[0].body, [1, 2, 3, 4, 5]);
    assert_eq!((loops[0].depth, loops[0].parent), (1, None));
    assert_eq!((loops[1].header, loops[1].header_slot), (3, 3));
    assert_eq!(loops[1].body, [3, 4]);
    assert_eq!((loops[1].depth, loops[1].parent), (2, Some(0)));
    assert_eq!(cfg.max_loop_depth(), 2);
    assert_eq!(cfg.idom(3), Some(2));
    assert_eq!(cfg.idom(6), Some(1));
    let summary = cfg.summary();
    assert_eq!(summary.max_loop_depth, 2);
    assert_eq!(
        summary
            .loops
            .iter()
            .map(|l| (l.header_slot, l.blocks, l.insns, l.depth))
            .collect::<Vec<_>>(),
        [(1, 5, 8, 1), (3, 2, 4, 2)]
    );
}

#[test]
fn bpf_to_bpf_call_records_the_callee() {
    let cfg = Cfg::build(&program(&[
        ("main", vec![mov64(1, 5), call_local(1), exit()]),
        ("add_one", vec![call_helper(5), add64(0, 1), exit()]),
    ]))
    .unwrap();
    assert_eq!(extents(&cfg), [(0, 2, 3), (3, 5, 3)]);
    assert!(cfg.edges().is_empty());
    assert_eq!(
        cfg.calls(),
        [CallSite {
            slot: 1,
            block: 0,
            caller: 0,
            callee: 1,
            kind: CallKind::Call
        }]
    );
    let callee = &cfg.functions()[1];
    assert_eq!(
        (callee.name.as_str(), callee.entry, callee.blocks.clone()),
        ("add_one", 1, 1..2)
    );
    assert_eq!(cfg.functions()[0].calls, [0]);
    assert_eq!(cfg.callees(0), [1]);
    assert_eq!(cfg.callers(1), [0]);
    assert_eq!(cfg.function_of(1).map(|f| f.index), Some(1));
    assert_eq!(cfg.longest_path(0).unwrap().insns, 3);
    assert_eq!(cfg.longest_path_with_calls(0), Some(6));
    assert_eq!(cfg.shortest_path_with_calls(0), Some(6));
    assert!(cfg.unreachable_functions().is_empty());
    assert!(!cfg.has_recursion() && cfg.is_loop_free());
    let summary = cfg.summary();
    assert_eq!(
        (summary.functions, summary.blocks, summary.call_sites),
        (2, 2, 1)
    );
}

#[test]
fn function_address_load_is_a_callback_site() {
    let cfg = Cfg::build(&program(&[
        ("main", vec![ld_func(2, 3), call_helper(181), exit()]),
        ("callback", vec![mov64(0, 0), exit()]),
    ]))
    .unwrap();
    assert_eq!(cfg.calls().len(), 1);
    assert_eq!(
        (cfg.calls()[0].callee, cfg.calls()[0].kind),
        (1, CallKind::Callback)
    );
    // Callbacks are not charged to the caller's path.
    assert_eq!(cfg.longest_path_with_calls(0), Some(3));
}

#[test]
fn uncalled_function_is_unreachable() {
    let cfg = Cfg::build(&program(&[
        ("main", vec![mov64(0, 0), exit()]),
        ("dead", vec![mov64(0, 1), exit()]),
    ]))
    .unwrap();
    assert_eq!(cfg.unreachable_functions(), [1]);
    assert_eq!(cfg.summary().unreachable_functions, 1);
}

#[test]
fn wide_loads_stay_inside_their_block() {
    let cfg = Cfg::build(&single(vec![
        ld64(1, 1 << 32),
        jmp(Cond::Eq, 1, 0, 2),
        ld64(0, 7),
        exit(),
    ]))
    .unwrap();
    let spans: Vec<(usize, usize, usize, usize)> = cfg
        .blocks()
        .iter()
        .map(|b| (b.first, b.last, b.end, b.insn_count))
        .collect();
    assert_eq!(spans, [(0, 2, 3, 2), (3, 3, 5, 1), (5, 5, 6, 1)]);
    let owners: Vec<Option<usize>> = (0..7).map(|s| cfg.block_of(s)).collect();
    assert_eq!(
        owners,
        [Some(0), Some(0), Some(0), Some(1), Some(1), Some(2), None]
    );
    assert_eq!(cfg.block_instructions(1), [(3, ld64(0, 7))]);
    assert_eq!(
        cfg.edges()[0],
        Edge {
            from: 0,
            to: 2,
            kind: EdgeKind::Taken
        }
    );
    assert_eq!(cfg.longest_path(0).unwrap().insns, 4);
    assert_eq!(cfg.shortest_path(0).unwrap().insns, 3);
}

#[test]
fn skipped_code_is_unreachable() {
    let cfg = Cfg::build(&single(vec![ja(1), mov64(0, 2), exit()])).unwrap();
    assert_eq!(extents(&cfg), [(0, 0, 1), (1, 1, 1), (2, 2, 1)]);
    assert_eq!(
        edges(&cfg),
        [
            (0, 2, EdgeKind::Unconditional),
            (1, 2, EdgeKind::Fallthrough)
        ]
    );
    let f = &cfg.functions()[0];
    assert_eq!(f.unreachable_blocks(), [1]);
    assert_eq!(f.topological_order(), [0, 2]);
    assert_eq!(cfg.idom(1), None);
    assert_eq!(cfg.idom(2), Some(0));
    assert!(!cfg.dominates(0, 1));
    assert_eq!(cfg.summary().unreachable_blocks, 1);
    let longest = cfg.longest_path(0).unwrap();
    assert_eq!((longest.insns, longest.blocks), (2, vec![0, 2]));
}

#[test]
fn code_after_exit_is_unreachable() {
    let cfg = Cfg::build(&single(vec![mov64(0, 1), exit(), mov64(0, 2), exit()])).unwrap();
    assert_eq!(extents(&cfg), [(0, 1, 2), (2, 3, 2)]);
    assert!(cfg.edges().is_empty());
    assert_eq!(cfg.functions()[0].exits, [0, 1]);
    assert_eq!(cfg.functions()[0].unreachable_blocks(), [1]);
}

#[test]
fn two_entry_cycle_is_irreducible() {
    let cfg = Cfg::build(&single(vec![
        jmp(Cond::Eq, 1, 0, 2),
        add64(0, 1),
        jmp(Cond::Gt, 0, 9, 2),
        add64(0, 2),
        jmp(Cond::Lt, 0, 5, -4),
        exit(),
    ]))
    .unwrap();
    assert_eq!(
        edges(&cfg),
        [
            (0, 2, EdgeKind::Taken),
            (0, 1, EdgeKind::NotTaken),
            (1, 3, EdgeKind::Taken),
            (1, 2, EdgeKind::NotTaken),
            (2, 1, EdgeKind::Taken),
            (2, 3, EdgeKind::NotTaken),
        ]
    );
    let f = &cfg.functions()[0];
    assert_eq!([cfg.idom(1), cfg.idom(2), cfg.idom(3)], [Some(0); 3]);
    assert!(f.back_edges().is_empty());
    assert!(f.loops().is_empty());
    assert_eq!(f.retreating_edges(), [3]);
    assert_eq!(f.irreducible_edges(), [3]);
    assert!(!f.is_reducible() && !f.is_loop_free());
    assert_eq!(cfg.longest_path(0), None);
    let summary = cfg.summary();
    assert_eq!(summary.irreducible_functions, 1);
    assert!(!summary.is_loop_free);
}

#[test]
fn self_loop_is_a_one_block_loop() {
    let cfg = Cfg::build(&single(vec![
        mov64(1, 3),
        add64(1, -1),
        jmp(Cond::Ne, 1, 0, -2),
        exit(),
    ]))
    .unwrap();
    assert_eq!(extents(&cfg), [(0, 0, 1), (1, 2, 2), (3, 3, 1)]);
    let f = &cfg.functions()[0];
    assert_eq!(f.back_edges(), [1]);
    assert_eq!(
        cfg.edges()[1],
        Edge {
            from: 1,
            to: 1,
            kind: EdgeKind::Taken
        }
    );
    assert_eq!(f.loops()[0].body, [1]);
}

#[test]
fn jump_to_next_instruction_gives_two_edges() {
    let cfg = Cfg::build(&single(vec![jmp(Cond::Eq, 1, 0, 0), exit()])).unwrap();
    assert_eq!(
        edges(&cfg),
        [(0, 1, EdgeKind::Taken), (0, 1, EdgeKind::NotTaken)]
    );
    assert_eq!(cfg.longest_path(0).unwrap().insns, 2);
}

#[test]
fn program_without_function_table_is_one_function() {
    let mut p = single(vec![mov64(0, 0), exit()]);
    p.functions.clear();
    let cfg = Cfg::build(&p).unwrap();
    assert_eq!(cfg.functions().len(), 1);
    assert_eq!((cfg.functions()[0].start, cfg.functions()[0].len), (0, 2));
}

#[test]
fn summary_serialises_to_json() {
    let summary = counted_loop().summary();
    let json = serde_json::to_value(&summary).unwrap();
    assert_eq!(json["functions"], 1);
    assert_eq!(json["blocks"], 4);
    assert_eq!(json["edges"], 4);
    assert_eq!(json["loops"][0]["header_slot"], 2);
    assert_eq!(json["loops"][0]["blocks"], 2);
    assert_eq!(json["max_loop_depth"], 1);
    assert_eq!(json["unreachable_blocks"], 0);
    assert_eq!(json["is_loop_free"], false);
    let back: linerate_cfg::CfgSummary = serde_json::from_value(json).unwrap();
    assert_eq!(back, summary);
}

#[test]
fn dot_lists_blocks_and_edges() {
    let dot = counted_loop().to_dot();
    assert!(dot.starts_with("digraph \"main\" {"), "{dot}");
    assert!(dot.contains("b2 [label=\"b2: 3\u{2013}5\"]"), "{dot}");
    assert!(dot.contains("b2 -> b1 [penwidth=3];"), "{dot}");
    assert!(
        dot.contains("b1 -> b3 [color=darkgreen, label=\"T\"];"),
        "{dot}"
    );
    assert!(dot.trim_end().ends_with('}'));
}
