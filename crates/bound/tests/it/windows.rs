//! Conditions invariant along a stretch of a path (`Invariance::windows`), and what learning by
//! them does: the events example, whose impossible slowest paths differ only in branches before
//! such a stretch, completes with a confirmed slowest satisfiable path in a bounded number of
//! path checks (by prefixes alone it ran out of time after hundreds).

use std::path::Path;
use std::time::Duration;

use crate::common::with_packet_of_20;
use linerate_bound::enumerate::Exhaustive;
use linerate_bound::invariant::{Invariance, Window};
use linerate_bound::prepare::{prepare, Options, Prepared};
use linerate_bound::solve::{guarantee, GuaranteeOptions};
use linerate_bound::ssp::{self, Stop};
use linerate_bpf::facts::helper;
use linerate_bpf::insn::build::{add64, call_helper, ja, jmp, ld_map, ldx, mov64, mov64_reg, st};
use linerate_bpf::insn::{Cond, Size};
use linerate_bpf::program::{MapDef, MapType};
use linerate_cost::Model;

fn x86() -> Model {
    Model::builtin("x86").expect("shipped model")
}

/// A path (edges) and the window of one of its decisions, with the decision's path position.
type Windowed = (Vec<usize>, Option<(Window, usize)>);

/// For every path of `prepared`, the window of the decision at slot `pc` and its path position,
/// if the path decides there.
fn windows_at(invariance: &Invariance, prepared: &Prepared, pc: usize) -> Vec<Windowed> {
    let mut out = Vec::new();
    for path in Exhaustive::new(&prepared.dag).expect("enumerates") {
        let starts = invariance.windows(prepared, &path);
        let Some(end) = path
            .iter()
            .position(|&e| prepared.branch_pc(prepared.dag.edges[e].from) == Some(pc))
        else {
            continue;
        };
        let window = starts.get(&end).map(|w| (w.clone(), end));
        out.push((path, window));
    }
    out
}

/// A packet byte picks one of two constants for `r7`; the test of `r7` after the join is not the
/// same formula on every path, but it is on every path through the arm that set it: its window
/// begins at that arm, after the packet test. The null test of an array lookup with a constant
/// key stored just before is a window of its own node.
#[test]
fn windows_start_where_the_compared_values_were_made() {
    // 0..6: r2 = data, r3 = data_end, packet of 20 bytes or exit.
    let body = vec![
        ldx(Size::B, 6, 2, 0),                // 6
        jmp(Cond::Eq, 6, 1, 2),               // 7: -> 10
        mov64(7, 5),                          // 8
        ja(1),                                // 9: -> 11
        mov64(7, 7),                          // 10
        jmp(Cond::Eq, 7, 5, 0),               // 11: to 12 either way (not a decision)
        jmp(Cond::Ne, 7, 5, 7),               // 12: -> 20
        st(Size::W, 10, -4, 1),               // 13
        mov64_reg(2, 10),                     // 14
        add64(2, -4),                         // 15
        ld_map(1, 0),                         // 16, 17
        call_helper(helper::MAP_LOOKUP_ELEM), // 18
        jmp(Cond::Eq, 0, 0, 0),               // 19: the null test
        mov64(0, 2),                          // 20
    ];
    let maps = vec![MapDef::new("counts", MapType::ARRAY, 4, 8, 4)];
    let object = with_packet_of_20(&body, maps);
    let prepared = prepare(&object, 0, &x86(), &Options::default()).expect("prepares");
    let invariance = Invariance::analyse(&object, &prepared);

    let at_12 = windows_at(&invariance, &prepared, 12);
    assert!(!at_12.is_empty());
    for (path, window) in &at_12 {
        let (window, end) = window
            .clone()
            .unwrap_or_else(|| panic!("no window at 12 on {path:?}"));
        // The window begins with the arm's node (after the packet test at 7), not the path's
        // start: its stretch from there to the test, or the arm and the test's node (`r7` is set
        // in the arm and nowhere between).
        let start = match window.heads[..] {
            [] => window.start,
            [(first, last)] if first == last => first,
            _ => panic!("{window:?}"),
        };
        assert!(start > 0 && start < end, "{start}..={end} on {path:?}");
        let arm = prepared.dag.edges[path[start]].from;
        let slot = prepared.dag.nodes[arm].slot;
        assert!(slot == 8 || slot == 10, "window starts at slot {slot}");
    }
    let at_19 = windows_at(&invariance, &prepared, 19);
    assert!(!at_19.is_empty());
    for (path, window) in &at_19 {
        let (window, end) = window
            .clone()
            .unwrap_or_else(|| panic!("no window at 19 on {path:?}"));
        assert_eq!(window.start, end, "the null test's own node on {path:?}");
    }
    // Nothing known for a graph that was not analysed.
    let none = Invariance::none(prepared.dag.edges.len());
    assert!(windows_at(&none, &prepared, 12)
        .iter()
        .all(|(_, w)| w.is_none()));
}

/// A flag byte of a struct one arm zeroes and the other sets, with a byte beside it stored later
/// on some paths, is loaded back and tested: its window is the arm that wrote the struct and the
/// load's node, whichever way the branch between went (no path between writes the flag). (The
/// walk once followed a load only out of a slot a store of the same width wrote, and a narrower
/// store forgot the whole slot: Katran's `pckt.flags` tests, a byte of a zeroed struct, got no
/// window and nothing was learned; and a window was one stretch, from the arm to the test,
/// holding every branch between.)
#[test]
fn a_byte_loaded_out_of_a_wider_store_has_the_stores_window() {
    let body = vec![
        ldx(Size::B, 6, 2, 0),   // 6
        jmp(Cond::Eq, 6, 1, 2),  // 7: -> 10
        st(Size::Dw, 10, -8, 0), // 8: the struct zeroed
        ja(1),                   // 9: -> 11
        st(Size::Dw, 10, -8, 1), // 10: the struct with its flag set
        ldx(Size::B, 6, 2, 1),   // 11
        jmp(Cond::Eq, 6, 2, 1),  // 12: -> 14
        st(Size::B, 10, -7, 4),  // 13: the byte beside the flag
        ldx(Size::B, 7, 10, -8), // 14: the flag
        jmp(Cond::Ne, 7, 0, 1),  // 15: the flag test -> 17
        mov64(0, 1),             // 16
    ];
    let object = with_packet_of_20(&body, Vec::new());
    let prepared = prepare(&object, 0, &x86(), &Options::default()).expect("prepares");
    let invariance = Invariance::analyse(&object, &prepared);

    let at_15 = windows_at(&invariance, &prepared, 15);
    assert_eq!(
        at_15.len(),
        8,
        "both arms, both ways beside the flag, both flag outcomes"
    );
    let slot_at = |path: &[usize], position: usize| {
        prepared.dag.nodes[prepared.dag.edges[path[position]].from].slot
    };
    for (path, window) in &at_15 {
        let (window, end) = window
            .clone()
            .unwrap_or_else(|| panic!("no window at 15 on {path:?}"));
        let [(first, last)] = window.heads[..] else {
            panic!("not one gap: {window:?}");
        };
        assert_eq!(first, last, "the arm alone: {window:?}");
        let arm = slot_at(path, first);
        assert!(arm == 8 || arm == 10, "the head is at slot {arm}");
        // The load and the test: the node that starts at 14 (after the store beside the flag,
        // or the jump over it), not the branch at 12.
        assert_eq!(window.start, end);
        assert_eq!(slot_at(path, end), 14);
    }
}

/// A store between the struct's and the load that may write the flag (some paths write it)
/// leaves no gap: the window is the one stretch from the arm to the test.
#[test]
fn a_store_that_may_write_the_byte_between_leaves_no_gap() {
    let body = vec![
        ldx(Size::B, 6, 2, 0),   // 6
        jmp(Cond::Eq, 6, 1, 2),  // 7: -> 10
        st(Size::Dw, 10, -8, 0), // 8
        ja(1),                   // 9: -> 11
        st(Size::Dw, 10, -8, 1), // 10
        ldx(Size::B, 6, 2, 1),   // 11
        jmp(Cond::Eq, 6, 2, 1),  // 12: -> 14
        st(Size::B, 10, -8, 4),  // 13: the flag itself
        ldx(Size::B, 7, 10, -8), // 14
        jmp(Cond::Ne, 7, 0, 1),  // 15 -> 17
        mov64(0, 1),             // 16
    ];
    let object = with_packet_of_20(&body, Vec::new());
    let prepared = prepare(&object, 0, &x86(), &Options::default()).expect("prepares");
    let invariance = Invariance::analyse(&object, &prepared);
    let at_15 = windows_at(&invariance, &prepared, 15);
    assert!(!at_15.is_empty());
    for (path, window) in &at_15 {
        let Some((window, _)) = window else { continue };
        assert!(
            window.heads.is_empty(),
            "a gap across a store of the flag on {path:?}"
        );
    }
}

/// A callee-saved register set in one of two arms and tested after a branch that sets another
/// register on some paths: its window is the arm and the test's node. Where that branch sets the
/// tested register itself on some paths, no gap: the one stretch from the arm to the test.
#[test]
fn a_register_kept_from_its_arm_to_its_test_has_a_gap_unless_set_between() {
    let program = |between: u8| {
        let body = vec![
            ldx(Size::B, 6, 2, 0),  // 6
            jmp(Cond::Eq, 6, 1, 2), // 7: -> 10
            mov64(7, 5),            // 8
            ja(1),                  // 9: -> 11
            mov64(7, 7),            // 10
            ldx(Size::B, 6, 2, 1),  // 11
            jmp(Cond::Eq, 6, 2, 1), // 12: -> 14
            mov64(between, 4),      // 13
            jmp(Cond::Ne, 7, 5, 1), // 14: the test -> 16
            mov64(0, 1),            // 15
        ];
        with_packet_of_20(&body, Vec::new())
    };
    for (between, gap) in [(8, true), (7, false)] {
        let object = program(between);
        let prepared = prepare(&object, 0, &x86(), &Options::default()).expect("prepares");
        let invariance = Invariance::analyse(&object, &prepared);
        let at_14 = windows_at(&invariance, &prepared, 14);
        assert!(!at_14.is_empty());
        for (path, window) in &at_14 {
            let (window, end) = window
                .clone()
                .unwrap_or_else(|| panic!("no window on {path:?}"));
            let arm = |position: usize| {
                let slot = prepared.dag.nodes[prepared.dag.edges[path[position]].from].slot;
                slot == 8 || slot == 10
            };
            let passed_13 = path
                .iter()
                .any(|&e| prepared.dag.nodes[prepared.dag.edges[e].from].slot == 13);
            match window.heads[..] {
                [(first, last)] => {
                    assert!(gap, "a gap across `r{between} = 4`: {window:?} on {path:?}");
                    assert!(first == last && arm(first), "{window:?}");
                    assert_eq!(window.start, end);
                }
                [] if !gap && passed_13 => {}
                [] if !gap => assert!(arm(window.start), "{window:?}"),
                _ => panic!("r{between} between: {window:?} on {path:?}"),
            }
        }
    }
}

/// The events example: its slowest paths take the null arms of array lookups (impossible), nine
/// ring buffer records in a row (impossible in a 4 KiB ring) and contradicting tests of the same
/// payload byte reloaded from the stack, in many combinations with the branches before. Learning
/// by windows prunes each combination family with one check; the search completes with a
/// confirmed path. Counts, not times: by prefixes alone it checked 261 paths in 30 s without
/// finding one.
#[test]
fn events_example_completes_with_few_checks() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/xdp_events.o");
    let object = linerate_bpf::read_object_file(&path).expect("reads");
    let model = x86();
    let prepared = prepare(&object, 0, &model, &Options::default()).expect("prepares");
    let options = GuaranteeOptions {
        search: ssp::Options {
            threads: 2,
            timeout: Some(Duration::from_secs(300)),
            ..ssp::Options::default()
        },
        exhaustive: false,
        check_timeout: Some(Duration::from_secs(20)),
        learn: true,
    };
    let result = guarantee(&object, 0, &prepared, &model, &options, |_| {}).expect("search");
    let outcome = &result.outcome;
    assert_eq!(outcome.stop, Stop::Found);
    assert!(outcome.complete);
    let ssp = &outcome.found[0];
    let witness = ssp.witness.as_ref().expect("a confirmed witness");
    assert!(ssp.path.rate > outcome.naive.as_ref().expect("naive").rate);
    assert!(
        outcome.paths_checked <= 120,
        "{} paths checked",
        outcome.paths_checked
    );
    assert!(outcome.learned >= 20, "{} learned", outcome.learned);
    eprintln!(
        "xdp_events: {} paths checked, {} solver checks, {} learned, {} ({} bytes)",
        outcome.paths_checked,
        result.solver_checks,
        outcome.learned,
        witness.action,
        witness.packet.len()
    );
}
