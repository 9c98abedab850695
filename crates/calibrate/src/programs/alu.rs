//! ALU operations, byte swaps and 64-bit immediates: throughput of independent operations, except
//! division and modulo (latency chains, see [`crate`]).

use super::*;

const CHAIN_START: u64 = 0x7fff_ffff_ffff_fff1;
/// Keeps a 32-bit dividend large (and positive for signed division).
const MASK32: i32 = 0x7fff_fff1;

/// Destinations of the independent operations: six chains, more than an x86 core has ALU ports
/// (four on Zen 4, the host's core), so each chain's latency hides behind the others and a unit
/// costs what the core issues per operation.
pub(super) const INDEPENDENT: [Reg; 6] = [R1, R3, R5, R6, R7, R8];

fn alu_setup(a: &mut Asm, _fail: Label) {
    a.extend([
        ld64(R1, CHAIN_START),
        mov64(R2, 3),
        ld64(R3, CHAIN_START),
        mov64(R4, MASK32),
        mov64(R5, 0),
    ]);
    for r in [R5, R6, R7, R8] {
        a.push(ld64(r, CHAIN_START));
    }
}

pub(super) fn alu_group() -> Group {
    let mut g = Group::new("alu");
    g.timed("alu base", program(alu_setup, 0, |_, _, _| {}), None);
    let units = 4000;
    g.timed(
        format!("clock x{units}"),
        program(alu_setup, units, |a, _, _| {
            a.push(alu(true, AluOp::Add, R1, Operand::Reg(R2)))
        }),
        Some(
            Bench::new(crate::fit::CLOCK_BENCH, "alu base", units)
                .note("a chain of dependent 64-bit adds: one cycle each"),
        ),
    );
    for wide in [true, false] {
        for op in AluOp::ALL {
            let imms: &[bool] = match op {
                AluOp::Neg => &[true],
                AluOp::MovSx(32) if !wide => &[],
                AluOp::MovSx(_) => &[false],
                _ => &[true, false],
            };
            for &imm in imms {
                let key = Item::Alu { wide, op, imm }.to_string();
                let divide = matches!(op, AluOp::Div | AluOp::SDiv | AluOp::Mod | AluOp::SMod);
                let units = if divide { 500 } else { 4000 };
                let src = if imm {
                    let k = match op {
                        AluOp::Lsh | AluOp::Rsh | AluOp::Arsh => 1,
                        AluOp::Mov => 0x1234,
                        _ => 3,
                    };
                    Operand::Imm(k)
                } else {
                    Operand::Reg(R2)
                };
                let unit = |a: &mut Asm, k: u32, _: Label| {
                    let dst = INDEPENDENT[k as usize % INDEPENDENT.len()];
                    match op {
                        AluOp::Neg => a.push(alu(wide, op, dst, Operand::Imm(0))),
                        _ if divide => {
                            a.push(alu(wide, op, R1, src));
                            let mask = if wide { R3 } else { R4 };
                            a.push(alu(wide, AluOp::Or, R1, Operand::Reg(mask)));
                        }
                        _ => a.push(alu(wide, op, dst, src)),
                    }
                };
                let mut bench = Bench::new(&key, "alu base", units);
                if divide {
                    bench.note = format!(
                        "latency in a chain `x {} 3; x |= 0x7fff..f1` (dividend kept near the top \
                         of the signed range, divisor 3: the most quotient bits), minus the `or`",
                        alu_symbol(op)
                    );
                    bench = bench.minus(format!("{}.or.reg", class(wide)), 1.0);
                } else {
                    bench.note = "independent operations over six registers (throughput)".into();
                }
                g.timed(
                    format!("{key} x{units}"),
                    program(alu_setup, units, unit),
                    Some(bench),
                );
            }
        }
    }
    for kind in [Endian::ToLe, Endian::ToBe, Endian::Swap] {
        for bits in [16u8, 32, 64] {
            let key = Item::Endian { kind, bits }.to_string();
            let units = 4000;
            let insns = program(alu_setup, units, |a, k, _| {
                a.push(Instruction::Endian {
                    kind,
                    bits,
                    dst: INDEPENDENT[k as usize % INDEPENDENT.len()],
                })
            });
            let mut note = "independent byte swaps over six registers (throughput)".to_string();
            if kind == Endian::ToLe && bits == 64 {
                note.push_str(" (a no-op on little-endian x86: the JIT emits nothing)");
            }
            g.timed(
                format!("{key} x{units}"),
                insns,
                Some(Bench::new(&key, "alu base", units).note(note)),
            );
        }
    }
    let units = 1000;
    let insns = program(alu_setup, units, |a, _, _| {
        a.push(ld64(R5, 0x0123_4567_89ab_cdef))
    });
    g.timed(
        format!("ld_imm64 x{units}"),
        insns,
        Some(
            Bench::new("ld_imm64", "alu base", units)
                .note("independent 64-bit immediate loads (throughput); map and global-data addresses JIT to the same `movabs`"),
        ),
    );
    g
}

fn alu_symbol(op: AluOp) -> &'static str {
    match op {
        AluOp::Div | AluOp::SDiv => "/=",
        _ => "%=",
    }
}

fn class(wide: bool) -> &'static str {
    if wide {
        "alu64"
    } else {
        "alu32"
    }
}
