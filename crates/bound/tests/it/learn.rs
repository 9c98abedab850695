//! Learning from impossible paths by edge set: the invariance analysis on hand-built programs,
//! the search with edge-set pruning against `--exhaustive` on generated programs, and path
//! explosion's slowest satisfiable path on both device models.

use std::path::Path;
use std::time::{Duration, Instant};

use crate::common::with_packet_of_20;
use linerate_bound::dag::Step;
use linerate_bound::invariant::Invariance;
use linerate_bound::prepare::{prepare, Options, Prepared};
use linerate_bound::solve::{guarantee, GuaranteeOptions};
use linerate_bound::ssp::{self, Stop};
use linerate_bpf::facts::helper;
use linerate_bpf::insn::build::{
    add64, call_helper, ja, jmp, jmp_reg, ld_map, ldx, mov64, mov64_reg, st,
};
use linerate_bpf::insn::{Cond, Instruction, Size};
use linerate_bpf::program::{MapDef, MapType};
use linerate_cfg::EdgeKind;
use linerate_conformance::random_program::paths::{generate, GenOptions};
use linerate_cost::Model;

fn x86() -> Model {
    Model::builtin("x86").expect("shipped model")
}

/// The program of `body` behind a packet length check ([`with_packet_of_20`]); the prepared
/// graph, and for each conditional jump slot whether its outcome edges are invariant (both
/// outcomes agree).
fn analyse(body: &[Instruction], maps: Vec<MapDef>) -> (Prepared, Vec<(usize, bool)>) {
    let object = with_packet_of_20(body, maps);
    let prepared = prepare(&object, 0, &x86(), &Options::default()).expect("prepares");
    let invariance = Invariance::analyse(&object, &prepared);
    let mut by_slot: Vec<(usize, bool)> = Vec::new();
    for (n, node) in prepared.dag.nodes.iter().enumerate() {
        let Some(pc) = prepared.branch_pc(n) else {
            continue;
        };
        for &e in &node.out {
            if !matches!(
                prepared.dag.edges[e].step,
                Step::Flow(EdgeKind::Taken | EdgeKind::NotTaken)
            ) {
                continue;
            }
            let inv = invariance.edge(e);
            match by_slot.iter_mut().find(|(s, _)| *s == pc) {
                // Copies of one jump must all be invariant for the slot to count as such.
                Some((_, all)) => *all &= inv,
                None => by_slot.push((pc, inv)),
            }
        }
    }
    by_slot.sort_unstable();
    (prepared, by_slot)
}

fn at(slots: &[(usize, bool)], pc: usize) -> bool {
    slots
        .iter()
        .find(|(s, _)| *s == pc)
        .unwrap_or_else(|| panic!("no conditional jump at slot {pc}: {slots:?}"))
        .1
}

#[test]
fn packet_byte_loaded_before_a_join_is_invariant() {
    let body = [
        ldx(Size::B, 5, 2, 14), // 6
        jmp(Cond::Eq, 5, 1, 1), // 7: -> 9
        mov64(0, 1),            // 8
        jmp(Cond::Gt, 5, 7, 1), // 9: after the join, on the same byte
        mov64(0, 3),            // 10
    ];
    let (_, slots) = analyse(&body, Vec::new());
    assert!(at(&slots, 5), "the length check: {slots:?}");
    assert!(at(&slots, 7), "{slots:?}");
    assert!(at(&slots, 9), "{slots:?}");
}

#[test]
fn register_assigned_differently_on_two_arms_is_not() {
    let body = [
        ldx(Size::B, 5, 2, 14), // 6
        jmp(Cond::Eq, 5, 1, 2), // 7: -> 10
        mov64_reg(6, 5),        // 8
        ja(1),                  // 9: -> 11
        ldx(Size::B, 6, 2, 15), // 10
        jmp(Cond::Gt, 6, 7, 1), // 11
        mov64(0, 3),            // 12
    ];
    let (_, slots) = analyse(&body, Vec::new());
    assert!(at(&slots, 7), "{slots:?}");
    assert!(!at(&slots, 11), "{slots:?}");
}

#[test]
fn condition_after_a_packet_store_is_not() {
    let body = [
        ldx(Size::B, 5, 2, 14), // 6
        jmp(Cond::Eq, 5, 1, 1), // 7: -> 9
        st(Size::B, 2, 16, 0),  // 8: a packet store on one arm
        ldx(Size::B, 6, 2, 16), // 9
        jmp(Cond::Gt, 6, 7, 1), // 10: reads what the store may have written
        mov64(0, 3),            // 11
        jmp(Cond::Gt, 5, 9, 1), // 12: a byte loaded before the store
        mov64(0, 1),            // 13
    ];
    let (_, slots) = analyse(&body, Vec::new());
    assert!(at(&slots, 7), "{slots:?}");
    assert!(!at(&slots, 10), "{slots:?}");
    assert!(at(&slots, 12), "loaded before any store: {slots:?}");
}

#[test]
fn map_values_and_helper_results_are_not() {
    let map = MapDef::new("arr", MapType::ARRAY, 4, 4, 1);
    let body = [
        ldx(Size::B, 6, 2, 14), // 6: a packet byte, in a register helpers keep
        ldx(Size::B, 7, 2, 15), // 7
        mov64_reg(5, 7),        // 8: a copy in a register helpers clobber
        st(Size::W, 10, -4, 0), // 9
        mov64_reg(2, 10),       // 10
        add64(2, -4),           // 11
        ld_map(1, 0),           // 12-13
        call_helper(helper::MAP_LOOKUP_ELEM), // 14
        jmp(Cond::Eq, 0, 0, 6), // 15: the helper's result -> 22
        ldx(Size::W, 8, 0, 0),  // 16: a map value
        jmp(Cond::Gt, 8, 7, 1), // 17
        mov64(0, 1),            // 18
        jmp(Cond::Gt, 6, 7, 1), // 19: the byte kept across the call
        mov64(0, 3),            // 20
        jmp(Cond::Gt, 5, 7, 0), // 21: clobbered by the call
        mov64(0, 2),            // 22
    ];
    let (_, slots) = analyse(&body, vec![map]);
    assert!(!at(&slots, 15), "{slots:?}");
    assert!(!at(&slots, 17), "{slots:?}");
    assert!(at(&slots, 19), "{slots:?}");
    assert!(!slots.iter().any(|&(s, inv)| s == 21 && inv), "{slots:?}");
}

#[test]
fn loads_after_a_packet_moving_helper_are_not() {
    let body = [
        mov64_reg(6, 1),                      // 6: keep ctx
        mov64(2, 0),                          // 7
        call_helper(helper::XDP_ADJUST_HEAD), // 8
        ldx(Size::W, 2, 6, 0),                // 9: data, after the move
        ldx(Size::W, 3, 6, 4),                // 10
        mov64_reg(4, 2),                      // 11
        add64(4, 20),                         // 12
        jmp_reg(Cond::Gt, 4, 3, 3),           // 13: -> 17
        ldx(Size::B, 5, 2, 14),               // 14
        jmp(Cond::Gt, 5, 7, 0),               // 15
        mov64(0, 1),                          // 16
        mov64(0, 2),                          // 17
    ];
    let (_, slots) = analyse(&body, Vec::new());
    assert!(at(&slots, 5), "{slots:?}");
    assert!(!at(&slots, 13), "{slots:?}");
    assert!(!at(&slots, 15), "{slots:?}");
}

fn guarantee_options(exhaustive: bool, learn: bool) -> GuaranteeOptions {
    GuaranteeOptions {
        search: ssp::Options {
            threads: 2,
            ..ssp::Options::default()
        },
        exhaustive,
        check_timeout: Some(Duration::from_secs(20)),
        learn,
    }
}

/// On loop-free generated programs (packet byte branches, map lookups and writes, packet
/// stores), the search finds the slowest satisfiable path's rate that checking every path finds,
/// both with edge-set and prefix pruning and with prefix pruning alone, and learns edge sets on
/// some of them.
#[test]
fn edge_set_and_prefix_pruning_find_the_exhaustive_ssp() {
    let model = x86();
    let mut learned = 0;
    let mut compared = 0;
    // `LEARN_SEEDS=200 cargo test ...` compares more programs locally.
    let seeds = std::env::var("LEARN_SEEDS")
        .ok()
        .and_then(|s| s.parse::<u64>().ok())
        .unwrap_or(40);
    for seed in 0..seeds {
        let options = GenOptions {
            branches: 8,
            max_paths: 256,
            ..GenOptions::default()
        };
        let generated = generate(seed, &options);
        let object = &generated.object;
        let Ok(prepared) = prepare(object, 0, &model, &Options::default()) else {
            continue;
        };
        let baseline = guarantee(
            object,
            0,
            &prepared,
            &model,
            &guarantee_options(true, false),
            |_| {},
        )
        .expect("exhaustive");
        let expected = baseline.outcome.found.first().map(|f| f.path.rate);
        assert!(baseline.outcome.complete, "seed {seed}");
        for learn in [true, false] {
            let search = guarantee(
                object,
                0,
                &prepared,
                &model,
                &guarantee_options(false, learn),
                |_| {},
            )
            .expect("search");
            let outcome = &search.outcome;
            assert!(outcome.complete, "seed {seed}");
            assert_eq!(
                outcome.found.first().map(|f| f.path.rate),
                expected,
                "seed {seed}, learning {learn}: {}",
                generated.description
            );
            learned += outcome.learned;
        }
        compared += 1;
    }
    assert!(compared >= 30, "only {compared} programs prepared");
    assert!(learned > 0, "no edge set learned on any program");
}

/// Seed 29's program, searched by prefixes alone on one thread (so the order of checks, and
/// with it each session's reuse of earlier prefixes, is the same every run): the search must
/// find the slowest satisfiable path `--exhaustive` finds. Core minimisation used to check each
/// trial under everything the whole path asserted, so a core could keep a decision and drop the
/// later ones that brought a needed packet bounds constraint in, and pruning by the core's
/// prefix then skipped the slowest satisfiable path (2,363,615 pps instead of 2,358,469).
#[test]
fn prefix_pruning_on_seed_29_finds_the_exhaustive_ssp() {
    let model = x86();
    let options = GenOptions {
        branches: 8,
        max_paths: 256,
        ..GenOptions::default()
    };
    let generated = generate(29, &options);
    let object = &generated.object;
    let prepared = prepare(object, 0, &model, &Options::default()).expect("prepares");
    let mut search = guarantee_options(false, false);
    search.search.threads = 1;
    let ordered = guarantee(object, 0, &prepared, &model, &search, |_| {}).expect("search");
    let baseline = guarantee(
        object,
        0,
        &prepared,
        &model,
        &guarantee_options(true, false),
        |_| {},
    )
    .expect("exhaustive");
    let (a, b) = (&ordered.outcome, &baseline.outcome);
    assert!(a.complete && b.complete);
    assert_eq!(
        a.found.first().map(|f| f.path.rate),
        b.found.first().map(|f| f.path.rate),
        "{}",
        generated.description
    );
}

fn path_explosion(file: &str, target: &str) {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../examples")
        .join(file);
    let object = linerate_bpf::read_object_file(&path).expect("reads");
    let model = Model::builtin(target).expect("model");
    let prepared = prepare(&object, 0, &model, &Options::default()).expect("prepares");
    let mut options = guarantee_options(false, true);
    options.search.timeout = Some(Duration::from_secs(120));
    let started = Instant::now();
    let result = guarantee(&object, 0, &prepared, &model, &options, |_| {}).expect("search");
    let outcome = &result.outcome;
    assert_eq!(outcome.stop, Stop::Found, "{file} on {target}");
    assert!(outcome.complete);
    let ssp = &outcome.found[0];
    let witness = ssp.witness.as_ref().expect("a witness");
    // The feasible slowest paths run every stage, none of them on its slow arm.
    assert!(ssp.path.rate > outcome.naive.as_ref().expect("naive").rate);
    // An Ethernet header, 48 feature bytes and the result.
    assert!(witness.packet.len() > 14 + 48, "{}", witness.packet.len());
    assert!(
        outcome.learned >= 48,
        "{} conflicts learned",
        outcome.learned
    );
    eprintln!(
        "{file} on {target}: SSP in {:.2} s, {} paths checked, {} conflicts learned",
        started.elapsed().as_secs_f64(),
        outcome.paths_checked,
        outcome.learned
    );
}

#[test]
fn path_explosion_ssp_on_x86() {
    path_explosion("xdp_path_explosion.o", "x86");
}

#[test]
fn path_explosion_nfp_ssp_on_nfp() {
    path_explosion("xdp_path_explosion_nfp.o", "nfp");
}
