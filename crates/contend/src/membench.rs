//! A memory competitor (Tomur's mem-bench, paper 004 §6, written for linerate): a thread pinned
//! to one CPU walks a working set in a chosen pattern, at full speed or throttled to a rate,
//! until stopped, and reports what it achieved.
//!
//! * [`Pattern::Stream`] reads and writes 8 bytes per 64-byte cache line in address order (the
//!   hardware prefetcher helps: bandwidth pressure).
//! * [`Pattern::Chase`] follows a random cyclic permutation of cache lines (each access depends
//!   on the previous one: latency-bound, defeats prefetching, occupies the cache).
//!
//! The rate is a target in cache-line accesses per second; the thread checks the clock every
//! [`BATCH`] accesses and sleeps off any lead. 0 means unthrottled.
//!
//! A running competitor can be paused (its thread sleeps, its working set stays built) and
//! resumed, so that an NF's time alone and beside it can alternate within milliseconds: on a
//! shared machine whose speed drifts by several percent over seconds, only such pairs measure a
//! drop of a few percent. What it achieved counts its running time only.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crate::pin::pin_current_thread;

/// Bytes per cache line.
pub const LINE: usize = 64;
/// Accesses between clock checks.
pub const BATCH: u64 = 4096;

/// How the working set is walked.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Pattern {
    Stream,
    Chase,
}

/// A competitor's setting.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct MemBench {
    /// Working-set size in bytes (rounded up to whole cache lines, at least 2).
    pub working_set: usize,
    pub pattern: Pattern,
    /// Target cache-line accesses per second; 0 = as fast as it goes.
    pub rate: f64,
    /// The CPU it runs on.
    pub cpu: usize,
}

/// A running competitor.
pub struct Running {
    shared: Arc<Shared>,
    handle: JoinHandle<std::io::Result<Achieved>>,
}

/// What the competitor's thread and its owner share.
#[derive(Default)]
struct Shared {
    stop: AtomicBool,
    /// Set by the owner to pause; `idle` answers once the thread has stopped walking.
    pause: AtomicBool,
    idle: AtomicBool,
    /// Accesses so far, published after every batch.
    accesses: AtomicU64,
    /// Nanoseconds spent walking (not paused) up to the last published batch.
    running_ns: AtomicU64,
}

/// How long a paused competitor sleeps between looks at its flags.
const PAUSED_POLL: Duration = Duration::from_micros(50);

/// A point in a competitor's run, to measure what it did between two of them.
#[derive(Clone, Copy, Debug)]
pub struct Mark {
    accesses: u64,
    running_ns: u64,
}

impl Mark {
    /// What the competitor did from `self` to `later` while it ran (paused time left out).
    pub fn until(&self, later: &Mark) -> Achieved {
        Achieved {
            accesses: later.accesses.saturating_sub(self.accesses),
            elapsed: Duration::from_nanos(later.running_ns.saturating_sub(self.running_ns)),
        }
    }
}

/// What a competitor did while it ran.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Achieved {
    /// Cache-line accesses.
    pub accesses: u64,
    pub elapsed: Duration,
}

impl Achieved {
    /// Accesses per second.
    pub fn rate(&self) -> f64 {
        self.accesses as f64 / self.elapsed.as_secs_f64().max(1e-9)
    }

    /// Bytes per second of cache lines touched.
    pub fn bandwidth(&self) -> f64 {
        self.rate() * LINE as f64
    }
}

/// The working set: one `u64` per cache line used (the next line's index for a chase), the rest
/// of each line padding.
struct WorkingSet {
    words: Vec<u64>,
    lines: usize,
}

const WORDS_PER_LINE: usize = LINE / 8;

impl WorkingSet {
    fn new(bytes: usize, pattern: Pattern, seed: u64) -> WorkingSet {
        let lines = bytes.div_ceil(LINE).max(2);
        let mut words = vec![0u64; lines * WORDS_PER_LINE];
        if pattern == Pattern::Chase {
            // Sattolo's algorithm: a random permutation that is one cycle through every line.
            let mut order: Vec<usize> = (0..lines).collect();
            let mut state = seed | 1;
            for i in (1..lines).rev() {
                state ^= state << 13;
                state ^= state >> 7;
                state ^= state << 17;
                let j = (state % i as u64) as usize;
                order.swap(i, j);
            }
            for (i, &line) in order.iter().enumerate() {
                let next = order[(i + 1) % lines];
                words[line * WORDS_PER_LINE] = next as u64;
            }
        }
        WorkingSet { words, lines }
    }

    /// `count` accesses from `cursor`; returns the new cursor.
    fn walk(&mut self, pattern: Pattern, mut cursor: usize, count: u64) -> usize {
        match pattern {
            Pattern::Stream => {
                for _ in 0..count {
                    let w = &mut self.words[cursor * WORDS_PER_LINE];
                    *w = w.wrapping_add(1);
                    cursor += 1;
                    if cursor == self.lines {
                        cursor = 0;
                    }
                }
            }
            Pattern::Chase => {
                for _ in 0..count {
                    cursor = self.words[cursor * WORDS_PER_LINE] as usize % self.lines;
                }
            }
        }
        std::hint::black_box(cursor)
    }
}

impl MemBench {
    /// Starts the competitor on its CPU; it runs until [`Running::stop`]. Returns once the
    /// working set is built and walked once (warm), so that timings after it see contention.
    pub fn start(self) -> std::io::Result<Running> {
        let shared = Arc::new(Shared::default());
        let ready = Arc::new(AtomicBool::new(false));
        let (theirs, ready_flag) = (shared.clone(), ready.clone());
        let handle = std::thread::Builder::new()
            .name(format!("membench-cpu{}", self.cpu))
            .spawn(move || -> std::io::Result<Achieved> {
                pin_current_thread(self.cpu)?;
                let mut set = WorkingSet::new(self.working_set, self.pattern, 0x9e37_79b9);
                let mut cursor = set.walk(self.pattern, 0, set.lines as u64);
                ready_flag.store(true, Ordering::Release);
                let (mut accesses, mut ran) = (0u64, Duration::ZERO);
                // The stretch of running since the last resume: the rate is kept within it.
                let (mut since, mut stretch) = (Instant::now(), 0u64);
                while !theirs.stop.load(Ordering::Relaxed) {
                    if theirs.pause.load(Ordering::Acquire) {
                        ran += since.elapsed();
                        theirs.idle.store(true, Ordering::Release);
                        while theirs.pause.load(Ordering::Acquire)
                            && !theirs.stop.load(Ordering::Relaxed)
                        {
                            std::thread::sleep(PAUSED_POLL);
                        }
                        theirs.idle.store(false, Ordering::Release);
                        (since, stretch) = (Instant::now(), 0);
                        continue;
                    }
                    cursor = set.walk(self.pattern, cursor, BATCH);
                    accesses += BATCH;
                    stretch += BATCH;
                    let running = ran + since.elapsed();
                    theirs.accesses.store(accesses, Ordering::Relaxed);
                    theirs.running_ns.store(
                        u64::try_from(running.as_nanos()).unwrap_or(u64::MAX),
                        Ordering::Relaxed,
                    );
                    if self.rate > 0.0 {
                        let due = Duration::from_secs_f64(stretch as f64 / self.rate);
                        if let Some(lead) = due.checked_sub(since.elapsed()) {
                            std::thread::sleep(lead);
                        }
                    }
                }
                if !theirs.idle.load(Ordering::Acquire) {
                    ran += since.elapsed();
                }
                Ok(Achieved {
                    accesses,
                    elapsed: ran,
                })
            })?;
        while !ready.load(Ordering::Acquire) {
            if handle.is_finished() {
                break;
            }
            std::thread::sleep(Duration::from_millis(1));
        }
        Ok(Running { shared, handle })
    }
}

impl Running {
    /// Where the competitor is now (to within one batch of accesses).
    pub fn mark(&self) -> Mark {
        Mark {
            accesses: self.shared.accesses.load(Ordering::Relaxed),
            running_ns: self.shared.running_ns.load(Ordering::Relaxed),
        }
    }

    /// Pauses (`true`) or resumes the competitor; returns once it has stopped or started
    /// walking again. A thread that has ended (failed) is not waited for.
    pub fn set_paused(&self, paused: bool) {
        self.shared.pause.store(paused, Ordering::Release);
        while self.shared.idle.load(Ordering::Acquire) != paused && !self.handle.is_finished() {
            std::hint::spin_loop();
        }
    }

    /// Stops the competitor and reports what it achieved.
    pub fn stop(self) -> std::io::Result<Achieved> {
        self.shared.stop.store(true, Ordering::Relaxed);
        self.handle
            .join()
            .map_err(|_| std::io::Error::other("the competitor thread panicked"))?
    }
}
