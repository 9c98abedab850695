//! The readers on the example corpus and on malformed input: what they return, how their errors
//! name the file and the place, and that no input makes them panic.

use std::path::{Path, PathBuf};

use linerate_bpf::Object;
use linerate_io::maps::{parse_maps, MapsError};
use linerate_io::object::{parse_object, ObjectFormatError};
use linerate_io::{load_object, read_maps_file, Error};
use proptest::prelude::*;

fn example(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../examples")
        .join(name)
}

fn router() -> Object {
    load_object(&example("xdp_router.o")).expect("router example reads")
}

#[test]
fn example_maps_read_in_name_then_file_order() {
    let object = router();
    let seed = read_maps_file(&example("xdp_router.maps.json"), &object).unwrap();
    let routes = object.map_index("routes").unwrap();
    assert_eq!(seed.len(), 4);
    for (i, e) in seed.entries().iter().enumerate() {
        assert_eq!((e.map, e.entry), (routes, i));
    }
    assert_eq!(seed.entries()[0].key, [0x10, 0, 0, 0, 0x0a, 1, 0, 0]);
}

#[test]
fn map_errors_name_the_map_and_entry() {
    let object = router();
    let cases = [
        (
            r#"{"nosuch": []}"#,
            "no map named `nosuch` in xdp_router (its maps: router_stats, routes)",
        ),
        (
            r#"{"routes": [{"key": "0a01", "value": "0a000000000a0a0000000001"}]}"#,
            "map `routes` entry 0: key has 2 bytes, the map's keys have 8",
        ),
        (
            r#"{"router_stats": [{"key": "00000000", "value": "0100000000000000"},
                                 {"key": "00000000", "value": "0a0000000000000"}]}"#,
            "map `router_stats` entry 1: value: odd number of hex digits (15)",
        ),
        (
            "{\"routes\": [\n  {\"key\": \"100000000a010000\", \"value\": }\n]}\n",
            "invalid JSON at line 2 column 40: expected value",
        ),
    ];
    for (text, message) in cases {
        assert_eq!(parse_maps(text, &object).unwrap_err().to_string(), message);
    }
    let err = parse_maps("[1]", &object).unwrap_err();
    assert!(
        matches!(err, MapsError::Json(ref j) if j.line == 1),
        "{err:?}"
    );
    let file = Error::Maps {
        path: "m.json".into(),
        error: err,
    };
    assert!(file
        .to_string()
        .starts_with("maps file m.json: invalid JSON at line 1 column"));
}

#[test]
fn object_formats_are_told_apart() {
    let elf = std::fs::read(example("xdp_router.o")).unwrap();
    assert_eq!(parse_object(&elf, "r").unwrap().programs.len(), 1);
    assert!(matches!(
        parse_object(b" \n\t", "x"),
        Err(ObjectFormatError::Empty)
    ));
    assert!(matches!(
        parse_object(&[0xff, 0xfe, 0x80], "x"),
        Err(ObjectFormatError::NotAnObject)
    ));
    assert!(matches!(
        parse_object(&elf[..100], "x"),
        Err(ObjectFormatError::Elf(_))
    ));
    assert!(matches!(
        parse_object(b"r.o:\tfile format elf64-bpf\n", "x"),
        Err(ObjectFormatError::NoPrograms)
    ));
    let err = load_object(Path::new("/nonexistent/x.o")).unwrap_err();
    assert_eq!(err.to_string(), "cannot read /nonexistent/x.o");
    assert!(
        std::error::Error::source(&err).is_some(),
        "the OS error is the source"
    );
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    /// Map contents, well-formed or not, never panic the reader.
    #[test]
    fn maps_reader_never_panics(
        name in prop_oneof![Just("routes".to_string()), Just("router_stats".to_string()), "[a-z]{0,6}"],
        key in "[0-9a-fA-Fx: zé]{0,20}",
        value in "[0-9a-f: ]{0,30}",
        junk in ".{0,12}",
    ) {
        let object = router();
        let text = format!(r#"{{"{name}": [{{"key": "{key}", "value": "{value}"}}]}}{junk}"#);
        let _ = parse_maps(&text, &object);
        let _ = parse_maps(&junk, &object);
    }

    /// Arbitrary bytes never panic the object reader (ELF-looking or text).
    #[test]
    fn object_reader_never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..200)) {
        let _ = parse_object(&bytes, "x");
        let mut elf = b"\x7fELF".to_vec();
        elf.extend_from_slice(&bytes);
        let _ = parse_object(&elf, "x");
    }
}
