//! The retry loops: one engine ([`Call`]) driven by the generated code of `#[retryable]` and by
//! the non-macro form ([`Retry`], [`RetryPolicy::call`], [`RetryPolicy::call_async`]).
//!
//! The engine is a small state machine. A loop asks it to run an attempt (which makes the
//! attempt visible to [`current_attempt`](crate::current_attempt)), then hands it the outcome
//! and gets back either "return this outcome" or "sleep this long, then go again". The success
//! path reads no clock, draws no random number and allocates nothing unless a deadline or a
//! hook asks for time.

use crate::class::{Classify, ErrorClass};
use crate::clock;
use crate::context::{self, CallCtx, Entered};
use crate::policy::{Nested, RetryPolicy};
use crate::rng;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

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
#[derive(Debug)]
pub struct Call<'p> {
    policy: &'p RetryPolicy,
    ctx: CallCtx,
    start: Option<Instant>,
    previous: Duration,
    max_attempts: u32,
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
        let (start, deadline) = if needs_clock || policy.deadline.is_some() {
            Self::clocked(policy, inherited.deadline)
        } else {
            (None, inherited.deadline)
        };
        let max_attempts = if inherited.inside_attempt && policy.nested == Nested::Once {
            1
        } else {
            policy.attempts.max(1)
        };
        Call {
            policy,
            ctx: CallCtx::new(deadline),
            start,
            previous: policy.base,
            max_attempts,
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
        let _entered: Entered<'_> = self.ctx.enter();
        body()
    }

    /// Wrap one attempt of an async body, visible to `current_attempt()` on every poll.
    #[inline]
    pub fn attempt_async<R, F: Future<Output = R>>(&mut self, body: F) -> InAttempt<'_, F> {
        self.ctx.begin_attempt();
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
            None => Step::Return,
            Some(error) => self.failed(error, classifier, hook),
        }
    }

    #[cold]
    fn failed<E, C, H>(&mut self, error: &E, classifier: &C, hook: &mut H) -> Step
    where
        C: Classifier<E>,
        H: Hook<E>,
    {
        let class = classifier.class(error);
        let next = match self.stop_for_class(class) {
            Some(reason) => Next::Stop(reason),
            None => self.schedule(classifier.retry_after(error)),
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
        match next {
            Next::Retry(delay) => Step::Retry(delay),
            Next::Stop(_) => Step::Return,
        }
    }

    /// A stop decided by the class and the attempt count alone.
    fn stop_for_class(&self, class: ErrorClass) -> Option<StopReason> {
        match class {
            ErrorClass::Permanent => return Some(StopReason::Permanent),
            ErrorClass::IdempotentOnly if !self.policy.idempotent => {
                return Some(StopReason::NotIdempotent);
            }
            _ => {}
        }
        if self.attempt() >= self.max_attempts {
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
        if self.policy.base.is_zero() && retry_after.is_none() && self.ctx.deadline.is_none() {
            self.previous = Duration::ZERO;
            return Next::Retry(Duration::ZERO);
        }
        self.schedule_slow(retry_after)
    }

    fn schedule_slow(&mut self, retry_after: Option<Duration>) -> Next {
        let policy = self.policy;
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
pub struct Retry<'p, C = ByTrait, H = NoHook> {
    policy: &'p RetryPolicy,
    classifier: C,
    hook: H,
}

impl<'p> Retry<'p> {
    /// Retry by `policy`, classifying errors through their [`Classify`] impl.
    pub const fn new(policy: &'p RetryPolicy) -> Self {
        Retry {
            policy,
            classifier: ByTrait,
            hook: NoHook,
        }
    }
}

impl<'p, C, H> Retry<'p, C, H> {
    /// Classify errors with a function (or anything [`Classifier`]) instead of `Classify`.
    pub fn classify<C2>(self, classifier: C2) -> Retry<'p, C2, H> {
        Retry {
            policy: self.policy,
            classifier,
            hook: self.hook,
        }
    }

    /// Call `hook` with every failed attempt's [`Failure`] record.
    pub fn on_failure<H2>(self, hook: H2) -> Retry<'p, C, H2> {
        Retry {
            policy: self.policy,
            classifier: self.classifier,
            hook,
        }
    }

    /// Run `op` until it succeeds or the policy stops; return its last result.
    pub fn call<T, E>(mut self, mut op: impl FnMut() -> Result<T, E>) -> Result<T, E>
    where
        C: Classifier<E>,
        H: Hook<E>,
    {
        let mut call = Call::new(self.policy, H::ACTIVE);
        loop {
            let out = call.attempt_sync(&mut op);
            match call.after(&out, &self.classifier, &mut self.hook) {
                Step::Return => return out,
                Step::Retry(delay) => call.sleep(delay),
            }
        }
    }

    /// Run the future `op` makes until one succeeds or the policy stops, sleeping with
    /// `sleep` between attempts.
    pub async fn call_async_with<T, E, F, Fut, S, SFut>(
        mut self,
        mut op: F,
        sleep: S,
    ) -> Result<T, E>
    where
        F: FnMut() -> Fut,
        Fut: Future<Output = Result<T, E>>,
        S: Fn(Duration) -> SFut,
        SFut: Future<Output = ()>,
        C: Classifier<E>,
        H: Hook<E>,
    {
        let mut call = Call::new(self.policy, H::ACTIVE);
        loop {
            // The outcome goes out of scope before the sleep, so the future does not keep it
            // alive across the await.
            let delay = {
                let out = call.attempt_async(op()).await;
                match call.after(&out, &self.classifier, &mut self.hook) {
                    Step::Return => return out,
                    Step::Retry(delay) => delay,
                }
            };
            if !delay.is_zero() {
                sleep(delay).await;
            }
        }
    }

    /// Run the future `op` makes until one succeeds or the policy stops, sleeping with tokio.
    // A plain `fn` returning the inner future, not an `async fn` awaiting it: each `async fn`
    // layer would keep its own copy of the arguments in the future.
    #[cfg(feature = "tokio")]
    pub fn call_async<T, E, F, Fut>(self, op: F) -> impl Future<Output = Result<T, E>>
    where
        F: FnMut() -> Fut,
        Fut: Future<Output = Result<T, E>>,
        C: Classifier<E>,
        H: Hook<E>,
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
