//! Performance of a compiled program on the hXDP core: the cycles each edge of the source
//! program costs under the schedule (the prices `linerate bound --target hxdp` searches the
//! slowest satisfiable path with), and the fit of the core's per-packet I/O cycles to the paper's
//! microbenchmarks.
//!
//! **Rows per edge.** Within a superblock, rows run in order until a branch is taken or an exit
//! reached. A source block whose branch (or exit) is kept in the schedule pays the rows from just
//! after the previous kept branch of its superblock (or the superblock's first row) to its
//! branch's row; a taken jump pays [`Timing::taken_branch_penalty`] on top; an exit without early
//! exit pays [`Timing::drain_cycles`]. The rows after a superblock's last kept branch go to the
//! block holding its last source instruction (the one falling through to the next superblock;
//! instructions code motion brought in from other blocks, [`crate::motion`], do not count).
//! Blocks whose branch the compiler removed pay nothing of their own: their instructions' rows
//! are paid by the block whose branch ends the stretch. Along every path through the schedule,
//! the blocks' payments add up to the rows the path executes.

use linerate_bpf::insn::Instruction;
use linerate_bpf::Object;
use linerate_cfg::{Cfg, EdgeKind};
use linerate_cost::{Cost, Model, PriceOverride};

use crate::compile::Compiled;
use crate::sephirot::Timing;
use crate::source::source_cfg;
use crate::HxdpError;

/// How the rows a block pays for end.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Ends {
    /// With a jump kept in the schedule.
    Jump,
    /// With an exit: the run ends in the block's own rows, even where the source goes on to an
    /// exit block (a parametrized exit made of the block's `r0 = K` and that block's `exit`).
    Exit,
}

/// The cycles of each block of the source program's CFG (by block id) under `compiled`'s
/// schedule, and how each block's rows end. A fused instruction belongs to the block of the
/// first of its source slots as the passes list them (a parametrized exit's `r0 = K`).
fn block_cycles(cfg: &Cfg, compiled: &Compiled, timing: &Timing) -> (Vec<f64>, Vec<Option<Ends>>) {
    let n = cfg.blocks().len();
    let mut cycles = vec![0.0; n];
    let mut ends = vec![None; n];
    let block_of = |slots: &[usize]| slots.first().and_then(|&s| cfg.block_of(s));
    for range in &compiled.superblocks {
        let mut paid = range.start;
        let mut last_block = None;
        for r in range.clone() {
            for (_, slot) in compiled.schedule.rows[r].filled() {
                let moved_in = slot
                    .from
                    .first()
                    .is_some_and(|s| compiled.hoisted.binary_search(s).is_ok());
                if let Some(b) = block_of(&slot.from).filter(|_| !moved_in) {
                    last_block = Some(last_block.map_or(b, |l: usize| l.max(b)));
                }
                if !slot.insn.is_control() {
                    continue;
                }
                let Some(b) = block_of(&slot.from) else {
                    continue;
                };
                cycles[b] += (r + 1 - paid) as f64;
                paid = r + 1;
                ends[b] = Some(if slot.insn.is_exit() {
                    if !timing.early_exit {
                        cycles[b] += timing.drain_cycles as f64;
                    }
                    Ends::Exit
                } else {
                    Ends::Jump
                });
            }
        }
        if paid < range.end {
            if let Some(b) = last_block {
                cycles[b] += (range.end - paid) as f64;
            }
        }
    }
    (cycles, ends)
}

/// The prices of program `program` of `object` under `compiled` (its compilation), for a model
/// with a single `cycles` component (the shipped `hxdp` model). A block ending in `exit` is paid
/// on the edges into it, except from a block whose own rows end the run (see [`Ends::Exit`]), so
/// that a path pays for the rows it executes and no others.
pub fn prices(
    object: &Object,
    program: usize,
    compiled: &Compiled,
    timing: &Timing,
    model: &Model,
) -> Result<PriceOverride, HxdpError> {
    let cfg = source_cfg(object, program)?;
    let components = model.components().len();
    let cost = |cycles: f64| {
        let mut c = Cost::zero(components);
        c.0[0] = cycles;
        c
    };
    let (cycles, ends) = block_cycles(&cfg, compiled, timing);
    let exits = |b: usize| {
        cfg.block_instructions(b)
            .last()
            .is_some_and(|(_, i)| matches!(i, Instruction::Exit))
    };
    let entered = |b: usize| cfg.predecessors(b).next().is_some();
    let edges = cfg
        .edges()
        .iter()
        .map(|e| {
            let jumps = matches!(e.kind, EdgeKind::Taken | EdgeKind::Unconditional);
            let penalty = if jumps && ends[e.from] == Some(Ends::Jump) {
                timing.taken_branch_penalty as f64
            } else {
                0.0
            };
            let into = if exits(e.to) && ends[e.from] != Some(Ends::Exit) {
                cycles[e.to]
            } else {
                0.0
            };
            cost(cycles[e.from] + penalty + into)
        })
        .collect();
    let blocks = (0..cycles.len())
        .map(|b| {
            if exits(b) && entered(b) {
                cost(0.0)
            } else {
                cost(cycles[b])
            }
        })
        .collect();
    Ok(PriceOverride { blocks, edges })
}

/// One of the paper's throughput points (§5.2.2): a program's cycles per packet on the core, the
/// packets per second the paper measured, and whether its packets leave (are emitted).
#[derive(Clone, Debug, PartialEq)]
pub struct Point {
    /// Cycles the program executes per packet, I/O excluded.
    pub exec_cycles: f64,
    /// The paper's packets per second.
    pub measured_pps: f64,
    /// Whether the packets leave the core (XDP_TX, ...) rather than being dropped.
    pub leaves: bool,
}

/// The per-packet I/O cycles that best fit `points`, `(input, emission)`: least squares in
/// cycles per packet, each point's measured cycles (`clock / pps`) less its execution cycles
/// modelled as `input + emission` for packets that leave and `input` for the others. With no
/// point whose packets leave (or none dropped), the emission is 0 and the input their mean.
pub fn fit_io_cycles(points: &[Point], clock_hz: f64) -> Option<(f64, f64)> {
    if points.is_empty() {
        return None;
    }
    let n = points.len() as f64;
    let residual = |p: &Point| clock_hz / p.measured_pps - p.exec_cycles;
    let f = |p: &Point| if p.leaves { 1.0 } else { 0.0 };
    let sf: f64 = points.iter().map(f).sum();
    let sr: f64 = points.iter().map(residual).sum();
    let sfr: f64 = points.iter().map(|p| f(p) * residual(p)).sum();
    // Normal equations of r = a + e f (f is 0 or 1, so f² = f).
    let det = n * sf - sf * sf;
    if det.abs() < 1e-12 {
        return Some((sr / n, 0.0));
    }
    let a = (sr * sf - sf * sfr) / det;
    let e = (n * sfr - sf * sr) / det;
    Some((a, e))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_fit_separates_input_from_emission() {
        let clock = 156.25e6;
        let point = |exec: f64, cycles: f64, leaves: bool| Point {
            exec_cycles: exec,
            measured_pps: clock / cycles,
            leaves,
        };
        // Drops cost exec + 2, forwarded packets exec + 3: recovered exactly.
        let points = [
            point(1.0, 3.0, false),
            point(5.0, 7.0, false),
            point(4.0, 7.0, true),
        ];
        let (a, e) = fit_io_cycles(&points, clock).unwrap();
        assert!((a - 2.0).abs() < 1e-9 && (e - 1.0).abs() < 1e-9, "{a} {e}");
        // Only drops: the mean residual, no emission.
        let (a, e) = fit_io_cycles(&points[..2], clock).unwrap();
        assert!((a - 2.0).abs() < 1e-9 && e == 0.0);
        assert_eq!(fit_io_cycles(&[], clock), None);
    }
}
