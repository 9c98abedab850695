//! Helpers that hand data to user space or keep it in a queue: ring buffers, perf event output,
//! queue and stack maps, and `check_mtu`, called back to back with their argument setup
//! subtracted, in a group of their own whose setup zeroes the buffer they read; and spin locks,
//! in a group whose map has the type information they need.

use super::*;
use linerate_bpf::facts::update;

/// Stack buffer the helpers copy from and into (zeroed by the setup).
const BUFFER: i16 = -16;
/// Stack slot of `check_mtu`'s `mtu_len`.
const MTU_SLOT: i16 = -24;
/// Bytes each record carries (ring buffers and perf samples): 8, so that a perf sample (8-byte
/// header, 4-byte size, data padded to 8 with the size) takes 24 bytes of the perf ring.
const RECORD_BYTES: i32 = 8;
/// Data size of the ring buffer (a power of two of pages): room for every record of one test run
/// (the kernel crate drains the ring after every run, as a consumer would), so that no
/// reservation fails for lack of space.
const RING_BYTES: u32 = 1 << 22;
/// Elements of the queue and stack: kept full, so that `push` with `BPF_EXIST` overwrites.
const QUEUE_LEN: u32 = 16;
/// Value size of the queue and stack.
const QUEUE_VALUE: u32 = 8;

/// Map indices in the group.
const RING: u32 = 0;
const PERF: u32 = 1;

/// The queue and stack the queue helpers are timed on (map index, name).
pub(crate) const QUEUE_TARGETS: [(u32, &str); 2] = [(2, "queue"), (3, "stack")];

/// The helpers this group times or that are priced from its benches.
pub(crate) const RECORD_HELPERS: [u32; 12] = [
    helper::RINGBUF_OUTPUT,
    helper::RINGBUF_RESERVE,
    helper::RINGBUF_SUBMIT,
    helper::RINGBUF_DISCARD,
    helper::RINGBUF_QUERY,
    helper::PERF_EVENT_OUTPUT,
    helper::MAP_PUSH_ELEM,
    helper::MAP_POP_ELEM,
    helper::MAP_PEEK_ELEM,
    helper::CHECK_MTU,
    helper::SPIN_LOCK,
    helper::SPIN_UNLOCK,
];

fn setup(a: &mut Asm, _fail: Label) {
    a.extend([
        mov64_reg(R6, R1),
        mov64(R7, 0),
        stx(Size::Dw, R10, BUFFER, R7),
        stx(Size::Dw, R10, BUFFER + 8, R7),
        stx(Size::Dw, R10, MTU_SLOT, R7),
    ]);
}

/// `r{reg} = r10 + off`.
fn stack_ptr(reg: Reg, off: i16) -> [Instruction; 2] {
    [mov64_reg(reg, R10), add64(reg, off as i32)]
}

/// What one bench's unit does.
#[derive(Clone, Copy)]
enum Unit {
    RingOutput,
    /// `reserve` (null-checked: the verifier insists), then `submit`, or `discard`.
    RingReserve {
        discard: bool,
    },
    RingQuery,
    PerfOutput,
    Push(u32),
    Peek(u32),
    /// `pop`, then `push` of the popped value, which keeps the map full.
    PopPush(u32),
    CheckMtu,
}

/// Emits one unit; with `fail`, every checkable result is checked.
fn emit(a: &mut Asm, unit: Unit, fail: Option<Label>, null_fail: Label) {
    let check = |a: &mut Asm, v: i32| {
        if let Some(fail) = fail {
            check_r0(a, Expect::Eq(v), fail);
        }
    };
    let push = |a: &mut Asm, map: u32, flags: u64| {
        a.push(ld_map(R1, map));
        a.extend(stack_ptr(R2, BUFFER));
        a.extend([mov64(R3, flags as i32), call_helper(helper::MAP_PUSH_ELEM)]);
    };
    let pop_or_peek = |a: &mut Asm, map: u32, id: u32| {
        a.push(ld_map(R1, map));
        a.extend(stack_ptr(R2, BUFFER));
        a.push(call_helper(id));
    };
    match unit {
        Unit::RingOutput => {
            a.push(ld_map(R1, RING));
            a.extend(stack_ptr(R2, BUFFER));
            a.extend([
                mov64(R3, RECORD_BYTES),
                mov64(R4, 0),
                call_helper(helper::RINGBUF_OUTPUT),
            ]);
            check(a, 0);
        }
        Unit::RingReserve { discard } => {
            a.extend([
                ld_map(R1, RING),
                mov64(R2, RECORD_BYTES),
                mov64(R3, 0),
                call_helper(helper::RINGBUF_RESERVE),
            ]);
            a.jcc(
                true,
                Cond::Eq,
                R0,
                Operand::Imm(0),
                fail.unwrap_or(null_fail),
            );
            let id = if discard {
                helper::RINGBUF_DISCARD
            } else {
                helper::RINGBUF_SUBMIT
            };
            a.extend([mov64_reg(R1, R0), mov64(R2, 0), call_helper(id)]);
        }
        Unit::RingQuery => a.extend([
            ld_map(R1, RING),
            mov64(R2, linerate_bpf::facts::ringbuf::AVAIL_DATA as i32),
            call_helper(helper::RINGBUF_QUERY),
        ]),
        Unit::PerfOutput => {
            a.extend([mov64_reg(R1, R6), ld_map(R2, PERF), mov64(R3, 0)]);
            a.extend(stack_ptr(R4, BUFFER));
            a.extend([
                mov64(R5, RECORD_BYTES),
                call_helper(helper::PERF_EVENT_OUTPUT),
            ]);
            check(a, 0);
        }
        Unit::Push(map) => {
            push(a, map, update::EXIST);
            check(a, 0);
        }
        Unit::Peek(map) => {
            pop_or_peek(a, map, helper::MAP_PEEK_ELEM);
            check(a, 0);
        }
        Unit::PopPush(map) => {
            pop_or_peek(a, map, helper::MAP_POP_ELEM);
            check(a, 0);
            push(a, map, update::ANY);
            check(a, 0);
        }
        Unit::CheckMtu => {
            a.extend([mov64_reg(R1, R6), mov64(R2, 0)]);
            a.extend(stack_ptr(R3, MTU_SLOT));
            a.extend([mov64(R4, 0), mov64(R5, 0), call_helper(helper::CHECK_MTU)]);
            check(a, linerate_bpf::facts::mtu::SUCCESS as i32);
        }
    }
}

/// Argument setup of a push: `ld_imm64`, the buffer pointer, the flags.
const PUSH_SETUP: [(&str, f64); 4] = [
    ("ld_imm64", 1.0),
    ("alu64.mov.reg", 1.0),
    ("alu64.add.imm", 1.0),
    ("alu64.mov.imm", 1.0),
];

/// A bench: key, unit, units per iteration, what it subtracts, note.
struct Case {
    key: String,
    unit: Unit,
    units: u32,
    minus: Vec<(String, f64)>,
    note: String,
}

fn cases() -> Vec<Case> {
    let case = |key: String, unit, units, minus: &[(&str, f64)], note: String| Case {
        key,
        unit,
        units,
        minus: minus.iter().map(|(k, n)| (k.to_string(), *n)).collect(),
        note,
    };
    let name = |id| linerate_bpf::helpers::helper_name(id);
    let mut out = vec![
        case(
            Item::Helper(helper::RINGBUF_OUTPUT).to_string(),
            Unit::RingOutput,
            200,
            &[
                ("ld_imm64", 1.0),
                ("alu64.mov.reg", 1.0),
                ("alu64.add.imm", 1.0),
                ("alu64.mov.imm", 2.0),
            ],
            format!(
                "`ringbuf_output` of {RECORD_BYTES} bytes from the stack, flags 0 (the wakeup \
                 only when the consumer has caught up), into a {} MiB ring drained after every \
                 test run, minus argument setup",
                RING_BYTES >> 20
            ),
        ),
        case(
            Item::Helper(helper::RINGBUF_QUERY).to_string(),
            Unit::RingQuery,
            500,
            &[("ld_imm64", 1.0), ("alu64.mov.imm", 1.0)],
            "`ringbuf_query(BPF_RB_AVAIL_DATA)`, minus argument setup".into(),
        ),
        case(
            Item::Helper(helper::PERF_EVENT_OUTPUT).to_string(),
            Unit::PerfOutput,
            100,
            &[
                ("alu64.mov.reg", 2.0),
                ("ld_imm64", 1.0),
                ("alu64.add.imm", 1.0),
                ("alu64.mov.imm", 2.0),
            ],
            format!(
                "`perf_event_output` of {RECORD_BYTES} bytes from the stack into slot 0 of a perf \
                 event array holding a `PERF_COUNT_SW_BPF_OUTPUT` event on the running CPU \
                 (sample_period 1, wakeup_events 1, as the kernel runner and libbpf's perf \
                 buffer open it, so every sample queues the reader's wakeup as irq_work; its \
                 ring mmap'ed and drained after every test run), minus argument setup"
            ),
        ),
        case(
            Item::Helper(helper::CHECK_MTU).to_string(),
            Unit::CheckMtu,
            500,
            &[
                ("alu64.mov.reg", 2.0),
                ("alu64.add.imm", 1.0),
                ("alu64.mov.imm", 3.0),
            ],
            "`check_mtu(ctx, 0, &mtu_len, 0, 0)` on the test run's device (lo), result \
             BPF_MTU_CHK_RET_SUCCESS, minus argument setup"
                .into(),
        ),
    ];
    for discard in [false, true] {
        let end = if discard { "discard" } else { "submit" };
        out.push(case(
            format!("aux.ringbuf.reserve_{end}"),
            Unit::RingReserve { discard },
            200,
            &[
                ("ld_imm64", 1.0),
                ("alu64.mov.imm", 3.0),
                ("alu64.mov.reg", 1.0),
                ("jmp64.jeq.imm.not_taken@0", 1.0),
            ],
            format!(
                "`ringbuf_reserve` of {RECORD_BYTES} bytes, its null check, then `ringbuf_{end}` \
                 (flags 0) of the record, into a {} MiB ring drained after every test run, \
                 minus argument setup and the null check (at one placement's price)",
                RING_BYTES >> 20
            ),
        ));
    }
    for (map, kind) in QUEUE_TARGETS {
        out.push(case(
            format!("aux.map_push_elem.{kind}"),
            Unit::Push(map),
            200,
            &PUSH_SETUP,
            format!(
                "`map_push_elem(BPF_EXIST)` of {QUEUE_VALUE} bytes on a full {kind} of \
                 {QUEUE_LEN} (the oldest element is overwritten), minus argument setup"
            ),
        ));
        out.push(case(
            format!("aux.map_peek_elem.{kind}"),
            Unit::Peek(map),
            200,
            &[
                ("ld_imm64", 1.0),
                ("alu64.mov.reg", 1.0),
                ("alu64.add.imm", 1.0),
            ],
            format!(
                "`map_peek_elem` of a {QUEUE_VALUE}-byte element of a full {kind}, minus \
                 argument setup"
            ),
        ));
        let push_key = format!("aux.map_push_elem.{kind}");
        let mut c = case(
            format!("aux.map_pop_elem.{kind}"),
            Unit::PopPush(map),
            100,
            &[
                ("ld_imm64", 1.0),
                ("alu64.mov.reg", 1.0),
                ("alu64.add.imm", 1.0),
            ],
            format!(
                "`map_pop_elem` of a {QUEUE_VALUE}-byte element of a full {kind}, each followed \
                 by a `{}` putting it back, minus argument setup and the push at the price of \
                 pushing onto a full {kind}",
                name(helper::MAP_PUSH_ELEM)
            ),
        );
        c.minus.push((push_key, 1.0));
        c.minus
            .extend(PUSH_SETUP.iter().map(|(k, n)| (k.to_string(), *n)));
        out.push(c);
    }
    out
}

pub(super) fn records_group() -> Group {
    let mut g = Group::new("records");
    g.maps
        .push(plain_map("ring", MapType::RINGBUF, 0, 0, RING_BYTES));
    g.maps
        .push(plain_map("perf", MapType::PERF_EVENT_ARRAY, 4, 4, 1));
    for (_, kind) in QUEUE_TARGETS {
        let map_type = if kind == "queue" {
            MapType::QUEUE
        } else {
            MapType::STACK
        };
        g.maps
            .push(plain_map(kind, map_type, 0, QUEUE_VALUE, QUEUE_LEN));
    }
    for (map, _) in QUEUE_TARGETS {
        for i in 0..QUEUE_LEN {
            g.populate.push((
                map as usize,
                Vec::new(),
                u64::from(i).to_le_bytes().to_vec(),
            ));
        }
    }
    g.timed("records base", program(setup, 0, |_, _, _| {}), None);
    for c in cases() {
        let mut bench = Bench::new(&c.key, "records base", c.units).note(&c.note);
        for (m, n) in &c.minus {
            bench = bench.minus(m.clone(), *n);
        }
        let unit = c.unit;
        g.timed(
            format!("{} x{}", c.key, c.units),
            program(setup, c.units, |a, _, fail| emit(a, unit, None, fail)),
            Some(bench),
        );
        g.probe(
            &c.key,
            probe_program(setup, 4, |a, _, fail| emit(a, unit, Some(fail), fail)),
            Some(XDP_PASS as u32),
        );
    }
    g
}

/// Name of the spin-lock bench's map, as its BTF names it.
const LOCK_MAP: &str = "locks";

/// `r7` = the lock map's only value (a lookup of key 0, null-checked).
fn lock_setup(a: &mut Asm, fail: Label) {
    a.extend([
        mov64_reg(R6, R1),
        mov64(R7, 0),
        stx(Size::Dw, R10, BUFFER, R7),
    ]);
    a.push(ld_map(R1, 0));
    a.extend(stack_ptr(R2, BUFFER));
    a.push(call_helper(helper::MAP_LOOKUP_ELEM));
    a.jcc(true, Cond::Eq, R0, Operand::Imm(0), fail);
    a.push(mov64_reg(R7, R0));
}

fn lock_unit(a: &mut Asm) {
    a.extend([
        mov64_reg(R1, R7),
        call_helper(helper::SPIN_LOCK),
        mov64_reg(R1, R7),
        call_helper(helper::SPIN_UNLOCK),
    ]);
}

/// `spin_lock` then `spin_unlock` of an uncontended lock in an array value with BTF.
pub(super) fn lock_group() -> Group {
    let mut g = Group::new("lock");
    g.maps.push(MapDef {
        origin: MapOrigin::Btf,
        ..MapDef::new(LOCK_MAP, MapType::ARRAY, 4, super::btf::LOCK_VALUE_SIZE, 1)
    });
    g.btf = Some(super::btf::lock_map_btf(LOCK_MAP));
    g.timed("lock base", program(lock_setup, 0, |_, _, _| {}), None);
    let key = "aux.spin_lock_unlock";
    let units = 200;
    let bench = Bench::new(key, "lock base", units)
        .note(
            "`spin_lock` then `spin_unlock` of the uncontended `struct bpf_spin_lock` in an array \
             value (BTF-typed map), minus argument setup",
        )
        .minus("alu64.mov.reg", 2.0);
    g.timed(
        format!("{key} x{units}"),
        program(lock_setup, units, |a, _, _| lock_unit(a)),
        Some(bench),
    );
    g.probe(
        key,
        probe_program(lock_setup, 1, |a, _, _| lock_unit(a)),
        Some(XDP_PASS as u32),
    );
    g
}
