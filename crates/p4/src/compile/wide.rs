//! Wide accesses: header fields read from the packet, written back to it and table keys written
//! to the stack with the widest loads and stores that fit (1, 2, 4 or 8 bytes) plus a byte swap
//! (`be16`/`be32`/`be64`: network order is big endian, the target little endian), instead of
//! byte by byte.
//!
//! * **Extracting**: the live fields of a header are grouped greedily in wire order while a
//!   group's bytes span at most 8; each group is one access window (widened to 2, 4 or 8 bytes
//!   inside the header, whose bytes the parser's bounds check covers) or, in a header too short
//!   for that, a few contiguous loads shifted together. Each field then is a shift and a mask of
//!   the group's value. The kernel lets XDP programs load packet data at any alignment on x86
//!   (`check_pkt_ptr_alignment` is strict only with `BPF_F_STRICT_ALIGNMENT` or without efficient
//!   unaligned access).
//! * **Writing back**: the bytes of the fields to write are merged into runs (runs whose union
//!   spans at most 8 bytes merge); each run is stored in windows of up to 8 bytes, each window's
//!   value composed from the slots of every field overlapping it (so those fields must have been
//!   extracted: [`store_windows`] says which windows, [`overlapping`] which fields).
//! * **Keys**: a key value of `n` bytes is stored big endian in pieces each aligned to its own
//!   size, which the verifier demands of stack accesses.

use super::storage::HeaderSlots;
use super::{CompileError, Gen};
use linerate_bpf::insn::build::{alu64, alu64_reg, be, ldx, mov64_reg, stx};
use linerate_bpf::insn::{AluOp, Reg, Size};
use std::collections::HashSet;

/// A run of bytes one load or store reaches: header-relative `start`, `len` of 1, 2, 4 or 8.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Window {
    pub start: u32,
    pub len: u32,
}

/// The access size of `len` bytes.
fn size_of(len: u32) -> Size {
    match len {
        1 => Size::B,
        2 => Size::H,
        4 => Size::W,
        _ => Size::Dw,
    }
}

/// The first byte and one past the last byte of a field at bit `start`, `width` bits wide.
pub(crate) fn field_bytes(start: u32, width: u32) -> (u32, u32) {
    (start / 8, (start + width).div_ceil(8))
}

/// One window covering bytes `[a, b)` (at most 8) inside a header of `size` bytes, when one fits.
fn window(a: u32, b: u32, size: u32) -> Option<Window> {
    let len = [1, 2, 4, 8].into_iter().find(|l| *l >= b - a)?;
    let start = a.min(size.checked_sub(len)?);
    (start + len >= b).then_some(Window { start, len })
}

/// Contiguous windows of 8, 4, 2 and 1 bytes covering `[a, b)` exactly, largest first.
fn exact_pieces(a: u32, b: u32) -> Vec<Window> {
    let mut out = Vec::new();
    let mut at = a;
    while at < b {
        let len = [8, 4, 2, 1].into_iter().find(|l| *l <= b - at).unwrap_or(1);
        out.push(Window { start: at, len });
        at += len;
    }
    out
}

/// The windows a deparser stores to write back the fields of `header` whose slots are in
/// `changed` (all fields when `changed` is `None`).
pub(crate) fn store_windows(header: &HeaderSlots, changed: Option<&HashSet<i16>>) -> Vec<Window> {
    let mut runs: Vec<(u32, u32)> = header
        .fields
        .iter()
        .filter(|(_, slot)| slot.width > 0 && changed.is_none_or(|c| c.contains(&slot.off)))
        .map(|(start, slot)| field_bytes(*start, slot.width))
        .collect();
    runs.sort_unstable();
    let mut merged: Vec<(u32, u32)> = Vec::new();
    for (a, b) in runs {
        match merged.last_mut() {
            Some(last) if a <= last.1 || b.max(last.1) - last.0 <= 8 => last.1 = last.1.max(b),
            _ => merged.push((a, b)),
        }
    }
    let mut out = Vec::new();
    for (mut a, b) in merged {
        while b - a > 8 {
            out.push(Window { start: a, len: 8 });
            a += 8;
        }
        match window(a, b, header.bytes) {
            Some(w) => out.push(w),
            None => out.extend(exact_pieces(a, b)),
        }
    }
    out
}

/// The slots of the fields of `header` with a bit inside one of `windows`.
pub(crate) fn overlapping(header: &HeaderSlots, windows: &[Window]) -> Vec<i16> {
    header
        .fields
        .iter()
        .filter(|(start, slot)| {
            let (a, b) = field_bytes(*start, slot.width);
            slot.width > 0 && windows.iter().any(|w| a < w.start + w.len && w.start < b)
        })
        .map(|(_, slot)| slot.off)
        .collect()
}

fn offset(value: i64) -> Result<i16, CompileError> {
    i16::try_from(value).map_err(|_| CompileError::Program("a packet offset beyond 32 KiB".into()))
}

impl Gen<'_> {
    /// Extracts the fields of `header` whose slots `keep` accepts from the packet at byte `at`
    /// (after the bounds check), with `r1` and `r2`.
    pub(super) fn extract_fields(
        &mut self,
        at: u32,
        header: &HeaderSlots,
        keep: impl Fn(i16) -> bool,
    ) -> Result<(), CompileError> {
        let fields: Vec<(u32, super::storage::Slot)> = header
            .fields
            .iter()
            .filter(|(_, slot)| slot.width > 0 && keep(slot.off))
            .copied()
            .collect();
        let mut groups: Vec<Vec<(u32, super::storage::Slot)>> = Vec::new();
        for field in fields {
            let (a, b) = field_bytes(field.0, field.1.width);
            if b - a > 8 {
                // The caller refuses such a header at its extract.
                return Err(CompileError::Program(
                    "a 64-bit field not on a byte boundary".into(),
                ));
            }
            match groups.last_mut() {
                Some(group) if b - field_bytes(group[0].0, group[0].1.width).0 <= 8 => {
                    group.push(field)
                }
                _ => groups.push(vec![field]),
            }
        }
        for group in groups {
            let (first, _) = field_bytes(group[0].0, group[0].1.width);
            let last = group
                .iter()
                .map(|(s, slot)| field_bytes(*s, slot.width).1)
                .max()
                .unwrap_or(first);
            let pieces = match window(first, last, header.bytes) {
                Some(w) => vec![w],
                None => exact_pieces(first, last),
            };
            let start = pieces.first().map_or(first, |w| w.start);
            let total: u32 = 8 * pieces.iter().map(|w| w.len).sum::<u32>();
            self.load_be(1, 2, super::packet::DATA, i64::from(at), &pieces)?;
            let count = group.len();
            for (i, (bit, slot)) in group.into_iter().enumerate() {
                let top = bit - 8 * start;
                // The field's last bit is `down` bits above the value's.
                let down = total - top - slot.width;
                let reg = if i + 1 == count { 1 } else { 2 };
                if reg != 1 {
                    self.emit(mov64_reg(reg, 1));
                }
                if top == 0 {
                    // Nothing above the field: shifting its end down leaves it alone.
                    if down > 0 {
                        self.emit(alu64(AluOp::Rsh, reg, down as i32));
                    }
                } else if slot.width < 32 {
                    if down > 0 {
                        self.emit(alu64(AluOp::Rsh, reg, down as i32));
                    }
                    self.emit(alu64(AluOp::And, reg, super::expr::mask(slot.width) as i32));
                } else {
                    // Clear the bits above the field, then bring its end down.
                    self.emit(alu64(AluOp::Lsh, reg, (64 - total + top) as i32));
                    self.emit(alu64(AluOp::Rsh, reg, (64 - slot.width) as i32));
                }
                self.emit(stx(Size::Dw, 10, slot.off, reg));
            }
        }
        Ok(())
    }

    /// `dst` = the bytes of contiguous `pieces` at `base + at`, big endian (`tmp` clobbered).
    fn load_be(
        &mut self,
        dst: Reg,
        tmp: Reg,
        base: Reg,
        at: i64,
        pieces: &[Window],
    ) -> Result<(), CompileError> {
        for (i, w) in pieces.iter().enumerate() {
            let reg = if i == 0 { dst } else { tmp };
            self.emit(ldx(
                size_of(w.len),
                reg,
                base,
                offset(at + i64::from(w.start))?,
            ));
            if w.len > 1 {
                self.emit(be(reg, (8 * w.len) as u8));
            }
            if i > 0 {
                self.emit(alu64(AluOp::Lsh, dst, (8 * w.len) as i32));
                self.emit(alu64_reg(AluOp::Or, dst, tmp));
            }
        }
        Ok(())
    }

    /// Writes `windows` of `header` at `base + at` from the fields' slots (`r1`, `r2`).
    pub(super) fn store_fields(
        &mut self,
        base: Reg,
        at: u32,
        header: &HeaderSlots,
        windows: &[Window],
    ) -> Result<(), CompileError> {
        for w in windows {
            let (lo, hi) = (8 * w.start, 8 * (w.start + w.len));
            let mut first = true;
            for (s, slot) in &header.fields {
                let (s, width) = (*s, slot.width);
                if width == 0 || s >= hi || s + width <= lo {
                    continue;
                }
                let reg = if first { 1 } else { 2 };
                self.emit(ldx(Size::Dw, reg, 10, slot.off));
                // Bits above the window fall off the top (the shift, `be` or a narrow store).
                let end = s + width;
                if end < hi {
                    self.emit(alu64(AluOp::Lsh, reg, (hi - end) as i32));
                } else if end > hi {
                    self.emit(alu64(AluOp::Rsh, reg, (end - hi) as i32));
                }
                if !first {
                    self.emit(alu64_reg(AluOp::Or, 1, 2));
                }
                first = false;
            }
            if first {
                continue;
            }
            if w.len > 1 {
                self.emit(be(1, (8 * w.len) as u8));
            }
            self.emit(stx(
                size_of(w.len),
                base,
                offset(i64::from(at) + i64::from(w.start))?,
                1,
            ));
        }
        Ok(())
    }

    /// Stores the low `bytes` bytes of `r1` big endian at `r10 + at`, each piece aligned to its
    /// size (`r1`, `r2` clobbered).
    pub(super) fn store_key(&mut self, at: i32, bytes: u32) -> Result<(), CompileError> {
        let mut done = 0u32;
        while done < bytes {
            let here = at + i32::try_from(done).unwrap_or(0);
            let len = [8u32, 4, 2, 1]
                .into_iter()
                .find(|l| *l <= bytes - done && here.rem_euclid(*l as i32) == 0)
                .unwrap_or(1);
            let below = 8 * (bytes - done - len);
            let reg = if below == 0 { 1 } else { 2 };
            if below > 0 {
                self.emit(mov64_reg(2, 1));
                self.emit(alu64(AluOp::Rsh, 2, below as i32));
            }
            if len > 1 {
                self.emit(be(reg, (8 * len) as u8));
            }
            let off = i16::try_from(here)
                .map_err(|_| CompileError::Program("a key beyond the stack".into()))?;
            self.emit(stx(size_of(len), 10, off, reg));
            done += len;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compile::storage::Slot;

    fn header(bytes: u32, fields: &[(u32, u32)]) -> HeaderSlots {
        HeaderSlots {
            path: "hdr.h".into(),
            valid: -8,
            bytes,
            fields: fields
                .iter()
                .enumerate()
                .map(|(i, (s, w))| {
                    (
                        *s,
                        Slot {
                            off: -16 - 8 * i as i16,
                            width: *w,
                        },
                    )
                })
                .collect(),
        }
    }

    #[test]
    fn windows_widen_inside_the_header_or_split() {
        assert_eq!(window(0, 6, 14), Some(Window { start: 0, len: 8 }));
        assert_eq!(window(8, 14, 14), Some(Window { start: 6, len: 8 }));
        assert_eq!(window(0, 3, 3), None);
        assert_eq!(
            exact_pieces(0, 7),
            [
                Window { start: 0, len: 4 },
                Window { start: 4, len: 2 },
                Window { start: 6, len: 1 }
            ]
        );
    }

    #[test]
    fn only_changed_fields_and_their_neighbours_are_written() {
        // Ethernet: dst, src, type; only src changed → one 8-byte window from byte 6.
        let eth = header(14, &[(0, 48), (48, 48), (96, 16)]);
        let changed: HashSet<i16> = [-24].into_iter().collect();
        let windows = store_windows(&eth, Some(&changed));
        assert_eq!(windows, [Window { start: 6, len: 8 }]);
        assert_eq!(overlapping(&eth, &windows), [-24, -32]);
        // Everything: 8 bytes, then the last 6 widened backwards.
        assert_eq!(
            store_windows(&eth, None),
            [Window { start: 0, len: 8 }, Window { start: 6, len: 8 }]
        );
        // IPv4's TTL (byte 8) and checksum (bytes 10-11) merge into one 4-byte window.
        let ttl_sum = header(20, &[(64, 8), (72, 8), (80, 16)]);
        let changed: HashSet<i16> = [-16, -32].into_iter().collect();
        assert_eq!(
            store_windows(&ttl_sum, Some(&changed)),
            [Window { start: 8, len: 4 }]
        );
    }
}
