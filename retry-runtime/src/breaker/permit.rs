//! [`CircuitPermit`]: permission for one call through a breaker, consumed with its outcome.

use super::CircuitBreaker;
use crate::class::ErrorClass;
use std::fmt;

#[derive(Clone, Copy)]
pub(super) enum Outcome {
    Success,
    Failure,
    Neither,
}

/// Permission for one call through a [`CircuitBreaker`], from
/// [`try_acquire`](CircuitBreaker::try_acquire). Consume it with the call's outcome.
///
/// Dropping it unconsumed releases it as neither success nor failure (a cancelled call
/// tells nothing about the dependency), or as a failure if the thread is panicking. Permits
/// the crate's own retry loops hold are the exception: the loop records a panic against the
/// one attempt that panicked, so its other permits dropped by the same unwind (a hedge's
/// siblings, a call beside it in a `join!`) count as neither.
#[must_use = "a permit records nothing unless given the call's outcome"]
pub struct CircuitPermit<'b> {
    breaker: Option<&'b CircuitBreaker>,
    /// The breaker's generation when the permit was given (30 bits, see `Word`), in the top
    /// bit whether it is a probe, and in the next whether a retry loop holds it. One word, not
    /// a `u32` and a `bool`: moving the permit into a call then read the `bool` back with a
    /// wide load after a narrow store, a store-to-load forwarding stall on every protected call.
    /// In the upper half, for a `PerKey` entry, the key's tenancy the permit was given under
    /// (0 for a breaker of its own): still one word beside the reference, as before it was
    /// added (two `u32` fields made `try_acquire`'s result go through memory on every call on a
    /// `static` breaker; benches/README.md, `protection/breaker`).
    stamp: u64,
}

const PROBE: u64 = 1 << 31;
/// Held by one of the crate's loops, which records a panic itself (its `PanicGuard`).
const MANAGED: u64 = 1 << 30;
const GENERATION: u64 = MANAGED - 1;

impl<'b> CircuitPermit<'b> {
    #[inline]
    pub(super) fn new(
        breaker: &'b CircuitBreaker,
        generation: u32,
        probe: bool,
        tenancy: u32,
    ) -> Self {
        debug_assert!(
            u64::from(generation) & !GENERATION == 0,
            "generations are 30 bits"
        );
        CircuitPermit {
            breaker: Some(breaker),
            stamp: u64::from(generation) | if probe { PROBE } else { 0 } | u64::from(tenancy) << 32,
        }
    }

    /// A permit that records nothing: its call leased a `PerKey` entry that has served another
    /// key since, so its key has no breaker now (as for a key the table no longer remembers,
    /// whose next call starts from a closed one).
    #[cold]
    pub(super) fn lapsed() -> Self {
        CircuitPermit {
            breaker: None,
            stamp: 0,
        }
    }

    /// Whether this call is a half-open probe.
    pub fn is_probe(&self) -> bool {
        self.stamp & PROBE != 0
    }

    #[inline]
    fn generation(&self) -> u32 {
        (self.stamp & GENERATION) as u32
    }

    #[inline]
    fn tenancy(&self) -> u32 {
        (self.stamp >> 32) as u32
    }

    /// Hand the permit to a retry loop that records panics itself: dropped unconsumed, even
    /// during an unwind, it counts as neither success nor failure.
    #[inline]
    pub(crate) fn managed(mut self) -> Self {
        self.stamp |= MANAGED;
        self
    }

    /// The call succeeded (or got an answer: a permanent error).
    #[inline]
    pub fn succeeded(mut self) {
        self.finish(Outcome::Success);
    }

    /// The call failed in a way worth retrying: the dependency may be unhealthy.
    pub fn failed(mut self) {
        self.finish(Outcome::Failure);
    }

    /// Record a failed call by its class: a transient or idempotent-only error is a failure;
    /// a permanent one or an "already done" is an answer from a healthy dependency, so it
    /// counts as a success.
    pub fn record(self, class: ErrorClass) {
        if class.is_failure() {
            self.failed()
        } else {
            self.succeeded()
        }
    }

    #[inline]
    fn finish(&mut self, outcome: Outcome) {
        let Some(breaker) = self.breaker.take() else {
            return;
        };
        match (self.is_probe(), outcome) {
            (false, Outcome::Success) => breaker.closed_success(self.tenancy()),
            (false, Outcome::Failure) => breaker.closed_failure(self.generation(), self.tenancy()),
            (false, Outcome::Neither) => {}
            (true, outcome) => breaker.probe_done(self.generation(), outcome, self.tenancy()),
        }
    }
}

impl Drop for CircuitPermit<'_> {
    #[inline]
    fn drop(&mut self) {
        if self.breaker.is_some() {
            let outcome = if self.stamp & MANAGED == 0 && std::thread::panicking() {
                Outcome::Failure
            } else {
                Outcome::Neither
            };
            self.finish(outcome);
        }
    }
}

impl fmt::Debug for CircuitPermit<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CircuitPermit")
            .field("probe", &self.is_probe())
            .field("pending", &self.breaker.is_some())
            .finish()
    }
}

/// loom models of the hedge's permit handling (a managed permit is crate-private, so they live
/// here; the others are in `tests/loom.rs`, which says how to run both).
#[cfg(all(test, loom))]
mod loom_models {
    use crate::clock;
    use crate::testing::record_sleeps;
    use crate::{CircuitBreaker, CircuitState};
    use loom::thread;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::time::Duration;

    const OPEN_FOR: Duration = Duration::from_secs(10);

    /// Every interleaving with at most `bound` preemptions (`LOOM_MAX_PREEMPTIONS` overrides
    /// it), on the test thread's virtual clock (loom's threads all run on that OS thread, so
    /// they share the clock); how many there were, and how long they took, is printed (shown
    /// with `--nocapture`).
    fn model(bound: usize, f: impl Fn() + Sync + Send + 'static) {
        let mut builder = loom::model::Builder::new();
        builder.preemption_bound = builder.preemption_bound.or(Some(bound));
        let start = std::time::Instant::now();
        let runs = std::sync::Arc::new(AtomicUsize::new(0));
        let counted = std::sync::Arc::clone(&runs);
        builder.check(move || {
            counted.fetch_add(1, Ordering::Relaxed);
            record_sleeps(&f);
        });
        let caller = std::thread::current();
        let name = caller.name().unwrap_or("model");
        eprintln!(
            "{name}: {} interleavings in {:?}",
            runs.load(Ordering::Relaxed),
            start.elapsed()
        );
    }

    /// A half-open breaker (tripped, cool-down over) two probes can be taken from, whose
    /// model threads can borrow it.
    fn half_open(hook: fn(CircuitState, CircuitState)) -> &'static CircuitBreaker {
        let breaker: &'static CircuitBreaker = Box::leak(Box::new(
            CircuitBreaker::new(1, OPEN_FOR)
                .half_open_max(2)
                .on_state_change(hook),
        ));
        breaker.try_acquire().unwrap().failed();
        clock::sleep_sync(OPEN_FOR);
        assert_eq!(breaker.state(), CircuitState::HalfOpen);
        breaker
    }

    /// The probe slots free once the breaker is half-open again (tripped first if closed).
    fn free_probe_slots(breaker: &CircuitBreaker) -> usize {
        if breaker.state() == CircuitState::Closed {
            breaker.try_acquire().unwrap().failed();
            clock::sleep_sync(OPEN_FOR);
        }
        assert_eq!(breaker.state(), CircuitState::HalfOpen);
        let probes: Vec<_> = std::iter::from_fn(|| breaker.try_acquire().ok()).collect();
        probes.len()
    }

    /// A hedge's two probes (both held by the loop, so managed) released on two threads with no
    /// outcome: one while its thread unwinds (the loop records the panic itself), its sibling as
    /// a cancelled call. Both count as neither: the breaker stays half-open, no state change,
    /// and both slots are free again.
    ///
    /// The sibling must be managed here, as it is in the hedge: loom runs its threads on one OS
    /// thread, whose panic count `std::thread::panicking` reads, so an unmanaged permit dropped
    /// on the other model thread mid-unwind would see a panic that is not its own.
    #[test]
    fn hedged_probes_dropped_on_two_threads_count_as_neither() {
        static CHANGES: AtomicUsize = AtomicUsize::new(0);
        fn hook(_: CircuitState, _: CircuitState) {
            CHANGES.fetch_add(1, Ordering::Relaxed);
        }
        model(3, || {
            let breaker = half_open(hook);
            CHANGES.store(0, Ordering::Relaxed);
            let managed = breaker.try_acquire().unwrap().managed();
            let sibling = breaker.try_acquire().unwrap().managed();
            assert!(managed.is_probe() && sibling.is_probe());

            let unwinding = thread::spawn(move || {
                let unwound = std::panic::catch_unwind(std::panic::AssertUnwindSafe(move || {
                    let _held = managed;
                    // No panic hook, no message: only the unwind that drops the permit.
                    std::panic::resume_unwind(Box::new("attempt panicked"));
                }));
                assert!(unwound.is_err());
            });
            let cancelled = thread::spawn(move || drop(sibling));
            unwinding.join().unwrap();
            cancelled.join().unwrap();

            assert_eq!(CHANGES.load(Ordering::Relaxed), 0, "counted as an outcome");
            assert_eq!(breaker.state(), CircuitState::HalfOpen);
            assert_eq!(free_probe_slots(breaker), 2);
        });
    }

    /// The hedge's winner records a success while its sibling is cancelled on another thread:
    /// the breaker closes once (`success_threshold` 1), and the sibling's slot is freed whether
    /// it ends before the close or after it (in the next phase).
    #[test]
    fn hedge_winner_closes_while_its_sibling_is_cancelled() {
        static CLOSED: AtomicUsize = AtomicUsize::new(0);
        fn hook(from: CircuitState, to: CircuitState) {
            if (from, to) == (CircuitState::HalfOpen, CircuitState::Closed) {
                CLOSED.fetch_add(1, Ordering::Relaxed);
            }
        }
        model(3, || {
            let breaker = half_open(hook);
            CLOSED.store(0, Ordering::Relaxed);
            let winner = breaker.try_acquire().unwrap().managed();
            let sibling = breaker.try_acquire().unwrap().managed();

            let won = thread::spawn(move || winner.succeeded());
            let cancelled = thread::spawn(move || drop(sibling));
            won.join().unwrap();
            cancelled.join().unwrap();

            assert_eq!(CLOSED.load(Ordering::Relaxed), 1);
            assert_eq!(breaker.state(), CircuitState::Closed);
            assert_eq!(free_probe_slots(breaker), 2);
        });
    }
}
