//! From the tree of [`super`] to instructions ([`lower`]) and to C-like text ([`describe`]).
//!
//! An `if` is laid out as `if TEST goto T; ELSE; goto END; T: THEN; END:`, the `goto END`
//! left out when every path through ELSE returns (it would be unreachable, which the verifier
//! refuses). A lookup is an `if` on `r0 != 0` whose THEN starts by spilling the value pointer.

use std::collections::BTreeSet;
use std::fmt::Write;

use linerate_bpf::facts::helper as id;
use linerate_bpf::insn::build::{
    add64, alu, alu64, call_helper, ja, jmp, jmp_reg, jump, ld_map, ldx, mov64, mov64_reg, st, stx,
};
use linerate_bpf::insn::{AluOp, AtomicOp, Cond, Instruction, Operand, Reg, Size};

use super::super::asm::{Asm, Label};
use super::{terminates, Expr, Key, MapKind, Ret, Src, Stmt, Test, ARRAY_MAP, HASH_MAP, VARS};

/// Register holding the context.
const CTX: Reg = 6;
/// Register holding the packet's `data`.
const DATA: Reg = 7;
/// Register holding the packet's `data_end`.
const DATA_END: Reg = 8;
/// Stack slot of the key of a lookup, update or deletion.
const KEY_SLOT: i16 = -72;
/// Stack slot of the 16-byte value of an update.
const VALUE_SLOT: i16 = -88;
/// Lowest stack byte the program uses (zeroed by the prologue).
const STACK_LOW: i16 = -112;

fn var_slot(var: u8) -> i16 {
    -8 * (var as i16 + 1)
}

fn pointer_slot(depth: usize) -> i16 {
    -96 - 8 * depth as i16
}

fn map_index(map: MapKind) -> u32 {
    match map {
        MapKind::Array => ARRAY_MAP as u32,
        MapKind::Hash => HASH_MAP as u32,
    }
}

/// A lowered program.
pub(super) struct Lowered {
    pub(super) insns: Vec<Instruction>,
    pub(super) features: BTreeSet<&'static str>,
    pub(super) longest_check: i16,
}

/// The instructions of `body` (a block ending in a return on every path) in the prologue.
pub(super) fn lower(body: &[Stmt]) -> Lowered {
    debug_assert!(VARS as i16 * 8 <= -KEY_SLOT - 8);
    let mut l = Lower {
        a: Asm::new(),
        longest_check: 0,
    };
    l.a.emit(mov64_reg(CTX, 1));
    l.a.emit(ldx(Size::W, DATA, CTX, 0));
    l.a.emit(ldx(Size::W, DATA_END, CTX, 4));
    for off in (STACK_LOW..0).step_by(8) {
        l.a.emit(st(Size::Dw, 10, off, 0));
    }
    l.block(body);
    let longest_check = l.longest_check;
    let (insns, features) = l.a.finish();
    Lowered {
        insns,
        features,
        longest_check,
    }
}

struct Lower {
    a: Asm,
    longest_check: i16,
}

impl Lower {
    fn feature(&mut self, name: &'static str) {
        self.a.features.insert(name);
    }

    fn block(&mut self, block: &[Stmt]) {
        for stmt in block {
            self.stmt(stmt);
        }
    }

    /// `dst = src`.
    fn load_src(&mut self, dst: Reg, src: Src) {
        match src {
            Src::Var(v) => self.a.emit(ldx(Size::Dw, dst, 10, var_slot(v))),
            Src::Imm(imm) => self.a.emit(mov64(dst, imm)),
        }
    }

    fn key(&mut self, map: MapKind, key: Key) {
        let size = match map {
            MapKind::Array => Size::W,
            MapKind::Hash => Size::Dw,
        };
        match key.src {
            Src::Imm(imm) => self.a.emit(st(size, 10, KEY_SLOT, imm)),
            Src::Var(v) => {
                self.a.emit(ldx(Size::Dw, 1, 10, var_slot(v)));
                if let Some(mask) = key.mask {
                    self.a.emit(alu64(AluOp::And, 1, mask));
                }
                self.a.emit(stx(size, 10, KEY_SLOT, 1));
            }
        }
        self.a.emit(ld_map(1, map_index(map)));
        self.a.emit(mov64_reg(2, 10));
        self.a.emit(add64(2, KEY_SLOT as i32));
    }

    fn result(&mut self, result: Option<u8>) {
        if let Some(v) = result {
            self.feature("branch on helper result");
            self.a.emit(stx(Size::Dw, 10, var_slot(v), 0));
        }
    }

    fn stmt(&mut self, stmt: &Stmt) {
        match *stmt {
            Stmt::Set { var, expr } => {
                self.expr(expr);
                self.a.emit(stx(Size::Dw, 10, var_slot(var), 0));
            }
            Stmt::PacketStore { size, off, var } => {
                self.feature("packet store");
                self.a.emit(ldx(Size::Dw, 1, 10, var_slot(var)));
                self.a.emit(stx(size, DATA, off, 1));
            }
            Stmt::ValueStore {
                depth,
                size,
                off,
                src,
            } => {
                self.feature("map value store");
                self.a.emit(ldx(Size::Dw, 1, 10, pointer_slot(depth)));
                match src {
                    Src::Imm(imm) => self.a.emit(st(size, 1, off, imm)),
                    Src::Var(v) => {
                        self.a.emit(ldx(Size::Dw, 2, 10, var_slot(v)));
                        self.a.emit(stx(size, 1, off, 2));
                    }
                }
            }
            Stmt::ValueAdd {
                depth,
                size,
                off,
                var,
            } => {
                self.feature("atomic add on a map value");
                self.a.emit(ldx(Size::Dw, 1, 10, pointer_slot(depth)));
                self.a.emit(ldx(Size::Dw, 2, 10, var_slot(var)));
                self.a.emit(Instruction::Atomic {
                    size,
                    op: AtomicOp::Add,
                    fetch: false,
                    dst: 1,
                    src: 2,
                    off,
                });
            }
            Stmt::Update {
                map,
                key,
                value,
                flags,
                result,
            } => {
                self.feature("map_update_elem");
                for (k, word) in value.into_iter().enumerate() {
                    let off = VALUE_SLOT + 8 * k as i16;
                    match word {
                        Src::Imm(imm) => self.a.emit(st(Size::Dw, 10, off, imm)),
                        Src::Var(v) => {
                            self.a.emit(ldx(Size::Dw, 1, 10, var_slot(v)));
                            self.a.emit(stx(Size::Dw, 10, off, 1));
                        }
                    }
                }
                self.key(map, key);
                self.a.emit(mov64_reg(3, 10));
                self.a.emit(add64(3, VALUE_SLOT as i32));
                self.a.emit(mov64(4, flags));
                self.a.emit(call_helper(id::MAP_UPDATE_ELEM));
                self.result(result);
            }
            Stmt::Delete { map, key, result } => {
                self.feature("map_delete_elem");
                self.key(map, key);
                self.a.emit(call_helper(id::MAP_DELETE_ELEM));
                self.result(result);
            }
            Stmt::If {
                test,
                ref then,
                ref els,
            } => {
                let insn = self.test(test);
                self.arms(insn, then, els, None);
            }
            Stmt::Lookup {
                map,
                key,
                depth,
                ref hit,
                ref miss,
            } => {
                self.feature(match map {
                    MapKind::Array => "array lookup",
                    MapKind::Hash => "hash lookup",
                });
                self.key(map, key);
                self.a.emit(call_helper(id::MAP_LOOKUP_ELEM));
                let spill = stx(Size::Dw, 10, pointer_slot(depth), 0);
                self.arms(jmp(Cond::Ne, 0, 0, 0), hit, miss, Some(spill));
            }
            Stmt::Return(ret) => {
                match ret {
                    Ret::Action(action) => self.a.emit(mov64(0, action)),
                    Ret::Var(v) => {
                        self.feature("computed action");
                        self.a.emit(ldx(Size::Dw, 0, 10, var_slot(v)));
                        self.a.emit(alu64(AluOp::And, 0, 3));
                    }
                }
                self.a.emit(Instruction::Exit);
            }
        }
    }

    /// `if (insn) goto T; els; goto END; T: first; then; END:`.
    fn arms(&mut self, insn: Instruction, then: &[Stmt], els: &[Stmt], first: Option<Instruction>) {
        if terminates(els) || terminates(then) {
            self.feature("early return");
        }
        let (taken, end): (Label, Label) = (self.a.label(), self.a.label());
        self.a.jump_to(insn, taken);
        self.block(els);
        if !terminates(els) {
            self.a.jump_to(ja(0), end);
        }
        self.a.place(taken);
        if let Some(first) = first {
            self.a.emit(first);
        }
        self.block(then);
        self.a.place(end);
    }

    /// The set-up of a test and its jump (offset left to the caller).
    fn test(&mut self, test: Test) -> Instruction {
        match test {
            Test::Len(n) => {
                self.feature("length check");
                self.longest_check = self.longest_check.max(n);
                self.a.emit(mov64_reg(1, DATA));
                self.a.emit(add64(1, n as i32));
                jmp_reg(Cond::Le, 1, DATA_END, 0)
            }
            Test::Cmp {
                wide,
                cond,
                var,
                rhs,
            } => {
                self.a.emit(ldx(Size::Dw, 1, 10, var_slot(var)));
                let rhs = match rhs {
                    Src::Imm(imm) => Operand::Imm(imm),
                    Src::Var(v) => {
                        self.a.emit(ldx(Size::Dw, 2, 10, var_slot(v)));
                        Operand::Reg(2)
                    }
                };
                jump(wide, cond, 1, rhs, 0)
            }
        }
    }

    /// `r0 = expr`.
    fn expr(&mut self, expr: Expr) {
        match expr {
            Expr::Imm(imm) => self.a.emit(mov64(0, imm)),
            Expr::Packet { size, off } => {
                self.feature("packet read");
                self.a.emit(ldx(size, 0, DATA, off));
            }
            Expr::Value { depth, size, off } => {
                self.feature("map value read");
                self.a.emit(ldx(Size::Dw, 1, 10, pointer_slot(depth)));
                self.a.emit(ldx(size, 0, 1, off));
            }
            Expr::Alu { wide, op, a, b } => {
                self.a.emit(ldx(Size::Dw, 0, 10, var_slot(a)));
                let src = match b {
                    Src::Imm(imm) => Operand::Imm(imm),
                    Src::Var(v) => {
                        self.load_src(1, Src::Var(v));
                        Operand::Reg(1)
                    }
                };
                self.a.emit(alu(wide, op, 0, src));
            }
            Expr::Time => {
                self.feature("ktime_get_ns");
                self.a.emit(call_helper(id::KTIME_GET_NS));
            }
            Expr::Random => {
                self.feature("get_prandom_u32");
                self.a.emit(call_helper(id::GET_PRANDOM_U32));
            }
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Description

/// The program as C-like text: `v0`..`v7` the variables, `len` the packet length, `pkt` its
/// bytes, `val0`.. the values of the enclosing lookups.
pub(super) fn describe(body: &[Stmt]) -> String {
    let mut out = String::new();
    block_text(body, 0, &mut out);
    out
}

fn size_name(size: Size) -> &'static str {
    match size {
        Size::B => "u8",
        Size::H => "u16",
        Size::W => "u32",
        Size::Dw => "u64",
    }
}

fn src_text(src: Src) -> String {
    match src {
        Src::Var(v) => format!("v{v}"),
        Src::Imm(imm) => format!("{imm}"),
    }
}

fn key_text(key: Key) -> String {
    match key.mask {
        Some(mask) => format!("{} & {mask}", src_text(key.src)),
        None => src_text(key.src),
    }
}

fn map_name(map: MapKind) -> &'static str {
    match map {
        MapKind::Array => "arr",
        MapKind::Hash => "hash",
    }
}

fn expr_text(expr: Expr) -> String {
    match expr {
        Expr::Imm(imm) => format!("{imm}"),
        Expr::Packet { size, off } => format!("*({} *)(pkt + {off})", size_name(size)),
        Expr::Value { depth, size, off } => {
            format!("*({} *)(val{depth} + {off})", size_name(size))
        }
        Expr::Alu { wide, op, a, b } => {
            let bits = if wide { "" } else { "(u32) " };
            format!("{bits}v{a} {op:?} {}", src_text(b))
        }
        Expr::Time => "bpf_ktime_get_ns()".into(),
        Expr::Random => "bpf_get_prandom_u32()".into(),
    }
}

fn block_text(block: &[Stmt], depth: usize, out: &mut String) {
    let pad = "    ".repeat(depth);
    for stmt in block {
        let _ = match stmt {
            Stmt::Set { var, expr } => writeln!(out, "{pad}v{var} = {};", expr_text(*expr)),
            Stmt::PacketStore { size, off, var } => {
                writeln!(out, "{pad}*({} *)(pkt + {off}) = v{var};", size_name(*size))
            }
            Stmt::ValueStore {
                depth: d,
                size,
                off,
                src,
            } => writeln!(
                out,
                "{pad}*({} *)(val{d} + {off}) = {};",
                size_name(*size),
                src_text(*src)
            ),
            Stmt::ValueAdd {
                depth: d,
                size,
                off,
                var,
            } => writeln!(
                out,
                "{pad}atomic *({} *)(val{d} + {off}) += v{var};",
                size_name(*size)
            ),
            Stmt::Update {
                map,
                key,
                value,
                flags,
                result,
            } => writeln!(
                out,
                "{pad}{}bpf_map_update_elem({}, key = {}, value = {{{}, {}}}, {flags});",
                result.map(|v| format!("v{v} = ")).unwrap_or_default(),
                map_name(*map),
                key_text(*key),
                src_text(value[0]),
                src_text(value[1]),
            ),
            Stmt::Delete { map, key, result } => writeln!(
                out,
                "{pad}{}bpf_map_delete_elem({}, key = {});",
                result.map(|v| format!("v{v} = ")).unwrap_or_default(),
                map_name(*map),
                key_text(*key)
            ),
            Stmt::If { test, then, els } => {
                let test = match test {
                    Test::Len(n) => format!("len >= {n}"),
                    Test::Cmp {
                        wide,
                        cond,
                        var,
                        rhs,
                    } => {
                        let bits = if *wide { "" } else { "(u32) " };
                        format!("{bits}v{var} {cond:?} {}", src_text(*rhs))
                    }
                };
                let _ = writeln!(out, "{pad}if ({test}) {{");
                block_text(then, depth + 1, out);
                let _ = writeln!(out, "{pad}}} else {{");
                block_text(els, depth + 1, out);
                writeln!(out, "{pad}}}")
            }
            Stmt::Lookup {
                map,
                key,
                depth: d,
                hit,
                miss,
            } => {
                let _ = writeln!(
                    out,
                    "{pad}if (val{d} = bpf_map_lookup_elem({}, key = {})) {{",
                    map_name(*map),
                    key_text(*key)
                );
                block_text(hit, depth + 1, out);
                let _ = writeln!(out, "{pad}}} else {{");
                block_text(miss, depth + 1, out);
                writeln!(out, "{pad}}}")
            }
            Stmt::Return(Ret::Action(a)) => writeln!(out, "{pad}return {a};"),
            Stmt::Return(Ret::Var(v)) => writeln!(out, "{pad}return v{v} & 3;"),
        };
    }
}
