//! `inspect` shows the source lines of an object's `line_info`: `; <source>` before the first
//! instruction of each line in the listing (as `llvm-objdump -S` does) and `source_lines` in JSON;
//! `--btf PATH` chooses the target BTF of CO-RE relocations.

use crate::common;

use common::*;

#[test]
fn the_listing_shows_each_line_before_its_first_instruction() {
    let text = run_in(
        None,
        ["inspect", example("xdp_global_funcs.o").to_str().unwrap()],
    );
    let text = text.ok();
    let lines: Vec<&str> = text.lines().collect();
    for (source, callee) in [
        ("; \tint proto = parse_l3(ctx);", "<parse_l3>"),
        ("; \tclass = classify(proto, len);", "<classify>"),
    ] {
        let at = lines
            .iter()
            .position(|l| *l == source)
            .unwrap_or_else(|| panic!("`{source}` is not in the listing:\n{text}"));
        let call = lines[at + 1..]
            .iter()
            .take_while(|l| !l.starts_with(';'))
            .find(|l| l.contains("call"))
            .unwrap_or_else(|| panic!("no call after `{source}`"));
        assert!(call.ends_with(callee), "{call}");
    }
    // Each source line heads an instruction.
    for (i, l) in lines.iter().enumerate() {
        if l.starts_with("; ") {
            assert!(lines[i + 1].contains(":\t"), "{l} heads `{}`", lines[i + 1]);
        }
    }
}

#[test]
fn json_names_each_lines_file_number_and_text() {
    let json = run_in(
        None,
        [
            "inspect",
            "--json",
            example("xdp_global_funcs.o").to_str().unwrap(),
        ],
    )
    .json();
    let source = std::fs::read_to_string(example("xdp_global_funcs.c")).unwrap();
    let source: Vec<&str> = source.lines().collect();
    let lines = json["programs"][0]["source_lines"].as_array().unwrap();
    assert!(lines.len() > 10);
    for l in lines {
        let number = l["line"].as_u64().unwrap() as usize;
        assert_eq!(l["text"].as_str().unwrap(), source[number - 1], "{l}");
        assert!(l["file"].as_str().unwrap().ends_with("xdp_global_funcs.c"));
    }
    let slots: Vec<u64> = lines.iter().map(|l| l["slot"].as_u64().unwrap()).collect();
    assert!(slots.windows(2).all(|w| w[0] < w[1]));
}

/// `--btf PATH` resolves CO-RE relocations against that BTF instead of the running kernel's:
/// against xdp_core's own BTF `sizeof(struct iphdr)` is the header's 24, against the kernel's 20.
#[test]
fn btf_flag_chooses_the_core_target() {
    let object = example("xdp_core.o");
    let own = linerate_bpf::read_object_file(&object)
        .unwrap()
        .btf
        .unwrap()
        .btf
        .to_bytes();
    let dir = TempDir::new("btf");
    let own = dir.write("own.btf", own);
    let size_line = |extra: &[&str]| {
        let mut args = vec!["inspect", "--json"];
        args.extend_from_slice(extra);
        args.push(object.to_str().unwrap());
        let json = run_in(None, args).json();
        json["programs"][0]["disassembly"]
            .as_array()
            .unwrap()
            .iter()
            .map(|l| l.as_str().unwrap().to_string())
            .find(|l| l.trim_start().starts_with("25:"))
            .unwrap()
    };
    assert!(size_line(&[]).ends_with("r3 = 0x14"), "{}", size_line(&[]));
    let with_own = size_line(&["--btf", own.to_str().unwrap()]);
    assert!(with_own.ends_with("r3 = 0x18"), "{with_own}");
    let bad = dir.write("bad.btf", b"this is not a BTF file at all");
    expect_error_in(
        &dir,
        &[
            "inspect",
            "--btf",
            bad.to_str().unwrap(),
            object.to_str().unwrap(),
        ],
        &["BTF file", "bad.btf", "magic"],
    );
}
