//! Inputs shared by the integration tests: every example object with its maps seed and packets.

use std::path::{Path, PathBuf};

use linerate_bpf::contents::MapSeed;
use linerate_bpf::Object;
use linerate_hxdp::check::packet_variants;

pub fn examples() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples")
}

/// Each example object with its maps seed and packets (read, plus truncations and byte flips:
/// at least 200).
pub fn example_inputs() -> Vec<(String, Object, MapSeed, Vec<Vec<u8>>)> {
    let mut names: Vec<PathBuf> = std::fs::read_dir(examples())
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "o"))
        .collect();
    names.sort();
    names
        .into_iter()
        .map(|path| {
            let stem = path.file_stem().unwrap().to_string_lossy().to_string();
            let object = linerate_io::load_object(&path).unwrap();
            let maps = path.with_extension("maps.json");
            let seed = if maps.exists() {
                linerate_io::read_maps_file(&maps, &object).unwrap()
            } else {
                MapSeed::new()
            };
            let packets_file = path.with_extension("packets");
            let base = if packets_file.exists() {
                linerate_io::read_packets_file(&packets_file).unwrap()
            } else {
                vec![vec![0u8; 64]]
            };
            let packets = packet_variants(&base, 200, stem.len() as u64 + 1);
            (stem, object, seed, packets)
        })
        .collect()
}
