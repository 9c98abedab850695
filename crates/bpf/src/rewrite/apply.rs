//! Applying one checked replacement to an object's sections: the new section bytes, then every
//! place that addresses an instruction of that section (relocation offsets, code references
//! through symbols or pc-relative calls, symbol values and sizes, `.BTF.ext` records and the
//! relocations on them).

use std::collections::HashSet;

use super::{is_code, Located, Replacement, RewriteError, SlotMoves, CALL_OPCODE, STT_SECTION};
use crate::btf::Btf;
use crate::btf_ext::{move_records, ExtBlock};
use crate::elf_file::ElfFile;
use crate::insn::{pseudo, RawInsn};
use crate::object::{R_BPF_64_32, R_BPF_64_64};

pub(super) fn apply(
    file: &mut ElfFile,
    at: &Located,
    r: &Replacement,
    moves: &SlotMoves,
) -> Result<(), RewriteError> {
    let malformed =
        |what: String| RewriteError::Malformed(format!("program `{}`: {what}", r.program));
    let sec = at.section;

    // The section's new slots, with the old slot each came from (None for new slots).
    let mut code: Vec<RawInsn> = at.code[..at.start].to_vec();
    let mut origin: Vec<Option<usize>> = (0..at.start).map(Some).collect();
    let mut image = vec![None; r.insns.len()];
    for (i, n) in r.slot_map.iter().enumerate() {
        if let Some(n) = n {
            image[*n] = Some(i);
        }
    }
    for (j, &raw) in r.insns.iter().enumerate() {
        match image[j].filter(|i| at.pinned.binary_search(i).is_ok()) {
            Some(i) => {
                code.push(at.code[at.start + i]);
                origin.push(Some(at.start + i));
            }
            None => {
                code.push(raw);
                origin.push(None);
            }
        }
    }
    let tail = at.start + at.len;
    code.extend_from_slice(&at.code[tail..]);
    origin.extend((tail..at.code.len()).map(Some));

    let old_symbols = file.symbols();
    let mut symbols = old_symbols.clone();
    for s in &mut symbols {
        let slot = usize::try_from(s.value / 8).unwrap_or(usize::MAX);
        // Symbols past the section's end (malformed) are left as they are.
        if usize::from(s.shndx) != sec || s.info & 0xf == STT_SECTION || slot > at.code.len() {
            continue;
        }
        let is_entry = slot == at.start && s.value % 8 == 0;
        s.value = (moves.next_kept(slot) * 8) as u64 + s.value % 8;
        if is_entry && s.size == (at.len * 8) as u64 {
            s.size = (moves.new_len * 8) as u64;
        }
    }

    // Relocated code references into the section: calls and function-address loads anywhere.
    let code_sections: Vec<usize> = (1..file.sections.len())
        .filter(|&i| is_code(file, i))
        .collect();
    let mut on_slots = vec![false; code.len()];
    for &c in &code_sections {
        let Some(rel_sec) = file.rel_section_of(c) else {
            continue;
        };
        let mut rels = file.rels(rel_sec);
        let mut other = if c == sec {
            None
        } else {
            RawInsn::parse_all(&file.sections[c].data)
        };
        for rel in &mut rels {
            let old_slot = usize::try_from(rel.offset / 8).unwrap_or(usize::MAX);
            let slot = if c == sec {
                let new = moves.exact(old_slot).ok_or_else(|| {
                    malformed(format!("a relocation is on removed slot {old_slot}"))
                })?;
                rel.offset = (new * 8) as u64 + rel.offset % 8;
                if let Some(flag) = on_slots.get_mut(new) {
                    *flag = true;
                }
                new
            } else {
                old_slot
            };
            let Some(sym) = old_symbols.get(rel.symbol as usize) else {
                continue;
            };
            if usize::from(sym.shndx) != sec || rel.offset % 8 != 0 {
                continue;
            }
            let new_sym = symbols[rel.symbol as usize];
            let insns = match other.as_mut() {
                Some(insns) => insns,
                None if c == sec => &mut code,
                None => continue,
            };
            let Some(insn) = insns.get_mut(slot) else {
                continue;
            };
            // Old and new target slots; the immediate is relative to the symbol.
            let fix = |target_of: &dyn Fn(i128, i128) -> i128,
                       imm_for: &dyn Fn(i128, i128) -> i128| {
                let old_target = target_of(i128::from(sym.value), i128::from(insn.imm));
                let new_target = usize::try_from(old_target)
                    .ok()
                    .and_then(|t| moves.target(t))
                    .ok_or_else(|| {
                        malformed(format!(
                            "a reference in {} reaches slot {old_target}, which is removed",
                            file.sections[c].name
                        ))
                    })?;
                i32::try_from(imm_for(i128::from(new_sym.value), new_target as i128))
                    .map_err(|_| malformed("a moved reference does not fit 32 bits".into()))
            };
            if insn.code == CALL_OPCODE && rel.kind == R_BPF_64_32 {
                insn.imm = fix(&|v, imm| v / 8 + imm + 1, &|v, t| t - v / 8 - 1)?;
            } else if insn.is_wide() && rel.kind == R_BPF_64_64 {
                insn.imm = fix(&|v, imm| (v + imm) / 8, &|v, t| t * 8 - v)?;
            }
        }
        if c != sec {
            if let Some(insns) = other {
                if insns != RawInsn::parse_all(&file.sections[c].data).unwrap_or_default() {
                    file.sections[c].data = insns.iter().flat_map(|i| i.to_bytes()).collect();
                }
            }
        } else {
            file.set_rels(rel_sec, &rels);
        }
    }

    // pc-relative calls (no relocation) within the section that cross the change.
    for (j, o) in origin.iter().enumerate() {
        let Some(old) = *o else { continue };
        let insn = &mut code[j];
        if insn.code != CALL_OPCODE || insn.src != pseudo::CALL || on_slots[j] {
            continue;
        }
        let old_target = old as i64 + i64::from(insn.imm) + 1;
        let new_target = usize::try_from(old_target)
            .ok()
            .and_then(|t| moves.target(t))
            .ok_or_else(|| {
                malformed(format!(
                    "the call at section slot {old} reaches a removed slot"
                ))
            })?;
        insn.imm = i32::try_from(new_target as i64 - j as i64 - 1)
            .map_err(|_| malformed("a moved call does not fit 32 bits".into()))?;
    }
    file.sections[sec].data = code.iter().flat_map(|i| i.to_bytes()).collect();
    file.set_symbols(&symbols)?;
    move_ext(file, at, moves)
}

/// Moves the `.BTF.ext` records of the rewritten section and the relocations on them.
fn move_ext(file: &mut ElfFile, at: &Located, moves: &SlotMoves) -> Result<(), RewriteError> {
    let Some(ext_index) = file.section_index(".BTF.ext") else {
        return Ok(());
    };
    let btf_data = file
        .section_index(".BTF")
        .map(|i| file.sections[i].data.clone())
        .ok_or_else(|| RewriteError::Malformed(".BTF.ext without .BTF".into()))?;
    let btf = Btf::parse(&btf_data)
        .map_err(|e| RewriteError::Malformed(format!("cannot read .BTF for .BTF.ext: {e}")))?;
    let name = file.sections[at.section].name.clone();
    let applies = super::code_section_named(file, &name) == Some(at.section);
    let entry = at.start..at.start + at.len;
    let moved = move_records(&file.sections[ext_index].data, |block, name_off, insns| {
        if !applies || btf.str_at(name_off) != Ok(name.as_str()) {
            return insns.iter().map(|&i| Some(i)).collect();
        }
        let mut placed: Vec<Option<u32>> = insns
            .iter()
            .map(|&i| {
                let i = i as usize;
                let new = match block {
                    ExtBlock::FuncInfo => Some(moves.next_kept(i)),
                    ExtBlock::LineInfo | ExtBlock::CoreRelo => moves.exact(i),
                };
                new.and_then(|n| u32::try_from(n).ok())
            })
            .collect();
        if block == ExtBlock::LineInfo {
            // A removed slot's record goes to the next kept slot of the entry function unless a
            // record is already there; of several, the last (nearest) one.
            let taken: HashSet<u32> = placed.iter().flatten().copied().collect();
            let mut claimed: Vec<(usize, u32)> = Vec::new();
            for (k, &i) in insns.iter().enumerate() {
                let i = i as usize;
                if placed[k].is_some() || !entry.contains(&i) {
                    continue;
                }
                let next = moves.next_kept(i);
                let Ok(next) = u32::try_from(next) else {
                    continue;
                };
                if (next as usize) < at.start + moves.new_len && !taken.contains(&next) {
                    claimed.retain(|&(_, n)| n != next);
                    claimed.push((k, next));
                }
            }
            for (k, next) in claimed {
                placed[k] = Some(next);
            }
            // The kernel wants a record at every function's first slot: the record of the old
            // first slot stays there when slots were inserted before it or it was removed.
            let start = at.start as u32;
            let first = insns.iter().position(|&i| i == start);
            if let Some(k) = first.filter(|_| !placed.contains(&Some(start))) {
                placed[k] = Some(start);
            }
        }
        placed
    })?;
    let unchanged = moved.data == file.sections[ext_index].data;
    file.sections[ext_index].data = moved.data.clone();
    if unchanged {
        return Ok(());
    }
    if let Some(rel_sec) = file.rel_section_of(ext_index) {
        let rels: Vec<_> = file
            .rels(rel_sec)
            .into_iter()
            .filter_map(|mut rel| {
                rel.offset = moved.new_offset(rel.offset)?;
                Some(rel)
            })
            .collect();
        file.set_rels(rel_sec, &rels);
    }
    Ok(())
}
