//! CFGs of every program of every compiled example in `examples/`, checked for the structural
//! invariants every consumer relies on.

use std::path::{Path, PathBuf};

use linerate_bpf::insn::Instruction;
use linerate_bpf::read_object_file;
use linerate_cfg::{Cfg, EdgeKind};

fn example_objects() -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples");
    let mut objects: Vec<PathBuf> = std::fs::read_dir(&dir)
        .map(|entries| {
            entries
                .filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|p| p.extension().is_some_and(|x| x == "o"))
                .collect()
        })
        .unwrap_or_default();
    objects.sort();
    objects
}

/// Every slot in exactly one block, blocks and edges mutually consistent, dominators and the
/// topological order agreeing with the edges.
fn check_invariants(cfg: &Cfg, slots: usize, what: &str) {
    let mut owner = vec![None; slots];
    for b in cfg.blocks() {
        assert!(
            b.first <= b.last && b.last < b.end && b.end <= slots,
            "{what}: {b:?}"
        );
        for s in b.slots() {
            assert_eq!(
                owner[s].replace(b.id),
                None,
                "{what}: slot {s} in two blocks"
            );
            assert_eq!(cfg.block_of(s), Some(b.id), "{what}: block_of({s})");
        }
        let insns = cfg.block_instructions(b.id);
        assert_eq!(insns.len(), b.insn_count, "{what}: {b:?}");
        assert_eq!(insns.first().map(|i| i.0), Some(b.first), "{what}");
        assert_eq!(insns.last().map(|i| i.0), Some(b.last), "{what}");
        for &e in &b.succs {
            assert_eq!(cfg.edges()[e].from, b.id, "{what}");
        }
        for &e in &b.preds {
            assert_eq!(cfg.edges()[e].to, b.id, "{what}");
        }
        let last = insns.last().map(|i| i.1);
        let kinds: Vec<EdgeKind> = b.succs.iter().map(|&e| cfg.edges()[e].kind).collect();
        match last {
            Some(Instruction::Exit) => assert!(kinds.is_empty(), "{what}"),
            Some(Instruction::Ja { .. }) => assert_eq!(kinds, [EdgeKind::Unconditional]),
            Some(Instruction::Jump { .. }) => {
                assert_eq!(kinds, [EdgeKind::Taken, EdgeKind::NotTaken])
            }
            _ => assert_eq!(kinds, [EdgeKind::Fallthrough], "{what}: {b:?}"),
        }
    }
    assert!(
        owner.iter().all(Option::is_some),
        "{what}: slot in no block"
    );
    let succ_count: usize = cfg.blocks().iter().map(|b| b.succs.len()).sum();
    let pred_count: usize = cfg.blocks().iter().map(|b| b.preds.len()).sum();
    assert_eq!(
        (succ_count, pred_count),
        (cfg.edges().len(), cfg.edges().len())
    );
    for e in cfg.edges() {
        assert_eq!(
            cfg.blocks()[e.from].function,
            cfg.blocks()[e.to].function,
            "{what}: edge leaves its function"
        );
    }
    for f in cfg.functions() {
        assert_eq!(cfg.blocks()[f.entry].first, f.start, "{what}");
        let mut position = vec![None; cfg.blocks().len()];
        for (i, &b) in f.topological_order().iter().enumerate() {
            position[b] = Some(i);
            assert!(
                cfg.dominates(f.entry, b),
                "{what}: entry must dominate b{b}"
            );
        }
        for b in f.blocks.clone() {
            for &e in &cfg.blocks()[b].succs {
                let to = cfg.edges()[e].to;
                if let (Some(p), Some(q)) = (position[b], position[to]) {
                    let retreating = f.retreating_edges().contains(&e);
                    assert_eq!(q <= p, retreating, "{what}: edge {e} b{b}->b{to}");
                }
            }
        }
        for l in f.loops() {
            for &b in &l.body {
                assert!(cfg.dominates(l.header, b), "{what}: loop header");
            }
        }
    }
    for c in cfg.calls() {
        assert_eq!(cfg.block_of(c.slot), Some(c.block));
    }
}

#[test]
fn every_example_program_has_a_consistent_cfg() {
    let objects = example_objects();
    if objects.is_empty() {
        eprintln!("SKIPPED: no compiled examples in examples/");
        return;
    }
    let mut programs = 0;
    for path in &objects {
        let object = read_object_file(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        let file = path.file_name().and_then(|n| n.to_str()).unwrap_or("?");
        let mut loops = 0;
        for program in &object.programs {
            let what = format!("{file}:{}", program.name);
            let cfg = Cfg::build(program).unwrap_or_else(|e| panic!("{what}: {e}"));
            check_invariants(&cfg, program.insns.len(), &what);
            let summary = cfg.summary();
            assert_eq!(summary.blocks, cfg.blocks().len());
            assert!(!cfg.to_dot().is_empty());
            loops += summary.loops.len();
            programs += 1;
        }
        if file == "xdp_path_explosion.o" {
            let cfg = Cfg::build(&object.programs[0]).expect("builds");
            let paths = cfg.path_count(0).expect("loop free");
            assert!(paths >= 2f64.powi(40), "{file}: only {paths} paths");
        }
        if file.starts_with("xdp_cms_d") {
            assert!(
                loops > 0,
                "{file}: the row loop is built with unrolling disabled"
            );
        }
    }
    assert!(programs > 0);
}
