//! The microbenchmark programs: for every item, an XDP program whose loop body is a setup and
//! `units` copies of a unit containing the item; and per group of items a *baseline* with the same
//! loop and setup but no units. See the module documentation of [`crate`] for the
//! method.

use linerate_bpf::facts::errno::EINVAL;
use linerate_bpf::facts::helper;
use linerate_bpf::facts::limits::{FIB_LOOKUP_PARAMS, MAX_TAIL_CALLS};
use linerate_bpf::facts::xdp::{XDP_PASS, XDP_REDIRECT};
use linerate_bpf::facts::xdp_md;
use linerate_bpf::insn::{
    AluOp, AtomicOp, Cond, Endian, Imm64, Instruction, Operand, RawInsn, Size,
};
use linerate_bpf::program::{MapDef, MapOrigin, MapType};

use crate::asm::*;
use linerate_cost::item::{Access, Item, MapOp, Region, COSTED_HELPERS, COSTED_MAP_TYPES};

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
}

/// One program of a group.
pub(crate) struct Prog {
    pub name: String,
    pub insns: Vec<RawInsn>,
    /// Slot where the (only) subprogram starts.
    pub subprog: Option<usize>,
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
        }
    }

    /// A looped, timed program.
    fn timed(&mut self, name: impl Into<String>, insns: Vec<RawInsn>, bench: Option<Bench>) {
        self.programs.push(Prog {
            name: name.into(),
            insns,
            subprog: None,
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
            helper_group(),
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
    a.extend([
        movr(R6, R1),
        ldx_ctx(R2, R6, xdp_md::DATA),
        ldx_ctx(R3, R6, xdp_md::DATA_END),
        movr(R4, R2),
        addi(R4, PACKET_LEN as i32),
    ]);
    a.jcc(true, Cond::Gt, R4, Operand::Reg(R3), fail);
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
        addi(R1, -1),
        stx(Size::Dw, R10, LOOP_COUNTER, R1),
    ]);
    a.jcc(true, Cond::Ne, R1, Operand::Imm(0), top);
    a.extend([mov(R0, XDP_PASS as i32), exit()]);
    a.bind(fail);
    a.extend([mov(R0, 1), exit()]);
    a.bind(exhausted);
    a.extend([mov(R0, LOOP_EXHAUSTED as i32), exit()]);
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

fn class(wide: bool) -> &'static str {
    if wide {
        "alu64"
    } else {
        "alu32"
    }
}

// ---------------------------------------------------------------------------------------------
// ALU, byte swaps, 64-bit immediates.

const CHAIN_START: u64 = 0x7fff_ffff_ffff_fff1;
/// Keeps a 32-bit dividend large (and positive for signed division).
const MASK32: i32 = 0x7fff_fff1;

fn alu_setup(a: &mut Asm, _fail: Label) {
    a.extend([
        ld64(R1, Imm64::Const(CHAIN_START)),
        mov(R2, 3),
        ld64(R3, Imm64::Const(CHAIN_START)),
        mov(R4, MASK32),
        mov(R5, 0),
    ]);
}

fn alu_group() -> Group {
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
        a.push(ld64(R5, Imm64::Const(0x0123_4567_89ab_cdef)))
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

// ---------------------------------------------------------------------------------------------
// Loads, stores and atomics per region.

/// The `xdp_md` fields XDP programs may read, with their offsets.
pub(crate) const CTX_FIELDS: [(&str, u64, bool); 5] = [
    ("data", xdp_md::DATA, true),
    ("data_end", xdp_md::DATA_END, true),
    ("data_meta", xdp_md::DATA_META, true),
    ("ingress_ifindex", xdp_md::INGRESS_IFINDEX, false),
    ("rx_queue_index", xdp_md::RX_QUEUE_INDEX, false),
];

fn ctx_group() -> Group {
    let mut g = Group::new("ctx");
    // r1 = ctx; r7 = ctx->data (a packet pointer to subtract from pointer-valued fields).
    let setup = |a: &mut Asm, _: Label| a.extend([ldx_ctx(R7, R1, xdp_md::DATA), mov(R3, 0)]);
    g.timed("ctx base", program(setup, 0, |_, _, _| {}), None);
    for (field, off, pointer) in CTX_FIELDS {
        let key = format!("aux.ctx.{field}");
        let units = 1500;
        let insns = program(setup, units, |a, _, _| {
            a.push(ldx_ctx(R3, R1, off));
            if pointer {
                a.push(alu(true, AluOp::Sub, R3, Operand::Reg(R7)));
            }
            a.push(alu(true, AluOp::And, R3, Operand::Imm(0)));
            a.push(alu(true, AluOp::Add, R1, Operand::Reg(R3)));
        });
        let mut bench = Bench::new(&key, "ctx base", units)
            .minus("alu64.and.imm", 1.0)
            .minus("alu64.add.reg", 1.0)
            .note(format!(
                "load-to-use latency of `xdp_md.{field}` (as the verifier rewrites it) in a chain \
                 `x = *(u32 *)(ctx + {off}); {}x &= 0; ctx += x`, minus the glue",
                if pointer { "x -= data; " } else { "" }
            ));
        if pointer {
            bench = bench.minus("alu64.sub.reg", 1.0);
        }
        g.timed(format!("{key} x{units}"), insns, Some(bench));
    }
    g
}

fn data_map(name: &str, value: Vec<u8>) -> MapDef {
    MapDef {
        name: name.into(),
        map_type: MapType::ARRAY,
        key_size: 4,
        value_size: value.len() as u32,
        max_entries: 1,
        flags: 0,
        origin: MapOrigin::GlobalData {
            section: ".data".into(),
            read_only: false,
        },
        initial_value: Some(value),
        initial_programs: Vec::new(),
    }
}

fn plain_map(name: &str, map_type: MapType, key_size: u32, value_size: u32, max: u32) -> MapDef {
    MapDef {
        name: name.into(),
        map_type,
        key_size,
        value_size,
        max_entries: max,
        flags: 0,
        origin: MapOrigin::Legacy,
        initial_value: None,
        initial_programs: Vec::new(),
    }
}

/// Sets `r1` to 64 accessible bytes of `region`, `r2 = 0`, `r0 = 0`.
fn region_setup(region: Region) -> impl Fn(&mut Asm, Label) {
    move |a: &mut Asm, fail: Label| {
        match region {
            Region::Packet => {
                a.extend([
                    movr(R6, R1),
                    ldx_ctx(R7, R6, xdp_md::DATA),
                    ldx_ctx(R8, R6, xdp_md::DATA_END),
                    movr(R1, R7),
                    addi(R1, 64),
                ]);
                a.jcc(true, Cond::Gt, R1, Operand::Reg(R8), fail);
                a.push(movr(R1, R7));
            }
            Region::Stack => {
                a.push(mov(R2, 0));
                for i in 1..=8 {
                    a.push(stx(Size::Dw, R10, -8 * i, R2));
                }
                a.extend([movr(R1, R10), addi(R1, -64)]);
            }
            Region::MapValue => {
                a.extend([
                    st(Size::W, R10, -4, 0),
                    movr(R2, R10),
                    addi(R2, -4),
                    ld64(R1, Imm64::Map(0)),
                    call(helper::MAP_LOOKUP_ELEM),
                ]);
                a.jcc(true, Cond::Eq, R0, Operand::Imm(0), fail);
                a.push(movr(R1, R0));
            }
            Region::Global => a.push(ld64(R1, Imm64::MapValue { map: 0, offset: 0 })),
            Region::Ctx => unreachable!("the context has its own group"),
        }
        a.extend([mov(R2, 0), mov(R0, 0)]);
    }
}

fn mem_group(region: Region) -> Group {
    let name = match region {
        Region::Packet => "packet",
        Region::Stack => "stack",
        Region::MapValue => "map_value",
        Region::Global => "global",
        Region::Ctx => "ctx",
    };
    let mut g = Group::new(name);
    match region {
        Region::MapValue => g.maps.push(plain_map("values", MapType::ARRAY, 4, 64, 1)),
        Region::Global => g.maps.push(data_map(".data", vec![0u8; 64])),
        _ => {}
    }
    let base = format!("{name} base");
    let setup = region_setup(region);
    g.timed(&base, program(&setup, 0, |_, _, _| {}), None);
    let accesses = [
        (1, false),
        (2, false),
        (4, false),
        (8, false),
        (1, true),
        (2, true),
        (4, true),
    ];
    for (bytes, signed) in accesses {
        let size = Size::from_bytes(bytes).expect("valid size");
        let key = Item::Load {
            region,
            access: Access::new(size, signed),
        }
        .to_string();
        let units = 1500;
        let insns = program(&setup, units, |a, _, _| {
            a.extend([
                Instruction::Load {
                    size,
                    signed,
                    dst: R3,
                    src: R1,
                    off: 0,
                },
                alu(true, AluOp::And, R3, Operand::Imm(0)),
                alu(true, AluOp::Add, R1, Operand::Reg(R3)),
            ])
        });
        let bench = Bench::new(&key, &base, units)
            .minus("alu64.and.imm", 1.0)
            .minus("alu64.add.reg", 1.0)
            .note(
                "load-to-use latency in a pointer chain `x = *(p + 0); x &= 0; p += x` (L1 hit), \
                 minus the glue",
            );
        g.timed(format!("{key} x{units}"), insns, Some(bench));
    }
    for bytes in [1u32, 2, 4, 8] {
        let size = Size::from_bytes(bytes).expect("valid size");
        let key = Item::Store {
            region,
            bytes: bytes as u8,
        }
        .to_string();
        let units = 2000;
        let insns = program(&setup, units, |a, k, _| {
            a.push(stx(size, R1, ((k % 8) * bytes) as i16, R2))
        });
        let bench = Bench::new(&key, &base, units).note(
            "independent register stores cycling over 8 slots (throughput); immediate stores share \
             the price",
        );
        g.timed(format!("{key} x{units}"), insns, Some(bench));
    }
    if matches!(region, Region::Stack | Region::MapValue | Region::Global) {
        for bytes in [4u32, 8] {
            let size = Size::from_bytes(bytes).expect("valid size");
            for op in AtomicOp::ALL {
                let fetches: &[bool] = match op {
                    AtomicOp::Xchg | AtomicOp::CmpXchg => &[true],
                    _ => &[false, true],
                };
                for &fetch in fetches {
                    let key = Item::Atomic {
                        region,
                        op,
                        fetch,
                        bytes: bytes as u8,
                    }
                    .to_string();
                    let units = 500;
                    let insns = program(&setup, units, |a, _, _| {
                        a.push(atomic(size, op, fetch, R1, R2))
                    });
                    let bench = Bench::new(&key, &base, units).note(
                        "back-to-back atomics on one location (each waits for the previous; \
                         fetching forms chain through the fetched register)",
                    );
                    g.timed(format!("{key} x{units}"), insns, Some(bench));
                }
            }
        }
    }
    g
}

// ---------------------------------------------------------------------------------------------
// Jumps.

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
    a.extend([
        movr(R6, R1),
        ldx_ctx(R7, R6, xdp_md::DATA),
        ldx_ctx(R8, R6, xdp_md::DATA_END),
        movr(R5, R7),
        addi(R5, 24),
    ]);
    a.jcc(true, Cond::Gt, R5, Operand::Reg(R8), fail);
    a.extend([
        ldx(Size::Dw, R1, R7, 0),
        ldx(Size::Dw, R2, R7, 8),
        ldx(Size::Dw, R9, R7, 16),
        mov(R8, XDP_PASS as i32),
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
        a.push(ld64(R5, Imm64::Const(0x1122_3344_5566_7788)));
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

fn jump_group() -> Group {
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
                            a.push(mov(R8, 0));
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

fn call_group() -> Group {
    let mut g = Group::new("call");
    let mut per_packet = Bench::new("per_packet", "", 1);
    per_packet.baseline = None;
    per_packet.note = "BPF_PROG_TEST_RUN time of `r0 = XDP_PASS; exit`".into();
    g.timed_plain(
        "empty",
        &[mov(R0, XDP_PASS as i32), exit()],
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
            a.extend([mov(R0, 0), exit()]);
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

// ---------------------------------------------------------------------------------------------
// Helpers.

/// Stack layout of the helper programs (offsets from r10).
const FIB_PARAMS: i16 = -64;
/// A 16-byte `trace_printk` format with three integer conversions, in the part of the stack between
/// the byte buffers and the fib parameters that nothing else uses.
const PRINTK_FMT: i16 = -88;
const PRINTK_FORMAT: &[u8; 16] = b"lr %d %u %llx\n\0\0";
const BUFFER: i16 = -192;

fn helper_setup(a: &mut Asm, _fail: Label) {
    a.extend([movr(R6, R1), mov(R7, 0)]);
    for i in 1..=24 {
        a.push(stx(Size::Dw, R10, -8 * i, R7));
    }
    // struct bpf_fib_lookup: family AF_INET, UDP, ifindex 1 (lo), source and destination.
    a.extend([
        st(Size::B, R10, FIB_PARAMS, 2),
        st(Size::B, R10, FIB_PARAMS + 1, 17),
        st(Size::W, R10, FIB_PARAMS + 8, 1),
        st(
            Size::W,
            R10,
            FIB_PARAMS + 16,
            i32::from_ne_bytes([127, 0, 0, 1]),
        ),
        st(Size::W, R10, FIB_PARAMS + 32, i32::from_ne_bytes(FIB_DST)),
    ]);
    for (i, word) in PRINTK_FORMAT.chunks(4).enumerate() {
        let word = i32::from_ne_bytes(word.try_into().expect("4 bytes"));
        a.push(st(Size::W, R10, PRINTK_FMT + 4 * i as i16, word));
    }
}

/// How one helper is called: the unit's instructions (`probe`: check each result but the last),
/// calls per unit, the expected result, and what is subtracted.
struct HelperCase {
    id: u32,
    units: u32,
    calls: u32,
    expect: Option<u32>,
    minus: Vec<(&'static str, f64)>,
    note: String,
}

fn helper_call_insns(id: u32, step: u32) -> Vec<Instruction> {
    let ctx = movr(R1, R6);
    match id {
        helper::TRACE_PRINTK => vec![
            movr(R1, R10),
            addi(R1, PRINTK_FMT as i32),
            mov(R2, PRINTK_FORMAT.len() as i32),
            mov(R3, -123_456_789),
            mov(R4, 4_000_000_000u32 as i32),
            mov(R5, -1),
            call(id),
        ],
        helper::REDIRECT => vec![mov(R1, 1), mov(R2, 0), call(id)],
        helper::CSUM_DIFF => vec![
            movr(R1, R10),
            addi(R1, BUFFER as i32),
            mov(R2, CSUM_BYTES),
            movr(R3, R10),
            addi(R3, BUFFER as i32 + 32),
            mov(R4, CSUM_BYTES),
            mov(R5, 0),
            call(id),
        ],
        helper::XDP_ADJUST_HEAD | helper::XDP_ADJUST_META => {
            let delta = if step == 0 {
                -ADJUST_BYTES
            } else {
                ADJUST_BYTES
            };
            vec![ctx, mov(R2, delta), call(id)]
        }
        helper::XDP_ADJUST_TAIL => {
            let delta = if step == 0 {
                ADJUST_BYTES
            } else {
                -ADJUST_BYTES
            };
            vec![ctx, mov(R2, delta), call(id)]
        }
        helper::REDIRECT_MAP => redirect_map_insns(0),
        helper::FIB_LOOKUP => vec![
            st(Size::W, R10, FIB_PARAMS + 8, 1),
            ctx,
            movr(R2, R10),
            addi(R2, FIB_PARAMS as i32),
            mov(R3, FIB_LOOKUP_PARAMS as i32),
            mov(R4, 0),
            call(id),
        ],
        helper::XDP_GET_BUFF_LEN => vec![ctx, call(id)],
        helper::XDP_LOAD_BYTES | helper::XDP_STORE_BYTES => vec![
            ctx,
            mov(R2, 0),
            movr(R3, R10),
            addi(R3, BUFFER as i32),
            mov(R4, COPY_BYTES),
            call(id),
        ],
        _ => vec![call(id)],
    }
}

fn helper_case(id: u32) -> HelperCase {
    let name = linerate_bpf::helpers::helper_name(id);
    let mut c = HelperCase {
        id,
        units: 200,
        calls: 1,
        expect: None,
        minus: Vec::new(),
        note: format!("back-to-back `{name}` calls"),
    };
    match id {
        helper::TRACE_PRINTK => {
            c.units = 20;
            c.minus = vec![
                ("alu64.mov.reg", 1.0),
                ("alu64.add.imm", 1.0),
                ("alu64.mov.imm", 4.0),
            ];
            c.note = "`trace_printk(\"lr %d %u %llx\\n\", 16, ...)`: three integer conversions, \
                      the most arguments the helper takes (it writes a line to the trace buffer \
                      each call; longer formats and %s cost more), minus argument setup"
                .into();
        }
        helper::GET_SMP_PROCESSOR_ID => c.units = 1000,
        helper::REDIRECT => {
            c.units = 500;
            c.expect = Some(XDP_REDIRECT as u32);
            c.minus = vec![("alu64.mov.imm", 2.0)];
            c.note = "`redirect(1, 0)`, minus argument setup".into();
        }
        helper::CSUM_DIFF => {
            c.minus = vec![
                ("alu64.mov.reg", 2.0),
                ("alu64.add.imm", 2.0),
                ("alu64.mov.imm", 3.0),
            ];
            c.note = format!(
                "`csum_diff` of {CSUM_BYTES} bytes removed and {CSUM_BYTES} added (a header \
                 rewrite), minus argument setup"
            );
        }
        helper::XDP_ADJUST_HEAD | helper::XDP_ADJUST_META | helper::XDP_ADJUST_TAIL => {
            c.units = 100;
            c.calls = 2;
            c.expect = Some(0);
            c.minus = vec![("alu64.mov.reg", 1.0), ("alu64.mov.imm", 1.0)];
            let (first, second) = if id == helper::XDP_ADJUST_TAIL {
                (ADJUST_BYTES, -ADJUST_BYTES)
            } else {
                (-ADJUST_BYTES, ADJUST_BYTES)
            };
            c.note = format!(
                "pairs `{name}({first})`, `{name}({second})` (the packet is left as it was), \
                 per call, minus argument setup"
            );
        }
        helper::REDIRECT_MAP => {
            c.expect = Some(XDP_REDIRECT as u32);
            c.minus = vec![("ld_imm64", 1.0), ("alu64.mov.imm", 2.0)];
            c.note = "`redirect_map`, minus argument setup".into();
        }
        helper::FIB_LOOKUP => {
            c.units = 100;
            c.minus = vec![
                ("store.stack.u32", 1.0),
                ("alu64.mov.reg", 2.0),
                ("alu64.add.imm", 1.0),
                ("alu64.mov.imm", 2.0),
            ];
            c.note = "`fib_lookup` (IPv4, ingress lo) of a destination routed by the host's \
                      default route, minus argument setup and the store resetting the ifindex"
                .into();
        }
        helper::XDP_GET_BUFF_LEN => {
            c.units = 500;
            c.minus = vec![("alu64.mov.reg", 1.0)];
            c.note = "`xdp_get_buff_len`, minus argument setup".into();
        }
        helper::XDP_LOAD_BYTES | helper::XDP_STORE_BYTES => {
            c.expect = Some(0);
            c.minus = vec![
                ("alu64.mov.reg", 2.0),
                ("alu64.add.imm", 1.0),
                ("alu64.mov.imm", 2.0),
            ];
            c.note = format!("`{name}` of {COPY_BYTES} bytes at offset 0, minus argument setup");
        }
        _ => {}
    }
    c
}

/// Emits `r0` checks after a call: `if r0 != expect goto fail` (or `if r0 == 0` for lookups).
fn check_r0(a: &mut Asm, expect: Expect, fail: Label) {
    match expect {
        Expect::Eq(v) => a.jcc(true, Cond::Ne, R0, Operand::Imm(v), fail),
        Expect::NonNull => a.jcc(true, Cond::Eq, R0, Operand::Imm(0), fail),
    }
}

#[derive(Clone, Copy)]
enum Expect {
    Eq(i32),
    NonNull,
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
    a.extend([mov(R0, XDP_PASS as i32), exit()]);
    a.tail_block(fail, [addi(R0, PROBE_FAIL as i32), exit()]);
    a.tail_block(setup_fail, [mov(R0, 1), exit()]);
    a.finish().insns
}

/// Maps `redirect_map` is timed on (map index in the helper group, name), each with slot 0
/// occupied: lo in the device maps, a 192-packet queue on CPU 0 in the CPU map. The helper's work
/// is a lookup in the target map, whose code differs per type.
pub(crate) const REDIRECT_TARGETS: [(u32, &str); 3] =
    [(0, "devmap"), (1, "devmap_hash"), (2, "cpumap")];

/// `redirect_map(map, 0, 0)` on the helper group's map `map`.
fn redirect_map_insns(map: u32) -> Vec<Instruction> {
    vec![
        ld64(R1, Imm64::Map(map)),
        mov(R2, 0),
        mov(R3, 0),
        call(helper::REDIRECT_MAP),
    ]
}

fn helper_group() -> Group {
    let mut g = Group::new("helper");
    g.maps.push(plain_map("devmap", MapType::DEVMAP, 4, 4, 1));
    g.maps
        .push(plain_map("devmap_hash", MapType::DEVMAP_HASH, 4, 4, 1));
    g.maps.push(plain_map("cpumap", MapType::CPUMAP, 4, 4, 1));
    let slot0 = 0u32.to_le_bytes().to_vec();
    g.populate
        .push((0, slot0.clone(), 1u32.to_le_bytes().to_vec()));
    g.populate
        .push((1, slot0.clone(), 1u32.to_le_bytes().to_vec()));
    g.populate.push((2, slot0, 192u32.to_le_bytes().to_vec()));
    g.timed("helper base", program(helper_setup, 0, |_, _, _| {}), None);
    for id in COSTED_HELPERS {
        if id == helper::REDIRECT_MAP {
            for (map, name) in REDIRECT_TARGETS {
                let key = format!("aux.redirect_map.{name}");
                let c = helper_case(id);
                let insns = program(helper_setup, c.units, |a, _, _| {
                    a.extend(redirect_map_insns(map))
                });
                let mut bench = Bench::new(&key, "helper base", c.units)
                    .note("`redirect_map` to an occupied slot of the map, minus argument setup");
                for (m, n) in &c.minus {
                    bench = bench.minus(*m, *n);
                }
                g.timed(format!("{key} x{}", c.units), insns, Some(bench));
                let mut a = Asm::new();
                let setup_fail = a.label();
                helper_setup(&mut a, setup_fail);
                a.extend(redirect_map_insns(map));
                a.push(exit());
                a.tail_block(setup_fail, [mov(R0, 1), exit()]);
                g.probe(&key, a.finish().insns, c.expect);
            }
            continue;
        }
        let c = helper_case(id);
        let key = Item::Helper(id).to_string();
        let unit = |a: &mut Asm, _k: u32, fail: Option<Label>| {
            for step in 0..c.calls {
                a.extend(helper_call_insns(c.id, step));
                if let (Some(fail), Some(e)) = (fail, c.expect) {
                    check_r0(a, Expect::Eq(e as i32), fail);
                }
            }
        };
        let insns = program(helper_setup, c.units, |a, k, _| unit(a, k, None));
        let mut bench = Bench::new(&key, "helper base", c.units).note(&c.note);
        bench.per_unit = c.calls as f64;
        for (m, n) in &c.minus {
            bench = bench.minus(*m, *n * c.calls as f64);
        }
        g.timed(format!("{key} x{}", c.units), insns, Some(bench));
        g.programs.last_mut().expect("just pushed").needs_forwarding = id == helper::FIB_LOOKUP;
        // The probe runs one unit and returns the last result (or a failed check).
        let probe = {
            let mut a = Asm::new();
            let fail = a.label();
            let setup_fail = a.label();
            helper_setup(&mut a, setup_fail);
            for step in 0..c.calls {
                a.extend(helper_call_insns(c.id, step));
                if step + 1 < c.calls {
                    if let Some(e) = c.expect {
                        check_r0(&mut a, Expect::Eq(e as i32), fail);
                    }
                }
            }
            a.push(exit());
            a.tail_block(fail, [addi(R0, PROBE_FAIL as i32), exit()]);
            a.tail_block(setup_fail, [mov(R0, 1), exit()]);
            a.finish().insns
        };
        g.probe(&key, probe, c.expect);
        if id == helper::FIB_LOOKUP {
            g.programs.last_mut().expect("probe").needs_forwarding = true;
        }
    }
    g
}

// ---------------------------------------------------------------------------------------------
// Map operations.

/// One map under test with the key data its programs use.
pub(crate) struct MapCase {
    pub map_type: MapType,
    pub key_size: u32,
}

impl MapCase {
    fn name(&self) -> String {
        format!("{}.k{}", self.map_type.name(), self.key_size)
    }

    fn is_array(&self) -> bool {
        self.map_type.is_array_like()
    }

    fn max_entries(&self) -> u32 {
        if self.is_array() {
            POPULATION
        } else {
            2 * POPULATION
        }
    }

    /// The key of populated entry `i`.
    fn entry_key(&self, i: u32) -> Vec<u8> {
        let ks = self.key_size as usize;
        if self.map_type == MapType::LPM_TRIE {
            return self.lpm_key(i, false, ks == 8, false);
        }
        if self.is_array() {
            return i.to_le_bytes().to_vec();
        }
        let mut key: Vec<u8> = (0..ks).map(|j| (j as u8).wrapping_mul(37) ^ 0x5a).collect();
        key[..4].copy_from_slice(&i.to_le_bytes());
        key
    }

    /// An LPM key: prefix `i` (IPv4 10.a.b.0/24 or IPv6 2001:db8:a:b::/64; `fresh`: a prefix
    /// not in the trie), or with `host` a full-length address inside it.
    fn lpm_key(&self, i: u32, fresh: bool, v4: bool, host: bool) -> Vec<u8> {
        let (hi, lo) = ((i >> 8) as u8, i as u8);
        let (plen, data): (u32, Vec<u8>) = if v4 {
            let first = if fresh { 11 } else { 10 };
            if host {
                (32, vec![first, hi, lo, 7])
            } else {
                (24, vec![first, hi, lo, 0])
            }
        } else {
            let third = if fresh { 0xb9 } else { 0xb8 };
            let mut d = vec![
                0x20, 0x01, 0x0d, third, 0, 0, hi, lo, 0, 0, 0, 0, 0, 0, 0, 0,
            ];
            if host {
                d[15] = 7;
                (128, d)
            } else {
                (64, d)
            }
        };
        let mut key = plen.to_le_bytes().to_vec();
        key.extend(data);
        key
    }

    /// Populated entry the `n`-th key of the lookups and updates uses (spread over the map).
    fn used_entry(n: usize) -> u32 {
        (n as u32 * 61) % POPULATION
    }

    /// The key data: a value, then lookup keys, update keys, fresh keys.
    fn data(&self) -> Vec<u8> {
        let ks = self.key_size as usize;
        let mut d = vec![0u8; DATA_KEYS + 3 * KEYS * ks];
        d[DATA_VALUE..DATA_VALUE + 8].copy_from_slice(&0x1122_3344_5566_7788u64.to_le_bytes());
        for n in 0..KEYS {
            let e = Self::used_entry(n);
            let (lookup, update, fresh) = if self.map_type == MapType::LPM_TRIE {
                let v4 = ks == 8;
                (
                    self.lpm_key(e, false, v4, true),
                    self.lpm_key(e, false, v4, false),
                    self.lpm_key(e, true, v4, false),
                )
            } else {
                let fresh = if self.is_array() {
                    self.entry_key(e)
                } else {
                    self.entry_key(POPULATION * 4 + n as u32)
                };
                (self.entry_key(e), self.entry_key(e), fresh)
            };
            for (set, key) in [lookup, update, fresh].into_iter().enumerate() {
                let at = DATA_KEYS + (set * KEYS + n) * ks;
                d[at..at + ks].copy_from_slice(&key);
            }
        }
        d
    }

    fn key_offset(&self, set: usize, n: usize) -> u32 {
        (DATA_KEYS + (set * KEYS + n % KEYS) * self.key_size as usize) as u32
    }
}

pub(crate) fn map_cases() -> Vec<MapCase> {
    let mut out = Vec::new();
    for map_type in COSTED_MAP_TYPES {
        let sizes: &[u32] = if map_type.is_array_like() {
            &[4]
        } else if map_type == MapType::LPM_TRIE {
            &LPM_KEY_SIZES
        } else {
            &HASH_KEY_SIZES
        };
        for &key_size in sizes {
            out.push(MapCase { map_type, key_size });
        }
    }
    out
}

/// Operations a map unit performs.
#[derive(Clone, Copy, PartialEq, Eq)]
enum MapUnit {
    Lookup,
    Update,
    Delete,
    /// Insert a fresh key, then delete it.
    Pair,
}

fn map_group() -> Group {
    let mut g = Group::new("map");
    let setup = |a: &mut Asm, _: Label| a.extend([mov(R6, 0)]);
    g.timed("map base", program(setup, 0, |_, _, _| {}), None);
    for (c, case) in map_cases().iter().enumerate() {
        let map = (2 * c) as u32;
        let data = map + 1;
        let name = case.name();
        g.maps.push(plain_map(
            &format!("m.{name}"),
            case.map_type,
            case.key_size,
            VALUE_SIZE,
            case.max_entries(),
        ));
        g.maps.push(data_map(&format!("keys.{name}"), case.data()));
        let value = vec![0xabu8; VALUE_SIZE as usize];
        for i in 0..POPULATION {
            let key = if case.map_type == MapType::LPM_TRIE {
                case.lpm_key(i, false, case.key_size == 8, false)
            } else {
                case.entry_key(i)
            };
            g.populate.push((map as usize, key, value.clone()));
        }
        let mut units_of: Vec<(MapUnit, String)> = vec![
            (
                MapUnit::Lookup,
                Item::Map {
                    op: MapOp::Lookup,
                    map_type: case.map_type,
                    key_size: case.key_size,
                }
                .to_string(),
            ),
            (MapUnit::Update, format!("aux.map.overwrite.{name}")),
        ];
        if case.is_array() {
            units_of.push((
                MapUnit::Delete,
                Item::Map {
                    op: MapOp::Delete,
                    map_type: case.map_type,
                    key_size: case.key_size,
                }
                .to_string(),
            ));
        } else {
            units_of.push((MapUnit::Pair, format!("aux.map.pair.{name}")));
        }
        for (kind, key) in units_of {
            let emit = |a: &mut Asm, k: u32, fail: Option<Label>| {
                let k = k as usize;
                let key_at = |set| Imm64::MapValue {
                    map: data,
                    offset: case.key_offset(set, k),
                };
                let value_at = Imm64::MapValue {
                    map: data,
                    offset: DATA_VALUE as u32,
                };
                let check = |a: &mut Asm, e: Expect| {
                    if let Some(fail) = fail {
                        check_r0(a, e, fail);
                    }
                };
                match kind {
                    MapUnit::Lookup => {
                        a.extend([
                            ld64(R1, Imm64::Map(map)),
                            ld64(R2, key_at(0)),
                            call(helper::MAP_LOOKUP_ELEM),
                        ]);
                        check(a, Expect::NonNull);
                    }
                    MapUnit::Update => {
                        a.extend([
                            ld64(R1, Imm64::Map(map)),
                            ld64(R2, key_at(1)),
                            ld64(R3, value_at),
                            mov(R4, 0),
                            call(helper::MAP_UPDATE_ELEM),
                        ]);
                        check(a, Expect::Eq(0));
                    }
                    MapUnit::Delete => {
                        a.extend([
                            ld64(R1, Imm64::Map(map)),
                            ld64(R2, key_at(1)),
                            call(helper::MAP_DELETE_ELEM),
                        ]);
                        check(a, Expect::Eq(-(EINVAL as i32)));
                    }
                    MapUnit::Pair => {
                        a.extend([
                            ld64(R1, Imm64::Map(map)),
                            ld64(R2, key_at(2)),
                            ld64(R3, value_at),
                            mov(R4, 0),
                            call(helper::MAP_UPDATE_ELEM),
                        ]);
                        check(a, Expect::Eq(0));
                        a.extend([
                            ld64(R1, Imm64::Map(map)),
                            ld64(R2, key_at(2)),
                            call(helper::MAP_DELETE_ELEM),
                        ]);
                        check(a, Expect::Eq(0));
                    }
                }
            };
            // Inlined array lookups: code within the 32 KiB instruction cache.
            let units = match (kind, case.is_array()) {
                (MapUnit::Lookup, true) => 400,
                (MapUnit::Pair, _) => 100,
                _ => 200,
            };
            let (minus, note): (Vec<(&str, f64)>, String) = match kind {
                MapUnit::Lookup => (
                    vec![("ld_imm64", 2.0)],
                    format!(
                        "lookups that hit, cycling over {KEYS} keys of a map holding {POPULATION} \
                         entries{}, minus argument setup",
                        if case.map_type == MapType::LPM_TRIE {
                            " (full-length addresses inside the stored prefixes)"
                        } else {
                            ""
                        }
                    ),
                ),
                MapUnit::Update => (
                    vec![("ld_imm64", 3.0), ("alu64.mov.imm", 1.0)],
                    format!("updates (BPF_ANY) overwriting existing entries, {KEYS} keys"),
                ),
                MapUnit::Delete => (
                    vec![("ld_imm64", 2.0)],
                    "deletes (arrays refuse them with -EINVAL), minus argument setup".into(),
                ),
                MapUnit::Pair => (
                    vec![("ld_imm64", 5.0), ("alu64.mov.imm", 1.0)],
                    format!("insert of a new key then its delete, {KEYS} keys"),
                ),
            };
            let mut bench = Bench::new(&key, "map base", units).note(note);
            for (m, n) in minus {
                bench = bench.minus(m, n);
            }
            g.timed(
                format!("{key} x{units}"),
                program(setup, units, |a, k, _| emit(a, k, None)),
                Some(bench),
            );
            g.probe(
                &key,
                probe_program(setup, KEYS as u32, |a, k, fail| emit(a, k, Some(fail))),
                Some(XDP_PASS as u32),
            );
        }
    }
    g
}

// ---------------------------------------------------------------------------------------------
// Tail calls.

fn tail_call_group() -> Group {
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
            ld64(R2, Imm64::Map(map)),
            mov(R3, 0),
            call(helper::TAIL_CALL),
            mov(R0, XDP_PASS as i32),
            exit(),
        ]
    };
    let indirect = |map: u32| {
        vec![
            ldx_ctx(R3, R1, xdp_md::RX_QUEUE_INDEX),
            ld64(R2, Imm64::Map(map)),
            call(helper::TAIL_CALL),
            mov(R0, XDP_PASS as i32),
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
    use std::collections::HashSet;

    #[test]
    fn jump_values_decide_the_outcome() {
        for cond in Cond::ALL {
            assert_ne!(jump_value(cond, true), jump_value(cond, false));
        }
    }

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
        // Every non-map item of the universe but the derived ones has a bench.
        for item in linerate_cost::item::universe() {
            let key = item.to_string();
            let derived = key.starts_with("load.ctx.")
                || key == "may_goto.taken"
                || key == "exit"
                || key == "tail_call"
                || key == "helper.redirect_map";
            let placed = benches.contains(format!("{key}@0").as_str());
            assert!(
                derived || placed || benches.contains(key.as_str()),
                "{key} has no bench"
            );
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

    #[test]
    fn map_key_data_is_distinct() {
        for case in map_cases() {
            let d = case.data();
            let ks = case.key_size as usize;
            let keys: HashSet<&[u8]> = (0..KEYS)
                .map(|n| &d[DATA_KEYS + n * ks..DATA_KEYS + (n + 1) * ks])
                .collect();
            assert_eq!(keys.len(), KEYS, "{}", case.name());
        }
    }
}
