//! Time: the real clock, tokio's (pausable) clock, and this thread's virtual clock.
//!
//! Every reading of "now" in the crate goes through [`now`], so a test controls time in one of
//! two ways and every feature follows it:
//! - under `#[tokio::test(start_paused = true)]`, `now` is tokio's paused clock (with the
//!   `tokio` feature), and async sleeps are tokio sleeps;
//! - inside [`testing::record_sleeps`](crate::testing::record_sleeps), `now` is a virtual clock
//!   on this thread that sync sleeps advance instead of sleeping.

use std::cell::{Cell, RefCell};
use std::time::{Duration, Instant};

struct Virtual {
    origin: Instant,
    advanced: Duration,
}

thread_local! {
    static VIRTUAL: Cell<Option<(Instant, Duration)>> = const { Cell::new(None) };
    static RECORDED: RefCell<Vec<Duration>> = const { RefCell::new(Vec::new()) };
}

/// The current instant on the clock this thread is following.
#[inline]
pub fn now() -> Instant {
    if let Some((origin, advanced)) = VIRTUAL.with(Cell::get) {
        return Virtual { origin, advanced }.now();
    }
    real_now()
}

#[cfg(feature = "tokio")]
#[inline]
fn real_now() -> Instant {
    // Without tokio's `test-util` feature, or outside a paused runtime, this is the system's
    // monotonic clock.
    tokio::time::Instant::now().into_std()
}

#[cfg(not(feature = "tokio"))]
#[inline]
fn real_now() -> Instant {
    Instant::now()
}

impl Virtual {
    fn now(&self) -> Instant {
        saturating_add(self.origin, self.advanced)
    }
}

/// `instant + d`, or the latest instant this platform represents on the way there: virtual time
/// never runs backwards, however long the recorded sleeps.
pub(crate) fn saturating_add(instant: Instant, d: Duration) -> Instant {
    if let Some(later) = instant.checked_add(d) {
        return later;
    }
    // Binary search for the largest representable step: at most ~94 halvings of a Duration.
    let (mut reached, mut step) = (instant, d);
    while !step.is_zero() {
        match reached.checked_add(step) {
            Some(later) => reached = later,
            None => step /= 2,
        }
    }
    reached
}

/// Block this thread for `d`, or advance the virtual clock by `d` inside `record_sleeps`.
// Inlined, so that a zero wait on a real clock (the retry benchmarks' case) costs one
// thread-local read and no call; the virtual clock stays out of line.
#[inline]
pub fn sleep_sync(d: Duration) {
    if VIRTUAL.with(|v| v.get().is_some()) {
        return sleep_virtual(d);
    }
    if !d.is_zero() {
        std::thread::sleep(d);
    }
}

#[cold]
fn sleep_virtual(d: Duration) {
    if let Some((origin, advanced)) = VIRTUAL.with(Cell::get) {
        VIRTUAL.with(|v| v.set(Some((origin, advanced.saturating_add(d)))));
        RECORDED.with(|r| r.borrow_mut().push(d));
    }
}

/// Run `f` with this thread's sleeps made virtual; return what it returned and the sleeps.
pub(crate) fn with_virtual_time<R>(f: impl FnOnce() -> R) -> (R, Vec<Duration>) {
    struct Restore {
        clock: Option<(Instant, Duration)>,
        recorded: Vec<Duration>,
    }
    impl Drop for Restore {
        fn drop(&mut self) {
            VIRTUAL.with(|v| v.set(self.clock));
            let outer = std::mem::take(&mut self.recorded);
            RECORDED.with(|r| *r.borrow_mut() = outer);
        }
    }
    // A nested `record_sleeps` starts its own log and continues the outer virtual time.
    let outer_clock = VIRTUAL.with(Cell::get);
    let start = match outer_clock {
        Some((origin, advanced)) => Virtual { origin, advanced }.now(),
        None => real_now(),
    };
    let outer_recorded = RECORDED.with(|r| std::mem::take(&mut *r.borrow_mut()));
    let restore = Restore {
        clock: outer_clock,
        recorded: outer_recorded,
    };
    VIRTUAL.with(|v| v.set(Some((start, Duration::ZERO))));
    let out = f();
    let slept = RECORDED.with(|r| std::mem::take(&mut *r.borrow_mut()));
    drop(restore);
    (out, slept)
}

/// The sleep the async loop awaits by default: tokio's, skipping zero-length waits (tokio rounds
/// a zero sleep up to its 1 ms timer tick on a real clock).
#[cfg(feature = "tokio")]
pub async fn sleep(d: Duration) {
    if !d.is_zero() {
        tokio::time::sleep(d).await;
    }
}

/// tokio's sleep itself, for loops that skip zero-length waits before calling it. Awaiting this
/// rather than [`sleep`] keeps an `async fn` wrapper's own state out of every retry future.
#[cfg(feature = "tokio")]
#[inline]
pub fn tokio_sleep(d: Duration) -> tokio::time::Sleep {
    tokio::time::sleep(d)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn saturating_add_never_goes_backwards() {
        let now = Instant::now();
        let far = saturating_add(now, Duration::MAX);
        assert!(far > now);
        assert_eq!(saturating_add(far, Duration::from_secs(1)), far);
        assert_eq!(
            saturating_add(now, Duration::from_secs(1)),
            now + Duration::from_secs(1)
        );
    }
}
