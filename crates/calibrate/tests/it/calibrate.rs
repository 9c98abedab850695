//! Calibration through the kernel: a quick calibration of a few items must produce a valid model
//! whose figures order as the hardware does, and the committed default model must load.

use linerate_calibrate::{self as calibrate, CalibrateError, How, Options};
use linerate_cost::{Item, Model};

/// The committed x86 model loads and says where its figures come from.
#[test]
fn builtin_x86_model_is_a_calibration_of_this_machine_type() {
    let model = Model::builtin("x86").expect("crates/cost/models/x86.json validates");
    let file = model.file();
    assert_eq!(file.target, "x86");
    assert!(
        file.source.contains("linerate calibrate"),
        "{}",
        file.source
    );
    assert!(file.device.cpu_model.is_some() && file.device.frequency_hz.is_some());
    assert_eq!(file.device.cores, 1);
    let add = &file.items["alu64.add.reg"];
    assert!(add.ns.is_some() && add.spread.is_some() && add.note.is_some());
    // Every priced item has a reason when it is not measured directly.
    for (key, price) in &file.items {
        if price.cost.is_none() || price.ns.is_none() {
            assert!(price.note.is_some(), "{key} has no note");
        }
    }
    let ns = |key: &str| {
        let item = linerate_cost::item::universe()
            .into_iter()
            .find(|i| i.to_string() == key)
            .expect("item");
        model.price(&item).expect("priced").cost.0[0]
    };
    assert!(ns("alu64.div.reg") > ns("alu64.add.reg"));
    // A hash lookup that misses stops after hashing the key; a success compares and returns it.
    let lookup = |failed| {
        let item = if failed {
            linerate_cost::Item::MapFailed {
                op: linerate_cost::item::MapOp::Lookup,
                map_type: linerate_bpf::MapType::HASH,
                key_size: 4,
            }
        } else {
            linerate_cost::Item::Map {
                op: linerate_cost::item::MapOp::Lookup,
                map_type: linerate_bpf::MapType::HASH,
                key_size: 4,
            }
        };
        model.price(&item).expect("priced").cost.0[0]
    };
    assert!(lookup(true) < lookup(false));
    // bpf_for_each_map_elem calls its callback through a pointer from kernel code.
    assert!(ns("callback.for_each_map_elem") > ns("callback.loop"));
    assert!(ns("helper.fib_lookup") > ns("helper.redirect"));
    assert!(model.per_packet().0[0] > 0.0);
}

#[test]
fn unknown_prefixes_are_refused_before_measuring() {
    let opts = Options {
        only: vec!["alu65.".into()],
        ..Options::quick()
    };
    let err = calibrate::calibrate(&opts, &mut |_| {}).expect_err("no item starts with alu65.");
    assert!(matches!(err, CalibrateError::NoMatch(_)), "{err}");
}

/// A quick calibration of a few items, through the kernel.
#[test]
fn quick_partial_calibration_orders_costs_like_the_hardware() {
    if !linerate_kernel::usable_or_skip("quick_partial_calibration_orders_costs_like_the_hardware")
    {
        return;
    }
    let opts = Options {
        only: vec![
            "alu64.add.imm".into(),
            "alu64.div.reg".into(),
            "map.lookup.hash.k8".into(),
            "map.lookup.array.k4".into(),
        ],
        ..Options::quick()
    };
    let mut lines = Vec::new();
    let mut steps = Vec::new();
    let result = calibrate::calibrate(&opts, &mut |p| {
        lines.push(p.to_string());
        if let calibrate::Progress::Step { done, total, .. } = p {
            steps.push((*done, *total));
        }
    })
    .expect("calibration runs");
    assert!(
        lines.iter().any(|l| l.starts_with("round 3/3")),
        "{lines:?}"
    );
    // Steps count up by one to their announced total, which stays the same.
    let total = steps.last().expect("steps are reported").1;
    let counted: Vec<(usize, usize)> = (1..=total).map(|done| (done, total)).collect();
    assert_eq!(steps, counted);

    let item = |key: &str| {
        result
            .items
            .iter()
            .find(|i| i.item == key)
            .unwrap_or_else(|| panic!("{key} in the result"))
    };
    let ns = |key: &str| item(key).ns.expect("priced");
    for key in [
        "alu64.add.imm",
        "alu64.div.reg",
        "map.lookup.hash.k8",
        "map.lookup.array.k4",
    ] {
        assert_eq!(item(key).how, How::Measured, "{key}");
        assert!(
            item(key).spread.is_some() && item(key).ns.is_some(),
            "{key}"
        );
    }
    assert_eq!(item("alu32.add.imm").how, How::Copied);
    // A divide takes many cycles, an add one.
    assert!(
        ns("alu64.div.reg") > 3.0 * ns("alu64.add.imm"),
        "div {} vs add {}",
        ns("alu64.div.reg"),
        ns("alu64.add.imm")
    );
    assert!(ns("alu64.add.imm") > 0.0);
    // A hash lookup (a helper call, hashing, a bucket walk) costs more than an inlined array
    // lookup.
    assert!(
        ns("map.lookup.hash.k8") > 2.0 * ns("map.lookup.array.k4"),
        "hash {} vs array {}",
        ns("map.lookup.hash.k8"),
        ns("map.lookup.array.k4")
    );
    assert!(result.per_packet_ns > 0.0);

    // The result is a complete, valid model, and survives a round trip through a file.
    let model = Model::new(result.model.clone(), "calibration").expect("valid model");
    assert!(model.per_packet().0[0] > 0.0);
    let hash = Item::Map {
        op: linerate_cost::item::MapOp::Lookup,
        map_type: linerate_bpf::MapType::HASH,
        key_size: 8,
    };
    let cycles = model.price(&hash).expect("priced").cost.0[0];
    let ghz = result.model.device.frequency_hz.expect("clock") / 1e9;
    assert!(
        (cycles / ghz - ns("map.lookup.hash.k8")).abs() < 0.01,
        "the model prices in cycles at the calibrated clock: {cycles} cycles at {ghz} GHz"
    );
    let dir = std::env::temp_dir().join(format!("linerate-calibrate-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let path = dir.join("x86.json");
    std::fs::write(
        &path,
        serde_json::to_string_pretty(&result.model).expect("json"),
    )
    .expect("write");
    Model::read(&path).expect("the written model loads");
    std::fs::remove_dir_all(&dir).ok();
}
