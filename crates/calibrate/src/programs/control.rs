//! Control flow: conditional and unconditional jumps, local calls, tail calls, and the empty
//! program (`per_packet`).

use super::*;

/// The immediate and register operand conditional jumps compare against.
const JUMP_OPERAND: u64 = 5;
/// Value in r9 that the `ja` bench's side entrance tests for (never present at run time).
const JA_MAGIC: i32 = 0x1234;

/// A value `x` such that `x <cond> 5` is `taken`.
fn jump_value(cond: Cond, taken: bool) -> u64 {
    let holds = |x: u64| match cond {
        Cond::Eq => x == JUMP_OPERAND,
        Cond::Ne => x != JUMP_OPERAND,
        Cond::Gt | Cond::Sgt => x > JUMP_OPERAND,
        Cond::Ge | Cond::Sge => x >= JUMP_OPERAND,
        Cond::Lt | Cond::Slt => x < JUMP_OPERAND,
        Cond::Le | Cond::Sle => x <= JUMP_OPERAND,
        Cond::Set => x & JUMP_OPERAND != 0,
    };
    [4u64, 5, 6, 2]
        .into_iter()
        .find(|&x| holds(x) == taken)
        .expect("a value for every outcome")
}

fn jump_packet(r1: u64) -> Vec<u8> {
    let mut p = zero_packet();
    p[0..8].copy_from_slice(&r1.to_le_bytes());
    p[8..16].copy_from_slice(&JUMP_OPERAND.to_le_bytes());
    p
}

/// `r1`, `r2` and `r9` from the packet (unknown to the verifier), `r8 = XDP_PASS` (the return
/// value), and a never-taken `if r9 == JA_MAGIC goto side`.
fn jump_setup(a: &mut Asm, fail: Label, side: Option<Label>) {
    check_packet(a, [R7, R8, R5], 24, fail);
    a.extend([
        ldx(Size::Dw, R1, R7, 0),
        ldx(Size::Dw, R2, R7, 8),
        ldx(Size::Dw, R9, R7, 16),
        mov64(R8, XDP_PASS as i32),
    ]);
    let side = side.unwrap_or(fail);
    a.jcc(true, Cond::Eq, R9, Operand::Imm(JA_MAGIC), side);
}

/// Taken jumps (and `ja`) per iteration.
const TAKEN_UNITS: u32 = 250;

/// Code a taken jump skips: six 10-byte `movabs`, so every jump target starts a new fetch block
/// whatever the JIT's random placement of the program (jumps over a few bytes run two per cycle or
/// not depending on placement).
fn jump_filler(a: &mut Asm) {
    for _ in 0..6 {
        a.push(ld64(R5, 0x1122_3344_5566_7788));
    }
}

/// Setup, units, and a check that no filler ran (`r8` still `XDP_PASS`).
fn jump_program(units: u32, unit: impl Fn(&mut Asm, u32, Label)) -> Vec<RawInsn> {
    looped(
        |a, fail| {
            jump_setup(a, fail, None);
            for k in 0..units {
                unit(a, k, fail);
            }
            a.jcc(true, Cond::Ne, R8, Operand::Imm(XDP_PASS as i32), fail);
        },
        |_, _| {},
    )
    .0
    .insns
}

pub(super) fn jump_group() -> Group {
    let mut g = Group::new("jump");
    g.timed("jump base", jump_program(0, |_, _, _| {}), None);
    for wide in [true, false] {
        for cond in Cond::ALL {
            for imm in [true, false] {
                for taken in [true, false] {
                    let key = Item::Jump {
                        wide,
                        cond,
                        imm,
                        taken,
                    }
                    .to_string();
                    let src = if imm {
                        Operand::Imm(JUMP_OPERAND as i32)
                    } else {
                        Operand::Reg(R2)
                    };
                    let units = if taken { TAKEN_UNITS } else { 1000 };
                    let insns = jump_program(units, |a, _, fail| {
                        if taken {
                            // Jumps over a filler that would clear the return value.
                            let next = a.label();
                            a.jcc(wide, cond, R1, src, next);
                            jump_filler(a);
                            a.push(mov64(R8, 0));
                            a.bind(next);
                        } else {
                            a.jcc(wide, cond, R1, src, fail);
                        }
                    });
                    let note = if taken {
                        "correctly predicted, taken over 64 bytes of code (every target in a new \
                         fetch block; throughput); operands from the packet, so the verifier \
                         keeps both outcomes"
                    } else {
                        "correctly predicted, not taken (throughput); operands from the packet, so \
                         the verifier keeps both outcomes"
                    };
                    for c in 0..JUMP_PLACEMENTS {
                        g.timed(
                            format!("{key} x{units} @{c}"),
                            insns.clone(),
                            Some(Bench::new(format!("{key}@{c}"), "jump base", units).note(note)),
                        );
                        g.programs.last_mut().expect("just pushed").packet =
                            jump_packet(jump_value(cond, taken));
                    }
                }
            }
        }
    }
    // may_goto: the budget never runs out in a bench run, so every unit falls through.
    let key = Item::MayGoto { taken: false }.to_string();
    let insns = jump_program(1000, |a, _, fail| a.may_goto(fail));
    g.timed(
        format!("{key} x1000"),
        insns,
        Some(Bench::new(&key, "jump base", 1000).note(
            "falls through: the JIT's test and update of the hidden loop counter (throughput)",
        )),
    );
    // ja: jumps over blocks that are only reachable through a side entrance the verifier must
    // keep (r9 == JA_MAGIC: the side path runs through every block), so that dead-code removal
    // leaves the jumps in place.
    let units = TAKEN_UNITS;
    let insns = looped(
        |a, fail| {
            let end = a.label();
            let blocks: Vec<Label> = (0..units).map(|_| a.label()).collect();
            jump_setup(a, fail, Some(blocks[0]));
            for k in 0..units as usize {
                let next = a.label();
                a.ja(next);
                a.bind(blocks[k]);
                jump_filler(a);
                a.ja(blocks.get(k + 1).copied().unwrap_or(end));
                a.bind(next);
            }
            a.bind(end);
            a.jcc(true, Cond::Ne, R8, Operand::Imm(XDP_PASS as i32), fail);
        },
        |_, _| {},
    )
    .0
    .insns;
    for c in 0..JUMP_PLACEMENTS {
        g.timed(
            format!("ja x{units} @{c}"),
            insns.clone(),
            Some(
                Bench::new(format!("ja@{c}"), "jump base", units)
                    .note("`goto` over 64 bytes of live code (throughput)"),
            ),
        );
    }
    g
}

// ---------------------------------------------------------------------------------------------
// Local calls and the empty program.

pub(super) fn call_group() -> Group {
    let mut g = Group::new("call");
    let mut per_packet = Bench::new("per_packet", "", 1);
    per_packet.baseline = None;
    per_packet.note = "BPF_PROG_TEST_RUN time of `r0 = XDP_PASS; exit`".into();
    g.timed_plain(
        "empty",
        &[mov64(R0, XDP_PASS as i32), exit()],
        Some(per_packet),
    );
    g.timed("call base", program(|_, _| {}, 0, |_, _, _| {}), None);
    let units = 1000;
    let (finished, sub) = looped(
        |a, _| {
            let sub = a.label();
            for _ in 0..units {
                a.call_local(sub);
            }
            sub
        },
        |a, sub| {
            a.bind(*sub);
            a.extend([mov64(R0, 0), exit()]);
        },
    );
    g.timed(
        format!("call.local x{units}"),
        finished.insns.clone(),
        Some(
            Bench::new("call.local", "call base", units)
                .minus("alu64.mov.imm", 1.0)
                .note(
                    "call of a function `r0 = 0; exit` and its return (the callee's `exit` is \
                     included here), minus the `r0 = 0`",
                ),
        ),
    );
    g.programs.last_mut().expect("just pushed").subprog = Some(finished.slot(sub));
    g
}

pub(super) fn tail_call_group() -> Group {
    let mut g = Group::new("tail_call");
    for name in ["pa.direct", "pa.indirect", "pa.empty1", "pa.empty2"] {
        g.maps.push(plain_map(name, MapType::PROG_ARRAY, 4, 4, 1));
    }
    g.slots.push((0, 0, "tail_call.direct".into()));
    g.slots.push((1, 0, "tail_call.indirect".into()));
    // Direct: constant map and key (the JIT patches a direct jump). Indirect: the key is
    // ctx->rx_queue_index (0 at run time, unknown to the verifier).
    let direct = |map: u32| {
        vec![
            ld_map(R2, map),
            mov64(R3, 0),
            call_helper(helper::TAIL_CALL),
            mov64(R0, XDP_PASS as i32),
            exit(),
        ]
    };
    let indirect = |map: u32| {
        vec![
            ldx_ctx(R3, R1, xdp_md::RX_QUEUE_INDEX),
            ld_map(R2, map),
            call_helper(helper::TAIL_CALL),
            mov64(R0, XDP_PASS as i32),
            exit(),
        ]
    };
    g.timed_plain("tail_call.direct base", &direct(2), None);
    g.timed_plain("tail_call.indirect base", &indirect(3), None);
    let b = Bench::new(
        "aux.tail_call.direct",
        "tail_call.direct base",
        MAX_TAIL_CALLS,
    )
    .minus("ld_imm64", 1.0)
    .minus("alu64.mov.imm", 1.0)
    .note(format!(
        "a program tail-calling itself through a constant slot ({MAX_TAIL_CALLS} tail calls per \
             packet) against the same program with the slot empty, minus argument setup"
    ));
    g.timed_plain("tail_call.direct", &direct(0), Some(b));
    let b = Bench::new(
        "aux.tail_call.indirect",
        "tail_call.indirect base",
        MAX_TAIL_CALLS,
    )
    .minus("ld_imm64", 1.0)
    .minus("aux.ctx.rx_queue_index", 1.0)
    .note(format!(
        "a program tail-calling itself through a slot the verifier cannot know ({MAX_TAIL_CALLS} \
             tail calls per packet) against the same program with the slot empty, minus argument \
             setup"
    ));
    g.timed_plain("tail_call.indirect", &indirect(1), Some(b));
    g
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn jump_values_decide_the_outcome() {
        for cond in Cond::ALL {
            assert_ne!(jump_value(cond, true), jump_value(cond, false));
        }
    }
}
