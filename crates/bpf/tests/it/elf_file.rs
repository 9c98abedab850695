//! Every example object read as sections and written back loads as the same object: same
//! programs, instructions, relocations resolved to the same maps, same maps and BTF; the bytes
//! are the input's, and writing twice gives the same bytes.

use linerate_bpf::elf_file::ElfFile;
use linerate_bpf::read_object;

#[test]
fn examples_survive_a_round_trip_through_sections() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples");
    let mut checked = 0;
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().and_then(|e| e.to_str()) != Some("o") {
            continue;
        }
        let bytes = std::fs::read(&path).unwrap();
        let name = path.file_stem().unwrap().to_str().unwrap();
        let file = ElfFile::parse(&bytes).unwrap_or_else(|e| panic!("{name}: {e}"));
        let written = file.to_bytes();
        assert!(written == bytes, "{name}: written back, the bytes differ");
        let again = ElfFile::parse(&written).unwrap();
        assert_eq!(again.sections.len(), file.sections.len(), "{name}");
        for (i, (a, b)) in again.sections.iter().zip(&file.sections).enumerate() {
            assert!(
                a == b,
                "{name}: section {i} ({}) differs after writing",
                b.name
            );
        }
        assert_eq!(
            (again.flags, again.shstrndx),
            (file.flags, file.shstrndx),
            "{name}"
        );
        assert_eq!(again.to_bytes(), written, "{name}: writing is not stable");
        let (before, after) = (read_object(&bytes, name), read_object(&written, name));
        match (before, after) {
            (Ok(a), Ok(b)) => assert!(
                format!("{a:?}") == format!("{b:?}"),
                "{name}: objects differ"
            ),
            (Err(a), Err(b)) => assert_eq!(a.to_string(), b.to_string(), "{name}"),
            (a, b) => panic!("{name}: {:?} became {:?}", a.err(), b.err()),
        }
        checked += 1;
    }
    assert!(checked >= 40, "only {checked} example objects");
}
