//! Running packets one after another in the kernel: the driver behind `linerate run --kernel`,
//! the example tests and the benchmarks, the counterpart of `linerate_vm::drive`.
//!
//! A [`Driver`] loads an object, seeds its maps and runs packets with `BPF_PROG_TEST_RUN`, either
//! keeping the maps from packet to packet ([`MapMode::Persist`]) or giving every packet freshly
//! seeded maps ([`MapMode::Fresh`]: the object is loaded and seeded anew before each packet after
//! the first). Map contents are returned in the canonical form the interpreter lists
//! ([`normalize_entries`](linerate_bpf::contents::normalize_entries)), read in bulk, so the two
//! engines' results compare directly.

use linerate_bpf::contents::{MapContents, MapMode, MapSeed, SeedError};
use linerate_bpf::Object;

use crate::{check_access, load_object, KernelError, LoadedObject, TestRunInput, TestRunOutput};

/// Why driving packets through the kernel failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DriveError {
    /// BPF is unavailable, the object did not load (see [`DriveError::verifier_log`]) or a map
    /// could not be read.
    #[error(transparent)]
    Kernel(#[from] KernelError),
    #[error(transparent)]
    Seed(#[from] SeedError),
    /// Packet `index` (counted from 0 over the driver's life) failed to run.
    #[error("packet {index}")]
    Packet {
        index: usize,
        #[source]
        source: KernelError,
    },
}

impl DriveError {
    /// The verifier log, if the object was rejected.
    pub fn verifier_log(&self) -> Option<&str> {
        match self {
            DriveError::Kernel(e) | DriveError::Packet { source: e, .. } => e.verifier_log(),
            DriveError::Seed(_) => None,
        }
    }
}

/// A loaded, seeded object that runs packets in a [`MapMode`].
#[derive(Debug)]
pub struct Driver<'a> {
    object: &'a Object,
    seed: &'a MapSeed,
    mode: MapMode,
    loaded: LoadedObject,
    /// Whether `loaded` has run a packet since it was seeded.
    used: bool,
    /// Packets run so far.
    packets: usize,
}

/// What running a list of packets produced.
#[derive(Clone, Debug)]
pub struct Runs {
    /// One single run (`repeat` 1) per packet, in order.
    pub outcomes: Vec<TestRunOutput>,
    /// Every map's entries before the first packet (after seeding), canonical.
    pub initial_maps: MapContents,
    /// Every map's entries after the last packet, canonical.
    pub final_maps: MapContents,
    /// Nanoseconds per run of each packet: of its single run, or with `repeat > 1` the average
    /// over `repeat` further runs made after the final maps were read.
    pub ns_per_run: Vec<u32>,
}

impl<'a> Driver<'a> {
    /// Loads `object` and seeds its maps. Does not probe for BPF first ([`check_access`] does).
    pub fn new(object: &'a Object, seed: &'a MapSeed, mode: MapMode) -> Result<Self, DriveError> {
        let loaded = load_object(object)?;
        loaded.seed(seed)?;
        Ok(Driver {
            object,
            seed,
            mode,
            loaded,
            used: false,
            packets: 0,
        })
    }

    /// Runs program `program` on one packet (metadata `meta` in front of it) `repeat` times
    /// (0 counts as 1); the repeated runs share one buffer, so only `repeat` 1 gives the packet's
    /// own result.
    pub fn run(
        &mut self,
        program: usize,
        packet: &[u8],
        meta: &[u8],
        repeat: u32,
    ) -> Result<TestRunOutput, DriveError> {
        if self.mode == MapMode::Fresh && self.used {
            let loaded = load_object(self.object)?;
            loaded.seed(self.seed)?;
            self.loaded = loaded;
        }
        self.used = true;
        self.loaded.load_program(program)?;
        let index = self.packets;
        self.packets += 1;
        let input = TestRunInput {
            packet: packet.to_vec(),
            meta: meta.to_vec(),
            repeat,
            ..TestRunInput::default()
        };
        self.loaded
            .test_run(program, &input)
            .map_err(|source| DriveError::Packet { index, source })
    }

    /// Runs program `program` on every packet in order, once each, with the maps before the
    /// first and after the last; with `repeat > 1`, then times each packet over `repeat` runs.
    ///
    /// What a packet does comes from a single run: repeated runs share one buffer, so a program
    /// that rewrites the packet (a TTL decrement) would be reported on its own output, and
    /// counters would count every repetition. The timing runs come after the results and the
    /// maps are taken.
    pub fn run_packets(
        &mut self,
        program: usize,
        packets: &[Vec<u8>],
        meta: &[u8],
        repeat: u32,
    ) -> Result<Runs, DriveError> {
        // Loaded before the maps are read: loading writes the declared program-array slots.
        self.loaded.load_program(program)?;
        let initial_maps = self.maps()?;
        let outcomes: Vec<TestRunOutput> = packets
            .iter()
            .map(|packet| self.run(program, packet, meta, 1))
            .collect::<Result<_, _>>()?;
        let final_maps = self.maps()?;
        let ns_per_run = if repeat > 1 {
            packets
                .iter()
                .map(|packet| Ok(self.run(program, packet, meta, repeat)?.duration_ns))
                .collect::<Result<_, DriveError>>()?
        } else {
            outcomes.iter().map(|o| o.duration_ns).collect()
        };
        Ok(Runs {
            outcomes,
            initial_maps,
            final_maps,
            ns_per_run,
        })
    }

    /// Every map's entries now, in the canonical form both engines list, read in bulk
    /// ([`LoadedObject::contents`]).
    pub fn maps(&self) -> Result<MapContents, DriveError> {
        self.object
            .maps
            .iter()
            .enumerate()
            .map(|(i, _)| Ok(self.loaded.contents(i)?))
            .collect()
    }

    /// The object as loaded now.
    pub fn loaded(&self) -> &LoadedObject {
        &self.loaded
    }
}

/// Checks that BPF is available, loads and seeds `object` and runs program `program` on every
/// packet ([`Driver::new`], then [`Driver::run_packets`]).
pub fn run_packets(
    object: &Object,
    seed: &MapSeed,
    mode: MapMode,
    program: usize,
    packets: &[Vec<u8>],
    meta: &[u8],
    repeat: u32,
) -> Result<Runs, DriveError> {
    check_access()?;
    Driver::new(object, seed, mode)?.run_packets(program, packets, meta, repeat)
}
