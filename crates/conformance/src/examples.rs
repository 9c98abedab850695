//! The example corpus (`examples/` at the repository root) as tests and benchmarks use it.
//!
//! Each `examples/NAME.o` comes with `NAME.packets` — crafted packets, one per line in hex, each
//! after a `# [i] expect XDP_...: why` comment, with the program to run named in a
//! `# program: NAME` header — and, where its maps need contents, `NAME.maps.json` in the shape of
//! `linerate run --maps`.

use std::path::{Path, PathBuf};

use linerate_bpf::Object;

/// The repository's `examples/` directory.
pub fn examples_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples")
}

/// A crafted packet and the action its author expects from freshly seeded maps.
#[derive(Clone, Debug)]
pub struct CraftedPacket {
    /// Line of the packet in its `.packets` file.
    pub line: usize,
    pub expected_action: String,
    pub bytes: Vec<u8>,
}

/// Initial map contents: `(map index, key, value)` triples.
pub type MapSeed = Vec<(usize, Vec<u8>, Vec<u8>)>;

/// One example object with its inputs.
#[derive(Clone, Debug)]
pub struct Example {
    pub path: PathBuf,
    pub object: Object,
    /// Index of the program the packets are meant for.
    pub entry: usize,
    pub packets: Vec<CraftedPacket>,
    pub seed: MapSeed,
}

impl Example {
    /// The file name, for messages.
    pub fn name(&self) -> String {
        self.path
            .file_name()
            .unwrap_or_default()
            .to_string_lossy()
            .into_owned()
    }

    /// The crafted packets' bytes.
    pub fn packet_bytes(&self) -> Vec<Vec<u8>> {
        self.packets.iter().map(|p| p.bytes.clone()).collect()
    }
}

/// Parses hex digits (whitespace ignored).
pub fn parse_hex(s: &str) -> Result<Vec<u8>, String> {
    let digits: Vec<u8> = s.bytes().filter(|c| !c.is_ascii_whitespace()).collect();
    if !digits.len().is_multiple_of(2) {
        return Err(format!("odd number of hex digits in `{s}`"));
    }
    digits
        .chunks(2)
        .map(|pair| {
            std::str::from_utf8(pair)
                .ok()
                .and_then(|p| u8::from_str_radix(p, 16).ok())
                .ok_or_else(|| format!("bad hex in `{s}`"))
        })
        .collect()
}

/// Lower-case hex.
pub fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn read_packets(path: &Path) -> Result<(Option<String>, Vec<CraftedPacket>), String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let mut program = None;
    let mut expected = None;
    let mut packets = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let line = line.trim();
        let at = || format!("{}:{}", path.display(), i + 1);
        if let Some(name) = line.strip_prefix("# program:") {
            program = name.split_whitespace().next().map(str::to_string);
        } else if let Some(rest) = line.strip_prefix("# [") {
            expected = rest
                .split("expect ")
                .nth(1)
                .and_then(|r| r.split(':').next())
                .map(|a| a.trim().to_string());
        } else if !line.is_empty() && !line.starts_with('#') {
            packets.push(CraftedPacket {
                line: i + 1,
                expected_action: expected
                    .take()
                    .ok_or_else(|| format!("{}: packet without expectation", at()))?,
                bytes: parse_hex(line).map_err(|e| format!("{}: {e}", at()))?,
            });
        }
    }
    Ok((program, packets))
}

fn read_seed(path: &Path, object: &Object) -> Result<MapSeed, String> {
    let Ok(text) = std::fs::read_to_string(path) else {
        return Ok(Vec::new());
    };
    let bad = |what: &str| format!("{}: {what}", path.display());
    let json: serde_json::Value = serde_json::from_str(&text).map_err(|e| bad(&e.to_string()))?;
    let mut seed = Vec::new();
    for (name, entries) in json.as_object().ok_or_else(|| bad("not an object"))? {
        let map = object
            .map_index(name)
            .ok_or_else(|| bad(&format!("unknown map `{name}`")))?;
        for e in entries
            .as_array()
            .ok_or_else(|| bad("entries not an array"))?
        {
            let field = |k: &str| -> Result<Vec<u8>, String> {
                parse_hex(
                    e[k].as_str()
                        .ok_or_else(|| bad(&format!("entry without {k}")))?,
                )
                .map_err(|m| bad(&m))
            };
            seed.push((map, field("key")?, field("value")?));
        }
    }
    Ok(seed)
}

/// Reads one example and its companion files.
pub fn load(path: &Path) -> Result<Example, String> {
    let object = linerate_bpf::object::read_object_file(path)
        .map_err(|e| format!("{}: {e}", path.display()))?;
    let (program, packets) = read_packets(&path.with_extension("packets"))?;
    let entry = match program {
        Some(name) => object
            .programs
            .iter()
            .position(|p| p.name == name)
            .ok_or_else(|| format!("{}: no program `{name}`", path.display()))?,
        None => 0,
    };
    let seed = read_seed(&path.with_extension("maps.json"), &object)?;
    Ok(Example {
        path: path.to_path_buf(),
        object,
        entry,
        packets,
        seed,
    })
}

/// Every example, sorted by file name.
pub fn load_all() -> Result<Vec<Example>, String> {
    let dir = examples_dir();
    let mut paths: Vec<PathBuf> = std::fs::read_dir(&dir)
        .map_err(|e| format!("{}: {e}", dir.display()))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|e| e == "o"))
        .collect();
    paths.sort();
    paths.iter().map(|p| load(p)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_corpus_loads_with_packets_for_every_example() {
        let all = load_all().unwrap();
        assert!(all.len() >= 21, "{} examples", all.len());
        for e in &all {
            assert!(!e.packets.is_empty(), "{} has no crafted packets", e.name());
        }
        let tailcall = all.iter().find(|e| e.name() == "xdp_tailcall.o").unwrap();
        assert_eq!(
            tailcall.object.programs[tailcall.entry].name,
            "xdp_tailcall_entry"
        );
    }
}
