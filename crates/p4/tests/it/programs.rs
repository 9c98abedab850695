//! The shipped P4 programs parse and check, and their ASTs say what the programs say.

use linerate_p4::ast::{ExprKind, Keyset, Stmt, Transition};
use linerate_p4::{load, Checked, Type};
use std::path::PathBuf;

fn example(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../examples/p4")
        .join(name)
}

fn checked(name: &str) -> Checked {
    match load(&example(name)) {
        Ok(c) => c,
        Err(e) => panic!("{name}: {e}"),
    }
}

fn field_widths(c: &Checked, header: &str) -> Vec<(String, u32)> {
    c.header(header)
        .map(|l| {
            l.fields
                .iter()
                .map(|f| (f.name.clone(), f.ty.scalar_width().unwrap_or(0)))
                .collect()
        })
        .unwrap_or_default()
}

/// `(keysets as text, next state)` of a state's select, or the direct target.
fn transitions(c: &Checked, state: &str) -> Vec<(String, String)> {
    let Some(parser) = c.parser() else {
        return Vec::new();
    };
    let Some(state) = parser.state(state) else {
        return Vec::new();
    };
    let text = |span: linerate_p4::Span| {
        c.sources
            .file(span.file)
            .and_then(|f| f.text.get(span.start as usize..span.end as usize))
            .unwrap_or("")
            .to_string()
    };
    match &state.transition {
        Transition::Direct(next) => vec![(String::new(), next.name.clone())],
        Transition::Select { cases, .. } => cases
            .iter()
            .map(|case| {
                let keys: Vec<String> = case
                    .keysets
                    .iter()
                    .map(|k| match k {
                        Keyset::Value(v) => text(v.span),
                        Keyset::Mask(v, m) => format!("{} &&& {}", text(v.span), text(m.span)),
                        Keyset::Range(a, b) => format!("{} .. {}", text(a.span), text(b.span)),
                        Keyset::Default(_) => String::from("_"),
                    })
                    .collect();
                (keys.join(", "), case.next.name.clone())
            })
            .collect(),
    }
}

#[test]
fn l3_fwd_headers_have_the_wire_widths() {
    let c = checked("l3_fwd.p4");
    assert_eq!(
        field_widths(&c, "ethernet_t"),
        vec![
            ("dst_addr".to_string(), 48),
            ("src_addr".to_string(), 48),
            ("ether_type".to_string(), 16)
        ]
    );
    let ipv4 = c.header("ipv4_t").map(|l| l.width_bits);
    assert_eq!(ipv4, Some(160));
    let ttl = c
        .header("ipv4_t")
        .and_then(|l| l.field("ttl"))
        .map(|f| f.offset_bits);
    assert_eq!(ttl, Some(64));
    let headers: Vec<&str> = c.program.headers().map(|h| h.name.name.as_str()).collect();
    assert_eq!(headers, vec!["ethernet_t", "ipv4_t"]);
    assert_eq!(
        c.pipeline.type_args,
        vec![
            ("H".to_string(), Type::Struct("headers_t".into())),
            ("M".to_string(), Type::Struct("metadata_t".into()))
        ]
    );
}

#[test]
fn l3_fwd_parser_selects_ipv4_on_the_ethertype() {
    let c = checked("l3_fwd.p4");
    let states: Vec<&str> = c
        .parser()
        .map(|p| p.states.iter().map(|s| s.name.name.as_str()).collect())
        .unwrap_or_default();
    assert_eq!(states, vec!["start", "parse_ipv4"]);
    assert_eq!(
        transitions(&c, "start"),
        vec![
            ("ETHERTYPE_IPV4".to_string(), "parse_ipv4".to_string()),
            ("_".to_string(), "accept".to_string())
        ]
    );
    assert_eq!(
        transitions(&c, "parse_ipv4"),
        vec![(String::new(), "accept".to_string())]
    );
}

#[test]
fn l3_fwd_table_is_an_lpm_on_the_destination() {
    let c = checked("l3_fwd.p4");
    let ingress = c.ingress();
    let tables: Vec<_> = ingress.map(|i| i.tables().collect()).unwrap_or_default();
    assert_eq!(tables.len(), 1);
    let table = tables[0];
    assert_eq!(table.name.name, "ipv4_lpm");
    assert_eq!(table.keys.len(), 1);
    assert_eq!(table.keys[0].match_kind.name, "lpm");
    assert_eq!(c.type_of(&table.keys[0].expr), Some(&Type::Bit(32)));
    let actions: Vec<&str> = table.actions.iter().map(|a| a.name.name.as_str()).collect();
    assert_eq!(actions, vec!["ipv4_forward", "drop"]);
    assert_eq!(
        table
            .default_action
            .as_ref()
            .map(|d| d.call.name.name.as_str()),
        Some("drop")
    );
    // The TTL decrement's literal adapted to the field's width.
    let forward = ingress
        .and_then(|i| i.actions().find(|a| a.name.name == "ipv4_forward"))
        .map(|a| a.body.stmts.clone())
        .unwrap_or_default();
    // The last assignment (the checksum update follows it).
    let Some(rhs) = forward.iter().rev().find_map(|s| match s {
        Stmt::Assign { rhs, .. } => Some(rhs),
        _ => None,
    }) else {
        panic!("ipv4_forward assigns the TTL");
    };
    let ExprKind::Binary(_, _, one) = &rhs.kind else {
        panic!("ttl - 1");
    };
    assert_eq!(c.type_of(one), Some(&Type::Bit(8)));
    assert_eq!(c.type_of(rhs), Some(&Type::Bit(8)));
}

#[test]
fn l3_fwd_firewall_parses_udp_through_a_three_way_select() {
    let c = checked("l3_fwd_firewall.p4");
    assert_eq!(
        field_widths(&c, "udp_t"),
        vec![
            ("src_port".to_string(), 16),
            ("dst_port".to_string(), 16),
            ("length".to_string(), 16),
            ("checksum".to_string(), 16)
        ]
    );
    assert_eq!(
        transitions(&c, "parse_ipv4"),
        vec![
            ("5, 0, IPPROTO_UDP".to_string(), "parse_udp".to_string()),
            ("_, _, _".to_string(), "accept".to_string())
        ]
    );
}

#[test]
fn l3_fwd_firewall_acl_matches_the_five_tuple() {
    let c = checked("l3_fwd_firewall.p4");
    let tables: Vec<_> = c
        .ingress()
        .map(|i| i.tables().collect())
        .unwrap_or_default();
    let names: Vec<&str> = tables.iter().map(|t| t.name.name.as_str()).collect();
    assert_eq!(names, vec!["acl", "ipv4_lpm"]);
    let acl = tables[0];
    let kinds: Vec<&str> = acl
        .keys
        .iter()
        .map(|k| k.match_kind.name.as_str())
        .collect();
    assert_eq!(
        kinds,
        vec!["ternary", "ternary", "exact", "ternary", "ternary"]
    );
    let widths: Vec<Option<&Type>> = acl.keys.iter().map(|k| c.type_of(&k.expr)).collect();
    assert_eq!(
        widths,
        vec![
            Some(&Type::Bit(32)),
            Some(&Type::Bit(32)),
            Some(&Type::Bit(8)),
            Some(&Type::Bit(16)),
            Some(&Type::Bit(16))
        ]
    );
    assert_eq!(acl.entries.len(), 2);
    assert_eq!(acl.entries[1].action.name.name, "deny");
    let Keyset::Mask(value, mask) = &acl.entries[1].keysets[0] else {
        panic!("the second entry masks the source address");
    };
    assert_eq!(c.type_of(value), Some(&Type::Bit(32)));
    assert_eq!(c.type_of(mask), Some(&Type::Bit(32)));
}

#[test]
fn vlan_switch_uses_stacks_enums_registers_and_switch() {
    let c = checked("vlan_acl_switch.p4");
    let vlan = c
        .structure("headers_t")
        .and_then(|s| s.field("vlan"))
        .map(|f| f.ty.clone());
    assert_eq!(
        vlan,
        Some(Type::Stack(Box::new(Type::Header("vlan_t".into())), 2))
    );
    assert_eq!(c.header("vlan_t").map(|h| h.width_bits), Some(32));
    assert_eq!(
        transitions(&c, "parse_vlan"),
        vec![
            ("ether_type_t.VLAN".to_string(), "parse_vlan".to_string()),
            ("_".to_string(), "accept".to_string())
        ]
    );
    let enum_values = c.types.enums.get("ether_type_t").map(|e| e.members.clone());
    assert_eq!(
        enum_values,
        Some(vec![
            ("VLAN".to_string(), Some(0x8100)),
            ("QINQ".to_string(), Some(0x88a8)),
            ("IPV4".to_string(), Some(0x0800))
        ])
    );
    let switch_cases = c
        .ingress()
        .and_then(|i| {
            i.apply.stmts.iter().find_map(|s| match s {
                Stmt::Switch { cases, .. } => Some(cases.len()),
                _ => None,
            })
        })
        .unwrap_or(0);
    assert_eq!(switch_cases, 2);
}

#[test]
fn names_resolve_to_what_they_refer_to_and_constants_have_values() {
    use linerate_p4::ast::Direction;
    use linerate_p4::NameRef;
    let c = checked("l3_fwd.p4");
    let Some(Transition::Select { cases, exprs, .. }) = c
        .parser()
        .and_then(|p| p.state("start"))
        .map(|s| &s.transition)
    else {
        panic!("start selects");
    };
    let Keyset::Value(key) = &cases[0].keysets[0] else {
        panic!("a value keyset");
    };
    assert_eq!(c.name_ref(key), Some(NameRef::Constant(0x0800)));
    assert_eq!(c.constant(key), Some(0x0800));
    assert_eq!(c.type_of(key), Some(&Type::Bit(16)));
    assert_eq!(
        c.constant(&exprs[0]),
        None,
        "the EtherType is read at run time"
    );

    let forward = c
        .ingress()
        .and_then(|i| i.actions().find(|a| a.name.name == "ipv4_forward"))
        .map(|a| a.body.stmts.clone())
        .unwrap_or_default();
    let Some(Stmt::Assign { lhs, rhs }) = forward.first() else {
        panic!("std.egress_port = port");
    };
    let ExprKind::Member(std_param, _) = &lhs.kind else {
        panic!("a member");
    };
    assert_eq!(
        c.name_ref(std_param),
        Some(NameRef::Param {
            direction: Some(Direction::InOut)
        })
    );
    assert_eq!(c.name_ref(rhs), Some(NameRef::Param { direction: None }));
}

#[test]
fn ipip_tunnel_checks_its_checksum_lists() {
    let c = checked("ipip_tunnel.p4");
    assert_eq!(
        transitions(&c, "parse_ipv4"),
        vec![
            ("PROTO_IPIP".to_string(), "parse_inner".to_string()),
            ("_".to_string(), "accept".to_string())
        ]
    );
    // The parser's verify_checksum data: eleven fields of the IPv4 header (all but the checksum),
    // typed as a list of their widths (160 - 16 bits).
    let body = c
        .parser()
        .and_then(|p| p.state("parse_ipv4"))
        .map(|s| s.body.clone())
        .unwrap_or_default();
    let Some(Stmt::Call(call)) = body.get(1) else {
        panic!("verify_checksum follows the extract");
    };
    let ExprKind::Call { args, .. } = &call.kind else {
        panic!("a call");
    };
    let Some(Type::List(elements)) = c.type_of(&args[1]) else {
        panic!("a list: {:?}", c.type_of(&args[1]));
    };
    let bits: u32 = elements.iter().filter_map(Type::scalar_width).sum();
    assert_eq!((elements.len(), bits), (11, 144));
}
