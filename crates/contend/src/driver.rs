//! The traffic driver: an XDP program, written by linerate, that makes `BPF_PROG_TEST_RUN`
//! run an NF over a packet set instead of one packet repeated.
//!
//! Each run the driver
//! 1. takes the index `i` of the next packet from its `cursor` array (and advances it, wrapping
//!    at the set's size),
//! 2. copies the first `copy` bytes of packet `i` (its headers; held in the `packets` array)
//!    over the test packet, whose length is the set's packet length, and
//! 3. tail-calls slot 0 of its `nf` program array, where the NF program sits unchanged.
//!
//! So consecutive runs see different flows (the NF's map state is touched as real traffic would
//! touch it), and an NF that rewrites its packet sees fresh headers next run (no TTL counting
//! down across repeats). What the driver itself costs is measured by attaching a program that
//! only returns XDP_PASS; [`TrafficDriver::nf_ns`] subtracts it.
//!
//! Timings take the slope between two repeat counts, which cancels what a test-run call costs
//! once (the first run is cold: several µs here).

use std::os::fd::BorrowedFd;

use linerate_bpf::emit::{write_object, MapSpec, ObjectSpec, ProgramSpec};
use linerate_bpf::facts::xdp::XDP_PASS;
use linerate_bpf::helpers::id::{MAP_LOOKUP_ELEM, TAIL_CALL};
use linerate_bpf::insn::build::{
    add64, call_helper, exit, jmp, jump, ld_map, ldx, mov64, mov64_reg, st, stx,
};
use linerate_bpf::insn::{Cond, Instruction, Operand, Size};
use linerate_bpf::{MapType, Object, Program};
use linerate_kernel::{load_object, KernelError, LoadedObject, TestRunInput, TestRunOutput};

/// Header bytes copied per run at most: enough for Ethernet, a VLAN tag, IPv6 and TCP with
/// options.
pub const MAX_COPY: usize = 128;

/// Why a driver cannot be built or run.
#[derive(Debug, thiserror::Error)]
pub enum DriverError {
    #[error("the packet set is empty")]
    EmptySet,
    #[error("packet {index} is {len} bytes, the set's packets are {expected}")]
    UnevenSet {
        index: usize,
        len: usize,
        expected: usize,
    },
    #[error("packets of {0} bytes are shorter than an Ethernet header")]
    TooShort(usize),
    #[error("the driver program: {0}")]
    Emit(#[from] linerate_bpf::emit::EmitError),
    #[error("the driver object: {0}")]
    Object(#[from] linerate_bpf::ObjectError),
    #[error(transparent)]
    Kernel(#[from] KernelError),
    #[error("the NF's program {0} has no file descriptor after loading")]
    NoProgram(usize),
}

/// Map indices in the driver object.
const CURSOR: u32 = 0;
const PACKETS: u32 = 1;
const NF: u32 = 2;

/// A loaded driver over one packet set.
pub struct TrafficDriver {
    loaded: LoadedObject,
    /// What every call runs: the set's first packet, and the context and metadata.
    input: TestRunInput,
    packets: usize,
    copy: usize,
}

/// An instruction of the driver, or a jump to its `fail` exit (placed once the code is laid out).
enum Step {
    Insn(Instruction),
    Fail(Cond, u8, Operand),
}

/// The driver's instructions for a set of `packets` packets, copying `copy` bytes (a multiple
/// of 8) per run.
fn driver_program(packets: u32, copy: usize) -> Vec<Instruction> {
    use Step::{Fail, Insn};
    let mut steps = vec![
        Insn(mov64_reg(6, 1)),
        // r7 = cursor[0], the index of this run's packet; cursor[0] = (r7 + 1) mod packets.
        Insn(st(Size::W, 10, -4, 0)),
        Insn(ld_map(1, CURSOR)),
        Insn(mov64_reg(2, 10)),
        Insn(add64(2, -4)),
        Insn(call_helper(MAP_LOOKUP_ELEM)),
        Fail(Cond::Eq, 0, Operand::Imm(0)),
        Insn(ldx(Size::Dw, 7, 0, 0)),
        Insn(mov64_reg(8, 7)),
        Insn(add64(8, 1)),
        Insn(jmp(
            Cond::Lt,
            8,
            i32::try_from(packets).unwrap_or(i32::MAX),
            1,
        )),
        Insn(mov64(8, 0)),
        Insn(stx(Size::Dw, 0, 0, 8)),
        // r0 = &packets[r7]
        Insn(stx(Size::W, 10, -8, 7)),
        Insn(ld_map(1, PACKETS)),
        Insn(mov64_reg(2, 10)),
        Insn(add64(2, -8)),
        Insn(call_helper(MAP_LOOKUP_ELEM)),
        Fail(Cond::Eq, 0, Operand::Imm(0)),
        // The test packet must hold `copy` bytes (the verifier wants the check too).
        Insn(ldx(Size::W, 2, 6, 0)),
        Insn(ldx(Size::W, 3, 6, 4)),
        Insn(mov64_reg(4, 2)),
        Insn(add64(4, i32::try_from(copy).unwrap_or(i32::MAX))),
        Fail(Cond::Gt, 4, Operand::Reg(3)),
    ];
    for word in 0..copy / 8 {
        let off = i16::try_from(8 * word).unwrap_or(i16::MAX);
        steps.push(Insn(ldx(Size::Dw, 5, 0, off)));
        steps.push(Insn(stx(Size::Dw, 2, off, 5)));
    }
    steps.extend([
        Insn(mov64_reg(1, 6)),
        Insn(ld_map(2, NF)),
        Insn(mov64(3, 0)),
        Insn(call_helper(TAIL_CALL)),
    ]);
    // Every step but ld_map is one slot; `fail` follows the last step.
    let slots = |step: &Step| match step {
        Insn(i) => i.slots(),
        Fail(..) => 1,
    };
    let fail_slot: usize = steps.iter().map(slots).sum();
    let mut code = Vec::with_capacity(steps.len() + 2);
    let mut at = 0;
    for step in &steps {
        at += slots(step);
        code.push(match step {
            Insn(i) => *i,
            // The jump's offset counts from the slot after it.
            Fail(cond, dst, src) => jump(
                true,
                *cond,
                *dst,
                *src,
                i16::try_from(fail_slot - at).unwrap_or(i16::MAX),
            ),
        });
    }
    // fail: the NF did not run (or the tail call failed): XDP_ABORTED.
    code.extend([mov64(0, 0), exit()]);
    code
}

/// Bytes of a packet of `len` bytes the driver writes before each run: `len`, at most
/// [`MAX_COPY`], rounded down to whole 8-byte words.
pub fn restored_bytes(len: usize) -> usize {
    len.min(MAX_COPY) / 8 * 8
}

/// A program that only returns XDP_PASS, loaded: what the driver costs with no NF behind it
/// (and, timed alone, what a test run costs with no program work).
pub fn pass_object() -> Result<LoadedObject, KernelError> {
    let program = Program::from_instructions("pass", "xdp", &[mov64(0, XDP_PASS as i32), exit()]);
    let loaded = load_object(&Object::with_programs("pass", vec![program], Vec::new()))?;
    loaded.load_program(0)?;
    Ok(loaded)
}

impl TrafficDriver {
    /// Builds and loads a driver over `set` (packets of one length, at least 14 bytes).
    pub fn new(set: &[Vec<u8>]) -> Result<TrafficDriver, DriverError> {
        let first = set.first().ok_or(DriverError::EmptySet)?;
        let len = first.len();
        if len < 14 {
            return Err(DriverError::TooShort(len));
        }
        if let Some((index, p)) = set.iter().enumerate().find(|(_, p)| p.len() != len) {
            return Err(DriverError::UnevenSet {
                index,
                len: p.len(),
                expected: len,
            });
        }
        let copy = restored_bytes(len);
        let packets = u32::try_from(set.len()).unwrap_or(u32::MAX);
        let maps = vec![
            MapSpec::new("cursor", MapType::ARRAY, 4, 8, 1),
            MapSpec::new("packets", MapType::ARRAY, 4, copy.max(8) as u32, packets),
            MapSpec::new("nf", MapType::PROG_ARRAY, 4, 4, 1),
        ];
        let program = ProgramSpec::xdp("driver", driver_program(packets, copy));
        let bytes = write_object(&ObjectSpec::new(vec![program], maps))?;
        let object = linerate_bpf::read_object(&bytes, "driver")?;
        let loaded = load_object(&object)?;
        for (i, p) in set.iter().enumerate() {
            let mut header = p[..copy].to_vec();
            header.resize(copy.max(8), 0);
            loaded.update(PACKETS as usize, &(i as u32).to_le_bytes(), &header)?;
        }
        Ok(TrafficDriver {
            loaded,
            input: TestRunInput {
                packet: first.clone(),
                discard_records: true,
                ..Default::default()
            },
            packets: set.len(),
            copy,
        })
    }

    /// Runs with this context: metadata before the packet, the receiving device and queue (as
    /// [`TestRunInput`] documents them). The driver leaves metadata as the NF left it.
    pub fn with_context(
        mut self,
        meta: Vec<u8>,
        ingress_ifindex: u32,
        rx_queue_index: u32,
    ) -> Self {
        self.input.meta = meta;
        self.input.ingress_ifindex = ingress_ifindex;
        self.input.rx_queue_index = rx_queue_index;
        self
    }

    /// Packets in the set.
    pub fn packets(&self) -> usize {
        self.packets
    }

    /// Bytes of its packet the driver writes before each run (the rest stays as the NF left
    /// it): [`restored_bytes`] of the packet length.
    pub fn restored_len(&self) -> usize {
        self.copy
    }

    /// Puts program `program` of `nf` behind the driver (loading it if needed).
    pub fn attach(&self, nf: &LoadedObject, program: usize) -> Result<(), DriverError> {
        nf.load_program(program)?;
        let fd: BorrowedFd<'_> = nf
            .program_fd(program)
            .ok_or(DriverError::NoProgram(program))?;
        self.loaded.set_foreign_program(NF as usize, 0, fd)?;
        Ok(())
    }

    /// One test-run call of `repeat` runs (each on the next packet of the set).
    pub fn run(&self, repeat: u32) -> Result<TestRunOutput, DriverError> {
        let input = TestRunInput {
            repeat,
            ..self.input.clone()
        };
        Ok(self.loaded.test_run(0, &input)?)
    }

    /// The cost of one more run in ns: the slope between calls of `short` and `long` runs.
    fn slope(&self, short: u32, long: u32) -> Result<f64, DriverError> {
        let long = long.max(short + 1);
        let total = |repeat: u32| -> Result<f64, DriverError> {
            Ok(f64::from(self.run(repeat)?.duration_ns) * f64::from(repeat))
        };
        let (t_short, t_long) = (total(short)?, total(long)?);
        Ok((t_long - t_short) / f64::from(long - short))
    }

    /// The cost of one more run in ns: the median over `trials` of the slope between calls of
    /// `short` and `long` runs.
    pub fn ns_per_run(&self, trials: usize, short: u32, long: u32) -> Result<f64, DriverError> {
        let slopes = (0..trials.max(1))
            .map(|_| self.slope(short, long))
            .collect::<Result<Vec<f64>, DriverError>>()?;
        Ok(median(slopes))
    }

    /// What program `program` of `nf` costs per packet of the set, in ns: the driver's runs with
    /// the NF behind it, minus its runs with `pass` behind it (the driver's own cost). Each
    /// trial times both, one right after the other, so that a slow spell of this shared machine
    /// (or a competitor's phase) lands on both sides of a difference rather than on one whole
    /// series; the NF's time is the median of the trials' differences. The NF stays attached
    /// afterwards.
    pub fn nf_ns(
        &self,
        nf: &LoadedObject,
        program: usize,
        pass: &LoadedObject,
        timing: Timing,
    ) -> Result<NfTime, DriverError> {
        let (mut drivers, mut differences) = (Vec::new(), Vec::new());
        for _ in 0..timing.trials.max(1) {
            let (driver, difference) = self.trial(nf, program, pass, timing)?;
            drivers.push(driver);
            differences.push(difference);
        }
        Ok(NfTime::of(drivers, differences))
    }

    /// [`TrafficDriver::nf_ns`] under two conditions that `set(true)` and `set(false)` put in
    /// place (a competitor running and paused), alternating within every trial (the order
    /// flips from trial to trial): the machine's drift over seconds lands on both, so their
    /// ratio is measured far closer than two separate timings would give it. `set(false)` is
    /// in place afterwards.
    pub fn nf_ns_paired(
        &self,
        nf: &LoadedObject,
        program: usize,
        pass: &LoadedObject,
        timing: Timing,
        mut set: impl FnMut(bool),
    ) -> Result<Paired, DriverError> {
        let mut series = [(Vec::new(), Vec::new()), (Vec::new(), Vec::new())];
        for trial in 0..timing.trials.max(1) {
            let order = if trial % 2 == 0 {
                [true, false]
            } else {
                [false, true]
            };
            for condition in order {
                set(condition);
                let (driver, difference) = self.trial(nf, program, pass, timing)?;
                let (drivers, differences) = &mut series[usize::from(condition)];
                drivers.push(driver);
                differences.push(difference);
            }
        }
        set(false);
        let [(off_drivers, off), (on_drivers, on)] = series;
        Ok(Paired {
            on: NfTime::of(on_drivers, on),
            off: NfTime::of(off_drivers, off),
        })
    }

    /// One trial: the driver's cost with `pass` behind it, and the NF's cost over it.
    fn trial(
        &self,
        nf: &LoadedObject,
        program: usize,
        pass: &LoadedObject,
        timing: Timing,
    ) -> Result<(f64, f64), DriverError> {
        self.attach(pass, 0)?;
        let driver = self.slope(timing.short, timing.long)?;
        self.attach(nf, program)?;
        let total = self.slope(timing.short, timing.long)?;
        Ok((driver, total - driver))
    }
}

/// The median of a non-empty series (the upper one of an even count).
fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    values.get(values.len() / 2).copied().unwrap_or(f64::NAN)
}

/// How to time: trials, and the two repeat counts whose slope is the cost of a run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Timing {
    pub trials: usize,
    pub short: u32,
    pub long: u32,
}

impl Default for Timing {
    fn default() -> Timing {
        Timing {
            trials: 21,
            short: 1_000,
            long: 11_000,
        }
    }
}

/// An NF's time per packet with the driver's share.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct NfTime {
    /// Driver and NF, ns per run (the driver's median plus the NF's median difference).
    pub total: f64,
    /// The driver alone (with an NF that only returns), ns per run.
    pub driver: f64,
}

/// An NF timed under two alternating conditions ([`TrafficDriver::nf_ns_paired`]).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Paired {
    /// With `set(true)` in place.
    pub on: NfTime,
    /// With `set(false)` in place.
    pub off: NfTime,
}

impl NfTime {
    /// From each trial's driver time and NF-minus-driver difference: their medians.
    fn of(drivers: Vec<f64>, differences: Vec<f64>) -> NfTime {
        let driver = median(drivers);
        NfTime {
            total: driver + median(differences),
            driver,
        }
    }

    /// The NF's own ns per packet.
    pub fn nf(&self) -> f64 {
        (self.total - self.driver).max(0.0)
    }

    /// The NF's packet rate on one core, packets per second.
    pub fn pps(&self) -> f64 {
        1e9 / self.nf().max(f64::MIN_POSITIVE)
    }
}
