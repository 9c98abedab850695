//! The passes on every example object the core can run: they run, keep every jump inside the
//! program, and remove what the report lists (run with `--nocapture` for the table).

use std::path::Path;

use linerate_bpf::object::read_object_file;
use linerate_hxdp::passes::{run_passes, PassOptions, PASS_NAMES};
use linerate_hxdp::program::Lowered;

#[test]
fn passes_run_on_every_runnable_example() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples");
    let mut paths: Vec<_> = std::fs::read_dir(&dir)
        .expect("examples directory")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|e| e == "o"))
        .collect();
    paths.sort();
    println!(
        "{:<28} {:>6} {:>6} {:>7} {:>8} {:>9} {:>13} {:>5}",
        "program", "insns", "after", "bounds", "zeroing", "six_byte", "three_operand", "exit"
    );
    let mut compiled = 0;
    let mut total_removed = 0;
    for path in &paths {
        let Ok(object) = read_object_file(path) else {
            continue;
        };
        for program in 0..object.programs.len() {
            let Ok(mut lowered) = Lowered::new(&object, program) else {
                continue;
            };
            let before = lowered.len();
            let removed = run_passes(&object, program, &mut lowered, &PassOptions::default())
                .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
            let sum: usize = removed.values().sum();
            assert_eq!(
                lowered.len() + sum,
                before,
                "{}: the counts add up to what went",
                path.display()
            );
            for (i, l) in lowered.insns.iter().enumerate() {
                if let Some(t) = l.target {
                    assert!(t < lowered.len(), "{}: insn {i} jumps out", path.display());
                }
            }
            assert!(
                lowered.insns.iter().any(|l| l.insn.is_exit()),
                "{}: an exit stays",
                path.display()
            );
            compiled += 1;
            total_removed += sum;
            let name = format!("{}/{}", object.name, object.programs[program].name);
            let counts: Vec<usize> = PASS_NAMES.iter().map(|n| removed[n]).collect();
            println!(
                "{:<28} {:>6} {:>6} {:>7} {:>8} {:>9} {:>13} {:>5}",
                name,
                before,
                lowered.len(),
                counts[0],
                counts[1],
                counts[2],
                counts[3],
                counts[4]
            );
        }
    }
    println!("{compiled} programs, {total_removed} instructions removed");
    assert!(compiled > 10, "most examples are runnable");
    assert!(total_removed > 0);
}
