//! Test support shared by the writer's tests (`crates/bpf/tests/it/rewrite.rs`) and its kernel test
//! (`crates/kernel/tests/it/rewritten_objects.rs`): a real rewrite of a linked program, inserting a
//! `ja +0` into its entry function with every jump and call that crosses the insertion fixed,
//! as the replacement the writer takes and as the linked program reading its output must give.

use linerate_bpf::{Program, RawInsn};

/// `BPF_JMP | BPF_JA`, offset 0: a no-op.
pub const JA0: RawInsn = RawInsn {
    code: 0x05,
    dst: 0,
    src: 0,
    off: 0,
    imm: 0,
};

/// A program with a slot inserted, as a replacement and as the expected re-read program.
pub struct Inserted {
    /// Where the `ja +0` went (a slot of the entry function).
    pub at: usize,
    /// The entry function's new slots, pinned ones as they were.
    pub insns: Vec<RawInsn>,
    pub slot_map: Vec<Option<usize>>,
    /// The whole linked program expected from reading the rewritten object.
    pub expected: Program,
}

/// Whether execution can go on from `raw` to the next slot (not `exit`, not `ja`/`gotol`).
fn falls_through(raw: RawInsn) -> bool {
    !matches!(raw.code, 0x95 | 0x05 | 0x06)
}

/// The relative target of a jump slot: which field holds it, or `None` for other slots.
fn jump_field(raw: RawInsn) -> Option<bool> {
    let class = raw.code & 0x07;
    let op = raw.code & 0xf0;
    if !matches!(class, 0x05 | 0x06) || matches!(op, 0x80 | 0x90) {
        return None;
    }
    // `gotol` (BPF_JMP32 | BPF_JA) jumps by `imm`, every other jump by `off`.
    Some(class == 0x06 && op == 0x00)
}

/// Inserts `ja +0` before the entry function's first slot (`front`), or else after the first
/// slot execution falls through from (not splitting an `ld_imm64`); `None` when there is none.
/// `pinned` are the writer's pinned slots.
pub fn insert_ja(program: &Program, pinned: &[usize], front: bool) -> Option<Inserted> {
    let len = program.functions.first()?.len;
    let insns = &program.insns;
    let mut at = front.then_some(0);
    let mut i = 0;
    while i < len && at.is_none() {
        let step = if insns[i].is_wide() { 2 } else { 1 };
        if falls_through(insns[i]) && i + step < len {
            at = Some(i + step);
            break;
        }
        i += step;
    }
    let at = at?;
    let np = |x: i64| if x >= at as i64 { x + 1 } else { x };
    // Where a call or function address lands: a function's first slot.
    let target = |x: i64| if x == 0 { 0 } else { np(x) };
    let mut all: Vec<RawInsn> = Vec::with_capacity(insns.len() + 1);
    for (p, &raw) in insns.iter().enumerate() {
        if p == at {
            all.push(JA0);
        }
        let mut raw = raw;
        let p = p as i64;
        let second_half = p > 0 && insns[p as usize - 1].is_wide();
        if !second_half {
            if let Some(by_imm) = jump_field(raw) {
                let rel = if by_imm {
                    raw.imm as i64
                } else {
                    raw.off as i64
                };
                let new = np(p + rel + 1) - np(p) - 1;
                if by_imm {
                    raw.imm = new as i32;
                } else {
                    raw.off = new as i16;
                }
            } else if (raw.code == 0x85 && raw.src == 1) || (raw.is_wide() && raw.src == 4) {
                raw.imm = (target(p + raw.imm as i64 + 1) - np(p) - 1) as i32;
            }
        }
        all.push(raw);
    }
    let mut expected = program.clone();
    expected.insns = all;
    // The entry function grows; every function's first slot (and the line record there, which
    // the kernel wants) stays its first slot.
    let starts: Vec<usize> = program.functions.iter().map(|f| f.start).collect();
    let moved = |slot: usize| {
        if starts.contains(&slot) {
            slot + usize::from(slot > 0)
        } else {
            np(slot as i64) as usize
        }
    };
    for (k, f) in expected.functions.iter_mut().enumerate() {
        if k == 0 {
            f.len += 1;
        } else {
            f.start += 1;
        }
    }
    for f in &mut expected.func_info {
        f.slot = moved(f.slot);
    }
    for l in &mut expected.line_info {
        l.slot = moved(l.slot);
    }
    let mut entry = expected.insns[..len + 1].to_vec();
    for &p in pinned {
        entry[np(p as i64) as usize] = insns[p];
    }
    Some(Inserted {
        at,
        insns: entry,
        slot_map: (0..len).map(|i| Some(np(i as i64) as usize)).collect(),
        expected,
    })
}
