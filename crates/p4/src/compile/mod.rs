//! The P4 → XDP compiler: a checked program and its table contents become one XDP program
//! (BPF instructions), its maps and their initial contents, written as an ELF object by
//! `linerate_bpf::emit`.
//!
//! # The generated program
//!
//! Registers: `r6` holds the context, `r7` the packet's first byte and `r8` its end (helpers
//! leave `r6`–`r9` alone); expressions are computed in `r1`–`r5`, `r9`, `r0` by nesting depth.
//! Every P4 value lives in an 8-byte stack slot as its low `w` bits (higher bits zero, which every
//! operation restores by masking): each header field, each header's validity flag (0/1), each
//! metadata field, `standard_metadata_t`'s three fields, action parameters, local variables and
//! each table's last result (`hit`, action id). The interpreter starts from zero (see
//! [`crate::interp`]); the prologue zeroes only the slots some path reads before writing
//! (`liveness.rs`). Header stacks are their elements (`hdr.vlan[0]`, ...), indexed by constants,
//! or by `next`/`last` in the parser. Values wider than 64 bits, `int<w>`, saturating operators,
//! `advance`, `push_front`/`pop_front` and out-of-range constant indices are refused.
//!
//! * **Two passes** (`liveness.rs`): the first extracts and writes back every field; its code
//!   says which fields the program reads and which it changes. The second extracts only the
//!   fields read or written back and writes back only the changed ones; both use the widest
//!   loads and stores with byte swaps (`wide.rs`). The result's jumps are tidied (`asm.rs`) and
//!   stores nothing loads are dropped.
//! * **Parser** (`packet.rs`): states are generated once per (offset, stack counts) they are
//!   reached with, so every extract reads at a constant offset after a bounds check the verifier
//!   accepts (`data + end > data_end` → reject; one per state, for all its extracts, since a
//!   rejected packet leaves unchanged whatever the state did) and a loop over a header stack
//!   unrolls (the `next` of a full stack rejects, as in the interpreter). More than
//!   [`MAX_PARSER_INSTANCES`] such states (an unbounded parser loop) is refused. `reject` (a
//!   short packet, a failed `verify`, a `select` without a matching case) returns `XDP_DROP` at
//!   once with the packet untouched, as the interpreter does.
//! * **Ingress** (`control.rs`): actions are inlined at each call; `return` leaves the action (or
//!   the control), `exit` the control. `t.apply()` may appear as a statement, as `.hit`/`.miss`
//!   in a condition (evaluated first, so not right of `&&`, `||` or `?`), and as a `switch`
//!   subject.
//! * **Tables** (`table.rs`): exact keys → `HASH`, an lpm key (last, after exact ones) →
//!   `LPM_TRIE`, any ternary key → `ARRAY` of priority-ordered rows scanned in a bounded loop. See
//!   that module for key and value bytes. The default action is compiled in (from the program or
//!   the entries file).
//! * **Externs**: `counter` → an `ARRAY` of `{u64 packets, u64 bytes}` updated with atomic adds
//!   (plain, not per-CPU, so the VM and the kernel list the same contents); `register<T>` → an
//!   `ARRAY` of `u64`; `mark_to_drop`, `verify`.
//! * **Deparser** (`deparse.rs`): a program that never calls `setValid`/`setInvalid` must emit
//!   every extracted header in extraction order, each extracted at one offset, and valid headers
//!   are written back in place (only the fields some statement may change). A program that does
//!   gets the resizing deparser: the valid emitted headers are written in front of the payload
//!   after `bpf_xdp_adjust_head` moves the packet's start (a failed move drops the packet
//!   untouched, as the interpreter does). A header made
//!   valid has the fields its slots hold: zero unless extracted or written, as in the
//!   interpreter.
//! * **Checksums** (`checksum.rs`): `update_checksum`/`verify_checksum` over a list expression,
//!   straight-line ALU code (no helper): each element's bits are folded into 16-bit words at
//!   offsets known at compile time.
//! * **Outcome**: `drop` → `XDP_DROP`; `egress_port` 0 → `XDP_PASS`; equal to
//!   `ctx->ingress_ifindex` → `XDP_TX`; else `bpf_redirect(egress_port, 0)`.

mod asm;
mod checksum;
mod control;
mod dead_code;
mod deparse;
mod expr;
mod liveness;
mod packet;
mod storage;
mod table;
mod wide;

use crate::ast::ControlDecl;
use crate::entries::Entries;
use crate::{Checked, Span};
use asm::{Assembly, Label};
use linerate_bpf::contents::MapSeed;
use linerate_bpf::emit::{write_object, EmitError, MapSpec, ObjectSpec, ProgramSpec};
use linerate_bpf::insn::Instruction;
use std::collections::HashMap;
use storage::Frame;
use storage::Slot;
use table::{TableMap, TableResult};

/// Bytes of the shared scratch area for map keys and table scans.
pub const SCRATCH_BYTES: u32 = 80;

/// (state, offset) pairs after which the parser is taken for a loop and refused.
pub const MAX_PARSER_INSTANCES: usize = 64;

/// A program the compiler cannot translate, or an object it cannot write.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CompileError {
    /// A construct outside this compiler's subset, at `file:line:col`.
    #[error("{at}: cannot compile {what}")]
    Unsupported { at: String, what: String },
    /// The program as a whole (no pipeline, too much state for the BPF stack, ...).
    #[error("cannot compile: {0}")]
    Program(String),
    /// The ELF writer refused the result.
    #[error(transparent)]
    Emit(#[from] EmitError),
}

/// One map's initial contents: raw keys and values as the map stores them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MapContents {
    /// The map's name in the object.
    pub map: String,
    /// `(key, value)` pairs in order.
    pub entries: Vec<(Vec<u8>, Vec<u8>)>,
}

/// A compiled program: the object's spec and its maps' initial contents.
#[derive(Debug, Clone)]
pub struct Compiled {
    /// The program and maps to write.
    pub spec: ObjectSpec,
    /// Table contents (const entries and the entries file), one per map with entries.
    pub contents: Vec<MapContents>,
}

impl Compiled {
    /// The ELF object's bytes.
    pub fn object_bytes(&self) -> Result<Vec<u8>, CompileError> {
        Ok(write_object(&self.spec)?)
    }

    /// The instruction count of the (only) program.
    pub fn insns(&self) -> usize {
        self.spec.programs.first().map_or(0, |p| p.insns.len())
    }

    /// The initial contents as a seed for `linerate_vm`/`linerate_kernel` drivers (map indices
    /// are the spec's map order, which an object written from it keeps).
    pub fn seed(&self) -> MapSeed {
        let mut seed = MapSeed::new();
        for contents in &self.contents {
            if let Some(index) = self.spec.maps.iter().position(|m| m.name == contents.map) {
                for (key, value) in &contents.entries {
                    seed.push(index, key.clone(), value.clone());
                }
            }
        }
        seed
    }
}

/// Compiles `checked` with table contents `entries` into one XDP program named `name` (a C
/// identifier) and its maps.
pub fn compile(checked: &Checked, entries: &Entries, name: &str) -> Result<Compiled, CompileError> {
    // First pass: every field extracted and written back, to learn which the program reads
    // and changes (see `liveness.rs`).
    let mut first = Gen::new(checked, entries, None)?;
    let code = first.program()?;
    let plan = liveness::plan(
        &first.frame,
        &code,
        first.deparser_start,
        &first.extract_stores,
        first.payload_at.is_some(),
    );
    let mut gen = Gen::new(checked, entries, Some(plan))?;
    let mut body = gen.program()?;
    // Stores that nothing loads (a validity flag nothing tests, a table result nothing reads,
    // the packet length without counters, ...) go, except into map keys, which helpers read;
    // the prologue sets only what is loaded.
    // Labels nothing jumps to any more no longer stop a load from taking a stored value.
    body.tidy()
        .ok_or_else(|| CompileError::Program("a label is never placed".into()))?;
    body.forward_stack_loads();
    let loaded = liveness::loaded_slots(&body);
    let pointed = gen.pointed.clone();
    body.retain_insns(|insn| !liveness::dead_store(insn, &pointed, &loaded));
    let mut code = gen.prologue(&loaded);
    code.append(body);
    let unzeroed = code
        .finish()
        .ok_or_else(|| CompileError::Program("a jump is out of range".into()))?;
    // The prologue is straight-line code, so zeroing stores put at its start move no jump.
    let implied = gen.frame.extracted_slots(gen.plan.as_ref());
    let zero = liveness::must_zero(&unzeroed, &implied);
    let mut insns: Vec<Instruction> = zero
        .iter()
        .map(|off| linerate_bpf::insn::build::st(linerate_bpf::insn::Size::Dw, 10, *off, 0))
        .collect();
    insns.extend(unzeroed);
    let insns = dead_code::remove_dead_code(insns)
        .ok_or_else(|| CompileError::Program("a jump is out of range".into()))?;
    let program = ProgramSpec::xdp(name, insns);
    Ok(Compiled {
        spec: ObjectSpec::new(
            vec![program],
            gen.maps.iter().map(|m| m.spec.clone()).collect(),
        ),
        contents: gen
            .maps
            .iter()
            .filter(|m| !m.entries.is_empty())
            .map(|m| MapContents {
                map: m.spec.name.clone(),
                entries: m.entries.clone(),
            })
            .collect(),
    })
}

/// A map of the object being generated, with its initial contents.
#[derive(Debug, Clone)]
pub(crate) struct GenMap {
    pub spec: MapSpec,
    pub entries: Vec<(Vec<u8>, Vec<u8>)>,
}

/// The generator's state over the whole program.
pub(crate) struct Gen<'a> {
    pub checked: &'a Checked,
    pub entries: &'a Entries,
    pub frame: Frame,
    pub code: Assembly,
    pub maps: Vec<GenMap>,
    /// Block parameter names → the state path they stand for (`hdr`, `meta`, `std`).
    pub params: HashMap<String, String>,
    /// Local names in scope, innermost last; the first holds the block's own locals.
    pub scopes: Vec<HashMap<String, Slot>>,
    /// The control being compiled (for its tables, actions and instances).
    pub control: Option<&'a ControlDecl>,
    /// Where `return` goes, innermost last.
    pub returns: Vec<Label>,
    /// Where `exit` goes.
    pub exit: Option<Label>,
    /// Where the parser rejects.
    pub reject: Option<Label>,
    pub tables: HashMap<String, TableMap>,
    pub table_results: HashMap<String, TableResult>,
    /// Counter and register instances → map index.
    pub instances: HashMap<String, u32>,
    /// The parser's byte offset in the state being generated.
    pub cursor: u32,
    /// The byte each extracted header sits at.
    pub extracted_at: HashMap<String, u32>,
    /// Actions being inlined inside each other.
    pub depth: usize,
    /// In the parser: how many elements of each header stack the current path extracted.
    pub stack_next: HashMap<String, u32>,
    /// In the parser: the current state has rejected for sure (a full stack's `next`).
    pub rejected: bool,
    /// Stack shared by every map lookup's key and the ternary scans (used only between
    /// building a key and its lookup or within one scan, which never nest).
    pub scratch: Option<i16>,
    /// For a program that adds or removes headers: the slot holding the byte where the
    /// payload starts (the parser's offset at `accept`), which the resizing deparser reads.
    pub payload_at: Option<i16>,
    /// The fields to extract and write back (`None` in the first pass: all of them).
    pub plan: Option<liveness::FieldPlan>,
    /// Where the deparser's code starts in `code`.
    pub deparser_start: usize,
    /// The stretches of `code` where extracts store fields.
    pub extract_stores: Vec<std::ops::Range<usize>>,
    /// In the parser: the byte up to which the current state has checked the packet's length.
    pub checked_to: u32,
    /// Stack that helpers read through pointers (map keys): `(offset, bytes)`.
    pub pointed: Vec<(i16, u32)>,
}

impl<'a> Gen<'a> {
    fn new(
        checked: &'a Checked,
        entries: &'a Entries,
        plan: Option<liveness::FieldPlan>,
    ) -> Result<Gen<'a>, CompileError> {
        let mut frame = Frame::new(checked)?;
        let payload_at = if deparse::uses_validity_changes(checked) {
            Some(frame.alloc(8)?)
        } else {
            None
        };
        Ok(Gen {
            checked,
            entries,
            frame,
            code: Assembly::default(),
            maps: Vec::new(),
            params: HashMap::new(),
            scopes: Vec::new(),
            control: None,
            returns: Vec::new(),
            exit: None,
            reject: None,
            tables: HashMap::new(),
            table_results: HashMap::new(),
            instances: HashMap::new(),
            cursor: 0,
            extracted_at: HashMap::new(),
            depth: 0,
            stack_next: HashMap::new(),
            rejected: false,
            scratch: None,
            payload_at,
            plan,
            deparser_start: 0,
            extract_stores: Vec::new(),
            checked_to: 0,
            pointed: Vec::new(),
        })
    }

    /// A refusal naming where and what.
    pub fn unsupported(&self, span: Span, what: &str) -> CompileError {
        CompileError::Unsupported {
            at: self.checked.sources.position(span).to_string(),
            what: what.to_string(),
        }
    }

    /// `bytes` of scratch stack: the shared area when they fit ([`SCRATCH_BYTES`]), else
    /// fresh stack.
    pub fn scratch(&mut self, bytes: u32) -> Result<i16, CompileError> {
        if bytes > SCRATCH_BYTES {
            let at = self.frame.alloc(bytes)?;
            self.pointed.push((at, bytes));
            return Ok(at);
        }
        match self.scratch {
            Some(at) => Ok(at),
            None => {
                let at = self.frame.alloc(SCRATCH_BYTES)?;
                self.scratch = Some(at);
                self.pointed.push((at, SCRATCH_BYTES));
                Ok(at)
            }
        }
    }

    pub fn emit(&mut self, insn: Instruction) {
        self.code.emit(insn);
    }
}
