//! CO-RE relocations of `examples/xdp_core.o` (built against the hand-written
//! `examples/vmlinux_core.h`) resolved against the running kernel's BTF, against the object's own
//! BTF given as the target, and against a target lacking every type (poisoned instructions).

use std::path::{Path, PathBuf};

use linerate_bpf::btf::{Btf, Kind};
use linerate_bpf::btf_ext::{CoreRelo, CoreReloKind};
use linerate_bpf::core_relo::{self, CoreTarget, POISON_HELPER};
use linerate_bpf::insn::build::{exit, mov64};
use linerate_bpf::insn::encode_all;
use linerate_bpf::object::{read_object_file, read_object_file_with};
use linerate_bpf::Program;

fn example(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../examples")
        .join(name)
}

/// The kernel's BTF, or `None` (with a visible skip) on a machine without it.
fn kernel_btf() -> Option<&'static Btf> {
    match core_relo::running_kernel_btf() {
        Ok(btf) => Some(btf),
        Err(e) => {
            println!("SKIPPED: {e}");
            None
        }
    }
}

/// The relocated value of `kind` for `access` into local type `type_name` of xdp_core.o,
/// against `target`: applied to a `r0 = 0` instruction and read back.
fn relocated(target: &Btf, type_name: &str, access: &str, kind: CoreReloKind) -> i32 {
    let local = read_object_file(&example("xdp_core.o"))
        .unwrap()
        .btf
        .unwrap()
        .btf;
    let type_id = local
        .types()
        .find(|(_, t)| {
            !matches!(t.kind, Kind::Fwd { .. }) && local.name(t).is_ok_and(|n| n == type_name)
        })
        .unwrap_or_else(|| panic!("xdp_core.o has no type {type_name}"))
        .0;
    let relo = CoreRelo {
        section: "xdp".into(),
        insn: 0,
        type_id,
        access_str_off: 0,
        access: access.into(),
        kind,
    };
    let mut code = std::collections::HashMap::from([(0usize, encode_all(&[mov64(0, 0), exit()]))]);
    let sections = std::collections::HashMap::from([("xdp", 0usize)]);
    core_relo::apply(
        &local,
        &[relo],
        &CoreTarget::new(target),
        &mut code,
        &sections,
    )
    .unwrap();
    code[&0][0].imm
}

#[test]
fn field_offsets_and_sizes_are_the_kernels() {
    let Some(kernel) = kernel_btf() else { return };
    use CoreReloKind as K;
    // Wire formats: the kernel's structs follow them. `saddr` sits in an anonymous union there.
    for (ty, access, field, offset, size) in [
        ("iphdr", "0:7", "protocol", 9, 1),
        ("iphdr", "0:9", "saddr", 12, 4),
        ("iphdr", "0:10", "daddr", 16, 4),
        ("ethhdr", "0:2", "h_proto", 12, 2),
        ("xdp_md", "0:1", "data_end", 4, 4),
        ("xdp_md", "0:3", "ingress_ifindex", 12, 4),
        ("udphdr___old", "0:0", "dest", 2, 2),
    ] {
        assert_eq!(
            relocated(kernel, ty, access, K::FIELD_BYTE_OFFSET),
            offset,
            "{ty}.{field}"
        );
        assert_eq!(
            relocated(kernel, ty, access, K::FIELD_BYTE_SIZE),
            size,
            "{ty}.{field}"
        );
        assert_eq!(
            relocated(kernel, ty, access, K::FIELD_EXISTS),
            1,
            "{ty}.{field}"
        );
    }
    // ihl:4 is the low nibble of byte 0: loaded as one byte, shifted up 60 and down 60.
    assert_eq!(relocated(kernel, "iphdr", "0:0", K::FIELD_BYTE_OFFSET), 0);
    assert_eq!(relocated(kernel, "iphdr", "0:0", K::FIELD_BYTE_SIZE), 1);
    assert_eq!(relocated(kernel, "iphdr", "0:0", K::FIELD_LSHIFT_U64), 60);
    assert_eq!(relocated(kernel, "iphdr", "0:0", K::FIELD_RSHIFT_U64), 60);
    assert_eq!(relocated(kernel, "iphdr", "0:0", K::FIELD_SIGNED), 0);
    // version:4 is the high nibble.
    assert_eq!(relocated(kernel, "iphdr", "0:1", K::FIELD_LSHIFT_U64), 56);
    // A field the kernel lacks does not exist; types have the kernel's sizes.
    assert_eq!(relocated(kernel, "iphdr", "0:11", K::FIELD_EXISTS), 0);
    assert_eq!(relocated(kernel, "iphdr", "0", K::TYPE_SIZE), 20);
    assert_eq!(relocated(kernel, "ethhdr", "0", K::TYPE_SIZE), 14);
    assert_eq!(relocated(kernel, "xdp_md", "0", K::TYPE_EXISTS), 1);
    assert_eq!(relocated(kernel, "xdp_action", "2", K::ENUMVAL_VALUE), 2);
    assert_eq!(relocated(kernel, "xdp_action", "4", K::ENUMVAL_EXISTS), 1);
    // The kernel's own id of struct iphdr.
    let id = relocated(kernel, "iphdr", "0", K::TYPE_ID_TARGET) as u32;
    assert_eq!(kernel.name(kernel.ty(id).unwrap()).unwrap(), "iphdr");
}

/// The relocated constant of `r{dst} = imm` at `slot`.
fn imm_at(program: &Program, slot: usize) -> i32 {
    program.insns[slot].imm
}

#[test]
fn the_object_reads_relocated_against_the_kernel_or_a_given_target() {
    let path = example("xdp_core.o");
    // Slot 25 is `r3 = sizeof(struct iphdr)`, slot 33 `r5 = byte size of ihl`, slot 65 the
    // existence of no_such_field, slot 78 the load of udp->dest.
    if kernel_btf().is_some() {
        let object = read_object_file(&path).unwrap();
        let p = &object.programs[0];
        assert_eq!((imm_at(p, 25), imm_at(p, 33), imm_at(p, 65)), (20, 1, 0));
        assert_eq!(p.insns[78].off, 2);
    }
    // Against the object's own BTF, the values are the compiler's.
    let own = read_object_file(&path).unwrap().btf.unwrap().btf;
    let object = read_object_file_with(&path, Some(&own)).unwrap();
    let p = &object.programs[0];
    assert_eq!((imm_at(p, 25), imm_at(p, 65)), (24, 1));
    assert_eq!(p.insns[78].off, 0);
    // Against a BTF with no types, the accesses are poisoned and existence is 0.
    let object = read_object_file_with(&path, Some(&Btf::default())).unwrap();
    let p = &object.programs[0];
    assert_eq!(p.insns[1].code, 0x85);
    assert_eq!(imm_at(p, 1), POISON_HELPER);
    assert_eq!(imm_at(p, 65), 0);
}

/// The fixture's loads of `iph->daddr` (slot 6) and `iph->saddr` (slot 7), which reach the
/// fields through an anonymous union and an anonymous struct.
fn address_load_offsets(target: Option<&Btf>) -> (i16, i16) {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/core_anonymous.o");
    let object = read_object_file_with(&path, target).unwrap();
    let p = &object.programs[0];
    (p.insns[6].off, p.insns[7].off)
}

#[test]
fn accesses_through_anonymous_members_are_relocated() {
    // The local type has four bytes of padding before the union: its own BTF keeps the
    // compiler's offsets, the kernel's iphdr moves them to the wire format's.
    let own = read_object_file(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/core_anonymous.o"),
    )
    .unwrap()
    .btf
    .unwrap()
    .btf;
    assert_eq!(address_load_offsets(Some(&own)), (20, 16));
    if kernel_btf().is_some() {
        assert_eq!(address_load_offsets(None), (16, 12));
    }
}

#[test]
fn vmlinux_parses_and_indexes() {
    let Some(_) = kernel_btf() else { return };
    let bytes = std::fs::read(core_relo::VMLINUX_BTF).unwrap();
    let start = std::time::Instant::now();
    let btf = Btf::parse(&bytes).unwrap();
    let target = CoreTarget::new(&btf);
    let elapsed = start.elapsed();
    assert!(btf.len() > 10_000);
    let _ = target;
    println!("{} types parsed and indexed in {elapsed:?}", btf.len());
}
