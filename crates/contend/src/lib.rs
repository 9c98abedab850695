//! Real co-location on this host (issue 13, profiling backend (a); Tomur, paper 004, §6–7 on
//! a SmartNIC, here on the host's two cores).
//!
//! * [`driver`]: a traffic driver. `BPF_PROG_TEST_RUN` repeats one packet, so an NF timed that
//!   way touches one flow's state, always in L1, and no memory competitor could slow it. The
//!   driver is a small XDP program linerate writes: each run it takes the next packet of a
//!   packet set (the traffic profile: flows, sizes, contents) from an array map, copies its
//!   headers over the test packet and tail-calls the NF, unchanged. Its own cost is measured
//!   the same way with an NF that only returns, and subtracted.
//! * [`membench`]: a memory competitor for the other core: a working set walked in a chosen
//!   pattern at a chosen rate, reporting what it achieved.
//! * [`host`]: the host as a profiling backend of `linerate_colocate` (NF on CPU 0 behind the
//!   driver, competitor on CPU 1).
//! * [`plan`]: the traffic space, competitors and training plan of profiling here.
//! * [`pin`]: pinning a thread to one CPU.

pub mod driver;
pub mod host;
pub mod membench;
pub mod pin;
pub mod plan;
