//! What `BPF_PROG_TEST_RUN` accepts on this host for the context fields a program reads.
//!
//! The kernel (`xdp_convert_md_to_buff`, net/bpf/test_run.c) takes `ingress_ifindex` 0 as the
//! loopback device of the caller's namespace (which the program then sees as its ingress device,
//! with queue 0), and otherwise needs an existing device and `rx_queue_index` below its number of
//! real receive queues (`real_num_rx_queues`, one `queues/rx-N` directory each in sysfs).

use std::path::Path;

/// The loopback device's ifindex (`LOOPBACK_IFINDEX`, include/net/net_namespace.h).
pub const LOOPBACK_IFINDEX: u32 = 1;

/// `(ifindex, receive queues)` of every network device of this namespace, from
/// `/sys/class/net`; the loopback device alone where that cannot be read.
pub fn devices() -> Vec<(u32, u32)> {
    let mut out = Vec::new();
    if let Ok(dir) = std::fs::read_dir("/sys/class/net") {
        for entry in dir.flatten() {
            if let Some(device) = device(&entry.path()) {
                out.push(device);
            }
        }
    }
    if !out.iter().any(|&(i, _)| i == LOOPBACK_IFINDEX) {
        out.push((LOOPBACK_IFINDEX, 1));
    }
    out.sort_unstable();
    out
}

fn device(path: &Path) -> Option<(u32, u32)> {
    let ifindex = std::fs::read_to_string(path.join("ifindex"))
        .ok()?
        .trim()
        .parse()
        .ok()?;
    let queues = std::fs::read_dir(path.join("queues"))
        .ok()?
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().starts_with("rx-"))
        .count() as u32;
    Some((ifindex, queues.max(1)))
}

/// CPUs a program may run on (those online).
pub fn cpus() -> u64 {
    std::thread::available_parallelism().map_or(1, |n| n.get() as u64)
}
