//! The listing forms of older llvm-objdump releases, rewritten into the forms [`crate::asm`]
//! reads (those of LLVM 13 and later), line for line so that error line numbers stay those of
//! the user's text.
//!
//! What LLVM 8–12 print differently, and what becomes of it here:
//!
//! - **Symbol headers.** LLVM 8 and 9 print a function or basic-block symbol as a bare `name:`
//!   line (`xdp_prog:`, `LBB0_4:`), often right below `Disassembly of section xdp:`; LLVM 10 as
//!   `0000000000000000 name:`; LLVM 11 and later as `0000000000000000 <name>:`. Inside a
//!   `Disassembly of section` block the first two become the third, so that a function header is
//!   a function and an `LBB…` label a label, as in newer listings.
//! - **64-bit loads split over two lines.** A `BPF_LD | BPF_IMM | BPF_DW` instruction takes two
//!   slots. Some dumps print only the first slot's eight bytes on the instruction's line, then
//!   either the second slot's eight bytes on a line of their own (with no text, or `<unknown>`)
//!   or nothing (the address column skips a slot). The two halves are joined into the one
//!   sixteen-byte line newer releases print; when the second half is not printed, its immediate
//!   (the constant's upper 32 bits) is taken from the text (`r1 = 0x100000002 ll`), the only
//!   place the listing says it. Without raw bytes, an address-only line for the second slot is
//!   dropped.
//! - **`ld_pseudo` immediates printed unsigned.** bcc-generated dumps and old releases print the
//!   immediate of a pseudo load as an unsigned 32-bit number (`ld_pseudo r1, 1, 4294967295` for
//!   a map file descriptor of -1); it is rewritten as the signed value it encodes.
//!
//! Everything else in these releases' output (decimal immediates, `goto +54 <LBB0_20>`,
//! relocation lines, `-S`/`-l` comment lines, `file format ELF64-BPF`) is already read as is.

use std::borrow::Cow;

/// `text` with every older-release form described in the module documentation rewritten; one
/// output line per input line.
pub(super) fn normalize(text: &str) -> Cow<'_, str> {
    let lines: Vec<&str> = text.lines().collect();
    let mut out: Vec<Cow<'_, str>> = lines.iter().map(|l| Cow::Borrowed(*l)).collect();
    let mut in_disassembly = false;
    let mut changed = false;
    let mut i = 0;
    while i < lines.len() {
        let line = lines[i];
        let trimmed = line.trim();
        if trimmed.starts_with("Disassembly of section ") {
            in_disassembly = true;
        } else if trimmed == "SYMBOL TABLE:" {
            in_disassembly = false;
        } else if in_disassembly && !is_comment(trimmed) {
            if let Some(header) = symbol_header(trimmed) {
                out[i] = Cow::Owned(header);
                changed = true;
            } else if let Some(insn) = InsnLine::parse(line) {
                let next = lines.get(i + 1).and_then(|l| InsnLine::parse(l));
                if let Some((joined, consumed_next)) = join_split_load(&insn, next.as_ref()) {
                    out[i] = Cow::Owned(joined);
                    if consumed_next {
                        out[i + 1] = Cow::Borrowed("");
                        i += 1;
                    }
                    changed = true;
                } else if let Some(text) = signed_pseudo(insn.text) {
                    out[i] = Cow::Owned(insn.with(&insn.bytes, &text));
                    changed = true;
                }
            }
        }
        i += 1;
    }
    if !changed {
        return Cow::Borrowed(text);
    }
    let mut joined = out.join("\n");
    if text.ends_with('\n') {
        joined.push('\n');
    }
    Cow::Owned(joined)
}

fn is_comment(s: &str) -> bool {
    s.starts_with(';') || s.starts_with('#') || s.starts_with("//")
}

/// `name:` or `0000000000000028 name:` as `0000000000000028 <name>:` (the address when given).
fn symbol_header(s: &str) -> Option<String> {
    let body = s.strip_suffix(':')?.trim();
    if body.contains(['<', '>', ':']) {
        return None;
    }
    let mut parts = body.split_whitespace();
    let (addr, name) = match (parts.next(), parts.next(), parts.next()) {
        (Some(name), None, None) => ("", name),
        (Some(addr), Some(name), None) if addr.chars().all(|c| c.is_ascii_hexdigit()) => {
            (addr, name)
        }
        _ => return None,
    };
    let first = name.chars().next()?;
    if !(first.is_ascii_alphabetic() || first == '_' || first == '.' || first == '$') {
        return None;
    }
    Some(if addr.is_empty() {
        format!("<{name}>:")
    } else {
        format!("{addr} <{name}>:")
    })
}

/// An instruction line: `  12:\t18 01 00 00 ... \tr1 = 0 ll`.
struct InsnLine<'a> {
    /// Everything up to and including the address column's `:`.
    prefix: &'a str,
    index: u64,
    bytes: Vec<u8>,
    text: &'a str,
}

impl<'a> InsnLine<'a> {
    fn parse(line: &'a str) -> Option<InsnLine<'a>> {
        let start = line.len() - line.trim_start().len();
        let digits = line[start..]
            .chars()
            .take_while(|c| c.is_ascii_digit())
            .count();
        let colon = start + digits;
        if digits == 0 || !line[colon..].starts_with(':') {
            return None;
        }
        let index = line[start..colon].parse().ok()?;
        let mut rest = &line[colon + 1..];
        let mut bytes = Vec::new();
        loop {
            let tok_start = rest.len() - rest.trim_start().len();
            let tok = rest[tok_start..]
                .split(char::is_whitespace)
                .next()
                .unwrap_or("");
            match (tok.len(), u8::from_str_radix(tok, 16)) {
                (2, Ok(b)) if bytes.len() < 16 => {
                    bytes.push(b);
                    rest = &rest[tok_start + 2..];
                }
                _ => break,
            }
        }
        Some(InsnLine {
            prefix: &line[..colon + 1],
            index,
            bytes,
            text: rest.trim(),
        })
    }

    /// The line with `bytes` and `text` in llvm's layout.
    fn with(&self, bytes: &[u8], text: &str) -> String {
        let hex: Vec<String> = bytes.iter().map(|b| format!("{b:02x}")).collect();
        if hex.is_empty() {
            format!("{}\t{text}", self.prefix)
        } else {
            format!("{}\t{}\t{text}", self.prefix, hex.join(" "))
        }
    }
}

/// The opcode of `BPF_LD | BPF_IMM | BPF_DW`, the only two-slot instruction.
const LD_IMM64: u8 = 0x18;

/// Joins a 64-bit load printed over two lines (or with its second slot not printed) into one
/// line; the flag says whether `next` was its second slot.
fn join_split_load(insn: &InsnLine<'_>, next: Option<&InsnLine<'_>>) -> Option<(String, bool)> {
    let second_slot = next.filter(|n| {
        Some(n.index) == insn.index.checked_add(1)
            && (n.text.is_empty() || n.text == "<unknown>")
            && (n.bytes.len() == 8 || (n.bytes.is_empty() && insn.bytes.is_empty()))
    });
    let text = signed_pseudo(insn.text);
    let text = text.as_deref().unwrap_or(insn.text);
    if insn.bytes.is_empty() {
        // Without raw bytes only an address-only line for the second slot needs dropping.
        let wide = text.ends_with(" ll") || text.starts_with("ld_pseudo");
        return second_slot
            .filter(|_| wide)
            .map(|_| (insn.with(&[], text), true));
    }
    if insn.bytes.len() != 8 || insn.bytes[0] != LD_IMM64 {
        return None;
    }
    let mut bytes = insn.bytes.clone();
    match second_slot {
        Some(n) => bytes.extend_from_slice(&n.bytes),
        None => {
            // Not printed: a zero slot carrying the constant's upper half from the text.
            bytes.extend_from_slice(&[0; 4]);
            bytes.extend_from_slice(&upper_half(text).to_le_bytes());
        }
    }
    Some((insn.with(&bytes, text), second_slot.is_some()))
}

/// The upper 32 bits of the constant of `rN = V ll` (0 for any other text, such as
/// `ld_pseudo`, whose second immediate llvm does not print).
fn upper_half(text: &str) -> u32 {
    let Some(value) = text
        .split_once('=')
        .and_then(|(_, v)| v.trim().strip_suffix("ll"))
        .map(str::trim)
    else {
        return 0;
    };
    let (neg, digits) = match value.strip_prefix('-') {
        Some(d) => (true, d),
        None => (false, value),
    };
    let magnitude = match digits.strip_prefix("0x") {
        Some(h) => u64::from_str_radix(h, 16),
        None => digits.parse::<u64>(),
    };
    let Ok(magnitude) = magnitude else { return 0 };
    let v = if neg {
        magnitude.wrapping_neg()
    } else {
        magnitude
    };
    (v >> 32) as u32
}

/// `ld_pseudo r1, 1, 4294967295` as `ld_pseudo r1, 1, -1`: immediates printed as unsigned 32-bit
/// numbers rewritten as the signed values they encode. `None` when nothing changes.
fn signed_pseudo(text: &str) -> Option<String> {
    let rest = text.strip_prefix("ld_pseudo")?;
    let mut changed = false;
    let parts: Vec<String> = rest
        .split(',')
        .map(|p| match p.trim().parse::<u64>() {
            Ok(v) if v > i32::MAX as u64 && v <= u32::MAX as u64 => {
                changed = true;
                format!(" {}", v as u32 as i32)
            }
            _ => p.to_string(),
        })
        .collect();
    changed.then(|| format!("ld_pseudo{}", parts.join(",")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn headers_of_every_release_become_the_newest_form() {
        assert_eq!(symbol_header("xdp_prog:").as_deref(), Some("<xdp_prog>:"));
        assert_eq!(
            symbol_header("0000000000000070 LBB0_2:").as_deref(),
            Some("0000000000000070 <LBB0_2>:")
        );
        assert_eq!(symbol_header("0000000000000000 <f>:"), None);
        assert_eq!(symbol_header("12:"), None);
        assert_eq!(symbol_header("a b c:"), None);
    }

    #[test]
    fn upper_halves_come_from_the_text() {
        assert_eq!(upper_half("r1 = 0x100000002 ll"), 1);
        assert_eq!(upper_half("r1 = 4294967296 ll"), 1);
        assert_eq!(upper_half("r1 = -1 ll"), u32::MAX);
        assert_eq!(upper_half("ld_pseudo r1, 1, 3"), 0);
        assert_eq!(upper_half("r1 = 99999999999999999999999 ll"), 0);
    }

    #[test]
    fn unsigned_pseudo_immediates_become_signed() {
        assert_eq!(
            signed_pseudo("ld_pseudo r1, 1, 4294967295").as_deref(),
            Some("ld_pseudo r1, 1, -1")
        );
        assert_eq!(signed_pseudo("ld_pseudo r1, 1, 3"), None);
    }
}
