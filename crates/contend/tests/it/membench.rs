//! The memory competitor: a throttled one holds its rate, an unthrottled stream outruns a
//! dependent chase over the same working set, a paused one does nothing and its pause does not
//! count as running time, and a setting that cannot run is an error.

use linerate_contend::membench::{MemBench, Pattern};
use linerate_contend::pin::available_cpus;
use std::time::Duration;

fn run_for(bench: MemBench, time: Duration) -> f64 {
    let running = bench.start().expect("starts");
    std::thread::sleep(time);
    running.stop().expect("stops").rate()
}

#[test]
fn a_throttled_competitor_holds_its_rate() {
    let _alone = crate::timing_alone();
    let cpu = available_cpus() - 1;
    let bench = MemBench {
        working_set: 8 << 20,
        pattern: Pattern::Stream,
        rate: 2e6,
        cpu,
    };
    let rate = run_for(bench, Duration::from_millis(400));
    assert!((rate - 2e6).abs() < 0.2 * 2e6, "{rate}");
}

#[test]
fn a_stream_outruns_a_chase() {
    let _alone = crate::timing_alone();
    let cpu = available_cpus() - 1;
    let of = |pattern| MemBench {
        working_set: 64 << 20,
        pattern,
        rate: 0.0,
        cpu,
    };
    let stream = run_for(of(Pattern::Stream), Duration::from_millis(300));
    let chase = run_for(of(Pattern::Chase), Duration::from_millis(300));
    // Prefetched sequential lines against one dependent miss at a time.
    assert!(stream > 3.0 * chase, "stream {stream}, chase {chase}");
}

#[test]
fn a_paused_competitor_does_nothing_and_its_pause_is_not_counted() {
    let _alone = crate::timing_alone();
    let bench = MemBench {
        working_set: 8 << 20,
        pattern: Pattern::Stream,
        rate: 2e6,
        cpu: available_cpus() - 1,
    };
    let running = bench.start().expect("starts");
    std::thread::sleep(Duration::from_millis(100));
    running.set_paused(true);
    let paused_at = running.mark();
    std::thread::sleep(Duration::from_millis(300));
    let still = paused_at.until(&running.mark());
    assert_eq!(still.accesses, 0, "{still:?}");
    assert_eq!(still.elapsed, Duration::ZERO, "{still:?}");
    running.set_paused(false);
    std::thread::sleep(Duration::from_millis(100));
    let achieved = running.stop().expect("stops");
    // 200 ms of running at the target rate; the 300 ms pause neither lowers the rate nor, on
    // resuming, makes the thread rush to catch up.
    let ran = achieved.elapsed.as_secs_f64();
    assert!((0.15..0.28).contains(&ran), "{achieved:?}");
    let rate = achieved.rate();
    assert!((rate - 2e6).abs() < 0.2 * 2e6, "{rate}");
}

#[test]
fn a_cpu_beyond_the_mask_is_an_error() {
    let bench = MemBench {
        working_set: 1 << 20,
        pattern: Pattern::Stream,
        rate: 0.0,
        cpu: 1 << 20,
    };
    let err = bench.start().and_then(|r| r.stop()).expect_err("refused");
    assert!(
        err.to_string().contains("beyond the affinity mask"),
        "{err}"
    );
}
