//! The example corpus (`examples/` at the repository root) as tests and benchmarks use it.
//!
//! Each `examples/NAME.o` comes with `NAME.packets` — crafted packets, one per line in hex, each
//! after a `# [i] expect XDP_...: why` comment, with the program to run named in a
//! `# program: NAME` header — and, where its maps need contents, `NAME.maps.json` in the shape of
//! `linerate run --maps`.

use std::path::{Path, PathBuf};

use linerate_bpf::contents::MapSeed;
use linerate_bpf::{Object, ProgramKind};
use linerate_io::parse_hex;

/// The repository's `examples/` directory.
pub fn examples_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples")
}

/// The training corpus (`corpus/train/`), the programs the rewrite-rule library is grown from;
/// its objects come with companion files in the examples' format.
pub fn corpus_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../corpus/train")
}

/// A crafted packet and the action its author expects from freshly seeded maps.
#[derive(Clone, Debug)]
pub struct CraftedPacket {
    /// Line of the packet in its `.packets` file.
    pub line: usize,
    pub expected_action: String,
    pub bytes: Vec<u8>,
}

/// One example object with its inputs.
#[derive(Clone, Debug)]
pub struct Example {
    pub path: PathBuf,
    pub object: Object,
    /// Index of the program the packets are meant for.
    pub entry: usize,
    pub packets: Vec<CraftedPacket>,
    /// Initial map contents (from `NAME.maps.json`, empty without one).
    pub seed: MapSeed,
    /// XDP programs the kernel's verifier is expected to refuse (`# refused: NAME` lines).
    pub refused: Vec<usize>,
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

    /// The programs both engines run: the XDP programs the kernel is not expected to refuse.
    pub fn runnable_programs(&self) -> impl Iterator<Item = usize> + '_ {
        (0..self.object.programs.len()).filter(|i| {
            self.object.programs[*i].kind() == ProgramKind::Xdp && !self.refused.contains(i)
        })
    }

    /// The crafted packets' bytes.
    pub fn packet_bytes(&self) -> Vec<Vec<u8>> {
        self.packets.iter().map(|p| p.bytes.clone()).collect()
    }
}

/// What a `.packets` file says: the program to run, the crafted packets, and the programs the
/// kernel is expected to refuse.
struct PacketsFile {
    program: Option<String>,
    packets: Vec<CraftedPacket>,
    refused: Vec<String>,
}

fn read_packets(path: &Path) -> Result<PacketsFile, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let mut program = None;
    let mut refused = Vec::new();
    let mut expected = None;
    let mut packets = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let line = line.trim();
        let at = || format!("{}:{}", path.display(), i + 1);
        if let Some(name) = line.strip_prefix("# program:") {
            program = name.split_whitespace().next().map(str::to_string);
        } else if let Some(names) = line.strip_prefix("# refused:") {
            refused.extend(names.split_whitespace().map(str::to_string));
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
    Ok(PacketsFile {
        program,
        packets,
        refused,
    })
}

/// The maps file's seed, checked against the object's maps; none when there is no maps file.
fn read_seed(path: &Path, object: &Object) -> Result<MapSeed, String> {
    if !path.exists() {
        return Ok(MapSeed::new());
    }
    linerate_io::read_maps_file(path, object).map_err(|e| e.to_string())
}

/// Reads one example and its companion files.
pub fn load(path: &Path) -> Result<Example, String> {
    load_with_inputs(path, path)
}

/// Reads the object at `path` with the companion files (`.packets`, `.maps.json`) of the object
/// at `inputs`: another build of the same source, such as an `examples/os/` -Os baseline.
pub fn load_with_inputs(path: &Path, inputs: &Path) -> Result<Example, String> {
    let object = linerate_io::load_object(path).map_err(|e| e.to_string())?;
    let file = read_packets(&inputs.with_extension("packets"))?;
    let index = |name: &str| {
        object
            .programs
            .iter()
            .position(|p| p.name == name)
            .ok_or_else(|| format!("{}: no program `{name}`", path.display()))
    };
    let entry = file.program.as_deref().map_or(Ok(0), index)?;
    let refused = file
        .refused
        .iter()
        .map(|name| index(name))
        .collect::<Result<_, _>>()?;
    let seed = read_seed(&inputs.with_extension("maps.json"), &object)?;
    Ok(Example {
        path: path.to_path_buf(),
        object,
        entry,
        packets: file.packets,
        seed,
        refused,
    })
}

/// Every example, sorted by file name.
pub fn load_all() -> Result<Vec<Example>, String> {
    load_dir(&examples_dir())
}

/// Every runnable program of `examples` ([`Example::runnable_programs`]) with its example, in
/// order: the cases of a test that walks every program.
pub fn runnable_programs(examples: &[Example]) -> Vec<(&Example, usize)> {
    examples
        .iter()
        .flat_map(|example| {
            example
                .runnable_programs()
                .map(move |program| (example, program))
        })
        .collect()
}

/// Every `*.o` directly in `dir` (subdirectories such as `examples/os/` are not entered) with
/// its companion files, sorted by file name.
pub fn load_dir(dir: &Path) -> Result<Vec<Example>, String> {
    let mut paths: Vec<PathBuf> = std::fs::read_dir(dir)
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
