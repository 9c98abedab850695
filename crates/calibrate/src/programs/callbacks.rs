//! Helpers that call a callback: `bpf_loop` and `bpf_for_each_map_elem` over an array. Each
//! program passes a callback `r0 = 0; exit` (go on) and carries BTF `func_info` for it
//! ([`super::btf::callback_btf`]). Two benches per helper:
//! - `callback.<helper>`: one call of the callback, from units of [`CALLS`] calls each (the
//!   helper's own work is a `1/CALLS` share of each call's figure, which errs on the expensive
//!   side), minus the callback's `r0 = 0`. `bpf_for_each_map_elem` calls its callback through a
//!   function pointer from kernel code; the verifier turns a `bpf_loop` with constant flags and
//!   callback into a counted loop in the program itself (`inline_bpf_loop` in
//!   kernel/bpf/verifier.c).
//! - `aux.<helper>.once`: a helper call that calls the callback once, argument setup and the
//!   callback's `r0 = 0` subtracted: the helper's own work plus one call, its item's price.

use super::btf::{callback_btf, FOR_EACH_CALLBACK_FUNC, LOOP_CALLBACK_FUNC, MAIN_FUNC};
use super::*;

/// Calls per unit of the `callback.<helper>` benches: the array's size, `bpf_loop`'s count.
pub(crate) const CALLS: u32 = 64;

/// Units per timed program.
const UNITS: u32 = 8;
const ONCE_UNITS: u32 = 100;

/// Maps of the group: the array walked [`CALLS`] times, the one walked once.
const ARRAY: u32 = 0;
const ONE: u32 = 1;

/// One helper call whose callback is the function at `callback`, making `calls` calls.
fn unit(a: &mut Asm, id: u32, calls: u32, callback: Label) {
    a.push(if id == helper::LOOP {
        mov64(R1, calls as i32)
    } else {
        ld_map(R1, if calls == 1 { ONE } else { ARRAY })
    });
    a.ld_func(R2, callback);
    a.extend([mov64(R3, 0), mov64(R4, 0), call_helper(id)]);
}

/// A looped program of `units` helper calls of `calls` callback calls each, the callback after
/// the program.
fn callback_program(id: u32, units: u32, calls: u32) -> (Vec<RawInsn>, usize) {
    let (finished, callback) = looped(
        |a, _| {
            let callback = a.label();
            for _ in 0..units {
                unit(a, id, calls, callback);
            }
            callback
        },
        |a, callback| {
            a.bind(*callback);
            a.extend([mov64(R0, 0), exit()]);
        },
    );
    let slot = finished.slot(callback);
    (finished.insns, slot)
}

/// A probe: one helper call, which must return the number of calls it made.
fn probe(id: u32, calls: u32) -> (Vec<RawInsn>, usize) {
    let mut a = Asm::new();
    let fail = a.label();
    let callback = a.label();
    unit(&mut a, id, calls, callback);
    check_r0(&mut a, Expect::Eq(calls as i32), fail);
    a.extend([mov64(R0, XDP_PASS as i32), exit()]);
    a.tail_block(fail, [add64(R0, PROBE_FAIL as i32), exit()]);
    a.bind(callback);
    a.extend([mov64(R0, 0), exit()]);
    let finished = a.finish();
    let slot = finished.slot(callback);
    (finished.insns, slot)
}

pub(super) fn callback_group() -> Group {
    let mut g = Group::new("callback");
    g.maps
        .push(plain_map("cb.array", MapType::ARRAY, 4, 8, CALLS));
    g.maps.push(plain_map("cb.one", MapType::ARRAY, 4, 8, 1));
    g.btf = Some(callback_btf());
    g.timed("callback base", program(|_, _| {}, 0, |_, _, _| {}), None);
    for (id, callback_type) in [
        (helper::LOOP, LOOP_CALLBACK_FUNC),
        (helper::FOR_EACH_MAP_ELEM, FOR_EACH_CALLBACK_FUNC),
    ] {
        let name = linerate_bpf::helpers::helper_name(id);
        // Argument setup per helper call: `bpf_loop` a mov, the callback's address and two
        // movs; `bpf_for_each_map_elem` the map's address instead of the first mov.
        let setup: Vec<(&str, f64)> = if id == helper::LOOP {
            vec![("alu64.mov.imm", 3.0), ("ld_imm64", 1.0)]
        } else {
            vec![("alu64.mov.imm", 2.0), ("ld_imm64", 2.0)]
        };
        for (key, units, calls) in [
            (Item::Callback(id).to_string(), UNITS, CALLS),
            (format!("aux.{name}.once"), ONCE_UNITS, 1),
        ] {
            let (insns, callback) = callback_program(id, units, calls);
            // Figures are per callback call for the first bench, per helper call for the other.
            let per_call = calls == CALLS;
            let bench_units = if per_call { units * calls } else { units };
            let share = if per_call {
                1.0 / f64::from(calls)
            } else {
                1.0
            };
            let mut bench = Bench::new(&key, "callback base", bench_units)
                .minus("alu64.mov.imm", 1.0)
                .note(if per_call {
                    format!(
                        "one call of a callback `r0 = 0; exit` by `{name}` making {calls} calls \
                         (its own work a 1/{calls} share), minus the callback's `r0 = 0` and the \
                         share of argument setup"
                    )
                } else {
                    format!(
                        "`{name}` calling a callback `r0 = 0; exit` once: its own work and one \
                         call, minus argument setup and the callback's `r0 = 0`"
                    )
                });
            for (item, count) in &setup {
                bench = bench.minus(*item, count * share);
            }
            g.timed(format!("{key} x{units}"), insns, Some(bench));
            let prog = g.programs.last_mut().expect("just pushed");
            prog.subprog = Some(callback);
            prog.func_types = Some([MAIN_FUNC, callback_type]);
            let (insns, callback) = probe(id, calls);
            g.probe(&key, insns, Some(XDP_PASS as u32));
            let prog = g.programs.last_mut().expect("just pushed");
            prog.subprog = Some(callback);
            prog.func_types = Some([MAIN_FUNC, callback_type]);
        }
    }
    g
}
