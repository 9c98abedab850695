//! Six-byte copies (§3.2 "load/store size", Fig. 7's xdp_adjust_tail): loads of contiguous
//! pieces (2+2+2, 4+2, 1×6, …) into registers, each stored to the same relative place of a
//! destination, become one `Load48` (where the first piece was loaded) and one `Store48` (where
//! the last piece was stored).
//!
//! A group is fused only when, checked instruction by instruction over the window from its first
//! load to its last store (all in one basic block):
//! - the source and destination ranges are disjoint; no other instruction writes a piece's
//!   source bytes between the first load and that piece's own load (the piece is now read at the
//!   first load), or touches a piece's destination bytes between that piece's own store and the
//!   last store (it is now written at the last store): memory told apart by region and offset,
//!   from the analysis. Two interleaved copies, as in a MAC swap, each pass this;
//! - the base registers are not redefined (others may read them), and nothing outside the group
//!   reads or writes a piece's register; a piece's register is neither read nor written between
//!   its load and its store; every piece register is dead after the last store;
//! - nothing in the window is observable if the hardware drops the packet midway: no call, and,
//!   when the window touches the packet, no store outside the stack and the packet (so moving a
//!   faulting packet access within the window changes nothing that survives the drop).

use linerate_analysis::Region;
use linerate_bpf::insn::regs::RegSet;
use linerate_bpf::insn::{Instruction, Operand, Reg, Size};

use crate::isa::HxInsn;
use crate::program::{LInsn, Lowered};

use super::{live_out, SourceFacts};

const COPY_BYTES: i64 = 6;

/// One piece of a copy: `reg = *(base + load_off)` at `load`, `*(dest + store_off) = reg` at
/// `store`.
#[derive(Clone, Copy, Debug)]
struct Piece {
    load: usize,
    store: usize,
    reg: Reg,
    base: Reg,
    load_off: i16,
    dest: Reg,
    store_off: i16,
    len: i64,
}

fn bit(r: Reg) -> RegSet {
    1 << r
}

/// The loads in `lowered` matched with the store of their register that follows in the block.
fn pieces(lowered: &Lowered, blocks: &[usize]) -> Vec<Piece> {
    let mut out = Vec::new();
    for (i, l) in lowered.insns.iter().enumerate() {
        let HxInsn::Ebpf(Instruction::Load {
            size,
            dst: reg,
            src: base,
            off,
            ..
        }) = l.insn
        else {
            continue;
        };
        if size == Size::Dw || reg == base {
            continue;
        }
        for j in i + 1..lowered.len() {
            if blocks[j] != blocks[i] {
                break;
            }
            let insn = lowered.insns[j].insn;
            if let HxInsn::Ebpf(Instruction::Store {
                size: store_size,
                dst,
                off: store_off,
                src: Operand::Reg(src),
            }) = insn
            {
                if src == reg && store_size == size && dst != reg {
                    out.push(Piece {
                        load: i,
                        store: j,
                        reg,
                        base,
                        load_off: off,
                        dest: dst,
                        store_off,
                        len: size.bytes() as i64,
                    });
                    break;
                }
            }
            if (insn.reads() | insn.writes()) & bit(reg) != 0 {
                break;
            }
        }
    }
    out
}

/// Groups of pieces copying six contiguous bytes from one base to one destination, each piece
/// landing at the same relative place.
fn copies(pieces: &[Piece]) -> Vec<Vec<Piece>> {
    let mut out = Vec::new();
    for start in pieces {
        let mut group = vec![*start];
        let delta = |p: &Piece| i64::from(p.store_off) - i64::from(p.load_off);
        let copy_end = i64::from(start.load_off) + COPY_BYTES;
        let mut end = i64::from(start.load_off) + start.len;
        while end < copy_end {
            let next = pieces.iter().find(|p| {
                p.base == start.base
                    && p.dest == start.dest
                    && delta(p) == delta(start)
                    && i64::from(p.load_off) == end
                    && !group.iter().any(|g| g.load == p.load || g.store == p.store)
            });
            let Some(next) = next else { break };
            group.push(*next);
            end += next.len;
        }
        if end == copy_end && group.len() > 1 {
            out.push(group);
        }
    }
    out
}

/// Where an access lands: its region and the byte range `[lo, hi)` it may touch.
#[derive(Clone, Copy, Debug)]
struct Place {
    region: Region,
    lo: i128,
    hi: i128,
}

fn place(l: &LInsn, facts: &SourceFacts, base: Reg, off: i64, len: i64) -> Option<Place> {
    let (region, offset) = facts.pointer(l, base)?;
    let (off, len) = (i128::from(off), i128::from(len));
    Some(Place {
        region,
        lo: offset.lo.checked_add(off)?,
        hi: offset.hi.checked_add(off)?.checked_add(len)?,
    })
}

/// Whether two places surely share no byte.
fn disjoint(a: Option<Place>, b: Option<Place>) -> bool {
    let (Some(a), Some(b)) = (a, b) else {
        return false;
    };
    let class = |r: Region| match r {
        Region::Packet => Some(0),
        Region::Stack { .. } => Some(1),
        Region::Ctx => Some(2),
        Region::MapValue { .. } => Some(3),
        _ => None,
    };
    match (class(a.region), class(b.region)) {
        (Some(x), Some(y)) if x != y => true,
        // Two map values may be one; packet and stack offsets share one origin each.
        (Some(0), Some(0)) | (Some(1), Some(1)) => a.hi <= b.lo || b.hi <= a.lo,
        _ => false,
    }
}

/// Whether the group can be fused (see the module documentation).
fn provable(lowered: &Lowered, facts: &SourceFacts, group: &[Piece]) -> bool {
    let first = group[0];
    let loads: Vec<usize> = group.iter().map(|p| p.load).collect();
    let stores: Vec<usize> = group.iter().map(|p| p.store).collect();
    let (Some(&l_first), Some(_), Some(&s_first), Some(&s_last)) = (
        loads.iter().min(),
        loads.iter().max(),
        stores.iter().min(),
        stores.iter().max(),
    ) else {
        return false;
    };
    let regs: RegSet = group.iter().fold(0, |acc, p| acc | bit(p.reg));
    let bases = bit(first.base) | bit(first.dest);
    if regs & bases != 0 {
        return false;
    }
    let (load_off, store_off) = (i64::from(first.load_off), i64::from(first.store_off));
    let source = place(
        &lowered.insns[l_first],
        facts,
        first.base,
        load_off,
        COPY_BYTES,
    );
    let dest = place(
        &lowered.insns[s_first],
        facts,
        first.dest,
        store_off,
        COPY_BYTES,
    );
    let same_base_apart = first.base == first.dest
        && (load_off + COPY_BYTES <= store_off || store_off + COPY_BYTES <= load_off);
    if !same_base_apart && !disjoint(source, dest) {
        return false;
    }
    let piece_source = |p: &Piece| {
        place(
            &lowered.insns[p.load],
            facts,
            p.base,
            i64::from(p.load_off),
            p.len,
        )
    };
    let piece_dest = |p: &Piece| {
        place(
            &lowered.insns[p.store],
            facts,
            p.dest,
            i64::from(p.store_off),
            p.len,
        )
    };
    let mut touches_packet = false;
    let mut stores_visible = false;
    for (k, l) in lowered
        .insns
        .iter()
        .enumerate()
        .take(s_last + 1)
        .skip(l_first)
    {
        let insn = l.insn;
        if insn.is_call() || insn.is_control() {
            return false;
        }
        let in_group = loads.contains(&k) || stores.contains(&k);
        // Others may read the bases, not redefine them; the pieces' registers are the group's.
        if !in_group && ((insn.reads() | insn.writes()) & regs != 0 || insn.writes() & bases != 0) {
            return false;
        }
        if in_group && insn.writes() & bases != 0 {
            return false;
        }
        if let Some(access) = insn.memory() {
            let at = place(l, facts, access.base, access.off, access.len as i64);
            match at.map(|p| p.region) {
                Some(Region::Packet) => touches_packet = true,
                Some(Region::Stack { .. }) => {}
                _ if access.writes => stores_visible = true,
                _ => {}
            }
            if !in_group {
                for p in group {
                    // The piece is now loaded at the first load: nothing between may write it.
                    if access.writes && k < p.load && !disjoint(at, piece_source(p)) {
                        return false;
                    }
                    // And stored at the last store: nothing between may touch it.
                    if k > p.store && !disjoint(at, piece_dest(p)) {
                        return false;
                    }
                }
            }
        }
    }
    if touches_packet && stores_visible {
        return false;
    }
    // A piece's register holds its loaded value from its load to its store.
    for p in group {
        for other in group {
            for (at, touches) in [(other.load, bit(other.reg)), (other.store, bit(other.reg))] {
                if at > p.load && at < p.store && touches & bit(p.reg) != 0 {
                    return false;
                }
            }
        }
    }
    let live = live_out(lowered, &[]);
    live[s_last] & regs == 0
}

fn fuse(lowered: &mut Lowered, group: &[Piece]) -> usize {
    let mut by_load = group.to_vec();
    by_load.sort_by_key(|p| p.load);
    let mut by_store = group.to_vec();
    by_store.sort_by_key(|p| p.store);
    let (first_load, last_store) = (by_load[0], by_store[by_store.len() - 1]);
    let reg = first_load.reg;
    let load_from: Vec<usize> = by_load
        .iter()
        .flat_map(|p| lowered.insns[p.load].from.clone())
        .collect();
    let store_from: Vec<usize> = by_store
        .iter()
        .flat_map(|p| lowered.insns[p.store].from.clone())
        .collect();
    let off = group.iter().map(|p| p.load_off).min().unwrap_or(0);
    let dest_off = group.iter().map(|p| p.store_off).min().unwrap_or(0);
    lowered.insns[first_load.load] = LInsn {
        insn: HxInsn::Load48 {
            dst: reg,
            src: first_load.base,
            off,
        },
        from: load_from,
        target: None,
    };
    lowered.insns[last_store.store] = LInsn {
        insn: HxInsn::Store48 {
            dst: last_store.dest,
            off: dest_off,
            src: reg,
        },
        from: store_from,
        target: None,
    };
    let mut remove = vec![false; lowered.len()];
    for p in group {
        if p.load != first_load.load {
            remove[p.load] = true;
        }
        if p.store != last_store.store {
            remove[p.store] = true;
        }
    }
    lowered.remove(&remove);
    remove.iter().filter(|&&r| r).count()
}

pub(super) fn run(lowered: &mut Lowered, facts: &SourceFacts) -> usize {
    let mut removed = 0;
    'again: loop {
        let blocks = lowered.block_ids();
        for group in copies(&pieces(lowered, &blocks)) {
            if provable(lowered, facts, &group) {
                removed += fuse(lowered, &group);
                continue 'again;
            }
        }
        return removed;
    }
}
