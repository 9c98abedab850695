//! Table application: evaluate the keys, pick the entry the match kinds say wins, run its action
//! (or the default action on a miss) and return the `apply()` result (`hit`, `action_run`).
//!
//! Which matching entry wins: with a ternary key (or a range from a const entry), the highest
//! priority; otherwise with an lpm key, the longest prefix; otherwise (all exact) the first. Ties
//! go to the entry listed first, so const entries keep P4's "earlier entries win".

use super::eval::{BlockRef, Halt, Machine};
use super::find_action;
use super::value::Value;
use crate::ast::Expr;
use crate::entries::{KeyMatch, TableEntry};

impl<'a> Machine<'a, '_> {
    pub(super) fn apply_table(&mut self, e: &'a Expr, table: &str) -> Result<Value, Halt> {
        let BlockRef::Control(control) = self.block else {
            return Err(self.unsupported(e.span, "a table outside a control"));
        };
        let Some(decl) = control.tables().find(|t| t.name.name == table) else {
            return Err(self.unsupported(e.span, &format!("unknown table '{table}'")));
        };
        let mut keys = Vec::new();
        for key in &decl.keys {
            let value = self.eval(&key.expr)?;
            keys.push(key_bits(&value));
        }
        let contents = self.entries.table(&control.name.name, table);
        let lpm_key = decl.keys.iter().position(|k| k.match_kind.name == "lpm");
        let by_priority = decl.keys.iter().any(|k| k.match_kind.name == "ternary");
        let winner = contents.and_then(|c| select(&c.entries, &keys, lpm_key, by_priority));
        let (hit, binding) = match winner {
            Some(entry) => (true, Some(&entry.action)),
            None => (false, contents.and_then(|c| c.default_action.as_ref())),
        };
        let Some(binding) = binding else {
            return Ok(Value::ApplyResult {
                hit,
                action: String::from("NoAction"),
            });
        };
        let Some(action) = find_action(self.checked, control, &binding.name) else {
            return Err(self.unsupported(e.span, &format!("unknown action '{}'", binding.name)));
        };
        // The table's action list may bind directional parameters (`actions = { a(x); }`).
        let listed: &'a [Expr] = decl
            .actions
            .iter()
            .find(|a| a.name.name == binding.name)
            .map_or(&[], |a| a.args.as_slice());
        self.call_action(action, listed, &binding.args, false)?;
        Ok(Value::ApplyResult {
            hit,
            action: binding.name.clone(),
        })
    }
}

/// A key value as the bits entries compare with (`bool` as 1/0; others as 0).
fn key_bits(value: &Value) -> u128 {
    value.as_bits().unwrap_or(0)
}

fn select<'e>(
    entries: &'e [TableEntry],
    keys: &[u128],
    lpm_key: Option<usize>,
    by_priority: bool,
) -> Option<&'e TableEntry> {
    let matching = entries.iter().filter(|entry| {
        entry.matches.len() == keys.len()
            && entry.matches.iter().zip(keys).all(|(m, k)| m.matches(*k))
    });
    let has_range = entries.iter().any(|e| {
        e.matches
            .iter()
            .any(|m| matches!(m, KeyMatch::Range { .. }))
    });
    let mut best: Option<(&TableEntry, i64)> = None;
    for entry in matching {
        let rank = if by_priority || has_range {
            entry.priority
        } else if let Some(i) = lpm_key {
            entry
                .matches
                .get(i)
                .map_or(0, |m| i64::from(m.prefix_len()))
        } else {
            return Some(entry);
        };
        // Strictly greater: among equals the entry listed first stays.
        if best.is_none_or(|(_, r)| rank > r) {
            best = Some((entry, rank));
        }
    }
    best.map(|(entry, _)| entry)
}
