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
    stop: Arc<AtomicBool>,
    /// Accesses so far, published after every batch.
    accesses: Arc<AtomicU64>,
    handle: JoinHandle<std::io::Result<Achieved>>,
}

/// A point in a competitor's run, to measure what it did between two of them.
#[derive(Clone, Copy, Debug)]
pub struct Mark {
    accesses: u64,
    at: Instant,
}

impl Mark {
    /// What the competitor did from `self` to `later`.
    pub fn until(&self, later: &Mark) -> Achieved {
        Achieved {
            accesses: later.accesses.saturating_sub(self.accesses),
            elapsed: later.at.saturating_duration_since(self.at),
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
        let stop = Arc::new(AtomicBool::new(false));
        let ready = Arc::new(AtomicBool::new(false));
        let accesses_so_far = Arc::new(AtomicU64::new(0));
        let (stop_flag, ready_flag) = (stop.clone(), ready.clone());
        let published = accesses_so_far.clone();
        let handle = std::thread::Builder::new()
            .name(format!("membench-cpu{}", self.cpu))
            .spawn(move || -> std::io::Result<Achieved> {
                pin_current_thread(self.cpu)?;
                let mut set = WorkingSet::new(self.working_set, self.pattern, 0x9e37_79b9);
                let mut cursor = set.walk(self.pattern, 0, set.lines as u64);
                ready_flag.store(true, Ordering::Release);
                let start = Instant::now();
                let mut accesses = 0u64;
                while !stop_flag.load(Ordering::Relaxed) {
                    cursor = set.walk(self.pattern, cursor, BATCH);
                    accesses += BATCH;
                    published.store(accesses, Ordering::Relaxed);
                    if self.rate > 0.0 {
                        let due = Duration::from_secs_f64(accesses as f64 / self.rate);
                        if let Some(lead) = due.checked_sub(start.elapsed()) {
                            std::thread::sleep(lead);
                        }
                    }
                }
                Ok(Achieved {
                    accesses,
                    elapsed: start.elapsed(),
                })
            })?;
        while !ready.load(Ordering::Acquire) {
            if handle.is_finished() {
                break;
            }
            std::thread::sleep(Duration::from_millis(1));
        }
        Ok(Running {
            stop,
            accesses: accesses_so_far,
            handle,
        })
    }
}

impl Running {
    /// Where the competitor is now (to within one batch of accesses).
    pub fn mark(&self) -> Mark {
        Mark {
            accesses: self.accesses.load(Ordering::Relaxed),
            at: Instant::now(),
        }
    }

    /// Stops the competitor and reports what it achieved.
    pub fn stop(self) -> std::io::Result<Achieved> {
        self.stop.store(true, Ordering::Relaxed);
        self.handle
            .join()
            .map_err(|_| std::io::Error::other("the competitor thread panicked"))?
    }
}
