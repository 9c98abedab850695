//! Writing `.BTF.ext` back with its records moved: what a rewrite of a section's instructions
//! needs ([`crate::rewrite`]). Records are addressed by instruction, so when instructions move,
//! are removed or are inserted, each record's `insn_off` follows its instruction or the record is
//! dropped.
//!
//! The section is rewritten structurally, not re-encoded: the header (whatever its length), the
//! record sizes, every record's bytes beyond `insn_off` (including fields newer than this reader
//! knows) and any bytes between or after the blocks are copied; only `insn_off` fields, record
//! counts, the blocks' offsets and lengths change. A section's records that are all dropped drop
//! its `btf_ext_info_sec` too (libbpf refuses one with no records). Nothing moved, the bytes are
//! the input's. [`MovedExt::new_offset`] tells where each old byte went, for the relocations
//! clang emits against `insn_off` fields (`.rel.BTF.ext`).

use super::{header_len, u32_at, BtfExtError, HEADER_CORE_LEN, INSN_SIZE};

/// The info blocks of `.BTF.ext`, in header order.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ExtBlock {
    FuncInfo,
    LineInfo,
    CoreRelo,
}

impl ExtBlock {
    const ALL: [ExtBlock; 3] = [ExtBlock::FuncInfo, ExtBlock::LineInfo, ExtBlock::CoreRelo];

    fn name(self) -> &'static str {
        match self {
            ExtBlock::FuncInfo => "func_info",
            ExtBlock::LineInfo => "line_info",
            ExtBlock::CoreRelo => "CO-RE relocation",
        }
    }
}

/// A `.BTF.ext` with records moved: its bytes, and where the old bytes went.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MovedExt {
    pub data: Vec<u8>,
    /// `(old start, length, new start)` of every run of bytes kept, sorted by old start.
    runs: Vec<(usize, usize, usize)>,
}

impl MovedExt {
    /// Where old byte `offset` is now; `None` for bytes of dropped records.
    pub fn new_offset(&self, offset: u64) -> Option<u64> {
        let offset = usize::try_from(offset).ok()?;
        let i = self.runs.partition_point(|&(start, _, _)| start <= offset);
        let &(start, len, new) = self.runs.get(i.checked_sub(1)?)?;
        (offset < start + len).then(|| (new + offset - start) as u64)
    }
}

/// One info block as found: its header position and the records of each section.
struct Block {
    kind: ExtBlock,
    /// Index of the block's `off` field among the header's words after magic/flags/hdr_len.
    field: usize,
    /// Start and end in `data`.
    start: usize,
    end: usize,
    record_size: usize,
    /// Per section: the `btf_ext_info_sec` position, its name offset and its records' positions.
    sections: Vec<(usize, u32, Vec<usize>)>,
}

/// Moves the records of `.BTF.ext` `data`. For each block and each section in it,
/// `place(block, section_name_off, old_insns)` gets the section's records' instruction indices
/// and returns, for each, its new index or `None` to drop it (a length other than the records'
/// drops none and moves none). The records keep their order.
pub fn move_records(
    data: &[u8],
    mut place: impl FnMut(ExtBlock, u32, &[u32]) -> Vec<Option<u32>>,
) -> Result<MovedExt, BtfExtError> {
    let truncated = |what, offset: usize| BtfExtError::Truncated {
        what,
        offset: offset as u64,
        size: data.len(),
    };
    let hdr_len = header_len(data)? as usize;
    if hdr_len > data.len() {
        return Err(truncated("header", 0));
    }
    let n_blocks = if hdr_len >= HEADER_CORE_LEN as usize {
        3
    } else {
        2
    };
    let mut blocks = Vec::new();
    for (field, kind) in ExtBlock::ALL.into_iter().enumerate().take(n_blocks) {
        let what = kind.name();
        let off = u32_at(data, 8 + 8 * field as u64, "header")? as usize;
        let len = u32_at(data, 12 + 8 * field as u64, "header")? as usize;
        if len == 0 {
            continue;
        }
        let start = hdr_len + off;
        let end = start + len;
        if end > data.len() {
            return Err(truncated(what, start));
        }
        let record_size = u32_at(data, start as u64, what)? as usize;
        if record_size < 4 {
            return Err(BtfExtError::RecordSize {
                what,
                size: record_size as u32,
                min: 4,
            });
        }
        let mut sections = Vec::new();
        let mut pos = start + 4;
        while pos < end {
            let name_off = u32_at(data, pos as u64, what)?;
            let count = u32_at(data, pos as u64 + 4, what)? as usize;
            let records_start = pos + 8;
            let records_end = count
                .checked_mul(record_size)
                .and_then(|n| n.checked_add(records_start))
                .filter(|&e| e <= end)
                .ok_or_else(|| truncated(what, pos))?;
            let records = (records_start..records_end).step_by(record_size).collect();
            sections.push((pos, name_off, records));
            pos = records_end;
        }
        blocks.push(Block {
            kind,
            field,
            start,
            end,
            record_size,
            sections,
        });
    }
    blocks.sort_by_key(|b| b.start);
    if blocks.windows(2).any(|w| w[0].end > w[1].start) {
        return Err(truncated("overlapping info blocks", 0));
    }

    let mut out = MovedExt {
        data: data[..hdr_len].to_vec(),
        runs: vec![(0, hdr_len, 0)],
    };
    let mut copied_to = hdr_len;
    for block in &blocks {
        let what = block.kind.name();
        let copy = |out: &mut MovedExt, start: usize, end: usize| {
            if end > start {
                out.runs.push((start, end - start, out.data.len()));
                out.data.extend_from_slice(&data[start..end]);
            }
        };
        copy(&mut out, copied_to, block.start);
        let new_start = out.data.len();
        copy(&mut out, block.start, block.start + 4);
        for (info, name_off, records) in &block.sections {
            let mut insns = Vec::with_capacity(records.len());
            for &r in records {
                let insn_off = u32_at(data, r as u64, what)?;
                if !insn_off.is_multiple_of(INSN_SIZE) {
                    return Err(BtfExtError::Misaligned {
                        what,
                        section: format!("name offset {name_off}"),
                        offset: insn_off,
                    });
                }
                insns.push(insn_off / INSN_SIZE);
            }
            let mut placed = place(block.kind, *name_off, &insns);
            if placed.len() != insns.len() {
                placed = insns.iter().map(|&i| Some(i)).collect();
            }
            let kept = placed.iter().flatten().count();
            if kept == 0 {
                continue;
            }
            out.runs.push((*info, 8, out.data.len()));
            out.data.extend_from_slice(&name_off.to_le_bytes());
            out.data.extend_from_slice(&(kept as u32).to_le_bytes());
            for (&r, new) in records.iter().zip(&placed) {
                let Some(new) = new else {
                    continue;
                };
                let insn_off = new.checked_mul(INSN_SIZE).ok_or(BtfExtError::Misaligned {
                    what,
                    section: format!("name offset {name_off}"),
                    offset: u32::MAX,
                })?;
                out.runs.push((r, block.record_size, out.data.len()));
                out.data.extend_from_slice(&insn_off.to_le_bytes());
                out.data
                    .extend_from_slice(&data[r + 4..r + block.record_size]);
            }
        }
        let new_len = (out.data.len() - new_start) as u32;
        let new_off = (new_start - hdr_len) as u32;
        let at = 8 + 8 * block.field;
        out.data[at..at + 4].copy_from_slice(&new_off.to_le_bytes());
        out.data[at + 4..at + 8].copy_from_slice(&new_len.to_le_bytes());
        copied_to = block.end;
    }
    let end = data.len();
    if end > copied_to {
        out.runs.push((copied_to, end - copied_to, out.data.len()));
        out.data.extend_from_slice(&data[copied_to..]);
    }
    out.runs.sort_by_key(|r| r.0);
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::btf::BTF_MAGIC;
    use crate::btf_ext::HEADER_MIN_LEN;

    /// A `.BTF.ext` with func_info and line_info of section name offset 1: func records at
    /// `funcs`, line records at `lines` (instruction indices, each record's other bytes its
    /// position in the list), no CO-RE block.
    fn ext(funcs: &[u32], lines: &[u32]) -> Vec<u8> {
        let tagged = |insns: &[u32]| -> Vec<(u32, u8)> {
            insns
                .iter()
                .enumerate()
                .map(|(i, &n)| (n, i as u8 + 1))
                .collect()
        };
        ext_tagged(&tagged(funcs), &tagged(lines))
    }

    /// [`ext`] with each record's other bytes given.
    fn ext_tagged(funcs: &[(u32, u8)], lines: &[(u32, u8)]) -> Vec<u8> {
        let mut body = Vec::new();
        let mut header = Vec::new();
        for (size, insns) in [(8u32, funcs), (16, lines)] {
            let start = body.len() as u32;
            body.extend_from_slice(&size.to_le_bytes());
            body.extend_from_slice(&1u32.to_le_bytes());
            body.extend_from_slice(&(insns.len() as u32).to_le_bytes());
            for (insn, tag) in insns {
                body.extend_from_slice(&(insn * 8).to_le_bytes());
                body.extend(std::iter::repeat_n(*tag, size as usize - 4));
            }
            header.extend_from_slice(&start.to_le_bytes());
            header.extend_from_slice(&(body.len() as u32 - start).to_le_bytes());
        }
        let mut out = BTF_MAGIC.to_le_bytes().to_vec();
        out.extend_from_slice(&[1, 0]);
        out.extend_from_slice(&HEADER_MIN_LEN.to_le_bytes());
        out.extend_from_slice(&header);
        out.extend_from_slice(&body);
        out
    }

    #[test]
    fn unmoved_records_give_the_same_bytes() {
        let data = ext(&[0, 5], &[0, 2, 5, 7]);
        let moved = move_records(&data, |_, _, insns| {
            insns.iter().map(|&i| Some(i)).collect()
        });
        let moved = moved.unwrap();
        assert_eq!(moved.data, data);
        for o in 0..data.len() as u64 {
            assert_eq!(moved.new_offset(o), Some(o));
        }
    }

    #[test]
    fn dropped_and_moved_records_shift_what_follows() {
        let data = ext(&[0, 5], &[0, 2, 5, 7]);
        let moved = move_records(&data, |block, _, insns| {
            insns
                .iter()
                .map(|&i| match (block, i) {
                    (ExtBlock::LineInfo, 2) => None,
                    (_, i) if i >= 5 => Some(i + 1),
                    (_, i) => Some(i),
                })
                .collect()
        })
        .unwrap();
        assert_eq!(
            moved.data,
            ext_tagged(&[(0, 1), (6, 2)], &[(0, 1), (6, 3), (8, 4)])
        );
        let record = |block_start: usize, i: usize, size: usize| block_start + 12 + i * size;
        let (func_start, line_start) = (HEADER_MIN_LEN as usize, HEADER_MIN_LEN as usize + 28);
        assert_eq!(
            moved.new_offset(record(line_start, 1, 16) as u64 + 4),
            None,
            "the dropped record's bytes"
        );
        assert_eq!(
            moved.new_offset(record(line_start, 2, 16) as u64),
            Some(record(line_start, 1, 16) as u64)
        );
        assert_eq!(
            moved.new_offset(record(func_start, 1, 8) as u64),
            Some(record(func_start, 1, 8) as u64)
        );
    }

    #[test]
    fn a_section_without_records_left_is_dropped_and_malformed_input_refused() {
        let data = ext(&[0], &[0]);
        let moved = move_records(&data, |_, _, insns| vec![None; insns.len()]).unwrap();
        assert_eq!(
            &moved.data[8..24],
            &[0, 0, 0, 0, 4, 0, 0, 0, 4, 0, 0, 0, 4, 0, 0, 0]
        );
        let keep = |_: ExtBlock, _: u32, insns: &[u32]| insns.iter().map(|&i| Some(i)).collect();
        for len in 0..data.len() {
            assert!(move_records(&data[..len], keep).is_err(), "prefix {len}");
        }
    }
}
