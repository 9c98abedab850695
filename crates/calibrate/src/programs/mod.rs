//! The microbenchmark programs: for every item, an XDP program whose loop body is a setup and
//! `units` copies of a unit containing the item; and per group of items a *baseline* with the same
//! loop and setup but no units. See the module documentation of [`crate`] for the method.
//!
//! Here: the suite's types, the loop every timed program runs, the probes, and the shared map
//! definitions; each group of items has its own file ([`alu`](mod@alu), [`memory`], [`control`],
//! [`helpers`], [`dispatch`], [`records`], [`maps`]), which takes the builder and the kernel facts imported here through
//! `use super::*`.

use linerate_bpf::facts::errno::{EACCES, EEXIST, EINVAL, ENOENT};
use linerate_bpf::facts::helper;
use linerate_bpf::facts::limits::{FIB_LOOKUP_PARAMS, MAX_TAIL_CALLS};
use linerate_bpf::facts::update;
use linerate_bpf::facts::xdp::{XDP_PASS, XDP_REDIRECT};
use linerate_bpf::facts::xdp_md;
use linerate_bpf::insn::{
    AluOp, AtomicOp, Cond, Endian, Imm64, Instruction, Operand, RawInsn, Reg, Size,
};
use linerate_bpf::program::{MapDef, MapOrigin, MapType};

use crate::asm::*;
use linerate_bpf::insn::build::*;
use linerate_cost::item::{
    costed_helpers, Access, Item, MapOp, Region, COSTED_MAP_TYPES, FAILURE_PRICED_MAP_TYPES,
    LOOKUP_ONLY_MAP_TYPES,
};

mod alu;
mod btf;
mod callbacks;
mod control;
mod dispatch;
mod helpers;
mod maps;
mod memory;
mod records;

use alu::alu_group;
use control::{call_group, jump_group, tail_call_group};
use dispatch::dispatch_group;
pub(crate) use dispatch::{dispatch_bench, DispatchCase};
use helpers::helper_group;
pub(crate) use helpers::{kernel_read_key, KERNEL_READ_SIZES, REDIRECT_TARGETS};
pub(crate) use maps::map_cases;
use maps::map_group;
pub(crate) use memory::CTX_FIELDS;
use memory::{ctx_group, mem_group};
use records::{lock_group, records_group};
pub(crate) use records::{QUEUE_TARGETS, RECORD_HELPERS};

/// Length of the packet every program runs on.
pub(crate) const PACKET_LEN: usize = 128;
/// Distinct keys a map benchmark cycles through.
pub(crate) const KEYS: usize = 16;
/// Entries each hash-like map and LPM trie is populated with before lookups.
pub(crate) const POPULATION: u32 = 1024;
/// Value size of every benchmarked map.
pub(crate) const VALUE_SIZE: u32 = 16;
/// Key sizes benchmarked for the hash-like map types.
pub(crate) const HASH_KEY_SIZES: [u32; 5] = [4, 8, 16, 32, 64];
/// Key sizes benchmarked for LPM tries (4-byte prefix length + IPv4 / IPv6 address).
pub(crate) const LPM_KEY_SIZES: [u32; 2] = [8, 20];
/// Bytes `csum_diff` removes and adds per call.
pub(crate) const CSUM_BYTES: i32 = 20;
/// Bytes `xdp_load_bytes` / `xdp_store_bytes` copy per call.
pub(crate) const COPY_BYTES: i32 = 64;
/// Bytes the adjust helpers move the packet bounds by (and back).
pub(crate) const ADJUST_BYTES: i32 = 4;
/// Offset of the value in each map benchmark's key data.
const DATA_VALUE: usize = 0;
/// First key in each map benchmark's key data.
const DATA_KEYS: usize = 64;
/// Return value a probe adds to an unexpected helper result.
pub(crate) const PROBE_FAIL: u32 = 1000;
/// Independently loaded copies of each jump bench: the JIT places every program at a random
/// offset, and jump throughput depends on the placement, so jumps are priced at the upper median
/// of the copies.
pub(crate) const JUMP_PLACEMENTS: usize = 4;
/// `bpf_fib_lookup` destination: TEST-NET-2, routed by the default route.
pub(crate) const FIB_DST: [u8; 4] = [198, 51, 100, 7];

/// Everything calibration runs.
pub(crate) struct Suite {
    pub groups: Vec<Group>,
}

/// Programs sharing maps (one kernel object).
pub(crate) struct Group {
    pub name: &'static str,
    pub maps: Vec<MapDef>,
    /// Map entries written from user space after loading: (map, key, value).
    pub populate: Vec<(usize, Vec<u8>, Vec<u8>)>,
    /// Program-array slots: (map, slot, program name).
    pub slots: Vec<(usize, u32, String)>,
    pub programs: Vec<Prog>,
    /// Type information for maps that need it (a spin lock's value).
    pub btf: Option<linerate_bpf::program::ObjectBtf>,
}

/// One program of a group.
pub(crate) struct Prog {
    pub name: String,
    pub insns: Vec<RawInsn>,
    /// Slot where the (only) subprogram starts.
    pub subprog: Option<usize>,
    /// BTF `FUNC` type ids of the main function and the subprogram, for a program that must
    /// carry `func_info` (one passing a callback; the group's BTF defines them).
    pub func_types: Option<[u32; 2]>,
    pub packet: Vec<u8>,
    pub role: Role,
    /// The program runs its body as many times as the packet's last 4 bytes say
    /// ([`LOOP_COUNT_OFFSET`]) in one run; otherwise it is timed with repeated runs.
    pub looped: bool,
    /// Runs need IPv4 forwarding on `lo` (`bpf_fib_lookup` refuses to look up otherwise).
    pub needs_forwarding: bool,
}

/// What a program is for.
pub(crate) enum Role {
    /// Timed every round; `Some` when its time is itself a measurement.
    Timed(Option<Bench>),
    /// Run once before timing to check that the bench's units do what they should: the program
    /// returns `XDP_PASS` when every checked helper result was as expected, otherwise
    /// [`PROBE_FAIL`] plus the unexpected result; without checks it returns the last result.
    Probe { of: String, expect: Option<u32> },
}

/// A measurement: `units` copies of a unit, each executing the item `per_unit` times.
pub(crate) struct Bench {
    /// The item key, or an auxiliary key (`aux.*`, `per_packet`).
    pub key: String,
    /// Program whose time is subtracted (same setup, no units); `None`: absolute time.
    pub baseline: Option<String>,
    pub units: u32,
    pub per_unit: f64,
    /// Benches whose costs are subtracted, per unit (argument setup, chain glue).
    pub minus: Vec<(String, f64)>,
    /// The return value every run must produce (checked before timing).
    pub expect_retval: u32,
    /// How the unit measures the item, for the model's note.
    pub note: String,
}

impl Bench {
    fn new(key: impl Into<String>, baseline: &str, units: u32) -> Bench {
        Bench {
            key: key.into(),
            baseline: Some(baseline.into()),
            units,
            per_unit: 1.0,
            minus: Vec::new(),
            expect_retval: XDP_PASS as u32,
            note: String::new(),
        }
    }

    fn minus(mut self, key: impl Into<String>, count: f64) -> Bench {
        self.minus.push((key.into(), count));
        self
    }

    fn note(mut self, note: impl Into<String>) -> Bench {
        self.note = note.into();
        self
    }
}

fn zero_packet() -> Vec<u8> {
    vec![0u8; PACKET_LEN]
}

impl Group {
    fn new(name: &'static str) -> Group {
        Group {
            name,
            maps: Vec::new(),
            populate: Vec::new(),
            slots: Vec::new(),
            programs: Vec::new(),
            btf: None,
        }
    }

    /// A looped, timed program.
    fn timed(&mut self, name: impl Into<String>, insns: Vec<RawInsn>, bench: Option<Bench>) {
        self.programs.push(Prog {
            name: name.into(),
            insns,
            subprog: None,
            func_types: None,
            packet: zero_packet(),
            role: Role::Timed(bench),
            looped: true,
            needs_forwarding: false,
        });
    }

    /// A plain (not looped) program timed with repeated runs.
    fn timed_plain(
        &mut self,
        name: impl Into<String>,
        insns: &[Instruction],
        bench: Option<Bench>,
    ) {
        self.timed(name, linerate_bpf::insn::encode_all(insns), bench);
        self.programs.last_mut().expect("just pushed").looped = false;
    }

    fn probe(&mut self, of: &str, insns: Vec<RawInsn>, expect: Option<u32>) {
        self.programs.push(Prog {
            name: format!("probe {of}"),
            insns,
            subprog: None,
            func_types: None,
            packet: zero_packet(),
            role: Role::Probe {
                of: of.into(),
                expect,
            },
            looped: false,
            needs_forwarding: false,
        });
    }
}

/// The whole suite.
pub(crate) fn suite() -> Suite {
    Suite {
        groups: vec![
            alu_group(),
            ctx_group(),
            mem_group(Region::Packet),
            mem_group(Region::Stack),
            mem_group(Region::MapValue),
            mem_group(Region::Global),
            jump_group(),
            call_group(),
            callbacks::callback_group(),
            helper_group(),
            dispatch_group(),
            records_group(),
            lock_group(),
            map_group(),
            tail_call_group(),
        ],
    }
}

/// Packet offset of the little-endian u32 telling a looped program how many iterations to run.
pub(crate) const LOOP_COUNT_OFFSET: usize = PACKET_LEN - 4;
/// Stack slots of a looped program's remaining iterations and saved context.
const LOOP_COUNTER: i16 = -256;
const LOOP_CTX: i16 = -248;
/// Return value of a looped program whose `may_goto` budget ran out.
pub(crate) const LOOP_EXHAUSTED: u32 = 3;

/// A looped program. Each iteration starts with `r1 = ctx` and runs `body`, which gets the failure
/// label (`r0 = 1; exit`) and must fall through at its end; the loop is bounded for the verifier
/// by `may_goto` (so it is verified once, not unrolled) and at run time by the count in the
/// packet. `after` emits code after the program (subprograms). Loop overhead is the same in a
/// bench and its baseline, so it cancels.
fn looped<T>(
    body: impl FnOnce(&mut Asm, Label) -> T,
    after: impl FnOnce(&mut Asm, &T),
) -> (Finished, T) {
    let mut a = Asm::new();
    let fail = a.label();
    let exhausted = a.label();
    check_packet(&mut a, [R2, R3, R4], PACKET_LEN as i32, fail);
    a.extend([
        ldx(Size::W, R7, R2, LOOP_COUNT_OFFSET as i16),
        stx(Size::Dw, R10, LOOP_COUNTER, R7),
        stx(Size::Dw, R10, LOOP_CTX, R6),
    ]);
    let top = a.label();
    a.bind(top);
    a.may_goto(exhausted);
    a.push(ldx(Size::Dw, R1, R10, LOOP_CTX));
    let made = body(&mut a, fail);
    a.extend([
        ldx(Size::Dw, R1, R10, LOOP_COUNTER),
        add64(R1, -1),
        stx(Size::Dw, R10, LOOP_COUNTER, R1),
    ]);
    a.jcc(true, Cond::Ne, R1, Operand::Imm(0), top);
    a.extend([mov64(R0, XDP_PASS as i32), exit()]);
    a.bind(fail);
    a.extend([mov64(R0, 1), exit()]);
    a.bind(exhausted);
    a.extend([mov64(R0, LOOP_EXHAUSTED as i32), exit()]);
    after(&mut a, &made);
    (a.finish(), made)
}

/// A looped program whose body is `setup` and `units` units.
fn program(
    setup: impl Fn(&mut Asm, Label),
    units: u32,
    unit: impl Fn(&mut Asm, u32, Label),
) -> Vec<RawInsn> {
    looped(
        |a, fail| {
            setup(a, fail);
            for k in 0..units {
                unit(a, k, fail);
            }
        },
        |_, _| {},
    )
    .0
    .insns
}

fn data_map(name: &str, value: Vec<u8>) -> MapDef {
    let value_size = value.len() as u32;
    MapDef {
        origin: MapOrigin::GlobalData {
            section: ".data".into(),
            read_only: false,
        },
        initial_value: Some(value),
        ..MapDef::new(name, MapType::ARRAY, 4, value_size, 1)
    }
}

fn plain_map(name: &str, map_type: MapType, key_size: u32, value_size: u32, max: u32) -> MapDef {
    MapDef {
        origin: MapOrigin::Legacy,
        ..MapDef::new(name, map_type, key_size, value_size, max)
    }
}

/// The packet bounds check every program starting from the packet begins with: `r6 = ctx;
/// data = ctx->data; end = ctx->data_end; past = data + bytes; if past > end goto fail`.
fn check_packet(a: &mut Asm, [data, end, past]: [Reg; 3], bytes: i32, fail: Label) {
    a.extend([
        mov64_reg(R6, R1),
        ldx_ctx(data, R6, xdp_md::DATA),
        ldx_ctx(end, R6, xdp_md::DATA_END),
        mov64_reg(past, data),
        add64(past, bytes),
    ]);
    a.jcc(true, Cond::Gt, past, Operand::Reg(end), fail);
}

/// Emits `r0` checks after a call: `if r0 != expect goto fail` (or `if r0 == 0` for lookups).
/// A pointer that should have been null goes to `fail` as the scalar 1: the failure block adds
/// to `r0`, which the verifier refuses on pointers to sockets.
fn check_r0(a: &mut Asm, expect: Expect, fail: Label) {
    match expect {
        Expect::Eq(v) => a.jcc(true, Cond::Ne, R0, Operand::Imm(v), fail),
        Expect::NonNull => a.jcc(true, Cond::Eq, R0, Operand::Imm(0), fail),
        Expect::Null => {
            let null = a.label();
            a.jcc(true, Cond::Eq, R0, Operand::Imm(0), null);
            a.push(mov64(R0, 1));
            a.ja(fail);
            a.bind(null);
        }
    }
}

#[derive(Clone, Copy)]
enum Expect {
    Eq(i32),
    NonNull,
    Null,
}

/// A probe: `setup`, `units` units with every call's result checked, `r0 = XDP_PASS; exit`; on an
/// unexpected result, exit with [`PROBE_FAIL`] + the result. Units get the failure label.
fn probe_program(
    setup: impl Fn(&mut Asm, Label),
    units: u32,
    unit: impl Fn(&mut Asm, u32, Label),
) -> Vec<RawInsn> {
    let mut a = Asm::new();
    let fail = a.label();
    let setup_fail = a.label();
    setup(&mut a, setup_fail);
    for k in 0..units {
        unit(&mut a, k, fail);
    }
    a.extend([mov64(R0, XDP_PASS as i32), exit()]);
    a.tail_block(fail, [add64(R0, PROBE_FAIL as i32), exit()]);
    a.tail_block(setup_fail, [mov64(R0, 1), exit()]);
    a.finish().insns
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    #[test]
    fn suite_is_consistent() {
        let suite = suite();
        let mut benches = HashSet::new();
        for g in &suite.groups {
            let names: HashSet<&str> = g.programs.iter().map(|p| p.name.as_str()).collect();
            assert_eq!(
                names.len(),
                g.programs.len(),
                "program names unique in {}",
                g.name
            );
            for p in &g.programs {
                if let Role::Timed(Some(b)) = &p.role {
                    if let Some(base) = &b.baseline {
                        assert!(names.contains(base.as_str()), "{base} in {}", g.name);
                    }
                    assert!(benches.insert(b.key.as_str()), "bench {} twice", b.key);
                }
            }
        }
        for g in &suite.groups {
            for p in &g.programs {
                if let Role::Timed(Some(b)) = &p.role {
                    for (m, _) in &b.minus {
                        assert!(
                            benches.contains(m.as_str()),
                            "{} subtracts unknown {m}",
                            b.key
                        );
                    }
                }
                if let Role::Probe { of, .. } = &p.role {
                    assert!(benches.contains(of.as_str()), "probe of unknown {of}");
                }
            }
        }
        // Every bench the plan prices an item from exists.
        for (key, pricing) in crate::fit::plan() {
            for dep in pricing.deps() {
                assert!(
                    benches.contains(dep.as_str()),
                    "{key} needs {dep}, not a bench"
                );
            }
        }
    }

    #[test]
    fn redirect_map_is_timed_on_every_target_type() {
        let suite = suite();
        for (_, name) in REDIRECT_TARGETS {
            let key = format!("aux.redirect_map.{name}");
            assert!(
                suite
                    .groups
                    .iter()
                    .flat_map(|g| &g.programs)
                    .any(|p| { matches!(&p.role, Role::Timed(Some(b)) if b.key == key) }),
                "no bench {key}"
            );
        }
    }
}
