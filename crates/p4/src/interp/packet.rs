//! The packet side of the pipeline: the architecture's three steps (parser, ingress, deparser),
//! `extract`/`advance` with bounds, `select`, `emit`, and the rule that turns standard metadata
//! into an XDP action.
//!
//! Headers are whole bytes (the checker requires it), so the parser cursor stays byte-aligned
//! unless `advance` moves it by a non-multiple of 8; the payload then starts at the byte holding
//! the cursor.

use super::eval::{BlockRef, Halt, Machine, Step};
use super::value::{mask, Bits, HeaderValue, Value};
use super::{resolve_type, InterpError, Outcome, State, XdpAction, MAX_GROWTH, MAX_PARSER_STEPS};
use crate::ast::{Expr, Keyset, Param, ParserDecl, Transition};
use crate::check::types::Type;
use crate::entries::Entries;
use crate::Checked;
use linerate_bpf::facts::test_run_buffer;
use std::collections::HashMap;

/// How the parser ended.
enum Parsed {
    Accept,
    Reject(String),
}

pub(super) fn pipeline(
    checked: &Checked,
    entries: &Entries,
    input: &[u8],
    ingress_port: u32,
    state: &mut State,
) -> Result<Outcome, InterpError> {
    let parser = checked
        .parser()
        .ok_or(InterpError::MissingBlock("parser"))?;
    let ingress = checked
        .ingress()
        .ok_or(InterpError::MissingBlock("ingress"))?;
    let deparser = checked
        .deparser()
        .ok_or(InterpError::MissingBlock("deparser"))?;
    let types = &checked.types;
    let zero = |param: Option<&Param>| {
        param
            .and_then(|p| resolve_type(types, &p.ty))
            .map_or(Value::Opaque, |t| Value::zero(types, &t))
    };
    // The architecture fixes the parameter order: (packet, hdr, meta, std) for the parser,
    // (hdr, meta, std) for ingress, (packet, hdr) for the deparser.
    let hdr = zero(parser.params.get(1));
    let meta = zero(parser.params.get(2));
    let mut std = zero(parser.params.get(3));
    if let Some(port) = std.field_mut("ingress_port") {
        *port = Value::Bits(Bits::new(32, false, u128::from(ingress_port)));
    }

    let mut machine = Machine {
        checked,
        entries,
        state,
        block: BlockRef::Parser(parser),
        scopes: Vec::new(),
        input,
        cursor_bits: 0,
        output: Vec::new(),
    };

    let names =
        |params: &[Param]| -> Vec<String> { params.iter().map(|p| p.name.name.clone()).collect() };
    let parser_names = names(&parser.params);
    machine.enter(
        &parser_names,
        vec![Value::Opaque, hdr, meta, std],
        BlockRef::Parser(parser),
    )?;
    let parsed = machine.parse(parser)?;
    let values = machine.leave(&parser_names);
    if let Parsed::Reject(error) = parsed {
        return Ok(Outcome {
            action: XdpAction::Drop,
            packet: input.to_vec(),
            parser_error: error,
        });
    }
    let ingress_names = names(&ingress.params);
    let values = values.into_iter().skip(1).collect();
    machine.enter(&ingress_names, values, BlockRef::Control(ingress))?;
    match machine.block(&ingress.apply) {
        Ok(_) | Err(Halt::Exit) | Err(Halt::Reject(_)) => {}
        Err(Halt::Error(e)) => return Err(e),
    }
    let mut values = machine.leave(&ingress_names).into_iter();
    let hdr = values.next().unwrap_or(Value::Opaque);
    let _meta = values.next();
    let std = values.next().unwrap_or(Value::Opaque);

    let deparser_names = names(&deparser.params);
    machine.enter(
        &deparser_names,
        vec![Value::Opaque, hdr],
        BlockRef::Control(deparser),
    )?;
    match machine.block(&deparser.apply) {
        Ok(_) | Err(Halt::Exit) | Err(Halt::Reject(_)) => {}
        Err(Halt::Error(e)) => return Err(e),
    }
    let payload_start = usize::try_from(machine.cursor_bits / 8).unwrap_or(usize::MAX);
    let mut packet = std::mem::take(&mut machine.output);
    packet.extend_from_slice(input.get(payload_start..).unwrap_or(&[]));
    if !resizable(input.len(), packet.len()) {
        return Ok(Outcome {
            action: XdpAction::Drop,
            packet: input.to_vec(),
            parser_error: String::from("NoError"),
        });
    }

    let dropped = std.field("drop").is_some_and(Value::truthy);
    let egress = std
        .field("egress_port")
        .and_then(Value::as_bits)
        .map_or(0, |b| u32::try_from(b & mask(32)).unwrap_or(0));
    let action = if dropped {
        XdpAction::Drop
    } else if egress == 0 {
        XdpAction::Pass
    } else if egress == ingress_port {
        XdpAction::Tx
    } else {
        XdpAction::Redirect(egress)
    };
    Ok(Outcome {
        action,
        packet,
        parser_error: String::from("NoError"),
    })
}

/// Whether XDP can turn a packet of `from` bytes into one of `to` by moving its start
/// (`bpf_xdp_adjust_head`, with the kernel's limits pinned in `crates/kernel`): at most
/// [`MAX_GROWTH`] bytes more, and at least `ETH_HLEN` bytes left after a change. An unchanged
/// length needs no move.
fn resizable(from: usize, to: usize) -> bool {
    let (from, to) = (from as u64, to as u64);
    from == to || (to >= test_run_buffer::ETH_HLEN && to <= from.saturating_add(MAX_GROWTH))
}

impl<'a> Machine<'a, '_> {
    /// Starts a block: its parameters bound (by position) to `values`, then its locals.
    fn enter(
        &mut self,
        names: &[String],
        values: Vec<Value>,
        block: BlockRef<'a>,
    ) -> Result<(), InterpError> {
        self.block = block;
        self.scopes = vec![names.iter().cloned().zip(values).collect::<HashMap<_, _>>()];
        match self.declare_locals() {
            Ok(()) => Ok(()),
            Err(Halt::Error(e)) => Err(e),
            Err(_) => Ok(()),
        }
    }

    /// Ends a block: its parameters' values (copy-out), in order.
    fn leave(&mut self, names: &[String]) -> Vec<Value> {
        let mut scope = std::mem::take(&mut self.scopes)
            .into_iter()
            .next()
            .unwrap_or_default();
        names
            .iter()
            .map(|n| scope.remove(n).unwrap_or(Value::Opaque))
            .collect()
    }

    fn parse(&mut self, parser: &'a ParserDecl) -> Result<Parsed, InterpError> {
        let mut current = String::from("start");
        for _ in 0..MAX_PARSER_STEPS {
            match current.as_str() {
                "accept" => return Ok(Parsed::Accept),
                "reject" => return Ok(Parsed::Reject(String::from("NoError"))),
                _ => {}
            }
            let Some(state) = parser.state(&current) else {
                return Ok(Parsed::Reject(String::from("NoMatch")));
            };
            let step = self.state_body(state);
            match step {
                Ok(next) => current = next,
                Err(Halt::Reject(error)) => return Ok(Parsed::Reject(error)),
                Err(Halt::Exit) => return Ok(Parsed::Accept),
                Err(Halt::Error(e)) => return Err(e),
            }
        }
        Ok(Parsed::Reject(String::from("ParserTimeout")))
    }

    /// Runs a state's statements and returns the next state's name.
    fn state_body(&mut self, state: &'a crate::ast::ParserState) -> Result<String, Halt> {
        self.scopes.truncate(1);
        self.scopes.push(HashMap::new());
        for stmt in &state.body {
            self.stmt(stmt)?;
        }
        match &state.transition {
            Transition::Direct(next) => Ok(next.name.clone()),
            Transition::Select { exprs, cases, .. } => {
                let mut selectors = Vec::new();
                for e in exprs {
                    selectors.push(self.eval(e)?);
                }
                for case in cases {
                    if self.case_matches(&case.keysets, &selectors)? {
                        return Ok(case.next.name.clone());
                    }
                }
                Err(Halt::Reject(String::from("NoMatch")))
            }
        }
    }

    fn case_matches(&mut self, keysets: &'a [Keyset], selectors: &[Value]) -> Result<bool, Halt> {
        if let [Keyset::Default(_)] = keysets {
            return Ok(true);
        }
        for (keyset, value) in keysets.iter().zip(selectors) {
            let holds = match keyset {
                Keyset::Default(_) => true,
                Keyset::Value(v) => {
                    let v = self.eval(v)?;
                    compare(crate::ast::BinaryOp::Eq, value.clone(), v)
                }
                Keyset::Mask(v, m) => {
                    let (v, m) = (self.eval(v)?, self.eval(m)?);
                    let masked =
                        |x: Value| super::value::binary(crate::ast::BinaryOp::BitAnd, x, m.clone());
                    match (masked(value.clone()), masked(v)) {
                        (Some(a), Some(b)) => compare(crate::ast::BinaryOp::Eq, a, b),
                        _ => false,
                    }
                }
                Keyset::Range(lo, hi) => {
                    let (lo, hi) = (self.eval(lo)?, self.eval(hi)?);
                    compare(crate::ast::BinaryOp::Le, lo, value.clone())
                        && compare(crate::ast::BinaryOp::Le, value.clone(), hi)
                }
            };
            if !holds {
                return Ok(false);
            }
        }
        Ok(true)
    }

    /// `packet.extract(hdr)`: reads the header's bytes at the cursor, or rejects with
    /// `PacketTooShort` (or `StackOutOfBounds` for `stack.next` of a full stack).
    pub(super) fn extract(&mut self, e: &'a Expr, args: &'a [Expr]) -> Result<Value, Halt> {
        let Some(target) = args.first() else {
            return Err(self.unsupported(e.span, "extract without an argument"));
        };
        let Some(Type::Header(name)) = self.checked.type_of(target).cloned() else {
            return Err(self.unsupported(target.span, "extract of a non-header"));
        };
        let Some(layout) = self.checked.header(&name) else {
            return Err(self.unsupported(target.span, "extract of an unknown header"));
        };
        let place = self.place(target)?;
        if let Some((Step::Next, stack_steps)) = place.steps.split_last() {
            let full = match self.target_mut(&place.root, stack_steps) {
                Some(Value::Stack(s)) => s.next_index as usize >= s.elements.len(),
                _ => true,
            };
            if full {
                return Err(Halt::Reject(String::from("StackOutOfBounds")));
            }
        }
        let start = self.cursor_bits;
        let end = start.saturating_add(u64::from(layout.width_bits));
        if end > (self.input.len() as u64).saturating_mul(8) {
            return Err(Halt::Reject(String::from("PacketTooShort")));
        }
        let types = &self.checked.types;
        let fields = layout
            .fields
            .iter()
            .map(|f| {
                let offset = start.saturating_add(u64::from(f.offset_bits));
                let value = match scalar_of(types, &f.ty) {
                    Some((width, signed)) => {
                        let bits = read_bits(self.input, offset, width);
                        if f.ty == Type::Bool {
                            Value::Bool(bits != 0)
                        } else {
                            Value::Bits(Bits::new(width, signed, bits))
                        }
                    }
                    None => Value::zero(types, &f.ty),
                };
                (f.name.clone(), value)
            })
            .collect();
        let header = Value::Header(HeaderValue {
            type_name: name,
            valid: true,
            fields,
        });
        self.cursor_bits = end;
        self.write(&place, header);
        if let Some((Step::Next, stack_steps)) = place.steps.split_last() {
            if let Some(Value::Stack(s)) = self.target_mut(&place.root, stack_steps) {
                s.next_index = s.next_index.saturating_add(1);
            }
        }
        Ok(Value::Opaque)
    }

    /// `packet.advance(bits)`: skips bits, or rejects with `PacketTooShort`.
    pub(super) fn advance(&mut self, args: &'a [Expr]) -> Result<Value, Halt> {
        let bits = match args.first() {
            Some(a) => self.eval(a)?.as_bits().unwrap_or(0),
            None => 0,
        };
        let end = self
            .cursor_bits
            .saturating_add(u64::try_from(bits).unwrap_or(u64::MAX));
        if end > (self.input.len() as u64).saturating_mul(8) {
            return Err(Halt::Reject(String::from("PacketTooShort")));
        }
        self.cursor_bits = end;
        Ok(Value::Opaque)
    }

    /// `packet.emit(x)`: writes a valid header, each valid element of a stack, or each member of
    /// a struct, in order.
    pub(super) fn emit(&mut self, args: &'a [Expr]) -> Result<Value, Halt> {
        if let Some(arg) = args.first() {
            let value = self.eval(arg)?;
            self.emit_value(&value);
        }
        Ok(Value::Opaque)
    }

    fn emit_value(&mut self, value: &Value) {
        match value {
            Value::Header(h) if h.valid => {
                let Some(layout) = self.checked.header(&h.type_name) else {
                    return;
                };
                let mut bytes = vec![0u8; (layout.width_bits / 8) as usize];
                for (f, (_, v)) in layout.fields.iter().zip(&h.fields) {
                    if let Some((width, _)) = scalar_of(&self.checked.types, &f.ty) {
                        let bits = v.as_bits().unwrap_or(0);
                        write_bits(&mut bytes, u64::from(f.offset_bits), width, bits);
                    }
                }
                self.output.extend_from_slice(&bytes);
            }
            Value::Stack(s) => s.elements.iter().for_each(|e| self.emit_value(e)),
            Value::Struct(fields) => fields.iter().for_each(|(_, v)| self.emit_value(v)),
            _ => {}
        }
    }
}

fn compare(op: crate::ast::BinaryOp, a: Value, b: Value) -> bool {
    super::value::binary(op, a, b).is_some_and(|v| v.truthy())
}

/// The width and signedness of a header field's type (serializable enums by their underlying
/// type, `bool` as one bit).
fn scalar_of(types: &crate::TypeTable, ty: &Type) -> Option<(u32, bool)> {
    match ty {
        Type::Bit(w) => Some((*w, false)),
        Type::Int(w) => Some((*w, true)),
        Type::Bool => Some((1, false)),
        Type::Enum(name) => types
            .enums
            .get(name)
            .and_then(|i| i.underlying.as_ref())
            .and_then(|u| scalar_of(types, u)),
        _ => None,
    }
}

/// `width` bits of `bytes` from bit `offset`, most significant bit first (network order).
fn read_bits(bytes: &[u8], offset: u64, width: u32) -> u128 {
    let mut value = 0u128;
    for i in 0..u64::from(width) {
        let bit = offset.saturating_add(i);
        let byte = usize::try_from(bit / 8)
            .ok()
            .and_then(|b| bytes.get(b))
            .copied()
            .unwrap_or(0);
        value = (value << 1) | u128::from((byte >> (7 - bit % 8)) & 1);
    }
    value
}

/// Writes the low `width` bits of `value` into `bytes` from bit `offset`, network order.
fn write_bits(bytes: &mut [u8], offset: u64, width: u32, value: u128) {
    for i in 0..u64::from(width) {
        let bit = offset.saturating_add(i);
        let shift = u64::from(width) - 1 - i;
        let set = (value >> shift) & 1 == 1;
        let Some(byte) = usize::try_from(bit / 8).ok().and_then(|b| bytes.get_mut(b)) else {
            continue;
        };
        let flag = 1u8 << (7 - bit % 8);
        if set {
            *byte |= flag;
        } else {
            *byte &= !flag;
        }
    }
}
