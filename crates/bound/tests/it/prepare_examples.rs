//! The prepared graph of every example program on both device models: it is well formed, its
//! longest paths are the cost crate's worst case where both should agree, and every crafted
//! packet's run in the interpreter follows one of its paths, priced at least at what the run
//! executed, holding no conflict the preparation proved.

use crate::common;

use std::time::Instant;

use linerate_analysis::Analysis;
use linerate_bound::dag::Step;
use linerate_bound::prepare::{prepare, Options, PrepareError};
use linerate_bpf::contents::MapMode;
use linerate_cfg::{Cfg, Decision};
use linerate_conformance::examples::load_all;
use linerate_cost::{Callees, CostError, Model, ProgramCost};
use linerate_vm::drive::Driver;
use linerate_vm::VmOptions;

use common::{at_least, executed_cost, follow, longest, same};

/// Iterations assumed of a loop the analysis cannot bound (the examples' run fewer).
const ASSUMED: u32 = 64;

#[test]
fn every_example_prepares_and_covers_its_runs() {
    let examples = load_all().expect("example corpus");
    let mut prepared_count = 0;
    let mut followed = 0;
    for target in ["x86", "nfp"] {
        let model = Model::builtin(target).expect("shipped model");
        let n = model.components().len();
        for example in &examples {
            for program in example.runnable_programs() {
                let what = format!("{} program {program} on {target}", example.name());
                let started = Instant::now();
                let mut result = prepare(&example.object, program, &model, &Options::default());
                if let Err(e @ PrepareError::UnboundedLoop { .. }) = &result {
                    // A loop on an open-coded iterator (a kfunc's state the analysis does not
                    // follow): unrolled as often as the user allows, by assumption.
                    eprintln!("{what}: {e}; again with --max-unroll {ASSUMED}");
                    let options = Options {
                        max_unroll: Some(ASSUMED),
                        ..Options::default()
                    };
                    result = prepare(&example.object, program, &model, &options);
                    if let Ok(p) = &result {
                        assert!(!p.assumed.is_empty(), "{what}: no assumption recorded");
                    }
                }
                let prepared = match result {
                    Ok(p) => p,
                    // The NFP refuses some instructions and maps by name.
                    Err(PrepareError::Cost { source, .. })
                        if target == "nfp" && matches!(*source, CostError::Unsupported { .. }) =>
                    {
                        eprintln!("{what}: refused: {source}");
                        continue;
                    }
                    Err(e) => panic!("{what}: {e}"),
                };
                let elapsed = started.elapsed();
                prepared
                    .dag
                    .validate()
                    .unwrap_or_else(|e| panic!("{what}: {e}"));
                prepared_count += 1;
                eprintln!(
                    "{what}: {} nodes, {} edges, {} impossible edges, {} conflicts, \
                     {} tail-call edges, {} summaries, {:.1} ms",
                    prepared.dag.nodes.len(),
                    prepared.dag.edges.len(),
                    prepared.stats.impossible_edges,
                    prepared.conflicts.len(),
                    prepared.stats.tail_calls,
                    prepared.summaries.len(),
                    elapsed.as_secs_f64() * 1e3
                );

                let object = &example.object;
                let costs: Vec<Option<ProgramCost>> = (0..object.programs.len())
                    .map(|p| {
                        let cfg = Cfg::build(&object.programs[p]).ok()?;
                        let analysis = Analysis::run(object, &cfg);
                        ProgramCost::with_callees(object, &cfg, &analysis, &model, Callees::Apart)
                            .ok()
                    })
                    .collect();
                let cfg = Cfg::build(&object.programs[program]).expect("cfg");
                let included = ProgramCost::new(object, &cfg, &model).ok();

                // Longest paths against the cost crate's worst case (over all paths, possible
                // or not; a tail call's target not included).
                let dag_worst = longest(&prepared.dag);
                if let Some(worst) = included.as_ref().and_then(|c| c.worst_cost(&model)) {
                    let mut own = worst.clone();
                    for (w, p) in own.0.iter_mut().zip(&model.per_packet().0) {
                        *w -= p;
                    }
                    let exact = prepared.stats.impossible_edges == 0
                        && prepared.stats.tail_calls == 0
                        && prepared.summaries.iter().all(|s| {
                            s.graph.stats.impossible_edges == 0 && s.graph.stats.tail_calls == 0
                        });
                    if exact {
                        assert!(
                            same(&dag_worst, &own.0),
                            "{what}: longest paths {dag_worst:?}, cost crate's worst {:?}",
                            own.0
                        );
                    } else if prepared.stats.tail_calls == 0 {
                        assert!(
                            at_least(&own, &linerate_cost::Cost(dag_worst.clone())),
                            "{what}: longest paths {dag_worst:?} above the worst case {:?}",
                            own.0
                        );
                    }
                }

                if program != example.entry {
                    continue;
                }
                let options = VmOptions {
                    record_steps: true,
                    ..Default::default()
                };
                let mut vm = Driver::new(object, &example.seed, options, MapMode::Fresh)
                    .expect("interpreter");
                for packet in &example.packets {
                    let what = format!("{what}, packet line {}", packet.line);
                    let run = vm.run(program, &packet.bytes, &[]).expect("runs");
                    let path =
                        follow(&prepared, &run.steps).unwrap_or_else(|e| panic!("{what}: {e}"));
                    // The conflicts proven per context hold on every run.
                    for set in &prepared.conflicts {
                        assert!(
                            !set.iter().all(|e| path.contains(e)),
                            "{what}: the run holds every edge of conflict {set:?}"
                        );
                    }
                    let priced = prepared.dag.path_cost(&path);
                    let executed = executed_cost(&costs, &run.steps, n);
                    assert!(
                        at_least(&priced, &executed),
                        "{what}: path costs {:?}, its instructions {:?}",
                        priced.0,
                        executed.0
                    );
                    // Where the run stays in the entry function, the cost crate prices its
                    // blocks: the graph's path costs at least as much.
                    let plain = run.steps.iter().all(|s| {
                        s.program == program
                            && cfg
                                .block_of(s.slot)
                                .is_some_and(|b| cfg.functions()[0].contains(b))
                    });
                    if let (true, Some(included)) = (plain, &included) {
                        let blocks = linerate_cost::trace::entry_blocks(
                            &cfg,
                            run.steps.iter().map(|s| (s.program, s.slot)),
                        )
                        .expect("one program");
                        let mut with_packet = priced.clone();
                        with_packet.add(model.per_packet());
                        let trace = included.path_cost(&cfg, &model, &blocks).expect("path");
                        assert!(
                            at_least(&with_packet, &trace),
                            "{what}: path costs {:?}, the cost crate's trace pricing {:?}",
                            with_packet.0,
                            trace.0
                        );
                    }
                    // Outside summarised callbacks, the path decides the run's branches.
                    let summarised = path
                        .iter()
                        .any(|&e| matches!(prepared.dag.edges[e].step, Step::Callbacks { .. }));
                    if !summarised {
                        let branches: Vec<Decision> = run
                            .steps
                            .iter()
                            .filter_map(|s| {
                                s.taken.map(|taken| Decision::Branch { pc: s.slot, taken })
                            })
                            .collect();
                        let decided: Vec<Decision> = prepared
                            .decisions(&path)
                            .into_iter()
                            .filter(|d| matches!(d, Decision::Branch { .. }))
                            .collect();
                        assert_eq!(decided, branches, "{what}: decisions");
                    }
                    let size = prepared.dag.path_min_packet(&path);
                    assert!(
                        size as usize <= packet.bytes.len().max(14),
                        "{what}: the path needs {size} bytes, the packet has {}",
                        packet.bytes.len()
                    );
                    followed += 1;
                }
            }
        }
    }
    assert!(
        prepared_count > 40,
        "only {prepared_count} programs prepared"
    );
    eprintln!("{prepared_count} graphs, {followed} runs followed");
}

/// `xdp_bpf_loop` calls `bpf_loop` twice: six calls of `skip_ext`, and a count from the packet
/// (at most 2^23 calls) of `add_index`. Each edge through a helper costs the calls at their worst.
#[test]
fn callbacks_are_priced_by_their_summary() {
    let examples = load_all().expect("example corpus");
    let example = examples
        .iter()
        .find(|e| e.name() == "xdp_bpf_loop.o")
        .expect("xdp_bpf_loop");
    let model = Model::builtin("x86").expect("shipped model");
    let prepared =
        prepare(&example.object, example.entry, &model, &Options::default()).expect("prepares");
    let mut calls: Vec<(String, u64)> = prepared
        .summaries
        .iter()
        .map(|s| (s.function.clone(), s.max_calls))
        .collect();
    calls.sort();
    assert_eq!(
        calls,
        [
            ("add_index".to_string(), 1 << 23),
            ("skip_ext".to_string(), 6)
        ]
    );
    let call = model
        .price(&linerate_cost::Item::Callback(
            linerate_bpf::facts::helper::LOOP,
        ))
        .expect("priced")
        .cost;
    for (index, s) in prepared.summaries.iter().enumerate() {
        s.graph.dag.validate().expect("callback graph");
        let longest = longest(&s.graph.dag);
        for (c, &most) in longest.iter().enumerate() {
            assert!(same(&[s.per_call.0[c]], &[call.0[c] + most]));
            assert!(same(
                &[s.total.0[c]],
                &[s.per_call.0[c] * s.max_calls as f64]
            ));
            // The recorded worst path is a source-to-sink path costing the longest.
            let path = &s.worst[c];
            let dag = &s.graph.dag;
            assert_eq!(dag.edges[path[0]].from, 0);
            assert_eq!(dag.edges[*path.last().expect("edges")].to, dag.sink());
            assert!(path
                .windows(2)
                .all(|w| dag.edges[w[0]].to == dag.edges[w[1]].from));
            assert!(same(&[dag.path_cost(path).0[c]], &[most]));
        }
        let edges: Vec<_> = prepared
            .dag
            .edges
            .iter()
            .filter(|e| matches!(e.step, Step::Callbacks { summary, .. } if summary == index))
            .collect();
        assert!(!edges.is_empty());
        assert!(edges.iter().all(|e| e.cost == s.total));
    }
}
