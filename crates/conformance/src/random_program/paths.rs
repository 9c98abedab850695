//! Random loop-free XDP programs with a controlled number of paths, for the soundness tests of
//! `linerate bound` (issue 9 item 8) and the differential test against the kernel.
//!
//! Where [`super::objects`] stresses every instruction form, this generator builds programs the
//! way packet-processing code is written: forward branches only, on the packet's length (the
//! bounds checks against `data_end`), on packet bytes, on values read from map entries, on what a
//! map update or deletion returned and, when [`GenOptions::time_random`] allows it, on the clock
//! and on random numbers; map lookups in an array and a hash map with the NULL check the verifier
//! demands, reads, writes and atomic additions through the value pointer, map updates and
//! deletions, packet writes, and returns of an XDP action (a constant or computed) from any
//! branch. A program has at most [`GenOptions::branches`] conditional branches and at most
//! [`GenOptions::max_paths`] paths from its entry to an exit, so that tests can ask for a
//! handful of paths or a few thousand.
//!
//! ```
//! use linerate_conformance::random_program::paths::{generate, GenOptions};
//!
//! let options = GenOptions { branches: 8, ..GenOptions::default() };
//! let generated = generate(7, &options);
//! assert!(generated.paths <= options.max_paths);
//! assert!(generated.branches <= 8);
//! // The object has one XDP program; seed its maps with `generated.seed_maps` in every engine,
//! // then run it on `generated.packets(1, 10)`.
//! assert_eq!(generated.object.programs.len(), 1);
//! ```
//!
//! # The program
//!
//! `r6` holds the context, `r7` the packet's `data` and `r8` its `data_end`, for the whole
//! program (helpers keep r6–r9, and none of the helpers used moves the packet). The program
//! computes with eight 64-bit *variables* in stack slots (`v0` at `r10 - 8` ... `v7` at
//! `r10 - 64`), each statement loading what it needs into r0–r5, so every value stays visible to
//! the verifier and no register is live across a call. A packet access at offset `o` of `n` bytes
//! only appears where a dominating length check proved `o + n` bytes. A value pointer is spilled
//! to a slot per lookup nesting depth right after its NULL check and reloaded where it is used,
//! only inside the branch where the lookup hit. While a hash map's value pointer is live, the
//! program neither updates nor deletes from the hash map (the kernel frees the element and may
//! hand it out again; what the pointer then sees is no map state an engine could describe).
//!
//! | bytes from r10 | what                                                  |
//! |----------------|-------------------------------------------------------|
//! | `-64 .. 0`     | the variables `v7` .. `v0`                            |
//! | `-72 .. -64`   | the key of a lookup, update or deletion               |
//! | `-88 .. -72`   | the value of an update                                |
//! | `-112 .. -88`  | value pointers of lookups nested 0, 1, 2 deep         |
//!
//! # Paths
//!
//! [`GeneratedProgram::paths`] counts the paths through the program's control-flow graph from the
//! entry to an exit, each conditional jump being a choice of two: an upper bound on the feasible
//! paths (some are infeasible: a check of a length already proved, an array lookup of a key that
//! is always in range, contradicting branches on the same byte).

mod lower;

use std::collections::BTreeSet;

use linerate_bpf::contents::MapSeed;
use linerate_bpf::insn::{AluOp, Cond, Size};
use linerate_bpf::{MapDef, MapType, Object, Program};
use linerate_testkit::XorShift;

/// Index of the array map in a generated object.
pub const ARRAY_MAP: usize = 0;
/// Index of the hash map in a generated object.
pub const HASH_MAP: usize = 1;
/// Entries of the array map (keys `0..ARRAY_ENTRIES`).
pub const ARRAY_ENTRIES: u32 = 4;
/// Entries the hash map holds at most (its keys are `u64`).
pub const HASH_ENTRIES: u32 = 8;
/// Value bytes of both maps.
pub const VALUE_BYTES: u32 = 16;
/// Shortest packet `BPF_PROG_TEST_RUN` accepts; [`GeneratedProgram::packets`] makes none shorter.
pub const MIN_PACKET: usize = 14;

/// Variables (stack slots) a program computes with.
const VARS: u8 = 8;
/// Deepest nesting of map lookups.
const MAX_DEPTH: usize = 3;
/// Packet lengths the length checks compare against.
const LENGTHS: [i16; 10] = [14, 15, 20, 24, 34, 38, 42, 54, 60, 64];

/// What a generated program may contain.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GenOptions {
    /// Most conditional branches (length checks, NULL checks, comparisons) in the program. The
    /// program has exactly this many unless [`GenOptions::max_paths`] stopped the generator
    /// earlier or both sides of a branch returned with budget left.
    pub branches: usize,
    /// Most paths from the entry to an exit (see the module documentation): the generator stops
    /// adding branches before the count would exceed it. The differential test covers up to 32
    /// branches and 20,000 paths; the verifier also took every one of 40 programs of 100
    /// branches and up to ten million paths (its state pruning merges the paths).
    pub max_paths: u64,
    /// Whether the program may call `bpf_ktime_get_ns` and `bpf_get_prandom_u32` and branch on
    /// their results (such a program is [`GeneratedProgram::nondeterministic`]).
    pub time_random: bool,
    /// Whether the program may update and delete map entries (lookups and writes through value
    /// pointers are always allowed).
    pub map_writes: bool,
    /// Whether the program may write packet bytes.
    pub packet_writes: bool,
}

impl Default for GenOptions {
    fn default() -> GenOptions {
        GenOptions {
            branches: 10,
            max_paths: 4096,
            time_random: false,
            map_writes: true,
            packet_writes: true,
        }
    }
}

/// A generated program and what callers need to run it.
#[derive(Clone, Debug)]
pub struct GeneratedProgram {
    /// One XDP program, `prog`, and two maps: `arr` ([`ARRAY_MAP`]) and `hash` ([`HASH_MAP`]).
    pub object: Object,
    /// The maps' initial entries: seed both engines with it before the first packet.
    pub seed_maps: MapSeed,
    /// The program as C-like pseudo-code, for failure messages.
    pub description: String,
    /// Paths from the entry to an exit in the control-flow graph (an upper bound on the feasible
    /// ones).
    pub paths: u64,
    /// Conditional branches in the program.
    pub branches: usize,
    /// Whether the program calls `bpf_ktime_get_ns` or `bpf_get_prandom_u32`: what it does may
    /// depend on values the kernel cannot be made to repeat, so only the interpreter can check a
    /// prediction about it.
    pub nondeterministic: bool,
    /// What the program contains: what its branches test (`"length check"`, `"branch on packet
    /// byte"`, `"branch on map value"`, `"branch on variable"`, `"branch on helper result"`,
    /// `"branch on time/random"`), the lookups (`"array lookup"`, `"hash lookup"`), the helpers
    /// (`"map_update_elem"`, `"map_delete_elem"`, `"ktime_get_ns"`, `"get_prandom_u32"`), the
    /// accesses (`"packet read"`, `"packet store"`, `"map value read"`, `"map value store"`,
    /// `"atomic add on a map value"`) and `"early return"`, `"computed action"`.
    pub features: BTreeSet<&'static str>,
    /// The longest packet length any length check compares against.
    pub longest_check: usize,
}

/// The program of `seed` under `options`: the same seed and options give the same program.
pub fn generate(seed: u64, options: &GenOptions) -> GeneratedProgram {
    let mut gen = Gen {
        rng: XorShift::new(mix(seed)),
        options,
        branches: 0,
        features: BTreeSet::new(),
    };
    let body = gen.top();
    let (fall, exits) = flow(&body);
    debug_assert_eq!(fall, 0, "the top-level block ends in a return");
    let mut lowered = lower::lower(&body);
    let seed_maps = gen.seed_maps();
    let program = Program::from_instructions("prog", "xdp", &lowered.insns);
    lowered.features.append(&mut gen.features);
    GeneratedProgram {
        object: Object::with_programs("paths", vec![program], maps()),
        seed_maps,
        description: lower::describe(&body),
        paths: exits,
        branches: gen.branches,
        nondeterministic: lowered.features.contains("ktime_get_ns")
            || lowered.features.contains("get_prandom_u32"),
        features: lowered.features,
        longest_check: lowered.longest_check as usize,
    }
}

impl GeneratedProgram {
    /// `count` random packets for this program, from `seed`: lengths from [`MIN_PACKET`] to a
    /// few bytes past [`GeneratedProgram::longest_check`], often right at or just below a
    /// checked length; bytes mostly from the small values the program compares against.
    pub fn packets(&self, seed: u64, count: usize) -> Vec<Vec<u8>> {
        let mut rng = XorShift::new(mix(seed ^ 0x5061_636b_6574));
        let longest = self.longest_check.max(MIN_PACKET) + 8;
        (0..count)
            .map(|_| {
                let len = match rng.below(3) {
                    0 => MIN_PACKET + rng.below(longest - MIN_PACKET + 1),
                    _ => {
                        let checked = LENGTHS[rng.below(LENGTHS.len())] as usize;
                        (checked + rng.below(3)).saturating_sub(1).max(MIN_PACKET)
                    }
                };
                (0..len).map(|_| small_byte(&mut rng)).collect()
            })
            .collect()
    }
}

/// The maps of every generated object, in index order.
fn maps() -> Vec<MapDef> {
    vec![
        MapDef::new("arr", MapType::ARRAY, 4, VALUE_BYTES, ARRAY_ENTRIES),
        MapDef::new("hash", MapType::HASH, 8, VALUE_BYTES, HASH_ENTRIES),
    ]
}

/// A well-spread non-zero generator state from any seed (xorshift's zero state is stuck): the
/// SplitMix64 finaliser (Steele, Lea and Flood, OOPSLA 2014), with the low bit set.
fn mix(seed: u64) -> u64 {
    let mut z = seed.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    (z ^ (z >> 31)) | 1
}

/// A byte that the programs' comparisons often hit.
fn small_byte(rng: &mut XorShift) -> u8 {
    const BYTES: [u8; 8] = [0, 1, 2, 3, 0x7f, 0x80, 0xff, 8];
    match rng.below(3) {
        0 => rng.next_u64() as u8,
        _ => BYTES[rng.below(BYTES.len())],
    }
}

// ---------------------------------------------------------------------------------------------
// The program as a tree

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum MapKind {
    Array,
    Hash,
}

/// A variable or an immediate.
#[derive(Clone, Copy, Debug)]
enum Src {
    Var(u8),
    Imm(i32),
}

#[derive(Clone, Copy, Debug)]
enum Expr {
    Imm(i32),
    Packet {
        size: Size,
        off: i16,
    },
    /// A field of the value the lookup at nesting `depth` found.
    Value {
        depth: usize,
        size: Size,
        off: i16,
    },
    Alu {
        wide: bool,
        op: AluOp,
        a: u8,
        b: Src,
    },
    Time,
    Random,
}

/// A map key: an immediate, or a variable (masked with `mask` when given).
#[derive(Clone, Copy, Debug)]
struct Key {
    src: Src,
    mask: Option<i32>,
}

#[derive(Clone, Copy, Debug)]
enum Test {
    /// The packet holds at least this many bytes.
    Len(i16),
    Cmp {
        wide: bool,
        cond: Cond,
        var: u8,
        rhs: Src,
    },
}

#[derive(Clone, Copy, Debug)]
enum Ret {
    Action(i32),
    /// A variable's low two bits: `XDP_ABORTED` to `XDP_TX`.
    Var(u8),
}

#[derive(Clone, Debug)]
enum Stmt {
    Set {
        var: u8,
        expr: Expr,
    },
    PacketStore {
        size: Size,
        off: i16,
        var: u8,
    },
    ValueStore {
        depth: usize,
        size: Size,
        off: i16,
        src: Src,
    },
    /// `lock *(size *)(value + off) += var`.
    ValueAdd {
        depth: usize,
        size: Size,
        off: i16,
        var: u8,
    },
    Update {
        map: MapKind,
        key: Key,
        value: [Src; 2],
        flags: i32,
        result: Option<u8>,
    },
    Delete {
        map: MapKind,
        key: Key,
        result: Option<u8>,
    },
    If {
        test: Test,
        then: Vec<Stmt>,
        els: Vec<Stmt>,
    },
    Lookup {
        map: MapKind,
        key: Key,
        depth: usize,
        hit: Vec<Stmt>,
        miss: Vec<Stmt>,
    },
    Return(Ret),
}

/// `(paths that fall through, paths that return)` of a block; saturating.
fn flow(block: &[Stmt]) -> (u64, u64) {
    let (mut fall, mut exits) = (1u64, 0u64);
    for stmt in block {
        let (f, e) = match stmt {
            Stmt::If { then, els, .. } => arms(then, els),
            Stmt::Lookup { hit, miss, .. } => arms(hit, miss),
            Stmt::Return(_) => (0, 1),
            _ => (1, 0),
        };
        exits = exits.saturating_add(fall.saturating_mul(e));
        fall = fall.saturating_mul(f);
    }
    (fall, exits)
}

fn arms(a: &[Stmt], b: &[Stmt]) -> (u64, u64) {
    let (fa, ea) = flow(a);
    let (fb, eb) = flow(b);
    (fa.saturating_add(fb), ea.saturating_add(eb))
}

/// Whether no path through `block` falls through its end.
fn terminates(block: &[Stmt]) -> bool {
    flow(block).0 == 0
}

// ---------------------------------------------------------------------------------------------
// Generation

/// How a generated block ends.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum End {
    Return,
    /// Now and then in a return.
    Maybe,
    /// Falling through.
    Fall,
}

/// What a statement may use where it is placed.
#[derive(Clone, Debug, Default)]
struct Scope {
    /// Packet bytes a dominating length check proved.
    known_len: i16,
    /// The maps of the lookups whose value pointers are live, by nesting depth.
    values: Vec<MapKind>,
    /// Variables (a bit each) last set from the program's inputs (packet bytes, map values,
    /// helper results, clock, random numbers) or from them by arithmetic, on the path through
    /// this block: branches compare them rather than constants, so both sides are taken.
    inputs: u8,
}

impl Scope {
    fn hash_live(&self) -> bool {
        self.values.contains(&MapKind::Hash)
    }

    fn is_input(&self, var: u8) -> bool {
        self.inputs & (1 << var) != 0
    }
}

struct Gen<'o> {
    rng: XorShift,
    options: &'o GenOptions,
    /// Conditional branches placed so far.
    branches: usize,
    /// What the branches test (the rest of the features come from the lowering).
    features: BTreeSet<&'static str>,
}

const CMP_IMMS: [i32; 12] = [0, 1, 2, 3, 8, 0x7f, 0x80, 0xff, 0x100, 0x7fff, 0xffff, -1];
const ALU_OPS: [AluOp; 11] = [
    AluOp::Add,
    AluOp::Sub,
    AluOp::Mul,
    AluOp::Div,
    AluOp::Mod,
    AluOp::Or,
    AluOp::And,
    AluOp::Xor,
    AluOp::Lsh,
    AluOp::Rsh,
    AluOp::Arsh,
];
const SIZES: [Size; 4] = [Size::B, Size::H, Size::W, Size::Dw];
/// `BPF_ANY`, `BPF_NOEXIST`, `BPF_EXIST` (include/uapi/linux/bpf.h), weighted towards `BPF_ANY`.
const UPDATE_FLAGS: [i32; 4] = [0, 0, 1, 2];

impl Gen<'_> {
    fn below(&mut self, n: usize) -> usize {
        self.rng.below(n)
    }

    fn chance(&mut self, one_in: usize) -> bool {
        self.below(one_in) == 0
    }

    fn pick<T: Copy>(&mut self, items: &[T]) -> T {
        items[self.below(items.len())]
    }

    fn var(&mut self) -> u8 {
        self.below(VARS as usize) as u8
    }

    fn src(&mut self) -> Src {
        if self.chance(2) {
            Src::Var(self.var())
        } else {
            Src::Imm(self.pick(&CMP_IMMS))
        }
    }

    /// The top-level block: segments while the branch budget and the path cap allow, then a
    /// return.
    fn top(&mut self) -> Vec<Stmt> {
        let mut scope = Scope::default();
        let mut body = Vec::new();
        let mut failures = 0;
        while self.branches < self.options.branches && failures < 4 {
            let left = self.options.branches - self.branches;
            let budget = 1 + self.below(left.min(3));
            let placed = self.branches;
            let mut segment = self.straight_run(&scope);
            let mut inner_scope = scope.clone();
            for stmt in &segment {
                narrow(stmt, &mut inner_scope);
            }
            segment.extend(self.branching(&inner_scope, budget - 1));
            let mut candidate = body.clone();
            candidate.extend(segment.iter().cloned());
            let (fall, exits) = flow(&candidate);
            if fall.saturating_add(exits) > self.options.max_paths {
                self.branches = placed;
                failures += 1;
                continue;
            }
            for stmt in &segment {
                narrow(stmt, &mut scope);
            }
            body = candidate;
        }
        body.extend(self.straight_run(&scope));
        body.push(Stmt::Return(self.ret()));
        body
    }

    /// A block spending `budget` branches, ending as `end` says. Paths leave it early only
    /// through one side of a branch: no branch returns on both sides, so that the budget is
    /// spent and paths multiply.
    fn block(&mut self, scope: &Scope, mut budget: usize, end: End) -> Vec<Stmt> {
        let mut scope = scope.clone();
        let mut out = Vec::new();
        loop {
            let run = self.straight_run(&scope);
            for stmt in &run {
                narrow(stmt, &mut scope);
            }
            out.extend(run);
            if budget == 0 {
                break;
            }
            let inner = self.below(budget);
            budget -= 1 + inner;
            let stmts = self.branching(&scope, inner);
            for stmt in &stmts {
                narrow(stmt, &mut scope);
            }
            out.extend(stmts);
        }
        let returns = match end {
            End::Return => true,
            End::Maybe => self.chance(8),
            End::Fall => false,
        };
        if returns {
            out.push(Stmt::Return(self.ret()));
        }
        out
    }

    /// How the second side of a branch ends, given the first.
    fn second_end(&mut self, first: &[Stmt]) -> End {
        if terminates(first) {
            End::Fall
        } else if self.chance(4) {
            // A guard: `if (data + n > data_end) return XDP_DROP;`.
            End::Return
        } else {
            End::Maybe
        }
    }

    fn ret(&mut self) -> Ret {
        if self.chance(3) {
            Ret::Var(self.var())
        } else {
            Ret::Action(self.below(4) as i32)
        }
    }

    /// Zero to two straight-line statements.
    fn straight_run(&mut self, scope: &Scope) -> Vec<Stmt> {
        let mut scope = scope.clone();
        let mut out = Vec::new();
        for _ in 0..self.below(3) {
            let stmt = self.straight(&scope);
            narrow(&stmt, &mut scope);
            out.push(stmt);
        }
        out
    }

    /// A variable holding an input where there is one (mostly), else any.
    fn input_var(&mut self, scope: &Scope) -> u8 {
        if scope.inputs != 0 && !self.chance(6) {
            loop {
                let var = self.var();
                if scope.is_input(var) {
                    return var;
                }
            }
        }
        self.var()
    }

    fn straight(&mut self, scope: &Scope) -> Stmt {
        loop {
            match self.below(12) {
                0..=3 => {
                    return Stmt::Set {
                        var: self.var(),
                        expr: self.expr(scope),
                    }
                }
                4 if self.options.packet_writes && scope.known_len > 0 => {
                    let (size, off) = self.packet_place(scope.known_len);
                    return Stmt::PacketStore {
                        size,
                        off,
                        var: self.var(),
                    };
                }
                5 | 6 if !scope.values.is_empty() => {
                    let depth = self.below(scope.values.len());
                    if self.chance(3) {
                        let size = self.pick(&[Size::W, Size::Dw]);
                        return Stmt::ValueAdd {
                            depth,
                            size,
                            off: self.value_offset(size),
                            var: self.var(),
                        };
                    }
                    let size = self.pick(&SIZES);
                    return Stmt::ValueStore {
                        depth,
                        size,
                        off: self.value_offset(size),
                        src: self.src(),
                    };
                }
                7 | 8 if self.options.map_writes => {
                    if let Some(stmt) = self.map_write(scope, None) {
                        return stmt;
                    }
                }
                _ => {}
            }
        }
    }

    /// An update or a deletion (`None` when only the hash map qualifies and is off limits).
    fn map_write(&mut self, scope: &Scope, result: Option<u8>) -> Option<Stmt> {
        let map = self.pick(&[MapKind::Array, MapKind::Hash, MapKind::Hash]);
        if map == MapKind::Hash && scope.hash_live() {
            return None;
        }
        let key = self.key(scope);
        Some(if self.chance(3) {
            Stmt::Delete { map, key, result }
        } else {
            Stmt::Update {
                map,
                key,
                value: [self.src(), self.src()],
                flags: self.pick(&UPDATE_FLAGS),
                result,
            }
        })
    }

    fn key(&mut self, scope: &Scope) -> Key {
        if self.chance(3) {
            Key {
                src: Src::Imm(self.below(10) as i32),
                mask: None,
            }
        } else {
            Key {
                src: Src::Var(self.input_var(scope)),
                mask: (!self.chance(6)).then_some(7),
            }
        }
    }

    fn expr(&mut self, scope: &Scope) -> Expr {
        loop {
            match self.below(10) {
                0 => return Expr::Imm(self.pick(&CMP_IMMS)),
                1..=3 if scope.known_len > 0 => {
                    let (size, off) = self.packet_place(scope.known_len);
                    return Expr::Packet { size, off };
                }
                4 | 5 if !scope.values.is_empty() => return self.value_expr(scope),
                6 | 7 => return self.alu(scope),
                8 if self.options.time_random => {
                    return if self.chance(2) {
                        Expr::Time
                    } else {
                        Expr::Random
                    }
                }
                _ => {}
            }
        }
    }

    fn value_expr(&mut self, scope: &Scope) -> Expr {
        let size = self.pick(&SIZES);
        Expr::Value {
            depth: self.below(scope.values.len()),
            size,
            off: self.value_offset(size),
        }
    }

    /// An ALU operation the verifier accepts: no division by an immediate zero, immediate shifts
    /// below the width.
    fn alu(&mut self, scope: &Scope) -> Expr {
        let wide = self.chance(2);
        let op = self.pick(&ALU_OPS);
        let b = match (op, self.src()) {
            (AluOp::Lsh | AluOp::Rsh | AluOp::Arsh, Src::Imm(i)) => {
                Src::Imm(i.rem_euclid(if wide { 64 } else { 32 }))
            }
            (AluOp::Div | AluOp::Mod, Src::Imm(0)) => Src::Imm(3),
            (_, b) => b,
        };
        Expr::Alu {
            wide,
            op,
            a: self.input_var(scope),
            b,
        }
    }

    /// A `(size, offset)` packet access inside the first `known` bytes (`known > 0`).
    fn packet_place(&mut self, known: i16) -> (Size, i16) {
        let fitting: Vec<Size> = SIZES
            .into_iter()
            .filter(|s| s.bytes() as i16 <= known)
            .collect();
        let size = self.pick(&fitting);
        let off = self.below((known - size.bytes() as i16 + 1) as usize) as i16;
        (size, off)
    }

    /// A size-aligned offset of a `size` field of a map value.
    fn value_offset(&mut self, size: Size) -> i16 {
        let width = size.bytes() as i16;
        width * self.below((VALUE_BYTES as i16 / width) as usize) as i16
    }

    /// One branching statement (preceded by what sets up its test) whose arms spend `inner`
    /// branches between them.
    fn branching(&mut self, scope: &Scope, inner: usize) -> Vec<Stmt> {
        self.branches += 1;
        let mut pre = Vec::new();
        let test = loop {
            // Without a length proved, mostly check one: the packet is the main input.
            let kind = if scope.known_len == 0 && self.chance(2) {
                0
            } else {
                self.below(12)
            };
            match kind {
                0 | 1 => {
                    let longer: Vec<i16> = LENGTHS
                        .into_iter()
                        .filter(|&n| n > scope.known_len)
                        .collect();
                    // Now and then a check already proved: one of its sides is impossible.
                    let n = if longer.is_empty() || self.chance(8) {
                        self.pick(&LENGTHS)
                    } else {
                        self.pick(&longer)
                    };
                    break Test::Len(n);
                }
                2 | 3 if scope.known_len > 0 => {
                    let var = self.var();
                    let (size, off) = self.packet_place(scope.known_len);
                    pre.push(Stmt::Set {
                        var,
                        expr: Expr::Packet { size, off },
                    });
                    self.features.insert("branch on packet byte");
                    break self.compare(var);
                }
                4 | 5 if !scope.values.is_empty() => {
                    let var = self.var();
                    let expr = self.value_expr(scope);
                    pre.push(Stmt::Set { var, expr });
                    self.features.insert("branch on map value");
                    break self.compare(var);
                }
                6 if scope.inputs != 0 => {
                    let var = self.input_var(scope);
                    self.features.insert("branch on variable");
                    break self.compare(var);
                }
                7 if self.options.map_writes => {
                    let var = self.var();
                    if let Some(write) = self.map_write(scope, Some(var)) {
                        pre.push(write);
                        let rhs = Src::Imm(self.pick(&[0, 0, -2, -7, -17]));
                        let cond = self.pick(&[Cond::Eq, Cond::Ne, Cond::Slt, Cond::Sge]);
                        break Test::Cmp {
                            wide: true,
                            cond,
                            var,
                            rhs,
                        };
                    }
                }
                8 if self.options.time_random => {
                    let var = self.var();
                    let expr = self.pick(&[Expr::Time, Expr::Random]);
                    pre.push(Stmt::Set { var, expr });
                    self.features.insert("branch on time/random");
                    break Test::Cmp {
                        wide: true,
                        cond: Cond::Set,
                        var,
                        rhs: Src::Imm(1 << self.below(8)),
                    };
                }
                9..=11 if scope.values.len() < MAX_DEPTH => {
                    pre.extend(self.lookup(scope, inner));
                    return pre;
                }
                _ => {}
            }
        };
        let (mut then_scope, else_scope) = (scope.clone(), scope.clone());
        if let Test::Len(n) = test {
            then_scope.known_len = then_scope.known_len.max(n);
        }
        let split = self.below(inner + 1);
        let then = self.block(&then_scope, split, End::Maybe);
        let end = self.second_end(&then);
        let els = self.block(&else_scope, inner - split, end);
        pre.push(Stmt::If { test, then, els });
        pre
    }

    fn compare(&mut self, var: u8) -> Test {
        let rhs = if self.chance(4) {
            Src::Var(self.var())
        } else {
            Src::Imm(self.pick(&CMP_IMMS))
        };
        Test::Cmp {
            wide: !self.chance(4),
            cond: self.pick(&Cond::ALL),
            var,
            rhs,
        }
    }

    fn lookup(&mut self, scope: &Scope, inner: usize) -> Vec<Stmt> {
        let mut pre = Vec::new();
        let map = self.pick(&[MapKind::Array, MapKind::Hash]);
        let mut key = self.key(scope);
        if scope.known_len > 0 && self.chance(2) {
            // A key read from the packet, as a flow table's is.
            let var = self.var();
            let (size, off) = self.packet_place(scope.known_len);
            pre.push(Stmt::Set {
                var,
                expr: Expr::Packet { size, off },
            });
            key.src = Src::Var(var);
        }
        let depth = scope.values.len();
        let mut hit_scope = scope.clone();
        hit_scope.values.push(map);
        let split = self.below(inner + 1);
        let hit = self.block(&hit_scope, split, End::Maybe);
        let end = self.second_end(&hit);
        let miss = self.block(scope, inner - split, end);
        pre.push(Stmt::Lookup {
            map,
            key,
            depth,
            hit,
            miss,
        });
        pre
    }

    /// Initial entries: some of the array's elements and some of the hash keys `0..8`, with
    /// values made of the small numbers the programs compare against.
    fn seed_maps(&mut self) -> MapSeed {
        let mut seed = MapSeed::new();
        for key in 0..ARRAY_ENTRIES {
            if !self.chance(4) {
                let value = self.value_bytes();
                seed.push(ARRAY_MAP, key.to_le_bytes().to_vec(), value);
            }
        }
        for key in 0..HASH_ENTRIES as u64 {
            // About half the keys, leaving room for the program's insertions.
            if self.chance(2) {
                let value = self.value_bytes();
                seed.push(HASH_MAP, key.to_le_bytes().to_vec(), value);
            }
        }
        seed
    }

    fn value_bytes(&mut self) -> Vec<u8> {
        (0..VALUE_BYTES)
            .map(|_| small_byte(&mut self.rng))
            .collect()
    }
}

/// Narrows `scope` past `stmt` in its block: after a length check whose short side returns, the
/// rest of the block knows the longer packet.
fn narrow(stmt: &Stmt, scope: &mut Scope) {
    fn set(scope: &mut Scope, var: u8, input: bool) {
        if input {
            scope.inputs |= 1 << var;
        } else {
            scope.inputs &= !(1 << var);
        }
    }
    match *stmt {
        Stmt::Set { var, expr } => {
            let input = match expr {
                Expr::Imm(_) => false,
                Expr::Alu { a, b, .. } => {
                    scope.is_input(a) || matches!(b, Src::Var(b) if scope.is_input(b))
                }
                _ => true,
            };
            set(scope, var, input);
        }
        Stmt::Update {
            result: Some(var), ..
        }
        | Stmt::Delete {
            result: Some(var), ..
        } => set(scope, var, true),
        Stmt::If {
            test: Test::Len(n),
            ref els,
            ..
        } if terminates(els) => scope.known_len = scope.known_len.max(n),
        _ => {}
    }
}

#[cfg(test)]
mod tests;
