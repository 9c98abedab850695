//! The library of rewrite rules (issue 10 item 3, beyond K2 in the spirit of EPSO): window
//! rewrites the search proved, generalized, kept in a file and tried on every later program
//! before any search runs.
//!
//! A rule is the part of a proven window rewrite that changed (equal leading and trailing
//! instructions trimmed), generalized over register names (a consistent one-to-one renaming, r10
//! only to itself) and memory offsets (shifted by the same amount per base register); immediates
//! stay as they are. A rule never vouches for itself: each instance is run on the window's
//! tests and proven equivalent in its context by the [`crate::Prover`] like any candidate, so a
//! generalization that does not hold somewhere is simply not applied there.

use std::collections::HashMap;

use linerate_bpf::insn::{
    decode_all, encode_all, Instruction, Operand, RawInsn, Reg, FRAME_POINTER,
};
use serde::{Deserialize, Serialize};

/// One rule: instructions to look for and what replaces them.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Rule {
    /// The pattern's instructions, each its 8-byte encoding in hex.
    pub pattern: Vec<String>,
    /// The replacement's instructions (fewer or cheaper), encoded the same way.
    pub replacement: Vec<String>,
    /// The program the rule was found in.
    pub origin: String,
}

/// A rule file: format name, version, rules.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct Library {
    pub format: String,
    pub version: u32,
    pub rules: Vec<Rule>,
}

/// The file format's name.
pub const FORMAT: &str = "linerate-rewrite-rules";

/// The library shipped with linerate, grown from the training corpus (`corpus/train`).
pub const SHIPPED: &str = include_str!("../rules/library.json");

/// Why a rule file cannot be used.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum RulesError {
    #[error("rule file {origin}: {reason}")]
    Invalid { origin: String, reason: String },
}

/// A rule decoded, ready to match.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Compiled {
    pub pattern: Vec<Instruction>,
    pub replacement: Vec<Instruction>,
}

fn decode_hex(text: &str, origin: &str, k: usize) -> Result<Vec<Instruction>, RulesError> {
    let invalid = |reason: String| RulesError::Invalid {
        origin: origin.to_string(),
        reason: format!("rule {k}: {reason}"),
    };
    let bytes: Vec<u8> = (0..text.len())
        .step_by(2)
        .map(|i| {
            text.get(i..i + 2)
                .and_then(|h| u8::from_str_radix(h, 16).ok())
                .ok_or_else(|| invalid(format!("`{text}` is not hex")))
        })
        .collect::<Result<_, _>>()?;
    let slots = RawInsn::parse_all(&bytes)
        .ok_or_else(|| invalid(format!("`{text}` is not 8-byte slots")))?;
    let insns = decode_all(&slots).map_err(|e| invalid(e.to_string()))?;
    Ok(insns.into_iter().map(|(_, i)| i).collect())
}

fn encode_hex(insn: &Instruction) -> String {
    encode_all(std::slice::from_ref(insn))
        .iter()
        .flat_map(|s| s.to_bytes())
        .map(|b| format!("{b:02x}"))
        .collect()
}

impl Library {
    /// An empty library.
    pub fn new() -> Library {
        Library {
            format: FORMAT.into(),
            version: 1,
            rules: Vec::new(),
        }
    }

    /// Reads a rule file's text (`origin` names it in errors).
    pub fn parse(text: &str, origin: &str) -> Result<Library, RulesError> {
        let library: Library = serde_json::from_str(text).map_err(|e| RulesError::Invalid {
            origin: origin.into(),
            reason: e.to_string(),
        })?;
        if library.format != FORMAT || library.version != 1 {
            return Err(RulesError::Invalid {
                origin: origin.into(),
                reason: format!(
                    "format `{}` version {}, expected `{FORMAT}` version 1",
                    library.format, library.version
                ),
            });
        }
        library.compile(origin)?;
        Ok(library)
    }

    /// The shipped library.
    pub fn shipped() -> Result<Library, RulesError> {
        Library::parse(SHIPPED, "the shipped rule library")
    }

    /// Every rule decoded.
    pub fn compile(&self, origin: &str) -> Result<Vec<Compiled>, RulesError> {
        self.rules
            .iter()
            .enumerate()
            .map(|(k, r)| {
                let pattern = r
                    .pattern
                    .iter()
                    .map(|h| decode_hex(h, origin, k))
                    .collect::<Result<Vec<_>, _>>()?
                    .concat();
                let replacement = r
                    .replacement
                    .iter()
                    .map(|h| decode_hex(h, origin, k))
                    .collect::<Result<Vec<_>, _>>()?
                    .concat();
                Ok(Compiled {
                    pattern,
                    replacement,
                })
            })
            .collect()
    }

    /// Adds the rule a proven rewrite of `original` into `replacement` gives (see the module
    /// documentation), unless it is already there or nothing changed.
    pub fn learn(
        &mut self,
        original: &[Instruction],
        replacement: &[Option<Instruction>],
        origin: &str,
    ) -> bool {
        let Some(rule) = generalize(original, replacement) else {
            return false;
        };
        if !rule.replacement.iter().all(crate::proposal::encodable) {
            return false;
        }
        let rule = Rule {
            pattern: rule.pattern.iter().map(encode_hex).collect(),
            replacement: rule.replacement.iter().map(encode_hex).collect(),
            origin: origin.into(),
        };
        if self
            .rules
            .iter()
            .any(|r| r.pattern == rule.pattern && r.replacement == rule.replacement)
        {
            return false;
        }
        self.rules.push(rule);
        true
    }
}

/// The changed part of a rewrite, its registers renamed in order of appearance (r10 kept) and
/// its offsets from each base register counted from the first.
pub fn generalize(
    original: &[Instruction],
    replacement: &[Option<Instruction>],
) -> Option<Compiled> {
    let mut lo = 0;
    while lo < original.len() && replacement.get(lo) == Some(&Some(original[lo])) {
        lo += 1;
    }
    let mut hi = original.len();
    while hi > lo && replacement.get(hi - 1) == Some(&Some(original[hi - 1])) {
        hi -= 1;
    }
    if lo == hi {
        return None;
    }
    let pattern = &original[lo..hi];
    let replaced: Vec<Instruction> = replacement[lo..hi].iter().flatten().copied().collect();
    let mut names: HashMap<Reg, Reg> = HashMap::new();
    let mut next: Reg = 1;
    let mut bases: HashMap<Reg, i16> = HashMap::new();
    let mut canonical = |insn: &Instruction| -> Option<Instruction> {
        map_insn(
            insn,
            &mut |r| {
                if r == FRAME_POINTER {
                    return Some(r);
                }
                Some(*names.entry(r).or_insert_with(|| {
                    let n = next;
                    next += 1;
                    n
                }))
            },
            &mut |base, off| {
                if base == FRAME_POINTER {
                    return Some(off);
                }
                let first = *bases.entry(base).or_insert(off);
                off.checked_sub(first)
            },
        )
    };
    let pattern: Vec<Instruction> = pattern.iter().map(&mut canonical).collect::<Option<_>>()?;
    let replacement: Vec<Instruction> =
        replaced.iter().map(&mut canonical).collect::<Option<_>>()?;
    // Registers: at most r1..r9 after renaming.
    if next > FRAME_POINTER {
        return None;
    }
    Some(Compiled {
        pattern,
        replacement,
    })
}

/// `insn` with each register through `reg` and each memory offset (with its base register,
/// before renaming) through `off`; `None` where either refuses.
fn map_insn(
    insn: &Instruction,
    reg: &mut dyn FnMut(Reg) -> Option<Reg>,
    off: &mut dyn FnMut(Reg, i16) -> Option<i16>,
) -> Option<Instruction> {
    let operand = |src: Operand, reg: &mut dyn FnMut(Reg) -> Option<Reg>| match src {
        Operand::Reg(r) => reg(r).map(Operand::Reg),
        imm => Some(imm),
    };
    Some(match *insn {
        Instruction::Alu { wide, op, dst, src } => {
            let dst = reg(dst)?;
            Instruction::Alu {
                wide,
                op,
                dst,
                src: operand(src, reg)?,
            }
        }
        Instruction::Endian { kind, bits, dst } => Instruction::Endian {
            kind,
            bits,
            dst: reg(dst)?,
        },
        Instruction::Load {
            size,
            signed,
            dst,
            src,
            off: o,
        } => {
            let o = off(src, o)?;
            Instruction::Load {
                size,
                signed,
                dst: reg(dst)?,
                src: reg(src)?,
                off: o,
            }
        }
        Instruction::Store {
            size,
            dst,
            off: o,
            src,
        } => {
            let o = off(dst, o)?;
            Instruction::Store {
                size,
                dst: reg(dst)?,
                off: o,
                src: operand(src, reg)?,
            }
        }
        Instruction::Atomic {
            size,
            op,
            fetch,
            dst,
            src,
            off: o,
        } => {
            let o = off(dst, o)?;
            Instruction::Atomic {
                size,
                op,
                fetch,
                dst: reg(dst)?,
                src: reg(src)?,
                off: o,
            }
        }
        _ => return None,
    })
}

/// The instance of `rule` whose pattern matches `insns` from its first instruction, if one does:
/// the replacement with the match's registers and offsets.
pub fn instantiate(rule: &Compiled, insns: &[Instruction]) -> Option<Vec<Instruction>> {
    let target = insns.get(..rule.pattern.len())?;
    // Pattern register -> target register, pattern base -> offset shift.
    let mut regs: HashMap<Reg, Reg> = HashMap::new();
    let mut shifts: HashMap<Reg, i32> = HashMap::new();
    for (p, t) in rule.pattern.iter().zip(target) {
        let mut seen: Vec<(Reg, Reg)> = Vec::new();
        let mut offs: Vec<(Reg, i16)> = Vec::new();
        // Walk the pattern instruction, recording what each field must become.
        let mut t_regs = registers(t).into_iter();
        let mut t_offs = offsets(t).into_iter();
        map_insn(
            p,
            &mut |r| {
                seen.push((r, t_regs.next()?));
                Some(r)
            },
            &mut |base, o| {
                offs.push((base, t_offs.next()?.wrapping_sub(o)));
                Some(o)
            },
        )?;
        // Same operation, widths and immediates: equal once the fields are put back.
        let mut k = 0;
        let mut j = 0;
        let back = map_insn(
            p,
            &mut |_| {
                k += 1;
                seen.get(k - 1).map(|x| x.1)
            },
            &mut |_, o| {
                j += 1;
                offs.get(j - 1).map(|x| o.wrapping_add(x.1))
            },
        )?;
        if back != *t {
            return None;
        }
        for (pr, tr) in seen {
            if (pr == FRAME_POINTER) != (tr == FRAME_POINTER) {
                return None;
            }
            match regs.get(&pr) {
                Some(&r) if r != tr => return None,
                _ => {
                    if regs.iter().any(|(&a, &b)| b == tr && a != pr) {
                        return None;
                    }
                    regs.insert(pr, tr);
                }
            }
        }
        for (base, shift) in offs {
            if base == FRAME_POINTER {
                if shift != 0 {
                    return None;
                }
                continue;
            }
            match shifts.get(&base) {
                Some(&s) if s != shift as i32 => return None,
                _ => {
                    shifts.insert(base, shift as i32);
                }
            }
        }
    }
    rule.replacement
        .iter()
        .map(|insn| {
            map_insn(insn, &mut |r| regs.get(&r).copied(), &mut |base, o| {
                if base == FRAME_POINTER {
                    return Some(o);
                }
                let s = *shifts.get(&base)?;
                i16::try_from(o as i32 + s).ok()
            })
        })
        .collect()
}

/// The registers of an instruction in the order [`map_insn`] visits them.
fn registers(insn: &Instruction) -> Vec<Reg> {
    let mut out = Vec::new();
    map_insn(
        insn,
        &mut |r| {
            out.push(r);
            Some(r)
        },
        &mut |_, o| Some(o),
    );
    out
}

/// The memory offsets of an instruction in the order [`map_insn`] visits them.
fn offsets(insn: &Instruction) -> Vec<i16> {
    let mut out = Vec::new();
    map_insn(insn, &mut |r| Some(r), &mut |_, o| {
        out.push(o);
        Some(o)
    });
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use linerate_bpf::insn::build::{ldx, stx};
    use linerate_bpf::insn::Size;

    #[test]
    fn a_generalized_rule_matches_renamed_registers_and_shifted_offsets() {
        // Two byte copies merged into one half-word copy.
        let original = [
            ldx(Size::B, 4, 3, 8),
            stx(Size::B, 3, 2, 4),
            ldx(Size::B, 4, 3, 9),
            stx(Size::B, 3, 3, 4),
        ];
        let replacement = [
            Some(ldx(Size::H, 4, 3, 8)),
            Some(stx(Size::H, 3, 2, 4)),
            None,
            None,
        ];
        let rule = generalize(&original, &replacement).expect("a rule");
        let elsewhere = [
            ldx(Size::B, 5, 1, 20),
            stx(Size::B, 1, 14, 5),
            ldx(Size::B, 5, 1, 21),
            stx(Size::B, 1, 15, 5),
        ];
        assert_eq!(
            instantiate(&rule, &elsewhere),
            Some(vec![ldx(Size::H, 5, 1, 20), stx(Size::H, 1, 14, 5)])
        );
        // A different distance between the copied bytes is not an instance.
        let other = [
            ldx(Size::B, 5, 1, 20),
            stx(Size::B, 1, 14, 5),
            ldx(Size::B, 5, 1, 22),
            stx(Size::B, 1, 15, 5),
        ];
        assert_eq!(instantiate(&rule, &other), None);
        let mut library = Library::new();
        assert!(library.learn(&original, &replacement, "test"));
        assert!(!library.learn(&original, &replacement, "test"));
        let text = serde_json::to_string(&library).expect("json");
        let back = Library::parse(&text, "test").expect("parses");
        assert_eq!(back.compile("test").expect("compiles"), vec![rule]);
    }
}
