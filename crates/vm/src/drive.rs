//! Running packets one after another: the one driver behind `linerate run`, `linerate cost
//! --packets`, the example tests and the benchmarks.
//!
//! A [`Driver`] owns a seeded interpreter and runs packets on it, either keeping the maps from
//! packet to packet ([`MapMode::Persist`]) or giving every packet freshly seeded maps
//! ([`MapMode::Fresh`]: the interpreter is restored to its state right after seeding, pseudo-random
//! and clock state included). Each [`RunOutcome`] carries the executed path when
//! [`VmOptions::record_steps`] is set. `linerate_kernel::drive` is the same driver for the kernel.

use linerate_bpf::contents::{MapContents, MapMode, MapSeed, SeedError};
use linerate_bpf::Object;

use crate::{RunOutcome, RunSummary, Vm, VmError, VmOptions};

/// Why driving packets through the interpreter failed.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum DriveError {
    /// The interpreter could not be built for the object (a program does not decode, a map
    /// cannot be created).
    #[error(transparent)]
    Build(VmError),
    #[error(transparent)]
    Seed(#[from] SeedError),
    /// Packet `index` (counted from 0 over the driver's life) failed to run.
    #[error("packet {index}")]
    Packet {
        index: usize,
        #[source]
        source: VmError,
    },
}

/// A seeded interpreter that runs packets in a [`MapMode`].
#[derive(Clone, Debug)]
pub struct Driver {
    vm: Vm,
    /// With [`MapMode::Fresh`]: the interpreter as it was right after seeding.
    pristine: Option<Vm>,
    /// Whether `vm` has run a packet since it was seeded or restored.
    used: bool,
    /// Packets run so far.
    packets: usize,
}

/// What running a list of packets produced.
#[derive(Clone, Debug)]
pub struct Runs {
    /// One outcome per packet, in order.
    pub outcomes: Vec<RunOutcome>,
    /// Every map's entries before the first packet (after seeding), canonical as
    /// [`crate::maps::MapState::entries`] lists them.
    pub initial_maps: MapContents,
    /// Every map's entries after the last packet (with [`MapMode::Fresh`], the last packet's
    /// fresh maps).
    pub final_maps: MapContents,
}

impl Driver {
    /// Builds the interpreter for `object` and seeds its maps.
    pub fn new(
        object: &Object,
        seed: &MapSeed,
        options: VmOptions,
        mode: MapMode,
    ) -> Result<Driver, DriveError> {
        let mut vm = Vm::new(object, options).map_err(DriveError::Build)?;
        vm.seed(seed)?;
        let pristine = (mode == MapMode::Fresh).then(|| vm.clone());
        Ok(Driver {
            vm,
            pristine,
            used: false,
            packets: 0,
        })
    }

    /// Readies the interpreter for the next packet (fresh maps restored where the mode wants
    /// them) and gives the packet's index.
    fn next_packet(&mut self) -> usize {
        if let (Some(pristine), true) = (&self.pristine, self.used) {
            self.vm = pristine.clone();
        }
        self.used = true;
        self.packets += 1;
        self.packets - 1
    }

    /// Runs program `program` on one packet (with metadata `meta` in front of it).
    pub fn run(
        &mut self,
        program: usize,
        packet: &[u8],
        meta: &[u8],
    ) -> Result<RunOutcome, DriveError> {
        let index = self.next_packet();
        self.vm
            .run(program, packet, meta)
            .map_err(|source| DriveError::Packet { index, source })
    }

    /// Runs program `program` on one packet with [`crate::Vm::run_in_place`]: the packet stays in
    /// the interpreter ([`Driver::vm`]) and what the program sent to user space is dropped.
    pub fn run_in_place(
        &mut self,
        program: usize,
        packet: &[u8],
        meta: &[u8],
    ) -> Result<RunSummary, DriveError> {
        let index = self.next_packet();
        self.vm
            .run_in_place(program, packet, meta)
            .map_err(|source| DriveError::Packet { index, source })
    }

    /// Runs program `program` again on the packet the last run left, with the maps as they are
    /// ([`crate::Vm::rerun_in_place`]: what the kernel's `BPF_PROG_TEST_RUN` does with `repeat`
    /// above 1); an error names the last packet.
    pub fn rerun_in_place(&mut self, program: usize) -> Result<RunSummary, DriveError> {
        let index = self.packets.saturating_sub(1);
        self.vm
            .rerun_in_place(program)
            .map_err(|source| DriveError::Packet { index, source })
    }

    /// Runs program `program` on every packet in order, with the maps before the first and after
    /// the last.
    pub fn run_packets(
        &mut self,
        program: usize,
        packets: &[Vec<u8>],
        meta: &[u8],
    ) -> Result<Runs, DriveError> {
        let initial_maps = self.maps();
        let outcomes = packets
            .iter()
            .map(|packet| self.run(program, packet, meta))
            .collect::<Result<_, _>>()?;
        Ok(Runs {
            outcomes,
            initial_maps,
            final_maps: self.maps(),
        })
    }

    /// Every map's entries now, canonical ([`crate::maps::MapState::entries`]).
    pub fn maps(&self) -> MapContents {
        self.vm.maps.iter().map(|m| m.entries()).collect()
    }

    /// The interpreter as the last packet left it.
    pub fn vm(&self) -> &Vm {
        &self.vm
    }
}

/// Builds and seeds an interpreter for `object` and runs program `program` on every packet in
/// order ([`Driver::new`], then [`Driver::run_packets`]).
pub fn run_packets(
    object: &Object,
    seed: &MapSeed,
    options: VmOptions,
    mode: MapMode,
    program: usize,
    packets: &[Vec<u8>],
    meta: &[u8],
) -> Result<Runs, DriveError> {
    Driver::new(object, seed, options, mode)?.run_packets(program, packets, meta)
}
