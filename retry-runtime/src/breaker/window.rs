//! The breaker's failure-ratio window: outcomes counted in time buckets packed into atomics.

use super::word::Bucket;
use super::{BUCKETS, CircuitBreaker, ticks};
use crate::clock;
use crate::sync::Ordering;

/// The failure-ratio rule: open when, within the window, at least `min_calls` outcomes were
/// recorded and failures make up at least `ppm` millionths of them.
#[derive(Clone, Copy, Debug)]
pub(super) struct RatioRule {
    pub(super) ppm: u64,
    pub(super) min_calls: u32,
    pub(super) bucket: i64,
}

impl CircuitBreaker {
    /// Count one outcome in the window; return the window's (calls, failures) when it failed.
    pub(super) fn window_record(&self, rule: RatioRule, failed: bool) -> (u64, u64) {
        let epoch = ticks(clock::now()).div_euclid(rule.bucket);
        let tag = (epoch as u64) & Bucket::TAG_MASK;
        let slot = &self.window[epoch.rem_euclid(BUCKETS as i64) as usize];
        let mut cur = slot.load(Ordering::Relaxed);
        loop {
            let b = Bucket::unpack(cur);
            let (calls, failures) = if b.tag == tag {
                (b.calls, b.failures)
            } else {
                (0, 0)
            };
            if calls >= Bucket::COUNT_MAX {
                break;
            }
            let next = Bucket {
                tag,
                calls: calls + 1,
                failures: failures + u64::from(failed),
            };
            match slot.compare_exchange_weak(cur, next.pack(), Ordering::Relaxed, Ordering::Relaxed)
            {
                Ok(_) => break,
                Err(actual) => cur = actual,
            }
        }
        if !failed {
            return (0, 0);
        }
        self.window.iter().fold((0, 0), |(calls, failures), slot| {
            let b = Bucket::unpack(slot.load(Ordering::Relaxed));
            if tag.wrapping_sub(b.tag) & Bucket::TAG_MASK < BUCKETS as u64 {
                (calls + b.calls, failures + b.failures)
            } else {
                (calls, failures)
            }
        })
    }

    pub(super) fn clear_window(&self) {
        if self.has_ratio() {
            for slot in &self.window {
                slot.store(0, Ordering::Relaxed);
            }
        }
    }
}
