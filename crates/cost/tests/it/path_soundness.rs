//! Summed edge costs never underestimate what a concretely executed path costs under the model.
//!
//! Every crafted packet of every example runs in the interpreter, which records where control went.
//! From that the test rebuilds the exact instruction trace (into called functions) and prices it
//! with exact stall distances: each blocking operation stalls until its gap since the previous one
//! of its kind has passed. The block sequence of the entry function, priced by
//! [`ProgramCost::path_cost`], must be at least that in every component. A toy model with large
//! gaps makes stalls frequent; the shipped models are checked too.

use linerate_bpf::contents::MapMode;
use linerate_cfg::Cfg;
use linerate_conformance::examples::{load_all, Example};
use linerate_cost::item::{family_key, map_families, universe};
use linerate_cost::model::{Component, Device, Gap, GapOrigin, ItemPrice, Limits, ModelFile};
use linerate_cost::trace::entry_blocks;
use linerate_cost::{Cost, CostError, Model, ProgramCost};
use linerate_vm::drive::Driver;
use linerate_vm::trace::Step;
use linerate_vm::VmOptions;

fn toy_model() -> Model {
    let price = |cycles: f64, gap: Option<&str>| ItemPrice {
        cost: Some([("cycles".to_string(), cycles)].into()),
        gap: gap.map(String::from),
        ..Default::default()
    };
    let mut items = std::collections::BTreeMap::new();
    for (i, item) in universe().iter().enumerate() {
        let key = item.to_string();
        let gap = if key.starts_with("load.packet") {
            Some("sram")
        } else if key.starts_with("load.map_value") || key.starts_with("atomic.map_value") {
            Some("dram")
        } else {
            None
        };
        items.insert(key, price(1.0 + (i % 5) as f64, gap));
    }
    for (op, map_type) in map_families() {
        let family = family_key(op, map_type);
        items.insert(format!("{family}.k4"), price(20.0, Some("dram")));
        items.insert(format!("{family}.k16"), price(35.0, Some("dram")));
    }
    Model::new(
        ModelFile {
            format: linerate_cost::model::FORMAT.into(),
            version: linerate_cost::model::VERSION,
            target: "toy".into(),
            description: "toy model with large gaps".into(),
            source: "test".into(),
            device: Device {
                name: "toy".into(),
                cores: 1,
                ..Default::default()
            },
            components: vec![Component {
                name: "cycles".into(),
                unit: "cycles".into(),
                capacity_per_s: 1e9,
                note: None,
            }],
            limits: Limits {
                min_frame_bytes: 60,
                ..Default::default()
            },
            per_packet: [("cycles".to_string(), 100.0)].into(),
            gaps: vec![
                Gap {
                    name: "sram".into(),
                    component: "cycles".into(),
                    min: 12.0,
                    measured_from: GapOrigin::AnyKind,
                    note: None,
                },
                Gap {
                    name: "dram".into(),
                    component: "cycles".into(),
                    min: 40.0,
                    measured_from: GapOrigin::SameKind,
                    note: None,
                },
            ],
            items,
        },
        "toy",
    )
    .expect("toy model validates")
}

/// The trace's cost under the model with exact stall distances (history unknown at entry: 0).
fn exact_cost(model: &Model, cost: &ProgramCost, steps: &[Step]) -> Cost {
    let gaps = model.gaps();
    let component = |g: usize| {
        model
            .components()
            .iter()
            .position(|c| c.name == gaps[g].component)
            .unwrap()
    };
    let mut total = model.per_packet().clone();
    let mut dist = vec![0.0f64; gaps.len()];
    for &Step { slot, taken, .. } in steps {
        let charge = &cost.slots[&slot];
        let mut spent = match taken {
            Some(true) => charge.taken.clone().expect("taken price"),
            _ => charge.cost.clone(),
        };
        for &g in &charge.gaps {
            let c = component(g);
            spent.0[c] = spent.0[c].max(charge.cost.0[c] + (gaps[g].min - dist[g]).max(0.0));
        }
        total.add(&spent);
        for (g, d) in dist.iter_mut().enumerate() {
            let any_kind = gaps[g].measured_from == GapOrigin::AnyKind && !charge.gaps.is_empty();
            *d = if charge.gaps.contains(&g) || any_kind {
                0.0
            } else {
                *d + spent.0[component(g)]
            };
        }
    }
    total
}

fn check(example: &Example, model: &Model) -> Option<usize> {
    let program = &example.object.programs[example.entry];
    let cfg = Cfg::build(program).unwrap();
    let cost = match ProgramCost::new(&example.object, &cfg, model) {
        Ok(c) => c,
        Err(CostError::Unsupported { .. }) => return None,
        Err(e) => panic!("{}: {e}", example.name()),
    };
    let mut checked = 0;
    let options = VmOptions {
        record_steps: true,
        ..Default::default()
    };
    let mut vm = Driver::new(&example.object, &example.seed, options, MapMode::Fresh).unwrap();
    for packet in &example.packets {
        let out = vm.run(example.entry, &packet.bytes, &[]).unwrap();
        let steps = out.steps;
        let Some(blocks) = entry_blocks(&cfg, steps.iter().map(|s| (s.program, s.slot))) else {
            continue;
        };
        let summed = cost.path_cost(&cfg, model, &blocks).unwrap();
        let exact = exact_cost(model, &cost, &steps);
        for (i, c) in model.components().iter().enumerate() {
            assert!(
                // Relative slack: the two sums add the same prices in different orders.
                summed.0[i] + 1e-9 * exact.0[i].max(1.0) >= exact.0[i],
                "{} packet line {}: path {:?} sums to {} {} but its trace costs {}",
                example.name(),
                packet.line,
                blocks,
                summed.0[i],
                c.name,
                exact.0[i]
            );
        }
        checked += 1;
    }
    Some(checked)
}

#[test]
fn summed_edges_bound_executed_paths() {
    let examples = load_all().expect("examples load");
    let mut models = vec![toy_model()];
    for target in ["x86", "nfp"] {
        models.push(Model::builtin(target).expect("shipped model loads"));
    }
    for model in &models {
        let priced: Vec<usize> = examples.iter().filter_map(|e| check(e, model)).collect();
        let checked: usize = priced.iter().sum();
        println!(
            "{}: {checked} executed paths of {} programs checked",
            model.target(),
            priced.len()
        );
        // Coverage may grow, never shrink unnoticed. Counted when this was written: all 30
        // example programs, 495 executed paths, for the toy and x86 models; the NFP prices 12
        // of the programs (202 paths) and refuses the others' instructions.
        let (min_paths, min_programs) = match model.target() {
            "nfp" => (202, 12),
            _ => (495, 30),
        };
        assert!(
            checked >= min_paths && priced.len() >= min_programs,
            "{}: only {checked} paths of {} programs checked (at least {min_paths} of \
             {min_programs} expected)",
            model.target(),
            priced.len()
        );
    }
}
