//! The host as a profiling backend (issue 13, backend (a)): `linerate_colocate`'s [`Backend`]
//! on this machine's kernel.
//!
//! A profile point runs an XDP NF (a program of a BPF object, its maps seeded as given) on CPU 0
//! through the traffic driver, over a packet set realizing the traffic profile, while the
//! point's memory competitor ([`crate::membench`]) runs on CPU 1:
//!
//! * **flow count** → that many distinct UDP/IPv4 flows (source address and port), one packet
//!   each, cycled in order, at most [`MAX_FLOWS`];
//! * **packet size** → the frames' length (60 to 3520 bytes: the test run's linear buffer);
//! * **match-to-byte ratio** → nothing here: the host has no regex accelerator, and these NFs
//!   do not read payloads for it.
//!
//! A contended point alternates, trial by trial, the NF beside its running competitor and the
//! NF with the competitor paused ([`crate::membench::Running::set_paused`]); the sample keeps
//! both ([`Sample::solo_beside`]), so that the drop is measured within milliseconds: this
//! shared VM's speed drifts by several percent from one second to the next, more than many of
//! the drops to be measured.
//!
//! The NF is loaded once per flow count and runs one pass over its set (a flow table learns its
//! flows: the state a flow count means); later points of that flow count time the same loaded
//! NF, after one pass of their own frames when their frame length differs from the last (the
//! flows, and so the state they make, are the same at every length). Loading it afresh per
//! point made every point pay for the last one: a dropped table of a million flows is freed by
//! kernel workers, which ran beside the next timings. Loading it afresh per frame length cost
//! the solo grid half its time: a large flow table's bucket array is allocated and zeroed at
//! every load (1.5 s for `xdp_flow_huge`'s 10M entries on a 2-core VM). Loaded NFs are kept up
//! to [`CACHED_FLOWS`] flows in all; past it the least recently used go, and the backend waits
//! for the kernel to free them before timing again.
//!
//! The contention features are what the competitor achieved meanwhile (accesses, bandwidth,
//! counted over its running time) and its working set; this VM has no hardware counters, so no
//! cache occupancy. Accelerator competitors are refused.
//!
//! For training ([`SoloCounters`]): a competitor's counters alone are what it achieves over
//! [`ALONE_WINDOW`] with the NF idle; an NF's own counters alone are unknown (no perf events
//! here), so host models predict against memory benchmarks, not as competitors of other NFs.

use std::collections::HashMap;

use linerate_bpf::contents::MapSeed;
use linerate_bpf::Object;
use linerate_colocate::counters::SoloCounters;
use linerate_colocate::error::ColocateError;
use linerate_colocate::profile::{
    AccessPattern, Backend, ContentionSetting, Features, MemoryCompetitor, Sample, TrafficProfile,
};
use linerate_kernel::{load_object, LoadedObject};

use crate::driver::{pass_object, Timing, TrafficDriver};
use crate::membench::{MemBench, Pattern, Running};
use crate::pin::available_cpus;

/// Most distinct flows a packet set holds (its headers take 64 bytes each in the driver's
/// array: 256 MiB).
pub const MAX_FLOWS: usize = 1 << 22;
/// Frame lengths the test run takes in its linear buffer.
pub const MIN_FRAME: usize = 60;
pub const MAX_FRAME: usize = 3520;

/// Flows of state the loaded NFs hold in all before the least recently used is dropped.
pub const CACHED_FLOWS: usize = 8 << 20;

/// How long the kernel is given to free a dropped NF's state, per thousand flows of it (a
/// million-flow hash table takes its workers a few hundred ms here).
const SETTLE_PER_KFLOW: std::time::Duration = std::time::Duration::from_micros(500);

/// The CPU the competitor runs on (test runs run on CPU 0).
const COMPETITOR_CPU: usize = 1;

/// How long a competitor's counters alone are measured.
pub const ALONE_WINDOW: std::time::Duration = std::time::Duration::from_millis(300);

/// An XDP NF as the host runs it.
pub struct HostNf {
    pub name: String,
    pub object: Object,
    /// Index of the program among the object's.
    pub program: usize,
    /// Map contents seeded when the NF is loaded for a profile (rules, routes; empty for a flow
    /// table).
    pub seed: MapSeed,
}

/// A loaded NF's identity: its name, its program, and the flow count its state holds.
type NfKey = (String, usize, usize);

/// An NF loaded for a flow count, and the frame length its last pass ran with.
struct LoadedNf {
    key: NfKey,
    object: LoadedObject,
    frame_len: usize,
}

/// The host backend.
pub struct HostBackend {
    pass: LoadedObject,
    timing: Timing,
    /// Traffic drivers by (flows, frame length): building one writes every packet's headers.
    drivers: HashMap<(usize, usize), TrafficDriver>,
    /// NFs loaded for a flow count, the most recently used last.
    loaded: Vec<LoadedNf>,
    /// The competitor of the last point, kept running while the next points share its setting
    /// (building a working set of a GiB takes longer than timing an NF).
    competitor: Option<(MemoryCompetitor, Running)>,
    taken: usize,
}

fn backend_error(reason: impl std::fmt::Display) -> ColocateError {
    ColocateError::Backend {
        backend: "host".into(),
        reason: reason.to_string(),
    }
}

/// A UDP/IPv4 frame of `len` bytes of flow `flow` (source 10.a.b.c, source port from the flow).
pub fn udp_frame(flow: u32, len: usize) -> Vec<u8> {
    let mut f = vec![2, 0, 0, 0, 0, 2, 2, 0, 0, 0, 0, 1, 0x08, 0x00];
    let ip_len = u16::try_from(len.saturating_sub(14)).unwrap_or(u16::MAX);
    let [hi, lo] = ip_len.to_be_bytes();
    f.extend_from_slice(&[0x45, 0, hi, lo, 0, 1, 0, 0, 64, 17, 0, 0]);
    f.extend_from_slice(&(0x0a00_0000 | (flow >> 8)).to_be_bytes());
    f.extend_from_slice(&[192, 0, 2, 1]);
    f.extend_from_slice(&(1024 + (flow & 0xff) as u16 * 16).to_be_bytes());
    let [hi, lo] = ip_len.saturating_sub(20).to_be_bytes();
    f.extend_from_slice(&[0x13, 0x88, hi, lo, 0, 0]);
    f.resize(len.max(f.len()), 0xab);
    f
}

/// The packet set of a traffic profile: one frame per flow.
pub fn packet_set(traffic: &TrafficProfile) -> Result<Vec<Vec<u8>>, ColocateError> {
    let (flows, len) = shape(traffic)?;
    Ok((0..flows as u32).map(|flow| udp_frame(flow, len)).collect())
}

/// Flows and frame length of a profile, checked against what the host can realize.
fn shape(traffic: &TrafficProfile) -> Result<(usize, usize), ColocateError> {
    let flows = traffic.flows.round();
    if !(1.0..=MAX_FLOWS as f64).contains(&flows) {
        return Err(ColocateError::Invalid {
            what: "flow count".into(),
            value: traffic.flows,
            reason: "the host realizes 1 to 4194304 flows",
        });
    }
    let len = traffic.packet_size.round();
    if !(MIN_FRAME as f64..=MAX_FRAME as f64).contains(&len) {
        return Err(ColocateError::Invalid {
            what: "packet size".into(),
            value: traffic.packet_size,
            reason: "the host realizes frames of 60 to 3520 bytes",
        });
    }
    Ok((flows as usize, len as usize))
}

impl HostBackend {
    /// A backend timing each point with `timing`. Needs two CPUs (NF and competitor).
    pub fn new(timing: Timing) -> Result<HostBackend, ColocateError> {
        if available_cpus() < 2 {
            return Err(backend_error(
                "co-location needs two CPUs, this machine offers one",
            ));
        }
        Ok(HostBackend {
            pass: pass_object().map_err(backend_error)?,
            timing,
            drivers: HashMap::new(),
            loaded: Vec::new(),
            competitor: None,
            taken: 0,
        })
    }
}

impl Drop for HostBackend {
    /// Stops the competitor still running for the last points.
    fn drop(&mut self) {
        if let Some((_, running)) = self.competitor.take() {
            // Its figures are not wanted any more; a thread that failed has nothing to undo.
            let _ = running.stop();
        }
    }
}

/// Makes `slot` hold a running competitor of setting `wanted` (kept if it already does, else
/// started after stopping the one there), or none.
fn switch_competitor(
    slot: &mut Option<(MemoryCompetitor, Running)>,
    wanted: Option<MemoryCompetitor>,
) -> Result<(), ColocateError> {
    if slot.as_ref().map(|(m, _)| *m) == wanted {
        return Ok(());
    }
    if let Some((_, running)) = slot.take() {
        running.stop().map_err(backend_error)?;
    }
    if let Some(m) = wanted {
        let running = MemBench {
            working_set: m.working_set as usize,
            pattern: match m.pattern {
                AccessPattern::Stream => Pattern::Stream,
                AccessPattern::Chase => Pattern::Chase,
            },
            rate: m.access_rate,
            cpu: COMPETITOR_CPU,
        }
        .start()
        .map_err(backend_error)?;
        *slot = Some((m, running));
    }
    Ok(())
}

/// `nf` loaded for profile `shape`, behind `driver` and having seen every flow of its set
/// once: the one loaded for an earlier point of that flow count (run one pass of `driver`'s
/// frames if the last pass had another length), or loaded, seeded and run one pass now (after
/// dropping the least recently used NFs past [`CACHED_FLOWS`] and letting the kernel free
/// them).
fn loaded_nf<'a>(
    cache: &'a mut Vec<LoadedNf>,
    nf: &HostNf,
    (flows, frame_len): (usize, usize),
    driver: &TrafficDriver,
) -> Result<&'a LoadedObject, ColocateError> {
    let key = (nf.name.clone(), nf.program, flows);
    let one_pass = || driver.run(u32::try_from(flows).unwrap_or(u32::MAX));
    let entry = match cache.iter().position(|loaded| loaded.key == key) {
        Some(at) => {
            let mut entry = cache.remove(at);
            driver
                .attach(&entry.object, nf.program)
                .map_err(backend_error)?;
            if entry.frame_len != frame_len {
                one_pass().map_err(backend_error)?;
                entry.frame_len = frame_len;
            }
            entry
        }
        None => {
            let mut held: usize = cache.iter().map(|loaded| loaded.key.2).sum();
            let mut dropped = 0;
            while held + flows > CACHED_FLOWS && !cache.is_empty() {
                let oldest = cache.remove(0);
                held -= oldest.key.2;
                dropped += oldest.key.2;
            }
            if dropped > 0 {
                std::thread::sleep(
                    SETTLE_PER_KFLOW * u32::try_from(dropped / 1000).unwrap_or(u32::MAX),
                );
            }
            let failed = |e: &dyn std::fmt::Display| backend_error(format!("{}: {e}", nf.name));
            let object = load_object(&nf.object).map_err(|e| failed(&e))?;
            object.seed(&nf.seed).map_err(|e| failed(&e))?;
            driver.attach(&object, nf.program).map_err(backend_error)?;
            one_pass().map_err(backend_error)?;
            LoadedNf {
                key,
                object,
                frame_len,
            }
        }
    };
    cache.push(entry);
    cache
        .last()
        .map(|loaded| &loaded.object)
        .ok_or_else(|| backend_error("the NF cache lost its newest entry"))
}

impl Backend for HostBackend {
    type Nf = HostNf;

    fn profile_one(
        &mut self,
        nf: &HostNf,
        setting: &ContentionSetting,
        traffic: &TrafficProfile,
    ) -> Result<Sample, ColocateError> {
        if !setting.accelerators.is_empty() {
            return Err(backend_error("the host has no accelerators to contend for"));
        }
        let key = shape(traffic)?;
        let traffic_driver = match self.drivers.entry(key) {
            std::collections::hash_map::Entry::Occupied(e) => e.into_mut(),
            std::collections::hash_map::Entry::Vacant(e) => {
                let set = packet_set(traffic)?;
                e.insert(TrafficDriver::new(&set).map_err(backend_error)?)
            }
        };
        let loaded = loaded_nf(&mut self.loaded, nf, key, traffic_driver)?;
        switch_competitor(&mut self.competitor, setting.memory)?;
        let (time, solo_beside, features) = match (&self.competitor, setting.memory) {
            (Some((_, running)), Some(m)) => {
                let before = running.mark();
                let paired = traffic_driver
                    .nf_ns_paired(loaded, nf.program, &self.pass, self.timing, |on| {
                        running.set_paused(!on)
                    })
                    .map_err(backend_error)?;
                let achieved = before.until(&running.mark());
                let features = Features {
                    access_rate: achieved.rate(),
                    bandwidth: achieved.bandwidth(),
                    working_set: m.working_set,
                    occupancy: None,
                };
                (paired.on, Some(paired.off.pps()), features)
            }
            _ => {
                let time = traffic_driver
                    .nf_ns(loaded, nf.program, &self.pass, self.timing)
                    .map_err(backend_error)?;
                (time, None, Features::default())
            }
        };
        self.taken = self.taken.saturating_add(1);
        Ok(Sample {
            nf: nf.name.clone(),
            traffic: *traffic,
            setting: setting.clone(),
            throughput: time.pps(),
            features,
            solo_beside,
        })
    }

    fn samples_taken(&self) -> usize {
        self.taken
    }

    fn name(&self) -> &str {
        "host"
    }
}

impl SoloCounters for HostBackend {
    /// The solo throughput; no counters (this VM has no perf events).
    fn nf_counters(
        &mut self,
        nf: &HostNf,
        traffic: &TrafficProfile,
    ) -> Result<(Option<Features>, f64), ColocateError> {
        let alone = self.profile_one(nf, &ContentionSetting::solo(), traffic)?;
        Ok((None, alone.throughput))
    }

    fn competitor_counters(
        &mut self,
        setting: &ContentionSetting,
    ) -> Result<Features, ColocateError> {
        let Some(memory) = setting.memory else {
            return Ok(Features::default());
        };
        switch_competitor(&mut self.competitor, Some(memory))?;
        let Some((_, running)) = self.competitor.as_ref() else {
            return Ok(Features::default());
        };
        let before = running.mark();
        std::thread::sleep(ALONE_WINDOW);
        let achieved = before.until(&running.mark());
        Ok(Features {
            access_rate: achieved.rate(),
            bandwidth: achieved.bandwidth(),
            working_set: memory.working_set,
            occupancy: None,
        })
    }

    fn accel_co_run(
        &mut self,
        _: &HostNf,
        _: &ContentionSetting,
        _: &TrafficProfile,
    ) -> Result<(f64, Vec<f64>), ColocateError> {
        Err(backend_error("the host has no accelerators to contend for"))
    }
}
