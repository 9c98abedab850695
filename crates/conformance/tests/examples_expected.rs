//! Every crafted packet of every example gets the verdict its author wrote down, in the
//! interpreter and in the kernel.
//!
//! `examples/NAME.packets` annotates each packet with `# [i] expect XDP_...: why` and names the
//! program to run (`# program: NAME`). Expectations hold for freshly seeded maps, so each packet
//! runs against a new interpreter and a newly loaded kernel object.

use std::path::{Path, PathBuf};

use linerate_bpf::Object;
use linerate_kernel::{check_access, load_object, TestRunInput};
use linerate_vm::{xdp_action_name, Vm, VmOptions};

fn examples_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples")
}

fn parse_hex(s: &str) -> Vec<u8> {
    (0..s.len() / 2)
        .map(|i| u8::from_str_radix(&s[2 * i..2 * i + 2], 16).expect("hex"))
        .collect()
}

/// A crafted packet with its expected action.
struct Expectation {
    line: usize,
    action: String,
    packet: Vec<u8>,
}

/// The program to run and the annotated packets of a `.packets` file.
fn read_packets_file(path: &Path) -> (Option<String>, Vec<Expectation>) {
    let text = std::fs::read_to_string(path).expect("readable packets file");
    let mut program = None;
    let mut pending = None;
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let line = line.trim();
        if let Some(name) = line.strip_prefix("# program:") {
            program = name.split_whitespace().next().map(str::to_string);
        } else if let Some(rest) = line.strip_prefix("# [") {
            let action = rest.split("expect ").nth(1).and_then(|r| r.split(':').next());
            pending = action.map(|a| a.trim().to_string());
        } else if !line.is_empty() && !line.starts_with('#') {
            let action = pending.take().unwrap_or_else(|| panic!("{}:{}: packet without expectation", path.display(), i + 1));
            out.push(Expectation { line: i + 1, action, packet: parse_hex(line) });
        }
    }
    (program, out)
}

fn seed(path: &Path, obj: &Object) -> Vec<(usize, Vec<u8>, Vec<u8>)> {
    let maps = path.with_extension("maps.json");
    let Ok(text) = std::fs::read_to_string(maps) else {
        return Vec::new();
    };
    let json: serde_json::Value = serde_json::from_str(&text).expect("valid maps JSON");
    let mut seed = Vec::new();
    for (name, entries) in json.as_object().expect("object") {
        let map = obj.map_index(name).expect("known map");
        for e in entries.as_array().expect("array") {
            seed.push((map, parse_hex(e["key"].as_str().expect("key")), parse_hex(e["value"].as_str().expect("value"))));
        }
    }
    seed
}

#[test]
fn crafted_packets_get_their_expected_verdicts() {
    let kernel = match check_access() {
        Ok(()) => true,
        Err(e) => {
            eprintln!("SKIPPED (kernel half): {e}");
            false
        }
    };
    let mut objects: Vec<PathBuf> = std::fs::read_dir(examples_dir())
        .expect("examples/")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|e| e == "o"))
        .collect();
    objects.sort();
    let mut failures = Vec::new();
    let mut checked = 0;
    for object in &objects {
        let packets_file = object.with_extension("packets");
        let (program, expectations) = read_packets_file(&packets_file);
        let obj = linerate_bpf::object::read_object_file(object).expect("example reads");
        let index = match program.as_deref() {
            Some(name) => obj
                .programs
                .iter()
                .position(|p| p.name == name)
                .unwrap_or_else(|| panic!("{}: no program `{name}`", packets_file.display())),
            None => 0,
        };
        let seed = seed(object, &obj);
        for e in &expectations {
            let at = format!("{}:{}", packets_file.display(), e.line);
            let mut vm = Vm::new(&obj, VmOptions::default()).expect("interpreter accepts example");
            for (map, key, value) in &seed {
                vm.maps[*map].update(key, value, 0);
            }
            match vm.run(index, &e.packet, &[]) {
                Ok(out) if xdp_action_name(out.return_value) == e.action => {}
                Ok(out) => failures.push(format!("{at}: interpreter gave {}, expected {}", xdp_action_name(out.return_value), e.action)),
                Err(err) => failures.push(format!("{at}: interpreter failed: {err}")),
            }
            if kernel {
                let loaded = load_object(&obj).expect("kernel loads example");
                for (map, key, value) in &seed {
                    loaded.update(*map, key, value).expect("seeding");
                }
                let out = loaded.test_run(index, &TestRunInput::new(e.packet.clone())).expect("test run");
                if xdp_action_name(out.retval as u64) != e.action {
                    failures.push(format!("{at}: kernel gave {}, expected {}", xdp_action_name(out.retval as u64), e.action));
                }
            }
            checked += 1;
        }
    }
    assert!(checked >= 300, "only {checked} annotated packets found");
    assert!(failures.is_empty(), "{} of {checked} verdicts wrong:\n{}", failures.len(), failures.join("\n"));
    eprintln!("{checked} crafted packets got their expected verdicts");
}
