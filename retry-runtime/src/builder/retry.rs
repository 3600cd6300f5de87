//! The non-macro front end: [`Retry`], a builder over the engine. [`RetryPolicy::call`] is
//! the shortcut over it.

use crate::adaptive::Adapt;
use crate::breaker::CircuitBreaker;
#[cfg(feature = "tokio")]
use crate::clock;
use crate::error::{CircuitOpen, TimedOut};
use crate::policy::RetryPolicy;
use crate::run::classifier::{ByTrait, Classifier};
use crate::run::equip::{Equip, IntoProtections, WithAdaptive, WithBudget, WithCircuit};
use crate::run::hook::{Displayed, Hook, NoHook};
use crate::run::outcome::{Conversion, Outcome};
use crate::run::protection::Unprotected;
use crate::run::slots::AsBudget;
use crate::run::timeout::{AttemptTimeout, NoTimeout, TimeoutSlot, Untimed};
use std::future::Future;
use std::time::Duration;

/// A breaker with its own conversion of a refusal: the slot [`Retry::circuit_with`] sets.
pub type BreakerWith<'p, E> = (&'p CircuitBreaker, Conversion<CircuitOpen, E>);

/// Start one call of `$retry` for outcomes `$outcome`: the engine `$call`, equipped with the
/// builder's protection, the classifier and the observed hook, as locals of the caller; a
/// breaker that refuses the first attempt makes the caller return `Outcome::failure`, which the
/// invocation says (`... else return`). A macro, so that the engine is built in place: a helper
/// returning the three as a tuple copied them on the success path.
macro_rules! begin {
    ($retry:ident, $outcome:ty => $call:ident, $classifier:ident, $hook:ident else return) => {
        let name = $retry.name();
        begin!($retry, $outcome => $call, $classifier,
            $hook = $crate::observe::observed($retry.hook, name); else return);
    };
    // A layer's hook, named per call by a subject of its own (see `observe::Subject`).
    ($retry:ident, $outcome:ty => $call:ident, $classifier:ident,
     $hook:ident = $observed:expr; else return) => {
        let mut $hook = $observed;
        let $call = $crate::run::Call::for_hook::<<$outcome as $crate::run::Outcome>::Error, _>(
            $retry.policy,
            &$hook,
        );
        let mut $call = $crate::run::Equip::<<$outcome as $crate::run::Outcome>::Error>::equip(
            &$retry.protection,
            $call,
        );
        if let Err(refused) = $crate::run::Equip::<<$outcome as $crate::run::Outcome>::Error>::admit(
            &$retry.protection,
            &mut $call,
        ) {
            $crate::observe::refused(&mut $hook);
            return <$outcome as $crate::run::Outcome>::failure(refused);
        }
        let $classifier = $retry.classifier;
    };
}

// Used by `Hedge` (run/hedge.rs) and the layers.
pub(crate) use begin;

/// The same builder with one of its parts replaced (and its type changed accordingly).
macro_rules! rebuild {
    ($retry:ident, classifier: $v:expr) => {
        rebuild!(@ $retry, $v, $retry.hook, $retry.protection, $retry.timeout)
    };
    ($retry:ident, hook: $v:expr) => {
        rebuild!(@ $retry, $retry.classifier, $v, $retry.protection, $retry.timeout)
    };
    ($retry:ident, protection: $v:expr) => {
        rebuild!(@ $retry, $retry.classifier, $retry.hook, $v, $retry.timeout)
    };
    ($retry:ident, timeout: $v:expr) => {
        rebuild!(@ $retry, $retry.classifier, $retry.hook, $retry.protection, $v)
    };
    (@ $retry:ident, $c:expr, $h:expr, $s:expr, $t:expr) => {
        Retry {
            policy: $retry.policy,
            classifier: $c,
            hook: $h,
            protection: $s,
            timeout: $t,
            #[cfg(any(feature = "tracing", feature = "metrics"))]
            name: $retry.name,
        }
    };
}

// Used by the "already done" front ends (run/already_done.rs).
pub(crate) use rebuild;

/// Retry closures without the attribute: a policy plus, optionally, a classifier and a failure
/// hook, and shared protection. The loop is the one `#[retryable]` expands to, over the same
/// engine; what each setting costs is chosen by type, so a builder without protection runs the
/// same code as an attribute without it.
///
/// ```
/// # extern crate retry_runtime as retry_kit;
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
///
/// A configured builder can be kept, in a struct field for instance: its type names the
/// classifier (a function pointer, not a closure, so that it can be written), the hook, the
/// protection ([`Protections`](crate::run::Protections) with its breaker and budget slots) and the timeout,
/// all from `retry_kit` and `retry_kit::run`. `call` and `call_async` take the builder by
/// value; it is `Clone` (references and function pointers), so clone it for each call.
///
/// ```
/// # extern crate retry_runtime as retry_kit;
/// use retry_kit::run::{AttemptTimeout, NoHook, Protections};
/// use retry_kit::{CircuitBreaker, ErrorClass, Retry, RetryBudget, RetryPolicy};
/// use std::time::Duration;
///
/// #[derive(Debug)]
/// struct Unavailable;
/// # impl From<retry_kit::CircuitOpen> for Unavailable { fn from(_: retry_kit::CircuitOpen) -> Self { Unavailable } }
/// # impl From<retry_kit::TimedOut> for Unavailable { fn from(_: retry_kit::TimedOut) -> Self { Unavailable } }
/// fn transient(_: &Unavailable) -> ErrorClass {
///     ErrorClass::Transient
/// }
///
/// static POLICY: RetryPolicy = RetryPolicy::new().attempts(3).base(Duration::ZERO);
/// static BACKEND: CircuitBreaker = CircuitBreaker::new(5, Duration::from_secs(10));
/// static RETRIES: RetryBudget = RetryBudget::new(10, 0.1);
///
/// struct Client {
///     retry: Retry<
///         'static,
///         fn(&Unavailable) -> ErrorClass,
///         NoHook,
///         Protections<&'static CircuitBreaker, &'static RetryBudget>,
///         AttemptTimeout,
///     >,
/// }
///
/// let client = Client {
///     retry: Retry::new(&POLICY)
///         .classify(transient as fn(&Unavailable) -> ErrorClass)
///         .circuit(&BACKEND)
///         .budget(&RETRIES)
///         .attempt_timeout(Duration::from_secs(1)),
/// };
/// # tokio::runtime::Builder::new_current_thread().enable_time().start_paused(true).build().unwrap().block_on(async {
/// let mut tries = 0;
/// let answer = client.retry.clone().call_async(|| {
///     tries += 1;
///     let ok = tries == 2;
///     async move { if ok { Ok(2) } else { Err(Unavailable) } }
/// });
/// assert_eq!(answer.await.unwrap(), 2);
/// # });
/// ```
#[derive(Clone, Debug)]
#[must_use = "a Retry does nothing until `call` or `call_async`"]
pub struct Retry<'p, C = ByTrait, H = NoHook, S = Unprotected, T = NoTimeout> {
    pub(crate) policy: &'p RetryPolicy,
    pub(crate) classifier: C,
    pub(crate) hook: H,
    /// [`Unprotected`], or the [`Protections`] breaker, budget and adaptive policy.
    pub(crate) protection: S,
    /// [`NoTimeout`], or the limit of each attempt of `call_async`.
    pub(crate) timeout: T,
    /// The name `tracing` events and measurements give; only kept with the `tracing` or
    /// `metrics` feature.
    #[cfg(any(feature = "tracing", feature = "metrics"))]
    pub(crate) name: &'static str,
}

impl<'p> Retry<'p> {
    /// Retry by `policy`, classifying errors through their [`Classify`](crate::Classify) impl.
    pub const fn new(policy: &'p RetryPolicy) -> Self {
        Retry {
            policy,
            classifier: ByTrait,
            hook: NoHook,
            protection: Unprotected,
            timeout: NoTimeout,
            #[cfg(any(feature = "tracing", feature = "metrics"))]
            name: "closure",
        }
    }
}

impl<'p, C, H, S, T> Retry<'p, C, H, S, T> {
    /// Classify errors with a function (or anything [`Classifier`]) instead of `Classify`.
    pub fn classify<C2>(self, classifier: C2) -> Retry<'p, C2, H, S, T> {
        rebuild!(self, classifier: classifier)
    }

    /// Call `hook` with every failed attempt's [`Failure`](crate::Failure) record.
    pub fn on_failure<H2>(self, hook: H2) -> Retry<'p, C, H2, S, T> {
        rebuild!(self, hook: hook)
    }

    /// Show each error's `Display` in `tracing` events (the `error` field). The builder cannot
    /// detect `Display` by itself, so this opt-in requires it of the error type. It wraps the
    /// failure hook: call it after [`on_failure`](Self::on_failure), which replaces the hook.
    pub fn display_errors(self) -> Retry<'p, C, Displayed<H>, S, T> {
        rebuild!(self, hook: Displayed(self.hook))
    }

    /// The name `tracing` events and `metrics` measurements give in their `fn` field (default
    /// `"closure"`). Without either feature nothing reports it, and the name is not kept.
    pub fn named(self, name: &'static str) -> Self {
        #[cfg(any(feature = "tracing", feature = "metrics"))]
        {
            let mut retry = self;
            retry.name = name;
            retry
        }
        #[cfg(not(any(feature = "tracing", feature = "metrics")))]
        {
            let _ = name;
            self
        }
    }

    /// Adjust attempts and delays by an adaptive policy, and record every attempt that ends
    /// (with an answer, an error, or a panic, counted as a failure) into its window; an attempt
    /// cancelled before it ends (a dropped call, a hedge that lost) records nothing. See
    /// [`AdaptivePolicy`](crate::adaptive::AdaptivePolicy).
    ///
    /// ```
    /// # extern crate retry_runtime as retry_kit;
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
    pub fn adaptive(
        self,
        source: &'p dyn Adapt,
    ) -> Retry<'p, C, H, WithAdaptive<S, &'p dyn Adapt>, T>
    where
        S: IntoProtections,
    {
        let protection = self.protection.into_protections().adaptive(source);
        rebuild!(self, protection: protection)
    }

    /// Consult `breaker` before every attempt, as `#[retryable(circuit = ...)]` does: a refused
    /// first attempt returns `Err(E::from(CircuitOpen))` (so `E: From<CircuitOpen>`), a refused
    /// retry stops with [`StopReason::CircuitOpen`](crate::StopReason::CircuitOpen) and the last error.
    ///
    /// ```
    /// # extern crate retry_runtime as retry_kit;
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
    ///
    /// A [`PerKey`](crate::PerKey) entry is given by reference to its lease, which lives as
    /// long as the builder: look it up first (`let entry = HOSTS.get(key);`) or in the same
    /// statement as the call. The call then uses the entry as it is when the call runs; the
    /// lease's claim to its key is not kept (`#[retryable(key = ..)]` and the layers keep it,
    /// so that a call whose entry the table gives to another key meanwhile records nothing):
    ///
    /// ```
    /// # extern crate retry_runtime as retry_kit;
    /// use retry_kit::{CircuitBreaker, PerKey, Retry, RetryPolicy};
    /// use std::{io, time::Duration};
    ///
    /// static HOSTS: PerKey<CircuitBreaker> =
    ///     PerKey::new(CircuitBreaker::new(1, Duration::from_secs(30)));
    /// let policy = RetryPolicy::fixed(Duration::ZERO).attempts(1);
    /// let entry = HOSTS.get("a.example");
    /// let _: io::Result<()> = Retry::new(&policy)
    ///     .circuit(&entry)
    ///     .call(|| Err(io::ErrorKind::ConnectionReset.into()));
    /// // a.example's breaker opened; b.example's is its own.
    /// assert!(HOSTS.get("a.example").try_acquire().is_err());
    /// assert!(HOSTS.get("b.example").try_acquire().is_ok());
    /// ```
    pub fn circuit(
        self,
        breaker: &'p CircuitBreaker,
    ) -> Retry<'p, C, H, WithCircuit<S, &'p CircuitBreaker>, T>
    where
        S: IntoProtections,
    {
        let protection = self.protection.into_protections().circuit(breaker);
        rebuild!(self, protection: protection)
    }

    /// As [`circuit`](Self::circuit), with `refused` turning the breaker's refusal of a first
    /// attempt into the error type (instead of `E::from`).
    pub fn circuit_with<E>(
        self,
        breaker: &'p CircuitBreaker,
        refused: Conversion<CircuitOpen, E>,
    ) -> Retry<'p, C, H, WithCircuit<S, BreakerWith<'p, E>>, T>
    where
        S: IntoProtections,
    {
        let protection = self
            .protection
            .into_protections()
            .circuit((breaker, refused));
        rebuild!(self, protection: protection)
    }

    /// Charge failures to `budget` and ask it before every retry, as
    /// `#[retryable(budget = ...)]` does: a refused retry stops with
    /// [`StopReason::BudgetExhausted`](crate::StopReason::BudgetExhausted) and the last error.
    ///
    /// ```
    /// # extern crate retry_runtime as retry_kit;
    /// use retry_kit::{Retry, RetryBudget, RetryPolicy};
    /// use std::{io, time::Duration};
    ///
    /// // Ten tokens; a retry may start only while more than five are left.
    /// static RETRIES: RetryBudget = RetryBudget::new(10, 0.1);
    /// let policy = RetryPolicy::fixed(Duration::ZERO).attempts(4);
    /// let mut attempts = 0;
    /// for _ in 0..4 {
    ///     let _ = Retry::new(&policy).budget(&RETRIES).call(|| {
    ///         attempts += 1;
    ///         Err::<(), _>(io::Error::from(io::ErrorKind::ConnectionRefused))
    ///     });
    /// }
    /// // Four attempts spend four tokens; the next call's first failure leaves five, and its
    /// // retry is refused; from then on every call makes one attempt.
    /// assert_eq!(attempts, 4 + 1 + 1 + 1);
    /// ```
    ///
    /// Also takes a [`FleetBudget`](crate::fleet::FleetBudget) (feature `redis`), a `PerKey`
    /// entry's lease, and an [`AdaptiveThrottle`](crate::AdaptiveThrottle), which refuses
    /// first attempts too (as `E::from(CircuitOpen)`).
    pub fn budget<B: AsBudget + ?Sized>(
        self,
        budget: &'p B,
    ) -> Retry<'p, C, H, WithBudget<S, B::Slot<'p>>, T>
    where
        S: IntoProtections,
    {
        let protection = self
            .protection
            .into_protections()
            .budget(budget.as_budget());
        rebuild!(self, protection: protection)
    }

    /// Cancel each attempt of [`call_async`](Self::call_async) after `limit`, as
    /// `#[retryable(attempt_timeout = ...)]` does: the attempt's error is
    /// `E::from(TimedOut)` (so `E: From<TimedOut>`) and its class is idempotent-only. The sync
    /// [`call`](Self::call) is not available on such a builder.
    ///
    /// ```
    /// # extern crate retry_runtime as retry_kit;
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
    pub fn attempt_timeout(self, limit: Duration) -> Retry<'p, C, H, S, AttemptTimeout> {
        rebuild!(self, timeout: AttemptTimeout(limit))
    }

    /// As [`attempt_timeout`](Self::attempt_timeout), with `timed_out` turning a timeout into
    /// the error type (instead of `E::from`).
    pub fn attempt_timeout_with<E>(
        self,
        limit: Duration,
        timed_out: Conversion<TimedOut, E>,
    ) -> Retry<'p, C, H, S, (Duration, Conversion<TimedOut, E>)> {
        rebuild!(self, timeout: (limit, timed_out))
    }

    /// Run `op` until it succeeds or the policy stops; return its last outcome.
    #[inline(always)]
    pub fn call<O: Outcome>(self, mut op: impl FnMut() -> O) -> O
    where
        C: Classifier<O::Error>,
        H: Hook<O::Error>,
        S: Equip<'p, O::Error>,
        T: Untimed,
    {
        begin!(self, O => call, classifier, hook else return);
        crate::retry_sync!(call.after(&classifier, &mut hook) <- call.attempt_sync(&mut op))
    }

    /// The same builder for another policy: how a tower layer, which owns its policy, makes
    /// the `Retry` of each call.
    #[cfg(any(feature = "tower", feature = "reqwest-middleware"))]
    pub(crate) fn with_policy<'q>(self, policy: &'q RetryPolicy) -> Retry<'q, C, H, S, T> {
        Retry {
            policy,
            classifier: self.classifier,
            hook: self.hook,
            protection: self.protection,
            timeout: self.timeout,
            #[cfg(any(feature = "tracing", feature = "metrics"))]
            name: self.name,
        }
    }

    /// The same builder with other protection: how the HTTP middleware equips each request with
    /// the breaker and budget of its authority (and `tower::HttpRetryLayer` likewise), and
    /// `tower::RetryLayer` each call with its breaker's conversion of a refusal.
    #[cfg(any(feature = "reqwest-middleware", feature = "tower"))]
    pub(crate) fn with_protection<S2>(self, protection: S2) -> Retry<'p, C, H, S2, T> {
        rebuild!(self, protection: protection)
    }

    /// The same builder with its protection mapped by `f`: how `tower::RetryLayer` sets a
    /// `'static` breaker or budget as a [`Static`](crate::run::plumbing::Static) slot.
    #[cfg(feature = "tower")]
    pub(crate) fn map_protection<S2>(self, f: impl FnOnce(S) -> S2) -> Retry<'p, C, H, S2, T> {
        rebuild!(self, protection: f(self.protection))
    }

    /// The name for `tracing` events (without the feature, none is kept).
    #[inline(always)]
    pub(crate) fn name(&self) -> &'static str {
        #[cfg(any(feature = "tracing", feature = "metrics"))]
        {
            self.name
        }
        #[cfg(not(any(feature = "tracing", feature = "metrics")))]
        {
            "closure"
        }
    }

    /// Run the future `op` makes until one succeeds or the policy stops, sleeping with
    /// `sleep` between attempts (and timing attempts out with it).
    // A plain `fn` returning an `async move` block, not an `async fn`: an `async fn` moves its
    // arguments into locals of its own at its start, a second copy of the builder in the
    // future, stored on every call; the block uses what it captured in place. The builder's
    // parts are taken apart at once, so that none is left half-moved in the future (each would
    // need a drop flag, stored on every call).
    #[allow(clippy::manual_async_fn)]
    pub fn call_async_with<O, F, Fut, Sl, SlFut>(
        self,
        mut op: F,
        sleep: Sl,
    ) -> impl Future<Output = O>
    where
        O: Outcome,
        F: FnMut() -> Fut,
        Fut: Future<Output = O>,
        Sl: Fn(Duration) -> SlFut,
        SlFut: Future<Output = ()>,
        C: Classifier<O::Error>,
        H: Hook<O::Error>,
        S: Equip<'p, O::Error>,
        T: TimeoutSlot<O::Error>,
    {
        async move {
            let name = self.name();
            let Retry {
                policy,
                classifier,
                hook,
                protection,
                // The timeout by type, not as a run-time `Option`: an untimed builder's future
                // then keeps no room for the timer and the timed attempt.
                timeout,
                ..
            } = self;
            let mut hook = crate::observe::observed(hook, name);
            let call = crate::run::Call::for_hook::<O::Error, _>(policy, &hook);
            let mut call = Equip::<O::Error>::equip(&protection, call);
            if let Err(refused) = Equip::<O::Error>::admit(&protection, &mut call) {
                crate::observe::refused(&mut hook);
                return O::failure(refused);
            }
            crate::retry_async!(call.after(&classifier, &mut hook) <- {
                let out = call.attempt_timed(&timeout, op(), &sleep).await;
                call.settle::<O, T>(&timeout, out)
            }, sleep: &sleep)
        }
    }

    /// Run the future `op` makes until one succeeds or the policy stops, sleeping with tokio.
    // A plain `fn` returning the inner future, not an `async fn` awaiting it: each `async fn`
    // layer would keep its own copy of the arguments in the future.
    #[cfg(feature = "tokio")]
    pub fn call_async<O, F, Fut>(self, op: F) -> impl Future<Output = O>
    where
        O: Outcome,
        F: FnMut() -> Fut,
        Fut: Future<Output = O>,
        C: Classifier<O::Error>,
        H: Hook<O::Error>,
        S: Equip<'p, O::Error>,
        T: TimeoutSlot<O::Error>,
    {
        self.call_async_with(op, clock::tokio_sleep)
    }
}
