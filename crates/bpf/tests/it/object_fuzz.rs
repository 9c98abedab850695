//! A long-running mutation fuzzer for the object reader, ignored by default. Run it with
//! `LINERATE_FUZZ_ITERS=200000 cargo test --release -p linerate-bpf --test it object_fuzz:: -- --ignored`.

use std::path::Path;

use linerate_bpf::read_object;
use linerate_testkit::XorShift;

#[test]
#[ignore = "long-running; set LINERATE_FUZZ_ITERS"]
fn mutated_fixtures_never_panic() {
    let iters: usize = std::env::var("LINERATE_FUZZ_ITERS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(20_000);
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    // The fixtures, plus the project's example objects when present.
    let originals: Vec<Vec<u8>> = [root.join("tests/fixtures"), root.join("../../examples")]
        .iter()
        .filter_map(|dir| std::fs::read_dir(dir).ok())
        .flatten()
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|e| e == "o"))
        .map(|p| std::fs::read(p).unwrap())
        .collect();
    let mut rng = XorShift::new(0x9e37_79b9_7f4a_7c15);
    let (mut ok, mut err) = (0usize, 0usize);
    for i in 0..iters {
        let mut bytes = originals[i % originals.len()].clone();
        for _ in 0..=rng.below(8) {
            let at = rng.below(bytes.len());
            match rng.below(6) {
                0 => bytes[at] = 0,
                1 => bytes[at] = 0xff,
                2 => bytes[at] ^= 1 << rng.below(8),
                3 => {
                    // Overwrite a little-endian word with a small or boundary value.
                    let v: u32 = [0, 1, 7, 8, 0x7fff_ffff, 0xffff_ffff, 0x8000][rng.below(7)];
                    for (k, b) in v.to_le_bytes().iter().enumerate() {
                        if let Some(slot) = bytes.get_mut(at + k) {
                            *slot = *b;
                        }
                    }
                }
                4 => bytes.truncate(at.max(1)),
                _ => bytes[at] = rng.next_u64() as u8,
            }
        }
        match read_object(&bytes, "fuzz") {
            Ok(obj) => {
                ok += 1;
                for p in &obj.programs {
                    p.decode().unwrap();
                }
            }
            Err(e) => {
                err += 1;
                assert!(!e.to_string().contains('\n'), "multi-line message: {e}");
            }
        }
    }
    eprintln!("{iters} mutations: {ok} read, {err} rejected");
}
