//! One test per class of error: each asserts the exact `file:line:col: message`.

use linerate_p4::{load, load_str, ErrorKind};
use std::path::Path;

/// A minimal well-formed program; tests splice a faulty line into one of its parts.
const HEAD: &str = "#include <xdp.p4>
header h_t { bit<8> a; bit<8> b; }
struct hs_t { h_t h; }
struct m_t { }
";

fn program(parser_body: &str, control_locals: &str, apply: &str) -> String {
    format!(
        "{HEAD}parser P(packet_in pk, out hs_t hdr, inout m_t m, inout standard_metadata_t s) {{
    state start {{
        pk.extract(hdr.h);
{parser_body}
    }}
}}
control I(inout hs_t hdr, inout m_t m, inout standard_metadata_t s) {{
{control_locals}
    apply {{
{apply}
    }}
}}
control D(packet_out pk, in hs_t hdr) {{ apply {{ pk.emit(hdr.h); }} }}
XdpPipeline(P(), I(), D()) main;
"
    )
}

fn error_of(text: &str) -> (String, ErrorKind) {
    match load_str("t.p4", text) {
        Ok(_) => panic!("expected an error"),
        Err(e) => (e.to_string(), e.kind),
    }
}

const OK_TRANSITION: &str = "        transition accept;";

#[test]
fn the_template_itself_checks() {
    let text = program(OK_TRANSITION, "", "");
    assert!(load_str("t.p4", &text).is_ok());
}

#[test]
fn unknown_header_field() {
    // Line 14 is the first apply line; the field name starts at column 25.
    let text = program(OK_TRANSITION, "", "        hdr.h.a = hdr.h.ttl2;");
    let (message, kind) = error_of(&text);
    assert_eq!(
        message,
        "t.p4:14:25: unknown header field 'ttl2' in 'hdr.h'"
    );
    assert!(matches!(kind, ErrorKind::UnknownField { .. }));
}

#[test]
fn unknown_struct_field() {
    let text = program(OK_TRANSITION, "", "        hdr.x.a = 1;");
    assert_eq!(
        error_of(&text).0,
        "t.p4:14:13: unknown struct field 'x' in 'hdr'"
    );
}

#[test]
fn unknown_name() {
    let text = program(OK_TRANSITION, "", "        hdr.h.a = nothing;");
    let (message, kind) = error_of(&text);
    assert_eq!(message, "t.p4:14:19: unknown name 'nothing'");
    assert!(matches!(kind, ErrorKind::Unknown { what: "name", .. }));
}

#[test]
fn unknown_state() {
    let text = program("        transition nowhere;", "", "");
    assert_eq!(error_of(&text).0, "t.p4:8:20: unknown state 'nowhere'");
}

#[test]
fn unknown_action_in_a_table() {
    let text = program(
        OK_TRANSITION,
        "    table t { key = { hdr.h.a: exact; } actions = { fly; } }",
        "",
    );
    assert_eq!(error_of(&text).0, "t.p4:12:53: unknown action 'fly'");
}

#[test]
fn unknown_match_kind() {
    let text = program(
        OK_TRANSITION,
        "    action a() { }\n    table t { key = { hdr.h.a: fuzzy; } actions = { a; } }",
        "",
    );
    assert_eq!(error_of(&text).0, "t.p4:13:32: unknown match kind 'fuzzy'");
}

#[test]
fn unknown_type() {
    let text = program(OK_TRANSITION, "    bit<8> x;\n    word_t y;", "");
    assert_eq!(error_of(&text).0, "t.p4:13:5: unknown type 'word_t'");
}

#[test]
fn width_mismatch_between_operands() {
    let text = program(OK_TRANSITION, "", "        hdr.h.a = hdr.h.a + 16w1;");
    let (message, kind) = error_of(&text);
    assert_eq!(
        message,
        "t.p4:14:19: type mismatch: '+' operands have types bit<8> and bit<16>"
    );
    assert!(matches!(kind, ErrorKind::TypeMismatch(_)));
}

#[test]
fn literal_too_wide_for_its_target() {
    let text = program(OK_TRANSITION, "", "        hdr.h.a = 256;");
    let (message, kind) = error_of(&text);
    assert_eq!(
        message,
        "t.p4:14:19: bad width: value 256 does not fit in bit<8>"
    );
    assert!(matches!(kind, ErrorKind::Width(_)));
}

#[test]
fn slice_out_of_range() {
    let text = program(OK_TRANSITION, "", "        hdr.h.a = hdr.h.b[8:1] ++ 1w0;");
    assert_eq!(
        error_of(&text).0,
        "t.p4:14:19: bad width: slice [8:1] is outside bit<8> (needs 8 > hi >= lo >= 0)"
    );
}

#[test]
fn header_not_byte_aligned() {
    let text = HEAD.replace(
        "header h_t { bit<8> a; bit<8> b; }",
        "header h_t { bit<7> a; }",
    );
    let text = format!("{text}XdpPipeline(P(), I(), D()) main;\n");
    assert_eq!(
        error_of(&text).0,
        "t.p4:2:8: bad width: header 'h_t' is 7 bits wide, not a whole number of bytes"
    );
}

#[test]
fn select_keyset_arity() {
    let text = program(
        "        transition select(hdr.h.a, hdr.h.b) { (1, 2, 3): accept; default: reject; }",
        "",
        "",
    );
    let (message, kind) = error_of(&text);
    assert_eq!(
        message,
        "t.p4:8:47: arity mismatch: select has 2 keys but this case has 3 keysets"
    );
    assert!(matches!(kind, ErrorKind::Arity(_)));
}

#[test]
fn action_argument_count() {
    let text = program(
        OK_TRANSITION,
        "    action a(bit<8> v) { hdr.h.a = v; }",
        "        a(1, 2);",
    );
    assert_eq!(
        error_of(&text).0,
        "t.p4:14:9: arity mismatch: 'a' takes 1 arguments, found 2"
    );
}

#[test]
fn extract_of_a_non_header() {
    let text = program(
        "        pk.extract(hdr.h.a);\n        transition accept;",
        "",
        "",
    );
    assert_eq!(
        error_of(&text).0,
        "t.p4:8:20: type mismatch: extract takes a header, not bit<8>"
    );
}

#[test]
fn write_to_an_in_parameter() {
    let text = program(OK_TRANSITION, "", "").replace(
        "control D(packet_out pk, in hs_t hdr) { apply { pk.emit(hdr.h); } }",
        "control D(packet_out pk, in hs_t hdr) { apply { hdr.h.a = 1; } }",
    );
    let (message, kind) = error_of(&text);
    assert_eq!(
        message,
        "t.p4:17:49: cannot write to 'hdr' (read-only or not a variable)"
    );
    assert!(matches!(kind, ErrorKind::Invalid(_)));
}

#[test]
fn duplicate_declaration() {
    let text = program(OK_TRANSITION, "    bit<8> x;\n    bit<16> x;", "");
    let (message, kind) = error_of(&text);
    assert_eq!(message, "t.p4:13:13: 'x' is already declared in this scope");
    assert!(matches!(kind, ErrorKind::Duplicate(_)));
}

#[test]
fn syntax_error() {
    let text = program(OK_TRANSITION, "", "        hdr.h.a = ;");
    let (message, kind) = error_of(&text);
    assert_eq!(message, "t.p4:14:19: expected an expression, found ';'");
    assert!(matches!(kind, ErrorKind::Syntax { .. }));
}

#[test]
fn bad_character() {
    let text = program(OK_TRANSITION, "", "        hdr.h.a = 1 $ 2;");
    let (message, kind) = error_of(&text);
    assert_eq!(message, "t.p4:14:21: unexpected character '$'");
    assert!(matches!(kind, ErrorKind::BadCharacter(_)));
}

#[test]
fn bad_literal() {
    let text = program(OK_TRANSITION, "", "        hdr.h.a = 0x1g;");
    let (message, kind) = error_of(&text);
    assert_eq!(
        message,
        "t.p4:14:19: bad integer literal '0x1g': 'g' is not a base-16 digit"
    );
    assert!(matches!(kind, ErrorKind::BadLiteral(..)));
}

#[test]
fn unsupported_construct() {
    let text = format!("{HEAD}header_union u_t {{ h_t a; }}\n");
    let (message, kind) = error_of(&text);
    assert_eq!(message, "t.p4:5:1: unsupported construct: header_union");
    assert!(matches!(kind, ErrorKind::Unsupported(_)));
}

#[test]
fn nesting_too_deep() {
    let deep = format!("        hdr.h.a = {}1{};", "(".repeat(300), ")".repeat(300));
    let text = program(OK_TRANSITION, "", &deep);
    let (message, kind) = error_of(&text);
    assert!(message.starts_with("t.p4:14:"), "{message}");
    assert!(matches!(kind, ErrorKind::TooDeep(_)));
}

#[test]
fn unknown_system_include() {
    let (message, kind) = error_of("#include <v1model.p4>\n");
    assert_eq!(
        message,
        "t.p4:1:1: unknown system include <v1model.p4> (linerate ships only <xdp.p4>)"
    );
    assert!(matches!(kind, ErrorKind::UnknownSystemInclude(_)));
}

#[test]
fn missing_include_file() {
    let (message, kind) = error_of("\n  #include \"missing.p4\"\n");
    assert!(
        message.starts_with("t.p4:2:3: cannot read 'missing.p4'"),
        "{message}"
    );
    assert!(matches!(kind, ErrorKind::Io { .. }));
}

#[test]
fn missing_main() {
    let (message, _) = error_of(HEAD);
    assert_eq!(
        message,
        "t.p4:1:1: no package instance named 'main' (write e.g. `XdpPipeline(P(), I(), D()) main;`)"
    );
}

#[test]
fn block_not_matching_the_architecture() {
    let text = program(OK_TRANSITION, "", "")
        .replace(
            "control D(packet_out pk, in hs_t hdr)",
            "control D(packet_out pk, in m_t hdr)",
        )
        .replace("pk.emit(hdr.h);", "");
    assert_eq!(
        error_of(&text).0,
        "t.p4:17:33: type mismatch: parameter 'hdr' of control 'D' is in m_t, but XdpDeparser requires in hs_t"
    );
}

#[test]
fn errors_in_included_files_name_that_file() {
    let dir = std::env::temp_dir().join(format!("linerate-p4-include-{}", std::process::id()));
    let _ = std::fs::create_dir_all(&dir);
    let inner = dir.join("inner.p4");
    let outer = dir.join("outer.p4");
    let written = std::fs::write(&inner, "\nheader x_t { bit<8> a; }\nconst bit<4> K = 99;\n")
        .and_then(|()| std::fs::write(&outer, "#include \"inner.p4\"\n#include \"inner.p4\"\n"));
    assert!(written.is_ok());
    let result = load(&outer);
    let message = result.err().map(|e| e.to_string()).unwrap_or_default();
    assert_eq!(
        message,
        format!(
            "{}:3:18: bad width: value 99 does not fit in bit<4>",
            inner.display()
        )
    );
    let _ = std::fs::remove_dir_all(&dir);
    assert!(load(Path::new("/nonexistent/x.p4")).is_err());
}

#[test]
fn nesting_up_to_the_limit_checks_in_debug_builds_too() {
    // The paper's grid writes up to 25 operations in one expression; far longer chains,
    // parenthesised nests and else-if ladders below the depth limit must check, not overflow.
    let chain = format!("        hdr.h.a = hdr.h.a{};", " + 1".repeat(100));
    let parens = format!("        hdr.h.a = {}1{};", "(".repeat(60), ")".repeat(60));
    let mut ladder = String::from("        if (hdr.h.a == 0) { hdr.h.b = 0; }");
    for i in 1..50 {
        ladder.push_str(&format!(" else if (hdr.h.a == {i}) {{ hdr.h.b = {i}; }}"));
    }
    for body in [chain, parens, ladder] {
        let text = program(OK_TRANSITION, "", &body);
        let result = load_str("t.p4", &text);
        assert!(result.is_ok(), "{:?}", result.err().map(|e| e.to_string()));
    }
}

#[test]
fn a_list_expression_outside_a_generic_extern_argument() {
    // As an assignment's value: refused where the list starts (line 14, column 19).
    let text = program(OK_TRANSITION, "", "        hdr.h.a = { hdr.h.a, hdr.h.b };");
    let (message, _) = error_of(&text);
    assert_eq!(
        message,
        "t.p4:14:19: a list expression is allowed only as an extern's argument of generic type (the data of update_checksum or verify_checksum)"
    );
    // As the checksum of update_checksum (a bit<16>, not generic).
    let text = program(
        OK_TRANSITION,
        "",
        "        update_checksum(true, { hdr.h.a }, { hdr.h.b });",
    );
    let (message, _) = error_of(&text);
    assert!(message.starts_with("t.p4:14:44: "), "{message}");
    // An element without a fixed width.
    let text = program(
        OK_TRANSITION,
        "",
        "        bit<16> c = 0; update_checksum(true, { hdr.h.a, 5 }, c);",
    );
    let (message, _) = error_of(&text);
    assert_eq!(
        message,
        "t.p4:14:57: type mismatch: a list element must be bit<N>, int<N>, bool or a serializable enum, not int"
    );
    // A list that checks.
    let text = program(
        OK_TRANSITION,
        "",
        "        bit<16> c = 0; update_checksum(hdr.h.a == 1, { hdr.h.a, hdr.h.b, true }, c);",
    );
    assert!(load_str("t.p4", &text).is_ok());
}
