//! Data dependences between the instructions of a [`Lowered`] program (paper 003 §3.3–§3.4):
//! Bernstein's conditions on registers and memory, turned into the least row distance the
//! schedule must keep between two instructions.
//!
//! Memory is disambiguated by region and offset: each memory instruction's address is located by
//! `linerate-analysis` at its source slot (the region it points into and the interval of byte
//! offsets it touches). Two accesses may conflict unless their regions differ or their byte ranges
//! are disjoint; an access the analysis could not place conflicts with every other.
//!
//! Distances follow the row semantics of [`crate::schedule`]: a register result is read in the
//! next row only by the same lane, by any lane two rows later; stores commit like register
//! results but are never forwarded (a load two rows later sees them); a helper acts on memory in
//! its own row. A packet access may fault, and a fault drops the packet at once (the hardware
//! assumption of [`crate::passes`]): it keeps its order with every instruction that has an effect
//! outside the program (a helper call, a store outside the stack), so that the compiled program
//! never loses or gains an effect on a packet it drops.

use linerate_analysis::Region;
use linerate_bpf::insn::regs::RegSet;

use crate::program::Lowered;
use crate::source::SourceFacts;

/// Where a memory instruction's bytes are, as far as the analysis knows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Place {
    /// The region; `None` where unknown.
    pub region: Option<Region>,
    /// Byte offsets touched, `[lo, hi)`, relative to the region's origin; `None` where unknown.
    pub bytes: Option<(i128, i128)>,
}

/// What kind of instruction it is, for scheduling.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// Registers only: it can neither fault nor touch memory.
    Pure,
    /// Reads memory.
    Load(Place),
    /// Writes memory (a store or an atomic).
    Store(Place),
    /// A helper call: reads and writes memory anywhere, and acts outside the program.
    Call,
    /// A jump or an exit.
    Control,
}

/// What the scheduler needs of one instruction.
#[derive(Clone, Copy, Debug)]
pub struct Facts {
    pub reads: RegSet,
    pub writes: RegSet,
    pub kind: Kind,
    /// Packet bytes every run that reaches the instruction has (0 where unknown).
    pub packet_floor: i128,
}

impl Facts {
    /// Whether the instruction may fault (an access to the packet, or to memory the analysis
    /// could not place).
    pub fn may_fault(&self) -> bool {
        match self.kind {
            Kind::Load(p) | Kind::Store(p) => !matches!(
                p.region,
                Some(Region::Stack { .. } | Region::MapValue { .. } | Region::Ctx)
            ),
            _ => false,
        }
    }

    /// Whether it acts outside the program: what a dropped packet must not see done, or undone.
    /// Stores to the stack and to the packet are not: a dropped packet's are never seen.
    pub fn has_effect(&self) -> bool {
        match self.kind {
            Kind::Call => true,
            Kind::Store(p) => !matches!(
                p.region,
                Some(Region::Stack { .. } | Region::Packet | Region::PacketMeta)
            ),
            _ => false,
        }
    }

    /// Whether it may execute where the source would not, beside or above `branch`, which it
    /// follows in the source (its result must also be dead where the branch goes; the scheduler
    /// checks that): it only computes registers, or it loads from the stack or the context, or
    /// from packet bytes every run reaching the branch has. Such a load cannot fault there.
    ///
    /// The packet bytes known at the branch may come from a bounds check the compiler removed;
    /// on a shorter packet the program then reaches an access beyond the packet before any
    /// effect (what the removal proved), so the hoisted load only drops it earlier.
    pub fn speculable_past(&self, branch: &Facts) -> bool {
        match self.kind {
            Kind::Pure => true,
            Kind::Load(Place {
                region: Some(Region::Stack { .. } | Region::Ctx),
                ..
            }) => true,
            Kind::Load(Place {
                region: Some(Region::Packet),
                bytes: Some((lo, hi)),
            }) => lo >= 0 && hi <= branch.packet_floor,
            _ => false,
        }
    }
}

/// The least distance in rows from an earlier instruction to a later one of the same path.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Distance {
    /// Rows the later instruction must come after the earlier one (0: the same row is fine).
    pub rows: usize,
    /// At exactly one row, the later must also be in the earlier's lane (it reads a forwarded
    /// register); otherwise it must wait one more row.
    pub forwarded: bool,
}

/// The facts of every instruction of `program`, whose source program `source` describes.
pub fn facts(source: &SourceFacts, program: &Lowered) -> Vec<Facts> {
    program
        .insns
        .iter()
        .map(|l| {
            let kind = if l.insn.is_call() {
                Kind::Call
            } else if l.insn.is_control() {
                Kind::Control
            } else {
                match l.insn.memory() {
                    Some(m) if m.writes => Kind::Store(source.place(&l.insn, &l.from)),
                    Some(_) => Kind::Load(source.place(&l.insn, &l.from)),
                    None => Kind::Pure,
                }
            };
            Facts {
                reads: l.insn.reads(),
                writes: l.insn.writes(),
                kind,
                packet_floor: source.packet_floor(&l.from),
            }
        })
        .collect()
}

/// Whether two places may share a byte.
pub fn may_overlap(a: &Place, b: &Place) -> bool {
    let (Some(ra), Some(rb)) = (a.region, b.region) else {
        return true;
    };
    if !same_region(ra, rb) {
        return false;
    }
    match (a.bytes, b.bytes) {
        (Some((alo, ahi)), Some((blo, bhi))) => alo < bhi && blo < ahi,
        _ => true,
    }
}

/// Whether two regions may be the same memory.
fn same_region(a: Region, b: Region) -> bool {
    use Region::*;
    match (a, b) {
        (Stack { depth: Some(x) }, Stack { depth: Some(y) }) => x == y,
        (Stack { .. }, Stack { .. }) => true,
        (MapValue { map: Some(x) }, MapValue { map: Some(y) }) => x == y,
        (MapValue { .. }, MapValue { .. }) => true,
        (Packet, Packet) | (PacketMeta, PacketMeta) | (Ctx, Ctx) | (PacketEnd, PacketEnd) => true,
        // The metadata area sits right before the packet: offsets of one do not locate bytes
        // of the other.
        (Packet, PacketMeta) | (PacketMeta, Packet) => true,
        _ => false,
    }
}

/// The least distance from `earlier` to `later` on one path, or `None` if they are independent.
pub fn distance(earlier: &Facts, later: &Facts) -> Option<Distance> {
    let mut rows = 0usize;
    let mut forwarded = false;
    let mut need = |r: usize, fwd: bool| {
        if r > rows {
            rows = r;
            forwarded = fwd;
        } else if r == rows && r > 0 {
            // At equal distance, a lane requirement of either stands.
            forwarded |= fwd;
        }
    };
    // Registers: read-after-write, write-after-write, write-after-read.
    if earlier.writes & later.reads != 0 {
        need(1, true);
    }
    if earlier.writes & later.writes != 0 {
        need(1, false);
    }
    let war = earlier.reads & later.writes != 0;
    // Memory.
    use Kind::*;
    match (earlier.kind, later.kind) {
        (Store(a), Load(b)) if may_overlap(&a, &b) => need(2, false),
        (Store(_), Call) => need(2, false),
        (Store(a), Store(b)) if may_overlap(&a, &b) => need(1, false),
        (Call, Load(_) | Store(_) | Call) => need(1, false),
        (Load(_), Call) => need(1, false),
        _ => {}
    }
    // A fault and an effect keep their order.
    if (earlier.may_fault() && later.has_effect()) || (earlier.has_effect() && later.may_fault()) {
        need(1, false);
    }
    if rows == 0
        && !war
        && !matches!((earlier.kind, later.kind), (Load(a), Store(b)) if may_overlap(&a, &b))
    {
        return None;
    }
    Some(Distance { rows, forwarded })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pure(reads: RegSet, writes: RegSet) -> Facts {
        Facts {
            reads,
            writes,
            kind: Kind::Pure,
            packet_floor: 0,
        }
    }

    fn stack(lo: i128, hi: i128) -> Place {
        Place {
            region: Some(Region::Stack { depth: Some(0) }),
            bytes: Some((lo, hi)),
        }
    }

    #[test]
    fn register_dependences() {
        // r2 = ...; r3 = r2: the next row in the same lane, or two rows later.
        let d = distance(&pure(0, 1 << 2), &pure(1 << 2, 1 << 3)).unwrap();
        assert_eq!(
            d,
            Distance {
                rows: 1,
                forwarded: true
            }
        );
        // r3 = r2; r2 = ...: the same row is fine (operands are read at row start).
        let d = distance(&pure(1 << 2, 1 << 3), &pure(0, 1 << 2)).unwrap();
        assert_eq!(d.rows, 0);
        assert!(distance(&pure(1 << 2, 1 << 3), &pure(1 << 4, 1 << 5)).is_none());
        // Both write r3.
        let d = distance(&pure(0, 1 << 3), &pure(0, 1 << 3)).unwrap();
        assert_eq!(
            d,
            Distance {
                rows: 1,
                forwarded: false
            }
        );
        // Reads and overwrites r3: the next row, in the same lane.
        let d = distance(&pure(0, 1 << 3), &pure(1 << 3, 1 << 3)).unwrap();
        assert_eq!(
            d,
            Distance {
                rows: 1,
                forwarded: true
            }
        );
    }

    #[test]
    fn memory_disambiguated_by_offset() {
        let store = |p| Facts {
            reads: 0,
            writes: 0,
            kind: Kind::Store(p),
            packet_floor: 0,
        };
        let load = |p| Facts {
            reads: 0,
            writes: 0,
            kind: Kind::Load(p),
            packet_floor: 0,
        };
        assert!(distance(&store(stack(-8, -4)), &load(stack(-4, 0))).is_none());
        assert_eq!(
            distance(&store(stack(-8, -4)), &load(stack(-6, -5))).map(|d| d.rows),
            Some(2)
        );
        let packet = Place {
            region: Some(Region::Packet),
            bytes: Some((0, 6)),
        };
        assert!(distance(&store(stack(-8, 0)), &load(packet)).is_none());
    }

    #[test]
    fn faults_keep_their_order_with_effects() {
        let packet_load = Facts {
            reads: 0,
            writes: 0,
            kind: Kind::Load(Place {
                region: Some(Region::Packet),
                bytes: Some((12, 14)),
            }),
            packet_floor: 0,
        };
        let map_store = Facts {
            reads: 0,
            writes: 0,
            kind: Kind::Store(Place {
                region: Some(Region::MapValue { map: Some(0) }),
                bytes: Some((0, 8)),
            }),
            packet_floor: 0,
        };
        let branch = |floor| Facts {
            reads: 0,
            writes: 0,
            kind: Kind::Control,
            packet_floor: floor,
        };
        assert!(!packet_load.speculable_past(&branch(13)));
        assert!(packet_load.speculable_past(&branch(14)));
        assert!(!map_store.speculable_past(&branch(100)));
        assert_eq!(distance(&map_store, &packet_load).map(|d| d.rows), Some(1));
        assert_eq!(distance(&packet_load, &map_store).map(|d| d.rows), Some(1));
    }
}
