//! The slowest satisfiable paths of the examples whose paths run through what the symbolic
//! engine models beyond plain maps — callbacks of `bpf_loop` and `bpf_for_each_map_elem` (priced
//! by a summary, followed per call for the witness), maps of maps, LPM tries, queues and stacks —
//! are confirmed (but for one, said below), and their witnesses (and those of the next slowest paths) replay: run in the interpreter with their map entries they enter exactly
//! the witness's blocks and return its action, and the kernel returns the same action.

use std::time::Duration;

use linerate_bound::measure;
use linerate_bound::prepare::{prepare, Options};
use linerate_bound::solve::{guarantee, GuaranteeOptions};
use linerate_bound::ssp;
use linerate_cfg::Cfg;
use linerate_cost::Model;
use linerate_kernel::{load_object, usable_or_skip};
use linerate_smt::{BlockRef, Witness};
use linerate_vm::Vm;

/// A path's witness and whether it makes every call its summaries price, or why there is none.
type Found = Result<(Witness, bool), String>;

/// Paths per example.
const PATHS: usize = 4;

fn search(name: &str) -> (linerate_conformance::examples::Example, Vec<Found>) {
    let path = linerate_conformance::examples::examples_dir().join(format!("{name}.o"));
    let example = linerate_conformance::examples::load(&path).expect("example loads");
    let model = Model::builtin("x86").expect("shipped model");
    let prepared = prepare(&example.object, example.entry, &model, &Options::default())
        .unwrap_or_else(|e| panic!("{name}: {e}"));
    let options = GuaranteeOptions {
        search: ssp::Options {
            paths: PATHS,
            threads: 2,
            timeout: Some(Duration::from_secs(60)),
            ..ssp::Options::default()
        },
        exhaustive: false,
        check_timeout: Some(Duration::from_secs(20)),
        learn: true,
    };
    let result = guarantee(
        &example.object,
        example.entry,
        &prepared,
        &model,
        &options,
        |_| {},
    )
    .unwrap_or_else(|e| panic!("{name}: {e}"));
    let found = result
        .outcome
        .found
        .into_iter()
        .map(|f| {
            let calls = f
                .witness
                .as_ref()
                .is_ok_and(|w| prepared.makes_summarised_calls(&f.path.edges, &w.blocks));
            f.witness.map(|w| (*w, calls))
        })
        .collect();
    (example, found)
}

/// The blocks an interpreter run entered (first slots, across tail calls).
fn blocks(object: &linerate_bpf::Object, steps: &[linerate_vm::trace::Step]) -> Vec<BlockRef> {
    let cfgs: Vec<Option<Cfg>> = object.programs.iter().map(|p| Cfg::build(p).ok()).collect();
    linerate_cfg::block_starts(&cfgs, steps.iter().map(|s| (s.program, s.slot)))
        .into_iter()
        .map(|(program, slot)| BlockRef { program, slot })
        .collect()
}

/// Replays `witness` in the interpreter (blocks, action) and, where it relies on nothing a run
/// cannot repeat, in the kernel (action); whether the kernel ran it.
fn replay(
    example: &linerate_conformance::examples::Example,
    witness: &Witness,
    kernel: bool,
) -> bool {
    let (object, program, name) = (&example.object, example.entry, example.name());
    let mut vm = Vm::new(object, measure::replay_options(witness)).expect("vm");
    vm.seed(&witness.maps)
        .unwrap_or_else(|e| panic!("{name}: witness maps: {e}"));
    let run = vm
        .run(program, &witness.packet, &witness.meta)
        .unwrap_or_else(|e| panic!("{name}: witness run: {e}"));
    assert_eq!(
        blocks(object, &run.steps),
        witness.blocks,
        "{name}: the interpreter takes other blocks than the witness's"
    );
    assert_eq!(run.return_value, witness.return_value, "{name}");
    if !kernel || !witness.unrepeatable.is_empty() {
        return false;
    }
    let loaded = load_object(object).expect("load");
    loaded.load_program(program).expect("load program");
    loaded
        .seed(&witness.maps)
        .unwrap_or_else(|e| panic!("{name}: witness maps in the kernel: {e}"));
    let out = loaded
        .test_run(program, &measure::run_input(witness))
        .unwrap_or_else(|e| panic!("{name}: test_run: {e}"));
    assert_eq!(
        u64::from(out.retval),
        witness.return_value,
        "{name} in the kernel"
    );
    true
}

#[test]
fn slowest_paths_through_callbacks_and_special_maps_replay() {
    let kernel = usable_or_skip("slowest_paths_through_callbacks_and_special_maps_replay");
    // The slowest paths of bpf_loop and for_each are impossible (a NULL lookup of an array)
    // whatever their callbacks do: the refuter, which does not follow callbacks, says so, and the
    // next paths are confirmed.
    for (name, ssp_confirmed) in [
        ("xdp_bpf_loop", true),
        ("xdp_for_each", true),
        ("xdp_map_in_map", true),
        ("xdp_router", true),
        ("xdp_queue", true),
    ] {
        let (example, found) = search(name);
        assert!(!found.is_empty(), "{name}: no satisfiable path");
        if let (true, Err(why)) = (ssp_confirmed, &found[0]) {
            panic!("{name}: the slowest satisfiable path is not confirmed: {why}");
        }
        // Later paths may stay without a verdict (an impossible path whose refutation needs
        // more tries of the outcomes chosen inside callbacks than a check makes); every witness
        // given replays.
        let mut in_kernel = 0;
        if name == "xdp_for_each" {
            // An array walk's witness makes every call the summary prices (its max_entries).
            assert!(
                found[0].as_ref().is_ok_and(|(_, calls)| *calls),
                "{name}: the slowest path's witness does not make the summary's calls"
            );
        }
        for (witness, _) in found.iter().flatten() {
            in_kernel += usize::from(replay(&example, witness, kernel));
        }
        assert!(
            !kernel || in_kernel > 0,
            "{name}: no witness ran in the kernel"
        );
    }
}

/// A walk over a hash map is not followed: the path stays unconfirmed, with the reason.
#[test]
fn hash_map_walks_stay_unconfirmed_with_the_reason() {
    let (_, found) = search("xdp_for_each_hash");
    let why = found[0].as_ref().expect_err("not followed");
    assert!(why.contains("over hash map"), "{why}");
}
