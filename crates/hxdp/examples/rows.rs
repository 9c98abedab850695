//! Prints rows per example (development aid).
fn main() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples");
    let mut paths: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .filter_map(|e| e.ok())
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "o"))
        .collect();
    paths.sort();
    for p in paths {
        let object = match linerate_io::load_object(&p) {
            Ok(o) => o,
            Err(e) => {
                println!("{}: {e}", p.display());
                continue;
            }
        };
        match linerate_hxdp::compile::compile(&object, 0, &Default::default()) {
            Ok(c) => {
                let empty = c
                    .schedule
                    .rows
                    .iter()
                    .filter(|r| r.filled().next().is_none())
                    .count();
                let small = c.superblocks.iter().filter(|r| r.len() <= 2).count();
                println!(
                    "{:24} insns {:4} rows {:4} ratio {:.2} sb {:3} small {:3} empty {:3}",
                    object.name,
                    c.ebpf_insns,
                    c.schedule.rows.len(),
                    c.ebpf_insns as f64 / c.schedule.rows.len() as f64,
                    c.superblocks.len(),
                    small,
                    empty
                )
            }
            Err(e) => println!("{:24} {e}", object.name),
        }
        if std::env::args().any(|a| a == object.name) {
            print!(
                "{}",
                linerate_hxdp::compile::compile(&object, 0, &Default::default())
                    .unwrap()
                    .schedule
            );
        }
    }
}
