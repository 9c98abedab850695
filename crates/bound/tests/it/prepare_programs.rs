//! The preparation on hand-written programs with one feature each: nested loops, a call inside a
//! loop into a callee with its own loop, a program tail-calling itself to the kernel's limit,
//! packet sizes before and after `bpf_xdp_adjust_head`, and the errors for loops it cannot
//! unroll. Every graph is validated, and interpreter runs must follow one of its paths.

use crate::common;

use linerate_analysis::Analysis;
use linerate_bound::dag::{EdgeId, Step};
use linerate_bound::prepare::{prepare, Options, PrepareError, Prepared};
use linerate_bpf::contents::{MapMode, MapSeed};
use linerate_bpf::facts::helper;
use linerate_bpf::facts::limits::MAX_LOOPS;
use linerate_bpf::insn::build::{
    add64, alu64, call_helper, call_local, exit, ja, jmp, jmp_reg, ld_map, ldx, mov64, mov64_reg,
};
use linerate_bpf::insn::{AluOp, Cond, Instruction, Size};
use linerate_bpf::program::{Function, MapDef, MapType, Object, Program};
use linerate_cfg::{Cfg, Decision, EdgeKind};
use linerate_cost::{Callees, Model, ProgramCost};
use linerate_vm::drive::Driver;
use linerate_vm::VmOptions;

use common::{at_least, executed_cost, follow};

fn x86() -> Model {
    Model::builtin("x86").expect("shipped model")
}

/// Prepares program `program`, validates the graph, runs each packet in the interpreter and
/// checks that the run follows a path priced at least at its instructions, whose decisions are
/// the run's branch outcomes. The paths, in packet order.
fn check_runs(
    object: &Object,
    program: usize,
    options: &Options,
    packets: &[Vec<u8>],
) -> (Prepared, Vec<Vec<EdgeId>>) {
    let model = x86();
    let prepared = prepare(object, program, &model, options).expect("prepares");
    prepared.dag.validate().expect("valid graph");
    let costs: Vec<Option<ProgramCost>> = (0..object.programs.len())
        .map(|p| {
            let cfg = Cfg::build(&object.programs[p]).ok()?;
            let analysis = Analysis::run(object, &cfg);
            ProgramCost::with_callees(object, &cfg, &analysis, &model, Callees::Apart).ok()
        })
        .collect();
    let options = VmOptions {
        record_steps: true,
        ..Default::default()
    };
    let mut vm = Driver::new(object, &MapSeed::new(), options, MapMode::Fresh).expect("vm");
    let mut paths = Vec::new();
    for packet in packets {
        let run = vm.run(program, packet, &[]).expect("runs");
        let path = follow(&prepared, &run.steps).expect("the run is a path of the graph");
        let priced = prepared.dag.path_cost(&path);
        let executed = executed_cost(&costs, &run.steps, model.components().len());
        assert!(at_least(&priced, &executed), "{priced:?} < {executed:?}");
        paths.push(path.clone());
        let summarised = path.iter().any(|&e| {
            matches!(
                prepared.dag.edges[e].step,
                Step::Callbacks { .. } | Step::Loop { .. }
            )
        });
        if summarised {
            continue;
        }
        let branches: Vec<Decision> = run
            .steps
            .iter()
            .filter_map(|s| s.taken.map(|taken| Decision::Branch { pc: s.slot, taken }))
            .collect();
        let decided: Vec<Decision> = prepared
            .decisions(&path)
            .into_iter()
            .filter(|d| matches!(d, Decision::Branch { .. }))
            .collect();
        assert_eq!(decided, branches, "decisions against the run's branches");
    }
    (prepared, paths)
}

fn object(insns: &[Instruction], functions: &[(&str, usize)]) -> Object {
    let mut program = Program::from_instructions("prog", "xdp", insns);
    if !functions.is_empty() {
        let total = program.insns.len();
        program.functions = functions
            .iter()
            .enumerate()
            .map(|(i, &(name, start))| Function {
                name: name.into(),
                start,
                len: functions.get(i + 1).map_or(total, |f| f.1) - start,
            })
            .collect();
    }
    Object::with_programs("prog", vec![program], Vec::new())
}

/// `for (i = 0; i < 3; i++) for (j = 0; j < 4; j++) ;`
fn nested_loops() -> Object {
    object(
        &[
            mov64(6, 0),
            mov64(7, 0),             // 1: outer header
            add64(7, 1),             // 2: inner header
            jmp(Cond::Lt, 7, 4, -2), // 3: inner back edge to 2
            add64(6, 1),
            jmp(Cond::Lt, 6, 3, -5), // 5: outer back edge to 1
            mov64(0, 2),
            exit(),
        ],
        &[],
    )
}

#[test]
fn nested_loops_unroll_to_their_bounds() {
    let object = nested_loops();
    let (prepared, paths) = check_runs(&object, 0, &Options::default(), &[vec![0; 14]]);
    let dag = &prepared.dag;
    // One copy of the inner header per iteration pair.
    let inner: Vec<&Vec<(usize, u32)>> = dag
        .nodes
        .iter()
        .filter(|n| n.slot == 2)
        .map(|n| &n.iterations)
        .collect();
    assert_eq!(inner.len(), 12, "3 × 4 copies of the inner loop's header");
    for i in 0..3 {
        for j in 0..4 {
            assert!(
                inner.contains(&&vec![(1, i), (2, j)]),
                "iteration ({i}, {j})"
            );
        }
    }
    // The run goes through every copy of the inner header.
    let visits = paths[0]
        .iter()
        .filter(|&&e| dag.nodes[dag.edges[e].to].slot == 2)
        .count();
    assert_eq!(visits, 12);
    assert!(prepared.assumed.is_empty());
}

#[test]
fn loops_bounded_beyond_max_unroll_are_summarised() {
    let options = Options {
        max_unroll: Some(3),
        ..Options::default()
    };
    let object = nested_loops();
    let (prepared, paths) = check_runs(&object, 0, &options, &[vec![0; 14]]);
    // The inner loop (4 runs) is summarised, the outer one (3 runs) unrolled.
    assert_eq!(prepared.loops.len(), 1);
    let summary = &prepared.loops[0];
    assert_eq!((summary.header_slot, summary.max_header_runs), (2, 4));
    summary.graph.dag.validate().expect("iteration graph");
    let dag = &prepared.dag;
    let loops: Vec<&linerate_bound::dag::Edge> = dag
        .edges
        .iter()
        .filter(|e| {
            matches!(
                e.step,
                Step::Loop {
                    header: 2,
                    summary: 0
                }
            )
        })
        .collect();
    assert_eq!(loops.len(), 3, "one per outer iteration");
    // One iteration is the header block leaving by its back edge: twice that for the middle.
    let model = x86();
    let cfg = Cfg::build(&object.programs[0]).expect("cfg");
    let analysis = Analysis::run(&object, &cfg);
    let cost = ProgramCost::with_callees(&object, &cfg, &analysis, &model, Callees::Apart)
        .expect("priced");
    let back = cfg
        .edges()
        .iter()
        .position(|e| e.from == cfg.block_of(3).expect("block") && e.kind == EdgeKind::Taken)
        .expect("inner back edge");
    assert_eq!(summary.per_iteration, cost.edges[back].cost);
    for e in &loops {
        let twice: Vec<f64> = cost.edges[back].cost.0.iter().map(|c| 2.0 * c).collect();
        assert_eq!(e.cost.0, twice);
    }
    // The run goes through the middle of every outer iteration.
    let through = paths[0]
        .iter()
        .filter(|&&e| matches!(dag.edges[e].step, Step::Loop { .. }))
        .count();
    assert_eq!(through, 3);
}

/// `for (i = 0; i < ctx->ingress_ifindex && can_loop; i++) ;`: bounded by the `may_goto`
/// budget only.
#[test]
fn may_goto_loops_are_summarised_with_the_kernels_budget() {
    let object = object(
        &[
            ldx(Size::W, 7, 1, 12),
            mov64(6, 0),
            Instruction::MayGoto { off: 3 }, // 2: header; exhausted: to 6
            jmp_reg(Cond::Ge, 6, 7, 2),      // 3: done: to 6
            add64(6, 1),
            ja(-4), // 5: back edge to 2
            mov64(0, 2),
            exit(),
        ],
        &[],
    );
    let (prepared, paths) = check_runs(&object, 0, &Options::default(), &[vec![0; 14]]);
    assert!(prepared.assumed.is_empty());
    assert_eq!(prepared.loops.len(), 1);
    let summary = &prepared.loops[0];
    assert_eq!(summary.header_slot, 2);
    assert_eq!(summary.max_header_runs, MAX_LOOPS + 1);
    let middle = prepared
        .dag
        .edges
        .iter()
        .find(|e| matches!(e.step, Step::Loop { .. }))
        .expect("the middle iterations");
    for (c, per) in middle.cost.0.iter().zip(&summary.per_iteration.0) {
        assert_eq!(*c, per * (MAX_LOOPS - 1) as f64);
    }
    // Ingress ifindex 1: two header runs, the first and the last copy, no middle one.
    assert!(paths[0]
        .iter()
        .any(|&e| matches!(prepared.dag.edges[e].step, Step::Loop { .. })));
}

/// `for (n = ctx->ingress_ifindex; n != 0; n--) ;`: no bound the analysis can prove.
fn unbounded_loop() -> Object {
    object(
        &[
            ldx(Size::W, 6, 1, 12),
            jmp(Cond::Eq, 6, 0, 2),  // 1: skip the loop
            alu64(AluOp::Sub, 6, 1), // 2: header
            jmp(Cond::Ne, 6, 0, -2), // 3: back edge to 2
            mov64(0, 2),
            exit(),
        ],
        &[],
    )
}

#[test]
fn unbounded_loops_need_max_unroll() {
    let object = unbounded_loop();
    match prepare(&object, 0, &x86(), &Options::default()) {
        Err(e @ PrepareError::UnboundedLoop { slot: 2, .. }) => {
            let message = e.to_string();
            assert!(
                message.contains("slot 2")
                    && message.contains("function `prog`")
                    && message.contains("--max-unroll N"),
                "{message}"
            );
        }
        other => panic!("expected an unbounded loop, got {other:?}"),
    }
    let options = Options {
        max_unroll: Some(5),
        ..Options::default()
    };
    // The interpreter's ingress ifindex is 1: one run of the loop, within the assumption.
    let (prepared, _) = check_runs(&object, 0, &options, &[vec![0; 14]]);
    assert_eq!(prepared.assumed.len(), 1);
    assert_eq!(prepared.assumed[0].header_slot, 2);
    assert_eq!(prepared.assumed[0].max_header_runs, 5);
    let copies = prepared.dag.nodes.iter().filter(|n| n.slot == 2).count();
    assert_eq!(copies, 5);
}

/// A loop calling a function that has a loop of its own.
fn call_in_loop() -> Object {
    object(
        &[
            mov64(6, 0),
            mov64_reg(1, 6), // 1: header
            call_local(4),   // 2: to 7
            add64(6, 1),
            jmp(Cond::Lt, 6, 2, -4), // 4: back edge to 1
            mov64(0, 2),
            exit(),
            mov64(0, 0),             // 7: callee
            add64(0, 1),             // 8: callee's loop header
            jmp(Cond::Lt, 0, 3, -2), // 9: back edge to 8
            exit(),
        ],
        &[("prog", 0), ("callee", 7)],
    )
}

/// A node's call sites and loop iterations.
type Context = (Vec<usize>, Vec<(usize, u32)>);

#[test]
fn calls_inline_per_context_with_their_loops() {
    let object = call_in_loop();
    let (prepared, _) = check_runs(&object, 0, &Options::default(), &[vec![0; 14]]);
    let dag = &prepared.dag;
    let mut headers: Vec<Context> = dag
        .nodes
        .iter()
        .filter(|n| n.slot == 8)
        .map(|n| (n.calls.clone(), n.iterations.clone()))
        .collect();
    headers.sort();
    let expected: Vec<Context> = (0..2)
        .flat_map(|i| (0..3).map(move |j| (vec![2], vec![(1, i), (8, j)])))
        .collect();
    assert_eq!(headers, expected);
    // Every return leads back to the piece after the call, in the caller's iteration.
    for e in &dag.edges {
        if let Step::Return { call } = e.step {
            let to = &dag.nodes[e.to];
            assert_eq!((call, to.slot, to.calls.len()), (2, 3, 0));
            assert_eq!(to.iterations.len(), 1);
        }
    }
}

/// A program tail-calling itself through a program array that holds it.
fn self_tail_call() -> Object {
    let mut progs = MapDef::new("progs", MapType::PROG_ARRAY, 4, 4, 1);
    progs.initial_programs = vec![(0, 0)];
    let insns = [
        ld_map(2, 0),
        mov64(3, 0),
        call_helper(helper::TAIL_CALL),
        mov64(0, 2),
        exit(),
    ];
    let program = Program::from_instructions("again", "xdp", &insns);
    Object::with_programs("again", vec![program], vec![progs])
}

#[test]
fn tail_calls_stop_at_the_kernels_limit() {
    let object = self_tail_call();
    let (prepared, paths) = check_runs(&object, 0, &Options::default(), &[vec![0; 14]]);
    let dag = &prepared.dag;
    let entries = dag
        .nodes
        .iter()
        .filter(|n| n.program.is_some() && n.slot == 0)
        .count();
    assert_eq!(entries, 34, "the program and its 33 tail-called copies");
    // The interpreter makes all 33 tail calls, then falls through.
    let taken: Vec<Decision> = prepared
        .decisions(&paths[0])
        .into_iter()
        .filter(|d| matches!(d, Decision::TailCall { .. }))
        .collect();
    assert_eq!(taken.len(), 34);
    assert!(taken[..33].iter().all(|d| *d
        == Decision::TailCall {
            pc: 3,
            program: Some(0)
        }));
    assert_eq!(
        taken[33],
        Decision::TailCall {
            pc: 3,
            program: None
        }
    );
}

/// Drops packets shorter than 34 bytes; then, with `adjust` (else a no-op in its place),
/// `bpf_xdp_adjust_head(ctx, 10)` and drops packets then shorter than 60 bytes.
fn two_checks(adjust: bool) -> Object {
    let moves = if adjust {
        call_helper(helper::XDP_ADJUST_HEAD)
    } else {
        mov64(0, 0)
    };
    object(
        &[
            ldx(Size::W, 2, 1, 0),
            ldx(Size::W, 3, 1, 4),
            mov64_reg(4, 2),
            add64(4, 34),
            jmp_reg(Cond::Gt, 4, 3, 10), // 4: short: to 15
            mov64_reg(6, 1),
            mov64(2, 10),
            moves, // 7
            ldx(Size::W, 2, 6, 0),
            ldx(Size::W, 3, 6, 4),
            mov64_reg(4, 2),
            add64(4, 60),
            jmp_reg(Cond::Gt, 4, 3, 2), // 12: short: to 15
            mov64(0, 2),
            exit(),
            mov64(0, 1),
            exit(),
        ],
        &[],
    )
}

/// The minimum packet size of the edge that passes the second check.
fn passing_size(prepared: &Prepared) -> u32 {
    let dag = &prepared.dag;
    dag.edges
        .iter()
        .find(|e| e.step == Step::Flow(EdgeKind::NotTaken) && prepared.ends[e.from] == 13)
        .map(|e| e.min_packet)
        .expect("the second check")
}

#[test]
fn packet_sizes_hold_along_paths_and_not_across_adjustments() {
    let packets = [vec![0; 20], vec![0; 40], vec![0; 80]];
    let (plain, paths) = check_runs(&two_checks(false), 0, &Options::default(), &packets);
    assert_eq!(passing_size(&plain), 60);
    let sizes: Vec<u32> = paths.iter().map(|p| plain.dag.path_min_packet(p)).collect();
    assert_eq!(sizes, [14, 34, 60]);
    // An edge has at least what every way into its source has.
    let dag = &plain.dag;
    for e in &dag.edges {
        let into = dag
            .edges
            .iter()
            .filter(|i| i.to == e.from)
            .map(|i| i.min_packet)
            .min();
        assert!(into.is_none_or(|least| least <= e.min_packet));
    }
    // After the head moved, 60 bytes then say 50 arrived: only the first check's 34 count.
    let (moved, paths) = check_runs(&two_checks(true), 0, &Options::default(), &packets);
    assert!(moved.moves_packet());
    assert_eq!(passing_size(&moved), 34);
    let sizes: Vec<u32> = paths.iter().map(|p| moved.dag.path_min_packet(p)).collect();
    assert_eq!(sizes, [14, 34, 34]);
}

#[test]
fn impossible_edges_are_left_out() {
    // r6 = 5; if (r6 > 7) return XDP_DROP; return XDP_PASS;
    let object = object(
        &[
            mov64(6, 5),
            jmp(Cond::Gt, 6, 7, 2),
            mov64(0, 2),
            exit(),
            mov64(0, 1),
            exit(),
        ],
        &[],
    );
    let (prepared, _) = check_runs(&object, 0, &Options::default(), &[vec![0; 14]]);
    assert_eq!(prepared.stats.impossible_edges, 1);
    assert!(prepared
        .dag
        .edges
        .iter()
        .all(|e| e.step != Step::Flow(EdgeKind::Taken)));
    assert_eq!(prepared.dag.nodes.len(), 3, "entry, pass, sink");
}

/// A program array the object declares empty (user space fills it): a tail call may reach every
/// XDP program of the object, or fall through.
#[test]
fn tail_calls_into_undeclared_arrays_reach_every_program() {
    let progs = MapDef::new("progs", MapType::PROG_ARRAY, 4, 4, 2);
    let caller = Program::from_instructions(
        "caller",
        "xdp",
        &[
            ld_map(2, 0),
            mov64(3, 1),
            call_helper(helper::TAIL_CALL),
            mov64(0, 2),
            exit(),
        ],
    );
    let other = Program::from_instructions("other", "xdp", &[mov64(0, 1), exit()]);
    let object = Object::with_programs("pair", vec![caller, other], vec![progs]);
    let (prepared, _) = check_runs(&object, 0, &Options::default(), &[vec![0; 14]]);
    let dag = &prepared.dag;
    let mut targets: Vec<Option<usize>> = dag.nodes[0]
        .out
        .iter()
        .filter_map(|&e| match dag.edges[e].step {
            Step::TailCall { program, .. } => Some(program),
            _ => None,
        })
        .collect();
    targets.sort();
    assert_eq!(targets, [None, Some(0), Some(1)]);
    // The caller at every depth from 0 to 33, the other program at every depth from 1 to 33.
    let copies = |p: usize| {
        dag.nodes
            .iter()
            .filter(|n| n.program == Some(p) && n.slot == 0)
            .count()
    };
    assert_eq!((copies(0), copies(1)), (34, 33));
}
