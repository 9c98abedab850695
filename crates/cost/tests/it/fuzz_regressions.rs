//! Regressions found by the `commands` fuzz target (`fuzz/fuzz_targets/commands.rs`, see
//! `fuzz/README.md`) and the test `arbitrary_programs`.

use linerate_cost::model::BUILTIN;
use linerate_cost::Model;

/// The wire size of a frame, `max(frame, min_frame_bytes) + wire_overhead_bytes`, was summed in
/// `u32`: `cost --frame-bytes 4294967295` on nfp (the model with a line rate), or a model file
/// with a huge `min_frame_bytes`, overflowed (a panic in debug builds, a wrapped tiny frame and
/// an absurd line-rate cap in release builds).
#[test]
fn packet_rate_of_the_largest_frames() {
    for (target, text) in BUILTIN {
        let model = Model::builtin(target).unwrap();
        let rate = model.packet_rate(model.per_packet(), u32::MAX);
        assert!(rate.pps.is_finite() && rate.pps > 0.0, "{target}: {rate:?}");
        let huge = text.replacen(
            "\"min_frame_bytes\": 60",
            "\"min_frame_bytes\": 4294967295",
            1,
        );
        assert_ne!(&huge, text);
        let model = Model::from_json(&huge, "huge frames").unwrap();
        let rate = model.packet_rate(model.per_packet(), 64);
        assert!(rate.pps.is_finite() && rate.pps > 0.0, "{target}: {rate:?}");
        if model.limits().line_rate_bps.is_some() {
            // 80 Gbit/s over (2^32 - 1 + 24) bytes: about 2.3 frames per second.
            assert!(rate.pps < 10.0, "{target}: {rate:?}");
        }
    }
}
