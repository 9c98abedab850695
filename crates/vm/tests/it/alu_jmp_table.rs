//! Known results of every ALU and JMP operation in 64 and 32 bits, with register and immediate
//! operands, on edge values, run through the interpreter without the kernel.
//!
//! The expected values are literals in `fixtures/alu_jmp_table.txt` (see its header for where they
//! come from); nothing here computes them. Each row becomes a small program
//! `r9 = ctx->data; r0 = dst; r1 = src; <op>; *(u64 *)(r9 + 0) = r0; r0 = XDP_PASS; exit`, so all
//! 64 bits of the result are read back from the packet, including what a 32-bit operation must
//! clear.

use linerate_bpf::insn::build::*;
use linerate_bpf::insn::{AluOp, Cond, Endian, Instruction, Operand, Size};
use linerate_bpf::{Object, Program};
use linerate_vm::{Vm, VmOptions};

const TABLE: &str = include_str!("../fixtures/alu_jmp_table.txt");

/// What one row of the table runs.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Op {
    Alu(AluOp),
    Endian(Endian, u8),
    Jump(Cond),
}

fn alu_op(name: &str) -> Option<Op> {
    let op = match name {
        "add" => AluOp::Add,
        "sub" => AluOp::Sub,
        "mul" => AluOp::Mul,
        "div" => AluOp::Div,
        "sdiv" => AluOp::SDiv,
        "mod" => AluOp::Mod,
        "smod" => AluOp::SMod,
        "or" => AluOp::Or,
        "and" => AluOp::And,
        "xor" => AluOp::Xor,
        "lsh" => AluOp::Lsh,
        "rsh" => AluOp::Rsh,
        "arsh" => AluOp::Arsh,
        "neg" => AluOp::Neg,
        "mov" => AluOp::Mov,
        "movsx8" => AluOp::MovSx(8),
        "movsx16" => AluOp::MovSx(16),
        "movsx32" => AluOp::MovSx(32),
        _ => {
            let (kind, bits) = if let Some(b) = name.strip_prefix("le") {
                (Endian::ToLe, b)
            } else if let Some(b) = name.strip_prefix("be") {
                (Endian::ToBe, b)
            } else {
                (Endian::Swap, name.strip_prefix("swap")?)
            };
            return Some(Op::Endian(kind, bits.parse().ok()?));
        }
    };
    Some(Op::Alu(op))
}

fn cond(name: &str) -> Option<Op> {
    let c = match name {
        "jeq" => Cond::Eq,
        "jne" => Cond::Ne,
        "jset" => Cond::Set,
        "jgt" => Cond::Gt,
        "jge" => Cond::Ge,
        "jlt" => Cond::Lt,
        "jle" => Cond::Le,
        "jsgt" => Cond::Sgt,
        "jsge" => Cond::Sge,
        "jslt" => Cond::Slt,
        "jsle" => Cond::Sle,
        _ => return None,
    };
    Some(Op::Jump(c))
}

/// One row: `op w a b expected`, with its line in the table.
#[derive(Clone, Copy, Debug)]
struct Row {
    line: usize,
    op: Op,
    wide: bool,
    a: u64,
    b: u64,
    expected: u64,
}

fn hex(field: &str, line: usize) -> u64 {
    let digits = field
        .strip_prefix("0x")
        .unwrap_or_else(|| panic!("table line {line}: `{field}` is not 0x-hex"));
    u64::from_str_radix(digits, 16).unwrap_or_else(|e| panic!("table line {line}: {e}"))
}

fn rows() -> Vec<Row> {
    let mut section = "";
    let mut rows = Vec::new();
    for (i, text) in TABLE.lines().enumerate() {
        let line = i + 1;
        let text = text.trim();
        if text.is_empty() || text.starts_with('#') {
            continue;
        }
        if text.starts_with('[') {
            section = text;
            continue;
        }
        let fields: Vec<&str> = text.split_whitespace().collect();
        assert_eq!(fields.len(), 5, "table line {line}: {text}");
        let op = match section {
            "[alu]" => alu_op(fields[0]),
            "[jmp]" => cond(fields[0]),
            _ => panic!("table line {line}: row outside [alu] or [jmp]"),
        }
        .unwrap_or_else(|| panic!("table line {line}: unknown operation `{}`", fields[0]));
        let wide = match fields[1] {
            "64" => true,
            "32" => false,
            w => panic!("table line {line}: width `{w}`"),
        };
        let expected = match section {
            "[jmp]" => fields[4]
                .parse()
                .unwrap_or_else(|e| panic!("table line {line}: {e}")),
            _ => hex(fields[4], line),
        };
        rows.push(Row {
            line,
            op,
            wide,
            a: hex(fields[2], line),
            b: hex(fields[3], line),
            expected,
        });
    }
    rows
}

/// The immediate that stands for `b` in the row's operation, if the kernel accepts one: a 64-bit
/// operation sign-extends its 32-bit immediate, a 32-bit one uses the low 32 bits of either. Shift
/// immediates must be below the width (the verifier refuses others); `movsx` and byte-order
/// operations have no immediate form, and `neg` none at all.
fn immediate(row: &Row) -> Option<i32> {
    let fits = if row.wide {
        row.b as i64 == (row.b as i32) as i64
    } else {
        true
    };
    match row.op {
        Op::Alu(AluOp::Neg | AluOp::MovSx(_)) | Op::Endian(..) => None,
        Op::Alu(AluOp::Lsh | AluOp::Rsh | AluOp::Arsh)
            if row.b >= if row.wide { 64 } else { 32 } =>
        {
            None
        }
        _ => fits.then_some(row.b as u32 as i32),
    }
}

/// The program of a row with `src` as its second operand.
fn program(row: &Row, src: Operand) -> Object {
    let mut insns = vec![ldx(Size::W, 9, 1, 0), ld64(0, row.a), ld64(1, row.b)];
    match row.op {
        Op::Alu(op) => insns.push(Instruction::Alu {
            wide: row.wide,
            op,
            dst: 0,
            src: if op == AluOp::Neg {
                Operand::Imm(0)
            } else {
                src
            },
        }),
        Op::Endian(kind, bits) => insns.push(Instruction::Endian { kind, bits, dst: 0 }),
        Op::Jump(cond) => {
            // r0 = 1; if r0' cond src goto +1; r0 = 0 — with the compared value kept in r2.
            insns.extend([
                mov64_reg(2, 0),
                mov64(0, 1),
                Instruction::Jump {
                    wide: row.wide,
                    cond,
                    dst: 2,
                    src,
                    off: 1,
                },
                mov64(0, 0),
            ]);
        }
    }
    insns.extend([stx(Size::Dw, 9, 0, 0), mov64(0, 2), Instruction::Exit]);
    let program = Program::from_instructions("row", "xdp", &insns);
    Object::with_programs("table", vec![program], Vec::new())
}

fn run(object: &Object) -> Result<u64, String> {
    let mut vm = Vm::new(object, VmOptions::default()).map_err(|e| e.to_string())?;
    let out = vm.run(0, &[0u8; 64], &[]).map_err(|e| e.to_string())?;
    if out.return_value != 2 {
        return Err(format!("returned {} instead of XDP_PASS", out.return_value));
    }
    let bytes: [u8; 8] = out.packet[..8].try_into().map_err(|_| "short packet")?;
    Ok(u64::from_le_bytes(bytes))
}

#[test]
fn every_alu_and_jmp_row_gives_its_known_result() {
    let rows = rows();
    let mut failures = Vec::new();
    let (mut reg_runs, mut imm_runs) = (0, 0);
    for row in &rows {
        let mut forms = vec![("reg", Operand::Reg(1))];
        if let Some(imm) = immediate(row) {
            forms.push(("imm", Operand::Imm(imm)));
        }
        for (form, src) in forms {
            if form == "reg" {
                reg_runs += 1;
            } else {
                imm_runs += 1;
            }
            match run(&program(row, src)) {
                Ok(got) if got == row.expected => {}
                Ok(got) => failures.push(format!(
                    "table line {}: {:?} {} {form} {:#x}, {:#x}: got {got:#x}, expected {:#x}",
                    row.line,
                    row.op,
                    if row.wide { 64 } else { 32 },
                    row.a,
                    row.b,
                    row.expected
                )),
                Err(e) => failures.push(format!("table line {}: {e}", row.line)),
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} runs differ from the table:\n{}",
        failures.len(),
        reg_runs + imm_runs,
        failures.join("\n")
    );
    println!("{reg_runs} register-operand and {imm_runs} immediate-operand runs agree");
}

/// The table covers every operation the instruction set has, in every width it has.
#[test]
fn the_table_covers_every_operation_and_width() {
    let rows = rows();
    let has = |op: Op, wide: bool| rows.iter().any(|r| r.op == op && r.wide == wide);
    let imm = |op: Op, wide: bool| {
        rows.iter()
            .any(|r| r.op == op && r.wide == wide && immediate(r).is_some())
    };
    for op in AluOp::ALL {
        for wide in [true, false] {
            if op == AluOp::MovSx(32) && !wide {
                continue; // no 32-bit form
            }
            assert!(has(Op::Alu(op), wide), "{op:?} wide={wide}");
            if !matches!(op, AluOp::Neg | AluOp::MovSx(_)) {
                assert!(imm(Op::Alu(op), wide), "{op:?} wide={wide} immediate");
            }
        }
    }
    for kind in [Endian::ToLe, Endian::ToBe, Endian::Swap] {
        for bits in [16, 32, 64] {
            assert!(
                rows.iter().any(|r| r.op == Op::Endian(kind, bits)),
                "{kind:?} {bits}"
            );
        }
    }
    for c in Cond::ALL {
        for wide in [true, false] {
            let outcomes: Vec<u64> = rows
                .iter()
                .filter(|r| r.op == Op::Jump(c) && r.wide == wide)
                .map(|r| r.expected)
                .collect();
            assert!(
                outcomes.contains(&0) && outcomes.contains(&1),
                "{c:?} wide={wide}: both outcomes"
            );
            assert!(imm(Op::Jump(c), wide), "{c:?} wide={wide} immediate");
        }
    }
    // The edge cases named in the issue.
    let row = |name: &str, wide: bool, a: u64, b: u64| {
        let op = alu_op(name).expect("an ALU op");
        rows.iter()
            .any(|r| r.op == op && r.wide == wide && r.a == a && r.b == b)
    };
    assert!(row("add", false, 0xffff_ffff, 1), "32-bit add carry");
    assert!(row("div", true, 1, 0) && row("div", false, 1, 0));
    assert!(row("mod", true, 1, 0) && row("mod", false, u64::MAX, 0));
    assert!(row("sdiv", true, 1 << 63, u64::MAX) && row("smod", true, 1 << 63, u64::MAX));
    assert!(row("sdiv", false, 1 << 31, u64::MAX) && row("smod", false, 1 << 31, u64::MAX));
    for (wide, amounts) in [(true, [63, 64]), (false, [31, 32])] {
        for amount in amounts {
            for name in ["lsh", "rsh", "arsh"] {
                assert!(row(name, wide, 1, amount), "{name} by {amount}");
            }
        }
    }
}
