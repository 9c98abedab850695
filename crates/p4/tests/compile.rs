//! The compiled P4 programs agree with the reference interpreter in linerate's VM: the same XDP
//! action (and redirect port), the same output packet and the same counters, packet by packet
//! over at least 200 crafted and random packets per program.

mod common;

use common::{action_code, case, counter_entries, expected, packets};
use linerate_bpf::contents::MapMode;
use linerate_bpf::read_object;
use linerate_p4::interp::XdpAction;
use linerate_vm::drive::Driver;
use linerate_vm::{Redirect, VmOptions};

/// Runs `name` through the VM and the interpreter; returns how many packets took each action.
fn differential(name: &str, counters: &[(&str, &str, u32)]) -> [usize; 5] {
    let case = case(name);
    let bytes = case.compiled.object_bytes().expect("writes");
    let object = read_object(&bytes, name).expect("reads back");
    let packets = packets(240, 0x9e37_79b9_7f4a_7c15);
    let (want, state) = expected(&case, &packets);
    let mut driver = Driver::new(
        &object,
        &case.compiled.seed(),
        VmOptions::default(),
        MapMode::Persist,
    )
    .expect("seeds");
    let mut seen = [0usize; 5];
    for (i, (packet, want)) in packets.iter().zip(&want).enumerate() {
        let got = driver.run(0, packet, &[]).expect("runs");
        let code = action_code(want.action);
        assert_eq!(
            got.return_value as u32, code,
            "{name} packet {i}: {packet:02x?}"
        );
        if let XdpAction::Redirect(port) = want.action {
            assert_eq!(
                got.redirect,
                Some(Redirect::Ifindex(port)),
                "{name} packet {i}"
            );
        }
        assert_eq!(got.packet, want.packet, "{name} packet {i}: {packet:02x?}");
        seen[code as usize] += 1;
    }
    let maps = driver.maps();
    for (map, instance, size) in counters {
        let index = object.map_index(map).expect("counter map");
        assert_eq!(
            maps[index],
            counter_entries(&state, instance, *size),
            "{name} {map}"
        );
    }
    seen
}

#[test]
fn l3_fwd_agrees_with_the_interpreter_in_the_vm() {
    let seen = differential("l3_fwd", &[]);
    // Every outcome the program has: drops (miss, 192.168.1/24, short), pass, TX, redirect.
    assert!(
        seen[1] > 0 && seen[2] > 0 && seen[3] > 0 && seen[4] > 0,
        "{seen:?}"
    );
}

#[test]
fn l3_fwd_firewall_agrees_with_the_interpreter_in_the_vm() {
    let seen = differential("l3_fwd_firewall", &[("acl_hits", "FwIngress.acl_hits", 64)]);
    assert!(seen[1] > 0 && seen[2] > 0 && seen[4] > 0, "{seen:?}");
}

#[test]
fn the_object_holds_one_xdp_program_and_the_table_maps() {
    let case = case("l3_fwd_firewall");
    let spec = &case.compiled.spec;
    assert_eq!(spec.programs.len(), 1);
    assert_eq!(spec.programs[0].section, "xdp");
    let names: Vec<_> = spec.maps.iter().map(|m| m.name.as_str()).collect();
    assert_eq!(names, ["acl_hits", "acl", "ipv4_lpm"]);
    // The ACL's two const entries and the three routes of the entries file.
    let rows: Vec<_> = case
        .compiled
        .contents
        .iter()
        .map(|c| (c.map.as_str(), c.entries.len()))
        .collect();
    assert_eq!(rows, [("acl", 2), ("ipv4_lpm", 3)]);
}
