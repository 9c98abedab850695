//! A VLIW schedule: the program as rows of lanes, what the compiler produces, what a ROM holds
//! and what the Sephirot model executes.
//!
//! **Row semantics** (paper 003 §4.1.3, §4.2). All lanes of a row read their register operands as
//! the row starts and execute together; Bernstein's conditions between the lanes of a row (no lane
//! reads or writes what another writes) make that equal to any sequential order. Results reach the
//! register file two rows later; the row right after sees a result only in the lane that produced
//! it (per-lane result forwarding), so an instruction reading a value produced in the previous row
//! must sit in the producer's lane. Branches and exits are ordered by lane: lane 0 has the highest
//! priority, and the first taken branch or reached exit decides where control goes; with none,
//! control falls to the next row. Every non-control instruction of a row executes whichever way
//! the row's branches go.

use crate::isa::HxInsn;

/// One filled lane.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Slot {
    /// The instruction.
    pub insn: HxInsn,
    /// The source program's instruction slots it came from (several for a fused instruction,
    /// none for a second word of a wide immediate load).
    pub from: Vec<usize>,
    /// For a jump, the row it jumps to.
    pub target: Option<usize>,
    /// Its place in the program the compiler scheduled: the order the rows keep along a path
    /// (code motion can take an instruction ahead of source slots before it). `None` where
    /// unknown, as in a ROM read back.
    pub order: Option<usize>,
}

/// One VLIW instruction: a slot per lane, `None` where the lane is empty.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Row {
    pub slots: Vec<Option<Slot>>,
}

/// A whole program as rows.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Schedule {
    /// Lanes per row.
    pub lanes: usize,
    pub rows: Vec<Row>,
}

impl Row {
    /// An empty row of `lanes` lanes.
    pub fn empty(lanes: usize) -> Row {
        Row {
            slots: vec![None; lanes],
        }
    }

    /// Puts `slot` in `lane`, and the second word of an instruction taking two lanes in the lane
    /// after.
    pub fn put(&mut self, lane: usize, slot: Slot) {
        if let (Some(high), Some(next)) = (slot.insn.second_word(), self.slots.get_mut(lane + 1)) {
            *next = Some(Slot {
                insn: high,
                from: Vec::new(),
                target: None,
                order: None,
            });
        }
        if let Some(here) = self.slots.get_mut(lane) {
            *here = Some(slot);
        }
    }

    /// The filled lanes with their lane numbers.
    pub fn filled(&self) -> impl Iterator<Item = (usize, &Slot)> {
        self.slots
            .iter()
            .enumerate()
            .filter_map(|(lane, s)| s.as_ref().map(|s| (lane, s)))
    }
}

impl Schedule {
    /// Instructions in the schedule (second words of wide loads not counted).
    pub fn instructions(&self) -> usize {
        self.rows
            .iter()
            .flat_map(|r| r.filled())
            .filter(|(_, s)| !matches!(s.insn, HxInsn::ImmHigh(_)))
            .count()
    }

    /// Static IPC: instructions per row.
    pub fn static_ipc(&self) -> f64 {
        if self.rows.is_empty() {
            0.0
        } else {
            self.instructions() as f64 / self.rows.len() as f64
        }
    }
}

impl std::fmt::Display for Schedule {
    /// The schedule row by row: each filled lane with its instruction, a jump's target row, and
    /// the source instructions it came from.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let width = self.rows.len().to_string().len();
        for (r, row) in self.rows.iter().enumerate() {
            if row.filled().next().is_none() {
                writeln!(f, "{r:>width$}  (empty)")?;
                continue;
            }
            let mut first = true;
            for (lane, slot) in row.filled() {
                let head = if first {
                    format!("{r:>width$}")
                } else {
                    " ".repeat(width)
                };
                first = false;
                writeln!(f, "{head}  [{lane}] {}", slot.text())?;
            }
        }
        Ok(())
    }
}

impl Slot {
    /// The slot's instruction as text, a jump showing its target row.
    pub fn text_plain(&self) -> String {
        match (self.insn, self.target) {
            (HxInsn::Ebpf(i), Some(t)) => {
                let text = HxInsn::Ebpf(i).to_string();
                match text.find("goto") {
                    Some(at) => format!("{}goto row {t}", &text[..at]),
                    None => text,
                }
            }
            (insn, _) => insn.to_string(),
        }
    }

    /// [`Slot::text_plain`] with the source instructions it came from.
    pub fn text(&self) -> String {
        let insn = self.text_plain();
        if self.from.is_empty() {
            insn
        } else {
            let from: Vec<String> = self.from.iter().map(|s| s.to_string()).collect();
            format!("{insn:<40} ; insn {}", from.join(","))
        }
    }
}
