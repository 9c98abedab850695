//! The parser's forks: P4 precedence, `>>` from two `>`, type arguments versus comparisons,
//! casts versus parentheses, keysets, and what the checker records for each.

use linerate_p4::ast::{
    BinaryOp, ConstDecl, Decl, ExprKind, Keyset, Local, Stmt, Transition, TypeRef,
};
use linerate_p4::{load_str, parse_str, Checked, Type};

fn consts(text: &str) -> Vec<ConstDecl> {
    let parsed = parse_str("t.p4", text);
    let Ok((program, _)) = parsed else {
        panic!("{:?}", parsed.err().map(|e| e.to_string()));
    };
    program
        .decls
        .into_iter()
        .filter_map(|d| match d {
            Decl::Const(c) => Some(c),
            _ => None,
        })
        .collect()
}

/// Renders an expression with explicit parentheses, to compare tree shapes.
fn shape(kind: &ExprKind) -> String {
    match kind {
        ExprKind::Int { value, .. } => value.to_string(),
        ExprKind::Name(n) => n.name.clone(),
        ExprKind::Binary(op, l, r) => {
            format!("({} {} {})", shape(&l.kind), op.symbol(), shape(&r.kind))
        }
        ExprKind::Unary(op, e) => format!("({op:?} {})", shape(&e.kind)),
        ExprKind::Cast(t, e) => {
            let ty = match t {
                TypeRef::Named(n) => n.name.clone(),
                TypeRef::Bit(w) => format!("bit<{w}>"),
                other => format!("{other:?}"),
            };
            format!("(cast {ty} {})", shape(&e.kind))
        }
        ExprKind::Slice { base, hi, lo } => format!(
            "{}[{}:{}]",
            shape(&base.kind),
            shape(&hi.kind),
            shape(&lo.kind)
        ),
        ExprKind::Ternary(c, a, b) => format!(
            "({} ? {} : {})",
            shape(&c.kind),
            shape(&a.kind),
            shape(&b.kind)
        ),
        other => format!("{other:?}"),
    }
}

fn shape_of(expr: &str) -> String {
    let text = format!("const int A = 1; const int B = 2; const int C = 3;\nconst int X = {expr};");
    consts(&text)
        .last()
        .map(|c| shape(&c.value.kind))
        .unwrap_or_default()
}

#[test]
fn bitwise_operators_bind_tighter_than_comparisons() {
    assert_eq!(shape_of("A & B == C"), "((A & B) == C)");
    assert_eq!(shape_of("A | B ^ C & A"), "(A | (B ^ (C & A)))");
    assert_eq!(shape_of("A < B == B > C"), "((A < B) == (B > C))");
    assert_eq!(
        shape_of("A == B && B != C || A"),
        "(((A == B) && (B != C)) || A)"
    );
}

#[test]
fn arithmetic_precedence_and_left_associativity() {
    assert_eq!(shape_of("A + B * C"), "(A + (B * C))");
    assert_eq!(shape_of("A - B - C"), "((A - B) - C)");
    assert_eq!(shape_of("A << B + C"), "(A << (B + C))");
    assert_eq!(shape_of("-A + ~B"), "((Negate A) + (Complement B))");
    assert_eq!(shape_of("A == B ? A : C"), "((A == B) ? A : C)");
}

#[test]
fn two_adjacent_greater_than_tokens_shift_right() {
    assert_eq!(shape_of("A >> B"), "(A >> B)");
    assert_eq!(shape_of("A > B"), "(A > B)");
    // Separated by a space they are two comparisons, which the grammar then refuses.
    let parsed = parse_str("t.p4", "const int X = 1 > > 2;");
    assert!(parsed.is_err());
}

#[test]
fn casts_slices_and_parenthesised_names() {
    let text = "typedef bit<8> byte_t;\nconst bit<16> W = 0x1234;\n\
                const byte_t X = (byte_t) W[11:4];\nconst bit<8> Y = (bit<8>) (W >> 8);\n\
                const int Z = (W2);";
    let parsed = parse_str("t.p4", text);
    let Ok((program, _)) = parsed else {
        panic!("{:?}", parsed.err().map(|e| e.to_string()));
    };
    let shapes: Vec<String> = program
        .decls
        .iter()
        .filter_map(|d| match d {
            Decl::Const(c) => Some(shape(&c.value.kind)),
            _ => None,
        })
        .collect();
    assert_eq!(shapes[1], "(cast byte_t W[11:4])");
    assert_eq!(shapes[2], "(cast bit<8> (W >> 8))");
    assert_eq!(shapes[3], "W2");
}

const PIPELINE: &str = "#include <xdp.p4>
header h_t { bit<8> a; bit<8> b; bit<16> c; }
struct hs_t { h_t h; }
struct m_t { bit<32> n; }
";

fn check(parser_states: &str, control_locals: &str, apply: &str) -> Checked {
    let text = format!(
        "{PIPELINE}parser P(packet_in pk, out hs_t hdr, inout m_t m, inout standard_metadata_t s) {{
{parser_states}
}}
control I(inout hs_t hdr, inout m_t m, inout standard_metadata_t s) {{
{control_locals}
    apply {{ {apply} }}
}}
control D(packet_out pk, in hs_t hdr) {{ apply {{ pk.emit(hdr); }} }}
XdpPipeline(P(), I(), D()) main;
"
    );
    match load_str("t.p4", &text) {
        Ok(c) => c,
        Err(e) => panic!("{e}"),
    }
}

#[test]
fn generic_extern_instances_and_explicit_type_arguments() {
    let c = check(
        "state start { pk.extract<h_t>(hdr.h); transition accept; }",
        "register<bit<16>>(8) r;",
        "bit<16> v; r.read(v, 0); r.write(1, v + 1); hdr.h.c = v;",
    );
    let control = c.ingress();
    let instance_type = control.and_then(|i| {
        i.locals.iter().find_map(|l| match l {
            Local::Instance(inst) => Some(format!("{:?}", inst.ty)),
            _ => None,
        })
    });
    assert!(instance_type.is_some_and(|t| t.starts_with("Specialized")));
    // `r.write(1, v + 1)`: the index literal adapts to bit<32>, the value to T = bit<16>.
    let write = control.and_then(|i| match i.apply.stmts.get(2) {
        Some(Stmt::Call(e)) => Some(e.clone()),
        _ => None,
    });
    let Some(ExprKind::Call { args, .. }) = write.map(|e| e.kind) else {
        panic!("r.write(...)");
    };
    assert_eq!(c.type_of(&args[0]), Some(&Type::Bit(32)));
    assert_eq!(c.type_of(&args[1]), Some(&Type::Bit(16)));
}

#[test]
fn select_keysets_masks_ranges_and_defaults() {
    let c = check(
        "state start { pk.extract(hdr.h); transition select(hdr.h.a, hdr.h.c) {
             (0x0f &&& 0xf0, 1 .. 100): next;
             (_, 0x0800): next;
             default: reject;
         } }
         state next { transition accept; }",
        "",
        "",
    );
    let parser = c.parser();
    let Some(Transition::Select { cases, .. }) =
        parser.and_then(|p| p.state("start")).map(|s| &s.transition)
    else {
        panic!("select");
    };
    assert_eq!(cases.len(), 3);
    assert!(matches!(cases[0].keysets[0], Keyset::Mask(..)));
    assert!(matches!(cases[0].keysets[1], Keyset::Range(..)));
    assert!(matches!(cases[1].keysets[0], Keyset::Default(_)));
    assert!(matches!(cases[2].keysets[..], [Keyset::Default(_)]));
    let Keyset::Range(lo, hi) = &cases[0].keysets[1] else {
        panic!("range");
    };
    assert_eq!(c.type_of(lo), Some(&Type::Bit(16)));
    assert_eq!(c.type_of(hi), Some(&Type::Bit(16)));
}

#[test]
fn concatenation_and_slices_have_the_summed_width() {
    let c = check(
        "state start { pk.extract(hdr.h); transition accept; }",
        "",
        "hdr.h.c = hdr.h.a ++ hdr.h.b; hdr.h.a = hdr.h.c[15:8]; m.n = (bit<32>) hdr.h.c;",
    );
    let stmts = c
        .ingress()
        .map(|i| i.apply.stmts.clone())
        .unwrap_or_default();
    let rhs_types: Vec<Option<Type>> = stmts
        .iter()
        .map(|s| match s {
            Stmt::Assign { rhs, .. } => c.type_of(rhs).cloned(),
            _ => None,
        })
        .collect();
    assert_eq!(
        rhs_types,
        vec![Some(Type::Bit(16)), Some(Type::Bit(8)), Some(Type::Bit(32))]
    );
}

#[test]
fn type_names_shadow_nothing_and_bit_arguments_are_not_comparisons() {
    // `h_t x;` declares a variable because h_t names a type; `a < b` compares because `a` does not.
    let c = check(
        "state start { pk.extract(hdr.h); transition accept; }",
        "",
        "h_t x; x = hdr.h; if (hdr.h.a < hdr.h.b) { hdr.h = x; }",
    );
    let stmts = c.ingress().map(|i| i.apply.stmts.len()).unwrap_or(0);
    assert_eq!(stmts, 3);
}

#[test]
fn annotations_and_includes_are_read_once() {
    let text = format!(
        "#include <xdp.p4>\n{}\n@name(\"x\") const bit<8> K = 1;",
        PIPELINE.replace("header h_t", "@hdr header h_t")
    );
    let parsed = parse_str("t.p4", &text);
    assert!(parsed.is_ok(), "{:?}", parsed.err().map(|e| e.to_string()));
    let externs = parsed
        .map(|(p, _)| {
            p.decls
                .iter()
                .filter(|d| matches!(d, Decl::Extern(_)))
                .count()
        })
        .unwrap_or(0);
    assert_eq!(
        externs, 4,
        "packet_in, packet_out, counter, register: once each"
    );
}

#[test]
fn binary_operation_classes_follow_the_paper() {
    use linerate_p4::ast::OpClass;
    assert_eq!(BinaryOp::Add.class(), OpClass::Arithmetic);
    assert_eq!(BinaryOp::Shl.class(), OpClass::Bitwise);
    assert_eq!(BinaryOp::Concat.class(), OpClass::Bitwise);
    assert_eq!(BinaryOp::Le.class(), OpClass::Comparison);
}

#[test]
fn method_type_parameters_win_over_user_types_of_the_same_name() {
    // A program's own `T` must not capture the `T` of `extract<T>` or `register<T>`.
    let text = format!(
        "{PIPELINE}typedef bit<8> T;
parser P(packet_in pk, out hs_t hdr, inout m_t m, inout standard_metadata_t s) {{
    state start {{ pk.extract(hdr.h); transition accept; }}
}}
control I(inout hs_t hdr, inout m_t m, inout standard_metadata_t s) {{
    register<bit<16>>(4) r;
    apply {{ r.write(0, hdr.h.c); }}
}}
control D(packet_out pk, in hs_t hdr) {{ apply {{ pk.emit(hdr.h); }} }}
XdpPipeline(P(), I(), D()) main;
"
    );
    let result = load_str("t.p4", &text);
    assert!(result.is_ok(), "{:?}", result.err().map(|e| e.to_string()));
    let wrong = text.replace("r.write(0, hdr.h.c)", "r.write(0, hdr.h.a)");
    let message = load_str("t.p4", &wrong).err().map(|e| e.to_string());
    assert_eq!(
        message.as_deref(),
        Some("t.p4:11:24: type mismatch: expected bit<16>, found bit<8>")
    );
}
