//! `docs/support.md` tells users what linerate supports and how each part is checked; this test
//! keeps it true. Every helper the semantics gives a meaning to has a row (and no other helper
//! does), every map type the interpreter creates has a row, every modelled kfunc has a row, and
//! every example a row names as its check really calls that helper or kfunc, or holds a map of
//! that type.

use std::collections::{BTreeMap, BTreeSet};

use linerate_bpf::insn::{CallTarget, Instruction};
use linerate_bpf::program::MapType;
use linerate_bpf::MapDef;
use linerate_conformance::examples::{examples_dir, load_all, Example};
use linerate_sem::helpers::SUPPORTED;
use linerate_vm::maps::MapState;

/// The rows of the table under the `## title` heading: its cells, header and rule skipped.
fn table(doc: &str, title: &str) -> Vec<Vec<String>> {
    let heading = format!("## {title}");
    let section = doc
        .split("\n## ")
        .find(|s| format!("## {s}").starts_with(&heading))
        .unwrap_or_else(|| panic!("docs/support.md has no `{heading}` section"));
    section
        .lines()
        .filter(|l| l.starts_with('|'))
        .skip(2)
        .map(|l| {
            l.trim_matches('|')
                .split('|')
                .map(|c| c.trim().to_string())
                .collect()
        })
        .collect()
}

/// The example names (`xdp_...`) a "checked by" cell cites.
fn cited_examples(cell: &str) -> Vec<String> {
    cell.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .filter(|w| w.starts_with("xdp_") && !w.contains("frags"))
        .map(str::to_string)
        .collect()
}

fn doc() -> String {
    let path = examples_dir().join("../docs/support.md");
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn examples_by_name() -> BTreeMap<String, Example> {
    load_all()
        .expect("example corpus")
        .into_iter()
        .map(|e| (e.name().trim_end_matches(".o").to_string(), e))
        .collect()
}

/// The helpers and kfuncs the programs of `example` call.
fn calls(example: &Example) -> (BTreeSet<u32>, BTreeSet<String>) {
    let (mut helpers, mut kfuncs) = (BTreeSet::new(), BTreeSet::new());
    for program in &example.object.programs {
        for (_, insn) in program.decode().expect("examples decode") {
            match insn {
                Instruction::Call(CallTarget::Helper(id)) => {
                    helpers.insert(id);
                }
                Instruction::Call(CallTarget::Kfunc(index)) => {
                    if let Some(k) = example.object.kfunc(index) {
                        kfuncs.insert(k.name.clone());
                    }
                }
                _ => {}
            }
        }
    }
    (helpers, kfuncs)
}

#[test]
fn every_supported_helper_has_a_row_whose_examples_call_it() {
    let doc = doc();
    let examples = examples_by_name();
    let rows = table(&doc, "Helpers");
    let mut listed = BTreeSet::new();
    for row in &rows {
        let id: u32 = row[1]
            .parse()
            .unwrap_or_else(|_| panic!("bad id in {row:?}"));
        assert_eq!(
            linerate_bpf::helpers::helper_name(id).trim_start_matches("bpf_"),
            row[0],
            "helper {id}'s row names another helper"
        );
        listed.insert(id);
        for name in cited_examples(&row[2]) {
            let example = examples
                .get(&name)
                .unwrap_or_else(|| panic!("row {} cites {name}, no such example", row[0]));
            assert!(
                calls(example).0.contains(&id),
                "row {} cites {name}, which does not call it",
                row[0]
            );
        }
    }
    let supported: BTreeSet<u32> = SUPPORTED.iter().copied().collect();
    assert_eq!(
        listed, supported,
        "helper rows against sem::helpers::SUPPORTED"
    );
}

#[test]
fn every_map_type_the_interpreter_creates_has_a_row_whose_examples_hold_it() {
    let doc = doc();
    let examples = examples_by_name();
    let rows = table(&doc, "Map types");
    let mut listed = BTreeSet::new();
    for row in &rows {
        let map_type =
            MapType::from_name(&row[0]).unwrap_or_else(|| panic!("{} is no map type name", row[0]));
        listed.insert(map_type);
        for name in cited_examples(&row[1]) {
            let example = examples
                .get(&name)
                .unwrap_or_else(|| panic!("row {} cites {name}, no such example", row[0]));
            assert!(
                example.object.maps.iter().any(|m| m.map_type == map_type),
                "row {} cites {name}, which holds no such map",
                row[0]
            );
        }
    }
    // Shapes a map of each type could have; a type the interpreter creates in any of them
    // counts as supported.
    let shapes = [(4, 8, 4096), (0, 8, 4096), (0, 0, 4096), (8, 8, 4096)];
    for id in 0..64 {
        let map_type = MapType(id);
        let created = shapes.iter().any(|&(key, value, entries)| {
            MapState::new(&MapDef::new("m", map_type, key, value, entries)).is_ok()
        });
        if created {
            assert!(
                listed.contains(&map_type),
                "the interpreter creates {} maps, docs/support.md has no row for them",
                map_type.name()
            );
        }
    }
}

#[test]
fn every_modelled_kfunc_has_a_row_whose_examples_call_it() {
    let doc = doc();
    let examples = examples_by_name();
    let rows = table(&doc, "kfuncs");
    let listed: BTreeSet<&str> = rows.iter().map(|r| r[0].as_str()).collect();
    let modelled: BTreeSet<&str> = linerate_sem::kfuncs::MODELLED.iter().copied().collect();
    assert_eq!(listed, modelled, "kfunc rows against sem::kfuncs::MODELLED");
    for row in &rows {
        for name in cited_examples(&row[1]) {
            assert!(
                calls(&examples[&name]).1.contains(&row[0]),
                "row {} cites {name}, which does not call it",
                row[0]
            );
        }
    }
}
