//! What the compiler refuses because the BPF stack (512 bytes) cannot hold it, and where it
//! says so; and what no longer costs stack: a table applied as a statement keeps no result.

/// A program with one Ethernet header, `tables` exact tables on its type and an ingress body.
fn program(tables: usize, body: &str) -> String {
    let mut decls = String::new();
    for i in 0..tables {
        decls += &format!(
            "    table t{i} {{ key = {{ hdr.eth.ty: exact; }} actions = {{ set; nop; }} \
             default_action = nop(); }}\n"
        );
    }
    format!(
        "#include <xdp.p4>
header eth_t {{ bit<48> dst; bit<48> src; bit<16> ty; }}
struct headers_t {{ eth_t eth; }}
struct meta_t {{ bit<8> x; }}
parser P(packet_in packet, out headers_t hdr, inout meta_t meta, inout standard_metadata_t std) {{
    state start {{ packet.extract(hdr.eth); transition accept; }}
}}
control I(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t std) {{
    action nop() {{ }}
    action set(bit<32> port) {{ std.egress_port = port; }}
{decls}    apply {{
{body}    }}
}}
control D(packet_out packet, in headers_t hdr) {{ apply {{ packet.emit(hdr.eth); }} }}
XdpPipeline(P(), I(), D()) main;
"
    )
}

fn compile(source: &str) -> Result<usize, String> {
    let checked = linerate_p4::load_str("t.p4", source).map_err(|e| e.to_string())?;
    let entries =
        linerate_p4::entries::Entries::from_program(&checked).map_err(|e| e.to_string())?;
    linerate_p4::compile::compile(&checked, &entries, "t")
        .map(|c| c.insns())
        .map_err(|e| e.to_string())
}

#[test]
fn tables_applied_as_statements_keep_no_result() {
    // 40 applies with action data: results on the stack would take 40 × 24 bytes.
    let body: String = (0..40)
        .map(|i| format!("        t{i}.apply();\n"))
        .collect();
    let insns = compile(&program(40, &body)).expect("compiles");
    assert!(insns > 40 * 10, "{insns}");
}

#[test]
fn results_beyond_the_stack_are_refused_at_the_apply() {
    // Each `.hit` read keeps the table's outcome; somewhere past 512 bytes the compiler stops,
    // at the apply that needed the slot.
    let body: String = (0..40)
        .map(|i| format!("        if (t{i}.apply().hit) {{ meta.x = 8w{i}; }}\n"))
        .collect();
    let source = program(40, &body);
    let e = compile(&source).expect_err("refused");
    let (line, rest) = e
        .strip_prefix("t.p4:")
        .and_then(|r| r.split_once(':'))
        .expect("a position");
    let line: usize = line.parse().expect("a line number");
    let text = source.lines().nth(line - 1).expect("the line");
    assert!(text.contains(".apply().hit"), "{e} at {text}");
    assert!(
        rest.contains("cannot compile state beyond the 512-byte BPF stack"),
        "{e}"
    );
}

#[test]
fn headers_beyond_the_stack_are_refused_at_their_instance() {
    let fields: String = (0..70).map(|i| format!(" bit<8> f{i};")).collect();
    let source = program(0, "").replace(
        "header eth_t { bit<48> dst; bit<48> src; bit<16> ty; }",
        &format!("header eth_t {{ bit<48> dst; bit<48> src; bit<16> ty;{fields} }}"),
    );
    let e = compile(&source).expect_err("refused");
    // At `eth_t eth;` of the headers struct, the instance that does not fit.
    assert!(e.starts_with("t.p4:3:26:"), "{e}");
    assert!(
        e.contains("state beyond the 512-byte BPF stack (hdr.eth"),
        "{e}"
    );
}
