//! The retry loops: one engine ([`Call`]) driven by the generated code of `#[retryable]` and by
//! the non-macro form ([`Retry`], [`RetryPolicy::call`], [`RetryPolicy::call_async`]).
//!
//! The engine is a small state machine. A loop asks it to run an attempt (which makes the
//! attempt visible to [`current_attempt`](crate::current_attempt)), then hands it the outcome
//! and gets back either "return this outcome" or "sleep this long, then go again". The success
//! path reads no clock, draws no random number and allocates nothing unless a deadline or a
//! hook asks for time.
//!
//! Shared protection plugs in at three points, all in the `guard` submodule: the breaker admits
//! the first attempt ([`Call::admit`]); each outcome goes to the breaker permit and the budget;
//! and a retry the policy scheduled is put to the budget, then to the breaker. With neither
//! configured (nor an adaptive policy) the call is a [`Call<'_, Lean>`](Call), which holds none
//! of their state and checks nothing for them.

use crate::adaptive::{Adapt, Tuning};
use crate::breaker::CircuitBreaker;
use crate::budget::RetryBudget;
use crate::class::{Classify, ErrorClass};
use crate::clock;
use crate::context::{self, CallCtx, Entered};
use crate::observe::{self, FmtFn};
use crate::policy::{Nested, RetryPolicy};
use crate::rng;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

mod guard;
use guard::{Adaptive, Protect};
pub use guard::{
    AsBreaker, AsBudget, AttemptTimeout, CircuitOpenMissing, CircuitOpenViaFrom, CircuitSlot,
    Conversion, Convert, NeedsFromCircuitOpen, NeedsFromTimedOut, NoCircuit, NoTimeout, Timed,
    TimedOutMissing, TimedOutViaFrom, TimeoutSlot, Untimed, breaker_of, budget_of, timed,
};
pub use guard::{Extras, Full, Lean};

/// Why a retry loop stopped and returned the last error.
#[non_exhaustive]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum StopReason {
    /// The error is permanent: it would fail the same way again.
    Permanent,
    /// The outcome of the attempt is unknown and the function is not declared idempotent.
    NotIdempotent,
    /// Every allowed attempt was made.
    AttemptsExhausted,
    /// The next wait would end after the deadline.
    DeadlineExceeded,
    /// The shared retry budget refused the retry.
    BudgetExhausted,
    /// The circuit breaker is open.
    CircuitOpen,
    /// The error asked for a wait longer than the policy's `max_delay`.
    RetryAfterTooLong,
    /// The call runs inside another retryable call's attempt and is declared
    /// `nested = "once"`: it made its single attempt and leaves retrying to the outer layer.
    ///
    /// A reason of its own rather than `AttemptsExhausted`, because an operator reading
    /// "attempts exhausted" after attempt 1 of a function declared with 5 attempts would look
    /// for a bug in the policy; this says the retry is deferred, not given up: the outer
    /// layer's record of the same failure shows whether it retries.
    DeferredToOuter,
}

impl StopReason {
    /// The snake-case name used in logs and events, such as `attempts_exhausted`.
    pub const fn as_str(self) -> &'static str {
        match self {
            StopReason::Permanent => "permanent",
            StopReason::NotIdempotent => "not_idempotent",
            StopReason::AttemptsExhausted => "attempts_exhausted",
            StopReason::DeadlineExceeded => "deadline_exceeded",
            StopReason::BudgetExhausted => "budget_exhausted",
            StopReason::CircuitOpen => "circuit_open",
            StopReason::RetryAfterTooLong => "retry_after_too_long",
            StopReason::DeferredToOuter => "deferred_to_outer",
        }
    }
}

impl std::fmt::Display for StopReason {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What happens after a failed attempt.
#[non_exhaustive]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Next {
    /// Sleep this long, then make the next attempt.
    Retry(Duration),
    /// Stop and return this attempt's error.
    Stop(StopReason),
}

/// The record of one failed attempt, as an operator needs it: which attempt, what failed, its
/// class, how long the call has taken so far, and what happens next.
///
/// ```
/// use retry_kit::{retryable, Classify, Failure, Next, StopReason};
/// use std::sync::Mutex;
///
/// #[derive(Debug, Classify)]
/// enum DbError {
///     #[classify(transient)]
///     Deadlock,
///     #[classify(permanent)]
///     UniqueViolation,
/// }
///
/// static LOG: Mutex<Vec<String>> = Mutex::new(Vec::new());
///
/// fn record(f: &Failure<'_, DbError>) {
///     let next = match f.next {
///         Next::Retry(d) => format!("retry in {d:?}"),
///         Next::Stop(reason) => format!("stop: {reason}"),
///         _ => unreachable!(),
///     };
///     LOG.lock().unwrap().push(format!("attempt {} {:?} ({}): {next}", f.attempt, f.error, f.class));
/// }
///
/// #[retryable(attempts = 5, base = "0ms", on_failure = record)]
/// fn insert(errors: &mut Vec<DbError>) -> Result<(), DbError> {
///     match errors.pop() {
///         Some(e) => Err(e),
///         None => Ok(()),
///     }
/// }
///
/// let mut errors = vec![DbError::UniqueViolation, DbError::Deadlock];
/// assert!(insert(&mut errors).is_err());
/// assert_eq!(
///     *LOG.lock().unwrap(),
///     [
///         "attempt 1 Deadlock (transient): retry in 0ns",
///         "attempt 2 UniqueViolation (permanent): stop: permanent",
///     ]
/// );
/// ```
#[non_exhaustive]
#[derive(Debug)]
pub struct Failure<'a, E> {
    /// The attempt that failed, starting at 1.
    pub attempt: u32,
    /// Its error.
    pub error: &'a E,
    /// The error's class.
    pub class: ErrorClass,
    /// Time since the first attempt started, attempts and sleeps included.
    pub elapsed: Duration,
    /// What the loop does next.
    pub next: Next,
}

impl<E> Clone for Failure<'_, E> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<E> Copy for Failure<'_, E> {}

/// The result type of a retried operation: `Result<T, E>`, or an alias of one.
#[diagnostic::on_unimplemented(
    message = "`#[retryable]` retries functions that return `Result<T, E>`, and `{Self}` is not a `Result`",
    label = "expected `Result<T, E>` (or an alias such as `io::Result<T>`)"
)]
pub trait Outcome {
    /// The error type.
    type Error;
    /// The error, if this outcome is a failure.
    fn error(&self) -> Option<&Self::Error>;
}

impl<T, E> Outcome for Result<T, E> {
    type Error = E;
    #[inline]
    fn error(&self) -> Option<&E> {
        self.as_ref().err()
    }
}

/// Decides the class and the wait hint of an error: the [`Classify`] impl ([`ByTrait`]), a
/// function `Fn(&E) -> ErrorClass` (no hint), or both a class function and a hint function
/// ([`WithRetryAfter`]).
#[diagnostic::on_unimplemented(
    message = "`{E}` does not say whether it is worth retrying: it does not implement `Classify`",
    label = "the error type of this `Result` needs a `Classify` impl",
    note = "add `#[derive(Classify)]` with `#[classify(transient | permanent | idempotent_only)]` tags, implement `retry_kit::Classify` by hand, or pass `classify = path::to::fn` taking `&{E}` and returning `ErrorClass`"
)]
pub trait Classifier<E: ?Sized> {
    /// The class of `error`.
    fn class(&self, error: &E) -> ErrorClass;
    /// The wait `error` asks for, if any.
    fn retry_after(&self, error: &E) -> Option<Duration>;
}

/// Classify errors through their [`Classify`] impl (the default).
#[derive(Clone, Copy, Debug, Default)]
pub struct ByTrait;

impl<E: Classify + ?Sized> Classifier<E> for ByTrait {
    #[inline]
    fn class(&self, error: &E) -> ErrorClass {
        error.class()
    }
    #[inline]
    fn retry_after(&self, error: &E) -> Option<Duration> {
        error.retry_after()
    }
}

impl<E: ?Sized, F: Fn(&E) -> ErrorClass> Classifier<E> for F {
    #[inline]
    fn class(&self, error: &E) -> ErrorClass {
        self(error)
    }
    #[inline]
    fn retry_after(&self, _: &E) -> Option<Duration> {
        None
    }
}

/// A class function paired with a retry-after function.
#[derive(Clone, Copy, Debug)]
pub struct WithRetryAfter<C, A>(pub C, pub A);

impl<E: ?Sized, C, A> Classifier<E> for WithRetryAfter<C, A>
where
    C: Fn(&E) -> ErrorClass,
    A: Fn(&E) -> Option<Duration>,
{
    #[inline]
    fn class(&self, error: &E) -> ErrorClass {
        (self.0)(error)
    }
    #[inline]
    fn retry_after(&self, error: &E) -> Option<Duration> {
        (self.1)(error)
    }
}

/// `<E as Classify>::class` as a function item, for pairing with a custom retry-after function.
#[inline]
pub fn class_of<E: Classify + ?Sized>(error: &E) -> ErrorClass {
    error.class()
}

/// Receives every failed attempt's [`Failure`] record: any `FnMut(&Failure<'_, E>)`, or
/// [`NoHook`].
pub trait Hook<E> {
    /// Whether this hook wants records at all (and so whether the loop reads the clock).
    const ACTIVE: bool = true;
    /// Called once per failed attempt.
    fn on_failure(&mut self, failure: &Failure<'_, E>);
    /// How to show an error in a `tracing` event, if it can be shown. See [`observe`].
    #[inline]
    fn display_fn(&self) -> Option<FmtFn<E>> {
        None
    }
}

/// No failure hook: the loop builds no records and reads no clock for them.
#[derive(Clone, Copy, Debug, Default)]
pub struct NoHook;

impl<E> Hook<E> for NoHook {
    const ACTIVE: bool = false;
    #[inline]
    fn on_failure(&mut self, _: &Failure<'_, E>) {}
}

impl<E, F: FnMut(&Failure<'_, E>)> Hook<E> for F {
    #[inline]
    fn on_failure(&mut self, failure: &Failure<'_, E>) {
        self(failure)
    }
}

/// A hook together with the error's `Display` (found by [`observe::DisplayProbe`] in generated
/// code), for `tracing` events.
pub struct Described<H, E>(pub H, pub Option<FmtFn<E>>);

impl<E, H: Hook<E>> Hook<E> for Described<H, E> {
    const ACTIVE: bool = H::ACTIVE;
    #[inline]
    fn on_failure(&mut self, failure: &Failure<'_, E>) {
        self.0.on_failure(failure)
    }
    #[inline]
    fn display_fn(&self) -> Option<FmtFn<E>> {
        self.1
    }
}

impl<H: std::fmt::Debug, E> std::fmt::Debug for Described<H, E> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("Described")
            .field(&self.0)
            .field(&self.1.is_some())
            .finish()
    }
}

/// A hook whose errors are shown with their `Display` in `tracing` events: what
/// [`Retry::display_errors`] installs.
#[derive(Clone, Copy, Debug)]
pub struct Displayed<H>(pub H);

impl<E: std::fmt::Display, H: Hook<E>> Hook<E> for Displayed<H> {
    const ACTIVE: bool = H::ACTIVE;
    #[inline]
    fn on_failure(&mut self, failure: &Failure<'_, E>) {
        self.0.on_failure(failure)
    }
    #[inline]
    fn display_fn(&self) -> Option<FmtFn<E>> {
        Some(<E as std::fmt::Display>::fmt)
    }
}

/// What the loop does with an attempt's outcome.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Step {
    /// Return the outcome: it succeeded, or the loop stopped.
    Return,
    /// Sleep this long, then make the next attempt.
    Retry(Duration),
}

/// The state of one retried call: the engine behind every loop in this crate.
///
/// Generated code and [`Retry`] drive it the same way:
///
/// ```
/// use retry_kit::__private::{ByTrait, Call, NoHook, Step};
/// use retry_kit::RetryPolicy;
/// use std::io;
///
/// let policy = RetryPolicy::new().attempts(3).base(std::time::Duration::ZERO);
/// let mut call = Call::new(&policy, false);
/// let mut calls = 0;
/// let out = loop {
///     let out = call.attempt_sync(|| {
///         calls += 1;
///         if calls < 2 { Err(io::Error::from(io::ErrorKind::ConnectionReset)) } else { Ok(calls) }
///     });
///     match call.after(&out, &ByTrait, &mut NoHook) {
///         Step::Return => break out,
///         Step::Retry(delay) => call.sleep(delay),
///     }
/// };
/// assert_eq!(out.unwrap(), 2);
/// ```
///
/// `X` is what the call carries besides its policy: nothing ([`Lean`], what [`Call::new`]
/// makes), or, once [`adaptive`](Call::adaptive), [`circuit`](Call::circuit) or
/// [`budget`](Call::budget) is set, the adaptive state and the shared protection ([`Full`]).
/// A type rather than `Option` fields, so that a call without them keeps none of their state:
/// not in its stack frame, not across the awaits of an async retryable future, and no check of
/// them on the success path.
#[derive(Debug)]
pub struct Call<'p, X = Lean> {
    policy: &'p RetryPolicy,
    ctx: CallCtx,
    start: Option<Instant>,
    previous: Duration,
    max_attempts: u32,
    /// Inside another call's attempt with `nested = "once"`: a single attempt.
    single: bool,
    /// The running attempt was cut off by `attempt_timeout` (see `settle_timed`): its class is
    /// idempotent-only. In the call itself (one byte of padding) so that a timeout needs no
    /// [`Full`] state.
    timed_out: bool,
    /// The function's path, for events; only kept with the `tracing` feature.
    #[cfg(feature = "tracing")]
    name: &'static str,
    extra: X,
}

impl<'p> Call<'p> {
    /// Start a call. `needs_clock` asks for the start time to be read even without a deadline
    /// (for `Failure::elapsed`).
    // Always inlined, so that with a `const` policy and no hook the clock branch folds away
    // and the success path is a thread-local read and a few stores; the clock work itself
    // stays out of line in `clocked`.
    #[inline(always)]
    pub fn new(policy: &'p RetryPolicy, needs_clock: bool) -> Self {
        let inherited = context::inherited();
        let (start, deadline) =
            if needs_clock || policy.deadline.is_some() || observe::wants_clock() {
                Self::clocked(policy, inherited.deadline)
            } else {
                (None, inherited.deadline)
            };
        let single = inherited.inside_attempt && policy.nested == Nested::Once;
        let max_attempts = if single { 1 } else { policy.attempts.max(1) };
        Call {
            policy,
            ctx: CallCtx::new(deadline),
            start,
            previous: policy.base,
            max_attempts,
            single,
            timed_out: false,
            #[cfg(feature = "tracing")]
            name: "closure",
            extra: Lean,
        }
    }

    /// The start time, and the effective deadline: this call's own or the inherited one,
    /// whichever comes first.
    #[inline(never)]
    fn clocked(
        policy: &RetryPolicy,
        inherited: Option<Instant>,
    ) -> (Option<Instant>, Option<Instant>) {
        let start = clock::now();
        // A deadline too far away to represent is no deadline.
        let own = policy.deadline.and_then(|budget| start.checked_add(budget));
        let deadline = match (own, inherited) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        (Some(start), deadline)
    }
}

impl<'p, X: Extras<'p>> Call<'p, X> {
    /// Name the function this call retries (its path), for `tracing` events. Without the
    /// `tracing` feature there are no events, and the name is not kept.
    #[inline]
    pub fn named(self, name: &'static str) -> Self {
        #[cfg(feature = "tracing")]
        {
            let mut call = self;
            call.name = name;
            call
        }
        #[cfg(not(feature = "tracing"))]
        {
            let _ = name;
            self
        }
    }

    /// Adjust this call by an adaptive policy: its attempts, first delay and multiplier are
    /// tuned now, from the policy's window, and every attempt is recorded into it.
    ///
    /// Under `nested = "once"` inside another attempt the call still makes a single attempt
    /// (and still records it).
    pub fn adaptive(self, source: &'p dyn Adapt) -> Call<'p, Full<'p>> {
        let policy = self.policy;
        let tuned = source.tune(Tuning {
            attempts: policy.attempts,
            base: policy.base,
            multiplier: policy.multiplier,
        });
        let tuned = policy
            .attempts(tuned.attempts)
            .base(tuned.base)
            .multiplier(tuned.multiplier);
        let mut call = self.into_full();
        if !call.single {
            call.max_attempts = tuned.attempts;
        }
        call.previous = tuned.base;
        call.extra.adaptive = Adaptive {
            source: Some(source),
            tuned: Some(tuned),
            attempt_started: None,
        };
        call
    }

    /// The same call carrying [`Full`] state (unchanged if it already does).
    #[inline]
    fn into_full(self) -> Call<'p, Full<'p>> {
        self.map_extra(X::into_full)
    }

    /// The same call with its extra state converted by `f`.
    #[inline]
    fn map_extra<Y>(self, f: impl FnOnce(X) -> Y) -> Call<'p, Y> {
        Call {
            policy: self.policy,
            ctx: self.ctx,
            start: self.start,
            previous: self.previous,
            max_attempts: self.max_attempts,
            single: self.single,
            timed_out: self.timed_out,
            #[cfg(feature = "tracing")]
            name: self.name,
            extra: f(self.extra),
        }
    }

    /// The policy in force: the declared one, or its adaptive adjustment.
    #[inline]
    fn policy(&self) -> &RetryPolicy {
        self.extra.tuned().unwrap_or(self.policy)
    }

    /// The class of a failed attempt: idempotent-only if it timed out, else the classifier's.
    #[inline]
    fn class(&mut self, classify: impl FnOnce() -> ErrorClass) -> ErrorClass {
        if std::mem::take(&mut self.timed_out) {
            ErrorClass::IdempotentOnly
        } else {
            classify()
        }
    }

    /// The number of attempts started so far.
    #[inline]
    pub fn attempt(&self) -> u32 {
        self.ctx.attempt()
    }

    /// The effective deadline: this call's own, or an enclosing call's if that comes first.
    pub fn deadline(&self) -> Option<Instant> {
        self.ctx.deadline
    }

    /// Run one attempt of a sync body, visible to `current_attempt()` while it runs.
    #[inline]
    pub fn attempt_sync<R, F: FnOnce() -> R>(&mut self, body: F) -> R {
        self.ctx.begin_attempt();
        self.extra.begin_attempt();
        let _entered: Entered<'_> = self.ctx.enter();
        body()
    }

    /// Wrap one attempt of an async body, visible to `current_attempt()` on every poll.
    #[inline]
    pub fn attempt_async<R, F: Future<Output = R>>(&mut self, body: F) -> InAttempt<'_, F> {
        self.ctx.begin_attempt();
        self.extra.begin_attempt();
        InAttempt {
            ctx: &mut self.ctx,
            body,
        }
    }

    /// Decide what follows an attempt's outcome, calling the hook once if it failed.
    #[inline]
    pub fn after<R, C, H>(&mut self, outcome: &R, classifier: &C, hook: &mut H) -> Step
    where
        R: Outcome,
        C: Classifier<R::Error>,
        H: Hook<R::Error>,
    {
        match outcome.error() {
            None => {
                // Nothing with `Lean`: the success path is the attempt counter and the
                // thread-local pointer.
                self.extra.succeeded();
                Step::Return
            }
            Some(error) => self.failed(error, classifier, hook),
        }
    }

    #[cold]
    fn failed<E, C, H>(&mut self, error: &E, classifier: &C, hook: &mut H) -> Step
    where
        C: Classifier<E>,
        H: Hook<E>,
    {
        let class = self.class(|| classifier.class(error));
        self.extra.failed(class);
        let next = match self.stop_for_class(class) {
            Some(reason) => Next::Stop(reason),
            None => {
                let next = self.schedule(classifier.retry_after(error));
                self.extra.admit_retry(next)
            }
        };
        if H::ACTIVE {
            hook.on_failure(&Failure {
                attempt: self.attempt(),
                error,
                class,
                elapsed: self.elapsed(),
                next,
            });
        }
        self.trace(error, class, next, hook);
        match next {
            Next::Retry(delay) => Step::Retry(delay),
            Next::Stop(_) => Step::Return,
        }
    }

    /// The `tracing` event of a failed attempt (nothing without the feature).
    #[inline]
    fn trace<E, H: Hook<E>>(&self, error: &E, class: ErrorClass, next: Next, hook: &H) {
        #[cfg(not(feature = "tracing"))]
        let _ = (error, class, next, hook);
        #[cfg(feature = "tracing")]
        {
            let shown = hook.display_fn().map(|fmt| observe::Shown(error, fmt));
            observe::failed_attempt(&observe::Event {
                function: self.name,
                attempt: self.attempt(),
                class,
                elapsed: self.elapsed(),
                next,
                error: shown.as_ref().map(|s| s as &dyn std::fmt::Display),
            });
        }
    }

    /// A stop decided by the class and the attempt count alone.
    #[inline]
    fn stop_for_class(&self, class: ErrorClass) -> Option<StopReason> {
        match class {
            ErrorClass::Permanent => return Some(StopReason::Permanent),
            ErrorClass::IdempotentOnly if !self.policy().idempotent => {
                return Some(StopReason::NotIdempotent);
            }
            _ => {}
        }
        if self.attempt() >= self.max_attempts {
            if self.single && self.policy().attempts > 1 {
                return Some(StopReason::DeferredToOuter);
            }
            return Some(StopReason::AttemptsExhausted);
        }
        None
    }

    /// The wait before the next attempt, or why there is none.
    #[inline]
    fn schedule(&mut self, retry_after: Option<Duration>) -> Next {
        // Every shape and every jitter of a zero base is zero (decorrelated too: its previous
        // sleep starts at `base`). Without a hint or a deadline to check, the answer is a zero
        // wait: no random draw, no arithmetic, no out-of-line call.
        if self.policy().base.is_zero() && retry_after.is_none() && self.ctx.deadline.is_none() {
            self.previous = Duration::ZERO;
            return Next::Retry(Duration::ZERO);
        }
        self.schedule_slow(retry_after)
    }

    // Out of line, so that `schedule` stays small enough to inline into `failed`: a zero wait
    // then costs a few compares and no call.
    #[inline(never)]
    fn schedule_slow(&mut self, retry_after: Option<Duration>) -> Next {
        let policy = *self.policy();
        let jittered = if policy.base.is_zero() {
            Duration::ZERO
        } else {
            let draw = if policy.jitter.needs_draw() {
                rng::draw()
            } else {
                0
            };
            policy.jittered_delay(self.attempt(), self.previous, draw)
        };
        let wait = match retry_after {
            Some(hint) if hint > policy.max_delay => {
                return Next::Stop(StopReason::RetryAfterTooLong);
            }
            Some(hint) => jittered.max(hint),
            None => jittered,
        };
        if let Some(deadline) = self.ctx.deadline {
            // A wait that ends exactly at the deadline is allowed.
            let ends = clock::now().checked_add(wait);
            if ends.is_none_or(|ends| ends > deadline) {
                return Next::Stop(StopReason::DeadlineExceeded);
            }
        }
        self.previous = jittered;
        Next::Retry(wait)
    }

    /// Time since the call started, or zero if no clock was read at the start.
    pub fn elapsed(&self) -> Duration {
        match self.start {
            Some(start) => clock::now().saturating_duration_since(start),
            None => Duration::ZERO,
        }
    }

    /// Sleep between sync attempts (virtual inside `testing::record_sleeps`).
    #[inline]
    pub fn sleep(&self, delay: Duration) {
        clock::sleep_sync(delay)
    }
}

/// One attempt of an async body, with its call's context installed on every poll.
#[derive(Debug)]
#[must_use = "futures do nothing unless awaited"]
pub struct InAttempt<'c, F> {
    ctx: &'c mut CallCtx,
    body: F,
}

impl<F: Future> Future for InAttempt<'_, F> {
    type Output = F::Output;

    #[inline]
    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<F::Output> {
        // SAFETY: `body` is pinned structurally: it is never moved out of `self`, and
        // `InAttempt` has no `Drop` impl. `ctx` is a plain reference and is not pinned.
        let this = unsafe { self.get_unchecked_mut() };
        let _entered = this.ctx.enter();
        unsafe { Pin::new_unchecked(&mut this.body) }.poll(cx)
    }
}

/// Retry closures without the attribute: a policy plus, optionally, a classifier and a failure
/// hook. The loops are the same engine `#[retryable]` expands to.
///
/// ```
/// use retry_kit::{ErrorClass, Retry, RetryPolicy, testing};
/// use std::time::Duration;
///
/// let policy = RetryPolicy::fixed(Duration::from_millis(50)).attempts(4);
/// let mut seen = Vec::new();
/// let mut tries = 0;
/// let (result, slept) = testing::record_sleeps(|| {
///     Retry::new(&policy)
///         .classify(|code: &u16| if *code == 503 { ErrorClass::Transient } else { ErrorClass::Permanent })
///         .on_failure(|f: &retry_kit::Failure<'_, u16>| seen.push((f.attempt, *f.error)))
///         .call(|| {
///             tries += 1;
///             if tries < 3 { Err(503u16) } else { Ok("done") }
///         })
/// });
/// assert_eq!(result, Ok("done"));
/// assert_eq!(seen, [(1, 503), (2, 503)]);
/// assert_eq!(slept.len(), 2);
/// assert!(slept.iter().all(|d| *d <= Duration::from_millis(50)));
/// ```
#[derive(Debug)]
#[must_use = "a Retry does nothing until `call` or `call_async`"]
pub struct Retry<'p, C = ByTrait, H = NoHook, K = NoCircuit, T = NoTimeout> {
    policy: &'p RetryPolicy,
    classifier: C,
    hook: H,
    observed: Observed<'p>,
    protect: Protect<'p, K, T>,
}

/// What [`Retry`] passes to the engine besides policy, classifier and hook.
#[derive(Clone, Copy)]
struct Observed<'p> {
    name: &'static str,
    adaptive: Option<&'p dyn Adapt>,
}

impl Observed<'_> {
    const NONE: Self = Observed {
        name: "closure",
        adaptive: None,
    };
}

impl std::fmt::Debug for Observed<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Observed")
            .field("name", &self.name)
            .field("adaptive", &self.adaptive.is_some())
            .finish()
    }
}

impl<'p> Retry<'p> {
    /// Retry by `policy`, classifying errors through their [`Classify`] impl.
    pub const fn new(policy: &'p RetryPolicy) -> Self {
        Retry {
            policy,
            classifier: ByTrait,
            hook: NoHook,
            observed: Observed::NONE,
            protect: Protect::NONE,
        }
    }
}

impl<'p, C, H, K, T> Retry<'p, C, H, K, T> {
    /// Classify errors with a function (or anything [`Classifier`]) instead of `Classify`.
    pub fn classify<C2>(self, classifier: C2) -> Retry<'p, C2, H, K, T> {
        Retry {
            policy: self.policy,
            classifier,
            hook: self.hook,
            observed: self.observed,
            protect: self.protect,
        }
    }

    /// Call `hook` with every failed attempt's [`Failure`] record.
    pub fn on_failure<H2>(self, hook: H2) -> Retry<'p, C, H2, K, T> {
        Retry {
            policy: self.policy,
            classifier: self.classifier,
            hook,
            observed: self.observed,
            protect: self.protect,
        }
    }

    /// Show each error's `Display` in `tracing` events (the `error` field). The builder cannot
    /// detect `Display` by itself, so this opt-in requires it of the error type. It wraps the
    /// failure hook: call it after [`on_failure`](Self::on_failure), which replaces the hook.
    pub fn display_errors(self) -> Retry<'p, C, Displayed<H>, K, T> {
        Retry {
            policy: self.policy,
            classifier: self.classifier,
            hook: Displayed(self.hook),
            observed: self.observed,
            protect: self.protect,
        }
    }

    /// The name `tracing` events give in their `fn` field (default `"closure"`).
    pub fn named(mut self, name: &'static str) -> Self {
        self.observed.name = name;
        self
    }

    /// Adjust attempts and delays by an adaptive policy, and record every attempt into its
    /// window. See [`AdaptivePolicy`](crate::adaptive::AdaptivePolicy).
    ///
    /// ```
    /// use retry_kit::adaptive::{AdaptivePolicy, Stats, Tuning};
    /// use retry_kit::{Retry, RetryPolicy, testing};
    /// use std::{io, time::Duration};
    ///
    /// fn outage(s: &Stats, t: Tuning) -> Tuning {
    ///     if s.failure_rate > 0.5 { Tuning { attempts: 1, ..t } } else { t }
    /// }
    /// static ADAPT: AdaptivePolicy = AdaptivePolicy::new(&[outage]).min_samples(4);
    /// let policy = RetryPolicy::fixed(Duration::from_millis(10)).attempts(4);
    /// let down = || Err::<(), _>(io::Error::from(io::ErrorKind::ConnectionRefused));
    ///
    /// let (_, slept) = testing::record_sleeps(|| Retry::new(&policy).adaptive(&ADAPT).call(down));
    /// assert_eq!(slept.len(), 3, "the first call retries as declared");
    /// let (_, slept) = testing::record_sleeps(|| Retry::new(&policy).adaptive(&ADAPT).call(down));
    /// assert_eq!(slept.len(), 0, "four failures in the window: a single attempt");
    /// assert_eq!(ADAPT.stats().count, 5);
    /// ```
    pub fn adaptive(mut self, source: &'p dyn Adapt) -> Self {
        self.observed.adaptive = Some(source);
        self
    }

    /// Consult `breaker` before every attempt, as `#[retryable(circuit = ...)]` does: a refused
    /// first attempt returns `Err(E::from(CircuitOpen))` (so `E: From<CircuitOpen>`), a refused
    /// retry stops with [`StopReason::CircuitOpen`] and the last error.
    ///
    /// ```
    /// use retry_kit::{CircuitBreaker, CircuitOpen, CircuitState, Classify, Retry, RetryPolicy};
    /// use std::time::Duration;
    ///
    /// #[derive(Debug, Classify)]
    /// enum DnsError {
    ///     #[classify(transient)]
    ///     ServFail,
    ///     #[classify(delegate)]
    ///     Open(CircuitOpen),
    /// }
    ///
    /// impl From<CircuitOpen> for DnsError {
    ///     fn from(open: CircuitOpen) -> Self {
    ///         DnsError::Open(open)
    ///     }
    /// }
    ///
    /// static DNS: CircuitBreaker = CircuitBreaker::new(2, Duration::from_secs(30));
    /// let policy = RetryPolicy::fixed(Duration::ZERO).attempts(5);
    /// let mut calls = 0;
    /// let result: Result<(), DnsError> = Retry::new(&policy).circuit(&DNS).call(|| {
    ///     calls += 1;
    ///     Err(DnsError::ServFail)
    /// });
    /// // The second failure opened the breaker, which refused the third attempt: the loop
    /// // stopped with the last real error.
    /// assert!(matches!(result, Err(DnsError::ServFail)));
    /// assert_eq!(calls, 2);
    /// assert_eq!(DNS.state(), CircuitState::Open);
    ///
    /// // A call that starts while it is open makes no attempt.
    /// let refused: Result<(), DnsError> = Retry::new(&policy).circuit(&DNS).call(|| Ok(()));
    /// assert!(matches!(refused, Err(DnsError::Open(_))));
    /// ```
    pub fn circuit(self, breaker: &'p CircuitBreaker) -> Retry<'p, C, H, &'p CircuitBreaker, T> {
        Retry {
            policy: self.policy,
            classifier: self.classifier,
            hook: self.hook,
            observed: self.observed,
            protect: self.protect.circuit(breaker),
        }
    }

    /// Charge failures to `budget` and ask it before every retry, as
    /// `#[retryable(budget = ...)]` does: a refused retry stops with
    /// [`StopReason::BudgetExhausted`] and the last error.
    pub fn budget(mut self, budget: &'p RetryBudget) -> Self {
        self.protect.budget = Some(budget);
        self
    }

    /// Cancel each attempt of [`call_async`](Self::call_async) after `limit`, as
    /// `#[retryable(attempt_timeout = ...)]` does: the attempt's error is
    /// `E::from(TimedOut)` (so `E: From<TimedOut>`) and its class is idempotent-only. The sync
    /// [`call`](Self::call) is not available on such a builder.
    ///
    /// ```
    /// use retry_kit::{Retry, RetryPolicy};
    /// use std::{io, time::Duration};
    ///
    /// # #[tokio::main(flavor = "current_thread", start_paused = true)]
    /// # async fn main() {
    /// let policy = RetryPolicy::fixed(Duration::from_secs(1)).attempts(3).idempotent(true);
    /// let mut attempts = 0;
    /// let result: Result<(), io::Error> = Retry::new(&policy)
    ///     .attempt_timeout(Duration::from_secs(2))
    ///     .call_async(|| {
    ///         attempts += 1;
    ///         std::future::pending()
    ///     })
    ///     .await;
    /// assert!(result.unwrap_err().get_ref().unwrap().is::<retry_kit::TimedOut>());
    /// assert_eq!(attempts, 3);
    /// # }
    /// ```
    pub fn attempt_timeout(self, limit: Duration) -> Retry<'p, C, H, K, AttemptTimeout> {
        Retry {
            policy: self.policy,
            classifier: self.classifier,
            hook: self.hook,
            observed: self.observed,
            protect: self.protect.attempt_timeout(limit),
        }
    }

    /// Whether this builder has neither an adaptive policy nor protection, so that a [`Lean`]
    /// call serves. For a builder made where it is called, this folds to a constant.
    #[inline]
    fn is_lean<E>(&self) -> bool
    where
        K: CircuitSlot<'p, E>,
    {
        self.observed.adaptive.is_none()
            && self.protect.budget.is_none()
            && self.protect.circuit.slot().is_none()
    }

    /// The engine for one call without adaptive policy or protection.
    #[inline]
    fn begin_lean(&self, needs_clock: bool) -> Call<'p> {
        Call::new(self.policy, needs_clock).named(self.observed.name)
    }

    /// The engine for one call with [`Full`] state, the first attempt admitted by the breaker.
    fn begin_full<E>(&self, needs_clock: bool) -> Result<Call<'p, Full<'p>>, E>
    where
        K: CircuitSlot<'p, E>,
    {
        let call = self.begin_lean(needs_clock);
        let call = match self.observed.adaptive {
            Some(source) => call.adaptive(source),
            None => call.into_full(),
        };
        self.protect.begin(call)
    }

    /// Run `op` until it succeeds or the policy stops; return its last result.
    // Inlined, with the `Full` loop out of line: for a builder made where it is called the
    // choice folds away and what remains is the same code `#[retryable]` expands to.
    #[inline]
    pub fn call<R, E>(mut self, mut op: impl FnMut() -> Result<R, E>) -> Result<R, E>
    where
        C: Classifier<E>,
        H: Hook<E>,
        K: CircuitSlot<'p, E>,
        T: Untimed,
    {
        // The same loop on either kind of engine, so a builder without adaptive policy or
        // protection pays nothing for them.
        if self.is_lean::<E>() {
            let call = self.begin_lean(H::ACTIVE);
            self.run_sync(call, &mut op)
        } else {
            self.call_full(op)
        }
    }

    #[inline(never)]
    fn call_full<R, E>(mut self, mut op: impl FnMut() -> Result<R, E>) -> Result<R, E>
    where
        C: Classifier<E>,
        H: Hook<E>,
        K: CircuitSlot<'p, E>,
    {
        let call = self.begin_full(H::ACTIVE)?;
        self.run_sync(call, &mut op)
    }

    #[inline(always)]
    fn run_sync<R, E, X: Extras<'p>>(
        &mut self,
        mut call: Call<'p, X>,
        op: &mut impl FnMut() -> Result<R, E>,
    ) -> Result<R, E>
    where
        C: Classifier<E>,
        H: Hook<E>,
    {
        loop {
            let out = call.attempt_sync(&mut *op);
            match call.after(&out, &self.classifier, &mut self.hook) {
                Step::Return => return out,
                Step::Retry(delay) => call.sleep(delay),
            }
        }
    }

    /// Run the future `op` makes until one succeeds or the policy stops, sleeping with
    /// `sleep` between attempts (and timing attempts out with it).
    pub async fn call_async_with<R, E, F, Fut, S, SFut>(
        mut self,
        mut op: F,
        sleep: S,
    ) -> Result<R, E>
    where
        F: FnMut() -> Fut,
        Fut: Future<Output = Result<R, E>>,
        S: Fn(Duration) -> SFut,
        SFut: Future<Output = ()>,
        C: Classifier<E>,
        H: Hook<E>,
        K: CircuitSlot<'p, E>,
        T: TimeoutSlot<E>,
    {
        let timeout = self.protect.timeout.slot();
        macro_rules! drive {
            ($call:ident) => {
                loop {
                    // The outcome goes out of scope before the sleep, so the future does not
                    // keep it alive across the await.
                    let delay = {
                        let out = match timeout {
                            None => $call.attempt_async(op()).await,
                            Some((limit, timed_out)) => {
                                let result =
                                    $call.attempt_async(timed(op(), sleep(limit), limit)).await;
                                $call.settle_timed(result, |t| Err(timed_out(t)))
                            }
                        };
                        match $call.after(&out, &self.classifier, &mut self.hook) {
                            Step::Return => return out,
                            Step::Retry(delay) => delay,
                        }
                    };
                    if !clock::virtual_sleep(delay) && !delay.is_zero() {
                        sleep(delay).await;
                    }
                }
            };
        }
        // One engine for both cases, its extra state `None` without adaptive policy or
        // protection: a local of each kind would both be kept in the future (each lives across
        // two awaits), where this is the size of the larger one.
        let mut call: Call<'p, Option<Full<'p>>> = if self.is_lean::<E>() {
            self.begin_lean(H::ACTIVE).map_extra(|_| None)
        } else {
            self.begin_full(H::ACTIVE)?.map_extra(Some)
        };
        drive!(call)
    }

    /// Run the future `op` makes until one succeeds or the policy stops, sleeping with tokio.
    // A plain `fn` returning the inner future, not an `async fn` awaiting it: each `async fn`
    // layer would keep its own copy of the arguments in the future.
    #[cfg(feature = "tokio")]
    pub fn call_async<R, E, F, Fut>(self, op: F) -> impl Future<Output = Result<R, E>>
    where
        F: FnMut() -> Fut,
        Fut: Future<Output = Result<R, E>>,
        C: Classifier<E>,
        H: Hook<E>,
        K: CircuitSlot<'p, E>,
        T: TimeoutSlot<E>,
    {
        self.call_async_with(op, clock::tokio_sleep)
    }
}

impl RetryPolicy {
    /// Run `op` under this policy, classifying errors with [`Classify`].
    ///
    /// ```
    /// use retry_kit::{testing, RetryPolicy};
    /// use std::{io, time::Duration};
    ///
    /// let policy = RetryPolicy::exponential(Duration::from_millis(10)).attempts(5);
    /// let mut resets = 2;
    /// let (result, slept) = testing::record_sleeps(|| {
    ///     policy.call(|| {
    ///         if resets > 0 {
    ///             resets -= 1;
    ///             return Err(io::Error::from(io::ErrorKind::ConnectionReset));
    ///         }
    ///         Ok(42)
    ///     })
    /// });
    /// assert_eq!(result.unwrap(), 42);
    /// assert_eq!(slept.len(), 2);
    /// ```
    #[inline]
    pub fn call<T, E: Classify>(&self, op: impl FnMut() -> Result<T, E>) -> Result<T, E> {
        Retry::new(self).call(op)
    }

    /// Run the futures `op` makes under this policy, sleeping with tokio.
    ///
    /// ```
    /// use retry_kit::RetryPolicy;
    /// use std::{io, time::Duration};
    ///
    /// # #[tokio::main(flavor = "current_thread", start_paused = true)]
    /// # async fn main() {
    /// let policy = RetryPolicy::fixed(Duration::from_secs(1)).attempts(3);
    /// let start = tokio::time::Instant::now();
    /// let result: Result<(), io::Error> = policy
    ///     .call_async(|| async { Err(io::Error::from(io::ErrorKind::ConnectionRefused)) })
    ///     .await;
    /// assert!(result.is_err());
    /// // Two sleeps of at most 1 s each, on tokio's paused clock.
    /// assert!(start.elapsed() <= Duration::from_secs(2));
    /// # }
    /// ```
    #[cfg(feature = "tokio")]
    pub fn call_async<T, E, F, Fut>(&self, op: F) -> impl Future<Output = Result<T, E>>
    where
        E: Classify,
        F: FnMut() -> Fut,
        Fut: Future<Output = Result<T, E>>,
    {
        // Not an `async fn`, for the reason given on `Retry::call_async`.
        Retry::new(self).call_async(op)
    }
}

/// What `#[retryable(policy = ...)]` accepts: a [`RetryPolicy`] or a reference to one.
#[diagnostic::on_unimplemented(
    message = "`policy = ...` takes a `RetryPolicy` or a `&RetryPolicy`, not `{Self}`",
    label = "expected a `RetryPolicy`"
)]
pub trait AsPolicy {
    /// The policy.
    fn as_policy(&self) -> &RetryPolicy;
}

impl AsPolicy for RetryPolicy {
    #[inline]
    fn as_policy(&self) -> &RetryPolicy {
        self
    }
}

impl<P: AsPolicy + ?Sized> AsPolicy for &P {
    #[inline]
    fn as_policy(&self) -> &RetryPolicy {
        (**self).as_policy()
    }
}

impl<P: AsPolicy + ?Sized> AsPolicy for std::sync::Arc<P> {
    #[inline]
    fn as_policy(&self) -> &RetryPolicy {
        (**self).as_policy()
    }
}

impl<P: AsPolicy + ?Sized> AsPolicy for Box<P> {
    #[inline]
    fn as_policy(&self) -> &RetryPolicy {
        (**self).as_policy()
    }
}

/// The policy behind `policy = expr`.
#[inline]
pub fn policy_of<P: AsPolicy + ?Sized>(policy: &P) -> &RetryPolicy {
    policy.as_policy()
}
