//! The engine: the state of one retried call, and every decision between its attempts.
//!
//! A loop ([`retry_sync!`](crate::retry_sync) or [`retry_async!`](crate::retry_async), the
//! only two in the crate) asks the engine to run an attempt, which makes the attempt visible to
//! [`current_attempt`](crate::current_attempt), then hands it the outcome and gets back either
//! "return it" (`None`) or "sleep this long, then go again" (`Some(delay)`). The success path
//! reads no clock, draws no random number and allocates nothing unless a deadline or a hook
//! asks for time.

mod decide;
mod hedged;
mod in_attempt;
mod schedule;

pub use hedged::Ended;
pub use in_attempt::InAttempt;

use decide::Failed;

use super::call_policy::CallPolicy;
use super::classifier::Classifier;
use super::hook::Hook;
use super::notes::sealed::Kept;
use super::outcome::Outcome;
use super::protection::{Adapted, PanicGuard, Protected, Protection, Unprotected, Window};
use super::timeout::TimeoutSlot;
use crate::adaptive::{Adapt, Tuning};
use crate::clock;
use crate::context::{self, CallCtx, Entered};
use crate::error::CircuitOpen;
use crate::policy::{Nested, RetryPolicy};
use std::future::Future;
use std::marker::PhantomData;
use std::time::{Duration, Instant};

/// The state of one retried call: the engine behind every loop in this crate.
///
/// [`Retry`](crate::Retry) and the code `#[retryable]` generates drive it the same way, through
/// the crate's one sync loop and one async loop:
///
/// ```
/// # extern crate retry_runtime as retry_kit;
/// use retry_kit::run::{ByTrait, Call, NoHook};
/// use retry_kit::RetryPolicy;
/// use std::io;
///
/// let policy = RetryPolicy::new().attempts(3).base(std::time::Duration::ZERO);
/// let mut call = Call::new(&policy);
/// let mut calls = 0;
/// let out = loop {
///     let out = call.attempt_sync(|| {
///         calls += 1;
///         if calls < 2 { Err(io::Error::from(io::ErrorKind::ConnectionReset)) } else { Ok(calls) }
///     });
///     match call.after(&out, &ByTrait, &mut NoHook) {
///         None => break out,
///         Some(delay) => call.sleep(delay),
///     }
/// };
/// assert_eq!(out.unwrap(), 2);
/// ```
///
/// `S` is the shared protection the call carries: none ([`Unprotected`], what [`Call::new`]
/// makes) or, once a [`Protections`](super::Protections) protection [equips](super::Equip) it,
/// [`Protected`]. A type rather than `Option` fields, so that a
/// call without protection keeps none of its state (not in its stack frame, not across the
/// awaits of an async retryable future) and checks none of it on the success path.
///
/// `P` is where the policy is ([`CallPolicy`]): a `&RetryPolicy` for the builder and
/// `RetryPolicy::call`, a zero-sized type naming a constant for `#[retryable]`. Its
/// [`Notes`](CallPolicy::Notes) say what the call keeps between attempts besides its context:
/// for the attribute's plain cases, nothing.
#[derive(Debug)]
pub struct Call<'p, S = Unprotected, P: CallPolicy = &'p RetryPolicy> {
    /// Where the policy is: a reference, or for `#[retryable]` a zero-sized type naming a
    /// constant (see [`CallPolicy`]), so that the call's state holds no pointer to it.
    policy: P,
    /// Keeps `'p` a parameter of every call: with a zero-sized policy it bounds only the
    /// protection the call is equipped with.
    lifetime: PhantomData<&'p RetryPolicy>,
    ctx: CallCtx,
    /// The start time, the previous sleep, the attempt limit and whether the running attempt
    /// timed out, or nothing for a policy that needs none of them (see
    /// [`Notes`](super::plumbing::Notes)).
    notes: P::Notes,
    pub(super) protection: S,
}

/// Whether a call under `policy` makes a single attempt: `nested = "once"` inside another
/// call's attempt.
#[inline(always)]
fn single_attempt(policy: &RetryPolicy, inherited: context::Inherited) -> bool {
    inherited.inside_attempt && policy.nested == Nested::Once
}

/// The `max_attempts` of a single-attempt call whose policy allows `attempts`: 0 (defer to
/// the outer call) if it would have retried, else 1.
#[inline]
const fn once_limit(attempts: u32) -> u32 {
    if attempts > 1 { 0 } else { 1 }
}

impl<'p, P: CallPolicy> Call<'p, Unprotected, P> {
    /// Start a call under `policy`. It reads the clock only if the policy has a deadline; a
    /// call whose hook reports [`Failure::elapsed`](super::Failure::elapsed) starts with
    /// [`for_hook`](Self::for_hook).
    #[inline(always)]
    pub fn new(policy: P) -> Self {
        Self::starting(policy, false)
    }

    /// Start a call under `policy` that reads the clock at its start whatever the policy says,
    /// for records that carry the time elapsed ([`Failure::elapsed`](super::Failure::elapsed)).
    #[inline(always)]
    pub fn clocked(policy: P) -> Self {
        Self::starting(policy, true)
    }

    /// Start a call under `policy` for `hook`'s records: it also reads the clock when the hook
    /// wants the time elapsed in them ([`Hook::wants_clock`]: a function does; the crate's
    /// `tracing` and `metrics` reporting does while a subscriber or recorder listens).
    #[inline(always)]
    pub fn for_hook<E, H: Hook<E>>(policy: P, hook: &H) -> Self {
        Self::starting(policy, hook.wants_clock())
    }

    /// Start a call; `needs_clock` asks for the start time to be read even without a deadline
    /// (for [`Failure::elapsed`](super::Failure::elapsed)).
    // Always inlined, so that with a `const` policy and no hook the clock branches fold away
    // and the success path is a thread-local read and a few stores. The clock work is in line
    // too: out of line, its prologue and a return through memory cost a call with a hook or
    // a deadline more than the arithmetic.
    #[inline(always)]
    pub(crate) fn starting(policy: P, needs_clock: bool) -> Self {
        let source = policy;
        let policy = source.policy();
        let inherited = context::inherited();
        let (start, deadline) = match policy.deadline {
            Some(budget) => Self::start_and_deadline(budget, inherited.deadline),
            // A hook's clock: one read, no deadline to work out.
            None if needs_clock => (Some(clock::now()), inherited.deadline),
            None => (None, inherited.deadline),
        };
        let single = single_attempt(policy, inherited);
        // At least 1: `RetryPolicy::attempts` clamps.
        let max_attempts = if single {
            once_limit(policy.attempts)
        } else {
            policy.attempts
        };
        Call {
            policy: source,
            lifetime: PhantomData,
            ctx: CallCtx::new(deadline, P::OPERATION),
            notes: P::Notes::new(policy, start, max_attempts),
            protection: Unprotected,
        }
    }

    /// The start time, and the effective deadline: this call's own or the inherited one,
    /// whichever comes first.
    #[inline]
    fn start_and_deadline(
        budget: Duration,
        inherited: Option<Instant>,
    ) -> (Option<Instant>, Option<Instant>) {
        let start = clock::now();
        let deadline = match start.checked_add(budget) {
            Some(own) => Some(match inherited {
                Some(outer) if outer < own => outer,
                _ => own,
            }),
            // A deadline too far away to represent is no deadline.
            None => inherited,
        };
        (Some(start), deadline)
    }
}

impl<'p, S, P: CallPolicy> Call<'p, S, P> {
    /// Make this call's idempotency key the key of the work `value` names (what
    /// `#[retryable(idempotency_key = ..)]` does): [`IdempotencyKey::of`](crate::IdempotencyKey::of) the value and this
    /// call's operation, the same in every process that runs the same work.
    pub fn keyed_by<K: std::hash::Hash + ?Sized>(&mut self, value: &K) {
        self.ctx
            .set_key(crate::IdempotencyKey::of(value, P::OPERATION));
    }

    /// Make `key` this call's idempotency key.
    pub fn set_key(&mut self, key: crate::IdempotencyKey) {
        self.ctx.set_key(key);
    }

    /// This call's idempotency key, drawn (or derived from an enclosing call's) now if no
    /// attempt has asked for it yet: for a call that persists it before it sends anything.
    pub fn key(&self) -> crate::IdempotencyKey {
        self.ctx.key_now()
    }
}

impl<'p, S, P: CallPolicy<Notes = super::plumbing::FullNotes>> Call<'p, S, P> {
    /// Continue a call whose earlier attempts ran elsewhere (an earlier run of a task, in
    /// this process or another), from what it persisted: its attempts made (the next attempt
    /// is numbered after them and counts against the same limit), its previous sleep
    /// (decorrelated jitter grows from it), its key, and the wall-clock start of its first
    /// attempt, from which its deadline and [`Failure::elapsed`](super::Failure::elapsed) are
    /// measured. Called before the first attempt of this run.
    pub fn resume(&mut self, state: &crate::durable::RetryState) {
        self.ctx.set_attempts(state.attempts);
        if let Some(key) = state.key {
            self.ctx.set_key(key);
        }
        let previous = state
            .previous_delay
            .map_or(0, |d| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX));
        let start = state.started.map(|started| {
            let elapsed = clock::wall_now()
                .duration_since(started)
                .unwrap_or_default();
            let now = clock::now();
            now.checked_sub(elapsed).unwrap_or(now)
        });
        if let (Some(start), Some(budget)) = (start, self.policy.policy().deadline) {
            let own = start.checked_add(budget);
            self.ctx.deadline = match (own, self.ctx.deadline) {
                (Some(own), Some(other)) => Some(own.min(other)),
                (own, other) => own.or(other),
            };
        }
        let start = start.or(Kept::start(&self.notes));
        self.notes.resumed(start, previous);
    }

    /// The attempts made so far (by this run and the earlier ones it continues) and the
    /// previous sleep: what a call persists when it ends.
    pub fn progress(&self) -> (u32, Option<Duration>) {
        let previous = self.notes.previous();
        let previous = (previous != 0).then(|| Duration::from_nanos(previous));
        (self.ctx.attempt(), previous)
    }
}

impl<'p, P: CallPolicy> Call<'p, Unprotected, P> {
    /// The same call with [`Protected`] state, whose adaptive part is `window`.
    #[inline]
    pub(super) fn protected<W: Window>(self, window: W) -> Call<'p, Protected<'p, W>, P> {
        Call {
            policy: self.policy,
            lifetime: PhantomData,
            ctx: self.ctx,
            notes: self.notes,
            protection: self.protection.protected(window),
        }
    }

    /// Adjust this call by an adaptive policy: its attempts, first delay and multiplier are
    /// tuned now, from the policy's window, and every attempt is recorded into it.
    ///
    /// Under `nested = "once"` inside another attempt the call still makes a single attempt
    /// (and still records it).
    // Out of line: the tuning is rare work, and inlined it would bloat every protected call.
    #[inline(never)]
    pub(super) fn adaptive(self, source: &'p dyn Adapt) -> Call<'p, Protected<'p, Adapted<'p>>, P> {
        let policy = *self.policy.policy();
        let tuned = source.tune(Tuning {
            attempts: policy.attempts,
            base: policy.base,
            multiplier: policy.multiplier,
        });
        // Clamped as the policy's own builder methods clamp them.
        let tuned = policy
            .attempts(tuned.attempts)
            .base(tuned.base)
            .multiplier(tuned.multiplier);
        let mut call = self.protected(Adapted::new(source, tuned.base, tuned.multiplier));
        // Whether the call is nested-once is not kept: ask again (the enclosing attempt is the
        // one `new` saw, as the call is equipped before its first attempt).
        call.notes
            .set_max_attempts(if single_attempt(&policy, context::inherited()) {
                once_limit(tuned.attempts)
            } else {
                tuned.attempts
            });
        call
    }
}

impl<'p, S: Protection<'p>, P: CallPolicy> Call<'p, S, P> {
    /// How long until the call's breaker (if any) admits a probe: what a call that hands its
    /// wait back says when the breaker refused it.
    pub fn reopens_in(&self) -> Option<Duration> {
        self.protection.reopens_in()
    }

    /// Ask the breaker (if any) for the first attempt. On `Err`, make no attempt: return the
    /// refusal, converted into the call's error type.
    #[inline]
    pub(super) fn admit(&mut self) -> Result<(), CircuitOpen> {
        self.protection.admit()
    }

    /// Ask the throttle (if any) for the first attempt, after the breaker.
    #[inline]
    pub(super) fn admit_throttle(&mut self) -> Result<(), CircuitOpen> {
        self.protection.admit_throttle()
    }

    /// The policy in force: the declared one, or with the first delay and multiplier an
    /// adaptive policy tuned (its attempts are already the noted limit).
    #[inline]
    fn policy(&self) -> RetryPolicy {
        match self.protection.tuned() {
            Some((base, multiplier)) => RetryPolicy {
                base,
                multiplier,
                ..*self.policy.policy()
            },
            None => *self.policy.policy(),
        }
    }

    /// The first delay in force (see [`policy`](Self::policy)).
    #[inline]
    fn base(&self) -> Duration {
        match self.protection.tuned() {
            Some((base, _)) => base,
            None => self.policy.policy().base,
        }
    }

    /// The number of attempts started so far.
    #[inline]
    pub fn attempt(&self) -> u32 {
        self.ctx.attempt()
    }

    /// The most attempts this call makes; 0 for a nested `once` call that defers to the outer
    /// one after its single attempt (see [`once_limit`]).
    #[inline(always)]
    fn max_attempts(&self) -> u32 {
        self.notes.max_attempts(self.policy.policy())
    }

    /// Run one attempt of a sync body, visible to `current_attempt()` while it runs.
    #[inline]
    pub fn attempt_sync<R, F: FnOnce() -> R>(&mut self, body: F) -> R {
        self.begin_attempt();
        self.in_attempt(body)
    }

    /// Wrap one attempt of an async body, visible to `current_attempt()` on every poll.
    #[inline]
    pub fn attempt_async<R, F: Future<Output = R>>(
        &mut self,
        body: F,
    ) -> InAttempt<'_, 'p, F, S, P> {
        self.begin_attempt();
        InAttempt { call: self, body }
    }

    /// Count a new attempt, and start it with the protection (the adaptive window's clock).
    /// [`attempt_sync`](Self::attempt_sync) and [`attempt_async`](Self::attempt_async) begin
    /// theirs; a hand-written future, which cannot keep an [`InAttempt`] borrowing its own call,
    /// begins each attempt with this and runs every step of it through
    /// [`in_attempt`](Self::in_attempt).
    #[inline(always)]
    pub fn begin_attempt(&mut self) {
        self.ctx.begin_attempt();
        self.protection.begin_attempt();
    }

    /// Run one step of the running attempt (a sync body, or one poll of an async one) with the
    /// attempt visible to `current_attempt()`, and the protection told if it panics: what
    /// [`attempt_sync`](Self::attempt_sync) does with its body and [`InAttempt`] with each poll.
    ///
    /// ```
    /// # extern crate retry_runtime as retry_kit;
    /// use retry_kit::run::Call;
    /// use retry_kit::{RetryPolicy, current_attempt};
    ///
    /// let policy = RetryPolicy::new();
    /// let mut call = Call::new(&policy);
    /// call.begin_attempt();
    /// let number = call.in_attempt(|| current_attempt().map(|a| a.number()));
    /// assert_eq!(number, Some(1));
    /// assert!(current_attempt().is_none(), "only while the step runs");
    /// ```
    #[inline(always)]
    pub fn in_attempt<R>(&mut self, step: impl FnOnce() -> R) -> R {
        let _entered: Entered<'_> = self.ctx.enter();
        if S::GUARDED {
            let guard = PanicGuard(&mut self.protection);
            let out = step();
            std::mem::forget(guard);
            out
        } else {
            step()
        }
    }

    /// The call's deadline (its own or an enclosing call's), if it has one.
    ///
    /// ```
    /// # extern crate retry_runtime as retry_kit;
    /// use retry_kit::run::Call;
    /// use retry_kit::RetryPolicy;
    /// use std::time::Duration;
    ///
    /// let policy = RetryPolicy::new().deadline(Duration::from_secs(5));
    /// let call = Call::new(&policy);
    /// assert!(call.deadline().is_some());
    /// assert!(Call::new(&RetryPolicy::new()).deadline().is_none());
    /// ```
    #[inline]
    pub fn deadline(&self) -> Option<Instant> {
        self.ctx.deadline
    }

    /// The time left before the call's deadline (its own or an enclosing call's), if it has
    /// one.
    #[inline]
    pub fn time_left(&self) -> Option<Duration> {
        self.ctx
            .deadline
            .map(|deadline| deadline.saturating_duration_since(clock::now()))
    }

    /// Wrap one attempt of an async body in `timeout` (see [`TimeoutSlot`]), visible to
    /// `current_attempt()` on every poll: with a limit, the attempt is cancelled after the
    /// smaller of the limit and the time left before the deadline, with a timer from `sleep`.
    /// Hand what it produces to [`settle`](Self::settle).
    #[inline]
    pub fn attempt_timed<R, T, F, Sl, SlFut>(
        &mut self,
        timeout: &T,
        body: F,
        sleep: Sl,
    ) -> InAttempt<'_, 'p, T::Attempt<F, SlFut>, S, P>
    where
        R: Outcome,
        T: TimeoutSlot<R::Error>,
        F: Future<Output = R>,
        Sl: FnOnce(Duration) -> SlFut,
        SlFut: Future<Output = ()>,
    {
        let attempt = timeout.wrap(body, sleep, || self.time_left());
        self.attempt_async(attempt)
    }

    /// The outcome of an attempt [`attempt_timed`](Self::attempt_timed) ran: a timeout
    /// converted into the error type, and remembered (its class is idempotent-only).
    #[inline]
    pub fn settle<R, T>(&mut self, timeout: &T, out: T::Settled<R>) -> R
    where
        R: Outcome,
        T: TimeoutSlot<R::Error>,
    {
        let mut timed_out = false;
        let out = timeout.settle(out, &mut timed_out);
        if timed_out {
            self.notes.set_timed_out();
        }
        out
    }

    /// Decide what follows an attempt's outcome, calling the hook once if it failed: `None`,
    /// return the outcome (it succeeded, or the loop stops); `Some(delay)`, sleep this long and
    /// make the next attempt.
    // Always inlined, with `decide`: out of line, a failure paid a call, a prologue and its
    // arguments' spills on every failed attempt.
    #[inline(always)]
    pub fn after<R, C, H>(&mut self, outcome: &R, classifier: &C, hook: &mut H) -> Option<Duration>
    where
        R: Outcome,
        C: Classifier<R::Error>,
        H: Hook<R::Error>,
    {
        match outcome.error() {
            None => {
                // Nothing when unprotected and unobserved: the success path is the attempt
                // counter and the thread-local pointer.
                self.protection.succeeded();
                if H::ACTIVE {
                    hook.on_success(self.attempt());
                }
                None
            }
            Some(error) => {
                let failed = Failed {
                    number: self.attempt(),
                    timed_out: self.notes.take_timed_out(),
                    running: None,
                };
                self.decide(error, failed, classifier, hook).ok()
            }
        }
    }

    /// Time since the call started, or zero if no clock was read at the start.
    pub fn elapsed(&self) -> Duration {
        match self.notes.start() {
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
