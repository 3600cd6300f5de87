//! [`Durable`]: a builder's call that outlives the process: its key from the work's identity,
//! its attempts continued from a persisted [`RetryState`], and a long wait handed back rather
//! than slept.

use super::retry::Retry;
use crate::class::ErrorClass;
use crate::clock;
use crate::context::IdempotencyKey;
use crate::durable::record::bounded_text;
use crate::durable::{AttemptRecord, Plan, RetryState};
use crate::policy::RetryPolicy;
use crate::run::classifier::Classifier;
use crate::run::equip::Equip;
use crate::run::hook::{FmtFn, Hook};
use crate::run::outcome::Outcome;
use crate::run::plumbing::FullNotes;
use crate::run::timeout::{TimeoutSlot, Untimed};
use crate::run::{Call, CallPolicy};
use crate::stop::{Failure, Next, StopReason};
use std::fmt;
use std::future::Future;
use std::hash::Hash;
use std::time::{Duration, SystemTime};

/// A [`Retry`] whose call outlives the process: what [`Retry::idempotency_key`],
/// [`Retry::resume`] and [`Retry::defer_after`] make, in any combination.
///
/// - **The key** is a fixed function of a value that names the work
///   ([`idempotency_key`](Self::idempotency_key), say the task's interval and its name), the
///   same in every process that runs it: a task re-run after a crash sends the key its first
///   run sent, and the receiver deduplicates. Calls nested in its attempts derive their keys
///   from it. (Without it, a resumed call keeps the key its state persisted; a first run draws
///   one and writes it in the state, which only helps if the state is saved before anything
///   is sent.)
/// - **The state** ([`resume`](Self::resume)) is where the call continues from and writes to:
///   the attempts made by earlier runs (the next is numbered after them and counts against the
///   same `attempts`), the previous sleep, the key, the wall-clock start of the first attempt
///   (the policy's `deadline` is measured from it, across processes) and the run log, one
///   [`AttemptRecord`] per attempt of this run. A first run passes `RetryState::default()`.
/// - **Deferral** ([`defer_after`](Self::defer_after)): a wait longer than `d`, or a breaker
///   that is open, stops the call with [`StopReason::Deferred { until }`](StopReason::Deferred)
///   instead of sleeping, and the state's [`resume_at`](RetryState::resume_at) says when to run
///   it again: a scheduler re-queues it and frees the slot. A fixed or exponential wait is
///   still capped by the policy's `max_delay` (30 s by default): raise it for the hour-long
///   waits deferral is for.
///
/// ```
/// # extern crate retry_runtime as retry_kit;
/// use retry_kit::durable::{Plan, RetryState};
/// use retry_kit::{Retry, RetryPolicy, StopReason, current_attempt, testing};
/// use std::{io, time::Duration};
///
/// let policy = RetryPolicy::exponential(Duration::from_secs(1))
///     .jitter(retry_kit::Jitter::None)
///     .max_delay(Duration::from_secs(3600))
///     .attempts(10);
/// let mut state = RetryState::default(); // what the scheduler stored: a task not yet run
/// let mut keys = Vec::new();
///
/// // First run: two quick failures are slept in the slot; the third wait (4 s) is handed back.
/// let (result, slept) = testing::record_sleeps(|| {
///     Retry::new(&policy)
///         .idempotency_key(&("2026-12-03", "billing-export"))
///         .resume(&mut state)
///         .defer_after(Duration::from_secs(3))
///         .call(|| {
///             keys.push(current_attempt().unwrap().idempotency_key());
///             Err::<(), _>(io::Error::from(io::ErrorKind::ConnectionReset))
///         })
/// });
/// assert!(result.is_err());
/// assert_eq!(slept, [Duration::from_secs(1), Duration::from_secs(2)]);
/// assert_eq!(state.attempts(), 3);
/// let last = state.run_log().last().unwrap();
/// assert_eq!(last.next(), Plan::Retry { after: Duration::from_secs(4) });
/// assert!(state.resume_at().is_some());
///
/// // Second run, maybe in another process, from the state the scheduler saved: attempt 4, the
/// // same key (the value given by value or by reference), and it succeeds.
/// let answer = Retry::new(&policy)
///     .idempotency_key(("2026-12-03", "billing-export"))
///     .resume(&mut state)
///     .defer_after(Duration::from_secs(3))
///     .call(|| {
///         let attempt = current_attempt().unwrap();
///         keys.push(attempt.idempotency_key());
///         Ok::<_, io::Error>(attempt.number())
///     });
/// assert_eq!(answer.unwrap(), 4);
/// assert!(keys.iter().all(|k| *k == keys[0]));
/// assert_eq!(state.run_log().last().unwrap().next(), Plan::Done);
/// assert_eq!(state.resume_at(), None);
/// ```
#[derive(Debug)]
#[must_use = "a Retry does nothing until `call` or `call_async`"]
pub struct Durable<'p, 's, C, H, S, T> {
    retry: Retry<'p, C, H, S, T>,
    key: Option<IdempotencyKey>,
    state: Option<&'s mut RetryState>,
    defer: Option<Duration>,
}

impl<'p, C, H, S, T> Retry<'p, C, H, S, T> {
    /// Make the call's idempotency key a fixed function of `value`, a value that names the work
    /// (see [`Durable`]): the same value gives the same key in any process, build, platform and
    /// version of the crate ([`IdempotencyKey::of`]). Name the operation in the value too
    /// (`(interval, "billing-export")`): the builder's calls share one operation id. The value
    /// may be given by reference too: `&v` gives the key `v` gives.
    pub fn idempotency_key<K: Hash>(self, value: K) -> Durable<'p, 'static, C, H, S, T> {
        Durable::of(self).idempotency_key(value)
    }

    /// Continue the call `state` persisted, and write this run's attempts into it (see
    /// [`Durable`]). A first run passes `RetryState::default()`.
    pub fn resume(self, state: &mut RetryState) -> Durable<'p, '_, C, H, S, T> {
        Durable::of(self).resume(state)
    }

    /// Hand back a wait longer than `limit`, or an open breaker, as
    /// [`StopReason::Deferred`] instead of sleeping (see [`Durable`]).
    pub fn defer_after(self, limit: Duration) -> Durable<'p, 'static, C, H, S, T> {
        Durable::of(self).defer_after(limit)
    }
}

/// Start one run of a durable call (`call` and `call_async_with` alike): the builder `$retry`
/// taken apart, the engine `$call` equipped with its protection, continuing `$state` and keyed,
/// and `$hook`, the builder's hook with a record of each attempt in the state. A first attempt
/// the breaker refuses returns from the enclosing function with the refusal, after noting when
/// a deferring call may run again. A macro, not a function: the hook borrows the state that
/// the caller hands to `finish` once the hook is dropped.
macro_rules! begin_durable {
    ($durable:ident, $outcome:ty => $retry:ident, $call:ident, $hook:ident, $state:ident) => {
        let Durable {
            retry: $retry,
            key,
            state: mut $state,
            defer,
        } = $durable;
        let name = $retry.name();
        let policy = Deferring {
            policy: $retry.policy,
            defer,
        };
        // The records carry times: the clock is read whatever the builder's hook wants.
        let $call = Call::starting(policy, true);
        let mut $call = Equip::<<$outcome as Outcome>::Error>::equip(&$retry.protection, $call);
        start(&mut $call, key, $state.as_deref_mut());
        if let Err(refused) =
            Equip::<<$outcome as Outcome>::Error>::admit(&$retry.protection, &mut $call)
        {
            refused_now(&$call, defer, $state.as_deref_mut());
            let mut hook = crate::observe::observed($retry.hook, name);
            crate::observe::refused(&mut hook);
            return <$outcome as Outcome>::failure(refused);
        }
        let mut $hook = crate::observe::observed(
            Recorder {
                inner: $retry.hook,
                state: $state.as_deref_mut(),
            },
            name,
        );
    };
}

impl<'p, 's, C, H, S, T> Durable<'p, 's, C, H, S, T> {
    fn of(retry: Retry<'p, C, H, S, T>) -> Durable<'p, 'static, C, H, S, T> {
        Durable {
            retry,
            key: None,
            state: None,
            defer: None,
        }
    }

    /// See [`Retry::idempotency_key`].
    pub fn idempotency_key<K: Hash>(mut self, value: K) -> Self {
        self.key = Some(IdempotencyKey::of(
            &value,
            <&RetryPolicy as CallPolicy>::OPERATION,
        ));
        self
    }

    /// See [`Retry::resume`].
    pub fn resume<'t>(self, state: &'t mut RetryState) -> Durable<'p, 't, C, H, S, T> {
        Durable {
            retry: self.retry,
            key: self.key,
            state: Some(state),
            defer: self.defer,
        }
    }

    /// See [`Retry::defer_after`].
    pub fn defer_after(mut self, limit: Duration) -> Self {
        self.defer = Some(limit);
        self
    }

    /// Run `op` until it succeeds, the policy stops, or a wait is handed back, recording each
    /// attempt in the state (an error's `Display` text in its record).
    pub fn call<O: Outcome>(self, mut op: impl FnMut() -> O) -> O
    where
        O::Error: fmt::Display,
        C: Classifier<O::Error>,
        H: Hook<O::Error>,
        S: Equip<'p, O::Error>,
        T: Untimed,
    {
        begin_durable!(self, O => retry, call, hook, state);
        let classifier = retry.classifier;
        let out =
            crate::retry_sync!(call.after(&classifier, &mut hook) <- call.attempt_sync(&mut op));
        drop(hook);
        finish(&call, state);
        out
    }

    /// [`call`](Self::call) for futures, sleeping with tokio (a portable timer outside a tokio
    /// runtime) and timing attempts out as the builder says.
    #[cfg(feature = "tokio")]
    #[cfg_attr(docsrs, doc(cfg(feature = "tokio")))]
    pub async fn call_async<O, F, Fut>(self, op: F) -> O
    where
        O: Outcome,
        O::Error: fmt::Display,
        F: FnMut() -> Fut,
        Fut: Future<Output = O>,
        C: Classifier<O::Error>,
        H: Hook<O::Error>,
        S: Equip<'p, O::Error>,
        T: TimeoutSlot<O::Error>,
    {
        self.call_async_with(op, clock::tokio_sleep).await
    }

    /// [`call_async`](Self::call_async) sleeping with `sleep`.
    pub async fn call_async_with<O, F, Fut, Sl, SlFut>(self, mut op: F, sleep: Sl) -> O
    where
        O: Outcome,
        O::Error: fmt::Display,
        F: FnMut() -> Fut,
        Fut: Future<Output = O>,
        Sl: Fn(Duration) -> SlFut,
        SlFut: Future<Output = ()>,
        C: Classifier<O::Error>,
        H: Hook<O::Error>,
        S: Equip<'p, O::Error>,
        T: TimeoutSlot<O::Error>,
    {
        begin_durable!(self, O => retry, call, hook, state);
        let (classifier, timeout) = (retry.classifier, retry.timeout);
        let out = crate::retry_async!(call.after(&classifier, &mut hook) <- {
            let out = call.attempt_timed(&timeout, op(), &sleep).await;
            call.settle::<O, T>(&timeout, out)
        }, sleep: &sleep);
        drop(hook);
        finish(&call, state);
        out
    }
}

/// Set up a durable call before its first attempt: continue the persisted state, and fix the
/// key (the work's, else the persisted one, else one drawn now) and write it in the state, so
/// that every later run sends it.
fn start<'p, Sp, P>(
    call: &mut Call<'p, Sp, P>,
    key: Option<IdempotencyKey>,
    state: Option<&mut RetryState>,
) where
    P: CallPolicy<Notes = FullNotes>,
{
    if let Some(state) = &state {
        call.resume(state);
    }
    if let Some(key) = key {
        call.set_key(key);
    }
    if let Some(state) = state {
        state.key = Some(call.key());
        state.resume_at = None;
        let now = clock::wall_now();
        state.started.get_or_insert(now);
        // This run's first attempt starts now, whatever an earlier run expected.
        state.attempt_started = Some(now);
    }
}

/// The policy of a durable call: the builder's, with the longest wait it sleeps.
#[derive(Clone, Copy)]
struct Deferring<'p> {
    policy: &'p RetryPolicy,
    defer: Option<Duration>,
}

impl CallPolicy for Deferring<'_> {
    #[inline(always)]
    fn policy(&self) -> &RetryPolicy {
        self.policy
    }
    type Notes = FullNotes;
    #[inline(always)]
    fn defer_after(&self) -> Option<Duration> {
        self.defer
    }
}

/// The breaker refused this run's first attempt: nothing was sent and nothing is recorded; a
/// deferring call says when the breaker admits a probe.
fn refused_now<'p, Sp, P>(
    call: &Call<'p, Sp, P>,
    defer: Option<Duration>,
    state: Option<&mut RetryState>,
) where
    Sp: crate::run::plumbing::Protection<'p>,
    P: CallPolicy,
{
    if let (Some(state), Some(_)) = (state, defer) {
        let now = clock::wall_now();
        state.resume_at = now.checked_add(call.reopens_in().unwrap_or(Duration::ZERO));
    }
}

/// The call ended: keep what the engine knows of it for the next run.
fn finish<'p, Sp, P: CallPolicy<Notes = FullNotes>>(
    call: &Call<'p, Sp, P>,
    state: Option<&mut RetryState>,
) {
    if let Some(state) = state {
        let (attempts, previous) = call.progress();
        state.attempts = state.attempts.max(attempts);
        if previous.is_some() {
            state.previous_delay = previous;
        }
    }
}

/// The hook of a durable call: the builder's own, and a record of each attempt in the state.
struct Recorder<'r, H> {
    inner: H,
    state: Option<&'r mut RetryState>,
}

impl<H> Recorder<'_, H> {
    /// Record an attempt that ended now: `number`, its class and error text if it failed, what
    /// follows it, when the next attempt starts (`wait` from now) and, for a handed-back wait,
    /// when the call is due again.
    fn record(
        &mut self,
        number: u32,
        failed: Option<(ErrorClass, String)>,
        next: Plan,
        wait: Duration,
        due: Option<SystemTime>,
    ) {
        if let Some(state) = self.state.as_deref_mut() {
            let now = clock::wall_now();
            let (class, error) = match failed {
                Some((class, error)) => (Some(class), Some(bounded_text(error))),
                None => (None, None),
            };
            state.push(AttemptRecord {
                number,
                started: state.attempt_started.unwrap_or(now),
                ended: now,
                class,
                error,
                next,
            });
            state.attempts = state.attempts.max(number);
            state.attempt_started = Some(now.checked_add(wait).unwrap_or(now));
            state.resume_at = due;
        }
    }
}

impl<E: fmt::Display, H: Hook<E>> Hook<E> for Recorder<'_, H> {
    fn on_failure(&mut self, failure: &Failure<'_, E>) {
        if H::ACTIVE {
            self.inner.on_failure(failure);
        }
        let (next, wait, due) = match failure.next {
            Next::Retry(wait) => (Plan::Retry { after: wait }, wait, None),
            Next::Stop(StopReason::Deferred { until }) => {
                let after = until.duration_since(clock::wall_now()).unwrap_or_default();
                (Plan::Retry { after }, Duration::ZERO, Some(until))
            }
            Next::Stop(StopReason::Permanent) => (Plan::Quarantine, Duration::ZERO, None),
            Next::Stop(StopReason::AlreadyDone) => (Plan::Done, Duration::ZERO, None),
            Next::Stop(reason) => (Plan::Stop(reason), Duration::ZERO, None),
            // A durable call is never hedged.
            _ => return,
        };
        let failed = Some((failure.class, failure.error.to_string()));
        self.record(failure.attempt, failed, next, wait, due);
    }

    fn on_success(&mut self, attempt: u32) {
        if H::ACTIVE {
            self.inner.on_success(attempt);
        }
        self.record(attempt, None, Plan::Done, Duration::ZERO, None);
    }

    fn display_fn(&self) -> Option<FmtFn<E>> {
        self.inner.display_fn()
    }

    fn wants_clock(&self) -> bool {
        true
    }
}
