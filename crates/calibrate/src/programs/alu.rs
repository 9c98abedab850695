//! ALU operations, byte swaps and 64-bit immediates: latency chains (throughput for moves of
//! immediates and `ld_imm64`).

use super::*;

const CHAIN_START: u64 = 0x7fff_ffff_ffff_fff1;
/// Keeps a 32-bit dividend large (and positive for signed division).
const MASK32: i32 = 0x7fff_fff1;

fn alu_setup(a: &mut Asm, _fail: Label) {
    a.extend([
        ld64(R1, CHAIN_START),
        mov64(R2, 3),
        ld64(R3, CHAIN_START),
        mov64(R4, MASK32),
        mov64(R5, 0),
    ]);
}

pub(super) fn alu_group() -> Group {
    let mut g = Group::new("alu");
    g.timed("alu base", program(alu_setup, 0, |_, _, _| {}), None);
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
                let unit = |a: &mut Asm, k: u32, _: Label| match op {
                    AluOp::Mov if imm => a.push(alu(wide, op, R1, src)),
                    AluOp::Mov | AluOp::MovSx(_) => {
                        // r5 = r1; r1 = r5; ...: every move reads the previous one's result.
                        let (d, s) = if k.is_multiple_of(2) {
                            (R5, R1)
                        } else {
                            (R1, R5)
                        };
                        a.push(alu(wide, op, d, Operand::Reg(s)));
                    }
                    AluOp::Neg => a.push(alu(wide, op, R1, Operand::Imm(0))),
                    _ if divide => {
                        a.push(alu(wide, op, R1, src));
                        let mask = if wide { R3 } else { R4 };
                        a.push(alu(wide, AluOp::Or, R1, Operand::Reg(mask)));
                    }
                    _ => a.push(alu(wide, op, R1, src)),
                };
                let mut bench = Bench::new(&key, "alu base", units);
                bench.note = match op {
                    AluOp::Mov if imm => "independent moves of an immediate (throughput)".into(),
                    AluOp::Mov | AluOp::MovSx(_) => {
                        "chain of moves, each reading the previous one's result (latency)".into()
                    }
                    _ if divide => format!(
                        "latency in a chain `x {} 3; x |= 0x7fff..f1` (dividend kept near the top \
                         of the signed range, divisor 3: the most quotient bits), minus the `or`",
                        alu_symbol(op)
                    ),
                    _ => "latency in a chain of dependent operations".into(),
                };
                if divide {
                    bench = bench.minus(format!("{}.or.reg", class(wide)), 1.0);
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
            let insns = program(alu_setup, units, |a, _, _| {
                a.push(Instruction::Endian {
                    kind,
                    bits,
                    dst: R1,
                })
            });
            let mut note = "latency in a chain of dependent byte swaps".to_string();
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
