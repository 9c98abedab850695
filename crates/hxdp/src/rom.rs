//! Sephirot instruction ROM images: a [`Schedule`] as the text the core's instruction memory is
//! loaded from, and back.
//!
//! The format is the one of the public hXDP artifacts' ROMs (`SPH_roms/*`, read as facts): one
//! line per row, 16 hex digits per lane, the highest lane first (lane 3 … lane 0 for 4 lanes),
//! each lane the [`HxInsn::encode`] word and an empty lane zero, padded with all-zero rows to the
//! instruction memory's [`IMEM_ROWS`] rows, every line ending in a newline. A jump's offset counts
//! rows relative to the row after the jump's (linerate's choice, see [`crate::isa`]). A wide 64-bit
//! immediate load takes its lane and the next, whose word is the [`HxInsn::ImmHigh`].

use linerate_bpf::insn::Instruction;

use crate::isa::HxInsn;
use crate::schedule::{Row, Schedule, Slot};

/// Rows of the core's instruction memory.
pub const IMEM_ROWS: usize = 256;

/// Hex digits of one lane.
const LANE_DIGITS: usize = 16;

/// Why a schedule cannot be written as a ROM, or a text is not one.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum RomError {
    #[error("the schedule has {rows} rows, but the instruction memory holds {capacity}")]
    TooLong { rows: usize, capacity: usize },
    #[error("row {row}, lane {lane}: {reason}")]
    Slot {
        row: usize,
        lane: usize,
        reason: String,
    },
    #[error("line {line}: {reason}")]
    Line { line: usize, reason: String },
    #[error("line {line}, lane {lane}: {reason}")]
    Lane {
        line: usize,
        lane: usize,
        reason: String,
    },
}

/// `insn`, a jump in row `row`, aimed at row `target`: its offset set to `target - (row + 1)`.
/// `None` if the offset does not fit the jump's encoding, or `insn` is no jump.
pub fn aim_jump(insn: &HxInsn, row: usize, target: usize) -> Option<HxInsn> {
    let off = i64::try_from(target).ok()? - i64::try_from(row).ok()? - 1;
    match *insn {
        HxInsn::Ebpf(Instruction::Jump {
            wide,
            cond,
            dst,
            src,
            ..
        }) => Some(HxInsn::Ebpf(Instruction::Jump {
            wide,
            cond,
            dst,
            src,
            off: i16::try_from(off).ok()?,
        })),
        HxInsn::Ebpf(Instruction::Ja { long, .. }) => {
            let short = i16::try_from(off).is_ok();
            Some(HxInsn::Ebpf(Instruction::Ja {
                off: i32::try_from(off).ok()?,
                long: long || !short,
            }))
        }
        _ => None,
    }
}

/// The ROM image of `schedule`, padded to `capacity` rows (usually [`IMEM_ROWS`]).
pub fn write_rom(schedule: &Schedule, capacity: usize) -> Result<String, RomError> {
    if schedule.rows.len() > capacity {
        return Err(RomError::TooLong {
            rows: schedule.rows.len(),
            capacity,
        });
    }
    let lanes = schedule.lanes;
    let mut text = String::with_capacity(capacity * (lanes * LANE_DIGITS + 1));
    for (r, row) in schedule.rows.iter().enumerate() {
        let words = row_words(row, r, lanes)?;
        for word in words.iter().rev() {
            text.push_str(&format!("{word:016x}"));
        }
        text.push('\n');
    }
    let zero_line = "0".repeat(lanes * LANE_DIGITS);
    for _ in schedule.rows.len()..capacity {
        text.push_str(&zero_line);
        text.push('\n');
    }
    Ok(text)
}

/// The lane words of row `r`, lane 0 first.
fn row_words(row: &Row, r: usize, lanes: usize) -> Result<Vec<u64>, RomError> {
    let bad = |lane: usize, reason: String| RomError::Slot {
        row: r,
        lane,
        reason,
    };
    if row.slots.len() != lanes {
        return Err(bad(
            0,
            format!(
                "the row has {} lanes, the schedule {lanes}",
                row.slots.len()
            ),
        ));
    }
    let mut words = vec![0u64; lanes];
    // Lanes already filled by the second word of a wide load in the lane before.
    let mut taken = vec![false; lanes];
    for (lane, slot) in row.filled() {
        if taken[lane] {
            if matches!(slot.insn, HxInsn::ImmHigh(_)) {
                continue;
            }
            return Err(bad(
                lane,
                format!("{} sits where a wide load's second word goes", slot.insn),
            ));
        }
        let insn = match slot.target {
            Some(target) => aim_jump(&slot.insn, r, target)
                .ok_or_else(|| bad(lane, format!("{} cannot jump to row {target}", slot.insn)))?,
            None => slot.insn,
        };
        for (i, word) in insn.encode().into_iter().enumerate() {
            let at = lane + i;
            if at >= lanes {
                return Err(bad(lane, format!("{insn} needs lane {at}, past the last")));
            }
            words[at] = word;
            taken[at] = i > 0;
        }
    }
    Ok(words)
}

/// The schedule a ROM image holds: lanes from the line width, trailing all-zero rows dropped,
/// jumps resolved to rows, no source slots.
pub fn read_rom(text: &str) -> Result<Schedule, RomError> {
    let mut lanes = None;
    let mut rows: Vec<(usize, Vec<u64>)> = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let number = i + 1;
        let line = line.trim_end_matches('\r');
        let line_err = |reason: String| RomError::Line {
            line: number,
            reason,
        };
        if line.is_empty() || line.len() % LANE_DIGITS != 0 {
            return Err(line_err(format!(
                "{} hex digits, not a multiple of {LANE_DIGITS}",
                line.len()
            )));
        }
        let width = line.len() / LANE_DIGITS;
        match lanes {
            None => lanes = Some(width),
            Some(l) if l != width => {
                return Err(line_err(format!(
                    "{width} lanes, but the first line has {l}"
                )))
            }
            Some(_) => {}
        }
        let mut words = vec![0u64; width];
        for (k, chunk) in line.as_bytes().chunks(LANE_DIGITS).enumerate() {
            // The first group of digits is the highest lane.
            let lane = width - 1 - k;
            let digits = String::from_utf8_lossy(chunk);
            let value = chunk
                .iter()
                .all(u8::is_ascii_hexdigit)
                .then(|| u64::from_str_radix(&digits, 16).ok())
                .flatten()
                .ok_or_else(|| RomError::Lane {
                    line: number,
                    lane,
                    reason: format!("`{digits}` is not 16 hex digits"),
                })?;
            words[lane] = value;
        }
        rows.push((number, words));
    }
    let lanes = lanes.unwrap_or(0);
    while rows.last().is_some_and(|(_, w)| w.iter().all(|&x| x == 0)) {
        rows.pop();
    }
    let count = rows.len();
    let mut schedule = Schedule {
        lanes,
        rows: Vec::with_capacity(count),
    };
    for (r, (number, words)) in rows.iter().enumerate() {
        schedule.rows.push(decode_row(words, r, *number, count)?);
    }
    Ok(schedule)
}

/// Row `r` (from line `number`) of a program of `count` rows, from its lane words.
fn decode_row(words: &[u64], r: usize, number: usize, count: usize) -> Result<Row, RomError> {
    let lane_err = |lane: usize, reason: String| RomError::Lane {
        line: number,
        lane,
        reason,
    };
    let mut row = Row::empty(words.len());
    let mut lane = 0;
    while lane < words.len() {
        let word = words[lane];
        if word == 0 {
            lane += 1;
            continue;
        }
        let (insn, taken) = HxInsn::decode(word, words.get(lane + 1).copied())
            .map_err(|e| lane_err(lane, e.to_string()))?;
        let target = match insn {
            HxInsn::Ebpf(i) => match i.jump_offset() {
                Some(off) if !matches!(i, Instruction::MayGoto { .. }) => {
                    let t = linerate_bpf::insn::relative_target(r, off);
                    if t < 0 || t >= count as i64 {
                        return Err(lane_err(
                            lane,
                            format!("{insn} jumps to row {t}, outside the program's {count} rows"),
                        ));
                    }
                    Some(t as usize)
                }
                _ => None,
            },
            _ => None,
        };
        row.put(
            lane,
            Slot {
                insn,
                from: Vec::new(),
                target,
                order: None,
            },
        );
        lane += taken.max(1);
    }
    Ok(row)
}
