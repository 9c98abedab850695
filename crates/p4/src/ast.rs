//! The P4-16 abstract syntax tree, as written by the user (names unresolved, types as spelled).
//!
//! Later stages (analysis of α/β/γ, the reference interpreter, the BPF compiler) walk these types
//! together with the type checker's results: every [`Expr`] carries an [`ExprId`] under which
//! [`crate::Checked::type_of`] gives its resolved type. Declarations keep source order, includes
//! spliced in where the `#include` stood, so the architecture's declarations come first.

use crate::error::Span;

/// A name as written, with where it was written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Ident {
    /// The name.
    pub name: String,
    /// Where.
    pub span: Span,
}

/// A whole program: every declaration of every included file, in order.
#[derive(Debug, Clone, Default)]
pub struct Program {
    /// Top-level declarations.
    pub decls: Vec<Decl>,
    /// Number of expressions; every [`ExprId`] is below it.
    pub expr_count: u32,
}

/// A top-level declaration.
#[derive(Debug, Clone)]
pub enum Decl {
    /// `const T name = value;`
    Const(ConstDecl),
    /// `typedef T name;` (also `type T name;` is not supported).
    Typedef(TypedefDecl),
    /// `header name { fields }`
    Header(Aggregate),
    /// `struct name { fields }`
    Struct(Aggregate),
    /// `enum name { A, B }` or `enum bit<N> name { A = 1, ... }`
    Enum(EnumDecl),
    /// `error { A, B }`: adds members to the one `error` type.
    Error(MemberList),
    /// `match_kind { exact, lpm }`: adds match kinds.
    MatchKind(MemberList),
    /// `extern name<T> { methods }`: an extern object type.
    Extern(ExternDecl),
    /// `extern R name<T>(params);`: an extern function.
    ExternFunction(MethodDecl),
    /// `parser Name<T>(params);`: a parser type (architecture).
    ParserType(BlockType),
    /// `control Name<T>(params);`: a control type (architecture).
    ControlType(BlockType),
    /// `package Name<T>(params);`: a package type (architecture).
    Package(BlockType),
    /// A parser implementation.
    Parser(ParserDecl),
    /// A control implementation (ingress or deparser).
    Control(ControlDecl),
    /// A top-level action.
    Action(ActionDecl),
    /// `Type(args) name;`: an instance of an extern or of the package (`main`).
    Instance(Instance),
}

/// A type as spelled in the source.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TypeRef {
    /// `bit<N>`; `bit` alone is `bit<1>`.
    Bit(u32),
    /// `int<N>`.
    Int(u32),
    /// `bool`.
    Bool,
    /// `error`.
    Error,
    /// `void` (extern method results only).
    Void,
    /// `int` without width: the arbitrary-precision integer of constants.
    InfInt,
    /// A declared name (header, struct, enum, typedef, extern, type parameter).
    Named(Ident),
    /// `Name<T, ...>`: a generic extern, parser or control type with arguments.
    Specialized(Ident, Vec<TypeRef>),
    /// `T[N]`: a header stack of `N` elements.
    Stack(Box<TypeRef>, u32),
}

/// `const T name = value;`
#[derive(Debug, Clone)]
pub struct ConstDecl {
    /// Declared type.
    pub ty: TypeRef,
    /// Name.
    pub name: Ident,
    /// Value (a compile-time constant expression).
    pub value: Expr,
}

/// `typedef T name;`
#[derive(Debug, Clone)]
pub struct TypedefDecl {
    /// The aliased type.
    pub ty: TypeRef,
    /// The new name.
    pub name: Ident,
}

/// A header or struct type.
#[derive(Debug, Clone)]
pub struct Aggregate {
    /// Type name.
    pub name: Ident,
    /// Fields in declaration (and, for headers, wire) order.
    pub fields: Vec<Field>,
}

/// One field of a header or struct.
#[derive(Debug, Clone)]
pub struct Field {
    /// Field type.
    pub ty: TypeRef,
    /// Field name.
    pub name: Ident,
}

/// `enum [bit<N>] name { members }`
#[derive(Debug, Clone)]
pub struct EnumDecl {
    /// Underlying type of a serializable enum (`enum bit<8> E`), `None` for a plain enum.
    pub underlying: Option<TypeRef>,
    /// Type name.
    pub name: Ident,
    /// Members, with their values for a serializable enum.
    pub members: Vec<(Ident, Option<Expr>)>,
}

/// The member names of an `error { }` or `match_kind { }` declaration.
#[derive(Debug, Clone)]
pub struct MemberList {
    /// The names.
    pub members: Vec<Ident>,
}

/// `extern name<T> { methods }`
#[derive(Debug, Clone)]
pub struct ExternDecl {
    /// Type name.
    pub name: Ident,
    /// Type parameters (`register<T>`).
    pub type_params: Vec<Ident>,
    /// Constructors (methods named like the extern) and methods.
    pub methods: Vec<MethodDecl>,
}

/// A method, constructor or extern function signature.
#[derive(Debug, Clone)]
pub struct MethodDecl {
    /// Result type; `None` for a constructor.
    pub result: Option<TypeRef>,
    /// Name.
    pub name: Ident,
    /// Type parameters (`extract<T>`).
    pub type_params: Vec<Ident>,
    /// Parameters.
    pub params: Vec<Param>,
}

/// A parser, control or package type declaration: name, type parameters, parameters.
#[derive(Debug, Clone)]
pub struct BlockType {
    /// Type name.
    pub name: Ident,
    /// Type parameters.
    pub type_params: Vec<Ident>,
    /// Parameters.
    pub params: Vec<Param>,
}

/// Parameter direction.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Direction {
    /// `in`: read only.
    In,
    /// `out`: written, initially undefined.
    Out,
    /// `inout`: read and written.
    InOut,
}

/// One parameter.
#[derive(Debug, Clone)]
pub struct Param {
    /// Direction; `None` for directionless (action data from the control plane, constructor
    /// arguments).
    pub direction: Option<Direction>,
    /// Type.
    pub ty: TypeRef,
    /// Name.
    pub name: Ident,
}

/// A parser implementation.
#[derive(Debug, Clone)]
pub struct ParserDecl {
    /// Name.
    pub name: Ident,
    /// Parameters (the packet, the headers out, metadata).
    pub params: Vec<Param>,
    /// Local variables, constants and instances, before the states.
    pub locals: Vec<Local>,
    /// States in source order; `start` must be among them.
    pub states: Vec<ParserState>,
}

/// One parser state.
#[derive(Debug, Clone)]
pub struct ParserState {
    /// State name.
    pub name: Ident,
    /// Statements (extracts, assignments, declarations) before the transition.
    pub body: Vec<Stmt>,
    /// Where to go next.
    pub transition: Transition,
}

/// A parser state's transition.
#[derive(Debug, Clone)]
pub enum Transition {
    /// `transition name;` (`accept`, `reject` or a state).
    Direct(Ident),
    /// `transition select(exprs) { cases }`.
    Select {
        /// The selector expressions.
        exprs: Vec<Expr>,
        /// Cases in order; the first match wins.
        cases: Vec<SelectCase>,
        /// Where the `select` is.
        span: Span,
    },
}

/// `keysets: next;` in a select (or `keysets: action(args);` in table entries, see [`Entry`]).
#[derive(Debug, Clone)]
pub struct SelectCase {
    /// One keyset per selector; a lone `default`/`_` matches any tuple.
    pub keysets: Vec<Keyset>,
    /// Next state.
    pub next: Ident,
    /// Where the case is.
    pub span: Span,
}

/// One element of a keyset.
#[derive(Debug, Clone)]
pub enum Keyset {
    /// Matches this value.
    Value(Expr),
    /// `value &&& mask`: matches where the masked bits agree.
    Mask(Expr, Expr),
    /// `lo .. hi`: matches an inclusive range.
    Range(Expr, Expr),
    /// `default` or `_`: matches anything.
    Default(Span),
}

/// A control implementation.
#[derive(Debug, Clone)]
pub struct ControlDecl {
    /// Name.
    pub name: Ident,
    /// Parameters.
    pub params: Vec<Param>,
    /// Actions, tables, instances, variables and constants, in order.
    pub locals: Vec<Local>,
    /// The `apply { }` body.
    pub apply: Block,
}

/// A declaration local to a parser or control.
#[derive(Debug, Clone)]
pub enum Local {
    /// An action.
    Action(ActionDecl),
    /// A table.
    Table(TableDecl),
    /// An extern instance (`counter(1024) c;`).
    Instance(Instance),
    /// A variable.
    Var(VarDecl),
    /// A constant.
    Const(ConstDecl),
}

/// `action name(params) { body }`
#[derive(Debug, Clone)]
pub struct ActionDecl {
    /// Name.
    pub name: Ident,
    /// Parameters: directional ones bound at the call, directionless ones by the table entry.
    pub params: Vec<Param>,
    /// Body.
    pub body: Block,
}

/// `table name { properties }`
#[derive(Debug, Clone)]
pub struct TableDecl {
    /// Name.
    pub name: Ident,
    /// `key = { expr: match_kind; }`.
    pub keys: Vec<TableKey>,
    /// `actions = { a; b; }`.
    pub actions: Vec<ActionCall>,
    /// `default_action = a(args);`; `None` means NoAction (do nothing).
    pub default_action: Option<DefaultAction>,
    /// `const entries = { ... }`.
    pub entries: Vec<Entry>,
    /// `size = N;`.
    pub size: Option<Expr>,
    /// Where the table is declared.
    pub span: Span,
}

/// One key of a table.
#[derive(Debug, Clone)]
pub struct TableKey {
    /// The field or expression matched.
    pub expr: Expr,
    /// `exact`, `lpm` or `ternary`.
    pub match_kind: Ident,
}

/// An action named with arguments (`fwd(1)`, or `drop` with none).
#[derive(Debug, Clone)]
pub struct ActionCall {
    /// Action name.
    pub name: Ident,
    /// Arguments.
    pub args: Vec<Expr>,
}

/// A table's default action.
#[derive(Debug, Clone)]
pub struct DefaultAction {
    /// The action and all its arguments.
    pub call: ActionCall,
    /// `const default_action`: the control plane may not change it.
    pub is_const: bool,
}

/// One constant entry: keysets and the action it runs.
#[derive(Debug, Clone)]
pub struct Entry {
    /// One keyset per table key.
    pub keysets: Vec<Keyset>,
    /// The action with all its arguments.
    pub action: ActionCall,
    /// Where the entry is.
    pub span: Span,
}

/// `Type(args) name;`
#[derive(Debug, Clone)]
pub struct Instance {
    /// The instantiated type (`counter`, `register<bit<32>>`, `XdpPipeline`).
    pub ty: TypeRef,
    /// Constructor arguments (for a package, `P()` calls of parsers and controls).
    pub args: Vec<Expr>,
    /// Instance name.
    pub name: Ident,
}

/// `T name [= init];`
#[derive(Debug, Clone)]
pub struct VarDecl {
    /// Type.
    pub ty: TypeRef,
    /// Name.
    pub name: Ident,
    /// Initial value.
    pub init: Option<Expr>,
}

/// `{ statements }`
#[derive(Debug, Clone)]
pub struct Block {
    /// Statements in order.
    pub stmts: Vec<Stmt>,
    /// Where the block is.
    pub span: Span,
}

/// A statement.
#[derive(Debug, Clone)]
pub enum Stmt {
    /// `lhs = rhs;`
    Assign {
        /// The lvalue.
        lhs: Expr,
        /// The value.
        rhs: Expr,
    },
    /// A call as a statement (`pkt.extract(h)`, `h.setValid()`, `t.apply()`, `a(1)`).
    Call(Expr),
    /// `if (cond) then else other`
    If {
        /// Condition (bool).
        cond: Expr,
        /// Taken when true.
        then: Block,
        /// Taken when false (an `else if` is a block holding one `If`).
        otherwise: Option<Block>,
    },
    /// `switch (t.apply().action_run) { a: { } default: { } }`
    Switch {
        /// The `action_run` expression.
        subject: Expr,
        /// Cases in order; a case without a body falls through to the next one's.
        cases: Vec<SwitchCase>,
    },
    /// A nested block.
    Block(Block),
    /// A local variable.
    Var(VarDecl),
    /// A local constant.
    Const(ConstDecl),
    /// `return;`
    Return(Span),
    /// `exit;`
    Exit(Span),
}

/// One case of a switch on `action_run`.
#[derive(Debug, Clone)]
pub struct SwitchCase {
    /// An action name, or `None` for `default`.
    pub label: Option<Ident>,
    /// The body, or `None` to fall through to the next case.
    pub body: Option<Block>,
    /// Where the label is.
    pub span: Span,
}

/// Index of an expression, unique in one [`Program`]; keys the checker's type table.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ExprId(pub u32);

/// An expression.
#[derive(Debug, Clone)]
pub struct Expr {
    /// Its id, for [`crate::Checked::type_of`].
    pub id: ExprId,
    /// What it is.
    pub kind: ExprKind,
    /// Where it is.
    pub span: Span,
}

/// The forms of expressions.
#[derive(Debug, Clone)]
pub enum ExprKind {
    /// An integer literal; `width` is `Some((bits, signed))` for `8w5`/`8s5`.
    Int {
        /// Value as written.
        value: u128,
        /// Explicit width and signedness.
        width: Option<(u32, bool)>,
    },
    /// `true` / `false`.
    Bool(bool),
    /// A name: variable, parameter, constant, instance, table, action, enum type.
    Name(Ident),
    /// `error.Name`.
    ErrorMember(Ident),
    /// `base.member`: a field, an enum member, a method, `hit`, `action_run`, `next`, ...
    Member(Box<Expr>, Ident),
    /// `stack[index]`.
    Index(Box<Expr>, Box<Expr>),
    /// `value[hi:lo]`.
    Slice {
        /// The sliced value.
        base: Box<Expr>,
        /// Highest bit (constant).
        hi: Box<Expr>,
        /// Lowest bit (constant).
        lo: Box<Expr>,
    },
    /// `callee<type_args>(args)`.
    Call {
        /// The called function, method (`Member`) or action/parser/control name.
        callee: Box<Expr>,
        /// Explicit type arguments.
        type_args: Vec<TypeRef>,
        /// Arguments.
        args: Vec<Expr>,
    },
    /// A prefix operator.
    Unary(UnaryOp, Box<Expr>),
    /// An infix operator.
    Binary(BinaryOp, Box<Expr>, Box<Expr>),
    /// `cond ? a : b`.
    Ternary(Box<Expr>, Box<Expr>, Box<Expr>),
    /// `(T) value`.
    Cast(TypeRef, Box<Expr>),
    /// `{ e, ... }`: a list expression (the checker allows it only as an extern argument of
    /// generic type, the `data` of `update_checksum`/`verify_checksum`).
    List(Vec<Expr>),
}

/// Prefix operators.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum UnaryOp {
    /// `!` (bool).
    Not,
    /// `~` (bitwise complement).
    Complement,
    /// `-` (two's complement negation).
    Negate,
}

/// Infix operators (binding strengths in [`BinaryOp::precedence`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BinaryOp {
    /// `*`
    Mul,
    /// `/`
    Div,
    /// `%`
    Mod,
    /// `+`
    Add,
    /// `-`
    Sub,
    /// `|+|` (saturating)
    SatAdd,
    /// `|-|` (saturating)
    SatSub,
    /// `<<`
    Shl,
    /// `>>`
    Shr,
    /// `<=`
    Le,
    /// `>=`
    Ge,
    /// `<`
    Lt,
    /// `>`
    Gt,
    /// `==`
    Eq,
    /// `!=`
    Ne,
    /// `&`
    BitAnd,
    /// `^`
    BitXor,
    /// `|`
    BitOr,
    /// `++` (concatenation)
    Concat,
    /// `&&`
    And,
    /// `||`
    Or,
}

/// How an operator treats its operands, for the checker and for counting operations (paper 001
/// distinguishes arithmetic from binary, i.e. bitwise, operations).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OpClass {
    /// `* / % + - |+| |-|`.
    Arithmetic,
    /// `& | ^ << >> ++` (and unary `~`).
    Bitwise,
    /// `< <= > >= == !=`.
    Comparison,
    /// `&& ||` (and unary `!`).
    Logical,
}

impl BinaryOp {
    /// Binding strength; higher binds tighter. P4-16's order differs from C's: the bitwise
    /// operators bind tighter than the comparisons (`a & m == v` is `(a & m) == v`), and `++`
    /// sits with `+`.
    pub fn precedence(self) -> u8 {
        match self {
            BinaryOp::Or => 1,
            BinaryOp::And => 2,
            BinaryOp::Eq | BinaryOp::Ne => 3,
            BinaryOp::Le | BinaryOp::Ge | BinaryOp::Lt | BinaryOp::Gt => 4,
            BinaryOp::BitOr => 5,
            BinaryOp::BitXor => 6,
            BinaryOp::BitAnd => 7,
            BinaryOp::Shl | BinaryOp::Shr => 8,
            BinaryOp::Add
            | BinaryOp::Sub
            | BinaryOp::SatAdd
            | BinaryOp::SatSub
            | BinaryOp::Concat => 9,
            BinaryOp::Mul | BinaryOp::Div | BinaryOp::Mod => 10,
        }
    }

    /// The operator's class.
    pub fn class(self) -> OpClass {
        match self {
            BinaryOp::Mul
            | BinaryOp::Div
            | BinaryOp::Mod
            | BinaryOp::Add
            | BinaryOp::Sub
            | BinaryOp::SatAdd
            | BinaryOp::SatSub => OpClass::Arithmetic,
            BinaryOp::Shl
            | BinaryOp::Shr
            | BinaryOp::BitAnd
            | BinaryOp::BitXor
            | BinaryOp::BitOr
            | BinaryOp::Concat => OpClass::Bitwise,
            BinaryOp::Le
            | BinaryOp::Ge
            | BinaryOp::Lt
            | BinaryOp::Gt
            | BinaryOp::Eq
            | BinaryOp::Ne => OpClass::Comparison,
            BinaryOp::And | BinaryOp::Or => OpClass::Logical,
        }
    }

    /// The operator as written.
    pub fn symbol(self) -> &'static str {
        match self {
            BinaryOp::Mul => "*",
            BinaryOp::Div => "/",
            BinaryOp::Mod => "%",
            BinaryOp::Add => "+",
            BinaryOp::Sub => "-",
            BinaryOp::SatAdd => "|+|",
            BinaryOp::SatSub => "|-|",
            BinaryOp::Shl => "<<",
            BinaryOp::Shr => ">>",
            BinaryOp::Le => "<=",
            BinaryOp::Ge => ">=",
            BinaryOp::Lt => "<",
            BinaryOp::Gt => ">",
            BinaryOp::Eq => "==",
            BinaryOp::Ne => "!=",
            BinaryOp::BitAnd => "&",
            BinaryOp::BitXor => "^",
            BinaryOp::BitOr => "|",
            BinaryOp::Concat => "++",
            BinaryOp::And => "&&",
            BinaryOp::Or => "||",
        }
    }
}

impl Program {
    /// The parsers, in order.
    pub fn parsers(&self) -> impl Iterator<Item = &ParserDecl> {
        self.decls.iter().filter_map(|d| match d {
            Decl::Parser(p) => Some(p),
            _ => None,
        })
    }

    /// The controls, in order.
    pub fn controls(&self) -> impl Iterator<Item = &ControlDecl> {
        self.decls.iter().filter_map(|d| match d {
            Decl::Control(c) => Some(c),
            _ => None,
        })
    }

    /// The headers, in order.
    pub fn headers(&self) -> impl Iterator<Item = &Aggregate> {
        self.decls.iter().filter_map(|d| match d {
            Decl::Header(h) => Some(h),
            _ => None,
        })
    }

    /// The structs, in order.
    pub fn structs(&self) -> impl Iterator<Item = &Aggregate> {
        self.decls.iter().filter_map(|d| match d {
            Decl::Struct(s) => Some(s),
            _ => None,
        })
    }

    /// The package instance named `main`, if declared.
    pub fn main(&self) -> Option<&Instance> {
        self.decls.iter().find_map(|d| match d {
            Decl::Instance(i) if i.name.name == "main" => Some(i),
            _ => None,
        })
    }
}

impl ControlDecl {
    /// The tables, in order.
    pub fn tables(&self) -> impl Iterator<Item = &TableDecl> {
        self.locals.iter().filter_map(|l| match l {
            Local::Table(t) => Some(t),
            _ => None,
        })
    }

    /// The actions, in order.
    pub fn actions(&self) -> impl Iterator<Item = &ActionDecl> {
        self.locals.iter().filter_map(|l| match l {
            Local::Action(a) => Some(a),
            _ => None,
        })
    }
}

impl ParserDecl {
    /// The state with this name.
    pub fn state(&self, name: &str) -> Option<&ParserState> {
        self.states.iter().find(|s| s.name.name == name)
    }
}
