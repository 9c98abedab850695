//! The analysis over-approximates every concrete run: on every executed path of every example
//! program (crafted packets, seeded maps) and of random programs, the interpreter's state at each
//! block entry lies in the abstract state the analysis gives that block — every concrete pointer in
//! the region and at an offset the analysis states, every scalar in its interval, the packet's
//! length in its range — every memory access touches the region its fact names, and no loop's
//! header runs more often per entry than its bound.

use linerate_analysis::{Analysis, Fact, Interval, Region, Shape, State};
use linerate_bpf::contents::{MapMode, MapSeed};
use linerate_bpf::insn::Instruction;
use linerate_bpf::program::Object;
use linerate_cfg::Cfg;
use linerate_conformance::examples::load_all;
use linerate_conformance::random_program::{object, packet, xdp_program};
use linerate_vm::drive::Driver;
use linerate_vm::memory::{
    split, CTX_REGION, FUNCTION_REGION, MAP_HANDLE_REGION, MAP_VALUE_REGION, PACKET_REGION,
    STACK_REGION,
};
use linerate_vm::trace::{Step, StepState};
use linerate_vm::{Vm, VmOptions};
use proptest::prelude::*;
use proptest::strategy::ValueTree;
use proptest::test_runner::TestRunner;

/// Bytes of one stack frame in the interpreter.
const FRAME: u64 = 512;

/// Whether concrete value `v` (in state `s`, with `vm`'s maps) is one `shape` admits.
fn admits(shape: Shape, v: u64, s: &StepState, vm: &Vm) -> bool {
    let (region, off) = split(v);
    let off = off as i128;
    match shape {
        Shape::Unknown => true,
        Shape::Scalar(i) => i.contains(v as i128),
        Shape::Pointer {
            maybe_null: true, ..
        } if v == 0 => true,
        Shape::Pointer {
            region: r, offset, ..
        } => {
            let (expected, base) = match r {
                Region::Ctx => (Some(CTX_REGION), 0),
                Region::Packet => (Some(PACKET_REGION), s.data as i128),
                Region::PacketMeta => (Some(PACKET_REGION), s.data_meta as i128),
                Region::PacketEnd => (Some(PACKET_REGION), s.data_end as i128),
                Region::Stack { depth } => (
                    Some(STACK_REGION),
                    depth.map_or(off, |d| ((d as u64 + 1) * FRAME) as i128),
                ),
                Region::MapValue { map } => {
                    let in_map = match map {
                        Some(m) => region == MAP_VALUE_REGION + m as u64,
                        None => (MAP_VALUE_REGION..MAP_HANDLE_REGION).contains(&region),
                    };
                    let index = region.wrapping_sub(MAP_VALUE_REGION) as usize;
                    let Some(state) = vm.maps.get(index) else {
                        return false;
                    };
                    return in_map && offset.contains(off % state.stride as i128);
                }
                Region::Function => (Some(FUNCTION_REGION), 0),
                Region::MapHandle { map } => {
                    return match map {
                        Some(m) => v == (MAP_HANDLE_REGION + m as u64) << 32,
                        None => region >= MAP_HANDLE_REGION,
                    }
                }
            };
            expected == Some(region) && (offset == Interval::SIGNED || offset.contains(off - base))
        }
    }
}

/// The region tag a concrete address carries.
fn concrete_region(addr: u64) -> u64 {
    split(addr).0
}

fn region_matches(fact: Region, addr: u64) -> bool {
    let r = concrete_region(addr);
    match fact {
        Region::Ctx => r == CTX_REGION,
        Region::Packet | Region::PacketMeta | Region::PacketEnd => r == PACKET_REGION,
        Region::Stack { .. } => r == STACK_REGION,
        Region::MapValue { map: Some(m) } => r == MAP_VALUE_REGION + m as u64,
        Region::MapValue { map: None } => (MAP_VALUE_REGION..MAP_HANDLE_REGION).contains(&r),
        Region::MapHandle { .. } => r >= MAP_HANDLE_REGION,
        Region::Function => r == FUNCTION_REGION,
    }
}

/// Counts of what was checked.
#[derive(Default, Debug)]
struct Checked {
    /// Loops of the analysed programs, and those with a bound.
    loops: usize,
    bounded_loops: usize,
    block_states: usize,
    pointers: usize,
    accesses: usize,
    loop_entries: usize,
}

/// Checks one run's steps against the analyses of the object's programs.
fn check_run(
    what: &str,
    cfgs: &[Cfg],
    analyses: &[Analysis],
    steps: &[Step],
    states: &[StepState],
    vm: &Vm,
    checked: &mut Checked,
) {
    let mut header_runs: Vec<std::collections::HashMap<usize, u64>> =
        vec![Default::default(); cfgs.len()];
    for (i, (step, s)) in steps.iter().zip(states).enumerate() {
        let (cfg, analysis) = (&cfgs[step.program], &analyses[step.program]);
        let Some(b) = cfg.block_of(step.slot) else {
            panic!("{what}: step {i} at slot {} is in no block", step.slot);
        };
        if cfg.blocks()[b].first == step.slot {
            let abs: &State = analysis.block_state(b).unwrap_or_else(|| {
                panic!("{what}: step {i} enters block {b}, which the analysis found unreachable")
            });
            checked.block_states += 1;
            for r in 0..11 {
                let shape = abs.regs[r].shape;
                assert!(
                    admits(shape, s.regs[r], s, vm),
                    "{what}: step {i} (slot {}, block {b}): r{r} = {:#x} is not in {shape:?}",
                    step.slot,
                    s.regs[r]
                );
                if matches!(shape, Shape::Pointer { .. }) {
                    checked.pointers += 1;
                }
            }
            let len = (s.data_end - s.data) as i128;
            assert!(
                abs.packet_len.contains(len),
                "{what}: step {i} (block {b}): packet length {len} is not in {:?}",
                abs.packet_len
            );
            // Loop headers: runs per entry into the loop.
            for bound in analysis.loop_bounds() {
                if bound.header != b {
                    continue;
                }
                let l = cfg.functions()[bound.function]
                    .loops()
                    .iter()
                    .find(|l| l.header == b)
                    .expect("bound of a loop");
                let from_inside = steps[..i]
                    .iter()
                    .zip(&states[..i])
                    .rev()
                    .find(|(p, ps)| p.program == step.program && ps.depth == s.depth)
                    .and_then(|(p, _)| cfg.block_of(p.slot))
                    .is_some_and(|pb| l.body.contains(&pb));
                let runs = header_runs[step.program].entry(b).or_insert(0);
                *runs = if from_inside { *runs + 1 } else { 1 };
                if !from_inside {
                    checked.loop_entries += 1;
                }
                if let Some(max) = bound.max_header_runs {
                    assert!(
                        *runs <= max,
                        "{what}: loop at slot {} ran its header {runs} times, bound {max}",
                        bound.header_slot
                    );
                }
            }
        }
        let insn = cfg
            .instructions()
            .iter()
            .find(|(slot, _)| *slot == step.slot)
            .map(|(_, insn)| *insn);
        let address = match insn {
            Some(Instruction::Load { src, off, .. }) => Some((src, off)),
            Some(Instruction::Store { dst, off, .. } | Instruction::Atomic { dst, off, .. }) => {
                Some((dst, off))
            }
            _ => None,
        };
        if let (Some((base, off)), Some(Fact::Memory(Some(region)))) =
            (address, analysis.fact(step.slot))
        {
            let addr = s.regs[base as usize].wrapping_add(off as i64 as u64);
            assert!(
                region_matches(region, addr),
                "{what}: step {i} (slot {}): access at {addr:#x} is not in {region:?}",
                step.slot
            );
            checked.accesses += 1;
        }
    }
}

fn analyse_all(object: &Object) -> (Vec<Cfg>, Vec<Analysis>) {
    let cfgs: Vec<Cfg> = object
        .programs
        .iter()
        .map(|p| Cfg::build(p).expect("cfg"))
        .collect();
    let analyses = cfgs.iter().map(|c| Analysis::run(object, c)).collect();
    (cfgs, analyses)
}

fn recording() -> VmOptions {
    VmOptions {
        record_steps: true,
        record_states: true,
        ..Default::default()
    }
}

#[test]
fn analysis_contains_every_executed_example_state() {
    let mut checked = Checked::default();
    let mut runs = 0;
    for example in load_all().expect("example corpus") {
        let (cfgs, analyses) = analyse_all(&example.object);
        let mut driver = Driver::new(&example.object, &example.seed, recording(), MapMode::Fresh)
            .expect("interpreter");
        for packet in &example.packets {
            let out = driver
                .run(example.entry, &packet.bytes, &[])
                .expect("example packets run");
            let what = format!("{} packet line {}", example.name(), packet.line);
            check_run(
                &what,
                &cfgs,
                &analyses,
                &out.steps,
                &out.states,
                driver.vm(),
                &mut checked,
            );
            runs += 1;
        }
    }
    eprintln!("{runs} example runs: {checked:?}");
    // Today's corpus: 316 crafted packets; every one of them checked.
    assert!(runs >= 300, "only {runs} example runs");
    assert!(checked.pointers > 10_000, "{checked:?}");
    assert!(checked.accesses > 10_000, "{checked:?}");
    assert!(checked.loop_entries > 50, "{checked:?}");
}

#[test]
fn analysis_contains_every_state_of_random_programs() {
    let mut runner = TestRunner::deterministic();
    let mut checked = Checked::default();
    for i in 0..500 {
        let insns = xdp_program(40)
            .new_tree(&mut runner)
            .expect("program")
            .current();
        let object = object("random", &insns);
        let (cfgs, analyses) = analyse_all(&object);
        for _ in 0..3 {
            let bytes = packet().new_tree(&mut runner).expect("packet").current();
            let mut vm = Vm::new(&object, recording()).expect("interpreter");
            let Ok(out) = vm.run(0, &bytes, &[]) else {
                continue;
            };
            check_run(
                &format!("random program {i}"),
                &cfgs,
                &analyses,
                &out.steps,
                &out.states,
                &vm,
                &mut checked,
            );
        }
    }
    eprintln!("random programs: {checked:?}");
    assert!(checked.block_states > 5_000, "{checked:?}");
}

#[test]
fn analysis_contains_every_state_of_random_objects() {
    use linerate_conformance::random_program::objects;
    let mut runner = TestRunner::deterministic();
    let mut checked = Checked::default();
    for i in 0..300 {
        let random = objects::random_object(30)
            .new_tree(&mut runner)
            .expect("object")
            .current();
        let object = random.object();
        let (cfgs, analyses) = analyse_all(&object);
        for a in &analyses {
            checked.loops += a.loop_bounds().len();
            checked.bounded_loops += a
                .loop_bounds()
                .iter()
                .filter(|b| b.max_header_runs.is_some())
                .count();
        }
        let seed: MapSeed = random.seeds.iter().cloned().collect();
        let Ok(mut driver) = Driver::new(&object, &seed, recording(), MapMode::Persist) else {
            continue;
        };
        for _ in 0..3 {
            let program = (0..objects::MAX_PROGRAMS)
                .new_tree(&mut runner)
                .expect("program")
                .current()
                % object.programs.len();
            let bytes = objects::packet()
                .new_tree(&mut runner)
                .expect("packet")
                .current();
            let Ok(out) = driver.run(program, &bytes, &[]) else {
                continue;
            };
            check_run(
                &format!("random object {i}"),
                &cfgs,
                &analyses,
                &out.steps,
                &out.states,
                driver.vm(),
                &mut checked,
            );
        }
    }
    eprintln!("random objects: {checked:?}");
    assert!(checked.block_states > 20_000, "{checked:?}");
    assert!(checked.loop_entries > 100, "{checked:?}");
    // The generator's loops count to a constant in a stack slot: every one is bounded.
    assert_eq!(checked.bounded_loops, checked.loops, "{checked:?}");
}

/// The loop-free generator's programs (`random_program::paths`: length checks, lookups with
/// NULL checks, branches on packet bytes and map values), whose analysis `linerate bound` builds
/// on: every executed state is in the analysis's, from the generator's map seeds.
#[test]
fn analysis_contains_every_state_of_loop_free_programs() {
    use linerate_conformance::random_program::paths::{generate, GenOptions};
    let mut checked = Checked::default();
    for seed in 0..300 {
        let options = GenOptions {
            branches: 1 + seed as usize % 16,
            time_random: seed % 4 == 0,
            ..GenOptions::default()
        };
        let generated = generate(seed, &options);
        let (cfgs, analyses) = analyse_all(&generated.object);
        let mut driver = Driver::new(
            &generated.object,
            &generated.seed_maps,
            recording(),
            MapMode::Persist,
        )
        .expect("interpreter");
        for packet in generated.packets(seed, 8) {
            let out = driver.run(0, &packet, &[]).expect("generated programs run");
            check_run(
                &format!("loop-free program {seed}"),
                &cfgs,
                &analyses,
                &out.steps,
                &out.states,
                driver.vm(),
                &mut checked,
            );
        }
    }
    eprintln!("loop-free programs: {checked:?}");
    assert!(checked.block_states > 10_000, "{checked:?}");
    assert!(checked.accesses > 50_000, "{checked:?}");
}
