//! What a call notes between its attempts besides its context, chosen by its policy's type
//! ([`CallPolicy::Notes`](super::CallPolicy::Notes)).

use crate::policy::RetryPolicy;
use std::fmt;
use std::time::Instant;

/// What a [`Call`](super::Call) notes between its attempts besides its context: its start time,
/// its previous sleep, its attempt limit and whether the running attempt timed out.
///
/// A call's policy names the kind its calls keep ([`CallPolicy::Notes`](super::CallPolicy::Notes)):
/// [`FullNotes`]; or for a constant policy, [`StartNotes`] when only the start time is needed
/// (a deadline, a hook), or [`NoNotes`] when none of them is. Their calls then store only what
/// they need when they start, and keep only that across the awaits of an async call (the
/// futures' sizes are pinned by `tests/allocations.rs`). Type plumbing: sealed, implemented by
/// those three only.
pub trait Notes: Copy + fmt::Debug + Send + Sync + 'static + sealed::Kept {}

impl Notes for FullNotes {}
impl Notes for StartNotes {}
impl Notes for NoNotes {}

/// What every call can keep: the start time (read when a deadline or a hook needs it), the
/// previous sleep (decorrelated jitter's input), the attempt limit (a nested `once` call's, or an
/// adaptive policy's tuning) and whether the running attempt timed out. What a reference to a
/// policy, or a policy kept by value, gives its calls.
#[derive(Clone, Copy, Debug)]
pub struct FullNotes {
    start: Option<Instant>,
    /// In nanoseconds, saturating: one word instead of a `Duration`'s two. 0 is "none yet", read
    /// as the first delay, so that starting a call converts nothing.
    previous: u64,
    /// With one special value: 0 is a call nested inside another's attempt under
    /// `nested = "once"` whose policy would have retried: it makes one attempt, then stops
    /// with [`StopReason::DeferredToOuter`](super::StopReason::DeferredToOuter). Not a flag
    /// beside the limit: deciding it from the policy at the start costs the fn form, whose
    /// policy is not a constant, on every call.
    max_attempts: u32,
    /// The running attempt was cut off by `attempt_timeout`: its class is idempotent-only.
    timed_out: bool,
}

impl FullNotes {
    /// Continue the notes of a call whose earlier attempts ran elsewhere: it started at
    /// `start` (as this process's clock reads it) and last slept `previous` nanoseconds.
    pub(super) fn resumed(&mut self, start: Option<Instant>, previous: u64) {
        self.start = start;
        self.previous = previous;
    }
}

/// The notes of a call whose policy is a constant without a deadline, decorrelated jitter or
/// `nested = "once"`, run without a hook, an adaptive policy or an attempt timeout: nothing
/// (the limit is the policy's), so that such a call, what `#[retryable]` makes of the plain
/// cases, stores nothing of this when it starts. With the `tracing` feature, the start time,
/// which the events report.
#[derive(Clone, Copy, Debug)]
pub struct NoNotes {
    #[cfg(feature = "tracing")]
    start: Option<Instant>,
}

/// The notes of a call whose policy is a constant without decorrelated jitter or
/// `nested = "once"`, run without an adaptive policy or an attempt timeout, but with a deadline
/// or a hook: the start time alone, which they need (the deadline is worked out from it, and
/// [`Failure::elapsed`](super::Failure::elapsed) is measured from it).
#[derive(Clone, Copy, Debug)]
pub struct StartNotes {
    start: Option<Instant>,
}

pub(crate) mod sealed {
    use super::RetryPolicy;
    use std::time::Instant;

    /// What the engine asks of a call's notes.
    pub trait Kept {
        /// The notes of a call that starts at `start` (if it read the clock) and may make
        /// `max_attempts` attempts under `policy`.
        fn new(policy: &RetryPolicy, start: Option<Instant>, max_attempts: u32) -> Self;
        fn start(&self) -> Option<Instant>;
        /// The previous sleep in nanoseconds, 0 before the first.
        fn previous(&self) -> u64;
        fn set_previous(&mut self, nanos: u64);
        fn max_attempts(&self, policy: &RetryPolicy) -> u32;
        fn set_max_attempts(&mut self, max_attempts: u32);
        /// Whether the running attempt timed out, cleared for the next.
        fn take_timed_out(&mut self) -> bool;
        fn set_timed_out(&mut self);
    }
}

impl sealed::Kept for FullNotes {
    #[inline(always)]
    fn new(_: &RetryPolicy, start: Option<Instant>, max_attempts: u32) -> Self {
        FullNotes {
            start,
            previous: 0,
            max_attempts,
            timed_out: false,
        }
    }

    #[inline(always)]
    fn start(&self) -> Option<Instant> {
        self.start
    }

    #[inline(always)]
    fn previous(&self) -> u64 {
        self.previous
    }

    #[inline(always)]
    fn set_previous(&mut self, nanos: u64) {
        self.previous = nanos;
    }

    #[inline(always)]
    fn max_attempts(&self, _: &RetryPolicy) -> u32 {
        self.max_attempts
    }

    #[inline(always)]
    fn set_max_attempts(&mut self, max_attempts: u32) {
        self.max_attempts = max_attempts;
    }

    #[inline(always)]
    fn take_timed_out(&mut self) -> bool {
        std::mem::take(&mut self.timed_out)
    }

    #[inline(always)]
    fn set_timed_out(&mut self) {
        self.timed_out = true;
    }
}

// Whoever names `NoNotes` for a policy (`#[retryable]`, for the cases its docs list) vouches
// that none of the setters is ever needed; the debug assertions check it in the tests.
impl sealed::Kept for NoNotes {
    #[inline(always)]
    fn new(policy: &RetryPolicy, start: Option<Instant>, max_attempts: u32) -> Self {
        debug_assert_eq!(
            max_attempts, policy.attempts,
            "a call whose limit is not its policy's (nested once) notes it: FullNotes"
        );
        #[cfg(not(feature = "tracing"))]
        debug_assert!(
            start.is_none(),
            "a call that reads the clock at its start (a deadline, a hook) notes it: FullNotes"
        );
        #[cfg(not(feature = "tracing"))]
        let _ = start;
        NoNotes {
            #[cfg(feature = "tracing")]
            start,
        }
    }

    #[inline(always)]
    fn start(&self) -> Option<Instant> {
        #[cfg(feature = "tracing")]
        {
            self.start
        }
        #[cfg(not(feature = "tracing"))]
        {
            None
        }
    }

    #[inline(always)]
    fn previous(&self) -> u64 {
        0
    }

    #[inline(always)]
    fn set_previous(&mut self, nanos: u64) {
        debug_assert!(
            false,
            "decorrelated jitter notes its previous sleep: FullNotes"
        );
        let _ = nanos;
    }

    #[inline(always)]
    fn max_attempts(&self, policy: &RetryPolicy) -> u32 {
        policy.attempts
    }

    #[inline(always)]
    fn set_max_attempts(&mut self, max_attempts: u32) {
        debug_assert!(false, "an adaptive policy notes its tuned limit: FullNotes");
        let _ = max_attempts;
    }

    #[inline(always)]
    fn take_timed_out(&mut self) -> bool {
        false
    }

    #[inline(always)]
    fn set_timed_out(&mut self) {
        debug_assert!(false, "an attempt timeout notes its timeouts: FullNotes");
    }
}

// As for `NoNotes`, but for the start time.
impl sealed::Kept for StartNotes {
    #[inline(always)]
    fn new(policy: &RetryPolicy, start: Option<Instant>, max_attempts: u32) -> Self {
        debug_assert_eq!(
            max_attempts, policy.attempts,
            "a call whose limit is not its policy's (nested once) notes it: FullNotes"
        );
        StartNotes { start }
    }

    #[inline(always)]
    fn start(&self) -> Option<Instant> {
        self.start
    }

    #[inline(always)]
    fn previous(&self) -> u64 {
        0
    }

    #[inline(always)]
    fn set_previous(&mut self, nanos: u64) {
        debug_assert!(
            false,
            "decorrelated jitter notes its previous sleep: FullNotes"
        );
        let _ = nanos;
    }

    #[inline(always)]
    fn max_attempts(&self, policy: &RetryPolicy) -> u32 {
        policy.attempts
    }

    #[inline(always)]
    fn set_max_attempts(&mut self, max_attempts: u32) {
        debug_assert!(false, "an adaptive policy notes its tuned limit: FullNotes");
        let _ = max_attempts;
    }

    #[inline(always)]
    fn take_timed_out(&mut self) -> bool {
        false
    }

    #[inline(always)]
    fn set_timed_out(&mut self) {
        debug_assert!(false, "an attempt timeout notes its timeouts: FullNotes");
    }
}
