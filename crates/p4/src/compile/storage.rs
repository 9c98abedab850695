//! The stack frame of the generated program: one 8-byte slot per scalar the P4 program keeps
//! (header fields, header validity, metadata, standard metadata, parameters, locals, table
//! results) and scratch space for map keys, all below `r10`.
//!
//! Paths name the program's state independently of the parameter names each block chooses:
//! `hdr.<member>...` for the headers struct, `meta.<member>...` for user metadata and
//! `std.<field>` for standard metadata.

use super::CompileError;
use crate::check::types::{Type, TypeTable};
use crate::interp::resolve_type;
use crate::Checked;
use std::collections::HashMap;

/// The BPF stack's size.
pub const STACK_BYTES: i64 = 512;

/// Why a slot cannot be allocated, for refusals that name where it was needed.
pub(crate) const STACK_FULL: &str = "state beyond the 512-byte BPF stack";

/// A scalar's stack slot: its offset from `r10` and its width in bits (1 for `bool`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Slot {
    pub off: i16,
    pub width: u32,
}

/// A header instance of the headers struct.
#[derive(Debug, Clone)]
pub(crate) struct HeaderSlots {
    /// Its path (`hdr.ipv4`).
    pub path: String,
    /// Validity flag.
    pub valid: i16,
    /// Bytes on the wire.
    pub bytes: u32,
    /// Each field's bit offset in the header and its slot, in wire order.
    pub fields: Vec<(u32, Slot)>,
}

/// The frame: every slot allocated so far.
#[derive(Debug, Clone)]
pub(crate) struct Frame {
    used: i64,
    /// Scalars by path.
    pub slots: HashMap<String, Slot>,
    /// Headers by path.
    pub headers: Vec<HeaderSlots>,
    /// The packet's length as received (what counters count).
    pub packet_len: i16,
    /// The struct or header type at each path laid out (for positions of refusals).
    types_at: HashMap<String, String>,
    /// Header stacks by path (elements are headers at `path[i]`), with their sizes.
    pub stacks: HashMap<String, u32>,
}

/// State the frame cannot hold: field `field` of type `owner`, and why.
#[derive(Debug)]
struct Refused {
    owner: String,
    field: String,
    what: String,
}

/// A refusal at the declaration of the field it concerns.
fn refusal(checked: &Checked, refused: &Refused) -> CompileError {
    let span = checked.program.decls.iter().find_map(|d| match d {
        crate::ast::Decl::Struct(a) | crate::ast::Decl::Header(a)
            if a.name.name == refused.owner =>
        {
            a.fields
                .iter()
                .find(|f| f.name.name == refused.field)
                .map(|f| f.name.span)
        }
        _ => None,
    });
    match span {
        Some(span) => CompileError::Unsupported {
            at: checked.sources.position(span).to_string(),
            what: refused.what.clone(),
        },
        None => CompileError::Program(refused.what.clone()),
    }
}

/// The width in bits of a scalar type the compiler keeps in a slot.
pub(crate) fn scalar_width(types: &TypeTable, ty: &Type) -> Option<u32> {
    match ty {
        Type::Bit(w) if *w <= 64 => Some(*w),
        Type::Bool => Some(1),
        Type::Enum(name) => types
            .enums
            .get(name)
            .and_then(|i| i.underlying.as_ref())
            .and_then(|u| scalar_width(types, u)),
        _ => None,
    }
}

impl Frame {
    /// The frame with the pipeline's state laid out: the headers struct and user metadata (types
    /// of the parser's second and third parameters) and standard metadata.
    pub fn new(checked: &Checked) -> Result<Frame, CompileError> {
        let mut frame = Frame {
            used: 0,
            slots: HashMap::new(),
            headers: Vec::new(),
            packet_len: 0,
            types_at: HashMap::new(),
            stacks: HashMap::new(),
        };
        frame.packet_len = frame.alloc(8)?;
        let parser = checked
            .parser()
            .ok_or_else(|| CompileError::Program("the pipeline has no parser".into()))?;
        let types = &checked.types;
        for (index, root) in [(1, "hdr"), (2, "meta")] {
            let ty = parser
                .params
                .get(index)
                .and_then(|p| resolve_type(types, &p.ty))
                .ok_or_else(|| {
                    CompileError::Program(format!("the parser has no {root} parameter"))
                })?;
            frame
                .lay_out(types, root, &ty)
                .map_err(|what| refusal(checked, &what))?;
        }
        for (field, width) in [("ingress_port", 32), ("egress_port", 32), ("drop", 1)] {
            let off = frame.alloc(8)?;
            frame
                .slots
                .insert(format!("std.{field}"), Slot { off, width });
        }
        Ok(frame)
    }

    /// Lays out the state at `path`; a refusal is `(struct, field, what)` for [`refusal`].
    fn lay_out(&mut self, types: &TypeTable, path: &str, ty: &Type) -> Result<(), Refused> {
        let (owner, field) = match path.rsplit_once('.') {
            Some((owner, field)) => (owner.to_string(), field.to_string()),
            None => (String::new(), path.to_string()),
        };
        let owner_type = self.types_at.get(&owner).cloned().unwrap_or_default();
        let refuse = |what: &str| Refused {
            owner: owner_type.clone(),
            field: field.clone(),
            what: format!("{what} ({path})"),
        };
        match ty {
            Type::Struct(name) => {
                self.types_at.insert(path.to_string(), name.clone());
                let layout = types
                    .structs
                    .get(name)
                    .ok_or_else(|| refuse("an unknown struct"))?;
                for field in &layout.fields {
                    self.lay_out(types, &format!("{path}.{}", field.name), &field.ty)?;
                }
            }
            Type::Header(name) => {
                self.types_at.insert(path.to_string(), name.clone());
                let layout = types
                    .headers
                    .get(name)
                    .ok_or_else(|| refuse("an unknown header"))?;
                let valid = self.alloc(8).map_err(|_| refuse(STACK_FULL))?;
                let mut fields = Vec::new();
                for field in &layout.fields {
                    let width = scalar_width(types, &field.ty).ok_or_else(|| {
                        refuse(&format!("field {} of type {}", field.name, field.ty))
                    })?;
                    let off = self.alloc(8).map_err(|_| refuse(STACK_FULL))?;
                    let slot = Slot { off, width };
                    self.slots.insert(format!("{path}.{}", field.name), slot);
                    fields.push((field.offset_bits, slot));
                }
                self.headers.push(HeaderSlots {
                    path: path.to_string(),
                    valid,
                    bytes: layout.width_bits / 8,
                    fields,
                });
            }
            Type::Stack(element, size) => {
                for index in 0..*size {
                    self.lay_out(types, &format!("{path}[{index}]"), element)?;
                }
                self.stacks.insert(path.to_string(), *size);
            }
            other => {
                let width = scalar_width(types, other)
                    .ok_or_else(|| refuse(&format!("a value of type {other}")))?;
                let off = self.alloc(8).map_err(|_| refuse(STACK_FULL))?;
                self.slots.insert(path.to_string(), Slot { off, width });
            }
        }
        Ok(())
    }

    /// `bytes` (rounded up to 8) of fresh stack; the offset of their lowest byte.
    pub fn alloc(&mut self, bytes: u32) -> Result<i16, CompileError> {
        let rounded = (i64::from(bytes) + 7) / 8 * 8;
        self.used += rounded;
        if self.used > STACK_BYTES {
            return Err(CompileError::Program(format!(
                "the program keeps {STACK_FULL}"
            )));
        }
        i16::try_from(-self.used)
            .map_err(|_| CompileError::Program(format!("the program keeps {STACK_FULL}")))
    }

    /// Each header that only extracts make valid (per `plan`) by its validity slot, with the
    /// field slots an extract of it stores (those `plan` keeps live); none without a plan.
    pub fn extracted_slots(
        &self,
        plan: Option<&super::liveness::FieldPlan>,
    ) -> HashMap<i16, Vec<i16>> {
        let Some(plan) = plan else {
            return HashMap::new();
        };
        self.headers
            .iter()
            .filter(|h| !plan.validated.contains(&h.valid))
            .map(|h| {
                let fields = h
                    .fields
                    .iter()
                    .filter(|(_, s)| s.width > 0 && plan.live.contains(&s.off))
                    .map(|(_, s)| s.off)
                    .collect();
                (h.valid, fields)
            })
            .collect()
    }

    /// The header at a path.
    pub fn header(&self, path: &str) -> Option<&HeaderSlots> {
        self.headers.iter().find(|h| h.path == path)
    }
}
