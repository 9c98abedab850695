//! Inputs shared by the integration tests: every example of `linerate_conformance::examples`
//! with its crafted packets, grown to 200 by truncations and bit flips.

use linerate_bpf::contents::MapSeed;
use linerate_bpf::Object;
use linerate_hxdp::check::packet_variants;

/// Each example's name, object, maps seed and packets (its crafted ones, then variants up to 200).
pub fn example_inputs() -> Vec<(String, Object, MapSeed, Vec<Vec<u8>>)> {
    linerate_conformance::examples::load_all()
        .unwrap()
        .into_iter()
        .map(|ex| {
            let stem = ex
                .path
                .file_stem()
                .unwrap_or_default()
                .to_string_lossy()
                .into_owned();
            let packets = packet_variants(&ex.packet_bytes(), 200, stem.len() as u64 + 1);
            (stem, ex.object, ex.seed, packets)
        })
        .collect()
}
