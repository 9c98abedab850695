//! Resolved types and the layouts of headers and structs, as the checker hands them to later
//! stages: typedefs are gone (`mac_addr_t` is `bit<48>`), every field has a bit offset.

use std::collections::BTreeMap;
use std::fmt;

/// A resolved type.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Type {
    /// `bit<N>`.
    Bit(u32),
    /// `int<N>`.
    Int(u32),
    /// `bool`.
    Bool,
    /// An unsized integer constant; adapts to the sized type it meets.
    InfInt,
    /// `error`.
    Error,
    /// A header type, by name.
    Header(String),
    /// A struct type, by name.
    Struct(String),
    /// A header stack: element type and size.
    Stack(Box<Type>, u32),
    /// An enum type, by name.
    Enum(String),
    /// An extern object (`packet_in`, `counter`, `register<bit<32>>`), with type arguments.
    Extern(String, Vec<Type>),
    /// A parser, control or package type named with arguments (architecture signatures).
    Block(String, Vec<Type>),
    /// A type parameter of an architecture declaration.
    Var(String),
    /// A table (the name used as a value, e.g. the `t` of `t.apply()`).
    Table(String),
    /// The result of `t.apply()`: has `.hit`, `.miss` and `.action_run`.
    ApplyResult(String),
    /// `t.apply().action_run`: switched on by action names of table `t`.
    ActionRun(String),
    /// A parser instance `P()` (package arguments only).
    Parser(String),
    /// A control instance `C()` (package arguments only).
    Control(String),
    /// The result of a call that returns nothing.
    Void,
    /// A list expression `{a, b, ...}`: its elements' types, in order (an extern argument of
    /// generic type only; its bits are the elements' bits concatenated).
    List(Vec<Type>),
}

impl Type {
    /// The width in bits of a fixed-width scalar (`bit`, `int`, `bool` as 1).
    pub fn scalar_width(&self) -> Option<u32> {
        match self {
            Type::Bit(w) | Type::Int(w) => Some(*w),
            Type::Bool => Some(1),
            _ => None,
        }
    }

    /// Whether values of this type are integers (sized or not).
    pub fn is_integer(&self) -> bool {
        matches!(self, Type::Bit(_) | Type::Int(_) | Type::InfInt)
    }
}

impl fmt::Display for Type {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Type::Bit(w) => write!(f, "bit<{w}>"),
            Type::Int(w) => write!(f, "int<{w}>"),
            Type::Bool => write!(f, "bool"),
            Type::InfInt => write!(f, "int"),
            Type::Error => write!(f, "error"),
            Type::Header(n) | Type::Struct(n) | Type::Enum(n) | Type::Var(n) => write!(f, "{n}"),
            Type::Stack(t, n) => write!(f, "{t}[{n}]"),
            Type::Extern(n, args) | Type::Block(n, args) => {
                write!(f, "{n}")?;
                if !args.is_empty() {
                    let args: Vec<String> = args.iter().map(Type::to_string).collect();
                    write!(f, "<{}>", args.join(", "))?;
                }
                Ok(())
            }
            Type::Table(n) => write!(f, "table {n}"),
            Type::ApplyResult(n) => write!(f, "{n}.apply() result"),
            Type::ActionRun(n) => write!(f, "{n}.apply().action_run"),
            Type::Parser(n) => write!(f, "parser {n}"),
            Type::Control(n) => write!(f, "control {n}"),
            Type::Void => write!(f, "void"),
            Type::List(elements) => {
                let elements: Vec<String> = elements.iter().map(Type::to_string).collect();
                write!(f, "{{{}}}", elements.join(", "))
            }
        }
    }
}

/// One field of a header or struct.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FieldLayout {
    /// Field name.
    pub name: String,
    /// Resolved type.
    pub ty: Type,
    /// Offset from the start of the header in bits (headers only; 0 in structs).
    pub offset_bits: u32,
}

/// A header or struct with resolved fields.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Layout {
    /// Type name.
    pub name: String,
    /// Fields in order.
    pub fields: Vec<FieldLayout>,
    /// Total width in bits (headers: a multiple of 8; structs: 0).
    pub width_bits: u32,
}

impl Layout {
    /// The field with this name.
    pub fn field(&self, name: &str) -> Option<&FieldLayout> {
        self.fields.iter().find(|f| f.name == name)
    }
}

/// An enum's members and, for a serializable enum, its underlying type and member values.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EnumInfo {
    /// Underlying `bit<N>`/`int<N>`, if serializable.
    pub underlying: Option<Type>,
    /// Members and their values (serializable enums only).
    pub members: Vec<(String, Option<i128>)>,
}

/// Every named type of a checked program.
#[derive(Debug, Clone, Default)]
pub struct TypeTable {
    /// Headers by name.
    pub headers: BTreeMap<String, Layout>,
    /// Structs by name.
    pub structs: BTreeMap<String, Layout>,
    /// Enums by name.
    pub enums: BTreeMap<String, EnumInfo>,
    /// Typedefs, resolved.
    pub typedefs: BTreeMap<String, Type>,
    /// Members of `error`.
    pub errors: Vec<String>,
    /// Declared match kinds.
    pub match_kinds: Vec<String>,
}
