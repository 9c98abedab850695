//! Instruction decoder, encoder, printer and single-instruction parser: every decoded instruction
//! must encode back to its slots, and its text must parse back to the same instruction.
#![no_main]

use libfuzzer_sys::fuzz_target;
use linerate_bpf::asm::parse_instruction;
use linerate_bpf::disasm::{format_instruction, NoNames};
use linerate_bpf::insn::{decode_all, Instruction, RawInsn};

fuzz_target!(|data: &[u8]| {
    let bytes = &data[..data.len() - data.len() % RawInsn::SIZE];
    let slots = RawInsn::parse_all(bytes).expect("length is a multiple of 8");
    for (i, s) in slots.iter().enumerate() {
        assert_eq!(RawInsn::from_bytes(s.to_bytes()), *s);
        assert_eq!(s.to_bytes()[..], bytes[i * 8..i * 8 + 8]);
    }
    // Decode each slot on its own as well, so that one bad slot does not hide the rest.
    for i in 0..slots.len() {
        if let Ok(insn) = Instruction::decode(&slots, i) {
            check(&slots, i, &insn);
        }
    }
    if let Ok(insns) = decode_all(&slots) {
        let mut next = 0;
        for (i, insn) in &insns {
            assert_eq!(*i, next);
            next += insn.slots();
            check(&slots, *i, insn);
        }
        assert_eq!(next, slots.len());
    }
});

fn check(slots: &[RawInsn], i: usize, insn: &Instruction) {
    let enc = insn.encode();
    assert_eq!(enc.len(), insn.slots());
    assert_eq!(
        enc[..],
        slots[i..i + insn.slots()],
        "encode() differs for {insn:?}"
    );
    let text = format_instruction(insn, &NoNames);
    match parse_instruction(&text, &NoNames) {
        Ok(back) => assert_eq!(back, *insn, "`{text}` parses to a different instruction"),
        Err(e) => panic!("`{text}` (from {insn:?}) does not parse: {e}"),
    }
}
