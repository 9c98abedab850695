//! Table contents (the control plane): a JSON entries file read and checked against a program,
//! merged with the program's own `const entries` and default actions.
//!
//! # The entries file
//!
//! ```json
//! {
//!   "tables": {
//!     "L3Ingress.ipv4_lpm": [
//!       { "match": { "hdr.ipv4.dst_addr": { "prefix": "10.0.0.0", "len": 8 } },
//!         "action": "ipv4_forward",
//!         "args": { "src_mac": "02:00:00:00:00:01", "dst_mac": "02:00:00:00:00:02", "port": 2 } }
//!     ],
//!     "FwIngress.acl": [
//!       { "match": { "hdr.ipv4.src_addr": { "value": "192.168.0.0", "mask": "255.255.0.0" },
//!                    "hdr.ipv4.protocol": 6 },
//!         "priority": 10, "action": "deny", "args": { "rule": 2 } }
//!     ]
//!   },
//!   "default_actions": {
//!     "L3Ingress.ipv4_lpm": { "action": "drop", "args": {} }
//!   }
//! }
//! ```
//!
//! * A table is named `"<control>.<table>"`, or just `"<table>"` when only one control has it.
//! * A key is named by its expression as written in the program (`"hdr.ipv4.dst_addr"`, spaces
//!   ignored), or by the expression's last component (`"dst_addr"`) when that is unambiguous.
//! * Match by the key's match kind: `exact` takes a value (or `{"value": v}`); `lpm` takes
//!   `{"prefix": p, "len": n}` (a bare value means the full length; an omitted key matches
//!   everything, length 0); `ternary` takes `{"value": v, "mask": m}` (a bare value means an
//!   all-ones mask; an omitted key matches everything). An `exact` key may not be omitted.
//! * Values are JSON numbers (negative only for `int<w>`), `true`/`false` for `bool`, or strings:
//!   decimal, `"0x..."` hex, `"0b..."` binary, dotted IPv4 (`"10.0.0.1"`, 32 bits) or a MAC
//!   (`"02:00:00:00:00:01"`, 48 bits). A value must fit the key's or parameter's width.
//! * `priority` (optional, default 0) orders entries of a table with a ternary key: the highest
//!   priority wins, ties go to the entry listed first. Tables without ternary keys ignore it: lpm
//!   picks the longest prefix (ties: first listed), exact the first match.
//! * In a table without ternary keys no two entries may have the same key (a BPF hash map or
//!   LPM trie holds one value per key).
//! * `action` must be one of the table's actions; `args` gives every directionless parameter of
//!   the action by name, and nothing else.
//! * A table with `const entries` takes no entries from the file, and a `const default_action`
//!   cannot be replaced. The program's `const entries` are part of the table's contents (in source
//!   order, priority 0), and its `default_action` holds unless the file replaces it.
//!
//! Every error names the file and the entry (`tables["L3Ingress.ipv4_lpm"][2]`) it concerns.

use crate::ast::{ActionCall, ControlDecl, Keyset, TableDecl};
use crate::check::types::Type;
use crate::interp::value::{mask, Bits, Value};
use crate::interp::{find_action, resolve_type};
use crate::Checked;
use serde_json::Value as Json;
use std::collections::BTreeMap;
use std::path::Path;

/// The contents of every table of a program: const entries, file entries, default actions.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entries {
    tables: BTreeMap<String, TableContents>,
}

/// One table's entries and default action.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct TableContents {
    /// Entries in order (const entries first).
    pub entries: Vec<TableEntry>,
    /// The action on a miss; `None` is NoAction.
    pub default_action: Option<ActionBinding>,
}

/// One entry: a match per key, its priority and the action it runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TableEntry {
    /// One per table key, in key order.
    pub matches: Vec<KeyMatch>,
    /// Higher wins among matching entries of a table with a ternary key.
    pub priority: i64,
    /// The action and its control-plane arguments.
    pub action: ActionBinding,
}

/// How one key of an entry matches.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KeyMatch {
    /// The key matches when `key & mask == value` (`value` has no bits outside `mask`): exact is
    /// an all-ones mask, lpm a prefix mask, a wildcard mask 0.
    Masked {
        /// The value to compare with.
        value: u128,
        /// The bits compared.
        mask: u128,
    },
    /// The key matches when `lo <= key <= hi` (const entries with `lo .. hi`).
    Range {
        /// Lowest value.
        lo: u128,
        /// Highest value.
        hi: u128,
    },
}

impl KeyMatch {
    /// Whether a key value (its bits) matches.
    pub fn matches(&self, key: u128) -> bool {
        match *self {
            KeyMatch::Masked { value, mask } => key & mask == value,
            KeyMatch::Range { lo, hi } => lo <= key && key <= hi,
        }
    }

    /// The prefix length of an lpm match (the number of mask bits).
    pub fn prefix_len(&self) -> u32 {
        match self {
            KeyMatch::Masked { mask, .. } => mask.count_ones(),
            KeyMatch::Range { .. } => 0,
        }
    }
}

/// An action with the values of its directionless parameters.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ActionBinding {
    /// The action's name.
    pub name: String,
    /// `(parameter, value)` for every directionless parameter, in declaration order.
    pub args: Vec<(String, Value)>,
}

/// An entries file that does not fit its program: where, and what.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{file}: {location}: {kind}")]
pub struct EntriesError {
    /// The entries file (or the program, for its const entries).
    pub file: String,
    /// The entry: `tables["C.t"][2]`, `default_actions["C.t"]`, or `top level`.
    pub location: String,
    /// What is wrong (boxed: an error travels up many frames, the common `Ok` path stays small).
    pub kind: Box<EntriesErrorKind>,
}

/// The classes of entries errors.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum EntriesErrorKind {
    /// The file could not be read.
    #[error("cannot read: {0}")]
    Io(String),
    /// The file is not JSON.
    #[error("not JSON: {0}")]
    Json(String),
    /// JSON of the wrong shape (a string where an object belongs, an unknown field, ...).
    #[error("{0}")]
    Shape(String),
    /// No table of the program has this name (or a bare name is ambiguous).
    #[error("unknown table '{0}' (name it \"<control>.<table>\")")]
    UnknownTable(String),
    /// The table has no key of this name.
    #[error("table '{table}' has no key '{key}' (its keys: {known})")]
    UnknownKey {
        /// The table.
        table: String,
        /// The name given.
        key: String,
        /// The keys it has.
        known: String,
    },
    /// An exact key the entry does not give.
    #[error("missing exact key '{0}'")]
    MissingKey(String),
    /// A match of the wrong form for the key's match kind.
    #[error("key '{key}' is {kind}: {reason}")]
    MatchKind {
        /// The key.
        key: String,
        /// Its match kind.
        kind: String,
        /// What form it needs.
        reason: String,
    },
    /// A value that cannot be read as a number of the needed kind.
    #[error("{what}: bad value {value}: {reason}")]
    BadValue {
        /// The key, mask, prefix length or parameter.
        what: String,
        /// The value as written.
        value: String,
        /// Why.
        reason: String,
    },
    /// A value too wide for its key or parameter.
    #[error("{what}: value {value} does not fit in {width} bits")]
    Width {
        /// The key, mask or parameter.
        what: String,
        /// The value as written.
        value: String,
        /// The width available.
        width: u32,
    },
    /// An action the table does not list.
    #[error("action '{action}' is not an action of table '{table}'")]
    UnknownAction {
        /// The table.
        table: String,
        /// The action named.
        action: String,
    },
    /// A directionless parameter without a value.
    #[error("action '{action}' needs argument '{param}'")]
    MissingArgument {
        /// The action.
        action: String,
        /// The parameter.
        param: String,
    },
    /// An argument the action has no directionless parameter for.
    #[error("action '{action}' has no parameter '{param}' set by the control plane")]
    UnknownArgument {
        /// The action.
        action: String,
        /// The name given.
        param: String,
    },
    /// Entries for a table whose entries are `const` in the program.
    #[error("table '{0}' has const entries; the control plane cannot add any")]
    ConstEntries(String),
    /// A default action for a table whose default is `const` in the program.
    #[error("table '{0}' has a const default_action")]
    ConstDefault(String),
    /// An entry with the same key as an earlier one in a table without ternary keys, where a
    /// BPF hash map or LPM trie could hold only one of them.
    #[error("same key as entry {earlier} of table '{table}'")]
    DuplicateEntry {
        /// The table.
        table: String,
        /// Index of the earlier entry in the file.
        earlier: usize,
    },
    /// More entries than the table's `size`.
    #[error("table '{table}' holds at most {size} entries, the file gives {count}")]
    TooManyEntries {
        /// The table.
        table: String,
        /// Its declared size.
        size: u64,
        /// Entries given.
        count: usize,
    },
}

/// Where errors in a file are reported: the file name and the entry being read.
struct Reporter<'a> {
    file: &'a str,
    location: String,
}

impl Reporter<'_> {
    fn error(&self, kind: EntriesErrorKind) -> EntriesError {
        EntriesError {
            file: self.file.to_string(),
            location: self.location.clone(),
            kind: Box::new(kind),
        }
    }
}

/// A table as the checker sees it: its control, declaration and keys' names, kinds and types.
struct TableInfo<'a> {
    qualified: String,
    control: &'a ControlDecl,
    decl: &'a TableDecl,
    keys: Vec<KeyInfo>,
}

struct KeyInfo {
    text: String,
    kind: String,
    ty: Type,
}

impl Entries {
    /// The program's own table contents: const entries and default actions.
    pub fn from_program(checked: &Checked) -> Result<Entries, EntriesError> {
        let mut tables = BTreeMap::new();
        for info in table_infos(checked) {
            let report = Reporter {
                file: "program",
                location: format!("table '{}'", info.qualified),
            };
            let mut contents = TableContents {
                entries: Vec::new(),
                default_action: match &info.decl.default_action {
                    Some(d) => Some(program_action(checked, &info, &d.call, &report)?),
                    None => None,
                },
            };
            for (index, entry) in info.decl.entries.iter().enumerate() {
                let report = Reporter {
                    file: "program",
                    location: format!("table '{}' const entry {index}", info.qualified),
                };
                let matches = program_matches(checked, &info, &entry.keysets, &report)?;
                let action = program_action(checked, &info, &entry.action, &report)?;
                contents.entries.push(TableEntry {
                    matches,
                    priority: 0,
                    action,
                });
            }
            tables.insert(info.qualified.clone(), contents);
        }
        Ok(Entries { tables })
    }

    /// Reads an entries file and merges it into the program's own contents.
    pub fn load(checked: &Checked, path: &Path) -> Result<Entries, EntriesError> {
        let file = path.display().to_string();
        let text = std::fs::read_to_string(path).map_err(|e| EntriesError {
            file: file.clone(),
            location: String::from("top level"),
            kind: Box::new(EntriesErrorKind::Io(e.to_string())),
        })?;
        Entries::from_json_str(checked, &file, &text)
    }

    /// Parses entries-file text (named `file` in errors) and merges it into the program's own
    /// contents.
    pub fn from_json_str(
        checked: &Checked,
        file: &str,
        text: &str,
    ) -> Result<Entries, EntriesError> {
        let mut entries = Entries::from_program(checked)?;
        let top = Reporter {
            file,
            location: String::from("top level"),
        };
        let json: Json = serde_json::from_str(text)
            .map_err(|e| top.error(EntriesErrorKind::Json(e.to_string())))?;
        let Json::Object(fields) = &json else {
            return Err(top.error(shape("the file must hold a JSON object")));
        };
        for key in fields.keys() {
            if key != "tables" && key != "default_actions" {
                return Err(top.error(shape(&format!(
                    "unknown field '{key}' (expected \"tables\" and \"default_actions\")"
                ))));
            }
        }
        let infos = table_infos(checked);
        if let Some(tables) = fields.get("tables") {
            let Json::Object(tables) = tables else {
                return Err(top.error(shape("\"tables\" must be an object")));
            };
            for (name, list) in tables {
                let report = Reporter {
                    file,
                    location: format!("tables[{name:?}]"),
                };
                let info = find_table(&infos, name, &report)?;
                let Json::Array(list) = list else {
                    return Err(report.error(shape("a table's entries must be an array")));
                };
                if !info.decl.entries.is_empty() && !list.is_empty() {
                    return Err(
                        report.error(EntriesErrorKind::ConstEntries(info.qualified.clone()))
                    );
                }
                if let Some(size) = table_size(checked, info) {
                    if list.len() as u64 > size {
                        return Err(report.error(EntriesErrorKind::TooManyEntries {
                            table: info.qualified.clone(),
                            size,
                            count: list.len(),
                        }));
                    }
                }
                for (index, item) in list.iter().enumerate() {
                    let report = Reporter {
                        file,
                        location: format!("tables[{name:?}][{index}]"),
                    };
                    let entry = file_entry(checked, info, item, &report)?;
                    let Some(contents) = entries.tables.get_mut(&info.qualified) else {
                        continue;
                    };
                    let ternary = info.keys.iter().any(|k| k.kind == "ternary");
                    let earlier = contents
                        .entries
                        .iter()
                        .position(|e| e.matches == entry.matches);
                    if let (false, Some(earlier)) = (ternary, earlier) {
                        return Err(report.error(EntriesErrorKind::DuplicateEntry {
                            table: info.qualified.clone(),
                            earlier,
                        }));
                    }
                    contents.entries.push(entry);
                }
            }
        }
        if let Some(defaults) = fields.get("default_actions") {
            let Json::Object(defaults) = defaults else {
                return Err(top.error(shape("\"default_actions\" must be an object")));
            };
            for (name, item) in defaults {
                let report = Reporter {
                    file,
                    location: format!("default_actions[{name:?}]"),
                };
                let info = find_table(&infos, name, &report)?;
                if info
                    .decl
                    .default_action
                    .as_ref()
                    .is_some_and(|d| d.is_const)
                {
                    return Err(
                        report.error(EntriesErrorKind::ConstDefault(info.qualified.clone()))
                    );
                }
                let Json::Object(object) = item else {
                    return Err(report.error(shape("a default action must be an object")));
                };
                for key in object.keys() {
                    if key != "action" && key != "args" {
                        return Err(report.error(shape(&format!(
                            "unknown field '{key}' (expected \"action\" and \"args\")"
                        ))));
                    }
                }
                let action = file_action(checked, info, object, &report)?;
                if let Some(contents) = entries.tables.get_mut(&info.qualified) {
                    contents.default_action = Some(action);
                }
            }
        }
        Ok(entries)
    }

    /// The contents of table `table` of control `control`.
    pub fn table(&self, control: &str, table: &str) -> Option<&TableContents> {
        self.tables.get(&format!("{control}.{table}"))
    }

    /// Every table's contents, by `"<control>.<table>"`.
    pub fn tables(&self) -> &BTreeMap<String, TableContents> {
        &self.tables
    }
}

fn shape(message: &str) -> EntriesErrorKind {
    EntriesErrorKind::Shape(message.to_string())
}

fn table_infos(checked: &Checked) -> Vec<TableInfo<'_>> {
    let mut infos = Vec::new();
    for control in checked.program.controls() {
        for decl in control.tables() {
            let keys = decl
                .keys
                .iter()
                .map(|k| KeyInfo {
                    text: source_text(checked, k.expr.span),
                    kind: k.match_kind.name.clone(),
                    ty: key_type(checked, checked.type_of(&k.expr)),
                })
                .collect();
            infos.push(TableInfo {
                qualified: format!("{}.{}", control.name.name, decl.name.name),
                control,
                decl,
                keys,
            });
        }
    }
    infos
}

/// A key's type with serializable enums replaced by their underlying integer type.
fn key_type(checked: &Checked, ty: Option<&Type>) -> Type {
    match ty {
        Some(Type::Enum(name)) => checked
            .types
            .enums
            .get(name)
            .and_then(|i| i.underlying.clone())
            .unwrap_or(Type::Bit(32)),
        Some(other) => other.clone(),
        None => Type::Bit(1),
    }
}

fn source_text(checked: &Checked, span: crate::Span) -> String {
    checked
        .sources
        .file(span.file)
        .and_then(|f| f.text.get(span.start as usize..span.end as usize))
        .unwrap_or("")
        .chars()
        .filter(|c| !c.is_whitespace())
        .collect()
}

fn find_table<'i, 'a>(
    infos: &'i [TableInfo<'a>],
    name: &str,
    report: &Reporter,
) -> Result<&'i TableInfo<'a>, EntriesError> {
    if let Some(info) = infos.iter().find(|i| i.qualified == name) {
        return Ok(info);
    }
    let mut bare = infos.iter().filter(|i| i.decl.name.name == name);
    match (bare.next(), bare.next()) {
        (Some(info), None) => Ok(info),
        _ => Err(report.error(EntriesErrorKind::UnknownTable(name.to_string()))),
    }
}

fn table_size(checked: &Checked, info: &TableInfo) -> Option<u64> {
    let size = info.decl.size.as_ref()?;
    checked.constant(size).and_then(|s| u64::try_from(s).ok())
}

/// The width of an integer-like type (`bool` as 1) and whether it is signed.
fn scalar(ty: &Type) -> (u32, bool) {
    match ty {
        Type::Bit(w) => (*w, false),
        Type::Int(w) => (*w, true),
        _ => (1, false),
    }
}

/// A const entry's keysets as matches, for the table's key kinds.
fn program_matches(
    checked: &Checked,
    info: &TableInfo,
    keysets: &[Keyset],
    report: &Reporter,
) -> Result<Vec<KeyMatch>, EntriesError> {
    let constant = |e: &crate::ast::Expr, width: u32| {
        checked
            .constant(e)
            .map(|v| v as u128 & mask(width))
            .ok_or_else(|| {
                report.error(EntriesErrorKind::BadValue {
                    what: String::from("const entry"),
                    value: source_text(checked, e.span),
                    reason: String::from("not a constant"),
                })
            })
    };
    let mut matches = Vec::new();
    for (index, key) in info.keys.iter().enumerate() {
        let (width, _) = scalar(&key.ty);
        let keyset = match keysets {
            [Keyset::Default(_)] => None,
            _ => keysets.get(index),
        };
        let matched = match keyset {
            None | Some(Keyset::Default(_)) => KeyMatch::Masked { value: 0, mask: 0 },
            Some(Keyset::Value(v)) => KeyMatch::Masked {
                value: constant(v, width)?,
                mask: mask(width),
            },
            Some(Keyset::Mask(v, m)) => {
                let m = constant(m, width)?;
                KeyMatch::Masked {
                    value: constant(v, width)? & m,
                    mask: m,
                }
            }
            Some(Keyset::Range(lo, hi)) => KeyMatch::Range {
                lo: constant(lo, width)?,
                hi: constant(hi, width)?,
            },
        };
        matches.push(matched);
    }
    Ok(matches)
}

/// An action named in the program (default action or const entry) with its constant arguments.
fn program_action(
    checked: &Checked,
    info: &TableInfo,
    call: &ActionCall,
    report: &Reporter,
) -> Result<ActionBinding, EntriesError> {
    let unknown = || {
        report.error(EntriesErrorKind::UnknownAction {
            table: info.qualified.clone(),
            action: call.name.name.clone(),
        })
    };
    let action = find_action(checked, info.control, &call.name.name).ok_or_else(unknown)?;
    let mut args = Vec::new();
    for (param, arg) in action.params.iter().zip(&call.args) {
        if param.direction.is_some() {
            continue;
        }
        let ty = resolve_type(&checked.types, &param.ty).unwrap_or(Type::Bit(32));
        let value = checked.constant(arg).ok_or_else(|| {
            report.error(EntriesErrorKind::BadValue {
                what: param.name.name.clone(),
                value: source_text(checked, arg.span),
                reason: String::from("not a constant"),
            })
        })?;
        args.push((
            param.name.name.clone(),
            Value::constant(&checked.types, &ty, value),
        ));
    }
    Ok(ActionBinding {
        name: call.name.name.clone(),
        args,
    })
}

fn file_entry(
    checked: &Checked,
    info: &TableInfo,
    item: &Json,
    report: &Reporter,
) -> Result<TableEntry, EntriesError> {
    let Json::Object(object) = item else {
        return Err(report.error(shape("an entry must be an object")));
    };
    for key in object.keys() {
        if !matches!(key.as_str(), "match" | "priority" | "action" | "args") {
            return Err(report.error(shape(&format!(
                "unknown field '{key}' (expected \"match\", \"priority\", \"action\", \"args\")"
            ))));
        }
    }
    let empty = serde_json::Map::new();
    let given = match object.get("match") {
        None => &empty,
        Some(Json::Object(m)) => m,
        Some(_) => return Err(report.error(shape("\"match\" must be an object"))),
    };
    let mut by_key: Vec<Option<&Json>> = vec![None; info.keys.len()];
    for (name, value) in given {
        let index = key_index(info, name).ok_or_else(|| {
            report.error(EntriesErrorKind::UnknownKey {
                table: info.qualified.clone(),
                key: name.clone(),
                known: info
                    .keys
                    .iter()
                    .map(|k| k.text.as_str())
                    .collect::<Vec<_>>()
                    .join(", "),
            })
        })?;
        if let Some(slot) = by_key.get_mut(index) {
            *slot = Some(value);
        }
    }
    let mut matches = Vec::new();
    for (key, value) in info.keys.iter().zip(by_key) {
        matches.push(key_match(key, value, report)?);
    }
    let priority = match object.get("priority") {
        None => 0,
        Some(p) => p
            .as_i64()
            .ok_or_else(|| report.error(shape("\"priority\" must be an integer")))?,
    };
    let action = file_action(checked, info, object, report)?;
    Ok(TableEntry {
        matches,
        priority,
        action,
    })
}

/// The key an entries-file name refers to: its full text, or a unique last component.
fn key_index(info: &TableInfo, name: &str) -> Option<usize> {
    let name: String = name.chars().filter(|c| !c.is_whitespace()).collect();
    if let Some(i) = info.keys.iter().position(|k| k.text == name) {
        return Some(i);
    }
    let last = |text: &str| text.rsplit('.').next().unwrap_or("").to_string();
    let mut found = info
        .keys
        .iter()
        .enumerate()
        .filter(|(_, k)| last(&k.text) == name);
    match (found.next(), found.next()) {
        (Some((i, _)), None) => Some(i),
        _ => None,
    }
}

fn key_match(
    key: &KeyInfo,
    value: Option<&Json>,
    report: &Reporter,
) -> Result<KeyMatch, EntriesError> {
    let (width, signed) = scalar(&key.ty);
    let full = mask(width);
    let kind_error = |reason: &str| {
        report.error(EntriesErrorKind::MatchKind {
            key: key.text.clone(),
            kind: key.kind.clone(),
            reason: reason.to_string(),
        })
    };
    let number = |v: &Json, what: &str| {
        parse_value(
            v,
            width,
            signed,
            &format!("key '{}' {what}", key.text),
            report,
        )
    };
    let object = match value {
        Some(Json::Object(o)) => Some(o),
        _ => None,
    };
    let only = |allowed: &[&str], o: &serde_json::Map<String, Json>| match o
        .keys()
        .find(|k| !allowed.contains(&k.as_str()))
    {
        Some(k) => Err(kind_error(&format!(
            "unexpected field '{k}' (it takes {})",
            allowed.join(" and ")
        ))),
        None => Ok(()),
    };
    match key.kind.as_str() {
        "exact" => {
            let v = match (value, object) {
                (None, _) => {
                    return Err(report.error(EntriesErrorKind::MissingKey(key.text.clone())))
                }
                (_, Some(o)) => {
                    only(&["value"], o)?;
                    o.get("value").ok_or_else(|| kind_error("needs a value"))?
                }
                (Some(v), None) => v,
            };
            Ok(KeyMatch::Masked {
                value: number(v, "value")?,
                mask: full,
            })
        }
        "lpm" => match (value, object) {
            (None, _) => Ok(KeyMatch::Masked { value: 0, mask: 0 }),
            (_, Some(o)) => {
                only(&["prefix", "len"], o)?;
                let (Some(prefix), Some(len)) = (o.get("prefix"), o.get("len")) else {
                    return Err(kind_error("needs {\"prefix\": p, \"len\": n}"));
                };
                let prefix = number(prefix, "prefix")?;
                let len = parse_value(len, 32, false, &format!("key '{}' len", key.text), report)?;
                let len = u32::try_from(len)
                    .ok()
                    .filter(|l| *l <= width)
                    .ok_or_else(|| {
                        report.error(EntriesErrorKind::Width {
                            what: format!("key '{}' len", key.text),
                            value: len.to_string(),
                            width,
                        })
                    })?;
                let prefix_mask = full & !mask(width - len.min(width));
                let prefix_mask = if len == 0 { 0 } else { prefix_mask };
                Ok(KeyMatch::Masked {
                    value: prefix & prefix_mask,
                    mask: prefix_mask,
                })
            }
            (Some(v), None) => Ok(KeyMatch::Masked {
                value: number(v, "value")?,
                mask: full,
            }),
        },
        _ => match (value, object) {
            (None, _) => Ok(KeyMatch::Masked { value: 0, mask: 0 }),
            (_, Some(o)) => {
                only(&["value", "mask"], o)?;
                let (Some(v), Some(m)) = (o.get("value"), o.get("mask")) else {
                    return Err(kind_error("needs {\"value\": v, \"mask\": m}"));
                };
                let m = number(m, "mask")?;
                Ok(KeyMatch::Masked {
                    value: number(v, "value")? & m,
                    mask: m,
                })
            }
            (Some(v), None) => Ok(KeyMatch::Masked {
                value: number(v, "value")?,
                mask: full,
            }),
        },
    }
}

/// `"action"` and `"args"` of an entry or default action, checked against the table.
fn file_action(
    checked: &Checked,
    info: &TableInfo,
    object: &serde_json::Map<String, Json>,
    report: &Reporter,
) -> Result<ActionBinding, EntriesError> {
    let Some(Json::String(name)) = object.get("action") else {
        return Err(report.error(shape("\"action\" must be an action name")));
    };
    let unknown = || {
        report.error(EntriesErrorKind::UnknownAction {
            table: info.qualified.clone(),
            action: name.clone(),
        })
    };
    if !info.decl.actions.iter().any(|a| a.name.name == *name) {
        return Err(unknown());
    }
    let action = find_action(checked, info.control, name).ok_or_else(unknown)?;
    let empty = serde_json::Map::new();
    let given = match object.get("args") {
        None => &empty,
        Some(Json::Object(a)) => a,
        Some(_) => return Err(report.error(shape("\"args\" must be an object"))),
    };
    let settable: Vec<_> = action
        .params
        .iter()
        .filter(|p| p.direction.is_none())
        .collect();
    if let Some(extra) = given
        .keys()
        .find(|k| !settable.iter().any(|p| p.name.name == **k))
    {
        return Err(report.error(EntriesErrorKind::UnknownArgument {
            action: name.clone(),
            param: extra.clone(),
        }));
    }
    let mut args = Vec::new();
    for param in settable {
        let value = given.get(&param.name.name).ok_or_else(|| {
            report.error(EntriesErrorKind::MissingArgument {
                action: name.clone(),
                param: param.name.name.clone(),
            })
        })?;
        let ty = resolve_type(&checked.types, &param.ty).unwrap_or(Type::Bit(32));
        let ty = key_type(checked, Some(&ty));
        let (width, signed) = scalar(&ty);
        let bits = parse_value(
            value,
            width,
            signed,
            &format!("argument '{}'", param.name.name),
            report,
        )?;
        let value = if ty == Type::Bool {
            Value::Bool(bits != 0)
        } else {
            Value::Bits(Bits::new(width, signed, bits))
        };
        args.push((param.name.name.clone(), value));
    }
    Ok(ActionBinding {
        name: name.clone(),
        args,
    })
}

/// Reads a JSON value as the bits of a `width`-bit integer, refusing values that do not fit.
fn parse_value(
    value: &Json,
    width: u32,
    signed: bool,
    what: &str,
    report: &Reporter,
) -> Result<u128, EntriesError> {
    let written = value.to_string();
    let bad = |reason: &str| {
        report.error(EntriesErrorKind::BadValue {
            what: what.to_string(),
            value: written.clone(),
            reason: reason.to_string(),
        })
    };
    let too_wide = || {
        report.error(EntriesErrorKind::Width {
            what: what.to_string(),
            value: written.clone(),
            width,
        })
    };
    let magnitude: i128 = match value {
        Json::Bool(b) => i128::from(*b),
        Json::Number(n) => match (n.as_u64(), n.as_i64()) {
            (Some(u), _) => i128::from(u),
            (None, Some(i)) => i128::from(i),
            _ => return Err(bad("not an integer")),
        },
        Json::String(s) => parse_text(s.trim()).map_err(|reason| bad(&reason))?,
        _ => return Err(bad("expected a number or a string")),
    };
    let fits = if magnitude < 0 {
        signed && width < 128 && magnitude >= -(1i128 << width.saturating_sub(1))
    } else {
        width >= 127 || magnitude <= mask(width) as i128
    };
    if !fits {
        return Err(too_wide());
    }
    Ok(magnitude as u128 & mask(width))
}

/// A string value: decimal, `0x` hex, `0b` binary, dotted IPv4, a MAC address, `true`/`false`.
fn parse_text(text: &str) -> Result<i128, String> {
    let radix = |digits: &str, radix: u32| {
        let digits: String = digits.chars().filter(|c| *c != '_').collect();
        u128::from_str_radix(&digits, radix)
            .ok()
            .and_then(|v| i128::try_from(v).ok())
            .ok_or_else(|| format!("not a base-{radix} number"))
    };
    let parts = |separator: char, count: usize, radix: u32, part_bits: u32| {
        let pieces: Vec<&str> = text.split(separator).collect();
        if pieces.len() != count {
            return Err(format!("expected {count} parts separated by '{separator}'"));
        }
        let mut value: i128 = 0;
        for piece in pieces {
            let part =
                u8::from_str_radix(piece, radix).map_err(|_| format!("'{piece}' is not a byte"))?;
            value = (value << part_bits) | i128::from(part);
        }
        Ok(value)
    };
    match text {
        "true" => return Ok(1),
        "false" => return Ok(0),
        _ => {}
    }
    if let Some(hex) = text.strip_prefix("0x").or_else(|| text.strip_prefix("0X")) {
        radix(hex, 16)
    } else if let Some(binary) = text.strip_prefix("0b").or_else(|| text.strip_prefix("0B")) {
        radix(binary, 2)
    } else if text.contains(':') {
        parts(':', 6, 16, 8)
    } else if text.contains('.') {
        parts('.', 4, 10, 8)
    } else if let Some(negative) = text.strip_prefix('-') {
        radix(negative, 10).map(|v| -v)
    } else {
        radix(text, 10)
    }
}
