//! The simulated device's accelerator, request by request: one service unit visiting request
//! queues in round-robin order and serving one request from each non-empty queue it visits, the
//! discipline of the BlueField-2 regex driver that paper 004 §4.1.1 reports. This is the
//! mechanism the fluid model of [`crate::accel::equilibrium`] summarizes, written independently
//! of it so that one can check the other (tests/it/accelerator.rs).
//!
//! Arrivals of a rate-limited tenant are periodic at its offered rate and dealt to its queues in
//! turn; a backlogged tenant's queues are never empty. Service times are deterministic, the
//! tenant's request time.

use crate::accel::Tenant;
use crate::error::{positive, ColocateError};

/// Each tenant's measured throughput (requests per second) over `horizon` seconds of simulated
/// time, after `warmup` seconds that are not counted (queues of rate-limited tenants start empty).
pub fn simulate_round_robin(
    tenants: &[Tenant],
    warmup: f64,
    horizon: f64,
) -> Result<Vec<f64>, ColocateError> {
    positive("simulated horizon", horizon)?;
    if !(warmup.is_finite() && warmup >= 0.0) {
        return Err(ColocateError::Invalid {
            what: "warm-up".to_string(),
            value: warmup,
            reason: "must be finite and not negative",
        });
    }
    // Validated through the fluid model's checks so both accept the same tenants.
    crate::accel::equilibrium(tenants)?;

    struct Queue {
        tenant: usize,
        waiting: u64,
    }
    let mut queues: Vec<Queue> = Vec::new();
    // Interleave the tenants' queues (tenant 0 queue 0, tenant 1 queue 0, ...): the order only
    // shifts phases, not long-run shares.
    let most = tenants.iter().map(|t| t.queues).max().unwrap_or(0);
    for k in 0..most {
        for (index, tenant) in tenants.iter().enumerate() {
            if k < tenant.queues {
                queues.push(Queue {
                    tenant: index,
                    waiting: 0,
                });
            }
        }
    }
    let queues_of: Vec<Vec<usize>> = (0..tenants.len())
        .map(|t| {
            queues
                .iter()
                .enumerate()
                .filter(|(_, q)| q.tenant == t)
                .map(|(i, _)| i)
                .collect()
        })
        .collect();

    let period: Vec<Option<f64>> = tenants
        .iter()
        .map(|t| t.offered.filter(|&r| r > 0.0).map(|r| 1.0 / r))
        .collect();
    let mut next_arrival: Vec<f64> = period.iter().map(|p| p.unwrap_or(f64::INFINITY)).collect();
    let mut arrivals_dealt = vec![0usize; tenants.len()];
    let mut served = vec![0u64; tenants.len()];
    let end = warmup + horizon;
    let mut now = 0.0;
    let mut cursor = 0usize;

    let mut admit = |now: f64, queues: &mut Vec<Queue>, next_arrival: &mut Vec<f64>| {
        for (tenant, arrival) in next_arrival.iter_mut().enumerate() {
            let Some(period) = period[tenant] else {
                continue;
            };
            while *arrival <= now {
                let own = &queues_of[tenant];
                let slot = own[arrivals_dealt[tenant] % own.len()];
                queues[slot].waiting += 1;
                arrivals_dealt[tenant] += 1;
                *arrival += period;
            }
        }
    };

    while now < end {
        admit(now, &mut queues, &mut next_arrival);
        let count = queues.len();
        let ready = (0..count).map(|k| (cursor + k) % count).find(|&slot| {
            let queue = &queues[slot];
            tenants[queue.tenant].offered.is_none() || queue.waiting > 0
        });
        let Some(slot) = ready else {
            // Idle until the next arrival.
            now = next_arrival.iter().copied().fold(f64::INFINITY, f64::min);
            if !now.is_finite() {
                break;
            }
            continue;
        };
        let tenant = queues[slot].tenant;
        if tenants[tenant].offered.is_some() {
            queues[slot].waiting -= 1;
        }
        let start = now;
        now += tenants[tenant].request_time;
        if start >= warmup && now <= end {
            served[tenant] += 1;
        }
        cursor = (slot + 1) % count;
    }
    Ok(served.iter().map(|&s| s as f64 / horizon).collect())
}
