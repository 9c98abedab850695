//! The reference interpreter: runs a checked P4 program on one packet, on its own AST, and says
//! what the XDP architecture (`crates/p4/arch/xdp.p4`) makes of the outcome.
//!
//! It is the oracle the compiled BPF program is tested against, so it follows the architecture
//! file's pipeline literally: standard metadata and user metadata start zeroed, the parser runs
//! from `start` (a short packet, an explicit `reject` or a failed `verify` drop the packet), the
//! ingress control runs, the deparser emits the valid headers in front of the unparsed payload,
//! and `drop`, `egress_port` and `ingress_port` choose Drop, Pass, Tx or Redirect.
//!
//! Choices where P4-16 leaves a result unspecified, made once here so runs are deterministic and
//! the compiler can follow them: every header, variable and metadata field starts zero; reading a
//! field of an invalid header reads what is stored (zero unless written); an out-of-range stack
//! index reads an invalid zero header and writes nothing; `x / 0` is 0 and `x % 0` is `x` (BPF's
//! answers); a parser that takes more than [`MAX_PARSER_STEPS`] transitions rejects; a header
//! made valid by `setValid` has the fields stored for it (zero unless extracted or written
//! before), so a header the parser did not extract starts all zero.
//!
//! Where the XDP target limits what P4 allows: when the deparser's output differs in length
//! from the input, the packet must grow by at most [`MAX_GROWTH`] bytes and keep at least
//! `ETH_HLEN` (14) bytes (what `bpf_xdp_adjust_head` allows); otherwise the packet is dropped
//! unchanged (`Drop`, the input as the packet).
//!
//! Modules: `value` (values and fixed-width arithmetic), `eval` (expressions, statements,
//! actions, externs), `table` (lookup), `packet` (parser and deparser), `checksum` (RFC 1071).
//!
//! ```no_run
//! use linerate_p4::{entries::Entries, interp};
//! let checked = linerate_p4::load(std::path::Path::new("examples/p4/l3_fwd.p4"))?;
//! let entries = Entries::load(&checked, std::path::Path::new("examples/p4/l3_fwd.entries.json"))?;
//! let mut state = interp::State::default();
//! let outcome = interp::run(&checked, &entries, &[0u8; 64], 1, &mut state)?;
//! println!("{:?}", outcome.action);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

pub mod checksum;
mod eval;
mod packet;
mod table;
pub mod value;

use crate::ast::{ActionDecl, ControlDecl, Decl, TypeRef};
use crate::check::types::{Type, TypeTable};
use crate::entries::Entries;
use crate::Checked;
use std::collections::BTreeMap;

/// Parser transitions after which the parser gives up (`error.ParserTimeout`, reject).
pub const MAX_PARSER_STEPS: usize = 1024;

/// Bytes the deparser may add in front of a packet: XDP's headroom less `struct xdp_frame`
/// (216 on this kernel, with no metadata, which is how the architecture runs programs).
pub const MAX_GROWTH: u64 = linerate_bpf::facts::test_run_buffer::HEADROOM
    - linerate_bpf::facts::test_run_buffer::XDP_FRAME;

/// What XDP does with the packet.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum XdpAction {
    /// `XDP_DROP`: `drop` was set, or the parser rejected.
    Drop,
    /// `XDP_PASS`: no egress port chosen; the kernel's stack takes the packet.
    Pass,
    /// `XDP_TX`: out of the receiving port.
    Tx,
    /// `XDP_REDIRECT` to this interface index.
    Redirect(u32),
}

/// The result of one packet.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Outcome {
    /// The XDP action.
    pub action: XdpAction,
    /// The packet as the deparser wrote it (the input unchanged when the parser rejected).
    pub packet: Vec<u8>,
    /// The parser error: `NoError`, or why the parser rejected.
    pub parser_error: String,
}

/// One counter cell.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct CounterCell {
    /// Packets counted.
    pub packets: u64,
    /// Bytes counted (each packet's length as received).
    pub bytes: u64,
}

/// Extern state that lives across packets: counters and registers, by `"<control>.<instance>"`,
/// sparse (an untouched cell is zero), so a declared size of 2^32 costs nothing.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct State {
    counters: BTreeMap<String, BTreeMap<u32, CounterCell>>,
    registers: BTreeMap<String, BTreeMap<u32, u128>>,
}

impl State {
    /// Counter `index` of instance `instance` (`"<control>.<name>"`).
    pub fn counter(&self, instance: &str, index: u32) -> CounterCell {
        self.counters
            .get(instance)
            .and_then(|cells| cells.get(&index))
            .copied()
            .unwrap_or_default()
    }

    /// Register `index` of instance `instance` (`"<control>.<name>"`), as bits.
    pub fn register(&self, instance: &str, index: u32) -> u128 {
        self.registers
            .get(instance)
            .and_then(|cells| cells.get(&index))
            .copied()
            .unwrap_or(0)
    }

    /// Sets a register cell (a test or a differential harness seeding state).
    pub fn set_register(&mut self, instance: &str, index: u32, bits: u128) {
        self.registers
            .entry(instance.to_string())
            .or_default()
            .insert(index, bits);
    }

    fn count(&mut self, instance: &str, index: u32, bytes: u64) {
        let cell = self
            .counters
            .entry(instance.to_string())
            .or_default()
            .entry(index)
            .or_default();
        cell.packets = cell.packets.saturating_add(1);
        cell.bytes = cell.bytes.saturating_add(bytes);
    }
}

/// A program the interpreter cannot run (never a property of the packet).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum InterpError {
    /// `main` binds no parser, ingress or deparser of this name.
    #[error("the pipeline's {0} is missing")]
    MissingBlock(&'static str),
    /// A construct the checker accepts but the interpreter does not run.
    #[error("{at}: cannot interpret {what}")]
    Unsupported {
        /// Where (`file:line:col`).
        at: String,
        /// What.
        what: String,
    },
}

/// Runs one packet through the program. `ingress_port` is the receiving interface's index;
/// `state` carries counters and registers from earlier packets.
pub fn run(
    checked: &Checked,
    entries: &Entries,
    packet: &[u8],
    ingress_port: u32,
    state: &mut State,
) -> Result<Outcome, InterpError> {
    packet::pipeline(checked, entries, packet, ingress_port, state)
}

/// Runs packets in order, `(bytes, ingress port)` each, sharing `state`: what a differential test
/// against the compiled program compares, outcome by outcome.
pub fn run_packets(
    checked: &Checked,
    entries: &Entries,
    packets: &[(Vec<u8>, u32)],
    state: &mut State,
) -> Result<Vec<Outcome>, InterpError> {
    packets
        .iter()
        .map(|(bytes, port)| run(checked, entries, bytes, *port, state))
        .collect()
}

/// Resolves a type as written to the checker's types (typedefs followed). `None` for a name that
/// is not a type, which a checked program does not contain.
pub fn resolve_type(types: &TypeTable, ty: &TypeRef) -> Option<Type> {
    Some(match ty {
        TypeRef::Bit(w) => Type::Bit(*w),
        TypeRef::Int(w) => Type::Int(*w),
        TypeRef::Bool => Type::Bool,
        TypeRef::Error => Type::Error,
        TypeRef::Void => Type::Void,
        TypeRef::InfInt => Type::InfInt,
        TypeRef::Named(name) => {
            let n = name.name.as_str();
            if let Some(t) = types.typedefs.get(n) {
                t.clone()
            } else if types.headers.contains_key(n) {
                Type::Header(n.to_string())
            } else if types.structs.contains_key(n) {
                Type::Struct(n.to_string())
            } else if types.enums.contains_key(n) {
                Type::Enum(n.to_string())
            } else {
                Type::Extern(n.to_string(), Vec::new())
            }
        }
        TypeRef::Specialized(name, args) => Type::Extern(
            name.name.clone(),
            args.iter()
                .map(|a| resolve_type(types, a))
                .collect::<Option<Vec<_>>>()?,
        ),
        TypeRef::Stack(element, size) => {
            Type::Stack(Box::new(resolve_type(types, element)?), *size)
        }
    })
}

/// The action `name` as seen from `control`: its own, else a top-level one.
pub fn find_action<'a>(
    checked: &'a Checked,
    control: &'a ControlDecl,
    name: &str,
) -> Option<&'a ActionDecl> {
    control.actions().find(|a| a.name.name == name).or_else(|| {
        checked.program.decls.iter().find_map(|d| match d {
            Decl::Action(a) if a.name.name == name => Some(a),
            _ => None,
        })
    })
}
