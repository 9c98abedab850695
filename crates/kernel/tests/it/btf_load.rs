//! The object's BTF handed to the kernel: every example object's fixed-up BTF is accepted
//! (`BPF_BTF_LOAD`) with every program's func_info and line_info, and an object whose BTF the
//! kernel refuses still loads without it where its programs allow.
//!
//! (This kernel verifies global functions as static ones when a program comes without BTF, so
//! `xdp_global_funcs` loads either way; what strictly needs func_info is a function-address load,
//! a callback, which the verifier refuses with "missing btf func_info".)

use std::path::{Path, PathBuf};

use linerate_bpf::read_object_file;
use linerate_bpf::ProgramKind;
use linerate_kernel::{load_entry, load_object, usable_or_skip, TestRunInput};

fn examples() -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples");
    let mut out: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap()
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|e| e == "o"))
        .collect();
    out.sort();
    out
}

/// A minimal Ethernet + IPv4 + UDP frame.
fn udp_frame() -> Vec<u8> {
    let mut p = vec![0u8; 12];
    p.extend_from_slice(&[0x08, 0x00]);
    let mut ip = vec![
        0x45, 0, 0, 28, 0, 0, 0x40, 0, 64, 17, 0, 0, 10, 0, 0, 1, 10, 0, 0, 2,
    ];
    ip.extend_from_slice(&[0, 1, 0, 2, 0, 8, 0, 0]);
    p.extend_from_slice(&ip);
    p
}

/// The programs an example's `.packets` file says the verifier refuses (`# refused: NAME`).
fn refused_programs(object: &Path) -> Vec<String> {
    std::fs::read_to_string(object.with_extension("packets"))
        .unwrap_or_default()
        .lines()
        .filter_map(|l| l.strip_prefix("# refused:"))
        .flat_map(|names| names.split_whitespace().map(str::to_string))
        .collect()
}

#[test]
fn every_example_loads_with_its_btf() {
    if !usable_or_skip("every_example_loads_with_its_btf") {
        return;
    }
    let mut with_btf = 0;
    for path in examples() {
        let object = read_object_file(&path).unwrap();
        let name = path.display();
        let loaded = load_object(&object).unwrap_or_else(|e| panic!("{name}: {e}"));
        let refused = refused_programs(&path);
        let runnable: Vec<usize> = (0..object.programs.len())
            .filter(|&i| {
                object.programs[i].kind() == ProgramKind::Xdp
                    && !refused.contains(&object.programs[i].name)
            })
            .collect();
        for &index in &runnable {
            loaded
                .load_program(index)
                .unwrap_or_else(|e| panic!("{name}: {e}"));
        }
        let Some(btf) = &object.btf else {
            continue;
        };
        assert!(btf.kernel_bytes.is_ok(), "{name}: {:?}", btf.kernel_bytes);
        assert_eq!(loaded.btf_note(), None, "{name}");
        for index in runnable {
            let program = &object.programs[index];
            let info = loaded.program_btf_info(index).unwrap();
            assert_ne!(info.btf_id, 0, "{name} {}", program.name);
            assert_eq!(info.func_info as usize, program.func_info.len(), "{name}");
            // The verifier drops the records of the dead code it removes (xdp_core's branches on
            // relocated constants).
            let lines = info.line_info as usize;
            assert!(lines <= program.line_info.len(), "{name}");
            assert!(lines > program.line_info.len() / 2, "{name}: {lines}");
        }
        with_btf += 1;
    }
    assert!(with_btf > 10, "{with_btf} examples have BTF");
}

#[test]
fn global_functions_load_with_their_func_info() {
    if !usable_or_skip("global_functions_load_with_their_func_info") {
        return;
    }
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/xdp_global_funcs.o");
    let object = read_object_file(&path).unwrap();
    let loaded = load_entry(&object, 0).expect("loads with BTF and func_info");
    assert_eq!(loaded.btf_note(), None);
    let info = loaded.program_btf_info(0).unwrap();
    assert_eq!((info.func_info, info.line_info), (4, 31));
    let out = loaded.test_run(0, &TestRunInput::new(udp_frame())).unwrap();
    assert_eq!(out.retval, 2, "a short UDP frame passes");

    // Without BTF the program still loads (its global functions verified as static ones).
    let bare = linerate_bpf::Object {
        btf: None,
        ..object.clone()
    };
    let loaded = load_entry(&bare, 0).unwrap();
    let info = loaded.program_btf_info(0).unwrap();
    assert_eq!((info.btf_id, info.func_info, info.line_info), (0, 0, 0));
}

#[test]
fn a_program_needing_btf_is_refused_without_it_and_the_log_says_why() {
    if !usable_or_skip("a_program_needing_btf_is_refused_without_it_and_the_log_says_why") {
        return;
    }
    // r1 = &callback (a function-address load, what bpf_loop and friends take); r0 = 2; exit;
    // callback: r0 = 0; exit. The verifier wants func_info for the address load.
    use linerate_bpf::insn::build::{exit, mov64};
    use linerate_bpf::insn::pseudo;
    use linerate_bpf::program::Function;
    let mut program = linerate_bpf::Program::from_instructions(
        "fnaddr",
        "xdp",
        &[
            mov64(1, 0),
            mov64(1, 0),
            mov64(0, 2),
            exit(),
            mov64(0, 0),
            exit(),
        ],
    );
    // Slots 0 and 1 become `r1 = callback ll` (src BPF_PSEUDO_FUNC, imm = 4 - 0 - 1).
    program.insns[0] = linerate_bpf::RawInsn {
        code: 0x18,
        dst: 1,
        src: pseudo::FUNC,
        off: 0,
        imm: 3,
    };
    program.insns[1] = linerate_bpf::RawInsn {
        code: 0,
        dst: 0,
        src: 0,
        off: 0,
        imm: 0,
    };
    program.functions = vec![
        Function {
            name: "fnaddr".into(),
            start: 0,
            len: 4,
        },
        Function {
            name: "callback".into(),
            start: 4,
            len: 2,
        },
    ];
    let object = linerate_bpf::Object::with_programs("fnaddr", vec![program], vec![]);
    let err = load_entry(&object, 0).unwrap_err();
    let log = err.verifier_log().unwrap_or_default();
    assert!(log.contains("missing btf func_info"), "{log}");

    // The object's BTF refused: the log says so first.
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/xdp_global_funcs.o");
    let mut with_btf = object.clone();
    let mut btf = read_object_file(&path).unwrap().btf.unwrap();
    btf.kernel_bytes = Err("a test says so".into());
    with_btf.btf = Some(btf);
    let err = load_entry(&with_btf, 0).unwrap_err();
    let log = err.verifier_log().unwrap_or_default();
    assert!(
        log.starts_with(
            "linerate: loaded without BTF: the object's BTF cannot be fixed up: a test says so"
        ),
        "{log}"
    );
    assert!(log.contains("missing btf func_info"), "{log}");
}

#[test]
fn an_object_whose_btf_is_refused_loads_without_it() {
    if !usable_or_skip("an_object_whose_btf_is_refused_loads_without_it") {
        return;
    }
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/xdp_filter.o");
    let mut object = read_object_file(&path).unwrap();
    let btf = object.btf.as_mut().unwrap();
    // A type section length past the end of the section.
    let mut bytes = btf.kernel_bytes.clone().unwrap();
    bytes[12..16].copy_from_slice(&u32::MAX.to_le_bytes());
    btf.kernel_bytes = Ok(bytes);
    let loaded = load_entry(&object, 0).expect("loads without BTF");
    let note = loaded.btf_note().unwrap();
    assert!(note.contains("refused the object's BTF"), "{note}");
    let out = loaded.test_run(0, &TestRunInput::new(udp_frame())).unwrap();
    assert_eq!(out.retval, 2, "IPv4 passes");
}

/// A `.BTF` of raw type words and strings.
fn raw_btf(types: &[u32], strings: &[u8]) -> Vec<u8> {
    let type_len = (types.len() * 4) as u32;
    let mut out = vec![0x9f, 0xeb, 1, 0];
    for w in [24, 0, type_len, type_len, strings.len() as u32] {
        out.extend_from_slice(&w.to_le_bytes());
    }
    out.extend(types.iter().flat_map(|w| w.to_le_bytes()));
    out.extend_from_slice(strings);
    out
}

/// Externs as clang writes them (a kfunc with an unnamed parameter in `.ksyms`, a kconfig
/// variable in `.kconfig`, both sections unsized) are refused by the kernel as they are and
/// accepted once fixed up.
#[test]
fn extern_sections_are_fixed_up_until_the_kernel_accepts_them() {
    if !usable_or_skip("extern_sections_are_fixed_up_until_the_kernel_accepts_them") {
        return;
    }
    use linerate_bpf::btf::{Btf, SectionLayout};
    let info = |kind: u32, vlen: u32| kind << 24 | vlen;
    let strings = b"\0int\0kf\0CONFIG_X\0.ksyms\0.kconfig\0";
    #[rustfmt::skip]
    let types = [
        1, info(1, 0), 4, 0x0100_0020, // [1] int
        0, info(13, 1), 1, 0, 1, // [2] int (int), the parameter unnamed
        5, info(12, 2), 2, // [3] extern int kf(int)
        8, info(14, 0), 1, 2, // [4] extern int CONFIG_X
        17, info(15, 1), 0, 3, 0, 0, // [5] DATASEC .ksyms { kf }
        24, info(15, 1), 0, 4, 0, 4, // [6] DATASEC .kconfig { CONFIG_X }
    ];
    let raw = raw_btf(&types, strings);
    let btf = Btf::parse(&raw).unwrap();
    let fixed = btf.fixed_for_kernel(&SectionLayout::default()).unwrap();
    let program = [
        linerate_bpf::insn::build::mov64(0, 2),
        linerate_bpf::insn::build::exit(),
    ];
    let load = |bytes: Vec<u8>| {
        let mut object = linerate_bpf::Object::single("externs", &program, vec![]);
        object.btf = Some(linerate_bpf::program::ObjectBtf {
            btf: btf.clone(),
            kernel_bytes: Ok(bytes),
            ..Default::default()
        });
        load_entry(&object, 0).unwrap().btf_note()
    };
    let note = load(raw.clone()).expect("the raw BTF is refused");
    assert!(note.contains("refused the object's BTF"), "{note}");
    assert_eq!(load(fixed.to_bytes()), None);
}
