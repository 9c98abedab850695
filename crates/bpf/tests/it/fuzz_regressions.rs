//! Regressions found by the cargo-fuzz targets in `fuzz/` (see `fuzz/README.md`).

use linerate_bpf::asm::{assemble_program, parse_instruction};
use linerate_bpf::disasm::{disassemble, format_instruction};
use linerate_bpf::insn::{Imm64, Instruction};
use linerate_bpf::program::{MapDef, MapType, Program};

fn map(name: &str) -> MapDef {
    MapDef::new(name, MapType::ARRAY, 4, 8, 1)
}

/// A map may be called like any C identifier, including the words of the instruction syntax
/// (`be16`, `xchg_64`, `atomic_fetch_add`, ...): `r1 = be16 ll` is a map reference, not a swap.
#[test]
fn maps_named_like_keywords_round_trip() {
    let words = "le16 le32 le64 be16 be32 be64 bswap16 bswap32 bswap64 atomic_fetch_add \
                 atomic_fetch_or atomic_fetch_and atomic_fetch_xor xchg_64 xchg32_32 cmpxchg_64 \
                 cmpxchg32_32 map ll skb lock call goto gotol if exit pc kfunc ld_pseudo u8 u64 \
                 s8 s32";
    for w in words.split_whitespace() {
        let maps = vec![map("other"), map(w)];
        for imm in [Imm64::Map(1), Imm64::MapValue { map: 1, offset: 16 }] {
            let insn = Instruction::LoadImm64 { dst: 1, imm };
            let text = format_instruction(&insn, &maps);
            let back = parse_instruction(&text, &maps)
                .unwrap_or_else(|e| panic!("map `{w}`: `{text}` does not parse: {e}"));
            assert_eq!(back, insn, "map `{w}`: `{text}`");
            let p = Program::from_instructions("prog", "xdp", &[insn, Instruction::Exit]);
            let listing = disassemble(&p, &maps);
            let q = assemble_program(&listing, &maps)
                .unwrap_or_else(|e| panic!("map `{w}`: {e}\n{listing}"));
            assert_eq!(q.insns, p.insns, "map `{w}`\n{listing}");
        }
    }
}

/// Map names the assembler cannot read back as that map — registers, several tokens, an empty
/// name, a name an earlier map already has — print as `map[index]`, so the round trip holds for
/// any object the reader accepts.
#[test]
fn unprintable_map_names_print_as_indices() {
    for (name, printed) in [
        ("r1", "r1 = map[1] ll"),
        ("w10", "r1 = map[1] ll"),
        ("", "r1 = map[1] ll"),
        ("a b", "r1 = map[1] ll"),
        ("x;y", "r1 = map[1] ll"),
        ("other", "r1 = map[1] ll"),
        ("r11", "r1 = r11 ll"),
    ] {
        let maps = vec![map("other"), map(name)];
        let insn = Instruction::LoadImm64 {
            dst: 1,
            imm: Imm64::Map(1),
        };
        let text = format_instruction(&insn, &maps);
        assert_eq!(text, printed, "map `{name}`");
        assert_eq!(parse_instruction(&text, &maps), Ok(insn), "map `{name}`");
    }
}
