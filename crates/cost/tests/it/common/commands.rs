//! Everything `linerate inspect` and `linerate cost` compute from a program, and the analyses,
//! run on one object, with the invariants that must hold whatever the program. Shared by
//! `tests/it/arbitrary_programs.rs` and the `commands` fuzz target (`fuzz/fuzz_targets/commands.rs`
//! includes this file), so that both run the same checks.
//!
//! Nothing here may panic on any object, and in debug builds no arithmetic may overflow: an
//! input file reaches all of it.

use linerate_analysis::Analysis;
use linerate_bpf::disasm::{disassemble, format_instruction};
use linerate_bpf::Object;
use linerate_cfg::{BlockId, Cfg};
use linerate_cost::{Cost, Model, ProgramCost};

/// How far a walk through a CFG goes before it stops.
const MAX_WALK: usize = 4096;

/// What happened to one program: whether it built a CFG and how each model took it.
#[derive(Debug, Default)]
pub struct Outcome {
    pub programs: usize,
    pub cfgs: usize,
    pub loop_bounds: usize,
    pub bounded_loops: usize,
    pub priced: usize,
    pub refused: usize,
}

/// Runs every command's computation on `object` under each of `models`; panics when an
/// invariant fails.
pub fn check_object(object: &Object, models: &[Model]) -> Outcome {
    let mut out = Outcome::default();
    inspect_object(object);
    for program in &object.programs {
        out.programs += 1;
        let _ = program.subprograms().count();
        // `inspect` prints the disassembly of programs that do not decode as well.
        let _ = disassemble(program, &object.maps);
        let Ok(cfg) = Cfg::build(program) else {
            continue;
        };
        out.cfgs += 1;
        inspect_cfg(object, &cfg);
        let analysis = Analysis::run(object, &cfg);
        check_analysis(&cfg, &analysis, &mut out);
        for model in models {
            // As `ProgramCost::new` does, with the analysis run once for both models.
            match ProgramCost::with_analysis(object, &cfg, &analysis, model) {
                Ok(cost) => {
                    out.priced += 1;
                    check_cost(&cfg, model, &cost);
                }
                Err(e) => {
                    out.refused += 1;
                    assert!(!e.to_string().is_empty());
                }
            }
        }
    }
    out
}

/// The object-wide tables of `inspect`: maps and global data.
fn inspect_object(object: &Object) {
    for m in &object.maps {
        let _ = (
            m.map_type.name(),
            format!("{:#x}", m.flags),
            format!("{:?}", m.origin),
        );
        if let Some(value) = &m.initial_value {
            let _ = &value[..value.len().min(24)];
        }
    }
}

/// The CFG digest `inspect` prints (text, JSON and dot), and the path figures behind it.
fn inspect_cfg(object: &Object, cfg: &Cfg) {
    let summary = cfg.summary();
    assert_eq!(summary.blocks, cfg.blocks().len());
    assert_eq!(summary.edges, cfg.edges().len());
    let _ = serde_json::to_string(&summary).expect("summaries serialise");
    for f in &summary.per_function {
        if let Some(n) = f.paths {
            assert!(n >= 0.0, "{n} paths");
            let _ = format!("2^{:.1}", n.log2());
        }
    }
    let _ = cfg.to_dot();
    for f in 0..cfg.functions().len() {
        let _ = cfg.longest_path(f);
        let _ = cfg.shortest_path(f);
        let _ = cfg.longest_path_with_calls(f);
        let _ = cfg.shortest_path_with_calls(f);
        let _ = cfg.path_count(f);
        let _ = cfg.callees(f);
        let _ = cfg.callers(f);
    }
    for (slot, insn) in cfg.instructions() {
        let _ = format_instruction(insn, &object.maps);
        assert!(cfg.block_of(*slot).is_some(), "insn {slot} in no block");
    }
}

/// Regions, packet lengths and loop bounds: every query answers, and the states agree with the
/// CFG (an edge taken leaves a reached block and reaches its target).
fn check_analysis(cfg: &Cfg, analysis: &Analysis, out: &mut Outcome) {
    for (slot, _) in cfg.instructions() {
        let _ = analysis.fact(*slot);
    }
    for b in 0..cfg.blocks().len() {
        let _ = analysis.block_state(b);
    }
    for (e, edge) in cfg.edges().iter().enumerate() {
        let len = analysis.min_packet_len(e);
        assert_eq!(len.is_some(), analysis.edge_state(e).is_some());
        if len.is_some() {
            assert!(
                analysis.block_state(edge.from).is_some(),
                "edge {e} taken from block {} that is never reached",
                edge.from
            );
            assert!(
                analysis.block_state(edge.to).is_some(),
                "edge {e} taken to block {} that is never reached",
                edge.to
            );
        }
    }
    for bound in analysis.loop_bounds() {
        out.loop_bounds += 1;
        let block = cfg.block(bound.header).expect("loop header is a block");
        assert_eq!(block.first, bound.header_slot);
        assert_eq!(block.function, bound.function);
        if bound.max_header_runs.is_some() {
            out.bounded_loops += 1;
        }
    }
}

fn assert_sane(cost: &Cost, what: &str) {
    for v in &cost.0 {
        assert!(v.is_finite() && *v >= 0.0, "{what} costs {v}: {cost:?}");
    }
}

/// Whether `small` is at most `big` in every component, up to rounding.
fn at_most(small: &Cost, big: &Cost) -> bool {
    small
        .0
        .iter()
        .zip(&big.0)
        .all(|(s, b)| *s <= *b + 1e-9 * b.abs().max(1.0))
}

/// A walk from block `from` that takes the `choice`-th successor (modulo their number) at each
/// block, up to a block without successors or [`MAX_WALK`] blocks.
fn walk(cfg: &Cfg, from: BlockId, choice: usize) -> Vec<BlockId> {
    let mut path = vec![from];
    let mut b = from;
    while path.len() < MAX_WALK {
        let succs: Vec<BlockId> = cfg.successors(b).collect();
        if succs.is_empty() {
            break;
        }
        b = succs[(choice + path.len()) % succs.len()];
        path.push(b);
    }
    path
}

/// What `cost` prints: block, edge and instruction charges, the slowest path and its rate, and
/// `--path` prices; the slowest path costs at least every path through the entry function.
fn check_cost(cfg: &Cfg, model: &Model, cost: &ProgramCost) {
    assert_eq!(cost.blocks.len(), cfg.blocks().len());
    assert_eq!(cost.edges.len(), cfg.edges().len());
    for b in &cost.blocks {
        assert_sane(&b.cost, "a block");
        let _ = model.named(&b.cost);
    }
    for e in &cost.edges {
        assert_sane(&e.cost, "an edge");
    }
    for (slot, charge) in &cost.slots {
        assert_sane(&charge.cost, "an instruction");
        if let Some(t) = &charge.taken {
            assert_sane(t, "a taken jump");
        }
        let _ = cfg.block_of(*slot);
        let _: Vec<String> = charge.items.iter().map(|i| i.to_string()).collect();
    }
    let frames = [model.limits().min_frame_bytes, 0, 64, 1518, u32::MAX];
    let worst = cost.worst_cost(model);
    if let Some(w) = &worst {
        assert_sane(w, "the slowest path");
        for frame in frames {
            let rate = model.packet_rate(w, frame);
            assert!(rate.pps >= 0.0, "{} pps", rate.pps);
        }
    }
    // `--path`: every block alone, every edge, walks from the entry, and paths that are refused.
    for b in 0..cfg.blocks().len() {
        let c = cost
            .path_cost(cfg, model, &[b])
            .expect("one block is a path");
        assert_sane(&c, "a block's path");
    }
    for e in cfg.edges() {
        let c = cost
            .path_cost(cfg, model, &[e.from, e.to])
            .expect("an edge is a path");
        assert_sane(&c, "an edge's path");
    }
    let n = cfg.blocks().len();
    assert!(cost.path_cost(cfg, model, &[]).is_err());
    assert!(cost.path_cost(cfg, model, &[n]).is_err());
    assert!(cost.path_cost(cfg, model, &[0, usize::MAX]).is_err());
    let entry = cfg.functions()[0].entry;
    for choice in 0..3 {
        let path = walk(cfg, entry, choice);
        let c = cost.path_cost(cfg, model, &path).expect("a walk is a path");
        assert_sane(&c, "a walk");
        let complete = cfg
            .successors(*path.last().expect("walks are not empty"))
            .next()
            .is_none();
        if let (Some(w), true) = (&worst, complete) {
            assert!(
                at_most(&c, w),
                "path {path:?} costs {c:?}, more than the slowest path {w:?}"
            );
        }
        // `cost --packets` prices the path a run took from its executed slots.
        let slots = path.iter().map(|&b| (0, cfg.blocks()[b].first));
        let blocks = linerate_cost::trace::entry_blocks(cfg, slots).expect("one program");
        assert_eq!(blocks, path);
    }
}
