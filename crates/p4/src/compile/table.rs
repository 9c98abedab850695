//! Tables as BPF maps, their contents, and the code of `t.apply()`; counter and register
//! instances as array maps.
//!
//! # Maps
//!
//! * Each key value is `ceil(w/8)` bytes, big-endian (network order), keys concatenated in the
//!   table's key order.
//! * **Exact** keys only → `HASH` keyed by the concatenated keys.
//! * **Lpm** (one lpm key, last, after exact keys) → `LPM_TRIE` keyed by `u32 prefixlen` (host
//!   order, what the kernel wants) and the concatenated keys; the prefix counts the exact keys'
//!   bytes and the lpm key's padding bits in full.
//! * **Ternary** (any ternary key) → `ARRAY` of rows keyed by `u32` row index, rows in priority
//!   order (highest first, ties in entry order: the interpreter's winner is the first row that
//!   matches). A row is `u32 action id`, 4 zero bytes, per key `u64 value, u64 mask` (little
//!   endian; exact keys with an all-ones mask, lpm keys with their prefix mask), then the action
//!   data. Action id 0 marks the first unused row, where the scan stops; the scan is a loop over
//!   at most `max_entries` rows.
//! * `max_entries` is the table's `size` (1024 without one), at least the number of entries; a
//!   table with `const entries` is sized to exactly its entries, since nothing can add more.
//! * Values of `HASH` and `LPM_TRIE`: `u32 action id`, 4 zero bytes, then the action data.
//! * Action ids are 1 + the action's index in the table's `actions` list; action data is one
//!   little-endian `u64` per directionless parameter, in declaration order, sized for the
//!   action with the most.
//! * `counter(n)` → `ARRAY` of `n` `{u64 packets, u64 bytes}`; `register<T>(n)` → `ARRAY` of
//!   `n` `u64`.

use super::storage::Slot;
use super::{CompileError, Gen, GenMap};
use crate::ast::{ControlDecl, Local, TableDecl, TypeRef};
use crate::entries::{ActionBinding, KeyMatch};
use crate::interp::find_action;
use crate::interp::value::Value;
use crate::Span;
use linerate_bpf::emit::MapSpec;
use linerate_bpf::facts::helper::MAP_LOOKUP_ELEM;
use linerate_bpf::insn::build::{add64, call_helper, ld_map, ldx, mov64_reg, st, stx};
use linerate_bpf::insn::{AluOp, Cond, Size};
use linerate_bpf::MapType;
use std::collections::HashMap;

/// `BPF_F_NO_PREALLOC`, which LPM tries demand.
const NO_PREALLOC: u32 = 1;
/// Table size without a `size` property.
const DEFAULT_SIZE: u32 = 1024;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Scheme {
    Exact,
    Lpm,
    Ternary,
}

/// A table's map and how its keys and values are laid out.
#[derive(Debug, Clone)]
pub(crate) struct TableMap {
    map: u32,
    scheme: Scheme,
    /// Width in bits of each key.
    key_widths: Vec<u32>,
    rows: u32,
}

/// The slots of a table's last `apply()` result.
#[derive(Debug, Clone, Copy)]
pub(crate) struct TableResult {
    pub hit: i16,
    pub miss: i16,
    pub action: i16,
}

fn key_bytes(width: u32) -> u32 {
    width.div_ceil(8)
}

fn value_bits(value: &Value) -> u64 {
    value.as_bits().unwrap_or(0) as u64
}

impl<'a> Gen<'a> {
    fn add_map(
        &mut self,
        spec: MapSpec,
        entries: Vec<(Vec<u8>, Vec<u8>)>,
    ) -> Result<u32, CompileError> {
        let index = u32::try_from(self.maps.len())
            .map_err(|_| CompileError::Program("too many maps".into()))?;
        self.maps.push(GenMap { spec, entries });
        Ok(index)
    }

    /// Maps for every table and extern instance of the control, with the tables' contents.
    pub fn declare_maps(&mut self, control: &'a ControlDecl) -> Result<(), CompileError> {
        for local in &control.locals {
            match local {
                Local::Table(t) => self.declare_table(control, t)?,
                Local::Instance(i) => {
                    let size = i
                        .args
                        .first()
                        .and_then(|a| self.checked.constant(a))
                        .and_then(|s| u32::try_from(s).ok())
                        .filter(|s| *s > 0)
                        .ok_or_else(|| {
                            self.unsupported(
                                i.name.span,
                                "an extern instance without a constant size",
                            )
                        })?;
                    let value_size = match &i.ty {
                        TypeRef::Named(n) if n.name == "counter" => 16,
                        TypeRef::Specialized(n, args)
                            if n.name == "register" && args.len() == 1 =>
                        {
                            let ty = crate::interp::resolve_type(&self.checked.types, &args[0]);
                            ty.and_then(|t| super::storage::scalar_width(&self.checked.types, &t))
                                .ok_or_else(|| {
                                    self.unsupported(i.name.span, "a register of this type")
                                })?;
                            8
                        }
                        _ => return Err(self.unsupported(i.name.span, "this extern instance")),
                    };
                    let map = self.add_map(
                        MapSpec::new(&i.name.name, MapType::ARRAY, 4, value_size, size),
                        Vec::new(),
                    )?;
                    self.instances.insert(i.name.name.clone(), map);
                }
                _ => {}
            }
        }
        Ok(())
    }

    pub fn instance_map(&self, object: &crate::ast::Expr) -> Result<u32, CompileError> {
        match &object.kind {
            crate::ast::ExprKind::Name(n) => self.instances.get(&n.name).copied(),
            _ => None,
        }
        .ok_or_else(|| self.unsupported(object.span, "this extern instance"))
    }

    /// The id of `action` in `table`'s action list.
    pub fn action_id(&self, table: &str, action: &str) -> Option<i32> {
        let control = self.control?;
        let decl = control.tables().find(|t| t.name.name == table)?;
        let index = decl.actions.iter().position(|a| a.name.name == action)?;
        i32::try_from(index).ok()?.checked_add(1)
    }

    fn params_of(&self, action: &str) -> Vec<(String, u32)> {
        let Some(control) = self.control else {
            return Vec::new();
        };
        find_action(self.checked, control, action)
            .map(|a| {
                a.params
                    .iter()
                    .filter(|p| p.direction.is_none())
                    .map(|p| {
                        let width = crate::interp::resolve_type(&self.checked.types, &p.ty)
                            .and_then(|t| super::storage::scalar_width(&self.checked.types, &t))
                            .unwrap_or(64);
                        (p.name.name.clone(), width)
                    })
                    .collect()
            })
            .unwrap_or_default()
    }

    fn action_data(
        &self,
        table: &TableDecl,
        binding: &ActionBinding,
        slots: usize,
    ) -> Result<Vec<u8>, CompileError> {
        let id = self
            .action_id(&table.name.name, &binding.name)
            .ok_or_else(|| {
                self.unsupported(
                    table.span,
                    &format!("action '{}' outside the table's list", binding.name),
                )
            })?;
        let mut bytes = (id as u32).to_le_bytes().to_vec();
        bytes.extend_from_slice(&[0; 4]);
        let _ = slots;
        Ok(bytes)
    }

    fn declare_table(
        &mut self,
        control: &'a ControlDecl,
        table: &'a TableDecl,
    ) -> Result<(), CompileError> {
        let mut key_widths = Vec::new();
        for key in &table.keys {
            key_widths.push(self.width(&key.expr)?);
        }
        let kinds: Vec<&str> = table
            .keys
            .iter()
            .map(|k| k.match_kind.name.as_str())
            .collect();
        let scheme = if kinds.contains(&"ternary") {
            Scheme::Ternary
        } else if let Some(lpm) = kinds.iter().position(|k| *k == "lpm") {
            if lpm + 1 != kinds.len() || kinds.iter().filter(|k| **k == "lpm").count() > 1 {
                return Err(
                    self.unsupported(table.span, "an lpm table whose one lpm key is not the last")
                );
            }
            Scheme::Lpm
        } else {
            Scheme::Exact
        };
        if table.keys.is_empty() {
            return Err(self.unsupported(table.span, "a table without keys"));
        }
        let size = match &table.size {
            Some(e) => self
                .checked
                .constant(e)
                .and_then(|s| u32::try_from(s).ok())
                .ok_or_else(|| {
                    self.unsupported(e.span, "a table size that is not a 32-bit constant")
                })?,
            None => DEFAULT_SIZE,
        };
        let contents = self.entries.table(&control.name.name, &table.name.name);
        let entries = contents.map(|c| c.entries.as_slice()).unwrap_or(&[]);
        // A table with `const entries` holds exactly those: the control plane cannot add any,
        // so its map and a ternary table's scan need no room beyond them (a 2-rule ACL scans 2
        // rows, not `size`, which also keeps `bound`'s paths few).
        let installed = u32::try_from(entries.len()).unwrap_or(u32::MAX);
        let rows = if table.entries.is_empty() {
            size.max(installed)
        } else {
            installed
        }
        .max(1);
        let max_params = table
            .actions
            .iter()
            .map(|a| self.params_of(&a.name.name).len())
            .max()
            .unwrap_or(0);
        let data_size = 8 + 8 * max_params;
        let total_key_bytes: u32 = key_widths.iter().map(|w| key_bytes(*w)).sum();
        let key_part = match scheme {
            Scheme::Ternary => 16 * key_widths.len(),
            _ => 0,
        };
        let value_size = u32::try_from(data_size + key_part).unwrap_or(u32::MAX);

        let mut ordered: Vec<_> = entries.iter().collect();
        if scheme == Scheme::Ternary {
            // Stable: among equal priorities the entry listed first stays first.
            ordered.sort_by_key(|e| std::cmp::Reverse(e.priority));
        }
        let mut map_entries = Vec::new();
        for (row, entry) in ordered.iter().enumerate() {
            let mut data = self.action_data(table, &entry.action, max_params)?;
            for (_, v) in &entry.action.args {
                data.extend_from_slice(&value_bits(v).to_le_bytes());
            }
            data.resize(data_size, 0);
            let mut value_masks = Vec::new();
            for m in &entry.matches {
                match m {
                    KeyMatch::Masked { value, mask } => {
                        value_masks.push((*value as u64, *mask as u64))
                    }
                    KeyMatch::Range { .. } => {
                        return Err(self.unsupported(table.span, "a range match in a table entry"))
                    }
                }
            }
            let (key, value) = match scheme {
                Scheme::Ternary => {
                    let mut value = data[..8].to_vec();
                    for (v, m) in &value_masks {
                        value.extend_from_slice(&v.to_le_bytes());
                        value.extend_from_slice(&m.to_le_bytes());
                    }
                    value.extend_from_slice(&data[8..]);
                    let row = u32::try_from(row).unwrap_or(u32::MAX);
                    (row.to_le_bytes().to_vec(), value)
                }
                Scheme::Exact | Scheme::Lpm => {
                    let mut key = Vec::new();
                    let mut prefix = 0u32;
                    for (i, ((v, m), w)) in value_masks.iter().zip(&key_widths).enumerate() {
                        let n = key_bytes(*w);
                        for j in (0..n).rev() {
                            key.push((v >> (8 * j)) as u8);
                        }
                        let last = i + 1 == key_widths.len();
                        prefix += if scheme == Scheme::Lpm && last {
                            8 * n - w + m.count_ones()
                        } else {
                            8 * n
                        };
                    }
                    if scheme == Scheme::Lpm {
                        let mut k = prefix.to_le_bytes().to_vec();
                        k.extend_from_slice(&key);
                        key = k;
                    }
                    (key, data)
                }
            };
            map_entries.push((key, value));
        }
        let spec = match scheme {
            Scheme::Exact => MapSpec::new(
                &table.name.name,
                MapType::HASH,
                total_key_bytes,
                value_size,
                rows,
            ),
            Scheme::Lpm => MapSpec {
                flags: NO_PREALLOC,
                ..MapSpec::new(
                    &table.name.name,
                    MapType::LPM_TRIE,
                    total_key_bytes + 4,
                    value_size,
                    rows,
                )
            },
            Scheme::Ternary => MapSpec::new(&table.name.name, MapType::ARRAY, 4, value_size, rows),
        };
        let map = self.add_map(spec, map_entries)?;
        self.tables.insert(
            table.name.name.clone(),
            TableMap {
                map,
                scheme,
                key_widths,
                rows,
            },
        );
        Ok(())
    }

    /// An 8-byte slot for something `t.apply()` at `span` keeps.
    fn slot_at(&mut self, span: Span) -> Result<i16, CompileError> {
        self.frame.alloc(8).map_err(|_| self.stack_full(span))
    }

    /// The refusal of what at `span` needs more stack than is left.
    fn stack_full(&self, span: Span) -> CompileError {
        self.unsupported(span, super::storage::STACK_FULL)
    }

    /// `t.apply()`: look the key up, run the entry's action (or the default action on a miss),
    /// and leave `hit`, `miss` and the action id in the table's result slots.
    ///
    /// `keep_result` asks for the outcome (`hit`, `miss`, `action_run`) in the table's result
    /// slots, for an expression that reads it; a `t.apply();` statement stores none, so a
    /// program applying many tables as statements spends neither stack nor instructions on them.
    pub fn apply_table(
        &mut self,
        name: &str,
        span: Span,
        keep_result: bool,
    ) -> Result<(), CompileError> {
        let control = self
            .control
            .ok_or_else(|| self.unsupported(span, "a table outside a control"))?;
        let decl = control
            .tables()
            .find(|t| t.name.name == name)
            .ok_or_else(|| self.unsupported(span, &format!("unknown table '{name}'")))?;
        let table = self
            .tables
            .get(name)
            .cloned()
            .ok_or_else(|| self.unsupported(span, &format!("table '{name}' has no map")))?;
        let result = match (keep_result, self.table_results.get(name)) {
            (false, _) => None,
            (true, Some(r)) => Some(*r),
            (true, None) => {
                let r = TableResult {
                    hit: self.slot_at(span)?,
                    miss: self.slot_at(span)?,
                    action: self.slot_at(span)?,
                };
                self.table_results.insert(name.to_string(), r);
                Some(r)
            }
        };
        let (hit, miss, end) = (self.code.label(), self.code.label(), self.code.label());
        let data_off: i16 = match table.scheme {
            Scheme::Exact | Scheme::Lpm => {
                let header = if table.scheme == Scheme::Lpm { 4 } else { 0 };
                let total: u32 =
                    table.key_widths.iter().map(|w| key_bytes(*w)).sum::<u32>() + header;
                let key = self.scratch(total).map_err(|_| self.stack_full(span))?;
                let mut at = i32::from(key) + i32::try_from(header).unwrap_or(0);
                let mut prefix = 0u32;
                for (k, width) in decl.keys.iter().zip(&table.key_widths) {
                    self.hoist(&k.expr, true)?;
                    self.expr(&k.expr, 0)?;
                    let n = key_bytes(*width);
                    self.store_key(at, n)?;
                    at += i32::try_from(n).unwrap_or(0);
                    prefix += 8 * n;
                }
                if table.scheme == Scheme::Lpm {
                    self.emit(st(Size::W, 10, key, i32::try_from(prefix).unwrap_or(0)));
                }
                self.emit(ld_map(1, table.map));
                self.emit(mov64_reg(2, 10));
                self.emit(add64(2, i32::from(key)));
                self.emit(call_helper(MAP_LOOKUP_ELEM));
                self.code.branch_imm(Cond::Eq, 0, 0, miss);
                8
            }
            Scheme::Ternary => {
                // The scan's counter, row index and key values, side by side in scratch.
                let keys = u32::try_from(decl.keys.len()).unwrap_or(u32::MAX);
                let base = self
                    .scratch(keys.saturating_add(2).saturating_mul(8))
                    .map_err(|_| self.stack_full(span))?;
                let (counter, index) = (base, base + 8);
                let mut key_slots = Vec::new();
                for (i, k) in decl.keys.iter().enumerate() {
                    self.hoist(&k.expr, true)?;
                    // A key that is a field or variable is compared where it is.
                    if let Ok(super::expr::Place::Scalar(slot)) = self.place(&k.expr) {
                        if self.apply_result(&k.expr)?.is_none() {
                            key_slots.push(slot.off);
                            continue;
                        }
                    }
                    self.expr(&k.expr, 0)?;
                    let off = base + 16 + i16::try_from(8 * i).unwrap_or(i16::MAX);
                    self.emit(stx(Size::Dw, 10, off, 1));
                    key_slots.push(off);
                }
                let (top, next) = (self.code.label(), self.code.label());
                self.emit(st(Size::Dw, 10, counter, 0));
                self.code.place(top);
                self.emit(ldx(Size::Dw, 1, 10, counter));
                self.code.branch_imm(
                    Cond::Ge,
                    1,
                    i32::try_from(table.rows).unwrap_or(i32::MAX),
                    miss,
                );
                self.emit(stx(Size::W, 10, index, 1));
                self.emit(ld_map(1, table.map));
                self.emit(mov64_reg(2, 10));
                self.emit(add64(2, i32::from(index)));
                self.emit(call_helper(MAP_LOOKUP_ELEM));
                self.code.branch_imm(Cond::Eq, 0, 0, miss);
                self.emit(ldx(Size::W, 1, 0, 0));
                self.code.branch_imm(Cond::Eq, 1, 0, miss);
                for (k, slot) in key_slots.iter().enumerate() {
                    let at = i16::try_from(8 + 16 * k).unwrap_or(i16::MAX);
                    self.emit(ldx(Size::Dw, 1, 10, *slot));
                    self.emit(ldx(Size::Dw, 2, 0, at + 8));
                    self.emit(linerate_bpf::insn::build::alu64_reg(AluOp::And, 1, 2));
                    self.emit(ldx(Size::Dw, 2, 0, at));
                    self.code.branch_reg(Cond::Ne, 1, 2, next);
                }
                self.code.goto(hit);
                self.code.place(next);
                self.emit(ldx(Size::Dw, 1, 10, counter));
                self.emit(add64(1, 1));
                self.emit(stx(Size::Dw, 10, counter, 1));
                self.code.goto(top);
                i16::try_from(8 + 16 * table.key_widths.len()).unwrap_or(i16::MAX)
            }
        };

        // Each action of the list gets parameter slots and a body.
        let mut bodies = Vec::new();
        for call in &decl.actions {
            let params: Vec<(String, u32)> = self.params_of(&call.name.name);
            let mut slots = HashMap::new();
            let mut ordered = Vec::new();
            for (p, width) in &params {
                let off = self.slot_at(span)?;
                slots.insert(p.clone(), Slot { off, width: *width });
                ordered.push(off);
            }
            bodies.push((call, self.code.label(), slots, ordered));
        }

        self.code.place(hit);
        self.emit(ldx(Size::W, 1, 0, 0));
        if let Some(result) = result {
            self.emit(st(Size::Dw, 10, result.hit, 1));
            self.emit(st(Size::Dw, 10, result.miss, 0));
            self.emit(stx(Size::Dw, 10, result.action, 1));
        }
        let copies: Vec<_> = bodies.iter().map(|_| self.code.label()).collect();
        for (id, copy) in copies.iter().enumerate() {
            self.code
                .branch_imm(Cond::Eq, 1, i32::try_from(id + 1).unwrap_or(0), *copy);
        }
        self.code.goto(miss);
        for ((_, body, _, ordered), copy) in bodies.iter().zip(&copies) {
            self.code.place(*copy);
            for (j, off) in ordered.iter().enumerate() {
                let at = data_off + i16::try_from(8 * j).unwrap_or(0);
                self.emit(ldx(Size::Dw, 2, 0, at));
                self.emit(stx(Size::Dw, 10, *off, 2));
            }
            self.code.goto(*body);
        }

        self.code.place(miss);
        if let Some(result) = result {
            self.emit(st(Size::Dw, 10, result.hit, 0));
            self.emit(st(Size::Dw, 10, result.miss, 1));
        }
        let default = self
            .entries
            .table(&control.name.name, name)
            .and_then(|c| c.default_action.clone());
        match default {
            Some(binding) => {
                let index = decl
                    .actions
                    .iter()
                    .position(|a| a.name.name == binding.name);
                let Some(index) = index else {
                    return Err(self.unsupported(
                        span,
                        &format!("default action '{}' outside the table's list", binding.name),
                    ));
                };
                if let Some(result) = result {
                    self.emit(st(
                        Size::Dw,
                        10,
                        result.action,
                        i32::try_from(index + 1).unwrap_or(0),
                    ));
                }
                let (_, body, _, ordered) = &bodies[index];
                for (off, (_, v)) in ordered.iter().zip(&binding.args) {
                    self.load_const(1, value_bits(v));
                    self.emit(stx(Size::Dw, 10, *off, 1));
                }
                self.code.goto(*body);
            }
            None => {
                if let Some(result) = result {
                    self.emit(st(Size::Dw, 10, result.action, 0));
                }
                self.code.goto(end);
            }
        }

        for (call, body, slots, _) in bodies {
            self.code.place(body);
            if let Some(action) = find_action(self.checked, control, &call.name.name) {
                if action.params.iter().any(|p| p.direction.is_some()) {
                    return Err(self.unsupported(
                        call.name.span,
                        "an action with directional parameters in a table",
                    ));
                }
                self.inline_action(action, slots)?;
            }
            self.code.goto(end);
        }
        self.code.place(end);
        Ok(())
    }
}
