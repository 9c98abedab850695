//! Test groups of the whole-program search: packets run in order on one seeded interpreter,
//! with the starting program's outcomes to compare candidates with.

use linerate_bpf::contents::{MapContents, MapSeed};
use linerate_bpf::Object;
use linerate_vm::{Redirect, Vm, VmOptions};

/// The observable outcome of one test packet.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct Expected {
    pub(super) action: u64,
    pub(super) redirect: Option<Redirect>,
    pub(super) packet: Vec<u8>,
    pub(super) meta: Vec<u8>,
}

/// Packets run in order on one seeded interpreter, with the starting program's outcomes.
pub(super) struct Group {
    /// Seeded, not yet run.
    pub(super) vm: Vm,
    pub(super) packets: Vec<Vec<u8>>,
    pub(super) expected: Vec<Expected>,
    pub(super) maps: MapContents,
}

pub(super) fn maps_of(vm: &Vm) -> MapContents {
    vm.maps.iter().map(|m| m.entries()).collect()
}

impl Group {
    /// The group of `packets` on `object`'s program seeded with `seed`; packets the starting
    /// program does not run on are left out (`None` when none is left).
    pub(super) fn new(
        object: &Object,
        program: usize,
        seed: &MapSeed,
        options: VmOptions,
        mut packets: Vec<Vec<u8>>,
    ) -> Option<Group> {
        let mut vm = Vm::new(object, options).ok()?;
        vm.seed(seed).ok()?;
        'retry: loop {
            let mut run = vm.clone();
            let mut expected = Vec::with_capacity(packets.len());
            for (i, p) in packets.iter().enumerate() {
                match run.run_in_place(program, p, &[]) {
                    Ok(s) => expected.push(Expected {
                        action: s.return_value,
                        redirect: s.redirect,
                        packet: run.packet_buffer().whole_packet(),
                        meta: run.packet_buffer().meta().to_vec(),
                    }),
                    Err(_) => {
                        packets.remove(i);
                        continue 'retry;
                    }
                }
            }
            if packets.is_empty() {
                return None;
            }
            let maps = maps_of(&run);
            return Some(Group {
                vm,
                packets,
                expected,
                maps,
            });
        }
    }
}
