//! The shipped P4 programs parse and check, and their ASTs say what the programs say.

use linerate_p4::ast::{Decl, Keyset, Transition, TypeRef};
use linerate_p4::{load, Checked, Type};
use std::path::PathBuf;

fn example(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../examples/p4").join(name)
}

fn checked(name: &str) -> Checked {
    match load(&example(name)) {
        Ok(c) => c,
        Err(e) => panic!("{name}: {e}"),
    }
}

#[test]
fn l3_fwd_checks() {
    let c = checked("l3_fwd.p4");
    assert_eq!(c.pipeline.parser, "L3Parser");
}

#[test]
fn l3_fwd_firewall_checks() {
    let c = checked("l3_fwd_firewall.p4");
    assert_eq!(c.pipeline.ingress, "FwIngress");
}
